/*
 * sk/map.h -- a timeline's verifiable map: from a name key (SHA-256 of
 * the name) to the name's whole history in that timeline, committed
 * inside the log by Map-Root entries (docs/protocol.md, "The name map").
 *
 * The map is a compressed sparse Merkle tree over the 2^256 name keys:
 * a subtree with no key hashes to 32 zero bytes, a subtree with exactly
 * one key to that key's leaf hash (wherever it sits), any other to the
 * node hash of its two halves.  A subtree's hash depends only on the keys
 * and values in it, never on the order they came in, so a mirror that
 * replays the log gets the timeline's root byte for byte.
 *
 *   value  = SHA-256(0x12 | be64(count) | be64(newest SN) | chain)
 *   chain  = SHA-256(0x13 | chain' | leaf)   over the name's entries in
 *            SN order, from 32 zero bytes; leaf = SHA-256(0x00 | entry),
 *            the entry's RFC 6962 leaf hash
 *   leaf   = SHA-256(0x10 | key | value)
 *   node   = SHA-256(0x11 | left | right)
 *
 * A proof for key k walks from the root along k's bits (most significant
 * bit of byte 0 first) while the subtree holds two keys or more, noting
 * each sibling, and ends at a subtree with no key (k is absent) or one
 * key: k itself (present, with its value) or another key sharing those
 * first depth bits (k is absent).
 *
 * The store keeps the map in two tables of an sk_db environment, shared
 * by any number of maps (each a "space": sk-mirror one per timeline).
 * RAM does not grow with the number of names; the page cache holds what
 * is read.
 */
#ifndef SK_MAP_H
#define SK_MAP_H

#include <stddef.h>
#include <stdint.h>
#include "db.h"
#include "err.h"
#include "merkle.h"

#define SK_MAP_KEY_BYTES  32
#define SK_MAP_DEPTH_MAX  256

typedef struct {
    uint64_t          count;        /* entries concerning the name */
    uint64_t          newest_sn;    /* SN of the newest (count > 0) */
    sk_merkle_hash_t  chain;        /* hash chain over their leaf hashes */
} sk_map_value_t;

/* Hashing: the one definition every side uses. */
int sk_map_key(unsigned char key[SK_MAP_KEY_BYTES], const char *name,
    sk_err_t *err) SK_WUR;          /* SK_ERR_FORMAT: not a valid name */
void sk_map_value_init(sk_map_value_t *v);          /* count 0, chain 0s */
/* One more entry of the name: SN sn (above newest_sn), leaf hash leaf. */
void sk_map_value_add(sk_map_value_t *v, uint64_t sn,
    const sk_merkle_hash_t leaf);
void sk_map_value_hash(sk_merkle_hash_t out, const sk_map_value_t *v);
void sk_map_leaf_hash(sk_merkle_hash_t out,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_merkle_hash_t value);
void sk_map_node_hash(sk_merkle_hash_t out, const sk_merkle_hash_t left,
    const sk_merkle_hash_t right);

/* The root of a map given whole: n keys in ascending byte order, none
 * twice, with their value hashes (evidence checks, tests).  SK_ERR_USAGE
 * if keys are out of order. */
int sk_map_root_sorted(sk_merkle_hash_t root,
    const unsigned char (*keys)[SK_MAP_KEY_BYTES],
    const sk_merkle_hash_t *values, size_t n, sk_err_t *err) SK_WUR;

/* Proofs */

typedef enum {
    SK_MAP_END_EMPTY = 0,           /* the walk ends at an empty subtree */
    SK_MAP_END_LEAF                 /* ... at a subtree of one key */
} sk_map_end_t;

typedef struct {
    unsigned          depth;        /* 0..256: siblings on the walk */
    /* Bit i (byte i/8, most significant first): the sibling at depth
     * i + 1 is not empty; its hash is the next in siblings[]. */
    unsigned char     bitmap[SK_MAP_DEPTH_MAX / 8];
    unsigned          nsiblings;    /* bits set in bitmap */
    sk_merkle_hash_t  siblings[SK_MAP_DEPTH_MAX];   /* top down */
    sk_map_end_t      end;
    unsigned char     leaf_key[SK_MAP_KEY_BYTES];   /* SK_MAP_END_LEAF */
    sk_merkle_hash_t  leaf_value;                   /* its value hash */
} sk_map_proof_t;

/* Text (docs/protocol.md, "Map proof"):
 *   Map-Proof: <depth> <bitmap hex or -> empty\n
 *   Map-Proof: <depth> <bitmap hex or -> leaf <key b64url> <value b64url>\n
 * then nsiblings lines, each a standard-base64 hash as in RFC 6962
 * proofs (sk_merkle_proof_format).  Strict: SK_ERR_FORMAT naming the
 * part.  *used: bytes the proof took from buf. */
int sk_map_proof_format(char **out, size_t *len, const sk_map_proof_t *p,
    sk_err_t *err) SK_WUR;
int sk_map_proof_parse(sk_map_proof_t *p, size_t *used, const char *buf,
    size_t len, sk_err_t *err) SK_WUR;

/* Check the proof for key against root.  0: *present says whether key is
 * in the map, and if so *value is its value hash; -1 SK_ERR_SIGNATURE
 * naming what fails (a leaf key off the walk's path, a root that
 * differs, a one-child node that should have been compressed). */
int sk_map_proof_verify(const sk_map_proof_t *p,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_merkle_hash_t root,
    int *present, sk_merkle_hash_t value, sk_err_t *err) SK_WUR;

/* The store */

typedef struct sk_map_s sk_map_t;

/* The map's tables ("map.leaf", "map.node") in db, created if absent
 * (open before any transaction begins, as sk_db_table asks). */
int sk_map_open(sk_map_t **m, sk_db_t *db, sk_err_t *err) SK_WUR;
void sk_map_close(sk_map_t *m);                     /* NULL ok */
/* The same map, staged: its puts are held in memory, not written to
 * their transaction, and every read of it, in any transaction, sees them
 * over what is stored, until sk_map_write puts them into a write
 * transaction and sk_map_unstage, once that committed, lets them go (or
 * drops them unwritten).  For one writer that takes a root often and
 * commits seldom: a row put by many batches is written once.  Not for
 * concurrent use. */
int sk_map_open_staged(sk_map_t **m, sk_db_t *db, sk_err_t *err) SK_WUR;
int sk_map_write(sk_db_txn_t *txn, sk_map_t *m, sk_err_t *err) SK_WUR;
void sk_map_unstage(sk_map_t *m);
/* Rows held (0 unstaged): what a commit would write, about the memory. */
size_t sk_map_staged(const sk_map_t *m);

/* 0 and *v, 1 if key is not in space's map, -1.  Unchecked: for a value
 * that decides anything, use sk_map_get_proven. */
int sk_map_get(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], sk_map_value_t *v,
    sk_err_t *err) SK_WUR;
/* Insert or replace key's value (write txn).  Puts may be folded into
 * the tree lazily: sk_map_root and sk_map_prove see every put before
 * them in the same transaction. */
int sk_map_put(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_map_value_t *v,
    sk_err_t *err) SK_WUR;
/* The root and the number of keys. */
int sk_map_root(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    sk_merkle_hash_t root, uint64_t *names, sk_err_t *err) SK_WUR;
int sk_map_prove(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], sk_map_proof_t *p,
    sk_err_t *err) SK_WUR;
/* Read key's value through the stored tree, hash-linked to root (the
 * last signed map root): 0 and *v, 1 if absent, -1 with SK_ERR_FORMAT
 * naming the table and row when the stored rows do not lead to root
 * (damage: the caller rebuilds from the log and acts on nothing read). */
int sk_map_get_proven(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_merkle_hash_t root,
    sk_map_value_t *v, sk_err_t *err) SK_WUR;
/* sk_map_get_proven and, from the same descent, key's proof (*p, what
 * sk_map_prove gives) whatever it returns but -1: one walk where an
 * answer needs both. */
int sk_map_get_proof(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_merkle_hash_t root,
    sk_map_value_t *v, sk_map_proof_t *p, sk_err_t *err) SK_WUR;
/* Drop space's map (to rebuild it from the log); staged, every staged
 * row too. */
int sk_map_clear(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    sk_err_t *err) SK_WUR;

#endif
