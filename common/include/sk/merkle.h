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
 * An sk_merkle_tree_t from sk_merkle_tree_new keeps every complete subtree
 * hash in RAM (about 2n hashes), so appends are amortised O(1) and roots
 * and proofs for any earlier size O(log n).  One opened with
 * sk_merkle_tree_open_tiles keeps the same hashes on disk as C2SP
 * tlog-tiles (c2sp.org/tlog-tiles) and in RAM only its right edge and a
 * few tiles; both answer the same calls.  Reads (roots, proofs, leaves)
 * of a tree kept in tiles may run on several threads at once (its tile
 * cache has a lock of its own); an append must run alone, and so must
 * every call on a tree kept in memory.
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
/* SHA-256 of buf[0..len), called directly: SHA256() in OpenSSL 3 looks
 * the algorithm up and allocates a context every call, EVP dispatches
 * through the provider (map.c and sk-mirror's index hash with it too). */
void sk_merkle_digest(sk_merkle_hash_t out, const void *buf, size_t len);

int sk_merkle_tree_new(sk_merkle_tree_t **t, sk_err_t *err) SK_WUR;
void sk_merkle_tree_free(sk_merkle_tree_t *t);          /* NULL ok */
uint64_t sk_merkle_tree_size(const sk_merkle_tree_t *t);
/* Append one leaf hash (already sk_merkle_leaf_hash()ed). */
int sk_merkle_tree_append(sk_merkle_tree_t *t, const sk_merkle_hash_t leaf,
    sk_err_t *err) SK_WUR;
/* Leaf hash at index (borrowed); NULL if index >= size or the tree is
 * kept in tiles (use sk_merkle_tree_leaf_get there). */
const unsigned char *sk_merkle_tree_leaf(const sk_merkle_tree_t *t,
    uint64_t index);
/* Leaf hash at index, copied, from either kind of tree. */
int sk_merkle_tree_leaf_get(sk_merkle_hash_t out, const sk_merkle_tree_t *t,
    uint64_t index, sk_err_t *err) SK_WUR;
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

/* Tiles (c2sp.org/tlog-tiles): tile L/N holds the hashes at tree level
 * 8L, N * 256 onwards, 32 bytes each, 256 of them when full; a partial
 * tile of width W (1..255) holds the first W.  Its path is
 * tile/<L>/<N>[.p/<W>], N written in 3-digit elements, all but the last
 * prefixed with "x" (1234067 is x001/x234/067); entry bundles are
 * tile/entries/<N>[.p/<W>]. */
#define SK_TILE_HEIGHT   8
#define SK_TILE_WIDTH    256
#define SK_TILE_BYTES    (SK_TILE_WIDTH * SK_MERKLE_HASH_BYTES)
#define SK_TILE_LEVELS   8          /* 64 tree levels / 8 */
#define SK_TILE_ENTRIES  (-1)       /* the level of entry bundles */
#define SK_TILE_PATH_MAX 96
/* The longest entry a bundle can carry: its length is a big-endian
 * uint16.  A timeline stamps nothing longer (413). */
#define SK_TILE_ENTRY_MAX 65535

/* Leaf hash of entry index, from the log the tree is built over; the
 * tree calls it to recompute its right edge and tiles that are missing or
 * damaged. */
typedef int (*sk_merkle_leaf_fn)(sk_merkle_hash_t out, uint64_t index,
    void *arg, sk_err_t *err);

typedef enum {
    SK_TILES_OPEN,      /* trust full tiles below size (checked as read) */
    SK_TILES_REBUILD,   /* rewrite every tile from the leaves */
    SK_TILES_CHECK      /* read only: every tile below size must equal the
                           one the leaves give (SK_ERR_FORMAT naming it) */
} sk_tiles_how_t;

/* A tree of size leaves whose tiles live under dir (created if missing,
 * but for SK_TILES_CHECK).  Tiles at or past size are ignored and written
 * anew as the tree grows; a full tile is written (temp file, fsync,
 * rename) when it fills (a failed write is only noted, see
 * sk_merkle_tree_tiles_rebuilt), partial tiles are never written: reopening
 * recomputes the right edge, at most 255 hashes a level, from leaf() and
 * the full tiles.  A full tile found missing or damaged when read is
 * rebuilt from leaf() and must then hash to its parent, or the call fails
 * (SK_ERR_FORMAT).  The caller checks the root against what it signed;
 * a mismatch means a tile was damaged in a way only SK_TILES_REBUILD
 * (or the log's own damage) explains.  leaf and arg are kept. */
int sk_merkle_tree_open_tiles(sk_merkle_tree_t **t, const char *dir,
    uint64_t size, sk_tiles_how_t how, sk_merkle_leaf_fn leaf, void *arg,
    sk_err_t *err) SK_WUR;

/* Tiles found missing or damaged and rebuilt, or that could not be
 * written (a full disk: the tree goes on, and rebuilds such a tile from
 * leaf() when it reads it), since the tree was opened; *last names the
 * last one ("" if none or not a tiled tree).  A caller logs when it grows. */
unsigned long sk_merkle_tree_tiles_rebuilt(const sk_merkle_tree_t *t,
    const char **last);

/* Tile level/n of width 1..256 as it is in the tree's first size leaves
 * (size <= tree size): width * 32 bytes into out (SK_TILE_BYTES room).
 * SK_ERR_NOT_FOUND if that tree has fewer hashes there. */
int sk_merkle_tree_tile(unsigned char *out, size_t *len,
    const sk_merkle_tree_t *t, unsigned level, uint64_t n, unsigned width,
    uint64_t size, sk_err_t *err) SK_WUR;

/* The path of a tile below "tile/" ("0/x001/234", "entries/005.p/7");
 * level SK_TILE_ENTRIES for a bundle, width 256 for a full tile. */
void sk_tile_path(char out[SK_TILE_PATH_MAX], int level, uint64_t n,
    unsigned width);
/* Strict parse of such a path (no leading "tile/"): only the canonical
 * spelling, level 0..63 or "entries", width 1..255 after ".p/" (256 is
 * returned for a full tile); SK_ERR_FORMAT otherwise. */
int sk_tile_path_parse(int *level, uint64_t *n, unsigned *width,
    const char *path, sk_err_t *err) SK_WUR;

/* RFC 9162 2.1.3.2: the root the proof leads to from leaf at index in a
 * tree of size leaves; -1 with SK_ERR_SIGNATURE if it is too long or too
 * short for them. */
int sk_merkle_inclusion_root(sk_merkle_hash_t root,
    const sk_merkle_hash_t leaf, uint64_t index, uint64_t size,
    const sk_merkle_proof_t *proof, sk_err_t *err) SK_WUR;
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

/* The first "Timestamp <t>" extension line of a checkpoint (sk-timeline
 * writes one), or 0 without one. */
int64_t sk_checkpoint_timestamp(const sk_checkpoint_t *cp);

#endif
