/*
 * sk/httpd.h -- the replies the daemons' libmicrohttpd fronts share.
 * Linking this object needs -lmicrohttpd (it is left out of the fuzz
 * targets, which link every other libsk object).
 */
#ifndef SK_HTTPD_H
#define SK_HTTPD_H

#include <stddef.h>

#include <microhttpd.h>

#include "err.h"

/* Queue status with body (malloc()ed, taken over; freed on failure). */
enum MHD_Result sk_httpd_reply(struct MHD_Connection *c, unsigned status,
    char *body, size_t len, const char *type);

/* A "text/plain; charset=us-ascii" reply made by printf. */
enum MHD_Result sk_httpd_text(struct MHD_Connection *c, unsigned status,
    const char *fmt, ...) SK_PRINTF(3, 4);

#endif
