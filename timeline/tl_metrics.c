/*
 * tl_metrics.c -- sk-timeline's /metrics (sk/metrics.h), on its own
 * address (metrics_listen) so the public front never shows it.
 *
 * Counts are taken where they happen (the public front in sk_httpd,
 * tl_append.c, tl_store.c, tl_ocsp.c, tl_chunk.c); sizes, queues and
 * ages are read at each scrape.  docs/operations.md, "Monitoring",
 * describes each series.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "tl.h"

static const sk_metric_def_t  tl_metrics_appends = {
    "sk_timeline_appends_total",
    "Appends by outcome (created; bad_request, forbidden, too_large, "
    "budget: the client's; unavailable, retry, timeout, fault: the "
    "timeline's).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  tl_metrics_append_seconds = {
    "sk_timeline_append_duration_seconds",
    "Time from a whole POST /append to its outcome.",
    SK_METRIC_HISTOGRAM, sk_metrics_latency_buckets,
    SK_METRICS_LATENCY_BUCKETS
};

static const sk_metric_def_t  tl_metrics_fsync_seconds = {
    "sk_timeline_fsync_duration_seconds",
    "Time of each fdatasync of entries.log (one per group commit).",
    SK_METRIC_HISTOGRAM, sk_metrics_latency_buckets,
    SK_METRICS_LATENCY_BUCKETS
};

static const sk_metric_def_t  tl_metrics_ocsp_def = {
    "sk_timeline_ocsp_requests_total",
    "OCSP responders asked (answers not in the cache), by result: good, "
    "revoked, unknown, failed (no definite answer: 408).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  tl_metrics_ocsp_seconds = {
    "sk_timeline_ocsp_duration_seconds",
    "Time to get an OCSP responder's answer, or give up.",
    SK_METRIC_HISTOGRAM, sk_metrics_latency_buckets,
    SK_METRICS_LATENCY_BUCKETS
};

static const sk_metric_def_t  tl_metrics_published = {
    "sk_timeline_published_entries",
    "Entries published in chunks.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  tl_metrics_publish_lag = {
    "sk_timeline_publish_lag_seconds",
    "Seconds since the publisher last put every durable entry in chunks, "
    "while some wait; 0 when none does.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  tl_metrics_queue = {
    "sk_timeline_append_queue",
    "Appends waiting for an append thread.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  tl_metrics_pending = {
    "sk_timeline_appends_pending",
    "Appends answered 202 whose outcome is not settled yet.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  tl_metrics_tree_size = {
    "sk_timeline_tree_size",
    "Entries in the durable tree (what the checkpoint covers).",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  tl_metrics_refused = {
    "sk_timeline_appends_refused",
    "1 once a failed sync of the log makes the timeline refuse every "
    "append until a restart.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  tl_metrics_checkpoint_age = {
    "sk_timeline_checkpoint_age_seconds",
    "Seconds since the timeline last signed a checkpoint or TFM on its "
    "own (a chunk's, or every checkpoint_interval; not one a reader asked "
    "for), since the start before the first.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  tl_metrics_checkpoint_interval = {
    "sk_timeline_checkpoint_interval_seconds",
    "The longest the timeline goes without signing a checkpoint on its "
    "own, entries or not (checkpoint_interval).",
    SK_METRIC_GAUGE, NULL, 0
};

/* The fair queue's refusals, in the HTTP front's family (sk/httpd.h). */
static const char *const  tl_metrics_refusals[TL_METRICS_REFUSALS] = {
    [TL_METRICS_CLIENT_QUEUE] = "client_queue",
    [TL_METRICS_RATE_GLOBAL] = "rate_global"
};

/* Label values of each final verdict. */
static const char *const  tl_metrics_results[TL_QUEUED] = {
    [TL_OK] = "created", [TL_BAD_REQUEST] = "bad_request",
    [TL_FORBIDDEN] = "forbidden", [TL_UNAVAILABLE] = "unavailable",
    [TL_TIMEOUT] = "timeout", [TL_FAULT] = "fault",
    [TL_TOO_LARGE] = "too_large", [TL_RETRY] = "retry",
    [TL_LIMITED] = "budget"
};

static const char *const  tl_metrics_ocsp_results[TL_OCSP_RESULTS] = {
    "good", "revoked", "unknown", "failed"
};

/* The public front's endpoints, by the first part of the path. */
static const char *const  tl_metrics_endpoints[] = {
    "other", "append", "checkpoint", "status", "token", "proof", "chunks",
    "entry", "incorporated", "tile"
};

#define TL_METRICS_ENDPOINTS \
    (sizeof(tl_metrics_endpoints) / sizeof(tl_metrics_endpoints[0]))


static size_t
tl_metrics_endpoint(const char *url, const char *method)
{
    static const struct {
        const char  *path;
        size_t       len;           /* 0: the whole path */
    } paths[TL_METRICS_ENDPOINTS] = {
        { NULL, 0 }, { "/append", 0 }, { "/checkpoint", 0 },
        { "/status", 0 }, { "/status/", 8 }, { "/proof/", 7 },
        { "/chunks", 7 }, { "/entry/", 7 }, { "/incorporated/", 14 },
        { "/tile/", 6 }
    };
    size_t  i;

    (void) method;
    for (i = 1; i < TL_METRICS_ENDPOINTS; i++) {
        if (paths[i].len == 0 ? strcmp(url, paths[i].path) == 0
            : strncmp(url, paths[i].path, paths[i].len) == 0)
        {
            return i;
        }
    }
    return 0;
}


static void
tl_metrics_collect(sk_metrics_t *m, void *cls)
{
    tl_timeline_t  *tl = cls;
    tl_metrics_t   *mt = &tl->metrics;
    uint64_t        now = tl_ms(), durable, published;

    (void) m;
    pthread_mutex_lock(&tl->lock);
    durable = tl->durable;
    sk_metric_set(mt->tree_size, (double) durable);
    sk_metric_set(mt->refused, tl->failed ? 1 : 0);
    sk_metric_set(mt->pending, tl->jobs);
    pthread_mutex_unlock(&tl->lock);
    pthread_mutex_lock(&tl->work.lock);
    sk_metric_set(mt->queue, (double) tl->work.queued);
    pthread_mutex_unlock(&tl->work.lock);
    published = tl_chunk_published(tl);
    sk_metric_set(mt->published, (double) published);
    sk_metric_set(mt->publish_lag, published >= durable ? 0
        : (double) (now - atomic_load(&mt->caught_ms)) / 1000);
    sk_metric_set(mt->checkpoint_age,
        (double) (now - atomic_load(&mt->signed_ms)) / 1000);
}


static sk_metric_t *
tl_metrics_plain(tl_metrics_t *mt, const sk_metric_def_t *def, sk_err_t *err)
{
    return sk_metrics_series(mt->reg, def, NULL, NULL, 0, err);
}


static int
tl_metrics_series(tl_timeline_t *tl, sk_err_t *err)
{
    static const char *const  name[] = { "result" };
    tl_metrics_t             *mt = &tl->metrics;
    size_t                    i;

    if (sk_metrics_process(mt->reg, "sk_timeline", err) != 0) {
        return -1;
    }
    for (i = 0; i < TL_QUEUED; i++) {
        mt->appends[i] = sk_metrics_series(mt->reg, &tl_metrics_appends,
            name, &tl_metrics_results[i], 1, err);
        if (mt->appends[i] == NULL) {
            return -1;
        }
    }
    for (i = 0; i < TL_OCSP_RESULTS; i++) {
        mt->ocsp[i] = sk_metrics_series(mt->reg, &tl_metrics_ocsp_def,
            name, &tl_metrics_ocsp_results[i], 1, err);
        if (mt->ocsp[i] == NULL) {
            return -1;
        }
    }
    mt->append_seconds = tl_metrics_plain(mt, &tl_metrics_append_seconds,
        err);
    mt->fsync_seconds = tl_metrics_plain(mt, &tl_metrics_fsync_seconds, err);
    mt->ocsp_seconds = tl_metrics_plain(mt, &tl_metrics_ocsp_seconds, err);
    mt->tree_size = tl_metrics_plain(mt, &tl_metrics_tree_size, err);
    mt->published = tl_metrics_plain(mt, &tl_metrics_published, err);
    mt->publish_lag = tl_metrics_plain(mt, &tl_metrics_publish_lag, err);
    mt->queue = tl_metrics_plain(mt, &tl_metrics_queue, err);
    mt->pending = tl_metrics_plain(mt, &tl_metrics_pending, err);
    mt->refused = tl_metrics_plain(mt, &tl_metrics_refused, err);
    mt->checkpoint_age = tl_metrics_plain(mt, &tl_metrics_checkpoint_age,
        err);
    mt->checkpoint_interval = tl_metrics_plain(mt,
        &tl_metrics_checkpoint_interval, err);
    if (mt->checkpoint_interval != NULL) {
        sk_metric_set(mt->checkpoint_interval,
            (double) tl->conf.checkpoint_interval);
    }
    sk_httpd_metrics_init(&mt->http, mt->reg, "sk_timeline",
        tl_metrics_endpoints, TL_METRICS_ENDPOINTS, tl_metrics_endpoint);
    return mt->append_seconds == NULL || mt->fsync_seconds == NULL
           || mt->ocsp_seconds == NULL || mt->tree_size == NULL
           || mt->published == NULL || mt->publish_lag == NULL
           || mt->queue == NULL || mt->pending == NULL
           || mt->refused == NULL || mt->checkpoint_age == NULL
           || mt->checkpoint_interval == NULL ? -1 : 0;
}


int
tl_metrics_start(tl_timeline_t *tl, sk_err_t *err)
{
    tl_metrics_t  *mt = &tl->metrics;

    atomic_store(&mt->signed_ms, tl_ms());
    atomic_store(&mt->caught_ms, tl_ms());
    if (tl->conf.metrics_listen == NULL) {
        return 0;
    }
    mt->reg = sk_metrics_new(tl_metrics_collect, tl, err);
    if (mt->reg == NULL || tl_metrics_series(tl, err) != 0
        || sk_httpd_metrics_start(&mt->h, TL_PROG, tl->conf.metrics_listen,
               mt->reg, err) != 0)
    {
        tl_metrics_stop(tl);
        return -1;
    }
    tl_log("metrics on http://%s/metrics", tl->conf.metrics_listen);
    return 0;
}


void
tl_metrics_stop(tl_timeline_t *tl)
{
    tl_metrics_t  *mt = &tl->metrics;
    sk_metrics_t  *reg = mt->reg;

    sk_httpd_stop(mt->h);
    sk_metrics_free(reg);
    /* All but what the publisher thread may still set; nothing else
     * counts once appends are drained. */
    memset(mt, 0, offsetof(tl_metrics_t, caught_ms));
}


int
tl_metrics_refusals_start(tl_timeline_t *tl, sk_err_t *err)
{
    tl_metrics_t  *mt = &tl->metrics;
    size_t         i;

    for (i = 0; mt->reg != NULL && i < TL_METRICS_REFUSALS; i++) {
        mt->queue_refused[i] = sk_httpd_metrics_refusal(&mt->http,
            tl_metrics_refusals[i], err);
        if (mt->queue_refused[i] == NULL) {
            return -1;
        }
    }
    return 0;
}


void
tl_metrics_queue_refused(tl_timeline_t *tl, int reason)
{
    sk_metric_inc(tl->metrics.queue_refused[reason], 1);
}


void
tl_metrics_fsync(tl_timeline_t *tl, uint64_t us)
{
    sk_metric_observe(tl->metrics.fsync_seconds, (double) us / 1e6);
}


void
tl_metrics_append(tl_timeline_t *tl, tl_verdict_t v, uint64_t us)
{
    tl_metrics_t  *mt = &tl->metrics;

    if (mt->reg == NULL || v >= TL_QUEUED) {
        return;
    }
    sk_metric_inc(mt->appends[v], 1);
    sk_metric_observe(mt->append_seconds, (double) us / 1e6);
}


void
tl_metrics_signed(tl_timeline_t *tl)
{
    atomic_store_explicit(&tl->metrics.signed_ms, tl_ms(),
        memory_order_relaxed);
}


void
tl_metrics_caught_up(tl_timeline_t *tl)
{
    atomic_store_explicit(&tl->metrics.caught_ms, tl_ms(),
        memory_order_relaxed);
}


void
tl_metrics_ocsp(tl_timeline_t *tl, tl_ocsp_result_t r, uint64_t us)
{
    sk_metric_inc(tl->metrics.ocsp[r], 1);
    sk_metric_observe(tl->metrics.ocsp_seconds, (double) us / 1e6);
}


sk_httpd_metrics_t *
tl_metrics_http(tl_timeline_t *tl)
{
    return tl->metrics.reg != NULL ? &tl->metrics.http : NULL;
}
