/*
 * sk/nonce.h -- a mirror's answer bound to a client's nonce
 * (docs/protocol.md, "Nonces"), so that an answer replayed on the path
 * is told from a fresh one.
 *
 * A client's direct query carries ?nonce=<43 base64url characters> (32
 * random bytes).  The mirror answers with its answer, unchanged (cached
 * answers stay cached), followed by a trailer of three lines:
 *
 *   Nonce: <the client's nonce>\n
 *   Nonce-Batch: <i> <k>[ <hash>...]\n
 *   Nonce-Signature: <86 base64url characters>\n
 *
 * Leaf i of a batch of k is the RFC 6962 leaf hash of the 32 nonce bytes
 * followed by the SHA-256 of the answer (every byte before "Nonce: "); the
 * hashes (43 base64url characters each) are its inclusion proof, leaf to
 * root; the signature is the mirror's Ed25519 signature over
 * SK_NONCE_CONTEXT followed by the 32-byte root.  One signature covers the
 * nonces of every query the mirror answered together (Roughtime's
 * batching), and a batch of one has no hashes.
 */
#ifndef SK_NONCE_H
#define SK_NONCE_H

#include <stddef.h>

#include "err.h"
#include "key.h"
#include "merkle.h"

#define SK_NONCE_BYTES      32
#define SK_NONCE_TEXT       43      /* base64url, no padding */
/* Leaves one signature covers; a proof then has at most 10 hashes. */
#define SK_NONCE_BATCH_MAX  1024
#define SK_NONCE_PROOF_MAX  10
/* What the signature covers, before the root: no answer starts so. */
#define SK_NONCE_CONTEXT    "SK-Mirror-Nonces: 1\n"
/* The longest trailer. */
#define SK_NONCE_TRAILER_MAX                                                  \
    (7 + SK_NONCE_TEXT + 1 + 13 + 2 * 5 + SK_NONCE_PROOF_MAX                  \
     * (1 + SK_NONCE_TEXT) + 1 + 17 + 86 + 1)

/* A new nonce from the system's random source, as sent: 43 base64url
 * characters and a NUL. */
int sk_nonce_new(char out[SK_NONCE_TEXT + 1], sk_err_t *err) SK_WUR;

/* Strict: exactly 43 base64url characters, the canonical encoding of 32
 * bytes (SK_ERR_FORMAT otherwise). */
int sk_nonce_parse(unsigned char out[SK_NONCE_BYTES], const char *s,
    size_t len, sk_err_t *err) SK_WUR;

/* The leaf of nonce and answer (answer: the bytes before the trailer). */
void sk_nonce_leaf(sk_merkle_hash_t out,
    const unsigned char nonce[SK_NONCE_BYTES], const char *answer,
    size_t len);

/* One query of a batch: in, its nonce and leaf; out, its trailer. */
typedef struct {
    unsigned char     nonce[SK_NONCE_BYTES];
    sk_merkle_hash_t  leaf;
    char              trailer[SK_NONCE_TRAILER_MAX + 1];
    size_t            len;
} sk_nonce_item_t;

/* Sign a batch of 1..SK_NONCE_BATCH_MAX items with key (one signature
 * over their tree's root) and write each item's trailer. */
int sk_nonce_sign(sk_nonce_item_t *const *items, size_t k,
    const sk_key_t *key, sk_err_t *err) SK_WUR;

/*
 * A document the mirror sent for nonce (its 43 characters): its last
 * three lines must be the trailer, strictly, for that nonce, and, with a
 * key, the signature must cover the root the leaf and proof lead to.  Key
 * NULL checks all but the signature.  *answer_len: the bytes before the
 * trailer (what sk_client_answer_verify reads).  SK_ERR_FORMAT: no trailer
 * or a malformed one; SK_ERR_SIGNATURE: another nonce (a replay) or a
 * signature that does not verify.
 */
int sk_nonce_verify(size_t *answer_len, const char *doc, size_t len,
    const char *nonce, const sk_key_t *key, sk_err_t *err) SK_WUR;

#endif
