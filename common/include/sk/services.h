/*
 * sk/services.h -- the Services field (draft 1.3.1).
 *
 *   services = "none" | service *("," service)
 *   service  = "all" | name [":" port] *(";" route) *(";mx=" pattern)
 *   name     = lowercase letter *(lowercase letter | digit | "-")
 *   port     = 1..65535, decimal, no leading zero
 *   route    = 1*printable ASCII other than ";" "," and space, not
 *              starting with "mx="
 *   pattern  = dns-name | "*." dns-name      (a name as sk/name.h)
 *
 * "all" covers every service and carries neither port nor routes.  Routes
 * are alternates in decreasing preference: "IP:port", "[IPv6]:port",
 * "x.onion[:port]", "x.exit".  A service+port appears at most once.
 * "none" is the empty set (an SK pre-claimed with no services) and
 * stands alone.
 *
 * "mx=" patterns (docs/protocol.md, "Mail: a domain's MX hosts") say
 * which hosts may receive the name's mail besides those its own SK
 * cross-signs: each a host name, or "*." and a name of two labels or more
 * (one more label, as MTA-STS's mx: patterns), on an "smtp" element
 * only, after its routes, none twice.  A host matching one is
 * authenticated by its own SK (sk_client_decide_mx).
 *
 * A port-less element ("https") covers that service on every port; one
 * with a port ("https:8443") covers only that port, and wins over a
 * port-less element of the same name when looking up routes, which in
 * turn wins over "all".  A query for port 0 means the service's default
 * port (https 443, http 80, smtp 25, smtps 465, submission 587, imap 143,
 * imaps 993, pop3s 995); for a service with no known default, port 0 is
 * covered only by a port-less element or "all".
 */
#ifndef SK_SERVICES_H
#define SK_SERVICES_H

#include <stddef.h>
#include "err.h"

#define SK_SERVICE_NAME_MAX 32

typedef struct {
    char      name[SK_SERVICE_NAME_MAX + 1];  /* "https", "smtp", "all" */
    unsigned  port;                           /* 0: no port given */
    char    **routes;                         /* nroutes strings, NULL */
    size_t    nroutes;
    char    **mx;                             /* nmx "mx=" patterns
                                                 (without "mx="), NULL */
    size_t    nmx;
} sk_service_t;

typedef struct {
    sk_service_t *v;
    size_t        n;                          /* 0 for "none" */
} sk_services_t;

/* Parse s[0..len); on error *out is left empty and err names the
 * position and element. */
int sk_services_parse(sk_services_t *out, const char *s, size_t len,
    sk_err_t *err) SK_WUR;

/* Canonical text, malloc()ed; "none" for the empty set.  SK_ERR_USAGE if
 * svcs would not parse back to itself (a hand-built, invalid set). */
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

/* 1 if host (a DNS name, any case) matches an "mx=" pattern: equal, or
 * the pattern is "*.NAME" and host is one label more than NAME. */
int sk_services_mx_match(const char *pattern, const char *host);

/* 1 if a and b hold the same elements in the same order, 0 otherwise. */
int sk_services_equal(const sk_services_t *a, const sk_services_t *b);

void sk_services_free(sk_services_t *svcs);   /* zeroes it; NULL ok */

#endif
