/*
 * test_chain.c -- sk_chain_d2i_ee: an end-entity certificate decoded in
 * libsk's lean library context (chain.c) keeps its key when the key can be
 * an SK (Ed25519, P-256, RSA), that key equals the one in the default
 * context, its signature checks with an issuer key of the default
 * context, and a whole chain check passes; a key of another type is left
 * undecoded and the chain check refuses the certificate.
 */
#include "testutil.h"

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <sk/chain.h>


/* DER of a certificate for name with key's public key, issued and signed
 * (SHA-256) by ca_key under ca_name, valid 1 day; a CA's if name is
 * ca_name. */
static unsigned char *
issue(int *len, EVP_PKEY *key, const char *name, EVP_PKEY *ca_key,
    const char *ca_name)
{
    int              ca = strcmp(name, ca_name) == 0;
    X509_NAME       *subj, *iss;
    unsigned char   *der = NULL;
    X509_EXTENSION  *san;
    X509            *x = X509_new();
    char             dns[300];

    subj = X509_NAME_new();
    iss = X509_NAME_new();
    assert_non_null(x);
    assert_int_equal(X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC,
        (const unsigned char *) name, -1, -1, 0), 1);
    assert_int_equal(X509_NAME_add_entry_by_txt(iss, "CN", MBSTRING_ASC,
        (const unsigned char *) ca_name, -1, -1, 0), 1);
    snprintf(dns, sizeof(dns), "DNS:%s", name);
    san = ca ? X509V3_EXT_conf_nid(NULL, NULL, NID_basic_constraints,
                   "critical,CA:TRUE")
             : X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, dns);
    assert_non_null(san);
    assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
    assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 7), 1);
    assert_int_equal(X509_set_subject_name(x, subj), 1);
    assert_int_equal(X509_set_issuer_name(x, iss), 1);
    assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
    assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 86400));
    assert_int_equal(X509_set_pubkey(x, key), 1);
    assert_int_equal(X509_add_ext(x, san, -1), 1);
    assert_true(X509_sign(x, ca_key, EVP_sha256()) > 0);
    *len = i2d_X509(x, &der);
    assert_true(*len > 0);
    X509_EXTENSION_free(san);
    X509_NAME_free(subj);
    X509_NAME_free(iss);
    X509_free(x);
    return der;
}


static void
test_lean_ee(void **state)
{
    static const char *const  types[][2] = {
        { "ED25519", NULL }, { "EC", "P-256" }, { "RSA", NULL },
        { "ED448", NULL } };
    const unsigned char      *p;
    X509_STORE_CTX           *ctx;
    unsigned char            *der, *cader;
    X509_STORE               *roots;
    EVP_PKEY                 *ca, *key;
    size_t                    i;
    X509                     *ee, *root;
    int                       len, calen;

    (void) state;
    ca = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t) 2048);
    assert_non_null(ca);
    cader = issue(&calen, ca, "Test Root", ca, "Test Root");
    p = cader;
    root = d2i_X509(NULL, &p, calen);
    roots = X509_STORE_new();
    assert_int_equal(X509_STORE_add_cert(roots, root), 1);
    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        key = types[i][1] != NULL
            ? EVP_PKEY_Q_keygen(NULL, NULL, types[i][0], types[i][1])
            : strcmp(types[i][0], "RSA") == 0
            ? EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t) 2048)
            : EVP_PKEY_Q_keygen(NULL, NULL, types[i][0]);
        assert_non_null(key);
        der = issue(&len, key, "a.example", ca, "Test Root");
        p = der;
        ee = sk_chain_d2i_ee(&p, len);
        assert_non_null(ee);
        assert_ptr_equal(p, der + len);
        /* The signature checks with a key of the default context. */
        assert_int_equal(X509_verify(ee, ca), 1);
        assert_int_equal(X509_check_host(ee, "a.example", 9, 0, NULL), 1);
        ctx = X509_STORE_CTX_new();
        assert_int_equal(X509_STORE_CTX_init(ctx, roots, ee, NULL), 1);
        if (strcmp(types[i][0], "ED448") == 0) {
            /* Not an SK type: no key, and no chain. */
            assert_null(X509_get0_pubkey(ee));
            assert_int_not_equal(X509_verify_cert(ctx), 1);
        } else {
            assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(ee), key), 1);
            assert_int_equal(X509_verify_cert(ctx), 1);
        }
        X509_STORE_CTX_free(ctx);
        X509_free(ee);
        OPENSSL_free(der);
        EVP_PKEY_free(key);
    }
    X509_STORE_free(roots);
    X509_free(root);
    OPENSSL_free(cader);
    EVP_PKEY_free(ca);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_lean_ee),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
