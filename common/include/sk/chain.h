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

/* Decode CA-Cert-Chain into *chain (new stack; free with
 * sk_X509_pop_free(*chain, X509_free), also on failure). */
int sk_chain_decode(STACK_OF(X509) **chain, const char *value,
    sk_err_t *err) SK_WUR;

/* Check e's chain with roots at time at.  On success *verified (if not
 * NULL) is the verified chain, end-entity first (get1: free it as
 * above).  SK_ERR_SIGNATURE: not valid to a trusted root then;
 * SK_ERR_FORMAT: not for the name or malformed; SK_ERR_KEY_MISMATCH: the
 * end-entity key is not sk. */
int sk_chain_check(STACK_OF(X509) **verified, const sk_entry_t *e,
    const sk_key_t *sk, X509_STORE *roots, int64_t at, sk_err_t *err) SK_WUR;

#endif
