/*
 * client_text.c -- line and number readers, and the growing buffer, that
 * the client's text formats (cache views, mirror answers) share.
 */
#include <stdlib.h>
#include <string.h>

#include "client_int.h"




void
sk_cl_buf_add(sk_cl_buf_t *b, const void *data, size_t len)
{
    char    *p;
    size_t   cap;

    if (b->failed) {
        return;
    }
    if (b->len + len + 1 > b->cap) {
        cap = (b->len + len + 1) * 2;
        p = realloc(b->p, cap);
        if (p == NULL) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
}


/* sk_cl_line: see client_int.h. */
int
sk_cl_line(const char **p, const char *end, const char *prefix,
    char *val, size_t valmax)
{
    size_t       plen = strlen(prefix), n;
    const char  *nl;

    if ((size_t) (end - *p) < plen || memcmp(*p, prefix, plen) != 0) {
        return -1;
    }
    nl = memchr(*p + plen, '\n', (size_t) (end - *p - (ptrdiff_t) plen));
    if (nl == NULL) {
        return -1;
    }
    n = (size_t) (nl - *p) - plen;
    if (n >= valmax || memchr(*p + plen, '\0', n) != NULL) {
        return -1;
    }
    memcpy(val, *p + plen, n);
    val[n] = '\0';
    *p = nl + 1;
    return 0;
}


/* "N" or "N M": decimal numbers without leading zeros. */
int
sk_cl_nums(const char *s, uint64_t *a, uint64_t *b)
{
    const char  *q = s;
    uint64_t    *out[2] = { a, b };
    int          i;

    for (i = 0; i < 2 && out[i] != NULL; i++) {
        if (i > 0 && *q++ != ' ') {
            return -1;
        }
        if (*q < '0' || *q > '9' || (q[0] == '0' && q[1] >= '0'
                && q[1] <= '9'))
        {
            return -1;
        }
        *out[i] = 0;
        while (*q >= '0' && *q <= '9') {
            if (*out[i] > (UINT64_MAX - 9) / 10) {
                return -1;
            }
            *out[i] = *out[i] * 10 + (uint64_t) (*q++ - '0');
        }
    }
    return *q == '\0' ? 0 : -1;
}


