/*
 * mr_tree.c -- a mirrored timeline's Merkle tree, kept in
 * data_dir/tl-<tid>/tile/ as C2SP tlog-tiles (sk_merkle_tree_open_tiles),
 * so a start hashes only the leaves past the last full tile and RAM does
 * not grow with the copy.  The tiles are derived from the copy's entries
 * and never trusted over them: the store checks the root against the
 * stored checkpoint and TFM, and rebuilds the tiles once if it is not.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mr.h"


/* sk_merkle_leaf_fn over the stored copy (with the lock held, or before
 * any thread runs): the leaf hash the index holds for the entry, which
 * was computed from the entry once it was checked.  Indexed entries are
 * not read again at start; every later read of one is checked against
 * this leaf (mr_copy_pread), so a copy damaged since is never served.
 * Entries of a sync's batch are not stored yet: a tile over them found
 * damaged fails the round, which rewinds. */
static int
mr_tree_leaf(sk_merkle_hash_t out, uint64_t index, void *arg, sk_err_t *err)
{
    mr_tl_t   *t = arg;
    mr_loc_t   loc;

    if (index >= t->size) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "%s: leaf %" PRIu64 " is "
            "not stored yet (%" PRIu64 " entries)", t->dir, index, t->size);
    }
    if (mr_index_entry(t->mirror, t, index, &loc, err) != 0) {
        return -1;
    }
    memcpy(out, loc.leaf, SK_MERKLE_HASH_BYTES);
    return 0;
}


int
mr_tree_open(mr_tl_t *t, int rebuild, sk_err_t *err)
{
    sk_merkle_tree_t  *tree;
    sk_tiles_how_t     how;
    struct stat        st;
    const char        *last;
    char               dir[4096];

    snprintf(dir, sizeof(dir), "%s/tile", t->dir);
    how = rebuild || (stat(dir, &st) != 0 && errno == ENOENT)
        ? SK_TILES_REBUILD : SK_TILES_OPEN;
    if (sk_merkle_tree_open_tiles(&tree, dir, t->size, how, mr_tree_leaf, t,
            err) != 0)
    {
        return -1;
    }
    if (sk_merkle_tree_tiles_rebuilt(tree, &last) > 0) {
        mr_log("%s", last);
    }
    sk_merkle_tree_free(t->tree);
    t->tree = tree;
    return 0;
}
