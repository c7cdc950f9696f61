/*
 * bench_policy.c -- socketmap answers per second (sk-milter's PolicySocket).
 *
 *   bench_policy                        run the benchmark (bench_policy.pl)
 *   bench_policy load PORT KEY CONNS SECONDS
 *                                       CONNS persistent connections, each
 *                                       asking "sk KEY" in a loop; prints
 *                                       "answers/s N reply TEXT"
 *   bench_policy fixed PORT REPLY       the reference: a socketmap server
 *                                       answering REPLY to every request,
 *                                       one thread per connection, as
 *                                       sk-milter does, with no lookup
 *   bench_policy names PORT CONNS FILE  CONNS connections asking, between
 *                                       them, "sk KEY" once for each line
 *                                       of FILE; prints "answers/s N
 *                                       reply TEXT" (the first reply)
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BP_BUF 4096

static const char  *bp_req;         /* framed request */
static size_t       bp_reqlen;
static int          bp_port;
static double       bp_end;
static char         bp_reply[BP_BUF];
static long        *bp_first;       /* the counter whose reply is kept */
static const char  *bp_fixed;       /* framed fixed reply */
static size_t       bp_fixedlen;

static char        **bp_keys;       /* names mode: one request each */
static size_t        bp_nkeys, bp_next;
static pthread_mutex_t  bp_lock = PTHREAD_MUTEX_INITIALIZER;

static void *bp_load(void *arg);
static void *bp_serve(void *arg);
static size_t bp_ask(int fd, const char *req, size_t reqlen, char *buf,
    size_t size);


static double
bp_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}


static int
bp_connect(int port)
{
    struct sockaddr_in  sin;
    int                 fd, on;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((unsigned short) port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *) &sin, sizeof(sin)) != 0) {
        perror("connect");
        exit(1);
    }
    on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    return fd;
}


/* Bytes of one whole netstring at the start of buf, 0 if incomplete. */
static size_t
bp_framed(const char *buf, size_t len)
{
    size_t  n, i;

    n = 0;
    for (i = 0; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
        n = n * 10 + (size_t) (buf[i] - '0');
    }
    if (i == len || buf[i] != ':' || len < i + n + 2) {
        return 0;
    }
    return i + n + 2;
}


static void *
bp_load(void *arg)
{
    long     *count = arg;
    char      buf[BP_BUF];
    size_t    got;
    int       fd;

    fd = bp_connect(bp_port);
    while (bp_now() < bp_end) {
        got = bp_ask(fd, bp_req, bp_reqlen, buf, sizeof(buf));
        if (*count == 0 && count == bp_first) {
            snprintf(bp_reply, sizeof(bp_reply), "%.*s", (int) got, buf);
        }
        (*count)++;
    }
    close(fd);
    return NULL;
}


/* Ask one request on fd and wait for its whole reply (into buf). */
static size_t
bp_ask(int fd, const char *req, size_t reqlen, char *buf, size_t size)
{
    size_t   len, got;
    ssize_t  r;

    if (write(fd, req, reqlen) != (ssize_t) reqlen) {
        perror("write");
        exit(1);
    }
    len = 0;
    while ((got = bp_framed(buf, len)) == 0) {
        r = read(fd, buf + len, size - len);
        if (r <= 0) {
            fprintf(stderr, "bench_policy: server closed\n");
            exit(1);
        }
        len += (size_t) r;
    }
    return got;
}


/* Names mode: take the next key until none is left. */
static void *
bp_names(void *arg)
{
    long     *count = arg;
    char      buf[BP_BUF], req[BP_BUF];
    size_t    i, got, n;
    int       fd;

    fd = bp_connect(bp_port);
    for (;;) {
        pthread_mutex_lock(&bp_lock);
        i = bp_next++;
        pthread_mutex_unlock(&bp_lock);
        if (i >= bp_nkeys) {
            break;
        }
        n = (size_t) snprintf(req, sizeof(req), "%zu:sk %s,",
            strlen(bp_keys[i]) + 3, bp_keys[i]);
        got = bp_ask(fd, req, n, buf, sizeof(buf));
        pthread_mutex_lock(&bp_lock);
        if (bp_reply[0] == '\0') {
            snprintf(bp_reply, sizeof(bp_reply), "%.*s", (int) got, buf);
        }
        pthread_mutex_unlock(&bp_lock);
        (*count)++;
    }
    close(fd);
    return NULL;
}


/* The lines of path into bp_keys. */
static int
bp_read_keys(const char *path)
{
    FILE    *f;
    char     line[BP_BUF];
    size_t   n;

    f = fopen(path, "r");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        n = strcspn(line, "\r\n");
        line[n] = '\0';
        if (n == 0) {
            continue;
        }
        bp_keys = realloc(bp_keys, (bp_nkeys + 1) * sizeof(*bp_keys));
        if (bp_keys == NULL || (bp_keys[bp_nkeys] = strdup(line)) == NULL) {
            fclose(f);
            return -1;
        }
        bp_nkeys++;
    }
    fclose(f);
    return 0;
}


static void *
bp_serve(void *arg)
{
    char     buf[BP_BUF];
    size_t   len, got;
    ssize_t  r;
    int      fd;

    fd = (int) (long) arg;
    len = 0;
    for (;;) {
        while ((got = bp_framed(buf, len)) == 0) {
            r = read(fd, buf + len, sizeof(buf) - len);
            if (r <= 0) {
                close(fd);
                return NULL;
            }
            len += (size_t) r;
        }
        if (write(fd, bp_fixed, bp_fixedlen) != (ssize_t) bp_fixedlen) {
            close(fd);
            return NULL;
        }
        memmove(buf, buf + got, len - got);
        len -= got;
    }
}


static int
bp_fixed_server(int port, const char *reply)
{
    struct sockaddr_in  sin;
    pthread_t           t;
    char               *f;
    int                 lfd, fd, on;

    f = malloc(strlen(reply) + 32);
    if (f == NULL) {
        return 1;
    }
    bp_fixedlen = (size_t) sprintf(f, "%zu:%s,", strlen(reply), reply);
    bp_fixed = f;
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    on = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((unsigned short) port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *) &sin, sizeof(sin)) != 0
        || listen(lfd, 128) != 0)
    {
        perror("bind");
        return 1;
    }
    for (;;) {
        fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
        if (pthread_create(&t, NULL, bp_serve, (void *) (long) fd) != 0) {
            close(fd);
            continue;
        }
        pthread_detach(t);
    }
}


/* conns threads of fn, each counting in counts[i]: the answers/s since
 * start, and the first reply. */
static int
bp_threads(pthread_t *t, long *counts, int conns, void *(*fn)(void *),
    double start)
{
    long  total;
    int   i;

    for (i = 0; i < conns; i++) {
        if (pthread_create(&t[i], NULL, fn, &counts[i]) != 0) {
            return 1;
        }
    }
    total = 0;
    for (i = 0; i < conns; i++) {
        pthread_join(t[i], NULL);
        total += counts[i];
    }
    printf("answers/s %.2f reply %s\n", total / (bp_now() - start),
        bp_reply);
    return 0;
}


static int
bp_names_run(int port, int conns, const char *path)
{
    pthread_t  *t;
    long       *counts;

    if (conns < 1 || bp_read_keys(path) != 0) {
        return 2;
    }
    t = calloc((size_t) conns, sizeof(*t));
    counts = calloc((size_t) conns, sizeof(*counts));
    if (t == NULL || counts == NULL) {
        return 1;
    }
    bp_port = port;
    return bp_threads(t, counts, conns, bp_names, bp_now());
}


int
main(int argc, char **argv)
{
    pthread_t  *t;
    long       *counts;
    char       *req;
    double      start, secs;
    int         conns;
    const char *build;

    if (argc == 1) {
        build = getenv("BUILD");
        execlp("perl", "perl", "-I", "t/lib", "tests/bench/bench_policy.pl",
            build != NULL ? build : "build", (char *) NULL);
        perror("perl");
        return 1;
    }
    if (argc == 4 && strcmp(argv[1], "fixed") == 0) {
        return bp_fixed_server(atoi(argv[2]), argv[3]);
    }
    if (argc == 5 && strcmp(argv[1], "names") == 0) {
        return bp_names_run(atoi(argv[2]), atoi(argv[3]), argv[4]);
    }
    if (argc != 6 || strcmp(argv[1], "load") != 0) {
        fprintf(stderr, "usage: bench_policy [load PORT KEY CONNS SECONDS "
            "| fixed PORT REPLY | names PORT CONNS FILE]\n");
        return 2;
    }
    bp_port = atoi(argv[2]);
    conns = atoi(argv[4]);
    secs = atof(argv[5]);
    if (conns < 1 || secs <= 0) {
        return 2;
    }
    req = malloc(strlen(argv[3]) + 32);
    t = calloc((size_t) conns, sizeof(*t));
    counts = calloc((size_t) conns, sizeof(*counts));
    if (req == NULL || t == NULL || counts == NULL) {
        return 1;
    }
    bp_reqlen = (size_t) sprintf(req, "%zu:sk %s,", strlen(argv[3]) + 3,
        argv[3]);
    bp_req = req;
    bp_first = &counts[0];
    start = bp_now();
    bp_end = start + secs;
    return bp_threads(t, counts, conns, bp_load, start);
}
