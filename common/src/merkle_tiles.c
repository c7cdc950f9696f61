/*
 * merkle_tiles.c -- the Merkle tree kept on disk as C2SP tlog-tiles.
 *
 * Tile level L holds the hashes at tree level 8L, 256 to a file.  In RAM
 * are only the right edge (the hashes of each level not yet in a full
 * tile: at most 255 a level, 64 KiB in all, and the inner nodes of the
 * complete subtrees among them, as much again) and a few cached tiles
 * with their inner nodes; every other node hash is one tile read away.
 *
 * Trust: a full tile read from disk is checked against its parent hash
 * (the parent tile, itself checked, or the right edge) before use, so a
 * damaged tile is found when read and rebuilt from the leaves, never used.
 * The right edge is recomputed at open from the leaves (level 0) and the
 * full tiles below it; the caller checks the root against the head it
 * signed, which covers those.
 */
#define _GNU_SOURCE             /* syncfs */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sk/file.h"
#include "merkle_int.h"

/* Tiles kept, 16 KiB each, direct-mapped by level: every proof needs a
 * tile of each level, and a level-0 load must not push out the upper
 * tiles (2M leaves: 31 at level 1, a proof hashing 255 nodes to reload
 * one).  Slots are touched only when used. */
#define SK_TILES_CACHE0  64         /* level 0 */
#define SK_TILES_CACHE1  128        /* level 1: every one up to 32M leaves */
#define SK_TILES_CACHE2  32         /* levels 2 to 7 */
#define SK_TILES_CACHE   (SK_TILES_CACHE0 + SK_TILES_CACHE1 + SK_TILES_CACHE2)

/* A tile's inner nodes: height r (1..8) above its hashes, index j
 * (j < 256 >> r), at SK_TILES_INNER(r) + j; height 8 is its root. */
#define SK_TILES_INNER(r)  (SK_TILE_WIDTH - (2 * SK_TILE_WIDTH >> (r)))

typedef struct {
    int               used;
    unsigned          level;
    uint64_t          n;
    unsigned char     hash[SK_TILE_BYTES];
    /* Kept with the tile: a proof needs nodes inside tiles, and the
     * tile is hashed whole when loaded anyway (to check it). */
    unsigned char     inner[SK_TILE_WIDTH - 1][SK_MERKLE_HASH_BYTES];
} sk_tiles_slot_t;

struct sk_merkle_tiles_s {
    /* Proofs are read by several threads at once (sk-mirror answers
     * queries in parallel): the cache slots, the edge and the counters
     * below change only under it. */
    pthread_mutex_t    lock;
    char              *dir;
    sk_tiles_how_t     how;
    sk_merkle_leaf_fn  leaf;
    void              *arg;
    /* edge[L]: hashes at tree level 8L past the last full tile L/N;
     * their number is (size >> 8L) % 256. */
    unsigned char      edge[SK_TILE_LEVELS][SK_TILE_BYTES];
    /* edge_inner[L]: the inner nodes (as in a slot) of the complete
     * subtrees among edge[L]'s hashes, each hashed once when its last
     * hash comes: a proof reads them instead of recomputing up to 127
     * node hashes per edge node, and a tile's root is there when it
     * fills. */
    unsigned char      edge_inner[SK_TILE_LEVELS][SK_TILE_WIDTH - 1]
                                 [SK_MERKLE_HASH_BYTES];
    sk_tiles_slot_t    cache[SK_TILES_CACHE];
    unsigned long      rebuilt;     /* tiles found bad and rebuilt, or
                                       not written */
    char               note[SK_ERR_MSG_MAX];    /* the last one */
};


static void
sk_tiles_note(sk_merkle_tiles_t *tt, const char *why)
{
    tt->rebuilt++;
    snprintf(tt->note, sizeof(tt->note), "%.200s", why);
}


unsigned long
sk_merkle_tree_tiles_rebuilt(const sk_merkle_tree_t *t, const char **last)
{
    *last = t->tiles != NULL ? t->tiles->note : "";
    return t->tiles != NULL ? t->tiles->rebuilt : 0;
}


/* A rebuild writes many tiles: each goes in place by rename without its
 * own fsync, and one syncfs() at the end makes them all durable.  A tile
 * a crash cuts short in between is found (size, parent hash) and rebuilt
 * when next read. */
static int
sk_tiles_write_fast(const char *path, const unsigned char *bytes,
    sk_err_t *err)
{
    char  tmp[4096 + 8];
    int   fd;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
        0644);
    if (fd < 0) {
        return sk_err_sys(err, "%s: create", tmp);
    }
    if (sk_file_write_all(fd, bytes, SK_TILE_BYTES) != 0) {
        sk_err_sys(err, "%s: write", tmp);
        close(fd);
        unlink(tmp);
        return -1;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        sk_err_sys(err, "%s: write", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}


/* The root of the complete subtree over count (a power of 2) hashes. */
static void
sk_tiles_subtree(sk_merkle_hash_t out, const unsigned char *h,
    unsigned count)
{
    sk_merkle_hash_t  l, r;

    if (count == 1) {
        memcpy(out, h, SK_MERKLE_HASH_BYTES);
        return;
    }
    sk_tiles_subtree(l, h, count / 2);
    sk_tiles_subtree(r, h + (size_t) count / 2 * SK_MERKLE_HASH_BYTES,
        count / 2);
    sk_merkle_node_hash(out, l, r);
}


/* Every inner node of a full tile, bottom up (255 node hashes). */
static void
sk_tiles_inner(unsigned char inner[][SK_MERKLE_HASH_BYTES],
    const unsigned char *tile)
{
    const unsigned char  *below;
    unsigned              r, j;

    for (r = 1; r <= SK_TILE_HEIGHT; r++) {
        for (j = 0; j < (unsigned) SK_TILE_WIDTH >> r; j++) {
            below = r == 1 ? tile + (size_t) 2 * j * SK_MERKLE_HASH_BYTES
                           : inner[SK_TILES_INNER(r - 1) + 2 * j];
            sk_merkle_node_hash(inner[SK_TILES_INNER(r) + j], below,
                below + SK_MERKLE_HASH_BYTES);
        }
    }
}


/* Hash h goes to edge[level] at w, and every subtree of the edge it
 * completes to edge_inner[level] (one node hash per subtree). */
static void
sk_tiles_edge_put(sk_merkle_tiles_t *tt, unsigned level, unsigned w,
    const unsigned char *h)
{
    unsigned char  (*inner)[SK_MERKLE_HASH_BYTES] = tt->edge_inner[level];
    const unsigned char  *below;
    unsigned              r, j;

    memcpy(tt->edge[level] + (size_t) w * SK_MERKLE_HASH_BYTES, h,
        SK_MERKLE_HASH_BYTES);
    for (r = 1; r <= SK_TILE_HEIGHT && ((w + 1) & ((1u << r) - 1)) == 0;
         r++)
    {
        j = w >> r;
        below = r == 1 ? tt->edge[level] + (size_t) 2 * j
                         * SK_MERKLE_HASH_BYTES
                       : inner[SK_TILES_INNER(r - 1) + 2 * j];
        sk_merkle_node_hash(inner[SK_TILES_INNER(r) + j], below,
            below + SK_MERKLE_HASH_BYTES);
    }
}


static void
sk_tiles_file(char *out, size_t len, const sk_merkle_tiles_t *tt,
    unsigned level, uint64_t n)
{
    char  rel[SK_TILE_PATH_MAX];

    sk_tile_path(rel, (int) level, n, SK_TILE_WIDTH);
    snprintf(out, len, "%s/%s", tt->dir, rel);
}


/* mkdir -p of the directories above path (below tt->dir). */
static int
sk_tiles_mkdirs(const sk_merkle_tiles_t *tt, char *path, sk_err_t *err)
{
    char  *p;

    for (p = path + strlen(tt->dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            sk_err_sys(err, "%s: mkdir", path);
            *p = '/';
            return -1;
        }
        *p = '/';
    }
    return 0;
}


/* A full tile's bytes from disk: 0, 1 if missing or not 8 KiB (named in
 * why), -1 on a read error. */
static int
sk_tiles_read(unsigned char *out, const sk_merkle_tiles_t *tt,
    unsigned level, uint64_t n, char *why, size_t whylen, sk_err_t *err)
{
    char           path[4096];
    unsigned char  buf[SK_TILE_BYTES + 1];
    ssize_t        got;
    int            fd;

    sk_tiles_file(path, sizeof(path), tt, level, n);
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            snprintf(why, whylen, "%s: missing", path);
            return 1;
        }
        return sk_err_sys(err, "%s: open", path);
    }
    /* One byte more than a tile, in one read, tells a long file from a
     * whole one (a proof loads a tile per answer: each call counts). */
    got = pread(fd, buf, sizeof(buf), 0);
    close(fd);
    if (got < 0) {
        return sk_err_sys(err, "%s: read", path);
    }
    if (got == SK_TILE_BYTES) {
        memcpy(out, buf, SK_TILE_BYTES);
    }
    if (got != SK_TILE_BYTES) {
        snprintf(why, whylen, "%s: %s, not %d bytes", path,
            got > SK_TILE_BYTES ? "longer" : "shorter", SK_TILE_BYTES);
        return 1;
    }
    return 0;
}


/* Tile level/n goes to disk as bytes: written atomically, or (CHECK)
 * compared with what is there. */
static int
sk_tiles_put(sk_merkle_tiles_t *tt, unsigned level, uint64_t n,
    const unsigned char *bytes, sk_err_t *err)
{
    unsigned char  old[SK_TILE_BYTES];
    char           path[4096], why[4096 + 64];
    int            rc;

    if (tt->how == SK_TILES_CHECK) {
        rc = sk_tiles_read(old, tt, level, n, why, sizeof(why), err);
        if (rc < 0) {
            return -1;
        }
        if (rc > 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s", why);
        }
        if (memcmp(old, bytes, SK_TILE_BYTES) != 0) {
            sk_tiles_file(path, sizeof(path), tt, level, n);
            return sk_err_set(err, SK_ERR_FORMAT, "%s: not the hashes the "
                "log's entries give", path);
        }
        return 0;
    }
    sk_tiles_file(path, sizeof(path), tt, level, n);
    if (sk_tiles_mkdirs(tt, path, err) != 0) {
        return -1;
    }
    return tt->how == SK_TILES_REBUILD ? sk_tiles_write_fast(path, bytes, err)
        : sk_file_write_atomic(path, bytes, SK_TILE_BYTES, 0644, err);
}


/* A tile the tree holds goes to disk; a failed write (a full disk) is
 * noted, not an error: the tree goes on, and the tile, missing or cut, is
 * rebuilt from the leaves and checked against its parent when next read.
 * Only CHECK's comparison fails the call. */
static int
sk_tiles_store(sk_merkle_tiles_t *tt, unsigned level, uint64_t n,
    const unsigned char *bytes, sk_err_t *err)
{
    sk_err_t  why;
    char      note[SK_ERR_MSG_MAX + 64];

    if (tt->how == SK_TILES_CHECK) {
        return sk_tiles_put(tt, level, n, bytes, err);
    }
    if (sk_tiles_put(tt, level, n, bytes, &why) != 0) {
        snprintf(note, sizeof(note), "%.200s (rebuilt when read)", why.msg);
        sk_tiles_note(tt, note);
    }
    return 0;
}


static sk_tiles_slot_t *
sk_tiles_slot(sk_merkle_tiles_t *tt, unsigned level, uint64_t n)
{
    if (level == 0) {
        return &tt->cache[n % SK_TILES_CACHE0];
    }
    if (level == 1) {
        return &tt->cache[SK_TILES_CACHE0 + n % SK_TILES_CACHE1];
    }
    return &tt->cache[SK_TILES_CACHE0 + SK_TILES_CACHE1
                      + (n * 8 + level) % SK_TILES_CACHE2];
}


/* Tile level/n's cache slot if it holds that tile, else NULL. */
static sk_tiles_slot_t *
sk_tiles_cached(sk_merkle_tiles_t *tt, unsigned level, uint64_t n)
{
    sk_tiles_slot_t  *s = sk_tiles_slot(tt, level, n);

    return s->used && s->level == level && s->n == n ? s : NULL;
}


/* Tile level/n computed from the leaves: level 0 from leaf(), higher
 * levels from the tiles below, themselves computed. */
static int
sk_tiles_build(unsigned char *out, sk_merkle_tiles_t *tt, unsigned level,
    uint64_t n, sk_err_t *err)
{
    unsigned char  *below;
    unsigned        k;
    int             rc = 0;

    if (level == 0) {
        for (k = 0; k < SK_TILE_WIDTH; k++) {
            if (tt->leaf(out + (size_t) k * SK_MERKLE_HASH_BYTES,
                    n * SK_TILE_WIDTH + k, tt->arg, err) != 0)
            {
                return -1;
            }
        }
        return 0;
    }
    below = malloc(SK_TILE_BYTES);
    if (below == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "merkle tile");
    }
    for (k = 0; rc == 0 && k < SK_TILE_WIDTH; k++) {
        rc = sk_tiles_build(below, tt, level - 1, n * SK_TILE_WIDTH + k, err);
        if (rc == 0) {
            sk_tiles_subtree(out + (size_t) k * SK_MERKLE_HASH_BYTES, below,
                SK_TILE_WIDTH);
        }
    }
    free(below);
    return rc;
}


static int sk_tiles_load(const unsigned char **out, const sk_merkle_tree_t *t,
    unsigned level, uint64_t n, sk_err_t *err);


/* v >> bits for bits up to 64: the top tile level's "tiles above it"
 * shift by 64, which C leaves undefined. */
static uint64_t
sk_tiles_shr(uint64_t v, unsigned bits)
{
    return bits >= 64 ? 0 : v >> bits;
}


/* The hash at tree level 8L, index i, in tile level L: i < size >> 8L. */
static int
sk_tiles_hash(const unsigned char **out, const sk_merkle_tree_t *t,
    unsigned level, uint64_t i, sk_err_t *err)
{
    const unsigned char  *tile;
    uint64_t              full = sk_tiles_shr(t->size,
                              SK_TILE_HEIGHT * (level + 1));

    if (i / SK_TILE_WIDTH >= full) {
        *out = t->tiles->edge[level]
            + (size_t) (i % SK_TILE_WIDTH) * SK_MERKLE_HASH_BYTES;
        return 0;
    }
    if (sk_tiles_load(&tile, t, level, i / SK_TILE_WIDTH, err) != 0) {
        return -1;
    }
    *out = tile + (size_t) (i % SK_TILE_WIDTH) * SK_MERKLE_HASH_BYTES;
    return 0;
}


/* A tile found damaged (why says how): refused when only checking,
 * otherwise noted and built again from the log. */
static int
sk_tiles_mend(unsigned char *tile, sk_merkle_tiles_t *tt, unsigned level,
    uint64_t n, char *why, sk_err_t *err)
{
    if (tt->how == SK_TILES_CHECK) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s", why);
    }
    strcat(why, "; rebuilt it from the log");
    sk_tiles_note(tt, why);
    return sk_tiles_build(tile, tt, level, n, err);
}


/* Full tile level/n read from disk and checked against want, its parent
 * hash, with its inner nodes: 0, 1 if missing, not 8 KiB or not hashing
 * to want (named in why), -1 on a read error.  It changes nothing shared:
 * proofs run it without the lock. */
static int
sk_tiles_fetch(unsigned char *tile, unsigned char inner[][SK_MERKLE_HASH_BYTES],
    const sk_merkle_tiles_t *tt, unsigned level, uint64_t n,
    const sk_merkle_hash_t want, char *why, size_t whylen, sk_err_t *err)
{
    int  rc = sk_tiles_read(tile, tt, level, n, why, whylen, err);

    if (rc == 0) {
        sk_tiles_inner(inner, tile);
        if (memcmp(inner[SK_TILES_INNER(SK_TILE_HEIGHT)], want,
                SK_MERKLE_HASH_BYTES) != 0)
        {
            sk_tiles_file(why, whylen, tt, level, n);
            strcat(why, ": does not hash to its parent");
            rc = 1;
        }
    }
    return rc;
}


/* Tile level/n, checked, into its cache slot. */
static sk_tiles_slot_t *
sk_tiles_keep(sk_merkle_tiles_t *tt, unsigned level, uint64_t n,
    const unsigned char *tile,
    const unsigned char inner[][SK_MERKLE_HASH_BYTES])
{
    sk_tiles_slot_t  *s = sk_tiles_slot(tt, level, n);

    memcpy(s->hash, tile, sizeof(s->hash));
    memcpy(s->inner, inner, sizeof(s->inner));
    s->used = 1;
    s->level = level;
    s->n = n;
    return s;
}


/* Full tile level/n (n < size >> 8(L+1)), checked against its parent
 * hash; one found missing or damaged is rebuilt and written again. */
static int
sk_tiles_load(const unsigned char **out, const sk_merkle_tree_t *t,
    unsigned level, uint64_t n, sk_err_t *err)
{
    sk_merkle_tiles_t    *tt = t->tiles;
    sk_tiles_slot_t      *s = sk_tiles_cached(tt, level, n);
    const unsigned char  *parent;
    unsigned char         tile[SK_TILE_BYTES];
    unsigned char         inner[SK_TILE_WIDTH - 1][SK_MERKLE_HASH_BYTES];
    sk_merkle_hash_t      want;
    char                  why[4096 + 64];
    int                   rc;

    if (s != NULL) {
        *out = s->hash;
        return 0;
    }
    /* The parent first: loading it may reuse this tile's slot. */
    if (sk_tiles_hash(&parent, t, level + 1, n, err) != 0) {
        return -1;
    }
    memcpy(want, parent, sizeof(want));
    rc = sk_tiles_fetch(tile, inner, tt, level, n, want, why, sizeof(why),
        err);
    if (rc < 0) {
        return -1;
    }
    if (rc > 0) {
        if (sk_tiles_mend(tile, tt, level, n, why, err) != 0) {
            return -1;
        }
        sk_tiles_inner(inner, tile);
        if (memcmp(inner[SK_TILES_INNER(SK_TILE_HEIGHT)], want, sizeof(want))
            != 0)
        {
            sk_tiles_file(why, sizeof(why), tt, level, n);
            return sk_err_set(err, SK_ERR_FORMAT, "%s: rebuilt from the "
                "log, it still does not hash to its parent: the log and the "
                "tree disagree", why);
        }
        if (sk_tiles_store(tt, level, n, tile, err) != 0) {
            return -1;
        }
    }
    *out = sk_tiles_keep(tt, level, n, tile, inner)->hash;
    return 0;
}


static int
sk_tiles_node(sk_merkle_hash_t out, const sk_merkle_tree_t *t,
    unsigned lg, uint64_t idx, sk_err_t *err)
{
    const unsigned char  *first;
    sk_tiles_slot_t      *s;
    unsigned              level = lg / SK_TILE_HEIGHT, r = lg % SK_TILE_HEIGHT;
    uint64_t              i = idx << r;

    /* The 2^r hashes below it share one tile (r < 8).  In a full tile it
     * is one of the inner nodes kept with it. */
    if (sk_tiles_hash(&first, t, level, i, err) != 0) {
        return -1;
    }
    if (r > 0 && first >= t->tiles->edge[level]
        && first < t->tiles->edge[level] + SK_TILE_BYTES)
    {
        memcpy(out, t->tiles->edge_inner[level][SK_TILES_INNER(r)
            + (i % SK_TILE_WIDTH >> r)], SK_MERKLE_HASH_BYTES);
        return 0;
    }
    if (r > 0
        && (s = sk_tiles_cached(t->tiles, level, i / SK_TILE_WIDTH)) != NULL
        && first >= s->hash && first < s->hash + SK_TILE_BYTES)
    {
        memcpy(out, s->inner[SK_TILES_INNER(r)
            + (i % SK_TILE_WIDTH >> r)], SK_MERKLE_HASH_BYTES);
        return 0;
    }
    sk_tiles_subtree(out, first, 1u << r);
    return 0;
}


/* Whether tile level/n is a full tile the cache does not hold. */
static int
sk_tiles_cold(const sk_merkle_tree_t *t, unsigned level, uint64_t n)
{
    return n < sk_tiles_shr(t->size, SK_TILE_HEIGHT * (level + 1))
        && sk_tiles_cached(t->tiles, level, n) == NULL;
}


int
sk_merkle_tiles_node(sk_merkle_hash_t out, const sk_merkle_tree_t *t,
    unsigned lg, uint64_t idx, sk_err_t *err)
{
    sk_merkle_tiles_t    *tt = t->tiles;
    unsigned              level = lg / SK_TILE_HEIGHT;
    uint64_t              n = (idx << lg % SK_TILE_HEIGHT) / SK_TILE_WIDTH;
    const unsigned char  *parent;
    unsigned char         tile[SK_TILE_BYTES];
    unsigned char         inner[SK_TILE_WIDTH - 1][SK_MERKLE_HASH_BYTES];
    sk_merkle_hash_t      want;
    char                  why[4096 + 64];
    int                   rc;

    pthread_mutex_lock(&tt->lock);
    if (!sk_tiles_cold(t, level, n)) {
        rc = sk_tiles_node(out, t, lg, idx, err);
        pthread_mutex_unlock(&tt->lock);
        return rc;
    }
    /* A tile not cached is read and hashed (255 node hashes) without the
     * lock, which the proofs of other threads need meanwhile; only its
     * parent hash is taken under it.  One found damaged is left to the
     * locked path, which names and rebuilds it. */
    rc = sk_tiles_hash(&parent, t, level + 1, n, err);
    if (rc == 0) {
        memcpy(want, parent, sizeof(want));
    }
    pthread_mutex_unlock(&tt->lock);
    if (rc != 0) {
        return -1;
    }
    rc = sk_tiles_fetch(tile, inner, tt, level, n, want, why, sizeof(why),
        err);
    if (rc < 0) {
        return -1;
    }
    pthread_mutex_lock(&tt->lock);
    if (rc == 0) {
        (void) sk_tiles_keep(tt, level, n, tile, inner);
    }
    rc = sk_tiles_node(out, t, lg, idx, err);
    pthread_mutex_unlock(&tt->lock);
    return rc;
}


static int
sk_tiles_append(sk_merkle_tree_t *t, const sk_merkle_hash_t leaf,
    sk_err_t *err)
{
    sk_merkle_tiles_t  *tt = t->tiles;
    sk_merkle_hash_t    h;
    uint64_t            count;
    unsigned            level, top, w;

    /* Write every tile this leaf fills, bottom up, before changing the
     * edge: a failed write leaves the tree as it was. */
    memcpy(h, leaf, sizeof(h));
    for (level = 0; level < SK_TILE_LEVELS; level++) {
        count = (t->size + 1) >> (SK_TILE_HEIGHT * level);
        w = (unsigned) ((count - 1) % SK_TILE_WIDTH);
        if (((t->size + 1) & ((UINT64_C(1) << (SK_TILE_HEIGHT * level)) - 1))
            != 0 || w != SK_TILE_WIDTH - 1)
        {
            break;
        }
        sk_tiles_edge_put(tt, level, w, h);
        if (sk_tiles_store(tt, level, count / SK_TILE_WIDTH - 1,
                tt->edge[level], err) != 0)
        {
            return -1;
        }
        memcpy(h, tt->edge_inner[level][SK_TILES_INNER(SK_TILE_HEIGHT)],
            sizeof(h));
    }
    top = level;
    if (top < SK_TILE_LEVELS) {
        count = (t->size + 1) >> (SK_TILE_HEIGHT * top);
        sk_tiles_edge_put(tt, top, (unsigned) ((count - 1) % SK_TILE_WIDTH),
            h);
    }
    /* The tiles written are on disk; drop stale copies of them. */
    for (level = 0; level < top; level++) {
        uint64_t          n = sk_tiles_shr(t->size + 1,
                                  SK_TILE_HEIGHT * (level + 1))
                              - 1;
        sk_tiles_slot_t  *s = sk_tiles_cached(tt, level, n);

        if (s != NULL) {
            s->used = 0;
        }
    }
    return 0;
}


int
sk_merkle_tiles_append(sk_merkle_tree_t *t, const sk_merkle_hash_t leaf,
    sk_err_t *err)
{
    int  rc;

    pthread_mutex_lock(&t->tiles->lock);
    rc = sk_tiles_append(t, leaf, err);
    pthread_mutex_unlock(&t->tiles->lock);
    return rc;
}


void
sk_merkle_tiles_free(sk_merkle_tiles_t *tiles)
{
    if (tiles != NULL) {
        pthread_mutex_destroy(&tiles->lock);
        free(tiles->dir);
        free(tiles);
    }
}


int
sk_merkle_tiles_edge(sk_merkle_tree_t *t, uint64_t size, sk_err_t *err)
{
    sk_merkle_tiles_t  *tt = t->tiles;
    unsigned char       tile[SK_TILE_BYTES];
    sk_merkle_hash_t    h;
    char                why[4096 + 64];
    uint64_t            full, i;
    unsigned            level, k, w;
    int                 rc;

    for (level = 0; level < SK_TILE_LEVELS; level++) {
        full = sk_tiles_shr(size, SK_TILE_HEIGHT * (level + 1));
        w = (unsigned) ((size >> (SK_TILE_HEIGHT * level)) % SK_TILE_WIDTH);
        for (k = 0; k < w; k++) {
            i = full * SK_TILE_WIDTH + k;
            if (level == 0) {
                if (tt->leaf(h, i, tt->arg, err) != 0) {
                    return -1;
                }
                sk_tiles_edge_put(tt, 0, k, h);
                continue;
            }
            /* Full tile level-1/i: its root is this edge hash.  Nothing
             * above checks it; the caller's signed root does. */
            rc = sk_tiles_read(tile, tt, level - 1, i, why, sizeof(why), err);
            if (rc < 0) {
                return -1;
            }
            if (rc > 0) {
                if (sk_tiles_mend(tile, tt, level - 1, i, why, err) != 0
                    || sk_tiles_store(tt, level - 1, i, tile, err) != 0)
                {
                    return -1;
                }
            }
            sk_tiles_subtree(h, tile, SK_TILE_WIDTH);
            sk_tiles_edge_put(tt, level, k, h);
        }
    }
    t->size = size;
    return 0;
}


int
sk_merkle_tiles_open(sk_merkle_tree_t *t, const char *dir, sk_tiles_how_t how,
    sk_merkle_leaf_fn leaf, void *arg, sk_err_t *err)
{
    if (how != SK_TILES_CHECK && mkdir(dir, 0755) != 0 && errno != EEXIST) {
        return sk_err_sys(err, "%s: mkdir", dir);
    }
    t->tiles = calloc(1, sizeof(*t->tiles));
    if (t->tiles == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "merkle tiles");
    }
    pthread_mutex_init(&t->tiles->lock, NULL);
    if ((t->tiles->dir = strdup(dir)) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "merkle tiles");
    }
    t->tiles->how = how;
    t->tiles->leaf = leaf;
    t->tiles->arg = arg;
    return 0;
}


int
sk_merkle_tiles_rebuilt(sk_merkle_tree_t *t, sk_err_t *err)
{
    int  fd = open(t->tiles->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int  rc = 0;

    if (fd < 0 || syncfs(fd) != 0) {
        rc = sk_err_sys(err, "%s: sync", t->tiles->dir);
    }
    if (fd >= 0) {
        close(fd);
    }
    /* Reads from now on are checked, not written: a rebuilt tree repairs
     * what it finds like an opened one. */
    if (rc == 0) {
        t->tiles->how = SK_TILES_OPEN;
    }
    return rc;
}
