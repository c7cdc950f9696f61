/*
 * skm_netstring.c -- the socketmap protocol's wire format (Postfix
 * socketmap_table(5)), without I/O so that it fuzzes on bytes:
 *
 *     request   LEN ":" NAME " " KEY ","
 *     reply     LEN ":" ("OK " DATA | "NOTFOUND " | "TEMP " REASON
 *                        | "TIMEOUT " REASON | "PERM " REASON) ","
 *
 * LEN is decimal with no sign, no leading zeros and no spaces, and at
 * most max; anything else is malformed and the peer is dropped.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "skm.h"


int
skm_netstring_parse(const char *buf, size_t len, size_t max,
    const char **data, size_t *dlen, size_t *used, const char **why)
{
    size_t  i, n;

    *data = NULL;
    *dlen = 0;
    *used = 0;
    *why = NULL;
    n = 0;
    for (i = 0; i < len && buf[i] != ':'; i++) {
        if (!isdigit((unsigned char) buf[i])) {
            *why = "length is not a decimal number";
            return -1;
        }
        if (i == 1 && buf[0] == '0') {
            *why = "length has a leading zero";
            return -1;
        }
        n = n * 10 + (size_t) (buf[i] - '0');
        if (n > max) {
            *why = "netstring too long";
            return -1;
        }
    }
    if (i == len) {
        return 0;                   /* the length is not complete yet */
    }
    if (i == 0) {
        *why = "empty length";
        return -1;
    }
    if (len - i - 1 < n + 1) {
        return 0;
    }
    if (buf[i + 1 + n] != ',') {
        *why = "netstring not terminated by \",\"";
        return -1;
    }
    *data = buf + i + 1;
    *dlen = n;
    *used = i + 1 + n + 1;
    return 1;
}


int
skm_netstring_format(char *out, size_t outlen, const char *data,
    size_t dlen)
{
    int  n;

    n = snprintf(out, outlen, "%zu:", dlen);
    if (n < 0 || (size_t) n + dlen + 1 >= outlen) {
        return -1;
    }
    memcpy(out + n, data, dlen);
    out[(size_t) n + dlen] = ',';
    out[(size_t) n + dlen + 1] = '\0';
    return n + (int) dlen + 1;
}


int
skm_sockmap_request(const char *data, size_t dlen, char *name,
    size_t namelen, char *key, size_t keylen, const char **why)
{
    const char  *sp;
    size_t       i, nl, kl;

    *why = NULL;
    sp = memchr(data, ' ', dlen);
    if (sp == NULL) {
        *why = "request is not \"NAME KEY\"";
        return -1;
    }
    nl = (size_t) (sp - data);
    kl = dlen - nl - 1;
    if (nl == 0 || kl == 0) {
        *why = "empty map name or key";
        return -1;
    }
    if (nl >= namelen || kl >= keylen) {
        *why = "map name or key too long";
        return -1;
    }
    for (i = 0; i < dlen; i++) {
        if (!isgraph((unsigned char) data[i]) && data + i != sp) {
            *why = "control, space or 8-bit character in the request";
            return -1;
        }
    }
    memcpy(name, data, nl);
    name[nl] = '\0';
    memcpy(key, sp + 1, kl);
    key[kl] = '\0';
    return 0;
}


int
skm_nexthop_parse(skm_nexthop_t *nh, const char *key)
{
    const char  *p, *end, *colon;
    size_t       len, i;
    long         port;

    memset(nh, 0, sizeof(*nh));
    nh->port = 25;
    p = key;
    if (*p == '[') {
        end = strchr(p, ']');
        if (end == NULL) {
            return -1;
        }
        nh->bracketed = 1;
        p++;
        len = (size_t) (end - p);
        colon = end + 1;
        if (*colon != '\0' && *colon != ':') {
            return -1;
        }
        if (*colon == '\0') {
            colon = NULL;
        }
    } else {
        colon = strrchr(p, ':');
        len = colon != NULL ? (size_t) (colon - p) : strlen(p);
    }
    if (colon != NULL) {
        port = 0;
        for (i = 1; colon[i] != '\0'; i++) {
            if (!isdigit((unsigned char) colon[i]) || i > 5) {
                return -1;
            }
            port = port * 10 + (colon[i] - '0');
        }
        if (i == 1 || port < 1 || port > 65535) {
            return -1;
        }
        nh->port = (int) port;
    }
    if (len == 0 || len > SKM_DOMAIN_MAX) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        nh->host[i] = (char) tolower((unsigned char) p[i]);
    }
    nh->host[len] = '\0';
    if (len > 1 && nh->host[len - 1] == '.') {
        nh->host[len - 1] = '\0';
    }
    return 0;
}
