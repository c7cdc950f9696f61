/*
 * staple_client.c -- for bench_staple.pl: an SK-aware client's first
 * contact with a site, N times over, from nothing known to the decision
 * on the chain the server presented:
 *
 *   staple_client TRUST HOST PORT ADDRESS N staple|mirror
 *
 * staple: sk_tls_prepare, so the handshake asks for the server's stapled
 * proof and the record comes from it; mirror: sk_tls_lookup, the record
 * from a mirror query before connecting, no staple asked.  Each contact
 * starts from a new sk_tls_t without a cache (the trust set is loaded
 * once); the SK check runs inside the handshake (sk/tls.h), CA checks
 * off.  Prints one line:
 *
 *   contacts=N ms=MEDIAN bytes_in=MEAN
 *
 * and exits 1 if any decision is not an accept from the expected source.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <sk/sk.h>


static double
now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}


static int
cmp(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}


static int
tcp(const char *addr, unsigned port)
{
    struct sockaddr_in  sa;
    int                 fd, one = 1;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short) port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        return -1;
    }
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}


/* One first contact: 0 and the bytes read if it ended in an accept from
 * the expected source. */
static int
contact(const sk_client_trust_t *trust, SSL_CTX *ctx, const char *host,
    unsigned port, const char *addr, int staple, unsigned long *in,
    sk_err_t *err)
{
    sk_tls_conf_t             conf;
    const sk_client_found_t  *f;
    const sk_decide_t        *d;
    sk_tls_t                 *t = NULL;
    SSL                      *ssl = NULL;
    int                       fd = -1, rc = -1;

    memset(&conf, 0, sizeof(conf));
    conf.trust = trust;
    conf.fetch = sk_client_fetch_curl;
    conf.flags = SK_TLS_NO_CA_CHECK;
    if (sk_tls_new(&t, &conf, err) != 0
        || (staple ? sk_tls_prepare(t, host, "https", port, time(NULL), err)
                   : sk_tls_lookup(t, host, "https", port, time(NULL), err))
           != 0)
    {
        goto done;
    }
    fd = tcp(addr, port);
    ssl = fd >= 0 ? SSL_new(ctx) : NULL;
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1
        || sk_tls_attach(t, ssl, err) != 0)
    {
        sk_err_set(err, SK_ERR_UNAVAILABLE, "cannot connect");
        goto done;
    }
    if (SSL_connect(ssl) != 1) {
        sk_err_set(err, SK_ERR_UNAVAILABLE, "handshake failed");
        goto done;
    }
    d = sk_tls_decision(t);
    f = sk_tls_get0_found(t);
    if (d == NULL || d->decision != SK_DECIDE_ACCEPT || f == NULL
        || (f->res.outcome == SK_FRESH_STAPLE) != staple)
    {
        sk_err_set(err, SK_ERR_USAGE, "not an accept from the %s",
            staple ? "staple" : "mirror");
        goto done;
    }
    *in = BIO_number_read(SSL_get_rbio(ssl));
    rc = 0;

done:
    if (ssl != NULL) {
        SSL_free(ssl);
    }
    if (fd >= 0) {
        close(fd);
    }
    sk_tls_free(t);
    ERR_clear_error();
    return rc;
}


int
main(int argc, char **argv)
{
    sk_client_trust_t  trust;
    unsigned long      in, total = 0;
    sk_err_t           err;
    SSL_CTX           *ctx;
    double            *ms, t0;
    int                n, i, staple;

    if (argc != 7 || (strcmp(argv[6], "staple") != 0
                      && strcmp(argv[6], "mirror") != 0))
    {
        fprintf(stderr, "usage: staple_client TRUST HOST PORT ADDRESS N "
            "staple|mirror\n");
        return 2;
    }
    n = atoi(argv[5]);
    staple = strcmp(argv[6], "staple") == 0;
    ms = calloc(n > 0 ? (size_t) n : 1, sizeof(double));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    sk_client_trust_init(&trust);
    ctx = SSL_CTX_new(TLS_client_method());
    if (ms == NULL || n < 1 || ctx == NULL
        || sk_client_trust_load(&trust, argv[1], &err) != 0
        || sk_staple_client_init(ctx, 0, &err) != 0)
    {
        fprintf(stderr, "staple_client: %s\n", n < 1 ? "bad N" : err.msg);
        return 2;
    }
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    for (i = 0; i < n; i++) {
        t0 = now_ms();
        if (contact(&trust, ctx, argv[2], (unsigned) atoi(argv[3]), argv[4],
                staple, &in, &err) != 0)
        {
            fprintf(stderr, "staple_client: contact %d: %s\n", i + 1,
                err.msg);
            return 1;
        }
        ms[i] = now_ms() - t0;
        total += in;
    }
    qsort(ms, (size_t) n, sizeof(double), cmp);
    printf("contacts=%d ms=%.3f bytes_in=%lu\n", n, ms[n / 2],
        total / (unsigned long) n);
    SSL_CTX_free(ctx);
    sk_client_trust_free(&trust);
    free(ms);
    curl_global_cleanup();
    return 0;
}
