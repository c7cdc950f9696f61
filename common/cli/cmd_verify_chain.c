/*
 * cmd_verify_chain.c -- `sk verify-chain`: the client's check, from a
 * file or a live server (the network part is cli_net.c's).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509.h>

#include <sk/client.h>

#include "cli.h"
#include "cli_net.h"


static int
sk_vc_fail(const char *source, const char *check, const sk_err_t *err,
    int nchain, int json)
{
    if (json) {
        printf("{\"result\":\"fail\",\"source\":");
        cli_json_str(stdout, source);
        printf(",\"check\":\"%s\",\"reason\":", check);
        cli_json_str(stdout, err->msg);
        if (nchain > 0) {
            printf(",\"chain_length\":%d", nchain);
        }
        printf("}\n");
    }
    return cli_fail("%s: %s", source, err->msg);
}


static int
sk_vc_verify(STACK_OF(X509) *chain, const sk_key_t *sk, const char *source,
    int json)
{
    unsigned char *spki = NULL;
    sk_carrier_t  *c;
    sk_err_t       err;
    char           skfp[SK_FINGERPRINT_SIZE], date[CLI_DATE_SIZE];
    time_t         t;
    int            len, n = sk_X509_num(chain);

    if (sk_carrier_find(&c, chain, &err) != 0) {
        return sk_vc_fail(source, sk_client_check_name(err.code), &err, n, json);
    }
    len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(sk_X509_value(chain, 0)),
        &spki);
    if (len <= 0) {
        sk_err_crypto(&err, "cannot encode the leaf's public key");
    } else if (sk_carrier_verify(c, sk, spki, (size_t) len, time(NULL), &err)
               == 0)
    {
        err.code = SK_OK;
    }
    OPENSSL_free(spki);
    if (err.code != SK_OK) {
        sk_carrier_free(c);
        return sk_vc_fail(source, sk_client_check_name(err.code), &err, n, json);
    }

    sk_key_fingerprint(skfp, sk);
    t = sk_carrier_not_after(c);
    cli_date(date, t);
    if (json) {
        printf("{\"result\":\"pass\",\"source\":");
        cli_json_str(stdout, source);
        printf(",\"name\":");
        cli_json_str(stdout, sk_carrier_name(c));
        printf(",\"services\":");
        cli_json_str(stdout, sk_carrier_services(c));
        printf(",\"sk\":\"%s\",\"not_after\":\"%s\",\"chain_length\":%d}\n",
            skfp, date, n);
    } else {
        printf("pass: %s: carrier for %s by SK %s certifies the leaf's key, "
            "valid until %s (chain of %d certificates)\n", source,
            sk_carrier_name(c), skfp, date, n);
    }
    sk_carrier_free(c);
    return SK_EXIT_OK;
}


static int
sk_verify_chain_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "pub",        required_argument, NULL, 'p' },
        { "in",         required_argument, NULL, 'i' },
        { "connect",    required_argument, NULL, 'C' },
        { "starttls",   required_argument, NULL, 'S' },
        { "servername", required_argument, NULL, 'N' },
        { "json",       no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char      *pub = NULL, *in = NULL, *target = NULL;
    const char      *starttls = NULL, *servername = NULL, *source;
    STACK_OF(X509)  *chain = NULL;
    sk_key_t        *sk;
    sk_err_t         err;
    int              c, json = 0, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "p:i:", opts, NULL)) != -1) {
        switch (c) {
        case 'p': pub = optarg; break;
        case 'i': in = optarg; break;
        case 'C': target = optarg; break;
        case 'S': starttls = optarg; break;
        case 'N': servername = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_verify_chain, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_verify_chain, "unexpected argument \"%s\"",
            argv[optind]);
    }
    if (pub == NULL) {
        return cli_usage(&sk_cmd_verify_chain, "missing -p SK.pub");
    }
    if ((in == NULL) == (target == NULL)) {
        return cli_usage(&sk_cmd_verify_chain,
            "need exactly one of -i CHAIN and --connect HOST:PORT");
    }
    if ((starttls != NULL || servername != NULL) && target == NULL) {
        return cli_usage(&sk_cmd_verify_chain,
            "--starttls and --servername go with --connect");
    }
    if (starttls != NULL && strcmp(starttls, "smtp") != 0) {
        return cli_usage(&sk_cmd_verify_chain,
            "--starttls \"%s\": only smtp is supported", starttls);
    }
    source = in != NULL ? in : target;

    if (sk_key_load_public(&sk, pub, &err) != 0) {
        return sk_vc_fail(pub, "sk-key", &err, 0, json);
    }
    if (in != NULL) {
        rc = sk_chain_load_pem(&chain, in, &err);
    } else {
        rc = cli_net_fetch_chain(&chain, target, starttls != NULL,
            servername, NULL, &err);
        if (rc != 0 && err.code == SK_ERR_USAGE) {
            sk_key_free(sk);
            return cli_usage(&sk_cmd_verify_chain, "%s", err.msg);
        }
    }
    if (rc != 0) {
        rc = sk_vc_fail(source, in != NULL ? "chain" : "connect", &err, 0,
            json);
    } else {
        rc = sk_vc_verify(chain, sk, source, json);
    }
    sk_X509_pop_free(chain, X509_free);
    sk_key_free(sk);
    return rc;
}


const sk_cmd_t sk_cmd_verify_chain = {
    "verify-chain", sk_verify_chain_run,
    "-p SK.pub (-i CHAIN | --connect HOST:PORT [--starttls smtp]"
    " [--servername NAME]) [--json]",
    "Check, as a client would, that a certificate chain carries a carrier\n"
    "made by the sovereign key SK.pub, untampered, certifying the leaf's\n"
    "key, and valid now.  The chain comes from the PEM file CHAIN or from\n"
    "a TLS handshake with HOST:PORT (SNI: HOST unless an address, or NAME;\n"
    "the CA chain itself is not verified; --starttls smtp does EHLO and\n"
    "STARTTLS first; 10 s timeouts).  Exit 0 if it passes, 1 if not,\n"
    "naming the check that failed: wrong-sk, signature, key-mismatch,\n"
    "expired, not-yet-valid, no-carrier, malformed-carrier (and sk-key,\n"
    "chain or connect when the inputs cannot be had).  --json prints\n"
    "{\"result\":\"pass\"|\"fail\", \"check\", \"reason\", ...}.\n"
};
