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
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "cli.h"

#define SK_ENTRY_CHAIN_MAX 16

typedef struct {
    const char *key, *name, *services, *chain, *rebinders, *rebinder,
               *rebinder_key, *out, *last_secure, *ca, *serial;
    int         subdomains, json;
} sk_entry_opts_t;


/* CA-Cert-Chain: each certificate of a PEM chain file as base64url DER,
 * comma-separated, leaf first. */
static int
sk_chain_field(char **out, const char *path, sk_err_t *err)
{
    STACK_OF(X509) *chain;
    unsigned char  *der;
    char           *field = NULL, *b64, *grown;
    size_t          used = 0;
    int             i, n, len;

    if (sk_chain_load_pem(&chain, path, err) != 0) {
        return -1;
    }
    n = sk_X509_num(chain);
    if (n > SK_ENTRY_CHAIN_MAX) {
        sk_X509_pop_free(chain, X509_free);
        return sk_err_set(err, SK_ERR_FORMAT,
            "%s: more than %d certificates", path, SK_ENTRY_CHAIN_MAX);
    }
    for (i = 0; i < n; i++) {
        der = NULL;
        len = i2d_X509(sk_X509_value(chain, i), &der);
        b64 = len > 0 ? sk_b64_encode_alloc(der, (size_t) len) : NULL;
        OPENSSL_free(der);
        grown = b64 ? realloc(field, used + strlen(b64) + 2) : NULL;
        if (grown == NULL) {
            free(b64);
            free(field);
            sk_X509_pop_free(chain, X509_free);
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        field = grown;
        used += (size_t) sprintf(field + used, "%s%s", i ? "," : "", b64);
        free(b64);
    }
    sk_X509_pop_free(chain, X509_free);
    *out = field;
    return 0;
}


/* Add-Root-CA's CA-Cert (base64url DER) or Remove-Root-CA's CA-Cert-Hash
 * (base64url SHA-256 of the DER) from the first certificate of a PEM file. */
static int
sk_root_ca_fields(sk_entry_t *e, sk_entry_type_t type, const char *path,
    const char *serial, sk_err_t *err)
{
    STACK_OF(X509) *chain;
    unsigned char  *der = NULL, md[SK_SHA256_BYTES];
    char           *b64;
    int             len, rc;

    if (path == NULL || serial == NULL) {
        return sk_err_set(err, SK_ERR_USAGE, "missing %s",
            path == NULL ? "-c CA-CERT" : "--serial N");
    }
    if (sk_chain_load_pem(&chain, path, err) != 0) {
        return -1;
    }
    len = i2d_X509(sk_X509_value(chain, 0), &der);
    sk_X509_pop_free(chain, X509_free);
    if (len <= 0) {
        return sk_err_set(err, SK_ERR_CRYPTO, "%s: cannot encode", path);
    }
    if (type == SK_ENTRY_ADD_ROOT_CA) {
        b64 = sk_b64_encode_alloc(der, (size_t) len);
    } else {
        EVP_Digest(der, (size_t) len, md, NULL, EVP_sha256(), NULL);
        b64 = sk_b64_encode_alloc(md, sizeof(md));
    }
    OPENSSL_free(der);
    if (b64 == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    rc = sk_entry_set(e, type == SK_ENTRY_ADD_ROOT_CA ? "CA-Cert"
                         : "CA-Cert-Hash", b64, err);
    free(b64);
    return rc != 0 ? -1 : sk_entry_set(e, "CA-Serial", serial, err);
}


static int
sk_entry_set_opt(sk_entry_t *e, const char *field, const char *value,
    const char *flag, sk_err_t *err)
{
    if (value == NULL) {
        return sk_err_set(err, SK_ERR_USAGE, "missing %s", flag);
    }
    return sk_entry_set(e, field, value, err);
}


static int
sk_entry_fill(sk_entry_t *e, sk_entry_type_t type, const sk_entry_opts_t *o,
    sk_err_t *err)
{
    char  buf[32], *chain = NULL;
    int   rc;

    if (type == SK_ENTRY_ADD_ROOT_CA || type == SK_ENTRY_REMOVE_ROOT_CA) {
        return sk_root_ca_fields(e, type, o->ca, o->serial, err);
    }
    if (sk_entry_set_opt(e, "Name", o->name, "-n NAME", err) != 0) {
        return -1;
    }
    switch (type) {
    case SK_ENTRY_UNBIND:
        if (o->last_secure != NULL) {
            return sk_entry_set(e, "Last-Secure-Timestamp", o->last_secure,
                err);
        }
        snprintf(buf, sizeof(buf), "%lld", (long long) time(NULL));
        return sk_entry_set(e, "Last-Secure-Timestamp", buf, err);

    case SK_ENTRY_CHANGE_SERVICES:
        return sk_entry_set_opt(e, "Services", o->services, "-s SERVICES",
            err);

    case SK_ENTRY_BIND:
    case SK_ENTRY_REBIND:
        if (o->chain == NULL) {
            return sk_err_set(err, SK_ERR_USAGE,
                "missing -c CHAIN (the CA evidence for the name)");
        }
        if (sk_chain_field(&chain, o->chain, err) != 0) {
            return -1;
        }
        rc = sk_entry_set(e, "CA-Cert-Chain", chain, err);
        free(chain);
        if (rc != 0
            || sk_entry_set_opt(e, "Services", o->services, "-s SERVICES",
                   err) != 0
            || sk_entry_set(e, "Includes-Subdomains",
                   o->subdomains ? "1" : "0", err) != 0
            || sk_entry_set(e, "Rebinder-Names",
                   o->rebinders ? o->rebinders : "none", err) != 0)
        {
            return -1;
        }
        if (type == SK_ENTRY_REBIND) {
            return sk_entry_set_opt(e, "Rebinder-Name", o->rebinder,
                "--rebinder NAME", err);
        }
        return 0;

    default:
        return sk_err_set(err, SK_ERR_USAGE,
            "sk entry does not make %s entries (a timeline does)",
            sk_entry_type_name(type));
    }
}


static int
sk_entry_sign_with(sk_entry_t *e, sk_sig_field_t which, const char *path,
    const char *flag, sk_err_t *err)
{
    sk_key_t *key;
    int       rc;

    if (path == NULL) {
        return sk_err_set(err, SK_ERR_USAGE, "missing %s", flag);
    }
    if (sk_key_load_private(&key, path, err) != 0) {
        return -1;
    }
    rc = sk_entry_sign(e, which, key, err);
    sk_key_free(key);
    return rc;
}


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
        { "key",          required_argument, NULL, 'k' },
        { "name",         required_argument, NULL, 'n' },
        { "services",     required_argument, NULL, 's' },
        { "chain",        required_argument, NULL, 'c' },
        { "subdomains",   no_argument,       NULL, 'w' },
        { "rebinders",    required_argument, NULL, 'r' },
        { "rebinder",     required_argument, NULL, 'R' },
        { "rebinder-key", required_argument, NULL, 'K' },
        { "last-secure",  required_argument, NULL, 'l' },
        { "serial",       required_argument, NULL, 'S' },
        { "out",          required_argument, NULL, 'o' },
        { "json",         no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    sk_entry_opts_t  o;
    sk_entry_t      *e = NULL;
    sk_err_t         err;
    int              c, rc;

    memset(&o, 0, sizeof(o));
    optind = 1;
    while ((c = getopt_long(argc, argv, "k:n:s:c:wr:R:K:l:o:", opts, NULL))
           != -1)
    {
        switch (c) {
        case 'k': o.key = optarg; break;
        case 'n': o.name = optarg; break;
        case 's': o.services = optarg; break;
        case 'c': o.chain = o.ca = optarg; break;
        case 'S': o.serial = optarg; break;
        case 'w': o.subdomains = 1; break;
        case 'r': o.rebinders = optarg; break;
        case 'R': o.rebinder = optarg; break;
        case 'K': o.rebinder_key = optarg; break;
        case 'l': o.last_secure = optarg; break;
        case 'o': o.out = optarg; break;
        case 'j': o.json = 1; break;
        default: return cli_usage(&sk_cmd_entry, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_entry, "unexpected argument \"%s\"",
            argv[optind]);
    }

    rc = sk_entry_new(&e, type, &err);
    if (rc == 0) {
        rc = sk_entry_fill(e, type, &o, &err);
    }
    if (rc == 0) {
        rc = sk_entry_sign_with(e, type == SK_ENTRY_ADD_ROOT_CA
                 || type == SK_ENTRY_REMOVE_ROOT_CA ? SK_SIG_OPERATOR
                 : SK_SIG_SK, o.key, "-k KEY", &err);
    }
    if (rc == 0 && type == SK_ENTRY_REBIND) {
        rc = sk_entry_sign_with(e, SK_SIG_REBINDER, o.rebinder_key,
            "--rebinder-key KEY", &err);
    }
    if (rc == 0) {
        rc = sk_entry_emit(e, o.out, o.json, &err);
    }
    sk_entry_free(e);
    if (rc != 0) {
        return err.code == SK_ERR_USAGE
            ? cli_usage(&sk_cmd_entry, "%s", err.msg) : cli_fail_err(&err);
    }
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
        && type != SK_ENTRY_INCORPORATE)
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
    "bind -k KEY -n NAME -s SERVICES -c CHAIN [-w] [-r NAME,...] [-o FILE]\n"
    "rebind -k KEY -n NAME -s SERVICES -c CHAIN --rebinder NAME"
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
    "\"https,smtp;x.onion\", or none), CHAIN a PEM file whose certificates\n"
    "(leaf first) show that NAME was the key holder's, -w extends the claim\n"
    "to every subdomain, -r lists the names whose SKs may rebind NAME after\n"
    "an unbind.  rebind is the inheritor's claim after an unbind: KEY is the\n"
    "new SK and --rebinder-key the SK of --rebinder NAME, which signs the\n"
    "Rebinder-Signature.  unbind revokes the SK; -l is the last time (POSIX\n"
    "seconds, default now) the SK is vouched for.  change-services replaces\n"
    "the Services field.\n"
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
