/*
 * key.c -- sovereign and operational keys over OpenSSL's EVP_PKEY.
 *
 * A key carries its DER SubjectPublicKeyInfo and its SHA-256, computed
 * once, because fingerprints and SPKI comparisons are on every hot path
 * (carrier verification, cache lookups).
 */
#include <pthread.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <sodium.h>

#include <sk/file.h>
#include <sk/key.h>
#include <sk/merkle.h>

#include "internal.h"

#define SK_KEY_FILE_MAX  (64 * 1024)

/*
 * Ed25519 signs and verifies with libsodium: OpenSSL 3.0's EVP path, a
 * context made and a provider dispatched for each call, costs 1.5 times as
 * much to sign and twice as much to verify on the bench machine
 * (docs/benchmarks.md), and every append, mirror sync and client decision
 * checks Ed25519 signatures.  The signatures are the same bytes (RFC 8032
 * is deterministic).  libsodium's verify is the stricter: besides S < L it
 * refuses a non-canonical or small-order key or R, which OpenSSL takes;
 * what it accepts, OpenSSL accepts.  The other algorithms and every
 * encoding stay OpenSSL's.
 */
struct sk_key_s {
    EVP_PKEY      *pkey;
    sk_key_alg_t   alg;
    int            has_private;
    unsigned char *spki;                        /* DER, OPENSSL_malloc()ed */
    size_t         spki_len;
    unsigned char  spki_sha256[SK_SHA256_BYTES];
    unsigned char  ed_pk[crypto_sign_PUBLICKEYBYTES];  /* Ed25519: raw */
    unsigned char *ed_sk;       /* Ed25519 private: libsodium's seed || pk */
};

/* SEQUENCE { SEQUENCE { OID 1.3.101.112 } BIT STRING (32 bytes) } */
static const unsigned char sk_ed25519_spki_prefix[12] = {
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00
};

static int sk_key_wrap_spki(sk_key_t **out, EVP_PKEY *pkey,
    const unsigned char *spki, size_t spki_len, sk_err_t *err);
static pthread_once_t  sk_sodium_once = PTHREAD_ONCE_INIT;
static int             sk_sodium_ok;


static void
sk_sodium_init(void)
{
    sk_sodium_ok = sodium_init() >= 0;
}


/* An Ed25519 key's raw halves for libsodium: the public key from the
 * SPKI (its one form: prefix, then the key); the private one, if any,
 * from the seed, checked against the public. */
static int
sk_key_ed25519_load(sk_key_t *key, sk_err_t *err)
{
    unsigned char  seed[crypto_sign_SEEDBYTES], pk[crypto_sign_PUBLICKEYBYTES];
    int            ok;

    pthread_once(&sk_sodium_once, sk_sodium_init);
    if (!sk_sodium_ok) {
        return sk_err_set(err, SK_ERR_SYSTEM, "libsodium: cannot start");
    }
    if (key->spki_len != sizeof(sk_ed25519_spki_prefix) + sizeof(pk)) {
        return sk_err_set(err, SK_ERR_FORMAT, "not an Ed25519 public key");
    }
    memcpy(key->ed_pk, key->spki + sizeof(sk_ed25519_spki_prefix),
        sizeof(key->ed_pk));
    if (!key->has_private) {
        return 0;
    }
    key->ed_sk = malloc(crypto_sign_SECRETKEYBYTES);
    if (key->ed_sk == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    if (sk_key_ed25519_seed(seed, key, err) != 0) {
        sodium_memzero(seed, sizeof(seed));
        return -1;
    }
    ok = crypto_sign_seed_keypair(pk, key->ed_sk, seed) == 0
        && memcmp(pk, key->ed_pk, sizeof(pk)) == 0;
    sodium_memzero(seed, sizeof(seed));
    if (!ok) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "Ed25519 private key does not match its public key");
    }
    return 0;
}


static int
sk_pkey_alg(sk_key_alg_t *alg, EVP_PKEY *pkey, sk_err_t *err)
{
    char  group[64];
    int   bits;

    switch (EVP_PKEY_get_base_id(pkey)) {
    case EVP_PKEY_ED25519:
        *alg = SK_KEY_ED25519;
        return 0;

    case EVP_PKEY_EC:
        if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME,
                group, sizeof(group), NULL) != 1
            || strcmp(group, "prime256v1") != 0)
        {
            ERR_clear_error();
            return sk_err_set(err, SK_ERR_FORMAT,
                "unsupported elliptic curve (only P-256 is accepted)");
        }
        *alg = SK_KEY_P256;
        return 0;

    case EVP_PKEY_RSA:
        bits = EVP_PKEY_get_bits(pkey);
        if (bits < SK_RSA_MIN_BITS) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "RSA key of %d bits is too short (minimum %d)", bits,
                SK_RSA_MIN_BITS);
        }
        *alg = SK_KEY_RSA;
        return 0;

    default:
        return sk_err_set(err, SK_ERR_FORMAT,
            "unsupported key type \"%s\" (ed25519, P-256 or RSA)",
            OBJ_nid2sn(EVP_PKEY_get_base_id(pkey)));
    }
}


static int
sk_pkey_has_private(EVP_PKEY *pkey, sk_key_alg_t alg)
{
    BIGNUM        *bn = NULL;
    unsigned char  raw[32];
    size_t         len = sizeof(raw);
    int            have;

    if (alg == SK_KEY_ED25519) {
        have = EVP_PKEY_get_raw_private_key(pkey, raw, &len) == 1;
        OPENSSL_cleanse(raw, sizeof(raw));
    } else {
        have = EVP_PKEY_get_bn_param(pkey, alg == SK_KEY_RSA
                   ? OSSL_PKEY_PARAM_RSA_D : OSSL_PKEY_PARAM_PRIV_KEY,
                   &bn) == 1;
        BN_clear_free(bn);
    }
    ERR_clear_error();
    return have;
}


/* Takes ownership of pkey (freed on failure too). */
static int
sk_key_wrap(sk_key_t **out, EVP_PKEY *pkey, sk_err_t *err)
{
    return sk_key_wrap_spki(out, pkey, NULL, 0, err);
}


/* The same, with pkey's SPKI already at hand in canonical DER (or NULL:
 * encode it). */
static int
sk_key_wrap_spki(sk_key_t **out, EVP_PKEY *pkey, const unsigned char *spki,
    size_t spki_len, sk_err_t *err)
{
    sk_key_t      *key;
    unsigned char *der = NULL;
    int            len;

    key = calloc(1, sizeof(*key));
    if (key == NULL) {
        EVP_PKEY_free(pkey);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    key->pkey = pkey;
    if (sk_pkey_alg(&key->alg, pkey, err) != 0) {
        goto fail;
    }
    if (spki != NULL) {
        der = OPENSSL_memdup(spki, spki_len);
        len = der != NULL ? (int) spki_len : 0;
    } else {
        len = i2d_PUBKEY(pkey, &der);
    }
    if (len <= 0) {
        sk_err_crypto(err, "cannot encode public key");
        goto fail;
    }
    key->spki = der;
    key->spki_len = (size_t) len;
    sk_merkle_digest(key->spki_sha256, der, key->spki_len);
    key->has_private = sk_pkey_has_private(pkey, key->alg);
    if (key->alg == SK_KEY_ED25519 && sk_key_ed25519_load(key, err) != 0) {
        goto fail;
    }
    *out = key;
    return 0;

fail:
    sk_key_free(key);
    return -1;
}


int
sk_key_alg_parse(sk_key_alg_t *alg, const char *s, sk_err_t *err)
{
    if (strcmp(s, "ed25519") == 0) {
        *alg = SK_KEY_ED25519;
    } else if (strcmp(s, "p256") == 0 || strcmp(s, "ecdsa") == 0) {
        *alg = SK_KEY_P256;
    } else if (strcmp(s, "rsa") == 0) {
        *alg = SK_KEY_RSA;
    } else {
        return sk_err_set(err, SK_ERR_USAGE,
            "unknown key type \"%s\" (ed25519, p256 or rsa)", s);
    }
    return 0;
}


const char *
sk_key_alg_name(sk_key_alg_t alg)
{
    switch (alg) {
    case SK_KEY_ED25519: return "ed25519";
    case SK_KEY_P256:    return "p256";
    case SK_KEY_RSA:     return "rsa";
    }
    return "unknown";
}


int
sk_key_generate(sk_key_t **key, sk_key_alg_t alg, int rsa_bits,
    sk_err_t *err)
{
    EVP_PKEY *pkey;

    switch (alg) {
    case SK_KEY_ED25519:
        pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
        break;
    case SK_KEY_P256:
        pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        break;
    case SK_KEY_RSA:
        if (rsa_bits == 0) {
            rsa_bits = 3072;
        }
        if (rsa_bits < SK_RSA_MIN_BITS) {
            return sk_err_set(err, SK_ERR_USAGE,
                "RSA keys must have at least %d bits", SK_RSA_MIN_BITS);
        }
        pkey = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t) rsa_bits);
        break;
    default:
        return sk_err_set(err, SK_ERR_USAGE, "unknown key algorithm");
    }
    if (pkey == NULL) {
        return sk_err_crypto(err, "key generation failed");
    }
    return sk_key_wrap(key, pkey, err);
}


static int
sk_key_read_pem(char **buf, size_t *len, const char *path, sk_err_t *err)
{
    return sk_file_read(buf, len, path, SK_KEY_FILE_MAX, err);
}


int
sk_key_load_private(sk_key_t **key, const char *path, sk_err_t *err)
{
    EVP_PKEY *pkey;
    BIO      *bio;
    char     *buf;
    size_t    len;

    /* Checked on the descriptor that is read: no window between the
     * mode check and the read. */
    if (sk_file_read_private(&buf, &len, path, SK_KEY_FILE_MAX, err) != 0) {
        return -1;
    }
    bio = BIO_new_mem_buf(buf, (int) len);
    /* An empty passphrase callback: encrypted keys fail instead of
     * prompting on a daemon's terminal. */
    pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *) "") : NULL;
    BIO_free(bio);
    OPENSSL_cleanse(buf, len);
    free(buf);
    if (pkey == NULL) {
        sk_err_crypto(err, "%s: not a PEM private key (PKCS#8, unencrypted)",
            path);
        return -1;
    }
    if (sk_key_wrap(key, pkey, err) != 0) {
        return sk_err_prefix(err, "%s", path);
    }
    return 0;
}


int
sk_key_load_public(sk_key_t **key, const char *path, sk_err_t *err)
{
    EVP_PKEY      *pkey = NULL;
    sk_key_t      *priv;
    X509          *x;
    BIO           *bio;
    unsigned char *der;
    char          *buf;
    size_t         len;
    long           derlen;
    int            rc;

    if (sk_key_read_pem(&buf, &len, path, err) != 0) {
        return -1;
    }

    if (strstr(buf, "PRIVATE KEY-----") != NULL) {
        OPENSSL_cleanse(buf, len);
        free(buf);
        if (sk_key_load_private(&priv, path, err) != 0) {
            return -1;
        }
        rc = sk_key_from_spki(key, priv->spki, priv->spki_len, err);
        sk_key_free(priv);
        return rc;
    }

    bio = BIO_new_mem_buf(buf, (int) len);
    if (bio != NULL && strstr(buf, "-----BEGIN PUBLIC KEY-----") != NULL) {
        /* The PEM framing alone, then sk_key_from_spki: an Ed25519 key
         * (timelines', mirrors', SKs' by default) skips OpenSSL 3.0's
         * decoder framework, which cost `sk fetch` a fifth of its CPU for
         * the trust file's keys (docs/benchmarks.md, "Fetch"). */
        rc = PEM_bytes_read_bio(&der, &derlen, NULL, PEM_STRING_PUBLIC, bio,
            NULL, NULL);
        BIO_free(bio);
        free(buf);
        if (rc != 1) {
            return sk_err_crypto(err, "%s: no PEM public key", path);
        }
        rc = sk_key_from_spki(key, der, (size_t) derlen, err);
        OPENSSL_free(der);
        return rc == 0 ? 0 : sk_err_prefix(err, "%s", path);
    } else if (bio != NULL && strstr(buf, "-----BEGIN CERTIFICATE-----")) {
        x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        pkey = x ? X509_get_pubkey(x) : NULL;
        X509_free(x);
    }
    BIO_free(bio);
    free(buf);
    if (pkey == NULL) {
        return sk_err_crypto(err,
            "%s: no PEM public key, certificate or private key", path);
    }
    if (sk_key_wrap(key, pkey, err) != 0) {
        return sk_err_prefix(err, "%s", path);
    }
    return 0;
}


int
sk_key_from_spki(sk_key_t **key, const unsigned char *der, size_t len,
    sk_err_t *err)
{
    const unsigned char *p = der;
    EVP_PKEY            *pkey;

    if (len > SK_KEY_FILE_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "public key too long");
    }
    /*
     * An Ed25519 SPKI has one DER form, a fixed prefix and the 32-byte
     * key.  Taking it raw skips OpenSSL 3.0's decoder framework, which
     * costs 25 times more (~150 us against ~6): Ed25519 is the SK default
     * and every entry's Key is decoded (docs/benchmarks.md, "Timeline").
     */
    if (len == sizeof(sk_ed25519_spki_prefix) + 32
        && memcmp(der, sk_ed25519_spki_prefix,
               sizeof(sk_ed25519_spki_prefix)) == 0)
    {
        pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL,
            der + sizeof(sk_ed25519_spki_prefix), 32);
        if (pkey == NULL) {
            return sk_err_crypto(err, "not an Ed25519 public key");
        }
        return sk_key_wrap_spki(key, pkey, der, len, err);
    }
    pkey = d2i_PUBKEY(NULL, &p, (long) len);
    if (pkey == NULL) {
        return sk_err_crypto(err, "not a DER SubjectPublicKeyInfo");
    }
    if ((size_t) (p - der) != len) {
        EVP_PKEY_free(pkey);
        return sk_err_set(err, SK_ERR_FORMAT,
            "trailing bytes after the SubjectPublicKeyInfo");
    }
    if (sk_key_wrap(key, pkey, err) != 0) {
        return -1;
    }
    /* One key, one encoding: a fingerprint must not have twins. */
    if ((*key)->spki_len != len || memcmp((*key)->spki, der, len) != 0) {
        sk_key_free(*key);
        *key = NULL;
        return sk_err_set(err, SK_ERR_FORMAT,
            "SubjectPublicKeyInfo is not in canonical DER");
    }
    return 0;
}


int
sk_key_dup(sk_key_t **out, const sk_key_t *key, sk_err_t *err)
{
    sk_key_t  *d;

    d = malloc(sizeof(*d));
    if (d == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    *d = *key;
    d->spki = OPENSSL_memdup(key->spki, key->spki_len);
    d->ed_sk = key->ed_sk != NULL ? malloc(crypto_sign_SECRETKEYBYTES) : NULL;
    if (d->spki == NULL || (key->ed_sk != NULL && d->ed_sk == NULL)
        || EVP_PKEY_up_ref(key->pkey) != 1)
    {
        OPENSSL_free(d->spki);
        free(d->ed_sk);
        free(d);
        return sk_err_set(err, SK_ERR_NOMEM, "cannot reference key");
    }
    if (d->ed_sk != NULL) {
        memcpy(d->ed_sk, key->ed_sk, crypto_sign_SECRETKEYBYTES);
    }
    *out = d;
    return 0;
}


int
sk_key_from_pkey(sk_key_t **key, EVP_PKEY *pkey, sk_err_t *err)
{
    if (EVP_PKEY_up_ref(pkey) != 1) {
        return sk_err_crypto(err, "cannot reference key");
    }
    return sk_key_wrap(key, pkey, err);
}


int
sk_bio_to_str(char **out, size_t *len, BIO *bio, sk_err_t *err)
{
    BUF_MEM *mem;

    if (BIO_get_mem_ptr(bio, &mem) != 1) {
        return sk_err_crypto(err, "cannot read memory buffer");
    }
    *out = malloc(mem->length + 1);
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    memcpy(*out, mem->data, mem->length);
    (*out)[mem->length] = '\0';
    *len = mem->length;
    return 0;
}


static int
sk_key_pem(char **pem, size_t *len, const sk_key_t *key, int private,
    sk_err_t *err)
{
    BIO *bio;
    int  rc;

    bio = BIO_new(BIO_s_secmem());
    if (bio == NULL) {
        return sk_err_crypto(err, "out of memory");
    }
    if ((private
         ? PEM_write_bio_PrivateKey(bio, key->pkey, NULL, NULL, 0, NULL, NULL)
         : PEM_write_bio_PUBKEY(bio, key->pkey)) != 1)
    {
        BIO_free(bio);
        return sk_err_crypto(err, "cannot encode key");
    }
    rc = sk_bio_to_str(pem, len, bio, err);
    BIO_free(bio);
    return rc;
}


int
sk_key_save_private(const sk_key_t *key, const char *path, sk_err_t *err)
{
    char   *pem;
    size_t  len;
    int     rc;

    if (!key->has_private) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: key has no private half",
            path);
    }
    if (sk_key_pem(&pem, &len, key, 1, err) != 0) {
        return -1;
    }
    rc = sk_file_write_new(path, pem, len, 0600, err);
    OPENSSL_cleanse(pem, len);
    free(pem);
    return rc;
}


int
sk_key_public_pem(char **pem, size_t *len, const sk_key_t *key,
    sk_err_t *err)
{
    return sk_key_pem(pem, len, key, 0, err);
}


int
sk_key_save_public(const sk_key_t *key, const char *path, sk_err_t *err)
{
    char   *pem;
    size_t  len;
    int     rc;

    if (sk_key_pem(&pem, &len, key, 0, err) != 0) {
        return -1;
    }
    rc = sk_file_write_atomic(path, pem, len, 0644, err);
    free(pem);
    return rc;
}


const unsigned char *
sk_key_get0_spki(const sk_key_t *key, size_t *len)
{
    *len = key->spki_len;
    return key->spki;
}


void
sk_key_spki_sha256(unsigned char out[SK_SHA256_BYTES], const sk_key_t *key)
{
    memcpy(out, key->spki_sha256, SK_SHA256_BYTES);
}


void
sk_fingerprint_format(char out[SK_FINGERPRINT_SIZE],
    const unsigned char sha256[SK_SHA256_BYTES])
{
    static const char hex[] = "0123456789abcdef";
    size_t            i;

    memcpy(out, "sha256:", 7);
    for (i = 0; i < SK_SHA256_BYTES; i++) {
        out[7 + 2 * i] = hex[sha256[i] >> 4];
        out[7 + 2 * i + 1] = hex[sha256[i] & 0xf];
    }
    out[SK_FINGERPRINT_SIZE - 1] = '\0';
}


void
sk_key_fingerprint(char out[SK_FINGERPRINT_SIZE], const sk_key_t *key)
{
    sk_fingerprint_format(out, key->spki_sha256);
}


sk_key_alg_t
sk_key_alg(const sk_key_t *key)
{
    return key->alg;
}


const char *
sk_key_type_name(const sk_key_t *key)
{
    return key->alg == SK_KEY_RSA ? "RSA" : "ECC";
}


int
sk_key_has_private(const sk_key_t *key)
{
    return key->has_private;
}


EVP_PKEY *
sk_key_get0_pkey(const sk_key_t *key)
{
    return key->pkey;
}


/* Start a sign or verify operation with the parameters architecture.md
 * fixes for each algorithm. */
EVP_MD_CTX *
sk_key_md_ctx(const sk_key_t *key, int sign)
{
    EVP_MD_CTX   *ctx;
    EVP_PKEY_CTX *pctx = NULL;
    const EVP_MD *md = key->alg == SK_KEY_ED25519 ? NULL : EVP_sha256();
    int           ok;

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        return NULL;
    }
    ok = sign ? EVP_DigestSignInit(ctx, &pctx, md, NULL, key->pkey)
              : EVP_DigestVerifyInit(ctx, &pctx, md, NULL, key->pkey);
    if (ok == 1 && key->alg == SK_KEY_RSA) {
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1
            && EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST)
               == 1
            && EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) == 1;
    }
    if (ok != 1) {
        EVP_MD_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}


int
sk_key_sign(unsigned char **sig, size_t *siglen, const sk_key_t *key,
    const unsigned char *msg, size_t len, sk_err_t *err)
{
    EVP_MD_CTX *ctx;
    size_t      n = 0;

    if (!key->has_private) {
        return sk_err_set(err, SK_ERR_USAGE, "signing needs a private key");
    }
    if (key->alg == SK_KEY_ED25519) {
        *sig = malloc(crypto_sign_BYTES);
        if (*sig == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        (void) crypto_sign_detached(*sig, NULL, msg, len, key->ed_sk);
        *siglen = crypto_sign_BYTES;
        return 0;
    }
    ctx = sk_key_md_ctx(key, 1);
    if (ctx == NULL) {
        return sk_err_crypto(err, "cannot start signing");
    }
    if (EVP_DigestSign(ctx, NULL, &n, msg, len) != 1
        || (*sig = malloc(n)) == NULL)
    {
        EVP_MD_CTX_free(ctx);
        return sk_err_crypto(err, "signing failed");
    }
    if (EVP_DigestSign(ctx, *sig, &n, msg, len) != 1) {
        EVP_MD_CTX_free(ctx);
        free(*sig);
        *sig = NULL;
        return sk_err_crypto(err, "signing failed");
    }
    EVP_MD_CTX_free(ctx);
    *siglen = n;
    return 0;
}


int
sk_key_verify(const sk_key_t *key, const unsigned char *sig, size_t siglen,
    const unsigned char *msg, size_t len, sk_err_t *err)
{
    EVP_MD_CTX *ctx;
    int         ok;

    if (key->alg == SK_KEY_ED25519) {
        ok = siglen == crypto_sign_BYTES
            && crypto_sign_verify_detached(sig, msg, len, key->ed_pk) == 0;
    } else {
        ctx = sk_key_md_ctx(key, 0);
        if (ctx == NULL) {
            return sk_err_crypto(err, "cannot start verification");
        }
        ok = EVP_DigestVerify(ctx, sig, siglen, msg, len);
        EVP_MD_CTX_free(ctx);
    }
    if (ok != 1) {
        /* 0 and <0 (malformed signature) mean the same to the caller. */
        ERR_clear_error();
        return sk_err_set(err, SK_ERR_SIGNATURE, "signature does not verify");
    }
    return 0;
}


void
sk_key_free(sk_key_t *key)
{
    if (key != NULL) {
        EVP_PKEY_free(key->pkey);
        OPENSSL_free(key->spki);
        if (key->ed_sk != NULL) {
            sodium_memzero(key->ed_sk, crypto_sign_SECRETKEYBYTES);
            free(key->ed_sk);
        }
        free(key);
    }
}


int
sk_key_ed25519_public(unsigned char out[32], const sk_key_t *key,
    sk_err_t *err)
{
    if (key->alg != SK_KEY_ED25519) {
        return sk_err_set(err, SK_ERR_USAGE, "not an Ed25519 key");
    }
    memcpy(out, key->ed_pk, sizeof(key->ed_pk));
    return 0;
}


int
sk_key_ed25519_seed(unsigned char out[32], const sk_key_t *key,
    sk_err_t *err)
{
    size_t len = 32;

    if (key->alg != SK_KEY_ED25519 || !key->has_private) {
        return sk_err_set(err, SK_ERR_USAGE,
            "not an Ed25519 private key");
    }
    if (EVP_PKEY_get_raw_private_key(key->pkey, out, &len) != 1
        || len != 32)
    {
        return sk_err_crypto(err, "cannot read Ed25519 private key");
    }
    return 0;
}
