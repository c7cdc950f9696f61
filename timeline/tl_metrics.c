/*
 * tl_metrics.c -- sk-timeline's /metrics (sk/metrics.h), on its own
 * address (metrics_listen) so the public front never shows it.
 *
 * Counts are taken where they happen (tl_http.c, tl_append.c,
 * tl_store.c, tl_publish.c); sizes and ages are read at each scrape.
 * docs/operations.md, "Monitoring", describes each series.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "tl.h"

static const sk_metric_def_t  tl_metrics_appends = {
    "sk_timeline_appends_total",
    "Appends by outcome (created; bad_request, forbidden: the client's; "
    "unavailable, timeout, fault: the timeline's).",
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
    "Seconds since the timeline last signed a checkpoint or TFM (since "
    "the start before the first).",
    SK_METRIC_GAUGE, NULL, 0
};

/* Label values of each final verdict. */
static const char *const  tl_metrics_results[TL_QUEUED] = {
    [TL_OK] = "created", [TL_BAD_REQUEST] = "bad_request",
    [TL_FORBIDDEN] = "forbidden", [TL_UNAVAILABLE] = "unavailable",
    [TL_TIMEOUT] = "timeout", [TL_FAULT] = "fault",
    [TL_TOO_LARGE] = "too_large", [TL_RETRY] = "retry"
};


static void
tl_metrics_collect(sk_metrics_t *m, void *cls)
{
    tl_timeline_t  *tl = cls;
    tl_metrics_t   *mt = &tl->metrics;
    uint64_t        since = atomic_load(&mt->signed_ms);

    (void) m;
    pthread_mutex_lock(&tl->lock);
    sk_metric_set(mt->tree_size, (double) tl->durable);
    sk_metric_set(mt->refused, tl->failed ? 1 : 0);
    pthread_mutex_unlock(&tl->lock);
    sk_metric_set(mt->checkpoint_age, (double) (tl_ms() - since) / 1000);
}


static int
tl_metrics_series(tl_timeline_t *tl, sk_err_t *err)
{
    static const char *const  name[] = { "result" };
    tl_metrics_t             *mt = &tl->metrics;
    size_t                    i;

    for (i = 0; i < TL_QUEUED; i++) {
        mt->appends[i] = sk_metrics_series(mt->reg, &tl_metrics_appends,
            name, &tl_metrics_results[i], 1, err);
        if (mt->appends[i] == NULL) {
            return -1;
        }
    }
    mt->append_seconds = sk_metrics_series(mt->reg,
        &tl_metrics_append_seconds, NULL, NULL, 0, err);
    mt->fsync_seconds = sk_metrics_series(mt->reg,
        &tl_metrics_fsync_seconds, NULL, NULL, 0, err);
    mt->tree_size = sk_metrics_series(mt->reg, &tl_metrics_tree_size,
        NULL, NULL, 0, err);
    mt->refused = sk_metrics_series(mt->reg, &tl_metrics_refused,
        NULL, NULL, 0, err);
    mt->checkpoint_age = sk_metrics_series(mt->reg,
        &tl_metrics_checkpoint_age, NULL, NULL, 0, err);
    return mt->append_seconds == NULL || mt->fsync_seconds == NULL
           || mt->tree_size == NULL || mt->refused == NULL
           || mt->checkpoint_age == NULL ? -1 : 0;
}


int
tl_metrics_start(tl_timeline_t *tl, sk_err_t *err)
{
    tl_metrics_t  *mt = &tl->metrics;

    atomic_store(&mt->signed_ms, tl_ms());
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
    /* All but signed_ms (last), which the publisher thread may still set;
     * nothing else counts once appends are drained. */
    memset(mt, 0, offsetof(tl_metrics_t, signed_ms));
    sk_metrics_free(reg);
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
