/*
 * cli_get.c -- one request over one route with libcurl and the SK hook
 * (cli_get.h).
 *
 * Each try is a fresh easy handle with TLS session reuse off: a resumed
 * session carries no certificate, and every route must show the carrier
 * again.  Whether a failure may move on to the next route is decided by
 * what went out: a route fails over only if not a byte of the request
 * was sent (CURLINFO_REQUEST_SIZE), so a request is never made twice.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli_get.h"

typedef struct {
    const cli_get_t  *g;
    cli_get_out_t    *out;
    int               sink_failed;
    int               tls_began;    /* the hook went in: a handshake */
    sk_err_t          attach;       /* why the hook could not go in */
} cli_get_ctx_t;


int64_t
cli_get_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


const char *
cli_get_result_name(cli_get_result_t r)
{
    switch (r) {
    case CLI_GET_OK:      return "ok";
    case CLI_GET_REFUSED: return "refused";
    case CLI_GET_FAILED:  return "failed";
    case CLI_GET_BROKEN:  return "broken";
    case CLI_GET_SKIPPED: return "skipped";
    }
    return "?";
}


static CURLcode
cli_get_sslctx(CURL *c, void *sslctx, void *arg)
{
    cli_get_ctx_t  *x = arg;

    (void) c;
    if (sk_tls_attach_ctx(x->g->tls, sslctx, &x->attach) != 0) {
        return CURLE_ABORTED_BY_CALLBACK;
    }
    x->tls_began = 1;
    return CURLE_OK;
}


/* The body, only from a server the checks let through: the handshake
 * failed otherwise, but the sink does not rely on it alone. */
static size_t
cli_get_body(char *data, size_t size, size_t nmemb, void *arg)
{
    cli_get_ctx_t      *x = arg;
    const sk_decide_t  *d;
    size_t              n = size * nmemb;

    if (x->g->tls != NULL) {
        d = sk_tls_decision(x->g->tls);
        if (d == NULL || (d->decision != SK_DECIDE_ACCEPT
                          && d->decision != SK_DECIDE_NONE))
        {
            return 0;
        }
    }
    if (x->g->sink(data, n, x->g->sink_arg) != n) {
        x->sink_failed = 1;
        return 0;
    }
    x->out->bytes += n;
    return n;
}


static void
cli_get_set(cli_get_out_t *out, cli_get_result_t result, const char *fmt,
    ...) SK_PRINTF(3, 4);

static void
cli_get_set(cli_get_out_t *out, cli_get_result_t result, const char *fmt,
    ...)
{
    va_list  ap;

    out->result = result;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof(out->why), fmt, ap);
    va_end(ap);
}


/* Where the route goes: CONNECT_TO and the proxy.  0, or -1 with out
 * set. */
static int
cli_get_route(CURL *c, const cli_get_t *g, const sk_route_t *route,
    struct curl_slist **connect_to, char *proxy, size_t plen,
    cli_get_out_t *out)
{
    char  addr[SK_ROUTE_TEXT_MAX + 16], line[2 * SK_ROUTE_TEXT_MAX + 64];

    *connect_to = NULL;
    snprintf(proxy, plen, "%s", "");
    if (route == NULL) {
        curl_easy_setopt(c, CURLOPT_RESOLVE, g->resolve);
        return 0;
    }
    cli_client_route_addr(addr, sizeof(addr), route, g->tg);
    snprintf(line, sizeof(line), "%s:%s:%s", g->tg->name, g->tg->port, addr);
    *connect_to = curl_slist_append(NULL, line);
    if (*connect_to == NULL) {
        cli_get_set(out, CLI_GET_BROKEN, "out of memory");
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_CONNECT_TO, *connect_to);
    if (sk_route_via_tor(route)) {
        /* socks5h: the onion name goes to Tor, never to a resolver. */
        snprintf(proxy, plen, "socks5h://%s", g->tor);
    }
    return 0;
}


/* The route's outcome.  The sk_tls_t serves every route in turn, and
 * keeps the last handshake's decision: only a route whose handshake began
 * (the hook went in, which clears it) may report one, never a route that
 * failed before TLS (a connection or proxy refused). */
static void
cli_get_classify(cli_get_ctx_t *x, CURL *c, CURLcode rc, const char *ebuf)
{
    cli_get_out_t      *out = x->out;
    const sk_decide_t  *d = x->tls_began ? sk_tls_decision(x->g->tls)
                            : NULL;
    long                sent = 0;
    const char         *msg = ebuf[0] != '\0' ? ebuf
                              : curl_easy_strerror(rc);

    if (d != NULL) {
        out->d = *d;
        out->decided = 1;
    }
    curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &sent);
    if (rc == CURLE_OK) {
        if (x->g->tls != NULL && !out->decided) {
            /* Cannot happen with the hook in: fail closed all the same. */
            cli_get_set(out, CLI_GET_BROKEN, "no SK decision was made "
                "for the connection");
            return;
        }
        out->result = CLI_GET_OK;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
        return;
    }
    if (d != NULL && d->decision != SK_DECIDE_ACCEPT
        && d->decision != SK_DECIDE_NONE)
    {
        cli_get_set(out, CLI_GET_REFUSED, "%s (%s): %s",
            sk_decision_name(d->decision), d->check, d->reason);
    } else if (d == NULL && x->tls_began
               && sk_tls_undecided(x->g->tls) != NULL)
    {
        /* Failed closed in the handshake: no refusal, nothing known. */
        cli_get_set(out, CLI_GET_FAILED, "undecided: %s",
            sk_tls_undecided(x->g->tls));
    } else if (x->sink_failed) {
        cli_get_set(out, CLI_GET_BROKEN, "cannot write the body");
    } else if (rc == CURLE_ABORTED_BY_CALLBACK) {
        cli_get_set(out, CLI_GET_FAILED, "%s", x->attach.msg);
    } else if (sent > 0) {
        cli_get_set(out, CLI_GET_BROKEN, "after the request was sent: %s",
            msg);
    } else if (rc == CURLE_PEER_FAILED_VERIFICATION) {
        cli_get_set(out, CLI_GET_REFUSED, "certificate: %s", msg);
    } else {
        cli_get_set(out, CLI_GET_FAILED, "%s", msg);
    }
}


void
cli_get(const cli_get_t *g, const sk_route_t *route, cli_get_out_t *out)
{
    cli_get_ctx_t       x;
    struct curl_slist  *connect_to = NULL;
    char                ebuf[CURL_ERROR_SIZE] = "", proxy[SK_CLIENT_TOR_MAX
                        + 16];
    int64_t             left = g->deadline - cli_get_now();
    long                cms;
    CURLcode            rc;
    CURL               *c;

    memset(out, 0, sizeof(*out));
    memset(&x, 0, sizeof(x));
    x.g = g;
    x.out = out;
    if (route != NULL && route->type == SK_ROUTE_INVALID) {
        cli_get_set(out, CLI_GET_SKIPPED, "refused route: %s", route->why);
        return;
    }
    if (left <= 0) {
        cli_get_set(out, CLI_GET_SKIPPED, "no time left (--max-time)");
        return;
    }
    c = curl_easy_init();
    if (c == NULL) {
        cli_get_set(out, CLI_GET_BROKEN, "curl: cannot start");
        return;
    }
    if (cli_get_route(c, g, route, &connect_to, proxy, sizeof(proxy), out)
        != 0)
    {
        curl_easy_cleanup(c);
        return;
    }
    cms = route != NULL && sk_route_via_tor(route) ? g->tor_connect_ms
        : g->connect_ms;
    curl_easy_setopt(c, CURLOPT_URL, g->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, g->tls != NULL ? "https"
        : "http");
    curl_easy_setopt(c, CURLOPT_PROXY, proxy);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "sk/" SK_VERSION);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long) left);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, cms < left ? cms
        : (long) left);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, cli_get_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, g->headers);
    if (g->data != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, g->data);
    }
    if (g->tls != NULL) {
        curl_easy_setopt(c, CURLOPT_SSL_SESSIONID_CACHE, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        curl_easy_setopt(c, CURLOPT_SSL_CTX_FUNCTION, cli_get_sslctx);
        curl_easy_setopt(c, CURLOPT_SSL_CTX_DATA, &x);
        if (g->cacert != NULL) {
            curl_easy_setopt(c, CURLOPT_CAINFO, g->cacert);
        }
        if (g->capath != NULL) {
            curl_easy_setopt(c, CURLOPT_CAPATH, g->capath);
        }
    }
    rc = curl_easy_perform(c);
    cli_get_classify(&x, c, rc, ebuf);
    curl_easy_cleanup(c);
    curl_slist_free_all(connect_to);
}
