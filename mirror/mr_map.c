/*
 * mr_map.c -- each mirrored timeline's name map (sk/map.h, the space is
 * the TID) in the index's LMDB environment, and the state answers prove
 * from.
 *
 * The map is kept at the size of the stored checkpoint, not of the copy:
 * the store feeds it the entries up to a new checkpoint's size in the
 * transaction that stores the checkpoint's entries (mr_store_commit), and
 * at each Map-Root entry on the way the map's root must be the entry's
 * Map-Hash (else the timeline reneged: map-root evidence).  A sync that
 * commits entries past the checkpoint under a TFM or a prefix does not
 * move it, so the committed map is always the map at the checkpoint's
 * size; answers read it through a read transaction begun when the
 * checkpoint was published (t->snap, under the lock): LMDB keeps that
 * snapshot whatever commits follow, so a proof and the checkpoint it is
 * checked against are always of one moment.
 *
 * Layers: this file calls libsk only; the index, the store and answers
 * call it, never the other way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/evidence.h>
#include <sk/map.h>

#include "mr.h"


int
mr_map_open(mr_mirror_t *m, sk_err_t *err)
{
    return sk_map_open(&m->map, m->db, err);
}


void
mr_map_close(mr_mirror_t *m)
{
    sk_map_close(m->map);
    m->map = NULL;
}


static void
mr_map_meta_name(char *out, size_t cap, const mr_tl_t *t)
{
    snprintf(out, cap, "map-%" PRIu64, t->conf->tid);
}


int
mr_map_size(mr_mirror_t *m, const mr_tl_t *t, sk_db_txn_t *txn,
    uint64_t *size, sk_err_t *err)
{
    sk_db_meta_t  meta;
    char          name[64];
    int           rc;

    (void) m;
    mr_map_meta_name(name, sizeof(name), t);
    rc = sk_db_meta_get(txn, name, &meta, err);
    *size = rc == 0 ? meta.next_sn : 0;
    return rc == -1 ? -1 : 0;
}


int
mr_map_mark(mr_mirror_t *m, const mr_tl_t *t, sk_db_txn_t *txn,
    uint64_t size, sk_err_t *err)
{
    sk_db_meta_t  meta;
    char          name[64];

    (void) m;
    memset(&meta, 0, sizeof(meta));
    meta.schema = 1;
    meta.next_sn = size;
    mr_map_meta_name(name, sizeof(name), t);
    return sk_db_meta_put(txn, name, &meta, err);
}


int
mr_map_clear(mr_mirror_t *m, const mr_tl_t *t, sk_db_txn_t *txn,
    sk_err_t *err)
{
    if (sk_map_clear(txn, m->map, t->conf->tid, err) != 0) {
        return -1;
    }
    return mr_map_mark(m, t, txn, 0, err);
}


/* A Map-Root entry against the map so far. */
static int
mr_map_check_root(mr_mirror_t *m, const mr_tl_t *t, sk_db_txn_t *txn,
    const sk_entry_t *e, uint64_t sn, sk_err_t *err)
{
    sk_merkle_hash_t  want, root;
    uint64_t          wnames, names;

    if (sk_evidence_map_root(e, want, &wnames, err) != 0) {
        return sk_err_prefix(err, "SN %" PRIu64, sn);
    }
    if (sk_map_root(txn, m->map, t->conf->tid, root, &names, err) != 0) {
        return -1;
    }
    if (memcmp(root, want, sizeof(root)) != 0 || names != wnames) {
        sk_err_set(err, SK_ERR_SIGNATURE, "the Map-Root entry SN %" PRIu64
            " (Map-Names %" PRIu64 ") does not name the map of the entries "
            "before it (%" PRIu64 " names)", sn, wnames, names);
        return 1;
    }
    return 0;
}


int
mr_map_feed(mr_mirror_t *m, const mr_tl_t *t, sk_db_txn_t *txn, uint64_t sn,
    const char *text, size_t len, sk_err_t *err)
{
    unsigned char     key[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  leaf;
    sk_map_value_t    v;
    sk_entry_t       *e;
    int               rc;

    if (sk_entry_parse(&e, text, len, err) != 0) {
        return sk_err_prefix(err, "map: SN %" PRIu64, sn);
    }
    if (sk_entry_type(e) == SK_ENTRY_MAP_ROOT) {
        rc = mr_map_check_root(m, t, txn, e, sn, err);
        sk_entry_free(e);
        return rc;
    }
    if (sk_entry_name(e) == NULL) {
        sk_entry_free(e);
        return 0;
    }
    rc = sk_map_key(key, sk_entry_name(e), err);
    sk_entry_free(e);
    if (rc != 0 || sk_merkle_leaf_hash(leaf, text, len, err) != 0) {
        return sk_err_prefix(err, "map: SN %" PRIu64, sn);
    }
    rc = sk_map_get(txn, m->map, t->conf->tid, key, &v, err);
    if (rc == -1) {
        return -1;
    }
    if (rc == 1) {
        sk_map_value_init(&v);
    }
    sk_map_value_add(&v, sn, leaf);
    return sk_map_put(txn, m->map, t->conf->tid, key, &v, err);
}


void
mr_map_unpublish(mr_tl_t *t)
{
    sk_db_abort(t->snap);
    t->snap = NULL;
    free(t->last);
    t->last = NULL;
    t->lastlen = 0;
    t->mapped = 0;
}


int
mr_map_publish(mr_mirror_t *m, mr_tl_t *t, char *last, size_t len,
    sk_err_t *err)
{
    sk_entry_t  *e;
    uint64_t     names;
    int          rc, mapped;

    mr_map_unpublish(t);
    t->last = last;
    t->lastlen = len;
    if (sk_entry_parse(&e, last, len, err) != 0) {
        return sk_err_prefix(err, "timeline %" PRIu64 ": the checkpoint's "
            "last entry", t->conf->tid);
    }
    rc = sk_entry_type(e) != SK_ENTRY_MAP_ROOT ? 0
        : sk_evidence_map_root(e, t->map_hash, &names, err);
    mapped = rc == 0 && sk_entry_type(e) == SK_ENTRY_MAP_ROOT;
    sk_entry_free(e);
    if (rc != 0 || !mapped) {
        return rc;
    }
    if (sk_db_begin(m->db, 0, &t->snap, err) != 0) {
        return -1;
    }
    t->mapped = 1;
    return 0;
}


int
mr_map_prove(mr_mirror_t *m, const mr_tl_t *t,
    const unsigned char key[SK_MAP_KEY_BYTES], sk_map_value_t *v,
    sk_map_proof_t *p, sk_err_t *err)
{
    int  rc;

    pthread_mutex_lock(&m->snap_lock[t->index]);
    rc = sk_map_get_proof(t->snap, m->map, t->conf->tid, key, t->map_hash,
        v, p, err);
    pthread_mutex_unlock(&m->snap_lock[t->index]);
    if (rc == -1) {
        return sk_err_prefix(err, "map: timeline %" PRIu64, t->conf->tid);
    }
    if (rc == 1) {
        sk_map_value_init(v);
    }
    return rc;
}


int
mr_map_answer(mr_mirror_t *m, const mr_tl_t *t, const char *name,
    sk_map_value_t *v, char **proof, size_t *plen, sk_err_t *err)
{
    unsigned char    key[SK_MAP_KEY_BYTES];
    sk_map_proof_t   p;

    if (sk_map_key(key, name, err) != 0 || mr_map_prove(m, t, key, v, &p, err)
        < 0)
    {
        return -1;
    }
    return sk_map_proof_format(proof, plen, &p, err);
}


int
mr_map_history(const mr_tl_t *t, const mr_ref_t *refs, size_t nrefs,
    uint64_t below, const sk_map_value_t *want, sk_map_value_t *got)
{
    size_t  i;

    sk_map_value_init(got);
    for (i = 0; i < nrefs; i++) {
        if (refs[i].tl == t->index && refs[i].sn < below) {
            sk_map_value_add(got, refs[i].sn, refs[i].loc.leaf);
        }
    }
    return got->count == want->count && (got->count == 0
        || (got->newest_sn == want->newest_sn
            && memcmp(got->chain, want->chain, sizeof(got->chain)) == 0));
}
