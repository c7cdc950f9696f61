/*
 * sk/key.h -- sovereign keys and operational keys.
 *
 * Ed25519 is the default; ECDSA P-256 and RSA (>= 2048 bits) are accepted.
 * Signatures: Ed25519 pure, ECDSA P-256 with SHA-256 (DER), RSA-PSS with
 * SHA-256 (salt length = digest length).  Private keys are PKCS#8 PEM files
 * of mode 0600; a private key readable by group or others is refused.
 */
#ifndef SK_KEY_H
#define SK_KEY_H

#include <stddef.h>
#include <openssl/evp.h>
#include "err.h"

#define SK_SHA256_BYTES      32
/* "sha256:" + 64 hex digits + NUL */
#define SK_FINGERPRINT_SIZE  (7 + 2 * SK_SHA256_BYTES + 1)
#define SK_RSA_MIN_BITS      2048

typedef enum {
    SK_KEY_ED25519 = 0,
    SK_KEY_P256,
    SK_KEY_RSA
} sk_key_alg_t;

typedef struct sk_key_s sk_key_t;   /* opaque: an EVP_PKEY and its SPKI */

/* rsa_bits is used only for SK_KEY_RSA (0 = 3072). */
int sk_key_generate(sk_key_t **key, sk_key_alg_t alg, int rsa_bits,
    sk_err_t *err) SK_WUR;

/* "ed25519", "p256", "rsa" -> alg; -1 with err for anything else. */
int sk_key_alg_parse(sk_key_alg_t *alg, const char *s, sk_err_t *err) SK_WUR;

int sk_key_load_private(sk_key_t **key, const char *path, sk_err_t *err)
    SK_WUR;
/* PEM "PUBLIC KEY", a PEM certificate (its subject key), or a private key
 * file (its public half; permissions are still checked). */
int sk_key_load_public(sk_key_t **key, const char *path, sk_err_t *err)
    SK_WUR;
int sk_key_from_spki(sk_key_t **key, const unsigned char *der, size_t len,
    sk_err_t *err) SK_WUR;
/* Wraps pkey, taking a new reference (the caller keeps its own). */
int sk_key_from_pkey(sk_key_t **key, EVP_PKEY *pkey, sk_err_t *err) SK_WUR;

/* Created with O_EXCL|O_NOFOLLOW, mode 0600, fsynced: never clobbers. */
int sk_key_save_private(const sk_key_t *key, const char *path, sk_err_t *err)
    SK_WUR;
/* PEM "PUBLIC KEY", written atomically (temp, fsync, rename), mode 0644. */
int sk_key_save_public(const sk_key_t *key, const char *path, sk_err_t *err)
    SK_WUR;
/* PEM text of the public key; free() it. */
int sk_key_public_pem(char **pem, size_t *len, const sk_key_t *key,
    sk_err_t *err) SK_WUR;

/* DER SubjectPublicKeyInfo, borrowed: valid while key lives. */
const unsigned char *sk_key_get0_spki(const sk_key_t *key, size_t *len);
void sk_key_spki_sha256(unsigned char out[SK_SHA256_BYTES],
    const sk_key_t *key);
/* "sha256:<hex>" of the DER SPKI. */
void sk_key_fingerprint(char out[SK_FINGERPRINT_SIZE], const sk_key_t *key);
void sk_fingerprint_format(char out[SK_FINGERPRINT_SIZE],
    const unsigned char sha256[SK_SHA256_BYTES]);

sk_key_alg_t sk_key_alg(const sk_key_t *key);
const char *sk_key_alg_name(sk_key_alg_t alg);      /* "ed25519" ... */
/* The draft's Key-Type value: "ECC" for Ed25519 and P-256, "RSA". */
const char *sk_key_type_name(const sk_key_t *key);
int sk_key_has_private(const sk_key_t *key);
EVP_PKEY *sk_key_get0_pkey(const sk_key_t *key);    /* borrowed */

/* Signature over msg as architecture.md fixes; *sig is malloc()ed. */
int sk_key_sign(unsigned char **sig, size_t *siglen, const sk_key_t *key,
    const unsigned char *msg, size_t len, sk_err_t *err) SK_WUR;
/* 0 if sig is key's signature over msg; -1 with SK_ERR_SIGNATURE if not. */
int sk_key_verify(const sk_key_t *key, const unsigned char *sig,
    size_t siglen, const unsigned char *msg, size_t len, sk_err_t *err)
    SK_WUR;

void sk_key_free(sk_key_t *key);    /* NULL ok */

/* Ed25519 only: the 32-byte raw public key / seed. */
int sk_key_ed25519_public(unsigned char out[32], const sk_key_t *key,
    sk_err_t *err) SK_WUR;
int sk_key_ed25519_seed(unsigned char out[32], const sk_key_t *key,
    sk_err_t *err) SK_WUR;

#endif
