/*
 * mirror_gen.c -- large timelines for bench_mirror_sync.sh and
 * bench_scale.sh, fast:
 *
 *   mirror_gen gen TLKEY TID COUNT DIR [MARK...]
 *       writes DIR/entries.log and DIR/certs.log, an sk-timeline's log of
 *       COUNT entries (its on-disk form: docs/timeline.md), and
 *       DIR/root.crt.  SN 0 is an Add-Root-CA for a fresh RSA-2048 root;
 *       SN i a Bind of n<i>.bench.example whose CA-Cert-Chain is an
 *       end-entity certificate for *.bench.example and an RSA-2048
 *       intermediate under that root.  A few certificates per CA, reused
 *       (GEN_CAS intermediates x GEN_CERTS end-entity certificates, 4 x 4
 *       by default), each for its own Ed25519 SK, as CAs issue one
 *       certificate to a customer for many names.  Every entry is stamped
 *       and signed by TLKEY.  Entries are made by one thread per core
 *       (GEN_THREADS) in blocks, written in SN order.  For each MARK (an
 *       entry count, ascending), prints "MARK <count> <entries.log bytes>"
 *       once that many entries are written: a log cut there is a complete
 *       log of that many entries.  `sk-timeline --repair` then checks
 *       every entry's timeline signature and writes the signed head.
 *
 *   mirror_gen verify TLPUB ROOT.crt DIR [TLPUB ROOT.crt DIR...]
 *       runs the checks sk-mirror runs on each entry of each DIR's log --
 *       parse, timeline signature, Merkle leaf hash, and for a Bind its
 *       SK-Signature and chain -- one thread per log, all at once, and
 *       prints the entries checked per second over all of them: the
 *       crypto-bound rate a sync is measured against.  The CA
 *       certificates the log keeps once (certs.log) are put back in each
 *       entry first, as the timeline serves them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <sk/sk.h>
#include <sk/b64.h>
#include <sk/chain.h>

#define MAX_LOG     ((size_t) 1 << 36)
#define BLOCK       2048        /* entries per thread per round */
#define MAX_CERTS   256
#define REF_LEN     44          /* '@' + base64url SHA-256 (tl_calog.c) */

/* One reused end-entity certificate: its SK and CA-Cert-Chain value. */
typedef struct {
    sk_key_t  *sk;
    char      *chain;           /* "EE,INTER" as submitted */
    char      *inter;           /* INTER, to be replaced by ref */
    sk_entry_t *tmpl;           /* a Bind with every field but Name set:
                                 * decoding the chain once, not per entry,
                                 * makes the generator 2x faster */
    char       ref[REF_LEN + 1];
} gen_cert_t;

typedef struct {
    gen_cert_t  *certs;
    size_t       ncerts;
    sk_key_t    *tl;
    unsigned long tid;
    int64_t      ts;
    size_t       first, n;
    char        *buf;           /* the stored entries, back to back */
    size_t       len, cap;
} gen_job_t;


static void
die(const char *what, const sk_err_t *err)
{
    fprintf(stderr, "mirror_gen: %s: %s\n", what, err != NULL ? err->msg
                                                             : "failed");
    exit(1);
}


static double
now_s(void)
{
    struct timespec  t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}


static size_t
env_size(const char *name, size_t dflt)
{
    const char  *v = getenv(name);

    return v != NULL && *v != '\0' ? strtoul(v, NULL, 10) : dflt;
}


static char *
cert_b64(X509 *x)
{
    unsigned char  *der = NULL;
    int             n = i2d_X509(x, &der);
    char           *b;

    if (n <= 0) {
        die("certificate encoding", NULL);
    }
    b = sk_b64_encode_alloc(der, (size_t) n);
    OPENSSL_free(der);
    if (b == NULL) {
        die("certificate encoding", NULL);
    }
    return b;
}


static void
add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509_EXTENSION  *ext;
    X509V3_CTX       ctx;

    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (ext == NULL || X509_add_ext(x, ext, -1) != 1) {
        die("certificate extension", NULL);
    }
    X509_EXTENSION_free(ext);
}


/* A certificate for pub named cn, signed by ikey (issuer NULL: self). */
static X509 *
make_cert(X509 *issuer, EVP_PKEY *ikey, const char *cn, EVP_PKEY *pub,
    int ca, long serial)
{
    X509       *x = X509_new();
    X509_NAME  *subj = X509_NAME_new();

    if (x == NULL || subj == NULL || X509_set_version(x, 2) != 1
        || ASN1_INTEGER_set(X509_get_serialNumber(x), serial) != 1
        || X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC,
               (const unsigned char *) cn, -1, -1, 0) != 1
        || X509_set_subject_name(x, subj) != 1
        || X509_set_issuer_name(x, issuer != NULL
               ? X509_get_subject_name(issuer) : subj) != 1
        || X509_gmtime_adj(X509_getm_notBefore(x), -86400) == NULL
        || X509_gmtime_adj(X509_getm_notAfter(x), 365L * 86400) == NULL
        || X509_set_pubkey(x, pub) != 1)
    {
        die("certificate", NULL);
    }
    X509_NAME_free(subj);
    if (ca) {
        add_ext(x, issuer != NULL ? issuer : x, NID_basic_constraints,
            "critical,CA:TRUE");
        add_ext(x, issuer != NULL ? issuer : x, NID_key_usage,
            "critical,keyCertSign,cRLSign");
    } else {
        add_ext(x, issuer, NID_subject_alt_name, "DNS:*.bench.example");
        add_ext(x, issuer, NID_basic_constraints, "CA:FALSE");
    }
    if (X509_sign(x, ikey, EVP_sha256()) == 0) {
        die("certificate signing", NULL);
    }
    return x;
}


/* The root (written to dir/root.crt), intermediates and reused EEs; the
 * intermediates' lines go to dir/certs.log as the timeline keeps them. */
static gen_cert_t *
make_pki(const char *dir, size_t ncas, size_t per_ca, sk_err_t *err)
{
    unsigned char   hash[32];
    gen_cert_t     *certs = calloc(ncas * per_ca, sizeof(*certs));
    EVP_PKEY       *rk = EVP_RSA_gen(2048), *ik;
    X509           *root, *inter, *ee;
    FILE           *f;
    size_t          i, j;
    char            path[4096], cn[128], *ib, *eb;

    if (certs == NULL || rk == NULL) {
        die("RSA-2048 root key", NULL);
    }
    root = make_cert(NULL, rk, "bench-root", rk, 1, 1);
    snprintf(path, sizeof(path), "%s/root.crt", dir);
    f = fopen(path, "w");
    if (f == NULL || PEM_write_X509(f, root) != 1 || fclose(f) != 0) {
        die(path, NULL);
    }
    snprintf(path, sizeof(path), "%s/certs.log", dir);
    f = fopen(path, "w");
    if (f == NULL) {
        die(path, NULL);
    }
    for (i = 0; i < ncas; i++) {
        if ((ik = EVP_RSA_gen(2048)) == NULL) {
            die("RSA-2048 intermediate key", NULL);
        }
        snprintf(cn, sizeof(cn), "bench-intermediate-%zu", i);
        inter = make_cert(root, rk, cn, ik, 1, (long) i + 2);
        ib = cert_b64(inter);
        fprintf(f, "%s\n", ib);
        for (j = 0; j < per_ca; j++) {
            gen_cert_t  *c = &certs[i * per_ca + j];

            if (sk_key_generate(&c->sk, SK_KEY_ED25519, 0, err) != 0) {
                die("SK key", err);
            }
            snprintf(cn, sizeof(cn), "bench-ee-%zu-%zu.bench.example", i, j);
            ee = make_cert(inter, ik, cn, sk_key_get0_pkey(c->sk), 0,
                (long) (1000 + j));
            eb = cert_b64(ee);
            c->chain = malloc(strlen(eb) + strlen(ib) + 2);
            if (c->chain == NULL) {
                die("chain", NULL);
            }
            sprintf(c->chain, "%s,%s", eb, ib);
            c->inter = strdup(ib);
            if (sk_entry_new(&c->tmpl, SK_ENTRY_BIND, err) != 0
                || sk_entry_set(c->tmpl, "Name", "bench.example", err) != 0
                || sk_entry_set(c->tmpl, "Includes-Subdomains", "0", err)
                   != 0
                || sk_entry_set(c->tmpl, "Services", "https", err) != 0
                || sk_entry_set(c->tmpl, "Rebinder-Names", "none", err) != 0
                || sk_entry_set(c->tmpl, "CA-Cert-Chain", c->chain, err) != 0)
            {
                die("bind template", err);
            }
            if (EVP_Digest(ib, strlen(ib), hash, NULL, EVP_sha256(), NULL)
                != 1)
            {
                die("SHA-256", NULL);
            }
            c->ref[0] = '@';
            sk_b64_encode(c->ref + 1, hash, sizeof(hash));
            free(eb);
            X509_free(ee);
        }
        free(ib);
        X509_free(inter);
        EVP_PKEY_free(ik);
    }
    if (fclose(f) != 0) {
        die(path, NULL);
    }
    X509_free(root);
    EVP_PKEY_free(rk);
    return certs;
}


static void
job_put(gen_job_t *j, const char *s, size_t n)
{
    if (j->len + n > j->cap) {
        j->cap = (j->len + n) * 2;
        j->buf = realloc(j->buf, j->cap);
        if (j->buf == NULL) {
            die("block buffer", NULL);
        }
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
}


/* Stamp e and append its stored form (the intermediate as a reference to
 * certs.log, as tl_calog.c writes it) to the job's buffer. */
static void
job_stamp(gen_job_t *j, sk_entry_t *e, size_t sn, const gen_cert_t *c)
{
    sk_err_t     err;
    size_t       len, ilen;
    const char  *at;
    char        *text;

    if (sk_entry_stamp(e, j->tid, sn, j->ts, j->tl, &err) != 0
        || sk_entry_format(&text, &len, e, &err) != 0)
    {
        die("stamp", &err);
    }
    at = c != NULL ? strstr(text, c->inter) : NULL;
    if (at != NULL) {
        ilen = strlen(c->inter);
        job_put(j, text, (size_t) (at - text));
        job_put(j, c->ref, REF_LEN);
        job_put(j, at + ilen, len - (size_t) (at - text) - ilen);
    } else {
        job_put(j, text, len);
    }
    free(text);
    sk_entry_free(e);
}


static void *
gen_block(void *arg)
{
    gen_job_t         *j = arg;
    const gen_cert_t  *c;
    sk_entry_t        *e;
    sk_err_t           err;
    size_t             i;
    char               name[64];

    j->len = 0;
    for (i = j->first; i < j->first + j->n; i++) {
        c = &j->certs[i % j->ncerts];
        snprintf(name, sizeof(name), "n%zu.bench.example", i);
        if ((e = sk_entry_dup(c->tmpl)) == NULL) {
            die("bind", NULL);
        }
        if (sk_entry_set(e, "Name", name, &err) != 0
            || sk_entry_sign(e, SK_SIG_SK, c->sk, &err) != 0)
        {
            die("bind", &err);
        }
        job_stamp(j, e, i, c);
    }
    return NULL;
}


static int
gen(int argc, char **argv)
{
    gen_cert_t     *certs;
    gen_job_t      *jobs;
    pthread_t      *th;
    sk_entry_t     *e;
    sk_key_t       *tl, *op;
    sk_err_t        err;
    size_t          n, i, t, nthreads, ncas, per_ca, next, end, mark = 5;
    double          t0 = now_s();
    char            path[4096], *rb;
    FILE           *out, *f;
    X509           *root;

    nthreads = env_size("GEN_THREADS", (size_t) sysconf(
                                           _SC_NPROCESSORS_ONLN));
    ncas = env_size("GEN_CAS", 4);
    per_ca = env_size("GEN_CERTS", 4);
    n = strtoul(argv[4], NULL, 10);
    if (nthreads == 0 || ncas == 0 || per_ca == 0
        || ncas * per_ca > MAX_CERTS || n < 2)
    {
        die("GEN_THREADS, GEN_CAS, GEN_CERTS and COUNT", NULL);
    }
    jobs = calloc(nthreads, sizeof(*jobs));
    th = calloc(nthreads, sizeof(*th));
    if (jobs == NULL || th == NULL
        || sk_key_load_private(&tl, argv[2], &err) != 0)
    {
        die("key", &err);
    }
    certs = make_pki(argv[5], ncas, per_ca, &err);
    snprintf(path, sizeof(path), "%s/entries.log", argv[5]);
    out = fopen(path, "w");
    if (out == NULL) {
        die(path, NULL);
    }

    /* SN 0: the root, by an operator key made for it. */
    snprintf(path, sizeof(path), "%s/root.crt", argv[5]);
    f = fopen(path, "r");
    root = f != NULL ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (root == NULL) {
        die(path, NULL);
    }
    fclose(f);
    rb = cert_b64(root);
    X509_free(root);
    if (sk_key_generate(&op, SK_KEY_ED25519, 0, &err) != 0
        || sk_entry_new(&e, SK_ENTRY_ADD_ROOT_CA, &err) != 0
        || sk_entry_set(e, "CA-Cert", rb, &err) != 0
        || sk_entry_set(e, "CA-Serial", "1", &err) != 0
        || sk_entry_sign(e, SK_SIG_OPERATOR, op, &err) != 0)
    {
        die("root entry", &err);
    }
    for (i = 0; i < nthreads; i++) {
        jobs[i].certs = certs;
        jobs[i].ncerts = ncas * per_ca;
        jobs[i].tl = tl;
        jobs[i].tid = strtoul(argv[3], NULL, 10);
        jobs[i].ts = (int64_t) time(NULL);
    }
    job_stamp(&jobs[0], e, 0, NULL);
    fwrite(jobs[0].buf, 1, jobs[0].len, out);

    /* Rounds of nthreads blocks, never across a mark. */
    for (next = 1; next < n; next = end) {
        end = next + nthreads * BLOCK;
        end = end > n ? n : end;
        while ((int) mark < argc && strtoul(argv[mark], NULL, 10) < next) {
            mark++;
        }
        if ((int) mark < argc && strtoul(argv[mark], NULL, 10) < end) {
            end = strtoul(argv[mark], NULL, 10);
        }
        for (t = 0; t < nthreads; t++) {
            jobs[t].first = next + (end - next) * t / nthreads;
            jobs[t].n = next + (end - next) * (t + 1) / nthreads
                        - jobs[t].first;
            if (pthread_create(&th[t], NULL, gen_block, &jobs[t]) != 0) {
                die("thread", NULL);
            }
        }
        for (t = 0; t < nthreads; t++) {
            pthread_join(th[t], NULL);
            if (fwrite(jobs[t].buf, 1, jobs[t].len, out) != jobs[t].len) {
                die("entries.log", NULL);
            }
        }
        for (; (int) mark < argc && strtoul(argv[mark], NULL, 10) == end;
             mark++)
        {
            fflush(out);
            printf("MARK %zu %lld\n", end, (long long) ftello(out));
        }
    }
    if (fflush(out) != 0 || fsync(fileno(out)) != 0 || fclose(out) != 0) {
        die("entries.log", NULL);
    }
    fprintf(stderr, "mirror_gen: %zu entries in %.1f s on %zu threads "
        "(%.1f s per 100k)\n", n, now_s() - t0, nthreads,
        (now_s() - t0) * 100000.0 / (double) n);
    for (i = 0; i < nthreads; i++) {
        free(jobs[i].buf);
    }
    for (i = 0; i < ncas * per_ca; i++) {
        sk_key_free(certs[i].sk);
        free(certs[i].chain);
        free(certs[i].inter);
        sk_entry_free(certs[i].tmpl);
    }
    free(certs);
    free(jobs);
    free(th);
    free(rb);
    sk_key_free(op);
    sk_key_free(tl);
    return 0;
}


/* One log to verify. */
typedef struct {
    const char   *pub, *root, *dir;
    char          refs[MAX_CERTS][REF_LEN + 1];
    char         *lines[MAX_CERTS];
    size_t        nrefs;
    char         *buf;
    size_t        len;
    uint64_t      n;
    pthread_t     th;
} ver_job_t;


static void
ver_load(ver_job_t *v)
{
    unsigned char  hash[32];
    sk_err_t       err;
    size_t         len, pos, n;
    char           path[4096], *cl, *nl;

    snprintf(path, sizeof(path), "%s/certs.log", v->dir);
    if (sk_file_read(&cl, &len, path, MAX_LOG, &err) != 0) {
        die(path, &err);
    }
    for (pos = 0; pos < len && v->nrefs < MAX_CERTS; pos += n + 1) {
        nl = memchr(cl + pos, '\n', len - pos);
        n = nl != NULL ? (size_t) (nl - cl) - pos : len - pos;
        if (EVP_Digest(cl + pos, n, hash, NULL, EVP_sha256(), NULL) != 1) {
            die("SHA-256", NULL);
        }
        v->refs[v->nrefs][0] = '@';
        sk_b64_encode(v->refs[v->nrefs] + 1, hash, sizeof(hash));
        v->lines[v->nrefs] = strndup(cl + pos, n);
        v->nrefs++;
    }
    free(cl);
    snprintf(path, sizeof(path), "%s/entries.log", v->dir);
    if (sk_file_read(&v->buf, &v->len, path, MAX_LOG, &err) != 0) {
        die(path, &err);
    }
}


/* The entry at text (up to its blank line) with its references expanded,
 * in *out (grown as needed); its stored length in *stored. */
static size_t
ver_expand(const ver_job_t *v, char **out, size_t *cap, const char *text,
    size_t avail, size_t *stored)
{
    const char  *end = text, *at;
    size_t       len = 0, k, piece, ll;

    for (;;) {
        at = memchr(end, '\n', avail - (size_t) (end - text));
        if (at == NULL) {
            die("log: an entry without its blank line", NULL);
        }
        if (at + 1 < text + avail && at[1] == '\n') {
            end = at + 2;
            break;
        }
        end = at + 1;
    }
    *stored = (size_t) (end - text);
    for (at = text; at < end; at += piece) {
        const char  *ref = memchr(at, '@', (size_t) (end - at));

        piece = ref != NULL ? (size_t) (ref - at) : (size_t) (end - at);
        ll = 0;
        k = v->nrefs;
        if (ref != NULL && piece == 0) {
            for (k = 0; k < v->nrefs; k++) {
                if ((size_t) (end - at) >= REF_LEN
                    && memcmp(at, v->refs[k], REF_LEN) == 0)
                {
                    break;
                }
            }
            if (k == v->nrefs) {
                die("log: a certificate reference not in certs.log", NULL);
            }
            ll = strlen(v->lines[k]);
            piece = REF_LEN;
        }
        if (len + piece + ll + 1 > *cap) {
            *cap = (len + piece + ll + 1) * 2;
            *out = realloc(*out, *cap);
            if (*out == NULL) {
                die("entry buffer", NULL);
            }
        }
        if (ll != 0) {
            memcpy(*out + len, v->lines[k], ll);
            len += ll;
        } else {
            memcpy(*out + len, at, piece);
            len += piece;
        }
    }
    return len;
}


static void *
ver_run(void *arg)
{
    ver_job_t          *v = arg;
    sk_merkle_hash_t    leaf;
    X509_STORE         *st = X509_STORE_new();
    sk_entry_t         *e;
    sk_key_t           *tl, *k;
    sk_err_t            err;
    int64_t             ts;
    size_t              pos = 0, stored, used, len, cap = 0;
    char               *text = NULL;
    FILE               *f = fopen(v->root, "r");
    X509               *ca = f != NULL ? PEM_read_X509(f, NULL, NULL, NULL)
                                       : NULL;

    if (f != NULL) {
        fclose(f);
    }
    if (ca == NULL || st == NULL || X509_STORE_add_cert(st, ca) != 1) {
        die(v->root, NULL);
    }
    if (sk_key_load_public(&tl, v->pub, &err) != 0) {
        die(v->pub, &err);
    }
    while (pos < v->len) {
        len = ver_expand(v, &text, &cap, v->buf + pos, v->len - pos,
            &stored);
        if (sk_entry_parse_next(&e, &used, text, len, &err) != 0
            || sk_entry_verify(e, SK_SIG_TIMELINE, tl, &err) != 0
            || sk_entry_timestamp(e, &ts, &err) != 0
            || sk_merkle_leaf_hash(leaf, text, used, &err) != 0)
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
        pos += stored;
        v->n++;
    }
    free(text);
    X509_free(ca);
    X509_STORE_free(st);
    sk_key_free(tl);
    return NULL;
}


static int
verify(int argc, char **argv)
{
    ver_job_t  *v;
    uint64_t    n = 0;
    size_t      nlogs = (size_t) (argc - 2) / 3, i, k;
    double      t0;

    v = calloc(nlogs, sizeof(*v));
    if (v == NULL) {
        die("jobs", NULL);
    }
    for (i = 0; i < nlogs; i++) {
        v[i].pub = argv[2 + 3 * i];
        v[i].root = argv[3 + 3 * i];
        v[i].dir = argv[4 + 3 * i];
        ver_load(&v[i]);
    }
    t0 = now_s();
    for (i = 0; i < nlogs; i++) {
        if (pthread_create(&v[i].th, NULL, ver_run, &v[i]) != 0) {
            die("thread", NULL);
        }
    }
    for (i = 0; i < nlogs; i++) {
        pthread_join(v[i].th, NULL);
        n += v[i].n;
    }
    printf("%.0f\n", (double) n / (now_s() - t0));
    for (i = 0; i < nlogs; i++) {
        free(v[i].buf);
        for (k = 0; k < v[i].nrefs; k++) {
            free(v[i].lines[k]);
        }
    }
    free(v);
    return 0;
}


int
main(int argc, char **argv)
{
    if (argc >= 6 && strcmp(argv[1], "gen") == 0) {
        return gen(argc, argv);
    }
    if (argc >= 5 && (argc - 2) % 3 == 0 && strcmp(argv[1], "verify") == 0)
    {
        return verify(argc, argv);
    }
    fprintf(stderr, "usage: mirror_gen gen TLKEY TID COUNT DIR [MARK...]\n"
        "       mirror_gen verify TLPUB ROOT.crt DIR [TLPUB ROOT.crt DIR...]"
        "\n");
    return 2;
}
