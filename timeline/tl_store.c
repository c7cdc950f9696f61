/*
 * tl_store.c -- the append-only log: one file of stamped entries, back to
 * back, SN 0 first, each canonical but for the CA certificates of its
 * chain, which are stored once (tl_calog.c).  Nothing is ever rewritten;
 * the only change to old bytes is cutting a torn tail at start.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tl.h"


static int
tl_store_grow(tl_timeline_t *tl, sk_err_t *err)
{
    off_t    *off;
    int64_t  *ts;
    uint64_t  cap = tl->cap != 0 ? tl->cap * 2 : 1024;

    off = realloc(tl->off, (cap + 1) * sizeof(*off));
    if (off == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "log index");
    }
    tl->off = off;
    ts = realloc(tl->ts, cap * sizeof(*ts));
    if (ts == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "log index");
    }
    tl->ts = ts;
    tl->cap = cap;
    return 0;
}


/* Record the next SN: canonical text buf[0..len), stored in slen bytes
 * at the end of the log, stamped ts. */
static int
tl_store_index(tl_timeline_t *tl, const char *buf, size_t len, size_t slen,
    int64_t ts, sk_err_t *err)
{
    sk_merkle_hash_t  leaf;

    if (tl->size == tl->cap && tl_store_grow(tl, err) != 0) {
        return -1;
    }
    if (sk_merkle_leaf_hash(leaf, buf, len, err) != 0
        || sk_merkle_tree_append(tl->tree, leaf, err) != 0)
    {
        return -1;
    }
    tl->ts[tl->size] = ts;
    tl->off[tl->size + 1] = tl->off[tl->size] + (off_t) slen;
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


static int
tl_store_slurp(char **buf, size_t *len, int fd, sk_err_t *err)
{
    struct stat  st;
    ssize_t      n;
    size_t       got = 0;

    if (fstat(fd, &st) != 0) {
        return sk_err_sys(err, "fstat");
    }
    *len = (size_t) st.st_size;
    *buf = malloc(*len + 1);
    if (*buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "reading the log");
    }
    while (got < *len) {
        n = pread(fd, *buf + got, *len - got, (off_t) got);
        if (n <= 0) {
            free(*buf);
            return n < 0 ? sk_err_sys(err, "read")
                         : sk_err_set(err, SK_ERR_FORMAT, "log shrank");
        }
        got += (size_t) n;
    }
    (*buf)[*len] = '\0';
    return 0;
}


/* The stored entry at p: its length up to and with its blank line, or 0
 * if no whole entry is left. */
static size_t
tl_store_entry_len(const char *p, size_t len)
{
    size_t  i;

    for (i = 1; i < len; i++) {
        if (p[i] == '\n' && p[i - 1] == '\n') {
            return i + 1;
        }
    }
    return 0;
}


/* A tail holding no whole entry (no blank line) is a write cut short. */
int
tl_store_torn(const char *p, size_t len)
{
    return tl_store_entry_len(p, len) == 0;
}


/* One stored entry of slen bytes at p, replayed as the next SN. */
static int
tl_store_replay_one(tl_timeline_t *tl, const char *p, size_t slen, int last,
    sk_err_t *err)
{
    sk_entry_t  *e;
    char        *text;
    size_t       len, used;
    int64_t      ts;
    int          rc;

    if (tl_calog_unpack(tl, &text, &len, p, slen, err) != 0) {
        return -1;
    }
    if (sk_entry_parse_next(&e, &used, text, len, err) != 0) {
        free(text);
        return -1;
    }
    rc = used != len ? sk_err_set(err, SK_ERR_FORMAT, "bytes after the "
            "entry's blank line")
        : tl_store_check(tl, e, &ts, tl->conf.verify_on_start || last, err);
    sk_entry_free(e);
    if (rc == 0) {
        rc = tl_store_index(tl, text, len, slen, ts, err);
    }
    free(text);
    return rc;
}


static int
tl_store_replay(tl_timeline_t *tl, const char *path, sk_err_t *err)
{
    char    *buf = NULL;
    size_t   len = 0, pos = 0, slen;

    if (tl_store_slurp(&buf, &len, tl->fd, err) != 0) {
        return sk_err_prefix(err, "%s", path);
    }
    while (pos < len) {
        slen = tl_store_entry_len(buf + pos, len - pos);
        if (slen == 0) {
            tl_log("%s: truncating a torn tail of %zu bytes at offset %zu "
                "(SN %" PRIu64 ")", path, len - pos, pos, tl->size);
            if (ftruncate(tl->fd, (off_t) pos) != 0 || fsync(tl->fd) != 0) {
                free(buf);
                return sk_err_sys(err, "%s: truncate", path);
            }
            break;
        }
        if (tl_store_replay_one(tl, buf + pos, slen, pos + slen == len, err)
            != 0)
        {
            free(buf);
            return sk_err_prefix(err, "%s: offset %zu (SN %" PRIu64 ")",
                path, pos, tl->size);
        }
        pos += slen;
    }
    free(buf);
    tl->durable = tl->size;
    return 0;
}


int
tl_store_open(tl_timeline_t *tl, sk_err_t *err)
{
    char  path[4096];

    snprintf(path, sizeof(path), "%s/%s", tl->conf.data_dir, TL_LOG_FILE);
    if (sk_merkle_tree_new(&tl->tree, err) != 0
        || tl_store_grow(tl, err) != 0)
    {
        return -1;
    }
    tl->off[0] = 0;
    tl->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
        0644);
    if (tl->fd < 0) {
        return sk_err_sys(err, "%s: open", path);
    }
    if (tl_store_replay(tl, path, err) != 0) {
        return -1;
    }
    tl_log("%s: %" PRIu64 " entries", path, tl->size);
    return 0;
}


void
tl_store_close(tl_timeline_t *tl)
{
    if (tl->fd >= 0) {
        close(tl->fd);
    }
    free(tl->off);
    free(tl->ts);
    sk_merkle_tree_free(tl->tree);
}


int
tl_store_write(tl_timeline_t *tl, const char *buf, size_t len, int64_t ts,
    sk_err_t *err)
{
    char    *stored;
    size_t   slen;

    if (tl->failed) {
        return sk_err_set(err, SK_ERR_SYSTEM, "log: an earlier write failed");
    }
    if (tl_calog_pack(tl, &stored, &slen, buf, len, err) != 0) {
        return -1;
    }
    if (sk_file_write_all(tl->fd, stored, slen) != 0) {
        sk_err_sys(err, "log: write");
        free(stored);
        /* Cut what got out, so the log stays whole entries. */
        if (ftruncate(tl->fd, tl->off[tl->size]) != 0) {
            tl->failed = 1;
        }
        return -1;
    }
    free(stored);
    if (tl_store_index(tl, buf, len, slen, ts, err) != 0) {
        tl->failed = 1;
        return -1;
    }
    return 0;
}


int
tl_store_wait(tl_timeline_t *tl, uint64_t sn, uint64_t until_ms,
    sk_err_t *err)
{
    struct timespec  at;
    uint64_t         target;
    int              rc;

    at.tv_sec = (time_t) (until_ms / 1000);
    at.tv_nsec = (long) (until_ms % 1000) * 1000000L;
    while (tl->durable <= sn && !tl->failed) {
        if (tl->syncing) {
            if (until_ms == UINT64_MAX) {
                pthread_cond_wait(&tl->synced, &tl->lock);
            } else if (pthread_cond_timedwait(&tl->synced, &tl->lock, &at)
                       != 0 && tl->syncing && tl->durable <= sn)
            {
                return 1;
            }
            continue;
        }
        /* Lead one sync for everything written so far. */
        tl->syncing = 1;
        target = tl->size;
        pthread_mutex_unlock(&tl->lock);
        if (tl->conf.sync_delay_ms != 0) {
            usleep((useconds_t) (tl->conf.sync_delay_ms * 1000));
        }
        rc = fdatasync(tl->fd);
        pthread_mutex_lock(&tl->lock);
        tl->syncing = 0;
        if (rc != 0) {
            tl->failed = 1;
            tl_log("log: fdatasync: %s; refusing further appends",
                strerror(errno));
        } else if (target > tl->durable) {
            tl->durable = target;
        }
        pthread_cond_broadcast(&tl->synced);
    }
    if (tl->durable <= sn) {
        return sk_err_set(err, SK_ERR_SYSTEM, "log: sync failed");
    }
    return 0;
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
        n = pread(tl->fd, stored + got, slen - got, a + (off_t) got);
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


int
tl_store_read(tl_timeline_t *tl, char **out, size_t *len, uint64_t first,
    uint64_t last, sk_err_t *err)
{
    off_t  a, b;

    /* The index may move under a writer; the bytes never change. */
    pthread_mutex_lock(&tl->lock);
    a = tl->off[first];
    b = tl->off[last + 1];
    pthread_mutex_unlock(&tl->lock);
    return tl_store_pread(tl, out, len, a, b, err);
}


int
tl_store_read_locked(tl_timeline_t *tl, char **out, size_t *len,
    uint64_t sn, sk_err_t *err)
{
    return tl_store_pread(tl, out, len, tl->off[sn], tl->off[sn + 1], err);
}
