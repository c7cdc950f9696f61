/*
 * cmd_entry.c -- `sk entry`: build and SK-sign the registrant's entries
 * (Bind, Unbind, Rebind, Change-Services) in canonical form, the timeline
 * operator's root-CA entries (signed with the operator key), and check the
 * signatures of any entry.
 *
 * The stamp (SN, TID, Timestamp, Signature) stays "N/A": the timeline
 * fills it in when it accepts the entry.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_entry.h"


static int
sk_entry_emit(const sk_entry_t *e, const char *out, int json, sk_err_t *err)
{
    const char *name = sk_entry_name(e);    /* root-CA entries have none */
    char   *text;
    size_t  len;
    int     rc = 0;

    if (sk_entry_format(&text, &len, e, err) != 0) {
        return -1;
    }
    if (out != NULL) {
        rc = sk_file_write_atomic(out, text, len, 0644, err);
        if (rc == 0 && !json) {
            printf("%s entry%s%s written to %s\n",
                sk_entry_type_name(sk_entry_type(e)), name ? " for " : "",
                name ? name : "", out);
        }
    } else if (!json) {
        fwrite(text, 1, len, stdout);
    }
    if (rc == 0 && json) {
        printf("{\"type\":\"%s\",\"name\":",
            sk_entry_type_name(sk_entry_type(e)));
        if (name != NULL) {
            cli_json_str(stdout, name);
        } else {
            printf("null");
        }
        printf(",\"entry\":");
        cli_json_str(stdout, text);
        printf("}\n");
    }
    free(text);
    return rc;
}


static int
sk_entry_make(sk_entry_type_t type, int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_ENTRY_LONGOPTS,
        { "serial",       required_argument, NULL, 'S' },
        { "out",          required_argument, NULL, 'o' },
        { "json",         no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    cli_entry_opts_t  o;
    sk_entry_t       *e = NULL;
    sk_err_t          err;
    const char       *out = NULL;
    int               c, json = 0;

    memset(&o, 0, sizeof(o));
    optind = 1;
    while ((c = getopt_long(argc, argv, "k:n:s:c:wr:R:K:l:o:", opts, NULL))
           != -1)
    {
        if (cli_entry_option(&o, c, optarg)) {
            continue;
        }
        switch (c) {
        case 'S': o.serial = optarg; break;
        case 'o': out = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_entry, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_entry, "unexpected argument \"%s\"",
            argv[optind]);
    }
    if (cli_entry_build(&e, type, &o, &err) != 0
        || sk_entry_emit(e, out, json, &err) != 0)
    {
        sk_entry_free(e);
        return err.code == SK_ERR_USAGE
            ? cli_usage(&sk_cmd_entry, "%s", err.msg) : cli_fail_err(&err);
    }
    sk_entry_free(e);
    return SK_EXIT_OK;
}


/* Check one signature field against a public key file, if one was given
 * for it or the entry carries its own Key. */
static int
sk_entry_check(const sk_entry_t *e, sk_sig_field_t which, const char *label,
    const char *path, int own_key, int json, int *first, sk_err_t *err)
{
    sk_key_t *key = NULL;
    int       rc;

    if (path != NULL) {
        rc = sk_key_load_public(&key, path, err);
    } else if (own_key) {
        rc = sk_entry_key(&key, e, err);
    } else {
        return 0;
    }
    if (rc == 0) {
        rc = sk_entry_verify(e, which, key, err);
    }
    sk_key_free(key);
    if (rc != 0) {
        return -1;          /* the message already names the field */
    }
    if (json) {
        printf("%s\"%s\"", *first ? "" : ",", label);
    } else {
        printf("%s: good\n", label);
    }
    *first = 0;
    return 0;
}


static int
sk_entry_verify_cmd(int argc, char **argv)
{
    static const struct option opts[] = {
        { "pub",          required_argument, NULL, 'p' },
        { "in",           required_argument, NULL, 'i' },
        { "rebinder-pub", required_argument, NULL, 'P' },
        { "timeline-pub", required_argument, NULL, 't' },
        { "operator-pub", required_argument, NULL, 'O' },
        { "json",         no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char      *pub = NULL, *in = NULL, *rpub = NULL, *tpub = NULL,
                    *opub = NULL;
    sk_entry_type_t  type;
    sk_entry_t      *e;
    char            *text;
    size_t           len;
    sk_err_t         err;
    int              c, json = 0, first = 1, own, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "p:i:t:", opts, NULL)) != -1) {
        switch (c) {
        case 'p': pub = optarg; break;
        case 'i': in = optarg; break;
        case 'P': rpub = optarg; break;
        case 't': tpub = optarg; break;
        case 'O': opub = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_entry, "unknown option");
        }
    }
    if (in == NULL || optind != argc) {
        return cli_usage(&sk_cmd_entry, "verify needs -i FILE");
    }
    if (sk_file_read(&text, &len, in, SK_ENTRY_MAX, &err) != 0) {
        return cli_fail_err(&err);
    }
    rc = sk_entry_parse(&e, text, len, &err);
    free(text);
    if (rc != 0) {
        sk_err_prefix(&err, "%s", in);
        return cli_fail_err(&err);
    }

    type = sk_entry_type(e);
    own = type == SK_ENTRY_BIND || type == SK_ENTRY_REBIND;
    if (!own && pub == NULL && tpub == NULL && opub == NULL) {
        sk_entry_free(e);
        return cli_usage(&sk_cmd_entry,
            "a %s entry names no key: give -p SK.pub",
            sk_entry_type_name(type));
    }

    if (json) {
        printf("{\"type\":\"%s\",\"name\":", sk_entry_type_name(type));
        cli_json_str(stdout, sk_entry_name(e) ? sk_entry_name(e) : "");
        printf(",\"good\":[");
    }
    rc = 0;
    if (type != SK_ENTRY_ADD_ROOT_CA && type != SK_ENTRY_REMOVE_ROOT_CA
        && type != SK_ENTRY_INCORPORATE && type != SK_ENTRY_MAP_ROOT)
    {
        rc = sk_entry_check(e, SK_SIG_SK, "SK-Signature", pub, own, json,
            &first, &err);
    }
    if (rc == 0 && type == SK_ENTRY_REBIND) {
        rc = sk_entry_check(e, SK_SIG_REBINDER, "Rebinder-Signature", rpub,
            0, json, &first, &err);
    }
    if (rc == 0 && opub != NULL) {
        rc = sk_entry_check(e, SK_SIG_OPERATOR, "Operator-Signature", opub,
            0, json, &first, &err);
    }
    if (rc == 0 && tpub != NULL) {
        rc = sk_entry_check(e, SK_SIG_TIMELINE, "Signature", tpub, 0, json,
            &first, &err);
    }
    if (json) {
        printf("],\"result\":\"%s\"", rc == 0 ? "pass" : "fail");
        if (rc != 0) {
            printf(",\"reason\":");
            cli_json_str(stdout, err.msg);
        }
        printf("}\n");
    }
    sk_entry_free(e);
    if (rc != 0) {
        sk_err_prefix(&err, "%s", in);
        return cli_fail_err(&err);
    }
    return SK_EXIT_OK;
}


static int
sk_entry_main(int argc, char **argv)
{
    sk_entry_type_t type;
    sk_err_t        err;

    if (argc < 2) {
        return cli_usage(&sk_cmd_entry, "missing entry type or \"verify\"");
    }
    if (strcmp(argv[1], "verify") == 0) {
        return sk_entry_verify_cmd(argc - 1, argv + 1);
    }
    if (sk_entry_type_parse(&type, argv[1], &err) != 0) {
        return cli_usage(&sk_cmd_entry, "%s", err.msg);
    }
    return sk_entry_make(type, argc - 1, argv + 1);
}


const sk_cmd_t sk_cmd_entry = {
    "entry", sk_entry_main,
    "bind -k KEY -n NAME -s SERVICES (-c CHAIN | --dnssec-chain FILE) [-w]"
    " [-r NAME,...] [-o FILE]\n"
    "rebind -k KEY -n NAME -s SERVICES (-c CHAIN | --dnssec-chain FILE)"
    " --rebinder NAME"
    " --rebinder-key KEY [-w] [-r NAME,...] [-o FILE]\n"
    "unbind -k KEY -n NAME [-l LAST-SECURE-TIME] [-o FILE]\n"
    "change-services -k KEY -n NAME -s SERVICES [-o FILE]\n"
    "add-root-ca -k OPERATOR-KEY -c CA-CERT --serial N [-o FILE]\n"
    "remove-root-ca -k OPERATOR-KEY -c CA-CERT --serial N [-o FILE]\n"
    "verify -i FILE [-p SK.pub] [--rebinder-pub PUB] [--timeline-pub PUB]"
    " [--operator-pub PUB] [--json]",
    "Build a registrant's timeline entry in canonical form and sign its\n"
    "SK-Signature with the sovereign key KEY; print it, or write it to FILE.\n"
    "The stamp (SN, TID, Timestamp, Signature) stays N/A for the timeline.\n"
    "\n"
    "bind claims NAME for the SK: SERVICES is the Services field (e.g.\n"
    "\"https,smtp;x.onion\", or none; \"smtp;mx=*.mail.provider.example\"\n"
    "names the hosts a provider receives NAME's mail on), CHAIN a PEM file\n"
    "whose certificates\n"
    "(leaf first) show that NAME was the key holder's (or, with\n"
    "--dnssec-chain, FILE the RFC 9102 chain proving the TXT record at\n"
    "_sovereign-key.NAME that `sk dnssec record` prints), -w extends the\n"
    "claim to every subdomain, -r lists the names whose SKs may rebind NAME\n"
    "after an unbind.  rebind is the inheritor's claim after an unbind: KEY\n"
    "is the new SK and --rebinder-key the SK of --rebinder NAME, which signs\n"
    "the Rebinder-Signature.  unbind revokes the SK; -l is the last time\n"
    "(POSIX seconds, default now) the SK is vouched for.  change-services\n"
    "replaces the Services field.\n"
    "\n"
    "add-root-ca and remove-root-ca are the timeline operator's: KEY is the\n"
    "operator key of the timeline's operator_key setting, CA-CERT a PEM root\n"
    "certificate the timeline starts or stops trusting for Bind evidence, N\n"
    "the operator's CA update serial (0-65535).\n"
    "\n"
    "verify parses FILE strictly and checks each signature it can: the\n"
    "SK-Signature with -p (or, for bind and rebind, with the entry's own\n"
    "Key), the Rebinder-Signature, the operator's and the timeline's\n"
    "Signature with the keys given.  Exit 0 only if all checked are good.\n"
};
