/*
 * client_route.c -- alternate routes: the strict route parser and the
 * order a client tries routes in (sk/route.h).
 *
 * The parser decides what may be handed to a socket or to a SOCKS proxy,
 * so it accepts exactly the four forms of sk/route.h and nothing that
 * needs a resolver: a name other than .onion or .exit never leaves here.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sk/route.h>
#include <sk/name.h>
#include <sk/onion.h>
#include <sk/services.h>


static int sk_route_fail(sk_route_t *r, sk_err_t *err, const char *fmt, ...)
    SK_PRINTF(3, 4);


/* Mark r refused: the reason in r->why and in err ("route \"x\": ..."). */
static int
sk_route_fail(sk_route_t *r, sk_err_t *err, const char *fmt, ...)
{
    va_list  ap;

    r->type = SK_ROUTE_INVALID;
    r->host[0] = '\0';
    r->port = 0;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    return sk_err_set(err, SK_ERR_FORMAT, "route \"%.64s\": %s", r->text,
        r->why);
}


/* The input for reports: printable ASCII kept, anything else '?', cut
 * at SK_ROUTE_TEXT_MAX with "...". */
static void
sk_route_text(sk_route_t *r, const char *s, size_t len)
{
    size_t  i, n = len > SK_ROUTE_TEXT_MAX ? SK_ROUTE_TEXT_MAX : len;

    for (i = 0; i < n; i++) {
        r->text[i] = s[i] > ' ' && s[i] < 0x7f ? s[i] : '?';
    }
    memcpy(r->text + n, len > n ? "..." : "", len > n ? 4 : 1);
}


/* 1-65535, decimal, no leading zero. */
static int
sk_route_port(unsigned *port, const char *s, size_t len)
{
    unsigned long  v = 0;
    size_t         i;

    if (len == 0 || len > 5 || s[0] == '0') {
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (unsigned long) (s[i] - '0');
    }
    if (v > 65535) {
        return -1;
    }
    *port = (unsigned) v;
    return 0;
}


static int
sk_route_ipv6(sk_route_t *r, const char *s, size_t len, sk_err_t *err)
{
    const char     *close = memchr(s, ']', len);
    unsigned char   a[16];
    size_t          hl;

    if (close == NULL) {
        return sk_route_fail(r, err, "'[' without ']'");
    }
    hl = (size_t) (close - s - 1);
    if (memchr(s, '%', hl + 1) != NULL) {
        return sk_route_fail(r, err, "an IPv6 zone is not allowed");
    }
    if (hl == 0 || hl >= sizeof(r->host)) {
        return sk_route_fail(r, err, "not an IPv6 address");
    }
    memcpy(r->host, s + 1, hl);
    r->host[hl] = '\0';
    if (inet_pton(AF_INET6, r->host, a) != 1) {
        return sk_route_fail(r, err, "\"%.64s\" is not an IPv6 address",
            r->host);
    }
    if ((size_t) (close - s) + 1 == len || close[1] != ':'
        || sk_route_port(&r->port, close + 2, len - hl - 3) != 0)
    {
        return sk_route_fail(r, err, "an address route needs \":PORT\" "
            "(1-65535) after the ']'");
    }
    if (memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16) == 0) {
        return sk_route_fail(r, err, "the unspecified address is not a "
            "destination");
    }
    if (a[0] == 0xff) {
        return sk_route_fail(r, err, "a multicast address is not a "
            "destination");
    }
    r->type = SK_ROUTE_ADDR;
    r->ipv6 = 1;
    return 0;
}


static int
sk_route_ipv4(sk_route_t *r, unsigned port_given, sk_err_t *err)
{
    unsigned char  a[4];

    if (inet_pton(AF_INET, r->host, a) != 1) {
        return sk_route_fail(r, err, "\"%.64s\" is not an IPv4 address "
            "(four decimal numbers 0-255, no leading zeros)", r->host);
    }
    if (!port_given) {
        return sk_route_fail(r, err, "an address route needs \":PORT\"");
    }
    if (memcmp(a, "\0\0\0\0", 4) == 0 || memcmp(a, "\xff\xff\xff\xff", 4)
        == 0)
    {
        return sk_route_fail(r, err, "%s is not a destination", r->host);
    }
    if (a[0] >= 224 && a[0] <= 239) {
        return sk_route_fail(r, err, "a multicast address is not a "
            "destination");
    }
    r->type = SK_ROUTE_ADDR;
    return 0;
}


static int
sk_route_ends(const char *host, size_t hl, const char *suffix)
{
    size_t  n = strlen(suffix);

    return hl >= n && strncasecmp(host + hl - n, suffix, n) == 0;
}


int
sk_route_parse(sk_route_t *r, const char *s, size_t len, sk_err_t *err)
{
    const char  *colon;
    size_t       i, hl;
    sk_err_t     e;

    memset(r, 0, sizeof(*r));
    sk_route_text(r, s, len);
    if (len == 0) {
        return sk_route_fail(r, err, "empty");
    }
    if (len > SK_ROUTE_TEXT_MAX) {
        return sk_route_fail(r, err, "%zu characters, more than %d", len,
            SK_ROUTE_TEXT_MAX);
    }
    for (i = 0; i < len; i++) {
        if (s[i] <= ' ' || s[i] >= 0x7f || s[i] == ';' || s[i] == ',') {
            return sk_route_fail(r, err, "character %zu (0x%02x) is not "
                "allowed in a route", i + 1, (unsigned char) s[i]);
        }
    }
    if (s[0] == '[') {
        return sk_route_ipv6(r, s, len, err);
    }
    colon = memchr(s, ':', len);
    hl = colon != NULL ? (size_t) (colon - s) : len;
    if (colon != NULL && memchr(colon + 1, ':', len - hl - 1) != NULL) {
        return sk_route_fail(r, err, "an IPv6 address goes in brackets: "
            "[ADDRESS]:PORT");
    }
    if (colon != NULL && sk_route_port(&r->port, colon + 1, len - hl - 1)
        != 0)
    {
        return sk_route_fail(r, err, "the port is not 1-65535 (decimal, "
            "no leading zero)");
    }
    if (hl == 0) {
        return sk_route_fail(r, err, "no host before the port");
    }
    memcpy(r->host, s, hl);
    r->host[hl] = '\0';
    if (strspn(r->host, "0123456789.") == hl) {
        return sk_route_ipv4(r, colon != NULL, err);
    }
    if (sk_route_ends(r->host, hl, ".onion")) {
        if (sk_onion_address_check(r->host, hl, &e) != 0) {
            return sk_route_fail(r, err, "%s", e.msg);
        }
        r->type = SK_ROUTE_ONION;
        return 0;
    }
    if (sk_route_ends(r->host, hl, ".exit")) {
        if (sk_name_check(r->host, hl, &e) != 0) {
            return sk_route_fail(r, err, ".exit name: %s", e.msg);
        }
        r->type = SK_ROUTE_EXIT;
        return 0;
    }
    return sk_route_fail(r, err, "not an address, a .onion or a .exit "
        "name (a DNS name is not a route)");
}


const char *
sk_route_type_name(sk_route_type_t type)
{
    switch (type) {
    case SK_ROUTE_ADDR:    return "address";
    case SK_ROUTE_ONION:   return "onion";
    case SK_ROUTE_EXIT:    return "exit";
    case SK_ROUTE_INVALID: break;
    }
    return "invalid";
}


int
sk_route_via_tor(const sk_route_t *r)
{
    return r->type == SK_ROUTE_ONION || r->type == SK_ROUTE_EXIT;
}


/* Index (from 1) of an earlier valid route equal to v[i], or 0. */
static size_t
sk_routes_repeat(const sk_routes_t *rs, size_t i)
{
    const sk_route_t  *a = &rs->v[i], *b;
    size_t             j;

    for (j = 0; j < i; j++) {
        b = &rs->v[j];
        if (b->type == a->type && b->port == a->port
            && strcmp(b->host, a->host) == 0)
        {
            return j + 1;
        }
    }
    return 0;
}


int
sk_routes_for(sk_routes_t *out, const sk_record_t *rec, const char *service,
    unsigned port, sk_err_t *err)
{
    const sk_service_t  *sv;
    sk_route_t          *r;
    size_t               i, dup;
    int                  onion = 0;

    out->v = NULL;
    out->n = 0;
    if (rec == NULL || rec->state != SK_RECORD_BOUND) {
        return 0;
    }
    sv = sk_services_find(&rec->services, service, port);
    if (sv == NULL) {
        return 0;
    }
    out->v = calloc(sv->nroutes + 1, sizeof(sk_route_t));
    if (out->v == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "routes: out of memory");
    }
    for (i = 0; i < sv->nroutes; i++) {
        r = &out->v[out->n++];
        if (sk_route_parse(r, sv->routes[i], strlen(sv->routes[i]), NULL)
            != 0)
        {
            continue;
        }
        dup = sk_routes_repeat(out, i);
        if (dup != 0) {
            r->type = SK_ROUTE_INVALID;
            r->host[0] = '\0';
            r->port = 0;
            snprintf(r->why, sizeof(r->why), "repeats route %zu", dup);
        }
        onion |= r->type == SK_ROUTE_ONION;
    }
    if (!onion && sk_key_alg(rec->key) == SK_KEY_ED25519) {
        r = &out->v[out->n];
        if (sk_onion_address_from_key(r->host, rec->key, err) != 0) {
            sk_routes_free(out);
            return -1;
        }
        r->type = SK_ROUTE_ONION;
        r->derived = 1;
        memcpy(r->text, r->host, sizeof(r->host));
        out->n++;
    }
    return 0;
}


void
sk_routes_free(sk_routes_t *routes)
{
    if (routes != NULL) {
        free(routes->v);
        routes->v = NULL;
        routes->n = 0;
    }
}
