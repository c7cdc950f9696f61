/*
 * test_client_fresh.c -- design 4.b: counting fresh and stale timelines,
 * the thresholds, mirror distrust (less fresh than before, omitted or
 * altered entries), the local cache, and the query loop over mirrors
 * served through the fetch callback from real signed answers.
 */
#include <dirent.h>
#include <sys/stat.h>

#include "test_client_fixture.h"

#define NAME  "example.com"
#define HOUR  3600
#define DAY   (24 * HOUR)
#define T1    SK_CLIENT_T1
#define T2    SK_CLIENT_T2
/* Beyond T2, not yet very stale; and stopped. */
#define STALE_AGE  ((SK_CLIENT_T2 + SK_CLIENT_T3) / 2)


/* What each mirror does when asked.  M_REPLAY: its answer as recorded
 * from an earlier query (signed for another nonce); M_BARE: its answer
 * without the nonce trailer (what an old mirror, or a staple, gives);
 * M_FORGED: the trailer signed by a key not the mirror's. */
typedef enum { M_FRESH, M_STALE, M_DOWN, M_503, M_OMIT, M_GARBAGE,
    M_REPLAY, M_BARE, M_FORGED } mmode_t;

typedef struct {
    mmode_t   mode[8];
    int64_t   stale_ts;        /* M_STALE's checkpoint dates */
    size_t    calls[8];
    char      last_url[256];
    mmode_t   tmode[8];        /* the same over Tor */
    size_t    tcalls[8];
} mirrors_t;

/* The nonce of an earlier query, whose answer M_REPLAY replays. */
#define OLD_NONCE  "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"


static void
set_cp_ts(int64_t ts)
{
    size_t  i;

    for (i = 0; i < tw.ntl; i++) {
        tw.tl[i].cp_ts = ts;
    }
}


/* Mirror i (m, in mode) answering url. */
static int
serve(mirrors_t *m, mmode_t mode, char **body, size_t *len, int *status,
    const char *url, sk_err_t *err)
{
    sk_key_t  *other;
    char       name[SK_NAME_MAX + 1], nonce[SK_NONCE_TEXT + 1];

    fx_query(url, name, sizeof(name), nonce);
    snprintf(m->last_url, sizeof(m->last_url), "%s", url);
    *status = 200;
    switch (mode) {
    case M_REPLAY:
        *body = fx_nonce(&tw, fx_answer(&tw, name, len), len, OLD_NONCE);
        return 0;
    case M_BARE:
        *body = fx_answer(&tw, name, len);
        return 0;
    case M_FORGED:
        other = fx_key();
        *body = fx_nonce_by(other, fx_answer(&tw, name, len), len, nonce);
        sk_key_free(other);
        return 0;
    case M_DOWN:
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "connection refused");
    case M_503:
        *status = 503;
        *body = strdup("fewer than two healthy timelines");
        *len = strlen(*body);
        return 0;
    case M_GARBAGE:
        /* garbage the mirror signed for the nonce */
        *body = strdup("SK-Mirror-Answer: 1\nName: x\n");
        *len = strlen(*body);
        *body = fx_nonce(&tw, *body, len, nonce);
        return 0;
    case M_STALE:
        set_cp_ts(m->stale_ts);
        *body = fx_nonce(&tw, fx_answer(&tw, name, len), len, nonce);
        set_cp_ts(FX_NOW);
        return 0;
    case M_OMIT:
        *body = fx_nonce(&tw, fx_answer_omit(&tw, name, 2, 0, len), len,
            nonce);
        return 0;
    case M_FRESH:
        break;
    }
    *body = fx_nonce(&tw, fx_answer(&tw, name, len), len, nonce);
    return 0;
}


static int
fetch(char **body, size_t *len, int *status, const char *url, void *arg,
    sk_err_t *err)
{
    mirrors_t  *m = arg;
    unsigned    i;

    assert_int_equal(sscanf(url, "http://m%u.test/", &i), 1);
    assert_true(i < 8);
    m->calls[i]++;
    return serve(m, m->mode[i], body, len, status, url, err);
}


/* Through Tor: mirror i's onion (the address of the key of timeline i,
 * as onions() lists it), or its URL (mirror_tor = always). */
static int
fetch_tor(char **body, size_t *len, int *status, const char *url,
    void *arg, sk_err_t *err)
{
    mirrors_t  *m = arg;
    char        onion[SK_ONION_ADDR_LEN + 1];
    sk_err_t    e;
    unsigned    i;

    if (sscanf(url, "http://m%u.test/", &i) != 1) {
        for (i = 0; i < tw.ntl; i++) {
            tu_assert_ok(sk_onion_address_from_key(onion, tw.tl[i].key, &e),
                &e);
            if (strncmp(url + 7, onion, SK_ONION_ADDR_LEN) == 0) {
                break;
            }
        }
    }
    assert_true(i < tw.ntl);
    m->tcalls[i]++;
    return serve(m, m->tmode[i], body, len, status, url, err);
}


/* A copy of the world's trust shares its timeline keys: free only the
 * mirrors added to it. */
static void
drop_mirrors(sk_client_trust_t *t)
{
    size_t  i;

    for (i = 0; i < t->nmirrors; i++) {
        sk_key_free(t->mirrors[i].key);
    }
    t->nmirrors = 0;
}


static void
mirrors(mirrors_t *m, sk_client_trust_t *t, size_t n)
{
    char      url[64];
    sk_err_t  err;
    size_t    i;

    memset(m, 0, sizeof(*m));
    for (i = 0; i < n; i++) {
        snprintf(url, sizeof(url), "http://m%zu.test/", i);
        tu_assert_ok(sk_client_trust_add_mirror(t, url, tw.mirror, &err),
            &err);
    }
}


static int
setup(void **state)
{
    (void) state;
    fx_init(&tw, 3);
    sk1 = fx_key();
    fx_append(&tw, 0, fx_bind(NAME, sk1, "https", 0), FX_NOW - 800);
    fx_append(&tw, 1, fx_bind(NAME, sk1, "https", 0), FX_NOW - 700);
    fx_append(&tw, 1, fx_bind("b.example", sk1, "https", 0), FX_NOW - 600);
    return 0;
}


static void
test_eval(void **state)
{
    sk_client_trust_t  t;
    sk_client_view_t   v;
    sk_client_fresh_t  f;
    int64_t            ages[5] = { T1 / 2, (T1 + T2) / 2, STALE_AGE,
                                   (SK_CLIENT_T3 + SK_CLIENT_T4) / 2,
                                   2 * SK_CLIENT_T4 };
    size_t             i;
    sk_err_t           err;
    char              *note;
    size_t             len;
    fx_world_t         w5;

    (void) state;
    fx_init(&w5, 5);
    memset(&v, 0, sizeof(v));
    snprintf(v.name, sizeof(v.name), NAME);
    for (i = 0; i < 5; i++) {
        w5.tl[i].cp_ts = FX_NOW - ages[i];
        note = fx_checkpoint(&w5, i, NULL, &len);
        tu_assert_ok(sk_client_view_add_cp(&v, i + 1, note, len, &err),
            &err);
        free(note);
    }
    tu_assert_ok(sk_client_view_verify(&v, &w5.trust, FX_NOW, &err), &err);
    sk_client_fresh_eval(&f, &w5.trust, &v, FX_NOW);
    assert_int_equal(f.ntl, 5);
    assert_int_equal(f.within_t1, 1);
    assert_int_equal(f.fresh, 2);
    assert_int_equal(f.stale, 2);
    assert_int_equal(f.very_stale, 1);
    assert_false(sk_client_fresh_cached_ok(&f));
    assert_false(sk_client_fresh_ok(&f, &w5.trust));
    assert_false(sk_client_fresh_fail_open(&f, &w5.trust));

    /* 4 of 5 within T2 (80 %), one missing: fresh enough. */
    for (i = 0; i < 4; i++) {
        v.cps[i].ts = FX_NOW - (T1 + T2) / 2;
    }
    v.ncps = 4;
    sk_client_fresh_eval(&f, &w5.trust, &v, FX_NOW);
    assert_int_equal(f.fresh, 4);
    assert_int_equal(f.stale, 1);
    assert_true(sk_client_fresh_ok(&f, &w5.trust));
    assert_false(sk_client_fresh_cached_ok(&f));
    /* ... not with 81 %. */
    t = w5.trust;
    t.fresh_percent = 81;
    assert_false(sk_client_fresh_ok(&f, &t));

    /* Three timelines unheard of: very stale, but silence is no
     * evidence: no fail open, unless the trust file says the unsafe
     * "unsafe-on-silence".  Three shown stopped (the lookup counts
     * them): fail open, unless "never". */
    v.ncps = 2;
    sk_client_fresh_eval(&f, &w5.trust, &v, FX_NOW);
    assert_int_equal(f.very_stale, 3);
    assert_int_equal(f.stopped, 0);
    assert_false(sk_client_fresh_fail_open(&f, &w5.trust));
    t = w5.trust;
    t.fail_open = SK_FAIL_OPEN_UNSAFE_SILENCE;
    assert_true(sk_client_fresh_fail_open(&f, &t));
    f.stopped = 3;
    assert_true(sk_client_fresh_fail_open(&f, &w5.trust));
    f.stopped = 2;
    assert_false(sk_client_fresh_fail_open(&f, &w5.trust));
    f.stopped = 3;
    t.fail_open = SK_FAIL_OPEN_NEVER;
    assert_false(sk_client_fresh_fail_open(&f, &t));
    v.ncps = 5;
    sk_client_fresh_eval(&f, &w5.trust, NULL, FX_NOW);
    assert_int_equal(f.very_stale, 5);
    sk_client_view_free(&v);
    fx_free(&w5);
}


static void
test_check_mirror(void **state)
{
    sk_client_mstate_t  st;
    sk_client_view_t    cached, a;
    sk_err_t            err;
    size_t              len;
    char               *text;

    (void) state;
    memset(&st, 0, sizeof(st));
    fx_view(&tw, &cached, NAME);
    sk_client_mstate_update(&st, &cached);
    assert_int_equal(st.ntl, 3);
    assert_int_equal(st.size[1], 2);
    assert_int_equal(st.ts[1], FX_NOW);

    /* Same again: fine. */
    fx_view(&tw, &a, NAME);
    tu_assert_ok(sk_client_fresh_check_mirror(&st, &a, &cached, &tw.trust,
        &err), &err);
    sk_client_view_free(&a);

    /* Ten minutes older (its answer cache): fine; two hours: dropped. */
    set_cp_ts(FX_NOW - 600);
    fx_view(&tw, &a, "b.example");
    tu_assert_ok(sk_client_fresh_check_mirror(&st, &a, NULL, &tw.trust,
        &err), &err);
    sk_client_view_free(&a);
    set_cp_ts(FX_NOW - 2 * HOUR);
    fx_view(&tw, &a, "b.example");
    tu_assert_err(sk_client_fresh_check_mirror(&st, &a, NULL, &tw.trust,
        &err), &err, SK_ERR_SIGNATURE, "less fresh than before: timeline 1 "
        "checkpoint of 1799992800, it gave one of 1800000000 earlier");
    sk_client_view_free(&a);
    set_cp_ts(FX_NOW);

    /* An entry the client holds left out: dropped. */
    text = fx_answer_omit(&tw, NAME, 2, 0, &len);
    tu_assert_ok(sk_client_answer_verify(&a, NULL, text, len, NAME, 0,
        tw.mirror, &tw.trust, FX_NOW, &err), &err);
    free(text);
    assert_int_equal(a.nitems, 1);
    tu_assert_err(sk_client_fresh_check_mirror(&st, &a, &cached, &tw.trust,
        &err), &err, SK_ERR_SIGNATURE, "omits timeline 2 SN 0");
    /* ... but it is no omission when the answer's checkpoint does not
     * cover it. */
    a.cps[1].cp.size = 0;
    tu_assert_ok(sk_client_fresh_check_mirror(NULL, &a, &cached, &tw.trust,
        &err), &err);
    sk_client_view_free(&a);
    sk_client_view_free(&cached);
    sk_client_mstate_free(&st);
}


/* The only mirror state file in the cache dir, replaced by text: its
 * reading must fail naming the file and want ("line 3: ..."). */
static void
mstate_bad(sk_client_cache_t *c, const char *dir, const char *url,
    const char *text, const char *want)
{
    sk_client_mstate_t  back;
    struct dirent      *d;
    sk_err_t            err;
    DIR                *dp;
    char                path[4096];
    FILE               *f;

    snprintf(path, sizeof(path), "%s/mirrors", dir);
    dp = opendir(path);
    assert_non_null(dp);
    while ((d = readdir(dp)) != NULL && d->d_name[0] == '.') {
    }
    assert_non_null(d);
    snprintf(path, sizeof(path), "%s/mirrors/%s", dir, d->d_name);
    closedir(dp);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    tu_assert_err(sk_client_cache_get_mirror(c, &back, url, &err), &err,
        SK_ERR_FORMAT, want);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(back.ntl, 0);
    assert_int_equal(back.dropped, 0);
    assert_string_equal(back.url, url);
}


/* A mirror state file is read strictly: what the old sscanf() took. */
static void
mstate_strict(sk_client_cache_t *c, const char *dir, const char *url)
{
    char  head[SK_CLIENT_URL_MAX + 64], text[SK_CLIENT_URL_MAX + 512];

    snprintf(head, sizeof(head), "SK-Client-Mirror: 1\nURL: %s\n", url);
#define BAD(lines, want)                                                    \
    snprintf(text, sizeof(text), "%s%s", head, lines);                     \
    mstate_bad(c, dir, url, text, want)

    BAD("Timeline: 7 99 -1\n", "line 3: \"Timeline timestamp\"");
    BAD("Timeline: -7 99 1\n", "line 3: \"Timeline TID\"");
    BAD("Timeline: 7 -1 1\n", "line 3: \"Timeline tree size\"");
    BAD("Timeline: 7 18446744073709551616 1\n",
        "line 3: \"Timeline tree size\"");
    BAD("Timeline: 7 1 9223372036854775808\n",
        "line 3: \"Timeline timestamp\": 9223372036854775808 is too large");
    BAD("Timeline: 7 1 1\nTimeline: 8 1 1\nTimeline: 7 2 2\n",
        "line 5: second Timeline line of TID 7");
    BAD("Timeline: 7  1 1\n", "line 3: \"Timeline tree size\"");
    BAD("Timeline: 7 1 1 \n", "line 3: \"Timeline\": more after");
    BAD("Timeline: 7 1\n", "line 3: \"Timeline\": nothing after");
    BAD("Timeline:  7 1 1\n", "line 3: \"Timeline TID\"");
    BAD("Dropped: a\nDropped: b\n", "line 4: second Dropped line");
    BAD("Reneged-Hash: e3b0c442\nReneged-Hash: e3b0c442\n",
        "line 4: second Reneged-Hash line");
    BAD("Reneged-Hash: e3b0c44\n", "line 3: \"Reneged-Hash\"");
    BAD("URL: http://other.test\n", "line 3: second URL line");
    BAD("Timeline: 7 1 1", "last line unterminated");
#undef BAD
    mstate_bad(c, dir, url, "SK-Client-Mirror: 1\nTimeline: 7 1 1\n",
        "no URL line");
    mstate_bad(c, dir, url, "SK-Client-Mirror: 2\n", "not a mirror state");
}


static void
test_cache(void **state)
{
    sk_client_cache_t   *c;
    sk_client_mstate_t   st, back;
    sk_client_view_t     v, got;
    sk_err_t             err;
    char                *dir = tu_tmpdir(), *sub, *path;
    struct stat          sb;
    FILE                *f;

    (void) state;
    sub = tu_path(dir, "cache");
    tu_assert_ok(sk_client_cache_open(&c, sub, &err), &err);
    assert_int_equal(stat(sub, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    tu_assert_err(sk_client_cache_get(c, &got, NAME, &tw.trust, FX_NOW, &err),
        &err, SK_ERR_NOT_FOUND, NAME);
    fx_view(&tw, &v, NAME);
    tu_assert_ok(sk_client_cache_put(c, &v, &err), &err);
    tu_assert_ok(sk_client_cache_get(c, &got, NAME, &tw.trust, FX_NOW, &err),
        &err);
    assert_int_equal(got.nitems, 2);
    sk_client_view_free(&got);

    /* A poisoned file is found, not trusted. */
    path = tu_path(sub, "names/" NAME);
    f = fopen(path, "r+");
    assert_non_null(f);
    assert_int_equal(fseek(f, -200, SEEK_END), 0);
    fputc('#', f);
    fclose(f);
    assert_int_equal(sk_client_cache_get(c, &got, NAME, &tw.trust, FX_NOW,
        &err), -1);
    assert_non_null(strstr(err.msg, path));
    tu_assert_ok(sk_client_cache_put(c, &v, &err), &err);
    sk_client_view_free(&v);

    memset(&st, 0, sizeof(st));
    snprintf(st.url, sizeof(st.url), "http://m0.test");
    tu_assert_ok(sk_client_cache_get_mirror(c, &back, st.url, &err), &err);
    assert_int_equal(back.ntl, 0);
    assert_int_equal(back.dropped, 0);
    st.dropped = 1;
    snprintf(st.why, sizeof(st.why), "omits an entry\nreally");
    st.ntl = 1;
    st.tid[0] = 7;
    st.size[0] = 99;
    st.ts[0] = FX_NOW;
    tu_assert_ok(sk_client_cache_put_mirror(c, &st, &err), &err);
    tu_assert_ok(sk_client_cache_get_mirror(c, &back, st.url, &err), &err);
    assert_int_equal(back.dropped, 1);
    assert_string_equal(back.why, "omits an entry really");
    assert_int_equal(back.ntl, 1);
    assert_int_equal(back.size[0], 99);
    assert_int_equal(back.ts[0], FX_NOW);
    sk_client_mstate_free(&back);
    /* A lookup that read the state before the drop writes later: the
     * drop stays, and each timeline keeps the freshest seen. */
    st.dropped = 0;
    st.ntl = 2;
    st.size[0] = 98;
    st.ts[0] = FX_NOW - 60;
    st.tid[1] = 8;
    st.size[1] = 5;
    st.ts[1] = FX_NOW - 5;
    tu_assert_ok(sk_client_cache_put_mirror(c, &st, &err), &err);
    tu_assert_ok(sk_client_cache_get_mirror(c, &back, st.url, &err), &err);
    assert_int_equal(back.dropped, 1);
    assert_string_equal(back.why, "omits an entry really");
    assert_int_equal(back.ntl, 2);
    assert_int_equal(back.size[0], 99);
    assert_int_equal(back.ts[0], FX_NOW);
    assert_int_equal(back.tid[1], 8);
    assert_int_equal(back.ts[1], FX_NOW - 5);
    st.ntl = 1;
    st.ts[0] = FX_NOW + 1;
    st.size[0] = 100;
    tu_assert_ok(sk_client_cache_put_mirror(c, &st, &err), &err);
    tu_assert_ok(sk_client_cache_get_mirror(c, &back, st.url, &err), &err);
    assert_int_equal(back.ntl, 2);
    assert_int_equal(back.size[0], 100);
    assert_int_equal(back.ts[0], FX_NOW + 1);
    sk_client_mstate_free(&back);
    mstate_strict(c, sub, st.url);

    sk_client_cache_close(c);
    free(path);
    free(sub);
    tu_rmtree(dir);
}


static sk_client_cache_t *
fresh_cache(char **dir)
{
    sk_client_cache_t  *c;
    sk_err_t            err;

    *dir = tu_tmpdir();
    tu_assert_ok(sk_client_cache_open(&c, *dir, &err), &err);
    return c;
}


static void
lookup(sk_client_result_t *r, sk_client_trust_t *t, sk_client_cache_t *c,
    mirrors_t *m, const char *name, int64_t now)
{
    sk_err_t  err;

    tu_assert_ok(sk_client_lookup(r, name, t, c, fetch, m, now, &err), &err);
}


/* A lookup whose outcome and count of timelines shown stopped are
 * known; its result is not kept. */
static void
outcome(sk_client_trust_t *t, sk_client_cache_t *c, mirrors_t *m,
    const char *name, int64_t now, sk_fresh_outcome_t want, size_t stopped)
{
    sk_client_result_t  r;

    lookup(&r, t, c, m, name, now);
    assert_int_equal(r.outcome, want);
    assert_int_equal(r.fresh.stopped, stopped);
    sk_client_result_free(&r);
}


static void
test_lookup_retry(void **state)
{
    sk_client_trust_t   t = tw.trust;
    sk_client_result_t  r;
    mirrors_t           m;

    (void) state;
    t.nmirrors = 0;
    mirrors(&m, &t, 4);
    m.mode[0] = M_DOWN;
    m.mode[1] = M_STALE;
    m.stale_ts = FX_NOW - STALE_AGE;
    m.mode[2] = M_503;
    m.mode[3] = M_FRESH;
    lookup(&r, &t, NULL, &m, NAME, FX_NOW);
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_string_equal(r.source, "http://m3.test");
    /* each query with a nonce of its own: 43 base64url characters */
    assert_int_equal(strlen(m.last_url), strlen("http://m3.test/query/"
        "example.com?nonce=") + SK_NONCE_TEXT);
    assert_memory_equal(m.last_url, "http://m3.test/query/example.com?"
        "nonce=", strlen("http://m3.test/query/example.com?nonce="));
    assert_int_equal(r.ntries, 4);
    assert_non_null(strstr(r.tries[0].what, "unreachable: connection "
        "refused"));
    assert_non_null(strstr(r.tries[1].what, "stale: 0 of 3"));
    assert_non_null(strstr(r.tries[2].what, "HTTP 503"));
    assert_non_null(strstr(r.tries[3].what, "fresh: 3 of 3"));
    assert_int_equal(r.view.nitems, 2);
    sk_client_result_free(&r);

    /* Only stale answers (hours old: not stopped): fail closed, with the
     * stale view as the best at hand. */
    m.mode[3] = M_STALE;
    lookup(&r, &t, NULL, &m, NAME, FX_NOW);
    assert_int_equal(r.outcome, SK_FRESH_CLOSED);
    assert_int_equal(r.view.nitems, 2);
    sk_client_result_free(&r);

    /* Nothing heard at all: silence is no evidence, fail closed (the
     * design's first reading failed open here: every timeline "very
     * stale").  Only the trust file's explicit, unsafe
     * "unsafe-on-silence" still does. */
    m.mode[1] = m.mode[3] = M_DOWN;
    outcome(&t, NULL, &m, NAME, FX_NOW, SK_FRESH_CLOSED, 0);
    t.fail_open = SK_FAIL_OPEN_UNSAFE_SILENCE;
    outcome(&t, NULL, &m, NAME, FX_NOW, SK_FRESH_OPEN, 0);
    t.fail_open = SK_FAIL_OPEN_EVIDENCE;

    /* N_RETRIES bounds the mirrors asked. */
    drop_mirrors(&t);
    mirrors(&m, &t, 8);
    for (size_t i = 0; i < 8; i++) {
        m.mode[i] = M_DOWN;
    }
    lookup(&r, &t, NULL, &m, NAME, FX_NOW);
    assert_int_equal(m.calls[4], 1);
    assert_int_equal(m.calls[5], 0);
    assert_int_equal(r.ntries, SK_CLIENT_N_RETRIES);
    sk_client_result_free(&r);
    drop_mirrors(&t);
}


static void
test_lookup_cache_and_drops(void **state)
{
    sk_client_trust_t   t = tw.trust;
    sk_client_result_t  r;
    sk_client_cache_t  *c;
    sk_record_t         rec;
    mirrors_t           m;
    sk_err_t            err;
    char               *dir;
    const char         *fv[] = { "Last-Secure-Timestamp", "1", NULL };

    (void) state;
    c = fresh_cache(&dir);
    t.nmirrors = 0;
    mirrors(&m, &t, 3);
    lookup(&r, &t, c, &m, NAME, FX_NOW);
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_int_equal(m.calls[0], 1);
    sk_client_result_free(&r);

    /* Within T1: the cache answers, no mirror is asked. */
    lookup(&r, &t, c, &m, NAME, FX_NOW + T1 / 2);
    assert_int_equal(r.outcome, SK_FRESH_CACHED);
    assert_string_equal(r.source, "cache");
    assert_int_equal(m.calls[0], 1);
    assert_int_equal(r.view.nitems, 2);
    sk_client_result_free(&r);

    /* Past T1: asked again; m0 now hides an entry the client holds and
     * is dropped for good; m1 answers. */
    m.mode[0] = M_OMIT;
    lookup(&r, &t, c, &m, NAME, FX_NOW + (T1 + T2) / 2);
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_string_equal(r.source, "http://m1.test");
    assert_non_null(strstr(r.tries[0].what, "dropped: omits timeline 2 SN "
        "0 for example.com"));
    sk_client_result_free(&r);
    m.mode[0] = M_FRESH;
    t.t1 = 0;
    lookup(&r, &t, c, &m, "b.example", FX_NOW + (T1 + T2) / 2);
    assert_non_null(strstr(r.tries[0].what, "skipped: dropped earlier: "
        "omits"));
    assert_int_equal(m.calls[0], 2);
    assert_string_equal(r.source, "http://m1.test");
    sk_client_result_free(&r);

    /* m1 answered with checkpoints of FX_NOW; an answer two hours older
     * for another name gets it dropped; m2 is asked. */
    m.mode[1] = M_STALE;
    m.stale_ts = FX_NOW - 2 * HOUR;
    lookup(&r, &t, c, &m, "c.example", FX_NOW + T1 / 2);
    assert_non_null(strstr(r.tries[1].what, "dropped: less fresh than "
        "before"));
    assert_string_equal(r.source, "http://m2.test");
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    sk_client_result_free(&r);

    /* A garbage answer: dropped too.  Then nobody is left, and the cache
     * (within T2) decides. */
    m.mode[2] = M_GARBAGE;
    lookup(&r, &t, c, &m, NAME, FX_NOW + T1 / 2);
    assert_non_null(strstr(r.tries[2].what, "dropped: answer"));
    assert_int_equal(r.outcome, SK_FRESH_CACHED);
    assert_int_equal(r.view.nitems, 2);
    sk_client_result_free(&r);
    /* Hours on, the cache is stale: fail closed, but the cached
     * entries still come back (an SK known is still enforced). */
    lookup(&r, &t, c, &m, NAME, FX_NOW + STALE_AGE);
    assert_int_equal(r.outcome, SK_FRESH_CLOSED);
    assert_int_equal(r.view.nitems, 2);
    sk_client_result_free(&r);
    sk_client_cache_close(c);
    tu_rmtree(dir);

    /* An Unbind reaches the client at its next query. */
    c = fresh_cache(&dir);
    mirrors(&m, &t, 1);
    lookup(&r, &t, c, &m, NAME, FX_NOW);
    tu_assert_ok(sk_client_view_record(&rec, &r.view, NULL, NULL, &err),
        &err);
    assert_int_equal(rec.state, SK_RECORD_BOUND);
    sk_record_free(&rec);
    sk_client_result_free(&r);
    fx_append(&tw, 2, fx_entry(SK_ENTRY_UNBIND, NAME, sk1, fv), FX_NOW - 10);
    lookup(&r, &t, c, &m, NAME, FX_NOW + 60);
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_int_equal(r.view.nitems, 3);
    tu_assert_ok(sk_client_view_record(&rec, &r.view, NULL, NULL, &err),
        &err);
    assert_int_equal(rec.state, SK_RECORD_UNBOUND);
    sk_record_free(&rec);
    sk_client_result_free(&r);
    sk_client_cache_close(c);
    tu_rmtree(dir);
    drop_mirrors(&t);
}


/* With the defaults, a client asks again once its view is 30 minutes
 * old (T1), and no view decides in full once it is 45 minutes old (T2):
 * an Unbind reaches every client that checks within the hour. */
static void
test_defaults_hour(void **state)
{
    sk_client_trust_t   t = tw.trust;
    sk_client_cache_t  *c;
    mirrors_t           m;
    char               *dir;

    (void) state;
    t.nmirrors = 0;
    mirrors(&m, &t, 1);
    c = fresh_cache(&dir);
    outcome(&t, c, &m, NAME, FX_NOW, SK_FRESH_ANSWER, 0);
    outcome(&t, c, &m, NAME, FX_NOW + 29 * 60, SK_FRESH_CACHED, 0);
    assert_int_equal(m.calls[0], 1);
    m.mode[0] = M_DOWN;
    outcome(&t, c, &m, NAME, FX_NOW + 31 * 60, SK_FRESH_CACHED, 0);
    assert_int_equal(m.calls[0], 2);
    outcome(&t, c, &m, NAME, FX_NOW + 46 * 60, SK_FRESH_CLOSED, 0);
    assert_int_equal(t.staple_max_age, 45 * 60);
    sk_client_cache_close(c);
    tu_rmtree(dir);
    drop_mirrors(&t);
}


/* Fail open only on evidence: a current answer, signed by a mirror
 * listed with a key, showing more than max_derelict timelines stopped
 * (checkpoint older than T4, or Defunct), none of them seen alive. */
static void
test_lookup_evidence(void **state)
{
    sk_client_trust_t   t = tw.trust;
    sk_client_result_t  r;
    sk_client_cache_t  *c;
    sk_client_view_t    v;
    mirrors_t           m;
    sk_err_t            err;
    char               *dir;

    (void) state;
    t.nmirrors = 0;
    mirrors(&m, &t, 1);
    m.mode[0] = M_STALE;
    m.stale_ts = FX_NOW - 20 * DAY;

    /* Made now, every checkpoint three weeks old: the system looks
     * broken, and says so under the mirror's signature. */
    lookup(&r, &t, NULL, &m, NAME, FX_NOW);
    assert_int_equal(r.outcome, SK_FRESH_OPEN);
    assert_int_equal(r.fresh.stopped, 3);
    assert_int_equal(r.view.ncps, 3);
    sk_client_result_free(&r);
    /* ... not with fail_open = never, nor with max_derelict 3. */
    t.fail_open = SK_FAIL_OPEN_NEVER;
    outcome(&t, NULL, &m, NAME, FX_NOW, SK_FRESH_CLOSED, 3);
    t.fail_open = SK_FAIL_OPEN_EVIDENCE;
    t.max_derelict = 3;
    outcome(&t, NULL, &m, NAME, FX_NOW, SK_FRESH_CLOSED, 3);
    t.max_derelict = tw.trust.max_derelict;

    /* The same answer three days later (T2 is less): a replay, history,
     * not what the mirror says now. */
    outcome(&t, NULL, &m, NAME, FX_NOW + 3 * DAY, SK_FRESH_CLOSED, 0);

    /* Defunct (no checkpoint served) counts as stopped too: two Defunct
     * and one old. */
    tw.tl[0].state = tw.tl[2].state = "Defunct";
    outcome(&t, NULL, &m, NAME, FX_NOW, SK_FRESH_OPEN, 3);
    tw.tl[0].state = tw.tl[2].state = "Idle";

    /* A checkpoint younger than T4 the cache holds (of another name)
     * shows timeline 2 alive: two stopped are not more than 2. */
    c = fresh_cache(&dir);
    set_cp_ts(FX_NOW - SK_CLIENT_T4 / 2);
    fx_view(&tw, &v, "b.example");
    set_cp_ts(FX_NOW);
    v.ncps = 2;
    tu_assert_ok(sk_client_cache_put(c, &v, &err), &err);
    v.ncps = 3;
    sk_client_view_free(&v);
    outcome(&t, c, &m, "b.example", FX_NOW, SK_FRESH_CLOSED, 1);
    /* ... and so does what a mirror answered before, for any name: m0
     * gave checkpoints of FX_NOW - 20 days, m1 now gives FX_NOW's. */
    sk_client_cache_close(c);
    tu_rmtree(dir);
    c = fresh_cache(&dir);
    drop_mirrors(&t);
    mirrors(&m, &t, 2);
    m.mode[0] = M_DOWN;
    outcome(&t, c, &m, "c.example", FX_NOW, SK_FRESH_ANSWER, 0);
    m.mode[0] = M_STALE;
    m.stale_ts = FX_NOW - 20 * DAY;
    m.mode[1] = M_DOWN;
    outcome(&t, c, &m, NAME, FX_NOW + T1 / 2, SK_FRESH_CLOSED, 0);
    sk_client_cache_close(c);
    tu_rmtree(dir);
    drop_mirrors(&t);
}


/* A Rebind counts only through the rebinder's own record, which the
 * client learns from the mirrors like any other name's. */
/* Issue 38: an answer not signed for the query's nonce (the mirror's
 * own answer to an earlier query replayed, one without the trailer, a
 * trailer by another key) is refused; the mirror is not dropped for it
 * (anyone on the path can send it), and the next mirror decides; with
 * none left, nothing is believed. */
static void
test_lookup_nonce(void **state)
{
    sk_client_trust_t   t = tw.trust;
    sk_client_result_t  r;
    sk_client_cache_t  *c;
    mirrors_t           m;
    char               *dir;

    (void) state;
    c = fresh_cache(&dir);
    t.nmirrors = 0;
    mirrors(&m, &t, 4);
    m.mode[0] = M_REPLAY;
    m.mode[1] = M_BARE;
    m.mode[2] = M_FORGED;
    lookup(&r, &t, c, &m, NAME, FX_NOW);
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_string_equal(r.source, "http://m3.test");
    assert_int_equal(r.ntries, 4);
    assert_non_null(strstr(r.tries[0].what, "refused: not an answer to this "
        "query (nonce: the answer is for nonce " OLD_NONCE ", not "));
    assert_non_null(strstr(r.tries[1].what, "refused: not an answer to this "
        "query (nonce: want a \"Nonce: \" line"));
    assert_non_null(strstr(r.tries[2].what, "refused: not an answer to this "
        "query (nonce: the mirror's Nonce-Signature does not verify"));
    sk_client_result_free(&r);

    /* None of them was dropped: asked again, the first answers. */
    t.t1 = 0;
    m.mode[0] = m.mode[1] = m.mode[2] = M_FRESH;
    lookup(&r, &t, c, &m, NAME, FX_NOW);
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_string_equal(r.source, "http://m0.test");
    assert_int_equal(m.calls[0], 2);
    sk_client_result_free(&r);
    sk_client_cache_close(c);
    tu_rmtree(dir);

    /* Replays only, and nothing cached: nothing is believed. */
    drop_mirrors(&t);
    mirrors(&m, &t, 4);
    m.mode[0] = M_REPLAY;
    m.mode[1] = M_BARE;
    m.mode[2] = M_FORGED;
    m.mode[3] = M_REPLAY;
    t.max_derelict = (unsigned) tw.ntl;
    lookup(&r, &t, NULL, &m, NAME, FX_NOW);
    assert_int_equal(r.outcome, SK_FRESH_CLOSED);
    assert_int_equal(r.view.ncps, 0);
    assert_int_equal(r.view.nitems, 0);
    sk_client_result_free(&r);
    drop_mirrors(&t);
}


/* A lookup with Tor: mirror i's onion is the address of timeline i's key
 * (fetch_tor); mirror 2 has none. */
static void
lookup_tor(sk_client_result_t *r, sk_client_trust_t *t, mirrors_t *m,
    int tor)
{
    sk_client_ctx_t  ctx;
    sk_err_t         err;

    memset(&ctx, 0, sizeof(ctx));
    ctx.trust = t;
    ctx.fetch = fetch;
    ctx.arg = m;
    ctx.now = FX_NOW;
    ctx.fetch_tor = tor ? fetch_tor : NULL;
    ctx.tor_arg = m;
    tu_assert_ok(sk_client_lookup_ctx(r, NAME, &ctx, &err), &err);
}


/* Issue 38: the mirror path censorship cannot simply cut.  Its onion is
 * asked when the direct query brings nothing signed for its nonce (no
 * answer, an HTTP error, a replay), and the nonce holds there too; an
 * answer the mirror signed ends it; mirror_tor = always asks over Tor
 * only, never only directly. */
static void
test_lookup_tor(void **state)
{
    sk_client_trust_t   t = tw.trust;
    sk_client_result_t  r;
    mirrors_t           m;
    char                onion[2][SK_ONION_ADDR_LEN + 1], url[128];
    sk_err_t            err;
    size_t              i, c0, t0;

    (void) state;
    t.nmirrors = 0;
    t.max_derelict = (unsigned) tw.ntl;
    mirrors(&m, &t, 3);
    for (i = 0; i < 2; i++) {
        tu_assert_ok(sk_onion_address_from_key(onion[i], tw.tl[i].key,
            &err), &err);
        tu_assert_ok(sk_client_trust_set_onion(&t, t.mirrors[i].url,
            onion[i], &err), &err);
    }
    snprintf(url, sizeof(url), "http://%s", onion[0]);

    /* Blocked: the onion answers. */
    m.mode[0] = M_DOWN;
    lookup_tor(&r, &t, &m, 1);
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_string_equal(r.source, url);
    assert_int_equal(m.tcalls[0], 1);
    assert_non_null(strstr(r.tries[0].what, "unreachable"));
    assert_string_equal(r.tries[1].url, url);
    assert_non_null(strstr(r.tries[1].what, "fresh: "));
    assert_non_null(strstr(m.last_url, "?nonce="));
    sk_client_result_free(&r);

    /* A replay on the direct path: the onion. */
    m.mode[0] = M_REPLAY;
    lookup_tor(&r, &t, &m, 1);
    assert_string_equal(r.source, url);
    assert_int_equal(m.tcalls[0], 2);
    sk_client_result_free(&r);

    /* A replay on the onion path too: the next mirror. */
    m.tmode[0] = M_REPLAY;
    lookup_tor(&r, &t, &m, 1);
    assert_string_equal(r.source, "http://m1.test");
    assert_non_null(strstr(r.tries[1].what, "an answer replayed"));
    assert_int_equal(m.tcalls[1], 0);
    sk_client_result_free(&r);

    /* The direct answer signed: no Tor, even when it is bad (m0 dropped,
     * m1 answers). */
    m.tmode[0] = M_FRESH;
    m.mode[0] = M_GARBAGE;
    t0 = m.tcalls[0];
    lookup_tor(&r, &t, &m, 1);
    assert_non_null(strstr(r.tries[0].what, "dropped: answer"));
    assert_string_equal(r.source, "http://m1.test");
    assert_int_equal(m.tcalls[0], t0);
    sk_client_result_free(&r);

    /* No Tor fetch given: said so, the next mirror. */
    m.mode[0] = M_DOWN;
    lookup_tor(&r, &t, &m, 0);
    assert_string_equal(r.tries[1].url, url);
    assert_non_null(strstr(r.tries[1].what, "not asked: no way to Tor"));
    assert_string_equal(r.source, "http://m1.test");
    sk_client_result_free(&r);

    /* never: only directly. */
    t.mirror_tor = SK_MIRROR_TOR_NEVER;
    t0 = m.tcalls[0];
    lookup_tor(&r, &t, &m, 1);
    assert_string_equal(r.source, "http://m1.test");
    assert_int_equal(m.tcalls[0], t0);
    sk_client_result_free(&r);

    /* always: only over Tor; a mirror without an onion through Tor by
     * its URL. */
    t.mirror_tor = SK_MIRROR_TOR_ALWAYS;
    m.mode[0] = M_FRESH;
    m.tmode[0] = M_DOWN;
    m.tmode[1] = M_DOWN;
    c0 = m.calls[0] + m.calls[1] + m.calls[2];
    lookup_tor(&r, &t, &m, 1);
    assert_string_equal(r.source, "http://m2.test");
    assert_string_equal(r.tries[0].url, url);
    assert_int_equal(m.tcalls[2], 1);
    assert_int_equal(m.calls[0] + m.calls[1] + m.calls[2], c0);
    sk_client_result_free(&r);
    drop_mirrors(&t);
}


static void
test_rebind(void **state)
{
    const char  *bfv[] = {
        "CA-Cert-Chain", TU_DOC_CERT_ROOT, "Includes-Subdomains", "0",
        "Rebinder-Names", "heir.example", "Services", "https", NULL
    };
    const char  *rfv[] = {
        "CA-Cert-Chain", TU_DOC_CERT_ROOT, "Includes-Subdomains", "0",
        "Rebinder-Name", "heir.example", "Rebinder-Names", "none",
        "Services", "https", NULL
    };
    const char  *ufv[] = { "Last-Secure-Timestamp", "1", NULL };
    sk_client_trust_t   t = tw.trust;
    sk_client_result_t  r;
    sk_client_ctx_t     ctx;
    sk_record_t         rec;
    sk_key_t           *old = fx_key(), *heir = fx_key(), *fresh = fx_key();
    sk_entry_t         *e;
    mirrors_t           m;
    sk_err_t            err;
    char                a[SK_FINGERPRINT_SIZE], b[SK_FINGERPRINT_SIZE];

    (void) state;
    mirrors(&m, &t, 1);
    fx_append(&tw, 0, fx_entry(SK_ENTRY_BIND, "old.example", old, bfv),
        FX_NOW - 500);
    fx_append(&tw, 1, fx_bind("heir.example", heir, "all", 0),
        FX_NOW - 490);
    fx_append(&tw, 0, fx_entry(SK_ENTRY_UNBIND, "old.example", old, ufv),
        FX_NOW - 480);
    e = fx_entry(SK_ENTRY_REBIND, "old.example", fresh, rfv);
    tu_assert_ok(sk_entry_sign(e, SK_SIG_REBINDER, heir, &err), &err);
    fx_append(&tw, 2, e, FX_NOW - 470);

    lookup(&r, &t, NULL, &m, "old.example", FX_NOW);
    assert_int_equal(r.view.nitems, 3);
    tu_assert_ok(sk_client_view_record(&rec, &r.view, NULL, NULL, &err),
        &err);
    assert_int_equal(rec.state, SK_RECORD_UNBOUND);
    sk_record_free(&rec);

    ctx = (sk_client_ctx_t) { &t, NULL, fetch, &m, FX_NOW, 0, NULL, NULL,
        NULL };
    tu_assert_ok(sk_client_view_record(&rec, &r.view, sk_client_rebinder_key,
        &ctx, &err), &err);
    assert_int_equal(rec.state, SK_RECORD_BOUND);
    sk_key_fingerprint(a, rec.key);
    sk_key_fingerprint(b, fresh);
    assert_string_equal(a, b);
    assert_non_null(strstr(m.last_url, "http://m0.test/query/heir.example?"
        "nonce="));
    sk_record_free(&rec);

    /* Too deep a chain of rebinders is no rebinder. */
    ctx.depth = SK_CLIENT_REBIND_DEPTH;
    tu_assert_ok(sk_client_view_record(&rec, &r.view, sk_client_rebinder_key,
        &ctx, &err), &err);
    assert_int_equal(rec.state, SK_RECORD_UNBOUND);
    assert_int_equal(rec.skipped, 1);
    sk_record_free(&rec);

    /* The rebinder known only from a view not fresh enough (it binds the
     * heir's SK, hours old): which SK is in force for it now is not
     * known, so the name is neither rebound nor unbound. */
    m.mode[0] = M_STALE;
    m.stale_ts = FX_NOW - STALE_AGE;
    ctx.depth = 0;
    assert_int_equal(sk_client_view_record(&rec, &r.view,
        sk_client_rebinder_key, &ctx, &err), -1);
    assert_int_equal(err.code, SK_ERR_UNAVAILABLE);
    assert_non_null(strstr(err.msg, "heir.example: rebinder of a Rebind: "
        "no mirror gave a fresh enough answer"));
    m.mode[0] = M_FRESH;
    sk_client_result_free(&r);
    drop_mirrors(&t);
    sk_key_free(old);
    sk_key_free(heir);
    sk_key_free(fresh);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval),
        cmocka_unit_test(test_check_mirror),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_lookup_retry),
        cmocka_unit_test(test_lookup_cache_and_drops),
        cmocka_unit_test(test_lookup_evidence),
        cmocka_unit_test(test_defaults_hour),
        cmocka_unit_test(test_lookup_nonce),
        cmocka_unit_test(test_lookup_tor),
        cmocka_unit_test(test_rebind),
    };

    return cmocka_run_group_tests(tests, setup, fx_teardown);
}
