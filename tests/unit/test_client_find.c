/*
 * test_client_find.c -- sk_client_find's lookups beyond the host's own:
 * a parent's wildcard SK and a Rebind's rebinder.  Either one that no
 * mirror answers leaves the host undecided, never "no SK" (an attacker
 * who blocks the mirrors for example.com must not turn its wildcard SK
 * off for www.example.com).
 */
#include "test_client_fixture.h"

static const char  *down;      /* the mirror fails for this name's query */


static int
fetch(char **body, size_t *len, int *status, const char *url, void *arg,
    sk_err_t *err)
{
    char  name[SK_NAME_MAX + 1], nonce[SK_NONCE_TEXT + 1];

    (void) arg;
    fx_query(url, name, sizeof(name), nonce);
    if (down != NULL && strcmp(name, down) == 0) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "connection refused");
    }
    *status = 200;
    *body = fx_reply(&tw, url, len);
    return 0;
}


/* sk_client_find for host with the mirror down for blocked (or none);
 * its return code, f and err filled in. */
static int
find(sk_client_found_t *f, const char *host, const char *blocked,
    sk_err_t *err)
{
    sk_client_trust_t  t = tw.trust;
    sk_client_ctx_t    ctx;
    size_t             i;
    int                rc;

    tu_assert_ok(sk_client_trust_add_mirror(&t, "http://m0.test", tw.mirror,
        err), err);
    /* no cache remembers the timelines: an unanswered lookup fails
     * closed with the defaults (silence is no evidence of a broken
     * system, whatever max_derelict says) */
    down = blocked;
    ctx = (sk_client_ctx_t) { &t, NULL, fetch, NULL, FX_NOW, 0, NULL, NULL,
        NULL };
    rc = sk_client_find(f, host, &ctx, err);
    for (i = 0; i < t.nmirrors; i++) {
        sk_key_free(t.mirrors[i].key);
    }
    return rc;
}


static void
test_parent_wildcard(void **state)
{
    sk_client_found_t  f;
    sk_err_t           err;

    (void) state;
    tu_assert_ok(find(&f, "www.example.com", NULL, &err), &err);
    assert_string_equal(f.name, "example.com");
    assert_int_equal(f.rec.state, SK_RECORD_BOUND);
    tu_assert_ok(sk_client_found_usable(&f, &err), &err);
    sk_client_found_free(&f);
}


static void
test_parent_blocked(void **state)
{
    sk_client_found_t  f;
    sk_err_t           err;

    (void) state;
    /* www.example.com answered "no SK", example.com not at all */
    tu_assert_ok(find(&f, "www.example.com", "example.com", &err), &err);
    assert_string_equal(f.name, "example.com");
    assert_int_equal(f.res.outcome, SK_FRESH_CLOSED);
    assert_int_equal(sk_client_found_usable(&f, &err), -1);
    assert_int_equal(err.code, SK_ERR_UNAVAILABLE);
    assert_non_null(strstr(err.msg, "example.com"));
    sk_client_found_free(&f);
}


static void
test_no_parent_sk(void **state)
{
    sk_client_found_t  f;
    sk_err_t           err;

    (void) state;
    /* every lookup answered, none has an SK: "no SK" stands */
    tu_assert_ok(find(&f, "www.example.org", NULL, &err), &err);
    assert_string_equal(f.name, "www.example.org");
    assert_int_equal(f.rec.state, SK_RECORD_NONE);
    tu_assert_ok(sk_client_found_usable(&f, &err), &err);
    sk_client_found_free(&f);
}


static void
test_host_blocked(void **state)
{
    sk_client_found_t  f;
    sk_err_t           err;

    (void) state;
    /* the parent's wildcard SK, known, decides for an unanswered host */
    tu_assert_ok(find(&f, "www.example.com", "www.example.com", &err), &err);
    assert_string_equal(f.name, "example.com");
    assert_int_equal(f.rec.state, SK_RECORD_BOUND);
    tu_assert_ok(sk_client_found_usable(&f, &err), &err);
    sk_client_found_free(&f);
}


/* A view not fresh enough (fail closed) decides a refusal, never a pass:
 * it shows which SK to enforce, not that it is still in force. */
static void
test_stale_only_refuses(void **state)
{
    static const sk_fresh_outcome_t  ok[] = { SK_FRESH_CACHED,
        SK_FRESH_ANSWER, SK_FRESH_OPEN, SK_FRESH_STAPLE };
    sk_client_found_t  f;
    sk_decide_t        d;
    sk_err_t           err;
    size_t             i;

    (void) state;
    memset(&f, 0, sizeof(f));
    memset(&d, 0, sizeof(d));
    snprintf(f.name, sizeof(f.name), "example.com");
    f.res.outcome = SK_FRESH_CLOSED;
    f.res.fresh.ntl = 3;
    f.res.fresh.fresh = 1;
    f.res.view.ncps = 3;
    d.decision = SK_DECIDE_ACCEPT;
    assert_int_equal(sk_client_found_decision_ok(&f, &d, &err), -1);
    assert_int_equal(err.code, SK_ERR_UNAVAILABLE);
    assert_string_equal(err.msg, "no mirror gave a fresh enough answer for "
        "example.com (1 of 3 timelines fresh): too old to show that the SK "
        "it shows is still in force, only to refuse a server without its "
        "carrier");
    d.decision = SK_DECIDE_NONE;
    assert_int_equal(sk_client_found_decision_ok(&f, &d, &err), -1);
    assert_non_null(strstr(err.msg, "too old to show that no SK covers"));
    d.decision = SK_DECIDE_REJECT;
    tu_assert_ok(sk_client_found_decision_ok(&f, &d, &err), &err);
    d.decision = SK_DECIDE_INSECURE;
    tu_assert_ok(sk_client_found_decision_ok(&f, &d, &err), &err);
    /* Nothing at all heard: said so. */
    f.res.view.ncps = 0;
    f.res.fresh.fresh = 0;
    assert_int_equal(sk_client_found_usable(&f, &err), -1);
    assert_string_equal(err.msg, "no mirror gave a fresh enough answer for "
        "example.com (0 of 3 timelines fresh: nothing answered, no staple, "
        "nothing cached)");
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        f.res.outcome = ok[i];
        d.decision = SK_DECIDE_ACCEPT;
        tu_assert_ok(sk_client_found_decision_ok(&f, &d, &err), &err);
        d.decision = SK_DECIDE_NONE;
        tu_assert_ok(sk_client_found_decision_ok(&f, &d, &err), &err);
    }
}


static void
test_rebinder(void **state)
{
    static const char  *bind_fv[] = { "CA-Cert-Chain", TU_DOC_CERT_ROOT,
        "Includes-Subdomains", "0", "Rebinder-Names", "heir.example",
        "Services", "https", NULL };
    static const char  *rebind_fv[] = { "CA-Cert-Chain", TU_DOC_CERT_ROOT,
        "Includes-Subdomains", "0", "Rebinder-Name", "heir.example",
        "Rebinder-Names", "none", "Services", "https", NULL };
    static const char  *unbind_fv[] = { "Last-Secure-Timestamp", "1", NULL };
    sk_client_found_t   f;
    sk_key_t           *old = fx_key(), *heir = fx_key(), *fresh = fx_key();
    sk_entry_t         *e;
    sk_err_t            err;
    size_t              i;

    (void) state;
    for (i = 0; i < tw.ntl; i++) {
        fx_append(&tw, i, fx_entry(SK_ENTRY_BIND, "old.example", old,
            bind_fv), FX_NOW - 500);
        fx_append(&tw, i, fx_bind("heir.example", heir, "all", 0),
            FX_NOW - 490);
        fx_append(&tw, i, fx_entry(SK_ENTRY_UNBIND, "old.example", old,
            unbind_fv), FX_NOW - 480);
        e = fx_entry(SK_ENTRY_REBIND, "old.example", fresh, rebind_fv);
        tu_assert_ok(sk_entry_sign(e, SK_SIG_REBINDER, heir, &err), &err);
        fx_append(&tw, i, e, FX_NOW - 470);
    }

    /* the heir answered: the Rebind counts, the name is bound again */
    tu_assert_ok(find(&f, "old.example", NULL, &err), &err);
    assert_int_equal(f.rec.state, SK_RECORD_BOUND);
    assert_int_equal(f.rec.skipped, 0);
    sk_client_found_free(&f);

    /* the heir not answered: not "unbound", undecided */
    assert_int_equal(find(&f, "old.example", "heir.example", &err), -1);
    assert_int_equal(err.code, SK_ERR_UNAVAILABLE);
    assert_non_null(strstr(err.msg, "heir.example"));

    sk_key_free(old);
    sk_key_free(heir);
    sk_key_free(fresh);
}


static int
setup(void **state)
{
    size_t  i;

    (void) state;
    fx_init(&tw, 3);
    sk1 = fx_key();
    for (i = 0; i < tw.ntl; i++) {
        fx_append(&tw, i, fx_bind("example.com", sk1, "https", 1),
            FX_NOW - 800);
    }
    return 0;
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parent_wildcard),
        cmocka_unit_test(test_parent_blocked),
        cmocka_unit_test(test_no_parent_sk),
        cmocka_unit_test(test_host_blocked),
        cmocka_unit_test(test_stale_only_refuses),
        cmocka_unit_test(test_rebinder),
    };

    return cmocka_run_group_tests(tests, setup, fx_teardown);
}
