/*
 * sk/b64.h -- URL-safe base64 (RFC 4648 section 5), no padding.
 *
 * Decoding is strict: only the URL-safe alphabet, no '=' padding, no
 * whitespace, and the unused low bits of the last character must be zero,
 * so every byte string has exactly one encoding.
 */
#ifndef SK_B64_H
#define SK_B64_H

#include <stddef.h>
#include "err.h"

/* Length of the encoding of n bytes, without NUL. */
size_t sk_b64_encoded_len(size_t n);

/* Writes sk_b64_encoded_len(n) characters and a NUL into out. */
void sk_b64_encode(char *out, const unsigned char *in, size_t n);

/* malloc()ed NUL-terminated encoding; NULL on allocation failure. */
char *sk_b64_encode_alloc(const unsigned char *in, size_t n);

/* Decode len characters into a malloc()ed buffer (*out, *outlen).
 * SK_ERR_FORMAT naming the offending character's position. */
int sk_b64_decode(unsigned char **out, size_t *outlen, const char *in,
    size_t len, sk_err_t *err) SK_WUR;

#endif
