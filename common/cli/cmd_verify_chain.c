/*
 * cmd_verify_chain.c -- `sk verify-chain`: the client's check, from a
 * file or a live server.
 *
 * The TLS handshake deliberately skips certificate verification: the
 * point is whether the SK vouches for the server's key, whatever CA
 * issued it.  Every network step has a 10 s timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "cli.h"

#define SK_VC_TIMEOUT_MS  10000
#define SK_VC_LINE_MAX    1024
#define SK_VC_HOST_MAX    256


static int
sk_vc_connect_addr(const struct addrinfo *ai, sk_err_t *err)
{
    struct timeval tv = { SK_VC_TIMEOUT_MS / 1000, 0 };
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
        r = poll(&pfd, 1, SK_VC_TIMEOUT_MS);
        if (r == 0) {
            close(fd);
            return sk_err_set(err, SK_ERR_UNAVAILABLE,
                "connect: timed out after %d s", SK_VC_TIMEOUT_MS / 1000);
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


static int
sk_vc_connect(const char *host, const char *port, sk_err_t *err)
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
        fd = sk_vc_connect_addr(ai, err);
    }
    freeaddrinfo(res);
    if (fd < 0 && err != NULL) {
        err->code = SK_ERR_UNAVAILABLE;
    }
    return fd;
}


static int
sk_vc_io_fail(sk_err_t *err, const char *what)
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
sk_vc_smtp_reply(int fd, int want, int *starttls, sk_err_t *err)
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
                return sk_vc_io_fail(err, "read");
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
sk_vc_smtp_send(int fd, const char *s, sk_err_t *err)
{
    size_t len = strlen(s);

    if (send(fd, s, len, MSG_NOSIGNAL) != (ssize_t) len) {
        return sk_vc_io_fail(err, "write");
    }
    return 0;
}


static int
sk_vc_starttls(int fd, sk_err_t *err)
{
    int offered = 0;

    if (sk_vc_smtp_reply(fd, 220, NULL, err) != 0
        || sk_vc_smtp_send(fd, "EHLO localhost\r\n", err) != 0
        || sk_vc_smtp_reply(fd, 250, &offered, err) != 0)
    {
        return -1;
    }
    if (!offered) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE,
            "smtp: the server does not offer STARTTLS");
    }
    if (sk_vc_smtp_send(fd, "STARTTLS\r\n", err) != 0
        || sk_vc_smtp_reply(fd, 220, NULL, err) != 0)
    {
        return -1;
    }
    return 0;
}


static int
sk_vc_handshake(STACK_OF(X509) **chain, int fd, const char *sni,
    sk_err_t *err)
{
    STACK_OF(X509) *peer;
    SSL_CTX        *ctx;
    SSL            *ssl = NULL;
    int             rc = -1;

    ctx = SSL_CTX_new(TLS_client_method());
    if (ctx != NULL) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
        ssl = SSL_new(ctx);
    }
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
    } else {
        SSL_shutdown(ssl);
        rc = 0;
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return rc;
}


/* HOST:PORT or [IPv6]:PORT into host and port. */
static int
sk_vc_split(char *host, size_t hostlen, const char **port, const char *arg)
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


static int
sk_vc_fetch(STACK_OF(X509) **chain, const char *target, const char *starttls,
    const char *servername, sk_err_t *err)
{
    unsigned char  addr[16];
    const char    *port, *sni = servername;
    char           host[SK_VC_HOST_MAX];
    int            fd, rc;

    if (sk_vc_split(host, sizeof(host), &port, target) != 0) {
        return sk_err_set(err, SK_ERR_USAGE,
            "--connect wants HOST:PORT or [IPv6]:PORT");
    }
    /* SNI carries names only, never address literals (RFC 6066). */
    if (sni == NULL && inet_pton(AF_INET, host, addr) != 1
        && inet_pton(AF_INET6, host, addr) != 1)
    {
        sni = host;
    }
    fd = sk_vc_connect(host, port, err);
    if (fd < 0) {
        return -1;
    }
    rc = (starttls != NULL && sk_vc_starttls(fd, err) != 0)
        ? -1 : sk_vc_handshake(chain, fd, sni, err);
    close(fd);
    return rc;
}


static const char *
sk_vc_check_name(sk_err_code_t code)
{
    switch (code) {
    case SK_ERR_WRONG_SK:      return "wrong-sk";
    case SK_ERR_SIGNATURE:     return "signature";
    case SK_ERR_KEY_MISMATCH:  return "key-mismatch";
    case SK_ERR_EXPIRED:       return "expired";
    case SK_ERR_NOT_YET_VALID: return "not-yet-valid";
    case SK_ERR_NOT_FOUND:     return "no-carrier";
    case SK_ERR_FORMAT:        return "malformed-carrier";
    default:                   return sk_err_str(code);
    }
}


static int
sk_vc_fail(const char *source, const char *check, const sk_err_t *err,
    int nchain, int json)
{
    if (json) {
        printf("{\"result\":\"fail\",\"source\":");
        cli_json_str(stdout, source);
        printf(",\"check\":\"%s\",\"reason\":", check);
        cli_json_str(stdout, err->msg);
        if (nchain > 0) {
            printf(",\"chain_length\":%d", nchain);
        }
        printf("}\n");
    }
    return cli_fail("%s: %s", source, err->msg);
}


static int
sk_vc_verify(STACK_OF(X509) *chain, const sk_key_t *sk, const char *source,
    int json)
{
    unsigned char *spki = NULL;
    sk_carrier_t  *c;
    sk_err_t       err;
    char           skfp[SK_FINGERPRINT_SIZE], date[CLI_DATE_SIZE];
    time_t         t;
    int            len, n = sk_X509_num(chain);

    if (sk_carrier_find(&c, chain, &err) != 0) {
        return sk_vc_fail(source, sk_vc_check_name(err.code), &err, n, json);
    }
    len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(sk_X509_value(chain, 0)),
        &spki);
    if (len <= 0) {
        sk_err_crypto(&err, "cannot encode the leaf's public key");
    } else if (sk_carrier_verify(c, sk, spki, (size_t) len, time(NULL), &err)
               == 0)
    {
        err.code = SK_OK;
    }
    OPENSSL_free(spki);
    if (err.code != SK_OK) {
        sk_carrier_free(c);
        return sk_vc_fail(source, sk_vc_check_name(err.code), &err, n, json);
    }

    sk_key_fingerprint(skfp, sk);
    t = sk_carrier_not_after(c);
    cli_date(date, t);
    if (json) {
        printf("{\"result\":\"pass\",\"source\":");
        cli_json_str(stdout, source);
        printf(",\"name\":");
        cli_json_str(stdout, sk_carrier_name(c));
        printf(",\"services\":");
        cli_json_str(stdout, sk_carrier_services(c));
        printf(",\"sk\":\"%s\",\"not_after\":\"%s\",\"chain_length\":%d}\n",
            skfp, date, n);
    } else {
        printf("pass: %s: carrier for %s by SK %s certifies the leaf's key, "
            "valid until %s (chain of %d certificates)\n", source,
            sk_carrier_name(c), skfp, date, n);
    }
    sk_carrier_free(c);
    return SK_EXIT_OK;
}


static int
sk_verify_chain_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "pub",        required_argument, NULL, 'p' },
        { "in",         required_argument, NULL, 'i' },
        { "connect",    required_argument, NULL, 'C' },
        { "starttls",   required_argument, NULL, 'S' },
        { "servername", required_argument, NULL, 'N' },
        { "json",       no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char      *pub = NULL, *in = NULL, *target = NULL;
    const char      *starttls = NULL, *servername = NULL, *source;
    STACK_OF(X509)  *chain = NULL;
    sk_key_t        *sk;
    sk_err_t         err;
    int              c, json = 0, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "p:i:", opts, NULL)) != -1) {
        switch (c) {
        case 'p': pub = optarg; break;
        case 'i': in = optarg; break;
        case 'C': target = optarg; break;
        case 'S': starttls = optarg; break;
        case 'N': servername = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_verify_chain, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_verify_chain, "unexpected argument \"%s\"",
            argv[optind]);
    }
    if (pub == NULL) {
        return cli_usage(&sk_cmd_verify_chain, "missing -p SK.pub");
    }
    if ((in == NULL) == (target == NULL)) {
        return cli_usage(&sk_cmd_verify_chain,
            "need exactly one of -i CHAIN and --connect HOST:PORT");
    }
    if ((starttls != NULL || servername != NULL) && target == NULL) {
        return cli_usage(&sk_cmd_verify_chain,
            "--starttls and --servername go with --connect");
    }
    if (starttls != NULL && strcmp(starttls, "smtp") != 0) {
        return cli_usage(&sk_cmd_verify_chain,
            "--starttls \"%s\": only smtp is supported", starttls);
    }
    source = in != NULL ? in : target;

    if (sk_key_load_public(&sk, pub, &err) != 0) {
        return sk_vc_fail(pub, "sk-key", &err, 0, json);
    }
    if (in != NULL) {
        rc = sk_chain_load_pem(&chain, in, &err);
    } else {
        rc = sk_vc_fetch(&chain, target, starttls, servername, &err);
        if (rc != 0 && err.code == SK_ERR_USAGE) {
            sk_key_free(sk);
            return cli_usage(&sk_cmd_verify_chain, "%s", err.msg);
        }
    }
    if (rc != 0) {
        rc = sk_vc_fail(source, in != NULL ? "chain" : "connect", &err, 0,
            json);
    } else {
        rc = sk_vc_verify(chain, sk, source, json);
    }
    sk_X509_pop_free(chain, X509_free);
    sk_key_free(sk);
    return rc;
}


const sk_cmd_t sk_cmd_verify_chain = {
    "verify-chain", sk_verify_chain_run,
    "-p SK.pub (-i CHAIN | --connect HOST:PORT [--starttls smtp]"
    " [--servername NAME]) [--json]",
    "Check, as a client would, that a certificate chain carries a carrier\n"
    "made by the sovereign key SK.pub, untampered, certifying the leaf's\n"
    "key, and valid now.  The chain comes from the PEM file CHAIN or from\n"
    "a TLS handshake with HOST:PORT (SNI: HOST unless an address, or NAME;\n"
    "the CA chain itself is not verified; --starttls smtp does EHLO and\n"
    "STARTTLS first; 10 s timeouts).  Exit 0 if it passes, 1 if not,\n"
    "naming the check that failed: wrong-sk, signature, key-mismatch,\n"
    "expired, not-yet-valid, no-carrier, malformed-carrier (and sk-key,\n"
    "chain or connect when the inputs cannot be had).  --json prints\n"
    "{\"result\":\"pass\"|\"fail\", \"check\", \"reason\", ...}.\n"
};
