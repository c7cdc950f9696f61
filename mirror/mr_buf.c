/*
 * mr_buf.c -- a growing text buffer for answers, listings and evidence.
 * An allocation failure is remembered and reported once, by mr_buf_finish.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mr.h"


static int
mr_buf_reserve(mr_buf_t *b, size_t more)
{
    size_t   cap;
    char    *p;

    if (b->failed) {
        return -1;
    }
    if (b->len + more + 1 <= b->cap) {
        return 0;
    }
    cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1) {
        cap *= 2;
    }
    p = realloc(b->p, cap);
    if (p == NULL) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}


void
mr_buf_add(mr_buf_t *b, const void *data, size_t len)
{
    if (mr_buf_reserve(b, len) != 0) {
        return;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
}


void
mr_buf_printf(mr_buf_t *b, const char *fmt, ...)
{
    va_list  ap;
    int      n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || mr_buf_reserve(b, (size_t) n) != 0) {
        b->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t) n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t) n;
}


void
mr_buf_json_str(mr_buf_t *b, const char *s)
{
    mr_buf_add(b, "\"", 1);
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') {
            mr_buf_printf(b, "\\%c", *s);
        } else if ((unsigned char) *s < 0x20 || (unsigned char) *s >= 0x7f) {
            mr_buf_printf(b, "\\u%04x", (unsigned char) *s);
        } else {
            mr_buf_add(b, s, 1);
        }
    }
    mr_buf_add(b, "\"", 1);
}


int
mr_buf_finish(mr_buf_t *b, char **out, size_t *len, sk_err_t *err)
{
    if (b->failed || mr_buf_reserve(b, 0) != 0) {
        free(b->p);
        memset(b, 0, sizeof(*b));
        return sk_err_set(err, SK_ERR_NOMEM, "answer buffer");
    }
    *out = b->p;
    *len = b->len;
    memset(b, 0, sizeof(*b));
    return 0;
}
