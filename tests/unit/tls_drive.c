/*
 * tls_drive.c -- t/client-decisions.t's driver of the C API (sk/tls.h):
 * one connection to a server, as an application using libsk does it.
 *
 *   tls_drive lookup|prepare|decide TRUST CACHE HOST PORT ADDRESS CAFILE [plain]
 *
 * lookup:  sk_tls_lookup, then a handshake with sk_tls_attach;
 * prepare: sk_tls_prepare (the staple asked for), then the same;
 * decide:  sk_tls_prepare, a handshake of the application's own (OpenSSL's
 *          CA checks only), then sk_tls_set_staple and sk_tls_decide on
 *          the chain it took.
 * plain:   the service offered without TLS (http://): after the lookup
 *          (sk_tls_lookup, or sk_tls_prepare for prepare and decide), no
 *          handshake; sk_tls_decide on no chain, then the request over
 *          plain TCP.
 * The HTTP request ("GET / HTTP/1.0") is sent only after an accept or a
 * none.  Prints "decision=D sent=yes|no" (D: accept, reject, none,
 * insecure, undecided) and exits as sk verify does: 0 accept, 1 reject,
 * 3 none, 4 insecure, 5 undecided; 2 usage.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/ssl.h>

#include <sk/sk.h>

typedef enum { TD_LOOKUP, TD_PREPARE, TD_DECIDE } td_mode_t;

typedef struct {
    td_mode_t     mode;
    const char   *host, *addr, *cafile;
    unsigned      port;
    int           plain;
    sk_tls_t     *t;
    SSL_CTX      *ctx;
    SSL          *ssl;
    int           fd;
} td_t;


static int
td_tcp(const char *addr, unsigned port)
{
    struct sockaddr_in  sa;
    int                 fd;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short) port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        return -1;
    }
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}


/* The exit status and the line for decision d (NULL: undecided). */
static int
td_report(const sk_decide_t *d, int sent, const char *why)
{
    static const int  codes[] = { 0, 1, 3, 4 };   /* sk_decision_t order */

    printf("decision=%s sent=%s\n", d != NULL ? sk_decision_name(d->decision)
        : "undecided", sent ? "yes" : "no");
    if (why != NULL) {
        fprintf(stderr, "tls_drive: %s\n", why);
    }
    return d != NULL ? codes[d->decision] : 5;
}


/* The request, and the answer to its end (the server has logged it
 * when it closes). */
static int
td_request(td_t *x)
{
    char  req[512], buf[256];
    int   n, first = 1;

    n = snprintf(req, sizeof(req), "GET / HTTP/1.0\r\nHost: %s\r\n\r\n",
        x->host);
    if (x->plain ? write(x->fd, req, (size_t) n) != (ssize_t) n
        : SSL_write(x->ssl, req, n) != n)
    {
        return 0;
    }
    while ((n = x->plain ? (int) read(x->fd, buf, sizeof(buf) - 1)
        : SSL_read(x->ssl, buf, sizeof(buf) - 1)) > 0)
    {
        buf[n] = '\0';
        if (first) {
            fprintf(stderr, "tls_drive: %.*s\n",
                (int) strcspn(buf, "\r\n"), buf);
        }
        first = 0;
    }
    return 1;
}


static int
td_connect(td_t *x, sk_err_t *err)
{
    x->fd = td_tcp(x->addr, x->port);
    x->ctx = SSL_CTX_new(TLS_client_method());
    if (x->fd < 0 || x->ctx == NULL
        || !SSL_CTX_load_verify_locations(x->ctx, x->cafile, NULL)
        || (x->mode != TD_LOOKUP && sk_staple_client_init(x->ctx, 1, err) != 0)
        || (x->ssl = SSL_new(x->ctx)) == NULL
        || !SSL_set_fd(x->ssl, x->fd))
    {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "cannot connect to %s:%u",
            x->addr, x->port);
    }
    if (x->mode == TD_DECIDE) {
        SSL_set_verify(x->ssl, SSL_VERIFY_PEER, NULL);
        if (!SSL_set_tlsext_host_name(x->ssl, x->host)
            || !SSL_set1_host(x->ssl, x->host))
        {
            return sk_err_set(err, SK_ERR_UNAVAILABLE, "cannot set up TLS");
        }
    } else if (sk_tls_attach(x->t, x->ssl, err) != 0) {
        return -1;
    }
    if (SSL_connect(x->ssl) != 1) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "the handshake failed");
    }
    return 0;
}


/* decide: the application's own handshake, then sk_tls_decide. */
static int
td_decide(td_t *x, sk_err_t *err)
{
    const unsigned char  *ext = NULL;
    size_t                elen = 0;

    if (!sk_staple_client_get0(x->ssl, &ext, &elen)) {
        ext = NULL;
    }
    if (sk_tls_set_staple(x->t, ext, elen, err) != 0) {
        return -1;
    }
    return sk_tls_decide(x->t, SSL_get_peer_cert_chain(x->ssl), time(NULL),
        err);
}


static int
td_run(td_t *x)
{
    const sk_decide_t  *d;
    sk_err_t            err;
    int                 rc;

    rc = x->mode == TD_LOOKUP
        ? sk_tls_lookup(x->t, x->host, "https", x->port, time(NULL), &err)
        : sk_tls_prepare(x->t, x->host, "https", x->port, time(NULL), &err);
    if (rc != 0) {
        return td_report(NULL, 0, err.msg);
    }
    if (x->plain) {
        /* No TLS: the decision for no chain, then plain TCP. */
        if (sk_tls_decide(x->t, NULL, time(NULL), &err) != 0) {
            return td_report(NULL, 0, err.msg);
        }
        d = sk_tls_decision(x->t);
        if (d->decision != SK_DECIDE_ACCEPT && d->decision != SK_DECIDE_NONE) {
            return td_report(d, 0, d->reason);
        }
        x->fd = td_tcp(x->addr, x->port);
        return td_report(d, x->fd >= 0 && td_request(x), d->reason);
    }
    if (td_connect(x, &err) != 0) {
        return td_report(sk_tls_decision(x->t), 0, err.msg);
    }
    if (x->mode == TD_DECIDE && td_decide(x, &err) != 0) {
        return td_report(NULL, 0, err.msg);
    }
    d = sk_tls_decision(x->t);
    if (d == NULL) {
        return td_report(NULL, 0, "no decision after the handshake");
    }
    return td_report(d, (d->decision == SK_DECIDE_ACCEPT
        || d->decision == SK_DECIDE_NONE) && td_request(x), d->reason);
}


int
main(int argc, char **argv)
{
    sk_tls_conf_t      conf;
    sk_client_trust_t  trust;
    sk_client_curl_t   direct, tor;
    sk_err_t           err;
    td_t               x;
    int                rc;

    memset(&x, 0, sizeof(x));
    memset(&conf, 0, sizeof(conf));
    sk_client_trust_init(&trust);
    x.fd = -1;
    if (argc != 8 && (argc != 9 || strcmp(argv[8], "plain") != 0)) {
        fprintf(stderr, "usage: tls_drive lookup|prepare|decide TRUST CACHE "
            "HOST PORT ADDRESS CAFILE [plain]\n");
        return 2;
    }
    x.plain = argc == 9;
    x.mode = strcmp(argv[1], "lookup") == 0 ? TD_LOOKUP
        : strcmp(argv[1], "prepare") == 0 ? TD_PREPARE : TD_DECIDE;
    x.host = argv[4];
    x.port = (unsigned) atoi(argv[5]);
    x.addr = argv[6];
    x.cafile = argv[7];
    /* The trust set loaded here, for its mirror and Tor timeouts and
     * Tor's SOCKS port: mirrors over Tor too, as sk/tls.h says. */
    if (sk_client_trust_load(&trust, argv[2], &err) != 0) {
        fprintf(stderr, "tls_drive: %s\n", err.msg);
        return 5;
    }
    sk_client_curl_init(&direct, &tor, &trust);
    conf.trust = &trust;
    conf.cache_dir = argv[3];
    conf.fetch = sk_client_fetch_curl;
    conf.fetch_arg = &direct;
    conf.fetch_tor = sk_client_fetch_curl;
    conf.fetch_tor_arg = &tor;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (sk_tls_new(&x.t, &conf, &err) != 0) {
        fprintf(stderr, "tls_drive: %s\n", err.msg);
        sk_client_trust_free(&trust);
        return 5;
    }
    rc = td_run(&x);
    SSL_free(x.ssl);
    SSL_CTX_free(x.ctx);
    if (x.fd >= 0) {
        close(x.fd);
    }
    sk_tls_free(x.t);
    sk_client_trust_free(&trust);
    curl_global_cleanup();
    return rc;
}
