/*
 * tl_append.c -- POST /append: parse, validate, stamp, write, sync.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tl.h"

#define TL_CLOCK_POLL_MS  20


int64_t
tl_now(const tl_timeline_t *tl)
{
    char      *buf;
    size_t     len;
    long long  t;

    if (tl->conf.clock_file == NULL) {
        return (int64_t) time(NULL);
    }
    /* The test clock: one decimal number in a file. */
    if (sk_file_read(&buf, &len, tl->conf.clock_file, 64, NULL) != 0) {
        return 0;
    }
    t = strtoll(buf, NULL, 10);
    free(buf);
    return (int64_t) t;
}


static tl_verdict_t
tl_append_parse(sk_entry_t **e, const char *text, size_t len, sk_err_t *err)
{
    static const char *const  stamp[] = { "SN", "TID", "Timestamp",
                                          "Signature" };
    size_t                    i;

    for (i = 0; i < len; i++) {
        if ((text[i] < 0x20 || text[i] > 0x7e) && text[i] != '\n') {
            sk_err_set(err, SK_ERR_FORMAT,
                "entry: byte %zu is not printable ascii", i + 1);
            return TL_BAD_REQUEST;
        }
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


/* With tl->lock held: wait for a lagging clock, refuse a runaway one. */
static tl_verdict_t
tl_append_clock(tl_timeline_t *tl, int64_t *now, sk_err_t *err)
{
    uint64_t  waited = 0;

    for (;;) {
        *now = tl_now(tl);
        if (tl->size == 0 || *now >= tl->last_ts) {
            break;
        }
        if (waited >= tl->conf.clock_wait_ms) {
            sk_err_set(err, SK_ERR_UNAVAILABLE, "clock: %" PRId64
                " is behind the newest entry's %" PRId64, *now, tl->last_ts);
            return TL_UNAVAILABLE;
        }
        pthread_mutex_unlock(&tl->lock);
        usleep(TL_CLOCK_POLL_MS * 1000);
        waited += TL_CLOCK_POLL_MS;
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


static tl_verdict_t
tl_append_rate(tl_timeline_t *tl, int64_t now, sk_err_t *err)
{
    if (tl->conf.rate_global == 0) {
        return TL_OK;
    }
    if (now != tl->rate_sec) {
        tl->rate_sec = now;
        tl->rate_count = 0;
    }
    if (tl->rate_count >= tl->conf.rate_global) {
        sk_err_set(err, SK_ERR_UNAVAILABLE,
            "rate limit: more than %" PRIu64 " new entries per second",
            tl->conf.rate_global);
        return TL_UNAVAILABLE;
    }
    return TL_OK;
}


/* With tl->lock held: every state check, then stamp and write. */
static tl_verdict_t
tl_append_locked(tl_timeline_t *tl, sk_entry_t *e, char **out,
    size_t *outlen, sk_err_t *err)
{
    tl_verdict_t  v;
    int64_t       now;

    if (tl->failed) {
        sk_err_set(err, SK_ERR_SYSTEM, "log: an earlier write failed");
        return TL_FAULT;
    }
    if ((v = tl_append_clock(tl, &now, err)) != TL_OK
        || (v = tl_append_rate(tl, now, err)) != TL_OK
        || (v = tl_validate_state(tl, e, now, err)) != TL_OK)
    {
        return v;
    }
    if (sk_entry_stamp(e, tl->conf.tid, tl->size, now, tl->key, err) != 0
        || sk_entry_format(out, outlen, e, err) != 0)
    {
        return TL_FAULT;
    }
    if (tl_store_write(tl, *out, *outlen, now, err) != 0) {
        free(*out);
        return TL_FAULT;
    }
    tl->rate_count++;
    if (tl_state_apply(tl, e, now, err) != 0) {
        tl->failed = 1;
        tl_log("state: %s; refusing further appends", err->msg);
    }
    if (tl_store_wait(tl, tl->size - 1, err) != 0) {
        free(*out);
        return TL_FAULT;
    }
    return TL_OK;
}


tl_verdict_t
tl_append(tl_timeline_t *tl, char **out, size_t *outlen, const char *text,
    size_t len, sk_err_t *err)
{
    sk_entry_t    *e;
    tl_verdict_t   v;

    if ((v = tl_append_parse(&e, text, len, err)) != TL_OK) {
        return v;
    }
    v = tl_validate_static(tl, e, tl_now(tl), err);
    if (v == TL_OK) {
        pthread_mutex_lock(&tl->lock);
        v = tl_append_locked(tl, e, out, outlen, err);
        pthread_mutex_unlock(&tl->lock);
    }
    sk_entry_free(e);
    return v;
}
