/*
 * delay_proxy.c -- for the benchmarks: a TCP proxy on loopback that puts
 * a network's round trip between a client and a server without touching
 * the system's network (no tc, no netem):
 *
 *   delay_proxy LISTEN_PORT TARGET_ADDRESS TARGET_PORT ONE_WAY_MS
 *
 * Every byte read on one side is written to the other ONE_WAY_MS after it
 * was read, in both directions, so a request and its answer take one round
 * trip (2 x ONE_WAY_MS) more than on loopback.  A new connection costs one
 * round trip more as its TCP handshake would: the kernel accepts on
 * loopback at once, so what the client sends in the first round trip after
 * connecting is held as if it had been sent at its end.  A half-close is
 * passed on after the same delay.  Prints "listening PORT" once it
 * accepts; runs until killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DP_MAX_CONNS  128
#define DP_BUF        16384


/* Bytes read from one side, due on the other at .due (ms). */
typedef struct dp_chunk_s  dp_chunk_t;
struct dp_chunk_s {
    dp_chunk_t  *next;
    double       due;
    size_t       len;          /* 0: the sender's end of stream */
    size_t       off;          /* written so far */
    char         data[];
};

/* One direction of a connection: from -> to, its chunks in order. */
typedef struct {
    int          from, to;
    double       start;        /* nothing leaves before (the handshake) */
    dp_chunk_t  *head, *tail;
    int          eof_read;     /* the sender closed its side */
    int          done;         /* the end of stream was passed on */
} dp_dir_t;

typedef struct {
    int          used;
    dp_dir_t     dir[2];       /* 0: client -> server, 1: back */
} dp_conn_t;


static double      one_way;
static dp_conn_t   conns[DP_MAX_CONNS];


static double
now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}


static int
upstream(const struct sockaddr_in *to)
{
    int  fd;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    if (connect(fd, (const struct sockaddr *) to, sizeof(*to)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}


/* No delay of ours from Nagle, and no write that blocks the others. */
static void
tune(int fd)
{
    int  one = 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}


static void
conn_close(dp_conn_t *c)
{
    dp_chunk_t  *ch, *next;
    int          i;

    for (i = 0; i < 2; i++) {
        for (ch = c->dir[i].head; ch != NULL; ch = next) {
            next = ch->next;
            free(ch);
        }
    }
    close(c->dir[0].from);
    close(c->dir[0].to);
    memset(c, 0, sizeof(*c));
}


static void
conn_open(int lfd, const struct sockaddr_in *to)
{
    dp_conn_t  *c = NULL;
    double      t;
    int         cfd, sfd, i;

    cfd = accept(lfd, NULL, NULL);
    if (cfd < 0) {
        return;
    }
    for (i = 0; i < DP_MAX_CONNS && c == NULL; i++) {
        c = conns[i].used ? NULL : &conns[i];
    }
    sfd = c != NULL ? upstream(to) : -1;
    if (sfd < 0) {
        fprintf(stderr, "delay_proxy: %s\n", c == NULL
            ? "too many connections" : strerror(errno));
        close(cfd);
        return;
    }
    tune(cfd);
    tune(sfd);
    t = now_ms();
    c->used = 1;
    c->dir[0] = (dp_dir_t) { .from = cfd, .to = sfd, .start = t + 2 * one_way };
    c->dir[1] = (dp_dir_t) { .from = sfd, .to = cfd, .start = t };
}


/* Read what is there into a chunk due one way later; -1 on an error. */
static int
dir_read(dp_dir_t *d)
{
    dp_chunk_t  *ch;
    double       t;
    ssize_t      n;

    ch = malloc(sizeof(*ch) + DP_BUF);
    if (ch == NULL) {
        return -1;
    }
    n = read(d->from, ch->data, DP_BUF);
    if (n < 0) {
        free(ch);
        return errno == EINTR || errno == EAGAIN ? 0 : -1;
    }
    t = now_ms();
    ch->next = NULL;
    ch->due = (t > d->start ? t : d->start) + one_way;
    ch->len = (size_t) n;
    ch->off = 0;
    d->eof_read = n == 0;
    if (d->tail != NULL) {
        d->tail->next = ch;
    } else {
        d->head = ch;
    }
    d->tail = ch;
    return 0;
}


/* Write the chunks that are due; -1 on an error.  A full socket is tried
 * again at once (no POLLOUT): the benchmarks send a few kB at a time. */
static int
dir_write(dp_dir_t *d, double t)
{
    dp_chunk_t  *ch;
    ssize_t      n;

    while ((ch = d->head) != NULL && ch->due <= t) {
        if (ch->len == 0) {
            shutdown(d->to, SHUT_WR);
            d->done = 1;
        } else {
            n = write(d->to, ch->data + ch->off, ch->len - ch->off);
            if (n < 0) {
                return errno == EINTR || errno == EAGAIN ? 0 : -1;
            }
            ch->off += (size_t) n;
            if (ch->off < ch->len) {
                return 0;
            }
        }
        d->head = ch->next;
        if (d->head == NULL) {
            d->tail = NULL;
        }
        free(ch);
    }
    return 0;
}


/* The poll timeout: until the earliest due chunk, -1 if none. */
static int
next_timeout(double t)
{
    double  due = -1;
    int     i, k;

    for (i = 0; i < DP_MAX_CONNS; i++) {
        for (k = 0; conns[i].used && k < 2; k++) {
            if (conns[i].dir[k].head != NULL
                && (due < 0 || conns[i].dir[k].head->due < due))
            {
                due = conns[i].dir[k].head->due;
            }
        }
    }
    return due < 0 ? -1 : due <= t ? 0 : (int) (due - t) + 1;
}


static void
serve(int lfd, const struct sockaddr_in *to)
{
    struct pollfd  pfd[1 + 2 * DP_MAX_CONNS];
    dp_conn_t     *c;
    double         t;
    int            i, k, n, bad;

    for ( ;; ) {
        pfd[0] = (struct pollfd) { .fd = lfd, .events = POLLIN };
        for (i = 0; i < DP_MAX_CONNS; i++) {
            for (k = 0; k < 2; k++) {
                dp_dir_t  *d = &conns[i].dir[k];

                pfd[1 + 2 * i + k] = (struct pollfd) { .fd = -1 };
                if (conns[i].used && !d->eof_read) {
                    pfd[1 + 2 * i + k].fd = d->from;
                    pfd[1 + 2 * i + k].events = POLLIN;
                }
            }
        }
        n = poll(pfd, 1 + 2 * DP_MAX_CONNS, next_timeout(now_ms()));
        if (n < 0 && errno != EINTR) {
            perror("delay_proxy: poll");
            exit(1);
        }
        if (n > 0 && (pfd[0].revents & POLLIN)) {
            conn_open(lfd, to);
        }
        t = now_ms();
        for (i = 0; i < DP_MAX_CONNS; i++) {
            c = &conns[i];
            bad = 0;
            for (k = 0; c->used && k < 2; k++) {
                if (n > 0 && pfd[1 + 2 * i + k].revents != 0) {
                    bad |= dir_read(&c->dir[k]);
                }
                bad |= dir_write(&c->dir[k], t);
            }
            if (c->used && (bad || (c->dir[0].done && c->dir[1].done))) {
                conn_close(c);
            }
        }
    }
}


int
main(int argc, char **argv)
{
    struct sockaddr_in  la, ta;
    int                 lfd, one = 1;

    if (argc != 5) {
        fprintf(stderr, "usage: delay_proxy LISTEN_PORT TARGET_ADDRESS "
            "TARGET_PORT ONE_WAY_MS\n");
        return 2;
    }
    one_way = atof(argv[4]);
    signal(SIGPIPE, SIG_IGN);
    memset(&la, 0, sizeof(la));
    la.sin_family = AF_INET;
    la.sin_port = htons((unsigned short) atoi(argv[1]));
    la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memset(&ta, 0, sizeof(ta));
    ta.sin_family = AF_INET;
    ta.sin_port = htons((unsigned short) atoi(argv[3]));
    if (inet_pton(AF_INET, argv[2], &ta.sin_addr) != 1 || one_way < 0) {
        fprintf(stderr, "delay_proxy: bad target address or delay\n");
        return 2;
    }
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0
        || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0
        || bind(lfd, (struct sockaddr *) &la, sizeof(la)) != 0
        || listen(lfd, 64) != 0)
    {
        perror("delay_proxy: listen");
        return 1;
    }
    printf("listening %s\n", argv[1]);
    fflush(stdout);
    serve(lfd, &ta);
    return 0;
}
