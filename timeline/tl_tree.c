/*
 * tl_tree.c -- the log's Merkle tree, kept in data_dir/tile/ as C2SP
 * tlog-tiles (sk_merkle_tree_open_tiles): a start hashes only the leaves
 * past the last full tile, not the whole log.  The tiles are derived from
 * the log and never trusted over it: the root must be the one signed-head
 * holds, or the tiles are rebuilt from the log and checked again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tl.h"


/* sk_merkle_leaf_fn over the log: entry index hashed again.  Called with
 * tl->lock held, or before any thread runs. */
static int
tl_tree_leaf(sk_merkle_hash_t out, uint64_t index, void *arg, sk_err_t *err)
{
    tl_timeline_t  *tl = arg;
    char           *text;
    size_t          len;
    int             rc;

    if (index >= tl->size) {
        return sk_err_set(err, SK_ERR_USAGE, "leaf %" PRIu64 " past the "
            "log's %" PRIu64 " entries", index, tl->size);
    }
    if (tl->log_io.read_leaf(tl, &text, &len, index, err) != 0) {
        return -1;
    }
    rc = sk_merkle_leaf_hash(out, text, len, err);
    free(text);
    return rc;
}


static void
tl_tree_dir(char *out, size_t len, const tl_timeline_t *tl)
{
    snprintf(out, len, "%s/%s", tl->conf.data_dir, TL_TILE_DIR);
}


/* An in-memory tree of every entry (--check, --repair's old view). */
static int
tl_tree_memory(tl_timeline_t *tl, sk_merkle_tree_t **t, sk_err_t *err)
{
    sk_merkle_hash_t  leaf;
    uint64_t          sn;

    if (sk_merkle_tree_new(t, err) != 0) {
        return -1;
    }
    for (sn = 0; sn < tl->size; sn++) {
        if (tl_tree_leaf(leaf, sn, tl, err) != 0
            || sk_merkle_tree_append(*t, leaf, err) != 0)
        {
            sk_merkle_tree_free(*t);
            *t = NULL;
            return -1;
        }
    }
    return 0;
}


/* The entries past base (written, never signed: after a crash) hashed
 * again from the log and appended, rewriting the tiles they fill. */
static int
tl_tree_extend(tl_timeline_t *tl, uint64_t base, sk_err_t *err)
{
    sk_merkle_hash_t  leaf;
    uint64_t          sn;

    for (sn = base; sn < tl->size; sn++) {
        if (tl_tree_leaf(leaf, sn, tl, err) != 0
            || sk_merkle_tree_append(tl->tree, leaf, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}


int
tl_tree_open(tl_timeline_t *tl, sk_err_t *err)
{
    char            dir[4096];
    struct stat     st;
    sk_tiles_how_t  how;
    const char     *last;
    uint64_t        base;

    if (tl->mode == TL_CHECK) {
        /* Read only: the whole log hashed, as --check always did; the
         * tiles are compared with it apart (tl_tree_check). */
        return tl_tree_memory(tl, &tl->tree, err);
    }
    tl_tree_dir(dir, sizeof(dir), tl);
    how = tl->mode == TL_REPAIR ? SK_TILES_REBUILD
        : stat(dir, &st) != 0 && errno == ENOENT ? SK_TILES_REBUILD
        : SK_TILES_OPEN;
    if (how == SK_TILES_REBUILD && tl->mode == TL_RUN && tl->size > 0) {
        tl_log("%s: no tiles yet: building them from %" PRIu64 " entries",
            dir, tl->size);
    }
    /* Only a tree signed-head covers is checked against its root; so the
     * tiles are trusted up to its size only, and what lies past it is
     * hashed again: no unchecked tile enters a root signed next. */
    base = tl->mode == TL_RUN && tl->signed_have
           && tl->signed_size < tl->size ? tl->signed_size : tl->size;
    if (sk_merkle_tree_open_tiles(&tl->tree, dir, base, how, tl_tree_leaf,
            tl, err) != 0)
    {
        return -1;
    }
    tl->tiles_noted = sk_merkle_tree_tiles_rebuilt(tl->tree, &last);
    if (tl->tiles_noted > 0) {
        tl_log("%s", last);
    }
    if (tl->mode == TL_REPAIR || how == SK_TILES_REBUILD
        || tl_signed_verify(tl, err) == 0)
    {
        return tl_tree_extend(tl, base, err);
    }
    if (tl->size < tl->signed_size) {
        return -1;      /* the log is short: no tile explains that */
    }
    /* The tiles or the log?  Tiles rebuilt from the log tell: if the
     * root is still not the signed one, the log changed (tl_store_open
     * checks again and refuses). */
    tl_log("%s; rebuilding %s from the log to tell whether the tiles or "
        "the log are damaged", err->msg, dir);
    sk_merkle_tree_free(tl->tree);
    if (sk_merkle_tree_open_tiles(&tl->tree, dir, base, SK_TILES_REBUILD,
            tl_tree_leaf, tl, err) != 0)
    {
        tl->tree = NULL;
        return -1;
    }
    return tl_tree_extend(tl, base, err);
}


void
tl_tree_note(tl_timeline_t *tl)
{
    const char     *last;
    unsigned long   n;

    n = tl->tree != NULL ? sk_merkle_tree_tiles_rebuilt(tl->tree, &last) : 0;
    if (n != tl->tiles_noted) {
        tl->tiles_noted = n;
        tl_log("%s", last);
    }
}


int
tl_tree_check(tl_timeline_t *tl, sk_err_t *err)
{
    sk_merkle_tree_t  *t;
    sk_merkle_hash_t   a, b;
    char               dir[4096];
    struct stat        st;
    int                rc = 0;

    tl_tree_dir(dir, sizeof(dir), tl);
    if (stat(dir, &st) != 0 && errno == ENOENT) {
        tl_say("%s: no tiles yet (the next start builds them)", dir);
        return 0;
    }
    if (sk_merkle_tree_open_tiles(&t, dir, tl->size, SK_TILES_CHECK,
            tl_tree_leaf, tl, err) != 0)
    {
        return -1;
    }
    if (sk_merkle_tree_root(a, t, tl->size, err) != 0
        || sk_merkle_tree_root(b, tl->tree, tl->size, err) != 0)
    {
        rc = -1;
    } else if (memcmp(a, b, sizeof(a)) != 0) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "%s: the tiles' root is not the "
            "log's", dir);
    }
    sk_merkle_tree_free(t);
    return rc;
}
