/*
 * sk/services.h -- the Services field (draft 1.3.1).
 *
 *   services = "none" | service *("," service)
 *   service  = "all" | name [":" port] *(";" route)
 *   name     = lowercase letter *(lowercase letter | digit | "-")
 *   port     = 1..65535, decimal, no leading zero
 *   route    = 1*printable ASCII other than ";" "," and space
 *
 * "all" covers every service and carries neither port nor routes.  Routes
 * are alternates in decreasing preference: "IP:port", "[IPv6]:port",
 * "x.onion[:port]", "x.exit".  A service+port appears at most once.
 * "none" is the empty set (an SK pre-claimed with no services).
 */
#ifndef SK_SERVICES_H
#define SK_SERVICES_H

#include <stddef.h>
#include "err.h"

#define SK_SERVICE_NAME_MAX 32

typedef struct {
    char      name[SK_SERVICE_NAME_MAX + 1];  /* "https", "smtp", "all" */
    unsigned  port;                           /* 0: no port given */
    char    **routes;                         /* NULL-free array */
    size_t    nroutes;
} sk_service_t;

typedef struct {
    sk_service_t *v;
    size_t        n;                          /* 0 for "none" */
} sk_services_t;

/* Parse s[0..len); on error *out is left empty and err names the
 * position and element. */
int sk_services_parse(sk_services_t *out, const char *s, size_t len,
    sk_err_t *err) SK_WUR;

/* Canonical text, malloc()ed; "none" for the empty set. */
int sk_services_format(char **out, const sk_services_t *svcs, sk_err_t *err)
    SK_WUR;

/* 1 if the set covers service (e.g. "https") on port (0 = the default
 * port of that service): an "all" element, the name with no port, or the
 * name with that port.  0 otherwise. */
int sk_services_covers(const sk_services_t *svcs, const char *service,
    unsigned port);

/* The element that covers service/port, to read its routes; NULL if none
 * (an "all" match returns the "all" element). */
const sk_service_t *sk_services_find(const sk_services_t *svcs,
    const char *service, unsigned port);

void sk_services_free(sk_services_t *svcs);   /* zeroes it; NULL ok */

#endif
