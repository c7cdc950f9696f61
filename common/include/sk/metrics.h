/*
 * sk/metrics.h -- counters, gauges and histograms in the Prometheus text
 * exposition format (version 0.0.4), the writer every daemon's /metrics
 * answer comes from.
 *
 * A registry holds families (a name, a help line, a type) and their series
 * (one set of label values each).  Series are made at start, or when a new
 * label value appears, under the registry's lock; adding to a series is a
 * lock-free atomic operation any thread may do.  Rendering takes the lock,
 * first calls the registry's collect hook (gauges read at scrape time:
 * sizes, ages) and then writes every family in registration order.
 *
 * Names follow Prometheus' practice: base units (_seconds, _bytes), and a
 * counter's name ends in _total (checked).
 */
#ifndef SK_METRICS_H
#define SK_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef enum {
    SK_METRIC_COUNTER = 0,
    SK_METRIC_GAUGE,
    SK_METRIC_HISTOGRAM
} sk_metric_type_t;

/* A family as the daemon declares it (static storage: kept by pointer). */
typedef struct {
    const char        *name;
    const char        *help;
    sk_metric_type_t   type;
    const double      *buckets;     /* histogram: upper bounds, ascending,
                                       without +Inf */
    size_t             nbuckets;
} sk_metric_def_t;

#define SK_METRICS_LABELS_MAX  4

typedef struct sk_metrics_s  sk_metrics_t;
typedef struct sk_metric_s   sk_metric_t;

/* Called under the registry's lock before each rendering: it may set
 * series made earlier, never make one (sk_metrics_series takes the lock). */
typedef void (*sk_metrics_collect_pt)(sk_metrics_t *m, void *cls);

sk_metrics_t *sk_metrics_new(sk_metrics_collect_pt collect, void *cls,
    sk_err_t *err) SK_WUR;
void sk_metrics_free(sk_metrics_t *m);

/* The series of def with these labels: names[i]="values[i]" (n at most
 * SK_METRICS_LABELS_MAX); the same pointer again for the same labels.
 * NULL with err naming the metric on a bad name, a counter not ending in
 * _total, a def whose name is another type's, or no memory. */
sk_metric_t *sk_metrics_series(sk_metrics_t *m, const sk_metric_def_t *def,
    const char *const *names, const char *const *values, size_t n,
    sk_err_t *err) SK_WUR;

/* Counters: add n.  Gauges: set, add.  Histograms: one observation.
 * sk_metric_set on a counter gives its count (a count the daemon keeps
 * itself, read at scrape time).  NULL is ignored (a daemon without
 * metrics keeps its NULL series). */
void sk_metric_inc(sk_metric_t *s, uint64_t n);
void sk_metric_set(sk_metric_t *s, double v);
void sk_metric_add(sk_metric_t *s, double v);
void sk_metric_observe(sk_metric_t *s, double v);

/* The current value (counter, gauge; a histogram's count), for tests. */
double sk_metric_value(const sk_metric_t *s);

/*
 * A family whose series are written anew at each rendering: fn, called
 * under the registry's lock, calls sk_metrics_emit once per series with
 * the values of the labels names[0..n) (n at most SK_METRICS_LABELS_MAX;
 * names and cls are kept by pointer).  For gauges (or counters) over a
 * set of things that changes while the daemon runs, a carrier name or a
 * configured file: what fn no longer emits is no longer shown, so no
 * series outlives its thing, and a value read at the scrape is never
 * stale.  Counters and gauges only.
 */
typedef struct sk_metrics_emit_s  sk_metrics_emit_t;
typedef void (*sk_metrics_family_pt)(sk_metrics_emit_t *e, void *cls);

int sk_metrics_family(sk_metrics_t *m, const sk_metric_def_t *def,
    const char *const *names, size_t n, sk_metrics_family_pt fn, void *cls,
    sk_err_t *err) SK_WUR;
void sk_metrics_emit(sk_metrics_emit_t *e, const char *const *values,
    double v);

/*
 * The process series every Prometheus client library gives a daemon
 * (process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds,
 * process_start_time_seconds), read from /proc at each rendering, and
 * <prefix>_build_info{version="SK_VERSION"} 1.
 */
int sk_metrics_process(sk_metrics_t *m, const char *prefix, sk_err_t *err)
    SK_WUR;

/* The whole exposition, malloc()ed and NUL-terminated. */
int sk_metrics_render(sk_metrics_t *m, char **out, size_t *len,
    sk_err_t *err) SK_WUR;

/* The Content-Type of that text. */
#define SK_METRICS_CONTENT_TYPE  "text/plain; version=0.0.4; charset=utf-8"

/* Buckets of a latency histogram in seconds: 0.5 ms .. 10 s. */
#define SK_METRICS_LATENCY_BUCKETS  14
extern const double  sk_metrics_latency_buckets[SK_METRICS_LATENCY_BUCKETS];

#endif
