/*
 * cmd_chain.c -- `sk chain`: append the carrier to the served chain.
 *
 * The carrier goes last, after the CA chain, where clients that know
 * nothing of sovereign keys ignore it.  A carrier already in the input
 * is dropped, so renewing is `sk chain -i out.pem -a new.pem -o out.pem`.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/pem.h>

#include "cli.h"


/* The carrier of cs that certifies leaf's key, or NULL. */
static const sk_carrier_t *
sk_chain_pick(sk_carrier_t **cs, size_t n, X509 *leaf, char *fp,
    sk_err_t *err)
{
    const unsigned char *cspki;
    unsigned char       *spki = NULL, md[SK_SHA256_BYTES];
    size_t               i, clen;
    int                  len;

    len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(leaf), &spki);
    if (len <= 0) {
        sk_err_crypto(err, "cannot encode the leaf's public key");
        return NULL;
    }
    EVP_Digest(spki, (size_t) len, md, NULL, EVP_sha256(), NULL);
    sk_fingerprint_format(fp, md);
    for (i = 0; i < n; i++) {
        cspki = sk_carrier_subject_spki(cs[i], &clen);
        if (clen == (size_t) len && memcmp(cspki, spki, clen) == 0) {
            break;
        }
    }
    OPENSSL_free(spki);
    if (i == n) {
        sk_err_set(err, SK_ERR_KEY_MISMATCH,
            "no carrier certifies the leaf's key %s", fp);
        return NULL;
    }
    return cs[i];
}


/* chain (minus old carriers after the leaf), then c, as PEM. */
static int
sk_chain_write(const char *path, STACK_OF(X509) *chain,
    const sk_carrier_t *c, int *written, int *dropped, sk_err_t *err)
{
    sk_carrier_t *old;
    X509         *x;
    BIO          *bio;
    char         *data;
    long          len;
    int           i, ok, rc;

    bio = BIO_new(BIO_s_mem());
    ok = bio != NULL;
    *written = *dropped = 0;
    for (i = 0; ok && i < sk_X509_num(chain); i++) {
        x = sk_X509_value(chain, i);
        if (i > 0 && sk_carrier_from_x509(&old, x, NULL) == 0) {
            sk_carrier_free(old);
            (*dropped)++;
            continue;
        }
        ok = PEM_write_bio_X509(bio, x) == 1;
        (*written)++;
    }
    if (!ok || PEM_write_bio_X509(bio, sk_carrier_get0_x509(c)) != 1) {
        BIO_free(bio);
        return sk_err_crypto(err, "%s: cannot encode the chain", path);
    }
    len = BIO_get_mem_data(bio, &data);
    rc = sk_file_write_atomic(path, data, (size_t) len, 0644, err);
    BIO_free(bio);
    return rc;
}


static int
sk_chain_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "in",      required_argument, NULL, 'i' },
        { "carrier", required_argument, NULL, 'a' },
        { "out",     required_argument, NULL, 'o' },
        { "json",    no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char          *in = NULL, *cfile = NULL, *out = NULL;
    const sk_carrier_t  *c;
    STACK_OF(X509)      *chain = NULL;
    sk_carrier_t       **cs = NULL;
    size_t               n = 0, i;
    sk_err_t             err;
    char                 fp[SK_FINGERPRINT_SIZE], date[CLI_DATE_SIZE];
    time_t               t;
    int                  opt, json = 0, written, dropped;
    int                  rc = SK_EXIT_FAIL;

    optind = 1;
    while ((opt = getopt_long(argc, argv, "i:a:o:", opts, NULL)) != -1) {
        switch (opt) {
        case 'i': in = optarg; break;
        case 'a': cfile = optarg; break;
        case 'o': out = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_chain, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_chain, "unexpected argument \"%s\"",
            argv[optind]);
    }
    if (in == NULL || cfile == NULL || out == NULL) {
        return cli_usage(&sk_cmd_chain, "missing %s",
            in == NULL ? "-i CHAIN" : cfile == NULL ? "-a CARRIER"
                                                    : "-o FILE");
    }

    if (sk_chain_load_pem(&chain, in, &err) != 0
        || sk_carrier_load_pem(&cs, &n, cfile, &err) != 0)
    {
        rc = cli_fail_err(&err);
        goto done;
    }
    c = sk_chain_pick(cs, n, sk_X509_value(chain, 0), fp, &err);
    if (c == NULL) {
        rc = cli_fail("%s: %s (the leaf of %s)", cfile, err.msg, in);
        goto done;
    }
    t = sk_carrier_not_after(c);
    cli_date(date, t);
    if (t < time(NULL)) {
        rc = cli_fail("%s: carrier for %s expired at %s", cfile,
            sk_carrier_name(c), date);
        goto done;
    }
    if (sk_chain_write(out, chain, c, &written, &dropped, &err) != 0) {
        rc = cli_fail_err(&err);
        goto done;
    }
    if (json) {
        printf("{\"chain\":");
        cli_json_str(stdout, out);
        printf(",\"certificates\":%d,\"replaced\":%d,\"name\":", written + 1,
            dropped);
        cli_json_str(stdout, sk_carrier_name(c));
        printf(",\"key\":\"%s\",\"not_after\":\"%s\"}\n", fp, date);
    } else {
        printf("%s: %d certificate%s + carrier for %s (key %s, valid until "
            "%s)%s\n", out, written, written == 1 ? "" : "s",
            sk_carrier_name(c), fp, date,
            dropped ? ", replacing the old carrier" : "");
    }
    rc = SK_EXIT_OK;

done:
    for (i = 0; i < n; i++) {
        sk_carrier_free(cs[i]);
    }
    free(cs);
    sk_X509_pop_free(chain, X509_free);
    return rc;
}


const sk_cmd_t sk_cmd_chain = {
    "chain", sk_chain_run,
    "-i CHAIN -a CARRIER -o OUT [--json]",
    "Write OUT (atomically): the certificates of CHAIN (leaf first, as a\n"
    "server sends them) followed by the carrier from CARRIER that\n"
    "certifies the leaf's key.  CARRIER may hold several carriers (one per\n"
    "key); fails if none certifies the leaf or it has expired.  A carrier\n"
    "already in CHAIN is replaced.\n"
};
