/*
 * services.c -- the Services field: parsing, canonical text, lookups.
 *
 * The text is signed inside entries, so the parser accepts one spelling
 * only and format() gives that spelling back, byte for byte.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/name.h>
#include <sk/services.h>

#define SK_SERVICES_PORT_MAX 65535


static const struct {
    const char  *name;
    unsigned     port;
} sk_services_ports[] = {
    { "https",      443 },
    { "http",       80 },
    { "smtp",       25 },
    { "smtps",      465 },
    { "submission", 587 },
    { "imap",       143 },
    { "imaps",      993 },
    { "pop3s",      995 },
};


static int sk_services_fail(sk_err_t *err, size_t idx, const char *fmt, ...)
    SK_PRINTF(3, 4);


/* "services: element <idx>: <message>"; idx counts from 1. */
static int
sk_services_fail(sk_err_t *err, size_t idx, const char *fmt, ...)
{
    va_list  ap;
    char     msg[SK_ERR_MSG_MAX];

    if (err == NULL) {
        return -1;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sk_err_set(err, SK_ERR_FORMAT, "services: element %zu: %s", idx,
        msg);
}


/* A character that may not appear where it is; pos counts from 0. */
static int
sk_services_bad_char(sk_err_t *err, size_t idx, size_t pos, unsigned char c,
    const char *where)
{
    const char  *why;

    if (c == ' ') {
        why = "spaces are not allowed";
    } else if (c >= 0x80) {
        why = "not ASCII";
    } else if (c < 0x20 || c == 0x7f) {
        why = "a control character";
    } else if (c >= 'A' && c <= 'Z') {
        why = "uppercase (service names are lowercase)";
    } else {
        why = "not allowed here";
    }
    return sk_services_fail(err, idx, "character %zu (0x%02x) in %s: %s",
        pos + 1, c, where, why);
}


static int
sk_services_parse_name(sk_service_t *sv, const char *s, size_t len,
    size_t idx, size_t off, sk_err_t *err)
{
    unsigned char  c;
    size_t         i;

    if (len == 0) {
        return sk_services_fail(err, idx, "missing service name "
            "(character %zu)", off + 1);
    }
    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];
        if (c >= 'a' && c <= 'z') {
            continue;
        }
        if (i == 0 && ((c >= '0' && c <= '9') || c == '-')) {
            return sk_services_fail(err, idx, "character %zu ('%c'): a "
                "service name starts with a lowercase letter", off + 1, c);
        }
        if (!(c >= '0' && c <= '9') && c != '-') {
            return sk_services_bad_char(err, idx, off + i, c,
                "the service name");
        }
    }
    if (len > SK_SERVICE_NAME_MAX) {
        return sk_services_fail(err, idx, "service name of %zu characters, "
            "more than %d", len, SK_SERVICE_NAME_MAX);
    }
    if (len == 4 && memcmp(s, "none", 4) == 0) {
        return sk_services_fail(err, idx,
            "\"none\" must be the whole field");
    }
    memcpy(sv->name, s, len);
    sv->name[len] = '\0';
    return 0;
}


static int
sk_services_parse_port(sk_service_t *sv, const char *s, size_t len,
    size_t idx, size_t off, sk_err_t *err)
{
    unsigned long  v = 0;
    size_t         i;

    if (len == 0) {
        return sk_services_fail(err, idx, "missing port after ':' "
            "(character %zu)", off);
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return sk_services_fail(err, idx, "character %zu (0x%02x) in "
                "the port: not a digit", off + i + 1, (unsigned char) s[i]);
        }
        /* Saturate: the value only has to be known to be too big. */
        if (v <= SK_SERVICES_PORT_MAX) {
            v = v * 10 + (unsigned long) (s[i] - '0');
        }
    }
    if (v == 0 || v > SK_SERVICES_PORT_MAX) {
        return sk_services_fail(err, idx, "port %.*s%s out of range 1-%d",
            (int) (len > 12 ? 12 : len), s, len > 12 ? "..." : "",
            SK_SERVICES_PORT_MAX);
    }
    if (s[0] == '0') {
        return sk_services_fail(err, idx, "port %.*s has a leading zero",
            (int) len, s);
    }
    sv->port = (unsigned) v;
    return 0;
}


/* Route ri (from 1) of element idx; sv->nroutes counts what is owned. */
static int
sk_services_parse_route(sk_service_t *sv, const char *s, size_t len,
    size_t idx, size_t ri, size_t off, sk_err_t *err)
{
    unsigned char  c;
    char           where[32];
    size_t         i;

    if (len == 0) {
        return sk_services_fail(err, idx, "route %zu is empty "
            "(character %zu)", ri, off + 1);
    }
    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];
        if (c <= ' ' || c >= 0x7f) {
            snprintf(where, sizeof(where), "route %zu", ri);
            return sk_services_bad_char(err, idx, off + i, c, where);
        }
    }
    sv->routes[sv->nroutes] = strndup(s, len);
    if (sv->routes[sv->nroutes] == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "services: out of memory");
    }
    sv->nroutes++;
    return 0;
}


/* "mx=" pattern mi (from 1) of element idx: after "mx=", s[0..len). */
static int
sk_services_parse_mx(sk_service_t *sv, const char *s, size_t len,
    size_t idx, size_t mi, sk_err_t *err)
{
    sk_err_t  e;
    size_t    i, skip;

    if (strcmp(sv->name, "smtp") != 0) {
        return sk_services_fail(err, idx, "mx= patterns are for smtp, not "
            "%s", sv->name);
    }
    skip = len >= 2 && s[0] == '*' && s[1] == '.' ? 2 : 0;
    if (sk_name_check(s + skip, len - skip, &e) != 0) {
        return sk_services_fail(err, idx, "mx= pattern %zu: %s", mi, e.msg);
    }
    for (i = 0; i < sv->nmx; i++) {
        if (strlen(sv->mx[i]) == len && memcmp(sv->mx[i], s, len) == 0) {
            return sk_services_fail(err, idx, "mx= pattern %zu repeats "
                "pattern %zu (\"%s\")", mi, i + 1, sv->mx[i]);
        }
    }
    sv->mx[sv->nmx] = strndup(s, len);
    if (sv->mx[sv->nmx] == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "services: out of memory");
    }
    sv->nmx++;
    return 0;
}


static size_t
sk_services_count(const char *s, size_t len, char c)
{
    size_t  i, n = 0;

    for (i = 0; i < len; i++) {
        n += s[i] == c;
    }
    return n;
}


/* Element idx (from 1), s[0..len) starting at character off (from 0). */
static int
sk_services_parse_one(sk_service_t *sv, const char *s, size_t len,
    size_t idx, size_t off, sk_err_t *err)
{
    const char  *semi, *colon, *part;
    size_t       head, name, next, ri, n, plen;

    if (len == 0) {
        return sk_services_fail(err, idx, "empty (character %zu)", off + 1);
    }
    semi = memchr(s, ';', len);
    head = semi == NULL ? len : (size_t) (semi - s);
    colon = memchr(s, ':', head);
    name = colon == NULL ? head : (size_t) (colon - s);

    if (sk_services_parse_name(sv, s, name, idx, off, err) != 0) {
        return -1;
    }
    if (colon != NULL && sk_services_parse_port(sv, s + name + 1,
            head - name - 1, idx, off + name + 1, err) != 0)
    {
        return -1;
    }
    if (strcmp(sv->name, "all") == 0 && (colon != NULL || semi != NULL)) {
        return sk_services_fail(err, idx, "\"all\" takes no %s",
            colon != NULL ? "port" : "routes");
    }
    if (semi == NULL) {
        return 0;
    }

    n = sk_services_count(s, len, ';') + 1;
    sv->routes = calloc(n, sizeof(char *));
    sv->mx = calloc(n, sizeof(char *));
    if (sv->routes == NULL || sv->mx == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "services: out of memory");
    }
    for (ri = 1; head < len; ri++, head = next) {
        semi = memchr(s + head + 1, ';', len - head - 1);
        next = semi == NULL ? len : (size_t) (semi - s);
        part = s + head + 1;
        plen = next - head - 1;
        if (plen >= 3 && memcmp(part, "mx=", 3) == 0) {
            if (sk_services_parse_mx(sv, part + 3, plen - 3, idx,
                    sv->nmx + 1, err) != 0)
            {
                return -1;
            }
            continue;
        }
        if (sv->nmx > 0) {
            return sk_services_fail(err, idx, "route %zu after an mx= "
                "pattern (routes come first)", sv->nroutes + 1);
        }
        if (sk_services_parse_route(sv, part, plen, idx, sv->nroutes + 1,
                off + head + 1, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}


int
sk_services_parse(sk_services_t *out, const char *s, size_t len,
    sk_err_t *err)
{
    sk_services_t  svcs;
    const char    *comma;
    size_t         n, off, end, i;
    sk_service_t  *sv;

    out->v = NULL;
    out->n = 0;
    if (len == 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "services: empty (\"none\" is the empty set)");
    }
    if (len == 4 && memcmp(s, "none", 4) == 0) {
        return 0;
    }

    n = sk_services_count(s, len, ',') + 1;
    svcs.v = calloc(n, sizeof(sk_service_t));
    if (svcs.v == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "services: out of memory");
    }
    /* Count each element before filling it, so a failure frees it. */
    for (svcs.n = 0, off = 0; svcs.n < n; off = end + 1) {
        comma = memchr(s + off, ',', len - off);
        end = comma == NULL ? len : (size_t) (comma - s);
        sv = &svcs.v[svcs.n++];
        if (sk_services_parse_one(sv, s + off, end - off, svcs.n, off, err)
            != 0)
        {
            goto fail;
        }
        for (i = 0; i + 1 < svcs.n; i++) {
            if (svcs.v[i].port == sv->port
                && strcmp(svcs.v[i].name, sv->name) == 0)
            {
                if (sv->port == 0) {
                    sk_services_fail(err, svcs.n, "repeats element %zu "
                        "(\"%s\")", i + 1, sv->name);
                } else {
                    sk_services_fail(err, svcs.n, "repeats element %zu "
                        "(\"%s:%u\")", i + 1, sv->name, sv->port);
                }
                goto fail;
            }
        }
    }
    *out = svcs;
    return 0;

fail:
    sk_services_free(&svcs);
    return -1;
}


static char *
sk_services_put(char *p, const char *s)
{
    size_t  n = strlen(s);

    memcpy(p, s, n);
    return p + n;
}


int
sk_services_format(char **out, const sk_services_t *svcs, sk_err_t *err)
{
    const sk_service_t  *sv;
    sk_services_t        back;
    sk_err_t             perr;
    size_t               size = sizeof("none"), i, j, n;
    char                *buf, *p;
    int                  same;

    *out = NULL;
    for (i = 0; i < svcs->n; i++) {
        sv = &svcs->v[i];
        /* ",", the name, ":" and up to 10 digits. */
        size += strnlen(sv->name, sizeof(sv->name)) + 12;
        for (j = 0; j < sv->nroutes; j++) {
            size += strlen(sv->routes[j]) + 1;
        }
        for (j = 0; j < sv->nmx; j++) {
            size += strlen(sv->mx[j]) + 4;
        }
    }
    buf = malloc(size);
    if (buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "services: out of memory");
    }

    p = svcs->n == 0 ? sk_services_put(buf, "none") : buf;
    for (i = 0; i < svcs->n; i++) {
        sv = &svcs->v[i];
        if (i > 0) {
            *p++ = ',';
        }
        n = strnlen(sv->name, sizeof(sv->name));
        memcpy(p, sv->name, n);
        p += n;
        if (sv->port != 0) {
            p += sprintf(p, ":%u", sv->port);
        }
        for (j = 0; j < sv->nroutes; j++) {
            *p++ = ';';
            p = sk_services_put(p, sv->routes[j]);
        }
        for (j = 0; j < sv->nmx; j++) {
            p = sk_services_put(p, ";mx=");
            p = sk_services_put(p, sv->mx[j]);
        }
    }
    *p = '\0';

    /* A hand-built set can hold what no text spells ("a,b" as one route,
     * port 70000): refuse it rather than emit a field that means
     * something else. */
    if (sk_services_parse(&back, buf, (size_t) (p - buf), &perr) != 0) {
        free(buf);
        return sk_err_set(err, SK_ERR_USAGE,
            "services: cannot format an invalid set (%s)", perr.msg);
    }
    same = sk_services_equal(&back, svcs);
    sk_services_free(&back);
    if (!same) {
        free(buf);
        return sk_err_set(err, SK_ERR_USAGE, "services: cannot format: "
            "the set does not survive a round trip through its text");
    }
    *out = buf;
    return 0;
}


static unsigned
sk_services_default_port(const char *service)
{
    size_t  i;

    for (i = 0; i < sizeof(sk_services_ports) / sizeof(sk_services_ports[0]);
         i++)
    {
        if (strcmp(sk_services_ports[i].name, service) == 0) {
            return sk_services_ports[i].port;
        }
    }
    return 0;
}


const sk_service_t *
sk_services_find(const sk_services_t *svcs, const char *service,
    unsigned port)
{
    const sk_service_t  *sv, *anyport = NULL, *all = NULL;
    unsigned             want;
    size_t               i;

    if (svcs == NULL || service == NULL) {
        return NULL;
    }
    want = port != 0 ? port : sk_services_default_port(service);
    for (i = 0; i < svcs->n; i++) {
        sv = &svcs->v[i];
        if (strncmp(sv->name, service, sizeof(sv->name)) == 0) {
            if (sv->port == 0) {
                anyport = anyport != NULL ? anyport : sv;
            } else if (sv->port == want) {
                return sv;
            }
        } else if (all == NULL && strcmp(sv->name, "all") == 0) {
            all = sv;
        }
    }
    return anyport != NULL ? anyport : all;
}


int
sk_services_covers(const sk_services_t *svcs, const char *service,
    unsigned port)
{
    return sk_services_find(svcs, service, port) != NULL;
}


int
sk_services_mx_match(const char *pattern, const char *host)
{
    const char  *dot, *p;

    if (pattern[0] == '*' && pattern[1] == '.') {
        dot = strchr(host, '.');
        if (dot == NULL || dot == host) {
            return 0;
        }
        /* one label: letters, digits, '-' (a "*" is no host's label) */
        for (p = host; p < dot; p++) {
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
                  || (*p >= '0' && *p <= '9') || *p == '-'))
            {
                return 0;
            }
        }
        return sk_name_covers(pattern + 2, 0, dot + 1);
    }
    return sk_name_covers(pattern, 0, host);
}


int
sk_services_equal(const sk_services_t *a, const sk_services_t *b)
{
    const sk_service_t  *x, *y;
    size_t               i, j;

    if (a == NULL || b == NULL) {
        return a == b;
    }
    if (a->n != b->n) {
        return 0;
    }
    for (i = 0; i < a->n; i++) {
        x = &a->v[i];
        y = &b->v[i];
        if (strncmp(x->name, y->name, sizeof(x->name)) != 0
            || x->port != y->port || x->nroutes != y->nroutes
            || x->nmx != y->nmx)
        {
            return 0;
        }
        for (j = 0; j < x->nroutes; j++) {
            if (strcmp(x->routes[j], y->routes[j]) != 0) {
                return 0;
            }
        }
        for (j = 0; j < x->nmx; j++) {
            if (strcmp(x->mx[j], y->mx[j]) != 0) {
                return 0;
            }
        }
    }
    return 1;
}


void
sk_services_free(sk_services_t *svcs)
{
    size_t  i, j;

    if (svcs == NULL) {
        return;
    }
    for (i = 0; i < svcs->n; i++) {
        for (j = 0; j < svcs->v[i].nroutes; j++) {
            free(svcs->v[i].routes[j]);
        }
        free(svcs->v[i].routes);
        for (j = 0; j < svcs->v[i].nmx; j++) {
            free(svcs->v[i].mx[j]);
        }
        free(svcs->v[i].mx);
    }
    free(svcs->v);
    svcs->v = NULL;
    svcs->n = 0;
}
