/*
 * tl_index.c -- sk-timeline's index: data_dir/index/, an LMDB environment
 * (sk/db.h) holding what the log implies, so that a restart reads only
 * the entries written after the index's last commit and RAM does not grow
 * with the names.
 *
 * Tables (keys big-endian where numbers):
 *   entries  SN -> offset in entries.log, stamp, Merkle leaf hash
 *   names    bucket name -> newest type, budget, SK (Key), Rebinder-Names
 *   seen     bucket name NUL sha256(SK-Signature) -> "" (Change-Services
 *            taken)
 *   sums     bucket -> the XOR of SHA-256 over each names and seen row of
 *            the bucket, key and value (bucket: the first two bytes of
 *            SHA-256(name), so a name's rows sort together)
 *   roots    sha256(DER) -> DER of each trusted root
 *   copies   sha256(copy) -> offset and length in incorporated.log
 *   state    "tid", "budget", "ca_next", "peer" TID -> next SN
 *   logstat  "log", "inc", "certs" -> entries.log's, incorporated.log's,
 *            certs.log's inode, mtime and size at the flush (a file
 *            changed since other than by appends is read again)
 *   meta     "log": SNs indexed, where the next starts, the last leaf;
 *            "incorporated": where incorporated.log's next copy starts
 *
 * The logs stay the truth and the index is derived.  Entries written
 * since the last flush are kept in memory (tl->pend, the names' working
 * set); a flush writes them, with the meta records, in one transaction,
 * and syncs it only after the log's fdatasync (the environment commits
 * with no sync of its own: tl_index_commit), so after kill -9 at any
 * point the index is as of some flush: whole, and behind the log or level
 * with it; after a system crash between the two syncs it may be ahead of
 * the log or its last commit partly written, and the checks below rebuild
 * it.  Appends are acknowledged on the log's sync, never on the index's.
 *
 * At open the index must agree with the logs: its schema, TID and budget
 * settings; its end within the log; the last entry it indexed read back
 * from the log to the same leaf hash.  Otherwise (or if LMDB refuses the
 * files) it is rebuilt from the logs, with a line saying why; so is it if
 * the log replayed on top of it does not match signed-head.
 *
 * LMDB keeps no checksums: a row is checked where it decides.  An entry
 * read through the index must hash to the tree's leaf (tl_store.c); a
 * name's lookup sums every row of its bucket against the sums table
 * first, so that a damaged key, a damaged value or a row gone is found
 * even when the answer is "no such name".  A row that does not check is
 * logged and the index rebuilt from the logs while serving
 * (tl_store_reindex), the append that found it answered 503.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "tl.h"


#define TL_META_INC      "incorporated"
#define TL_ROW_ENTRY     (8 + 8 + SK_MERKLE_HASH_BYTES)
#define TL_ROW_NAME      (1 + 8 + 8 + 4)
#define TL_BUCKET        2      /* bytes of a name's bucket */
#define TL_KEY_MAX       (TL_BUCKET + SK_NAME_MAX + 1 + SK_SHA256_BYTES)


static void
tl_index_u64(unsigned char *p, uint64_t v)
{
    sk_db_u64_put(p, v);
}


static int
tl_index_tables(tl_timeline_t *tl, sk_err_t *err)
{
    return sk_db_table(tl->db, "entries", 1, &tl->t_entries, err) != 0
        || sk_db_table(tl->db, "names", 1, &tl->t_names, err) != 0
        || sk_db_table(tl->db, "seen", 1, &tl->t_seen, err) != 0
        || sk_db_table(tl->db, "roots", 1, &tl->t_roots, err) != 0
        || sk_db_table(tl->db, "copies", 1, &tl->t_copies, err) != 0
        || sk_db_table(tl->db, "state", 1, &tl->t_state, err) != 0
        || sk_db_table(tl->db, "logstat", 1, &tl->t_logstat, err) != 0
        || sk_db_table(tl->db, "sums", 1, &tl->t_sums, err) != 0
        ? -1 : 0;
}


static int
tl_index_env(tl_timeline_t *tl, sk_err_t *err)
{
    /* A scratch index (--check) need not survive a crash. */
    sk_db_opts_t  o = { .lazy_sync = tl->db_scratch,
                        .no_sync = tl->db_scratch || tl->db_marked,
                        .map_size = tl->conf.index_map_size };

    if (sk_db_open(&tl->db, tl->db_dir, &o, err) != 0) {
        return -1;
    }
    if (tl_index_tables(tl, err) != 0 || tl_map_open(tl, err) != 0) {
        tl_map_close(tl);
        sk_db_close(tl->db);
        tl->db = NULL;
        return -1;
    }
    return 0;
}


/* LMDB's two files; the directory stays. */
static int
tl_index_unlink(const char *dir, sk_err_t *err)
{
    static const char *const  files[] = { "data.mdb", "lock.mdb" };
    char                      path[4200];
    size_t                    i;

    for (i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        if (unlink(path) != 0 && errno != ENOENT) {
            return sk_err_sys(err, "%s: unlink", path);
        }
    }
    return 0;
}


/* Throw the index away and start an empty one. */
static int
tl_index_fresh(tl_timeline_t *tl, sk_err_t *err)
{
    tl->index_bad = 0;
    tl_map_close(tl);
    sk_db_close(tl->db);
    tl->db = NULL;
    if (tl_index_unlink(tl->db_dir, err) != 0) {
        return -1;
    }
    return tl_index_env(tl, err);
}


/* A row of the state table as a u64 (1 if none). */
static int
tl_index_state_get(tl_timeline_t *tl, sk_db_txn_t *t, const void *key,
    size_t klen, uint64_t *v, sk_err_t *err)
{
    const void  *val;
    size_t       vlen;
    int          rc = sk_db_get(t, tl->t_state, key, klen, &val, &vlen, err);

    if (rc != 0) {
        return rc;
    }
    if (vlen != 8) {
        return sk_err_set(err, SK_ERR_FORMAT, "index %s: state row of %zu "
            "bytes", tl->db_dir, vlen);
    }
    *v = sk_db_u64_get(val);
    return 0;
}


static int
tl_index_state_put(tl_timeline_t *tl, sk_db_txn_t *t, const void *key,
    size_t klen, uint64_t v, sk_err_t *err)
{
    unsigned char  b[8];

    tl_index_u64(b, v);
    return sk_db_put(t, tl->t_state, key, klen, b, 8, err);
}


static uint64_t
tl_index_budget(const tl_timeline_t *tl)
{
    /* Budgets are computed with these at apply time: other values would
     * give other rows than a replay does. */
    return tl->conf.sk_budget << 32 ^ tl->conf.sk_refill;
}


static void
tl_index_peer_key(unsigned char k[12], uint64_t tid)
{
    memcpy(k, "peer", 4);
    tl_index_u64(k + 4, tid);
}


/* entries.log as it is now: inode, mtime (ns), size.  A log changed in
 * place (edited, restored from a backup) keeps its size but not its
 * mtime: the index no longer says what it holds. */
static int
tl_index_log_stat(const tl_file_t *f, unsigned char v[24], sk_err_t *err)
{
    struct stat  st;

    memset(v, 0, 24);
    if (f->fd < 0) {
        return 0;
    }
    if (fstat(f->fd, &st) != 0) {
        return sk_err_sys(err, "%s: fstat", f->path);
    }
    tl_index_u64(v, (uint64_t) st.st_ino);
    tl_index_u64(v + 8, (uint64_t) st.st_mtim.tv_sec * 1000000000u
        + (uint64_t) st.st_mtim.tv_nsec);
    tl_index_u64(v + 16, (uint64_t) st.st_size);
    return 0;
}


/* The entries row of sn. */
static int
tl_index_row(tl_timeline_t *tl, sk_db_txn_t *t, uint64_t sn,
    const unsigned char **row, sk_err_t *err)
{
    unsigned char  k[8];
    const void    *v;
    size_t         vlen;
    int            rc;

    tl_index_u64(k, sn);
    rc = sk_db_get(t, tl->t_entries, k, 8, &v, &vlen, err);
    if (rc == 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "index %s: no row for SN %"
            PRIu64, tl->db_dir, sn);
    }
    if (rc == 0 && vlen != TL_ROW_ENTRY) {
        return sk_err_set(err, SK_ERR_FORMAT, "index %s: SN %" PRIu64
            ": row of %zu bytes", tl->db_dir, sn, vlen);
    }
    *row = v;
    return rc;
}


/* Read the stored entry [a, b) back from the log: its leaf hash, stamp
 * and the entry itself (*ep, the caller's to free). */
static int
tl_index_leaf_at(tl_timeline_t *tl, off_t a, off_t b, sk_merkle_hash_t leaf,
    int64_t *ts, sk_entry_t **ep, sk_err_t *err)
{
    size_t       slen = (size_t) (b - a);
    char        *stored, *text;
    sk_entry_t  *e = NULL;
    size_t       len;
    int          rc;

    if (b <= a || (stored = malloc(slen + 1)) == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "bad span");
    }
    if (pread(tl->log.fd, stored, slen, a) != (ssize_t) slen) {
        free(stored);
        return sk_err_set(err, SK_ERR_FORMAT, "%s: cannot read offset %jd",
            tl->log.path, (intmax_t) a);
    }
    stored[slen] = '\0';
    if (tl_file_entry_len(stored, slen) != slen) {
        free(stored);
        return sk_err_set(err, SK_ERR_FORMAT, "%s: offset %jd is not one "
            "whole entry of %zu bytes", tl->log.path, (intmax_t) a, slen);
    }
    rc = tl_calog_unpack(tl, &text, &len, stored, slen, err);
    free(stored);
    if (rc == 0) {
        rc = sk_merkle_leaf_hash(leaf, text, len, err) != 0
             || sk_entry_parse(&e, text, len, err) != 0
             || sk_entry_timestamp(e, ts, err) != 0 ? -1 : 0;
        free(text);
    }
    if (rc == 0) {
        *ep = e;
    } else {
        sk_entry_free(e);
    }
    return rc;
}


/* Is file f the one the index was written against, unchanged but for
 * appends? */
static int
tl_index_unchanged(tl_timeline_t *tl, sk_db_txn_t *t, const tl_file_t *f,
    const char *key, sk_err_t *err)
{
    unsigned char  now[24];
    const void    *sv;
    size_t         svlen;
    int            rc;

    if (tl_index_log_stat(f, now, err) != 0) {
        return -1;
    }
    rc = sk_db_get(t, tl->t_logstat, key, strlen(key), &sv, &svlen, err);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    if (svlen != 24 || memcmp(sv, now, 8) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s is another file than the "
            "one it indexed", f->path);
    }
    if (sk_db_u64_get((const unsigned char *) sv + 16)
        > sk_db_u64_get(now + 16))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "%s was cut shorter since it "
            "was indexed", f->path);
    }
    if (memcmp((const unsigned char *) sv + 16, now + 16, 8) == 0
        && memcmp((const unsigned char *) sv + 8, now + 8, 8) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "%s was changed in place "
            "since it was indexed (same size, another mtime)", f->path);
    }
    return 0;
}


/* Does the index agree with the logs?  0: yes (*m the log's meta, or
 * m->next_sn 0 if it is empty); -1 and err says why not. */
static int
tl_index_agrees(tl_timeline_t *tl, sk_db_txn_t *t, sk_db_meta_t *m,
    sk_db_meta_t *inc, sk_err_t *err)
{
    const unsigned char  *row;
    sk_merkle_hash_t      leaf;
    sk_entry_t           *last = NULL;
    uint64_t              v, n;
    int64_t               ts;
    int                   rc;

    memset(inc, 0, sizeof(*inc));
    rc = sk_db_meta_get(t, TL_META_LOG, m, err);
    if (rc != 0) {
        memset(m, 0, sizeof(*m));
        if (rc < 0) {
            return -1;
        }
        if (sk_db_count(t, tl->t_entries, &n, err) != 0) {
            return -1;
        }
        return n == 0 ? 0 : sk_err_set(err, SK_ERR_FORMAT,
            "%" PRIu64 " entry rows but no meta record", n);
    }
    if (m->schema != TL_INDEX_SCHEMA) {
        return sk_err_set(err, SK_ERR_FORMAT, "schema %u, not %u", m->schema,
            TL_INDEX_SCHEMA);
    }
    if (tl_index_state_get(tl, t, "tid", 3, &v, err) != 0
        || v != tl->conf.tid)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "made for another TID");
    }
    if (tl_index_state_get(tl, t, "budget", 6, &v, err) != 0
        || v != tl_index_budget(tl))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "made with other sk_budget or "
            "sk_refill settings");
    }
    if (m->log_end > (uint64_t) tl->log.size) {
        return sk_err_set(err, SK_ERR_FORMAT, "it ends at offset %" PRIu64
            " of %s, which has %jd bytes", m->log_end, tl->log.path,
            (intmax_t) tl->log.size);
    }
    if (sk_db_count(t, tl->t_entries, &n, err) != 0) {
        return -1;
    }
    if (n != m->next_sn) {
        return sk_err_set(err, SK_ERR_FORMAT, "%" PRIu64 " entry rows, its "
            "meta record says %" PRIu64, n, m->next_sn);
    }
    if (tl_index_unchanged(tl, t, &tl->log, "log", err) != 0
        || tl_index_unchanged(tl, t, &tl->inc, "inc", err) != 0
        || tl_index_unchanged(tl, t, &tl->calog_file, "certs", err) != 0)
    {
        return -1;
    }
    if (m->next_sn > 0) {
        if (tl_index_row(tl, t, m->next_sn - 1, &row, err) != 0) {
            return -1;
        }
        if (tl_index_leaf_at(tl, (off_t) sk_db_u64_get(row),
                (off_t) m->log_end, leaf, &ts, &last, err) != 0)
        {
            return sk_err_prefix(err, "SN %" PRIu64, m->next_sn - 1);
        }
        /* Its stamp orders the next entry: the row's must be the log's. */
        if (memcmp(leaf, row + 16, sizeof(leaf)) != 0
            || memcmp(leaf, m->tag, sizeof(leaf)) != 0
            || (int64_t) sk_db_u64_get(row + 8) != ts)
        {
            sk_entry_free(last);
            return sk_err_set(err, SK_ERR_FORMAT, "SN %" PRIu64 " in %s is "
                "not the entry it indexed", m->next_sn - 1, tl->log.path);
        }
        rc = tl_map_agrees(tl, t, last, err);
        sk_entry_free(last);
        if (rc != 0) {
            return -1;
        }
    }
    rc = sk_db_meta_get(t, TL_META_INC, inc, err);
    if (rc < 0) {
        return -1;
    }
    if (rc == 0 && inc->log_end > (uint64_t) tl->inc.size) {
        return sk_err_set(err, SK_ERR_FORMAT, "it ends at offset %" PRIu64
            " of %s, which has %jd bytes", inc->log_end, tl->inc.path,
            (intmax_t) tl->inc.size);
    }
    return 0;
}


/* A roots row: its key is the SHA-256 of its DER, checked. */
static int
tl_index_root(tl_timeline_t *tl, const void *k, size_t klen, const void *v,
    size_t vlen, sk_err_t *err)
{
    unsigned char  h[SK_SHA256_BYTES];

    if (klen == sizeof(h)) {
        sk_merkle_digest(h, v, vlen);
    }
    if (klen != sizeof(h) || memcmp(h, k, sizeof(h)) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: table roots: a "
            "row whose DER does not hash to its key", tl->db_dir);
    }
    return tl_roots_add(tl, v, vlen, err) < 0 ? -1 : 0;
}


/* What the process keeps in memory: roots, peers, the tree's leaves. */
static int
tl_index_load(tl_timeline_t *tl, sk_db_txn_t *t, const sk_db_meta_t *m,
    const sk_db_meta_t *inc, sk_err_t *err)
{
    sk_db_iter_t   *it;
    const void     *k, *v;
    size_t          klen, vlen, i;
    unsigned char   pk[12];
    uint64_t        val;
    int             rc;

    if (sk_db_iter_open(t, tl->t_roots, NULL, 0, &it, err) != 0) {
        return -1;
    }
    while ((rc = sk_db_iter_next(it, &k, &klen, &v, &vlen, err)) == 0
           && (rc = tl_index_root(tl, k, klen, v, vlen, err)) == 0)
    {
    }
    sk_db_iter_close(it);
    if (rc < 0 || tl_roots_store(tl, err) != 0) {
        return -1;
    }
    rc = tl_index_state_get(tl, t, "ca_next", 7, &val, err);
    if (rc < 0) {
        return -1;
    }
    tl->ca_next = rc == 0 ? (uint32_t) val : 0;
    for (i = 0; i < tl->npeers; i++) {
        tl_index_peer_key(pk, tl->peers[i].tid);
        rc = tl_index_state_get(tl, t, pk, sizeof(pk), &val, err);
        if (rc < 0) {
            return -1;
        }
        tl->peers[i].next_sn = rc == 0 ? val : 0;
    }

    /* The tree is tl_tree_open's (the tiles); only the last stamp is
     * needed here, for the next entry's order check. */
    if (m->next_sn > 0) {
        rc = sk_db_last(t, tl->t_entries, &k, &klen, &v, &vlen, err);
        if (rc < 0) {
            return -1;
        }
        if (rc > 0 || klen != 8 || sk_db_u64_get(k) != m->next_sn - 1
            || vlen != TL_ROW_ENTRY)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "index %s: no entries row "
                "%" PRIu64 ", the last one meta counts", tl->db_dir,
                m->next_sn - 1);
        }
        tl->last_ts = (int64_t) sk_db_u64_get((const unsigned char *) v + 8);
    }
    tl->size = tl->indexed = tl->index_loaded = m->next_sn;
    tl->end_off = (off_t) m->log_end;
    tl->inc_indexed = (off_t) inc->log_end;
    return 0;
}


/* Reset what the open index gave, to build it again from SN 0. */
static void
tl_index_forget(tl_timeline_t *tl)
{
    size_t  i;

    tl_names_forget(tl);
    tl_roots_clear(tl);
    tl->ca_next = 0;
    for (i = 0; i < tl->npeers; i++) {
        tl->peers[i].next_sn = 0;
    }
    tl->ncopies = 0;
    tl->npend = 0;
    tl->roots_dirty = 0;
    tl->size = tl->indexed = tl->index_loaded = 0;
    tl->logged = tl->durable = 0;
    tl->end_off = tl->inc_indexed = 0;
    tl->last_ts = 0;
}


int
tl_index_open(tl_timeline_t *tl, sk_err_t *err)
{
    sk_db_meta_t  m, inc;
    sk_db_txn_t  *t;
    sk_err_t      why;
    const char   *tmp;
    int           rc, crashed;

    if (tl->mode == TL_CHECK) {
        /* --check changes nothing in data_dir: it replays the whole log
         * into a scratch index, then compares data_dir/index/ with it. */
        tmp = getenv("TMPDIR");
        snprintf(tl->db_dir, sizeof(tl->db_dir), "%s/sk-timeline-check."
            "XXXXXX", tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
        if (mkdtemp(tl->db_dir) == NULL) {
            return sk_err_sys(err, "%s: mkdtemp", tl->db_dir);
        }
        tl->db_scratch = 1;
        return tl_index_env(tl, err);
    }
    snprintf(tl->db_dir, sizeof(tl->db_dir), "%s/%s", tl->conf.data_dir,
        TL_INDEX_DIR);
    tl_index_boot_begin(tl->db_dir, &crashed, &tl->db_marked);
    if (crashed && tl->mode != TL_REPAIR) {
        tl_log("%s: the system went down while it was open (a batch's "
            "commit is synced after it): rebuilding it from the log",
            tl->db_dir);
        return tl_index_fresh(tl, err);
    }
    if (tl->mode == TL_REPAIR) {
        tl_say("%s: rebuilding it from the log", tl->db_dir);
        if (mkdir(tl->db_dir, 0700) != 0 && errno != EEXIST) {
            return sk_err_sys(err, "%s: mkdir", tl->db_dir);
        }
        return tl_index_fresh(tl, err);
    }
    if (tl_index_env(tl, &why) != 0) {
        tl_log("%s: %s; rebuilding it from the log", tl->db_dir, why.msg);
        return tl_index_fresh(tl, err);
    }
    if (sk_db_begin(tl->db, 0, &t, err) != 0) {
        return -1;
    }
    rc = tl_index_agrees(tl, t, &m, &inc, &why);
    if (rc == 0 && (rc = tl_index_load(tl, t, &m, &inc, &why)) != 0) {
        tl_index_forget(tl);
    }
    sk_db_abort(t);
    /* A start may cut torn tails: the flush at its end records the logs
     * as they are then. */
    tl->stat_stale = 1;
    if (rc != 0) {
        tl_log("%s: %s; rebuilding it from the log", tl->db_dir, why.msg);
        return tl_index_fresh(tl, err);
    }
    if (m.next_sn == 0 && tl->log.size > 0) {
        tl_log("%s: empty; building it from the log", tl->db_dir);
    }
    return 0;
}


int
tl_index_reset(tl_timeline_t *tl, sk_err_t *err)
{
    tl_index_forget(tl);
    return tl_index_fresh(tl, err);
}


int
tl_index_rebuild(tl_timeline_t *tl, const char *why, sk_err_t *err)
{
    sk_merkle_tree_free(tl->tree);
    tl->tree = NULL;
    tl_log("%s: the log read on from it: %s; rebuilding it from the log",
        tl->db_dir, why);
    return tl_index_reset(tl, err);
}


off_t
tl_index_inc_from(const tl_timeline_t *tl)
{
    return tl->inc_indexed;
}


int
tl_index_add(tl_timeline_t *tl, int64_t ts, const sk_merkle_hash_t leaf,
    sk_err_t *err)
{
    tl_pending_t  *p;
    size_t         cap;

    if (tl->npend == tl->pend_cap) {
        cap = tl->pend_cap != 0 ? tl->pend_cap * 2 : 256;
        p = realloc(tl->pend, cap * sizeof(*p));
        if (p == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "index: pending entries");
        }
        tl->pend = p;
        tl->pend_cap = cap;
    }
    p = &tl->pend[tl->npend++];
    p->off = tl->end_off;
    p->ts = ts;
    memcpy(p->leaf, leaf, SK_MERKLE_HASH_BYTES);
    return 0;
}


/* The entries row of an indexed SN, in a read transaction of its own. */
static int
tl_index_read_row(tl_timeline_t *tl, uint64_t sn,
    unsigned char row[TL_ROW_ENTRY], sk_err_t *err)
{
    const unsigned char  *r;
    sk_db_txn_t          *t;
    int                   rc;

    if (sk_db_begin(tl->db, 0, &t, err) != 0) {
        return -1;
    }
    rc = tl_index_row(tl, t, sn, &r, err);
    if (rc == 0) {
        memcpy(row, r, TL_ROW_ENTRY);
    }
    sk_db_abort(t);
    return rc;
}


int
tl_index_off(tl_timeline_t *tl, uint64_t sn, off_t *off, sk_err_t *err)
{
    unsigned char  row[TL_ROW_ENTRY];

    if (sn > tl->size) {
        return sk_err_set(err, SK_ERR_USAGE, "SN %" PRIu64 " past the log",
            sn);
    }
    if (sn == tl->size) {
        *off = tl->end_off;
        return 0;
    }
    if (sn >= tl->indexed) {
        *off = tl->pend[sn - tl->indexed].off;
        return 0;
    }
    if (tl_index_read_row(tl, sn, row, err) != 0) {
        return -1;
    }
    *off = (off_t) sk_db_u64_get(row);
    return 0;
}


int
tl_index_leaf(tl_timeline_t *tl, uint64_t sn, int tree, sk_merkle_hash_t leaf,
    sk_err_t *err)
{
    unsigned char  row[TL_ROW_ENTRY];

    if (sn >= tl->size) {
        return sk_err_set(err, SK_ERR_USAGE, "SN %" PRIu64 " past the log",
            sn);
    }
    if (tree && tl->tree != NULL && sn < sk_merkle_tree_size(tl->tree)) {
        return sk_merkle_tree_leaf_get(leaf, tl->tree, sn, err);
    }
    if (sn >= tl->indexed) {
        memcpy(leaf, tl->pend[sn - tl->indexed].leaf, SK_MERKLE_HASH_BYTES);
        return 0;
    }
    if (tl_index_read_row(tl, sn, row, err) != 0) {
        return -1;
    }
    memcpy(leaf, row + 16, SK_MERKLE_HASH_BYTES);
    return 0;
}


void
tl_index_damaged(tl_timeline_t *tl, const char *fmt, ...)
{
    char     msg[SK_ERR_MSG_MAX];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    tl->index_bad = 1;
    tl_log("index damaged: %s; rebuilding it from the log", msg);
}


/* A name's bucket: its rows sort together, and sum to the sums row. */
static void
tl_index_bucket(unsigned char b[TL_BUCKET], const char *name, size_t len)
{
    unsigned char  h[SK_SHA256_BYTES];

    sk_merkle_digest(h, name, len);
    memcpy(b, h, TL_BUCKET);
}


/* The key of name's names row (nul 0), or the start of its seen rows'
 * keys (nul 1); its length.  name is at most SK_NAME_MAX bytes. */
static size_t
tl_index_name_key(unsigned char k[TL_KEY_MAX], const char *name, int nul)
{
    size_t  nl = strlen(name);

    tl_index_bucket(k, name, nl);
    memcpy(k + TL_BUCKET, name, nl);
    k[TL_BUCKET + nl] = '\0';
    return TL_BUCKET + nl + (nul != 0);
}


/* sum ^= SHA-256(table, key length, key, value) of one row. */
static void
tl_index_sum_row(unsigned char sum[SK_SHA256_BYTES], char table,
    const void *k, size_t klen, const void *v, size_t vlen)
{
    unsigned char  h[SK_SHA256_BYTES], kl[2] = { (unsigned char) (klen >> 8),
                                                 (unsigned char) klen };
    EVP_MD_CTX    *ctx = EVP_MD_CTX_new();
    size_t         i;

    if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1
        || EVP_DigestUpdate(ctx, &table, 1) != 1
        || EVP_DigestUpdate(ctx, kl, 2) != 1
        || EVP_DigestUpdate(ctx, k, klen) != 1
        || EVP_DigestUpdate(ctx, v, vlen) != 1
        || EVP_DigestFinal_ex(ctx, h, NULL) != 1)
    {
        memset(h, 0xff, sizeof(h));     /* never a match: found damaged */
    }
    EVP_MD_CTX_free(ctx);
    for (i = 0; i < SK_SHA256_BYTES; i++) {
        sum[i] ^= h[i];
    }
}


/* The rows of table t under the bucket prefix b, summed into sum; *row:
 * the one whose key is k[0..klen), if any. */
static int
tl_index_sum_table(sk_db_txn_t *t, sk_db_table_t table,
    char tag, const unsigned char *k, size_t klen,
    unsigned char sum[SK_SHA256_BYTES], const void **row, size_t *rowlen,
    sk_err_t *err)
{
    sk_db_iter_t  *it;
    const void    *rk, *rv;
    size_t         rkl, rvl;
    int            rc;

    if (sk_db_iter_open(t, table, k, TL_BUCKET, &it, err) != 0) {
        return -1;
    }
    while ((rc = sk_db_iter_next(it, &rk, &rkl, &rv, &rvl, err)) == 0) {
        tl_index_sum_row(sum, tag, rk, rkl, rv, rvl);
        if (row != NULL && rkl == klen && memcmp(rk, k, klen) == 0) {
            *row = rv;
            *rowlen = rvl;
        }
    }
    sk_db_iter_close(it);
    return rc < 0 ? -1 : 0;
}


/* The sums row of bucket b (zero if none). */
static int
tl_index_sum_get(tl_timeline_t *tl, sk_db_txn_t *t, const unsigned char *b,
    unsigned char sum[SK_SHA256_BYTES], sk_err_t *err)
{
    const void  *v;
    size_t       vlen;
    int          rc = sk_db_get(t, tl->t_sums, b, TL_BUCKET, &v, &vlen, err);

    memset(sum, 0, SK_SHA256_BYTES);
    if (rc == 0 && vlen != SK_SHA256_BYTES) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: table sums, "
            "bucket %02x%02x: a row of %zu bytes", tl->db_dir, b[0], b[1],
            vlen);
    }
    if (rc == 0) {
        memcpy(sum, v, SK_SHA256_BYTES);
    }
    return rc < 0 ? -1 : 0;
}


/* Check name's bucket, every names and seen row in it, against its sums
 * row; *row: name's names row (NULL if none). */
static int
tl_index_bucket_check(tl_timeline_t *tl, sk_db_txn_t *t, const char *name,
    const void **row, size_t *rowlen, sk_err_t *err)
{
    unsigned char  k[TL_KEY_MAX], sum[SK_SHA256_BYTES], want[SK_SHA256_BYTES];
    size_t         klen = tl_index_name_key(k, name, 0);

    *row = NULL;
    memset(sum, 0, sizeof(sum));
    if (tl_index_sum_table(t, tl->t_names, 'n', k, klen, sum, row, rowlen,
            err) != 0
        || tl_index_sum_table(t, tl->t_seen, 's', k, 0, sum, NULL, NULL,
               err) != 0
        || tl_index_sum_get(tl, t, k, want, err) != 0)
    {
        return -1;
    }
    if (memcmp(sum, want, sizeof(sum)) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: tables names "
            "and seen, bucket %02x%02x (of %s): its rows do not sum to its "
            "sums row: a row damaged or gone", tl->db_dir, k[0], k[1], name);
    }
    return 0;
}


/* names row: type (1), tokens (8, the double's bits), tokens_at (8),
 * length of Key (4), Key, Rebinder-Names. */
static int
tl_index_name_decode(tl_timeline_t *tl, const char *name,
    const unsigned char *p, size_t len, tl_name_t *n, sk_err_t *err)
{
    uint64_t  bits;
    uint32_t  klen;

    if (len < TL_ROW_NAME) {
        return sk_err_set(err, SK_ERR_FORMAT, "index %s: name %s: row of %zu "
            "bytes", tl->db_dir, name, len);
    }
    klen = (uint32_t) p[17] << 24 | (uint32_t) p[18] << 16
         | (uint32_t) p[19] << 8 | p[20];
    if (klen > len - TL_ROW_NAME) {
        return sk_err_set(err, SK_ERR_FORMAT, "index %s: name %s: key "
            "length %u past the row", tl->db_dir, name, klen);
    }
    n->last = (sk_entry_type_t) p[0];
    bits = sk_db_u64_get(p + 1);
    memcpy(&n->tokens, &bits, sizeof(bits));
    n->tokens_at = (int64_t) sk_db_u64_get(p + 9);
    n->key = strndup((const char *) p + TL_ROW_NAME, klen);
    n->rebinders = strndup((const char *) p + TL_ROW_NAME + klen,
        len - TL_ROW_NAME - klen);
    if (n->key == NULL || n->rebinders == NULL) {
        free(n->key);
        free(n->rebinders);
        n->key = n->rebinders = NULL;
        return sk_err_set(err, SK_ERR_NOMEM, "index: name %s", name);
    }
    return 0;
}


int
tl_index_name_get(tl_timeline_t *tl, const char *name, tl_name_t *n,
    sk_err_t *err)
{
    sk_db_txn_t  *t;
    const void   *v;
    size_t        vlen;
    int           rc;

    if (strlen(name) > SK_NAME_MAX) {
        return 1;               /* entries' names are shorter */
    }
    if (sk_db_begin(tl->db, 0, &t, err) != 0) {
        return -1;
    }
    rc = tl_index_bucket_check(tl, t, name, &v, &vlen, err);
    if (rc == 0) {
        rc = v == NULL ? 1 : tl_index_name_decode(tl, name, v, vlen, n, err);
    }
    sk_db_abort(t);
    return rc;
}


/* Put one names or seen row, keeping its bucket's sums row. */
static int
tl_index_put_summed(tl_timeline_t *tl, sk_db_txn_t *t, sk_db_table_t table,
    char tag, const unsigned char *k, size_t klen, const void *v,
    size_t vlen, sk_err_t *err)
{
    unsigned char  sum[SK_SHA256_BYTES];
    const void    *old;
    size_t         olen;
    int            rc;

    if (tl_index_sum_get(tl, t, k, sum, err) != 0) {
        return -1;
    }
    rc = sk_db_get(t, table, k, klen, &old, &olen, err);
    if (rc < 0) {
        return -1;
    }
    if (rc == 0) {
        tl_index_sum_row(sum, tag, k, klen, old, olen);
    }
    tl_index_sum_row(sum, tag, k, klen, v, vlen);
    return sk_db_put(t, table, k, klen, v, vlen, err) != 0
           || sk_db_put(t, tl->t_sums, k, TL_BUCKET, sum, sizeof(sum), err)
              != 0 ? -1 : 0;
}


static int
tl_index_name_put(tl_timeline_t *tl, sk_db_txn_t *t, const tl_name_t *n,
    sk_err_t *err)
{
    size_t          klen = strlen(n->key), rlen = strlen(n->rebinders);
    size_t          nk, i;
    unsigned char  *p, k[TL_KEY_MAX];
    uint64_t        bits;
    int             rc;

    if (strlen(n->name) > SK_NAME_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "index: name %s too long",
            n->name);
    }
    if ((p = malloc(TL_ROW_NAME + klen + rlen)) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "index: name %s", n->name);
    }
    p[0] = (unsigned char) n->last;
    memcpy(&bits, &n->tokens, sizeof(bits));
    tl_index_u64(p + 1, bits);
    tl_index_u64(p + 9, (uint64_t) n->tokens_at);
    p[17] = (unsigned char) (klen >> 24);
    p[18] = (unsigned char) (klen >> 16);
    p[19] = (unsigned char) (klen >> 8);
    p[20] = (unsigned char) klen;
    memcpy(p + TL_ROW_NAME, n->key, klen);
    memcpy(p + TL_ROW_NAME + klen, n->rebinders, rlen);
    nk = tl_index_name_key(k, n->name, 0);
    rc = tl_index_put_summed(tl, t, tl->t_names, 'n', k, nk, p,
        TL_ROW_NAME + klen + rlen, err);
    free(p);
    nk = tl_index_name_key(k, n->name, 1);
    for (i = 0; rc == 0 && i < n->nseen; i++) {
        memcpy(k + nk, n->seen[i], SK_SHA256_BYTES);
        rc = tl_index_put_summed(tl, t, tl->t_seen, 's', k,
            nk + SK_SHA256_BYTES, "", 0, err);
    }
    return rc;
}


int
tl_index_seen(tl_timeline_t *tl, const char *name,
    const unsigned char h[SK_SHA256_BYTES])
{
    unsigned char  k[TL_KEY_MAX];
    size_t         nk, vlen;
    const void    *v;
    sk_db_txn_t   *t;
    sk_err_t       err;
    int            rc;

    if (strlen(name) > SK_NAME_MAX) {
        return 0;
    }
    /* Its bucket was checked when the name was looked up. */
    nk = tl_index_name_key(k, name, 1);
    memcpy(k + nk, h, SK_SHA256_BYTES);
    if (sk_db_begin(tl->db, 0, &t, &err) != 0) {
        rc = -1;
    } else {
        rc = sk_db_get(t, tl->t_seen, k, nk + SK_SHA256_BYTES, &v, &vlen,
            &err);
        sk_db_abort(t);
    }
    if (rc < 0) {
        /* Not knowing is not "not seen": no append until it is rebuilt. */
        tl_index_damaged(tl, "%s", err.msg);
        return 1;
    }
    return rc == 0;
}


int
tl_index_copy_get(tl_timeline_t *tl, const unsigned char *h, tl_copy_t *c,
    sk_err_t *err)
{
    sk_db_txn_t  *t;
    const void   *v;
    size_t        vlen;
    int           rc;

    if (sk_db_begin(tl->db, 0, &t, err) != 0) {
        return -1;
    }
    rc = sk_db_get(t, tl->t_copies, h, SK_SHA256_BYTES, &v, &vlen, err);
    if (rc == 0 && vlen != 16) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "index %s: copies row of %zu "
            "bytes", tl->db_dir, vlen);
    }
    if (rc == 0) {
        memcpy(c->hash, h, SK_SHA256_BYTES);
        c->off = (off_t) sk_db_u64_get(v);
        c->len = (size_t) sk_db_u64_get((const unsigned char *) v + 8);
    }
    sk_db_abort(t);
    return rc;
}


static int
tl_index_put_roots(tl_timeline_t *tl, sk_db_txn_t *t, sk_err_t *err)
{
    unsigned char  *der;
    size_t          i;
    int             len, rc;

    if (sk_db_clear(t, tl->t_roots, err) != 0) {
        return -1;
    }
    for (i = 0; i < tl->nroots; i++) {
        der = NULL;
        if ((len = i2d_X509(tl->roots[i].cert, &der)) <= 0) {
            return sk_err_crypto(err, "index: root");
        }
        rc = sk_db_put(t, tl->t_roots, tl->roots[i].hash, SK_SHA256_BYTES,
            der, (size_t) len, err);
        OPENSSL_free(der);
        if (rc != 0) {
            return -1;
        }
    }
    return tl_index_state_put(tl, t, "ca_next", 7, tl->ca_next, err);
}


/* Everything pending, in the open write transaction t. */
static int
tl_index_write(tl_timeline_t *tl, sk_db_txn_t *t, sk_err_t *err)
{
    unsigned char  k[12], row[TL_ROW_ENTRY], kc[SK_SHA256_BYTES], st[24];
    sk_db_meta_t   m = { .schema = TL_INDEX_SCHEMA };
    const unsigned char *last;
    unsigned char  v[16];
    size_t         i;

    for (i = 0; i < tl->npend; i++) {
        tl_index_u64(k, tl->indexed + i);
        tl_index_u64(row, (uint64_t) tl->pend[i].off);
        tl_index_u64(row + 8, (uint64_t) tl->pend[i].ts);
        memcpy(row + 16, tl->pend[i].leaf, SK_MERKLE_HASH_BYTES);
        if (sk_db_put(t, tl->t_entries, k, 8, row, sizeof(row), err) != 0) {
            return -1;
        }
    }
    for (i = 0; i < tl->nslots; i++) {
        if (tl->names[i] != NULL && tl->names[i]->dirty
            && tl_index_name_put(tl, t, tl->names[i], err) != 0)
        {
            return -1;
        }
    }
    for (i = 0; i < tl->ncopies; i++) {
        memcpy(kc, tl->copies[i].hash, sizeof(kc));
        tl_index_u64(v, (uint64_t) tl->copies[i].off);
        tl_index_u64(v + 8, (uint64_t) tl->copies[i].len);
        if (sk_db_put(t, tl->t_copies, kc, sizeof(kc), v, 16, err) != 0) {
            return -1;
        }
    }
    if (tl->roots_dirty && tl_index_put_roots(tl, t, err) != 0) {
        return -1;
    }
    for (i = 0; i < tl->npeers; i++) {
        tl_index_peer_key(k, tl->peers[i].tid);
        if (tl_index_state_put(tl, t, k, 12, tl->peers[i].next_sn, err) != 0)
        {
            return -1;
        }
    }
    if (tl_index_state_put(tl, t, "tid", 3, tl->conf.tid, err) != 0
        || tl_index_state_put(tl, t, "budget", 6, tl_index_budget(tl), err)
           != 0)
    {
        return -1;
    }
    if (tl_index_log_stat(&tl->log, st, err) != 0
        || sk_db_put(t, tl->t_logstat, "log", 3, st, 24, err) != 0
        || tl_index_log_stat(&tl->inc, st, err) != 0
        || sk_db_put(t, tl->t_logstat, "inc", 3, st, 24, err) != 0
        || tl_index_log_stat(&tl->calog_file, st, err) != 0
        || sk_db_put(t, tl->t_logstat, "certs", 5, st, 24, err) != 0)
    {
        return -1;
    }
    m.next_sn = tl->size;
    m.log_end = (uint64_t) tl->end_off;
    if (tl->npend > 0) {
        memcpy(m.tag, tl->pend[tl->npend - 1].leaf, SK_MERKLE_HASH_BYTES);
    } else if (tl->size > 0) {
        if (tl_index_row(tl, t, tl->size - 1, &last, err) != 0) {
            return -1;
        }
        memcpy(m.tag, last + 16, SK_MERKLE_HASH_BYTES);
    }
    if (sk_db_meta_put(t, TL_META_LOG, &m, err) != 0) {
        return -1;
    }
    memset(&m, 0, sizeof(m));
    m.schema = TL_INDEX_SCHEMA;
    m.log_end = (uint64_t) tl->inc.end;
    return sk_db_meta_put(t, TL_META_INC, &m, err);
}


static int
tl_index_dirty(const tl_timeline_t *tl)
{
    size_t  i;

    if (tl->npend > 0 || tl->ncopies > 0 || tl->roots_dirty
        || tl->stat_stale || (tl->map != NULL && (tl->map_seal
                                                  || sk_map_staged(tl->map))))
    {
        return 1;
    }
    for (i = 0; i < tl->nslots; i++) {
        if (tl->names[i] != NULL && tl->names[i]->dirty) {
            return 1;
        }
    }
    return 0;
}


/* Entries between two writes while the index catches up with the log (a
 * start, a rebuild, --repair): a write costs about the pages of the name
 * map and the names, whatever the batch, since their keys are spread
 * evenly, so index_batch's 4096 made rebuilding 2 million names write
 * tens of GiB and take hours; this many keeps it to minutes and the
 * memory held between writes to some 100 MiB. */
#define TL_INDEX_CATCHUP_BATCH  65536

/* Rows of the name map staged (some 240 bytes each) past which the index
 * is written whatever the entries. */
#define TL_INDEX_STAGE_MAX      (1u << 18)


/* Whether what the index holds in memory is due to be written. */
static int
tl_index_due(const tl_timeline_t *tl)
{
    uint64_t  batch = tl->conf.index_batch;

    if ((!tl->db_ready || tl->reindexing) && batch < TL_INDEX_CATCHUP_BATCH) {
        batch = TL_INDEX_CATCHUP_BATCH;
    }
    return tl->npend >= batch || tl->ncopies >= batch
           || tl->nnames >= 4 * batch
           || (tl->map != NULL && sk_map_staged(tl->map) >= TL_INDEX_STAGE_MAX);
}


/* Everything pending in one transaction, committed.  The environment
 * commits without an fsync (no_sync): with sync, the logs are synced
 * first and the environment after the commit; without (a batch's seal),
 * the caller syncs the logs, then tl_index_sync(), out of tl->lock.  A
 * seal only stages the name map (and appends its Map-Root entry) until
 * the index is due: 1 if it wrote nothing. */
static int
tl_index_commit(tl_timeline_t *tl, int sync, sk_err_t *err)
{
    sk_merkle_hash_t  root;
    sk_db_txn_t      *t;
    int               write = sync || tl->map == NULL || tl_index_due(tl);

    if (tl->db == NULL) {
        return 0;
    }
    if (!tl_index_dirty(tl)) {
        tl_names_forget(tl);
        return 0;
    }
    if (sk_db_begin(tl->db, write, &t, err) != 0) {
        return -1;
    }
    /* The map first: it may end the batch with a Map-Root entry. */
    if (tl->map != NULL && tl_map_flush(tl, t, root, err) != 0) {
        sk_db_abort(t);
        return -1;
    }
    if (!write) {
        sk_db_abort(t);
        return 1;
    }
    if ((tl->map != NULL && sk_map_write(t, tl->map, err) != 0)
        || tl_index_write(tl, t, err) != 0)
    {
        sk_db_abort(t);
        return sk_err_prefix(err, "%s/data.mdb", tl->db_dir);
    }
    if (sync && tl_index_sync_logs(tl, err) != 0) {
        sk_db_abort(t);
        return -1;
    }
    if (sk_db_commit(t, err) != 0) {
        return -1;
    }
    if (tl->map != NULL) {
        sk_map_unstage(tl->map);
    }
    tl->indexed = tl->size;
    tl->npend = 0;
    tl->ncopies = 0;
    tl->inc_indexed = tl->inc.end;
    tl->roots_dirty = tl->stat_stale = 0;
    tl->flushes++;
    tl_names_forget(tl);
    return sync ? tl_index_sync(tl, err) : 0;
}


/* fdatasync of the logs the index is about to cover. */
int
tl_index_sync_logs(tl_timeline_t *tl, sk_err_t *err)
{
    if (tl->mode != TL_CHECK
        && ((tl->log.fd >= 0 && fdatasync(tl->log.fd) != 0)
            || (tl->inc.fd >= 0 && fdatasync(tl->inc.fd) != 0)))
    {
        return sk_err_sys(err, "%s: sync before indexing", tl->log.path);
    }
    return 0;
}


/* Never index what the log might still lose: the environment is synced
 * only after the logs (an index found ahead of the log at a start, as a
 * system crash between the two syncs could leave it, is rebuilt from the
 * log: tl_index_agrees). */
int
tl_index_sync(tl_timeline_t *tl, sk_err_t *err)
{
    if (tl->db_scratch || sk_db_sync(tl->db, err) == 0) {
        return 0;
    }
    return sk_err_prefix(err, "%s: after the log's sync", tl->db_dir);
}


/* Whether a sealed batch's commit is to be synced now.  With index/boot
 * (tl_index_boot.c) a system crash while the index is open has it
 * rebuilt from the log whatever reached data.mdb, and a process crash
 * loses nothing the page cache holds: a sync per batch would protect
 * nothing, so one every index_batch entries, as the flushes without the
 * map, keeps a data.mdb that cannot be written from going unnoticed.
 * Without index/boot each commit is synced. */
int
tl_index_sync_due(const tl_timeline_t *tl)
{
    return !tl->db_marked
           || tl->size - tl->index_synced >= tl->conf.index_batch;
}


int
tl_index_flush(tl_timeline_t *tl, sk_err_t *err)
{
    return tl_index_commit(tl, 1, err);
}


int
tl_index_seal(tl_timeline_t *tl, sk_err_t *err)
{
    return tl_index_commit(tl, 0, err);
}


void
tl_index_maybe_flush(tl_timeline_t *tl, int force)
{
    sk_err_t  err;

    if (tl->db == NULL || tl->failed) {
        return;
    }
    /* Serving with the map, a batch's seal writes the index when due. */
    if (!force && (!tl_index_due(tl)
                   || (tl->map != NULL && tl->mode == TL_RUN
                       && tl->db_ready && !tl->reindexing)))
    {
        return;
    }
    if (tl_index_flush(tl, &err) != 0) {
        tl_log("%s: flush: %s (the index lags; retried)", tl->db_dir,
            err.msg);
    }
}


void
tl_index_close(tl_timeline_t *tl)
{
    sk_err_t  err;
    int       clean;

    /* A failed append cut back since the last flush changed the log's
     * mtime, not its entries: record the logs as they are left. */
    tl->stat_stale = 1;
    clean = 0;
    if (tl->db != NULL && tl->db_ready && !tl->db_scratch && !tl->failed) {
        if (tl_index_flush(tl, &err) != 0 || sk_db_sync(tl->db, &err) != 0) {
            tl_log("%s: flush: %s (a start catches up from the log)",
                tl->db_dir, err.msg);
        } else {
            clean = 1;
        }
    }
    tl_map_close(tl);
    sk_db_close(tl->db);
    tl->db = NULL;
    if (clean && tl->db_marked) {
        tl_index_boot_end(tl->db_dir);
    }
    if (tl->db_scratch) {
        if (tl_index_unlink(tl->db_dir, NULL) != 0 || rmdir(tl->db_dir) != 0)
        {
            tl_log("%s: cannot remove the scratch index", tl->db_dir);
        }
        tl->db_scratch = 0;
    }
    free(tl->pend);
    tl->pend = NULL;
    tl->npend = tl->pend_cap = 0;
}
