/*
 * mr_ixcheck.c -- sk-mirror --check: the index (data_dir/index) against
 * a scratch one made from the copies in $TMPDIR as a start without an
 * index would (every stored entry checked again), table by table, row
 * by row.  Offline and read-only: nothing under data_dir changes.  Each
 * difference is printed naming the table and the row; the exit code is
 * 0 when there is none, 1 otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/db.h>

#include "mr.h"

#define MR_IXC_SHOW  20             /* differences shown per table */


/* A key as text: printable bytes as they are, the rest as \xHH. */
static void
mr_ixcheck_key(char *out, size_t cap, const unsigned char *k, size_t klen)
{
    size_t  i, n = 0;

    out[0] = '\0';
    for (i = 0; i < klen && n + 5 < cap; i++) {
        n += (size_t) snprintf(out + n, cap - n,
            k[i] > 0x20 && k[i] < 0x7f ? "%c" : "\\x%02x", k[i]);
    }
}


/* LMDB's default order: bytes, then the shorter first. */
static int
mr_ixcheck_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    int  c = memcmp(a, b, alen < blen ? alen : blen);

    return c != 0 ? c : (alen > blen) - (alen < blen);
}


typedef struct {
    sk_db_iter_t  *it;
    const void    *k, *v;
    size_t         klen, vlen;
    int            rc;              /* 0: at a row, 1: done, -1: failed */
} mr_ixc_side_t;


static void
mr_ixcheck_next(mr_ixc_side_t *s, sk_err_t *err)
{
    s->rc = sk_db_iter_next(s->it, &s->k, &s->klen, &s->v, &s->vlen, err);
}


static void
mr_ixcheck_say(const char *table, size_t *n, const void *k, size_t klen,
    const char *what)
{
    char  key[256];

    if ((*n)++ < MR_IXC_SHOW) {
        mr_ixcheck_key(key, sizeof(key), k, klen);
        printf("%s: index/: table %s: row \"%s\": %s\n", MR_PROG, table, key,
            what);
    }
}


/* Compare one table of both indexes: the differences (-1 if not read). */
static long
mr_ixcheck_table(sk_db_t *real, sk_db_t *want, const char *table,
    uint64_t *rows, sk_err_t *err)
{
    sk_db_table_t   rt, wt;
    sk_db_txn_t    *rtx = NULL, *wtx = NULL;
    mr_ixc_side_t   r = { 0 }, w = { 0 };
    size_t          n = 0;
    int             c;

    *rows = 0;
    if (sk_db_table(want, table, 0, &wt, err) != 0
        || sk_db_table(real, table, 0, &rt, err) != 0
        || sk_db_begin(real, 0, &rtx, err) != 0
        || sk_db_begin(want, 0, &wtx, err) != 0
        || sk_db_iter_open(rtx, rt, NULL, 0, &r.it, err) != 0
        || sk_db_iter_open(wtx, wt, NULL, 0, &w.it, err) != 0)
    {
        goto done;
    }
    mr_ixcheck_next(&r, err);
    mr_ixcheck_next(&w, err);
    while (r.rc == 0 || w.rc == 0) {
        c = r.rc != 0 ? 1 : w.rc != 0 ? -1
            : mr_ixcheck_cmp(r.k, r.klen, w.k, w.klen);
        if (c < 0) {
            mr_ixcheck_say(table, &n, r.k, r.klen, "not in the copies");
            mr_ixcheck_next(&r, err);
            continue;
        }
        if (c > 0) {
            mr_ixcheck_say(table, &n, w.k, w.klen, "missing");
            mr_ixcheck_next(&w, err);
            continue;
        }
        if (r.vlen != w.vlen || memcmp(r.v, w.v, r.vlen) != 0) {
            mr_ixcheck_say(table, &n, r.k, r.klen, "not as the copies say");
        }
        (*rows)++;
        mr_ixcheck_next(&r, err);
        mr_ixcheck_next(&w, err);
    }
done:
    sk_db_iter_close(r.it);
    sk_db_iter_close(w.it);
    sk_db_abort(rtx);
    sk_db_abort(wtx);
    if (r.rc == -1 || w.rc == -1 || (r.it == NULL && w.it == NULL)
        || (r.it == NULL) != (w.it == NULL))
    {
        return -1;
    }
    if (n > MR_IXC_SHOW) {
        printf("%s: index/: table %s: and %zu more\n", MR_PROG, table,
            n - MR_IXC_SHOW);
    }
    return (long) n;
}


/* The scratch index from every copy; 0, or -1 (said) if a copy fails. */
static int
mr_ixcheck_scratch(mr_mirror_t *m)
{
    sk_err_t  err;
    size_t    i;
    int       rc = 0;

    for (i = 0; i < m->ntl && rc == 0; i++) {
        rc = mr_store_scratch(m, &m->tl[i], &err);
        if (rc == 0) {
            rc = mr_store_map_open(m, &m->tl[i], &err);
        }
        if (rc != 0) {
            printf("%s: timeline %" PRIu64 ": %s\n", MR_PROG,
                m->tl[i].conf->tid, err.msg);
        }
        mr_store_close(&m->tl[i]);
    }
    return rc;
}


static int
mr_ixcheck_compare(mr_mirror_t *m, sk_db_t *real)
{
    static const char  *tables[] = { "meta", "entries", "names", "buckets",
                                     "roots", "map.leaf", "map.node" };
    sk_err_t            err;
    uint64_t            rows, entries = 0;
    size_t              i;
    long                n, bad = 0;

    for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        n = mr_ixcheck_table(real, m->db, tables[i], &rows, &err);
        if (n < 0) {
            printf("%s: index/: table %s: %s\n", MR_PROG, tables[i],
                err.msg);
            n = 1;
        }
        bad += n;
        entries = i == 1 ? rows : entries;
    }
    if (bad > 0) {
        printf("%s: index/: %ld rows differ from the copies: the index is "
            "damaged (the mirror rebuilds it when it reads such a row; to "
            "rebuild it now, stop the mirror and delete %s/index)\n",
            MR_PROG, bad, m->conf.data_dir);
        return 1;
    }
    printf("%s: index/: ok: %" PRIu64 " entries, every row as the copies "
        "imply\n", MR_PROG, entries);
    return 0;
}


int
mr_ixcheck(mr_mirror_t *m)
{
    sk_db_opts_t  ro = { .read_only = 1 }, rw = { .lazy_sync = 1 };
    sk_db_t      *real = NULL;
    sk_err_t      err;
    const char   *tmp = getenv("TMPDIR");
    char          dir[4096], path[4096];
    int           rc = 1;

    snprintf(dir, sizeof(dir), "%s/%s", tmp != NULL && tmp[0] ? tmp : "/tmp",
        "sk-mirror-check.XXXXXX");
    if (mkdtemp(dir) == NULL) {
        printf("%s: %s: mkdtemp failed\n", MR_PROG, dir);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/index", m->conf.data_dir);
    if (sk_db_open(&real, path, &ro, &err) != 0) {
        printf("%s: index/: %s\n", MR_PROG, err.msg);
    } else if (sk_db_open(&m->db, dir, &rw, &err) != 0
               || sk_db_table(m->db, "entries", 1, &m->ix_entries, &err) != 0
               || sk_db_table(m->db, "names", 1, &m->ix_names, &err) != 0
               || sk_db_table(m->db, "buckets", 1, &m->ix_buckets, &err) != 0
               || sk_db_table(m->db, "roots", 1, &m->ix_roots, &err) != 0
               || mr_map_open(m, &err) != 0)
    {
        printf("%s: %s: %s\n", MR_PROG, dir, err.msg);
    } else if (mr_ixcheck_scratch(m) == 0) {
        rc = mr_ixcheck_compare(m, real);
    }
    sk_db_close(real);
    mr_index_close(m);
    if (mr_index_remove(dir, &err) != 0) {
        printf("%s: %s\n", MR_PROG, err.msg);
    }
    return rc;
}
