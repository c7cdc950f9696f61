/*
 * merkle_int.h -- the tree's layout, shared by merkle.c (trees, proofs)
 * and merkle_tiles.c (the same tree kept on disk as C2SP tlog-tiles),
 * both over merkle_hash.c.  Layers, top down: merkle.c -> merkle_tiles.c
 * -> merkle_hash.c; a tree with tiles is opened by merkle.c, which hands
 * merkle_tiles.c its leaves.  Not part of the public API.
 */
#ifndef SK_MERKLE_INT_H
#define SK_MERKLE_INT_H

#include <sk/merkle.h>

#define SK_MERKLE_LEVELS        64
#define SK_B64STD_HASH_LEN      44      /* 32 bytes, padded */

/* Complete subtrees of 2^k leaves, left to right (in-memory trees). */
typedef struct {
    sk_merkle_hash_t  *hash;
    uint64_t           n;
    uint64_t           cap;
} sk_merkle_level_t;

typedef struct sk_merkle_tiles_s sk_merkle_tiles_t;

struct sk_merkle_tree_s {
    uint64_t            size;
    sk_merkle_level_t   level[SK_MERKLE_LEVELS];   /* unused with tiles */
    sk_merkle_tiles_t  *tiles;                     /* NULL: in memory */
};

/* merkle_hash.c: SHA-256 of buf[0..len), through a digest fetched once
 * (map.c hashes with it too). */
void sk_merkle_digest(sk_merkle_hash_t out, const void *buf, size_t len);
/* merkle.c: a hash in standard base64 with padding, as proof lines are
 * (SK_B64STD_HASH_LEN characters and a NUL), and its strict decoding
 * (SK_ERR_FORMAT naming what). */
void sk_b64std_hash(char out[SK_B64STD_HASH_LEN + 1],
    const sk_merkle_hash_t h);
int sk_b64std_decode_hash(sk_merkle_hash_t out, const char *in, size_t len,
    const char *what, sk_err_t *err);

/* merkle_tiles.c: the hash of the complete subtree idx at tree level lg
 * (2^lg leaves from idx << lg), idx << lg + 2^lg <= t->size. */
int sk_merkle_tiles_node(sk_merkle_hash_t out, const sk_merkle_tree_t *t,
    unsigned lg, uint64_t idx, sk_err_t *err) SK_WUR;
/* merkle_tiles.c: take leaf as leaf t->size (the caller then counts it);
 * full tiles are on disk before this returns. */
int sk_merkle_tiles_append(sk_merkle_tree_t *t, const sk_merkle_hash_t leaf,
    sk_err_t *err) SK_WUR;
void sk_merkle_tiles_free(sk_merkle_tiles_t *tiles);
/* merkle_tiles.c: give the new tree t its tiles in dir (made unless how
 * is SK_TILES_CHECK); leaf(arg) gives a leaf hash back from the log. */
int sk_merkle_tiles_open(sk_merkle_tree_t *t, const char *dir,
    sk_tiles_how_t how, sk_merkle_leaf_fn leaf, void *arg, sk_err_t *err)
    SK_WUR;
/* merkle_tiles.c: the right edge of a tree of size leaves whose full tiles
 * are on disk (SK_TILES_OPEN). */
int sk_merkle_tiles_edge(sk_merkle_tree_t *t, uint64_t size, sk_err_t *err)
    SK_WUR;
/* merkle_tiles.c: after every leaf was appended (SK_TILES_REBUILD): the
 * tiles synced, then read like opened ones. */
int sk_merkle_tiles_rebuilt(sk_merkle_tree_t *t, sk_err_t *err) SK_WUR;

#endif
