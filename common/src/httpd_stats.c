/*
 * httpd_stats.c -- what the HTTP front of sk-timeline and sk-mirror
 * counts (sk/httpd.h, sk_httpd_metrics_t): requests by endpoint and
 * status code, their time, those in flight, the connections, the
 * refusals of clients by reason.
 *
 * The hot path is an atomic add or two: a request's series are found by
 * index (its endpoint, its status), and a status code's series is made
 * the first time that endpoint answers it (under the registry's lock,
 * once), so only the codes an endpoint gave are shown.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "sk/httpd.h"
#include "internal.h"

#define SK_HTTPD_CODES  500     /* 100 .. 599 */

enum {
    SK_HTTPD_M_REQUESTS = 0, SK_HTTPD_M_DURATION, SK_HTTPD_M_INFLIGHT,
    SK_HTTPD_M_CONNS, SK_HTTPD_M_CONNS_MAX, SK_HTTPD_M_TIMEOUTS,
    SK_HTTPD_M_REFUSED
};

struct sk_httpd_stats_s {
    sk_httpd_metrics_t        *mc;
    _Atomic(sk_metric_t *)    *req;         /* [endpoint][code - 100] */
    sk_metric_t              **dur;         /* [endpoint] */
    sk_metric_t               *inflight, *conns, *timeouts;
    sk_metric_t               *refused[SK_HTTPD_REASONS];
};

static const struct {
    const char        *suffix;
    const char        *help;
    sk_metric_type_t   type;
} sk_httpd_defs[SK_HTTPD_METRIC_DEFS] = {
    { "_http_requests_total", "HTTP requests answered, by endpoint and "
      "status code.", SK_METRIC_COUNTER },
    { "_http_request_duration_seconds", "Time from a request's first line "
      "to the end of its answer, by endpoint.", SK_METRIC_HISTOGRAM },
    { "_http_requests_in_flight", "HTTP requests being read, worked on or "
      "answered now.", SK_METRIC_GAUGE },
    { "_http_connections", "HTTP connections open now.", SK_METRIC_GAUGE },
    { "_http_connections_max", "The \"connections\" limit: at most this "
      "many open at once.", SK_METRIC_GAUGE },
    { "_http_request_timeouts_total", "Connections closed for not sending a "
      "whole request within request_timeout (slow or idle clients).",
      SK_METRIC_COUNTER },
    { "_refused_total", "Requests and connections refused before any work, "
      "by reason (rate: 429 past rate_per_client; client_connections, "
      "connections, evicted: connection limits; gone: the client left "
      "first; the daemon's own: docs/operations.md).", SK_METRIC_COUNTER },
};


const char *const  sk_httpd_reasons[SK_HTTPD_REASONS] = {
    SK_HTTPD_REFUSED_RATE, SK_HTTPD_REFUSED_CLIENT, SK_HTTPD_REFUSED_FULL,
    SK_HTTPD_REFUSED_EVICTED, SK_HTTPD_REFUSED_GONE
};


void
sk_httpd_metrics_init(sk_httpd_metrics_t *mc, sk_metrics_t *reg,
    const char *prefix, const char *const *endpoints, size_t nendpoints,
    size_t (*endpoint)(const char *url, const char *method))
{
    mc->reg = reg;
    mc->prefix = prefix;
    mc->endpoints = endpoints;
    mc->nendpoints = nendpoints;
    mc->endpoint = endpoint;
}


void
sk_httpd_stats_free(sk_httpd_stats_t *st)
{
    if (st != NULL) {
        free(st->req);
        free(st->dur);
        free(st);
    }
}


int
sk_httpd_stats_new(sk_httpd_stats_t **out, sk_httpd_metrics_t *mc,
    uint64_t connections, sk_err_t *err)
{
    static const char *const  ep[] = { "endpoint" };
    sk_httpd_stats_t         *st;
    sk_metric_t              *max;
    size_t                    i;

    *out = NULL;
    if (mc == NULL) {
        return 0;
    }
    for (i = 0; i < SK_HTTPD_METRIC_DEFS; i++) {
        snprintf(mc->names[i], sizeof(mc->names[i]), "%s%s", mc->prefix,
            sk_httpd_defs[i].suffix);
        mc->defs[i].name = mc->names[i];
        mc->defs[i].help = sk_httpd_defs[i].help;
        mc->defs[i].type = sk_httpd_defs[i].type;
        mc->defs[i].buckets = sk_httpd_defs[i].type == SK_METRIC_HISTOGRAM
            ? sk_metrics_latency_buckets : NULL;
        mc->defs[i].nbuckets = sk_httpd_defs[i].type == SK_METRIC_HISTOGRAM
            ? SK_METRICS_LATENCY_BUCKETS : 0;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL
        || (st->req = calloc(mc->nendpoints * SK_HTTPD_CODES,
                sizeof(*st->req))) == NULL
        || (st->dur = calloc(mc->nendpoints, sizeof(*st->dur))) == NULL)
    {
        sk_httpd_stats_free(st);
        return sk_err_set(err, SK_ERR_NOMEM, "http metrics");
    }
    st->mc = mc;
    for (i = 0; i < mc->nendpoints * SK_HTTPD_CODES; i++) {
        atomic_init(&st->req[i], NULL);
    }
    for (i = 0; i < mc->nendpoints; i++) {
        st->dur[i] = sk_metrics_series(mc->reg,
            &mc->defs[SK_HTTPD_M_DURATION], ep, &mc->endpoints[i], 1, err);
        if (st->dur[i] == NULL) {
            sk_httpd_stats_free(st);
            return -1;
        }
    }
    st->inflight = sk_metrics_series(mc->reg, &mc->defs[SK_HTTPD_M_INFLIGHT],
        NULL, NULL, 0, err);
    st->conns = sk_metrics_series(mc->reg, &mc->defs[SK_HTTPD_M_CONNS], NULL,
        NULL, 0, err);
    max = sk_metrics_series(mc->reg, &mc->defs[SK_HTTPD_M_CONNS_MAX], NULL,
        NULL, 0, err);
    st->timeouts = sk_metrics_series(mc->reg,
        &mc->defs[SK_HTTPD_M_TIMEOUTS], NULL, NULL, 0, err);
    if (st->inflight == NULL || st->conns == NULL || max == NULL
        || st->timeouts == NULL)
    {
        sk_httpd_stats_free(st);
        return -1;
    }
    sk_metric_set(max, (double) connections);
    for (i = 0; i < SK_HTTPD_REASONS; i++) {
        st->refused[i] = sk_httpd_metrics_refusal(mc, sk_httpd_reasons[i],
            err);
        if (st->refused[i] == NULL) {
            sk_httpd_stats_free(st);
            return -1;
        }
    }
    *out = st;
    return 0;
}


sk_metric_t *
sk_httpd_metrics_refusal(sk_httpd_metrics_t *mc, const char *reason,
    sk_err_t *err)
{
    static const char *const  name[] = { "reason" };

    if (mc == NULL) {
        sk_err_set(err, SK_ERR_USAGE, "http metrics: none");
        return NULL;
    }
    return sk_metrics_series(mc->reg, &mc->defs[SK_HTTPD_M_REFUSED], name,
        &reason, 1, err);
}


void
sk_httpd_stats_refused(sk_httpd_stats_t *st, unsigned reason)
{
    if (st != NULL) {
        sk_metric_inc(st->refused[reason], 1);
    }
}


void
sk_httpd_stats_conn(sk_httpd_stats_t *st, int delta)
{
    if (st != NULL) {
        sk_metric_add(st->conns, delta);
    }
}


void
sk_httpd_stats_reaped(sk_httpd_stats_t *st, uint64_t n)
{
    if (st != NULL) {
        sk_metric_inc(st->timeouts, n);
    }
}


unsigned
sk_httpd_stats_begin(sk_httpd_stats_t *st, const char *url,
    const char *method)
{
    size_t  ep;

    if (st == NULL) {
        return 0;
    }
    sk_metric_add(st->inflight, 1);
    ep = st->mc->endpoint(url, method);
    return ep < st->mc->nendpoints ? (unsigned) ep : 0;
}


/* The series of (ep, status), made on first use. */
static sk_metric_t *
sk_httpd_stats_req(sk_httpd_stats_t *st, unsigned ep, unsigned status)
{
    static const char *const  names[] = { "endpoint", "code" };
    _Atomic(sk_metric_t *)   *slot;
    sk_metric_t              *s;
    const char               *values[2];
    char                      code[8];

    slot = &st->req[ep * SK_HTTPD_CODES + status - 100];
    s = atomic_load_explicit(slot, memory_order_acquire);
    if (s == NULL) {
        snprintf(code, sizeof(code), "%u", status);
        values[0] = st->mc->endpoints[ep];
        values[1] = code;
        /* the same series again if another thread made it meanwhile */
        s = sk_metrics_series(st->mc->reg, &st->mc->defs[SK_HTTPD_M_REQUESTS],
            names, values, 2, NULL);
        atomic_store_explicit(slot, s, memory_order_release);
    }
    return s;
}


void
sk_httpd_stats_end(sk_httpd_stats_t *st, unsigned ep, unsigned status,
    uint64_t us)
{
    if (st == NULL) {
        return;
    }
    sk_metric_add(st->inflight, -1);
    if (status < 100 || status >= 100 + SK_HTTPD_CODES) {
        return;                 /* no answer: the client went away */
    }
    sk_metric_inc(sk_httpd_stats_req(st, ep, status), 1);
    sk_metric_observe(st->dur[ep], (double) us / 1e6);
}
