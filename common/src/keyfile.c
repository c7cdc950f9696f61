/*
 * keyfile.c -- load a daemon's Ed25519 key, or make it on first start.
 *
 * The public half beside it is the daemon's identity as others know it:
 * it is written once, never replaced, and a key that does not match it is
 * refused, so a lost private key never turns silently into a new one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sk/file.h"
#include "sk/keyfile.h"


/* The public half at pub_path: written if missing, else it must match. */
static int
sk_keyfile_pub(const sk_key_t *key, const char *path, const char *pub_path,
    sk_err_t *err)
{
    const unsigned char  *a, *b;
    size_t                alen, blen;
    sk_key_t             *pub;
    char                 *pem;
    size_t                len;
    int                   rc;

    if (access(pub_path, F_OK) != 0 && errno == ENOENT) {
        if (sk_key_public_pem(&pem, &len, key, err) != 0) {
            return -1;
        }
        rc = sk_file_write_new(pub_path, pem, len, 0644, err);
        free(pem);
        return rc;
    }
    if (sk_key_load_public(&pub, pub_path, err) != 0) {
        return -1;
    }
    a = sk_key_get0_spki(key, &alen);
    b = sk_key_get0_spki(pub, &blen);
    rc = alen == blen && memcmp(a, b, alen) == 0 ? 0
        : sk_err_set(err, SK_ERR_KEY_MISMATCH, "%s: not the public half of "
            "%s (a key from elsewhere, or the identity changed?)", pub_path,
            path);
    sk_key_free(pub);
    return rc;
}


int
sk_keyfile_open(sk_key_t **key, int *created, const char *path,
    const char *pub_path, int may_create, sk_err_t *err)
{
    *key = NULL;
    *created = 0;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        if (access(pub_path, F_OK) == 0) {
            return sk_err_set(err, SK_ERR_NOT_FOUND, "%s: missing, yet %s "
                "holds its public half: restore the key from a backup "
                "(a new one would be a new identity)", path, pub_path);
        }
        if (!may_create) {
            return sk_err_set(err, SK_ERR_NOT_FOUND, "%s: missing", path);
        }
        if (sk_key_generate(key, SK_KEY_ED25519, 0, err) != 0
            || sk_key_save_private(*key, path, err) != 0
            || sk_keyfile_pub(*key, path, pub_path, err) != 0)
        {
            sk_key_free(*key);
            *key = NULL;
            return -1;
        }
        *created = 1;
        return 0;
    }
    if (sk_key_load_private(key, path, err) != 0) {
        return -1;
    }
    if (sk_key_alg(*key) != SK_KEY_ED25519) {
        sk_key_free(*key);
        *key = NULL;
        return sk_err_set(err, SK_ERR_FORMAT, "%s: not an ed25519 key", path);
    }
    if (sk_keyfile_pub(*key, path, pub_path, err) != 0) {
        sk_key_free(*key);
        *key = NULL;
        return -1;
    }
    return 0;
}
