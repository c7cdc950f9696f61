/*
 * test_carrier.c -- carrier certificates: create and verify for every SK
 * and operational key type, each verification failure as its own code,
 * strict parsing of the extension, chains, PEM files, and the SK's
 * self-signed certificate as `openssl verify -partial_chain` uses it.
 */
#include "testutil.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define NALG 3

static struct {
    sk_key_t *sk[NALG];         /* Ed25519, P-256, RSA */
    sk_key_t *op[NALG];
    sk_key_t *other_sk;         /* Ed25519, a different SK */
    time_t    now;
} g;


static int
group_setup(void **state)
{
    sk_err_t err;
    int      i;

    (void) state;
    g.now = time(NULL);
    for (i = 0; i < NALG; i++) {
        if (sk_key_generate(&g.sk[i], (sk_key_alg_t) i, 2048, &err) != 0
            || sk_key_generate(&g.op[i], (sk_key_alg_t) i, 2048, &err) != 0)
        {
            return -1;
        }
    }
    return sk_key_generate(&g.other_sk, SK_KEY_ED25519, 0, &err);
}


static int
group_teardown(void **state)
{
    int i;

    (void) state;
    for (i = 0; i < NALG; i++) {
        sk_key_free(g.sk[i]);
        sk_key_free(g.op[i]);
    }
    sk_key_free(g.other_sk);
    return 0;
}


static sk_carrier_t *
make_carrier(const sk_key_t *sk, const sk_key_t *op, time_t nb, time_t na)
{
    sk_carrier_params_t  p;
    sk_carrier_t        *c;
    sk_err_t             err;

    p.name = "example.com";
    p.services = "https,smtps:465;192.0.2.1:465";
    p.not_before = nb;
    p.not_after = na;
    tu_assert_ok(sk_carrier_create(&c, sk, op, &p, &err), &err);
    return c;
}


static sk_carrier_t *
make_now(const sk_key_t *sk, const sk_key_t *op)
{
    return make_carrier(sk, op, g.now - 60, g.now + 86400);
}


static void
verify_op(const sk_carrier_t *c, const sk_key_t *sk, const sk_key_t *op,
    time_t now, sk_err_t *err)
{
    const unsigned char *spki;
    size_t               len;

    spki = sk_key_get0_spki(op, &len);
    sk_err_clear(err);
    if (sk_carrier_verify(c, sk, spki, len, now, err) != 0
        && err->code == SK_OK)
    {
        fail_msg("verify failed without an error code");
    }
}


/* A certificate of subject's key signed by signer, with a SAN, and with
 * ext (next times) under the carrier OID when given: the tests' way to
 * make plain certificates and malformed carriers. */
static unsigned char *
make_cert(size_t *len, const sk_key_t *subject, const sk_key_t *signer,
    const unsigned char *ext, size_t extlen, int crit, int next, int ca)
{
    X509               *x = X509_new();
    X509_NAME          *dn = X509_NAME_new();
    X509V3_CTX          ctx;
    X509_EXTENSION     *e;
    ASN1_OBJECT        *oid = OBJ_txt2obj(SK_CARRIER_EXT_OID, 1);
    ASN1_OCTET_STRING  *val = ASN1_OCTET_STRING_new();
    unsigned char      *der = NULL;
    int                 i, n;

    assert_non_null(x);
    assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
    X509_NAME_add_entry_by_txt(dn, "CN", MBSTRING_ASC,
        (const unsigned char *) "example.com", -1, -1, 0);
    X509_set_issuer_name(x, dn);
    X509_set_subject_name(x, dn);
    X509_NAME_free(dn);
    ASN1_TIME_set(X509_getm_notBefore(x), g.now - 60);
    ASN1_TIME_set(X509_getm_notAfter(x), g.now + 3600);
    assert_int_equal(X509_set_pubkey(x, sk_key_get0_pkey(subject)), 1);
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    e = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name,
        "DNS:example.com");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    if (ca) {
        e = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints,
            "critical,CA:TRUE");
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    ASN1_OCTET_STRING_set(val, ext, (int) extlen);
    for (i = 0; ext != NULL && i < next; i++) {
        e = X509_EXTENSION_create_by_OBJ(NULL, oid, crit, val);
        assert_non_null(e);
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    ASN1_OCTET_STRING_free(val);
    ASN1_OBJECT_free(oid);
    assert_true(X509_sign(x, sk_key_get0_pkey(signer),
        sk_key_alg(signer) == SK_KEY_ED25519 ? NULL : EVP_sha256()) > 0);
    n = i2d_X509(x, &der);
    assert_true(n > 0);
    X509_free(x);
    *len = (size_t) n;
    return der;
}


/* The extension value, built field by field so each can be broken. */
static size_t
ext_build(unsigned char *out, int version, size_t hashlen, int svc_tag,
    const char *svc, size_t inner_junk, size_t outer_junk)
{
    size_t slen = strlen(svc), inner, n = 0, i;

    inner = 3 + 2 + hashlen + 2 + slen + inner_junk;
    out[n++] = 0x30;
    out[n++] = (unsigned char) inner;
    out[n++] = 0x02; out[n++] = 0x01; out[n++] = (unsigned char) version;
    out[n++] = 0x04; out[n++] = (unsigned char) hashlen;
    for (i = 0; i < hashlen; i++) {
        out[n++] = 0xab;
    }
    out[n++] = (unsigned char) svc_tag;
    out[n++] = (unsigned char) slen;
    memcpy(out + n, svc, slen);
    n += slen;
    for (i = 0; i < inner_junk + outer_junk; i++) {
        out[n++] = 0x05;
    }
    return n;
}


static void
expect_ext_err(const unsigned char *ext, size_t extlen, int crit, int next,
    sk_err_code_t code, const char *want)
{
    unsigned char *der;
    size_t         len;
    sk_carrier_t  *c;
    sk_err_t       err;

    der = make_cert(&len, g.op[0], g.sk[0], ext, extlen, crit, next, 0);
    tu_assert_err(sk_carrier_from_der(&c, der, len, &err), &err, code, want);
    OPENSSL_free(der);
}


static void
test_create_verify_every_type(void **state)
{
    const unsigned char *spki, *cspki, *der;
    unsigned char        hash[SK_SHA256_BYTES];
    const ASN1_INTEGER  *serial;
    sk_carrier_t        *c, *back;
    size_t               len, clen, dlen;
    X509                *x;
    char                 buf[256];
    sk_err_t             err;
    int                  s, o;

    (void) state;
    for (s = 0; s < NALG; s++) {
        for (o = 0; o < NALG; o++) {
            c = make_now(g.sk[s], g.op[o]);
            verify_op(c, g.sk[s], g.op[o], g.now, &err);
            tu_assert_ok(err.code == SK_OK ? 0 : -1, &err);

            assert_string_equal(sk_carrier_name(c), "example.com");
            assert_string_equal(sk_carrier_services(c),
                "https,smtps:465;192.0.2.1:465");
            sk_key_spki_sha256(hash, g.sk[s]);
            assert_memory_equal(sk_carrier_sk_hash(c), hash, sizeof(hash));
            spki = sk_key_get0_spki(g.op[o], &len);
            cspki = sk_carrier_subject_spki(c, &clen);
            assert_int_equal(clen, len);
            assert_memory_equal(cspki, spki, len);
            assert_int_equal(sk_carrier_not_before(c), g.now - 60);
            assert_int_equal(sk_carrier_not_after(c), g.now + 86400);

            /* The fields architecture.md fixes. */
            x = sk_carrier_get0_x509(c);
            assert_int_equal(X509_get_version(x), X509_VERSION_3);
            serial = X509_get0_serialNumber(x);
            assert_int_equal(ASN1_STRING_length(serial), 16);
            assert_int_equal(ASN1_STRING_type(serial), V_ASN1_INTEGER);
            X509_NAME_oneline(X509_get_issuer_name(x), buf, sizeof(buf));
            assert_string_equal(buf, "/O=Sovereign Key/CN=example.com");
            X509_NAME_oneline(X509_get_subject_name(x), buf, sizeof(buf));
            assert_string_equal(buf, "/CN=example.com");
            /* SAN, AKID and ours: nothing else, carriers stay small. */
            assert_int_equal(X509_get_ext_count(x), 3);

            /* DER round trip. */
            der = sk_carrier_get0_der(c, &dlen);
            tu_assert_ok(sk_carrier_from_der(&back, der, dlen, &err), &err);
            verify_op(back, g.sk[s], g.op[o], g.now, &err);
            assert_int_equal(err.code, SK_OK);
            sk_carrier_free(back);
            sk_carrier_free(c);
        }
    }
}


static void
test_small(void **state)
{
    sk_carrier_t *c;
    size_t        len;

    (void) state;
    c = make_now(g.sk[SK_KEY_ED25519], g.op[SK_KEY_ED25519]);
    (void) sk_carrier_get0_der(c, &len);
    /* Ed25519 certifying Ed25519: a few hundred bytes per handshake. */
    assert_true(len < 450);
    print_message("ed25519 carrier: %zu bytes\n", len);
    sk_carrier_free(c);
}


static void
test_wrong_sk(void **state)
{
    sk_carrier_t *c;
    sk_err_t      err;
    int           s;

    (void) state;
    for (s = 0; s < NALG; s++) {
        c = make_now(g.sk[s], g.op[0]);
        verify_op(c, g.other_sk, g.op[0], g.now, &err);
        assert_int_equal(err.code, SK_ERR_WRONG_SK);
        assert_non_null(strstr(err.msg, "carrier for example.com: made for "
            "SK sha256:"));
        sk_carrier_free(c);
    }
}


static void
test_key_mismatch(void **state)
{
    sk_carrier_t *c;
    sk_err_t      err;

    (void) state;
    c = make_now(g.sk[0], g.op[0]);
    verify_op(c, g.sk[0], g.op[1], g.now, &err);
    assert_int_equal(err.code, SK_ERR_KEY_MISMATCH);
    assert_non_null(strstr(err.msg, "certifies key sha256:"));
    assert_non_null(strstr(err.msg, "not the leaf's sha256:"));
    sk_carrier_free(c);
}


static void
test_time_window(void **state)
{
    sk_carrier_t *c;
    sk_err_t      err;

    (void) state;
    c = make_carrier(g.sk[0], g.op[0], g.now - 1000, g.now - 10);
    verify_op(c, g.sk[0], g.op[0], g.now, &err);
    assert_int_equal(err.code, SK_ERR_EXPIRED);
    assert_non_null(strstr(err.msg, "expired at "));
    /* notAfter itself is still inside the window. */
    verify_op(c, g.sk[0], g.op[0], g.now - 10, &err);
    assert_int_equal(err.code, SK_OK);
    sk_carrier_free(c);

    c = make_carrier(g.sk[0], g.op[0], g.now + 100, g.now + 1000);
    verify_op(c, g.sk[0], g.op[0], g.now, &err);
    assert_int_equal(err.code, SK_ERR_NOT_YET_VALID);
    assert_non_null(strstr(err.msg, "not valid before "));
    verify_op(c, g.sk[0], g.op[0], g.now + 100, &err);
    assert_int_equal(err.code, SK_OK);
    sk_carrier_free(c);
}


static unsigned char *
find_bytes(unsigned char *hay, size_t len, const unsigned char *needle,
    size_t n)
{
    size_t i;

    for (i = 0; i + n <= len; i++) {
        if (memcmp(hay + i, needle, n) == 0) {
            return hay + i;
        }
    }
    fail_msg("bytes not found");
    return NULL;
}


static void
test_tampered(void **state)
{
    const unsigned char *der;
    const ASN1_INTEGER  *serial;
    unsigned char       *copy, *at;
    sk_carrier_t        *c, *t;
    size_t               len;
    sk_err_t             err;
    int                  s;

    (void) state;
    for (s = 0; s < NALG; s++) {
        c = make_now(g.sk[s], g.op[0]);
        der = sk_carrier_get0_der(c, &len);
        copy = malloc(len);
        memcpy(copy, der, len);

        /* A byte of the serial number, inside the TBS: still parses. */
        serial = X509_get0_serialNumber(sk_carrier_get0_x509(c));
        at = find_bytes(copy, len, ASN1_STRING_get0_data(serial), 16);
        at[8] ^= 0x01;
        tu_assert_ok(sk_carrier_from_der(&t, copy, len, &err), &err);
        verify_op(t, g.sk[s], g.op[0], g.now, &err);
        assert_int_equal(err.code, SK_ERR_SIGNATURE);
        assert_non_null(strstr(err.msg, "signature does not verify"));
        sk_carrier_free(t);
        at[8] ^= 0x01;

        /* The last byte of the signature. */
        copy[len - 1] ^= 0x40;
        tu_assert_ok(sk_carrier_from_der(&t, copy, len, &err), &err);
        verify_op(t, g.sk[s], g.op[0], g.now, &err);
        assert_int_equal(err.code, SK_ERR_SIGNATURE);
        sk_carrier_free(t);

        free(copy);
        sk_carrier_free(c);
    }
}


/* The extension names SK Ed25519 but a P-256 key signed the certificate:
 * a forgery, reported as a signature failure, not a crash or a pass. */
static void
test_algorithm_mismatch(void **state)
{
    unsigned char  ext[128], hash[SK_SHA256_BYTES], *der;
    size_t         n, len;
    sk_carrier_t  *c;
    sk_err_t       err;

    (void) state;
    n = ext_build(ext, 1, 32, V_ASN1_IA5STRING, "https", 0, 0);
    sk_key_spki_sha256(hash, g.sk[SK_KEY_ED25519]);
    memcpy(ext + 7, hash, sizeof(hash));
    der = make_cert(&len, g.op[0], g.sk[SK_KEY_P256], ext, n, 0, 1, 0);
    tu_assert_ok(sk_carrier_from_der(&c, der, len, &err), &err);
    verify_op(c, g.sk[SK_KEY_ED25519], g.op[0], g.now, &err);
    assert_int_equal(err.code, SK_ERR_SIGNATURE);
    assert_non_null(strstr(err.msg, "signed with p256, but the SK is "
        "ed25519"));
    sk_carrier_free(c);
    OPENSSL_free(der);
}


static void
test_no_extension(void **state)
{
    unsigned char *der = NULL;
    sk_carrier_t  *c;
    size_t         len;
    X509          *x;
    sk_err_t       err;
    int            n;

    (void) state;
    der = make_cert(&len, g.op[0], g.op[0], NULL, 0, 0, 0, 0);
    tu_assert_err(sk_carrier_from_der(&c, der, len, &err), &err,
        SK_ERR_NO_EXTENSION, SK_CARRIER_EXT_OID);
    OPENSSL_free(der);

    tu_assert_ok(sk_carrier_sk_selfcert(&x, g.sk[0], "example.com",
        g.now, g.now + 3600, &err), &err);
    tu_assert_err(sk_carrier_from_x509(&c, x, &err), &err,
        SK_ERR_NO_EXTENSION, "no sovereign-key extension");
    der = NULL;
    n = i2d_X509(x, &der);
    tu_assert_err(sk_carrier_from_der(&c, der, (size_t) n, &err), &err,
        SK_ERR_NO_EXTENSION, "no sovereign-key extension");
    OPENSSL_free(der);
    X509_free(x);
}


static void
test_malformed_extension(void **state)
{
    unsigned char ext[128];
    size_t        n;

    (void) state;
    n = ext_build(ext, 1, 32, V_ASN1_IA5STRING, "https", 0, 0);
    expect_ext_err(ext, n, 1, 1, SK_ERR_FORMAT, "marked critical");
    expect_ext_err(ext, n, 0, 2, SK_ERR_FORMAT, "present more than once");

    n = ext_build(ext, 2, 32, V_ASN1_IA5STRING, "https", 0, 0);
    expect_ext_err(ext, n, 0, 1, SK_ERR_FORMAT,
        "extension version: must be 1");
    n = ext_build(ext, 1, 31, V_ASN1_IA5STRING, "https", 0, 0);
    expect_ext_err(ext, n, 0, 1, SK_ERR_FORMAT,
        "extension skSpkiHash: 31 bytes, must be 32");
    n = ext_build(ext, 1, 33, V_ASN1_IA5STRING, "https", 0, 0);
    expect_ext_err(ext, n, 0, 1, SK_ERR_FORMAT,
        "extension skSpkiHash: 33 bytes");
    n = ext_build(ext, 1, 32, V_ASN1_UTF8STRING, "https", 0, 0);
    expect_ext_err(ext, n, 0, 1, SK_ERR_FORMAT,
        "extension services: expected IA5STRING");
    n = ext_build(ext, 1, 32, V_ASN1_IA5STRING, "HTTPS", 0, 0);
    expect_ext_err(ext, n, 0, 1, SK_ERR_FORMAT, "extension: services: ");
    n = ext_build(ext, 1, 32, V_ASN1_IA5STRING, "", 0, 0);
    expect_ext_err(ext, n, 0, 1, SK_ERR_FORMAT, "extension: services: ");
    n = ext_build(ext, 1, 32, V_ASN1_IA5STRING, "https", 2, 0);
    expect_ext_err(ext, n, 0, 1, SK_ERR_FORMAT,
        "extension: trailing bytes after services");
    n = ext_build(ext, 1, 32, V_ASN1_IA5STRING, "https", 0, 2);
    expect_ext_err(ext, n, 0, 1, SK_ERR_FORMAT,
        "extension: trailing bytes after the SEQUENCE");
    expect_ext_err(ext, 0, 0, 1, SK_ERR_FORMAT, "extension: missing");

    /* The SEQUENCE's length in long form: BER, not DER. */
    n = ext_build(ext + 1, 1, 32, V_ASN1_IA5STRING, "https", 0, 0);
    ext[0] = 0x30;
    ext[1] = 0x81;
    expect_ext_err(ext, n + 1, 0, 1, SK_ERR_FORMAT,
        "extension: not in canonical DER");

    /* Not even a SEQUENCE. */
    ext[0] = 0x04; ext[1] = 0x00;
    expect_ext_err(ext, 2, 0, 1, SK_ERR_FORMAT,
        "extension: expected SEQUENCE");
    ext[0] = 0x30; ext[1] = 0x7f;
    expect_ext_err(ext, 2, 0, 1, SK_ERR_FORMAT,
        "extension: bad DER tag or length");
}


static void
test_malformed_der(void **state)
{
    const unsigned char *der;
    unsigned char       *copy;
    sk_carrier_t        *c, *cr = NULL;
    size_t               len;
    sk_err_t             err;

    (void) state;
    tu_assert_err(sk_carrier_from_der(&c, (const unsigned char *) "junk", 4,
        &err), &err, SK_ERR_FORMAT, "not a DER X.509 certificate");
    tu_assert_err(sk_carrier_from_der(&c, (const unsigned char *) "", 0,
        &err), &err, SK_ERR_FORMAT, "certificate: 0 bytes");

    cr = make_now(g.sk[0], g.op[0]);
    der = sk_carrier_get0_der(cr, &len);
    copy = malloc(len + 1);
    memcpy(copy, der, len);
    copy[len] = 0;
    tu_assert_err(sk_carrier_from_der(&c, copy, len + 1, &err), &err,
        SK_ERR_FORMAT, "trailing bytes after the certificate");
    tu_assert_err(sk_carrier_from_der(&c, copy, len - 1, &err), &err,
        SK_ERR_FORMAT, "not a DER X.509 certificate");
    free(copy);
    sk_carrier_free(cr);
}


static void
test_create_bad_params(void **state)
{
    sk_carrier_params_t  p;
    sk_carrier_t        *c;
    sk_key_t            *pub;
    const unsigned char *spki;
    size_t               len;
    sk_err_t             err;

    (void) state;
    p.name = "Example.COM";
    p.services = "https";
    p.not_before = g.now;
    p.not_after = g.now + 10;
    tu_assert_err(sk_carrier_create(&c, g.sk[0], g.op[0], &p, &err), &err,
        SK_ERR_FORMAT, "name: ");
    p.name = "example.com";
    p.services = "https,,smtp";
    tu_assert_err(sk_carrier_create(&c, g.sk[0], g.op[0], &p, &err), &err,
        SK_ERR_FORMAT, "services: ");
    p.services = "https";
    p.not_after = g.now - 10;
    tu_assert_err(sk_carrier_create(&c, g.sk[0], g.op[0], &p, &err), &err,
        SK_ERR_USAGE, "validity");
    p.not_after = g.now + 10;

    spki = sk_key_get0_spki(g.sk[0], &len);
    tu_assert_ok(sk_key_from_spki(&pub, spki, len, &err), &err);
    tu_assert_err(sk_carrier_create(&c, pub, g.op[0], &p, &err), &err,
        SK_ERR_USAGE, "private key");
    sk_key_free(pub);
}


/* The check `openssl verify -partial_chain -trusted sk-cert.pem` makes. */
static void
test_selfcert_verifies_carriers(void **state)
{
    X509_STORE     *store;
    X509_STORE_CTX *ctx;
    sk_carrier_t   *c;
    X509           *self;
    sk_err_t        err;
    int             s;

    (void) state;
    for (s = 0; s < NALG; s++) {
        tu_assert_ok(sk_carrier_sk_selfcert(&self, g.sk[s], "example.com",
            g.now - 3600, g.now + 86400 * 365, &err), &err);
        assert_int_equal(X509_verify(self, sk_key_get0_pkey(g.sk[s])), 1);
        assert_int_equal(X509_check_ca(self), 1);

        c = make_now(g.sk[s], g.op[(s + 1) % NALG]);
        store = X509_STORE_new();
        assert_int_equal(X509_STORE_add_cert(store, self), 1);
        X509_STORE_set_flags(store, X509_V_FLAG_PARTIAL_CHAIN);
        ctx = X509_STORE_CTX_new();
        assert_int_equal(X509_STORE_CTX_init(ctx, store,
            sk_carrier_get0_x509(c), NULL), 1);
        if (X509_verify_cert(ctx) != 1) {
            fail_msg("openssl rejects the carrier: %s",
                X509_verify_cert_error_string(
                    X509_STORE_CTX_get_error(ctx)));
        }
        X509_STORE_CTX_free(ctx);
        X509_STORE_free(store);
        sk_carrier_free(c);
        X509_free(self);
    }
    tu_assert_err(sk_carrier_sk_selfcert(&self, g.sk[0], "no_such..name",
        g.now, g.now + 10, &err), &err, SK_ERR_FORMAT, "name: ");
}


static STACK_OF(X509) *
make_chain(const unsigned char *const *ders, const size_t *lens, int n)
{
    STACK_OF(X509)      *st = sk_X509_new_null();
    const unsigned char *p;
    X509                *x;
    int                  i;

    for (i = 0; i < n; i++) {
        p = ders[i];
        x = d2i_X509(NULL, &p, (long) lens[i]);
        assert_non_null(x);
        sk_X509_push(st, x);
    }
    return st;
}


static void
test_find_in_chain(void **state)
{
    const unsigned char *ders[3];
    unsigned char       *leaf, *inter, *bad, ext[128];
    size_t               lens[3], n;
    sk_carrier_t        *c, *found;
    STACK_OF(X509)      *chain;
    sk_err_t             err;

    (void) state;
    c = make_now(g.sk[0], g.op[1]);
    leaf = make_cert(&lens[0], g.op[1], g.op[2], NULL, 0, 0, 0, 0);
    inter = make_cert(&lens[1], g.op[2], g.op[2], NULL, 0, 0, 0, 1);
    ders[0] = leaf;
    ders[1] = inter;
    ders[2] = sk_carrier_get0_der(c, &lens[2]);

    chain = make_chain(ders, lens, 3);
    tu_assert_ok(sk_carrier_find(&found, chain, &err), &err);
    assert_string_equal(sk_carrier_name(found), "example.com");
    sk_carrier_free(found);
    tu_assert_ok(sk_carrier_verify_chain(chain, g.sk[0], g.now, &err), &err);
    tu_assert_err(sk_carrier_verify_chain(chain, g.other_sk, g.now, &err),
        &err, SK_ERR_WRONG_SK, "made for SK");
    tu_assert_err(sk_carrier_verify_chain(chain, g.sk[0], g.now + 86401,
        &err), &err, SK_ERR_EXPIRED, "expired");
    sk_X509_pop_free(chain, X509_free);

    /* The intermediate's key is not the leaf's. */
    ders[0] = inter;
    lens[0] = lens[1];
    chain = make_chain(ders, lens, 3);
    tu_assert_err(sk_carrier_verify_chain(chain, g.sk[0], g.now, &err),
        &err, SK_ERR_KEY_MISMATCH, "not the leaf's");
    sk_X509_pop_free(chain, X509_free);

    chain = make_chain(ders, lens, 2);
    tu_assert_err(sk_carrier_find(&found, chain, &err), &err,
        SK_ERR_NOT_FOUND, "no carrier certificate in the chain "
        "(2 certificates");
    tu_assert_err(sk_carrier_verify_chain(chain, g.sk[0], g.now, &err),
        &err, SK_ERR_NOT_FOUND, "no carrier");
    sk_X509_pop_free(chain, X509_free);

    /* A broken carrier is an error, not an absence. */
    n = ext_build(ext, 2, 32, V_ASN1_IA5STRING, "https", 0, 0);
    bad = make_cert(&lens[2], g.op[1], g.sk[0], ext, n, 0, 1, 0);
    ders[2] = bad;
    chain = make_chain(ders, lens, 3);
    tu_assert_err(sk_carrier_find(&found, chain, &err), &err,
        SK_ERR_FORMAT, "chain certificate 3: extension version");
    sk_X509_pop_free(chain, X509_free);

    tu_assert_err(sk_carrier_verify_chain(NULL, g.sk[0], g.now, &err),
        &err, SK_ERR_FORMAT, "empty certificate chain");

    OPENSSL_free(bad);
    OPENSSL_free(leaf);
    OPENSSL_free(inter);
    sk_carrier_free(c);
}


static void
write_file(const char *path, const char *a, const char *b, const char *c)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(a, f);
    fputs(b, f);
    fputs(c, f);
    fclose(f);
}


static char *
plain_pem(void)
{
    unsigned char       *der;
    const unsigned char *p;
    size_t               len;
    X509                *x;
    BIO                 *bio = BIO_new(BIO_s_mem());
    char                *data, *out;
    long                 n;

    der = make_cert(&len, g.op[0], g.op[0], NULL, 0, 0, 0, 0);
    p = der;
    x = d2i_X509(NULL, &p, (long) len);
    PEM_write_bio_X509(bio, x);
    n = BIO_get_mem_data(bio, &data);
    out = strndup(data, (size_t) n);
    BIO_free(bio);
    X509_free(x);
    OPENSSL_free(der);
    return out;
}


static void
test_load_pem(void **state)
{
    sk_carrier_t  *c1, *c2, **cs;
    STACK_OF(X509) *chain;
    char          *dir, *path, *pem1, *pem2, *plain, *bad;
    size_t         n, len, i;
    sk_err_t       err;

    (void) state;
    dir = tu_tmpdir();
    path = tu_path(dir, "carriers.pem");
    c1 = make_now(g.sk[0], g.op[0]);
    c2 = make_now(g.sk[0], g.op[1]);
    tu_assert_ok(sk_carrier_to_pem(&pem1, &len, c1, &err), &err);
    assert_int_equal(strlen(pem1), len);
    tu_assert_ok(sk_carrier_to_pem(&pem2, &len, c2, &err), &err);
    plain = plain_pem();

    write_file(path, pem1, plain, pem2);
    tu_assert_ok(sk_carrier_load_pem(&cs, &n, path, &err), &err);
    assert_int_equal(n, 2);
    verify_op(cs[0], g.sk[0], g.op[0], g.now, &err);
    assert_int_equal(err.code, SK_OK);
    verify_op(cs[1], g.sk[0], g.op[1], g.now, &err);
    assert_int_equal(err.code, SK_OK);
    for (i = 0; i < n; i++) {
        sk_carrier_free(cs[i]);
    }
    free(cs);
    tu_assert_ok(sk_chain_load_pem(&chain, path, &err), &err);
    assert_int_equal(sk_X509_num(chain), 3);
    sk_X509_pop_free(chain, X509_free);

    write_file(path, plain, "", "");
    tu_assert_err(sk_carrier_load_pem(&cs, &n, path, &err), &err,
        SK_ERR_NOT_FOUND, "carriers.pem: no carrier certificate "
        "(1 without");

    write_file(path, "not a certificate\n", "", "");
    tu_assert_err(sk_carrier_load_pem(&cs, &n, path, &err), &err,
        SK_ERR_FORMAT, "carriers.pem: no PEM certificate");

    /* A damaged second block. */
    bad = strdup(pem2);
    bad[100] = '*';
    write_file(path, pem1, bad, "");
    tu_assert_err(sk_chain_load_pem(&chain, path, &err), &err,
        SK_ERR_FORMAT, "carriers.pem: certificate 2: malformed");
    free(bad);

    tu_assert_err(sk_carrier_load_pem(&cs, &n, "/nonexistent/c.pem", &err),
        &err, SK_ERR_SYSTEM, "/nonexistent/c.pem");

    free(pem1);
    free(pem2);
    free(plain);
    sk_carrier_free(c1);
    sk_carrier_free(c2);
    free(path);
    tu_rmtree(dir);
}


static void
test_free_null(void **state)
{
    (void) state;
    sk_carrier_free(NULL);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_verify_every_type),
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_wrong_sk),
        cmocka_unit_test(test_key_mismatch),
        cmocka_unit_test(test_time_window),
        cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_algorithm_mismatch),
        cmocka_unit_test(test_no_extension),
        cmocka_unit_test(test_malformed_extension),
        cmocka_unit_test(test_malformed_der),
        cmocka_unit_test(test_create_bad_params),
        cmocka_unit_test(test_selfcert_verifies_carriers),
        cmocka_unit_test(test_find_in_chain),
        cmocka_unit_test(test_load_pem),
        cmocka_unit_test(test_free_null),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
