/*
 * keyfile.c -- load a daemon's Ed25519 key, or make it on first start.
 */
#include <errno.h>
#include <unistd.h>

#include "sk/keyfile.h"


int
sk_keyfile_open(sk_key_t **key, int *created, const char *path,
    const char *pub_path, sk_err_t *err)
{
    *key = NULL;
    *created = 0;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        if (sk_key_generate(key, SK_KEY_ED25519, 0, err) != 0
            || sk_key_save_private(*key, path, err) != 0
            || sk_key_save_public(*key, pub_path, err) != 0)
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
    return 0;
}
