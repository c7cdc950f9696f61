/*
 * tl_map.c -- the timeline's name map (sk/map.h, docs/protocol.md "The
 * name map"): from each name to its whole history in this log, kept in
 * the index's LMDB environment (space 0) and committed inside the log by
 * a Map-Root entry at the end of each sequencing batch.
 *
 * The map is staged (sk_map_open_staged): each flush of the index puts
 * every name whose value changed into the stage, takes the root, and
 * while serving appends a Map-Root entry carrying that root to the log.
 * With the map on, the group commit is such a flush (tl_store.c), so every
 * size the timeline shows ends in a Map-Root entry.  The staged rows are
 * written to LMDB with the index rows, in one transaction, when the
 * index is (every index_batch entries, as without the map): a row that
 * many batches touch is written once, and a crash loses only what the
 * log has and a start reads again.
 *
 * tl->map_root is the root of the map as of the last flush: the one the
 * last Map-Root entry signed, checked against the stored map at start.  A
 * name's value is read through the tree (stored rows under the staged
 * ones) hash-linked to it (sk_map_get_proven), and the newest entry it
 * names is read back from the log against the tree's leaf hash, so a
 * damaged row is found before it decides anything.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl.h"


int
tl_map_open(tl_timeline_t *tl, sk_err_t *err)
{
    memset(tl->map_root, 0, sizeof(tl->map_root));
    tl->map_names = 0;
    if (!tl->conf.name_map) {
        return 0;
    }
    return sk_map_open_staged(&tl->map, tl->db, err);
}


void
tl_map_close(tl_timeline_t *tl)
{
    sk_map_close(tl->map);
    tl->map = NULL;
}


/* The Map-Hash a Map-Root entry carries for root: root itself, or with
 * the tests' map_lie a wrong one (its first byte flipped). */
static void
tl_map_said(const tl_timeline_t *tl, sk_merkle_hash_t said,
    const sk_merkle_hash_t root)
{
    memcpy(said, root, SK_MERKLE_HASH_BYTES);
    if (tl->conf.map_lie) {
        said[0] ^= 0xff;
    }
}


/* Map-Root entry e's Map-Hash against the map's root. */
static int
tl_map_match(tl_timeline_t *tl, const sk_entry_t *e,
    const sk_merkle_hash_t root, const char *where, sk_err_t *err)
{
    sk_merkle_hash_t  said;
    char              have[64];
    const char       *hash = sk_entry_get(e, "Map-Hash");
    uint64_t          sn = 0;

    tl_map_said(tl, said, root);
    sk_b64_encode(have, said, sizeof(said));
    if (hash != NULL && strcmp(hash, have) == 0) {
        return 0;
    }
    if (sk_entry_sn(e, &sn, NULL) != 0) {
        sn = 0;
    }
    return sk_err_set(err, SK_ERR_FORMAT, "%s: SN %" PRIu64 " of %s is a "
        "Map-Root entry with Map-Hash %s, but the map gives %s", where, sn,
        tl->log.path, hash != NULL ? hash : "(none)", have);
}


int
tl_map_agrees(tl_timeline_t *tl, sk_db_txn_t *t, const sk_entry_t *last,
    sk_err_t *err)
{
    char  where[4200];

    if (tl->map == NULL) {
        return 0;
    }
    if (sk_map_root(t, tl->map, 0, tl->map_root, &tl->map_names, err) != 0) {
        return -1;
    }
    if (last == NULL || sk_entry_type(last) != SK_ENTRY_MAP_ROOT) {
        return sk_err_set(err, SK_ERR_FORMAT, "its last entry is not a "
            "Map-Root entry: no name map (an index from before it, or "
            "kept with name_map off)");
    }
    snprintf(where, sizeof(where), "%s/data.mdb: the stored name map",
        tl->db_dir);
    return tl_map_match(tl, last, tl->map_root, where, err);
}


/* Append the Map-Root entry of root (SN tl->size), stamped now or at the
 * newest stamp if the clock is behind it. */
static int
tl_map_append(tl_timeline_t *tl, const sk_merkle_hash_t root, uint64_t names,
    sk_err_t *err)
{
    sk_merkle_hash_t  said;
    sk_entry_t       *e;
    char              b64[64], n[24], *out = NULL;
    size_t            len;
    int64_t           ts = tl_now(tl);
    int               rc;

    if (ts < tl->last_ts) {
        ts = tl->last_ts;
    }
    tl_map_said(tl, said, root);
    sk_b64_encode(b64, said, sizeof(said));
    snprintf(n, sizeof(n), "%" PRIu64, names);
    if (sk_entry_new(&e, SK_ENTRY_MAP_ROOT, err) != 0) {
        return -1;
    }
    rc = sk_entry_set(e, "Map-Hash", b64, err) != 0
         || sk_entry_set(e, "Map-Names", n, err) != 0
         || sk_entry_stamp(e, tl->conf.tid, tl->size, ts, tl->key, err) != 0
         || sk_entry_format(&out, &len, e, err) != 0
         || tl->log_io.write(tl, out, len, ts, err) != 0 ? -1 : 0;
    if (rc == 0) {
        tl->map_seal = 0;
    }
    sk_entry_free(e);
    free(out);
    return rc;
}


/* A flush that failed may have staged part of its names: back to the
 * stored map, every name changed since it to be staged again. */
static void
tl_map_restage(tl_timeline_t *tl, sk_db_txn_t *t)
{
    sk_err_t    err;
    size_t      i;
    tl_name_t  *n;

    sk_map_unstage(tl->map);
    for (i = 0; i < tl->nslots; i++) {
        n = tl->names[i];
        if (n != NULL && n->mstaged) {
            n->mstaged = 0;
            if (!n->mdirty) {
                n->mdirty = 1;
                n->mnext = tl->mdirty;
                tl->mdirty = n;
            }
        }
    }
    /* A stored root that cannot be read is damage: with no root, every
     * read of a name fails its check and has the index rebuilt
     * (tl_state_entry), so the map never calls back into the index. */
    if (sk_map_root(t, tl->map, 0, tl->map_root, &tl->map_names, &err)
        != 0)
    {
        memset(tl->map_root, 0, sizeof(tl->map_root));
    }
}


int
tl_map_flush(tl_timeline_t *tl, sk_db_txn_t *t, sk_merkle_hash_t root,
    sk_err_t *err)
{
    unsigned char  key[SK_MAP_KEY_BYTES];
    uint64_t       names;
    tl_name_t     *n;

    for (n = tl->mdirty; n != NULL; n = n->mnext) {
        if (sk_map_key(key, n->name, err) != 0
            || sk_map_put(t, tl->map, 0, key, &n->mval, err) != 0)
        {
            tl_map_restage(tl, t);
            return sk_err_prefix(err, "%s/data.mdb: name map", tl->db_dir);
        }
        n->mstaged = 1;
    }
    if (sk_map_root(t, tl->map, 0, root, &names, err) != 0) {
        tl_map_restage(tl, t);
        return sk_err_prefix(err, "%s/data.mdb: name map", tl->db_dir);
    }
    for (n = tl->mdirty; n != NULL; n = n->mnext) {
        n->mdirty = 0;
    }
    tl->mdirty = NULL;
    memcpy(tl->map_root, root, SK_MERKLE_HASH_BYTES);
    tl->map_names = names;
    if (!tl->map_seal || tl->mode != TL_RUN || tl->reindexing) {
        return 0;
    }
    return tl_map_append(tl, root, names, err);
}


/* Name's newest entry, read back from the log against the tree's leaf
 * hash: it must be an entry of this timeline naming it. */
static int
tl_map_newest(tl_timeline_t *tl, const char *name, const sk_map_value_t *v,
    sk_err_t *err)
{
    sk_entry_t  *e = NULL;
    const char  *en;
    char        *text;
    size_t       len;
    int          rc;

    if (v->newest_sn >= tl->size) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: name map: %s's "
            "newest entry is SN %" PRIu64 ", past the log's %" PRIu64,
            tl->db_dir, name, v->newest_sn, tl->size);
    }
    if (tl->log_io.read_tree(tl, &text, &len, v->newest_sn, err) != 0) {
        return -1;
    }
    rc = sk_entry_parse(&e, text, len, err);
    free(text);
    if (rc != 0) {
        return -1;
    }
    en = sk_entry_name(e);
    rc = en == NULL || strcmp(en, name) != 0
         ? sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: name map: %s's "
               "newest entry is SN %" PRIu64 ", which names %s", tl->db_dir,
               name, v->newest_sn, en != NULL ? en : "nothing")
         : 0;
    sk_entry_free(e);
    return rc;
}


int
tl_map_name(tl_timeline_t *tl, const char *name, tl_name_t *n, int indexed,
    sk_err_t *err)
{
    unsigned char  key[SK_MAP_KEY_BYTES];
    sk_db_txn_t   *t;
    int            rc;

    sk_map_value_init(&n->mval);
    n->mdirty = 0;
    if (tl->map == NULL) {
        return indexed ? 0 : 1;
    }
    if (sk_map_key(key, name, err) != 0
        || sk_db_begin(tl->db, 0, &t, err) != 0)
    {
        return -1;
    }
    rc = sk_map_get_proven(t, tl->map, 0, key, tl->map_root, &n->mval, err);
    sk_db_abort(t);
    if (rc < 0) {
        return sk_err_prefix(err, "%s/data.mdb: name map, %s", tl->db_dir,
            name);
    }
    /* A name only incorporated has a names row and no map value (the map
     * holds this timeline's own entries); one in the map has both. */
    if (rc == 0 && !indexed) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: name %s is in "
            "the name map (%" PRIu64 " entries) but has no names row",
            tl->db_dir, name, n->mval.count);
    }
    if (rc == 0 && tl_map_newest(tl, name, &n->mval, err) != 0) {
        return -1;
    }
    return indexed ? 0 : 1;
}


/* One more entry (SN sn, leaf hash leaf) of this timeline's of n's: its
 * value moves on. */
void
tl_map_note(tl_timeline_t *tl, tl_name_t *n, uint64_t sn,
    const sk_merkle_hash_t leaf)
{
    sk_map_value_add(&n->mval, sn, leaf);
    if (!n->mdirty) {
        n->mdirty = 1;
        n->mnext = tl->mdirty;
        tl->mdirty = n;
    }
    n->dirty = 1;
}


/* The last entry of the log, parsed (NULL for an empty log). */
static int
tl_map_last(tl_timeline_t *tl, sk_entry_t **e, sk_err_t *err)
{
    char  *text;
    size_t len;
    int    rc;

    *e = NULL;
    if (tl->size == 0) {
        return 0;
    }
    if (tl->log_io.read_tree(tl, &text, &len, tl->size - 1, err) != 0) {
        return -1;
    }
    rc = sk_entry_parse(e, text, len, err);
    free(text);
    return rc;
}


int
tl_map_check_end(tl_timeline_t *tl, sk_err_t *err)
{
    sk_merkle_hash_t  root;
    sk_db_txn_t      *t;
    sk_entry_t       *e;
    int               rc;

    tl->map_seal = 0;
    if (tl->map == NULL || tl->mode != TL_RUN) {
        return 0;
    }
    if (tl_map_last(tl, &e, err) != 0) {
        return -1;
    }
    if (e == NULL || sk_entry_type(e) != SK_ENTRY_MAP_ROOT) {
        /* A log from before the map, or entries whose batch ended in a
         * crash: the map is built now, its Map-Root appended at start. */
        tl->map_seal = e != NULL;
        sk_entry_free(e);
        return 0;
    }
    /* The map as of the replay, without committing anything yet. */
    rc = sk_db_begin(tl->db, 1, &t, err);
    if (rc == 0) {
        rc = tl_map_flush(tl, t, root, err) != 0 ? -1
             : tl_map_match(tl, e, root, "the name map built from the log",
                   err);
        sk_db_abort(t);
    }
    sk_entry_free(e);
    return rc;
}


int
tl_map_rebuilt(tl_timeline_t *tl, sk_err_t *err)
{
    sk_entry_t  *e;
    char         where[4200];
    int          rc = 0;

    /* Entries after the last Map-Root entry: the batch's own Map-Root
     * entry signs the map as rebuilt. */
    if (tl->map == NULL || tl->map_seal) {
        return 0;
    }
    if (tl_map_last(tl, &e, err) != 0) {
        return -1;
    }
    if (e != NULL && sk_entry_type(e) == SK_ENTRY_MAP_ROOT) {
        snprintf(where, sizeof(where), "%s/data.mdb: the name map rebuilt "
            "from the log", tl->db_dir);
        rc = tl_map_match(tl, e, tl->map_root, where, err);
    }
    sk_entry_free(e);
    return rc;
}

