/*
 * b64.c -- URL-safe base64 without padding (RFC 4648 section 5).
 *
 * The decoder accepts exactly one spelling of each byte string, so a
 * value that was signed cannot be re-encoded into a different but
 * equivalent text.
 */
#include <stdint.h>
#include <stdlib.h>

#include <sk/b64.h>


static const char sk_b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Each byte's 6-bit value; 64 for a byte not in the alphabet. */
static const unsigned char sk_b64_values[256] = {
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 62, 64, 64,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 64, 64, 64, 64, 64, 64,
    64,  0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 64, 64, 64, 64, 63,
    64, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
};


size_t
sk_b64_encoded_len(size_t n)
{
    static const size_t  tail[3] = { 0, 2, 3 };

    return n / 3 * 4 + tail[n % 3];
}


void
sk_b64_encode(char *out, const unsigned char *in, size_t n)
{
    uint32_t  v;
    size_t    i, left;

    for (i = 0; i < n; i += 3) {
        left = n - i;
        v = (uint32_t) in[i] << 16;
        if (left > 1) {
            v |= (uint32_t) in[i + 1] << 8;
        }
        if (left > 2) {
            v |= in[i + 2];
        }
        *out++ = sk_b64_alphabet[v >> 18];
        *out++ = sk_b64_alphabet[(v >> 12) & 0x3f];
        if (left > 1) {
            *out++ = sk_b64_alphabet[(v >> 6) & 0x3f];
        }
        if (left > 2) {
            *out++ = sk_b64_alphabet[v & 0x3f];
        }
    }
    *out = '\0';
}


char *
sk_b64_encode_alloc(const unsigned char *in, size_t n)
{
    char  *out;

    /* Beyond this, the encoded length does not fit in a size_t. */
    if (n > (SIZE_MAX - 4) / 4 * 3) {
        return NULL;
    }
    out = malloc(sk_b64_encoded_len(n) + 1);
    if (out != NULL) {
        sk_b64_encode(out, in, n);
    }
    return out;
}


/* Why c, at index i, is not in the alphabet: -1 with err set. */
static int
sk_b64_bad(unsigned char c, size_t i, sk_err_t *err)
{
    switch (c) {
    case '=':
        return sk_err_set(err, SK_ERR_FORMAT, "base64: character %zu is "
            "'=' padding (base64url here is unpadded)", i + 1);
    case '+':
    case '/':
        return sk_err_set(err, SK_ERR_FORMAT, "base64: character %zu is "
            "'%c' from standard base64 (base64url uses '-' and '_')",
            i + 1, c);
    case ' ':
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
        return sk_err_set(err, SK_ERR_FORMAT,
            "base64: character %zu (0x%02x) is whitespace", i + 1, c);
    default:
        return sk_err_set(err, SK_ERR_FORMAT, "base64: character %zu "
            "(0x%02x) is not in the base64url alphabet", i + 1, c);
    }
}


int
sk_b64_decode(unsigned char **out, size_t *outlen, const char *in,
    size_t len, sk_err_t *err)
{
    const unsigned char  *p = (const unsigned char *) in;
    unsigned char        *buf;
    uint32_t              v;
    size_t                i, n = 0, size, rest = len % 4;

    *out = NULL;
    *outlen = 0;
    /* Report a bad character before the length: "abcd=" is padding. */
    for (i = 0; i < len; i++) {
        if (sk_b64_values[p[i]] > 63) {
            return sk_b64_bad(p[i], i, err);
        }
    }
    if (rest == 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "base64: length %zu is "
            "impossible (4n+1 characters encode no whole byte)", len);
    }

    size = len / 4 * 3 + (rest == 0 ? 0 : rest - 1);
    buf = malloc(size == 0 ? 1 : size);
    if (buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "base64: out of memory");
    }
    for (i = 0; i + 4 <= len; i += 4) {
        v = (uint32_t) sk_b64_values[p[i]] << 18
            | (uint32_t) sk_b64_values[p[i + 1]] << 12
            | (uint32_t) sk_b64_values[p[i + 2]] << 6
            | sk_b64_values[p[i + 3]];
        buf[n++] = (unsigned char) (v >> 16);
        buf[n++] = (unsigned char) (v >> 8);
        buf[n++] = (unsigned char) v;
    }
    if (rest != 0) {
        v = (uint32_t) sk_b64_values[p[i]] << 6 | sk_b64_values[p[i + 1]];
        if (rest == 3) {
            v = v << 6 | sk_b64_values[p[i + 2]];
        }
        /* The 4 or 2 bits left over must be zero, or two texts would
         * decode to the same bytes. */
        if ((v & (rest == 2 ? 0xf : 0x3)) != 0) {
            free(buf);
            return sk_err_set(err, SK_ERR_FORMAT, "base64: character %zu "
                "has non-zero unused bits (not the canonical encoding)",
                len);
        }
        if (rest == 2) {
            buf[n++] = (unsigned char) (v >> 4);
        } else {
            buf[n++] = (unsigned char) (v >> 10);
            buf[n++] = (unsigned char) (v >> 2);
        }
    }
    *out = buf;
    *outlen = n;
    return 0;
}
