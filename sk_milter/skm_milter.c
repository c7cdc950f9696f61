/*
 * skm_milter.c -- one MTA connection on the milter Socket: packets read
 * whole (at most SKM_MILTER_DATA_MAX bytes of data), each handed to the
 * session (skm_session.c) and its replies written before the next read.
 * A malformed packet or a protocol error is logged and closes this
 * connection only; the MTA applies milter_default_action to its message.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include "skm.h"

#define SKM_MILTER_BUF  65536           /* read buffer, grown for a packet */


static int
skm_write_all(int fd, const char *p, size_t len)
{
    ssize_t  n;

    while (len > 0) {
        n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t) n;
    }
    return 0;
}


/* "ADDRESS:PORT" of the peer, or "a local client". */
static void
skm_peer(char *out, size_t outlen, int fd)
{
    struct sockaddr_storage  ss;
    socklen_t                sl;
    char                     host[64];
    int                      port;

    sl = sizeof(ss);
    snprintf(out, outlen, "a local client");
    if (getpeername(fd, (struct sockaddr *) &ss, &sl) != 0) {
        return;
    }
    if (ss.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *) &ss)->sin_addr, host,
            sizeof(host));
        port = ntohs(((struct sockaddr_in *) &ss)->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &ss)->sin6_addr, host,
            sizeof(host));
        port = ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
    } else {
        return;
    }
    snprintf(out, outlen, "%s port %d", host, port);
}


void
skm_milter_conn(int fd)
{
    skm_session_t  *s;
    skm_obuf_t     *out;
    char           *buf, *p, peer[96];
    const char     *data, *why;
    size_t          len, cap, off, used, dlen;
    uint32_t        n;
    ssize_t         got;
    int             prc, src, cmd;

    s = skm_session_new();
    cap = SKM_MILTER_BUF;
    buf = malloc(cap);
    if (s == NULL || buf == NULL) {
        skm_log(LOG_ERR, "Socket: out of memory for a connection");
        goto done;
    }
    len = 0;
    for (;;) {
        src = 0;
        off = 0;
        while ((prc = skm_mpkt_parse(buf + off, len - off, &cmd, &data,
                    &dlen, &used, &why)) == 1)
        {
            off += used;
            src = skm_session_input(s, cmd, data, dlen, &why);
            if (src != 0) {
                break;
            }
        }
        out = skm_session_out(s);
        if (out->len > 0 && skm_write_all(fd, out->buf, out->len) != 0) {
            break;
        }
        out->len = 0;
        if (src < 0 || prc < 0) {
            skm_peer(peer, sizeof(peer), fd);
            skm_log(LOG_WARNING, "Socket: closing the connection from %s: "
                "%s", peer, why);
            break;
        }
        if (src > 0) {
            break;                      /* QUIT */
        }
        memmove(buf, buf + off, len - off);
        len -= off;
        if (len >= 4) {                 /* room for the whole packet */
            memcpy(&n, buf, 4);
            n = ntohl(n);
            if (4 + (size_t) n > cap) {
                p = realloc(buf, 4 + (size_t) n);
                if (p == NULL) {
                    skm_log(LOG_ERR, "Socket: out of memory for a packet");
                    break;
                }
                buf = p;
                cap = 4 + (size_t) n;
            }
        }
        got = read(fd, buf + len, cap - len);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            break;                      /* EOF, idle timeout, error */
        }
        len += (size_t) got;
    }

done:
    free(buf);
    skm_session_free(s);
}
