/*
 * sk/keyfile.h -- a daemon's own Ed25519 signing key: loaded from its
 * PKCS#8 file, or made on first start (private 0600, public PEM beside).
 * The public file is written once and never replaced; a key that does not
 * match it is refused, and so is a missing key whose public half exists.
 */
#ifndef SK_KEYFILE_H
#define SK_KEYFILE_H

#include "err.h"
#include "key.h"

/* *created is 1 when the key was just generated and saved; a missing
 * key is made only if may_create (SK_ERR_NOT_FOUND otherwise). */
int sk_keyfile_open(sk_key_t **key, int *created, const char *path,
    const char *pub_path, int may_create, sk_err_t *err) SK_WUR;

#endif
