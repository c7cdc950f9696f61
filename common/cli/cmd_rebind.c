/*
 * cmd_rebind.c -- `sk rebind`: after an Unbind, the inheritor's claim on
 * NAME: a Rebind with a new SK and chain, signed by that SK and by the SK
 * of a rebinder the revoked record lists, submitted to the timelines.
 */
#include "cli_timeline.h"


static int
sk_rebind_main(int argc, char **argv)
{
    return cli_tl_verb(&sk_cmd_rebind, SK_ENTRY_REBIND, "knscwrRK", argc,
        argv);
}


const sk_cmd_t sk_cmd_rebind = {
    "rebind", sk_rebind_main,
    "-k KEY -n NAME -s SERVICES -c CHAIN --rebinder NAME --rebinder-key KEY"
    " [-w] [-r NAME,...] -t URL [-t URL ...] [--timeout SECONDS] [--json]",
    "Claim NAME again after its SK was revoked (`sk revoke`): build a Rebind\n"
    "for the new sovereign key KEY with the Bind fields (SERVICES, the CA\n"
    "evidence CHAIN for NAME and KEY, -w for subdomains, -r the new\n"
    "record's rebinders), sign its SK-Signature with KEY and its\n"
    "Rebinder-Signature with --rebinder-key, the SK of --rebinder NAME,\n"
    "which must be among the revoked record's rebinders and bound.  Then\n"
    "submit it to each timeline URL, as `sk register` does.  Exit 0 only if\n"
    "every timeline stored it.\n"
};
