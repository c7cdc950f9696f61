/*
 * fuzz_route.c -- the route parser (what may reach a socket or a SOCKS
 * proxy) on arbitrary bytes, alone and through a Services field.
 *
 * A route that parses is one of the four forms, and its canonical text
 * parses back to the same route; one that does not is marked invalid and
 * carries nothing a caller could connect to.  Report text is printable.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"


static void
fuzz_check_text(const sk_route_t *r)
{
    const char  *p;

    for (p = r->text; *p != '\0'; p++) {
        if (*p <= ' ' || *p >= 0x7f) {
            abort();
        }
    }
}


static void
fuzz_check(const sk_route_t *r, int rc)
{
    sk_route_t  back;
    char        canon[SK_ROUTE_TEXT_MAX + 16];
    size_t      hl = strlen(r->host);

    fuzz_check_text(r);
    if (rc != 0) {
        if (r->type != SK_ROUTE_INVALID || r->host[0] != '\0'
            || r->why[0] == '\0')
        {
            abort();
        }
        return;
    }
    if (hl == 0 || strpbrk(r->host, ";, []%") != NULL || r->port > 65535) {
        abort();
    }
    switch (r->type) {
    case SK_ROUTE_ADDR:
        if (r->port == 0) {
            abort();
        }
        break;
    case SK_ROUTE_ONION:
        if (sk_onion_address_check(r->host, hl, NULL) != 0) {
            abort();
        }
        break;
    case SK_ROUTE_EXIT:
        if (hl < 5 || strcmp(r->host + hl - 5, ".exit") != 0
            || sk_name_check(r->host, hl, NULL) != 0)
        {
            abort();
        }
        break;
    default:
        abort();
    }
    if (r->port == 0) {
        snprintf(canon, sizeof(canon), "%s", r->host);
    } else {
        snprintf(canon, sizeof(canon), r->ipv6 ? "[%s]:%u" : "%s:%u",
            r->host, r->port);
    }
    if (sk_route_parse(&back, canon, strlen(canon), NULL) != 0
        || back.type != r->type || back.port != r->port
        || strcmp(back.host, r->host) != 0)
    {
        abort();
    }
}


static void
fuzz_services_routes(const char *s, size_t len)
{
    sk_record_t  rec;
    sk_routes_t  rs;
    size_t       i, j;

    memset(&rec, 0, sizeof(rec));
    if (sk_services_parse(&rec.services, s, len, NULL) != 0) {
        return;
    }
    rec.state = SK_RECORD_BOUND;
    rec.key = fuzz_key();          /* an SK, for the own onion */
    for (i = 0; i < rec.services.n; i++) {
        if (sk_routes_for(&rs, &rec, rec.services.v[i].name,
                rec.services.v[i].port, NULL) != 0)
        {
            abort();
        }
        for (j = 0; j < rs.n; j++) {
            fuzz_check(&rs.v[j], rs.v[j].type == SK_ROUTE_INVALID ? -1 : 0);
        }
        sk_routes_free(&rs);
    }
    sk_services_free(&rec.services);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_route_t  r;
    int         rc;

    rc = sk_route_parse(&r, (const char *) data, size, NULL);
    fuzz_check(&r, rc);
    fuzz_services_routes((const char *) data, size);
    return 0;
}
