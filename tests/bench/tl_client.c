/*
 * tl_client.c -- load client for tests/bench/bench_timeline.sh.
 *
 *   tl_client HOST PORT OPERATOR.key SK.key ROOT.crt INTER.crt INTER.key N C
 *       [ZONEDIR]
 *
 * Posts the root as an Add-Root-CA (signed by the operator), builds N
 * Binds for n<i>.bench.example (CA-Cert-Chain EE + intermediate; each EE
 * its own certificate for that name and the Ed25519 SK, issued here by the
 * intermediate, as a CA issues one per customer), then:
 *
 *   1. the crypto the timeline's checks need for each of them, on as many
 *      threads as there are cores: the SK-Signature verify, the two RSA
 *      signature verifies of the chain (EE by the intermediate, the
 *      intermediate by the root) and one Ed25519 sign (the stamp), on
 *      entries and certificates already parsed -- the crypto-bound rate;
 *   2. the same N entries POSTed on C keep-alive connections, one request
 *      outstanding on each, one request per write(), all polled by one
 *      thread: the durable append rate (each 201 is after fdatasync,
 *      shared by group commit).
 *
 * Prints "appends <rate>" and "crypto <rate>" for the script's BENCH line.
 * With TL_CLIENT_DUMP=FILE the Binds are written to FILE as requests for
 * tests/bench/flood.c instead (after the Add-Root-CA is posted).
 *
 * With ZONEDIR (tests/unit/dnssec_zones.sh DIR HEX N): the Binds are for
 * n<i>.example.test with DNSSEC evidence instead, each a DNSSEC-Chain of
 * its own record's TXT RRset and RRSIG from ZONEDIR/bench.signed, then
 * the DNSKEY/DS RRsets up to the root, shared (dnssec_fixture.h); only
 * the append rate is measured (no "crypto" line).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <sk/sk.h>

#include "dnssec_fixture.h"

typedef struct {
    unsigned char   *p;
    size_t           len;
} bench_wire_t;

typedef struct {
    char        *req;       /* the whole HTTP request */
    size_t       len;
    char        *text;      /* the entry */
    size_t       tlen;
    sk_entry_t  *e;         /* parsed, for the crypto loop */
    X509        *ee;        /* its end-entity certificate */
} bench_entry_t;

typedef struct {
    bench_entry_t   *e;
    size_t           first, n;
    const char      *host;
    int              port;
    size_t           ok;
    sk_key_t        *sk;
    X509            *root, *inter;
    EVP_PKEY        *inter_key;
    const char      *hostport;
    const char      *inter_b64;
    bench_wire_t    *heads;     /* DNSSEC: each name's record and RRSIG */
    const dx_chain_t *tail;     /* DNSSEC: the rest of the chain */
} bench_job_t;


static void
die(const char *what, const sk_err_t *err)
{
    fprintf(stderr, "tl_client: %s%s%s\n", what, err ? ": " : "",
        err ? err->msg : "");
    exit(1);
}


/* This process's CPU seconds so far, user and system. */
static double
cpu_s(void)
{
    struct rusage  ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec)
        + (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}


static double
now_s(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}


static X509 *
load_cert(const char *path)
{
    FILE  *f = fopen(path, "r");
    X509  *x = f != NULL ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;

    if (f != NULL) {
        fclose(f);
    }
    if (x == NULL) {
        die(path, NULL);
    }
    return x;
}


static char *
cert_b64(X509 *x)
{
    unsigned char  *der = NULL;
    int             len = i2d_X509(x, &der);
    char           *b = sk_b64_encode_alloc(der, (size_t) len);

    OPENSSL_free(der);
    return b;
}


/* The intermediate's certificate for name and the SK's key. */
static X509 *
make_ee(const bench_job_t *j, const char *name, long serial)
{
    X509_EXTENSION  *ext;
    X509V3_CTX       ctx;
    X509            *x = X509_new();
    X509_NAME       *subj = X509_NAME_new();
    char             san[80];

    snprintf(san, sizeof(san), "DNS:%s", name);
    if (x == NULL || subj == NULL || X509_set_version(x, 2) != 1
        || ASN1_INTEGER_set(X509_get_serialNumber(x), serial) != 1
        || X509_set_issuer_name(x, X509_get_subject_name(j->inter)) != 1
        || X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC,
               (const unsigned char *) name, -1, -1, 0) != 1
        || X509_set_subject_name(x, subj) != 1
        || X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL
        || X509_gmtime_adj(X509_getm_notAfter(x), 30L * 86400) == NULL
        || X509_set_pubkey(x, sk_key_get0_pkey(j->sk)) != 1)
    {
        die("end-entity certificate", NULL);
    }
    X509_NAME_free(subj);
    X509V3_set_ctx(&ctx, j->inter, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
    if (ext == NULL || X509_add_ext(x, ext, -1) != 1) {
        die("end-entity certificate: subjectAltName", NULL);
    }
    X509_EXTENSION_free(ext);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "CA:FALSE");
    if (ext == NULL || X509_add_ext(x, ext, -1) != 1) {
        die("end-entity certificate: basicConstraints", NULL);
    }
    X509_EXTENSION_free(ext);
    if (X509_sign(x, j->inter_key, EVP_sha256()) == 0) {
        die("end-entity certificate: signing", NULL);
    }
    return x;
}


static void
bench_wire_add(bench_wire_t *w, const ldns_rr *rr)
{
    unsigned char  *grown;
    uint8_t        *b;
    size_t          n;

    if (ldns_rr2wire(&b, rr, LDNS_SECTION_ANSWER, &n) != LDNS_STATUS_OK) {
        die("DNSSEC chain: an RR to wire form", NULL);
    }
    grown = realloc(w->p, w->len + n);
    if (grown == NULL) {
        die("DNSSEC chain", NULL);
    }
    memcpy(grown + w->len, b, n);
    w->p = grown;
    w->len += n;
    free(b);
}


/* The TXT RRset of _sovereign-key.n<i>.example.test. for i < n, then the
 * RRSIG over it, from dir/bench.signed read once. */
static bench_wire_t *
bench_dnssec_heads(const char *dir, size_t n)
{
    bench_wire_t  *h = calloc(n, sizeof(*h));
    ldns_zone     *z;
    ldns_rr_list  *rrs;
    ldns_rr       *rr;
    char           path[512], *owner;
    size_t         i, k, pass;
    FILE          *f;
    int            hit;

    snprintf(path, sizeof(path), "%s/bench.signed", dir);
    f = fopen(path, "r");
    if (h == NULL || f == NULL || ldns_zone_new_frm_fp(&z, f, NULL, 3600,
            LDNS_RR_CLASS_IN) != LDNS_STATUS_OK)
    {
        die(path, NULL);
    }
    fclose(f);
    rrs = ldns_zone_rrs(z);
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < ldns_rr_list_rr_count(rrs); i++) {
            rr = ldns_rr_list_rr(rrs, i);
            hit = pass == 0 ? ldns_rr_get_type(rr) == LDNS_RR_TYPE_TXT
                : ldns_rr_get_type(rr) == LDNS_RR_TYPE_RRSIG
                  && ldns_rdf2rr_type(ldns_rr_rrsig_typecovered(rr))
                     == LDNS_RR_TYPE_TXT;
            owner = hit ? ldns_rdf2str(ldns_rr_owner(rr)) : NULL;
            if (owner != NULL
                && sscanf(owner, "_sovereign-key.n%zu.", &k) == 1 && k < n)
            {
                bench_wire_add(&h[k], rr);
            }
            free(owner);
        }
    }
    ldns_zone_deep_free(z);
    for (k = 0; k < n; k++) {
        if (h[k].len == 0) {
            die("bench.signed: a name without its record", NULL);
        }
    }
    return h;
}


/* "e=" + the entry, percent-encoded, as one HTTP/1.1 request. */
static void
bench_request(bench_entry_t *be, const char *host)
{
    static const char  hex[] = "0123456789ABCDEF";
    size_t             i, n = 2;
    char              *body = malloc(3 * be->tlen + 3), *req;
    unsigned char      ch;
    int                hl;

    memcpy(body, "e=", 2);
    for (i = 0; i < be->tlen; i++) {
        ch = (unsigned char) be->text[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')
            || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_'
            || ch == '.')
        {
            body[n++] = (char) ch;
        } else {
            body[n++] = '%';
            body[n++] = hex[ch >> 4];
            body[n++] = hex[ch & 15];
        }
    }
    req = malloc(n + 256);
    hl = sprintf(req, "POST /append HTTP/1.1\r\nHost: %s\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: %zu\r\n\r\n", host, n);
    memcpy(req + hl, body, n);
    free(body);
    be->req = req;
    be->len = (size_t) hl + n;
}


static int
bench_connect(const char *host, int port)
{
    struct sockaddr_in  sa;
    int                 fd, one = 1;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t) port);
    inet_pton(AF_INET, host, &sa.sin_addr);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0) {
        die("connect", NULL);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}


/* The HTTP status of the answer in buf[0..got), NUL-terminated: 0 while
 * it is not all in (*need: its length once the headers are), -1 if it is
 * not HTTP. */
static int
bench_answer(const char *buf, size_t got, size_t *need)
{
    const char  *hend = strstr(buf, "\r\n\r\n"), *cl;
    int          status;

    if (hend == NULL) {
        return 0;
    }
    if (*need == 0) {
        cl = strstr(buf, "\r\nContent-Length:");   /* as MHD spells it */
        *need = (size_t) (hend + 4 - buf)
                + (cl != NULL ? strtoul(cl + 17, NULL, 10) : 0);
    }
    if (got < *need) {
        return 0;
    }
    return sscanf(buf, "HTTP/1.%*d %d", &status) == 1 ? status : -1;
}


static int
bench_send(int fd, const char *req, size_t len)
{
    size_t   sent = 0;
    ssize_t  n;

    while (sent < len) {
        n = write(fd, req + sent, len - sent);
        if (n <= 0) {
            return -1;
        }
        sent += (size_t) n;
    }
    return 0;
}


/* Send one request, read its answer; the HTTP status or -1. */
static int
bench_exchange(int fd, const char *req, size_t len)
{
    char     buf[65536];
    size_t   got = 0, need = 0;
    ssize_t  n;
    int      status = 0;

    if (bench_send(fd, req, len) != 0) {
        return -1;
    }
    while (status == 0) {
        n = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (n <= 0) {
            return -1;
        }
        got += (size_t) n;
        buf[got] = '\0';
        status = bench_answer(buf, got, &need);
    }
    return status;
}


/* One keep-alive connection of the poster: its share of the entries. */
typedef struct {
    int      fd;
    size_t   next, end;         /* the entry waiting for its answer, the end */
    size_t   got, need;
    char     buf[4096];
} bench_conn_t;


/* All connections from one thread, each with one request outstanding,
 * as a load generator does: the client's own CPU per append stays small
 * beside the timeline's, on the same 2 cores (a thread per connection
 * cost 61 us an append, a third of the crypto-bound time). */
static size_t
bench_post_all(const bench_job_t *proto, size_t total, size_t nconn)
{
    struct epoll_event   ev, evs[64];
    bench_conn_t        *cs = calloc(nconn, sizeof(*cs)), *k;
    size_t               i, ok = 0, open = nconn;
    ssize_t              n;
    int                  ep = epoll_create1(0), nev, e, status;

    if (cs == NULL || ep < 0) {
        die("poster", NULL);
    }
    for (i = 0; i < nconn; i++) {
        k = &cs[i];
        k->next = total * i / nconn;
        k->end = total * (i + 1) / nconn;
        k->fd = bench_connect(proto->host, proto->port);
        ev.events = EPOLLIN;
        ev.data.ptr = k;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, k->fd, &ev) != 0
            || (k->next < k->end
                && bench_send(k->fd, proto->e[k->next].req,
                       proto->e[k->next].len) != 0))
        {
            die("poster: connection", NULL);
        }
        if (k->next == k->end) {
            open--;
        }
    }
    while (open > 0) {
        nev = epoll_wait(ep, evs, 64, -1);
        for (e = 0; e < nev; e++) {
            k = evs[e].data.ptr;
            n = read(k->fd, k->buf + k->got, sizeof(k->buf) - 1 - k->got);
            if (n <= 0) {
                die("poster: connection closed", NULL);
            }
            k->got += (size_t) n;
            k->buf[k->got] = '\0';
            status = bench_answer(k->buf, k->got, &k->need);
            if (status == 0) {
                continue;
            }
            ok += status == 201;
            k->got = k->need = 0;
            if (++k->next == k->end) {
                open--;
            } else if (bench_send(k->fd, proto->e[k->next].req,
                           proto->e[k->next].len) != 0)
            {
                die("poster: send", NULL);
            }
        }
    }
    for (i = 0; i < nconn; i++) {
        close(cs[i].fd);
    }
    close(ep);
    free(cs);
    return ok;
}


/* What the timeline's checks cost in crypto, entry by entry: only the
 * signature operations (parsing, decoding and HTTP are the overhead the
 * ratio measures). */
static void *
bench_crypto(void *arg)
{
    bench_job_t          *j = arg;
    const unsigned char  *spki;
    unsigned char        *sig;
    sk_key_t             *sk, *stamp;
    sk_err_t              err;
    size_t                i, siglen, len;
    X509                 *inter = X509_dup(j->inter), *root = X509_dup(j->root);

    /* Keys and certificates of this thread's own: threads that share
     * OpenSSL's key objects contend for their reference counts, and the
     * rate fell by a third in some runs and not in others (a process's
     * memory layout decided it), 8,400 against 12,400 a second. */
    spki = sk_key_get0_spki(j->sk, &len);
    if (inter == NULL || root == NULL
        || sk_key_from_spki(&sk, spki, len, &err) != 0
        || sk_key_generate(&stamp, SK_KEY_ED25519, 0, &err) != 0)
    {
        die("crypto: keys", &err);
    }
    for (i = j->first; i < j->first + j->n; i++) {
        if (sk_entry_verify(j->e[i].e, SK_SIG_SK, sk, &err) != 0
            || X509_verify(j->e[i].ee, X509_get0_pubkey(inter)) != 1
            || X509_verify(inter, X509_get0_pubkey(root)) != 1
            || sk_key_sign(&sig, &siglen, stamp,
                   (const unsigned char *) j->e[i].text, j->e[i].tlen,
                   &err) != 0)
        {
            die("crypto", &err);
        }
        free(sig);
        j->ok++;
    }
    sk_key_free(sk);
    sk_key_free(stamp);
    X509_free(inter);
    X509_free(root);
    return NULL;
}


/* Run fn over the entries split among n threads; entries per second. */
static double
bench_run(void *(*fn)(void *), bench_job_t *proto, size_t total, size_t n,
    size_t *ok)
{
    bench_job_t  *jobs = calloc(n, sizeof(*jobs));
    pthread_t    *th = calloc(n, sizeof(*th));
    double        t0 = now_s(), dt;
    size_t        i;

    *ok = 0;
    for (i = 0; i < n; i++) {
        jobs[i] = *proto;
        jobs[i].first = total * i / n;
        jobs[i].n = total * (i + 1) / n - jobs[i].first;
        jobs[i].ok = 0;
        pthread_create(&th[i], NULL, fn, &jobs[i]);
    }
    for (i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        *ok += jobs[i].ok;
    }
    dt = now_s() - t0;
    free(jobs);
    free(th);
    return (double) total / dt;
}


static void
bench_set(sk_entry_t *e, const char *f, const char *v)
{
    sk_err_t  err;

    if (sk_entry_set(e, f, v, &err) != 0) {
        die(f, &err);
    }
}


/* CA-Cert-Chain: name's own end-entity certificate, then the
 * intermediate. */
static char *
bench_ca_chain(const bench_job_t *j, bench_entry_t *be, const char *name,
    size_t i)
{
    char  *eb, *chain;

    be->ee = make_ee(j, name, (long) i + 2);
    eb = cert_b64(be->ee);
    chain = eb != NULL ? malloc(strlen(eb) + strlen(j->inter_b64) + 2)
                       : NULL;
    if (chain != NULL) {
        sprintf(chain, "%s,%s", eb, j->inter_b64);
    }
    free(eb);
    return chain;
}


/* DNSSEC-Chain: name i's record and RRSIG, then the shared rest. */
static char *
bench_dnssec_chain(const bench_job_t *j, size_t i)
{
    unsigned char  *p = malloc(j->heads[i].len + j->tail->len);
    char           *b64;

    if (p == NULL) {
        return NULL;
    }
    memcpy(p, j->heads[i].p, j->heads[i].len);
    memcpy(p + j->heads[i].len, j->tail->p, j->tail->len);
    b64 = sk_b64_encode_alloc(p, j->heads[i].len + j->tail->len);
    free(p);
    return b64;
}


/* Binds [first, first + n): each with its own end-entity certificate, or
 * its own DNSSEC record. */
static void *
bench_build(void *arg)
{
    bench_job_t    *j = arg;
    bench_entry_t  *be;
    sk_entry_t     *e;
    sk_err_t        err;
    size_t          i;
    char            name[64], *chain;

    for (i = j->first; i < j->first + j->n; i++) {
        be = &j->e[i];
        snprintf(name, sizeof(name), j->heads != NULL ? "n%zu.example.test"
            : "n%zu.bench.example", i);
        chain = j->heads != NULL ? bench_dnssec_chain(j, i)
            : bench_ca_chain(j, be, name, i);
        if (chain == NULL || sk_entry_new(&e, SK_ENTRY_BIND, &err) != 0) {
            die("bind entry", NULL);
        }
        bench_set(e, "Name", name);
        bench_set(e, "Includes-Subdomains", "0");
        bench_set(e, "Services", "https");
        bench_set(e, "Rebinder-Names", "none");
        bench_set(e, j->heads != NULL ? "DNSSEC-Chain" : "CA-Cert-Chain",
            chain);
        free(chain);
        if (sk_entry_sign(e, SK_SIG_SK, j->sk, &err) != 0
            || sk_entry_format(&be->text, &be->tlen, e, &err) != 0)
        {
            die("bind entry", &err);
        }
        be->e = e;
        bench_request(be, j->hostport);
        j->ok++;
    }
    return NULL;
}


/* With TL_CLIENT_DUMP=FILE: the N Binds' requests into FILE, each after
 * its length on a line (tests/bench/flood.c's request file), not posted. */
static int
bench_dump(const char *path, const bench_job_t *proto, size_t n)
{
    FILE    *f = fopen(path, "w");
    size_t   i;

    for (i = 0; f != NULL && i < n; i++) {
        fprintf(f, "%zu\n", proto->e[i].len);
        fwrite(proto->e[i].req, 1, proto->e[i].len, f);
    }
    if (f == NULL || fclose(f) != 0) {
        die(path, NULL);
    }
    return 0;
}


int
main(int argc, char **argv)
{
    static dx_chain_t  tail;
    bench_entry_t   root;
    bench_job_t     proto;
    sk_key_t       *op, *sk;
    sk_entry_t     *e;
    sk_err_t        err;
    size_t          n, clients, ok, ncpu = (size_t) sysconf(
                                              _SC_NPROCESSORS_ONLN);
    double          crypto, rate, cpu, t0;
    char           *rb, hostport[64];
    FILE           *f;
    int             fd;

    if (argc != 10 && argc != 11) {
        fprintf(stderr, "usage: tl_client HOST PORT OPERATOR.key SK.key "
            "ROOT.crt INTER.crt INTER.key N CLIENTS [ZONEDIR]\n");
        return 2;
    }
    n = strtoul(argv[8], NULL, 10);
    clients = strtoul(argv[9], NULL, 10);
    snprintf(hostport, sizeof(hostport), "%s:%s", argv[1], argv[2]);
    memset(&proto, 0, sizeof(proto));
    proto.host = argv[1];
    proto.port = atoi(argv[2]);
    proto.hostport = hostport;
    if (sk_key_load_private(&op, argv[3], &err) != 0
        || sk_key_load_private(&sk, argv[4], &err) != 0)
    {
        die("keys", &err);
    }
    proto.root = load_cert(argv[5]);
    proto.inter = load_cert(argv[6]);
    f = fopen(argv[7], "r");
    proto.inter_key = f != NULL ? PEM_read_PrivateKey(f, NULL, NULL, NULL)
                                : NULL;
    if (f != NULL) {
        fclose(f);
    }
    if (proto.inter_key == NULL) {
        die(argv[7], NULL);
    }
    proto.sk = sk;
    rb = cert_b64(proto.root);
    proto.inter_b64 = cert_b64(proto.inter);

    /* The root, from the operator. */
    if (sk_entry_new(&e, SK_ENTRY_ADD_ROOT_CA, &err) != 0) {
        die("entry", &err);
    }
    bench_set(e, "CA-Cert", rb);
    bench_set(e, "CA-Serial", "1");
    if (sk_entry_sign(e, SK_SIG_OPERATOR, op, &err) != 0
        || sk_entry_format(&root.text, &root.tlen, e, &err) != 0)
    {
        die("root entry", &err);
    }
    sk_entry_free(e);
    bench_request(&root, hostport);
    fd = bench_connect(proto.host, proto.port);
    if (bench_exchange(fd, root.req, root.len) != 201) {
        die("Add-Root-CA not accepted", NULL);
    }
    close(fd);

    proto.e = calloc(n, sizeof(*proto.e));
    if (proto.e == NULL) {
        die("entries", NULL);
    }
    if (argc == 11) {
        proto.heads = bench_dnssec_heads(argv[10], n);
        if (dx_add(&tail, argv[10], "ex", "example.test.",
                LDNS_RR_TYPE_DNSKEY)
            | dx_add(&tail, argv[10], "test", "example.test.", LDNS_RR_TYPE_DS)
            | dx_add(&tail, argv[10], "test", "test.", LDNS_RR_TYPE_DNSKEY)
            | dx_add(&tail, argv[10], "root", "test.", LDNS_RR_TYPE_DS)
            | dx_add(&tail, argv[10], "root", ".", LDNS_RR_TYPE_DNSKEY))
        {
            die("DNSSEC chain: the zones' DNSKEY and DS RRsets", NULL);
        }
        proto.tail = &tail;
    }
    (void) bench_run(bench_build, &proto, n, ncpu, &ok);
    if (getenv("TL_CLIENT_DUMP") != NULL) {
        return bench_dump(getenv("TL_CLIENT_DUMP"), &proto, n);
    }
    crypto = proto.heads == NULL
             ? bench_run(bench_crypto, &proto, n, ncpu, &ok) : 0;
    cpu = cpu_s();
    t0 = now_s();
    ok = bench_post_all(&proto, n, clients);
    rate = (double) n / (now_s() - t0);
    cpu = cpu_s() - cpu;
    if (ok != n) {
        fprintf(stderr, "tl_client: %zu of %zu appends got 201\n", ok, n);
        return 1;
    }
    printf("appends %.0f\n", rate);
    if (proto.heads == NULL) {
        printf("crypto %.0f\n", crypto);
    }
    printf("entry_bytes %zu\n", proto.e[0].tlen);
    printf("client_cpu_us %.0f\n", cpu * 1e6 / (double) n);
    return 0;
}
