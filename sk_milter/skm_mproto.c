/*
 * skm_mproto.c -- the milter protocol's wire format (version 6, as
 * Postfix's milter8.c and Sendmail's libmilter speak it), without I/O so
 * that it fuzzes on bytes:
 *
 *     packet   = LEN CMD DATA      ; LEN: 4 bytes, network order,
 *                                  ; counting CMD and DATA
 *
 * sk-milter reads the MTA's packets itself rather than through
 * libmilter, whose engine trusts its peer: a macro packet whose list ends
 * with a name and no value (D, "M{tls_version}\0") makes dec_argv build
 * an array of 2 pointers that smfi_getsymval then walks two at a time,
 * reading the pointer past its end (docs/postfix.md, "The milter
 * socket").  Here every packet is checked whole before anything uses it,
 * and a malformed one drops the connection.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "skm.h"


int
skm_mpkt_parse(const char *buf, size_t len, int *cmd, const char **data,
    size_t *dlen, size_t *used, const char **why)
{
    uint32_t  n;

    *cmd = 0;
    *data = NULL;
    *dlen = 0;
    *used = 0;
    *why = NULL;
    if (len < 4) {
        return 0;
    }
    memcpy(&n, buf, 4);
    n = ntohl(n);
    if (n == 0) {
        *why = "packet of length 0 (no command)";
        return -1;
    }
    if (n - 1 > SKM_MILTER_DATA_MAX) {
        *why = "packet longer than 1 MiB";
        return -1;
    }
    if (len - 4 < n) {
        return 0;
    }
    *cmd = (unsigned char) buf[4];
    *data = buf + 5;
    *dlen = n - 1;
    *used = 4 + (size_t) n;
    return 1;
}


int
skm_mpkt_strings(const char *data, size_t dlen, size_t *n, const char **why)
{
    size_t  i;

    *n = 0;
    if (dlen == 0 || data[dlen - 1] != '\0') {
        *why = dlen == 0 ? "no string" : "last string not NUL-terminated";
        return -1;
    }
    for (i = 0; i < dlen; i++) {
        if (data[i] == '\0') {
            (*n)++;
        }
    }
    return 0;
}


int
skm_mpkt_format(skm_obuf_t *out, int cmd, const char *data, size_t dlen)
{
    uint32_t  n;
    char     *p;
    size_t    need, cap;

    need = out->len + 5 + dlen;
    if (need > out->cap) {
        for (cap = out->cap ? out->cap : 256; cap < need; cap *= 2) { }
        p = realloc(out->buf, cap);
        if (p == NULL) {
            return -1;
        }
        out->buf = p;
        out->cap = cap;
    }
    n = htonl((uint32_t) (1 + dlen));
    p = out->buf + out->len;
    memcpy(p, &n, 4);
    p[4] = (char) cmd;
    if (dlen > 0) {
        memcpy(p + 5, data, dlen);
    }
    out->len = need;
    return 0;
}
