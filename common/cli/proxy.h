/*
 * proxy.h -- `sk proxy`: a local HTTP proxy that makes a browser
 * SK-aware (cmd_proxy.c is the verb).  One process: the browsers'
 * connections live on one libevent loop (proxy_conn.c); whatever may
 * block (the SK lookup, the mirrors, connecting upstream, the upstream
 * handshake with the SK check inside) runs on a few worker threads
 * (proxy_check.c), each with its own sk_tls_t, and comes back to the loop
 * as a result.  Then:
 *
 *   accept     the browser's handshake completes with a certificate of
 *              the local CA (proxy_tls.c) and the two TLS sessions are
 *              spliced (proxy_relay.c), with the ALPN the site chose;
 *   none       the CONNECT is tunnelled blind, the browser's own bytes
 *              (proxy_relay.c, splice(2): the proxy never reads them);
 *   reject,    a page saying so (proxy_page.c), over TLS with a minted
 *   undecided  certificate; nothing of the request goes upstream;
 *   insecure   plain http:// for a name whose SK covers https: a
 *              redirect to https://.
 *
 * Every connection has bounded buffers and a deadline; one log line on
 * stderr per decision.
 */
#ifndef SK_CLI_PROXY_H
#define SK_CLI_PROXY_H

#include <pthread.h>
#include <stdint.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <event2/bufferevent.h>
#include <openssl/ssl.h>

#include "cli_client.h"
#include "cli_get.h"

#define CLI_PROXY_LISTEN        "127.0.0.1:8118"
#define CLI_PROXY_HEAD_MAX      (16 * 1024)     /* a request head */
#define CLI_PROXY_HELLO_MAX     (32 * 1024)     /* a ClientHello */
#define CLI_PROXY_HEAD_MS       10000           /* to send a head */
#define CLI_PROXY_IDLE_MS       300000          /* a quiet connection */
#define CLI_PROXY_CONNS_MAX     1024
#define CLI_PROXY_WORKERS       8
#define CLI_PROXY_QUEUE_MAX     512             /* checks waiting */
#define CLI_PROXY_RELAY_MAX     (256 * 1024)    /* queued per direction */
#define CLI_PROXY_PIPE_BIG      (1024 * 1024)   /* a busy tunnel's pipe */
#define CLI_PROXY_PIPE_BUDGET   (16 * 1024 * 1024) /* all such pipes */
#define CLI_PROXY_ALPN_MAX      256             /* wire form, offered */
#define CLI_PROXY_WHY_MAX       (3 * SK_ERR_MSG_MAX)

typedef struct cli_proxy_s       cli_proxy_t;
typedef struct cli_proxy_conn_s  cli_proxy_conn_t;
typedef struct cli_proxy_job_s   cli_proxy_job_t;
typedef struct cli_proxy_tun_s   cli_proxy_tun_t;

/* What a worker found, and so what the connection does. */
typedef enum {
    CLI_PROXY_SPLICE = 0,   /* accept: ssl and fd hold the checked site */
    CLI_PROXY_BLIND,        /* no SK: fd is the site, for a blind tunnel
                               or the plain request */
    CLI_PROXY_REJECT,       /* the site (every route) failed the check */
    CLI_PROXY_UNDECIDED,    /* nothing known is enough to decide */
    CLI_PROXY_UNREACHABLE,  /* the SK covers it; no route answered */
    CLI_PROXY_INSECURE,     /* plain HTTP for a name whose SK covers
                               https */
    CLI_PROXY_FAILED        /* no SK known, and the site is unreachable */
} cli_proxy_outcome_t;

typedef enum {
    CLI_PROXY_JOB_TLS = 0,  /* CONNECT with a ClientHello: the check */
    CLI_PROXY_JOB_PLAIN     /* a plain request, or a CONNECT whose bytes
                               are not TLS: the lookup, then connect */
} cli_proxy_job_kind_t;

struct cli_proxy_job_s {
    /* In: set by the loop. */
    cli_proxy_job_kind_t  kind;
    cli_target_t          tg;           /* the site, as a URL names it */
    char                  url[CLI_NET_HOST_MAX + 32];
    int                   literal;      /* an address: connect, no SK */
    unsigned char         alpn[CLI_PROXY_ALPN_MAX];    /* the browser's */
    size_t                alpn_len;
    /* Out: set by the worker. */
    cli_proxy_outcome_t   outcome;
    int                   fd;           /* SPLICE, BLIND: the site */
    SSL                  *ssl;          /* SPLICE: its checked session */
    char                  proto[32];    /* SPLICE: the ALPN it chose */
    char                  decision[CLI_PROXY_WHY_MAX];  /* for the log */
    char                  why[CLI_PROXY_WHY_MAX];       /* for the page */
    char                  route[2 * SK_ROUTE_TEXT_MAX + 2 * SK_ERR_MSG_MAX];
    /* The loop's. */
    cli_proxy_conn_t     *conn;         /* NULL once the browser left */
    cli_proxy_job_t      *next;
};

/* A worker thread, with the sk_tls_t it checks with. */
typedef struct {
    cli_proxy_t          *px;
    sk_tls_t             *tls;
    pthread_t             th;
} cli_proxy_worker_t;

/* The proxy's settings and shared state. */
struct cli_proxy_s {
    struct event_base    *base;
    struct evconnlistener *listener;
    cli_client_opts_t     co;
    sk_client_trust_t     trust;
    sk_client_curl_t      curl;         /* mirror queries */
    sk_client_curl_t      curl_tor;     /* and over Tor */
    char                  cache_dir[4096];
    const char           *ca_dir;
    const char           *cacert, *capath;
    struct curl_slist    *resolve;
    const char           *listen;
    long                  connect_ms, tor_connect_ms;
    long                  idle_ms, head_ms;
    SSL_CTX              *up_ctx;       /* to the sites: the SK hook */
    SSL_CTX              *srv_ctx;      /* to the browsers: minted */
    SSL_CTX              *probe_ctx;    /* reads ClientHellos */
    sk_mint_t            *mint;
    /* Connections. */
    cli_proxy_conn_t     *conns;        /* all, newest first */
    size_t                nconns;
    unsigned long         next_id;
    size_t                pipe_extra;   /* tunnels' pipes over the
                                           default size, bytes */
    /* Workers. */
    cli_proxy_worker_t    workers[CLI_PROXY_WORKERS];
    size_t                nworkers;
    pthread_mutex_t       lock;
    pthread_cond_t        wake;
    cli_proxy_job_t      *todo, *todo_last, *done;
    size_t                ntodo;
    int                   stopping;
    struct event         *done_ev;      /* a worker finished a job */
    struct event         *sig_ev[2];    /* SIGINT, SIGTERM */
};

/* proxy_conn.c: listen on px->listen and serve until SIGINT/SIGTERM. */
int cli_proxy_serve(cli_proxy_t *px);
/* A finished job, back on the loop (proxy_check.c calls it). */
void cli_proxy_conn_done(cli_proxy_t *px, cli_proxy_job_t *job);
/* One log line, "sk proxy: ...", on stderr. */
void cli_proxy_log(const char *fmt, ...) SK_PRINTF(1, 2);

/* proxy_check.c: the workers.  start: 0 or -1 with err. */
int cli_proxy_workers_start(cli_proxy_t *px, sk_err_t *err);
void cli_proxy_workers_stop(cli_proxy_t *px);
/* Queue job; -1 when the queue is full (the job is not taken). */
int cli_proxy_submit(cli_proxy_t *px, cli_proxy_job_t *job);
/* A job's result given up (the browser left): close what it holds. */
void cli_proxy_job_free(cli_proxy_job_t *job);

/* proxy_tls.c: the contexts (0 or -1 with err), and the browser side. */
int cli_proxy_tls_init(cli_proxy_t *px, sk_err_t *err);
void cli_proxy_tls_free(cli_proxy_t *px);
/* Is data[0..len) a whole TLS ClientHello?  1 with its ALPN list (wire
 * form) in alpn[], 0 when more is needed, -1 when it is not one. */
int cli_proxy_hello(cli_proxy_t *px, const unsigned char *data, size_t len,
    unsigned char *alpn, size_t *alpn_len);
/* An SSL for the browser's handshake, with a minted certificate for name
 * and proto the protocol to select ("" for none); NULL with err. */
SSL *cli_proxy_tls_server(cli_proxy_t *px, const char *name,
    const char *proto, sk_err_t *err);

/* proxy_relay.c: bytes both ways between two ends, each way bounded
 * (CLI_PROXY_RELAY_MAX queued: reading the sender stops until the
 * receiver takes some), until one end has closed and what it sent has
 * gone to the other; then done(arg, why) once (never before the call
 * returns), why NULL for a clean end; done may free the tunnel.
 *
 * cli_proxy_tunnel: two sockets, a blind tunnel through splice(2) and a
 * pipe each way (the bytes never enter the proxy's memory; a way that
 * keeps its pipe full grows it to CLI_PROXY_PIPE_BIG while all grown
 * pipes stay within CLI_PROXY_PIPE_BUDGET); head[0..len)
 * (at most 64 KiB), already read from a, goes to b first.  The tunnel
 * owns the sockets from the call on, and closes them when freed (also
 * when the call fails).
 * cli_proxy_relay: two TLS bufferevents (the browser's, the site's),
 * still the caller's to free after the tunnel. */
typedef void (*cli_proxy_end_fn)(void *arg, const char *why);
cli_proxy_tun_t *cli_proxy_tunnel(cli_proxy_t *px, int a, int b,
    const void *head, size_t len, cli_proxy_end_fn done, void *arg,
    sk_err_t *err);
cli_proxy_tun_t *cli_proxy_relay(struct bufferevent *a,
    struct bufferevent *b, cli_proxy_end_fn done, void *arg,
    sk_err_t *err);
/* When the last byte went through (cli_get_now() ms), for idle timeouts;
 * and how many went each way (a to b, b to a). */
int64_t cli_proxy_tun_last(const cli_proxy_tun_t *t);
void cli_proxy_tun_bytes(const cli_proxy_tun_t *t, uint64_t *ab,
    uint64_t *ba);
void cli_proxy_tun_free(cli_proxy_tun_t *t);        /* NULL ok */

/* proxy_page.c: what the proxy answers itself, into out (an HTTP/1.1
 * response, "Connection: close"). */
struct evbuffer;
void cli_proxy_page_block(struct evbuffer *out, cli_proxy_outcome_t o,
    const char *name, const char *why);
void cli_proxy_page_redirect(struct evbuffer *out, const char *location);
void cli_proxy_page_error(struct evbuffer *out, int status,
    const char *what);
/* GET of the proxy itself: /proxy.pac, /ca.pem; else 404. */
void cli_proxy_page_local(struct evbuffer *out, cli_proxy_t *px,
    const char *path, size_t len);

/* proxy_nss.c: --install-ca / --remove-ca: the CA certificate into (out
 * of) every NSS database of the user's Firefox and Chromium profiles
 * found under $HOME.  Exit status after messages. */
int cli_proxy_nss(cli_proxy_t *px, int install);

#endif
