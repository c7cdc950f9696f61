/*
 * cmd_selfcert.c -- `sk selfcert`: the SK as a self-signed CA
 * certificate, so that tools which know nothing of sovereign keys can
 * check carriers: `openssl verify -partial_chain -trusted SKCERT CARRIER`.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/pem.h>

#include "cli.h"

#define SK_SELFCERT_DAYS      3650
#define SK_SELFCERT_MAX_DAYS  36500
#define SK_SELFCERT_BACKDATE  3600


static int
sk_selfcert_write(X509 *x, const char *path, sk_err_t *err)
{
    BIO  *bio;
    char *data;
    long  len;
    int   rc;

    bio = BIO_new(BIO_s_mem());
    if (bio == NULL || PEM_write_bio_X509(bio, x) != 1) {
        BIO_free(bio);
        return sk_err_crypto(err, "%s: cannot encode the certificate", path);
    }
    len = BIO_get_mem_data(bio, &data);
    rc = sk_file_write_atomic(path, data, (size_t) len, 0644, err);
    BIO_free(bio);
    return rc;
}


static int
sk_selfcert_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "key",  required_argument, NULL, 'k' },
        { "name", required_argument, NULL, 'n' },
        { "days", required_argument, NULL, 'd' },
        { "out",  required_argument, NULL, 'o' },
        { "json", no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char    *skfile = NULL, *name = NULL, *out = NULL;
    unsigned long  days = SK_SELFCERT_DAYS;
    sk_key_t      *sk;
    X509          *x;
    sk_err_t       err;
    char           fp[SK_FINGERPRINT_SIZE];
    time_t         now;
    int            c, json = 0, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "k:n:d:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'k': skfile = optarg; break;
        case 'n': name = optarg; break;
        case 'd':
            if (cli_parse_uint(&days, optarg, SK_SELFCERT_MAX_DAYS) != 0) {
                return cli_usage(&sk_cmd_selfcert, "bad -d \"%s\" (1 to %d "
                    "days)", optarg, SK_SELFCERT_MAX_DAYS);
            }
            break;
        case 'o': out = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_selfcert, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_selfcert, "unexpected argument \"%s\"",
            argv[optind]);
    }
    if (skfile == NULL || name == NULL || out == NULL) {
        return cli_usage(&sk_cmd_selfcert, "missing %s",
            skfile == NULL ? "-k SK" : name == NULL ? "-n NAME" : "-o FILE");
    }
    if (sk_name_check(name, strlen(name), &err) != 0) {
        return cli_usage(&sk_cmd_selfcert, "-n %s: %s", name, err.msg);
    }
    if (sk_key_load_private(&sk, skfile, &err) != 0) {
        return cli_fail_err(&err);
    }
    now = time(NULL);
    if (sk_carrier_sk_selfcert(&x, sk, name, now - SK_SELFCERT_BACKDATE,
            now + (time_t) days * 86400, &err) != 0)
    {
        sk_key_free(sk);
        return cli_fail_err(&err);
    }
    sk_key_fingerprint(fp, sk);
    rc = sk_selfcert_write(x, out, &err) != 0 ? cli_fail_err(&err)
                                               : SK_EXIT_OK;
    if (rc == SK_EXIT_OK && json) {
        printf("{\"certificate\":");
        cli_json_str(stdout, out);
        printf(",\"name\":");
        cli_json_str(stdout, name);
        printf(",\"sk\":\"%s\",\"days\":%lu}\n", fp, days);
    } else if (rc == SK_EXIT_OK) {
        printf("%s: self-signed certificate of SK %s for %s, %lu days\n",
            out, fp, name, days);
    }
    X509_free(x);
    sk_key_free(sk);
    return rc;
}


const sk_cmd_t sk_cmd_selfcert = {
    "selfcert", sk_selfcert_run,
    "-k SK -n NAME [-d DAYS] -o CERT [--json]",
    "Write a self-signed CA certificate of the sovereign key SK whose\n"
    "subject is the carriers' issuer for NAME (O=Sovereign Key, CN=NAME),\n"
    "valid DAYS days (default 3650).  With it, independent tools verify\n"
    "carriers:  openssl verify -partial_chain -trusted CERT carrier.pem\n"
};
