/*
 * sk/staple.h -- the stapled SK proof (docs/protocol.md "Stapled proof"):
 * the signed mirror answers a client would fetch itself, handed over by
 * the server in the TLS handshake, so the client needs no mirror query.
 *
 * A staple proves nothing by itself being sent: each answer in it is
 * checked exactly as a fetched one (sk_client_staple_view in sk/client.h:
 * a mirror key of the client's trust set, its signature, the timelines'
 * checkpoints and inclusion proofs), so a server can only replay answers;
 * the client's staple_max_age bounds the replay.
 *
 * Two forms carry the same bytes:
 *   - TLS extension SK_STAPLE_EXT_TYPE (private use), sent by the server
 *     in the TLS 1.2 ServerHello or the TLS 1.3 EncryptedExtensions, only
 *     to a client that sent the (empty) extension in its ClientHello;
 *   - a certificate appended to the served chain, carrying the bytes in
 *     extension SK_STAPLE_CERT_OID, for clients whose TLS library cannot
 *     ask (sk_staple_wrap); clients that know nothing of it ignore it as
 *     they ignore the carrier.
 *
 * Pieces: client_staple.c (the format, a client's check), client_staple_
 * x509.c (the certificate form, OpenSSL's client side of the extension),
 * client_staple_serve.c (a server's fetching and refreshing).
 */
#ifndef SK_STAPLE_H
#define SK_STAPLE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include "err.h"
#include "key.h"
#include "name.h"

#define SK_STAPLE_EXT_TYPE     0xFF53
#define SK_STAPLE_CERT_OID     "1.3.6.1.4.1.32473.2011.2"
#define SK_STAPLE_MAX          65535     /* one TLS extension */
#define SK_STAPLE_MAX_ANSWERS  8

/* A staple is as fresh as an answer must be: T2 (45 min) bounds its
 * age, so a replayed one stops deciding within the hour an Unbind has to
 * reach every client; a server refreshes its staple every 10 minutes,
 * retrying each minute, and stays far below the bound (docs/protocol.md,
 * "Freshness"). */
#define SK_STAPLE_MAX_AGE      (45 * 60)
#define SK_STAPLE_REFRESH      600
#define SK_STAPLE_RETRY        60

typedef struct {
    char            name[SK_NAME_MAX + 1];     /* the name queried */
    char            mirror[SK_FINGERPRINT_SIZE];   /* "sha256:<hex>" of
                                                  the mirror's key */
    const char     *answer;                    /* the signed answer, in
                                                  the staple's bytes */
    size_t          len;
} sk_staple_answer_t;

typedef struct {
    char                *buf;                  /* owned copy */
    size_t               len;
    sk_staple_answer_t   a[SK_STAPLE_MAX_ANSWERS];
    size_t               n;
} sk_staple_t;

/*
 * The layout only (docs/protocol.md): magic, count, each answer's line
 * (a valid name, a fingerprint, a length within the bytes) and its first
 * two lines ("SK-Mirror-Answer: 1", "Name: " the same name), no (name,
 * mirror) twice, nothing after the last answer.  Signatures are checked
 * by sk_client_staple_view.  s is zeroed on failure.
 */
int sk_staple_parse(sk_staple_t *s, const unsigned char *buf, size_t len,
    sk_err_t *err) SK_WUR;
void sk_staple_free(sk_staple_t *s);                 /* NULL ok */

/* The staple of n answers (name, mirror, answer, len used), in order. */
int sk_staple_format(unsigned char **out, size_t *len,
    const sk_staple_answer_t *a, size_t n, sk_err_t *err) SK_WUR;

/* One staple with the answers of several (parsed, in order). */
int sk_staple_join(unsigned char **out, size_t *len,
    const sk_staple_t *const *parts, size_t n, sk_err_t *err) SK_WUR;

/* The certificate form: a self-issued certificate (O=Sovereign Key
 * Staple, CN=the first answer's name) valid over [not_before, not_after],
 * carrying the staple, signed by a key derived from the staple's hash so
 * that the same staple always gives the same certificate.  The signature
 * means nothing: the answers inside authenticate themselves. */
int sk_staple_wrap(X509 **x, const unsigned char *staple, size_t len,
    time_t not_before, time_t not_after, sk_err_t *err) SK_WUR;
/* The staple a certificate carries (parsed strictly, as
 * sk_staple_parse); SK_ERR_NO_EXTENSION for a certificate without it.
 * *staple malloc()ed. */
int sk_staple_unwrap(unsigned char **staple, size_t *len, X509 *x,
    sk_err_t *err) SK_WUR;
/* The first certificate of chain carrying a staple; SK_ERR_NOT_FOUND if
 * none does, the unwrap error (naming the certificate) if it is bad. */
int sk_staple_find(unsigned char **staple, size_t *len,
    STACK_OF(X509) *chain, sk_err_t *err) SK_WUR;

/*
 * An OpenSSL client asking for the extension: sk_staple_client_init once
 * on the SSL_CTX (before SSL_new: OpenSSL copies extensions into each
 * SSL); then every SSL made from it asks (ask_all), or those that
 * sk_staple_client_ask names.  After the handshake, sk_staple_client_get0
 * gives what the server sent (borrowed, until SSL_free or the next
 * handshake).  An SSL that does not ask sends nothing more than without
 * libsk.
 */
int sk_staple_client_init(SSL_CTX *ctx, int ask_all, sk_err_t *err) SK_WUR;
int sk_staple_client_ask(SSL *ssl, sk_err_t *err) SK_WUR;
/* 1 with data/len if the server stapled, 0 if not. */
int sk_staple_client_get0(const SSL *ssl, const unsigned char **data,
    size_t *len);

#endif
