/*
 * cmd_dnssec.c -- `sk dnssec record`: the TXT record that makes a name's
 * DNSSEC evidence (docs/protocol.md, "DNSSEC evidence").
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/dnssec.h>

#include "cli.h"


static int
sk_dnssec_record_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "key",  required_argument, NULL, 'k' },
        { "name", required_argument, NULL, 'n' },
        { NULL, 0, NULL, 0 }
    };
    const char  *in = NULL, *name = NULL;
    sk_key_t    *key;
    sk_err_t     err;
    char        *line;
    int          c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "k:n:", opts, NULL)) != -1) {
        switch (c) {
        case 'k': in = optarg; break;
        case 'n': name = optarg; break;
        default: return cli_usage(&sk_cmd_dnssec, "unknown option");
        }
    }
    if (in == NULL || name == NULL || optind != argc) {
        return cli_usage(&sk_cmd_dnssec, "need -k KEY and -n NAME");
    }
    if (sk_name_check(name, strlen(name), &err) != 0) {
        return cli_fail_err(&err);
    }
    if (sk_key_load_public(&key, in, &err) != 0) {
        return cli_fail_err(&err);
    }
    c = sk_dnssec_record(&line, name, key, &err);
    sk_key_free(key);
    if (c != 0) {
        return cli_fail_err(&err);
    }
    printf("%s\n", line);
    free(line);
    return SK_EXIT_OK;
}


static int
sk_dnssec_chain_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "name",     required_argument, NULL, 'n' },
        { "resolver", required_argument, NULL, 'r' },
        { "out",      required_argument, NULL, 'o' },
        { NULL, 0, NULL, 0 }
    };
    const char     *name = NULL, *resolver = NULL, *out = NULL;
    unsigned char  *chain;
    sk_err_t        err;
    size_t          len;
    int             c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "n:r:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'n': name = optarg; break;
        case 'r': resolver = optarg; break;
        case 'o': out = optarg; break;
        default: return cli_usage(&sk_cmd_dnssec, "unknown option");
        }
    }
    if (name == NULL || out == NULL || optind != argc) {
        return cli_usage(&sk_cmd_dnssec, "need -n NAME and -o FILE");
    }
    if (sk_name_check(name, strlen(name), &err) != 0
        || sk_dnssec_chain_fetch(&chain, &len, name, resolver, &err) != 0)
    {
        return cli_fail_err(&err);
    }
    c = sk_file_write_atomic(out, chain, len, 0644, &err);
    free(chain);
    if (c != 0) {
        return cli_fail_err(&err);
    }
    printf("%s: DNSSEC chain for %s, %zu bytes\n", out, name, len);
    return SK_EXIT_OK;
}


static int
sk_dnssec_run(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "record") == 0) {
        return sk_dnssec_record_run(argc - 1, argv + 1);
    }
    if (argc >= 2 && strcmp(argv[1], "chain") == 0) {
        return sk_dnssec_chain_run(argc - 1, argv + 1);
    }
    return cli_usage(&sk_cmd_dnssec, "want the subcommand \"record\" or "
        "\"chain\"");
}


const sk_cmd_t sk_cmd_dnssec = {
    "dnssec", sk_dnssec_run,
    "record -k KEY -n NAME\n"
    "chain -n NAME [--resolver IP:PORT] -o FILE",
    "Print the zone-file line that publishes NAME's sovereign key for\n"
    "DNSSEC evidence: a TXT record at _sovereign-key.NAME holding\n"
    "\"v=sk1; spki-sha256=<hex>\", the SHA-256 of the key's\n"
    "SubjectPublicKeyInfo.  KEY is the SK's private or public key file.\n"
    "The zone must be DNSSEC-signed, with a DS chain up to the root.\n"
    "\n"
    "chain asks a resolver (the system's, or --resolver) for the RFC 9102\n"
    "chain proving that record: the TXT RRset, then each zone's DNSKEY and\n"
    "DS RRsets up to the root, with their RRSIGs, TTLs set back to the\n"
    "signed ones; FILE is what `sk entry bind --dnssec-chain` takes.\n"
};
