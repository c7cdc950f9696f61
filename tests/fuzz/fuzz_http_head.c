/*
 * fuzz_http_head.c -- the request-head parser `sk proxy` reads browsers
 * with (sk/http_head.h), and its two target parsers, on arbitrary bytes.
 *
 * A head that parses ends in its blank line within the input, and every
 * method, target, field name and value lies inside it with no CR, LF or
 * NUL; a target that parses names a lowercase host of LDH labels (or an
 * address) and a port in range; a proper prefix of a head is never an
 * error but "not yet".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"


static void
fuzz_span(const char *p, size_t n, const char *buf, size_t len)
{
    size_t  i;

    if (p < buf || p + n > buf + len) {
        abort();
    }
    for (i = 0; i < n; i++) {
        if (p[i] == '\r' || p[i] == '\n' || p[i] == '\0') {
            abort();
        }
    }
}


static void
fuzz_authority(const sk_http_authority_t *a)
{
    unsigned char  bin[sizeof(struct in6_addr)];
    const char    *c;

    if (a->port > 65535 || a->host[0] == '\0') {
        abort();
    }
    if (a->literal == 6) {
        if (inet_pton(AF_INET6, a->host, bin) != 1) {
            abort();
        }
        return;
    }
    for (c = a->host; *c != '\0'; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')
              || *c == '-' || *c == '_' || *c == '.'))
        {
            abort();
        }
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_http_head_t       h;
    sk_http_authority_t  a;
    sk_err_t             err;
    char                *buf = fuzz_copy(data, size);
    size_t               i, path;

    if (buf == NULL) {
        return 0;
    }
    if (sk_http_head_parse(&h, buf, size, &err) == 0) {
        if (h.len < 4 || h.len > size
            || memcmp(buf + h.len - 4, "\r\n\r\n", 4) != 0
            || h.nfields > SK_HTTP_FIELDS_MAX || h.method_len == 0
            || h.method_len > SK_HTTP_METHOD_MAX || h.target_len == 0
            || (h.minor != 0 && h.minor != 1))
        {
            abort();
        }
        fuzz_span(h.method, h.method_len, buf, h.len);
        fuzz_span(h.target, h.target_len, buf, h.len);
        for (i = 0; i < h.nfields; i++) {
            fuzz_span(h.fields[i].name, h.fields[i].name_len, buf, h.len);
            fuzz_span(h.fields[i].value, h.fields[i].value_len, buf, h.len);
            if (h.fields[i].name_len == 0) {
                abort();
            }
        }
        /* Every proper prefix of the head is only "not yet". */
        if (sk_http_head_parse(&h, buf, h.len - 1, &err) == 0
            || err.code != SK_ERR_NOT_FOUND)
        {
            abort();
        }
    } else if (err.code != SK_ERR_NOT_FOUND && err.code != SK_ERR_FORMAT) {
        abort();
    }
    if (sk_http_target_authority(&a, buf, size, &err) == 0) {
        fuzz_authority(&a);
        if (a.port == 0) {
            abort();
        }
    }
    if (sk_http_target_absolute(&a, &path, buf, size, &err) == 0) {
        fuzz_authority(&a);
        if (path > size || (path < size && buf[path] != '/'
                            && buf[path] != '?'))
        {
            abort();
        }
    }
    free(buf);
    return 0;
}
