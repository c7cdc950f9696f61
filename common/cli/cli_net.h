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

/* TLS handshake on fd without certificate verification (the SK check is
 * the point), SNI = sni unless NULL; *chain is the presented chain, leaf
 * first (free with sk_X509_pop_free(chain, X509_free)). */
int cli_net_handshake(STACK_OF(X509) **chain, int fd, const char *sni,
    sk_err_t *err);

/* The chain HOST:PORT (or [IPv6]:PORT) presents: connect, STARTTLS when
 * starttls is "smtp", handshake with SNI servername, else HOST unless it
 * is an address.  A malformed target is SK_ERR_USAGE. */
int cli_net_fetch_chain(STACK_OF(X509) **chain, const char *target,
    const char *starttls, const char *servername, sk_err_t *err);

/* HOST:PORT or [IPv6]:PORT into host and port (a pointer into arg). */
int cli_net_split(char *host, size_t hostlen, const char **port,
    const char *arg);

/* 1 if host is an IPv4 or IPv6 address literal (no SNI for those). */
int cli_net_is_address(const char *host);

#endif
