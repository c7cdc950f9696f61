/*
 * test_mint.c -- the local CA of sk/mint.h: made once in a directory of
 * the user's own, refused when others may reach its key; what it mints
 * (one name, a server certificate of a day, chained to the CA) and the
 * per-name cache.
 */
#include "testutil.h"

#include <sys/stat.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <sk/mint.h>

#define NOW  ((time_t) 1800000000)


static sk_mint_t *
mint_open(const char *dir, int *created)
{
    sk_mint_t  *m;
    sk_err_t    err;

    tu_assert_ok(sk_mint_open(&m, created, dir, "alice@host", NOW, &err),
        &err);
    return m;
}


static void
test_first_run(void **state)
{
    char         *tmp = tu_tmpdir(), *dir = tu_path(tmp, "ca"), *key;
    sk_mint_t    *m;
    struct stat   st;
    unsigned char *a = NULL, *b = NULL;
    int           created, alen, blen;
    char          cn[128];

    (void) state;
    m = mint_open(dir, &created);
    assert_true(created);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    key = tu_path(dir, SK_MINT_KEY_FILE);
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(X509_check_ca(sk_mint_get0_ca(m)), 1);
    assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(
        sk_mint_get0_ca(m)), NID_commonName, cn, sizeof(cn)) > 0);
    assert_non_null(strstr(cn, "for alice@host"));
    alen = i2d_X509(sk_mint_get0_ca(m), &a);
    sk_mint_free(m);

    /* The second run reads the same CA. */
    m = mint_open(dir, &created);
    assert_false(created);
    blen = i2d_X509(sk_mint_get0_ca(m), &b);
    assert_int_equal(alen, blen);
    assert_memory_equal(a, b, (size_t) alen);
    OPENSSL_free(a);
    OPENSSL_free(b);
    sk_mint_free(m);
    free(key);
    free(dir);
    tu_rmtree(tmp);
}


static void
test_refused(void **state)
{
    char       *tmp = tu_tmpdir(), *dir = tu_path(tmp, "ca"), *key, *pem;
    sk_mint_t  *m;
    sk_err_t    err;
    int         created;

    (void) state;
    m = mint_open(dir, &created);
    sk_mint_free(m);
    key = tu_path(dir, SK_MINT_KEY_FILE);
    pem = tu_path(dir, SK_MINT_CERT_FILE);

    assert_int_equal(chmod(key, 0640), 0);
    tu_assert_err(sk_mint_open(&m, &created, dir, "a", NOW, &err), &err,
        SK_ERR_PERM, "permissions 0640 are too open");
    assert_null(m);
    assert_int_equal(chmod(key, 0600), 0);

    assert_int_equal(chmod(dir, 0711), 0);
    tu_assert_err(sk_mint_open(&m, &created, dir, "a", NOW, &err), &err,
        SK_ERR_PERM, "permissions 0711 are too open");
    assert_int_equal(chmod(dir, 0700), 0);

    /* The CA expired: said, not replaced in silence. */
    tu_assert_err(sk_mint_open(&m, &created, dir, "a",
        NOW + SK_MINT_CA_LIFETIME + 3600, &err), &err, SK_ERR_EXPIRED,
        "has expired");

    /* Another key's certificate in ca.pem. */
    assert_int_equal(unlink(key), 0);
    tu_assert_err(sk_mint_open(&m, &created, dir, "a", NOW, &err), &err,
        SK_ERR_KEY_MISMATCH, "not the certificate of ca.key");
    free(key);
    free(pem);
    free(dir);
    tu_rmtree(tmp);
}


static void
test_mint(void **state)
{
    char            *tmp = tu_tmpdir(), *dir = tu_path(tmp, "ca");
    sk_mint_t       *m;
    sk_err_t         err;
    X509            *x, *y;
    X509_STORE      *store;
    X509_STORE_CTX  *xs;
    int              created;

    (void) state;
    m = mint_open(dir, &created);
    tu_assert_ok(sk_mint_cert(&x, m, "www.example.com", NOW, &err), &err);
    assert_int_equal(X509_check_host(x, "www.example.com", 0, 0, NULL), 1);
    assert_int_equal(X509_check_host(x, "example.com", 0, 0, NULL), 0);
    assert_int_equal(X509_check_host(x, "evil.www.example.com", 0, 0,
        NULL), 0);
    assert_int_equal(X509_check_ca(x), 0);
    assert_int_equal(X509_check_purpose(x, X509_PURPOSE_SSL_SERVER, 0), 1);
    assert_int_equal(X509_check_purpose(x, X509_PURPOSE_SSL_CLIENT, 0), 0);
    assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(x), sk_mint_get0_key(m)),
        1);
    /* A day, and chained to the CA. */
    assert_true(X509_cmp_time(X509_get0_notAfter(x),
        &(time_t) { NOW + SK_MINT_LIFETIME - 1 }) > 0);
    assert_true(X509_cmp_time(X509_get0_notAfter(x),
        &(time_t) { NOW + SK_MINT_LIFETIME + 1 }) < 0);
    store = X509_STORE_new();
    xs = X509_STORE_CTX_new();
    assert_int_equal(X509_STORE_add_cert(store, sk_mint_get0_ca(m)), 1);
    assert_int_equal(X509_STORE_CTX_init(xs, store, x, NULL), 1);
    X509_STORE_CTX_set_time(xs, 0, NOW);
    assert_int_equal(X509_verify_cert(xs), 1);
    X509_STORE_CTX_free(xs);
    X509_STORE_free(store);

    /* Cached; minted again with less than an hour left. */
    tu_assert_ok(sk_mint_cert(&y, m, "www.example.com", NOW + 60, &err),
        &err);
    assert_ptr_equal(x, y);
    assert_int_equal(sk_mint_count(m), 1);
    tu_assert_ok(sk_mint_cert(&y, m, "www.example.com",
        NOW + SK_MINT_LIFETIME - 1800, &err), &err);
    assert_int_equal(sk_mint_count(m), 2);

    tu_assert_err(sk_mint_cert(&y, m, "not a name", NOW, &err), &err,
        SK_ERR_FORMAT, "mint");
    sk_mint_free(m);
    free(dir);
    tu_rmtree(tmp);
}


static void
test_cache_bound(void **state)
{
    char       *tmp = tu_tmpdir(), *dir = tu_path(tmp, "ca"), name[64];
    sk_mint_t  *m;
    sk_err_t    err;
    X509       *x;
    int         created, i;

    (void) state;
    m = mint_open(dir, &created);
    for (i = 0; i <= SK_MINT_CACHE_MAX; i++) {
        snprintf(name, sizeof(name), "n%d.example.com", i);
        tu_assert_ok(sk_mint_cert(&x, m, name, NOW, &err), &err);
    }
    assert_int_equal(sk_mint_count(m), SK_MINT_CACHE_MAX + 1);
    /* The last one is still held; the first, least recently used, went. */
    tu_assert_ok(sk_mint_cert(&x, m, name, NOW, &err), &err);
    assert_int_equal(sk_mint_count(m), SK_MINT_CACHE_MAX + 1);
    tu_assert_ok(sk_mint_cert(&x, m, "n0.example.com", NOW, &err), &err);
    assert_int_equal(sk_mint_count(m), SK_MINT_CACHE_MAX + 2);
    sk_mint_free(m);
    sk_mint_free(NULL);
    free(dir);
    tu_rmtree(tmp);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_run),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_mint),
        cmocka_unit_test(test_cache_bound),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
