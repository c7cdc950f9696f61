/*
 * sk/http_head.h -- the head of an HTTP/1.x request as a proxy receives
 * it (RFC 9112): the request line and the header fields, parsed strictly
 * from bytes with no I/O, so that `sk proxy` refuses what it does not
 * understand before acting on any of it.
 *
 * Refused (SK_ERR_FORMAT, naming the line): a method that is not a token
 * or longer than SK_HTTP_METHOD_MAX, a target with a byte outside visible
 * ASCII, a version other than HTTP/1.0 and HTTP/1.1, a line not ended by
 * CRLF (a bare CR or LF), an empty line before the request line, a field
 * name that is not a token or is followed by white space, a field value
 * with a control byte, a folded line (obs-fold), more than
 * SK_HTTP_FIELDS_MAX fields.  Until the blank line that ends the head has
 * come, the complete lines so far are checked and SK_ERR_NOT_FOUND means
 * "not yet": read more (the caller bounds how much).
 */
#ifndef SK_HTTP_HEAD_H
#define SK_HTTP_HEAD_H

#include <stddef.h>
#include "err.h"

#define SK_HTTP_METHOD_MAX   32
#define SK_HTTP_FIELDS_MAX   100
#define SK_HTTP_HOST_MAX     255     /* a DNS name or an address literal */

typedef struct {
    const char  *name;          /* into the parsed buffer, not NUL-ended */
    size_t       name_len;
    const char  *value;         /* without the white space around it */
    size_t       value_len;
} sk_http_field_t;

typedef struct {
    const char       *method;   /* into the buffer, e.g. "CONNECT" */
    size_t            method_len;
    const char       *target;   /* the request-target as sent */
    size_t            target_len;
    int               minor;    /* HTTP/1.<minor>: 0 or 1 */
    sk_http_field_t   fields[SK_HTTP_FIELDS_MAX];
    size_t            nfields;
    size_t            len;      /* bytes of the head, its blank line
                                   included: the body or tunnel follows */
} sk_http_head_t;

/* Parse buf[0..len): 0 with *h filled (pointing into buf); -1 with
 * SK_ERR_NOT_FOUND while the head is incomplete (and well-formed so far),
 * SK_ERR_FORMAT when it is malformed. */
int sk_http_head_parse(sk_http_head_t *h, const char *buf, size_t len,
    sk_err_t *err) SK_WUR;

/* 1 if h's method is m (case-sensitive, as methods are). */
int sk_http_head_is(const sk_http_head_t *h, const char *m);

/* The first field named name (case-insensitive), or NULL. */
const sk_http_field_t *sk_http_head_field(const sk_http_head_t *h,
    const char *name);

/* 1 if field f's comma-separated list holds token tok (case-insensitive),
 * as in "Connection: keep-alive, Upgrade". */
int sk_http_field_has(const sk_http_field_t *f, const char *tok);

/* A host as a target names it: host[0..] lowercase and NUL-ended (an
 * IPv6 address without its brackets), its port (0 when none was given),
 * and whether it is an address literal rather than a name. */
typedef struct {
    char      host[SK_HTTP_HOST_MAX + 1];
    unsigned  port;
    int       literal;          /* 4 or 6 for an address, 0 for a name */
} sk_http_authority_t;

/* CONNECT's authority-form, HOST:PORT or [IPv6]:PORT: the port is
 * required (1..65535), HOST a DNS name of LDH labels or an address. */
int sk_http_target_authority(sk_http_authority_t *a, const char *t,
    size_t len, sk_err_t *err) SK_WUR;

/* The absolute-form a proxy receives for plain HTTP,
 * "http://HOST[:PORT][/PATH][?QUERY]" (scheme case-insensitive; no user
 * information, no fragment): the authority, and in *path the offset into
 * t of the path (t + *path is what the origin server gets; "" means
 * "/"). */
int sk_http_target_absolute(sk_http_authority_t *a, size_t *path,
    const char *t, size_t len, sk_err_t *err) SK_WUR;

#endif
