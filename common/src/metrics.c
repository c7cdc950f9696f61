/*
 * metrics.c -- the Prometheus text format writer (sk/metrics.h).
 *
 * A histogram keeps one atomic count per bucket plus one past the last
 * bound; its _count and +Inf are the sum of those read in one pass, so a
 * scrape racing an observation still sees cumulative buckets that never
 * go down and a +Inf equal to _count.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/metrics.h"

#define SK_METRICS_LABELS_LEN  512

const double  sk_metrics_latency_buckets[SK_METRICS_LATENCY_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
    2.5, 5, 10
};

typedef struct sk_metric_family_s  sk_metric_family_t;

struct sk_metric_s {
    sk_metric_t              *next;
    const sk_metric_def_t    *def;
    char                     *labels;   /* a="x",b="y" (escaped), or "" */
    _Atomic uint64_t          count;    /* counter */
    _Atomic double            value;    /* gauge; histogram: the sum */
    _Atomic uint64_t         *buckets;  /* histogram: nbuckets + 1 */
};

struct sk_metric_family_s {
    sk_metric_family_t       *next;
    const sk_metric_def_t    *def;
    sk_metric_t              *series, **last;
    sk_metrics_family_pt      fn;       /* written at each rendering */
    void                     *cls;
    const char *const        *names;    /* fn's label names */
    size_t                    n;
};

struct sk_metrics_s {
    pthread_mutex_t           lock;
    sk_metric_family_t       *families, **last;
    sk_metrics_collect_pt     collect;
    void                     *cls;
};

/* A growing text buffer; on failure it stays failed. */
typedef struct {
    char                     *p;
    size_t                    len, cap;
    int                       failed;
} sk_metrics_buf_t;

struct sk_metrics_emit_s {
    sk_metrics_buf_t         *b;
    const sk_metric_family_t *f;
};


sk_metrics_t *
sk_metrics_new(sk_metrics_collect_pt collect, void *cls, sk_err_t *err)
{
    sk_metrics_t  *m = calloc(1, sizeof(*m));

    if (m == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "metrics");
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    m->last = &m->families;
    m->collect = collect;
    m->cls = cls;
    return m;
}


void
sk_metrics_free(sk_metrics_t *m)
{
    sk_metric_family_t  *f, *fn;
    sk_metric_t         *s, *sn;

    if (m == NULL) {
        return;
    }
    for (f = m->families; f != NULL; f = fn) {
        fn = f->next;
        for (s = f->series; s != NULL; s = sn) {
            sn = s->next;
            free(s->labels);
            free(s->buckets);
            free(s);
        }
        free(f);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}


static int
sk_metrics_name_ok(const char *s, int colon)
{
    const char  *p;

    if (s == NULL || *s == '\0' || (*s >= '0' && *s <= '9')) {
        return 0;
    }
    for (p = s; *p != '\0'; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9') || *p == '_'
              || (colon && *p == ':')))
        {
            return 0;
        }
    }
    return strncmp(s, "__", 2) != 0 || colon;
}


static int
sk_metrics_def_check(const sk_metric_def_t *def, sk_err_t *err)
{
    size_t  i, n = strlen(def->name);

    if (!sk_metrics_name_ok(def->name, 1)) {
        return sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": not a "
            "Prometheus metric name", def->name);
    }
    if ((def->type == SK_METRIC_COUNTER)
        != (n > 6 && strcmp(def->name + n - 6, "_total") == 0))
    {
        return sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": a counter's "
            "name, and only a counter's, ends in _total", def->name);
    }
    for (i = 1; def->type == SK_METRIC_HISTOGRAM && i < def->nbuckets; i++) {
        if (!(def->buckets[i - 1] < def->buckets[i])) {
            return sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": buckets "
                "not ascending", def->name);
        }
    }
    if (def->type == SK_METRIC_HISTOGRAM && def->nbuckets == 0) {
        return sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": a histogram "
            "needs buckets", def->name);
    }
    return 0;
}


/* The family named def->name, made if new (under m->lock). */
static sk_metric_family_t *
sk_metrics_family_get(sk_metrics_t *m, const sk_metric_def_t *def, sk_err_t *err)
{
    sk_metric_family_t  *f;

    for (f = m->families; f != NULL; f = f->next) {
        if (strcmp(f->def->name, def->name) == 0) {
            if (f->def->type != def->type) {
                sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": registered "
                    "already as another type", def->name);
                return NULL;
            }
            return f;
        }
    }
    if (sk_metrics_def_check(def, err) != 0) {
        return NULL;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "metric \"%s\"", def->name);
        return NULL;
    }
    f->def = def;
    f->last = &f->series;
    *m->last = f;
    m->last = &f->next;
    return f;
}


/* A label value as the format quotes it: \\, \" and \n escaped. */
static int
sk_metrics_escape(char *out, size_t cap, size_t *at, const char *v)
{
    const char  *p;
    size_t       i = *at;

    for (p = v; *p != '\0'; p++) {
        if (i + 3 > cap) {
            return -1;
        }
        if (*p == '\\' || *p == '"' || *p == '\n') {
            out[i++] = '\\';
            out[i++] = *p == '\n' ? 'n' : *p;
        } else {
            out[i++] = *p;
        }
    }
    out[i] = '\0';
    *at = i;
    return 0;
}


static int
sk_metrics_labels(char *out, size_t cap, const sk_metric_def_t *def,
    const char *const *names, const char *const *values, size_t n,
    sk_err_t *err)
{
    size_t  i, at = 0;
    int     w;

    out[0] = '\0';
    if (n > SK_METRICS_LABELS_MAX) {
        return sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": more than %d "
            "labels", def->name, SK_METRICS_LABELS_MAX);
    }
    for (i = 0; i < n; i++) {
        if (!sk_metrics_name_ok(names[i], 0)
            || (def->type == SK_METRIC_HISTOGRAM
                && strcmp(names[i], "le") == 0))
        {
            return sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": bad label "
                "name \"%s\"", def->name, names[i] ? names[i] : "(null)");
        }
        w = snprintf(out + at, cap - at, "%s%s=\"", i ? "," : "", names[i]);
        if (w < 0 || (size_t) w >= cap - at) {
            break;
        }
        at += (size_t) w;
        if (sk_metrics_escape(out, cap, &at, values[i]) != 0
            || at + 2 > cap)
        {
            break;
        }
        out[at++] = '"';
        out[at] = '\0';
    }
    if (i < n) {
        return sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": labels "
            "longer than %d bytes", def->name, SK_METRICS_LABELS_LEN);
    }
    return 0;
}


static sk_metric_t *
sk_metrics_series_new(sk_metric_family_t *f, const char *labels,
    sk_err_t *err)
{
    sk_metric_t  *s = calloc(1, sizeof(*s));
    size_t        i;

    if (s == NULL || (s->labels = strdup(labels)) == NULL) {
        free(s);
        sk_err_set(err, SK_ERR_NOMEM, "metric \"%s\"", f->def->name);
        return NULL;
    }
    s->def = f->def;
    atomic_init(&s->count, 0);
    atomic_init(&s->value, 0.0);
    if (f->def->type == SK_METRIC_HISTOGRAM) {
        s->buckets = calloc(f->def->nbuckets + 1, sizeof(*s->buckets));
        if (s->buckets == NULL) {
            free(s->labels);
            free(s);
            sk_err_set(err, SK_ERR_NOMEM, "metric \"%s\"", f->def->name);
            return NULL;
        }
        for (i = 0; i <= f->def->nbuckets; i++) {
            atomic_init(&s->buckets[i], 0);
        }
    }
    *f->last = s;
    f->last = &s->next;
    return s;
}


sk_metric_t *
sk_metrics_series(sk_metrics_t *m, const sk_metric_def_t *def,
    const char *const *names, const char *const *values, size_t n,
    sk_err_t *err)
{
    sk_metric_family_t  *f;
    sk_metric_t         *s = NULL;
    char                 labels[SK_METRICS_LABELS_LEN];

    if (sk_metrics_labels(labels, sizeof(labels), def, names, values, n,
            err) != 0)
    {
        return NULL;
    }
    pthread_mutex_lock(&m->lock);
    f = sk_metrics_family_get(m, def, err);
    if (f != NULL && f->fn != NULL) {
        sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": written by a "
            "function", def->name);
        f = NULL;
    }
    if (f != NULL) {
        for (s = f->series; s != NULL; s = s->next) {
            if (strcmp(s->labels, labels) == 0) {
                break;
            }
        }
        if (s == NULL) {
            s = sk_metrics_series_new(f, labels, err);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return s;
}


int
sk_metrics_family(sk_metrics_t *m, const sk_metric_def_t *def,
    const char *const *names, size_t n, sk_metrics_family_pt fn, void *cls,
    sk_err_t *err)
{
    sk_metric_family_t  *f;
    char                 labels[SK_METRICS_LABELS_LEN];
    int                  rc = 0;

    if (def->type == SK_METRIC_HISTOGRAM) {
        return sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": a histogram "
            "cannot be written by a function", def->name);
    }
    /* The names checked as a series' would be, with themselves as
     * values. */
    if (sk_metrics_labels(labels, sizeof(labels), def, names, names, n,
            err) != 0)
    {
        return -1;
    }
    pthread_mutex_lock(&m->lock);
    f = sk_metrics_family_get(m, def, err);
    if (f == NULL) {
        rc = -1;
    } else if (f->fn != NULL || f->series != NULL) {
        rc = sk_err_set(err, SK_ERR_USAGE, "metric \"%s\": registered "
            "already", def->name);
    } else {
        f->fn = fn;
        f->cls = cls;
        f->names = names;
        f->n = n;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}


void
sk_metric_inc(sk_metric_t *s, uint64_t n)
{
    if (s != NULL) {
        atomic_fetch_add_explicit(&s->count, n, memory_order_relaxed);
    }
}


void
sk_metric_set(sk_metric_t *s, double v)
{
    if (s == NULL) {
        return;
    }
    if (s->def->type == SK_METRIC_COUNTER) {
        atomic_store_explicit(&s->count, (uint64_t) v, memory_order_relaxed);
    } else {
        atomic_store_explicit(&s->value, v, memory_order_relaxed);
    }
}


static void
sk_metric_add_double(_Atomic double *a, double v)
{
    double  old = atomic_load_explicit(a, memory_order_relaxed);

    while (!atomic_compare_exchange_weak_explicit(a, &old, old + v,
               memory_order_relaxed, memory_order_relaxed))
    {
        /* old has the current value: try again */
    }
}


void
sk_metric_add(sk_metric_t *s, double v)
{
    if (s != NULL) {
        sk_metric_add_double(&s->value, v);
    }
}


void
sk_metric_observe(sk_metric_t *s, double v)
{
    size_t  i;

    if (s == NULL || s->buckets == NULL) {
        return;
    }
    for (i = 0; i < s->def->nbuckets && v > s->def->buckets[i]; i++) {
        /* the first bound at or above v */
    }
    atomic_fetch_add_explicit(&s->buckets[i], 1, memory_order_relaxed);
    sk_metric_add_double(&s->value, v);
}


double
sk_metric_value(const sk_metric_t *s)
{
    uint64_t  n = 0;
    size_t    i;

    switch (s->def->type) {
    case SK_METRIC_COUNTER:
        return (double) atomic_load(&s->count);
    case SK_METRIC_GAUGE:
        return atomic_load(&s->value);
    default:
        for (i = 0; i <= s->def->nbuckets; i++) {
            n += atomic_load(&s->buckets[i]);
        }
        return (double) n;
    }
}


static void
sk_metrics_printf(sk_metrics_buf_t *b, const char *fmt, ...) SK_PRINTF(2, 3);

static void
sk_metrics_printf(sk_metrics_buf_t *b, const char *fmt, ...)
{
    va_list  ap;
    size_t   cap;
    char    *p;
    int      w;

    while (!b->failed) {
        va_start(ap, fmt);
        w = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (w < 0) {
            b->failed = 1;
        } else if ((size_t) w < b->cap - b->len) {
            b->len += (size_t) w;
            return;
        } else {
            cap = b->cap * 2 + (size_t) w + 1;
            p = realloc(b->p, cap);
            if (p == NULL) {
                b->failed = 1;
            } else {
                b->p = p;
                b->cap = cap;
            }
        }
    }
}


/* A sample value as Prometheus writes floats. */
static const char *
sk_metrics_num(char *buf, size_t cap, double v)
{
    if (isnan(v)) {
        return "NaN";
    }
    if (isinf(v)) {
        return v > 0 ? "+Inf" : "-Inf";
    }
    snprintf(buf, cap, "%.15g", v);
    return buf;
}


/* HELP text: \\ and \n escaped. */
static void
sk_metrics_help(sk_metrics_buf_t *b, const sk_metric_def_t *def)
{
    const char  *p;

    sk_metrics_printf(b, "# HELP %s ", def->name);
    for (p = def->help; *p != '\0'; p++) {
        if (*p == '\\' || *p == '\n') {
            sk_metrics_printf(b, "\\%c", *p == '\n' ? 'n' : '\\');
        } else {
            sk_metrics_printf(b, "%c", *p);
        }
    }
    sk_metrics_printf(b, "\n");
}


static void
sk_metrics_histogram(sk_metrics_buf_t *b, const sk_metric_t *s)
{
    const sk_metric_def_t  *def = s->def;
    const char             *sep = s->labels[0] != '\0' ? "," : "";
    uint64_t                n = 0;
    size_t                  i;
    char                    num[32];

    for (i = 0; i <= def->nbuckets; i++) {
        n += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
        sk_metrics_printf(b, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n",
            def->name, s->labels, sep, i < def->nbuckets
            ? sk_metrics_num(num, sizeof(num), def->buckets[i]) : "+Inf", n);
    }
    sk_metrics_printf(b, "%s_sum%s%s%s %s\n", def->name,
        s->labels[0] ? "{" : "", s->labels, s->labels[0] ? "}" : "",
        sk_metrics_num(num, sizeof(num), atomic_load(&s->value)));
    sk_metrics_printf(b, "%s_count%s%s%s %" PRIu64 "\n", def->name,
        s->labels[0] ? "{" : "", s->labels, s->labels[0] ? "}" : "", n);
}


void
sk_metrics_emit(sk_metrics_emit_t *e, const char *const *values, double v)
{
    char  labels[SK_METRICS_LABELS_LEN], num[32];

    if (sk_metrics_labels(labels, sizeof(labels), e->f->def, e->f->names,
            values, e->f->n, NULL) != 0)
    {
        return;                 /* too long: not shown */
    }
    sk_metrics_printf(e->b, "%s%s%s%s %s\n", e->f->def->name,
        labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
        sk_metrics_num(num, sizeof(num), v));
}


static void
sk_metrics_family_render(sk_metrics_buf_t *b, const sk_metric_family_t *f)
{
    static const char *const  types[] = { "counter", "gauge", "histogram" };
    const sk_metric_t        *s;
    const char               *v;
    char                      num[32];
    sk_metrics_emit_t         e;

    sk_metrics_help(b, f->def);
    sk_metrics_printf(b, "# TYPE %s %s\n", f->def->name, types[f->def->type]);
    if (f->fn != NULL) {
        e.b = b;
        e.f = f;
        f->fn(&e, f->cls);
        return;
    }
    for (s = f->series; s != NULL; s = s->next) {
        if (f->def->type == SK_METRIC_HISTOGRAM) {
            sk_metrics_histogram(b, s);
            continue;
        }
        v = num;
        if (f->def->type == SK_METRIC_COUNTER) {
            snprintf(num, sizeof(num), "%" PRIu64,
                atomic_load_explicit(&s->count, memory_order_relaxed));
        } else {
            v = sk_metrics_num(num, sizeof(num), atomic_load(&s->value));
        }
        sk_metrics_printf(b, "%s%s%s%s %s\n", f->def->name,
            s->labels[0] ? "{" : "", s->labels, s->labels[0] ? "}" : "", v);
    }
}


int
sk_metrics_render(sk_metrics_t *m, char **out, size_t *len, sk_err_t *err)
{
    const sk_metric_family_t  *f;
    sk_metrics_buf_t           b;

    memset(&b, 0, sizeof(b));
    b.cap = 4096;
    b.p = malloc(b.cap);
    if (b.p == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "metrics: rendering");
    }
    b.p[0] = '\0';
    pthread_mutex_lock(&m->lock);
    if (m->collect != NULL) {
        m->collect(m, m->cls);
    }
    for (f = m->families; f != NULL; f = f->next) {
        sk_metrics_family_render(&b, f);
    }
    pthread_mutex_unlock(&m->lock);
    if (b.failed) {
        free(b.p);
        return sk_err_set(err, SK_ERR_NOMEM, "metrics: rendering");
    }
    *out = b.p;
    *len = b.len;
    return 0;
}
