/*
 * sk/keyfile.h -- a daemon's own Ed25519 signing key: loaded from its
 * PKCS#8 file, or made on first start (private 0600, public PEM beside).
 */
#ifndef SK_KEYFILE_H
#define SK_KEYFILE_H

#include "err.h"
#include "key.h"

/* *created is 1 when the key was just generated and saved. */
int sk_keyfile_open(sk_key_t **key, int *created, const char *path,
    const char *pub_path, sk_err_t *err) SK_WUR;

#endif
