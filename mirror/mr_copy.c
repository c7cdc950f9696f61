/*
 * mr_copy.c -- reading an indexed entry back from its timeline's copy,
 * checked against the leaf the index holds for it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mr.h"


int
mr_copy_pread(const mr_tl_t *t, uint64_t sn, const mr_loc_t *loc,
    char **out, sk_err_t *err)
{
    sk_merkle_hash_t  leaf;

    *out = malloc((size_t) loc->len + 1);
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "entry");
    }
    if (sk_file_pread_all(t->fd, *out, loc->len, (off_t) loc->off) != 0) {
        free(*out);
        *out = NULL;
        return errno != 0 ? sk_err_sys(err, "%s/entries: read SN %" PRIu64,
                                t->dir, sn)
                          : sk_err_set(err, SK_ERR_SIGNATURE, "%s/entries: "
                                "SN %" PRIu64 " past the end: the copy is "
                                "damaged", t->dir, sn);
    }
    (*out)[loc->len] = '\0';
    if (sk_merkle_leaf_hash(leaf, *out, loc->len, err) != 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    if (memcmp(leaf, loc->leaf, sizeof(leaf)) != 0) {
        free(*out);
        *out = NULL;
        /* The tiles, checked against the signed heads at start, tell
         * which is damaged: the index's leaf or the copy. */
        if (t->tree != NULL && sn < sk_merkle_tree_size(t->tree)
            && sk_merkle_tree_leaf_get(leaf, t->tree, sn, err) == 0
            && memcmp(leaf, loc->leaf, sizeof(leaf)) != 0)
        {
            return mr_state_damaged(t->mirror, err, "entries: timeline %" PRIu64
                " SN %" PRIu64 ": not the leaf of %s/tile", t->conf->tid, sn,
                t->dir);
        }
        mr_log("%s/entries: offset %" PRIu64 ", SN %" PRIu64 ": not the "
            "entry the index holds: the copy is damaged", t->dir, loc->off,
            sn);
        return sk_err_set(err, SK_ERR_SIGNATURE, "%s/entries: offset %"
            PRIu64 ", SN %" PRIu64 ": not the entry the index holds: the "
            "copy is damaged", t->dir, loc->off, sn);
    }
    return 0;
}
