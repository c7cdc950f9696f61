/*
 * carrier_gen.c -- many carriers at once for tests/bench/bench_metrics_scrape.pl:
 * the SK in SKKEY certifies the key of the certificate CERT under each of
 * the names n0.bench.example .. n<N-1>.bench.example, one PEM file each
 * in OUTDIR (n<i>.pem).  A `sk carrier` process per name would take
 * minutes for 10,000.
 *
 *   carrier_gen SKKEY CERT N OUTDIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <openssl/pem.h>

#include <sk/carrier.h>
#include <sk/key.h>

int
main(int argc, char **argv)
{
    sk_carrier_params_t   params;
    sk_carrier_t         *c;
    sk_key_t             *sk, *op;
    sk_err_t              err;
    X509                 *x;
    FILE                 *f;
    char                  name[64], path[4096], *pem;
    size_t                len;
    long                  i, n;

    if (argc != 5 || (n = strtol(argv[3], NULL, 10)) <= 0) {
        fprintf(stderr, "usage: carrier_gen SKKEY CERT N OUTDIR\n");
        return 2;
    }
    f = fopen(argv[2], "r");
    x = f != NULL ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f != NULL) {
        fclose(f);
    }
    if (x == NULL) {
        fprintf(stderr, "carrier_gen: %s: no certificate\n", argv[2]);
        return 1;
    }
    if (sk_key_load_private(&sk, argv[1], &err) != 0
        || sk_key_from_pkey(&op, X509_get0_pubkey(x), &err) != 0)
    {
        fprintf(stderr, "carrier_gen: %s\n", err.msg);
        return 1;
    }
    params.services = "https";
    params.not_before = time(NULL) - 3600;
    params.not_after = time(NULL) + 30 * 86400;
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "n%ld.bench.example", i);
        snprintf(path, sizeof(path), "%s/n%ld.pem", argv[4], i);
        params.name = name;
        if (sk_carrier_create(&c, sk, op, &params, &err) != 0
            || sk_carrier_to_pem(&pem, &len, c, &err) != 0)
        {
            fprintf(stderr, "carrier_gen: %s: %s\n", name, err.msg);
            return 1;
        }
        /* a scratch directory: no fsync, no atomic rename */
        f = fopen(path, "w");
        if (f == NULL || fwrite(pem, 1, len, f) != len || fclose(f) != 0) {
            fprintf(stderr, "carrier_gen: %s: cannot write\n", path);
            return 1;
        }
        free(pem);
        sk_carrier_free(c);
    }
    sk_key_free(op);
    sk_key_free(sk);
    X509_free(x);
    return 0;
}
