/*
 * mirror_gen.c -- for bench_mirror_sync.sh:
 *
 *   mirror_gen gen TLKEY TID COUNT SKKEY CA.pem EE.pem OUT
 *       writes OUT, an sk-timeline entries.log of COUNT entries: SN 0 an
 *       Add-Root-CA for CA, then Binds of n<i>.bench.example by SKKEY with
 *       EE (a *.bench.example certificate for SKKEY) as evidence, each
 *       stamped and signed by TLKEY
 *   mirror_gen verify TLPUB CA.pem LOG
 *       runs the checks sk-mirror runs on each entry of LOG -- parse,
 *       timeline signature, Merkle leaf hash, and for a Bind its
 *       SK-Signature and chain -- in one thread, and prints entries/s: the
 *       crypto-bound rate a sync is measured against
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <sk/sk.h>
#include <sk/chain.h>

#define MAX_LOG  ((size_t) 1 << 34)


static void
die(const char *what, const sk_err_t *err)
{
    fprintf(stderr, "mirror_gen: %s: %s\n", what, err != NULL ? err->msg
                                                             : "failed");
    exit(1);
}


static X509 *
read_cert(const char *path, char **b64)
{
    unsigned char  *der = NULL;
    FILE           *f = fopen(path, "r");
    X509           *x;
    int             n;

    if (f == NULL || (x = PEM_read_X509(f, NULL, NULL, NULL)) == NULL) {
        die(path, NULL);
    }
    fclose(f);
    n = i2d_X509(x, &der);
    if (n <= 0) {
        die(path, NULL);
    }
    if (b64 != NULL) {
        *b64 = sk_b64_encode_alloc(der, (size_t) n);
    }
    OPENSSL_free(der);
    return x;
}


static void
put(FILE *out, sk_entry_t *e, sk_key_t *tl, unsigned long tid,
    unsigned long sn, int64_t ts)
{
    sk_err_t  err;
    size_t    len;
    char     *text;

    if (sk_entry_stamp(e, tid, sn, ts, tl, &err) != 0
        || sk_entry_format(&text, &len, e, &err) != 0)
    {
        die("stamp", &err);
    }
    fwrite(text, 1, len, out);
    free(text);
    sk_entry_free(e);
}


static int
gen(char **argv)
{
    sk_entry_t     *e;
    sk_key_t       *tl, *sk;
    sk_err_t        err;
    unsigned long   tid = strtoul(argv[3], NULL, 10), n, i;
    int64_t         ts = (int64_t) time(NULL);
    char           *ca, *ee, name[64];
    FILE           *out;

    n = strtoul(argv[4], NULL, 10);
    if (sk_key_load_private(&tl, argv[2], &err) != 0
        || sk_key_load_private(&sk, argv[5], &err) != 0)
    {
        die("key", &err);
    }
    X509_free(read_cert(argv[6], &ca));
    X509_free(read_cert(argv[7], &ee));
    out = fopen(argv[8], "w");
    if (out == NULL) {
        die(argv[8], NULL);
    }
    if (sk_entry_new(&e, SK_ENTRY_ADD_ROOT_CA, &err) != 0
        || sk_entry_set(e, "CA-Cert", ca, &err) != 0
        || sk_entry_set(e, "CA-Serial", "1", &err) != 0
        || sk_entry_sign(e, SK_SIG_OPERATOR, sk, &err) != 0)
    {
        die("root entry", &err);
    }
    put(out, e, tl, tid, 0, ts);
    for (i = 1; i < n; i++) {
        snprintf(name, sizeof(name), "n%lu.bench.example", i);
        if (sk_entry_new(&e, SK_ENTRY_BIND, &err) != 0
            || sk_entry_set(e, "Name", name, &err) != 0
            || sk_entry_set(e, "Includes-Subdomains", "0", &err) != 0
            || sk_entry_set(e, "Services", "https", &err) != 0
            || sk_entry_set(e, "Rebinder-Names", "none", &err) != 0
            || sk_entry_set(e, "CA-Cert-Chain", ee, &err) != 0
            || sk_entry_sign(e, SK_SIG_SK, sk, &err) != 0)
        {
            die("bind", &err);
        }
        put(out, e, tl, tid, i, ts);
    }
    if (fclose(out) != 0) {
        die(argv[8], NULL);
    }
    free(ca);
    free(ee);
    sk_key_free(tl);
    sk_key_free(sk);
    return 0;
}


static double
now_s(void)
{
    struct timespec  t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}


static int
verify(char **argv)
{
    sk_merkle_hash_t   leaf;
    X509_STORE        *st = X509_STORE_new();
    sk_entry_t        *e;
    sk_key_t          *tl, *k;
    sk_err_t           err;
    uint64_t           n = 0;
    int64_t            ts;
    size_t             len, pos = 0, used;
    double             t0;
    char              *buf;
    X509              *ca;

    if (sk_key_load_public(&tl, argv[2], &err) != 0) {
        die("key", &err);
    }
    ca = read_cert(argv[3], NULL);
    if (st == NULL || X509_STORE_add_cert(st, ca) != 1) {
        die("store", NULL);
    }
    if (sk_file_read(&buf, &len, argv[4], MAX_LOG, &err) != 0) {
        die(argv[4], &err);
    }
    t0 = now_s();
    while (pos < len) {
        if (sk_entry_parse_next(&e, &used, buf + pos, len - pos, &err) != 0
            || sk_entry_verify(e, SK_SIG_TIMELINE, tl, &err) != 0
            || sk_entry_timestamp(e, &ts, &err) != 0
            || sk_merkle_leaf_hash(leaf, buf + pos, used, &err) != 0)
        {
            die("entry", &err);
        }
        if (sk_entry_type(e) == SK_ENTRY_BIND) {
            if (sk_entry_key(&k, e, &err) != 0
                || sk_entry_verify(e, SK_SIG_SK, k, &err) != 0
                || sk_chain_check(NULL, e, k, st, ts, &err) != 0)
            {
                die("bind", &err);
            }
            sk_key_free(k);
        }
        sk_entry_free(e);
        pos += used;
        n++;
    }
    printf("%.0f\n", (double) n / (now_s() - t0));
    free(buf);
    X509_free(ca);
    X509_STORE_free(st);
    sk_key_free(tl);
    return 0;
}


int
main(int argc, char **argv)
{
    if (argc == 9 && strcmp(argv[1], "gen") == 0) {
        return gen(argv);
    }
    if (argc == 5 && strcmp(argv[1], "verify") == 0) {
        return verify(argv);
    }
    fprintf(stderr, "usage: mirror_gen gen TLKEY TID COUNT SKKEY CA.pem "
        "EE.pem OUT\n       mirror_gen verify TLPUB CA.pem LOG\n");
    return 2;
}
