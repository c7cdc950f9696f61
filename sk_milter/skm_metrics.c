/*
 * skm_metrics.c -- sk-milter's /metrics (sk/metrics.h) on MetricsListen.
 * Counts are added where things happen: verdicts (skm_filter.c), policy
 * answers (skm_policy.c), Probe handshakes and staples (skm_chain.c,
 * skm_staple.c), KeyCache failures (skm_trust.c).  Series labelled by a
 * carrier's name or a ChainFile are made when the refresher thread first
 * meets them.  Without MetricsListen every series stays NULL and each
 * call here does nothing.  docs/operations.md, "Monitoring", describes
 * each series.
 */
#include <string.h>
#include <syslog.h>

#include <sk/httpd.h>
#include <sk/metrics.h>

#include "skm.h"

static const sk_metric_def_t  skm_metrics_messages = {
    "sk_milter_messages_total",
    "Messages by the sk= verdict stamped in Authentication-Results "
    "(temperror: the lookup failed, the message was tempfailed).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_handshakes = {
    "sk_milter_handshakes_total",
    "Probe handshakes (SMTP STARTTLS or TLS) with the MTA serving the "
    "chain files, by what it served.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_requested = {
    "sk_milter_staples_requested_total",
    "Outbound handshakes (policy lookups) that asked for a stapled proof.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_received = {
    "sk_milter_staples_received_total",
    "Of those, the handshakes a stapled proof came back in (the "
    "extension or the chain).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_sent = {
    "sk_milter_staples_sent_total",
    "Chain files written with a staple (StapleProof): the MTA sends it "
    "in every handshake from then on.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_failures = {
    "sk_milter_staple_refresh_failures_total",
    "Staple refreshes (KeyCache, StapleTrust mirrors) that failed.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_age = {
    "sk_milter_staple_age_seconds",
    "Age of the staple put in the chain files, by carrier name.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  skm_metrics_expiry = {
    "sk_milter_carrier_expiry_seconds",
    "Seconds until the carrier written in each ChainFile expires.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  skm_metrics_cache_errors = {
    "sk_milter_key_cache_errors_total",
    "KeyCache lookups that failed (backend down, bad record).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_answers = {
    "sk_milter_policy_answers_total",
    "smtp_tls_policy_maps answers by result (ok: fingerprints to match, "
    "notfound, temp, perm).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_lookup = {
    "sk_milter_policy_lookup_duration_seconds",
    "Time to answer a policy lookup (cached answers included).",
    SK_METRIC_HISTOGRAM, sk_metrics_latency_buckets,
    SK_METRICS_LATENCY_BUCKETS
};

/* Label values of the fixed series, in the order of their arrays. */
static const char *const  skm_metrics_verdicts[] = {
    "none", "pass", "permerror", "fail", "temperror", NULL };
static const char *const  skm_metrics_hsresults[] = {
    "carrier", "no_carrier", "other_key", "failed", NULL };
static const char *const  skm_metrics_presults[] = {
    "ok", "notfound", "temp", "perm", NULL };
static const char *const  skm_metrics_pwords[] = {
    "OK", "NOTFOUND", "TEMP", "PERM", NULL };

#define SKM_METRICS_LABELS  5

typedef struct {
    sk_metrics_t  *reg;
    sk_httpd_t    *h;
    sk_metric_t   *messages[SKM_METRICS_LABELS];
    sk_metric_t   *handshakes[SKM_METRICS_LABELS];
    sk_metric_t   *answers[SKM_METRICS_LABELS];
    sk_metric_t   *lookup;
    sk_metric_t   *st_requested;
    sk_metric_t   *st_received;
    sk_metric_t   *st_sent;
    sk_metric_t   *st_failures;
    sk_metric_t   *cache_errors;
} skm_metrics_t;

static skm_metrics_t  skm_metrics;


/* One series of def per label value in values (NULL-terminated). */
static int
skm_metrics_labelled(sk_metric_t **out, const sk_metric_def_t *def,
    const char *label, const char *const *values, sk_err_t *err)
{
    size_t  i;

    for (i = 0; values[i] != NULL; i++) {
        out[i] = sk_metrics_series(skm_metrics.reg, def, &label, &values[i],
            1, err);
        if (out[i] == NULL) {
            return -1;
        }
    }
    return 0;
}


static sk_metric_t *
skm_metrics_plain(const sk_metric_def_t *def, sk_err_t *err)
{
    return sk_metrics_series(skm_metrics.reg, def, NULL, NULL, 0, err);
}


static int
skm_metrics_series(sk_err_t *err)
{
    skm_metrics_t  *mt = &skm_metrics;

    if (skm_metrics_labelled(mt->messages, &skm_metrics_messages, "verdict",
            skm_metrics_verdicts, err) != 0
        || skm_metrics_labelled(mt->handshakes, &skm_metrics_handshakes,
               "result", skm_metrics_hsresults, err) != 0
        || skm_metrics_labelled(mt->answers, &skm_metrics_answers, "result",
               skm_metrics_presults, err) != 0)
    {
        return -1;
    }
    mt->lookup = skm_metrics_plain(&skm_metrics_lookup, err);
    mt->st_requested = skm_metrics_plain(&skm_metrics_st_requested, err);
    mt->st_received = skm_metrics_plain(&skm_metrics_st_received, err);
    mt->st_sent = skm_metrics_plain(&skm_metrics_st_sent, err);
    mt->st_failures = skm_metrics_plain(&skm_metrics_st_failures, err);
    mt->cache_errors = skm_metrics_plain(&skm_metrics_cache_errors, err);
    return mt->lookup == NULL || mt->st_requested == NULL
        || mt->st_received == NULL || mt->st_sent == NULL
        || mt->st_failures == NULL || mt->cache_errors == NULL ? -1 : 0;
}


int
skm_metrics_start(const skm_conf_t *conf, sk_err_t *err)
{
    if (conf->metricslisten == NULL) {
        return 0;
    }
    skm_metrics.reg = sk_metrics_new(NULL, NULL, err);
    if (skm_metrics.reg == NULL || skm_metrics_series(err) != 0
        || sk_httpd_metrics_start(&skm_metrics.h, SKM_PROG,
               conf->metricslisten, skm_metrics.reg, err) != 0)
    {
        skm_metrics_stop();
        return sk_err_prefix(err, "MetricsListen %s", conf->metricslisten);
    }
    skm_log(LOG_INFO, "metrics on http://%s/metrics", conf->metricslisten);
    return 0;
}


void
skm_metrics_stop(void)
{
    sk_httpd_stop(skm_metrics.h);
    sk_metrics_free(skm_metrics.reg);
    memset(&skm_metrics, 0, sizeof(skm_metrics));
}


/* The series in v whose label is word in words (NULL-terminated). */
static sk_metric_t *
skm_metrics_pick(sk_metric_t **v, const char *const *words, const char *word,
    size_t len)
{
    size_t  i;

    for (i = 0; words[i] != NULL; i++) {
        if (strlen(words[i]) == len && strncmp(words[i], word, len) == 0) {
            return v[i];
        }
    }
    return NULL;
}


void
skm_metrics_message(const char *verdict)
{
    sk_metric_inc(skm_metrics_pick(skm_metrics.messages, skm_metrics_verdicts,
        verdict, strlen(verdict)), 1);
}


void
skm_metrics_handshake(const char *result)
{
    sk_metric_inc(skm_metrics_pick(skm_metrics.handshakes,
        skm_metrics_hsresults, result, strlen(result)), 1);
}


void
skm_metrics_policy(const char *reply, double secs)
{
    sk_metric_inc(skm_metrics_pick(skm_metrics.answers, skm_metrics_pwords,
        reply, strcspn(reply, " ")), 1);
    sk_metric_observe(skm_metrics.lookup, secs);
}


void
skm_metrics_staple_asked(int received)
{
    sk_metric_inc(skm_metrics.st_requested, 1);
    if (received) {
        sk_metric_inc(skm_metrics.st_received, 1);
    }
}


void
skm_metrics_staple_sent(void)
{
    sk_metric_inc(skm_metrics.st_sent, 1);
}


void
skm_metrics_staple_failed(void)
{
    sk_metric_inc(skm_metrics.st_failures, 1);
}


void
skm_metrics_cache_error(void)
{
    sk_metric_inc(skm_metrics.cache_errors, 1);
}


/* Set the gauge def{label="value"}, made the first time (refresher). */
static void
skm_metrics_gauge(const sk_metric_def_t *def, const char *label,
    const char *value, double v)
{
    sk_metric_t  *s;
    sk_err_t      err;

    if (skm_metrics.reg == NULL) {
        return;
    }
    s = sk_metrics_series(skm_metrics.reg, def, &label, &value, 1, &err);
    if (s == NULL) {
        skm_log(LOG_ERR, "metrics: %s", err.msg);
        return;
    }
    sk_metric_set(s, v);
}


void
skm_metrics_staple_age(const char *name, long age)
{
    skm_metrics_gauge(&skm_metrics_st_age, "name", name, (double) age);
}


void
skm_metrics_carrier_expiry(const char *chainfile, long secs)
{
    skm_metrics_gauge(&skm_metrics_expiry, "chainfile", chainfile,
        (double) secs);
}
