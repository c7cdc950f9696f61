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

/* Makes one certificate of a chain from its DER: a new reference, or
 * NULL.  i is its place (0: the end-entity).  A hook for callers that keep
 * the CA certificates many chains share decoded (sk-timeline). */
typedef X509 *(*sk_chain_d2i_fn)(void *arg, const unsigned char *der,
    size_t len, int i);

/* The end-entity certificate of e's CA-Cert-Chain as parsing decoded it
 * (borrowed: valid while e is), or NULL if e has no chain.  The chain
 * check uses it, so a Bind's certificate is decoded once. */
X509 *sk_entry_get0_ee(const sk_entry_t *e);

/* d2i_X509 for an end-entity certificate whose key is to be an SK: the
 * key is decoded only if it is Ed25519, EC or RSA, at a third of
 * d2i_X509's cost in OpenSSL 3.0 (chain.c).  Thread-safe. */
X509 *sk_chain_d2i_ee(const unsigned char **pp, long len);

/* Decode CA-Cert-Chain into *chain (new stack; free with
 * sk_X509_pop_free(*chain, X509_free), also on failure). */
int sk_chain_decode(STACK_OF(X509) **chain, const char *value,
    sk_err_t *err) SK_WUR;
/* The same with d2i (NULL: d2i_X509) making each certificate. */
int sk_chain_decode_by(STACK_OF(X509) **chain, const char *value,
    sk_chain_d2i_fn d2i, void *arg, sk_err_t *err) SK_WUR;

/* Check e's chain with roots at time at.  On success *verified (if not
 * NULL) is the verified chain, end-entity first (get1: free it as
 * above).  SK_ERR_SIGNATURE: not valid to a trusted root then;
 * SK_ERR_FORMAT: not for the name or malformed; SK_ERR_KEY_MISMATCH: the
 * end-entity key is not sk; SK_ERR_NOMEM: no verifier could be made (a
 * fault of this host, not of the chain). */
int sk_chain_check(STACK_OF(X509) **verified, const sk_entry_t *e,
    const sk_key_t *sk, X509_STORE *roots, int64_t at, sk_err_t *err) SK_WUR;
/* The same, decoding the CA certificates with sk_chain_decode_by(d2i,
 * arg); the end-entity certificate is e's own (sk_entry_get0_ee). */
int sk_chain_check_by(STACK_OF(X509) **verified, const sk_entry_t *e,
    const sk_key_t *sk, X509_STORE *roots, int64_t at, sk_chain_d2i_fn d2i,
    void *arg, sk_err_t *err) SK_WUR;

#endif
