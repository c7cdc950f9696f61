/*
 * db.c -- sk/db.h over LMDB: open an environment, tables, transactions,
 * rows, prefix iteration, and the meta record an index keeps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lmdb.h>

#include <sk/db.h>


struct sk_db_s {
    MDB_env        *env;
    MDB_dbi         meta;       /* the "meta" table, made at open */
    int             have_meta;  /* 0: read-only and none yet */
    char            dir[4096];
};

struct sk_db_txn_s {
    sk_db_t        *db;
    MDB_txn        *txn;
};

struct sk_db_iter_s {
    sk_db_txn_t    *txn;
    MDB_cursor     *cur;
    unsigned char  *prefix;
    size_t          plen;
    int             started;
    int             done;
};

#define SK_DB_META_TABLE   "meta"
#define SK_DB_META_MAGIC   "SKDBMETA"
#define SK_DB_META_LEN     (8 + 4 + 8 + 8 + SK_DB_TAG_BYTES)


/* An LMDB failure: the directory, what was being done, LMDB's words. */
static int
sk_db_fail(const sk_db_t *db, int rc, sk_err_t *err, const char *what)
{
    sk_err_code_t code = SK_ERR_SYSTEM;

    switch (rc) {
    case MDB_INVALID:
    case MDB_CORRUPTED:
    case MDB_VERSION_MISMATCH:
    case MDB_PAGE_NOTFOUND:
        code = SK_ERR_FORMAT;
        break;
    case MDB_NOTFOUND:
        code = SK_ERR_NOT_FOUND;
        break;
    case MDB_MAP_FULL:
    case MDB_DBS_FULL:
    case MDB_READERS_FULL:
    case MDB_TXN_FULL:
    case MDB_BAD_VALSIZE:
        code = SK_ERR_USAGE;
        break;
    case ENOMEM:
        code = SK_ERR_NOMEM;
        break;
    default:
        break;
    }
    sk_err_set(err, code, "index %s: %s: %s", db->dir, what,
        mdb_strerror(rc));
    if (err != NULL && code == SK_ERR_SYSTEM && rc > 0) {
        err->sys_errno = rc;
    }
    return -1;
}


/*
 * LMDB maps data.mdb and trusts its meta page: a file cut shorter than
 * the pages the meta page names would fault (SIGBUS) on the first read
 * past its end.  Refuse it at open instead.
 */
static int
sk_db_check_size(sk_db_t *db, sk_err_t *err)
{
    MDB_envinfo  info;
    MDB_stat     st;
    struct stat  fst;
    char         path[4200];
    int          rc;

    if ((rc = mdb_env_info(db->env, &info)) != 0
        || (rc = mdb_env_stat(db->env, &st)) != 0)
    {
        return sk_db_fail(db, rc, err, "reading its meta page");
    }
    snprintf(path, sizeof(path), "%s/data.mdb", db->dir);
    if (stat(path, &fst) != 0) {
        return sk_err_sys(err, "index %s: stat data.mdb", db->dir);
    }
    if ((uint64_t) fst.st_size
        < ((uint64_t) info.me_last_pgno + 1) * st.ms_psize)
    {
        return sk_err_set(err, SK_ERR_FORMAT,
            "index %s: data.mdb is %llu bytes, its meta page names %llu "
            "pages of %u: the file was cut short", db->dir,
            (unsigned long long) fst.st_size,
            (unsigned long long) info.me_last_pgno + 1, st.ms_psize);
    }
    return 0;
}


static int
sk_db_open_meta(sk_db_t *db, int create, sk_err_t *err)
{
    sk_db_table_t t;
    sk_err_t      e;

    if (sk_db_table(db, SK_DB_META_TABLE, create, &t, &e) != 0) {
        if (!create && e.code == SK_ERR_NOT_FOUND) {
            return 0;           /* read-only, never written: no meta */
        }
        if (err != NULL) {
            *err = e;
        }
        return -1;
    }
    db->meta = t;
    db->have_meta = 1;
    return 0;
}


int
sk_db_open(sk_db_t **out, const char *dir, const sk_db_opts_t *opts,
    sk_err_t *err)
{
    sk_db_opts_t  def = { 0 };
    sk_db_t      *db;
    unsigned      flags = MDB_NOTLS;
    int           rc;

    *out = NULL;
    if (opts == NULL) {
        opts = &def;
    }
    if (strlen(dir) >= sizeof(db->dir)) {
        return sk_err_set(err, SK_ERR_USAGE, "index %.64s...: path too long",
            dir);
    }
    if (!opts->read_only && mkdir(dir, 0700) != 0 && errno != EEXIST) {
        return sk_err_sys(err, "index %s: mkdir", dir);
    }
    if ((db = calloc(1, sizeof(*db))) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "index %s", dir);
    }
    snprintf(db->dir, sizeof(db->dir), "%s", dir);

    if ((rc = mdb_env_create(&db->env)) != 0) {
        free(db);
        return sk_err_set(err, SK_ERR_NOMEM, "index %s: %s", dir,
            mdb_strerror(rc));
    }
    if ((rc = mdb_env_set_mapsize(db->env, (size_t) (opts->map_size != 0
            ? opts->map_size : SK_DB_MAP_DEFAULT))) != 0
        || (rc = mdb_env_set_maxdbs(db->env, opts->max_tables != 0
            ? opts->max_tables + 1 : SK_DB_TABLES_DEFAULT + 1)) != 0)
    {
        sk_db_fail(db, rc, err, "configuring");
        goto fail;
    }
    if (opts->read_only) {
        flags |= MDB_RDONLY;
    }
    if (opts->lazy_sync) {
        flags |= MDB_NOMETASYNC;
    }
    if (opts->no_sync) {
        flags |= MDB_NOSYNC;
    }
    if ((rc = mdb_env_open(db->env, dir, flags, 0600)) != 0) {
        sk_db_fail(db, rc, err, "open");
        goto fail;
    }
    if (sk_db_check_size(db, err) != 0
        || sk_db_open_meta(db, !opts->read_only, err) != 0)
    {
        goto fail;
    }
    *out = db;
    return 0;

fail:
    mdb_env_close(db->env);
    free(db);
    return -1;
}


void
sk_db_close(sk_db_t *db)
{
    if (db != NULL) {
        mdb_env_close(db->env);
        free(db);
    }
}


const char *
sk_db_dir(const sk_db_t *db)
{
    return db->dir;
}


int
sk_db_table(sk_db_t *db, const char *name, int create, sk_db_table_t *t,
    sk_err_t *err)
{
    MDB_txn *txn;
    MDB_dbi  dbi;
    int      rc;
    char     what[128];

    snprintf(what, sizeof(what), "table \"%.64s\"", name);
    if ((rc = mdb_txn_begin(db->env, NULL, create ? 0 : MDB_RDONLY, &txn))
        != 0)
    {
        return sk_db_fail(db, rc, err, what);
    }
    if ((rc = mdb_dbi_open(txn, name, create ? MDB_CREATE : 0, &dbi)) != 0) {
        mdb_txn_abort(txn);
        return sk_db_fail(db, rc, err, what);
    }
    /* The handle outlives the transaction only once it commits. */
    if ((rc = mdb_txn_commit(txn)) != 0) {
        return sk_db_fail(db, rc, err, what);
    }
    *t = dbi;
    return 0;
}


int
sk_db_begin(sk_db_t *db, int write, sk_db_txn_t **out, sk_err_t *err)
{
    sk_db_txn_t *t;
    int          rc;

    *out = NULL;
    if ((t = calloc(1, sizeof(*t))) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "index %s: transaction",
            db->dir);
    }
    t->db = db;
    if ((rc = mdb_txn_begin(db->env, NULL, write ? 0 : MDB_RDONLY, &t->txn))
        != 0)
    {
        free(t);
        return sk_db_fail(db, rc, err, write ? "begin write" : "begin read");
    }
    *out = t;
    return 0;
}


int
sk_db_commit(sk_db_txn_t *t, sk_err_t *err)
{
    int rc = mdb_txn_commit(t->txn);

    if (rc != 0) {
        sk_db_fail(t->db, rc, err, "commit");
        free(t);
        return -1;
    }
    free(t);
    return 0;
}


int
sk_db_sync(sk_db_t *db, sk_err_t *err)
{
    int rc = mdb_env_sync(db->env, 1);

    return rc != 0 ? sk_db_fail(db, rc, err, "sync") : 0;
}


void
sk_db_abort(sk_db_txn_t *t)
{
    if (t != NULL) {
        mdb_txn_abort(t->txn);
        free(t);
    }
}


int
sk_db_get(sk_db_txn_t *t, sk_db_table_t tab, const void *key, size_t klen,
    const void **val, size_t *vlen, sk_err_t *err)
{
    MDB_val k = { klen, (void *) key }, v;
    int     rc = mdb_get(t->txn, tab, &k, &v);

    if (rc == MDB_NOTFOUND) {
        return 1;
    }
    if (rc != 0) {
        return sk_db_fail(t->db, rc, err, "get");
    }
    *val = v.mv_data;
    *vlen = v.mv_size;
    return 0;
}


int
sk_db_put(sk_db_txn_t *t, sk_db_table_t tab, const void *key, size_t klen,
    const void *val, size_t vlen, sk_err_t *err)
{
    MDB_val k = { klen, (void *) key }, v = { vlen, (void *) val };
    int     rc = mdb_put(t->txn, tab, &k, &v, 0);

    return rc == 0 ? 0 : sk_db_fail(t->db, rc, err, "put");
}


int
sk_db_del(sk_db_txn_t *t, sk_db_table_t tab, const void *key, size_t klen,
    sk_err_t *err)
{
    MDB_val k = { klen, (void *) key };
    int     rc = mdb_del(t->txn, tab, &k, NULL);

    if (rc == MDB_NOTFOUND) {
        return 1;
    }
    return rc == 0 ? 0 : sk_db_fail(t->db, rc, err, "del");
}


int
sk_db_clear(sk_db_txn_t *t, sk_db_table_t tab, sk_err_t *err)
{
    int rc = mdb_drop(t->txn, tab, 0);

    return rc == 0 ? 0 : sk_db_fail(t->db, rc, err, "clear");
}


int
sk_db_count(sk_db_txn_t *t, sk_db_table_t tab, uint64_t *n, sk_err_t *err)
{
    MDB_stat st;
    int      rc = mdb_stat(t->txn, tab, &st);

    if (rc != 0) {
        return sk_db_fail(t->db, rc, err, "stat");
    }
    *n = st.ms_entries;
    return 0;
}


int
sk_db_iter_open(sk_db_txn_t *t, sk_db_table_t tab, const void *prefix,
    size_t plen, sk_db_iter_t **out, sk_err_t *err)
{
    sk_db_iter_t *it;
    int           rc;

    *out = NULL;
    if ((it = calloc(1, sizeof(*it) + plen)) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "index %s: iterator",
            t->db->dir);
    }
    it->txn = t;
    it->prefix = (unsigned char *) (it + 1);
    if (plen > 0) {
        memcpy(it->prefix, prefix, plen);
    }
    it->plen = plen;
    if ((rc = mdb_cursor_open(t->txn, tab, &it->cur)) != 0) {
        free(it);
        return sk_db_fail(t->db, rc, err, "cursor");
    }
    *out = it;
    return 0;
}


int
sk_db_iter_next(sk_db_iter_t *it, const void **key, size_t *klen,
    const void **val, size_t *vlen, sk_err_t *err)
{
    MDB_val k = { it->plen, it->prefix }, v;
    int     rc;

    if (it->done) {
        return 1;
    }
    if (!it->started) {
        it->started = 1;
        rc = it->plen > 0 ? mdb_cursor_get(it->cur, &k, &v, MDB_SET_RANGE)
                          : mdb_cursor_get(it->cur, &k, &v, MDB_FIRST);
    } else {
        rc = mdb_cursor_get(it->cur, &k, &v, MDB_NEXT);
    }
    if (rc == MDB_NOTFOUND) {
        it->done = 1;
        return 1;
    }
    if (rc != 0) {
        return sk_db_fail(it->txn->db, rc, err, "cursor");
    }
    if (k.mv_size < it->plen || memcmp(k.mv_data, it->prefix, it->plen) != 0)
    {
        it->done = 1;           /* sorted: past the prefix, nothing more */
        return 1;
    }
    *key = k.mv_data;
    *klen = k.mv_size;
    *val = v.mv_data;
    *vlen = v.mv_size;
    return 0;
}


void
sk_db_iter_close(sk_db_iter_t *it)
{
    if (it != NULL) {
        mdb_cursor_close(it->cur);
        free(it);
    }
}


/* One row by a cursor op: MDB_LAST, or MDB_SET_RANGE from key. */
static int
sk_db_cursor_one(sk_db_txn_t *t, sk_db_table_t tab, MDB_cursor_op op,
    const char *what, const void **key, size_t *klen, const void **val,
    size_t *vlen, sk_err_t *err)
{
    MDB_cursor *cur;
    MDB_val     k, v;
    int         rc;

    if ((rc = mdb_cursor_open(t->txn, tab, &cur)) != 0) {
        return sk_db_fail(t->db, rc, err, "cursor");
    }
    k.mv_data = (void *) *key;
    k.mv_size = *klen;
    rc = mdb_cursor_get(cur, &k, &v, op);
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) {
        return 1;
    }
    if (rc != 0) {
        return sk_db_fail(t->db, rc, err, what);
    }
    *key = k.mv_data;
    *klen = k.mv_size;
    *val = v.mv_data;
    *vlen = v.mv_size;
    return 0;
}


int
sk_db_last(sk_db_txn_t *t, sk_db_table_t tab, const void **key, size_t *klen,
    const void **val, size_t *vlen, sk_err_t *err)
{
    *key = NULL;
    *klen = 0;
    return sk_db_cursor_one(t, tab, MDB_LAST, "last", key, klen, val, vlen,
        err);
}


int
sk_db_seek(sk_db_txn_t *t, sk_db_table_t tab, const void *from,
    size_t fromlen, const void **key, size_t *klen, const void **val,
    size_t *vlen, sk_err_t *err)
{
    *key = from;
    *klen = fromlen;
    return sk_db_cursor_one(t, tab, MDB_SET_RANGE, "seek", key, klen, val,
        vlen, err);
}


void
sk_db_u64_put(unsigned char out[8], uint64_t v)
{
    int i;

    for (i = 7; i >= 0; i--) {
        out[i] = (unsigned char) (v & 0xff);
        v >>= 8;
    }
}


uint64_t
sk_db_u64_get(const unsigned char in[8])
{
    uint64_t v = 0;
    int      i;

    for (i = 0; i < 8; i++) {
        v = (v << 8) | in[i];
    }
    return v;
}


/* The record: magic, schema (4 bytes), next_sn, log_end (8 each, all
 * big-endian), then the tag. */
int
sk_db_meta_get(sk_db_txn_t *t, const char *name, sk_db_meta_t *m,
    sk_err_t *err)
{
    const unsigned char *p;
    const void          *v;
    size_t               vlen;
    int                  rc;

    if (!t->db->have_meta) {
        return 1;
    }
    rc = sk_db_get(t, t->db->meta, name, strlen(name), &v, &vlen, err);
    if (rc != 0) {
        return rc;
    }
    p = v;
    if (vlen != SK_DB_META_LEN || memcmp(p, SK_DB_META_MAGIC, 8) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "index %s: meta record \"%.64s\" is damaged (%zu bytes)",
            t->db->dir, name, vlen);
    }
    m->schema = (uint32_t) p[8] << 24 | (uint32_t) p[9] << 16
              | (uint32_t) p[10] << 8 | p[11];
    m->next_sn = sk_db_u64_get(p + 12);
    m->log_end = sk_db_u64_get(p + 20);
    memcpy(m->tag, p + 28, SK_DB_TAG_BYTES);
    return 0;
}


int
sk_db_meta_put(sk_db_txn_t *t, const char *name, const sk_db_meta_t *m,
    sk_err_t *err)
{
    unsigned char p[SK_DB_META_LEN];

    if (!t->db->have_meta) {
        return sk_err_set(err, SK_ERR_USAGE,
            "index %s: opened read-only, no meta table", t->db->dir);
    }
    memcpy(p, SK_DB_META_MAGIC, 8);
    p[8] = (unsigned char) (m->schema >> 24);
    p[9] = (unsigned char) (m->schema >> 16);
    p[10] = (unsigned char) (m->schema >> 8);
    p[11] = (unsigned char) m->schema;
    sk_db_u64_put(p + 12, m->next_sn);
    sk_db_u64_put(p + 20, m->log_end);
    memcpy(p + 28, m->tag, SK_DB_TAG_BYTES);
    return sk_db_put(t, t->db->meta, name, strlen(name), p, sizeof(p), err);
}
