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
 * handshake costs no round trip.  To ask mirrors over Tor too (their
 * onions, mirror_tor), load the trust set yourself (conf.trust) and give
 * conf.fetch_tor = sk_client_fetch_curl with the options
 * sk_client_curl_init makes from it (and conf.fetch_arg the direct ones).  sk_tls_prepare instead asks the server
 * for its stapled proof and asks mirrors only without a good one.  Unless SK_TLS_NO_CA_CHECK is given,
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
/* Never ask for nor use the server's stapled proof: sk_tls_prepare is
 * then sk_tls_lookup. */
#define SK_TLS_NO_STAPLE    0x02

typedef struct {
    const char               *trust_file;   /* sk/client.h's trust file */
    const sk_client_trust_t  *trust;        /* or a trust set (borrowed:
                                               keep it until sk_tls_free),
                                               when trust_file is NULL */
    const char               *cache_dir;    /* NULL: no cache */
    sk_client_fetch_fn        fetch;        /* mirror queries */
    void                     *fetch_arg;
    unsigned                  flags;        /* SK_TLS_* */
    sk_client_fetch_fn        fetch_tor;    /* mirror queries over Tor
                                               (sk_client_ctx_t); NULL:
                                               none */
    void                     *fetch_tor_arg;
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

/*
 * sk_tls_lookup, but what needs the mirrors waits for the handshake: the
 * cache decides here if it can (no network); else the handshake asks the
 * server for its stapled proof (sk/staple.h), and the record is learnt
 * inside it, from the staple if it is fresh and valid, else from the
 * mirrors (the handshake then waits for them).  Until then nothing is
 * decided: a lookup in the handshake that fails closed, or fails at all,
 * fails the handshake and sk_tls_decide, never decides on what it had.
 * A client that connects anyway saves the first visit's mirror query.
 * -1 only for local failures.
 */
int sk_tls_prepare(sk_tls_t *t, const char *host, const char *service,
    unsigned port, int64_t now, sk_err_t *err) SK_WUR;

/* What the last lookup found (record, lookup log), borrowed; NULL before
 * one, when it found nothing (a local failure), and after sk_tls_prepare
 * until a handshake or sk_tls_decide learnt it. */
const sk_client_found_t *sk_tls_get0_found(const sk_tls_t *t);

/* Which staple the lookup had: "extension", "chain" (the certificate
 * form), or NULL (none; or the record came before the handshake). */
const char *sk_tls_staple_form(const sk_tls_t *t);

/* For a chain taken some other way after sk_tls_prepare: the bytes of
 * extension 0xFF53 the server sent (NULL: none), for sk_tls_decide. */
int sk_tls_set_staple(sk_tls_t *t, const unsigned char *data, size_t len,
    sk_err_t *err) SK_WUR;

/* Make ssl's next handshake SK-enforcing: SNI and the certificate's host
 * name are the looked-up host, verify mode SSL_VERIFY_PEER with libsk's
 * callback.  Call after sk_tls_lookup or sk_tls_prepare, before the
 * handshake.  After sk_tls_prepare it also asks for the staple, if the
 * SSL_CTX was set up for it before SSL_new (sk_staple_client_init). */
int sk_tls_attach(sk_tls_t *t, SSL *ssl, sk_err_t *err) SK_WUR;

/* The same for every SSL made from ctx afterwards (set SNI on each SSL
 * yourself; libcurl's CURLOPT_SSL_CTX_FUNCTION is such a place); after
 * sk_tls_prepare each asks for the staple. */
int sk_tls_attach_ctx(sk_tls_t *t, SSL_CTX *ctx, sk_err_t *err) SK_WUR;

/*
 * What sk_tls_decide learns before deciding, for a caller that decides
 * itself (sk-milter's outbound policy decides for a domain's MX hosts,
 * sk_client_decide_mx): after sk_tls_prepare, the record from the
 * staple of sk_tls_set_staple, else one in chain (may be NULL), else the
 * mirrors; after sk_tls_lookup, or a cache that decided, nothing more.
 * 0 when sk_tls_get0_found may decide; -1 with SK_ERR_UNAVAILABLE when
 * the lookup fails closed (sk_tls_get0_found then says what was learnt,
 * if anything), other codes for local failures.
 */
int sk_tls_learn(sk_tls_t *t, STACK_OF(X509) *chain, int64_t now,
    sk_err_t *err) SK_WUR;

/*
 * The decision for a chain (leaf first, as the server sent it; NULL for
 * the service offered without TLS, which is SK_DECIDE_INSECURE when the
 * SK covers it), remembered as sk_tls_decision.  The callback calls this;
 * call it yourself for a chain taken some other way.  After
 * sk_tls_prepare it first learns the record (the staple of
 * sk_tls_set_staple, else one in chain, else the mirrors): -1 with
 * SK_ERR_UNAVAILABLE when that fails closed, and when the record comes
 * from a view not fresh enough and the decision would be accept or none
 * (sk_client_found_decision_ok: an old view only refuses).
 */
int sk_tls_decide(sk_tls_t *t, STACK_OF(X509) *chain, time_t now,
    sk_err_t *err) SK_WUR;

/* The last decision, borrowed; NULL if none was made since the last
 * attach (no handshake reached the certificates). */
const sk_decide_t *sk_tls_decision(const sk_tls_t *t);

/* Why the last sk_tls_decide failed closed (SK_ERR_UNAVAILABLE: nothing
 * fresh enough to decide on, or a view not fresh enough that would have
 * let the connection through, sk_client_found_decision_ok), borrowed;
 * NULL if it did not.  An undecided handshake is no reject: the client
 * may try another route, and reports it as undecided. */
const char *sk_tls_undecided(const sk_tls_t *t);

void sk_tls_free(sk_tls_t *t);      /* NULL ok */

#endif
