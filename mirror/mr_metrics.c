/*
 * mr_metrics.c -- sk-mirror's /metrics (sk/metrics.h), on its own address
 * (metrics_listen).  Entries stored, answers, sync rounds and Redis
 * failures are counted where they happen (mr_store.c, mr_http.c,
 * mr_sync.c, mr_cache.c), requests by the public front (sk_httpd);
 * states, sizes, lags and the answer cache's counts are read under the
 * lock at each scrape.  docs/operations.md, "Monitoring", describes each
 * series.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mr.h"

static const sk_metric_def_t  mr_metrics_synced_def = {
    "sk_mirror_entries_synced_total",
    "Entries fetched, checked and stored, by timeline.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  mr_metrics_entries = {
    "sk_mirror_entries",
    "Entries in the mirror's copy of each timeline.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  mr_metrics_lag = {
    "sk_mirror_lag_entries",
    "Entries the newest checkpoint fetched from the timeline has and the "
    "copy not yet.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  mr_metrics_age = {
    "sk_mirror_checkpoint_age_seconds",
    "Seconds since the Timestamp of the newest checkpoint the mirror "
    "stored for the timeline (NaN before the first).",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  mr_metrics_state = {
    "sk_mirror_timeline_state",
    "1 for the state each timeline is in (New, Idle, Syncing, Stuck, "
    "Defunct, Corrupt: reneged), else 0.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  mr_metrics_answers = {
    "sk_mirror_answers_total",
    "Answers to GET /query/<name> by kind (answer, bad_request, "
    "unavailable, error).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  mr_metrics_cache = {
    "sk_mirror_answer_cache_lookups_total",
    "Answers looked up in the answer cache (memory or Redis), by result.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  mr_metrics_servable = {
    "sk_mirror_servable_timelines",
    "Timelines Idle or Syncing; answers need two.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  mr_metrics_rounds = {
    "sk_mirror_sync_rounds_total",
    "Sync rounds with each timeline, by result: ok (caught up, or "
    "progress), failed (unreachable, bad answers).",
    SK_METRIC_COUNTER, NULL, 0
};

/* From a poll to caught up: chunks, tiles, checks, fsync. */
static const double  mr_metrics_round_buckets[] = {
    0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
};

static const sk_metric_def_t  mr_metrics_round_seconds = {
    "sk_mirror_sync_round_duration_seconds",
    "Time of each sync round with each timeline.",
    SK_METRIC_HISTOGRAM, mr_metrics_round_buckets,
    sizeof(mr_metrics_round_buckets) / sizeof(mr_metrics_round_buckets[0])
};

static const sk_metric_def_t  mr_metrics_last_ok = {
    "sk_mirror_last_sync_success_timestamp_seconds",
    "When the last sync round with each timeline that made progress or "
    "caught up ended (Unix time; 0: none yet).",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  mr_metrics_cache_bytes = {
    "sk_mirror_answer_cache_bytes",
    "Bytes the answers kept in memory cost (query_cache_size bounds it).",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  mr_metrics_cache_answers = {
    "sk_mirror_answer_cache_answers",
    "Answers kept in memory.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  mr_metrics_cache_evictions = {
    "sk_mirror_answer_cache_evictions_total",
    "Answers dropped from memory, least recently used, to stay within "
    "query_cache_size.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  mr_metrics_redis = {
    "sk_mirror_redis_errors_total",
    "Calls to the answer cache's Redis (answer_cache) that failed; each "
    "pauses it, the answers are built fresh meanwhile.",
    SK_METRIC_COUNTER, NULL, 0
};

static const char *const  mr_metrics_endpoints[] = {
    "other", "query", "status", "reneged"
};

#define MR_METRICS_ENDPOINTS \
    (sizeof(mr_metrics_endpoints) / sizeof(mr_metrics_endpoints[0]))


static size_t
mr_metrics_endpoint(const char *url, const char *method)
{
    (void) method;
    return strncmp(url, "/query/", 7) == 0 ? 1
        : strcmp(url, "/status") == 0 ? 2
        : strncmp(url, "/reneged", 8) == 0 ? 3 : 0;
}


static void
mr_metrics_collect(sk_metrics_t *reg, void *cls)
{
    mr_mirror_t     *m = cls;
    mr_metrics_t    *mt = &m->metrics;
    mr_lru_stats_t   st;
    mr_tl_t         *t;
    uint64_t         seen;
    int64_t          now = mr_now();
    size_t           i, s;

    (void) reg;
    pthread_mutex_lock(&m->lock);
    for (i = 0; i < m->ntl; i++) {
        t = &m->tl[i];
        seen = atomic_load(&t->seen_size);
        sk_metric_set(mt->entries[i], (double) t->size);
        sk_metric_set(mt->lag[i], seen > t->size ? (double) (seen - t->size)
                                                 : 0);
        sk_metric_set(mt->age[i], t->cp == NULL ? NAN
            : (double) (now > t->cp_ts ? now - t->cp_ts : 0));
        for (s = 0; s < MR_STATES; s++) {
            sk_metric_set(mt->state[i][s], t->state == (mr_state_t) s);
        }
        sk_metric_set(mt->last_ok[i], (double) t->last_ok);
    }
    sk_metric_set(mt->cache[0], (double) m->cache_hits);
    sk_metric_set(mt->cache[1], (double) m->cache_misses);
    sk_metric_set(mt->servable, (double) mr_state_servable(m));
    pthread_mutex_unlock(&m->lock);
    mr_lru_stats(&m->answers, &st);     /* its own lock */
    sk_metric_set(mt->cache_bytes, (double) st.bytes);
    sk_metric_set(mt->cache_answers, (double) st.n);
    sk_metric_set(mt->cache_evictions, (double) st.evictions);
}


/* One timeline's series, labelled tid="<TID>". */
static int
mr_metrics_timeline(mr_mirror_t *m, size_t i, sk_err_t *err)
{
    static const char *const  names[] = { "tid", "state" };
    static const char *const  rnames[] = { "tid", "result" };
    static const char *const  results[2] = { "ok", "failed" };
    mr_metrics_t             *mt = &m->metrics;
    const char               *values[2];
    char                      tid[24];
    size_t                    s;

    snprintf(tid, sizeof(tid), "%" PRIu64, m->conf.tl[i].tid);
    values[0] = tid;
    mt->synced[i] = sk_metrics_series(mt->reg, &mr_metrics_synced_def, names,
        values, 1, err);
    mt->entries[i] = sk_metrics_series(mt->reg, &mr_metrics_entries, names,
        values, 1, err);
    mt->lag[i] = sk_metrics_series(mt->reg, &mr_metrics_lag, names, values,
        1, err);
    mt->age[i] = sk_metrics_series(mt->reg, &mr_metrics_age, names, values,
        1, err);
    mt->round_seconds[i] = sk_metrics_series(mt->reg,
        &mr_metrics_round_seconds, names, values, 1, err);
    mt->last_ok[i] = sk_metrics_series(mt->reg, &mr_metrics_last_ok, names,
        values, 1, err);
    if (mt->synced[i] == NULL || mt->entries[i] == NULL || mt->lag[i] == NULL
        || mt->age[i] == NULL || mt->round_seconds[i] == NULL
        || mt->last_ok[i] == NULL)
    {
        return -1;
    }
    for (s = 0; s < 2; s++) {
        values[1] = results[s];
        mt->rounds[i][s] = sk_metrics_series(mt->reg, &mr_metrics_rounds,
            rnames, values, 2, err);
        if (mt->rounds[i][s] == NULL) {
            return -1;
        }
    }
    for (s = 0; s < MR_STATES; s++) {
        values[1] = mr_state_name((mr_state_t) s);
        mt->state[i][s] = sk_metrics_series(mt->reg, &mr_metrics_state,
            names, values, 2, err);
        if (mt->state[i][s] == NULL) {
            return -1;
        }
    }
    return 0;
}


static int
mr_metrics_series(mr_mirror_t *m, sk_err_t *err)
{
    static const char *const  kind[] = { "kind" }, *const result[] = {
        "result" };
    static const char *const  kinds[MR_ANSWER_KINDS] = {
        "answer", "bad_request", "unavailable", "error" };
    static const char *const  results[2] = { "hit", "miss" };
    mr_metrics_t             *mt = &m->metrics;
    size_t                    i;

    if (sk_metrics_process(mt->reg, "sk_mirror", err) != 0) {
        return -1;
    }
    for (i = 0; i < m->ntl; i++) {
        if (mr_metrics_timeline(m, i, err) != 0) {
            return -1;
        }
    }
    for (i = 0; i < MR_ANSWER_KINDS; i++) {
        mt->answers[i] = sk_metrics_series(mt->reg, &mr_metrics_answers,
            kind, &kinds[i], 1, err);
        if (mt->answers[i] == NULL) {
            return -1;
        }
    }
    for (i = 0; i < 2; i++) {
        mt->cache[i] = sk_metrics_series(mt->reg, &mr_metrics_cache, result,
            &results[i], 1, err);
        if (mt->cache[i] == NULL) {
            return -1;
        }
    }
    mt->servable = sk_metrics_series(mt->reg, &mr_metrics_servable, NULL,
        NULL, 0, err);
    mt->cache_bytes = sk_metrics_series(mt->reg, &mr_metrics_cache_bytes,
        NULL, NULL, 0, err);
    mt->cache_answers = sk_metrics_series(mt->reg, &mr_metrics_cache_answers,
        NULL, NULL, 0, err);
    mt->cache_evictions = sk_metrics_series(mt->reg,
        &mr_metrics_cache_evictions, NULL, NULL, 0, err);
    mt->redis_errors = sk_metrics_series(mt->reg, &mr_metrics_redis, NULL,
        NULL, 0, err);
    sk_httpd_metrics_init(&mt->http, mt->reg, "sk_mirror",
        mr_metrics_endpoints, MR_METRICS_ENDPOINTS, mr_metrics_endpoint);
    return mt->servable == NULL || mt->cache_bytes == NULL
        || mt->cache_answers == NULL || mt->cache_evictions == NULL
        || mt->redis_errors == NULL ? -1 : 0;
}


int
mr_metrics_start(mr_mirror_t *m, sk_err_t *err)
{
    mr_metrics_t  *mt = &m->metrics;

    if (m->conf.metrics_listen == NULL) {
        return 0;
    }
    mt->reg = sk_metrics_new(mr_metrics_collect, m, err);
    if (mt->reg == NULL || mr_metrics_series(m, err) != 0
        || sk_httpd_metrics_start(&mt->h, MR_PROG, m->conf.metrics_listen,
               mt->reg, err) != 0)
    {
        mr_metrics_stop(m);
        return -1;
    }
    mr_log("metrics on http://%s/metrics", m->conf.metrics_listen);
    return 0;
}


void
mr_metrics_stop(mr_mirror_t *m)
{
    sk_httpd_stop(m->metrics.h);
    sk_metrics_free(m->metrics.reg);
    memset(&m->metrics, 0, sizeof(m->metrics));
}


void
mr_metrics_answer(mr_mirror_t *m, mr_answer_t kind)
{
    sk_metric_inc(m->metrics.answers[kind], 1);
}


void
mr_metrics_synced(mr_mirror_t *m, const mr_tl_t *t, uint64_t n)
{
    sk_metric_inc(m->metrics.synced[t->index], n);
}


void
mr_metrics_round(mr_mirror_t *m, const mr_tl_t *t, int ok, double secs)
{
    sk_metric_inc(m->metrics.rounds[t->index][ok ? 0 : 1], 1);
    sk_metric_observe(m->metrics.round_seconds[t->index], secs);
}


void
mr_metrics_redis_error(mr_mirror_t *m)
{
    sk_metric_inc(m->metrics.redis_errors, 1);
}


sk_httpd_metrics_t *
mr_metrics_http(mr_mirror_t *m)
{
    return m->metrics.reg != NULL ? &m->metrics.http : NULL;
}
