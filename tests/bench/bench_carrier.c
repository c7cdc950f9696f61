/*
 * bench_carrier.c -- what a client pays for the SK checks, against the
 * bare signature check they are built on.
 *
 *   carrier-verify-ALG  sk_carrier_verify on a parsed carrier and the
 *                       leaf's SPKI, vs one EVP_DigestVerify (fresh
 *                       context, as any one-off check needs) of the same
 *                       key type over a message of the carrier's TBS size
 *   entry-verify-ed25519  sk_entry_verify of a Bind's SK-Signature, vs the
 *                       same over a message of its signed size
 *   dnssec-validate     sk_dnssec_check of a whole chain (root, test.,
 *                       example.test., Ed25519 keys; zones signed by
 *                       tests/unit/dnssec_zones.sh), vs the six RRSIG
 *                       verifications it needs (ldns), target 0.5
 *
 * Each of ROUNDS measurements runs A and B for about SECONDS apiece, in
 * alternating slices of SLICE seconds, so that frequency scaling and
 * neighbours hit both alike; the medians are compared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include <sk/sk.h>

#include "dnssec_fixture.h"

#define ROUNDS   5
#define SECONDS  1.0
#define SLICE    0.05
#define BATCH    64
#define TARGET   0.9
#define DNSSEC_TARGET  0.5
#define DNSSEC_AT      1798761600      /* 2027, in the zones' window */
#define DNSSEC_SETS    6               /* RRsets of the chain, one RR and
                                          one RRSIG each */

typedef int (*bench_fn)(void *arg);

typedef struct {
    const sk_carrier_t  *carrier;
    const sk_key_t      *sk;
    const unsigned char *leaf;
    size_t               leaf_len;
} carrier_arg_t;

typedef struct {
    const sk_key_t      *key;
    const unsigned char *msg;
    size_t               len;
    const unsigned char *sig;
    size_t               siglen;
} raw_arg_t;

typedef struct {
    const sk_entry_t    *entry;
    const sk_key_t      *key;
} entry_arg_t;

typedef struct {
    const dx_chain_t           *chain;
    const sk_key_t             *sk;
    const sk_dnssec_anchors_t  *anchors;
} dnssec_arg_t;

typedef struct {
    ldns_rr_list        *rrs[DNSSEC_SETS];
    ldns_rr             *sig[DNSSEC_SETS];
    ldns_rr_list        *keys[DNSSEC_SETS];
} rrsig_arg_t;


static void
die(const char *what, const sk_err_t *err)
{
    fprintf(stderr, "bench_carrier: %s: %s\n", what,
        err != NULL ? err->msg : "failed");
    exit(1);
}


static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}


/* Run fn for about SLICE seconds; adds the calls and the time taken. */
static void
slice(bench_fn fn, void *arg, long *n, double *t)
{
    double  start = now_s(), el;
    int     i;

    do {
        for (i = 0; i < BATCH; i++) {
            if (fn(arg) != 0) {
                die("a check failed during the benchmark", NULL);
            }
        }
        *n += BATCH;
        el = now_s() - start;
    } while (el < SLICE);
    *t += el;
}


/* One measurement of each, about SECONDS apiece, made of alternating
 * slices so that both see the same machine. */
static void
rates(double *ra, bench_fn a, void *aarg, double *rb, bench_fn b,
    void *barg)
{
    double  ta = 0, tb = 0;
    long    na = 0, nb = 0;

    while (ta < SECONDS) {
        slice(a, aarg, &na, &ta);
        slice(b, barg, &nb, &tb);
    }
    *ra = (double) na / ta;
    *rb = (double) nb / tb;
}


static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}


static void
compare(const char *name, bench_fn a, void *aarg, bench_fn b, void *barg,
    double target)
{
    double  ra[ROUNDS], rb[ROUNDS], ma, mb;
    int     i;

    for (i = 0; i < ROUNDS; i++) {
        rates(&ra[i], a, aarg, &rb[i], b, barg);
    }
    qsort(ra, ROUNDS, sizeof(double), cmp_double);
    qsort(rb, ROUNDS, sizeof(double), cmp_double);
    ma = ra[ROUNDS / 2];
    mb = rb[ROUNDS / 2];
    printf("BENCH %s %.0f verify/s ref=%.0f ratio=%.3f target=%.1f\n", name,
        ma, mb, ma / mb, target);
    fflush(stdout);
}


static int
run_carrier(void *arg)
{
    carrier_arg_t *c = arg;

    return sk_carrier_verify(c->carrier, c->sk, c->leaf, c->leaf_len,
        time(NULL), NULL);
}


/* The bare check: what any verification of one message costs. */
static int
run_raw(void *arg)
{
    raw_arg_t    *r = arg;
    EVP_MD_CTX   *ctx = EVP_MD_CTX_new();
    EVP_PKEY     *pkey = sk_key_get0_pkey(r->key);
    const EVP_MD *md = sk_key_alg(r->key) == SK_KEY_ED25519
                       ? NULL : EVP_sha256();
    int           ok;

    ok = ctx != NULL
        && EVP_DigestVerifyInit(ctx, NULL, md, NULL, pkey) == 1
        && EVP_DigestVerify(ctx, r->sig, r->siglen, r->msg, r->len) == 1;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : -1;
}


static int
run_entry(void *arg)
{
    entry_arg_t *e = arg;

    return sk_entry_verify(e->entry, SK_SIG_SK, e->key, NULL);
}


static void
raw_setup(raw_arg_t *r, const sk_key_t *key, size_t len)
{
    unsigned char *msg, *sig;
    sk_err_t       err;

    msg = malloc(len);
    if (msg == NULL || RAND_bytes(msg, (int) len) != 1) {
        die("random message", NULL);
    }
    if (sk_key_sign(&sig, &r->siglen, key, msg, len, &err) != 0) {
        die("sign", &err);
    }
    r->key = key;
    r->msg = msg;
    r->len = len;
    r->sig = sig;
}


static void
raw_free(raw_arg_t *r)
{
    free((void *) r->msg);
    free((void *) r->sig);
}


/* TBS size of a carrier: the DER less the signature and its wrapping. */
static size_t
tbs_size(const sk_carrier_t *c)
{
    const unsigned char *der = NULL, *p;
    unsigned char       *tbs = NULL;
    size_t               len;
    X509                *x;
    int                  n;

    der = sk_carrier_get0_der(c, &len);
    p = der;
    x = d2i_X509(NULL, &p, (long) len);
    n = x != NULL ? i2d_re_X509_tbs(x, &tbs) : -1;
    X509_free(x);
    OPENSSL_free(tbs);
    if (n <= 0) {
        die("TBS size", NULL);
    }
    return (size_t) n;
}


static void
bench_carrier_alg(sk_key_alg_t alg, const sk_key_t *op)
{
    const unsigned char *der, *spki;
    sk_carrier_params_t  params;
    sk_carrier_t        *made, *c;
    carrier_arg_t        ca;
    raw_arg_t            ra;
    sk_key_t            *sk;
    unsigned char       *leaf;
    size_t               len;
    sk_err_t             err;
    time_t               now = time(NULL);
    char                 name[64];

    if (sk_key_generate(&sk, alg, 0, &err) != 0) {
        die("SK", &err);
    }
    params.name = "example.com";
    params.services = "https";
    params.not_before = now - 3600;
    params.not_after = now + 90 * 86400;
    if (sk_carrier_create(&made, sk, op, &params, &err) != 0) {
        die("carrier", &err);
    }
    /* As a client has it: parsed from the bytes of the handshake. */
    der = sk_carrier_get0_der(made, &len);
    if (sk_carrier_from_der(&c, der, len, &err) != 0) {
        die("parse", &err);
    }
    spki = sk_key_get0_spki(op, &len);
    leaf = malloc(len);
    memcpy(leaf, spki, len);

    ca.carrier = c;
    ca.sk = sk;
    ca.leaf = leaf;
    ca.leaf_len = len;
    raw_setup(&ra, sk, tbs_size(c));

    snprintf(name, sizeof(name), "carrier-verify-%s", sk_key_alg_name(alg));
    compare(name, run_carrier, &ca, run_raw, &ra, TARGET);

    raw_free(&ra);
    free(leaf);
    sk_carrier_free(c);
    sk_carrier_free(made);
    sk_key_free(sk);
}


static void
bench_entry(const sk_key_t *cert_key)
{
    const unsigned char *der;
    sk_carrier_params_t  params;
    sk_carrier_t        *c;
    sk_entry_t          *e;
    entry_arg_t          ea;
    raw_arg_t            ra;
    sk_key_t            *sk;
    sk_err_t             err;
    size_t               len;
    char                *b64, *text;

    if (sk_key_generate(&sk, SK_KEY_ED25519, 0, &err) != 0) {
        die("SK", &err);
    }
    /* Any certificate will do as the evidence's bytes. */
    params.name = "example.com";
    params.services = "https";
    params.not_before = 0;
    params.not_after = 86400;
    if (sk_carrier_create(&c, sk, cert_key, &params, &err) != 0) {
        die("certificate", &err);
    }
    der = sk_carrier_get0_der(c, &len);
    b64 = sk_b64_encode_alloc(der, len);
    if (b64 == NULL
        || sk_entry_new(&e, SK_ENTRY_BIND, &err) != 0
        || sk_entry_set(e, "CA-Cert-Chain", b64, &err) != 0
        || sk_entry_set(e, "Includes-Subdomains", "0", &err) != 0
        || sk_entry_set(e, "Name", "example.com", &err) != 0
        || sk_entry_set(e, "Rebinder-Names", "none", &err) != 0
        || sk_entry_set(e, "Services", "https,smtps", &err) != 0
        || sk_entry_sign(e, SK_SIG_SK, sk, &err) != 0
        || sk_entry_signed_bytes(&text, &len, e, SK_SIG_SK, &err) != 0)
    {
        die("Bind entry", &err);
    }
    free(text);
    free(b64);

    ea.entry = e;
    ea.key = sk;
    raw_setup(&ra, sk, len);
    compare("entry-verify-ed25519", run_entry, &ea, run_raw, &ra, TARGET);

    raw_free(&ra);
    sk_entry_free(e);
    sk_carrier_free(c);
    sk_key_free(sk);
}


static int
run_dnssec(void *arg)
{
    dnssec_arg_t *d = arg;

    return sk_dnssec_check(d->chain->p, d->chain->len, "example.test", d->sk,
        d->anchors, DNSSEC_AT, NULL);
}


/* The signatures alone: set k's RRSIG with the DNSKEY RRset that signs
 * it (set k itself for a DNSKEY RRset, the next one for the others). */
static int
run_rrsigs(void *arg)
{
    rrsig_arg_t  *r = arg;
    size_t        k;

    for (k = 0; k < DNSSEC_SETS; k++) {
        if (ldns_verify_rrsig_keylist_time(r->rrs[k], r->sig[k], r->keys[k],
                DNSSEC_AT, NULL) != LDNS_STATUS_OK)
        {
            return -1;
        }
    }
    return 0;
}


static void
bench_dnssec(void)
{
    static dx_chain_t     c;
    sk_dnssec_anchors_t  *a;
    ldns_rr              *rr[4 * DNSSEC_SETS];
    dnssec_arg_t          da;
    rrsig_arg_t           ra;
    sk_key_t             *sk;
    sk_err_t              err;
    size_t                pos = 0, n, k, i;
    char                  tmpl[] = "/tmp/sk-bench.XXXXXX", *dir, cmd[256];
    char                  fp[SK_FINGERPRINT_SIZE];

    dir = mkdtemp(tmpl);
    if (dir == NULL || sk_key_generate(&sk, SK_KEY_ED25519, 0, &err) != 0) {
        die("SK", &err);
    }
    sk_key_fingerprint(fp, sk);
    snprintf(cmd, sizeof(cmd), "tests/unit/dnssec_zones.sh %s %s >/dev/null",
        dir, fp + strlen("sha256:"));
    if (system(cmd) != 0 || dx_build(&c, dir, "ex", "ex", "test", "root")
        != 0)
    {
        die("signed zones", NULL);
    }
    snprintf(cmd, sizeof(cmd), "%s/root.ds", dir);
    if (sk_dnssec_anchors_load(&a, cmd, &err) != 0) {
        die("anchors", &err);
    }
    for (n = 0; pos < c.len; n++) {
        if (n == sizeof(rr) / sizeof(rr[0])
            || ldns_wire2rr(&rr[n], c.p, c.len, &pos, LDNS_SECTION_ANSWER)
               != LDNS_STATUS_OK)
        {
            die("the chain's shape", NULL);
        }
    }
    /* Each RRset, then its RRSIG (a zone's DNSKEY set may hold several
     * keys, the root's two during a rollover); set k is signed by the
     * keys of set k | 1. */
    for (k = 0; k < DNSSEC_SETS; k++) {
        ra.rrs[k] = ldns_rr_list_new();
        ra.keys[k] = ldns_rr_list_new();
    }
    for (i = 0, k = 0; i < n; i++) {
        if (k == DNSSEC_SETS) {
            die("the chain's shape", NULL);
        }
        if (ldns_rr_get_type(rr[i]) == LDNS_RR_TYPE_RRSIG) {
            ra.sig[k++] = rr[i];
        } else {
            ldns_rr_list_push_rr(ra.rrs[k], rr[i]);
        }
    }
    if (k != DNSSEC_SETS) {
        die("the chain's shape", NULL);
    }
    for (k = 0; k < DNSSEC_SETS; k++) {
        for (i = 0; i < ldns_rr_list_rr_count(ra.rrs[k | 1]); i++) {
            ldns_rr_list_push_rr(ra.keys[k], ldns_rr_list_rr(ra.rrs[k | 1],
                i));
        }
    }
    da.chain = &c;
    da.sk = sk;
    da.anchors = a;
    if (run_dnssec(&da) != 0 || run_rrsigs(&ra) != 0) {
        die("the chain does not validate", NULL);
    }
    compare("dnssec-validate", run_dnssec, &da, run_rrsigs, &ra,
        DNSSEC_TARGET);

    for (k = 0; k < DNSSEC_SETS; k++) {
        ldns_rr_list_free(ra.rrs[k]);
        ldns_rr_list_free(ra.keys[k]);
    }
    for (k = 0; k < n; k++) {
        ldns_rr_free(rr[k]);
    }
    sk_dnssec_anchors_free(a);
    sk_key_free(sk);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0) {
        die("rm", NULL);
    }
}


static void
print_machine(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char  line[512], *v;

    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "model name", 10) == 0
            && (v = strchr(line, ':')) != NULL)
        {
            printf("machine: %s", v + 2);
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
}


int
main(void)
{
    sk_key_t *op;
    sk_err_t  err;

    print_machine();
    /* The server's key: P-256, the usual TLS key. */
    if (sk_key_generate(&op, SK_KEY_P256, 0, &err) != 0) {
        die("operational key", &err);
    }
    bench_carrier_alg(SK_KEY_ED25519, op);
    bench_carrier_alg(SK_KEY_P256, op);
    bench_entry(op);
    bench_dnssec();
    sk_key_free(op);
    return 0;
}
