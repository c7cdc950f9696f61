/*
 * test_record.c -- combining a name's entries across timelines: the
 * draft's order, oldest Bind, Unbind, Rebind by a listed inheritor,
 * newest Change-Services, and entries skipped for bad signatures.
 */
#include "testutil.h"

#define NAME  "example.com"

/* Any DER certificate will do for CA-Cert-Chain here (combining does not
 * judge evidence); this is the root of docs/protocol.md. */
#define CERT TU_DOC_CERT_ROOT

typedef struct {
    sk_key_t  *tl;              /* the timelines' key */
    sk_key_t  *k1, *k2;         /* two SKs for NAME */
    sk_key_t  *net;             /* example.net's SK, the listed rebinder */
    sk_key_t  *org;             /* example.org's SK, not listed */
} keys_t;

static keys_t  ks;

/* What the rebinder lookup answers. */
typedef struct {
    sk_err_code_t  fail;        /* SK_OK: answer from the table */
    size_t         calls;
} lookup_t;


static int
setup(void **state)
{
    sk_key_t  **k[] = { &ks.tl, &ks.k1, &ks.k2, &ks.net, &ks.org };
    size_t      i;

    (void) state;
    for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        if (sk_key_generate(k[i], SK_KEY_ED25519, 0, NULL) != 0) {
            return -1;
        }
    }
    return 0;
}


static int
teardown(void **state)
{
    (void) state;
    sk_key_free(ks.tl);
    sk_key_free(ks.k1);
    sk_key_free(ks.k2);
    sk_key_free(ks.net);
    sk_key_free(ks.org);
    return 0;
}


static int
lookup(sk_key_t **key, const char *rebinder, void *arg, sk_err_t *err)
{
    lookup_t  *l = arg;
    sk_key_t  *k;

    l->calls++;
    if (l->fail != SK_OK) {
        return sk_err_set(err, l->fail, "lookup of %s failed", rebinder);
    }
    if (strcmp(rebinder, "example.net") == 0) {
        k = ks.net;
    } else if (strcmp(rebinder, "example.org") == 0) {
        k = ks.org;
    } else {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "%s: no record", rebinder);
    }
    return sk_key_from_pkey(key, sk_key_get0_pkey(k), err);
}


static sk_entry_t *
new_entry(sk_entry_type_t type, const char *const *fv)
{
    sk_entry_t  *e;
    sk_err_t     err;

    tu_assert_ok(sk_entry_new(&e, type, &err), &err);
    tu_assert_ok(sk_entry_set(e, "Name", NAME, &err), &err);
    for (; fv[0] != NULL; fv += 2) {
        tu_assert_ok(sk_entry_set(e, fv[0], fv[1], &err), &err);
    }
    return e;
}


/* Sign SK-Signature with sk (and Rebinder-Signature with rb), then, if
 * tamper is set, change Services so that neither verifies, and stamp. */
static sk_entry_t *
finish(sk_entry_t *e, const sk_key_t *sk, const sk_key_t *rb, int tamper,
    uint64_t tid, uint64_t sn, int64_t ts)
{
    sk_err_t  err;

    tu_assert_ok(sk_entry_sign(e, SK_SIG_SK, sk, &err), &err);
    if (rb != NULL) {
        tu_assert_ok(sk_entry_sign(e, SK_SIG_REBINDER, rb, &err), &err);
    }
    if (tamper) {
        tu_assert_ok(sk_entry_get(e, "Services") != NULL
            ? sk_entry_set(e, "Services", "imap", &err)
            : sk_entry_set(e, "Last-Secure-Timestamp", "2", &err), &err);
    }
    tu_assert_ok(sk_entry_stamp(e, tid, sn, ts, ks.tl, &err), &err);
    return e;
}


static sk_entry_t *
bind(const sk_key_t *sk, const char *services, uint64_t tid, uint64_t sn,
    int64_t ts)
{
    const char *fv[] = {
        "CA-Cert-Chain", CERT, "Includes-Subdomains", "1",
        "Rebinder-Names", "example.net", "Services", services, NULL
    };

    return finish(new_entry(SK_ENTRY_BIND, fv), sk, NULL, 0, tid, sn, ts);
}


static sk_entry_t *
unbind(const sk_key_t *signer, int64_t ts)
{
    const char *fv[] = { "Last-Secure-Timestamp", "1", NULL };

    return finish(new_entry(SK_ENTRY_UNBIND, fv), signer, NULL, 0, 1, 90,
        ts);
}


static sk_entry_t *
change(const sk_key_t *signer, const char *services, int tamper, int64_t ts)
{
    const char *fv[] = { "Services", services, NULL };

    return finish(new_entry(SK_ENTRY_CHANGE_SERVICES, fv), signer, NULL,
        tamper, 1, 80, ts);
}


/* A Rebind by sk, claiming the inheritor `by` and signed by rb. */
static sk_entry_t *
rebind(const sk_key_t *sk, const char *by, const sk_key_t *rb, int64_t ts)
{
    const char *fv[] = {
        "CA-Cert-Chain", CERT, "Includes-Subdomains", "0",
        "Rebinder-Name", by, "Rebinder-Names", "none",
        "Services", "imaps", NULL
    };

    return finish(new_entry(SK_ENTRY_REBIND, fv), sk, rb, 0, 2, 70, ts);
}


static void
assert_key(const sk_key_t *got, const sk_key_t *want)
{
    char  a[SK_FINGERPRINT_SIZE], b[SK_FINGERPRINT_SIZE];

    assert_non_null(got);
    sk_key_fingerprint(a, got);
    sk_key_fingerprint(b, want);
    assert_string_equal(a, b);
}


static void
combine_ok(sk_record_t *rec, sk_entry_t **v, size_t n, lookup_t *l)
{
    sk_err_t  err;

    tu_assert_ok(sk_record_combine(rec, NAME, (const sk_entry_t *const *) v,
        n, l == NULL ? NULL : lookup, l, &err), &err);
}


static void
free_all(sk_record_t *rec, sk_entry_t **v, size_t n)
{
    size_t  i;

    sk_record_free(rec);
    for (i = 0; i < n; i++) {
        sk_entry_free(v[i]);
    }
}


static void
test_order(void **state)
{
    /* Draft 1.4: timestamp, then TID, then SN. */
    sk_entry_t  *v[4], *u;
    size_t       i, j;
    sk_err_t     err;

    (void) state;
    v[0] = bind(ks.k1, "https", 2, 5, 100);
    v[1] = bind(ks.k1, "https", 2, 6, 100);
    v[2] = bind(ks.k1, "https", 3, 1, 100);
    v[3] = bind(ks.k1, "https", 1, 1, 101);
    for (i = 0; i < 4; i++) {
        for (j = 0; j < 4; j++) {
            assert_int_equal(sk_entry_order(v[i], v[j]),
                i < j ? -1 : i > j ? 1 : 0);
        }
    }
    /* Unstamped sorts before every stamped entry. */
    tu_assert_ok(sk_entry_new(&u, SK_ENTRY_UNBIND, &err), &err);
    assert_int_equal(sk_entry_order(u, v[0]), -1);
    assert_int_equal(sk_entry_order(v[0], u), 1);
    sk_entry_free(u);
    free_all(NULL, v, 4);
}


static void
test_bind_only(void **state)
{
    sk_entry_t   *v[1];
    sk_record_t   rec;

    (void) state;
    v[0] = bind(ks.k1, "https,smtps", 1, 1, 100);
    combine_ok(&rec, v, 1, NULL);
    assert_int_equal(rec.state, SK_RECORD_BOUND);
    assert_ptr_equal(rec.entry, v[0]);
    assert_null(rec.change);
    assert_null(rec.unbind);
    assert_key(rec.key, ks.k1);
    assert_true(sk_services_covers(&rec.services, "smtps", 0));
    assert_false(sk_services_covers(&rec.services, "imaps", 0));
    assert_int_equal(rec.include_subdomains, 1);
    assert_int_equal(rec.skipped, 0);
    free_all(&rec, v, 1);
}


static void
test_no_entries(void **state)
{
    sk_record_t  rec;

    (void) state;
    combine_ok(&rec, NULL, 0, NULL);
    assert_int_equal(rec.state, SK_RECORD_NONE);
    assert_null(rec.key);
    assert_null(rec.entry);
    sk_record_free(&rec);
    sk_record_free(NULL);
}


static void
test_oldest_bind_wins(void **state)
{
    sk_entry_t   *v[2];
    sk_record_t   rec;

    (void) state;
    /* Two timelines: the older claim wins, whatever the input order. */
    v[0] = bind(ks.k2, "https", 1, 1, 200);
    v[1] = bind(ks.k1, "https", 2, 9, 100);
    combine_ok(&rec, v, 2, NULL);
    assert_ptr_equal(rec.entry, v[1]);
    assert_key(rec.key, ks.k1);
    free_all(&rec, v, 2);

    /* Same second: the lower TID wins, then the lower SN. */
    v[0] = bind(ks.k1, "https", 2, 1, 100);
    v[1] = bind(ks.k2, "https", 1, 7, 100);
    combine_ok(&rec, v, 2, NULL);
    assert_key(rec.key, ks.k2);
    free_all(&rec, v, 2);
    v[0] = bind(ks.k1, "https", 1, 8, 100);
    v[1] = bind(ks.k2, "https", 1, 7, 100);
    combine_ok(&rec, v, 2, NULL);
    assert_key(rec.key, ks.k2);
    free_all(&rec, v, 2);
}


static void
test_bind_bad_signature_skipped(void **state)
{
    sk_entry_t   *v[2];
    sk_record_t   rec;
    const char   *fv[] = {
        "CA-Cert-Chain", CERT, "Includes-Subdomains", "0",
        "Rebinder-Names", "none", "Services", "https", NULL
    };

    (void) state;
    v[0] = finish(new_entry(SK_ENTRY_BIND, fv), ks.k1, NULL, 1, 1, 1, 100);
    v[1] = bind(ks.k2, "https", 1, 2, 200);
    combine_ok(&rec, v, 2, NULL);
    assert_ptr_equal(rec.entry, v[1]);
    assert_int_equal(rec.skipped, 1);
    free_all(&rec, v, 2);
}


static void
test_unbind(void **state)
{
    sk_entry_t   *v[2];
    sk_record_t   rec;

    (void) state;
    v[0] = unbind(ks.k1, 200);
    v[1] = bind(ks.k1, "https", 1, 1, 100);
    combine_ok(&rec, v, 2, NULL);
    assert_int_equal(rec.state, SK_RECORD_UNBOUND);
    assert_ptr_equal(rec.unbind, v[0]);
    assert_ptr_equal(rec.entry, v[1]);      /* the revoked record */
    assert_int_equal(rec.services.n, 0);
    assert_int_equal(rec.include_subdomains, 0);
    assert_int_equal(rec.skipped, 0);
    free_all(&rec, v, 2);
}


static void
test_unbind_bad_signature_skipped(void **state)
{
    sk_entry_t   *v[3];
    sk_record_t   rec;

    (void) state;
    v[0] = bind(ks.k1, "https", 1, 1, 100);
    v[1] = unbind(ks.k2, 200);              /* not the SK in force */
    v[2] = unbind(ks.k1, 50);               /* before the Bind: no SK yet */
    combine_ok(&rec, v, 3, NULL);
    assert_int_equal(rec.state, SK_RECORD_BOUND);
    assert_null(rec.unbind);
    assert_key(rec.key, ks.k1);
    assert_int_equal(rec.skipped, 1);
    free_all(&rec, v, 3);
}


static void
test_rebind_listed(void **state)
{
    sk_entry_t   *v[4];
    sk_record_t   rec;
    lookup_t      l = { SK_OK, 0 };

    (void) state;
    v[0] = rebind(ks.k2, "example.net", ks.net, 300);
    v[1] = bind(ks.k1, "https", 1, 1, 100);
    v[2] = unbind(ks.k1, 200);
    v[3] = change(ks.k1, "smtps", 0, 400);  /* the revoked SK: too late */
    combine_ok(&rec, v, 4, &l);
    assert_int_equal(rec.state, SK_RECORD_BOUND);
    assert_ptr_equal(rec.entry, v[0]);
    assert_null(rec.unbind);
    assert_key(rec.key, ks.k2);
    assert_true(sk_services_covers(&rec.services, "imaps", 0));
    assert_false(sk_services_covers(&rec.services, "https", 0));
    assert_int_equal(rec.include_subdomains, 0);
    assert_int_equal(rec.skipped, 1);
    assert_int_equal(l.calls, 1);
    free_all(&rec, v, 4);
}


static void
test_rebind_rejected(void **state)
{
    sk_entry_t   *v[6];
    sk_record_t   rec;
    lookup_t      l = { SK_OK, 0 };
    sk_err_t      err;

    (void) state;
    v[0] = bind(ks.k1, "https", 1, 1, 100);
    v[1] = rebind(ks.k2, "example.net", ks.net, 150);  /* no Unbind yet */
    v[2] = unbind(ks.k1, 200);
    v[3] = rebind(ks.k2, "example.org", ks.org, 300);  /* not listed */
    v[4] = rebind(ks.k2, "example.net", ks.org, 310);  /* wrong signer */
    v[5] = rebind(ks.k2, "example.net", ks.net, 320);
    tu_assert_ok(sk_entry_set(v[5], "SK-Signature", "AAAA", &err), &err);
    combine_ok(&rec, v, 6, &l);
    assert_int_equal(rec.state, SK_RECORD_UNBOUND);
    assert_ptr_equal(rec.unbind, v[2]);
    assert_int_equal(rec.skipped, 3);
    free_all(&rec, v, 6);
}


static void
test_rebind_lookup(void **state)
{
    sk_entry_t   *v[3];
    sk_record_t   rec;
    lookup_t      l = { SK_ERR_NOT_FOUND, 0 };
    sk_err_t      err;

    (void) state;
    v[0] = bind(ks.k1, "https", 1, 1, 100);
    v[1] = unbind(ks.k1, 200);
    v[2] = rebind(ks.k2, "example.net", ks.net, 300);

    /* No lookup: no Rebind can be checked. */
    combine_ok(&rec, v, 3, NULL);
    assert_int_equal(rec.state, SK_RECORD_UNBOUND);
    assert_int_equal(rec.skipped, 1);
    sk_record_free(&rec);

    /* The inheritor has no SK: it cannot have signed. */
    combine_ok(&rec, v, 3, &l);
    assert_int_equal(rec.state, SK_RECORD_UNBOUND);
    assert_int_equal(rec.skipped, 1);
    sk_record_free(&rec);

    /* A backend failure is not a verdict on the Rebind. */
    l.fail = SK_ERR_UNAVAILABLE;
    tu_assert_err(sk_record_combine(&rec, NAME,
        (const sk_entry_t *const *) v, 3, lookup, &l, &err), &err,
        SK_ERR_UNAVAILABLE, "lookup of example.net failed");
    assert_int_equal(rec.state, SK_RECORD_NONE);
    assert_null(rec.key);
    free_all(NULL, v, 3);
}


static void
test_change_services(void **state)
{
    sk_entry_t   *v[6];
    sk_record_t   rec;

    (void) state;
    v[0] = change(ks.k1, "imaps", 0, 300);          /* newest valid */
    v[1] = bind(ks.k1, "https", 1, 1, 100);
    v[2] = change(ks.k1, "smtps", 0, 200);
    v[3] = change(ks.k2, "pop3s", 0, 400);          /* wrong key */
    v[4] = change(ks.k1, "submission", 1, 500);     /* tampered */
    v[5] = change(ks.k1, "http", 0, 50);            /* before the Bind */
    combine_ok(&rec, v, 3, NULL);
    assert_ptr_equal(rec.change, v[0]);
    assert_true(sk_services_covers(&rec.services, "imaps", 0));
    assert_false(sk_services_covers(&rec.services, "https", 0));
    assert_int_equal(rec.skipped, 0);
    sk_record_free(&rec);

    combine_ok(&rec, v, 6, NULL);
    assert_ptr_equal(rec.change, v[0]);
    assert_true(sk_services_covers(&rec.services, "imaps", 0));
    assert_int_equal(rec.skipped, 2);
    sk_record_free(&rec);

    /* Only the Bind: its own services. */
    combine_ok(&rec, v + 1, 1, NULL);
    assert_null(rec.change);
    assert_true(sk_services_covers(&rec.services, "https", 0));
    free_all(&rec, v, 6);
}


static void
test_combine_errors(void **state)
{
    sk_entry_t   *v[2], *other;
    sk_record_t   rec;
    sk_err_t      err;
    const char   *fv[] = { "Services", "https", NULL };

    (void) state;
    v[0] = bind(ks.k1, "https", 1, 1, 100);
    v[1] = new_entry(SK_ENTRY_CHANGE_SERVICES, fv);
    tu_assert_ok(sk_entry_sign(v[1], SK_SIG_SK, ks.k1, &err), &err);
    tu_assert_err(sk_record_combine(&rec, NAME,
        (const sk_entry_t *const *) v, 2, NULL, NULL, &err), &err,
        SK_ERR_FORMAT, "entry 2 (Change-Services): field \"Timestamp\": "
        "not stamped");
    tu_assert_err(sk_record_combine(&rec, "example.org",
        (const sk_entry_t *const *) v, 1, NULL, NULL, &err), &err,
        SK_ERR_USAGE, "entry 1 (Bind): not for \"example.org\"");

    tu_assert_ok(sk_entry_new(&other, SK_ENTRY_ADD_ROOT_CA, &err), &err);
    sk_entry_free(v[1]);
    v[1] = other;
    tu_assert_err(sk_record_combine(&rec, NAME,
        (const sk_entry_t *const *) v, 2, NULL, NULL, &err), &err,
        SK_ERR_USAGE, "entry 2 (Add-Root-CA): not for \"example.com\"");
    assert_int_equal(rec.state, SK_RECORD_NONE);
    free_all(NULL, v, 2);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_bind_only),
        cmocka_unit_test(test_no_entries),
        cmocka_unit_test(test_oldest_bind_wins),
        cmocka_unit_test(test_bind_bad_signature_skipped),
        cmocka_unit_test(test_unbind),
        cmocka_unit_test(test_unbind_bad_signature_skipped),
        cmocka_unit_test(test_rebind_listed),
        cmocka_unit_test(test_rebind_rejected),
        cmocka_unit_test(test_rebind_lookup),
        cmocka_unit_test(test_change_services),
        cmocka_unit_test(test_combine_errors),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
