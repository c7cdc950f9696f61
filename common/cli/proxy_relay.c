/*
 * proxy_relay.c -- bytes both ways between the browser and the site
 * (proxy.h): a blind tunnel of two sockets, or a relay of two TLS
 * bufferevents.
 *
 * The blind tunnel moves bytes with splice(2), socket to pipe to socket,
 * so the proxy neither copies nor holds them: a pipe per direction is the
 * bound (its size, 64 KiB by default), and a direction whose pipe is full
 * stops reading its sender until the receiver takes some.  Each pipeful
 * is a wakeup of the proxy, and on a busy machine each wakeup waits for
 * a CPU: a download through 64 KiB pipes ran at 0.72 of direct, through
 * 1 MiB ones at 1.0.  So a direction whose read fills its pipe (the
 * sender had more) grows it to CLI_PROXY_PIPE_BIG once, while the grown
 * pipes of all tunnels stay within CLI_PROXY_PIPE_BUDGET: pipe pages
 * count against the user's pipe-user-pages-soft (64 MiB by default),
 * which the browser's own pipes share, and an idle tunnel never grows
 * its pipes.  A sender's end
 * of stream is passed on as shutdown(SHUT_WR) once its pipe is empty; the
 * tunnel ends when both directions have ended, or at the first error.
 *
 * The TLS relay moves decrypted bytes from one bufferevent's input to
 * the other's output, and stops reading a side while more than
 * CLI_PROXY_RELAY_MAX waits to go to the other.  TLS has no half-close
 * a browser uses, so the relay ends when either side ends, once what
 * that side sent has been written to the other.
 */
#define _GNU_SOURCE             /* splice(2), pipe2(2), F_GETPIPE_SZ */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "proxy.h"

typedef struct {
    cli_proxy_tun_t  *t;
    int               from, to;     /* tunnel: sockets */
    int               pipe[2];
    size_t            queued;       /* bytes in the pipe */
    size_t            cap;          /* the pipe's size */
    size_t            extra;        /* cap over the default, grown once */
    int               eof, shut;    /* from ended; to shut for writing */
    struct event     *rd, *wr;      /* from readable, to writable */
    struct bufferevent *bev;        /* relay: this side's (from) */
    uint64_t          bytes;        /* moved from -> to */
} cli_proxy_way_t;

struct cli_proxy_tun_s {
    cli_proxy_t       *px;
    cli_proxy_way_t    way[2];      /* a to b, b to a */
    int                relay;       /* bufferevents, not sockets */
    int64_t            last;
    int                ended;
    cli_proxy_end_fn   done;
    void              *arg;
};


static void
cli_proxy_tun_end(cli_proxy_tun_t *t, const char *why)
{
    int  i;

    if (t->ended) {
        return;
    }
    t->ended = 1;
    for (i = 0; i < 2; i++) {
        if (t->way[i].rd != NULL) {
            event_del(t->way[i].rd);
            event_del(t->way[i].wr);
        }
        if (t->way[i].bev != NULL) {
            bufferevent_disable(t->way[i].bev, EV_READ | EV_WRITE);
        }
    }
    t->done(t->arg, why);
}


/* Pipe to the receiver as far as it takes, then decide what to wait
 * for. */
static void
cli_proxy_way_pump(cli_proxy_way_t *w)
{
    cli_proxy_tun_t  *t = w->t;
    ssize_t           n;

    while (w->queued > 0) {
        n = splice(w->pipe[0], NULL, w->to, NULL, w->queued,
            SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            w->queued -= (size_t) n;
            w->bytes += (uint64_t) n;
            t->last = cli_get_now();
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            break;
        } else {
            cli_proxy_tun_end(t, n < 0 ? strerror(errno) : "closed");
            return;
        }
    }
    if (w->queued > 0) {
        event_add(w->wr, NULL);
    } else {
        event_del(w->wr);
    }
    if (!w->eof && w->queued < w->cap) {
        event_add(w->rd, NULL);
    } else {
        event_del(w->rd);
    }
    if (w->eof && w->queued == 0 && !w->shut) {
        w->shut = 1;
        shutdown(w->to, SHUT_WR);
    }
    if (t->way[0].shut && t->way[1].shut) {
        cli_proxy_tun_end(t, NULL);
    }
}


/* The sender filled the pipe: grow it once, within the budget (a
 * refusal, EPERM past the user's soft limit, keeps it as it is). */
static void
cli_proxy_way_grow(cli_proxy_way_t *w)
{
    cli_proxy_t  *px = w->t->px;
    int           cap;

    if (w->extra > 0 || w->cap >= CLI_PROXY_PIPE_BIG
        || px->pipe_extra + CLI_PROXY_PIPE_BIG - w->cap
           > CLI_PROXY_PIPE_BUDGET)
    {
        return;
    }
    cap = fcntl(w->pipe[1], F_SETPIPE_SZ, CLI_PROXY_PIPE_BIG);
    if (cap > 0 && (size_t) cap > w->cap) {
        w->extra = (size_t) cap - w->cap;
        w->cap = (size_t) cap;
        px->pipe_extra += w->extra;
    }
}


static void
cli_proxy_way_read(evutil_socket_t fd, short what, void *arg)
{
    cli_proxy_way_t  *w = arg;
    ssize_t           n;

    (void) fd;
    (void) what;
    n = splice(w->from, NULL, w->pipe[1], NULL, w->cap - w->queued,
        SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
        if ((size_t) n == w->cap - w->queued) {
            cli_proxy_way_grow(w);
        }
        w->queued += (size_t) n;
    } else if (n == 0) {
        w->eof = 1;
    } else if (errno != EAGAIN && errno != EINTR) {
        cli_proxy_tun_end(w->t, strerror(errno));
        return;
    }
    cli_proxy_way_pump(w);
}


static void
cli_proxy_way_write(evutil_socket_t fd, short what, void *arg)
{
    (void) fd;
    (void) what;
    cli_proxy_way_pump(arg);
}


static int
cli_proxy_way_open(cli_proxy_tun_t *t, cli_proxy_way_t *w, int from, int to,
    struct event_base *base, sk_err_t *err)
{
    int  cap;

    w->t = t;
    w->from = from;
    w->to = to;
    if (pipe2(w->pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        w->pipe[0] = w->pipe[1] = -1;
        return sk_err_sys(err, "proxy: cannot make a pipe");
    }
    cap = fcntl(w->pipe[1], F_GETPIPE_SZ);
    w->cap = cap > 0 ? (size_t) cap : 4096;
    w->rd = event_new(base, from, EV_READ | EV_PERSIST, cli_proxy_way_read,
        w);
    w->wr = event_new(base, to, EV_WRITE | EV_PERSIST, cli_proxy_way_write,
        w);
    if (w->rd == NULL || w->wr == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "proxy: out of memory");
    }
    return 0;
}


cli_proxy_tun_t *
cli_proxy_tunnel(cli_proxy_t *px, int a, int b, const void *head,
    size_t len, cli_proxy_end_fn done, void *arg, sk_err_t *err)
{
    cli_proxy_tun_t  *t = calloc(1, sizeof(*t));

    if (t == NULL) {
        close(a);
        close(b);
        sk_err_set(err, SK_ERR_NOMEM, "proxy: out of memory");
        return NULL;
    }
    t->px = px;
    t->way[0].pipe[0] = t->way[0].pipe[1] = -1;
    t->way[1].pipe[0] = t->way[1].pipe[1] = -1;
    t->done = done;
    t->arg = arg;
    t->last = cli_get_now();
    if (evutil_make_socket_nonblocking(a) != 0
        || evutil_make_socket_nonblocking(b) != 0)
    {
        sk_err_sys(err, "proxy: cannot make a socket non-blocking");
        t->way[0].from = a;
        t->way[0].to = b;
        cli_proxy_tun_free(t);
        return NULL;
    }
    if (cli_proxy_way_open(t, &t->way[0], a, b, px->base, err) != 0
        || cli_proxy_way_open(t, &t->way[1], b, a, px->base, err) != 0)
    {
        t->way[0].from = a;
        t->way[0].to = b;
        cli_proxy_tun_free(t);
        return NULL;
    }
    if (len > 0) {
        /* Into the empty pipe, which holds it whole. */
        if (len > t->way[0].cap
            || write(t->way[0].pipe[1], head, len) != (ssize_t) len)
        {
            sk_err_set(err, SK_ERR_SYSTEM, "proxy: cannot queue the first "
                "%zu bytes", len);
            cli_proxy_tun_free(t);
            return NULL;
        }
        t->way[0].queued = len;
        event_add(t->way[0].wr, NULL);
    }
    /* The loop moves the bytes: nothing ends before the caller has t. */
    event_add(t->way[0].rd, NULL);
    event_add(t->way[1].rd, NULL);
    return t;
}


/* Relay: which side a callback is for. */
static cli_proxy_way_t *
cli_proxy_side(cli_proxy_tun_t *t, struct bufferevent *bev)
{
    return t->way[0].bev == bev ? &t->way[0] : &t->way[1];
}


static cli_proxy_way_t *
cli_proxy_other(cli_proxy_tun_t *t, cli_proxy_way_t *w)
{
    return w == &t->way[0] ? &t->way[1] : &t->way[0];
}


static void
cli_proxy_relay_read(struct bufferevent *bev, void *arg)
{
    cli_proxy_tun_t   *t = arg;
    cli_proxy_way_t   *w = cli_proxy_side(t, bev), *o = cli_proxy_other(t, w);
    struct evbuffer   *in = bufferevent_get_input(bev),
                      *out = bufferevent_get_output(o->bev);
    size_t             n = evbuffer_get_length(in);

    if (n == 0) {
        return;
    }
    evbuffer_add_buffer(out, in);
    w->bytes += n;
    t->last = cli_get_now();
    if (evbuffer_get_length(out) >= CLI_PROXY_RELAY_MAX) {
        bufferevent_disable(bev, EV_READ);
        bufferevent_setwatermark(o->bev, EV_WRITE, CLI_PROXY_RELAY_MAX / 2,
            0);
    }
}


/* o's output went down to its low watermark: read from the other side
 * again, or end once an ended side's bytes are all out. */
static void
cli_proxy_relay_write(struct bufferevent *bev, void *arg)
{
    cli_proxy_tun_t  *t = arg;
    cli_proxy_way_t  *o = cli_proxy_side(t, bev), *w = cli_proxy_other(t, o);

    t->last = cli_get_now();
    if (w->eof) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
            cli_proxy_tun_end(t, NULL);
        }
        return;
    }
    bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
    bufferevent_enable(w->bev, EV_READ);
}


static void
cli_proxy_relay_event(struct bufferevent *bev, short what, void *arg)
{
    cli_proxy_tun_t  *t = arg;
    cli_proxy_way_t  *w = cli_proxy_side(t, bev), *o = cli_proxy_other(t, w);
    const char       *why = NULL;

    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))) {
        return;
    }
    if (what & BEV_EVENT_ERROR) {
        why = evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR());
    }
    cli_proxy_relay_read(bev, t);
    w->eof = 1;
    bufferevent_disable(bev, EV_READ);
    bufferevent_disable(o->bev, EV_READ);
    if (why != NULL || evbuffer_get_length(bufferevent_get_output(o->bev))
        == 0)
    {
        cli_proxy_tun_end(t, why);
        return;
    }
    /* The rest of what w sent goes out first: o's write callback ends. */
    bufferevent_setwatermark(o->bev, EV_WRITE, 0, 0);
}


cli_proxy_tun_t *
cli_proxy_relay(struct bufferevent *a, struct bufferevent *b,
    cli_proxy_end_fn done, void *arg, sk_err_t *err)
{
    cli_proxy_tun_t  *t = calloc(1, sizeof(*t));
    int               i;

    if (t == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "proxy: out of memory");
        return NULL;
    }
    t->relay = 1;
    t->done = done;
    t->arg = arg;
    t->last = cli_get_now();
    t->way[0].bev = a;
    t->way[1].bev = b;
    for (i = 0; i < 2; i++) {
        t->way[i].t = t;
        t->way[i].pipe[0] = t->way[i].pipe[1] = -1;
        t->way[i].from = t->way[i].to = -1;
        bufferevent_setwatermark(t->way[i].bev, EV_READ, 0,
            CLI_PROXY_RELAY_MAX / 4);
        bufferevent_setcb(t->way[i].bev, cli_proxy_relay_read,
            cli_proxy_relay_write, cli_proxy_relay_event, t);
        bufferevent_enable(t->way[i].bev, EV_READ | EV_WRITE);
    }
    /* What came before the relay began (the site may speak first). */
    cli_proxy_relay_read(a, t);
    cli_proxy_relay_read(b, t);
    return t;
}


int64_t
cli_proxy_tun_last(const cli_proxy_tun_t *t)
{
    return t->last;
}


void
cli_proxy_tun_bytes(const cli_proxy_tun_t *t, uint64_t *ab, uint64_t *ba)
{
    *ab = t->way[0].bytes;
    *ba = t->way[1].bytes;
}


void
cli_proxy_tun_free(cli_proxy_tun_t *t)
{
    cli_proxy_way_t  *w;
    int               i;

    if (t == NULL) {
        return;
    }
    for (i = 0; i < 2; i++) {
        w = &t->way[i];
        if (w->rd != NULL) {
            event_free(w->rd);
        }
        if (w->wr != NULL) {
            event_free(w->wr);
        }
        if (w->pipe[0] >= 0) {
            close(w->pipe[0]);
            close(w->pipe[1]);
        }
        if (w->extra > 0) {
            t->px->pipe_extra -= w->extra;
        }
        if (w->bev != NULL) {
            bufferevent_setcb(w->bev, NULL, NULL, NULL, NULL);
        }
    }
    if (!t->relay) {
        close(t->way[0].from);
        close(t->way[0].to);
    }
    free(t);
}
