/*
 * bench_client.c -- the CPU an SK-aware client spends deciding about one
 * presented chain (sk_client_decide: find and parse the carrier, check it
 * against the SK of the combined record, its name and services), against
 * what every TLS client already spends on the same chain: OpenSSL's
 * X509_verify_cert to the trusted root, with the host name checked.
 *
 *   client-decide-<alg>  microseconds of CPU per chain; ref = the same for
 *                        X509_verify_cert; ratio = decide / verify.  Lower
 *                        is better: the target is an upper bound.
 *   client-decide-absent microseconds of CPU to verify a mirror's answer
 *                        proving a name absent from the maps of 3
 *                        timelines (issue 23); ref = a present answer from
 *                        3 timelines without maps (bench_absent).
 *   client-decide-nonce  microseconds of CPU for the answer to a direct
 *                        query with a nonce (issue 38): a new nonce, the
 *                        trailer checked (its signature stands for the
 *                        answer's own), the answer; ref = the same answer
 *                        to a query without one, its signature checked
 *                        (bench_nonce).
 *
 * The chain is leaf (P-256, issued by a P-256 root), root, carrier (made
 * by the SK).  Both sides run in alternating batches on the process CPU
 * clock; the median of PAIRS per-pair ratios is reported, so that
 * frequency changes hit both alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <sk/sk.h>
#include <sk/client.h>

#include "test_client_fixture.h"

#define PAIRS   21
#define BATCH   200
#define NOW     1800000000
#define TARGET  1.5

typedef struct {
    STACK_OF(X509)  *chain;      /* leaf, root, carrier */
    X509_STORE      *store;      /* the root */
    sk_entry_t      *bind;       /* the record borrows it */
    sk_record_t      rec;
} bench_t;


static void
die(const char *what, const sk_err_t *err)
{
    fprintf(stderr, "bench_client: %s: %s\n", what,
        err != NULL ? err->msg : "failed");
    exit(1);
}


static double
cpu_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}


static X509 *
bench_cert(EVP_PKEY *subject, X509 *issuer, EVP_PKEY *issuer_key,
    const char *cn, int ca)
{
    X509             *x = X509_new();
    X509_NAME        *n = X509_NAME_new();
    X509V3_CTX        v3;
    X509_EXTENSION   *ext;
    char              san[300];

    if (x == NULL || n == NULL
        || X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
               (const unsigned char *) cn, -1, -1, 0) != 1)
    {
        die("certificate", NULL);
    }
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), ca ? 1 : 2);
    ASN1_TIME_set(X509_getm_notBefore(x), NOW - 86400);
    ASN1_TIME_set(X509_getm_notAfter(x), NOW + 86400 * 30);
    X509_set_subject_name(x, n);
    X509_set_issuer_name(x, issuer != NULL ? X509_get_subject_name(issuer)
        : n);
    X509_set_pubkey(x, subject);
    X509V3_set_ctx(&v3, issuer != NULL ? issuer : x, x, NULL, NULL, 0);
    snprintf(san, sizeof(san), "DNS:%s", cn);
    ext = X509V3_EXT_conf_nid(NULL, &v3, ca ? NID_basic_constraints
        : NID_subject_alt_name, ca ? "critical,CA:TRUE" : san);
    if (ext == NULL || X509_add_ext(x, ext, -1) != 1
        || X509_sign(x, issuer_key, EVP_sha256()) <= 0)
    {
        die("certificate", NULL);
    }
    X509_EXTENSION_free(ext);
    X509_NAME_free(n);
    return x;
}


static void
bench_setup(bench_t *b, sk_key_alg_t alg)
{
    sk_carrier_params_t  p = { "example.com", "https", NOW - 60,
                               NOW + 86400 };
    sk_key_t            *ca, *op, *sk, *tl;
    sk_carrier_t        *c;
    sk_entry_t          *e;
    sk_err_t             err;
    X509                *root, *leaf;
    unsigned char       *der = NULL;
    char                *evidence;
    int                  n;

    if (sk_key_generate(&ca, SK_KEY_P256, 0, &err) != 0
        || sk_key_generate(&op, SK_KEY_P256, 0, &err) != 0
        || sk_key_generate(&sk, alg, 0, &err) != 0
        || sk_key_generate(&tl, SK_KEY_ED25519, 0, &err) != 0)
    {
        die("keys", &err);
    }
    root = bench_cert(sk_key_get0_pkey(ca), NULL, sk_key_get0_pkey(ca),
        "Bench Root", 1);
    leaf = bench_cert(sk_key_get0_pkey(op), root, sk_key_get0_pkey(ca),
        "example.com", 0);
    if (sk_carrier_create(&c, sk, op, &p, &err) != 0) {
        die("carrier", &err);
    }
    b->chain = sk_X509_new_null();
    b->store = X509_STORE_new();
    X509_up_ref(sk_carrier_get0_x509(c));
    if (b->chain == NULL || b->store == NULL
        || sk_X509_push(b->chain, leaf) <= 0
        || sk_X509_push(b->chain, root) <= 0
        || sk_X509_push(b->chain, sk_carrier_get0_x509(c)) <= 0
        || X509_STORE_add_cert(b->store, root) != 1)
    {
        die("chain", NULL);
    }
    X509_up_ref(root);
    sk_carrier_free(c);

    /* The record: a Bind, signed and stamped (the root as its evidence:
     * combining does not judge it). */
    n = i2d_X509(root, &der);
    evidence = n > 0 ? sk_b64_encode_alloc(der, (size_t) n) : NULL;
    OPENSSL_free(der);
    if (evidence == NULL) {
        die("evidence", NULL);
    }
    if (sk_entry_new(&e, SK_ENTRY_BIND, &err) != 0
        || sk_entry_set(e, "Name", "example.com", &err) != 0
        || sk_entry_set(e, "CA-Cert-Chain", evidence, &err) != 0
        || sk_entry_set(e, "Includes-Subdomains", "0", &err) != 0
        || sk_entry_set(e, "Rebinder-Names", "none", &err) != 0
        || sk_entry_set(e, "Services", "https", &err) != 0
        || sk_entry_sign(e, SK_SIG_SK, sk, &err) != 0
        || sk_entry_stamp(e, 1, 0, NOW - 3600, tl, &err) != 0
        || sk_record_combine(&b->rec, "example.com",
               (const sk_entry_t *const *) &e, 1, NULL, NULL, &err) != 0)
    {
        die("record", &err);
    }
    if (b->rec.state != SK_RECORD_BOUND) {
        die("record not bound", NULL);
    }
    b->bind = e;
    free(evidence);
    sk_key_free(ca);
    sk_key_free(op);
    sk_key_free(sk);
    sk_key_free(tl);
}


static void
bench_decide(bench_t *b)
{
    sk_decide_t  d;
    sk_err_t     err;

    if (sk_client_decide(&d, &b->rec, "example.com", "https", 443, b->chain,
            NOW, &err) != 0 || d.decision != SK_DECIDE_ACCEPT)
    {
        fprintf(stderr, "bench_client: decide: %s\n", d.reason);
        exit(1);
    }
}


static void
bench_verify(bench_t *b)
{
    X509_STORE_CTX  *ctx = X509_STORE_CTX_new();
    X509_VERIFY_PARAM *vp;

    if (ctx == NULL || X509_STORE_CTX_init(ctx, b->store,
            sk_X509_value(b->chain, 0), b->chain) != 1)
    {
        die("store context", NULL);
    }
    vp = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_time(vp, NOW);
    X509_VERIFY_PARAM_set1_host(vp, "example.com", 0);
    if (X509_verify_cert(ctx) != 1) {
        fprintf(stderr, "bench_client: X509_verify_cert: %s\n",
            X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
        exit(1);
    }
    X509_STORE_CTX_free(ctx);
}


static int
cmp_double(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}


/* Median per-pair CPU of a() and b() in alternating batches, and of
 * their ratio. */
static void
bench_pairs(void (*a)(void *), void (*b)(void *), void *arg, double *us_a,
    double *us_b, double *r)
{
    double  ratio[PAIRS], ua[PAIRS], ub[PAIRS], t;
    int     i, k;

    a(arg);                 /* warm up, and fail early */
    b(arg);
    for (i = 0; i < PAIRS; i++) {
        t = cpu_now();
        for (k = 0; k < BATCH; k++) {
            a(arg);
        }
        ua[i] = (cpu_now() - t) * 1e6 / BATCH;
        t = cpu_now();
        for (k = 0; k < BATCH; k++) {
            b(arg);
        }
        ub[i] = (cpu_now() - t) * 1e6 / BATCH;
        ratio[i] = ua[i] / ub[i];
    }
    qsort(ratio, PAIRS, sizeof(double), cmp_double);
    qsort(ua, PAIRS, sizeof(double), cmp_double);
    qsort(ub, PAIRS, sizeof(double), cmp_double);
    *us_a = ua[PAIRS / 2];
    *us_b = ub[PAIRS / 2];
    *r = ratio[PAIRS / 2];
}


static void
bench_decide_fn(void *arg)
{
    bench_decide(arg);
}


static void
bench_verify_fn(void *arg)
{
    bench_verify(arg);
}


static void
bench_run(const char *name, sk_key_alg_t alg)
{
    double   us_d, us_v, ratio;
    bench_t  b;

    memset(&b, 0, sizeof(b));
    bench_setup(&b, alg);
    bench_pairs(bench_decide_fn, bench_verify_fn, &b, &us_d, &us_v, &ratio);
    printf("BENCH client-decide-%s %.1f us/chain ref=%.1f ratio=%.3f "
        "target=%.1f\n", name, us_d, us_v, ratio, TARGET);
    fflush(stdout);
    sk_X509_pop_free(b.chain, X509_free);
    X509_STORE_free(b.store);
    sk_record_free(&b.rec);
    sk_entry_free(b.bind);
}


/* client-decide-absent: two mirror answers over 3 timelines, built as
 * sk-mirror builds them (test_client_fixture.h). */
typedef struct {
    fx_world_t   w;
    char        *present, *absent;      /* the answers */
    size_t       plen, alen;
} bench_answers_t;


static void
bench_answer(bench_answers_t *b, const char *a, size_t len,
    const char *name, size_t nitems)
{
    sk_client_view_t  v;
    sk_err_t          err;

    if (sk_client_answer_verify(&v, NULL, a, len, name, 0, b->w.mirror,
            &b->w.trust, FX_NOW, &err) != 0)
    {
        die(name, &err);
    }
    if (v.nitems != nitems) {
        die("the answer's entries", NULL);
    }
    sk_client_view_free(&v);
}


static void
bench_absent_fn(void *arg)
{
    bench_answers_t  *b = arg;

    bench_answer(b, b->absent, b->alen, "absent.example", 0);
}


static void
bench_present_fn(void *arg)
{
    bench_answers_t  *b = arg;

    bench_answer(b, b->present, b->plen, "example.com", 3);
}


/* The ref is a present answer (one Bind per timeline) from timelines
 * without maps: what a client checked before maps (the mirror's
 * signature, each checkpoint, each entry's signature and inclusion), and
 * now each checkpoint's last entry as well.  Then each timeline closes its
 * batch with a Map-Root entry, and the absent answer proves the name
 * absent from all three maps. */
static void
bench_absent(void)
{
    bench_answers_t  b;
    sk_key_t        *sk = fx_key();
    double           us_a, us_p, ratio;
    size_t           i;

    fx_init(&b.w, 3);
    for (i = 0; i < 3; i++) {
        fx_append(&b.w, i, fx_bind("example.com", sk, "https", 0),
            FX_NOW - 3600);
        fx_append(&b.w, i, fx_bind("other.example", sk, "https", 0),
            FX_NOW - 3500);
    }
    b.present = fx_answer(&b.w, "example.com", &b.plen);
    for (i = 0; i < 3; i++) {
        fx_map_root(&b.w, i, FX_NOW - 3500);
    }
    b.absent = fx_answer(&b.w, "absent.example", &b.alen);
    bench_pairs(bench_absent_fn, bench_present_fn, &b, &us_a, &us_p, &ratio);
    printf("BENCH client-decide-absent %.1f us/answer ref=%.1f ratio=%.3f "
        "target=%.1f\n", us_a, us_p, ratio, TARGET);
    fflush(stdout);
    free(b.present);
    free(b.absent);
    sk_key_free(sk);
    fx_free(&b.w);
}


/* client-decide-nonce: NDOCS answers to queries with a nonce each, as
 * sk-mirror signs them, checked in turn. */
#define NDOCS         64
#define TARGET_NONCE  1.10

typedef struct {
    fx_world_t   w;
    char        *answer;                    /* without a nonce */
    size_t       len;
    char        *doc[NDOCS];                /* with its trailer */
    size_t       dlen[NDOCS];
    char         nonce[NDOCS][SK_NONCE_TEXT + 1];
    size_t       i;
} bench_nonces_t;


static void
bench_nonce_fn(void *arg)
{
    bench_nonces_t    *b = arg;
    sk_client_view_t   v;
    sk_err_t           err;
    size_t             i = b->i++ % NDOCS, alen;
    char               fresh[SK_NONCE_TEXT + 1];

    if (sk_nonce_new(fresh, &err) != 0
        || sk_nonce_verify(&alen, b->doc[i], b->dlen[i], b->nonce[i],
               b->w.mirror, &err) != 0
        || sk_client_answer_verify(&v, NULL, b->doc[i], alen, "example.com",
               0, NULL, &b->w.trust, FX_NOW, &err) != 0)
    {
        die("the answer with a nonce", &err);
    }
    sk_client_view_free(&v);
}


static void
bench_plain_fn(void *arg)
{
    bench_nonces_t    *b = arg;
    sk_client_view_t   v;
    sk_err_t           err;

    if (sk_client_answer_verify(&v, NULL, b->answer, b->len, "example.com",
            0, b->w.mirror, &b->w.trust, FX_NOW, &err) != 0)
    {
        die("the answer", &err);
    }
    sk_client_view_free(&v);
}


static void
bench_nonce(void)
{
    bench_nonces_t   b;
    sk_key_t        *sk = fx_key();
    sk_err_t         err;
    double           us_n, us_p, ratio;
    size_t           i;

    memset(&b, 0, sizeof(b));
    fx_init(&b.w, 3);
    for (i = 0; i < 3; i++) {
        fx_append(&b.w, i, fx_bind("example.com", sk, "https", 0),
            FX_NOW - 3600);
    }
    b.answer = fx_answer(&b.w, "example.com", &b.len);
    for (i = 0; i < NDOCS; i++) {
        if (sk_nonce_new(b.nonce[i], &err) != 0) {
            die("nonce", &err);
        }
        b.doc[i] = malloc(b.len + 1);
        memcpy(b.doc[i], b.answer, b.len + 1);
        b.dlen[i] = b.len;
        b.doc[i] = fx_nonce(&b.w, b.doc[i], &b.dlen[i], b.nonce[i]);
    }
    bench_pairs(bench_nonce_fn, bench_plain_fn, &b, &us_n, &us_p, &ratio);
    printf("BENCH client-decide-nonce %.1f us/answer ref=%.1f ratio=%.3f "
        "target=%.2f\n", us_n, us_p, ratio, TARGET_NONCE);
    fflush(stdout);
    for (i = 0; i < NDOCS; i++) {
        free(b.doc[i]);
    }
    free(b.answer);
    sk_key_free(sk);
    fx_free(&b.w);
}


int
main(void)
{
    bench_run("ed25519", SK_KEY_ED25519);
    bench_run("p256", SK_KEY_P256);
    bench_absent();
    bench_nonce();
    return 0;
}
