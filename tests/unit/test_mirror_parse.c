/*
 * test_mirror_parse.c -- sk-mirror's parsers of what others send it:
 * a timeline's chunk listing (mr_sync.c), a peer's reneged list
 * (mr_track.c), an answer cache value read back from Redis (mr_cache.c);
 * and its configuration's freshness defaults (mr_conf.c).
 * Each is strict: no sign, no overflow, no extra or missing field, no
 * duplicate, and a message naming what is wrong.
 */
#include "testutil.h"

#include "../../mirror/mr.h"


/* One listing line: 0 and its fields, or -1 and a message naming want. */
static void
listing_ok(const char *text, uint64_t want_first, uint64_t want_last)
{
    uint64_t  first, last;
    sk_err_t  err;
    char      line[256], *uri, *sig;

    snprintf(line, sizeof(line), "%s", text);
    tu_assert_ok(mr_sync_listing_line(line, &uri, &first, &last, &sig, &err),
        &err);
    assert_int_equal(first, want_first);
    assert_int_equal(last, want_last);
    assert_int_equal(uri[0], '/');
    assert_true(sig[0] != '\0');
}


static void
listing_bad(const char *text, const char *want)
{
    uint64_t  first, last;
    sk_err_t  err;
    char      line[256], *uri, *sig;

    snprintf(line, sizeof(line), "%s", text);
    tu_assert_err(mr_sync_listing_line(line, &uri, &first, &last, &sig,
        &err), &err, SK_ERR_FORMAT, want);
}


static void
test_listing(void **state)
{
    (void) state;
    listing_ok("/chunks/0-41.bz2 0 41 QUJDRA", 0, 41);
    listing_ok("/chunks/7-7.bz2 7 7 x-_y", 7, 7);
    listing_ok("/c 0 18446744073709551614 QUJD", 0, UINT64_MAX - 1);

    /* last overflowed to UINT64_MAX, and last + 1 wrapped to 0. */
    listing_bad("/c 0 99999999999999999999 QUJD", "\"last-sn\"");
    listing_bad("/c 0 18446744073709551615 QUJD", "\"last-sn\"");
    listing_bad("/c 18446744073709551616 18446744073709551616 QUJD",
        "\"first-sn\"");
    listing_bad("/c -1 1 QUJD", "\"first-sn\"");
    listing_bad("/c +0 1 QUJD", "\"first-sn\"");
    listing_bad("/c 0 1x QUJD", "\"last-sn\"");
    listing_bad("/c 5 4 QUJD", "before \"first-sn\"");
    /* Exactly four fields, single spaces. */
    listing_bad("/c  0 1 QUJD", "\"first-sn\": empty");
    listing_bad(" /c 0 1 QUJD", "\"uri\": empty");
    listing_bad("/c 0 1 QUJD ", "more than 4 fields");
    listing_bad("/c 0 1 QUJD extra", "more than 4 fields");
    listing_bad("/c 0 1", "3 fields");
    listing_bad("/c 0 1 ", "\"signature\": empty");
    listing_bad("", "\"uri\": empty");
    listing_bad("c 0 1 QUJD", "\"uri\"");
    listing_bad("/chunks/../x 0 1 QUJD", "\"uri\"");
    listing_bad("/c\t 0 1 QUJD", "\"uri\"");
    listing_bad("/c 0 1 QU==", "\"signature\"");
    listing_bad("/c 0 1 QU+/", "\"signature\"");
}


static void
reneged_ok(const char *text, size_t want_n, const uint64_t *want)
{
    uint64_t  *tids;
    sk_err_t   err;
    size_t     n, i;

    tu_assert_ok(mr_track_parse(&tids, &n, text, strlen(text), &err), &err);
    assert_int_equal(n, want_n);
    for (i = 0; i < n; i++) {
        assert_int_equal(tids[i], want[i]);
    }
    free(tids);
}


static void
reneged_bad(const char *text, size_t len, const char *want)
{
    uint64_t  *tids = (uint64_t *) 1;
    sk_err_t   err;
    size_t     n = 1;

    tu_assert_err(mr_track_parse(&tids, &n, text, len, &err), &err,
        SK_ERR_FORMAT, want);
    assert_null(tids);
    assert_int_equal(n, 0);
}
#define RENEGED_BAD(text, want)  reneged_bad(text, sizeof(text) - 1, want)


static void
test_reneged(void **state)
{
    static const uint64_t  three[] = { 1, 7, 18446744073709551615ULL };

    (void) state;
    reneged_ok("", 0, NULL);
    reneged_ok("1\n7\n18446744073709551615\n", 3, three);

    RENEGED_BAD("18446744073709551616\n", "line 1: \"tid\"");
    RENEGED_BAD("1\n7\n7\n", "line 3: \"tid\" 7 after 7");
    RENEGED_BAD("9\n3\n", "line 2: \"tid\" 3 after 9");
    RENEGED_BAD("1\n-2\n", "line 2: \"tid\"");
    RENEGED_BAD("+2\n", "line 1: \"tid\"");
    RENEGED_BAD("0\n", "line 1: \"tid\"");
    RENEGED_BAD("01\n", "leading zero");
    RENEGED_BAD("1\n2", "line 2 unterminated");
    RENEGED_BAD("1\n\n", "line 2: \"tid\"");
    RENEGED_BAD("1 \n", "line 1: \"tid\"");
    RENEGED_BAD("1\0\n", "line 1: \"tid\"");
}


static void
cache_bad(const char *text, sk_err_code_t code, const char *want)
{
    uint64_t  nrefs;
    int64_t   built;
    sk_err_t  err;
    size_t    off;

    tu_assert_err(mr_cache_parse((const unsigned char *) text, strlen(text),
        "1,2", &built, &nrefs, &off, &err), &err, code, want);
}


static void
test_cache(void **state)
{
    static const char  ok[] = "SK-Mirror-Cache: 1,2 1700000000 3\nanswer\n";
    uint64_t           nrefs;
    int64_t            built;
    sk_err_t           err;
    size_t             off;

    (void) state;
    tu_assert_ok(mr_cache_parse((const unsigned char *) ok, strlen(ok), "1,2",
        &built, &nrefs, &off, &err), &err);
    assert_int_equal(built, 1700000000);
    assert_int_equal(nrefs, 3);
    assert_string_equal(ok + off, "answer\n");

    cache_bad("SK-Mirror-Cache: 1,3 1700000000 3\nx", SK_ERR_NOT_FOUND,
        "other timelines");
    cache_bad("SK-Mirror-Cache: 1,2,3 1700000000 3\nx", SK_ERR_NOT_FOUND,
        "other timelines");
    /* strtoll()/strtoul() took these. */
    cache_bad("SK-Mirror-Cache: 1,2 -5 3\nx", SK_ERR_FORMAT, "\"built\"");
    cache_bad("SK-Mirror-Cache: 1,2 +5 3\nx", SK_ERR_FORMAT, "\"built\"");
    cache_bad("SK-Mirror-Cache: 1,2  5 3\nx", SK_ERR_FORMAT, "\"built\"");
    cache_bad("SK-Mirror-Cache: 1,2 5 -1\nx", SK_ERR_FORMAT, "\"entries\"");
    cache_bad("SK-Mirror-Cache: 1,2 5 18446744073709551616\nx", SK_ERR_FORMAT,
        "\"entries\"");
    cache_bad("SK-Mirror-Cache: 1,2 9223372036854775808 3\nx", SK_ERR_FORMAT,
        "\"built\": 9223372036854775808 is too large");
    cache_bad("SK-Mirror-Cache: 1,2 5 3 x\nx", SK_ERR_FORMAT, "\"entries\"");
    cache_bad("SK-Mirror-Cache: 1,2 5\nx", SK_ERR_FORMAT, "2 fields");
    cache_bad("SK-Mirror-Cache: 1,2 5 3", SK_ERR_FORMAT, "head line");
    cache_bad("Other: 1,2 5 3\nx", SK_ERR_FORMAT, "head line");
}


/* A round a minute and answers reused a minute: an answer's checkpoints
 * are at most about two minutes old, so an Unbind reaches clients within
 * the hour (docs/protocol.md, "How fast an Unbind reaches clients"); the
 * draft's 10 minutes and 30 were too slow. */
static void
test_conf_defaults(void **state)
{
    mr_conf_t   conf;
    sk_err_t    err;
    char       *dir = tu_tmpdir(), *path = tu_path(dir, "mirror.conf");
    FILE       *f;

    (void) state;
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "listen = 127.0.0.1:8480\ndata_dir = %s\n"
        "timeline = 7 http://tl7.test %s/tl7.pub\n", dir, dir);
    fclose(f);
    tu_assert_ok(mr_conf_load(&conf, path, &err), &err);
    assert_int_equal(conf.poll_interval, 60);
    assert_int_equal(conf.query_cache, 60);
    mr_conf_free(&conf);
    free(path);
    tu_rmtree(dir);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_reneged),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_conf_defaults),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
