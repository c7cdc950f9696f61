/*
 * skm_milter.c -- one MTA connection on the milter Socket: packets read
 * whole (at most SKM_MILTER_DATA_MAX bytes of data), each handed to the
 * session (skm_session.c) and its replies written before the next read.
 * A malformed packet or a protocol error is logged and closes this
 * connection only; the MTA applies milter_default_action to its message.
 *
 * Whoever reaches the socket may be hostile, so what a connection holds
 * follows what it sent, not what it declared: the buffer grows as a
 * packet's bytes arrive, and a packet begun must be whole within
 * PacketTimeout (between packets the MTA may stay quiet for long:
 * Postfix keeps its milter connections open).  The number of
 * connections is capped by skm_server.c (MaxConnections).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include "skm.h"

/* The read buffer to start with and to shrink back to: Postfix's
 * largest body chunk (MILTER_CHUNK_SIZE, 65535 bytes, and 5 of header)
 * fits, so a usual session never grows it. */
#define SKM_MILTER_BUF  (65535 + 5)

/* "closing the connection" lines: a peer can cause one per connection */
static skm_loglimit_t  skm_milter_closing = SKM_LOGLIMIT_INIT("Socket");


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


/*
 * Room in *buf for the next read, len bytes being in it.  Full with an
 * unfinished packet: grown, doubling, up to that packet's declared size
 * (which skm_mpkt_parse keeps to SKM_MILTER_DATA_MAX), so a peer that
 * declares 1 MiB and sends 5 bytes holds SKM_MILTER_BUF, not 1 MiB.
 * Empty: what a large packet grew is given back, for the connection may
 * now stay idle for hours.  -1 if out of memory.
 */
static int
skm_milter_room(char **buf, size_t *cap, size_t len)
{
    uint32_t  n;
    size_t    want;
    char     *p;

    if (len == 0 && *cap > SKM_MILTER_BUF) {
        p = realloc(*buf, SKM_MILTER_BUF);
        if (p != NULL) {                /* else keep the larger one */
            *buf = p;
            *cap = SKM_MILTER_BUF;
        }
        return 0;
    }
    if (len < *cap) {
        return 0;
    }
    /* full: skm_mpkt_parse found the length valid and the packet longer */
    memcpy(&n, *buf, 4);
    want = 4 + (size_t) ntohl(n);
    if (want > *cap * 2) {
        want = *cap * 2;
    }
    if (want <= len) {
        return -1;                      /* cannot happen: parse said more */
    }
    p = realloc(*buf, want);
    if (p == NULL) {
        return -1;
    }
    *buf = p;
    *cap = want;
    return 0;
}


/* PacketTimeout now, so that a reload applies to the next packet. */
static long
skm_milter_packet_timeout(void)
{
    skm_conf_t  *conf;
    long         secs;

    conf = skm_conf_acquire();
    secs = conf->packettimeout;
    skm_conf_release(conf);
    return secs;
}


void
skm_milter_conn(int fd)
{
    skm_session_t  *s;
    skm_obuf_t     *out;
    skm_bound_t     pkt;
    char           *buf, peer[96];
    const char     *data, *why;
    size_t          len, cap, off, used, dlen;
    ssize_t         got;
    int             prc, src, cmd, begun;

    s = skm_session_new();
    cap = SKM_MILTER_BUF;
    buf = malloc(cap);
    if (s == NULL || buf == NULL) {
        skm_log(LOG_ERR, "Socket: out of memory for a connection");
        goto done;
    }
    len = 0;
    begun = 0;
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
            skm_log_limited(&skm_milter_closing, LOG_WARNING, "Socket: "
                "closing the connection from %s: %s", peer, why);
            break;
        }
        if (src > 0) {
            break;                      /* QUIT */
        }
        memmove(buf, buf + off, len - off);
        len -= off;

        /* The packet now at buf's start began in the last read at the
         * earliest: its deadline runs from there. */
        if (off > 0 || len == 0) {
            begun = 0;
        }
        if (len > 0 && !begun) {
            skm_bound_init(&pkt, skm_milter_packet_timeout(), -1);
            begun = 1;
        }
        if (skm_milter_room(&buf, &cap, len) != 0) {
            skm_log(LOG_ERR, "Socket: out of memory for a packet");
            break;
        }
        if (begun && skm_bound_wait(&pkt, fd, POLLIN) != 0) {
            if (pkt.over != SKM_BOUND_TIMEOUT) {
                break;                  /* poll failed */
            }
            skm_peer(peer, sizeof(peer), fd);
            skm_log_limited(&skm_milter_closing, LOG_WARNING, "Socket: "
                "closing the connection from %s: packet not complete "
                "within PacketTimeout (%ld s)", peer, pkt.secs);
            break;
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
