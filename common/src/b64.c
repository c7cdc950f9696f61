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


/* The 6-bit value of c, or -1 with err saying why c (at index i) is bad. */
static int
sk_b64_value(unsigned char c, size_t i, sk_err_t *err)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    switch (c) {
    case '-':
        return 62;
    case '_':
        return 63;
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
    unsigned char  *buf;
    uint32_t        acc = 0;
    size_t          i, n = 0, size;
    int             v, bits = 0;

    *out = NULL;
    *outlen = 0;
    /* Report a bad character before the length: "abcd=" is padding. */
    for (i = 0; i < len; i++) {
        if (sk_b64_value((unsigned char) in[i], i, err) == -1) {
            return -1;
        }
    }
    if (len % 4 == 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "base64: length %zu is "
            "impossible (4n+1 characters encode no whole byte)", len);
    }

    size = len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1);
    buf = malloc(size == 0 ? 1 : size);
    if (buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "base64: out of memory");
    }
    for (i = 0; i < len; i++) {
        v = sk_b64_value((unsigned char) in[i], i, NULL);
        acc = (acc << 6) | (uint32_t) v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (unsigned char) (acc >> bits);
        }
    }
    /* The 2 or 4 bits left over must be zero, or two texts would decode
     * to the same bytes. */
    if ((acc & ((1u << bits) - 1)) != 0) {
        free(buf);
        return sk_err_set(err, SK_ERR_FORMAT, "base64: character %zu has "
            "non-zero unused bits (not the canonical encoding)", len);
    }
    *out = buf;
    *outlen = n;
    return 0;
}
