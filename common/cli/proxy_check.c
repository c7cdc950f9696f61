/*
 * proxy_check.c -- the proxy's workers (proxy.h): what may block, off
 * the event loop.  A worker takes a job, decides as `sk fetch` does, and
 * hands back an open connection to the site, or why there is none.
 *
 * A CONNECT with a ClientHello (CLI_PROXY_JOB_TLS): the cache decides
 * before connecting if it can (sk_tls_prepare); a name it shows without
 * an SK for https is tunnelled blind at once.  Else the site's own host
 * is tried, offering the browser's ALPN list, with libsk's check inside
 * the handshake (the staple asked, else the mirrors); a name the
 * handshake shows without an SK is tunnelled blind on a new connection
 * (the browser checks that site itself).  When the host fails the check
 * or the network, the record's routes follow (sk_routes_for): addresses,
 * then onions through Tor with the site's name kept for SNI and the
 * certificate, each checked again.  Nothing of the browser's request has
 * been read yet, so no route ever has a byte of it.
 *
 * Connections are made by libcurl (CURLOPT_CONNECT_ONLY): --resolve,
 * the routes' CONNECT_TO and Tor's SOCKS5 with the name resolved by Tor
 * are `sk fetch`'s own; the socket is then the proxy's (curl is told not
 * to close it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>

#include "proxy.h"

typedef enum {
    CLI_PROXY_TRY_OK = 0,       /* handshake done: fd and ssl are open */
    CLI_PROXY_TRY_REFUSED,      /* the SK check or the certificate */
    CLI_PROXY_TRY_FAILED,       /* network, TLS: nothing was sent */
    CLI_PROXY_TRY_SKIPPED       /* a refused route, never tried */
} cli_proxy_try_result_t;

typedef struct {
    cli_proxy_try_result_t  result;
    sk_decide_t             d;
    int                     decided;
    int                     undecided;  /* failed closed in the handshake */
    int                     fd;
    SSL                    *ssl;
    char                    why[CLI_PROXY_WHY_MAX];
} cli_proxy_try_t;

/* libcurl's socket, kept: curl closes every other it opened. */
typedef struct {
    curl_socket_t  keep;
} cli_proxy_sock_t;


static int
cli_proxy_close_cb(void *arg, curl_socket_t fd)
{
    cli_proxy_sock_t  *s = arg;

    return fd == s->keep ? 0 : close(fd);
}


/* A TCP connection to the job's site over route (NULL: its own host). */
static int
cli_proxy_connect(cli_proxy_t *px, const cli_proxy_job_t *job,
    const sk_route_t *route, sk_err_t *err)
{
    cli_proxy_sock_t    s = { CURL_SOCKET_BAD };
    struct curl_slist  *connect_to = NULL;
    curl_socket_t       fd = CURL_SOCKET_BAD;
    char                ebuf[CURL_ERROR_SIZE] = "", proxy[SK_CLIENT_TOR_MAX
                        + 16] = "", addr[SK_ROUTE_TEXT_MAX + 16],
                        line[2 * SK_ROUTE_TEXT_MAX + 64],
                        url[CLI_NET_HOST_MAX + 32];
    CURLcode            rc;
    CURL               *c;
    int                 flags;

    c = curl_easy_init();
    if (c == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "curl: cannot start");
    }
    if (route != NULL) {
        cli_client_route_addr(addr, sizeof(addr), route, &job->tg);
        snprintf(line, sizeof(line), "%s:%s:%s", job->tg.name, job->tg.port,
            addr);
        connect_to = curl_slist_append(NULL, line);
        if (connect_to == NULL) {
            curl_easy_cleanup(c);
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        curl_easy_setopt(c, CURLOPT_CONNECT_TO, connect_to);
        if (sk_route_via_tor(route)) {
            /* socks5h: the onion name goes to Tor, never to a resolver. */
            snprintf(proxy, sizeof(proxy), "socks5h://%s", px->trust.tor);
        }
    } else {
        curl_easy_setopt(c, CURLOPT_RESOLVE, px->resolve);
    }
    /* http://: curl connects, the TLS is the proxy's own. */
    snprintf(url, sizeof(url), job->literal == 6 ? "http://[%s]:%s/"
        : "http://%s:%s/", job->tg.name, job->tg.port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(c, CURLOPT_PROXY, proxy);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, route != NULL
        && sk_route_via_tor(route) ? px->tor_connect_ms : px->connect_ms);
    curl_easy_setopt(c, CURLOPT_CLOSESOCKETFUNCTION, cli_proxy_close_cb);
    curl_easy_setopt(c, CURLOPT_CLOSESOCKETDATA, &s);
    rc = curl_easy_perform(c);
    if (rc == CURLE_OK
        && curl_easy_getinfo(c, CURLINFO_ACTIVESOCKET, &fd) == CURLE_OK
        && fd != CURL_SOCKET_BAD)
    {
        s.keep = fd;
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(connect_to);
    if (s.keep == CURL_SOCKET_BAD) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", ebuf[0] != '\0'
            ? ebuf : rc != CURLE_OK ? curl_easy_strerror(rc)
            : "no socket");
    }
    /* curl's sockets are non-blocking; the worker's handshake blocks
     * (with timeouts). */
    flags = fcntl(s.keep, F_GETFL);
    if (flags < 0 || fcntl(s.keep, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        close(s.keep);
        return sk_err_sys(err, "proxy: cannot set the socket up");
    }
    return (int) s.keep;
}


/* Blocking reads and writes on fd time out after ms. */
static void
cli_proxy_timeouts(int fd, long ms)
{
    struct timeval  tv = { ms / 1000, (ms % 1000) * 1000 };

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}


/* Why the handshake failed, in words. */
static void
cli_proxy_tls_why(char *out, size_t size, SSL *ssl, int r)
{
    unsigned long  e = ERR_peek_last_error();
    int            se = SSL_get_error(ssl, r);
    char           buf[256];

    if (se == SSL_ERROR_SYSCALL && e == 0) {
        snprintf(out, size, "TLS handshake: %s", errno != 0
            ? strerror(errno) : "the connection closed");
    } else if (e != 0) {
        ERR_error_string_n(e, buf, sizeof(buf));
        snprintf(out, size, "TLS handshake: %s", buf);
    } else {
        snprintf(out, size, "TLS handshake failed (error %d, verify: %s)",
            se, X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
    }
    ERR_clear_error();
}


/* The site over route (NULL: its own host), with the SK check in the
 * handshake. */
static void
cli_proxy_try(cli_proxy_t *px, sk_tls_t *t, cli_proxy_job_t *job,
    const sk_route_t *route, cli_proxy_try_t *o)
{
    const sk_decide_t    *d;
    const unsigned char  *proto;
    unsigned              plen;
    sk_err_t              err;
    long                  vr;
    int                   r;

    memset(o, 0, sizeof(*o));
    o->fd = -1;
    if (route != NULL && route->type == SK_ROUTE_INVALID) {
        o->result = CLI_PROXY_TRY_SKIPPED;
        snprintf(o->why, sizeof(o->why), "refused route: %s", route->why);
        return;
    }
    o->result = CLI_PROXY_TRY_FAILED;
    o->fd = cli_proxy_connect(px, job, route, &err);
    if (o->fd < 0) {
        snprintf(o->why, sizeof(o->why), "%s", err.msg);
        return;
    }
    cli_proxy_timeouts(o->fd, route != NULL && sk_route_via_tor(route)
        ? px->tor_connect_ms : px->connect_ms);
    o->ssl = SSL_new(px->up_ctx);
    if (o->ssl == NULL || SSL_set_fd(o->ssl, o->fd) != 1
        || sk_tls_attach(t, o->ssl, &err) != 0
        || (job->alpn_len > 0 && SSL_set_alpn_protos(o->ssl, job->alpn,
                (unsigned) job->alpn_len) != 0))
    {
        snprintf(o->why, sizeof(o->why), "%s", o->ssl == NULL
            ? "out of memory" : err.msg);
        goto fail;
    }
    r = SSL_connect(o->ssl);
    d = sk_tls_decision(t);
    if (d != NULL) {
        o->d = *d;
        o->decided = 1;
    }
    if (r == 1 && o->decided) {
        o->result = CLI_PROXY_TRY_OK;
        SSL_get0_alpn_selected(o->ssl, &proto, &plen);
        snprintf(job->proto, sizeof(job->proto), "%.*s", (int) plen,
            (const char *) proto);
        return;
    }
    vr = SSL_get_verify_result(o->ssl);
    if (o->decided && d->decision != SK_DECIDE_ACCEPT
        && d->decision != SK_DECIDE_NONE)
    {
        o->result = CLI_PROXY_TRY_REFUSED;
        snprintf(o->why, sizeof(o->why), "%s (%s): %s",
            sk_decision_name(d->decision), d->check, d->reason);
    } else if (!o->decided && sk_tls_undecided(t) != NULL) {
        /* Failed closed: no refusal, nothing known enough. */
        o->undecided = 1;
        snprintf(o->why, sizeof(o->why), "undecided: %s",
            sk_tls_undecided(t));
    } else if (o->decided && vr != X509_V_OK) {
        o->result = CLI_PROXY_TRY_REFUSED;
        snprintf(o->why, sizeof(o->why), "certificate: %s",
            X509_verify_cert_error_string(vr));
    } else if (r == 1) {
        snprintf(o->why, sizeof(o->why), "no SK decision was made for the "
            "connection");
    } else {
        cli_proxy_tls_why(o->why, sizeof(o->why), o->ssl, r);
    }
fail:
    SSL_free(o->ssl);
    o->ssl = NULL;
    close(o->fd);
    o->fd = -1;
}


static void
cli_proxy_try_close(cli_proxy_try_t *o)
{
    SSL_free(o->ssl);
    if (o->fd >= 0) {
        close(o->fd);
    }
    o->ssl = NULL;
    o->fd = -1;
}


/* The outcome, with printf-style words for the log (and the page). */
static void
cli_proxy_set(cli_proxy_job_t *job, cli_proxy_outcome_t o, const char *fmt,
    ...) SK_PRINTF(3, 4);

static void
cli_proxy_set(cli_proxy_job_t *job, cli_proxy_outcome_t o, const char *fmt,
    ...)
{
    va_list  ap;

    job->outcome = o;
    va_start(ap, fmt);
    vsnprintf(job->decision, sizeof(job->decision), fmt, ap);
    va_end(ap);
    snprintf(job->why, sizeof(job->why), "%s", job->decision);
}


/* No SK for the name: a plain connection to its own host, for the blind
 * tunnel or the plain request. */
static void
cli_proxy_blind(cli_proxy_t *px, cli_proxy_job_t *job, const char *why)
{
    sk_err_t  err;

    job->fd = cli_proxy_connect(px, job, NULL, &err);
    if (job->fd < 0) {
        cli_proxy_set(job, CLI_PROXY_FAILED, "none (%s); unreachable: %s",
            why, err.msg);
        return;
    }
    cli_proxy_set(job, CLI_PROXY_BLIND, "none (%s)", why);
}


/* "(check): reason; record: outcome" of a decision, for "none". */
static const char *
cli_proxy_none_why(char *buf, size_t size, const sk_decide_t *d)
{
    snprintf(buf, size, "%s: %s", d->check, d->reason);
    return buf;
}


/* The record's routes after the host failed: accept on one, else why
 * not. */
static void
cli_proxy_routes(cli_proxy_t *px, sk_tls_t *t, cli_proxy_job_t *job,
    const sk_client_found_t *found, cli_proxy_try_t *first)
{
    sk_routes_t      routes;
    cli_proxy_try_t  o;
    sk_err_t         err;
    char             tried[CLI_PROXY_WHY_MAX], name[sizeof(job->route)];
    const char      *refused = NULL;
    size_t           i, len;
    int              undecided = first->undecided;

    if (first->result == CLI_PROXY_TRY_REFUSED) {
        refused = first->why;
    }
    len = (size_t) snprintf(tried, sizeof(tried), "%s: %s", job->tg.name,
        first->why);
    if (sk_routes_for(&routes, &found->rec, job->tg.service,
            job->tg.portnum, &err) != 0)
    {
        cli_proxy_set(job, CLI_PROXY_UNDECIDED, "undecided: %s", err.msg);
        return;
    }
    for (i = 0; i < routes.n; i++) {
        cli_proxy_try(px, t, job, &routes.v[i], &o);
        cli_client_route_text(name, sizeof(name), &routes.v[i], &job->tg,
            px->trust.tor);
        if (o.result == CLI_PROXY_TRY_OK && o.d.decision == SK_DECIDE_ACCEPT)
        {
            job->fd = o.fd;
            job->ssl = o.ssl;
            snprintf(job->route, sizeof(job->route), "%s", name);
            cli_proxy_set(job, CLI_PROXY_SPLICE, "accept (%s): %s; after "
                "%s", o.d.check, o.d.reason, tried);
            sk_routes_free(&routes);
            return;
        }
        cli_proxy_try_close(&o);
        undecided |= o.undecided;
        if (o.result == CLI_PROXY_TRY_OK) {
            snprintf(o.why, sizeof(o.why), "%s (%s) on a route",
                sk_decision_name(o.d.decision), o.d.check);
        }
        if (len < sizeof(tried)) {
            len += (size_t) snprintf(tried + len, sizeof(tried) - len,
                "; %s: %s", name, o.why);
        }
    }
    sk_routes_free(&routes);
    if (refused != NULL) {
        cli_proxy_set(job, CLI_PROXY_REJECT, "%s; routes: %s", refused,
            tried);
        snprintf(job->why, sizeof(job->why), "%s", refused);
    } else if (undecided) {
        cli_proxy_set(job, CLI_PROXY_UNDECIDED, "undecided, nothing sent: "
            "%s", tried);
    } else {
        cli_proxy_set(job, CLI_PROXY_UNREACHABLE, "unreachable: %s", tried);
    }
}


/* Does the record learnt cover the job's service?  0 with *d (none or
 * insecure); -1 once the job is undecided. */
static int
cli_proxy_covers(sk_tls_t *t, cli_proxy_job_t *job, const sk_decide_t **d)
{
    sk_err_t  err;

    if (sk_tls_decide(t, NULL, time(NULL), &err) != 0) {
        cli_proxy_set(job, CLI_PROXY_UNDECIDED, "undecided: %s", err.msg);
        return -1;
    }
    *d = sk_tls_decision(t);
    return 0;
}


/* A CONNECT that began a TLS handshake. */
static void
cli_proxy_run_tls(cli_proxy_t *px, sk_tls_t *t, cli_proxy_job_t *job)
{
    const sk_client_found_t  *found;
    const sk_decide_t        *d;
    cli_proxy_try_t           o;
    sk_err_t                  err;
    char                      why[CLI_PROXY_WHY_MAX];

    if (sk_tls_prepare(t, job->tg.name, job->tg.service, job->tg.portnum,
            time(NULL), &err) != 0 && sk_tls_get0_found(t) == NULL)
    {
        cli_proxy_set(job, CLI_PROXY_UNDECIDED, "undecided: %s", err.msg);
        return;
    }
    found = sk_tls_get0_found(t);
    if (found != NULL) {
        /* The cache decided: does the SK cover https here? */
        if (cli_proxy_covers(t, job, &d) != 0) {
            return;
        }
        if (d->decision == SK_DECIDE_NONE) {
            cli_proxy_blind(px, job, cli_proxy_none_why(why, sizeof(why),
                d));
            return;
        }
    }
    cli_proxy_try(px, t, job, NULL, &o);
    if (o.result == CLI_PROXY_TRY_OK && o.d.decision == SK_DECIDE_ACCEPT) {
        job->fd = o.fd;
        job->ssl = o.ssl;
        snprintf(job->route, sizeof(job->route), "%s:%s", job->tg.name,
            job->tg.port);
        cli_proxy_set(job, CLI_PROXY_SPLICE, "accept (%s): %s; record: %s",
            o.d.check, o.d.reason, cli_client_outcome(
                sk_tls_get0_found(t)->res.outcome));
        return;
    }
    cli_proxy_try_close(&o);
    if (o.decided && o.d.decision == SK_DECIDE_NONE) {
        cli_proxy_blind(px, job, cli_proxy_none_why(why, sizeof(why),
            &o.d));
        return;
    }
    /* Not learnt in a handshake (the host failed before its
     * certificates): from the mirrors, now. */
    if (sk_tls_get0_found(t) == NULL
        && sk_tls_lookup(t, job->tg.name, job->tg.service, job->tg.portnum,
               time(NULL), &err) != 0
        && sk_tls_get0_found(t) == NULL)
    {
        cli_proxy_set(job, CLI_PROXY_UNDECIDED, "undecided: %s", err.msg);
        return;
    }
    found = sk_tls_get0_found(t);
    if (sk_client_found_usable(found, &err) != 0) {
        cli_proxy_set(job, CLI_PROXY_UNDECIDED, "undecided, nothing sent: "
            "%s", err.msg);
        return;
    }
    if (!o.decided) {
        /* Is there an SK, then? */
        if (cli_proxy_covers(t, job, &d) != 0) {
            return;
        }
        if (d->decision == SK_DECIDE_NONE) {
            cli_proxy_set(job, CLI_PROXY_FAILED, "none (%s: %s); "
                "unreachable: %s", d->check, d->reason, o.why);
            return;
        }
    }
    cli_proxy_routes(px, t, job, found, &o);
}


/* A plain request (or a CONNECT that is not TLS): insecure for a name
 * whose SK covers https, else a connection for it. */
static void
cli_proxy_run_plain(cli_proxy_t *px, sk_tls_t *t, cli_proxy_job_t *job)
{
    const sk_decide_t  *d;
    sk_err_t            err;
    char                why[CLI_PROXY_WHY_MAX];

    if (sk_tls_lookup(t, job->tg.name, job->tg.service, job->tg.portnum,
            time(NULL), &err) != 0
        || sk_tls_decide(t, NULL, time(NULL), &err) != 0)
    {
        cli_proxy_set(job, CLI_PROXY_UNDECIDED, "undecided, nothing sent: "
            "%s", err.msg);
        return;
    }
    d = sk_tls_decision(t);
    if (d->decision == SK_DECIDE_INSECURE) {
        cli_proxy_set(job, CLI_PROXY_INSECURE, "insecure (%s): %s",
            d->check, d->reason);
        return;
    }
    cli_proxy_blind(px, job, cli_proxy_none_why(why, sizeof(why), d));
}


static void
cli_proxy_run(cli_proxy_t *px, sk_tls_t *t, cli_proxy_job_t *job)
{
    job->fd = -1;
    if (job->literal) {
        cli_proxy_blind(px, job, "an address: no SK");
    } else if (job->kind == CLI_PROXY_JOB_TLS) {
        cli_proxy_run_tls(px, t, job);
    } else {
        cli_proxy_run_plain(px, t, job);
    }
}


static void *
cli_proxy_worker(void *arg)
{
    cli_proxy_worker_t  *w = arg;
    cli_proxy_t         *px = w->px;
    cli_proxy_job_t     *job;

    for (;;) {
        pthread_mutex_lock(&px->lock);
        while (px->todo == NULL && !px->stopping) {
            pthread_cond_wait(&px->wake, &px->lock);
        }
        job = px->todo;
        if (job == NULL) {
            pthread_mutex_unlock(&px->lock);
            return NULL;
        }
        px->todo = job->next;
        if (px->todo == NULL) {
            px->todo_last = NULL;
        }
        px->ntodo--;
        pthread_mutex_unlock(&px->lock);

        cli_proxy_run(px, w->tls, job);

        pthread_mutex_lock(&px->lock);
        job->next = px->done;
        px->done = job;
        pthread_mutex_unlock(&px->lock);
        event_active(px->done_ev, EV_READ, 0);
    }
}


int
cli_proxy_submit(cli_proxy_t *px, cli_proxy_job_t *job)
{
    pthread_mutex_lock(&px->lock);
    if (px->ntodo >= CLI_PROXY_QUEUE_MAX) {
        pthread_mutex_unlock(&px->lock);
        return -1;
    }
    job->next = NULL;
    if (px->todo_last != NULL) {
        px->todo_last->next = job;
    } else {
        px->todo = job;
    }
    px->todo_last = job;
    px->ntodo++;
    pthread_cond_signal(&px->wake);
    pthread_mutex_unlock(&px->lock);
    return 0;
}


void
cli_proxy_job_free(cli_proxy_job_t *job)
{
    if (job == NULL) {
        return;
    }
    SSL_free(job->ssl);
    if (job->fd >= 0) {
        close(job->fd);
    }
    free(job);
}


int
cli_proxy_workers_start(cli_proxy_t *px, sk_err_t *err)
{
    sk_tls_conf_t        conf;
    cli_proxy_worker_t  *w;
    size_t               i;

    memset(&conf, 0, sizeof(conf));
    conf.trust = &px->trust;
    conf.cache_dir = px->cache_dir[0] != '\0' ? px->cache_dir : NULL;
    conf.fetch = sk_client_fetch_curl;
    conf.fetch_arg = &px->curl;
    conf.fetch_tor = sk_client_fetch_curl;
    conf.fetch_tor_arg = &px->curl_tor;
    conf.flags = px->co.no_staple ? SK_TLS_NO_STAPLE : 0;
    for (i = 0; i < CLI_PROXY_WORKERS; i++) {
        w = &px->workers[i];
        w->px = px;
        if (sk_tls_new(&w->tls, &conf, err) != 0) {
            return -1;
        }
        if (pthread_create(&w->th, NULL, cli_proxy_worker, w) != 0) {
            sk_tls_free(w->tls);
            w->tls = NULL;
            return sk_err_set(err, SK_ERR_SYSTEM, "proxy: cannot start a "
                "worker thread");
        }
        px->nworkers++;
    }
    return 0;
}


void
cli_proxy_workers_stop(cli_proxy_t *px)
{
    cli_proxy_job_t  *job;
    size_t            i;

    pthread_mutex_lock(&px->lock);
    px->stopping = 1;
    /* Jobs not begun are dropped; the running ones end by their own
     * timeouts. */
    while ((job = px->todo) != NULL) {
        px->todo = job->next;
        job->fd = -1;
        cli_proxy_job_free(job);
    }
    px->todo_last = NULL;
    px->ntodo = 0;
    pthread_cond_broadcast(&px->wake);
    pthread_mutex_unlock(&px->lock);
    for (i = 0; i < px->nworkers; i++) {
        pthread_join(px->workers[i].th, NULL);
        sk_tls_free(px->workers[i].tls);
    }
    px->nworkers = 0;
    while ((job = px->done) != NULL) {
        px->done = job->next;
        cli_proxy_job_free(job);
    }
}
