/*
 * sk/chain.h -- a Bind's (or Rebind's) evidence: CA-Cert-Chain, the
 * comma-separated base64url DER certificates, end-entity first, must
 * verify at claim time to one of the roots the timeline trusted then, be
 * for the entry's Name, and certify the SK itself.  Shared by the
 * timeline's validation and the mirror's checks.
 */
#ifndef SK_CHAIN_H
#define SK_CHAIN_H

#include <stdint.h>

#include <openssl/x509.h>

#include "entry.h"
#include "err.h"
#include "key.h"

/* The certificates of e's CA-Cert-Chain as parsing decoded them,
 * end-entity first (borrowed: valid while e is), or NULL if e has no
 * chain.  Each is decoded once, when the entry is parsed; a CA
 * certificate many chains share, once for all of them (chain.c). */
STACK_OF(X509) *sk_entry_get0_chain(const sk_entry_t *e);
/* Its first, the end-entity certificate, or NULL. */
X509 *sk_entry_get0_ee(const sk_entry_t *e);

/* d2i_X509 for an end-entity certificate whose key is to be an SK: the
 * key is decoded only if it is Ed25519, EC or RSA, at a third of
 * d2i_X509's cost in OpenSSL 3.0 (chain.c).  Thread-safe. */
X509 *sk_chain_d2i_ee(const unsigned char **pp, long len);

/* Decode a CA-Cert-Chain value v[0..len) into *chain (new stack; free
 * with sk_X509_pop_free(*chain, X509_free); NULL on failure), errors
 * naming the certificate ("certificate 2: not a DER certificate").
 * Every certificate is decoded as sk_chain_d2i_ee does; a CA certificate
 * seen lately comes from a shared cache instead. */
int sk_chain_decode(STACK_OF(X509) **chain, const char *v, size_t len,
    sk_err_t *err) SK_WUR;

/* Check e's chain with roots at time at.  On success *verified (if not
 * NULL) is the verified chain, end-entity first, ending in the root
 * (get1: free it as above).  SK_ERR_SIGNATURE: not valid to a trusted
 * root then; SK_ERR_FORMAT: not for the name or malformed;
 * SK_ERR_KEY_MISMATCH: the end-entity key is not sk; SK_ERR_NOMEM: no
 * verifier could be made (a fault of this host, not of the chain). */
int sk_chain_check(STACK_OF(X509) **verified, const sk_entry_t *e,
    const sk_key_t *sk, X509_STORE *roots, int64_t at, sk_err_t *err) SK_WUR;

#endif
