/*
 * test_metrics.c -- the Prometheus text writer: the exact exposition of
 * each type, label values escaped, names checked, the collect hook, and
 * counts from several threads at once adding up.
 */
#include <pthread.h>

#include <sk/metrics.h>
#include <sk/sk.h>

#include "testutil.h"

static const sk_metric_def_t  appends = {
    "x_appends_total", "Appends by result.", SK_METRIC_COUNTER, NULL, 0
};
static const sk_metric_def_t  size = {
    "x_tree_size", "Entries in the tree.", SK_METRIC_GAUGE, NULL, 0
};
static const double  bounds[] = { 0.01, 0.1, 1 };
static const sk_metric_def_t  latency = {
    "x_append_duration_seconds", "Append latency.", SK_METRIC_HISTOGRAM,
    bounds, 3
};


static char *
render(sk_metrics_t *m)
{
    sk_err_t  err;
    size_t    len;
    char     *out;

    assert_int_equal(sk_metrics_render(m, &out, &len, &err), 0);
    assert_int_equal(strlen(out), len);
    return out;
}


static void
test_exposition(void **state)
{
    static const char *const  k[] = { "result" };
    static const char *const  ok[] = { "ok" }, *const bad[] = { "bad" };
    sk_metrics_t             *m;
    sk_metric_t              *a, *b, *g, *h;
    sk_err_t                  err;
    char                     *out;

    (void) state;
    m = sk_metrics_new(NULL, NULL, &err);
    assert_non_null(m);
    a = sk_metrics_series(m, &appends, k, ok, 1, &err);
    b = sk_metrics_series(m, &appends, k, bad, 1, &err);
    g = sk_metrics_series(m, &size, NULL, NULL, 0, &err);
    h = sk_metrics_series(m, &latency, NULL, NULL, 0, &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(g);
    assert_non_null(h);
    assert_ptr_equal(sk_metrics_series(m, &appends, k, ok, 1, &err), a);
    sk_metric_inc(a, 3);
    sk_metric_inc(b, 1);
    sk_metric_set(g, 42);
    sk_metric_add(g, 0.5);
    sk_metric_observe(h, 0.005);
    sk_metric_observe(h, 0.1);      /* on a bound: that bucket (le) */
    sk_metric_observe(h, 7);
    sk_metric_inc(NULL, 1);         /* metrics off: nothing */
    out = render(m);
    assert_string_equal(out,
        "# HELP x_appends_total Appends by result.\n"
        "# TYPE x_appends_total counter\n"
        "x_appends_total{result=\"ok\"} 3\n"
        "x_appends_total{result=\"bad\"} 1\n"
        "# HELP x_tree_size Entries in the tree.\n"
        "# TYPE x_tree_size gauge\n"
        "x_tree_size 42.5\n"
        "# HELP x_append_duration_seconds Append latency.\n"
        "# TYPE x_append_duration_seconds histogram\n"
        "x_append_duration_seconds_bucket{le=\"0.01\"} 1\n"
        "x_append_duration_seconds_bucket{le=\"0.1\"} 2\n"
        "x_append_duration_seconds_bucket{le=\"1\"} 2\n"
        "x_append_duration_seconds_bucket{le=\"+Inf\"} 3\n"
        "x_append_duration_seconds_sum 7.105\n"
        "x_append_duration_seconds_count 3\n");
    free(out);
    assert_true(sk_metric_value(h) == 3);
    sk_metrics_free(m);
}


static void
test_escaping(void **state)
{
    static const char *const  k[] = { "path", "kind" };
    static const char *const  v[] = { "a\\b\"c\nd", "" };
    static const sk_metric_def_t  help = {
        "x_odd_total", "Back\\slash and\nnewline.", SK_METRIC_COUNTER,
        NULL, 0
    };
    sk_metrics_t  *m;
    sk_metric_t   *s;
    sk_err_t       err;
    char          *out;

    (void) state;
    m = sk_metrics_new(NULL, NULL, &err);
    s = sk_metrics_series(m, &help, k, v, 2, &err);
    assert_non_null(s);
    sk_metric_inc(s, 1);
    /* A histogram with labels puts le after them. */
    s = sk_metrics_series(m, &latency, k, v, 1, &err);
    sk_metric_observe(s, 2);
    out = render(m);
    assert_non_null(strstr(out,
        "# HELP x_odd_total Back\\\\slash and\\nnewline.\n"));
    assert_non_null(strstr(out,
        "x_odd_total{path=\"a\\\\b\\\"c\\nd\",kind=\"\"} 1\n"));
    assert_non_null(strstr(out, "x_append_duration_seconds_bucket{path=\"a"
        "\\\\b\\\"c\\nd\",le=\"+Inf\"} 1\n"));
    assert_non_null(strstr(out,
        "x_append_duration_seconds_count{path=\"a\\\\b\\\"c\\nd\"} 1\n"));
    free(out);
    sk_metrics_free(m);
}


static void
test_names(void **state)
{
    static const sk_metric_def_t  no_total = {
        "x_appends", "", SK_METRIC_COUNTER, NULL, 0
    };
    static const sk_metric_def_t  gauge_total = {
        "x_size_total", "", SK_METRIC_GAUGE, NULL, 0
    };
    static const sk_metric_def_t  bad_name = {
        "9x", "", SK_METRIC_GAUGE, NULL, 0
    };
    static const sk_metric_def_t  other_type = {
        "x_tree_size", "", SK_METRIC_HISTOGRAM, bounds, 3
    };
    static const double           down[] = { 1, 0.1 };
    static const sk_metric_def_t  descending = {
        "x_y_seconds", "", SK_METRIC_HISTOGRAM, down, 2
    };
    static const sk_metric_def_t  no_buckets = {
        "x_z_seconds", "", SK_METRIC_HISTOGRAM, bounds, 0
    };
    static const char *const  bad_label[] = { "a-b" };
    static const char *const  le[] = { "le" };
    static const char *const  one[] = { "1" };
    sk_metrics_t             *m;
    sk_err_t                  err;

    (void) state;
    m = sk_metrics_new(NULL, NULL, &err);
    assert_null(sk_metrics_series(m, &no_total, NULL, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "x_appends"));
    assert_null(sk_metrics_series(m, &gauge_total, NULL, NULL, 0, &err));
    assert_null(sk_metrics_series(m, &bad_name, NULL, NULL, 0, &err));
    assert_non_null(sk_metrics_series(m, &size, NULL, NULL, 0, &err));
    assert_null(sk_metrics_series(m, &other_type, NULL, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "another type"));
    assert_null(sk_metrics_series(m, &descending, NULL, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "ascending"));
    assert_null(sk_metrics_series(m, &no_buckets, NULL, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "needs buckets"));
    assert_null(sk_metrics_series(m, &size, bad_label, one, 1, &err));
    assert_non_null(strstr(err.msg, "a-b"));
    assert_null(sk_metrics_series(m, &latency, le, one, 1, &err));
    sk_metrics_free(m);
}


/* The hook sets, at each rendering, a gauge made after the registry. */
static void
collect(sk_metrics_t *m, void *cls)
{
    sk_metric_t  **g = cls;

    (void) m;
    sk_metric_set(*g, sk_metric_value(*g) + 1);
}


static void
test_collect(void **state)
{
    sk_metrics_t  *m;
    sk_metric_t   *g = NULL;
    sk_err_t       err;
    char          *out;

    (void) state;
    m = sk_metrics_new(collect, &g, &err);
    assert_non_null(m);
    g = sk_metrics_series(m, &size, NULL, NULL, 0, &err);
    assert_non_null(g);
    out = render(m);
    assert_non_null(strstr(out, "\nx_tree_size 1\n"));
    free(out);
    out = render(m);
    assert_non_null(strstr(out, "\nx_tree_size 2\n"));
    free(out);
    sk_metrics_free(m);
}


/* A family written at rendering: what fn emits now, and nothing else. */
static void
emit_names(sk_metrics_emit_t *e, void *cls)
{
    const char *const  *names = cls;
    const char         *v[1];
    size_t              i;

    for (i = 0; names[i] != NULL; i++) {
        v[0] = names[i];
        sk_metrics_emit(e, v, (double) i + 0.5);
    }
}


static void
test_family(void **state)
{
    static const char *const  k[] = { "name" };
    static const sk_metric_def_t  age = {
        "x_staple_age_seconds", "Age.", SK_METRIC_GAUGE, NULL, 0
    };
    const char               *names[3] = { "a.example", "b\"x", NULL };
    sk_metrics_t             *m;
    sk_err_t                  err;
    char                     *out;

    (void) state;
    m = sk_metrics_new(NULL, NULL, &err);
    assert_int_equal(sk_metrics_family(m, &age, k, 1, emit_names, names,
        &err), 0);
    out = render(m);
    assert_string_equal(out, "# HELP x_staple_age_seconds Age.\n"
        "# TYPE x_staple_age_seconds gauge\n"
        "x_staple_age_seconds{name=\"a.example\"} 0.5\n"
        "x_staple_age_seconds{name=\"b\\\"x\"} 1.5\n");
    free(out);
    names[1] = NULL;            /* the thing went away: so did its series */
    out = render(m);
    assert_null(strstr(out, "b\\\"x"));
    free(out);
    /* Nobody else writes its series; no histogram is written so. */
    assert_null(sk_metrics_series(m, &age, k, k, 1, &err));
    assert_non_null(strstr(err.msg, "written by a function"));
    assert_int_equal(sk_metrics_family(m, &age, k, 1, emit_names, names,
        &err), -1);
    assert_int_equal(sk_metrics_family(m, &latency, NULL, 0, emit_names,
        names, &err), -1);
    sk_metrics_free(m);
}


static void
test_process(void **state)
{
    sk_metrics_t  *m;
    sk_err_t       err;
    char          *out, *p;
    double         v;

    (void) state;
    m = sk_metrics_new(NULL, NULL, &err);
    assert_int_equal(sk_metrics_process(m, "x", &err), 0);
    out = render(m);
    assert_non_null(strstr(out, "\nx_build_info{version=\"" SK_VERSION
        "\"} 1\n"));
    p = strstr(out, "\nprocess_resident_memory_bytes ");
    assert_non_null(p);
    v = strtod(p + 31, NULL);
    assert_true(v > 1e5);
    p = strstr(out, "\nprocess_open_fds ");
    assert_non_null(p);
    assert_true(strtod(p + 18, NULL) >= 3);
    p = strstr(out, "\nprocess_start_time_seconds ");
    assert_non_null(p);
    v = strtod(p + 28, NULL);
    assert_true(v > (double) time(NULL) - 3600
        && v <= (double) time(NULL) + 2);   /* btime is whole seconds */
    assert_non_null(strstr(out, "# TYPE process_cpu_seconds_total counter"));
    free(out);
    sk_metrics_free(m);
}


#define THREADS  4
#define ROUNDS   100000

static void *
hammer(void *arg)
{
    sk_metric_t  **s = arg;
    int            i;

    for (i = 0; i < ROUNDS; i++) {
        sk_metric_inc(s[0], 1);
        sk_metric_add(s[1], 1);
        sk_metric_observe(s[2], 0.05);
    }
    return NULL;
}


static void
test_threads(void **state)
{
    sk_metrics_t  *m;
    sk_metric_t   *s[3];
    pthread_t      t[THREADS];
    sk_err_t       err;
    int            i;

    (void) state;
    m = sk_metrics_new(NULL, NULL, &err);
    s[0] = sk_metrics_series(m, &appends, NULL, NULL, 0, &err);
    s[1] = sk_metrics_series(m, &size, NULL, NULL, 0, &err);
    s[2] = sk_metrics_series(m, &latency, NULL, NULL, 0, &err);
    for (i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, hammer, s), 0);
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    assert_true(sk_metric_value(s[0]) == THREADS * ROUNDS);
    assert_true(sk_metric_value(s[1]) == THREADS * ROUNDS);
    assert_true(sk_metric_value(s[2]) == THREADS * ROUNDS);
    sk_metrics_free(m);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exposition),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_collect),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_family),
        cmocka_unit_test(test_process),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
