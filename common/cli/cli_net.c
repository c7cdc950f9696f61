/*
 * cli_net.c -- TCP connect, SMTP STARTTLS and the chain-fetching TLS
 * handshake of `sk verify-chain --connect` and `sk verify`.
 *
 * The TLS handshake deliberately skips certificate verification: the
 * point is whether the SK vouches for the server's key, whatever CA
 * issued it.  Every network step has a 10 s timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "cli_net.h"

#define SK_VC_LINE_MAX    1024


static int
cli_net_connect_addr(const struct addrinfo *ai, sk_err_t *err)
{
    struct timeval tv = { CLI_NET_TIMEOUT_MS / 1000, 0 };
    struct pollfd  pfd;
    socklen_t      slen = sizeof(int);
    int            fd, soerr = 0, r;

    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
        ai->ai_protocol);
    if (fd < 0) {
        return sk_err_sys(err, "socket");
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            sk_err_sys(err, "connect");
            close(fd);
            return -1;
        }
        pfd.fd = fd;
        pfd.events = POLLOUT;
        r = poll(&pfd, 1, CLI_NET_TIMEOUT_MS);
        if (r == 0) {
            close(fd);
            return sk_err_set(err, SK_ERR_UNAVAILABLE,
                "connect: timed out after %d s", CLI_NET_TIMEOUT_MS / 1000);
        }
        if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) != 0
            || soerr != 0)
        {
            errno = soerr ? soerr : errno;
            sk_err_sys(err, "connect");
            close(fd);
            return -1;
        }
    }
    /* Blocking from here on, each read and write bounded by the timeout. */
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0
        || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0
        || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0)
    {
        sk_err_sys(err, "socket options");
        close(fd);
        return -1;
    }
    return fd;
}


int
cli_net_connect(const char *host, const char *port, sk_err_t *err)
{
    struct addrinfo  hints, *res, *ai;
    int              fd = -1, r;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    r = getaddrinfo(host, port, &hints, &res);
    if (r != 0) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: %s", host,
            gai_strerror(r));
    }
    for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = cli_net_connect_addr(ai, err);
    }
    freeaddrinfo(res);
    if (fd < 0 && err != NULL) {
        err->code = SK_ERR_UNAVAILABLE;
    }
    return fd;
}


static int
cli_net_io_fail(sk_err_t *err, const char *what)
{
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "smtp: %s: timed out",
            what);
    }
    sk_err_sys(err, "smtp: %s", what);
    if (err != NULL) {
        err->code = SK_ERR_UNAVAILABLE;
    }
    return -1;
}


/* One SMTP reply, all of its lines ("250-..." continued, "250 ..." last).
 * A byte at a time: nothing past the reply may be consumed, since the TLS
 * handshake starts right after STARTTLS's. */
static int
cli_net_smtp_reply(int fd, int want, int *starttls, sk_err_t *err)
{
    char    line[SK_VC_LINE_MAX];
    size_t  n;
    ssize_t r;
    char    ch;

    for (;;) {
        n = 0;
        for (;;) {
            r = recv(fd, &ch, 1, 0);
            if (r == 0) {
                return sk_err_set(err, SK_ERR_UNAVAILABLE,
                    "smtp: connection closed by the server");
            }
            if (r < 0) {
                return cli_net_io_fail(err, "read");
            }
            if (ch == '\n') {
                break;
            }
            if (n == sizeof(line) - 1) {
                return sk_err_set(err, SK_ERR_UNAVAILABLE,
                    "smtp: reply line longer than %d bytes", SK_VC_LINE_MAX);
            }
            line[n++] = ch;
        }
        if (n > 0 && line[n - 1] == '\r') {
            n--;
        }
        line[n] = '\0';
        if (n < 3 || line[0] < '2' || line[0] > '5'
            || (n > 3 && line[3] != '-' && line[3] != ' ')
            || atoi(line) != want)
        {
            return sk_err_set(err, SK_ERR_UNAVAILABLE,
                "smtp: expected %d, server said \"%.100s\"", want, line);
        }
        if (starttls != NULL && n >= 12 && strncasecmp(line + 4, "STARTTLS",
                8) == 0 && (line[12] == '\0' || line[12] == ' '))
        {
            *starttls = 1;
        }
        if (n == 3 || line[3] == ' ') {
            return 0;
        }
    }
}


static int
cli_net_smtp_send(int fd, const char *s, sk_err_t *err)
{
    size_t len = strlen(s);

    if (send(fd, s, len, MSG_NOSIGNAL) != (ssize_t) len) {
        return cli_net_io_fail(err, "write");
    }
    return 0;
}


int
cli_net_starttls(int fd, sk_err_t *err)
{
    int offered = 0;

    if (cli_net_smtp_reply(fd, 220, NULL, err) != 0
        || cli_net_smtp_send(fd, "EHLO localhost\r\n", err) != 0
        || cli_net_smtp_reply(fd, 250, &offered, err) != 0)
    {
        return -1;
    }
    if (!offered) {
        return sk_err_set(err, SK_ERR_NOT_FOUND,
            "smtp: the server does not offer STARTTLS");
    }
    if (cli_net_smtp_send(fd, "STARTTLS\r\n", err) != 0
        || cli_net_smtp_reply(fd, 220, NULL, err) != 0)
    {
        return -1;
    }
    return 0;
}


/* The context for one handshake: versions, and the staple asked for. */
static SSL_CTX *
cli_net_ctx(const cli_net_tls_t *opt, sk_err_t *err)
{
    SSL_CTX  *ctx = SSL_CTX_new(TLS_client_method());

    if (ctx == NULL) {
        sk_err_crypto(err, "cannot set up TLS");
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    if (opt != NULL && opt->version != 0
        && (SSL_CTX_set_min_proto_version(ctx, opt->version) != 1
            || SSL_CTX_set_max_proto_version(ctx, opt->version) != 1))
    {
        SSL_CTX_free(ctx);
        sk_err_crypto(err, "cannot set the TLS version");
        return NULL;
    }
    if (opt != NULL && opt->ask_staple
        && sk_staple_client_init(ctx, 1, err) != 0)
    {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}


/* What the handshake brought besides the chain. */
static int
cli_net_after(cli_net_tls_t *opt, SSL *ssl, sk_err_t *err)
{
    const unsigned char  *data;
    size_t                len;

    opt->version_used = SSL_version(ssl);
    if (!sk_staple_client_get0(ssl, &data, &len)) {
        return 0;
    }
    opt->staple = malloc(len > 0 ? len : 1);
    if (opt->staple == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    memcpy(opt->staple, data, len);
    opt->staple_len = len;
    return 0;
}


int
cli_net_handshake(STACK_OF(X509) **chain, int fd, const char *sni,
    cli_net_tls_t *opt, sk_err_t *err)
{
    STACK_OF(X509) *peer;
    SSL_CTX        *ctx;
    SSL            *ssl = NULL;
    int             rc = -1;

    if (opt != NULL) {
        opt->staple = NULL;
        opt->staple_len = 0;
    }
    ctx = cli_net_ctx(opt, err);
    if (ctx == NULL) {
        return -1;
    }
    ssl = SSL_new(ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1
        || (sni != NULL && SSL_set_tlsext_host_name(ssl, sni) != 1))
    {
        sk_err_crypto(err, "cannot set up TLS");
    } else if (SSL_connect(ssl) != 1) {
        sk_err_crypto(err, "TLS handshake failed%s",
            errno == EAGAIN ? " (timed out)" : "");
        if (err != NULL) {
            err->code = SK_ERR_UNAVAILABLE;
        }
    } else if ((peer = SSL_get_peer_cert_chain(ssl)) == NULL
               || sk_X509_num(peer) == 0)
    {
        sk_err_set(err, SK_ERR_UNAVAILABLE, "the server sent no "
            "certificate");
    } else if ((*chain = X509_chain_up_ref(peer)) == NULL) {
        sk_err_crypto(err, "out of memory");
    } else if (opt != NULL && cli_net_after(opt, ssl, err) != 0) {
        sk_X509_pop_free(*chain, X509_free);
        *chain = NULL;
    } else {
        SSL_shutdown(ssl);
        rc = 0;
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return rc;
}


int
cli_net_fetch_chain(STACK_OF(X509) **chain, const char *target,
    int starttls, const char *servername, cli_net_tls_t *opt, sk_err_t *err)
{
    const char    *port, *sni = servername;
    char           host[CLI_NET_HOST_MAX];
    int            fd, rc;

    if (cli_net_split(host, sizeof(host), &port, target) != 0) {
        return sk_err_set(err, SK_ERR_USAGE,
            "--connect wants HOST:PORT or [IPv6]:PORT");
    }
    /* SNI carries names only, never address literals (RFC 6066). */
    if (sni == NULL && !cli_net_is_address(host)) {
        sni = host;
    }
    fd = cli_net_connect(host, port, err);
    if (fd < 0) {
        return -1;
    }
    rc = (starttls && cli_net_starttls(fd, err) != 0)
        ? -1 : cli_net_handshake(chain, fd, sni, opt, err);
    close(fd);
    return rc;
}


/* HOST:PORT or [IPv6]:PORT into host and port. */
int
cli_net_split(char *host, size_t hostlen, const char **port, const char *arg)
{
    const char *colon, *h = arg;
    size_t      n;

    if (arg[0] == '[') {
        colon = strstr(arg, "]:");
        h = arg + 1;
        n = colon != NULL ? (size_t) (colon - h) : 0;
        *port = colon != NULL ? colon + 2 : NULL;
    } else {
        colon = strrchr(arg, ':');
        if (colon == NULL || strchr(arg, ':') != colon) {
            return -1;
        }
        n = (size_t) (colon - arg);
        *port = colon + 1;
    }
    if (n == 0 || n >= hostlen || *port == NULL || **port == '\0') {
        return -1;
    }
    memcpy(host, h, n);
    host[n] = '\0';
    return 0;
}


int
cli_net_is_address(const char *host)
{
    unsigned char  addr[16];

    return inet_pton(AF_INET, host, addr) == 1
        || inet_pton(AF_INET6, host, addr) == 1;
}
