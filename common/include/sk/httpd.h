/*
 * sk/httpd.h -- the HTTP front sk-timeline and sk-mirror share: a
 * libmicrohttpd daemon on a pool of epoll threads, with the limits a
 * public server needs against slow and idle clients, and the replies.
 * Linking this object needs -lmicrohttpd and -pthread (it is left out of
 * the fuzz targets, which link every other libsk object).
 */
#ifndef SK_HTTPD_H
#define SK_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "err.h"
#include "metrics.h"

/*
 * A client is an IPv4 address or an IPv6 /64 (an IPv4-mapped address is
 * its IPv4 one); a request that comes through a trusted proxy is its
 * client's, as the proxy names it in "X-Real-IP".  No client may hold
 * more than per_ip connections, and once all connections are taken a
 * newcomer gets the place of a waiting connection of the client holding
 * the most (more than the newcomer's own client), else is closed: one
 * client, or a few, cannot fill the server and keep others out.
 */
typedef struct {
    uint64_t   connections;     /* "connections": at once, in all */
    uint64_t   per_ip;          /* "connections_per_ip": at once from one
                                   client; 0: no limit */
    uint64_t   request_timeout; /* "request_timeout": seconds from the
                                   connection (or the last answer on it)
                                   to the whole next request, else closed */
    uint64_t   idle_timeout;    /* "idle_timeout": seconds without a byte
                                   either way, else closed */
    uint64_t   rate;            /* "rate_per_client": costly requests a
                                   second from one client, else 429; 0:
                                   no limit */
    uint64_t   burst;           /* "rate_burst": that many at once */
    char      *proxies;         /* "trusted_proxies": addresses (comma-
                                   separated, numeric) whose requests are
                                   their "X-Real-IP" client's and whose
                                   connections count only in all; NULL:
                                   none */
} sk_httpd_limits_t;

#define SK_HTTPD_PROXIES_MAX  16

/* 0 if the limits are in range, else -1 and err names the key. */
int sk_httpd_limits_check(const sk_httpd_limits_t *l, sk_err_t *err) SK_WUR;

/* What the front counts into a daemon's registry (sk/metrics.h), under
 * its prefix ("sk_timeline" gives sk_timeline_http_requests_total):
 *   <prefix>_http_requests_total{endpoint,code}, each status code as it
 *     is first answered;
 *   <prefix>_http_request_duration_seconds{endpoint}, from the request
 *     line to the end of the answer;
 *   <prefix>_http_requests_in_flight, <prefix>_http_connections (open)
 *     and <prefix>_http_connections_max (the "connections" limit);
 *   <prefix>_http_request_timeouts_total: connections closed for not
 *     sending a whole request within request_timeout;
 *   <prefix>_refused_total{reason}: requests and connections refused
 *     before any work (SK_HTTPD_REFUSED_* below; a daemon adds reasons of
 *     its own with sk_httpd_metrics_refusal).
 * endpoint() names each request by an index into endpoints (a short,
 * fixed list: the label's values), from its path and method.  The
 * registry keeps pointers into this struct: it must live as long. */
#define SK_HTTPD_METRIC_DEFS  7

typedef struct sk_httpd_metrics_s {
    sk_metrics_t                  *reg;
    const char                    *prefix;
    const char *const             *endpoints;
    size_t                         nendpoints;
    size_t                       (*endpoint)(const char *url,
                                     const char *method);
    /* sk_httpd_start's: the families as registered */
    sk_metric_def_t                defs[SK_HTTPD_METRIC_DEFS];
    char                           names[SK_HTTPD_METRIC_DEFS][96];
} sk_httpd_metrics_t;

/* Fill mc's configuration (its families are made by sk_httpd_start). */
void sk_httpd_metrics_init(sk_httpd_metrics_t *mc, sk_metrics_t *reg,
    const char *prefix, const char *const *endpoints, size_t nendpoints,
    size_t (*endpoint)(const char *url, const char *method));
/* After sk_httpd_start: the <prefix>_refused_total series of a reason of
 * the daemon's own; NULL (err set) on failure, and with mc NULL. */
sk_metric_t *sk_httpd_metrics_refusal(sk_httpd_metrics_t *mc,
    const char *reason, sk_err_t *err);

/* What each refusal of a client is counted as ("reason" label of the
 * daemon's refusals family, docs/operations.md). */
#define SK_HTTPD_REFUSED_RATE      "rate"           /* 429 */
#define SK_HTTPD_REFUSED_CLIENT    "client_connections"
#define SK_HTTPD_REFUSED_FULL      "connections"
#define SK_HTTPD_REFUSED_EVICTED   "evicted"
#define SK_HTTPD_REFUSED_GONE      "gone"

typedef struct {
    const char                    *prog;        /* log lines start so */
    const char                    *listen;      /* ADDR:PORT, numeric */
    unsigned                       threads;     /* polling threads */
    sk_httpd_limits_t              limits;
    uint64_t                       max_body;    /* a larger declared body:
                                                   413 at once (never 100
                                                   Continue); a larger
                                                   chunked one: closed */
    int                            suspend;     /* the handler may call
                                                   MHD_suspend_connection */
    MHD_AccessHandlerCallback      handler;     /* never sees a request
                                                   with a Content-Length
                                                   sk_httpd_u64 refuses, a
                                                   %00 in its target or a
                                                   query argument given
                                                   twice: 400 at once */
    MHD_RequestCompletedCallback   completed;   /* or NULL */
    void                          *cls;         /* of all three */
    sk_httpd_metrics_t            *metrics;     /* or NULL: none; kept by
                                                   pointer */
    int                          (*costly)(void *cls, const char *method,
                                     const char *url);
                                                /* 1 for a request that
                                                   costs work: it takes a
                                                   token of its client
                                                   (limits.rate) before the
                                                   handler sees it, else
                                                   429; and once all in,
                                                   its client must still
                                                   be there.  NULL: none */
} sk_httpd_conf_t;

typedef struct sk_httpd_s  sk_httpd_t;

/* Listen and serve; conf is copied (its strings must outlive *h). */
int sk_httpd_start(sk_httpd_t **h, const sk_httpd_conf_t *conf,
    sk_err_t *err) SK_WUR;
/* Close every connection and stop; NULL is ignored.  A handler that
 * suspends connections must have resumed them all. */
void sk_httpd_stop(sk_httpd_t *h);

/* A second, small server answering only GET /metrics with m's
 * exposition (the "metrics_listen" of both daemons): two threads, a few
 * connections; its errors name "metrics_listen". */
int sk_httpd_metrics_start(sk_httpd_t **h, const char *prog,
    const char *listen, sk_metrics_t *m, sk_err_t *err) SK_WUR;

/* For a GET handler: 1 while the request is still coming in (the call
 * must return MHD_YES: an answer queued before the whole request is in
 * makes libmicrohttpd close the connection; a body is read and
 * dropped), 0 once it may be answered. */
int sk_httpd_get_pending(void **con_cls, size_t *size);

/* The client of the request on c (sk_httpd_client_key's 64-bit key):
 * from the proxy's X-Real-IP for a trusted proxy's request. */
uint64_t sk_httpd_client(struct MHD_Connection *c);

/* 1 if the client of c has closed its side (or reset): a suspended
 * request whose client gave up need not be worked on. */
int sk_httpd_gone(struct MHD_Connection *c);

/* 429 Too Many Requests with Retry-After: retry (seconds) and
 * "Connection: close", the body made by printf. */
enum MHD_Result sk_httpd_too_many(struct MHD_Connection *c, uint64_t retry,
    const char *fmt, ...) SK_PRINTF(3, 4);

/* A strict decimal (no sign, no leading zero, at most 19 digits): 0, or
 * -1 if s is NULL or anything else. */
int sk_httpd_u64(uint64_t *v, const char *s) SK_WUR;

/* A client's bytes as an error message may quote them (between double
 * quotes, in a text/plain; charset=us-ascii body, so unambiguous and
 * short): printable ASCII as it is; a double quote, a backslash and any
 * other byte as \xHH; cut after SK_HTTPD_QUOTE_MAX characters, "..."
 * marking the cut.  out holds SK_HTTPD_QUOTE_SIZE bytes; returns out. */
#define SK_HTTPD_QUOTE_MAX   40
#define SK_HTTPD_QUOTE_SIZE  (SK_HTTPD_QUOTE_MAX + 4)
const char *sk_httpd_quote(char *out, const char *s);

/* Queue status with body (malloc()ed, taken over; freed on failure). */
enum MHD_Result sk_httpd_reply(struct MHD_Connection *c, unsigned status,
    char *body, size_t len, const char *type);

/* The same with a Cache-Control header (tiles: immutable ones for a
 * year, so any HTTP cache or CDN can serve them). */
enum MHD_Result sk_httpd_reply_cached(struct MHD_Connection *c,
    unsigned status, char *body, size_t len, const char *type,
    const char *cache_control);

/* A "text/plain; charset=us-ascii" reply made by printf. */
enum MHD_Result sk_httpd_text(struct MHD_Connection *c, unsigned status,
    const char *fmt, ...) SK_PRINTF(3, 4);

#endif
