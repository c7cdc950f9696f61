/*
 * tl_index_check.c -- sk-timeline --check on data_dir/index/: the log was
 * just replayed (every signature checked) into a scratch index; the one
 * in data_dir must hold the same rows: every entry row up to where it
 * ends, and, if it is level with the log, every name, Change-Services
 * hash, bucket sum, root, copy and state row.  An index that lags is a note (a start
 * reads the rest); one that differs is a problem.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tl.h"


/* Table name in a and b, row by row; 0 if alike, else -1 and err says
 * where they part (a: data_dir/index/, b: the scratch one). */
static int
tl_index_same(sk_db_txn_t *ta, sk_db_txn_t *tb, sk_db_table_t a,
    sk_db_table_t b, const char *name, uint64_t limit, sk_err_t *err)
{
    sk_db_iter_t  *ia, *ib;
    const void    *ka, *va, *kb, *vb;
    size_t         kla, vla, klb, vlb;
    uint64_t       n = 0;
    int            ra, rb, rc = 0;

    if (sk_db_iter_open(ta, a, NULL, 0, &ia, err) != 0) {
        return -1;
    }
    if (sk_db_iter_open(tb, b, NULL, 0, &ib, err) != 0) {
        sk_db_iter_close(ia);
        return -1;
    }
    for (; n < limit; n++) {
        ra = sk_db_iter_next(ia, &ka, &kla, &va, &vla, err);
        if (ra < 0) {
            rc = -1;
            break;
        }
        rb = sk_db_iter_next(ib, &kb, &klb, &vb, &vlb, err);
        if (rb < 0) {
            rc = -1;
            break;
        }
        if (ra == 1 && rb == 1) {
            break;
        }
        if (ra != rb || kla != klb || memcmp(ka, kb, kla) != 0) {
            rc = sk_err_set(err, SK_ERR_FORMAT, "table %s: row %" PRIu64
                " %s the log's", name, n, ra == 1 ? "missing, unlike"
                : rb == 1 ? "more than" : "has another key than");
            break;
        }
        if (vla != vlb || memcmp(va, vb, vla) != 0) {
            rc = sk_err_set(err, SK_ERR_FORMAT, "table %s: row %" PRIu64
                " differs from the log's", name, n);
            break;
        }
    }
    sk_db_iter_close(ia);
    sk_db_iter_close(ib);
    return rc;
}


/* The comparison itself; a problem is -1 and err, a note 1 and err. */
static int
tl_index_compare(tl_timeline_t *tl, sk_db_t *db, sk_err_t *err)
{
    static const char *const  names[] = { "names", "seen", "sums", "roots",
                                          "copies", "state" };
    const sk_db_table_t       mine[] = { tl->t_names, tl->t_seen,
                                         tl->t_sums, tl->t_roots,
                                         tl->t_copies, tl->t_state };
    sk_db_table_t             ent, theirs[6];
    sk_db_txn_t              *ta, *tb;
    sk_db_meta_t              m;
    size_t                    i;
    int                       rc;

    /* Tables first: a transaction sees only those opened before it. */
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (sk_db_table(db, names[i], 0, &theirs[i], err) != 0) {
            return -1;
        }
    }
    if (sk_db_table(db, "entries", 0, &ent, err) != 0) {
        return -1;
    }
    if (sk_db_begin(db, 0, &ta, err) != 0) {
        return -1;
    }
    if (sk_db_begin(tl->db, 0, &tb, err) != 0) {
        sk_db_abort(ta);
        return -1;
    }
    rc = sk_db_meta_get(ta, TL_META_LOG, &m, err);
    if (rc == 1) {
        sk_err_set(err, SK_ERR_NOT_FOUND, "empty: a start builds it from "
            "the log");
        goto done;
    }
    if (rc < 0) {
        goto done;
    }
    if (m.schema != TL_INDEX_SCHEMA) {
        sk_err_set(err, SK_ERR_FORMAT, "schema %u, not %u: a start rebuilds "
            "it", m.schema, TL_INDEX_SCHEMA);
        rc = 1;
        goto done;
    }
    if (m.next_sn > tl->size) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "indexes %" PRIu64 " entries, "
            "the log holds %" PRIu64 ": a start rebuilds it", m.next_sn,
            tl->size);
        goto done;
    }
    if (tl_index_same(ta, tb, ent, tl->t_entries, "entries", m.next_sn,
            err) != 0)
    {
        rc = -1;
        goto done;
    }
    if (m.next_sn < tl->size) {
        sk_err_set(err, SK_ERR_FORMAT, "%" PRIu64 " entries, consistent "
            "with the log; %" PRIu64 " more to read at the next start",
            m.next_sn, tl->size - m.next_sn);
        rc = 1;
        goto done;
    }
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (tl_index_same(ta, tb, theirs[i], mine[i], names[i], UINT64_MAX,
                err) != 0)
        {
            rc = -1;
            goto done;
        }
    }
    rc = 0;
done:
    sk_db_abort(ta);
    sk_db_abort(tb);
    return rc;
}


unsigned
tl_index_check(tl_timeline_t *tl)
{
    sk_db_opts_t  ro = { .read_only = 1,
                         .map_size = tl->conf.index_map_size };
    struct stat   st;
    sk_db_t      *db;
    sk_err_t      err;
    char          dir[4200], path[4300];
    int           rc;

    snprintf(dir, sizeof(dir), "%s/%s", tl->conf.data_dir, TL_INDEX_DIR);
    snprintf(path, sizeof(path), "%s/data.mdb", dir);
    if (stat(path, &st) != 0) {
        tl_say("%s: note: none yet (a start builds it from the log)", dir);
        return 0;
    }
    /* Written even with nothing to index, as a stopping daemon writes
     * its own (tl_index_close): else an empty log's scratch index has no
     * state rows to compare with. */
    tl->stat_stale = 1;
    if (tl_index_flush(tl, &err) != 0) {
        tl_say("%s: scratch index: %s", dir, err.msg);
        return 1;
    }
    if (sk_db_open(&db, dir, &ro, &err) != 0) {
        tl_say("%s; a start rebuilds it from the log (or sk-timeline "
            "--repair)", err.msg);
        return 1;
    }
    rc = tl_index_compare(tl, db, &err);
    sk_db_close(db);
    if (rc < 0) {
        tl_say("%s: %s (sk-timeline --repair rebuilds it from the log)",
            dir, err.msg);
        return 1;
    }
    if (rc > 0) {
        tl_say("%s: note: %s", dir, err.msg);
    } else {
        tl_say("%s: ok: %" PRIu64 " entries, every row as the log implies",
            dir, tl->size);
    }
    return 0;
}
