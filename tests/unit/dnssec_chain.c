/*
 * dnssec_chain.c -- `dnssec_chain DIR REC EXK TEST ROOT`: the chain
 * dx_build makes from the zones tests/unit/dnssec_zones.sh signed in DIR,
 * on stdout, for the integration tests (t/timeline-dnssec.t).
 */
#include "dnssec_fixture.h"


int
main(int argc, char **argv)
{
    static dx_chain_t  c;

    if (argc != 6) {
        fprintf(stderr, "usage: dnssec_chain DIR REC EXK TEST ROOT\n");
        return 2;
    }
    if (dx_build(&c, argv[1], argv[2], argv[3], argv[4], argv[5]) != 0) {
        fprintf(stderr, "dnssec_chain: %s: a zone or RRset is missing\n",
            argv[1]);
        return 1;
    }
    return fwrite(c.p, 1, c.len, stdout) == c.len ? 0 : 1;
}
