/*
 * mr_http.c -- sk-mirror's HTTP front (libmicrohttpd, a pool of polling
 * threads):
 *
 *   GET /query/<name>[?since=T][&nonce=N]
 *                                 signed answer (docs/protocol.md), 503
 *                                 with fewer than two servable timelines;
 *                                 a nonce adds its trailer (mr_nonce.c)
 *   GET /status                   JSON: each timeline's state and reason
 *   GET /reneged                  reneged TIDs, one a line
 *   GET /reneged/<tid>            that timeline's evidence
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include <sk/httpd.h>

#include "mr.h"

/* Queries have no body: any declared one is a 413 at once. */
#define MR_HTTP_MAX_BODY  0


static int
mr_http_u64(uint64_t *out, const char *s)
{
    return sk_httpd_u64(out, s) == 0 && *out <= INT64_MAX ? 0 : -1;
}


/* Seconds a client is asked to wait while the index is rebuilt. */
#define MR_HTTP_REBUILD_RETRY  "10"


/* 503 with Retry-After: the index is damaged and being rebuilt from the
 * copies; the mirror's problem, never an answer. */
static enum MHD_Result
mr_http_rebuilding(struct MHD_Connection *c, const char *msg)
{
    struct MHD_Response  *r;
    enum MHD_Result       rc;
    char                  body[SK_ERR_MSG_MAX + 32];
    int                   n;

    n = snprintf(body, sizeof(body), "%s\n", msg);
    r = MHD_create_response_from_buffer(
        n > 0 && (size_t) n < sizeof(body) ? (size_t) n : sizeof(body) - 1,
        body, MHD_RESPMEM_MUST_COPY);
    if (r == NULL) {
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
        "text/plain; charset=us-ascii");
    MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER,
        MR_HTTP_REBUILD_RETRY);
    rc = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
    MHD_destroy_response(r);
    return rc;
}


static enum MHD_Result
mr_http_query(struct MHD_Connection *c, mr_mirror_t *m, const char *name)
{
    const char     *since_s, *nonce_s;
    uint64_t        since = 0;
    sk_err_t        err;
    size_t          len;
    unsigned char   nonce[SK_NONCE_BYTES];
    char           *out, q[SK_HTTPD_QUOTE_SIZE];

    since_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
    if (since_s != NULL && mr_http_u64(&since, since_s) != 0) {
        mr_metrics_answer(m, MR_ANSWER_BAD);
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
            "query: since \"%s\" is not a POSIX time\n",
            sk_httpd_quote(q, since_s));
    }
    nonce_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "nonce");
    if (nonce_s != NULL
        && sk_nonce_parse(nonce, nonce_s, strlen(nonce_s), &err) != 0)
    {
        mr_metrics_answer(m, MR_ANSWER_BAD);
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST, "query: nonce \"%s\" "
            "is not 43 base64url characters (32 bytes)\n",
            sk_httpd_quote(q, nonce_s));
    }
    if (mr_query_answer(m, &out, &len, name, (int64_t) since, &err) != 0
        || (nonce_s != NULL
            && mr_nonce_answer(m, &out, &len, nonce, &err) != 0))
    {
        if (err.code == SK_ERR_UNAVAILABLE && m->ix_damaged) {
            mr_metrics_answer(m, MR_ANSWER_UNAVAILABLE);
            return mr_http_rebuilding(c, err.msg);
        }
        if (err.code == SK_ERR_UNAVAILABLE) {
            mr_metrics_answer(m, MR_ANSWER_UNAVAILABLE);
            return sk_httpd_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
                "query: %s\n", err.msg);
        }
        if (err.code == SK_ERR_USAGE) {
            mr_metrics_answer(m, MR_ANSWER_BAD);
            return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST, "query: %s\n",
                err.msg);
        }
        mr_metrics_answer(m, MR_ANSWER_ERROR);
        mr_log("query %s: %s", name, err.msg);
        return sk_httpd_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "query: %s\n",
            err.msg);
    }
    mr_metrics_answer(m, MR_ANSWER_OK);
    return sk_httpd_reply(c, MHD_HTTP_OK, out, len, "text/plain");
}


static enum MHD_Result
mr_http_reneged(struct MHD_Connection *c, mr_mirror_t *m, const char *rest)
{
    uint64_t  tid;
    sk_err_t  err;
    size_t    len, i;
    char     *out, hash[9];
    int       rc;

    if (*rest == '\0') {
        pthread_mutex_lock(&m->lock);
        rc = mr_track_list(m, &out, &len, hash, &err);
        pthread_mutex_unlock(&m->lock);
        if (rc != 0) {
            return sk_httpd_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s\n",
                err.msg);
        }
        return sk_httpd_reply(c, MHD_HTTP_OK, out, len, "text/plain");
    }
    if (*rest != '/' || mr_http_u64(&tid, rest + 1) != 0) {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "no such resource\n");
    }
    for (i = 0; i < m->ntl; i++) {
        if (m->tl[i].conf->tid == tid) {
            break;
        }
    }
    if (i == m->ntl) {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND,
            "reneged: timeline %" PRIu64 " is not mirrored here\n", tid);
    }
    pthread_mutex_lock(&m->lock);
    rc = m->tl[i].state == MR_CORRUPT;
    pthread_mutex_unlock(&m->lock);
    if (!rc) {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND,
            "reneged: timeline %" PRIu64 " has not reneged\n", tid);
    }
    if (mr_store_read_evidence(&m->tl[i], &out, &len, &err) != 0) {
        return sk_httpd_text(c, err.code == SK_ERR_NOT_FOUND
            ? MHD_HTTP_NOT_FOUND : MHD_HTTP_INTERNAL_SERVER_ERROR, "%s\n",
            err.msg);
    }
    return sk_httpd_reply(c, MHD_HTTP_OK, out, len, "text/plain");
}


static enum MHD_Result
mr_http_route(struct MHD_Connection *c, mr_mirror_t *m, const char *url)
{
    sk_err_t  err;
    size_t    len;
    char     *out;

    if (strncmp(url, "/query/", 7) == 0) {
        return mr_http_query(c, m, url + 7);
    }
    if (strcmp(url, "/status") == 0) {
        if (mr_query_status(m, &out, &len, &err) != 0) {
            return sk_httpd_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s\n",
                err.msg);
        }
        return sk_httpd_reply(c, MHD_HTTP_OK, out, len, "application/json");
    }
    if (strncmp(url, "/reneged", 8) == 0) {
        return mr_http_reneged(c, m, url + 8);
    }
    return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "no such resource\n");
}


static enum MHD_Result
mr_http_handler(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *data, size_t *size,
    void **con_cls)
{
    mr_mirror_t      *m = cls;
    enum MHD_Result   rc;
    int               busy;

    (void) version;
    (void) data;
    if (sk_httpd_get_pending(con_cls, size)) {
        return MHD_YES;
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0
        && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    {
        return sk_httpd_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET\n");
    }
    /* A rebuild of the index waits for the requests under way and
     * refuses the others: they would read the copies it reopens. */
    pthread_mutex_lock(&m->lock);
    busy = m->ix_damaged || !m->serving;
    m->requests += !busy;
    pthread_mutex_unlock(&m->lock);
    if (busy) {
        return mr_http_rebuilding(c, "the index is being rebuilt from the "
            "copies");
    }
    rc = mr_http_route(c, m, url);
    pthread_mutex_lock(&m->lock);
    if (--m->requests == 0) {
        pthread_cond_broadcast(&m->idle);
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}


/* What takes a token of its client's (rate_per_client): a query. */
static int
mr_http_costly(void *cls, const char *method, const char *url)
{
    (void) cls;
    (void) method;
    return strncmp(url, "/query/", 7) == 0;
}


int
mr_http_start(mr_mirror_t *m, sk_httpd_t **h, sk_err_t *err)
{
    sk_httpd_conf_t  hc;

    /* A pool of epoll threads: answers are short and never block. */
    memset(&hc, 0, sizeof(hc));
    hc.prog = MR_PROG;
    hc.listen = m->conf.listen;
    hc.threads = (unsigned) m->conf.threads;
    hc.limits = m->conf.http;
    hc.max_body = MR_HTTP_MAX_BODY;
    hc.handler = mr_http_handler;
    hc.cls = m;
    hc.metrics = mr_metrics_http(m);
    hc.costly = mr_http_costly;
    return sk_httpd_start(h, &hc, err);
}
