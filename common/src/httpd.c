/*
 * httpd.c -- libmicrohttpd replies shared by sk-timeline and sk-mirror
 * (sk/httpd.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sk/httpd.h"


enum MHD_Result
sk_httpd_reply(struct MHD_Connection *c, unsigned status, char *body,
    size_t len, const char *type)
{
    struct MHD_Response  *r;
    enum MHD_Result       rc;

    r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}


enum MHD_Result
sk_httpd_text(struct MHD_Connection *c, unsigned status, const char *fmt,
    ...)
{
    va_list  ap;
    char    *s;
    int      n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    s = n >= 0 ? malloc((size_t) n + 1) : NULL;
    if (s == NULL) {
        return MHD_NO;
    }
    va_start(ap, fmt);
    vsnprintf(s, (size_t) n + 1, fmt, ap);
    va_end(ap);
    return sk_httpd_reply(c, status, s, (size_t) n,
        "text/plain; charset=us-ascii");
}
