/*
 * test_client_decide.c -- the decision for a presented chain: accept with
 * the right carrier (also delegated to a CA in the chain), reject with
 * each exact reason, none without an SK that covers name and service,
 * insecure for a covered service offered without TLS.
 */
#include <openssl/x509.h>

#include "test_client_fixture.h"

#define NAME "example.com"

static sk_key_t *tlk, *sk, *sk2, *op, *op2, *cak;


static int
setup(void **state)
{
    (void) state;
    tlk = fx_key();
    sk = fx_key();
    sk2 = fx_key();
    op = fx_key();
    op2 = fx_key();
    cak = fx_key();
    return 0;
}


static int
teardown(void **state)
{
    (void) state;
    sk_key_free(tlk);
    sk_key_free(sk);
    sk_key_free(sk2);
    sk_key_free(op);
    sk_key_free(op2);
    sk_key_free(cak);
    return 0;
}


/* The record of name from n entries (stamped here on one timeline, in
 * order). */
static void
record_of(sk_record_t *rec, const char *name, sk_entry_t **es, size_t n)
{
    sk_err_t  err;
    size_t    i;

    for (i = 0; i < n; i++) {
        tu_assert_ok(sk_entry_stamp(es[i], 1, i, FX_NOW - 1000 + (int64_t) i,
            tlk, &err), &err);
    }
    tu_assert_ok(sk_record_combine(rec, name, (const sk_entry_t *const *) es,
        n, NULL, NULL, &err), &err);
}


static void
record(sk_record_t *rec, sk_entry_t **es, size_t n)
{
    record_of(rec, NAME, es, n);
}


static X509 *
cert_of(const sk_key_t *key, const char *name)
{
    X509      *x;
    sk_err_t   err;

    tu_assert_ok(sk_carrier_sk_selfcert(&x, key, name, FX_NOW - 86400,
        FX_NOW + 86400, &err), &err);
    return x;
}


static X509 *
carrier_x509(const sk_key_t *by, const sk_key_t *certified, const char *name,
    const char *services, time_t nb, time_t na)
{
    sk_carrier_params_t  p = { name, services, nb, na };
    sk_carrier_t        *c;
    sk_err_t             err;
    X509                *x;

    tu_assert_ok(sk_carrier_create(&c, by, certified, &p, &err), &err);
    x = sk_carrier_get0_x509(c);
    X509_up_ref(x);
    sk_carrier_free(c);
    return x;
}


static STACK_OF(X509) *
chain_of(X509 *a, X509 *b, X509 *c)
{
    STACK_OF(X509)  *ch = sk_X509_new_null();

    assert_non_null(ch);
    assert_true(sk_X509_push(ch, a) > 0);
    if (b != NULL) {
        assert_true(sk_X509_push(ch, b) > 0);
    }
    if (c != NULL) {
        assert_true(sk_X509_push(ch, c) > 0);
    }
    return ch;
}


/* The usual server: leaf with op's key, then a carrier. */
static STACK_OF(X509) *
served(const sk_key_t *by, const sk_key_t *certified, const char *name,
    const char *services, time_t nb, time_t na)
{
    return chain_of(cert_of(op, NAME),
        carrier_x509(by, certified, name, services, nb, na), NULL);
}


/* d is want/check with why in its reason; chain freed. */
static void
decided(const sk_decide_t *d, STACK_OF(X509) *chain, sk_decision_t want,
    const char *check, const char *why)
{
    if (d->decision != want || strcmp(d->check, check) != 0
        || strstr(d->reason, why) == NULL)
    {
        fail_msg("want %s/%s \"%s\", got %s/%s \"%s\"",
            sk_decision_name(want), check, why,
            sk_decision_name(d->decision), d->check, d->reason);
    }
    if (chain != NULL) {
        sk_X509_pop_free(chain, X509_free);
    }
}


static void
decide(sk_decide_t *d, const sk_record_t *rec, const char *host,
    const char *service, unsigned port, STACK_OF(X509) *chain,
    sk_decision_t want, const char *check, const char *why)
{
    sk_err_t  err;

    tu_assert_ok(sk_client_decide(d, rec, host, service, port, chain, FX_NOW,
        &err), &err);
    decided(d, chain, want, check, why);
}


static void
test_accept_reject(void **state)
{
    sk_entry_t   *es[1] = { fx_bind(NAME, sk, "https,smtp", 0) };
    sk_record_t   rec;
    sk_decide_t   d;
    char          fp[SK_FINGERPRINT_SIZE];

    (void) state;
    record(&rec, es, 1);
    sk_key_fingerprint(fp, sk);

    decide(&d, &rec, NAME, "https", 443, served(sk, op, NAME, "https",
        FX_NOW - 60, FX_NOW + 3600), SK_DECIDE_ACCEPT, "carrier",
        "certifies the server's key for https");
    assert_string_equal(d.sk, fp);
    assert_int_equal(d.not_after, FX_NOW + 3600);
    decide(&d, &rec, "EXAMPLE.com", "https", 0, served(sk, op, NAME,
        "https,smtp", FX_NOW - 60, FX_NOW + 60), SK_DECIDE_ACCEPT,
        "carrier", "valid until");

    /* No carrier at all: a CA-issued chain alone is not enough. */
    decide(&d, &rec, NAME, "https", 443, chain_of(cert_of(op, NAME),
        cert_of(cak, "ca.example.net"), NULL), SK_DECIDE_REJECT, "no-carrier",
        "presented no carrier");
    /* A carrier made by another SK (an impostor's). */
    decide(&d, &rec, NAME, "https", 443, served(sk2, op, NAME, "https",
        FX_NOW - 60, FX_NOW + 3600), SK_DECIDE_REJECT, "wrong-sk",
        "made for SK");
    /* The right SK, but it certifies another key than the leaf's. */
    decide(&d, &rec, NAME, "https", 443, served(sk, op2, NAME, "https",
        FX_NOW - 60, FX_NOW + 3600), SK_DECIDE_REJECT, "key-mismatch",
        "not the leaf's");
    decide(&d, &rec, NAME, "https", 443, served(sk, op, NAME, "https",
        FX_NOW - 7200, FX_NOW - 3600), SK_DECIDE_REJECT, "expired",
        "expired at");
    decide(&d, &rec, NAME, "https", 443, served(sk, op, NAME, "https",
        FX_NOW + 3600, FX_NOW + 7200), SK_DECIDE_REJECT, "not-yet-valid",
        "not valid before");
    /* The carrier covers smtp only, the connection is https. */
    decide(&d, &rec, NAME, "https", 443, served(sk, op, NAME, "smtp",
        FX_NOW - 60, FX_NOW + 3600), SK_DECIDE_REJECT, "carrier-services",
        "covers \"smtp\", not https");
    decide(&d, &rec, NAME, "https", 443, served(sk, op, "www.example.com",
        "https", FX_NOW - 60, FX_NOW + 3600), SK_DECIDE_REJECT,
        "carrier-name", "carrier is for www.example.com, not example.com");
    assert_string_equal(d.sk, fp);

    /* Not TLS, and the SK covers the service. */
    decide(&d, &rec, NAME, "smtp", 25, NULL, SK_DECIDE_INSECURE, "plaintext",
        "must not be used without TLS");
    /* Services the SK does not list, names it does not cover. */
    decide(&d, &rec, NAME, "imaps", 993, served(sk2, op, NAME, "imaps",
        FX_NOW - 60, FX_NOW + 3600), SK_DECIDE_NONE, "not-covered",
        "does not cover imaps:993");
    decide(&d, &rec, NAME, "imaps", 0, NULL, SK_DECIDE_NONE, "not-covered",
        "does not cover imaps");
    decide(&d, &rec, "www.example.com", "https", 443, NULL, SK_DECIDE_NONE,
        "not-covered", "does not cover www.example.com");
    sk_record_free(&rec);
    sk_entry_free(es[0]);
}


static void
test_none(void **state)
{
    const char   *fv[] = { "Last-Secure-Timestamp", "1", NULL };
    sk_entry_t   *es[2];
    sk_record_t   rec;
    sk_decide_t   d;

    (void) state;
    decide(&d, NULL, NAME, "https", 443, served(sk2, op, NAME, "https",
        FX_NOW - 60, FX_NOW + 3600), SK_DECIDE_NONE, "no-sk",
        "no SK is known for example.com");
    assert_string_equal(d.sk, "");
    record(&rec, es, 0);
    decide(&d, &rec, NAME, "https", 443, NULL, SK_DECIDE_NONE, "no-sk",
        "no SK is known");
    sk_record_free(&rec);

    es[0] = fx_bind(NAME, sk, "all", 0);
    es[1] = fx_entry(SK_ENTRY_UNBIND, NAME, sk, fv);
    record(&rec, es, 2);
    decide(&d, &rec, NAME, "https", 443, served(sk, op, NAME, "https",
        FX_NOW - 60, FX_NOW + 3600), SK_DECIDE_NONE, "unbound",
        "was revoked");
    sk_record_free(&rec);
    sk_entry_free(es[0]);
    sk_entry_free(es[1]);
}


/* A leaf for op's key issued by ca (cak's selfcert), valid from nb to
 * na. */
static X509 *
issued_by(X509 *ca, const sk_key_t *cakey, time_t nb, time_t na)
{
    X509  *x = X509_new();

    assert_non_null(x);
    assert_int_equal(X509_set_version(x, 2), 1);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
    assert_non_null(ASN1_TIME_set(X509_getm_notBefore(x), nb));
    assert_non_null(ASN1_TIME_set(X509_getm_notAfter(x), na));
    assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(ca)), 1);
    assert_int_equal(X509_set_pubkey(x, sk_key_get0_pkey(op)), 1);
    assert_true(X509_sign(x, sk_key_get0_pkey(cakey), NULL) > 0);
    return x;
}


static void
test_delegation(void **state)
{
    sk_entry_t   *es[1] = { fx_bind(NAME, sk, "https", 1) };
    sk_record_t   rec;
    sk_decide_t   d;
    X509         *ca, *ca2;

    (void) state;
    record(&rec, es, 1);
    ca = cert_of(cak, "ca.example.org");
    /* The SK certifies the CA's key; the CA issued the leaf. */
    X509_up_ref(ca);
    decide(&d, &rec, "www.example.com", "https", 0, chain_of(issued_by(ca,
        cak, FX_NOW - 60, FX_NOW + 60), ca, carrier_x509(sk, cak, NAME,
        "https", FX_NOW - 60, FX_NOW + 3600)), SK_DECIDE_ACCEPT, "carrier",
        "carrier for example.com");
    /* ... but not with a leaf that has expired. */
    X509_up_ref(ca);
    decide(&d, &rec, "www.example.com", "https", 0, chain_of(issued_by(ca,
        cak, FX_NOW - 7200, FX_NOW - 3600), ca, carrier_x509(sk, cak, NAME,
        "https", FX_NOW - 60, FX_NOW + 3600)), SK_DECIDE_REJECT, "expired",
        "delegated chain: certificate 0 has expired");
    /* The same carrier, but the leaf was issued by another CA. */
    ca2 = cert_of(op2, "other-ca.example.org");
    decide(&d, &rec, "www.example.com", "https", 0, chain_of(issued_by(ca2,
        op2, FX_NOW - 60, FX_NOW + 60), ca, carrier_x509(sk, cak, NAME,
        "https", FX_NOW - 60, FX_NOW + 3600)), SK_DECIDE_REJECT,
        "key-mismatch",
        "certificate 0 is not signed by certificate 1");
    X509_free(ca2);
    sk_record_free(&rec);
    sk_entry_free(es[0]);
}


/* What a host presents: a leaf for op's key (named host) and a carrier. */
static STACK_OF(X509) *
mx_served(const char *host, const sk_key_t *by, const char *name,
    time_t na)
{
    return chain_of(cert_of(op, host), carrier_x509(by, op, name, "smtp",
        FX_NOW - 60, na), NULL);
}


static void
decide_mx(sk_decide_t *d, const sk_record_t *rec, const char *host,
    const sk_record_t *hostrec, STACK_OF(X509) *chain, sk_decision_t want,
    const char *check, const char *why)
{
    sk_err_t  err;

    tu_assert_ok(sk_client_decide_mx(d, rec, NAME, host, 25, hostrec, chain,
        FX_NOW, &err), &err);
    decided(d, chain, want, check, why);
}


/* The domain runs its own MX: its SK cross-signs the MX host's key. */
static void
test_mx_own(void **state)
{
    sk_entry_t   *es[1] = { fx_bind(NAME, sk, "https,smtp", 0) };
    sk_entry_t   *ws[1] = { fx_bind(NAME, sk, "smtp", 1) };
    sk_entry_t   *hs[1] = { fx_bind(NAME, sk, "https", 0) };
    sk_record_t   rec, wild, web;
    sk_decide_t   d;
    char          fp[SK_FINGERPRINT_SIZE];

    (void) state;
    record(&rec, es, 1);
    record(&wild, ws, 1);
    record(&web, hs, 1);
    sk_key_fingerprint(fp, sk);

    decide_mx(&d, &rec, "mx.example.com", NULL, mx_served("mx.example.com",
        sk, "mx.example.com", FX_NOW + 3600), SK_DECIDE_ACCEPT, "carrier",
        "carrier for mx.example.com by the SK in force");
    assert_string_equal(d.sk, fp);
    assert_int_equal(d.not_after, FX_NOW + 3600);
    /* A host outside the domain: its SK names it all the same. */
    decide_mx(&d, &rec, "mail.example.net", NULL, mx_served(
        "mail.example.net", sk, "mail.example.net", FX_NOW + 3600),
        SK_DECIDE_ACCEPT, "carrier", "carrier for mail.example.net");
    /* The domain's carrier covers its MX host only with the wildcard. */
    decide_mx(&d, &rec, "mx.example.com", NULL, mx_served("mx.example.com",
        sk, NAME, FX_NOW + 3600), SK_DECIDE_REJECT, "carrier-name",
        "carrier is for example.com, not mx.example.com");
    decide_mx(&d, &wild, "mx.example.com", NULL, mx_served("mx.example.com",
        sk, NAME, FX_NOW + 3600), SK_DECIDE_ACCEPT, "carrier",
        "carrier for example.com");
    /* The MX records changed to a host with a carrier of its own SK. */
    decide_mx(&d, &rec, "mx.attacker.example", NULL, mx_served(
        "mx.attacker.example", sk2, "mx.attacker.example", FX_NOW + 3600),
        SK_DECIDE_REJECT, "wrong-sk", "example.com has an SK");
    decide_mx(&d, &rec, "mx.example.com", NULL, chain_of(cert_of(op,
        "mx.example.com"), NULL, NULL), SK_DECIDE_REJECT, "no-carrier",
        "example.com has an SK (sha256:");
    decide_mx(&d, &rec, "mx.example.com", NULL, mx_served("mx.example.com",
        sk, "mx.example.com", FX_NOW - 1), SK_DECIDE_REJECT, "expired",
        "expired");
    decide_mx(&d, &rec, "mx.example.com", NULL, NULL, SK_DECIDE_INSECURE,
        "plaintext", "mx.example.com must not receive its mail without "
        "TLS");
    /* An SK for the web only says nothing about mail. */
    decide_mx(&d, &web, "mx.example.com", NULL, mx_served("mx.example.com",
        sk2, "mx.example.com", FX_NOW + 3600), SK_DECIDE_NONE,
        "not-covered", "does not cover smtp");
    decide_mx(&d, NULL, "mx.example.com", NULL, NULL, SK_DECIDE_NONE,
        "no-sk", "no SK is known for example.com");
    sk_record_free(&rec);
    sk_record_free(&wild);
    sk_record_free(&web);
    sk_entry_free(es[0]);
    sk_entry_free(ws[0]);
    sk_entry_free(hs[0]);
}


/* A hosted domain: its record names the provider's hosts, whose own SK
 * cross-signs them. */
static void
test_mx_hosted(void **state)
{
    sk_entry_t   *es[1] = { fx_bind(NAME, sk,
                                "smtp;mx=*.provider.example;mx=mail.example.org",
                                0) };
    sk_entry_t   *ps[1] = { fx_bind("provider.example", sk2, "smtp", 1) };
    sk_entry_t   *ws[1] = { fx_bind("provider.example", sk2, "https", 1) };
    sk_record_t   rec, prov, provweb;
    sk_decide_t   d;
    char          fp2[SK_FINGERPRINT_SIZE];

    (void) state;
    record(&rec, es, 1);
    record_of(&prov, "provider.example", ps, 1);
    record_of(&provweb, "provider.example", ws, 1);
    sk_key_fingerprint(fp2, sk2);
    assert_string_equal(sk_client_mx_pattern(&rec, "MX1.provider.example",
        25), "*.provider.example");
    assert_string_equal(sk_client_mx_pattern(&rec, "mail.example.org", 0),
        "mail.example.org");
    assert_null(sk_client_mx_pattern(&rec, "provider.example", 25));
    assert_null(sk_client_mx_pattern(&prov, "mx1.provider.example", 25));

    decide_mx(&d, &rec, "mx1.provider.example", &prov, mx_served(
        "mx1.provider.example", sk2, "provider.example", FX_NOW + 3600),
        SK_DECIDE_ACCEPT, "carrier", "mx1.provider.example matches "
        "example.com's mx=*.provider.example: carrier for provider.example");
    assert_string_equal(d.sk, fp2);
    assert_int_equal(d.not_after, FX_NOW + 3600);
    /* The pattern lets the host in; only its own SK vouches for it. */
    decide_mx(&d, &rec, "mx1.provider.example", NULL, mx_served(
        "mx1.provider.example", sk2, "provider.example", FX_NOW + 3600),
        SK_DECIDE_REJECT, "mx-no-sk", "matches example.com's "
        "mx=*.provider.example, but no SK vouches for its key: no SK is "
        "known for mx1.provider.example");
    decide_mx(&d, &rec, "mx1.provider.example", &provweb, mx_served(
        "mx1.provider.example", sk2, "provider.example", FX_NOW + 3600),
        SK_DECIDE_REJECT, "mx-no-sk", "does not cover smtp");
    decide_mx(&d, &rec, "mx1.provider.example", &prov, mx_served(
        "mx1.provider.example", sk, "provider.example", FX_NOW + 3600),
        SK_DECIDE_REJECT, "wrong-sk", "mx1.provider.example matches "
        "example.com's mx=*.provider.example: mx1.provider.example has an "
        "SK");
    /* A host no pattern names, even with a valid carrier of its own. */
    decide_mx(&d, &rec, "mx.attacker.example", &prov, mx_served(
        "mx.attacker.example", sk2, "mx.attacker.example", FX_NOW + 3600),
        SK_DECIDE_REJECT, "wrong-sk", "; and mx.attacker.example matches "
        "none of example.com's mx= patterns");
    decide_mx(&d, &rec, "a.b.provider.example", &prov, mx_served(
        "a.b.provider.example", sk2, "provider.example", FX_NOW + 3600),
        SK_DECIDE_REJECT, "wrong-sk", "matches none");
    /* The domain's own SK still cross-signs directly. */
    decide_mx(&d, &rec, "mx.example.com", NULL, mx_served("mx.example.com",
        sk, "mx.example.com", FX_NOW + 3600), SK_DECIDE_ACCEPT, "carrier",
        "carrier for mx.example.com");
    sk_record_free(&rec);
    sk_record_free(&prov);
    sk_record_free(&provweb);
    sk_entry_free(es[0]);
    sk_entry_free(ps[0]);
    sk_entry_free(ws[0]);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_reject),
        cmocka_unit_test(test_none),
        cmocka_unit_test(test_delegation),
        cmocka_unit_test(test_mx_own),
        cmocka_unit_test(test_mx_hosted),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
