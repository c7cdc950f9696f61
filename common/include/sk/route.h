/*
 * sk/route.h -- the alternate routes of a Services element (draft 1.3.1)
 * and the order in which a client tries them (design 0.b, "Fallback
 * routing" in docs/protocol.md).
 *
 * A route is, strictly, one of:
 *
 *   IPv4:PORT         "192.0.2.7:8443"        connect there directly
 *   [IPv6]:PORT       "[2001:db8::7]:443"     connect there directly
 *   V3.onion[:PORT]   56 base32 characters (checksum and version checked)
 *                     and ".onion": through Tor
 *   NAME.exit[:PORT]  a lowercase DNS name ending in ".exit": through Tor
 *
 * PORT is 1-65535, decimal, no leading zero; an address needs one, an
 * onion or exit name without one means the port the client uses for the
 * service.  Anything else is refused with the reason: a plain DNS name
 * (it would go to a resolver, or to a SOCKS proxy that is not meant for
 * it), an address without a port, the unspecified, broadcast or a
 * multicast address, an IPv6 zone, a route of more than
 * SK_ROUTE_TEXT_MAX characters, any byte outside printable ASCII.  The
 * record is signed, so a refused route is a mistake or an attack by the
 * SK holder: it is reported and skipped, never tried.
 *
 * Whatever route is taken, TLS still names the site (SNI, certificate
 * name) and the carrier is checked again: a route changes where the
 * client connects, never what it accepts.
 */
#ifndef SK_ROUTE_H
#define SK_ROUTE_H

#include <stddef.h>
#include "err.h"
#include "record.h"

#define SK_ROUTE_TEXT_MAX  255

typedef enum {
    SK_ROUTE_INVALID = 0,   /* refused: why says so; never tried */
    SK_ROUTE_ADDR,          /* an IP address: connect directly */
    SK_ROUTE_ONION,         /* a v3 onion service: through Tor */
    SK_ROUTE_EXIT           /* a .exit name: through Tor */
} sk_route_type_t;

typedef struct {
    sk_route_type_t  type;
    /* The address (IPv6 without brackets) or the onion/exit name. */
    char             host[SK_ROUTE_TEXT_MAX + 1];
    unsigned         port;       /* 0: the port used for the service */
    int              ipv6;
    int              derived;    /* the SK's own onion, not listed */
    /* As the record wrote it (cut at SK_ROUTE_TEXT_MAX, with "..."), for
     * reports; for a derived route, the address. */
    char             text[SK_ROUTE_TEXT_MAX + 4];
    char             why[SK_ERR_MSG_MAX];    /* SK_ROUTE_INVALID: why */
} sk_route_t;

typedef struct {
    sk_route_t  *v;
    size_t       n;
} sk_routes_t;

/* Parse s[0..len) into r.  On error r->type is SK_ROUTE_INVALID, r->text
 * holds the input and r->why (and err, SK_ERR_FORMAT) the reason. */
int sk_route_parse(sk_route_t *r, const char *s, size_t len, sk_err_t *err)
    SK_WUR;

/* "sk_route_type_t" as a word: "address", "onion", "exit", "invalid". */
const char *sk_route_type_name(sk_route_type_t type);

/* 1 if the route goes through Tor (onion, exit). */
int sk_route_via_tor(const sk_route_t *r);

/*
 * The alternate routes to try for service/port under rec, in order: the
 * routes of the Services element that covers service/port
 * (sk_services_find), as listed, each parsed (refused ones stay in the
 * list as SK_ROUTE_INVALID, so a report can name them); then, when the SK
 * is Ed25519 and no valid onion route is listed, the SK's own v3 onion
 * address (derived), the design's last resort.  Empty when rec is not
 * BOUND or does not cover service/port.  -1 only for memory.
 */
int sk_routes_for(sk_routes_t *out, const sk_record_t *rec,
    const char *service, unsigned port, sk_err_t *err) SK_WUR;

void sk_routes_free(sk_routes_t *routes);     /* zeroes it; NULL ok */

#endif
