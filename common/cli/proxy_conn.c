/*
 * proxy_conn.c -- the browsers' connections to `sk proxy` (proxy.h), on
 * one libevent loop.
 *
 * A connection goes through these states:
 *
 *   HEAD       its request head comes (at most CLI_PROXY_HEAD_MAX bytes,
 *              within the head timeout); then by its form:
 *              CONNECT HOST:PORT      "200", then HELLO
 *              GET http://HOST/...    CHECK (plain HTTP)
 *              GET /proxy.pac|/ca.pem the proxy's own files, FLUSH
 *   HELLO      the browser's first bytes, until OpenSSL has a whole
 *              ClientHello (its ALPN list) or says they are none; CHECK
 *   CHECK      a worker decides (proxy_check.c); the browser waits, and
 *              no byte of its request has been read
 *   HANDSHAKE  the browser's TLS with a minted certificate (accept, or a
 *              page to show); then RELAY or PAGE
 *   PAGE       the browser's request head, read and thrown away, then
 *              the page; FLUSH
 *   RELAY      a blind tunnel, the spliced TLS sessions, or a plain
 *              request forwarded (a blind tunnel after its head)
 *   FLUSH      what the proxy wrote goes out; then the connection closes
 *
 * Every state but CHECK and RELAY has a deadline; RELAY ends after the
 * idle timeout.  At CLI_PROXY_CONNS_MAX connections, a new one replaces
 * the oldest still sending its head (the others have been served).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <openssl/err.h>

#include <sk/addr.h>

#include "proxy.h"

typedef enum {
    CLI_PROXY_HEAD = 0,
    CLI_PROXY_HELLO,
    CLI_PROXY_CHECK,
    CLI_PROXY_HANDSHAKE,
    CLI_PROXY_PAGE,
    CLI_PROXY_RELAY,
    CLI_PROXY_FLUSH
} cli_proxy_state_t;

struct cli_proxy_conn_s {
    cli_proxy_t          *px;
    unsigned long         id;
    int                   fd;           /* the browser's socket */
    cli_proxy_state_t     state;
    struct bufferevent   *raw;          /* on fd (does not close it) */
    struct bufferevent   *tls;          /* the TLS filter over raw */
    struct bufferevent   *up;           /* the checked site's session */
    struct event         *timer;
    int64_t               deadline;     /* of the state, 0: none */
    cli_proxy_tun_t      *tun;
    cli_proxy_job_t      *job;          /* CHECK: the worker's */
    int                   dead;         /* freed by the timer, soon */
    int                   connect;      /* a CONNECT (else plain HTTP) */
    int                   tls_hello;    /* its bytes began a ClientHello */
    cli_proxy_outcome_t   outcome;
    struct evbuffer      *fwd;          /* plain HTTP: the head to send */
    char                 *location;     /* plain HTTP: the https:// URL */
    char                  what[CLI_NET_HOST_MAX + 48];  /* for the log */
    char                  name[SK_HTTP_HOST_MAX + 16];  /* CONNECT's */
    char                  site[CLI_NET_HOST_MAX];       /* the SK's name */
    char                  proto[32];
    char                  why[CLI_PROXY_WHY_MAX];
    cli_proxy_conn_t     *prev, *next;
};

static void cli_proxy_conn_free(cli_proxy_conn_t *c);
static void cli_proxy_close(cli_proxy_conn_t *c, const char *why);
static void cli_proxy_event(struct bufferevent *bev, short what, void *arg);


void
cli_proxy_log(const char *fmt, ...)
{
    va_list  ap;

    fputs("sk proxy: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}


/* The timer, ms from now. */
static void
cli_proxy_arm(cli_proxy_conn_t *c, int64_t ms)
{
    struct timeval  tv;

    tv.tv_sec = (time_t) (ms / 1000);
    tv.tv_usec = (suseconds_t) (ms % 1000) * 1000;
    evtimer_add(c->timer, &tv);
}


/* The state, and its deadline ms from now (0: none). */
static void
cli_proxy_state(cli_proxy_conn_t *c, cli_proxy_state_t s, long ms)
{
    c->state = s;
    c->deadline = ms > 0 ? cli_get_now() + ms : 0;
    if (ms > 0) {
        cli_proxy_arm(c, ms);
    } else {
        evtimer_del(c->timer);
    }
}


/* The deadline, or in RELAY the idle timeout; a timer may fire a little
 * early, so it waits out the rest. */
static void
cli_proxy_timer(evutil_socket_t fd, short what, void *arg)
{
    cli_proxy_conn_t  *c = arg;
    int64_t            left;

    (void) fd;
    (void) what;
    if (c->dead) {
        cli_proxy_conn_free(c);
        return;
    }
    if (c->state != CLI_PROXY_RELAY && c->deadline == 0) {
        return;
    }
    left = (c->state == CLI_PROXY_RELAY
            ? cli_proxy_tun_last(c->tun) + c->px->idle_ms : c->deadline)
           - cli_get_now();
    if (left <= 0) {
        cli_proxy_close(c, c->state == CLI_PROXY_RELAY ? "idle timeout"
            : "timed out");
        return;
    }
    cli_proxy_arm(c, left);
}


/* The bufferevent the browser's bytes come through now. */
static struct bufferevent *
cli_proxy_bev(cli_proxy_conn_t *c)
{
    return c->tls != NULL ? c->tls : c->raw;
}


/* Once what was written has gone out (the TLS filter's output, then the
 * socket's), the connection closes. */
static void
cli_proxy_flushed(struct evbuffer *buf, const struct evbuffer_cb_info *i,
    void *arg)
{
    cli_proxy_conn_t  *c = arg;

    (void) i;
    if (evbuffer_get_length(buf) == 0
        && (c->tls == NULL
            || evbuffer_get_length(bufferevent_get_output(c->tls)) == 0))
    {
        /* Not here, inside the buffer's own callback: on the timer. */
        c->dead = 1;
        event_active(c->timer, EV_TIMEOUT, 0);
    }
}


static void
cli_proxy_flush_tls(struct bufferevent *bev, void *arg)
{
    cli_proxy_conn_t  *c = arg;

    (void) bev;
    cli_proxy_flushed(bufferevent_get_output(c->raw), NULL, c);
}


/* Stop reading; close once the output is out (within the head timeout). */
static void
cli_proxy_flush(cli_proxy_conn_t *c)
{
    struct evbuffer  *out = bufferevent_get_output(c->raw);

    bufferevent_disable(cli_proxy_bev(c), EV_READ);
    cli_proxy_state(c, CLI_PROXY_FLUSH, c->px->head_ms);
    if (c->tls != NULL) {
        bufferevent_setcb(c->tls, NULL, cli_proxy_flush_tls, NULL, c);
        bufferevent_setwatermark(c->tls, EV_WRITE, 0, 0);
    }
    evbuffer_add_cb(out, cli_proxy_flushed, c);
    cli_proxy_flushed(out, NULL, c);
}


/* An answer of the proxy's own, then close. */
static void
cli_proxy_answer_error(cli_proxy_conn_t *c, int status, const char *what)
{
    cli_proxy_page_error(bufferevent_get_output(cli_proxy_bev(c)), status,
        what);
    cli_proxy_flush(c);
}


static void
cli_proxy_close(cli_proxy_conn_t *c, const char *why)
{
    /* A connection that never sent a byte is not worth a line (a browser
     * opens spares it may not use). */
    if (why != NULL && c->state != CLI_PROXY_RELAY
        && c->state != CLI_PROXY_FLUSH
        && (c->state != CLI_PROXY_HEAD
            || evbuffer_get_length(bufferevent_get_input(c->raw)) > 0))
    {
        cli_proxy_log("#%lu %s: %s", c->id, c->what[0] != '\0' ? c->what
            : "connection", why);
    }
    cli_proxy_conn_free(c);
}


static void
cli_proxy_conn_free(cli_proxy_conn_t *c)
{
    cli_proxy_t  *px = c->px;

    if (c->job != NULL) {
        c->job->conn = NULL;        /* the worker's result is dropped */
    }
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        px->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    px->nconns--;
    if (c->raw != NULL) {
        evbuffer_remove_cb(bufferevent_get_output(c->raw), cli_proxy_flushed,
            c);
    }
    cli_proxy_tun_free(c->tun);
    if (c->tls != NULL) {
        bufferevent_free(c->tls);   /* and raw under it */
    } else if (c->raw != NULL) {
        bufferevent_free(c->raw);
    }
    if (c->up != NULL) {
        bufferevent_free(c->up);
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    if (c->fwd != NULL) {
        evbuffer_free(c->fwd);
    }
    free(c->location);
    event_free(c->timer);
    free(c);
}


static void
cli_proxy_tun_done(void *arg, const char *why)
{
    cli_proxy_conn_t  *c = arg;

    (void) why;
    cli_proxy_tun_free(c->tun);
    c->tun = NULL;
    if (c->tls != NULL) {
        /* Some of what the site sent may still be on its way out. */
        bufferevent_free(c->up);
        c->up = NULL;
        cli_proxy_flush(c);
        return;
    }
    cli_proxy_conn_free(c);
}


/* The job for c's site: the URL form libsk's target parser reads. */
static cli_proxy_job_t *
cli_proxy_job(cli_proxy_conn_t *c, const sk_http_authority_t *a,
    const char *scheme, cli_proxy_job_kind_t kind)
{
    cli_proxy_job_t  *job = calloc(1, sizeof(*job));
    sk_err_t          err;
    size_t            n;

    if (job == NULL) {
        return NULL;
    }
    job->fd = -1;
    job->kind = kind;
    job->literal = a->literal;
    n = (size_t) snprintf(job->url, sizeof(job->url), a->literal == 6
        ? "%s://[%s]" : "%s://%s", scheme, a->host);
    if (a->port != 0 && n < sizeof(job->url)) {
        n += (size_t) snprintf(job->url + n, sizeof(job->url) - n, ":%u",
            a->port);
    }
    if (n < sizeof(job->url)) {
        snprintf(job->url + n, sizeof(job->url) - n, "/");
    }
    if (!a->literal
        && cli_target_parse(&job->tg, job->url, scheme, &err) != 0)
    {
        /* A name libsk does not take (one label, an underscore) cannot
         * have an SK: an ordinary connection, as for an address. */
        job->literal = 1;
    }
    if (job->literal) {
        memset(&job->tg, 0, sizeof(job->tg));
        snprintf(job->tg.name, sizeof(job->tg.name), "%s", a->host);
        snprintf(job->tg.port, sizeof(job->tg.port), "%u",
            (a->port != 0 ? a->port : 80) & 0xffff);
    }
    snprintf(c->site, sizeof(c->site), "%s", job->tg.name);
    job->conn = c;
    return job;
}


static void
cli_proxy_check(cli_proxy_conn_t *c, cli_proxy_job_t *job)
{
    if (job == NULL) {
        cli_proxy_close(c, "out of memory");
        return;
    }
    c->job = job;
    cli_proxy_state(c, CLI_PROXY_CHECK, 0);
    if (cli_proxy_submit(c->px, job) != 0) {
        c->job = NULL;
        free(job);
        if (c->connect) {
            cli_proxy_close(c, "too many checks waiting: refused");
        } else {
            cli_proxy_answer_error(c, 503, "too many checks waiting");
        }
    }
}


/* HELLO: the browser's first bytes in the tunnel. */
static void
cli_proxy_hello_read(struct bufferevent *bev, void *arg)
{
    cli_proxy_conn_t     *c = arg;
    struct evbuffer      *in = bufferevent_get_input(bev);
    size_t                len = evbuffer_get_length(in);
    sk_http_authority_t   a;
    cli_proxy_job_t      *job;
    unsigned char         alpn[CLI_PROXY_ALPN_MAX];
    size_t                alen = 0;
    sk_err_t              err;
    int                   r;

    r = cli_proxy_hello(c->px, evbuffer_pullup(in, -1), len, alpn, &alen);
    if (r == 0) {
        return;
    }
    bufferevent_disable(bev, EV_READ);
    c->tls_hello = r == 1;
    /* The name was checked when the CONNECT came: parse it again. */
    if (sk_http_target_authority(&a, c->name, strlen(c->name), &err) != 0)
    {
        cli_proxy_close(c, err.msg);
        return;
    }
    job = cli_proxy_job(c, &a, c->tls_hello ? "https" : "http",
        c->tls_hello ? CLI_PROXY_JOB_TLS : CLI_PROXY_JOB_PLAIN);
    if (job != NULL && c->tls_hello) {
        memcpy(job->alpn, alpn, alen);
        job->alpn_len = alen;
    }
    cli_proxy_check(c, job);
}


/* "METHOD path HTTP/1.x" and the fields a proxy passes on, into c->fwd:
 * the hop-by-hop fields go, Host is the URL's, and the site is asked to
 * close after its response (an Upgrade, a WebSocket, is kept). */
static int
cli_proxy_forward_head(cli_proxy_conn_t *c, const sk_http_head_t *h,
    const char *host, size_t path)
{
    const sk_http_field_t  *conn = sk_http_head_field(h, "Connection");
    const sk_http_field_t  *f;
    const char             *p = h->target + path;
    size_t                  i, plen = h->target_len - path;
    char                    name[128];
    int                     upgrade;

    upgrade = conn != NULL && sk_http_field_has(conn, "upgrade")
        && sk_http_head_field(h, "Upgrade") != NULL;
    c->fwd = evbuffer_new();
    if (c->fwd == NULL) {
        return -1;
    }
    evbuffer_add_printf(c->fwd, "%.*s %s%.*s HTTP/1.%d\r\nHost: %s\r\n",
        (int) h->method_len, h->method, plen == 0 || p[0] == '?' ? "/" : "",
        (int) plen, p, h->minor, host);
    for (i = 0; i < h->nfields; i++) {
        f = &h->fields[i];
        snprintf(name, sizeof(name), "%.*s", (int) f->name_len, f->name);
        if (strcasecmp(name, "Host") == 0
            || strcasecmp(name, "Connection") == 0
            || strcasecmp(name, "Proxy-Connection") == 0
            || strcasecmp(name, "Keep-Alive") == 0
            || strcasecmp(name, "Proxy-Authorization") == 0
            || (conn != NULL && strcasecmp(name, "Upgrade") != 0
                && sk_http_field_has(conn, name)))
        {
            continue;
        }
        evbuffer_add_printf(c->fwd, "%.*s: %.*s\r\n", (int) f->name_len,
            f->name, (int) f->value_len, f->value);
    }
    evbuffer_add_printf(c->fwd, "Connection: %s\r\n\r\n", upgrade
        ? "upgrade" : "close");
    return 0;
}


/* Where http://HOST[:PORT]/PATH goes for a name whose SK covers https:
 * https://, the port kept unless it was 80 (as HSTS does). */
static int
cli_proxy_location(cli_proxy_conn_t *c, const sk_http_authority_t *a,
    const char *path, size_t plen)
{
    size_t  size = plen + SK_HTTP_HOST_MAX + 32;
    int     n;

    c->location = malloc(size);
    if (c->location == NULL) {
        return -1;
    }
    n = snprintf(c->location, size, a->literal == 6 ? "https://[%s]"
        : "https://%s", a->host);
    if (a->port != 0 && a->port != 80) {
        n += snprintf(c->location + n, size - (size_t) n, ":%u", a->port);
    }
    snprintf(c->location + n, size - (size_t) n, "%s%.*s", plen == 0
        || path[0] == '?' ? "/" : "", (int) plen, path);
    return 0;
}


/* HEAD: GET http://HOST[:PORT]/... */
static void
cli_proxy_plain(cli_proxy_conn_t *c, const sk_http_head_t *h)
{
    sk_http_authority_t  a;
    sk_err_t             err;
    size_t               path;
    char                 host[SK_HTTP_HOST_MAX + 16];

    if (sk_http_target_absolute(&a, &path, h->target, h->target_len, &err)
        != 0)
    {
        cli_proxy_log("#%lu %s: refused: %s", c->id, c->what, err.msg);
        cli_proxy_answer_error(c, 400, err.msg);
        return;
    }
    snprintf(c->name, sizeof(c->name), "%s", a.host);
    snprintf(host, sizeof(host), a.literal == 6 ? "[%s]" : "%s", a.host);
    if (a.port != 0) {
        snprintf(host + strlen(host), sizeof(host) - strlen(host), ":%u",
            a.port);
    }
    if (cli_proxy_forward_head(c, h, host, path) != 0
        || cli_proxy_location(c, &a, h->target + path, h->target_len - path)
           != 0)
    {
        cli_proxy_close(c, "out of memory");
        return;
    }
    evbuffer_drain(bufferevent_get_input(c->raw), h->len);
    bufferevent_disable(c->raw, EV_READ);
    cli_proxy_check(c, cli_proxy_job(c, &a, "http", CLI_PROXY_JOB_PLAIN));
}


/* HEAD: CONNECT HOST:PORT. */
static void
cli_proxy_connect(cli_proxy_conn_t *c, const sk_http_head_t *h)
{
    sk_http_authority_t  a;
    sk_err_t             err;

    if (sk_http_target_authority(&a, h->target, h->target_len, &err) != 0)
    {
        cli_proxy_log("#%lu %s: refused: %s", c->id, c->what, err.msg);
        cli_proxy_answer_error(c, 400, err.msg);
        return;
    }
    c->connect = 1;
    snprintf(c->name, sizeof(c->name), a.literal == 6 ? "[%s]:%u" : "%s:%u",
        a.host, a.port);
    evbuffer_drain(bufferevent_get_input(c->raw), h->len);
    evbuffer_add_printf(bufferevent_get_output(c->raw),
        "HTTP/1.1 200 Connection established\r\n\r\n");
    cli_proxy_state(c, CLI_PROXY_HELLO, c->px->head_ms);
    bufferevent_setwatermark(c->raw, EV_READ, 0, CLI_PROXY_HELLO_MAX);
    bufferevent_setcb(c->raw, cli_proxy_hello_read, NULL, cli_proxy_event,
        c);
    if (evbuffer_get_length(bufferevent_get_input(c->raw)) > 0) {
        cli_proxy_hello_read(c->raw, c);
    }
}


/* The request head in bev's input: 0 with *h, 1 while it is incomplete
 * (and within CLI_PROXY_HEAD_MAX), -1 with err (SK_ERR_NOT_FOUND: it
 * grew too large). */
static int
cli_proxy_head(struct bufferevent *bev, sk_http_head_t *h, sk_err_t *err)
{
    struct evbuffer  *in = bufferevent_get_input(bev);
    size_t            len = evbuffer_get_length(in);

    if (sk_http_head_parse(h, (const char *) evbuffer_pullup(in, -1), len,
            err) == 0)
    {
        return 0;
    }
    return err->code == SK_ERR_NOT_FOUND && len < CLI_PROXY_HEAD_MAX ? 1
        : -1;
}


static void
cli_proxy_head_read(struct bufferevent *bev, void *arg)
{
    cli_proxy_conn_t  *c = arg;
    sk_http_head_t     h;
    sk_err_t           err;
    int                rc;

    rc = cli_proxy_head(bev, &h, &err);
    if (rc > 0) {
        return;
    }
    if (rc < 0) {
        if (err.code == SK_ERR_NOT_FOUND) {
            cli_proxy_log("#%lu refused: a request head over %d bytes",
                c->id, CLI_PROXY_HEAD_MAX);
            cli_proxy_answer_error(c, 431, "the request head is too large");
            return;
        }
        cli_proxy_log("#%lu refused: %s", c->id, err.msg);
        cli_proxy_answer_error(c, 400, err.msg);
        return;
    }
    snprintf(c->what, sizeof(c->what), "%.*s %.*s", (int) h.method_len,
        h.method, (int) (h.target_len < CLI_NET_HOST_MAX ? h.target_len
        : CLI_NET_HOST_MAX), h.target);
    if (sk_http_head_is(&h, "CONNECT")) {
        cli_proxy_connect(c, &h);
    } else if (h.target_len > 0 && h.target[0] == '/') {
        if (!sk_http_head_is(&h, "GET") && !sk_http_head_is(&h, "HEAD")) {
            cli_proxy_answer_error(c, 400, "only GET of the proxy's own "
                "files");
            return;
        }
        cli_proxy_page_local(bufferevent_get_output(c->raw), c->px,
            h.target, h.target_len);
        cli_proxy_flush(c);
    } else {
        cli_proxy_plain(c, &h);
    }
}


/* PAGE: the browser's request (thrown away), then the page. */
static void
cli_proxy_page_read(struct bufferevent *bev, void *arg)
{
    cli_proxy_conn_t  *c = arg;
    sk_http_head_t     h;
    sk_err_t           err;

    if (cli_proxy_head(bev, &h, &err) > 0) {
        return;
    }
    cli_proxy_page_block(bufferevent_get_output(bev), c->outcome, c->site,
        c->why);
    cli_proxy_flush(c);
}


static void
cli_proxy_event(struct bufferevent *bev, short what, void *arg)
{
    cli_proxy_conn_t  *c = arg;
    unsigned long      e;
    char               buf[256];

    (void) bev;
    if (what & BEV_EVENT_CONNECTED) {
        /* The browser's handshake is done. */
        if (c->outcome == CLI_PROXY_SPLICE) {
            sk_err_t  err;

            cli_proxy_state(c, CLI_PROXY_RELAY, c->px->idle_ms);
            c->tun = cli_proxy_relay(c->tls, c->up, cli_proxy_tun_done, c,
                &err);
            if (c->tun == NULL) {
                cli_proxy_close(c, err.msg);
            }
            return;
        }
        cli_proxy_state(c, CLI_PROXY_PAGE, c->px->head_ms);
        bufferevent_setwatermark(c->tls, EV_READ, 0, CLI_PROXY_HEAD_MAX);
        bufferevent_setcb(c->tls, cli_proxy_page_read, NULL, cli_proxy_event,
            c);
        bufferevent_enable(c->tls, EV_READ);
        /* The request may have come with the handshake's end. */
        if (evbuffer_get_length(bufferevent_get_input(c->tls)) > 0) {
            cli_proxy_page_read(c->tls, c);
        }
        return;
    }
    if (c->state == CLI_PROXY_HANDSHAKE && c->tls != NULL) {
        e = bufferevent_get_openssl_error(c->tls);
        if (e != 0) {
            ERR_error_string_n(e, buf, sizeof(buf));
        } else {
            snprintf(buf, sizeof(buf), "the connection closed");
        }
        cli_proxy_close(c, buf);
        return;
    }
    cli_proxy_close(c, c->state == CLI_PROXY_CHECK ? "the browser left "
        "during the check" : NULL);
}


/* The site's session before the browser's handshake ends: it may close;
 * what it sends waits (SETTINGS, in HTTP/2). */
static void
cli_proxy_up_event(struct bufferevent *bev, short what, void *arg)
{
    (void) bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        cli_proxy_close(arg, "the site closed before the browser's "
            "handshake ended");
    }
}


/* TLS with the browser, a certificate of the local CA for the name:
 * proto is the protocol to choose ("" for none). */
static int
cli_proxy_handshake(cli_proxy_conn_t *c, const char *proto)
{
    sk_err_t  err;
    SSL      *ssl;

    snprintf(c->proto, sizeof(c->proto), "%s", proto);
    ssl = cli_proxy_tls_server(c->px, c->site, c->proto, &err);
    if (ssl == NULL) {
        cli_proxy_close(c, err.msg);
        return -1;
    }
    c->tls = bufferevent_openssl_filter_new(c->px->base, c->raw, ssl,
        BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE
        | BEV_OPT_DEFER_CALLBACKS);
    if (c->tls == NULL) {
        cli_proxy_close(c, "cannot set up the browser's TLS");
        return -1;
    }
    bufferevent_setcb(c->tls, NULL, NULL, cli_proxy_event, c);
    bufferevent_enable(c->tls, EV_READ | EV_WRITE);
    cli_proxy_state(c, CLI_PROXY_HANDSHAKE, c->px->head_ms);
    /* The ClientHello was read already: hand it to the handshake. */
    bufferevent_trigger(c->raw, EV_READ, BEV_TRIG_IGNORE_WATERMARKS);
    return 0;
}


/* accept: the site's checked session, then the browser's handshake. */
static void
cli_proxy_splice(cli_proxy_conn_t *c, cli_proxy_job_t *job)
{
    evutil_make_socket_nonblocking(job->fd);
    c->up = bufferevent_openssl_socket_new(c->px->base, job->fd, job->ssl,
        BUFFEREVENT_SSL_OPEN, BEV_OPT_CLOSE_ON_FREE
        | BEV_OPT_DEFER_CALLBACKS);
    job->ssl = NULL;
    job->fd = -1;
    if (c->up == NULL) {
        cli_proxy_close(c, "cannot relay the site's session");
        return;
    }
    bufferevent_setwatermark(c->up, EV_READ, 0, CLI_PROXY_RELAY_MAX / 4);
    bufferevent_setcb(c->up, NULL, NULL, cli_proxy_up_event, c);
    bufferevent_enable(c->up, EV_READ);
    cli_proxy_handshake(c, job->proto);
}


/* none: the site's socket and the browser's, a blind tunnel; the bytes
 * read so far (the ClientHello, or the forwarded head and the body's
 * start) go first. */
static void
cli_proxy_blind(cli_proxy_conn_t *c, cli_proxy_job_t *job)
{
    struct evbuffer  *in = bufferevent_get_input(c->raw);
    sk_err_t          err;
    int               up = job->fd;

    job->fd = -1;
    if (c->fwd != NULL) {
        evbuffer_prepend_buffer(in, c->fwd);
    }
    if (evbuffer_get_length(in) > 64 * 1024) {
        close(up);
        cli_proxy_close(c, "too much to forward at once");
        return;
    }
    cli_proxy_state(c, CLI_PROXY_RELAY, c->px->idle_ms);
    c->tun = cli_proxy_tunnel(c->px, c->fd, up, evbuffer_pullup(in, -1),
        evbuffer_get_length(in), cli_proxy_tun_done, c, &err);
    c->fd = -1;                 /* the tunnel's now (or closed) */
    bufferevent_free(c->raw);
    c->raw = NULL;
    if (c->tun == NULL) {
        cli_proxy_close(c, err.msg);
    }
}


/* What the log says the proxy did. */
static const char *
cli_proxy_action(const cli_proxy_conn_t *c, const cli_proxy_job_t *job)
{
    switch (job->outcome) {
    case CLI_PROXY_SPLICE:
        return "spliced";
    case CLI_PROXY_BLIND:
        return c->connect ? "tunnelled blind" : "forwarded as is";
    case CLI_PROXY_INSECURE:
        return c->connect ? "closed, nothing sent" : "redirected to "
            "https, nothing sent";
    case CLI_PROXY_FAILED:
        return c->connect ? "closed" : "502";
    default:
        return c->tls_hello ? "block page, nothing sent"
            : "closed, nothing sent";
    }
}


void
cli_proxy_conn_done(cli_proxy_t *px, cli_proxy_job_t *job)
{
    cli_proxy_conn_t  *c = job->conn;
    int                splice = job->outcome == CLI_PROXY_SPLICE;

    (void) px;
    if (c == NULL) {
        cli_proxy_job_free(job);
        return;
    }
    c->job = NULL;
    c->outcome = job->outcome;
    snprintf(c->why, sizeof(c->why), "%s", job->why);
    cli_proxy_log("#%lu %s: %s -> %s%s%s%s%s", c->id, c->what, job->decision,
        cli_proxy_action(c, job), splice ? " via " : "", splice
        ? job->route : "", splice && job->proto[0] != '\0' ? ", " : "",
        splice ? job->proto : "");
    switch (job->outcome) {
    case CLI_PROXY_SPLICE:
        cli_proxy_splice(c, job);
        break;
    case CLI_PROXY_BLIND:
        cli_proxy_blind(c, job);
        break;
    case CLI_PROXY_INSECURE:
        if (c->connect) {
            cli_proxy_conn_free(c);
        } else {
            cli_proxy_page_redirect(bufferevent_get_output(c->raw),
                c->location);
            cli_proxy_flush(c);
        }
        break;
    case CLI_PROXY_FAILED:
        if (c->connect) {
            cli_proxy_conn_free(c);
        } else {
            cli_proxy_answer_error(c, 502, job->why);
        }
        break;
    default:
        if (c->connect && c->tls_hello) {
            cli_proxy_handshake(c, "http/1.1");
        } else if (c->connect) {
            cli_proxy_conn_free(c);
        } else {
            cli_proxy_page_block(bufferevent_get_output(c->raw),
                job->outcome, c->site, job->why);
            cli_proxy_flush(c);
        }
        break;
    }
    cli_proxy_job_free(job);
}


/* Room for one more connection: at the limit, the oldest one still
 * sending its head goes (the list is newest first). */
static int
cli_proxy_room(cli_proxy_t *px)
{
    cli_proxy_conn_t  *c, *old = NULL;

    if (px->nconns < CLI_PROXY_CONNS_MAX) {
        return 0;
    }
    for (c = px->conns; c != NULL; c = c->next) {
        if (c->state == CLI_PROXY_HEAD && !c->dead) {
            old = c;
        }
    }
    if (old == NULL) {
        return -1;
    }
    cli_proxy_close(old, "dropped for a newer connection (too many)");
    return 0;
}


static void
cli_proxy_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int len, void *arg)
{
    cli_proxy_t       *px = arg;
    cli_proxy_conn_t  *c;
    int                one = 1;

    (void) l;
    (void) sa;
    (void) len;
    /* Each write goes out at once, as the site's (curl sets it upstream):
     * Nagle would hold a relayed record's tail until the browser's
     * delayed ACK, 40 ms on loopback. */
    (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (cli_proxy_room(px) != 0 || (c = calloc(1, sizeof(*c))) == NULL) {
        close(fd);
        return;
    }
    c->px = px;
    c->id = ++px->next_id;
    c->fd = fd;
    c->timer = evtimer_new(px->base, cli_proxy_timer, c);
    c->raw = bufferevent_socket_new(px->base, fd, BEV_OPT_DEFER_CALLBACKS);
    c->next = px->conns;
    if (px->conns != NULL) {
        px->conns->prev = c;
    }
    px->conns = c;
    px->nconns++;
    if (c->timer == NULL || c->raw == NULL) {
        cli_proxy_close(c, "out of memory");
        return;
    }
    bufferevent_setwatermark(c->raw, EV_READ, 0, CLI_PROXY_HEAD_MAX);
    bufferevent_setcb(c->raw, cli_proxy_head_read, NULL, cli_proxy_event, c);
    bufferevent_enable(c->raw, EV_READ | EV_WRITE);
    cli_proxy_state(c, CLI_PROXY_HEAD, px->head_ms);
}


/* Workers' results, back on the loop, oldest first. */
static void
cli_proxy_done(evutil_socket_t fd, short what, void *arg)
{
    cli_proxy_t      *px = arg;
    cli_proxy_job_t  *list, *rev = NULL, *job;

    (void) fd;
    (void) what;
    pthread_mutex_lock(&px->lock);
    list = px->done;
    px->done = NULL;
    pthread_mutex_unlock(&px->lock);
    while (list != NULL) {
        job = list;
        list = job->next;
        job->next = rev;
        rev = job;
    }
    while (rev != NULL) {
        job = rev;
        rev = job->next;
        cli_proxy_conn_done(px, job);
    }
}


static void
cli_proxy_stop(evutil_socket_t sig, short what, void *arg)
{
    cli_proxy_t  *px = arg;

    (void) what;
    cli_proxy_log("signal %d: stopping", (int) sig);
    event_base_loopbreak(px->base);
}


int
cli_proxy_serve(cli_proxy_t *px)
{
    struct sockaddr_storage  ss;
    sk_err_t                 err;
    int                      rc = -1;

    if (sk_addr_parse(&ss, px->listen, &err) != 0) {
        cli_fail_err(&err);
        return -1;
    }
    px->done_ev = event_new(px->base, -1, 0, cli_proxy_done, px);
    px->sig_ev[0] = evsignal_new(px->base, SIGINT, cli_proxy_stop, px);
    px->sig_ev[1] = evsignal_new(px->base, SIGTERM, cli_proxy_stop, px);
    px->listener = evconnlistener_new_bind(px->base, cli_proxy_accept, px,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
        512, (struct sockaddr *) &ss, ss.ss_family == AF_INET6
        ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    if (px->listener == NULL) {
        cli_fail("%s: cannot listen: %s", px->listen, strerror(errno));
    } else if (px->done_ev == NULL || px->sig_ev[0] == NULL
               || px->sig_ev[1] == NULL
               || event_add(px->sig_ev[0], NULL) != 0
               || event_add(px->sig_ev[1], NULL) != 0)
    {
        cli_fail("proxy: cannot set up the event loop");
    } else if (cli_proxy_workers_start(px, &err) != 0) {
        cli_fail_err(&err);
    } else {
        cli_proxy_log("listening on %s (PAC file: http://%s/proxy.pac, "
            "local CA: %s)", px->listen, px->listen,
            sk_mint_ca_file(px->mint));
        rc = event_base_dispatch(px->base) < 0 ? -1 : 0;
    }
    if (px->listener != NULL) {
        evconnlistener_free(px->listener);
    }
    while (px->conns != NULL) {
        cli_proxy_conn_free(px->conns);
    }
    cli_proxy_workers_stop(px);
    if (px->done_ev != NULL) {
        event_free(px->done_ev);
    }
    if (px->sig_ev[0] != NULL) {
        event_free(px->sig_ev[0]);
    }
    if (px->sig_ev[1] != NULL) {
        event_free(px->sig_ev[1]);
    }
    return rc;
}
