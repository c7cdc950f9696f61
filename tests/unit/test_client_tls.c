/*
 * test_client_tls.c -- sk/tls.h's state across sk_tls_prepare and the
 * decision: when the lookup in the handshake fails closed (mirrors
 * unreachable, no staple, max_derelict not exceeded), sk_tls_decide fails
 * with SK_ERR_UNAVAILABLE and no decision is made, however often it is
 * called; an impostor's chain is never let through as "none".
 */
#include "test_client_fixture.h"

#include <sk/tls.h>

#define NAME "example.com"


/* Every mirror is down. */
static int
fetch_down(char **body, size_t *len, int *status, const char *url,
    void *arg, sk_err_t *err)
{
    (void) body;
    (void) len;
    (void) status;
    (void) arg;
    return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: connection refused",
        url);
}


/* The impostor: a certificate for the name, no carrier. */
static STACK_OF(X509) *
impostor_chain(void)
{
    STACK_OF(X509)  *ch = sk_X509_new_null();
    sk_key_t        *k = fx_key();
    X509            *x;
    sk_err_t         err;

    tu_assert_ok(sk_carrier_sk_selfcert(&x, k, NAME, FX_NOW - 86400,
        FX_NOW + 86400, &err), &err);
    sk_key_free(k);
    assert_non_null(ch);
    assert_true(sk_X509_push(ch, x) > 0);
    return ch;
}


/* An sk_tls_t for ntl trusted timelines, max_derelict md and one mirror,
 * down: with nothing known, a lookup fails closed. */
static sk_tls_t *
tls_down(fx_world_t *w, size_t ntl, unsigned md)
{
    sk_tls_conf_t  conf = { 0 };
    sk_tls_t      *t;
    sk_err_t       err;

    fx_init(w, ntl);
    w->trust.max_derelict = md;
    tu_assert_ok(sk_client_trust_add_mirror(&w->trust, "http://127.0.0.1:9",
        w->mirror, &err), &err);
    conf.trust = &w->trust;
    conf.fetch = fetch_down;
    tu_assert_ok(sk_tls_new(&t, &conf, &err), &err);
    return t;
}


/* sk_tls_decide fails closed and decides nothing, however often asked
 * (OpenSSL calls back once per certificate). */
static void
decide_closed(sk_tls_t *t)
{
    STACK_OF(X509)  *chain = impostor_chain();
    sk_err_t         err;
    int              i;

    for (i = 0; i < 2; i++) {
        assert_int_equal(sk_tls_decide(t, chain, FX_NOW, &err), -1);
        assert_int_equal(err.code, SK_ERR_UNAVAILABLE);
        assert_non_null(strstr(err.msg, "no mirror gave a fresh enough "
            "answer"));
        assert_null(sk_tls_decision(t));
    }
    sk_X509_pop_free(chain, X509_free);
}


/* The lookup in the handshake (sk_tls_prepare) fails closed: 2 of 2
 * timelines with max_derelict 2, 3 of 3 with max_derelict 3. */
static void
test_prepare_fails_closed(void **state)
{
    static const struct { size_t ntl; unsigned md; } cases[] = {
        { 2, 2 }, { 3, 3 }
    };
    fx_world_t  w;
    sk_tls_t   *t;
    sk_err_t    err;
    size_t      i;

    (void) state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        t = tls_down(&w, cases[i].ntl, cases[i].md);
        tu_assert_ok(sk_tls_prepare(t, NAME, "https", 443, FX_NOW, &err),
            &err);
        assert_null(sk_tls_get0_found(t));
        decide_closed(t);
        assert_non_null(sk_tls_get0_found(t));
        assert_int_equal(sk_tls_get0_found(t)->res.outcome, SK_FRESH_CLOSED);
        sk_tls_free(t);
        fx_free(&w);
    }
}


/* The same with sk_tls_lookup: it fails, and nothing is decided. */
static void
test_lookup_fails_closed(void **state)
{
    fx_world_t  w;
    sk_tls_t   *t;
    sk_err_t    err;

    (void) state;
    t = tls_down(&w, 2, 2);
    assert_int_equal(sk_tls_lookup(t, NAME, "https", 443, FX_NOW, &err), -1);
    assert_int_equal(err.code, SK_ERR_UNAVAILABLE);
    decide_closed(t);
    sk_tls_free(t);
    fx_free(&w);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prepare_fails_closed),
        cmocka_unit_test(test_lookup_fails_closed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
