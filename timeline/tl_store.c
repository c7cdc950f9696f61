/*
 * tl_store.c -- the append-only log: one file of stamped entries, back to
 * back, SN 0 first, each canonical but for the CA certificates of its
 * chain, which are stored once (tl_calog.c).  Nothing is ever rewritten;
 * the only change to old bytes is cutting, at start, a torn tail that lies
 * past everything signed-head covers (tl_signed.c), i.e. a write that was
 * never acknowledged.
 */
#define _GNU_SOURCE     /* pthread_setname_np */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tl.h"

#define TL_REINDEX_GAP_MS  60000    /* at most one rebuild while serving */


/* Record the next SN: canonical text buf[0..len), stored in slen bytes
 * at the end of the log, stamped ts. */
static int
tl_store_index(tl_timeline_t *tl, const char *buf, size_t len, size_t slen,
    int64_t ts, sk_err_t *err)
{
    sk_merkle_hash_t  leaf;

    /* The replay at start leaves the tree to tl_tree_open: entries the
     * tiles hold are not hashed into it again. */
    if (sk_merkle_leaf_hash(leaf, buf, len, err) != 0
        || tl_index_add(tl, ts, leaf, err) != 0
        || (tl->tree != NULL
            && sk_merkle_tree_append(tl->tree, leaf, err) != 0))
    {
        if (tl->npend > 0 && tl->indexed + tl->npend > tl->size) {
            tl->npend--;        /* the tree refused it: not indexed */
        }
        return -1;
    }
    if (tl->tree != NULL) {
        tl_tree_note(tl);
    }
    tl->end_off += (off_t) slen;
    tl->size++;
    tl->last_ts = ts;
    return 0;
}


/* Check one replayed entry against its place in the log. */
static int
tl_store_check(tl_timeline_t *tl, const sk_entry_t *e, int64_t *ts,
    int verify, sk_err_t *err)
{
    uint64_t  sn, tid;

    if (sk_entry_sn(e, &sn, err) != 0 || sk_entry_tid(e, &tid, err) != 0
        || sk_entry_timestamp(e, ts, err) != 0)
    {
        return -1;
    }
    if (sn != tl->size) {
        return sk_err_set(err, SK_ERR_FORMAT, "SN %" PRIu64 " where %" PRIu64
            " belongs", sn, tl->size);
    }
    if (tid != tl->conf.tid) {
        return sk_err_set(err, SK_ERR_FORMAT, "TID %" PRIu64 ", not ours (%"
            PRIu64 ")", tid, tl->conf.tid);
    }
    if (tl->size > 0 && *ts < tl->last_ts) {
        return sk_err_set(err, SK_ERR_FORMAT, "timestamp %" PRId64
            " before the previous %" PRId64, *ts, tl->last_ts);
    }
    if (verify && sk_entry_verify(e, SK_SIG_TIMELINE, tl->key, err) != 0) {
        return -1;
    }
    return tl_state_apply(tl, e, *ts, err);
}


/* The canonical entry text[0..len), checked as the next SN. */
static int
tl_store_take(tl_timeline_t *tl, const char *text, size_t len, int verify,
    int64_t *ts, sk_err_t *err)
{
    sk_entry_t  *e;
    size_t       used;
    int          rc;

    if (sk_entry_parse_next(&e, &used, text, len, err) != 0) {
        return -1;
    }
    rc = used != len ? sk_err_set(err, SK_ERR_FORMAT, "bytes after the "
            "entry's blank line")
        : tl_store_check(tl, e, ts, verify, err);
    sk_entry_free(e);
    return rc;
}


/* One stored entry of slen bytes at p, replayed as the next SN. */
static int
tl_store_replay_one(tl_timeline_t *tl, const char *p, size_t slen, int last,
    sk_err_t *err)
{
    char     *text;
    size_t    len;
    int64_t   ts;
    int       rc;

    if (tl_calog_unpack(tl, &text, &len, p, slen, err) != 0) {
        return -1;
    }
    rc = tl_store_take(tl, text, len, tl->conf.verify_on_start || last, &ts,
        err);
    if (rc == 0) {
        rc = tl_store_index(tl, text, len, slen, ts, err);
    }
    free(text);
    if (rc == 0) {
        tl_index_maybe_flush(tl, 0);
    }
    return rc;
}


int
tl_store_restore(tl_timeline_t *tl, const char *text, size_t len,
    sk_err_t *err)
{
    int64_t  ts;

    if (tl_store_take(tl, text, len, 1, &ts, err) != 0
        || tl_store_write(tl, text, len, ts, err) != 0)
    {
        return -1;
    }
    tl_index_maybe_flush(tl, 0);
    return 0;
}


/* Index the log from where the index ends.  A tail that holds no whole
 * entry is only noted here (tl_file_trim cuts it once every check
 * passed): after a crash it is a write never acknowledged, since it lies
 * past every entry signed-head covers (tl_signed_verify checks that).
 * For --repair anything from the first entry that does not read back on
 * is such a tail, to be replaced. */
/* The log is read in windows of this much (more for a bigger entry): a
 * rebuild of a log of any size needs no more memory than that. */
#define TL_STORE_WINDOW  (4u << 20)

/* Read on into buf[len..cap) from the log offset at + len (the window's
 * bytes start at offset at), growing a full buffer; *eof once the file's
 * size at start is reached. */
static int
tl_store_fill(tl_timeline_t *tl, char **buf, size_t *cap, size_t *len,
    off_t at, int *eof, sk_err_t *err)
{
    size_t   want, got = 0;
    ssize_t  n;
    char    *p;

    if (*len == *cap) {
        p = realloc(*buf, *cap != 0 ? *cap * 2 : TL_STORE_WINDOW);
        if (p == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "%s: reading",
                tl->log.path);
        }
        *buf = p;
        *cap = *cap != 0 ? *cap * 2 : TL_STORE_WINDOW;
    }
    want = *cap - *len;
    if ((uint64_t) (tl->log.size - at - (off_t) *len) < want) {
        want = (size_t) (tl->log.size - at - (off_t) *len);
    }
    while (got < want) {
        n = pread(tl->log.fd, *buf + *len + got, want - got,
            at + (off_t) (*len + got));
        if (n <= 0) {
            return n < 0 ? sk_err_sys(err, "%s: read", tl->log.path)
                         : sk_err_set(err, SK_ERR_FORMAT, "%s: shrank while "
                               "read", tl->log.path);
        }
        got += (size_t) n;
    }
    *len += got;
    *eof = at + (off_t) *len == tl->log.size;
    return 0;
}


static int
tl_store_replay(tl_timeline_t *tl, sk_err_t *err)
{
    char    *buf = NULL;
    size_t   len = 0, cap = 0, pos, slen = 0;
    off_t    at = tl->end_off;      /* the log offset of buf[0] */
    int      rc = 0, eof = tl->log.fd < 0 || at >= tl->log.size, done = 0;

    if (tl->log.fd >= 0 && at > tl->log.size) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: %jd bytes, shorter than "
            "offset %jd", tl->log.path, (intmax_t) tl->log.size,
            (intmax_t) at);
    }
    while (!done && (!eof || len > 0)) {
        if (!eof && tl_store_fill(tl, &buf, &cap, &len, at, &eof, err) != 0)
        {
            rc = -1;
            break;
        }
        for (pos = 0; pos < len; pos += slen) {
            slen = tl_file_entry_len(buf + pos, len - pos);
            if (slen == 0) {
                break;
            }
            if (tl_store_replay_one(tl, buf + pos, slen,
                    eof && pos + slen == len, err) != 0)
            {
                sk_err_prefix(err, "%s: offset %jd (SN %" PRIu64 ")",
                    tl->log.path, (intmax_t) (at + (off_t) pos), tl->size);
                if (tl->mode == TL_REPAIR) {
                    tl_file_torn(&tl->log, at + (off_t) pos, "%s", err->msg);
                } else {
                    rc = -1;
                }
                done = 1;
                break;
            }
        }
        if (!done && pos < len && eof) {
            tl_file_torn(&tl->log, at + (off_t) pos, "truncating a torn "
                "tail of %zu bytes at offset %jd (SN %" PRIu64 ")",
                len - pos, (intmax_t) (at + (off_t) pos), tl->size);
            done = 1;
        }
        memmove(buf, buf + pos, len - pos);
        at += (off_t) pos;
        len -= pos;
    }
    free(buf);
    tl->logged = tl->durable = tl->size;
    return rc;
}


/* incorporated.log and the log, from where the index ends, then the
 * head's check. */
static int
tl_store_load(tl_timeline_t *tl, sk_err_t *err)
{
    uint64_t  from = tl->size;
    sk_err_t  more;
    int       rc;

    rc = tl_inc_replay(tl, err) != 0 || tl_store_replay(tl, err) != 0
         ? -1 : 0;
    /* --check goes on past a damaged log, with the tree of what reads. */
    if ((rc == 0 || tl->mode == TL_CHECK)
        && tl_tree_open(tl, rc == 0 ? err : &more) != 0)
    {
        rc = -1;
    }
    if (rc != 0) {
        return -1;
    }
    tl_log("%s: %" PRIu64 " entries (%" PRIu64 " from %s, %" PRIu64
        " read)", tl->log.path, tl->size, from, tl->db_dir,
        tl->size - from);
    return tl->mode == TL_REPAIR ? 0
        : tl_signed_verify(tl, err) != 0 ? -1 : tl_map_check_end(tl, err);
}


int
tl_store_open(tl_timeline_t *tl, sk_err_t *err)
{
    char  why[SK_ERR_MSG_MAX];

    if (tl_file_open(&tl->log, tl, TL_LOG_FILE, err) != 0
        || tl_index_open(tl, err) != 0)
    {
        return -1;
    }
    if (tl_store_load(tl, err) == 0) {
        return 0;
    }
    /* What the index gave and the log's tail disagree with each other or
     * with signed-head: the index may be wrong; the log decides. */
    if (tl->mode != TL_RUN || tl->index_loaded == 0) {
        return -1;
    }
    snprintf(why, sizeof(why), "%s", err->msg);
    if (tl_index_rebuild(tl, why, err) != 0) {
        return -1;
    }
    return tl_store_load(tl, err);
}


int
tl_store_settle(tl_timeline_t *tl, sk_err_t *err)
{
    sk_merkle_hash_t  root;

    if (tl_file_trim(&tl->calog_file, err) != 0
        || tl_file_trim(&tl->inc, err) != 0
        || tl_file_trim(&tl->log, err) != 0)
    {
        return -1;
    }
    /* Whole entries past the head were written but never shown: after a
     * crash they may still be only in the page cache.  On disk first. */
    if (fdatasync(tl->log.fd) != 0 || fdatasync(tl->calog_file.fd) != 0
        || fdatasync(tl->inc.fd) != 0)
    {
        return sk_err_sys(err, "%s: sync", tl->conf.data_dir);
    }
    /* Entries past the last Map-Root entry wait for theirs (tl_open.c),
     * and are signed with it: a full disk then leaves them unshown. */
    if ((tl->size == tl->signed_size && tl->signed_have)
        || (tl->map != NULL && tl->map_seal && tl->signed_have))
    {
        return 0;
    }
    return sk_merkle_tree_root(root, tl->tree, tl->size, err) != 0 ? -1
        : tl->signed_have ? tl_signed_write(tl, tl->size, root, err)
        : tl_signed_create(tl, tl->size, root, err);
}


void
tl_store_close(tl_timeline_t *tl)
{
    tl_index_close(tl);
    tl_file_close(&tl->log);
    sk_merkle_tree_free(tl->tree);
    tl->tree = NULL;
}


int
tl_store_write(tl_timeline_t *tl, const char *buf, size_t len, int64_t ts,
    sk_err_t *err)
{
    char    *stored;
    size_t   slen;
    int      rc;

    if (tl->failed) {
        return sk_err_set(err, SK_ERR_SYSTEM, "%s", tl->failed_msg);
    }
    tl->map_seal = 1;
    if (tl_calog_pack(tl, &stored, &slen, buf, len, err) != 0) {
        return -1;
    }
    rc = tl_file_append(&tl->log, stored, slen, 0, err);
    free(stored);
    if (rc != 0) {
        return -1;
    }
    if (tl_store_index(tl, buf, len, slen, ts, err) != 0) {
        tl_fail(tl, "%s: %s; appends refused until a restart",
            tl->log.path, err->msg);
        return -1;
    }
    return 0;
}


/* With the name map: end the batch with its Map-Root entry, appended
 * under the lock, the map staged (tl_map.c), and the index committed
 * (not yet synced: *wrote) when it is due.  A commit that failed after
 * the Map-Root was written leaves the batch sealed (the index lags, as
 * any failed flush); a Map-Root that could not be written (a full disk)
 * fails this batch's waiters (500, returns 1), and the next batch's
 * Map-Root covers its entries. */
static int
tl_store_seal(tl_timeline_t *tl, int *wrote, sk_err_t *err)
{
    int  rc = tl_index_seal(tl, err);

    *wrote = rc == 0;
    if (rc >= 0) {
        return 0;
    }
    if (!tl->map_seal) {
        tl_log("%s: flush: %s (the index lags; retried)", tl->db_dir,
            err->msg);
        return 0;
    }
    snprintf(tl->seal_msg, sizeof(tl->seal_msg), "%s", err->msg);
    tl->seal_fails++;
    return 1;
}


/* Out of the lock, the log synced: the sealed batches' index commits,
 * when tl_index_sync_due says.  The next leader waits for it
 * (log_syncing); its waiters need not (acknowledged on the log's sync). */
static void
tl_store_sync_index(tl_timeline_t *tl)
{
    uint64_t  size = tl->size;
    sk_err_t  err;
    int       rc;

    if (!tl_index_sync_due(tl)) {
        return;
    }
    tl->index_syncing = 1;
    pthread_mutex_unlock(&tl->lock);
    rc = tl_index_sync(tl, &err);
    pthread_mutex_lock(&tl->lock);
    tl->index_syncing = 0;
    pthread_cond_broadcast(&tl->synced);
    if (rc == 0) {
        tl->index_synced = size;
    } else {
        /* What reached data.mdb is unknown: a start checks it. */
        tl_fail(tl, "%s; appends refused until a restart checks the "
            "index against the log", err.msg);
    }
}


static void tl_store_unpark(tl_timeline_t *tl);


/* Lead one write of signed-head for everything the log has synced; only
 * then may those entries be shown. */
static int
tl_store_sign(tl_timeline_t *tl, sk_err_t *err)
{
    sk_merkle_hash_t  root;
    uint64_t          target = tl->logged;
    int               rc;

    if (sk_merkle_tree_root(root, tl->tree, target, err) != 0) {
        return -1;
    }
    tl->head_syncing = 1;
    pthread_mutex_unlock(&tl->lock);
    rc = tl_signed_write(tl, target, root, err);
    pthread_mutex_lock(&tl->lock);
    tl->head_syncing = 0;
    if (rc == 0 && target > tl->durable) {
        tl->durable = target;
    }
    return rc;
}


/* Where an append that waits for SN sn sleeps: with the batch the log
 * sync under way covers, or with the next one's. */
static pthread_cond_t *
tl_store_cond(tl_timeline_t *tl, uint64_t sn)
{
    uint64_t  gen = tl->sync_gen;

    if (!tl->log_syncing || sn >= tl->sync_end) {
        gen++;
    }
    return &tl->batch[gen & 1];
}


/* Lead one fdatasync of the log for everything written so far, out of
 * the lock, so that appends go on meanwhile (they join the next batch).
 * With the name map, the batch first ends in its Map-Root entry, the
 * index committed with it (tl_store_seal); the index is synced after the
 * log, never before: it must not get ahead of what the log keeps. */
static void
tl_store_sync_log(tl_timeline_t *tl)
{
    uint64_t  target, us;
    sk_err_t  err;
    int       rc = 0, sealed = 0, shown;

    tl->log_syncing = 1;
    tl->sync_gen++;
    tl->sync_end = UINT64_MAX;
    pthread_mutex_unlock(&tl->lock);
    if (tl->conf.sync_delay_ms != 0) {
        usleep((useconds_t) (tl->conf.sync_delay_ms * 1000));
    } else if (tl->conf.commit_delay_us != 0 && tl->appending > 0) {
        /* Appends being checked now would make the next batch: let them
         * make this one (PostgreSQL's commit_delay).  Under load a batch
         * then costs fewer syncs and Map-Root entries per append; an
         * append alone never waits. */
        usleep((useconds_t) tl->conf.commit_delay_us);
    }
    us = tl_us();
    pthread_mutex_lock(&tl->lock);
    if (tl->map != NULL && tl->map_seal) {
        rc = tl_store_seal(tl, &sealed, &err);
    }
    target = tl->sync_end = tl->size;
    if (rc == 0) {
        pthread_mutex_unlock(&tl->lock);
        /* The log alone: a copy in incorporated.log was synced when
         * written, before the entry that refers to it (tl_inc_write). */
        rc = fdatasync(tl->log.fd) != 0 ? sk_err_sys(&err, "fdatasync") : 0;
        pthread_mutex_lock(&tl->lock);
    }
    tl_metrics_fsync(tl, tl_us() - us);
    if (rc > 0) {
        /* seal_msg names the file that failed */
        tl_log("%s (the batch's Map-Root entry could not be written: its "
            "appends answered 500)", tl->seal_msg);
    } else if (rc != 0) {
        /* Linux may have dropped the pages it could not write and will
         * not say so twice: only a fresh read tells what is on disk. */
        tl_fail(tl, "%s: %s; appends refused until a restart reads "
            "back what is on disk", tl->log.path, err.msg);
    } else if (target > tl->logged) {
        tl->logged = target;
    }
    /* The leader writes the batch's head itself, then wakes the batch's
     * appends, acknowledged, and only them.  A head that could not be
     * written, or one being written, is left to the waiters
     * (tl_store_wait): all are woken. */
    shown = rc == 0 && !tl->head_syncing && tl_store_sign(tl, &err) == 0;
    if (shown) {
        pthread_cond_broadcast(&tl->batch[tl->sync_gen & 1]);
        tl_store_unpark(tl);
    } else {
        tl_wake_all(tl);
    }
    if (rc == 0 && sealed) {
        tl_store_sync_index(tl);
    }
    tl->log_syncing = 0;
    pthread_cond_signal(&tl->park_wake);
    /* One of the next batch's appends leads its sync (any of them can). */
    if (shown && !tl->failed) {
        pthread_cond_signal(&tl->batch[(tl->sync_gen + 1) & 1]);
    } else {
        tl_wake_all(tl);
    }
}


int
tl_store_wait(tl_timeline_t *tl, uint64_t sn, uint64_t until_ms,
    sk_err_t *err)
{
    struct timespec  at;
    uint64_t         fails = tl->seal_fails;
    int              rc;

    at.tv_sec = (time_t) (until_ms / 1000);
    at.tv_nsec = (long) (until_ms % 1000) * 1000000L;
    /* Two stages, each led by one writer for all waiting at the time
     * (group commit): the log's sync, then signed-head's.  While one
     * group's head is written, the next group's log sync can run. */
    while (tl->durable <= sn && !tl->failed) {
        if (tl->seal_fails != fails && tl->logged <= sn) {
            return sk_err_set(err, SK_ERR_SYSTEM, "%s", tl->seal_msg);
        }
        if (tl->logged > sn && !tl->head_syncing) {
            rc = tl_store_sign(tl, err);
            tl_wake_all(tl);
            if (rc != 0) {
                /* Stored, but not shown: the next head write covers it. */
                return -1;
            }
        } else if (tl->logged <= sn && !tl->log_syncing) {
            tl_store_sync_log(tl);
        } else if (until_ms == UINT64_MAX) {
            pthread_cond_wait(tl_store_cond(tl, sn), &tl->lock);
        } else if (pthread_cond_timedwait(tl_store_cond(tl, sn), &tl->lock,
                       &at) != 0
                   && (tl->log_syncing || tl->head_syncing)
                   && tl->durable <= sn)
        {
            return 1;
        }
    }
    if (tl->durable <= sn) {
        return sk_err_set(err, SK_ERR_SYSTEM, "%s", tl->failed_msg);
    }
    return 0;
}


static void
tl_store_unlink(tl_timeline_t *tl, tl_park_t *p)
{
    tl_park_t  **pp, *prev = NULL;

    for (pp = &tl->park_head; *pp != p; pp = &(*pp)->next) {
        prev = *pp;
    }
    *pp = p->next;
    if (tl->park_tail == p) {
        tl->park_tail = prev;
    }
}


/* p leaves the parked ones, its answer v counted. */
static void
tl_store_leave(tl_timeline_t *tl, tl_park_t *p, tl_verdict_t v)
{
    tl_store_unlink(tl, p);
    tl_metrics_append(tl, v, tl_us() - p->start_us);
}


void
tl_store_answer(tl_timeline_t *tl, tl_park_t *p, tl_verdict_t v, char *out,
    const sk_err_t *err)
{
    tl_store_leave(tl, p, v);
    p->done(p, v, out, err);
}


/* Settle the parked appends whose outcome is known: those now durable,
 * and, after a failure, those it cost (as tl_store_wait decides).  The
 * durable ones are answered out of the lock: each answer wakes an HTTP
 * thread (MHD_resume_connection writes its eventfd), a batch's worth
 * took milliseconds on this VM, and the appends of the next batch waited
 * for the lock all that time. */
static void
tl_store_unpark(tl_timeline_t *tl)
{
    tl_park_t     *p, *ok = NULL, **tail = &ok;
    tl_verdict_t   v;
    sk_err_t       err;

    while ((p = tl->park_head) != NULL) {
        sk_err_clear(&err);
        v = TL_FAULT;
        if (p->sn < tl->durable) {
            tl_store_leave(tl, p, TL_OK);
            p->next = NULL;
            *tail = p;
            tail = &p->next;
            continue;
        } else if (tl->failed) {
            sk_err_set(&err, SK_ERR_SYSTEM, "%s", tl->failed_msg);
        } else if (tl->seal_fails != p->fails && tl->logged <= p->sn) {
            sk_err_set(&err, SK_ERR_SYSTEM, "%s", tl->seal_msg);
        } else {
            break;
        }
        tl_store_answer(tl, p, v, NULL, &err);
    }
    if (ok == NULL) {
        return;
    }
    pthread_mutex_unlock(&tl->lock);
    while ((p = ok) != NULL) {
        ok = p->next;           /* p may be gone once answered */
        p->done(p, TL_OK, NULL, NULL);
    }
    pthread_mutex_lock(&tl->lock);
}


/* The head write for the synced ones failed: stored, not shown, as
 * tl_store_wait's -1. */
static void
tl_store_unpark_failed(tl_timeline_t *tl, const sk_err_t *err)
{
    tl_park_t  *p;

    while ((p = tl->park_head) != NULL && p->sn < tl->logged) {
        tl_store_answer(tl, p, TL_FAULT, NULL, err);
    }
}


void
tl_store_park(tl_timeline_t *tl, tl_park_t *p)
{
    p->next = NULL;
    p->fails = tl->seal_fails;
    if (tl->park_tail != NULL) {
        tl->park_tail->next = p;
    } else {
        tl->park_head = p;
    }
    tl->park_tail = p;
}


void
tl_store_kick(tl_timeline_t *tl)
{
    pthread_cond_signal(&tl->park_wake);
}


/* The sync thread: leads the group commit of the parked appends' batches
 * (one after another while appends keep coming), so that no append
 * thread sleeps through a sync, and wakes each batch's connections. */
static void *
tl_store_syncer(void *arg)
{
    tl_timeline_t  *tl = arg;
    tl_park_t      *p;
    sk_err_t        err;

    pthread_setname_np(pthread_self(), "tl-sync");
    pthread_mutex_lock(&tl->lock);
    for (;;) {
        tl_store_unpark(tl);
        p = tl->park_head;
        if (p == NULL && tl->syncer.stop) {
            break;
        }
        if (p != NULL && tl->logged <= p->sn && !tl->log_syncing) {
            tl_store_sync_log(tl);
            continue;
        }
        if (p != NULL && tl->logged > p->sn && !tl->head_syncing) {
            /* Synced, not shown: the head write failed in the lead. */
            if (tl_store_sign(tl, &err) != 0) {
                tl_store_unpark_failed(tl, &err);
            }
            tl_wake_all(tl);
            continue;
        }
        /* Nothing parked, or another writer's sync is under way. */
        pthread_cond_wait(&tl->park_wake, &tl->lock);
    }
    pthread_mutex_unlock(&tl->lock);
    return NULL;
}


int
tl_store_start(tl_timeline_t *tl, sk_err_t *err)
{
    return tl_thread_start(&tl->syncer, tl_store_syncer, tl, "sync", err);
}


void
tl_store_stop(tl_timeline_t *tl)
{
    tl_thread_stop(&tl->syncer, &tl->lock, &tl->park_wake);
}


/* The canonical text of the stored bytes [a, b). */
static int
tl_store_pread(tl_timeline_t *tl, char **out, size_t *len, off_t a, off_t b,
    sk_err_t *err)
{
    size_t   got = 0, slen = (size_t) (b - a);
    ssize_t  n;
    char    *stored;
    int      rc;

    stored = malloc(slen + 1);
    if (stored == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "log read");
    }
    while (got < slen) {
        n = pread(tl->log.fd, stored + got, slen - got, a + (off_t) got);
        if (n <= 0) {
            free(stored);
            return sk_err_sys(err, "log: read");
        }
        got += (size_t) n;
    }
    rc = tl_calog_unpack(tl, out, len, stored, slen, err);
    free(stored);
    return rc;
}


/* Under tl->lock: where entries [first, last] lie by the index, and
 * the leaf hashes they must have (malloc()ed): the tree's, or with tree
 * 0 the index's own. */
static int
tl_store_span(tl_timeline_t *tl, uint64_t first, uint64_t last, int tree,
    off_t *a, off_t *b, sk_merkle_hash_t **leaves, sk_err_t *err)
{
    uint64_t  sn;

    if (tl_index_off(tl, first, a, err) != 0
        || tl_index_off(tl, last + 1, b, err) != 0)
    {
        return -1;
    }
    if (*a < 0 || *a >= *b || *b > tl->end_off) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: table entries, "
            "SN %" PRIu64 " to %" PRIu64 ": offsets %jd to %jd, not within "
            "the %jd bytes of %s", tl->db_dir, first, last + 1,
            (intmax_t) *a, (intmax_t) *b, (intmax_t) tl->end_off,
            tl->log.path);
    }
    *leaves = malloc((size_t) (last - first + 1) * sizeof(**leaves));
    if (*leaves == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "log read");
    }
    for (sn = first; sn <= last; sn++) {
        if (tl_index_leaf(tl, sn, tree, (*leaves)[sn - first], err) != 0) {
            free(*leaves);
            *leaves = NULL;
            return -1;
        }
    }
    return 0;
}


/* text[0..len), read from log offsets [a, b) as the index says, must be
 * entries first.. with these leaf hashes, each whole. */
static int
tl_store_match(tl_timeline_t *tl, const char *text, size_t len,
    uint64_t first, uint64_t last, off_t a, off_t b,
    sk_merkle_hash_t *leaves, sk_err_t *err)
{
    sk_merkle_hash_t  leaf;
    size_t            pos = 0, elen;
    uint64_t          sn;

    for (sn = first; sn <= last && pos < len; sn++, pos += elen) {
        elen = tl_file_entry_len(text + pos, len - pos);
        if (elen == 0 || sk_merkle_leaf_hash(leaf, text + pos, elen, err) != 0
            || memcmp(leaf, leaves[sn - first], sizeof(leaf)) != 0)
        {
            break;
        }
    }
    if (sn > last && pos == len) {
        return 0;
    }
    return sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: table entries, SN %"
        PRIu64 " to %" PRIu64 ": offsets %jd to %jd of %s do not hold the "
        "entries of the leaf hashes (SN %" PRIu64 " differs)", tl->db_dir,
        first, last + 1, (intmax_t) a, (intmax_t) b, tl->log.path,
        sn > last ? last : sn);
}


/* Entries [first, last] through the index, checked against the tree
 * (tree) or the index's leaves; *gen: the rebuilds so far, when the
 * offsets were taken. */
static int
tl_store_try(tl_timeline_t *tl, char **out, size_t *len, uint64_t first,
    uint64_t last, int locked, int tree, uint64_t *gen, sk_err_t *err)
{
    sk_merkle_hash_t  *leaves = NULL;
    off_t              a, b;
    int                rc;

    /* The index may move under a writer; the bytes never change. */
    if (!locked) {
        pthread_mutex_lock(&tl->lock);
    }
    *gen = tl->reindexed;
    rc = tl_store_span(tl, first, last, tree, &a, &b, &leaves, err);
    if (!locked) {
        pthread_mutex_unlock(&tl->lock);
    }
    if (rc == 0 && (rc = tl_store_pread(tl, out, len, a, b, err)) == 0
        && (rc = tl_store_match(tl, *out, *len, first, last, a, b, leaves,
                err)) != 0)
    {
        free(*out);
        *out = NULL;
    }
    free(leaves);
    return rc;
}


int
tl_store_mend(tl_timeline_t *tl, uint64_t gen, int locked, sk_err_t *err)
{
    int  rc = 0;

    if (err->code != SK_ERR_FORMAT) {
        return -1;
    }
    if (!locked) {
        pthread_mutex_lock(&tl->lock);
    }
    if (gen == tl->reindexed) {
        tl_index_damaged(tl, "%s", err->msg);
        rc = tl_store_reindex(tl, err);
    }
    if (!locked) {
        pthread_mutex_unlock(&tl->lock);
    }
    return rc;
}


static int
tl_store_read_checked(tl_timeline_t *tl, char **out, size_t *len,
    uint64_t first, uint64_t last, int locked, sk_err_t *err)
{
    uint64_t  gen;

    if (tl_store_try(tl, out, len, first, last, locked, 1, &gen, err) == 0) {
        return 0;
    }
    return tl_store_mend(tl, gen, locked, err) != 0 ? -1
        : tl_store_try(tl, out, len, first, last, locked, 1, &gen, err);
}


int
tl_store_read(tl_timeline_t *tl, char **out, size_t *len, uint64_t first,
    uint64_t last, sk_err_t *err)
{
    return tl_store_read_checked(tl, out, len, first, last, 0, err);
}


int
tl_store_read_locked(tl_timeline_t *tl, char **out, size_t *len,
    uint64_t sn, sk_err_t *err)
{
    return tl_store_read_checked(tl, out, len, sn, sn, 1, err);
}


int
tl_store_read_leaf(tl_timeline_t *tl, char **out, size_t *len, uint64_t sn,
    sk_err_t *err)
{
    uint64_t  gen;

    return tl_store_try(tl, out, len, sn, sn, 1, 0, &gen, err);
}


int
tl_store_read_tree(tl_timeline_t *tl, char **out, size_t *len, uint64_t sn,
    sk_err_t *err)
{
    uint64_t  gen;

    return tl_store_try(tl, out, len, sn, sn, 1, 1, &gen, err);
}


static int
tl_store_reindex_now(tl_timeline_t *tl, sk_err_t *err)
{
    sk_merkle_tree_t  *tree = tl->tree;
    uint64_t           size = tl->size, logged = tl->logged;
    uint64_t           durable = tl->durable;
    off_t              end = tl->end_off, log_size = tl->log.size;
    off_t              inc_size = tl->inc.size;
    int                rc;

    if (tl->mode != TL_RUN || !tl->db_ready || tl->reindexing
        || tl->failed)
    {
        return -1;              /* a start rebuilds it on its own */
    }
    /* What a rebuild does not cure (the log itself damaged) must not
     * cost a replay of the whole log per request. */
    if (tl->reindexed > 0 && tl_ms() - tl->reindexed_ms < TL_REINDEX_GAP_MS) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: found damaged again "
            "within %d s of its rebuild: rebuilt again after that",
            tl->db_dir, TL_REINDEX_GAP_MS / 1000);
    }
    /* The replay reads the logs up to their whole entries now and
     * appends nothing to the tree, which already has them all. */
    tl->reindexing = 1;
    tl->tree = NULL;
    tl->log.size = end;
    tl->inc.size = tl->inc.end;
    rc = tl_index_reset(tl, err) != 0 || tl_inc_replay(tl, err) != 0
         || tl_store_replay(tl, err) != 0 ? -1 : 0;
    if (rc == 0 && (tl->size != size || tl->end_off != end)) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "%s: read back to %" PRIu64
            " entries ending at offset %jd, not %" PRIu64 " at %jd",
            tl->log.path, tl->size, (intmax_t) tl->end_off, size,
            (intmax_t) end);
    }
    if (rc == 0) {
        rc = tl_index_flush(tl, err);
    }
    tl->tree = tree;
    tl->logged = logged;
    tl->durable = durable;
    tl->log.size = log_size;
    tl->inc.size = inc_size;
    tl->reindexing = 0;
    if (rc == 0) {
        rc = tl_map_rebuilt(tl, err);
    }
    tl->reindexed++;
    tl->reindexed_ms = tl_ms();
    if (rc != 0) {
        tl_fail(tl, "%s: rebuilding it from the log: %s; appends "
            "refused until a restart", tl->db_dir, err->msg);
        return -1;
    }
    tl->index_bad = 0;
    tl_log("%s: rebuilt from the log: %" PRIu64 " entries", tl->db_dir,
        tl->size);
    return 0;
}


int
tl_store_reindex(tl_timeline_t *tl, sk_err_t *err)
{
    /* A batch's index sync, out of the lock, uses tl->db, which the
     * rebuild reopens; what it saves of tl must be as after the wait. */
    while (tl->index_syncing) {
        pthread_cond_wait(&tl->synced, &tl->lock);
    }
    return tl_store_reindex_now(tl, err);
}
