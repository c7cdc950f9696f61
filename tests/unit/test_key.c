/*
 * test_key.c -- keys: RFC 8032 vectors, generation, files, SPKI, signing.
 */
#include <sys/stat.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <sk/keyfile.h>

#include "testutil.h"

typedef struct {
    const char *seed, *pub, *msg, *sig;
} rfc8032_vector_t;

/* RFC 8032, section 7.1, tests 1-3 and SHA(abc). */
static const rfc8032_vector_t rfc8032[] = {
    { "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
      "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
      "",
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
      "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b" },
    { "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
      "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
      "72",
      "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
      "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00" },
    { "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
      "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
      "af82",
      "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac"
      "18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a" },
};



static void
test_rfc8032_vectors(void **state)
{
    unsigned char  seed[32], pub[32], got_pub[32], msg[8], want[64], *sig;
    size_t         i, mlen, slen;
    EVP_PKEY      *pkey;
    sk_key_t      *key;
    sk_err_t       err;

    (void) state;
    for (i = 0; i < sizeof(rfc8032) / sizeof(rfc8032[0]); i++) {
        tu_unhex(seed, rfc8032[i].seed);
        tu_unhex(pub, rfc8032[i].pub);
        mlen = tu_unhex(msg, rfc8032[i].msg);
        tu_unhex(want, rfc8032[i].sig);

        pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
        assert_non_null(pkey);
        tu_assert_ok(sk_key_from_pkey(&key, pkey, &err), &err);
        EVP_PKEY_free(pkey);

        assert_int_equal(sk_key_alg(key), SK_KEY_ED25519);
        assert_true(sk_key_has_private(key));
        tu_assert_ok(sk_key_ed25519_public(got_pub, key, &err), &err);
        assert_memory_equal(got_pub, pub, 32);

        tu_assert_ok(sk_key_sign(&sig, &slen, key, msg, mlen, &err), &err);
        assert_int_equal(slen, 64);
        assert_memory_equal(sig, want, 64);
        tu_assert_ok(sk_key_verify(key, sig, slen, msg, mlen, &err), &err);

        /* A flipped bit anywhere in the signature must fail. */
        sig[i * 7] ^= 0x01;
        tu_assert_err(sk_key_verify(key, sig, slen, msg, mlen, &err), &err,
            SK_ERR_SIGNATURE, "does not verify");
        free(sig);
        sk_key_free(key);
    }
}


static void
test_sign_verify_each_alg(void **state)
{
    static const sk_key_alg_t algs[] = { SK_KEY_ED25519, SK_KEY_P256,
                                         SK_KEY_RSA };
    static const unsigned char msg[] = "Bind: 1\n";
    unsigned char *sig;
    size_t         i, slen;
    sk_key_t      *key, *other;
    sk_err_t       err;

    (void) state;
    for (i = 0; i < 3; i++) {
        tu_assert_ok(sk_key_generate(&key, algs[i], 2048, &err), &err);
        tu_assert_ok(sk_key_generate(&other, algs[i], 2048, &err), &err);
        assert_int_equal(sk_key_alg(key), algs[i]);
        assert_string_equal(sk_key_type_name(key),
            algs[i] == SK_KEY_RSA ? "RSA" : "ECC");

        tu_assert_ok(sk_key_sign(&sig, &slen, key, msg, sizeof(msg), &err),
            &err);
        tu_assert_ok(sk_key_verify(key, sig, slen, msg, sizeof(msg), &err),
            &err);
        tu_assert_err(sk_key_verify(other, sig, slen, msg, sizeof(msg), &err),
            &err, SK_ERR_SIGNATURE, "does not verify");
        tu_assert_err(sk_key_verify(key, sig, slen, msg, sizeof(msg) - 1,
            &err), &err, SK_ERR_SIGNATURE, "does not verify");
        tu_assert_err(sk_key_verify(key, sig, slen / 2, msg, sizeof(msg),
            &err), &err, SK_ERR_SIGNATURE, "does not verify");
        free(sig);
        sk_key_free(key);
        sk_key_free(other);
    }
}


static void
test_files_and_permissions(void **state)
{
    char          *dir = tu_tmpdir(), *priv = tu_path(dir, "sk.key"),
                  *pub = tu_path(dir, "sk.pub");
    char           fp1[SK_FINGERPRINT_SIZE], fp2[SK_FINGERPRINT_SIZE];
    struct stat    st;
    sk_key_t      *key, *loaded, *public;
    sk_err_t       err;

    (void) state;
    tu_assert_ok(sk_key_generate(&key, SK_KEY_ED25519, 0, &err), &err);
    tu_assert_ok(sk_key_save_private(key, priv, &err), &err);
    assert_int_equal(stat(priv, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);

    /* Never clobbered. */
    tu_assert_err(sk_key_save_private(key, priv, &err), &err, SK_ERR_EXISTS,
        "refusing to overwrite");

    tu_assert_ok(sk_key_load_private(&loaded, priv, &err), &err);
    assert_true(sk_key_has_private(loaded));
    sk_key_fingerprint(fp1, key);
    sk_key_fingerprint(fp2, loaded);
    assert_string_equal(fp1, fp2);
    assert_int_equal(strncmp(fp1, "sha256:", 7), 0);
    assert_int_equal(strlen(fp1), 71);

    tu_assert_ok(sk_key_save_public(key, pub, &err), &err);
    tu_assert_ok(sk_key_load_public(&public, pub, &err), &err);
    assert_false(sk_key_has_private(public));
    sk_key_fingerprint(fp2, public);
    assert_string_equal(fp1, fp2);
    sk_key_free(public);

    /* The public half of a private key file. */
    tu_assert_ok(sk_key_load_public(&public, priv, &err), &err);
    assert_false(sk_key_has_private(public));
    sk_key_free(public);

    /* Group- or world-readable private keys are refused, naming both. */
    assert_int_equal(chmod(priv, 0644), 0);
    tu_assert_err(sk_key_load_private(&public,
        priv, &err), &err, SK_ERR_PERM, "permissions 0644 are too open");
    assert_non_null(strstr(err.msg, priv));
    assert_int_equal(chmod(priv, 0640), 0);
    tu_assert_err(sk_key_load_private(&public, priv, &err), &err,
        SK_ERR_PERM, "0640");

    tu_assert_err(sk_key_load_private(&public, pub, &err), &err, SK_ERR_PERM,
        "too open");
    assert_int_equal(chmod(pub, 0600), 0);
    tu_assert_err(sk_key_load_private(&public, pub, &err), &err,
        SK_ERR_CRYPTO, "not a PEM private key");
    tu_assert_err(sk_key_load_public(&public, "/nonexistent/x.pub", &err),
        &err, SK_ERR_SYSTEM, "/nonexistent/x.pub: cannot open");

    sk_key_free(loaded);
    sk_key_free(key);
    free(priv);
    free(pub);
    tu_rmtree(dir);
}


/* A daemon's key file: made once, its public half never replaced. */
static void
test_keyfile(void **state)
{
    char      *dir = tu_tmpdir(), *priv = tu_path(dir, "d.key"),
              *pub = tu_path(dir, "d.pub"), *pem, *again;
    char       fp1[SK_FINGERPRINT_SIZE], fp2[SK_FINGERPRINT_SIZE];
    size_t     len;
    sk_key_t  *key, *other;
    sk_err_t   err;
    int        created;

    (void) state;
    /* Not allowed to make one: nothing made. */
    tu_assert_err(sk_keyfile_open(&key, &created, priv, pub, 0, &err), &err,
        SK_ERR_NOT_FOUND, "d.key: missing");
    assert_int_equal(tu_count_entries(dir), 0);

    tu_assert_ok(sk_keyfile_open(&key, &created, priv, pub, 1, &err), &err);
    assert_int_equal(created, 1);
    tu_assert_ok(sk_file_read(&pem, &len, pub, 4096, &err), &err);
    sk_key_fingerprint(fp1, key);
    sk_key_free(key);

    /* Loaded again, not made. */
    tu_assert_ok(sk_keyfile_open(&key, &created, priv, pub, 1, &err), &err);
    assert_int_equal(created, 0);
    sk_key_fingerprint(fp2, key);
    assert_string_equal(fp1, fp2);
    sk_key_free(key);

    /* The key lost: no new one while its public half is there. */
    assert_int_equal(unlink(priv), 0);
    tu_assert_err(sk_keyfile_open(&key, &created, priv, pub, 1, &err), &err,
        SK_ERR_NOT_FOUND, "holds its public half");
    assert_int_equal(access(priv, F_OK), -1);
    tu_assert_ok(sk_file_read(&again, &len, pub, 4096, &err), &err);
    assert_string_equal(again, pem);
    free(again);

    /* Another key: refused, the public file left as it was. */
    tu_assert_ok(sk_key_generate(&other, SK_KEY_ED25519, 0, &err), &err);
    tu_assert_ok(sk_key_save_private(other, priv, &err), &err);
    sk_key_free(other);
    tu_assert_err(sk_keyfile_open(&key, &created, priv, pub, 1, &err), &err,
        SK_ERR_KEY_MISMATCH, "not the public half of");
    tu_assert_ok(sk_file_read(&again, &len, pub, 4096, &err), &err);
    assert_string_equal(again, pem);
    free(again);

    /* A lost public half is written again from the key. */
    assert_int_equal(unlink(pub), 0);
    tu_assert_ok(sk_keyfile_open(&key, &created, priv, pub, 0, &err), &err);
    assert_int_equal(created, 0);
    assert_int_equal(access(pub, F_OK), 0);
    sk_key_free(key);

    free(pem);
    free(priv);
    free(pub);
    tu_rmtree(dir);
}


static void
test_spki_strict(void **state)
{
    const unsigned char *spki;
    unsigned char        buf[1024], h1[32], h2[32];
    size_t               len;
    sk_key_t            *key, *again;
    EVP_PKEY            *weak;
    sk_err_t             err;

    (void) state;
    tu_assert_ok(sk_key_generate(&key, SK_KEY_P256, 0, &err), &err);
    spki = sk_key_get0_spki(key, &len);
    assert_true(len < sizeof(buf) - 1);
    tu_assert_ok(sk_key_from_spki(&again, spki, len, &err), &err);
    sk_key_spki_sha256(h1, key);
    sk_key_spki_sha256(h2, again);
    assert_memory_equal(h1, h2, 32);
    assert_false(sk_key_has_private(again));
    sk_key_free(again);

    memcpy(buf, spki, len);
    buf[len] = 0;
    tu_assert_err(sk_key_from_spki(&again, buf, len + 1, &err), &err,
        SK_ERR_FORMAT, "trailing bytes");
    tu_assert_err(sk_key_from_spki(&again, buf, len - 1, &err), &err,
        SK_ERR_CRYPTO, "not a DER SubjectPublicKeyInfo");
    sk_key_free(key);

    /* Short RSA and other curves are refused with the reason. */
    weak = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t) 1024);
    assert_non_null(weak);
    tu_assert_err(sk_key_from_pkey(&key, weak, &err), &err, SK_ERR_FORMAT,
        "1024 bits is too short");
    EVP_PKEY_free(weak);
    weak = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    assert_non_null(weak);
    tu_assert_err(sk_key_from_pkey(&key, weak, &err), &err, SK_ERR_FORMAT,
        "only P-256");
    EVP_PKEY_free(weak);
    tu_assert_err(sk_key_generate(&key, SK_KEY_RSA, 1024, &err), &err,
        SK_ERR_USAGE, "at least 2048");
}


/* Ed25519 SPKIs take a raw fast path (key.c): it must give the same key,
 * fingerprint and signatures as OpenSSL's decoder, and be as strict. */
static void
test_spki_ed25519_fast_path(void **state)
{
    const unsigned char *spki;
    unsigned char        buf[64], h1[32], h2[32], *sig, *der = NULL;
    size_t               len, slen;
    sk_key_t            *key, *again;
    sk_err_t             err;
    int                  n;

    (void) state;
    tu_assert_ok(sk_key_generate(&key, SK_KEY_ED25519, 0, &err), &err);
    spki = sk_key_get0_spki(key, &len);
    assert_int_equal(len, 44);
    n = i2d_PUBKEY(sk_key_get0_pkey(key), &der);
    assert_int_equal(n, 44);
    assert_memory_equal(der, spki, 44);
    OPENSSL_free(der);
    tu_assert_ok(sk_key_from_spki(&again, spki, len, &err), &err);
    assert_int_equal(sk_key_alg(again), SK_KEY_ED25519);
    assert_false(sk_key_has_private(again));
    sk_key_spki_sha256(h1, key);
    sk_key_spki_sha256(h2, again);
    assert_memory_equal(h1, h2, 32);
    tu_assert_ok(sk_key_sign(&sig, &slen, key, (const unsigned char *) "m",
        1, &err), &err);
    tu_assert_ok(sk_key_verify(again, sig, slen, (const unsigned char *) "m",
        1, &err), &err);
    free(sig);
    sk_key_free(again);

    /* Off the exact form: the decoder path, which refuses it. */
    memcpy(buf, spki, len);
    buf[1] = 0x2b;                          /* outer length off by one */
    assert_int_not_equal(sk_key_from_spki(&again, buf, len, &err), 0);
    memcpy(buf, spki, len);
    buf[len] = 0;
    tu_assert_err(sk_key_from_spki(&again, buf, len + 1, &err), &err,
        SK_ERR_FORMAT, "trailing bytes");
    sk_key_free(key);
}


/* Ed25519 signs and verifies with libsodium (key.c): the signatures are
 * OpenSSL's byte for byte and OpenSSL verifies them; a key or R of small
 * order, which lets anyone make a "signature" that OpenSSL takes, is
 * refused. */
static void
test_ed25519_libsodium(void **state)
{
    static const unsigned char  msg[] = "Bind: example.org\n";
    unsigned char               spki[44], sig[64], *ours, *theirs;
    const unsigned char        *pub;
    EVP_MD_CTX                 *ctx;
    size_t                      i, len, olen, tlen = 64;
    sk_key_t                   *key, *weak;
    sk_err_t                    err;

    (void) state;
    for (i = 0; i < 8; i++) {
        tu_assert_ok(sk_key_generate(&key, SK_KEY_ED25519, 0, &err), &err);
        tu_assert_ok(sk_key_sign(&ours, &olen, key, msg, sizeof(msg) - i,
            &err), &err);
        assert_int_equal(olen, 64);
        theirs = malloc(tlen);
        assert_non_null(theirs);
        ctx = EVP_MD_CTX_new();
        assert_int_equal(EVP_DigestSignInit(ctx, NULL, NULL, NULL,
            sk_key_get0_pkey(key)), 1);
        assert_int_equal(EVP_DigestSign(ctx, theirs, &tlen, msg,
            sizeof(msg) - i), 1);
        EVP_MD_CTX_free(ctx);
        assert_memory_equal(ours, theirs, 64);
        ctx = EVP_MD_CTX_new();
        assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, NULL, NULL,
            sk_key_get0_pkey(key)), 1);
        assert_int_equal(EVP_DigestVerify(ctx, ours, 64, msg,
            sizeof(msg) - i), 1);
        EVP_MD_CTX_free(ctx);
        free(ours);
        free(theirs);
        sk_key_free(key);
    }

    /* The neutral point as the key, as R, and S = 0: [S]B = R + [k]A
     * for every message. */
    tu_assert_ok(sk_key_generate(&key, SK_KEY_ED25519, 0, &err), &err);
    pub = sk_key_get0_spki(key, &len);
    assert_int_equal(len, sizeof(spki));
    memcpy(spki, pub, 12);
    sk_key_free(key);
    memset(spki + 12, 0, 32);
    spki[12] = 0x01;
    memset(sig, 0, sizeof(sig));
    sig[0] = 0x01;
    tu_assert_ok(sk_key_from_spki(&weak, spki, sizeof(spki), &err), &err);
    ctx = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, NULL, NULL,
        sk_key_get0_pkey(weak)), 1);
    assert_int_equal(EVP_DigestVerify(ctx, sig, 64, msg, sizeof(msg)), 1);
    EVP_MD_CTX_free(ctx);
    tu_assert_err(sk_key_verify(weak, sig, 64, msg, sizeof(msg), &err), &err,
        SK_ERR_SIGNATURE, "does not verify");
    sk_key_free(weak);
}


static void
test_alg_names(void **state)
{
    sk_key_alg_t alg;
    sk_err_t     err;

    (void) state;
    tu_assert_ok(sk_key_alg_parse(&alg, "p256", &err), &err);
    assert_int_equal(alg, SK_KEY_P256);
    assert_string_equal(sk_key_alg_name(alg), "p256");
    tu_assert_err(sk_key_alg_parse(&alg, "dsa", &err), &err, SK_ERR_USAGE,
        "unknown key type \"dsa\"");
    sk_key_free(NULL);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc8032_vectors),
        cmocka_unit_test(test_sign_verify_each_alg),
        cmocka_unit_test(test_files_and_permissions),
        cmocka_unit_test(test_keyfile),
        cmocka_unit_test(test_spki_strict),
        cmocka_unit_test(test_spki_ed25519_fast_path),
        cmocka_unit_test(test_ed25519_libsodium),
        cmocka_unit_test(test_alg_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
