/*
 * httpd.c -- the HTTP front sk-timeline and sk-mirror share (sk/httpd.h).
 *
 * libmicrohttpd counts only silence against a connection, so a client
 * that trickles a header line every few seconds never times out, and idle
 * sockets pile up to the connection limit.  Here every connection is also
 * on a list with the time its current request began (the connection, or
 * the last answer on it); a reaper thread shuts down the socket of any
 * that has not delivered a whole request within request_timeout, and
 * libmicrohttpd, reading end of file, closes it.  An entry leaves the
 * list at MHD_CONNECTION_NOTIFY_CLOSED, which comes before libmicrohttpd
 * closes the socket, under the list's lock: the reaper never shuts down a
 * socket number that may have been reused.
 *
 * The same list and lock share the server out among clients
 * (sk/httpd.h): each connection counts against its client
 * (httpd_client.c) from MHD_CONNECTION_NOTIFY_STARTED to CLOSED; the
 * accept policy closes a client's connection past per_ip before
 * libmicrohttpd does any work for it; past "connections" in all, the
 * connection closed (shut down, as the reaper does) is a waiting one of
 * the client holding the most.  libmicrohttpd's own limit is set above
 * ours, so that it never leaves a newcomer in the listen backlog while a
 * connection given up is still closing.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include <errno.h>

#include "sk/addr.h"
#include "sk/httpd.h"
#include "internal.h"

#define SK_HTTPD_TICK_MS    250     /* the reaper's round */
#define SK_HTTPD_LOG_EVERY  10000   /* ms between its summaries */
#define SK_HTTPD_SWEEP_EVERY 5000   /* ms between sweeps of the clients */
#define SK_HTTPD_MHD_LINES  20      /* libmicrohttpd lines a minute */
#define SK_HTTPD_FD_SPARE   256     /* descriptors besides connections */
#define SK_HTTPD_MAX_CONNECTIONS  1000000
#define SK_HTTPD_MAX_TIMEOUT      86400
#define SK_HTTPD_METRICS_CONNS    16      /* scrapers at once */
#define SK_HTTPD_RATE_MAX         1000000

typedef struct sk_httpd_conn_s  sk_httpd_conn_t;

struct sk_httpd_conn_s {
    sk_httpd_conn_t   *prev, *next;
    int                fd;
    uint64_t           since;       /* ms its request began; 0: the whole
                                       request is in (lock) */
    uint64_t           body;        /* bytes of this request's body (its
                                       polling thread only) */
    uint64_t           began;       /* us its request began; 0: not
                                       counted (its polling thread only) */
    unsigned           ep;          /* its endpoint (metrics) */
    sk_httpd_client_t *client;      /* whose it is (lock; NULL: none) */
    int                proxy;       /* from a trusted proxy */
    int                evicted;     /* shut down to make room: no longer
                                       counted (lock) */
    uint64_t           who;         /* the client of its request (its
                                       polling thread only) */
    int                costly;      /* and whether that costs work */
};

/* *con_cls from sk_httpd_uri to sk_httpd_access: the raw target has a
 * NUL byte encoded (its address is the mark; the handlers never see it). */
static char  sk_httpd_nul;

struct sk_httpd_s {
    sk_httpd_conf_t     conf;
    struct MHD_Daemon  *d;
    pthread_mutex_t     lock;       /* conns and the fields below */
    pthread_cond_t      wake;       /* stopping */
    sk_httpd_conn_t    *conns;
    int                 stopping;
    uint64_t            reaped;     /* closed since the last summary */
    uint64_t            reaped_at;  /* ms of the last summary */
    uint64_t            swept_at;   /* ms of the last clients' sweep */
    uint64_t            refused_at; /* ms of the last refusals' summary */
    uint64_t            log_min;    /* minute of libmicrohttpd's lines */
    unsigned            log_lines;  /* lines shown in it */
    unsigned long       log_hidden; /* lines not shown in it */
    pthread_t           reaper;
    int                 reaper_up;
    sk_httpd_stats_t   *stats;      /* NULL: no metrics */
    sk_httpd_clients_t  clients;    /* (lock) */
    uint64_t            total;      /* connections counted (lock) */
    uint64_t            most;       /* all taken and none to make room
                                       from: what the newcomer's client
                                       held; 0 once a place is free */
    uint64_t            proxies[SK_HTTPD_PROXIES_MAX];
    size_t              nproxies;
    uint64_t            refusals[SK_HTTPD_REASONS];   /* since the last
                                       summary (lock) */
};


static uint64_t
sk_httpd_us(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}


static uint64_t
sk_httpd_ms(void)
{
    return sk_httpd_us() / 1000;
}


static void
sk_httpd_log(const sk_httpd_t *h, const char *fmt, ...) SK_PRINTF(2, 3);

static void
sk_httpd_log(const sk_httpd_t *h, const char *fmt, ...)
{
    va_list  ap;
    char     msg[512];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: http: %s\n", h->conf.prog, msg);
}


/* libmicrohttpd's messages (one per refused or broken connection), at
 * most SK_HTTPD_MHD_LINES a minute: a flood of clients must not flood
 * the log. */
static void
sk_httpd_mhd_log(void *cls, const char *fmt, va_list ap)
{
    sk_httpd_t  *h = cls;
    uint64_t     min = sk_httpd_ms() / 60000;
    size_t       n;
    char         msg[512];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n') {
        msg[--n] = '\0';
    }
    pthread_mutex_lock(&h->lock);
    if (min != h->log_min) {
        if (h->log_hidden > 0) {
            sk_httpd_log(h, "%lu more libmicrohttpd messages in the last "
                "minute not shown", h->log_hidden);
        }
        h->log_min = min;
        h->log_lines = 0;
        h->log_hidden = 0;
    }
    if (h->log_lines < SK_HTTPD_MHD_LINES) {
        h->log_lines++;
        sk_httpd_log(h, "%s", msg);
    } else {
        h->log_hidden++;
    }
    pthread_mutex_unlock(&h->lock);
}


/* Under the lock: one refusal more. */
static void
sk_httpd_count(sk_httpd_t *h, int reason)
{
    h->refusals[reason]++;
    sk_httpd_stats_refused(h->stats, (unsigned) reason);
}


/* Under the lock: what was closed or refused since the last such line,
 * a line each kind, every SK_HTTPD_LOG_EVERY ms at most. */
static void
sk_httpd_summary(sk_httpd_t *h, uint64_t now)
{
    uint64_t  *r = h->refusals;
    size_t     i;

    if (h->reaped > 0 && now - h->reaped_at >= SK_HTTPD_LOG_EVERY) {
        sk_httpd_log(h, "closed %" PRIu64 " connections that sent no "
            "whole request within %" PRIu64 " s (request_timeout): slow "
            "or idle clients", h->reaped, h->conf.limits.request_timeout);
        h->reaped = 0;
        h->reaped_at = now;
    }
    for (i = 0; i < SK_HTTPD_REASONS && r[i] == 0; i++) {
    }
    if (i == SK_HTTPD_REASONS || now - h->refused_at < SK_HTTPD_LOG_EVERY) {
        return;
    }
    if (r[SK_HTTPD_R_CLIENT] + r[SK_HTTPD_R_FULL] + r[SK_HTTPD_R_EVICTED]
        > 0)
    {
        sk_httpd_log(h, "closed %" PRIu64 " new connections of clients "
            "holding %" PRIu64 " (connections_per_ip), %" PRIu64 " with all "
            "%" PRIu64 " taken (connections), and %" PRIu64 " waiting ones "
            "of the clients holding the most, to make room",
            r[SK_HTTPD_R_CLIENT], h->conf.limits.per_ip, r[SK_HTTPD_R_FULL],
            h->conf.limits.connections, r[SK_HTTPD_R_EVICTED]);
    }
    if (r[SK_HTTPD_R_RATE] + r[SK_HTTPD_R_GONE] > 0) {
        sk_httpd_log(h, "answered %" PRIu64 " requests 429 (past "
            "rate_per_client %" PRIu64 "/s), dropped %" PRIu64 " whose "
            "client had gone", r[SK_HTTPD_R_RATE], h->conf.limits.rate,
            r[SK_HTTPD_R_GONE]);
    }
    memset(h->refusals, 0, sizeof(h->refusals));
    h->refused_at = now;
}


static void *
sk_httpd_reap(void *arg)
{
    sk_httpd_t       *h = arg;
    sk_httpd_conn_t  *k;
    struct timespec   ts;
    uint64_t          now, limit = h->conf.limits.request_timeout * 1000;

    pthread_mutex_lock(&h->lock);
    while (!h->stopping) {
        now = sk_httpd_ms();
        for (k = h->conns; k != NULL; k = k->next) {
            if (k->since != 0 && !k->evicted && now - k->since >= limit) {
                shutdown(k->fd, SHUT_RDWR);
                k->since = 0;
                h->reaped++;
                sk_httpd_stats_reaped(h->stats, 1);
            }
        }
        sk_httpd_summary(h, now);
        if (now - h->swept_at >= SK_HTTPD_SWEEP_EVERY) {
            sk_httpd_clients_sweep(&h->clients, now);
            h->swept_at = now;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += SK_HTTPD_TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->wake, &h->lock, &ts);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}


static int
sk_httpd_is_proxy(const sk_httpd_t *h, uint64_t key)
{
    size_t  i;

    for (i = 0; i < h->nproxies; i++) {
        if (h->proxies[i] == key) {
            return 1;
        }
    }
    return 0;
}


/* Before libmicrohttpd makes anything of a new connection: closed at
 * once if its client already holds per_ip. */
static enum MHD_Result
sk_httpd_policy(void *cls, const struct sockaddr *sa, socklen_t len)
{
    sk_httpd_t         *h = cls;
    sk_httpd_client_t  *cl;
    uint64_t            key;
    int                 full;

    (void) len;
    if (h->conf.limits.per_ip == 0 || sk_httpd_client_key(&key, sa) != 0
        || sk_httpd_is_proxy(h, key))
    {
        return MHD_YES;
    }
    pthread_mutex_lock(&h->lock);
    cl = sk_httpd_clients_get(&h->clients, key, 0, 0);
    if (cl != NULL && cl->conns >= h->conf.limits.per_ip) {
        sk_httpd_count(h, SK_HTTPD_R_CLIENT);
        full = 1;
    } else if (h->most > 0 && h->total >= h->conf.limits.connections
               && cl != NULL && cl->conns + 1 >= h->most)
    {
        /* All taken, and none holds more to make room from: a client
         * that comes back at once after each refusal costs an accept. */
        sk_httpd_count(h, SK_HTTPD_R_FULL);
        full = 1;
    } else {
        full = 0;
    }
    pthread_mutex_unlock(&h->lock);
    return full ? MHD_NO : MHD_YES;
}


/* Under the lock: k no longer counts, and its socket is shut down
 * (libmicrohttpd, reading end of file, closes it). */
static void
sk_httpd_evict(sk_httpd_t *h, sk_httpd_conn_t *k, int reason)
{
    shutdown(k->fd, SHUT_RDWR);
    k->evicted = 1;
    if (k->client != NULL) {
        k->client->conns--;
    }
    h->total--;
    sk_httpd_count(h, reason);
}


/* Under the lock, with more than "connections" counted since k came: the
 * place of the longest waiting connection (between requests, or still
 * sending one) of the client holding the most, if that is more than k's
 * own client holds; else k's own. */
static void
sk_httpd_make_room(sk_httpd_t *h, sk_httpd_conn_t *k)
{
    sk_httpd_conn_t  *q, *best = NULL;
    uint64_t          most = k->proxy || k->client == NULL
                             ? 0 : k->client->conns;

    for (q = h->conns; q != NULL; q = q->next) {
        if (q == k || q->evicted || q->proxy || q->client == NULL
            || q->since == 0)
        {
            continue;
        }
        if (q->client->conns > most
            || (best != NULL && q->client == best->client
                && q->since < best->since))
        {
            most = q->client->conns;
            best = q;
        }
    }
    if (best != NULL) {
        sk_httpd_evict(h, best, SK_HTTPD_R_EVICTED);
    } else {
        h->most = most;         /* until a place is free again */
        sk_httpd_evict(h, k, SK_HTTPD_R_FULL);
    }
}


/* Under the lock: a new connection counts against its client, and past
 * the limits one connection goes. */
static void
sk_httpd_admit(sk_httpd_t *h, sk_httpd_conn_t *k, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo  *ci;
    uint64_t                         key;

    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci != NULL && sk_httpd_client_key(&key, ci->client_addr) == 0) {
        k->who = key;
        k->proxy = sk_httpd_is_proxy(h, key);
        k->client = sk_httpd_clients_get(&h->clients, key, k->since, 1);
    }
    if (k->client != NULL) {
        k->client->conns++;
    }
    h->total++;
    if (!k->proxy && k->client != NULL && h->conf.limits.per_ip != 0
        && k->client->conns > h->conf.limits.per_ip)
    {
        sk_httpd_evict(h, k, SK_HTTPD_R_CLIENT);    /* raced the policy */
    } else if (h->total > h->conf.limits.connections) {
        sk_httpd_make_room(h, k);
    }
}


static void
sk_httpd_notify(void *cls, struct MHD_Connection *c, void **ctx,
    enum MHD_ConnectionNotificationCode code)
{
    const union MHD_ConnectionInfo  *ci;
    sk_httpd_t                      *h = cls;
    sk_httpd_conn_t                 *k = *ctx;

    sk_httpd_stats_conn(h->stats,
        code == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        k = ci != NULL ? calloc(1, sizeof(*k)) : NULL;
        if (k == NULL) {
            return;             /* then only idle_timeout guards it */
        }
        k->fd = ci->connect_fd;
        pthread_mutex_lock(&h->lock);
        k->since = sk_httpd_ms();
        k->next = h->conns;
        if (h->conns != NULL) {
            h->conns->prev = k;
        }
        h->conns = k;
        sk_httpd_admit(h, k, c);
        pthread_mutex_unlock(&h->lock);
        *ctx = k;
        return;
    }
    if (k == NULL) {
        return;
    }
    pthread_mutex_lock(&h->lock);
    if (k->prev != NULL) {
        k->prev->next = k->next;
    } else {
        h->conns = k->next;
    }
    if (k->next != NULL) {
        k->next->prev = k->prev;
    }
    if (!k->evicted) {
        if (k->client != NULL) {
            k->client->conns--;
        }
        h->total--;
    }
    if (h->total < h->conf.limits.connections) {
        h->most = 0;
    }
    pthread_mutex_unlock(&h->lock);
    free(k);
    *ctx = NULL;
}


static sk_httpd_conn_t *
sk_httpd_conn(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo  *ci;

    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci != NULL ? ci->socket_context : NULL;
}


/* A request begins (since: now) or is all in (0). */
static void
sk_httpd_mark(sk_httpd_t *h, sk_httpd_conn_t *k, uint64_t since)
{
    if (k != NULL) {
        pthread_mutex_lock(&h->lock);
        k->since = k->evicted ? 0 : since;
        pthread_mutex_unlock(&h->lock);
        k->body = 0;
    }
}


uint64_t
sk_httpd_client(struct MHD_Connection *c)
{
    sk_httpd_conn_t  *k = sk_httpd_conn(c);

    return k != NULL ? k->who : 0;
}


int
sk_httpd_gone(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo  *ci;
    char                             b;
    ssize_t                          n;

    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci == NULL) {
        return 0;
    }
    n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK
                      && errno != EINTR);
}


/* A new request on k: whose it is (a trusted proxy's: the client its
 * X-Real-IP names; the proxy's own if none) and, if it costs work, a
 * token of that client's.  MHD_YES with *answered 0: on to the handler. */
static enum MHD_Result
sk_httpd_limit(sk_httpd_t *h, sk_httpd_conn_t *k, struct MHD_Connection *c,
    const char *method, const char *url, int *answered)
{
    sk_httpd_client_t  *cl;
    uint64_t            key, retry = 0, now;

    *answered = 0;
    if (k->proxy && sk_httpd_client_parse(&key, MHD_lookup_connection_value(
            c, MHD_HEADER_KIND, "X-Real-IP")) == 0)
    {
        k->who = key;
    }
    k->costly = h->conf.costly != NULL
                && h->conf.costly(h->conf.cls, method, url);
    if (!k->costly || h->conf.limits.rate == 0) {
        return MHD_YES;
    }
    now = sk_httpd_ms();
    pthread_mutex_lock(&h->lock);
    cl = sk_httpd_clients_get(&h->clients, k->who, now, 1);
    retry = cl != NULL ? sk_httpd_client_take(&h->clients, cl, now) : 0;
    if (retry != 0) {
        sk_httpd_count(h, SK_HTTPD_R_RATE);
    }
    pthread_mutex_unlock(&h->lock);
    if (retry == 0) {
        return MHD_YES;
    }
    *answered = 1;
    return sk_httpd_too_many(c, retry, "rate limit: more than %" PRIu64
        " requests a second from one client (rate_per_client): retry in %"
        PRIu64 " s\n", h->conf.limits.rate, retry);
}


int
sk_httpd_u64(uint64_t *v, const char *s)
{
    char  *end;

    if (s == NULL || *s < '0' || *s > '9' || (s[0] == '0' && s[1] != '\0')
        || strlen(s) > 19)
    {
        return -1;
    }
    *v = strtoull(s, &end, 10);
    return *end == '\0' ? 0 : -1;
}


const char *
sk_httpd_quote(char *out, const char *s)
{
    size_t  i, n = 0;
    int     plain;

    for (i = 0; s[i] != '\0'; i++) {
        plain = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\';
        if (n + (plain ? 1 : 4) > SK_HTTPD_QUOTE_MAX) {
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        n += (size_t) snprintf(out + n, SK_HTTPD_QUOTE_SIZE - n,
            plain ? "%c" : "\\x%02x", (unsigned char) s[i]);
    }
    out[n] = '\0';
    return out;
}


/* The request line is in: its raw target, before libmicrohttpd decodes
 * the path and the query into C strings, where a NUL byte would cut the
 * value short unseen (/entry/1%00x read as /entry/1).  libmicrohttpd
 * decodes only %HH (and '+' in the query), so "%00" is the one way to a
 * NUL.  The mark is what *con_cls starts as; NULL changes nothing. */
static void *
sk_httpd_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void) cls;
    (void) c;
    return uri != NULL && strstr(uri, "%00") != NULL ? &sk_httpd_nul : NULL;
}


typedef struct {
    const char  **keys;
    size_t        n, cap;
} sk_httpd_args_t;


static enum MHD_Result
sk_httpd_arg(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
    sk_httpd_args_t  *a = cls;

    (void) kind;
    (void) value;
    if (a->n < a->cap) {
        a->keys[a->n++] = key;
    }
    return MHD_YES;
}


static int
sk_httpd_strcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}


/* A query argument given more than once, else NULL (also on no memory:
 * *oom set).  libmicrohttpd keeps them all but every lookup returns the
 * first, so "?sn=1&sn=0" would be read as sn=1 whatever the client
 * meant.  Sorted, not compared pairwise: a request line of 8,000 "a&"
 * must not cost 32 million compares. */
static const char *
sk_httpd_twice(struct MHD_Connection *c, int *oom)
{
    sk_httpd_args_t   a;
    const char       *dup = NULL;
    size_t            i;
    int               n;

    *oom = 0;
    n = MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, NULL, NULL);
    if (n < 2) {
        return NULL;
    }
    a.keys = malloc((size_t) n * sizeof(*a.keys));
    if (a.keys == NULL) {
        *oom = 1;
        return NULL;
    }
    a.n = 0;
    a.cap = (size_t) n;
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, sk_httpd_arg, &a);
    qsort(a.keys, a.n, sizeof(*a.keys), sk_httpd_strcmp);
    for (i = 1; i < a.n && dup == NULL; i++) {
        if (strcmp(a.keys[i - 1], a.keys[i]) == 0) {
            dup = a.keys[i];
        }
    }
    free(a.keys);
    return dup;
}


/* The headers are in: refuse what no handler should see.  Answering now,
 * before any body is read, is what keeps libmicrohttpd from sending 100
 * Continue.  MHD_YES with *answered 0: on to the handler. */
static enum MHD_Result
sk_httpd_screen(sk_httpd_t *h, struct MHD_Connection *c, int nul,
    int *answered)
{
    const char  *cl, *dup;
    uint64_t     n;
    char         q[SK_HTTPD_QUOTE_SIZE];
    int          oom;

    *answered = 1;
    if (nul) {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
            "url: contains a NUL byte\n");
    }
    /* libmicrohttpd reads "0100000" as 100000 but the check below could
     * not: a length it cannot read strictly is refused, not let by. */
    cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
        MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl != NULL && sk_httpd_u64(&n, cl) != 0) {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST, "Content-Length: "
            "\"%s\" is not a decimal without sign or leading zero\n",
            sk_httpd_quote(q, cl));
    }
    if (cl != NULL && n > h->conf.max_body) {
        return sk_httpd_text(c, MHD_HTTP_CONTENT_TOO_LARGE,
            "body: %" PRIu64 " bytes declared, more than %" PRIu64 "\n",
            n, h->conf.max_body);
    }
    dup = sk_httpd_twice(c, &oom);
    if (oom) {
        return MHD_NO;
    }
    if (dup != NULL) {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
            "query: \"%s\" given twice\n", sk_httpd_quote(q, dup));
    }
    *answered = 0;
    return MHD_YES;
}


/* In front of the daemon's handler: what sk_httpd_screen refuses, the
 * body limit, and the end of the request's deadline once it is all in. */
static enum MHD_Result
sk_httpd_access(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *data, size_t *size,
    void **con_cls)
{
    sk_httpd_t       *h = cls;
    sk_httpd_conn_t  *k = sk_httpd_conn(c);
    enum MHD_Result   rc;
    int               nul, answered;

    if (*con_cls == NULL || *con_cls == &sk_httpd_nul) {
        if (k != NULL && h->stats != NULL) {
            k->ep = sk_httpd_stats_begin(h->stats, url, method);
            k->began = sk_httpd_us();
        }
        /* The handler's first call sees NULL, as ever. */
        nul = *con_cls == &sk_httpd_nul;
        *con_cls = NULL;
        rc = sk_httpd_screen(h, c, nul, &answered);
        if (!answered && k != NULL) {
            rc = sk_httpd_limit(h, k, c, method, url, &answered);
        }
        if (answered) {
            sk_httpd_mark(h, k, 0);
            return rc;
        }
    } else if (*size == 0) {
        sk_httpd_mark(h, k, 0);
        if (k != NULL && k->costly && sk_httpd_gone(c)) {
            pthread_mutex_lock(&h->lock);
            sk_httpd_count(h, SK_HTTPD_R_GONE);
            pthread_mutex_unlock(&h->lock);
            return MHD_NO;      /* nobody to answer: close */
        }
    } else if (k != NULL) {
        k->body += *size;
        if (k->body > h->conf.max_body) {
            return MHD_NO;      /* a chunked body past the limit: close */
        }
    }
    return h->conf.handler(h->conf.cls, c, url, method, version, data, size,
        con_cls);
}


static void
sk_httpd_done(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
    const union MHD_ConnectionInfo  *ci;
    sk_httpd_t                      *h = cls;
    sk_httpd_conn_t                 *k = sk_httpd_conn(c);

    if (*con_cls == &sk_httpd_nul) {
        *con_cls = NULL;        /* ended before the handler saw it */
    }
    if (k != NULL && k->began != 0) {
        ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
        sk_httpd_stats_end(h->stats, k->ep, ci != NULL ? ci->http_status : 0,
            sk_httpd_us() - k->began);
        k->began = 0;
    }
    sk_httpd_mark(h, k, sk_httpd_ms());
    if (h->conf.completed != NULL) {
        h->conf.completed(h->conf.cls, c, con_cls, toe);
    }
}


/* libmicrohttpd's own limit: ours, and room for the connections given up
 * to make room that are still closing (each polling thread gets its
 * share of it). */
static uint64_t
sk_httpd_mhd_limit(const sk_httpd_conf_t *conf)
{
    return conf->limits.connections + conf->limits.connections / 8
           + 16 * (uint64_t) conf->threads;
}


/* Room for every connection: raise the soft limit on descriptors (to the
 * hard one at most), or say what is missing. */
static void
sk_httpd_nofile(const sk_httpd_t *h)
{
    struct rlimit  rl;
    rlim_t         need = (rlim_t) sk_httpd_mhd_limit(&h->conf)
                          + SK_HTTPD_FD_SPARE;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need) {
        return;
    }
    rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need
                  ? rl.rlim_max : need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need) {
        sk_httpd_log(h, "%llu file descriptors (RLIMIT_NOFILE) for %" PRIu64
            " connections: raise the hard limit (ulimit -Hn, LimitNOFILE=)",
            (unsigned long long) rl.rlim_cur, h->conf.limits.connections);
    }
}


static void
sk_httpd_free(sk_httpd_t *h)
{
    sk_httpd_stats_free(h->stats);
    sk_httpd_clients_free(&h->clients);
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->lock);
    free(h);
}


/* "trusted_proxies": numeric addresses, comma-separated (blanks around
 * each allowed), into keys[0..*n). */
static int
sk_httpd_proxies(uint64_t *keys, size_t *n, const char *v, sk_err_t *err)
{
    const char  *p = v;
    size_t       len;
    char         one[64];

    *n = 0;
    while (v != NULL && *p != '\0') {
        p += strspn(p, " \t");
        len = strcspn(p, ", \t");
        if (len == 0 || len >= sizeof(one)) {
            return sk_err_set(err, SK_ERR_FORMAT, "\"trusted_proxies\": want "
                "numeric addresses, comma-separated, not \"%.64s\"", v);
        }
        memcpy(one, p, len);
        one[len] = '\0';
        if (*n == SK_HTTPD_PROXIES_MAX) {
            return sk_err_set(err, SK_ERR_FORMAT, "\"trusted_proxies\": "
                "more than %d", SK_HTTPD_PROXIES_MAX);
        }
        if (sk_httpd_client_parse(&keys[*n], one) != 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "\"trusted_proxies\": "
                "\"%s\" is not a numeric IPv4 or IPv6 address", one);
        }
        (*n)++;
        p += len;
        p += strspn(p, " \t");
        if (*p == ',') {
            p++;
        } else if (*p != '\0') {
            return sk_err_set(err, SK_ERR_FORMAT, "\"trusted_proxies\": "
                "want a comma-separated list, not \"%.64s\"", v);
        }
    }
    return 0;
}


int
sk_httpd_limits_check(const sk_httpd_limits_t *l, sk_err_t *err)
{
    uint64_t  keys[SK_HTTPD_PROXIES_MAX];
    size_t    n;

    if (l->connections == 0 || l->connections > SK_HTTPD_MAX_CONNECTIONS) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"connections\" must be "
            "within 1..%d", SK_HTTPD_MAX_CONNECTIONS);
    }
    if (l->per_ip > l->connections) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"connections_per_ip\" must "
            "be at most \"connections\" (0: no limit)");
    }
    if (l->request_timeout == 0 || l->request_timeout > SK_HTTPD_MAX_TIMEOUT
        || l->idle_timeout == 0 || l->idle_timeout > SK_HTTPD_MAX_TIMEOUT)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"request_timeout\" and "
            "\"idle_timeout\" must be within 1..%d seconds",
            SK_HTTPD_MAX_TIMEOUT);
    }
    if (l->rate > SK_HTTPD_RATE_MAX || l->burst > SK_HTTPD_RATE_MAX
        || (l->rate != 0 && l->burst == 0))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"rate_per_client\" and "
            "\"rate_burst\" must be within 0..%d, the burst at least 1 "
            "with a rate", SK_HTTPD_RATE_MAX);
    }
    return sk_httpd_proxies(keys, &n, l->proxies, err);
}


int
sk_httpd_start(sk_httpd_t **hp, const sk_httpd_conf_t *conf, sk_err_t *err)
{
    struct sockaddr_storage  ss;
    pthread_condattr_t       ca;
    sk_httpd_t              *h;
    unsigned                 flags;

    if (sk_addr_parse(&ss, conf->listen, err) != 0) {
        return -1;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "http");
    }
    h->conf = *conf;
    if (sk_httpd_clients_init(&h->clients, (double) conf->limits.rate,
            (double) conf->limits.burst) != 0)
    {
        free(h);
        return sk_err_set(err, SK_ERR_NOMEM, "http");
    }
    if (sk_httpd_proxies(h->proxies, &h->nproxies, conf->limits.proxies,
            err) != 0)
    {
        sk_httpd_clients_free(&h->clients);
        free(h);
        return -1;
    }
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (sk_httpd_stats_new(&h->stats, conf->metrics,
            conf->limits.connections, err) != 0)
    {
        sk_httpd_free(h);
        return -1;
    }
    sk_httpd_nofile(h);
    /* MHD_USE_ITC: MHD_stop_daemon wakes every polling thread at once,
     * also one at its connection limit (no longer polling the listener),
     * which would otherwise sleep until its next timeout. */
    flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC
            | MHD_USE_ERROR_LOG;
    if (conf->suspend) {
        flags |= MHD_ALLOW_SUSPEND_RESUME;
    }
    if (ss.ss_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
    }
    /* Ours are the limits (sk_httpd_policy, sk_httpd_admit): past
     * libmicrohttpd's, a newcomer would wait in the listen backlog while
     * the connections given up for it are still closing. */
    h->d = MHD_start_daemon(flags, 0, sk_httpd_policy, h, sk_httpd_access, h,
        MHD_OPTION_EXTERNAL_LOGGER, sk_httpd_mhd_log, h,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ss,
        MHD_OPTION_THREAD_POOL_SIZE, conf->threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned) sk_httpd_mhd_limit(conf),
        MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned) conf->limits.idle_timeout,
        MHD_OPTION_NOTIFY_COMPLETED, sk_httpd_done, h,
        MHD_OPTION_NOTIFY_CONNECTION, sk_httpd_notify, h,
        MHD_OPTION_URI_LOG_CALLBACK, sk_httpd_uri, h,
        MHD_OPTION_END);
    if (h->d == NULL) {
        sk_httpd_free(h);
        return sk_err_set(err, SK_ERR_SYSTEM, "listen %s: cannot start "
            "the HTTP server (address in use?)", conf->listen);
    }
    if (pthread_create(&h->reaper, NULL, sk_httpd_reap, h) != 0) {
        MHD_stop_daemon(h->d);
        sk_httpd_free(h);
        return sk_err_set(err, SK_ERR_SYSTEM, "http: cannot start a thread");
    }
    h->reaper_up = 1;
    *hp = h;
    return 0;
}


void
sk_httpd_stop(sk_httpd_t *h)
{
    if (h == NULL) {
        return;
    }
    pthread_mutex_lock(&h->lock);
    h->stopping = 1;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->reaper, NULL);
    MHD_stop_daemon(h->d);
    sk_httpd_free(h);
}


enum MHD_Result
sk_httpd_reply(struct MHD_Connection *c, unsigned status, char *body,
    size_t len, const char *type)
{
    struct MHD_Response  *r;
    enum MHD_Result       rc;

    r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}


enum MHD_Result
sk_httpd_reply_cached(struct MHD_Connection *c, unsigned status, char *body,
    size_t len, const char *type, const char *cache_control)
{
    struct MHD_Response  *r;
    enum MHD_Result       rc;

    r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, cache_control);
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}


enum MHD_Result
sk_httpd_too_many(struct MHD_Connection *c, uint64_t retry, const char *fmt,
    ...)
{
    struct MHD_Response  *r;
    enum MHD_Result       rc;
    va_list               ap;
    char                  body[256], after[24];
    int                   n;

    va_start(ap, fmt);
    n = vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    n = n < 0 ? 0 : n >= (int) sizeof(body) ? (int) sizeof(body) - 1 : n;
    r = MHD_create_response_from_buffer((size_t) n, body,
        MHD_RESPMEM_MUST_COPY);
    if (r == NULL) {
        return MHD_NO;
    }
    snprintf(after, sizeof(after), "%" PRIu64, retry);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
        "text/plain; charset=us-ascii");
    MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, after);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    rc = MHD_queue_response(c, MHD_HTTP_TOO_MANY_REQUESTS, r);
    MHD_destroy_response(r);
    return rc;
}


enum MHD_Result
sk_httpd_text(struct MHD_Connection *c, unsigned status, const char *fmt,
    ...)
{
    va_list  ap;
    char    *s;
    int      n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    s = n >= 0 ? malloc((size_t) n + 1) : NULL;
    if (s == NULL) {
        return MHD_NO;
    }
    va_start(ap, fmt);
    vsnprintf(s, (size_t) n + 1, fmt, ap);
    va_end(ap);
    return sk_httpd_reply(c, status, s, (size_t) n,
        "text/plain; charset=us-ascii");
}


/* GET /metrics on the metrics server: answered once the request is in. */
int
sk_httpd_get_pending(void **con_cls, size_t *size)
{
    static int  first;

    if (*con_cls == NULL) {
        *con_cls = &first;
        return 1;
    }
    if (*size != 0) {
        *size = 0;
        return 1;
    }
    return 0;
}


static enum MHD_Result
sk_httpd_metrics(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *data, size_t *size,
    void **con_cls)
{
    sk_metrics_t *m = cls;
    sk_err_t      err;
    size_t        len;
    char         *out;

    (void) version;
    (void) data;
    if (sk_httpd_get_pending(con_cls, size)) {
        return MHD_YES;
    }
    if (strcmp(url, "/metrics") != 0) {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "only /metrics here\n");
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0
        && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    {
        return sk_httpd_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET\n");
    }
    if (sk_metrics_render(m, &out, &len, &err) != 0) {
        return sk_httpd_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s\n",
            err.msg);
    }
    return sk_httpd_reply(c, MHD_HTTP_OK, out, len, SK_METRICS_CONTENT_TYPE);
}


int
sk_httpd_metrics_start(sk_httpd_t **h, const char *prog, const char *listen,
    sk_metrics_t *m, sk_err_t *err)
{
    sk_httpd_conf_t  hc;

    memset(&hc, 0, sizeof(hc));
    hc.prog = prog;
    hc.listen = listen;
    hc.threads = 2;             /* libmicrohttpd warns about a pool of 1 */
    hc.limits.connections = SK_HTTPD_METRICS_CONNS;
    hc.limits.request_timeout = 10;
    hc.limits.idle_timeout = 30;
    hc.max_body = 0;
    hc.handler = sk_httpd_metrics;
    hc.cls = m;
    if (sk_httpd_start(h, &hc, err) != 0) {
        return sk_err_prefix(err, "\"metrics_listen\"");
    }
    return 0;
}
