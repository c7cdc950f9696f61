/*
 * cli_net.h -- what `sk verify-chain --connect`, `sk check` and `sk verify`
 * share: TCP connect, SMTP STARTTLS, and a TLS handshake that fetches the
 * chain the server presents.  Every connect, read and write has a 10 s
 * timeout.
 */
#ifndef SK_CLI_NET_H
#define SK_CLI_NET_H

#include <stddef.h>
#include <openssl/x509.h>
#include <sk/sk.h>

#define CLI_NET_TIMEOUT_MS  10000
#define CLI_NET_HOST_MAX    256

/* A connected, blocking TCP socket with send/receive timeouts, or -1
 * (SK_ERR_UNAVAILABLE). */
int cli_net_connect(const char *host, const char *port, sk_err_t *err);

/* SMTP up to the TLS handshake: 220, EHLO, 250 (with STARTTLS), STARTTLS,
 * 220.  A server that does not offer STARTTLS is SK_ERR_NOT_FOUND (the
 * session stays in plaintext); other failures SK_ERR_UNAVAILABLE. */
int cli_net_starttls(int fd, sk_err_t *err);

/* What else a handshake does (all zero: nothing more). */
typedef struct {
    int             ask_staple;     /* send extension 0xFF53 */
    int             version;        /* TLS1_2_VERSION, TLS1_3_VERSION: only
                                       that one; 0: any */
    unsigned char  *staple;         /* out: the server's extension bytes
                                       (malloc()ed), NULL if none came */
    size_t          staple_len;
    int             version_used;   /* out: SSL_version() */
} cli_net_tls_t;

/* TLS handshake on fd without certificate verification (the SK check is
 * the point), SNI = sni unless NULL; *chain is the presented chain, leaf
 * first (free with sk_X509_pop_free(chain, X509_free)); opt may be
 * NULL. */
int cli_net_handshake(STACK_OF(X509) **chain, int fd, const char *sni,
    cli_net_tls_t *opt, sk_err_t *err);

/* Connect to target (HOST:PORT or [IPv6]:PORT), SMTP STARTTLS first if
 * starttls, and take the chain (cli_net_handshake); SNI servername, else
 * HOST unless it is an address.  SK_ERR_USAGE for a bad target. */
int cli_net_fetch_chain(STACK_OF(X509) **chain, const char *target,
    int starttls, const char *servername, cli_net_tls_t *opt, sk_err_t *err);

/* HOST:PORT or [IPv6]:PORT into host and port (a pointer into arg). */
int cli_net_split(char *host, size_t hostlen, const char **port,
    const char *arg);

/* 1 if host is an IPv4 or IPv6 address literal (no SNI for those). */
int cli_net_is_address(const char *host);

#endif
