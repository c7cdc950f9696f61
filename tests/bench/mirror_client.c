/*
 * mirror_client.c -- a small HTTP/1.1 load client for bench_mirror.sh:
 * C connections (keep-alive), each in its own thread, GET the same path
 * for S seconds; prints "<requests/s> <p50 us> <p99 us> <bytes/answer>".
 *
 *   mirror_client HOST PORT PATH SECONDS CONNECTIONS [RANGE]
 *
 * With RANGE, PATH holds one "%lu", replaced in each request by a number
 * drawn uniformly from [0, RANGE) (a different name each time: answers
 * not yet cached, for bench_scale.sh).  A "{nonce}" in PATH is replaced
 * in each request by a new nonce, 43 base64url characters (32 bytes, as
 * sk_nonce_new makes them, from a faster generator), for
 * mirror-query-nonce.
 */
#define _GNU_SOURCE             /* strcasestr */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LAT_MAX  65536          /* latency samples per connection */

typedef struct {
    struct sockaddr_in   sa;
    const char          *path;
    unsigned long        range;     /* 0: path as is */
    const char          *mark;      /* its "%lu" */
    const char          *nmark;     /* its "{nonce}", or NULL */
    uint64_t             rnd;       /* xorshift64 state */
    double               until;
    uint64_t             n;
    size_t               body;
    int                  failed;
    uint32_t            *lat;       /* microseconds */
    size_t               nlat;
    pthread_t            th;
} worker_t;


static double
now_s(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}


static uint64_t
next_rnd(worker_t *w)
{
    w->rnd ^= w->rnd << 13;
    w->rnd ^= w->rnd >> 7;
    w->rnd ^= w->rnd << 17;
    return w->rnd;
}


/* 32 pseudo-random bytes in base64url, no padding: 43 characters, the
 * last holding 4 bits (its low 2 zero, the canonical encoding). */
static void
make_nonce(worker_t *w, char out[44])
{
    static const char  abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                               "qrstuvwxyz0123456789-_";
    uint64_t           r = 0;
    int                i;

    for (i = 0; i < 42; i++) {
        if (i % 10 == 0) {
            r = next_rnd(w);
        }
        out[i] = abc[r & 63];
        r >>= 6;
    }
    out[42] = abc[(next_rnd(w) & 15) << 2];
    out[43] = '\0';
}


static int
dial(const struct sockaddr_in *sa)
{
    int  fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (const struct sockaddr *) sa, sizeof(*sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}


/* One response: headers, then Content-Length bytes.  Returns the body
 * length, or -1. */
static long
read_response(int fd, char *buf, size_t cap)
{
    size_t   have = 0;
    ssize_t  n;
    char    *end, *cl;
    long     len, hlen;

    for (;;) {
        n = read(fd, buf + have, cap - have - 1);
        if (n <= 0) {
            return -1;
        }
        have += (size_t) n;
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (end != NULL) {
            break;
        }
        if (have >= cap - 1) {
            return -1;
        }
    }
    if (strncmp(buf, "HTTP/1.1 200", 12) != 0) {
        return -1;
    }
    cl = strcasestr(buf, "\r\nContent-Length:");
    if (cl == NULL || cl > end) {
        return -1;
    }
    len = strtol(cl + 17, NULL, 10);
    hlen = (long) (end + 4 - buf);
    while ((long) have < hlen + len) {
        n = read(fd, buf, cap);
        if (n <= 0) {
            return -1;
        }
        have += (size_t) n;
    }
    return (long) have == hlen + len ? len : -1;
}


static void *
work(void *arg)
{
    worker_t  *w = arg;
    char       req[512], nonce[44], *buf;
    size_t     cap = 1 << 20;
    double     t0;
    long       len;
    int        fd, rl;

    buf = malloc(cap);
    rl = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: bench\r\n\r\n",
        w->path);
    fd = dial(&w->sa);
    while (buf != NULL && fd >= 0 && now_s() < w->until) {
        if (w->range != 0) {
            /* PATH is data, not a format: split it at its "%lu". */
            rl = snprintf(req, sizeof(req), "GET %.*s%lu%s HTTP/1.1\r\n"
                "Host: bench\r\n\r\n", (int) (w->mark - w->path), w->path,
                (unsigned long) (next_rnd(w) % w->range), w->mark + 3);
        } else if (w->nmark != NULL) {
            make_nonce(w, nonce);
            rl = snprintf(req, sizeof(req), "GET %.*s%s%s HTTP/1.1\r\n"
                "Host: bench\r\n\r\n", (int) (w->nmark - w->path), w->path,
                nonce, w->nmark + 7);
        }
        t0 = now_s();
        if (write(fd, req, (size_t) rl) != rl
            || (len = read_response(fd, buf, cap)) < 0)
        {
            w->failed++;
            close(fd);
            fd = dial(&w->sa);
            continue;
        }
        w->body = (size_t) len;
        w->n++;
        if (w->nlat < LAT_MAX) {
            w->lat[w->nlat++] = (uint32_t) ((now_s() - t0) * 1e6);
        }
    }
    if (fd >= 0) {
        close(fd);
    }
    free(buf);
    return NULL;
}


static int
cmp_u32(const void *a, const void *b)
{
    uint32_t  x = *(const uint32_t *) a, y = *(const uint32_t *) b;

    return x < y ? -1 : x > y;
}


int
main(int argc, char **argv)
{
    worker_t  *w;
    uint32_t  *all;
    uint64_t   total = 0;
    size_t     nall = 0, body = 0;
    double     secs, t0;
    int        i, conns, failed = 0;

    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: mirror_client HOST PORT PATH SECONDS CONNS "
            "[RANGE]\n");
        return 2;
    }
    secs = atof(argv[4]);
    conns = atoi(argv[5]);
    if (conns < 1 || conns > 1024 || secs <= 0) {
        return 2;
    }
    w = calloc((size_t) conns, sizeof(*w));
    if (w == NULL) {
        return 1;
    }
    t0 = now_s();
    for (i = 0; i < conns; i++) {
        w[i].sa.sin_family = AF_INET;
        w[i].sa.sin_port = htons((uint16_t) atoi(argv[2]));
        inet_pton(AF_INET, argv[1], &w[i].sa.sin_addr);
        w[i].path = argv[3];
        w[i].range = argc == 7 ? strtoul(argv[6], NULL, 10) : 0;
        w[i].mark = strstr(argv[3], "%lu");
        w[i].nmark = strstr(argv[3], "{nonce}");
        if (w[i].range != 0 && w[i].mark == NULL) {
            fprintf(stderr, "mirror_client: RANGE needs a %%lu in PATH\n");
            return 2;
        }
        w[i].rnd = 0x9e3779b97f4a7c15ULL * (uint64_t) (i + 1);
        w[i].until = t0 + secs;
        w[i].lat = malloc(LAT_MAX * sizeof(uint32_t));
        if (w[i].lat == NULL) {
            return 1;
        }
        pthread_create(&w[i].th, NULL, work, &w[i]);
    }
    all = malloc((size_t) conns * (LAT_MAX) * sizeof(uint32_t));
    for (i = 0; i < conns; i++) {
        pthread_join(w[i].th, NULL);
        total += w[i].n;
        failed += w[i].failed;
        body = w[i].body > body ? w[i].body : body;
        if (all != NULL) {
            memcpy(all + nall, w[i].lat, w[i].nlat * sizeof(uint32_t));
            nall += w[i].nlat;
        }
    }
    secs = now_s() - t0;
    if (all == NULL || nall == 0) {
        fprintf(stderr, "mirror_client: no answers (%d failures)\n", failed);
        return 1;
    }
    qsort(all, nall, sizeof(*all), cmp_u32);
    printf("%.0f %u %u %zu\n", (double) total / secs, all[nall / 2],
        all[nall * 99 / 100], body);
    return 0;
}
