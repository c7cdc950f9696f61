/*
 * sk/tls.h -- make any OpenSSL client's TLS connections SK-enforcing.
 *
 * The whole decision `sk verify` makes (mirrors, freshness, cache, record
 * combining with rebinders, the carrier check) runs inside the handshake,
 * on the certificate chain the server sent, and a reject fails the
 * handshake before the application can send a byte:
 *
 *     sk_tls_conf_t  conf = { .trust_file = "/etc/sk/trust.conf",
 *                             .cache_dir = "/var/cache/sk",
 *                             .fetch = sk_client_fetch_curl };
 *     sk_tls_t      *t;
 *
 *     sk_tls_new(&t, &conf, &err);
 *     sk_tls_lookup(t, "www.example.org", "https", 443, time(NULL), &err);
 *     ssl = SSL_new(ctx);
 *     sk_tls_attach(t, ssl, &err);         (SNI, name, verify callback)
 *     SSL_connect(ssl);                    (fails on reject)
 *     d = sk_tls_decision(t);              (accept/reject/none + reason)
 *
 * sk_tls_lookup learns the record before connecting (the network, if
 * any, happens there: mirrors, through conf.fetch), so the check in the
 * handshake costs no round trip.  Unless SK_TLS_NO_CA_CHECK is given,
 * OpenSSL's own chain verification (the caller's trust store) and the
 * host name check on the certificate still apply, for every decision.
 *
 * The callback is OpenSSL's verify callback (SSL_set_verify /
 * SSL_CTX_set_verify, mode SSL_VERIFY_PEER): it replaces one the
 * application set.  Its clock is the verify parameters' check time if
 * set (X509_V_FLAG_USE_CHECK_TIME), else the system's, as for OpenSSL's
 * own checks.  A resumed session sends no certificate: sk_tls_attach
 * refuses an SSL with a session set, and with a context, do not resume
 * (sk_tls_decision stays NULL when no full handshake happened).
 *
 * One sk_tls_t serves one connection at a time (the decision is the last
 * handshake's); free it after the SSL or SSL_CTX it is attached to.
 * Functions return 0 or -1 with err.
 */
#ifndef SK_TLS_H
#define SK_TLS_H

#include <stdint.h>
#include <time.h>
#include <openssl/ssl.h>
#include "err.h"
#include "client.h"

typedef struct sk_tls_s sk_tls_t;

/* Skip OpenSSL's chain and host name verification: only the SK decides
 * (and for a name without an SK, nothing checks the server). */
#define SK_TLS_NO_CA_CHECK  0x01

typedef struct {
    const char               *trust_file;   /* sk/client.h's trust file */
    const sk_client_trust_t  *trust;        /* or a trust set (borrowed:
                                               keep it until sk_tls_free),
                                               when trust_file is NULL */
    const char               *cache_dir;    /* NULL: no cache */
    sk_client_fetch_fn        fetch;        /* mirror queries */
    void                     *fetch_arg;
    unsigned                  flags;        /* SK_TLS_* */
} sk_tls_conf_t;

int sk_tls_new(sk_tls_t **t, const sk_tls_conf_t *conf, sk_err_t *err)
    SK_WUR;

/*
 * Learn the record in force for host (sk_client_find) and the service
 * and port connections will use (port 0: the service's default).  -1
 * with SK_ERR_UNAVAILABLE when it fails closed (sk_client_found_usable):
 * do not connect; attaching then fails too.  Other -1: local failures.
 */
int sk_tls_lookup(sk_tls_t *t, const char *host, const char *service,
    unsigned port, int64_t now, sk_err_t *err) SK_WUR;

/* What the last sk_tls_lookup found (record, lookup log), borrowed;
 * NULL before one. */
const sk_client_found_t *sk_tls_get0_found(const sk_tls_t *t);

/* Make ssl's next handshake SK-enforcing: SNI and the certificate's host
 * name are the looked-up host, verify mode SSL_VERIFY_PEER with libsk's
 * callback.  Call after sk_tls_lookup, before the handshake. */
int sk_tls_attach(sk_tls_t *t, SSL *ssl, sk_err_t *err) SK_WUR;

/* The same for every SSL made from ctx afterwards (set SNI on each SSL
 * yourself; libcurl's CURLOPT_SSL_CTX_FUNCTION is such a place). */
int sk_tls_attach_ctx(sk_tls_t *t, SSL_CTX *ctx, sk_err_t *err) SK_WUR;

/*
 * The decision for a chain (leaf first, as the server sent it; NULL for
 * the service offered without TLS, which is SK_DECIDE_INSECURE when the
 * SK covers it), remembered as sk_tls_decision.  The callback calls this;
 * call it yourself for a chain taken some other way.
 */
int sk_tls_decide(sk_tls_t *t, STACK_OF(X509) *chain, time_t now,
    sk_err_t *err) SK_WUR;

/* The last decision, borrowed; NULL if none was made since the last
 * attach (no handshake reached the certificates). */
const sk_decide_t *sk_tls_decision(const sk_tls_t *t);

void sk_tls_free(sk_tls_t *t);      /* NULL ok */

#endif
