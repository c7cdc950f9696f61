/*
 * mr_index.c -- the mirror's persistent index, in LMDB (sk/db.h) under
 * data_dir/index/, so that neither RAM nor a restart grows with the names
 * and entries mirrored:
 *
 *   entries  be64 TID, be64 SN -> be64 offset in tl-<TID>/entries,
 *            be32 length, be64 timestamp, the 32-byte leaf hash, flags,
 *            and a check: the first 8 bytes of the SHA-256 of the key
 *            and the rest of the row
 *   names    bucket, name, NUL, be64 TID, be64 SN -> flags (one row an
 *            entry that names it; the bucket is the first 2 bytes of the
 *            name's SHA-256; a prefix scan gives a name's entries)
 *   buckets  bucket -> be64 rows, and the XOR of the SHA-256 of each of
 *            its names rows (key and value): a query reads the whole
 *            bucket and must find that count and digest, so a names key
 *            changed or lost is found before it can make an absence
 *   roots    be64 TID, be64 SN -> "" (the root changes: read at start)
 *   meta     "tl-<TID>": entries [0, next_sn) indexed, the copy's offset
 *            log_end where SN next_sn starts, tag = the Merkle root of
 *            those next_sn entries
 *
 * The copies stay the source of truth.  Entries are indexed only once
 * they are checked and durable in the copy under a signed head, and each
 * transaction writes its rows and the timeline's meta record together: a
 * kill -9 at any moment leaves the index at its last commit, behind the
 * copy, never ahead of it or torn, and the next start indexes what
 * follows.  At start the indexed part is not read or checked again, nor
 * are its rows scanned: the meta record, the first and last rows and the
 * root changes (a handful, read back for the root-CA history) are all a
 * start reads; the Merkle tree from the tiles must give the meta tag and
 * each signed head's root.  Anything that does not fit (no file, rows missing
 * or out of order, a root that is not the tag, a copy shorter than the
 * index says) is damage: the index is dropped and rebuilt from the
 * copies, with a log line.  Every row an answer is built from is checked
 * as it is read (mr_state_damaged): damage found while serving is logged,
 * and the main thread rebuilds the index while queries get 503.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sk/db.h>

#include "mr.h"

#define MR_IX_SCHEMA   3
#define MR_IX_ROWDATA  (8 + 4 + 8 + SK_SHA256_BYTES + 1)
#define MR_IX_ROWLEN   (MR_IX_ROWDATA + 8)
#define MR_IX_BUCKET   2
#define MR_IX_NAMEMAX  (MR_IX_BUCKET + SK_NAME_MAX + 1 + 16)
#define MR_IX_BROWLEN  (8 + SK_SHA256_BYTES)


/* The SHA-256 of key and value, as one row's share of a check; zeros
 * (which never check) for a row longer than any the index writes. */
static void
mr_index_row_hash(unsigned char h[SK_SHA256_BYTES], const void *k,
    size_t klen, const void *v, size_t vlen)
{
    unsigned char  buf[MR_IX_NAMEMAX + MR_IX_ROWLEN];

    memset(h, 0, SK_SHA256_BYTES);
    if (klen + vlen <= sizeof(buf)) {
        memcpy(buf, k, klen);
        memcpy(buf + klen, v, vlen);
        sk_merkle_digest(h, buf, klen + vlen);
    }
}


static void
mr_index_meta_name(char *out, size_t cap, const mr_tl_t *t)
{
    snprintf(out, cap, "tl-%" PRIu64, t->conf->tid);
}


static void
mr_index_ekey(unsigned char k[16], uint64_t tid, uint64_t sn)
{
    sk_db_u64_put(k, tid);
    sk_db_u64_put(k + 8, sn);
}


static void
mr_index_row_put(unsigned char v[MR_IX_ROWLEN], const unsigned char k[16],
    const mr_loc_t *l)
{
    unsigned char  len[8], h[SK_SHA256_BYTES];

    sk_db_u64_put(v, l->off);
    sk_db_u64_put(len, l->len);
    memcpy(v + 8, len + 4, 4);
    sk_db_u64_put(v + 12, (uint64_t) l->ts);
    memcpy(v + 20, l->leaf, SK_SHA256_BYTES);
    v[20 + SK_SHA256_BYTES] = (unsigned char) l->flags;
    mr_index_row_hash(h, k, 16, v, MR_IX_ROWDATA);
    memcpy(v + MR_IX_ROWDATA, h, 8);
}


/* 0, or -1 if the row is not one mr_index_row_put made for key k. */
static int
mr_index_row_get(mr_loc_t *l, const unsigned char k[16], const void *val,
    size_t vlen)
{
    const unsigned char  *v = val;
    unsigned char         len[8] = { 0 }, h[SK_SHA256_BYTES];

    if (vlen != MR_IX_ROWLEN) {
        return -1;
    }
    mr_index_row_hash(h, k, 16, v, MR_IX_ROWDATA);
    if (memcmp(h, v + MR_IX_ROWDATA, 8) != 0) {
        return -1;
    }
    l->off = sk_db_u64_get(v);
    memcpy(len + 4, v + 8, 4);
    l->len = (uint32_t) sk_db_u64_get(len);
    l->ts = (int64_t) sk_db_u64_get(v + 12);
    memcpy(l->leaf, v + 20, SK_SHA256_BYTES);
    l->flags = v[20 + SK_SHA256_BYTES];
    return 0;
}


/* The bucket of a name: the first MR_IX_BUCKET bytes of its SHA-256. */
static void
mr_index_bucket(unsigned char b[MR_IX_BUCKET], const char *name, size_t n)
{
    unsigned char  h[SK_SHA256_BYTES];

    sk_merkle_digest(h, name, n);
    memcpy(b, h, MR_IX_BUCKET);
}


/* bucket name NUL be64 tid be64 sn; its length. */
static size_t
mr_index_nkey(unsigned char *k, const char *name, uint64_t tid, uint64_t sn)
{
    size_t  n = strlen(name);

    mr_index_bucket(k, name, n);
    memcpy(k + MR_IX_BUCKET, name, n + 1);
    sk_db_u64_put(k + MR_IX_BUCKET + n + 1, tid);
    sk_db_u64_put(k + MR_IX_BUCKET + n + 9, sn);
    return MR_IX_BUCKET + n + 17;
}


/* A bucket row into count and digest: 0, 1 if none (count 0), 2 if
 * malformed, -1 if LMDB fails. */
static int
mr_index_brow(sk_db_txn_t *txn, sk_db_table_t tab, const unsigned char *b,
    uint64_t *count, unsigned char digest[SK_SHA256_BYTES], sk_err_t *err)
{
    const void  *v;
    size_t       vlen;
    int          rc;

    *count = 0;
    memset(digest, 0, SK_SHA256_BYTES);
    rc = sk_db_get(txn, tab, b, MR_IX_BUCKET, &v, &vlen, err);
    if (rc != 0) {
        return rc;
    }
    if (vlen != MR_IX_BROWLEN) {
        return 2;
    }
    *count = sk_db_u64_get(v);
    memcpy(digest, (const unsigned char *) v + 8, SK_SHA256_BYTES);
    return 0;
}


static void
mr_index_xor(unsigned char d[SK_SHA256_BYTES],
    const unsigned char h[SK_SHA256_BYTES])
{
    size_t  i;

    for (i = 0; i < SK_SHA256_BYTES; i++) {
        d[i] ^= h[i];
    }
}


/* Add a names row, and count it in its bucket (a row already there, as
 * a start replays what a crash left, counts once). */
static int
mr_index_name_put(mr_mirror_t *m, sk_db_txn_t *txn, const unsigned char *nk,
    size_t nklen, unsigned char flag, sk_err_t *err)
{
    unsigned char   bv[MR_IX_BROWLEN], h[SK_SHA256_BYTES];
    const void     *v;
    size_t          vlen;
    uint64_t        count;
    int             rc;

    rc = sk_db_get(txn, m->ix_names, nk, nklen, &v, &vlen, err);
    if (rc != 1) {
        return rc == 0 ? 0 : -1;
    }
    rc = mr_index_brow(txn, m->ix_buckets, nk, &count, bv + 8, err);
    if (rc == -1) {
        return -1;
    }
    if (rc == 2) {
        return mr_state_damaged(m, err, "buckets: bucket %02x%02x: a malformed "
            "row", nk[0], nk[1]);
    }
    mr_index_row_hash(h, nk, nklen, &flag, 1);
    mr_index_xor(bv + 8, h);
    sk_db_u64_put(bv, count + 1);
    if (sk_db_put(txn, m->ix_names, nk, nklen, &flag, 1, err) != 0
        || sk_db_put(txn, m->ix_buckets, nk, MR_IX_BUCKET, bv, sizeof(bv),
               err) != 0)
    {
        return -1;
    }
    return 0;
}


/* Remove an index directory's files (data.mdb, lock.mdb) and itself. */
int
mr_index_remove(const char *dir, sk_err_t *err)
{
    const char  *files[] = { "data.mdb", "lock.mdb" };
    char         path[4096];
    size_t       i;

    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        if (unlink(path) != 0 && errno != ENOENT) {
            return sk_err_sys(err, "%s: unlink", path);
        }
    }
    if (rmdir(dir) != 0 && errno != ENOENT) {
        return sk_err_sys(err, "%s: rmdir", dir);
    }
    return 0;
}


int
mr_index_open(mr_mirror_t *m, int fresh, sk_err_t *err)
{
    /* lazy_sync: a system crash may undo the newest commits, never tear
     * the file; the copies are fsynced first, so the index catches up
     * from them at start. */
    sk_db_opts_t  o = { .lazy_sync = 1 };
    char          dir[4096];
    sk_err_t      why;

    snprintf(dir, sizeof(dir), "%s/index", m->conf.data_dir);
    if (fresh && mr_index_remove(dir, err) != 0) {
        return -1;
    }
    if (sk_db_open(&m->db, dir, &o, &why) != 0) {
        if (fresh) {
            *err = why;
            return -1;
        }
        mr_log("%s; rebuilding the index from the copies", why.msg);
        if (mr_index_remove(dir, err) != 0
            || sk_db_open(&m->db, dir, &o, err) != 0)
        {
            return -1;
        }
    }
    if (sk_db_table(m->db, "entries", 1, &m->ix_entries, err) != 0
        || sk_db_table(m->db, "names", 1, &m->ix_names, err) != 0
        || sk_db_table(m->db, "buckets", 1, &m->ix_buckets, err) != 0
        || sk_db_table(m->db, "roots", 1, &m->ix_roots, err) != 0
        || mr_map_open(m, err) != 0)
    {
        sk_db_close(m->db);
        m->db = NULL;
        return -1;
    }
    return 0;
}


void
mr_index_close(mr_mirror_t *m)
{
    mr_map_close(m);
    sk_db_close(m->db);
    m->db = NULL;
}


/* The index does not fit the copy: note it for a rebuild. */
static int
mr_index_damaged(mr_mirror_t *m, const mr_tl_t *t, sk_err_t *err,
    const char *why)
{
    return mr_state_damaged(m, err, "timeline %" PRIu64 ": %s", t->conf->tid,
        why);
}


/* Re-note the root changes among the indexed entries, in SN order. */
static int
mr_index_roots(mr_tl_t *t, const uint64_t *sns, const mr_loc_t *locs,
    size_t n, sk_err_t *err)
{
    sk_entry_t  *e;
    size_t       i;
    char        *text;
    int          rc;

    for (i = 0; i < n; i++) {
        if (mr_copy_pread(t, sns[i], &locs[i], &text, err) != 0) {
            return -1;
        }
        rc = sk_entry_parse(&e, text, locs[i].len, err);
        free(text);
        if (rc != 0) {
            return sk_err_prefix(err, "%s/entries: SN %" PRIu64, t->dir,
                sns[i]);
        }
        rc = mr_roots_note(t, e, sns[i], err);
        sk_entry_free(e);
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}


/* Row tid/sn into *l: 0, 1 if there is none, -1 (SK_ERR_FORMAT: bad). */
static int
mr_index_row(sk_db_txn_t *txn, sk_db_table_t tab, uint64_t tid, uint64_t sn,
    mr_loc_t *l, sk_err_t *err)
{
    unsigned char   ek[16];
    const void     *v;
    size_t          vlen;
    int             rc;

    mr_index_ekey(ek, tid, sn);
    rc = sk_db_get(txn, tab, ek, sizeof(ek), &v, &vlen, err);
    if (rc == 0 && mr_index_row_get(l, ek, v, vlen) != 0) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "entries: timeline %" PRIu64
            " SN %" PRIu64 ": the row does not check (damaged)", tid, sn);
    }
    return rc;
}


/* The root changes' SNs and rows, from the roots table (a handful). */
static int
mr_index_root_rows(mr_mirror_t *m, sk_db_txn_t *txn, const mr_tl_t *t,
    uint64_t next_sn, uint64_t **sns, mr_loc_t **locs, size_t *n,
    sk_err_t *err)
{
    sk_db_iter_t   *it;
    unsigned char   prefix[8];
    const void     *k, *v;
    size_t          klen, vlen, cap = 0;
    uint64_t        sn, *ns;
    mr_loc_t       *nl;
    int             rc;

    *sns = NULL;
    *locs = NULL;
    *n = 0;
    sk_db_u64_put(prefix, t->conf->tid);
    if (sk_db_iter_open(txn, m->ix_roots, prefix, 8, &it, err) != 0) {
        return -1;
    }
    while ((rc = sk_db_iter_next(it, &k, &klen, &v, &vlen, err)) == 0) {
        sn = klen == 16 ? sk_db_u64_get((const unsigned char *) k + 8)
                        : UINT64_MAX;
        if (sn >= next_sn) {
            rc = 2;
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            ns = realloc(*sns, cap * sizeof(**sns));
            *sns = ns != NULL ? ns : *sns;
            nl = realloc(*locs, cap * sizeof(**locs));
            *locs = nl != NULL ? nl : *locs;
            if (ns == NULL || nl == NULL) {
                rc = sk_err_set(err, SK_ERR_NOMEM, "index roots");
                break;
            }
        }
        rc = mr_index_row(txn, m->ix_entries, t->conf->tid, sn,
            &(*locs)[*n], err);
        if (rc != 0 || !((*locs)[*n].flags & MR_IX_ROOT)) {
            rc = rc == -1 && err->code != SK_ERR_FORMAT ? -1 : 2;
            break;
        }
        (*sns)[(*n)++] = sn;
    }
    sk_db_iter_close(it);
    return rc == 1 ? 0 : rc;
}


/* At start: O(root changes), not O(entries).  The index must end where
 * its meta record says (a row for next_sn - 1 that ends at log_end, none
 * for next_sn); rows in between are not read: the tree from the tiles
 * must give the meta tag (mr_store), and every entry read later is
 * checked against its row's leaf. */
int
mr_index_load(mr_mirror_t *m, mr_tl_t *t, uint64_t file_size, sk_err_t *err)
{
    sk_db_meta_t      meta;
    sk_db_txn_t      *txn;
    size_t            nroots = 0;
    uint64_t         *sns = NULL;
    mr_loc_t          first, newest, none, *locs = NULL;
    char              mname[64];
    int               rc;

    mr_index_meta_name(mname, sizeof(mname), t);
    if (sk_db_begin(m->db, 0, &txn, err) != 0) {
        return -1;
    }
    rc = sk_db_meta_get(txn, mname, &meta, err);
    if (rc == 1) {
        memset(&meta, 0, sizeof(meta));
        meta.schema = MR_IX_SCHEMA;
    } else if (rc != 0) {
        sk_db_abort(txn);
        snprintf(mname, sizeof(mname), "%.60s", err->msg);
        return mr_index_damaged(m, t, err, mname);
    }
    if (meta.schema != MR_IX_SCHEMA) {
        sk_db_abort(txn);
        return mr_index_damaged(m, t, err, "another schema");
    }
    memset(&newest, 0, sizeof(newest));
    rc = mr_index_row(txn, m->ix_entries, t->conf->tid, meta.next_sn, &none,
        err);
    if (rc == 1 && meta.next_sn > 0) {
        rc = mr_index_row(txn, m->ix_entries, t->conf->tid, 0, &first, err);
        if (rc == 0) {
            rc = mr_index_row(txn, m->ix_entries, t->conf->tid,
                meta.next_sn - 1, &newest, err);
        }
        if (rc == 0 && (first.off != 0
                        || newest.off + newest.len != meta.log_end))
        {
            rc = 2;
        }
        if (rc == 0) {
            rc = mr_index_root_rows(m, txn, t, meta.next_sn, &sns, &locs,
                &nroots, err);
        }
    } else if (rc == 1) {
        rc = meta.log_end == 0 ? 0 : 2;
    } else if (rc == 0) {
        rc = 2;                 /* a row past the meta record */
    }
    sk_db_abort(txn);
    if (rc == -1 && err->code != SK_ERR_FORMAT) {
        return -1;
    }
    if (rc != 0) {
        free(sns);
        free(locs);
        return mr_index_damaged(m, t, err, "rows missing or out of order");
    }
    if (meta.log_end > file_size) {
        free(sns);
        free(locs);
        return mr_index_damaged(m, t, err, "the copy is shorter than "
            "the index says");
    }
    rc = mr_index_roots(t, sns, locs, nroots, err);
    free(sns);
    free(locs);
    if (rc != 0) {
        return err->code == SK_ERR_SIGNATURE
            ? mr_index_damaged(m, t, err, "it does not fit the copy") : -1;
    }
    t->roots_upto = meta.next_sn;
    memcpy(t->ix_root, meta.tag, sizeof(t->ix_root));
    t->size = meta.next_sn;
    t->end = (off_t) meta.log_end;
    t->last_ts = newest.ts;
    return 0;
}


int
mr_index_add(mr_mirror_t *m, mr_tl_t *t, sk_db_txn_t *with, uint64_t first,
    const mr_ixrow_t *rows, size_t n, const sk_merkle_hash_t root,
    sk_err_t *err)
{
    sk_db_meta_t    meta;
    sk_db_txn_t    *txn = with;
    unsigned char   ek[16], ev[MR_IX_ROWLEN], nk[MR_IX_NAMEMAX], flag;
    size_t          i, nklen;
    char            mname[64];

    if (n == 0) {
        return 0;
    }
    if (txn == NULL && sk_db_begin(m->db, 1, &txn, err) != 0) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        mr_index_ekey(ek, t->conf->tid, first + i);
        mr_index_row_put(ev, ek, &rows[i].loc);
        if (sk_db_put(txn, m->ix_entries, ek, sizeof(ek), ev, sizeof(ev),
                err) != 0)
        {
            goto fail;
        }
        if ((rows[i].loc.flags & MR_IX_ROOT)
            && sk_db_put(txn, m->ix_roots, ek, sizeof(ek), "", 0, err) != 0)
        {
            goto fail;
        }
        if (rows[i].name == NULL) {
            continue;
        }
        if (strlen(rows[i].name) > SK_NAME_MAX) {
            sk_err_set(err, SK_ERR_FORMAT, "index: name too long");
            goto fail;
        }
        nklen = mr_index_nkey(nk, rows[i].name, t->conf->tid, first + i);
        flag = (unsigned char) rows[i].loc.flags;
        if (mr_index_name_put(m, txn, nk, nklen, flag, err) != 0) {
            goto fail;
        }
    }
    memset(&meta, 0, sizeof(meta));
    meta.schema = MR_IX_SCHEMA;
    meta.next_sn = first + n;
    meta.log_end = rows[n - 1].loc.off + rows[n - 1].loc.len;
    memcpy(meta.tag, root, SK_SHA256_BYTES);
    mr_index_meta_name(mname, sizeof(mname), t);
    if (sk_db_meta_put(txn, mname, &meta, err) != 0) {
        goto fail;
    }
    return with != NULL ? 0 : sk_db_commit(txn, err);
fail:
    if (with == NULL) {
        sk_db_abort(txn);
    }
    return -1;
}


int
mr_index_entry(mr_mirror_t *m, const mr_tl_t *t, uint64_t sn, mr_loc_t *loc,
    sk_err_t *err)
{
    sk_db_txn_t  *txn;
    int           rc;

    if (sk_db_begin(m->db, 0, &txn, err) != 0) {
        return -1;
    }
    rc = mr_index_row(txn, m->ix_entries, t->conf->tid, sn, loc, err);
    sk_db_abort(txn);
    if (rc == -1 && err->code == SK_ERR_FORMAT) {
        return mr_state_damaged(m, err, "%s", err->msg);
    }
    /* Callers ask only for SNs the index holds. */
    return rc == 1 ? mr_state_damaged(m, err, "entries: timeline %" PRIu64
                         " SN %" PRIu64 ": no row", t->conf->tid, sn)
                   : rc;
}


/* The configured timeline of this TID, or NULL. */
static mr_tl_t *
mr_index_tl(mr_mirror_t *m, uint64_t tid)
{
    size_t  i;

    for (i = 0; i < m->ntl; i++) {
        if (m->tl[i].conf->tid == tid) {
            return &m->tl[i];
        }
    }
    return NULL;
}


/* Append tid/sn to *refs (its row checked); 1 if t is not mirrored. */
static int
mr_index_ref_add(mr_mirror_t *m, sk_db_txn_t *txn, const char *name,
    uint64_t tid, uint64_t sn, mr_ref_t **refs, size_t *n, size_t *cap,
    sk_err_t *err)
{
    mr_ref_t  *r;
    mr_tl_t   *t;
    int        rc;

    t = mr_index_tl(m, tid);
    if (t == NULL) {
        return 1;               /* no longer mirrored */
    }
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        r = realloc(*refs, *cap * sizeof(**refs));
        if (r == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "name refs");
        }
        *refs = r;
    }
    r = &(*refs)[*n];
    r->tl = t->index;
    r->sn = sn;
    rc = mr_index_row(txn, m->ix_entries, tid, sn, &r->loc, err);
    if (rc == 1) {
        return mr_state_damaged(m, err, "names: %s: timeline %" PRIu64 " SN %"
            PRIu64 ": no entries row", name, tid, sn);
    }
    if (rc == -1) {
        return err->code == SK_ERR_FORMAT
            ? mr_state_damaged(m, err, "names: %s: %s", name, err->msg) : -1;
    }
    (*n)++;
    return 0;
}


/* The name's rows, from a scan of its whole bucket, which must give the
 * bucket row's count and digest: a key changed or lost in it is found
 * here, not taken for an absence. */
static int
mr_index_scan(mr_mirror_t *m, sk_db_txn_t *txn, const char *name,
    mr_ref_t **refs, size_t *n, sk_err_t *err)
{
    sk_db_iter_t   *it;
    unsigned char   b[MR_IX_BUCKET], h[SK_SHA256_BYTES];
    unsigned char   want[SK_SHA256_BYTES], got[SK_SHA256_BYTES] = { 0 };
    const unsigned char  *k;
    const void     *kv, *v;
    size_t          klen, vlen, nlen = strlen(name), cap = 0;
    uint64_t        count, rows = 0;
    int             rc;

    mr_index_bucket(b, name, nlen);
    rc = mr_index_brow(txn, m->ix_buckets, b, &count, want, err);
    if (rc == -1) {
        return -1;
    }
    if (rc == 2) {
        return mr_state_damaged(m, err, "buckets: bucket %02x%02x (of %s): a "
            "malformed row", b[0], b[1], name);
    }
    if (sk_db_iter_open(txn, m->ix_names, b, MR_IX_BUCKET, &it, err) != 0) {
        return -1;
    }
    while ((rc = sk_db_iter_next(it, &kv, &klen, &v, &vlen, err)) == 0) {
        k = kv;
        rows++;
        mr_index_row_hash(h, k, klen, v, vlen);
        mr_index_xor(got, h);
        /* The name takes the NUL: "a.example" is not "a.example.net". */
        if (klen != MR_IX_BUCKET + nlen + 17
            || memcmp(k + MR_IX_BUCKET, name, nlen + 1) != 0)
        {
            continue;
        }
        rc = mr_index_ref_add(m, txn, name,
            sk_db_u64_get(k + MR_IX_BUCKET + nlen + 1),
            sk_db_u64_get(k + MR_IX_BUCKET + nlen + 9), refs, n, &cap, err);
        if (rc == -1) {
            break;
        }
    }
    sk_db_iter_close(it);
    if (rc == -1) {
        return -1;
    }
    if (rows != count || memcmp(got, want, sizeof(got)) != 0) {
        return mr_state_damaged(m, err, "names: bucket %02x%02x (of %s): %"
            PRIu64 " rows, the bucket row says %" PRIu64 "%s", b[0], b[1],
            name, rows, count, rows == count ? " with another digest" : "");
    }
    return 0;
}


int
mr_index_refs(mr_mirror_t *m, const char *name, mr_ref_t **out, size_t *n,
    sk_err_t *err)
{
    sk_db_txn_t  *txn;
    mr_ref_t     *refs = NULL;
    int           rc;

    *out = NULL;
    *n = 0;
    if (strlen(name) > SK_NAME_MAX) {
        return 0;
    }
    if (sk_db_begin(m->db, 0, &txn, err) != 0) {
        return -1;
    }
    rc = mr_index_scan(m, txn, name, &refs, n, err);
    sk_db_abort(txn);
    if (rc != 0) {
        free(refs);
        *n = 0;
        return -1;
    }
    *out = refs;
    return 0;
}
