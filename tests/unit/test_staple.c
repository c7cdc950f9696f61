/*
 * test_staple.c -- the stapled proof (sk/staple.h): the strict parse and
 * each of its rejections, formatting and joining, the certificate form,
 * a client's check of a staple (trusted mirror, signature, name,
 * freshness), and the lookup deciding from a staple with no mirror
 * asked, or refusing it (stale, replayed before an entry the client
 * holds) and asking the mirrors; and a server's side: fetched from a
 * mirror into the cache, shared through it, kept while the mirrors are
 * down until too old, a poisoned cache refused.
 */
#include "test_client_fixture.h"

#include <sk/staple_serve.h>

#define NAME  "example.com"
#define HOUR  3600


/* The staple of answers for names (NULL-terminated), all signed by the
 * world's mirror. */
static unsigned char *
staple_of(const char *const *names, size_t *len)
{
    sk_staple_answer_t  a[SK_STAPLE_MAX_ANSWERS];
    unsigned char      *out;
    char               *bufs[SK_STAPLE_MAX_ANSWERS];
    sk_err_t            err;
    size_t              n, i;

    for (n = 0; names[n] != NULL; n++) {
        snprintf(a[n].name, sizeof(a[n].name), "%s", names[n]);
        sk_key_fingerprint(a[n].mirror, tw.mirror);
        bufs[n] = fx_answer(&tw, names[n], &a[n].len);
        a[n].answer = bufs[n];
    }
    tu_assert_ok(sk_staple_format(&out, len, a, n, &err), &err);
    for (i = 0; i < n; i++) {
        free(bufs[i]);
    }
    return out;
}


static unsigned char *
staple1(size_t *len)
{
    const char  *names[] = { NAME, NULL };

    return staple_of(names, len);
}


static int
setup(void **state)
{
    sk_err_t  err;

    (void) state;
    fx_init(&tw, 3);
    sk1 = fx_key();
    fx_append(&tw, 0, fx_bind(NAME, sk1, "https", 0), FX_NOW - 800);
    fx_append(&tw, 1, fx_bind(NAME, sk1, "https", 0), FX_NOW - 700);
    tu_assert_ok(sk_client_trust_add_mirror(&tw.trust, "http://m0.test",
        tw.mirror, &err), &err);
    return 0;
}


static void
expect_parse_error(const char *text, const char *msg)
{
    sk_staple_t  s;
    sk_err_t     err;

    assert_int_equal(sk_staple_parse(&s, (const unsigned char *) text,
        strlen(text), &err), -1);
    assert_int_equal(err.code, SK_ERR_FORMAT);
    if (strstr(err.msg, msg) == NULL) {
        fail_msg("\"%s\" does not contain \"%s\"", err.msg, msg);
    }
    assert_null(s.buf);
}


static void
test_parse(void **state)
{
    const char  *names[] = { NAME, "b.example", NULL };
    unsigned char *buf;
    sk_staple_t  s;
    sk_err_t     err;
    char         fpr[SK_FINGERPRINT_SIZE], *text;
    size_t       len;

    (void) state;
    buf = staple_of(names, &len);
    tu_assert_ok(sk_staple_parse(&s, buf, len, &err), &err);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.a[0].name, NAME);
    assert_string_equal(s.a[1].name, "b.example");
    sk_key_fingerprint(fpr, tw.mirror);
    assert_string_equal(s.a[0].mirror, fpr);
    assert_memory_equal(s.a[0].answer, "SK-Mirror-Answer: 1\nName: "
        "example.com\n", 38);
    sk_staple_free(&s);

    /* Every byte is accounted for: a cut or an extra byte is refused. */
    assert_int_equal(sk_staple_parse(&s, buf, len - 1, &err), -1);
    assert_non_null(strstr(err.msg, "run past the end"));
    text = malloc(len + 1);
    memcpy(text, buf, len);
    text[len] = '\n';
    assert_int_equal(sk_staple_parse(&s, (unsigned char *) text, len + 1,
        &err), -1);
    assert_non_null(strstr(err.msg, "1 bytes after the last answer"));
    free(text);
    free(buf);

    expect_parse_error("", "does not start with \"SK-Staple: 1\"");
    expect_parse_error("SK-Staple: 2\n", "does not start");
    expect_parse_error("SK-Staple: 1\nAnswers: 0\n", "1 to 8");
    expect_parse_error("SK-Staple: 1\nAnswers: 9\n", "1 to 8");
    expect_parse_error("SK-Staple: 1\nAnswers: 01\n", "1 to 8");
    expect_parse_error("SK-Staple: 1\nAnswers: 1\nAnswer: Example.com "
        "sha256:00 1\nx", "answer 1");
    expect_parse_error("SK-Staple: 1\nAnswers: 1\nAnswer: example.com "
        "sha256:00 1\nx", "mirror is not");
    snprintf(fpr, sizeof(fpr), "sha256:%064d", 0);
    text = malloc(1024);
    snprintf(text, 1024, "SK-Staple: 1\nAnswers: 1\nAnswer: example.com %s "
        "x\n", fpr);
    expect_parse_error(text, "bad length");
    snprintf(text, 1024, "SK-Staple: 1\nAnswers: 1\nAnswer: example.com %s "
        "38\nSK-Mirror-Answer: 1\nName: example.net\n", fpr);
    expect_parse_error(text, "not an SK-Mirror-Answer for example.com");
    snprintf(text, 1024, "SK-Staple: 1\nAnswers: 2\nAnswer: example.com %s "
        "38\nSK-Mirror-Answer: 1\nName: example.com\nAnswer: example.com %s "
        "38\nSK-Mirror-Answer: 1\nName: example.com\n", fpr, fpr);
    expect_parse_error(text, "a second answer for example.com");
    free(text);

    /* More than one TLS extension holds. */
    text = calloc(1, SK_STAPLE_MAX + 1);
    assert_int_equal(sk_staple_parse(&s, (unsigned char *) text,
        SK_STAPLE_MAX + 1, &err), -1);
    assert_non_null(strstr(err.msg, "at most 65535"));
    free(text);
}


static void
test_join(void **state)
{
    const char     *n1[] = { NAME, NULL }, *n2[] = { "b.example", NULL };
    const char     *both[] = { NAME, "b.example", NULL };
    unsigned char  *b1, *b2, *bb, *j;
    size_t          l1, l2, lb, lj;
    sk_staple_t     s1, s2;
    const sk_staple_t *parts[2] = { &s1, &s2 };
    sk_err_t        err;

    (void) state;
    b1 = staple_of(n1, &l1);
    b2 = staple_of(n2, &l2);
    bb = staple_of(both, &lb);
    tu_assert_ok(sk_staple_parse(&s1, b1, l1, &err), &err);
    tu_assert_ok(sk_staple_parse(&s2, b2, l2, &err), &err);
    tu_assert_ok(sk_staple_join(&j, &lj, parts, 2, &err), &err);
    assert_int_equal(lj, lb);
    assert_memory_equal(j, bb, lb);
    free(j);
    assert_int_equal(sk_staple_join(&j, &lj, parts, 0, &err), -1);
    sk_staple_free(&s1);
    sk_staple_free(&s2);
    free(b1);
    free(b2);
    free(bb);
}


static void
test_wrap(void **state)
{
    unsigned char   *buf, *back, *der1 = NULL, *der2 = NULL;
    size_t           len, blen;
    int              n1, n2;
    X509            *x, *y;
    STACK_OF(X509)  *chain;
    sk_carrier_t    *c;
    sk_err_t         err;

    (void) state;
    buf = staple1(&len);
    tu_assert_ok(sk_staple_wrap(&x, buf, len, FX_NOW, FX_NOW + HOUR, &err),
        &err);
    tu_assert_ok(sk_staple_unwrap(&back, &blen, x, &err), &err);
    assert_int_equal(blen, len);
    assert_memory_equal(back, buf, len);
    free(back);

    /* The same staple, the same certificate, byte for byte. */
    tu_assert_ok(sk_staple_wrap(&y, buf, len, FX_NOW, FX_NOW + HOUR, &err),
        &err);
    n1 = i2d_X509(x, &der1);
    n2 = i2d_X509(y, &der2);
    assert_true(n1 > (int) len);
    assert_int_equal(n1, n2);
    assert_memory_equal(der1, der2, (size_t) n1);
    OPENSSL_free(der1);
    OPENSSL_free(der2);
    X509_free(y);

    /* Not a carrier; garbage is not wrapped. */
    assert_int_equal(sk_carrier_from_x509(&c, x, &err), -1);
    assert_int_equal(err.code, SK_ERR_NO_EXTENSION);
    assert_int_equal(sk_staple_wrap(&y, (unsigned char *) "SK", 2, FX_NOW,
        FX_NOW, &err), -1);
    assert_int_equal(sk_staple_wrap(&y, buf, len, FX_NOW, FX_NOW - 1, &err),
        -1);

    /* In a chain: found after certificates without it. */
    chain = sk_X509_new_null();
    assert_int_equal(sk_staple_find(&back, &blen, chain, &err), -1);
    assert_int_equal(err.code, SK_ERR_NOT_FOUND);
    X509_up_ref(x);
    sk_X509_push(chain, x);
    tu_assert_ok(sk_staple_wrap(&y, buf, len, FX_NOW, FX_NOW + HOUR, &err),
        &err);
    sk_X509_unshift(chain, y);          /* a staple first: found first */
    tu_assert_ok(sk_staple_find(&back, &blen, chain, &err), &err);
    assert_int_equal(blen, len);
    free(back);
    sk_X509_pop_free(chain, X509_free);
    X509_free(x);
    free(buf);
}


static void
test_view(void **state)
{
    sk_client_trust_t          t = tw.trust;
    const sk_client_mirror_t  *m;
    sk_client_view_t           v;
    const char                *other[] = { "b.example", NULL };
    unsigned char             *buf;
    sk_staple_t                s;
    sk_err_t                   err;
    sk_key_t                  *stranger;
    size_t                     len, i;

    (void) state;
    buf = staple1(&len);
    tu_assert_ok(sk_staple_parse(&s, buf, len, &err), &err);
    tu_assert_ok(sk_client_staple_view(&v, &m, &s, NAME, &t, FX_NOW + 60,
        &err), &err);
    assert_string_equal(m->url, "http://m0.test");
    assert_int_equal(v.nitems, 2);
    sk_client_view_free(&v);

    /* Another name. */
    assert_int_equal(sk_client_staple_view(&v, &m, &s, "c.example", &t,
        FX_NOW, &err), -1);
    assert_int_equal(err.code, SK_ERR_NOT_FOUND);
    assert_string_equal(err.msg, "no answer for c.example");

    /* Stale: its oldest checkpoint as old as staple_max_age. */
    assert_int_equal(sk_client_staple_view(&v, &m, &s, NAME, &t,
        FX_NOW + t.staple_max_age, &err), -1);
    assert_int_equal(err.code, SK_ERR_EXPIRED);
    assert_non_null(strstr(err.msg, "stale: its oldest checkpoint is 2700 "
        "s old (staple_max_age 2700)"));
    t.staple_max_age = 30;
    assert_int_equal(sk_client_staple_view(&v, &m, &s, NAME, &t, FX_NOW + 30,
        &err), -1);
    assert_int_equal(err.code, SK_ERR_EXPIRED);
    t.staple_max_age = tw.trust.staple_max_age;

    /* A mirror the client does not list, or lists without a key. */
    t.mirrors[0].key = NULL;
    assert_int_equal(sk_client_staple_view(&v, &m, &s, NAME, &t, FX_NOW,
        &err), -1);
    assert_int_equal(err.code, SK_ERR_SIGNATURE);
    assert_non_null(strstr(err.msg, "no answer for example.com from a "
        "trusted mirror (one signed by sha256:"));
    stranger = fx_key();
    t.mirrors[0].key = stranger;
    assert_int_equal(sk_client_staple_view(&v, &m, &s, NAME, &t, FX_NOW,
        &err), -1);
    assert_int_equal(err.code, SK_ERR_SIGNATURE);
    sk_key_free(stranger);
    t.mirrors[0].key = tw.trust.mirrors[0].key;
    sk_staple_free(&s);

    /* A tampered byte anywhere in the answer breaks its signature, or its
     * layout: refused either way. */
    for (i = 100; i < len; i += 97) {
        buf[i] ^= 0x01;
        if (sk_staple_parse(&s, buf, len, &err) == 0) {
            assert_int_equal(sk_client_staple_view(&v, &m, &s, NAME, &t,
                FX_NOW, &err), -1);
            sk_staple_free(&s);
        }
        buf[i] ^= 0x01;
    }
    free(buf);

    /* A staple for another name says nothing of this one. */
    buf = staple_of(other, &len);
    tu_assert_ok(sk_staple_parse(&s, buf, len, &err), &err);
    assert_int_equal(sk_client_staple_view(&v, &m, &s, NAME, &t, FX_NOW,
        &err), -1);
    assert_int_equal(err.code, SK_ERR_NOT_FOUND);
    sk_staple_free(&s);
    free(buf);
}


static int
no_fetch(char **body, size_t *len, int *status, const char *url, void *arg,
    sk_err_t *err)
{
    size_t  *calls = arg;

    (*calls)++;
    *status = 200;
    *body = fx_reply(&tw, url, len);
    return err != NULL ? 0 : 0;
}


static void
test_lookup(void **state)
{
    sk_client_ctx_t     ctx;
    sk_client_trust_t   t0 = tw.trust;
    sk_client_result_t  r;
    sk_client_cache_t  *c;
    sk_staple_answer_t  a;
    unsigned char      *buf, *old;
    sk_staple_t         s, so;
    sk_err_t            err;
    size_t              len, olen, calls = 0, i;
    char               *dir, *omit;
    const char         *fv[] = { "Last-Secure-Timestamp", "1", NULL };

    (void) state;
    dir = tu_tmpdir();
    tu_assert_ok(sk_client_cache_open(&c, dir, &err), &err);
    buf = staple1(&len);
    tu_assert_ok(sk_staple_parse(&s, buf, len, &err), &err);
    memset(&ctx, 0, sizeof(ctx));
    ctx.trust = &tw.trust;
    ctx.cache = c;
    ctx.fetch = no_fetch;
    ctx.arg = &calls;
    ctx.now = FX_NOW + 60;
    ctx.staple = &s;

    /* A fresh staple decides: no mirror asked; the view is cached. */
    tu_assert_ok(sk_client_lookup_ctx(&r, NAME, &ctx, &err), &err);
    assert_int_equal(r.outcome, SK_FRESH_STAPLE);
    assert_string_equal(r.source, "http://m0.test");
    assert_int_equal(calls, 0);
    assert_int_equal(r.view.nitems, 2);
    assert_string_equal(r.tries[0].url, "staple");
    assert_non_null(strstr(r.tries[0].what, "fresh: answer of "
        "http://m0.test, oldest checkpoint 60 s old"));
    sk_client_result_free(&r);
    ctx.staple = NULL;
    tu_assert_ok(sk_client_lookup_ctx(&r, NAME, &ctx, &err), &err);
    assert_int_equal(r.outcome, SK_FRESH_CACHED);
    assert_int_equal(calls, 0);
    sk_client_result_free(&r);

    /* Stale (and the cache past T1): refused with the reason, the mirror
     * asked, which answers with checkpoints of now. */
    ctx.staple = &s;
    ctx.now = FX_NOW + SK_STAPLE_MAX_AGE + 60;
    for (i = 0; i < tw.ntl; i++) {
        tw.tl[i].cp_ts = ctx.now - 60;
    }
    tu_assert_ok(sk_client_lookup_ctx(&r, NAME, &ctx, &err), &err);
    for (i = 0; i < tw.ntl; i++) {
        tw.tl[i].cp_ts = FX_NOW;
    }
    assert_int_equal(calls, 1);
    assert_non_null(strstr(r.tries[0].what, "refused: answer of "
        "http://m0.test: stale"));
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    sk_client_result_free(&r);

    /* An answer that hides an entry its own checkpoint covers (timeline
     * 2's Bind), stapled for a client that holds it. */
    omit = fx_answer_omit(&tw, NAME, 2, 0, &a.len);
    snprintf(a.name, sizeof(a.name), NAME);
    sk_key_fingerprint(a.mirror, tw.mirror);
    a.answer = omit;
    tu_assert_ok(sk_staple_format(&old, &olen, &a, 1, &err), &err);
    tu_assert_ok(sk_staple_parse(&so, old, olen, &err), &err);
    ctx.staple = &so;
    ctx.now = FX_NOW + 60;
    t0.t1 = 0;                          /* the cache alone never decides */
    ctx.trust = &t0;
    tu_assert_ok(sk_client_lookup_ctx(&r, NAME, &ctx, &err), &err);
    assert_non_null(strstr(r.tries[0].what, "refused: answer of "
        "http://m0.test omits timeline 2 SN 0 for example.com, which the "
        "client holds"));
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_int_equal(calls, 2);
    sk_client_result_free(&r);
    sk_staple_free(&so);
    free(old);
    free(omit);

    /* A replay of an answer from before an entry the client holds: a
     * staple made before the Unbind below, once the client has seen it. */
    old = staple1(&olen);
    tu_assert_ok(sk_staple_parse(&so, old, olen, &err), &err);
    fx_append(&tw, 0, fx_entry(SK_ENTRY_UNBIND, NAME, sk1, fv), FX_NOW - 10);
    ctx.staple = NULL;
    tu_assert_ok(sk_client_lookup_ctx(&r, NAME, &ctx, &err), &err);
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_int_equal(r.view.nitems, 3);
    sk_client_result_free(&r);
    ctx.staple = &so;
    tu_assert_ok(sk_client_lookup_ctx(&r, NAME, &ctx, &err), &err);
    assert_non_null(strstr(r.tries[0].what, "refused: answer of "
        "http://m0.test is older than what the client holds: timeline 1 "
        "tree of 1 entries, the cache has 2"));
    assert_int_equal(r.outcome, SK_FRESH_ANSWER);
    assert_int_equal(calls, 4);
    sk_client_result_free(&r);
    ctx.trust = &tw.trust;
    sk_staple_free(&so);
    free(old);
    sk_staple_free(&s);
    free(buf);
    sk_client_cache_close(c);
    tu_rmtree(dir);
}


/* A mirror for the server: answers (fresh, dated *ts), or is down. */
typedef struct {
    int      down;
    int64_t  ts;
    size_t   calls;
} smirror_t;

static int
serve_fetch(char **body, size_t *len, int *status, const char *url,
    void *arg, sk_err_t *err)
{
    smirror_t  *m = arg;
    size_t      i;

    m->calls++;
    if (m->down) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "connection refused");
    }
    assert_non_null(strstr(url, "http://m0.test/query/"));
    for (i = 0; i < tw.ntl; i++) {
        tw.tl[i].cp_ts = m->ts;
    }
    *status = 200;
    *body = fx_answer(&tw, url + strlen("http://m0.test/query/"), len);
    for (i = 0; i < tw.ntl; i++) {
        tw.tl[i].cp_ts = FX_NOW;
    }
    return 0;
}


static void
test_serve(void **state)
{
    const char        *names[] = { NAME, "b.example" };
    sk_staple_set_t    a, b;
    sk_client_trust_t  t = tw.trust;
    sk_cache_t        *c;
    sk_staple_t        s;
    smirror_t          m = { 0, FX_NOW, 0 };
    sk_err_t           err;
    char              *dir, *path;
    int64_t            now = FX_NOW + 10;

    (void) state;
    t.staple_refresh = 100;
    t.staple_retry = 7;
    t.staple_max_age = 1000;
    dir = tu_tmpdir();
    tu_assert_ok(sk_cache_open(&c, dir, 0, &err), &err);
    tu_assert_ok(sk_staple_set_init(&a, names, 2, &err), &err);
    assert_int_equal(sk_staple_set_init(&b, names, 0, &err), -1);
    assert_int_equal(sk_staple_set_init(&b, (const char *[]) { NAME, NAME },
        2, &err), -1);

    /* From the mirror, into the cache: both names, joined. */
    assert_int_equal(sk_staple_set_refresh(&a, &t, c, serve_fetch, &m, now,
        &err), 1);
    assert_int_equal(m.calls, 2);
    assert_non_null(a.buf);
    assert_int_equal(a.oldest, FX_NOW);
    assert_int_equal(a.next, FX_NOW + 100);
    assert_string_equal(a.names[0].why, "from mirror http://m0.test: 10 s "
        "old");
    tu_assert_ok(sk_staple_parse(&s, a.buf, a.len, &err), &err);
    assert_int_equal(s.n, 2);
    sk_staple_free(&s);
    path = tu_path(dir, "proof/example.com");
    assert_int_equal(access(path, R_OK), 0);
    free(path);

    /* Not due: nothing asked, nothing changed. */
    assert_int_equal(sk_staple_set_refresh(&a, &t, c, serve_fetch, &m,
        now + 50, &err), 0);
    assert_int_equal(m.calls, 2);

    /* Another server shares the fetch through the cache. */
    tu_assert_ok(sk_staple_set_init(&b, names, 2, &err), &err);
    assert_int_equal(sk_staple_set_refresh(&b, &t, c, NULL, NULL, now + 50,
        &err), 1);
    assert_int_equal(b.len, a.len);
    assert_memory_equal(b.buf, a.buf, a.len);
    assert_string_equal(b.names[1].why, "from the cache: answer of "
        "http://m0.test, 60 s old");

    /* Due, the mirror down: kept until staple_max_age, retried sooner. */
    m.down = 1;
    assert_int_equal(sk_staple_set_refresh(&a, &t, c, serve_fetch, &m,
        FX_NOW + 500, &err), 0);
    assert_int_equal(a.names[0].failed, 1);
    assert_int_equal(a.names[0].cause, SK_STAPLE_MIRROR_DOWN);
    assert_string_equal(sk_staple_cause_name(a.names[0].cause),
        "mirror_down");
    assert_non_null(strstr(a.names[0].why, "kept the answer of "
        "http://m0.test, 500 s old, 500 s before staple_max_age: mirror "
        "http://m0.test: unreachable: connection refused"));
    assert_int_equal(a.next, FX_NOW + 507);
    /* The mirror answers, but its timelines' checkpoints stand still (a
     * timeline down): the cause is the timeline, not the mirror. */
    m.down = 0;
    assert_int_equal(sk_staple_set_refresh(&a, &t, c, serve_fetch, &m,
        FX_NOW + 507, &err), 0);
    assert_int_equal(a.names[0].cause, SK_STAPLE_TIMELINE_STALE);
    /* The trust file names a timeline the answers lack (Defunct or
     * reneged, no longer carried): that is the cause. */
    {
        sk_client_trust_t  t9 = t;

        t9.tl[t9.ntl] = t9.tl[0];
        t9.tl[t9.ntl++].tid = 9;
        m.ts = FX_NOW + 400;
        assert_int_equal(sk_staple_set_refresh(&a, &t9, c, serve_fetch, &m,
            FX_NOW + 514, &err), 0);
        assert_int_equal(a.names[0].cause, SK_STAPLE_TIMELINE_MISSING);
        assert_non_null(strstr(a.names[0].why, "no checkpoint of timeline "
            "9"));
        m.ts = FX_NOW;
    }
    m.down = 1;
    assert_int_equal(sk_staple_set_refresh(&a, &t, c, serve_fetch, &m,
        FX_NOW + 521, &err), 0);
    assert_int_equal(a.next, FX_NOW + 528);
    assert_non_null(a.buf);
    assert_int_equal(sk_staple_set_refresh(&a, &t, c, serve_fetch, &m,
        FX_NOW + 999, &err), 0);
    assert_int_equal(a.next, FX_NOW + 1000);     /* when it must go */
    assert_int_equal(sk_staple_set_refresh(&a, &t, c, serve_fetch, &m,
        FX_NOW + 1000, &err), 1);
    assert_null(a.buf);
    assert_non_null(strstr(a.names[1].why, "dropped the answer of "
        "http://m0.test: 1000 s old, beyond staple_max_age (1000 s)"));

    /* The mirror back: a fresh answer again. */
    m.down = 0;
    m.ts = FX_NOW + 990;
    assert_int_equal(sk_staple_set_refresh(&a, &t, c, serve_fetch, &m,
        FX_NOW + 1001, &err), 1);
    assert_non_null(a.buf);
    assert_int_equal(a.names[0].failed, 0);
    assert_int_equal(a.names[0].cause, SK_STAPLE_RENEWED);

    /* A poisoned cache (another name's answer under this key, or
     * garbage) is refused with the reason; the mirror answers. */
    sk_staple_set_free(&b);
    tu_assert_ok(sk_staple_set_init(&b, names, 1, &err), &err);
    {
        char            key[SK_CACHE_KEY_MAX + 1], *v;
        unsigned char  *bad;
        size_t          blen;
        const char     *other[] = { "b.example", NULL };

        bad = staple_of(other, &blen);
        sk_staple_cache_key(key, NAME);
        tu_assert_ok(sk_cache_put(c, key, bad, blen, &err), &err);
        free(bad);
        assert_int_equal(sk_staple_set_refresh(&b, &t, c, NULL, NULL,
            FX_NOW + 1001, &err), 0);
        assert_null(b.buf);
        assert_string_equal(b.names[0].why, "none: cache: not one answer "
            "for example.com");
        v = "SK-Staple: 1\nAnswers: 1\n";
        tu_assert_ok(sk_cache_put(c, key, (unsigned char *) v, strlen(v),
            &err), &err);
        assert_int_equal(sk_staple_set_refresh(&b, &t, c, serve_fetch, &m,
            FX_NOW + 1001, &err), 1);
        assert_string_equal(b.names[0].why, "from mirror http://m0.test: 11 "
            "s old");
    }
    /* What an earlier configuration held, offered to a new set: taken
     * if it checks and is younger; garbage changes nothing. */
    {
        sk_staple_set_t  o;
        unsigned char   *kept = malloc(a.len);

        memcpy(kept, a.buf, a.len);
        tu_assert_ok(sk_staple_set_init(&o, names, 2, &err), &err);
        assert_int_equal(sk_staple_set_offer(&o, (unsigned char *) "SK", 2,
            &t, FX_NOW + 1002, &err), 0);
        assert_null(o.buf);
        assert_int_equal(sk_staple_set_offer(&o, kept, a.len, &t,
            FX_NOW + 1002, &err), 1);
        assert_int_equal(o.len, a.len);
        assert_string_equal(o.names[0].why, "kept from before: answer of "
            "http://m0.test, 12 s old");
        assert_int_equal(sk_staple_set_offer(&o, kept, a.len, &t,
            FX_NOW + 1002, &err), 0);
        free(kept);
        sk_staple_set_free(&o);
    }
    sk_staple_set_free(&a);
    sk_staple_set_free(&b);
    sk_cache_close(c);
    tu_rmtree(dir);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_view),
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_serve),
    };

    return cmocka_run_group_tests(tests, setup, fx_teardown);
}
