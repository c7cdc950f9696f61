/*
 * flood.c -- the floods of issue 40 and their victim, for t/fault/flood-*.t
 * and tests/bench/bench_flood.pl: an attacker on many connections from
 * several loopback source addresses, and a victim from another making
 * one request at a time on a fresh connection each, as `sk` does.
 *
 *   flood load HOST PORT FROM CONNS SECONDS MODE [ARG]
 *       CONNS connections from the addresses FROM (a comma-separated list,
 *       used in turn), each made again as soon as the server closes it
 *       (but with hold), for SECONDS (or until SIGTERM):
 *         get PATH      GET PATH, keep-alive; a "%lu" in PATH is a new
 *                       random number each request (names never asked)
 *         post FILE     the requests of FILE in turn, keep-alive
 *         hold          connect and send nothing, once
 *         churn         the same, each connection made again as soon as
 *                       the server closes it
 *       prints "running" once the server answers (or, holding, once
 *       every connection is made), then at the end "sent N answered N
 *       closed N codes C:N,C:N"
 *   flood victim HOST PORT FROM N TIMEOUT_MS MODE ARG [SKIP]
 *       N requests one after another, each on its own connection, each
 *       given TIMEOUT_MS for its whole answer (get PATH, or post FILE
 *       from its SKIP-th request on); prints "ok K of N p50_us P p99_us P
 *       max_us P codes C:N,..." (ok: a 2xx answer in time)
 *
 * A request file holds whole HTTP requests, each after its length on a
 * line of its own (tl_client writes its Binds so with TL_CLIENT_DUMP).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FL_MAX_FROM   256
#define FL_MAX_CONNS  20000
#define FL_BUF        65536
#define FL_CODES      600
#define FL_REQ        1024      /* a GET request */

typedef struct {
    char    **req;
    size_t   *len;
    size_t    n;
} fl_reqs_t;

typedef struct {
    int       fd;
    int       from;         /* index into the sources */
    int       connected;
    char     *out;          /* what is left to send */
    size_t    outlen;
    char     *in;
    size_t    inlen;
    char      req[FL_REQ];      /* its GET request */
    int       waiting;      /* a request sent, its answer not all in */
} fl_conn_t;

static volatile sig_atomic_t  fl_stop;
static struct sockaddr_in     fl_to;
static struct in_addr         fl_from[FL_MAX_FROM];
static int                    fl_nfrom;
static uint64_t               fl_codes[FL_CODES];
static uint64_t               fl_rnd = 88172645463325252ULL;


static void
fl_die(const char *what)
{
    fprintf(stderr, "flood: %s: %s\n", what, strerror(errno));
    exit(1);
}


static double
fl_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}


static void
fl_on_term(int sig)
{
    (void) sig;
    fl_stop = 1;
}


static uint64_t
fl_rand(void)
{
    fl_rnd ^= fl_rnd << 13;
    fl_rnd ^= fl_rnd >> 7;
    fl_rnd ^= fl_rnd << 17;
    return fl_rnd;
}


static void
fl_target(const char *host, const char *port)
{
    memset(&fl_to, 0, sizeof(fl_to));
    fl_to.sin_family = AF_INET;
    fl_to.sin_port = htons((uint16_t) atoi(port));
    if (inet_pton(AF_INET, host, &fl_to.sin_addr) != 1) {
        fprintf(stderr, "flood: %s: not an IPv4 address\n", host);
        exit(2);
    }
}


static void
fl_sources(const char *list)
{
    char  *copy = strdup(list), *p, *save = NULL;

    for (p = strtok_r(copy, ",", &save); p != NULL && fl_nfrom < FL_MAX_FROM;
         p = strtok_r(NULL, ",", &save))
    {
        if (inet_pton(AF_INET, p, &fl_from[fl_nfrom]) != 1) {
            fprintf(stderr, "flood: %s: not an IPv4 address\n", p);
            exit(2);
        }
        fl_nfrom++;
    }
    free(copy);
    if (fl_nfrom == 0) {
        fprintf(stderr, "flood: no source address\n");
        exit(2);
    }
}


/* A socket from source i to the target, connecting (nonblocking if nb). */
static int
fl_connect(int i, int nb)
{
    struct sockaddr_in  sa;
    int                 fd, one = 1;

    fd = socket(AF_INET, SOCK_STREAM | (nb ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr = fl_from[i % fl_nfrom];
    if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0
        || (connect(fd, (struct sockaddr *) &fl_to, sizeof(fl_to)) != 0
            && errno != EINPROGRESS))
    {
        close(fd);
        return -1;
    }
    return fd;
}


static void
fl_read_reqs(fl_reqs_t *r, const char *path)
{
    FILE    *f = fopen(path, "r");
    size_t   len;

    if (f == NULL) {
        fl_die(path);
    }
    memset(r, 0, sizeof(*r));
    while (fscanf(f, "%zu", &len) == 1 && fgetc(f) == '\n') {
        r->req = realloc(r->req, (r->n + 1) * sizeof(*r->req));
        r->len = realloc(r->len, (r->n + 1) * sizeof(*r->len));
        r->req[r->n] = malloc(len);
        if (r->req[r->n] == NULL || fread(r->req[r->n], 1, len, f) != len) {
            fl_die(path);
        }
        r->len[r->n++] = len;
    }
    fclose(f);
    if (r->n == 0) {
        fprintf(stderr, "flood: %s: no request\n", path);
        exit(2);
    }
}


static void
fl_free_reqs(fl_reqs_t *r)
{
    size_t  i;

    for (i = 0; r != NULL && i < r->n; i++) {
        free(r->req[i]);
    }
    if (r != NULL) {
        free(r->req);
        free(r->len);
    }
}


/* The next request: a GET of path (its "%lu" a new number) made in
 * buf[FL_REQ], or r's. */
static void
fl_next(char **out, size_t *len, const char *path, fl_reqs_t *r, size_t *i,
    char *buf)
{
    char         p[512];
    const char  *mark = strstr(path != NULL ? path : "", "%lu");

    if (r != NULL) {
        *out = r->req[*i % r->n];
        *len = r->len[*i % r->n];
        (*i)++;
        return;
    }
    if (mark != NULL) {
        snprintf(p, sizeof(p), "%.*s%lu%s", (int) (mark - path), path,
            (unsigned long) (fl_rand() % 1000000000000ULL), mark + 3);
    } else {
        snprintf(p, sizeof(p), "%s", path);
    }
    *len = (size_t) snprintf(buf, FL_REQ, "GET %s HTTP/1.1\r\nHost: "
        "flood\r\n\r\n", p);
    *out = buf;
}


/* An answer whole at in[0..len)?  Its status and length, or 0. */
static size_t
fl_answer(const char *in, size_t len, int *code)
{
    const char  *end, *cl;
    size_t       head, body = 0;

    end = memmem(in, len, "\r\n\r\n", 4);
    if (end == NULL) {
        return 0;
    }
    head = (size_t) (end - in) + 4;
    if (sscanf(in, "HTTP/1.%*d %d", code) != 1) {
        *code = 0;
    }
    cl = memmem(in, head, "\r\nContent-Length: ", 18);
    if (cl == NULL) {
        cl = memmem(in, head, "\r\ncontent-length: ", 18);
    }
    if (cl != NULL) {
        body = strtoul(cl + 18, NULL, 10);
    }
    return head + body <= len ? head + body : 0;
}


static void
fl_count(int code)
{
    fl_codes[code > 0 && code < FL_CODES ? code : 0]++;
}


static void
fl_print_codes(void)
{
    int  c, first = 1;

    printf(" codes ");
    for (c = 0; c < FL_CODES; c++) {
        if (fl_codes[c] > 0) {
            printf("%s%d:%llu", first ? "" : ",", c,
                (unsigned long long) fl_codes[c]);
            first = 0;
        }
    }
    printf("%s\n", first ? "-" : "");
}


static void
fl_close(fl_conn_t *k, int ep)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, k->fd, NULL);
    close(k->fd);
    k->fd = -1;
    k->inlen = 0;
    k->outlen = 0;
    k->waiting = 0;
}


static int
fl_open(fl_conn_t *k, int ep)
{
    struct epoll_event  ev;

    k->fd = fl_connect(k->from, 1);
    if (k->fd < 0) {
        return -1;
    }
    k->connected = 0;
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLOUT;
    ev.data.ptr = k;
    return epoll_ctl(ep, EPOLL_CTL_ADD, k->fd, &ev);
}


static int
fl_load(int argc, char **argv)
{
    struct epoll_event   evs[256], ev;
    fl_conn_t           *k, *conns;
    fl_reqs_t            reqs, *r = NULL;
    uint64_t             sent = 0, answered = 0, closed = 0;
    const char          *mode = argv[6], *path = NULL;
    size_t               i, n = strtoul(argv[4], NULL, 10), next = 0, m;
    size_t               connected = 0;
    double               until = fl_now() + atof(argv[5]);
    ssize_t              got;
    int                  ep, j, nev, hold, again, code, running = 0;

    fl_target(argv[1], argv[2]);
    fl_sources(argv[3]);
    hold = strcmp(mode, "hold") == 0 || strcmp(mode, "churn") == 0;
    again = strcmp(mode, "hold") != 0;
    if (strcmp(mode, "get") == 0 && argc == 8) {
        path = argv[7];
    } else if (strcmp(mode, "post") == 0 && argc == 8) {
        fl_read_reqs(&reqs, argv[7]);
        r = &reqs;
    } else if (!hold) {
        fprintf(stderr, "flood: load: want get PATH, post FILE, hold or "
            "churn\n");
        return 2;
    }
    if (n == 0 || n > FL_MAX_CONNS) {
        fprintf(stderr, "flood: load: 1..%d connections\n", FL_MAX_CONNS);
        return 2;
    }
    conns = calloc(n, sizeof(*conns));
    ep = epoll_create1(0);
    if (conns == NULL || ep < 0) {
        fl_die("epoll");
    }
    for (i = 0; i < n; i++) {
        conns[i].from = (int) i;
        conns[i].in = malloc(FL_BUF);
        if (conns[i].in == NULL) {
            fl_die("memory");
        }
        conns[i].fd = -1;
        (void) fl_open(&conns[i], ep);
    }
    while (!fl_stop && fl_now() < until) {
        if (!running && (hold ? connected >= n : answered + closed > 0)) {
            printf("running\n");   /* the server is being flooded */
            running = 1;
        }
        nev = epoll_wait(ep, evs, 256, 100);
        for (j = 0; j < nev; j++) {
            k = evs[j].data.ptr;
            if (k->fd < 0) {
                continue;
            }
            if (!k->connected && (evs[j].events & EPOLLOUT)
                && !(evs[j].events & (EPOLLERR | EPOLLHUP)))
            {
                k->connected = 1;
                connected++;
                if (hold) {
                    ev.events = EPOLLIN | EPOLLRDHUP;
                    ev.data.ptr = k;
                    epoll_ctl(ep, EPOLL_CTL_MOD, k->fd, &ev);
                }
            }
            if (evs[j].events & EPOLLIN) {
                got = recv(k->fd, k->in + k->inlen, FL_BUF - k->inlen, 0);
                if (got <= 0 || hold) {
                    closed++;
                    fl_close(k, ep);
                    continue;
                }
                k->inlen += (size_t) got;
                while (k->waiting
                       && (m = fl_answer(k->in, k->inlen, &code)) > 0)
                {
                    fl_count(code);
                    answered++;
                    memmove(k->in, k->in + m, k->inlen - m);
                    k->inlen -= m;
                    k->waiting = 0;
                }
                if (k->inlen == FL_BUF) {
                    k->inlen = 0;           /* an answer too big: drop */
                }
            } else if (evs[j].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
                closed++;
                fl_close(k, ep);
                continue;
            }
            if (!hold && !k->waiting && k->outlen == 0) {
                fl_next(&k->out, &k->outlen, path, r, &next, k->req);
                k->waiting = 1;
                sent++;
            }
            if (!hold && k->outlen > 0 && (evs[j].events & EPOLLOUT)) {
                got = send(k->fd, k->out, k->outlen, MSG_NOSIGNAL);
                if (got < 0 && errno != EAGAIN) {
                    closed++;
                    fl_close(k, ep);
                    continue;
                }
                if (got > 0) {
                    k->out += got;
                    k->outlen -= (size_t) got;
                }
            }
            if (!hold && k->fd >= 0) {
                ev.events = EPOLLIN | EPOLLRDHUP
                            | (k->outlen > 0 ? EPOLLOUT : 0);
                ev.data.ptr = k;
                epoll_ctl(ep, EPOLL_CTL_MOD, k->fd, &ev);
            }
        }
        for (i = 0; again && i < n; i++) {
            if (conns[i].fd < 0) {
                (void) fl_open(&conns[i], ep);
            }
        }
    }
    printf("sent %llu answered %llu closed %llu",
        (unsigned long long) sent, (unsigned long long) answered,
        (unsigned long long) closed);
    fl_print_codes();
    for (i = 0; i < n; i++) {
        if (conns[i].fd >= 0) {
            close(conns[i].fd);
        }
        free(conns[i].in);
    }
    free(conns);
    fl_free_reqs(r);
    close(ep);
    return 0;
}


static int
fl_cmp(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}


/* One request on a fresh connection; its status (0: none in time). */
static int
fl_once(const char *req, size_t len, double timeout)
{
    struct timeval  tv;
    double          until = fl_now() + timeout;
    size_t          inlen = 0;
    ssize_t         got;
    char            in[FL_BUF];
    int             fd, code = 0;

    fd = fl_connect(0, 0);
    if (fd < 0) {
        return 0;
    }
    tv.tv_sec = (time_t) timeout;
    tv.tv_usec = (suseconds_t) ((timeout - (double) tv.tv_sec) * 1e6);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t) len) {
        close(fd);
        return 0;
    }
    while (fl_now() < until && inlen < sizeof(in)) {
        got = recv(fd, in + inlen, sizeof(in) - inlen, 0);
        if (got <= 0) {
            break;
        }
        inlen += (size_t) got;
        if (fl_answer(in, inlen, &code) > 0) {
            break;
        }
        code = 0;
    }
    close(fd);
    return code;
}


static int
fl_victim(int argc, char **argv)
{
    fl_reqs_t   reqs, *r = NULL;
    const char *mode = argv[6];
    size_t      n = strtoul(argv[4], NULL, 10), i, ok = 0, at = 0, len;
    double      timeout = atof(argv[5]) / 1000, t0, *lat;
    char       *req, buf[FL_REQ];
    int         code;

    fl_target(argv[1], argv[2]);
    fl_sources(argv[3]);
    if (strcmp(mode, "post") == 0 && (argc == 8 || argc == 9)) {
        fl_read_reqs(&reqs, argv[7]);
        r = &reqs;
        at = argc == 9 ? strtoul(argv[8], NULL, 10) : 0;
    } else if (strcmp(mode, "get") != 0 || argc != 8) {
        fprintf(stderr, "flood: victim: want get PATH or post FILE [SKIP]\n");
        return 2;
    }
    lat = calloc(n > 0 ? n : 1, sizeof(*lat));
    for (i = 0; i < n && !fl_stop; i++) {
        fl_next(&req, &len, r == NULL ? argv[7] : NULL, r, &at, buf);
        t0 = fl_now();
        code = fl_once(req, len, timeout);
        lat[i] = fl_now() - t0;
        fl_count(code);
        ok += code >= 200 && code < 300;
    }
    n = i;
    qsort(lat, n, sizeof(*lat), fl_cmp);
    printf("ok %zu of %zu p50_us %.0f p99_us %.0f max_us %.0f", ok, n,
        n > 0 ? lat[n / 2] * 1e6 : 0,
        n > 0 ? lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] * 1e6 : 0,
        n > 0 ? lat[n - 1] * 1e6 : 0);
    fl_print_codes();
    free(lat);
    fl_free_reqs(r);
    return 0;
}


int
main(int argc, char **argv)
{
    struct sigaction  sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fl_on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    fl_rnd ^= (uint64_t) getpid() << 17 ^ (uint64_t) time(NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 8 && strcmp(argv[1], "load") == 0) {
        return fl_load(argc - 1, argv + 1);
    }
    if (argc >= 8 && strcmp(argv[1], "victim") == 0) {
        return fl_victim(argc - 1, argv + 1);
    }
    fprintf(stderr, "usage: flood load HOST PORT FROM CONNS SECONDS "
        "get PATH|post FILE|hold|churn\n"
        "       flood victim HOST PORT FROM N TIMEOUT_MS get PATH|post FILE "
        "[SKIP]\n");
    return 2;
}
