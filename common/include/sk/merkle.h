/*
 * sk/merkle.h -- the timeline's Merkle tree (RFC 6962 / RFC 9162) and its
 * C2SP signed-note checkpoint.
 *
 *   leaf hash  = SHA-256(0x00 | canonical entry bytes)      leaf index = SN
 *   node hash  = SHA-256(0x01 | left | right)
 *   empty tree = SHA-256("")
 *
 * A checkpoint (c2sp.org/tlog-checkpoint inside c2sp.org/signed-note):
 *
 *   <origin>\n
 *   <tree size, decimal>\n
 *   <root hash, standard base64 with padding>\n
 *   [<extension line>\n ...]
 *   \n
 *   \u2014 <key name> <base64(key id[4] | Ed25519 signature[64])>\n ...
 *
 * The signature covers the text above the blank line (newline included);
 * key id = first 4 bytes of SHA-256(key name | 0x0A | 0x01 | raw pubkey).
 *
 * An sk_merkle_tree_t keeps every complete subtree hash (about 2n hashes),
 * so appends are amortised O(1) and roots and proofs for any earlier size
 * O(log n).  One tree is not safe for concurrent use; lock around it.
 */
#ifndef SK_MERKLE_H
#define SK_MERKLE_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "key.h"

#define SK_MERKLE_HASH_BYTES   SK_SHA256_BYTES
/* An inclusion proof has at most 64 hashes, a consistency proof 65. */
#define SK_MERKLE_PROOF_MAX    66

typedef unsigned char sk_merkle_hash_t[SK_MERKLE_HASH_BYTES];

typedef struct {
    size_t            len;                       /* hashes in use */
    sk_merkle_hash_t  hash[SK_MERKLE_PROOF_MAX];  /* leaf-to-root order */
} sk_merkle_proof_t;

typedef struct sk_merkle_tree_s sk_merkle_tree_t;

int sk_merkle_leaf_hash(sk_merkle_hash_t out, const void *data, size_t len,
    sk_err_t *err) SK_WUR;
void sk_merkle_node_hash(sk_merkle_hash_t out, const sk_merkle_hash_t left,
    const sk_merkle_hash_t right);
void sk_merkle_empty_root(sk_merkle_hash_t out);

int sk_merkle_tree_new(sk_merkle_tree_t **t, sk_err_t *err) SK_WUR;
void sk_merkle_tree_free(sk_merkle_tree_t *t);          /* NULL ok */
uint64_t sk_merkle_tree_size(const sk_merkle_tree_t *t);
/* Append one leaf hash (already sk_merkle_leaf_hash()ed). */
int sk_merkle_tree_append(sk_merkle_tree_t *t, const sk_merkle_hash_t leaf,
    sk_err_t *err) SK_WUR;
/* Leaf hash at index (borrowed); NULL if index >= size. */
const unsigned char *sk_merkle_tree_leaf(const sk_merkle_tree_t *t,
    uint64_t index);
/* Root of the tree's first size leaves (size <= current size). */
int sk_merkle_tree_root(sk_merkle_hash_t out, const sk_merkle_tree_t *t,
    uint64_t size, sk_err_t *err) SK_WUR;
/* Audit path of leaf index in the tree of the first size leaves. */
int sk_merkle_tree_inclusion(sk_merkle_proof_t *proof,
    const sk_merkle_tree_t *t, uint64_t index, uint64_t size, sk_err_t *err)
    SK_WUR;
/* Proof that the first `from` leaves are a prefix of the first `to`;
 * 0 < from <= to <= size (from == to gives an empty proof). */
int sk_merkle_tree_consistency(sk_merkle_proof_t *proof,
    const sk_merkle_tree_t *t, uint64_t from, uint64_t to, sk_err_t *err)
    SK_WUR;

/* RFC 9162 2.1.3.2: -1 with SK_ERR_SIGNATURE if the proof does not lead
 * from leaf at index to root of a tree of size leaves. */
int sk_merkle_verify_inclusion(const sk_merkle_hash_t leaf, uint64_t index,
    uint64_t size, const sk_merkle_proof_t *proof,
    const sk_merkle_hash_t root, sk_err_t *err) SK_WUR;
/* RFC 9162 2.1.4.2; from == 0 or from == to need an empty proof (and, for
 * from == to, equal roots). */
int sk_merkle_verify_consistency(uint64_t from, uint64_t to,
    const sk_merkle_hash_t from_root, const sk_merkle_hash_t to_root,
    const sk_merkle_proof_t *proof, sk_err_t *err) SK_WUR;

/* Proofs as text: one standard-base64 hash per line (each ends in "\n"). */
int sk_merkle_proof_format(char **out, size_t *len,
    const sk_merkle_proof_t *proof, sk_err_t *err) SK_WUR;
int sk_merkle_proof_parse(sk_merkle_proof_t *proof, const char *buf,
    size_t len, sk_err_t *err) SK_WUR;

/* Checkpoints */

#define SK_CHECKPOINT_ORIGIN_MAX  256
#define SK_CHECKPOINT_EXT_MAX     1024
#define SK_CHECKPOINT_MAX         8192    /* bytes of a whole note */
#define SK_CHECKPOINT_KEYID_BYTES 4

typedef struct {
    char              origin[SK_CHECKPOINT_ORIGIN_MAX];
    uint64_t          size;
    sk_merkle_hash_t  root;
    /* Extension lines, each ending in "\n", or "" (none). */
    char              ext[SK_CHECKPOINT_EXT_MAX];
} sk_checkpoint_t;

/* Signed-note key id of an Ed25519 key under name (SK_ERR_USAGE if the key
 * is not Ed25519 or the name is not a valid key name). */
int sk_checkpoint_key_id(unsigned char out[SK_CHECKPOINT_KEYID_BYTES],
    const char *keyname, const sk_key_t *key, sk_err_t *err) SK_WUR;

/* The signed note, malloc()ed and NUL-terminated; key must be a private
 * Ed25519 key. */
int sk_checkpoint_format(char **out, size_t *len, const sk_checkpoint_t *cp,
    const char *keyname, const sk_key_t *key, sk_err_t *err) SK_WUR;

/* Strict parse of a whole note with at least one well-formed signature
 * line; signatures are not checked.  SK_ERR_FORMAT naming the line. */
int sk_checkpoint_parse(sk_checkpoint_t *cp, const char *buf, size_t len,
    sk_err_t *err) SK_WUR;

/* Parse and require a valid signature by key under keyname (signatures by
 * other keys are ignored); SK_ERR_SIGNATURE if there is none or it is bad. */
int sk_checkpoint_verify(sk_checkpoint_t *cp, const char *buf, size_t len,
    const char *keyname, const sk_key_t *key, sk_err_t *err) SK_WUR;

#endif
