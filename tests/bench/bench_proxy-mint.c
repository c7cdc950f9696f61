/*
 * bench_proxy-mint.c -- `sk proxy`'s local CA on first contact with new
 * names: certificates minted per second (sk_mint_cert, every name new:
 * build, extensions, one ECDSA P-256 signature by the CA), against ECDSA
 * P-256 signatures per second by the same CA key over a message of a
 * certificate's size.  The ratio says what minting costs beyond its one
 * signature; there is no target.
 *
 *   BENCH proxy-mint N cert/s ref=M sign/s ratio=N/M target=none
 *
 * Environment: SECONDS (2 per window), WINDOWS (5, interleaved, medians).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <sk/sk.h>


static double
now_s(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}


static int
cmp(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}


int
main(void)
{
    const char    *s = getenv("SECONDS"), *w = getenv("WINDOWS");
    double         secs = s != NULL ? atof(s) : 2, t0, mint[16], sign[16];
    int            windows = w != NULL ? atoi(w) : 5, i, created;
    char           dir[] = "/tmp/sk-bench-mint.XXXXXX", ca[64], name[96],
                   cmd[128];
    unsigned char  msg[600], sig[128];
    unsigned long  n, names = 0;
    size_t         slen;
    sk_mint_t     *m;
    sk_err_t       err;
    EVP_PKEY      *key;
    EVP_MD_CTX    *md;
    X509          *x;
    FILE          *f;

    if (windows < 1 || windows > 16 || secs <= 0) {
        fprintf(stderr, "bench_proxy-mint: bad SECONDS or WINDOWS\n");
        return 1;
    }
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(ca, sizeof(ca), "%s/ca", dir);
    if (sk_mint_open(&m, &created, ca, "bench", time(NULL), &err) != 0) {
        fprintf(stderr, "bench_proxy-mint: %s\n", err.msg);
        return 1;
    }
    /* The CA's own key, for the reference signatures. */
    snprintf(name, sizeof(name), "%s/ca.key", ca);
    f = fopen(name, "r");
    key = f != NULL ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f != NULL) {
        fclose(f);
    }
    if (key == NULL) {
        fprintf(stderr, "bench_proxy-mint: cannot read %s\n", name);
        return 1;
    }
    memset(msg, 0x5a, sizeof(msg));
    for (i = 0; i < windows; i++) {
        for (n = 0, t0 = now_s(); now_s() - t0 < secs; n++) {
            snprintf(name, sizeof(name), "n%lu.example.com", names++);
            if (sk_mint_cert(&x, m, name, time(NULL), &err) != 0) {
                fprintf(stderr, "bench_proxy-mint: %s\n", err.msg);
                return 1;
            }
        }
        mint[i] = (double) n / (now_s() - t0);
        for (n = 0, t0 = now_s(); now_s() - t0 < secs; n++) {
            md = EVP_MD_CTX_new();
            slen = sizeof(sig);
            if (md == NULL || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL,
                    key) != 1
                || EVP_DigestSign(md, sig, &slen, msg, sizeof(msg)) != 1)
            {
                fprintf(stderr, "bench_proxy-mint: cannot sign\n");
                return 1;
            }
            EVP_MD_CTX_free(md);
        }
        sign[i] = (double) n / (now_s() - t0);
    }
    qsort(mint, (size_t) windows, sizeof(double), cmp);
    qsort(sign, (size_t) windows, sizeof(double), cmp);
    printf("%d x %.0fs windows, %lu new names\n", windows, secs, names);
    printf("BENCH proxy-mint %.0f cert/s ref=%.0f sign/s ratio=%.3f "
        "target=none\n", mint[windows / 2], sign[windows / 2],
        mint[windows / 2] / sign[windows / 2]);
    EVP_PKEY_free(key);
    sk_mint_free(m);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
