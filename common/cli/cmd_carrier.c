/*
 * cmd_carrier.c -- `sk carrier`: the SK certifies an operational key.
 *
 * The key comes from the server's certificate (its first DNS SAN is the
 * default name) or from a public key file.  The carrier is backdated an
 * hour so that clients with a slow clock accept a fresh one.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509v3.h>

#include "cli.h"

#define SK_CARRIER_BACKDATE  3600
#define SK_CARRIER_MAX_DAYS  3650


/* The certificate's key and its first dNSName (malloc()ed, or NULL). */
static int
sk_carrier_cert_key(sk_key_t **key, char **name, const char *path,
    sk_err_t *err)
{
    STACK_OF(X509)      *chain;
    GENERAL_NAMES       *gens;
    const GENERAL_NAME  *gn;
    EVP_PKEY            *pkey;
    X509                *leaf;
    int                  i, rc;

    if (sk_chain_load_pem(&chain, path, err) != 0) {
        return -1;
    }
    leaf = sk_X509_value(chain, 0);
    *name = NULL;
    gens = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
    for (i = 0; gens != NULL && i < sk_GENERAL_NAME_num(gens); i++) {
        gn = sk_GENERAL_NAME_value(gens, i);
        if (gn->type == GEN_DNS) {
            *name = strndup(
                (const char *) ASN1_STRING_get0_data(gn->d.dNSName),
                (size_t) ASN1_STRING_length(gn->d.dNSName));
            break;
        }
    }
    GENERAL_NAMES_free(gens);
    pkey = X509_get0_pubkey(leaf);
    rc = pkey != NULL ? sk_key_from_pkey(key, pkey, err)
                      : sk_err_crypto(err, "unreadable public key");
    sk_X509_pop_free(chain, X509_free);
    if (rc != 0) {
        free(*name);
        *name = NULL;
        return sk_err_prefix(err, "%s: the certificate's key", path);
    }
    return 0;
}


static void
sk_carrier_print(const sk_carrier_t *c, const sk_key_t *op, const char *out,
    int json)
{
    char       fp[SK_FINGERPRINT_SIZE], date[CLI_DATE_SIZE];
    time_t     t = sk_carrier_not_after(c);

    sk_key_fingerprint(fp, op);
    cli_date(date, t);
    if (json) {
        printf("{\"carrier\":");
        cli_json_str(stdout, out);
        printf(",\"name\":");
        cli_json_str(stdout, sk_carrier_name(c));
        printf(",\"services\":");
        cli_json_str(stdout, sk_carrier_services(c));
        printf(",\"key\":\"%s\",\"not_after\":\"%s\"}\n", fp, date);
    } else {
        printf("%s: carrier for %s, key %s, services %s, valid until %s\n",
            out, sk_carrier_name(c), fp, sk_carrier_services(c), date);
    }
}


static int
sk_carrier_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "key",      required_argument, NULL, 'k' },
        { "cert",     required_argument, NULL, 'c' },
        { "pubkey",   required_argument, NULL, 'P' },
        { "name",     required_argument, NULL, 'n' },
        { "services", required_argument, NULL, 's' },
        { "days",     required_argument, NULL, 'd' },
        { "out",      required_argument, NULL, 'o' },
        { "json",     no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char          *skfile = NULL, *cert = NULL, *pubfile = NULL;
    const char          *name = NULL, *services = "https", *out = NULL;
    char                *cert_name = NULL, *pem = NULL;
    unsigned long        days = SK_CARRIER_DEFAULT_DAYS;
    sk_carrier_params_t  params;
    sk_carrier_t        *carrier = NULL;
    sk_key_t            *sk = NULL, *op = NULL;
    sk_err_t             err;
    size_t               len;
    time_t               now;
    int                  c, json = 0, rc = SK_EXIT_FAIL;

    optind = 1;
    while ((c = getopt_long(argc, argv, "k:c:n:s:d:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'k': skfile = optarg; break;
        case 'c': cert = optarg; break;
        case 'P': pubfile = optarg; break;
        case 'n': name = optarg; break;
        case 's': services = optarg; break;
        case 'd':
            if (cli_parse_uint(&days, optarg, SK_CARRIER_MAX_DAYS) != 0) {
                return cli_usage(&sk_cmd_carrier, "bad -d \"%s\" (1 to %d "
                    "days)", optarg, SK_CARRIER_MAX_DAYS);
            }
            break;
        case 'o': out = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_carrier, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_carrier, "unexpected argument \"%s\"",
            argv[optind]);
    }
    if (skfile == NULL || out == NULL) {
        return cli_usage(&sk_cmd_carrier, "missing %s",
            skfile == NULL ? "-k SK" : "-o FILE");
    }
    if ((cert == NULL) == (pubfile == NULL)) {
        return cli_usage(&sk_cmd_carrier,
            "need exactly one of -c CERT and --pubkey FILE");
    }
    if (name == NULL && pubfile != NULL) {
        return cli_usage(&sk_cmd_carrier, "--pubkey needs -n NAME");
    }

    if (cert != NULL) {
        if (sk_carrier_cert_key(&op, &cert_name, cert, &err) != 0) {
            return cli_fail_err(&err);
        }
        if (name == NULL && cert_name == NULL) {
            sk_key_free(op);
            return cli_fail("%s: the certificate has no DNS name; give -n "
                "NAME", cert);
        }
    } else if (sk_key_load_public(&op, pubfile, &err) != 0) {
        return cli_fail_err(&err);
    }
    if (sk_key_load_private(&sk, skfile, &err) != 0) {
        rc = cli_fail_err(&err);
        goto done;
    }

    now = time(NULL);
    params.name = name != NULL ? name : cert_name;
    params.services = services;
    params.not_before = now - SK_CARRIER_BACKDATE;
    params.not_after = now + (time_t) days * 86400;
    if (sk_carrier_create(&carrier, sk, op, &params, &err) != 0
        || sk_carrier_to_pem(&pem, &len, carrier, &err) != 0
        || sk_file_write_atomic(out, pem, len, 0644, &err) != 0)
    {
        rc = cli_fail_err(&err);
        goto done;
    }
    sk_carrier_print(carrier, op, out, json);
    rc = SK_EXIT_OK;

done:
    free(pem);
    free(cert_name);
    sk_carrier_free(carrier);
    sk_key_free(sk);
    sk_key_free(op);
    return rc;
}


const sk_cmd_t sk_cmd_carrier = {
    "carrier", sk_carrier_run,
    "-k SK (-c CERT | --pubkey PUB) [-n NAME] [-s SERVICES] [-d DAYS]"
    " -o CARRIER [--json]",
    "Make a carrier certificate: the sovereign key SK (a private key file)\n"
    "certifies the server's operational key, read from CERT (a PEM\n"
    "certificate or chain: the first certificate's key) or from PUB (a\n"
    "public key, certificate or key file).  NAME defaults to CERT's first\n"
    "DNS name; SERVICES (default \"https\") is the Services field it\n"
    "covers; it is valid for DAYS days (default 90) from an hour ago.\n"
    "CARRIER is written atomically as PEM.  Append it to the served chain\n"
    "with `sk chain`.\n"
};
