/*
 * sk/carrier.h -- the cross-signature as a carrier certificate.
 *
 * An X.509 v3 certificate issued and signed by the sovereign key whose
 * subject public key is the server's operational key; subject CN and SAN
 * dNSName are the name; issuer is the SK's own DN (SK_CARRIER_ISSUER_O +
 * CN=name), so `openssl verify -partial_chain` accepts it against the SK's
 * self-signed certificate (sk_carrier_sk_selfcert).  It carries the
 * non-critical extension SK_CARRIER_EXT_OID.  Every arc of the OID fits in
 * 32 bits: GnuTLS (libtasn1) rejects a whole certificate, and with it the
 * handshake, over an arc of 2^64 or more, so architecture.md's
 * 2.25.<UUID> arc would break unaware GnuTLS clients.  The arc is under
 * IANA's documentation enterprise number (RFC 5612) until a registered
 * one replaces it; this define is the only place it is written.
 *
 *
 *   SovereignKeyCrossSignature ::= SEQUENCE {
 *       version     INTEGER (1),
 *       skSpkiHash  OCTET STRING (SIZE (32)),   -- SHA-256 of the SK's SPKI
 *       services    IA5String                   -- the Services it covers
 *   }
 */
#ifndef SK_CARRIER_H
#define SK_CARRIER_H

#include <stddef.h>
#include <time.h>
#include <openssl/x509.h>
#include "err.h"
#include "key.h"

#define SK_CARRIER_EXT_OID  "1.3.6.1.4.1.32473.2011.1"
#define SK_CARRIER_ISSUER_O "Sovereign Key"
#define SK_CARRIER_DEFAULT_DAYS 90

typedef struct sk_carrier_s sk_carrier_t;   /* opaque: X509 + decoded ext */

typedef struct {
    const char *name;          /* DNS name (sk_name_check) */
    const char *services;      /* Services field text, e.g. "https,smtps" */
    time_t      not_before;
    time_t      not_after;
} sk_carrier_params_t;

/* sk (private) certifies operational (public). */
int sk_carrier_create(sk_carrier_t **c, const sk_key_t *sk,
    const sk_key_t *operational, const sk_carrier_params_t *params,
    sk_err_t *err) SK_WUR;

/* A certificate of the SK itself, self-signed, subject = the carriers'
 * issuer DN for name: for independent tools such as `openssl verify`. */
int sk_carrier_sk_selfcert(X509 **cert, const sk_key_t *sk,
    const char *name, time_t not_before, time_t not_after, sk_err_t *err)
    SK_WUR;

/* Parse a DER certificate as a carrier: SK_ERR_NO_EXTENSION if it is a
 * certificate without the extension, SK_ERR_FORMAT if malformed. */
int sk_carrier_from_der(sk_carrier_t **c, const unsigned char *der,
    size_t len, sk_err_t *err) SK_WUR;
/* Takes a new reference to x. */
int sk_carrier_from_x509(sk_carrier_t **c, X509 *x, sk_err_t *err) SK_WUR;

/* Every carrier in a PEM file (other certificates are skipped); *n > 0
 * or an error naming the file. Free each and the array (free()). */
int sk_carrier_load_pem(sk_carrier_t ***cs, size_t *n, const char *path,
    sk_err_t *err) SK_WUR;

int sk_carrier_to_pem(char **pem, size_t *len, const sk_carrier_t *c,
    sk_err_t *err) SK_WUR;
const unsigned char *sk_carrier_get0_der(const sk_carrier_t *c, size_t *len);
X509 *sk_carrier_get0_x509(const sk_carrier_t *c);            /* borrowed */

/* Fields as carried (borrowed). */
const char *sk_carrier_name(const sk_carrier_t *c);
const char *sk_carrier_services(const sk_carrier_t *c);
const unsigned char *sk_carrier_sk_hash(const sk_carrier_t *c);   /* 32 B */
/* DER SPKI of the certified (operational) key, borrowed. */
const unsigned char *sk_carrier_subject_spki(const sk_carrier_t *c,
    size_t *len);
time_t sk_carrier_not_before(const sk_carrier_t *c);
time_t sk_carrier_not_after(const sk_carrier_t *c);

/*
 * The client's check: c was signed by sk, is valid at now, and certifies
 * the key whose DER SPKI is leaf_spki.  Each failure is its own code:
 * SK_ERR_WRONG_SK (made for another SK), SK_ERR_SIGNATURE (tampered),
 * SK_ERR_KEY_MISMATCH (certifies another key), SK_ERR_EXPIRED,
 * SK_ERR_NOT_YET_VALID.
 */
int sk_carrier_verify(const sk_carrier_t *c, const sk_key_t *sk,
    const unsigned char *leaf_spki, size_t leaf_spki_len, time_t now,
    sk_err_t *err) SK_WUR;

/* Find the carrier in a presented chain (leaf first): the first
 * certificate with the extension.  SK_ERR_NOT_FOUND if none. */
int sk_carrier_find(sk_carrier_t **c, STACK_OF(X509) *chain, sk_err_t *err)
    SK_WUR;

/* find + verify against chain[0]'s key. */
int sk_carrier_verify_chain(STACK_OF(X509) *chain, const sk_key_t *sk,
    time_t now, sk_err_t *err) SK_WUR;

/* Certificates of a PEM file, in order (for chains). */
int sk_chain_load_pem(STACK_OF(X509) **chain, const char *path,
    sk_err_t *err) SK_WUR;
/* Same from memory (fuzzing, network input). */
int sk_chain_parse_pem(STACK_OF(X509) **chain, const char *buf, size_t len,
    sk_err_t *err) SK_WUR;

void sk_carrier_free(sk_carrier_t *c);                        /* NULL ok */

#endif
