/*
 * tl_append.c -- POST /append: parse, validate, stamp, write, sync.
 */
#define _GNU_SOURCE     /* pthread_setname_np */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tl.h"

#define TL_CLOCK_POLL_MS  20


/* CA-Cert-Chain within max_chain certificates and max_chain_bytes, read
 * off the text before anything is decoded: a chain is the costliest part
 * of an entry to parse, and past these it is refused unread. */
static tl_verdict_t
tl_append_chain_size(const tl_timeline_t *tl, const char *text, size_t len,
    sk_err_t *err)
{
    static const char  field[] = "\nCA-Cert-Chain: ";
    const char        *v, *end;
    size_t             n = 1;

    v = memmem(text, len, field, sizeof(field) - 1);
    if (v == NULL) {
        return TL_OK;
    }
    v += sizeof(field) - 1;
    end = memchr(v, '\n', len - (size_t) (v - text));
    end = end != NULL ? end : text + len;
    if ((uint64_t) (end - v) > tl->conf.max_chain_bytes) {
        sk_err_set(err, SK_ERR_FORMAT, "entry: CA-Cert-Chain of %zu bytes, "
            "more than %" PRIu64 " (max_chain_bytes)", (size_t) (end - v),
            tl->conf.max_chain_bytes);
        return TL_TOO_LARGE;
    }
    for (; v < end; v++) {
        n += *v == ',';
    }
    if (n > tl->conf.max_chain) {
        sk_err_set(err, SK_ERR_FORMAT, "entry: CA-Cert-Chain of %zu "
            "certificates, more than %" PRIu64 " (max_chain): send the "
            "end-entity certificate and the intermediates of its path only",
            n, tl->conf.max_chain);
        return TL_BAD_REQUEST;
    }
    return TL_OK;
}


static tl_verdict_t
tl_append_parse(tl_timeline_t *tl, sk_entry_t **e, const char *text,
    size_t len, sk_err_t *err)
{
    static const char *const  stamp[] = { "SN", "TID", "Timestamp",
                                          "Signature" };
    tl_verdict_t              v;
    size_t                    i;

    for (i = 0; i < len; i++) {
        if ((text[i] < 0x20 || text[i] > 0x7e) && text[i] != '\n') {
            sk_err_set(err, SK_ERR_FORMAT,
                "entry: byte %zu is not printable ascii", i + 1);
            return TL_BAD_REQUEST;
        }
    }
    if ((v = tl_append_chain_size(tl, text, len, err)) != TL_OK) {
        return v;
    }
    if (sk_entry_parse(e, text, len, err) != 0) {
        sk_err_prefix(err, "entry");
        return TL_BAD_REQUEST;
    }
    /* The timeline's own fields in a submission are ignored. */
    for (i = 0; i < sizeof(stamp) / sizeof(stamp[0]); i++) {
        if (sk_entry_set(*e, stamp[i], SK_NA, err) != 0) {
            sk_entry_free(*e);
            return TL_FAULT;
        }
    }
    return TL_OK;
}


/* How long an append may wait, on monotonic milliseconds. */
typedef struct {
    uint64_t  reply_at;     /* then hand the rest to a job: TL_QUEUED */
    uint64_t  clock_until;  /* a clock still behind by then: 503 */
    uint64_t  sn;           /* once stamped: its SN */
    int       stamped;
    uint64_t  start_us;     /* tl_us() at the start (metrics) */
} tl_wait_t;

/* An append that goes on after its 202. */
typedef struct {
    tl_timeline_t  *tl;
    sk_entry_t     *e;
    sk_entry_t     *ref;            /* an Incorporate's copy, or NULL */
    tl_wait_t       w;
    unsigned char   id[TL_TOKEN_BYTES];
} tl_job_t;


/* With tl->lock held: wait for a lagging clock, refuse a runaway one. */
static tl_verdict_t
tl_append_clock(tl_timeline_t *tl, int64_t *now, const tl_wait_t *w,
    sk_err_t *err)
{
    uint64_t  ms;

    for (;;) {
        *now = tl_now(tl);
        if (tl->size == 0 || *now >= tl->last_ts) {
            break;
        }
        ms = tl_ms();
        if (ms >= w->clock_until) {
            sk_err_set(err, SK_ERR_UNAVAILABLE, "clock: %" PRId64
                " is behind the newest entry's %" PRId64, *now, tl->last_ts);
            return TL_UNAVAILABLE;
        }
        if (ms >= w->reply_at) {
            return TL_QUEUED;
        }
        pthread_mutex_unlock(&tl->lock);
        tl_work_block(tl);
        usleep(TL_CLOCK_POLL_MS * 1000);
        tl_work_unblock(tl);
        pthread_mutex_lock(&tl->lock);
    }
    if (tl->conf.max_clock_ahead != 0 && tl->size > 0
        && *now - tl->last_ts > (int64_t) tl->conf.max_clock_ahead)
    {
        sk_err_set(err, SK_ERR_UNAVAILABLE, "clock: %" PRId64 " is more than "
            "%" PRIu64 " s past the newest entry", *now,
            tl->conf.max_clock_ahead);
        return TL_UNAVAILABLE;
    }
    return TL_OK;
}


/* The stamped entry, len bytes, must fit in an entry bundle
 * (/tile/entries/): each of its entries is a uint16 length and the text,
 * so one stored longer would stall every tiles client for good. */
static tl_verdict_t
tl_append_fits(size_t len, sk_err_t *err)
{
    if (len <= SK_TILE_ENTRY_MAX) {
        return TL_OK;
    }
    sk_err_set(err, SK_ERR_FORMAT, "entry: %zu bytes once stamped, more "
        "than %d (the most an entry bundle, /tile/entries/, carries)", len,
        SK_TILE_ENTRY_MAX);
    return TL_TOO_LARGE;
}


/* With tl->lock held: a check read a row of the index that did not
 * check, so the state it gave decides nothing: rebuild the index, and
 * let the client ask again (503, Retry-After). */
static tl_verdict_t
tl_append_reindex(tl_timeline_t *tl, sk_err_t *err)
{
    if (tl_store_reindex(tl, err) != 0) {
        return tl->failed ? TL_FAULT : TL_RETRY;
    }
    sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: found damaged and rebuilt from "
        "the log: retry", tl->db_dir);
    return TL_RETRY;
}


/* With tl->lock held: park the append just written (w->sn); the reply
 * timer is told when its deadline is the earliest. */
static void
tl_append_park(tl_timeline_t *tl, tl_park_t *park, const tl_wait_t *w)
{
    park->sn = w->sn;
    park->reply_at = w->reply_at;
    park->start_us = w->start_us;
    tl_store_park(tl, park);
    if (park->reply_at < tl->reply_armed) {
        tl->reply_armed = park->reply_at;
        pthread_cond_signal(&tl->reply_wake);
    }
}


/* With tl->lock held: every state check, then stamp, write and sync.
 * TL_QUEUED when w->reply_at passes first (w->stamped says whether the
 * entry is written and only its sync is awaited). */
static tl_verdict_t
tl_append_locked(tl_timeline_t *tl, sk_entry_t *e, const sk_entry_t *ref,
    char **out, size_t *outlen, tl_wait_t *w, tl_park_t *park, sk_err_t *err)
{
    tl_verdict_t  v;
    int64_t       now;
    int           rc;

    if (!w->stamped) {
        if (tl->failed) {
            sk_err_set(err, SK_ERR_SYSTEM, "%s", tl->failed_msg);
            return TL_FAULT;
        }
        if ((v = tl_append_clock(tl, &now, w, err)) == TL_OK
            && (v = tl_validate_state(tl, e, now, err)) == TL_OK
            && ref != NULL)
        {
            v = tl_inc_validate_state(tl, ref, now, err);
        }
        if (tl->index_bad) {
            return tl_append_reindex(tl, err);
        }
        if (v != TL_OK) {
            return v;
        }
        if (sk_entry_stamp(e, tl->conf.tid, tl->size, now, tl->key, err) != 0
            || sk_entry_format(out, outlen, e, err) != 0)
        {
            return TL_FAULT;
        }
        if ((v = tl_append_fits(*outlen, err)) != TL_OK
            || (ref != NULL && tl_inc_write(tl, ref, err) != 0))
        {
            free(*out);
            return v != TL_OK ? v : TL_FAULT;
        }
        if (tl_store_write(tl, *out, *outlen, now, err) != 0) {
            free(*out);
            return TL_FAULT;
        }
        w->stamped = 1;
        w->sn = tl->size - 1;
        if ((ref != NULL ? tl_state_incorporate(tl, e, ref, now, err)
                         : tl_state_apply(tl, e, now, err)) != 0)
        {
            tl_fail(tl, "state: %s; appends refused until a restart",
                err->msg);
        }
        tl_index_maybe_flush(tl, 0);
        if (park != NULL) {
            tl_append_park(tl, park, w);
            return TL_PARKED;
        }
    } else {
        *out = NULL;
    }
    rc = tl_store_wait(tl, w->sn, w->reply_at, err);
    if (rc != 0) {
        free(*out);
        return rc < 0 ? TL_FAULT : TL_QUEUED;
    }
    if (*out == NULL && tl_store_read_locked(tl, out, outlen, w->sn, err) != 0)
    {
        return TL_FAULT;
    }
    return TL_OK;
}


/* The rest of an append answered 202: its outcome goes to the token. */
static void *
tl_append_job(void *arg)
{
    tl_job_t       *j = arg;
    tl_timeline_t  *tl = j->tl;
    tl_token_t     *t;
    tl_verdict_t    v;
    sk_err_t        err;
    size_t          len;
    char           *out = NULL;

    sk_err_clear(&err);
    pthread_mutex_lock(&tl->lock);
    j->w.reply_at = UINT64_MAX;
    v = tl_append_locked(tl, j->e, j->ref, &out, &len, &j->w, NULL, &err);
    free(out);
    t = tl_token_find(tl, j->id);
    if (t != NULL) {
        t->pending = 0;
        t->v = v;
        t->sn = j->w.sn;
        snprintf(t->msg, sizeof(t->msg), "%s", err.msg);
    }
    if (v == TL_FAULT) {
        tl_log("append: %s", err.msg);
    }
    tl_metrics_append(tl, v, tl_us() - j->w.start_us);
    tl->jobs--;
    pthread_cond_broadcast(&tl->jobs_done);
    pthread_mutex_unlock(&tl->lock);
    sk_entry_free(j->e);
    sk_entry_free(j->ref);
    free(j);
    return NULL;
}


/* With tl->lock held: start a job for the rest, *out its token; -1 if
 * none can start (then the caller waits itself). */
static int
tl_append_handoff(tl_timeline_t *tl, sk_entry_t **e, sk_entry_t **ref,
    const tl_wait_t *w, char **out, size_t *outlen)
{
    pthread_attr_t   attr;
    pthread_t        th;
    tl_token_t      *t;
    tl_job_t        *j;
    char             hex[TL_TOKEN_HEX];
    int              rc;

    if (tl->jobs >= tl->conf.threads || (j = calloc(1, sizeof(*j))) == NULL)
    {
        return -1;
    }
    *out = malloc(TL_TOKEN_HEX);
    t = *out != NULL ? tl_token_new(tl, hex) : NULL;
    if (t == NULL) {
        free(*out);
        free(j);
        return -1;
    }
    j->tl = tl;
    j->e = *e;
    j->ref = *ref;
    j->w = *w;
    memcpy(j->id, t->id, TL_TOKEN_BYTES);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, tl_append_job, j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        t->used = 0;
        free(*out);
        free(j);
        return -1;
    }
    tl->jobs++;
    *e = NULL;              /* the job's now */
    *ref = NULL;
    memcpy(*out, hex, TL_TOKEN_HEX);
    *outlen = TL_TOKEN_HEX - 1;
    return 0;
}


/* With tl->lock held: a parked append past its reply_at gets its 202 and
 * a job that waits for the rest; the earliest deadline of the others in
 * *next.  0 if one was answered. */
static int
tl_append_expire(tl_timeline_t *tl, uint64_t now, uint64_t *next)
{
    tl_park_t   *p;
    tl_wait_t    w;
    sk_entry_t  *none = NULL, *none_ref = NULL;
    char        *token;
    size_t       len;

    *next = UINT64_MAX;
    for (p = tl->park_head; p != NULL; p = p->next) {
        if (p->reply_at > now) {
            *next = p->reply_at < *next ? p->reply_at : *next;
            continue;
        }
        memset(&w, 0, sizeof(w));
        w.stamped = 1;
        w.sn = p->sn;
        w.start_us = p->start_us;
        if (tl_append_handoff(tl, &none, &none_ref, &w, &token, &len) != 0) {
            p->reply_at = UINT64_MAX;   /* no job: its 201 comes instead */
            continue;
        }
        tl_store_answer(tl, p, TL_QUEUED, token, NULL);
        return 0;
    }
    return -1;
}


/* The reply timer: sleeps until the earliest parked deadline. */
static void *
tl_append_timer(void *arg)
{
    tl_timeline_t    *tl = arg;
    struct timespec   at;
    uint64_t          next;

    pthread_setname_np(pthread_self(), "tl-reply");
    pthread_mutex_lock(&tl->lock);
    while (!tl->replier.stop) {
        if (tl_append_expire(tl, tl_ms(), &next) == 0) {
            continue;
        }
        tl->reply_armed = next;
        if (next == UINT64_MAX) {
            pthread_cond_wait(&tl->reply_wake, &tl->lock);
        } else {
            at.tv_sec = (time_t) (next / 1000);
            at.tv_nsec = (long) (next % 1000) * 1000000L;
            (void) pthread_cond_timedwait(&tl->reply_wake, &tl->lock, &at);
        }
    }
    pthread_mutex_unlock(&tl->lock);
    return NULL;
}


int
tl_append_start(tl_timeline_t *tl, sk_err_t *err)
{
    return tl_thread_start(&tl->replier, tl_append_timer, tl,
        "append: the reply timer", err);
}


void
tl_append_stop(tl_timeline_t *tl)
{
    tl_thread_stop(&tl->replier, &tl->lock, &tl->reply_wake);
}


tl_verdict_t
tl_append(tl_timeline_t *tl, char **out, size_t *outlen, const char *text,
    size_t len, const char *ref_text, size_t ref_len, tl_park_t *park,
    sk_err_t *err)
{
    sk_entry_t    *e, *ref = NULL;
    tl_verdict_t   v;
    tl_wait_t      w;
    uint64_t       ms, start_us = tl_us();

    tl->appending++;
    if ((v = tl_append_parse(tl, &e, text, len, err)) != TL_OK) {
        tl->appending--;
        tl_metrics_append(tl, v, tl_us() - start_us);
        return v;
    }
    /* A lookup before any signature or chain is checked: a replayed
     * Bind of a bound name costs no more. */
    if (ref_text != NULL && sk_entry_type(e) != SK_ENTRY_INCORPORATE) {
        sk_err_set(err, SK_ERR_FORMAT,
            "form: field \"ref\" is only for an Incorporate");
        v = TL_BAD_REQUEST;
    }
    pthread_mutex_lock(&tl->lock);
    if (v == TL_OK && !tl->failed && !tl->index_bad) {
        v = tl_validate_early(tl, e, err);
        v = tl->index_bad ? TL_OK : v;     /* decided again, rebuilt */
    }
    pthread_mutex_unlock(&tl->lock);
    if (v == TL_OK && sk_entry_type(e) == SK_ENTRY_INCORPORATE) {
        v = tl_inc_validate_static(tl, e, ref_text, ref_len, &ref, err);
    } else if (v == TL_OK) {
        v = tl_validate_static(tl, e, tl_now(tl), 1, err);
    }
    tl->appending--;
    if (v == TL_OK) {
        ms = tl_ms();
        memset(&w, 0, sizeof(w));
        w.start_us = start_us;
        w.reply_at = ms + tl->conf.reply_ms;
        w.clock_until = ms + tl->conf.clock_wait_ms;
        pthread_mutex_lock(&tl->lock);
        v = tl_append_locked(tl, e, ref, out, outlen, &w, park, err);
        if (v == TL_QUEUED
            && tl_append_handoff(tl, &e, &ref, &w, out, outlen) != 0)
        {
            w.reply_at = UINT64_MAX;
            v = tl_append_locked(tl, e, ref, out, outlen, &w, park, err);
        }
        pthread_mutex_unlock(&tl->lock);
    }
    sk_entry_free(e);
    sk_entry_free(ref);
    if (v == TL_PARKED) {
        tl_store_kick(tl);      /* whoever settles it counts it */
    } else {
        tl_metrics_append(tl, v, tl_us() - start_us);
    }
    return v;
}


void
tl_append_drain(tl_timeline_t *tl)
{
    pthread_mutex_lock(&tl->lock);
    while (tl->jobs > 0) {
        pthread_cond_wait(&tl->jobs_done, &tl->lock);
    }
    pthread_mutex_unlock(&tl->lock);
}
