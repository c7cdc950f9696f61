/*
 * http_head.c -- a strict parser of HTTP/1.x request heads (sk/http_head.h).
 *
 * Line by line: each complete line is checked as it is reached, so a
 * malformed head is refused as soon as its first bad line has come, and
 * an incomplete one is "not yet" (SK_ERR_NOT_FOUND) only while every
 * line so far is well-formed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sk/http_head.h"

#define SK_HTTP_LABEL_MAX  63


/* RFC 9110 tchar. */
static int
sk_http_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9') || (c != '\0' && strchr("!#$%&'*+-.^_`|~",
            c) != NULL);
}


/* The next line of buf[off..len) without its CRLF: 1 with *end at its CR,
 * 0 when no line ends yet, -1 for a bare CR or LF (line n). */
static int
sk_http_line(size_t *end, const char *buf, size_t off, size_t len,
    unsigned n, sk_err_t *err)
{
    size_t  i;

    for (i = off; i < len; i++) {
        if (buf[i] == '\n') {
            return sk_err_set(err, SK_ERR_FORMAT, "http: line %u: ends in "
                "a bare LF, not CRLF", n);
        }
        if (buf[i] == '\r') {
            if (i + 1 == len) {
                return 0;
            }
            if (buf[i + 1] != '\n') {
                return sk_err_set(err, SK_ERR_FORMAT, "http: line %u: a "
                    "bare CR", n);
            }
            *end = i;
            return 1;
        }
    }
    return 0;
}


static int
sk_http_request_line(sk_http_head_t *h, const char *p, size_t n,
    sk_err_t *err)
{
    size_t  i = 0, t;

    if (n == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "http: line 1: empty, want "
            "the request line");
    }
    while (i < n && sk_http_tchar((unsigned char) p[i])) {
        i++;
    }
    if (i == 0 || i > SK_HTTP_METHOD_MAX || i == n || p[i] != ' ') {
        return sk_err_set(err, SK_ERR_FORMAT, "http: line 1: want METHOD "
            "TARGET HTTP/1.x, the method a token of at most %d bytes",
            SK_HTTP_METHOD_MAX);
    }
    h->method = p;
    h->method_len = i;
    t = ++i;
    while (i < n && p[i] > ' ' && p[i] < 0x7f) {
        i++;
    }
    if (i == t || i == n || p[i] != ' ') {
        return sk_err_set(err, SK_ERR_FORMAT, "http: line 1: the target "
            "is missing or holds a byte outside visible ASCII");
    }
    h->target = p + t;
    h->target_len = i - t;
    i++;
    if (n - i != 8 || memcmp(p + i, "HTTP/1.", 7) != 0
        || (p[i + 7] != '0' && p[i + 7] != '1'))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "http: line 1: want "
            "HTTP/1.0 or HTTP/1.1 after the target");
    }
    h->minor = p[i + 7] - '0';
    return 0;
}


static int
sk_http_field_line(sk_http_head_t *h, const char *p, size_t n, unsigned ln,
    sk_err_t *err)
{
    sk_http_field_t  *f;
    size_t            i = 0, v, e;

    if (p[0] == ' ' || p[0] == '\t') {
        return sk_err_set(err, SK_ERR_FORMAT, "http: line %u: a folded "
            "line (obs-fold) is not accepted", ln);
    }
    while (i < n && sk_http_tchar((unsigned char) p[i])) {
        i++;
    }
    if (i == 0 || i == n || p[i] != ':') {
        return sk_err_set(err, SK_ERR_FORMAT, "http: line %u: want "
            "NAME: VALUE, the name a token with no space before the colon",
            ln);
    }
    if (h->nfields == SK_HTTP_FIELDS_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "http: line %u: more than "
            "%d header fields", ln, SK_HTTP_FIELDS_MAX);
    }
    for (v = i + 1; v < n; v++) {
        if (((unsigned char) p[v] < ' ' && p[v] != '\t') || p[v] == 0x7f) {
            return sk_err_set(err, SK_ERR_FORMAT, "http: line %u: a "
                "control byte in the value of %.*s", ln, (int) i, p);
        }
    }
    v = i + 1;
    while (v < n && (p[v] == ' ' || p[v] == '\t')) {
        v++;
    }
    e = n;
    while (e > v && (p[e - 1] == ' ' || p[e - 1] == '\t')) {
        e--;
    }
    f = &h->fields[h->nfields++];
    f->name = p;
    f->name_len = i;
    f->value = p + v;
    f->value_len = e - v;
    return 0;
}


int
sk_http_head_parse(sk_http_head_t *h, const char *buf, size_t len,
    sk_err_t *err)
{
    size_t    off = 0, end = 0;
    unsigned  ln = 1;
    int       rc;

    memset(h, 0, sizeof(*h));
    for (;;) {
        rc = sk_http_line(&end, buf, off, len, ln, err);
        if (rc < 0) {
            return -1;
        }
        if (rc == 0) {
            return sk_err_set(err, SK_ERR_NOT_FOUND, "http: the head is "
                "incomplete");
        }
        if (ln == 1) {
            if (sk_http_request_line(h, buf, end, err) != 0) {
                return -1;
            }
        } else if (end == off) {
            h->len = end + 2;
            return 0;
        } else if (sk_http_field_line(h, buf + off, end - off, ln, err)
                   != 0)
        {
            return -1;
        }
        off = end + 2;
        ln++;
    }
}


int
sk_http_head_is(const sk_http_head_t *h, const char *m)
{
    return strlen(m) == h->method_len && memcmp(h->method, m,
        h->method_len) == 0;
}


const sk_http_field_t *
sk_http_head_field(const sk_http_head_t *h, const char *name)
{
    size_t  i, n = strlen(name);

    for (i = 0; i < h->nfields; i++) {
        if (h->fields[i].name_len == n
            && strncasecmp(h->fields[i].name, name, n) == 0)
        {
            return &h->fields[i];
        }
    }
    return NULL;
}


int
sk_http_field_has(const sk_http_field_t *f, const char *tok)
{
    const char  *p = f->value, *end = f->value + f->value_len, *e;
    size_t       n = strlen(tok), k;

    while (p < end) {
        while (p < end && (*p == ',' || *p == ' ' || *p == '\t')) {
            p++;
        }
        e = p;
        while (e < end && *e != ',') {
            e++;
        }
        k = (size_t) (e - p);
        while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t')) {
            k--;
        }
        if (k == n && strncasecmp(p, tok, n) == 0) {
            return 1;
        }
        p = e;
    }
    return 0;
}


/* A host name of LDH labels (underscores too, as browsers allow), one
 * trailing dot dropped (the same name: "example.com." is example.com),
 * lowercased into a->host. */
static int
sk_http_host_name(sk_http_authority_t *a, const char *h, size_t n,
    sk_err_t *err)
{
    size_t  i, label = 0;

    if (n > 1 && h[n - 1] == '.') {
        n--;
    }
    if (n == 0 || n > 253) {
        return sk_err_set(err, SK_ERR_FORMAT, "http: the host is empty or "
            "longer than 253 bytes");
    }
    for (i = 0; i < n; i++) {
        unsigned char  c = (unsigned char) h[i];

        if (c == '.') {
            if (label == 0) {
                return sk_err_set(err, SK_ERR_FORMAT, "http: the host has "
                    "an empty label");
            }
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                   || (c >= '0' && c <= '9') || c == '-' || c == '_')
        {
            if (++label > SK_HTTP_LABEL_MAX) {
                return sk_err_set(err, SK_ERR_FORMAT, "http: the host has "
                    "a label over %d bytes", SK_HTTP_LABEL_MAX);
            }
        } else {
            return sk_err_set(err, SK_ERR_FORMAT, "http: the host holds "
                "0x%02x, not a letter, digit, '-', '_' or '.'", c);
        }
        a->host[i] = (char) (c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    a->host[n] = '\0';
    return 0;
}


/* HOST or [IPv6] (h[0..n)), then the port after a colon if any (port[0..
 * pn), pn 0: none). */
static int
sk_http_authority(sk_http_authority_t *a, const char *h, size_t n,
    const char *port, size_t pn, sk_err_t *err)
{
    unsigned char  bin[sizeof(struct in6_addr)];
    unsigned long  v = 0;
    size_t         i;

    memset(a, 0, sizeof(*a));
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        if (n - 2 >= INET6_ADDRSTRLEN) {
            return sk_err_set(err, SK_ERR_FORMAT, "http: the IPv6 address "
                "is too long");
        }
        memcpy(a->host, h + 1, n - 2);
        a->host[n - 2] = '\0';
        if (inet_pton(AF_INET6, a->host, bin) != 1) {
            return sk_err_set(err, SK_ERR_FORMAT, "http: [%s] is not an "
                "IPv6 address", a->host);
        }
        a->literal = 6;
    } else if (sk_http_host_name(a, h, n, err) != 0) {
        return -1;
    } else if (inet_pton(AF_INET, a->host, bin) == 1) {
        a->literal = 4;
    }
    if (pn == 0) {
        return 0;
    }
    for (i = 0; i < pn; i++) {
        if (port[i] < '0' || port[i] > '9' || i == 5) {
            return sk_err_set(err, SK_ERR_FORMAT, "http: the port is not "
                "a number from 1 to 65535");
        }
        v = v * 10 + (unsigned long) (port[i] - '0');
    }
    if (v == 0 || v > 65535) {
        return sk_err_set(err, SK_ERR_FORMAT, "http: the port is not a "
            "number from 1 to 65535");
    }
    a->port = (unsigned) v;
    return 0;
}


/* Split t[0..len) into host and port at the colon after the host (after
 * the closing bracket of an IPv6 literal). */
static int
sk_http_split(sk_http_authority_t *a, const char *t, size_t len,
    int need_port, sk_err_t *err)
{
    const char  *colon;
    const char  *close;

    if (len > 0 && t[0] == '[') {
        close = memchr(t, ']', len);
        if (close == NULL) {
            return sk_err_set(err, SK_ERR_FORMAT, "http: an IPv6 address "
                "without its ']'");
        }
        colon = close + 1 < t + len ? close + 1 : NULL;
        if (colon != NULL && *colon != ':') {
            return sk_err_set(err, SK_ERR_FORMAT, "http: want ':' after the "
                "IPv6 address");
        }
    } else {
        colon = memchr(t, ':', len);
    }
    if (colon == NULL || colon + 1 == t + len) {
        if (need_port) {
            return sk_err_set(err, SK_ERR_FORMAT, "http: want HOST:PORT");
        }
        if (colon != NULL) {
            len--;
        }
        return sk_http_authority(a, t, len, NULL, 0, err);
    }
    return sk_http_authority(a, t, (size_t) (colon - t), colon + 1,
        (size_t) (t + len - colon - 1), err);
}


int
sk_http_target_authority(sk_http_authority_t *a, const char *t, size_t len,
    sk_err_t *err)
{
    return sk_http_split(a, t, len, 1, err);
}


int
sk_http_target_absolute(sk_http_authority_t *a, size_t *path, const char *t,
    size_t len, sk_err_t *err)
{
    size_t  n;

    if (len < 7 || strncasecmp(t, "http://", 7) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "http: want an http:// URL");
    }
    n = 7;
    while (n < len && t[n] != '/' && t[n] != '?' && t[n] != '#') {
        if (t[n] == '@') {
            return sk_err_set(err, SK_ERR_FORMAT, "http: user information "
                "in the URL is not accepted");
        }
        n++;
    }
    if (memchr(t, '#', len) != NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "http: a fragment is not "
            "sent in a request");
    }
    if (sk_http_split(a, t + 7, n - 7, 0, err) != 0) {
        return -1;
    }
    *path = n;
    return 0;
}
