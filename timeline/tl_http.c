/*
 * tl_http.c -- the draft's HTTP interface on libmicrohttpd.
 *
 *   POST /append                     form e=<entry>: 201 + stamped entry
 *   GET  /status                     signed TFM
 *   GET  /status/<token>             the outcome of an append answered 202
 *   GET  /checkpoint                 C2SP signed note of the durable tree
 *   GET  /proof/inclusion?sn=N&size=S
 *   GET  /proof/consistency?from=A&to=B
 *   GET  /entry/<sn>                 one durable entry (canonical text)
 *   GET  /incorporated/<sn>          the copy Incorporate <sn> refers to
 *   GET  /chunks                     every chunk: "<uri> <first> <last> <sig>"
 *   GET  /chunks/since/<SN>          chunks with entries after SN, else 304
 *   GET  /chunks/between/<A>/and/<B> chunks with entries in [A, B]
 *   GET  /chunks/<first>-<last>.bz2  a chunk file
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>
#include <sk/httpd.h>

#include "tl.h"

#define TL_HTTP_TEXT     "text/plain; charset=us-ascii"
/* c2sp.org/tlog-tiles: a checkpoint is UTF-8 (its signature lines start
 * with an em dash). */
#define TL_HTTP_NOTE     "text/plain; charset=utf-8"

/* *con_cls of a request other than POST /append, between the calls. */
static int  tl_http_first;

/* One POST /append in flight.  Its body is read in a polling thread; the
 * append runs in an append thread (tl_work.c) while the connection is
 * suspended, and the outcome is answered once it is resumed. */
typedef struct {
    tl_task_t                  task;    /* first: what the thread runs */
    tl_park_t                  park;    /* while its batch syncs */
    tl_timeline_t             *tl;
    struct MHD_Connection     *c;
    struct MHD_PostProcessor  *pp;
    char                      *e;       /* the "e" field so far */
    size_t                     elen;
    char                      *ref;     /* "ref": an Incorporate's copy */
    size_t                     reflen;
    char                       bad[128];    /* a form error, or "" */
    int                        done;    /* the outcome is in: */
    tl_verdict_t               v;
    char                      *out;     /* stamped entry, or token */
    size_t                     outlen;
    sk_err_t                   err;
} tl_req_t;


static enum MHD_Result
tl_http_err(struct MHD_Connection *c, unsigned status, const sk_err_t *err)
{
    return sk_httpd_text(c, status, "%s\n", err->msg);
}


static uint64_t
tl_http_durable(tl_timeline_t *tl)
{
    uint64_t  n;

    pthread_mutex_lock(&tl->lock);
    n = tl->durable;
    pthread_mutex_unlock(&tl->lock);
    return n;
}


static enum MHD_Result
tl_http_proof_reply(struct MHD_Connection *c, tl_timeline_t *tl,
    int inclusion, uint64_t a, uint64_t b)
{
    sk_merkle_proof_t  p;
    sk_err_t           err;
    size_t             len;
    char              *out;
    int                rc;

    pthread_mutex_lock(&tl->lock);
    rc = inclusion ? sk_merkle_tree_inclusion(&p, tl->tree, a, b, &err)
                   : sk_merkle_tree_consistency(&p, tl->tree, a, b, &err);
    pthread_mutex_unlock(&tl->lock);
    if (rc != 0 || sk_merkle_proof_format(&out, &len, &p, &err) != 0) {
        return tl_http_err(c, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
    }
    return sk_httpd_reply(c, MHD_HTTP_OK, out, len, TL_HTTP_TEXT);
}


static enum MHD_Result
tl_http_proof(struct MHD_Connection *c, tl_timeline_t *tl, const char *kind)
{
    const char  *an, *bn;
    uint64_t     a, b, n = tl_http_durable(tl);
    char         q[SK_HTTPD_QUOTE_SIZE];
    int          inclusion = strcmp(kind, "inclusion") == 0;

    if (!inclusion && strcmp(kind, "consistency") != 0) {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "no proof \"%s\"\n",
            sk_httpd_quote(q, kind));
    }
    an = inclusion ? "sn" : "from";
    bn = inclusion ? "size" : "to";
    if (sk_httpd_u64(&a, MHD_lookup_connection_value(c,
            MHD_GET_ARGUMENT_KIND, an)) != 0)
    {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
            "proof: \"%s\" missing or not a number\n", an);
    }
    if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, bn) == NULL) {
        b = n;
    } else if (sk_httpd_u64(&b, MHD_lookup_connection_value(c,
                   MHD_GET_ARGUMENT_KIND, bn)) != 0)
    {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
            "proof: \"%s\" not a number\n", bn);
    }
    if (b > n || (inclusion ? a >= b : (a == 0 || a > b))) {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
            "proof: need %s, %s <= %" PRIu64 " (the durable size)\n",
            inclusion ? "sn < size" : "0 < from <= to", bn, n);
    }
    return tl_http_proof_reply(c, tl, inclusion, a, b);
}


/* Split "A<sep>B" into two strict decimals. */
static int
tl_http_two(uint64_t *a, uint64_t *b, const char *s, const char *sep)
{
    const char  *p = strstr(s, sep);
    char         buf[24];

    if (p == NULL || (size_t) (p - s) >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, s, (size_t) (p - s));
    buf[p - s] = '\0';
    return sk_httpd_u64(a, buf) == 0 && sk_httpd_u64(b, p + strlen(sep)) == 0
        ? 0 : -1;
}


static enum MHD_Result
tl_http_chunk_file(struct MHD_Connection *c, tl_timeline_t *tl,
    const char *name)
{
    struct MHD_Response  *r;
    enum MHD_Result       rc;
    struct stat           st;
    uint64_t              a, b;
    size_t                n = strlen(name);
    char                  buf[48], q[SK_HTTPD_QUOTE_SIZE];
    int                   fd;

    if (n < 5 || n >= sizeof(buf) || strcmp(name + n - 4, ".bz2") != 0) {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "no such resource\n");
    }
    memcpy(buf, name, n - 4);
    buf[n - 4] = '\0';
    if (tl_http_two(&a, &b, buf, "-") != 0 || !tl_chunk_exists(tl, a, b)
        || (fd = tl_chunk_open_file(tl, a, b)) < 0)
    {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND,
            "chunks: no chunk \"%s\" (merged or never made: see /chunks)\n",
            sk_httpd_quote(q, name));
    }
    if (fstat(fd, &st) != 0
        || (r = MHD_create_response_from_fd((uint64_t) st.st_size, fd))
           == NULL)
    {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
        "application/x-bzip2");
    rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}


static enum MHD_Result
tl_http_chunks(struct MHD_Connection *c, tl_timeline_t *tl, const char *url)
{
    uint64_t   a = 0, b = UINT64_MAX, pub = tl_chunk_published(tl);
    sk_err_t   err;
    size_t     len;
    char      *out, q[SK_HTTPD_QUOTE_SIZE];

    if (strncmp(url, "since/", 6) == 0) {
        if (sk_httpd_u64(&a, url + 6) != 0) {
            return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
                "chunks: bad SN \"%s\"\n", sk_httpd_quote(q, url + 6));
        }
        if (a + 1 >= pub) {
            return sk_httpd_reply(c, MHD_HTTP_NOT_MODIFIED, NULL, 0,
                TL_HTTP_TEXT);
        }
        a++;
    } else if (strncmp(url, "between/", 8) == 0) {
        if (tl_http_two(&a, &b, url + 8, "/and/") != 0 || a > b) {
            return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
                "chunks: want /chunks/between/<SN1>/and/<SN2>, SN1 <= SN2\n");
        }
        if (a >= pub) {
            return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "chunks: nothing "
                "published at or after SN %" PRIu64 "\n", a);
        }
    } else if (*url != '\0') {
        return tl_http_chunk_file(c, tl, url);
    }
    if (tl_chunk_list(tl, &out, &len, a, b, &err) != 0) {
        return tl_http_err(c, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
    }
    return sk_httpd_reply(c, MHD_HTTP_OK, out, len, TL_HTTP_TEXT);
}


static unsigned
tl_http_status(tl_verdict_t v)
{
    static const unsigned  status[] = {
        [TL_OK] = MHD_HTTP_CREATED,
        [TL_BAD_REQUEST] = MHD_HTTP_BAD_REQUEST,
        [TL_FORBIDDEN] = MHD_HTTP_FORBIDDEN,
        [TL_UNAVAILABLE] = MHD_HTTP_SERVICE_UNAVAILABLE,
        [TL_TIMEOUT] = MHD_HTTP_REQUEST_TIMEOUT,
        [TL_FAULT] = MHD_HTTP_INTERNAL_SERVER_ERROR,
        [TL_TOO_LARGE] = MHD_HTTP_CONTENT_TOO_LARGE,
        [TL_QUEUED] = MHD_HTTP_ACCEPTED,
        [TL_RETRY] = MHD_HTTP_SERVICE_UNAVAILABLE,
        [TL_LIMITED] = MHD_HTTP_SERVICE_UNAVAILABLE,
    };

    return status[v];
}


/* 503 with Retry-After: the index was rebuilt, ask again. */
static enum MHD_Result
tl_http_retry(struct MHD_Connection *c, const sk_err_t *err)
{
    struct MHD_Response  *r;
    enum MHD_Result       rc;
    char                  body[SK_ERR_MSG_MAX + 2];
    int                   n = snprintf(body, sizeof(body), "%s\n", err->msg);

    r = MHD_create_response_from_buffer((size_t) n, body,
        MHD_RESPMEM_MUST_COPY);
    if (r == NULL) {
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, TL_HTTP_TEXT);
    MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    rc = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
    MHD_destroy_response(r);
    return rc;
}


/* 202: "Token: <hex>", and where to ask. */
static enum MHD_Result
tl_http_queued(struct MHD_Connection *c, char *token)
{
    struct MHD_Response  *r;
    enum MHD_Result       rc;
    char                  body[TL_TOKEN_HEX + 16], loc[TL_TOKEN_HEX + 16];

    snprintf(body, sizeof(body), "Token: %s\n", token);
    snprintf(loc, sizeof(loc), "/status/%s", token);
    free(token);
    r = MHD_create_response_from_buffer(strlen(body), body,
        MHD_RESPMEM_MUST_COPY);
    if (r == NULL) {
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, TL_HTTP_TEXT);
    MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, loc);
    rc = MHD_queue_response(c, MHD_HTTP_ACCEPTED, r);
    MHD_destroy_response(r);
    return rc;
}


/* GET /status/<token>: 200 and the outcome's status line, then what the
 * POST would have answered; 410 for a token not (or no longer) known. */
static enum MHD_Result
tl_http_token(struct MHD_Connection *c, tl_timeline_t *tl, const char *hex)
{
    tl_token_t   *t, copy;
    sk_err_t      err;
    unsigned      code;
    size_t        len;
    char         *entry, *out, q[SK_HTTPD_QUOTE_SIZE];

    pthread_mutex_lock(&tl->lock);
    t = tl_token_find_hex(tl, hex);
    if (t != NULL) {
        copy = *t;
    }
    pthread_mutex_unlock(&tl->lock);
    if (t == NULL) {
        return sk_httpd_text(c, MHD_HTTP_GONE,
            "status: unknown token \"%s\" (never issued, or too old)\n",
            sk_httpd_quote(q, hex));
    }
    code = tl_http_status(copy.pending ? TL_QUEUED : copy.v);
    if (copy.pending || copy.v != TL_OK) {
        return sk_httpd_text(c, MHD_HTTP_OK, "%u %s\n%s%s", code,
            MHD_get_reason_phrase_for(code), copy.msg,
            copy.msg[0] != '\0' ? "\n" : "");
    }
    if (tl_store_read(tl, &entry, &len, copy.sn, copy.sn, &err) != 0) {
        return tl_http_err(c, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
    }
    out = malloc(len + 32);
    if (out == NULL) {
        free(entry);
        return MHD_NO;
    }
    len = (size_t) sprintf(out, "%u %s\n%s", code,
        MHD_get_reason_phrase_for(code), entry);
    free(entry);
    return sk_httpd_reply(c, MHD_HTTP_OK, out, len, TL_HTTP_TEXT);
}


/* GET /incorporated/<sn>: the other timeline's entry Incorporate <sn>
 * refers to, as this timeline keeps it. */
static enum MHD_Result
tl_http_copy(struct MHD_Connection *c, tl_timeline_t *tl, const char *s)
{
    sk_entry_t  *e;
    sk_err_t     err;
    uint64_t     sn;
    size_t       len;
    char        *out, q[SK_HTTPD_QUOTE_SIZE];
    int          rc;

    if (sk_httpd_u64(&sn, s) != 0 || sn >= tl_http_durable(tl)) {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND,
            "incorporated: no SN \"%s\"\n", sk_httpd_quote(q, s));
    }
    if (tl_store_read(tl, &out, &len, sn, sn, &err) != 0) {
        return tl_http_err(c, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
    }
    rc = sk_entry_parse(&e, out, len, &err);
    free(out);
    if (rc != 0) {
        return tl_http_err(c, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
    }
    if (sk_entry_type(e) != SK_ENTRY_INCORPORATE) {
        sk_entry_free(e);
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND,
            "incorporated: SN %" PRIu64 " is not an Incorporate\n", sn);
    }
    rc = tl_inc_read(tl, e, &out, &len, &err);
    sk_entry_free(e);
    if (rc != 0) {
        return tl_http_err(c, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
    }
    return sk_httpd_reply(c, MHD_HTTP_OK, out, len, TL_HTTP_TEXT);
}


static enum MHD_Result
tl_http_get(struct MHD_Connection *c, tl_timeline_t *tl, const char *url)
{
    sk_err_t   err;
    uint64_t   sn;
    size_t     len;
    char      *out, q[SK_HTTPD_QUOTE_SIZE];
    int        rc;

    if (strcmp(url, "/status") == 0 || strcmp(url, "/checkpoint") == 0) {
        rc = tl_sign_get(tl, url[1] == 's', &out, &len, &err);
        if (rc != 0) {
            return tl_http_err(c, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        }
        return sk_httpd_reply(c, MHD_HTTP_OK, out, len, url[1] == 's'
            ? TL_HTTP_TEXT : TL_HTTP_NOTE);
    }
    if (strncmp(url, "/status/", 8) == 0) {
        return tl_http_token(c, tl, url + 8);
    }
    if (strncmp(url, "/proof/", 7) == 0) {
        return tl_http_proof(c, tl, url + 7);
    }
    if (strcmp(url, "/chunks") == 0 || strncmp(url, "/chunks/", 8) == 0) {
        return tl_http_chunks(c, tl, url[7] == '/' ? url + 8 : url + 7);
    }
    if (strncmp(url, "/entry/", 7) == 0) {
        if (sk_httpd_u64(&sn, url + 7) != 0) {
            return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
                "entry: bad SN \"%s\"\n", sk_httpd_quote(q, url + 7));
        }
        if (sn >= tl_http_durable(tl)) {
            return sk_httpd_text(c, MHD_HTTP_NOT_FOUND,
                "entry: no SN %" PRIu64 "\n", sn);
        }
        if (tl_store_read(tl, &out, &len, sn, sn, &err) != 0) {
            return tl_http_err(c, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        }
        return sk_httpd_reply(c, MHD_HTTP_OK, out, len, TL_HTTP_TEXT);
    }
    if (strncmp(url, "/incorporated/", 14) == 0) {
        return tl_http_copy(c, tl, url + 14);
    }
    if (strncmp(url, "/tile/", 6) == 0) {
        return tl_tiles_get(c, tl, url + 6);
    }
    return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "no such resource\n");
}


static enum MHD_Result
tl_http_post_field(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *filename, const char *content_type,
    const char *transfer_encoding, const char *data, uint64_t off,
    size_t size)
{
    tl_req_t  *rq = cls;
    size_t    *len;
    char      *p, **buf, q[SK_HTTPD_QUOTE_SIZE];

    (void) kind;
    (void) filename;
    (void) content_type;
    (void) transfer_encoding;
    if (strcmp(key, "e") == 0) {
        buf = &rq->e;
        len = &rq->elen;
    } else if (strcmp(key, "ref") == 0) {
        buf = &rq->ref;
        len = &rq->reflen;
    } else {
        snprintf(rq->bad, sizeof(rq->bad), "form: unknown field \"%s\"",
            sk_httpd_quote(q, key));
        return MHD_YES;
    }
    if (off == 0 && *buf != NULL) {
        snprintf(rq->bad, sizeof(rq->bad), "form: field \"%s\" given twice",
            key);
        return MHD_YES;
    }
    p = realloc(*buf, *len + size + 1);
    if (p == NULL) {
        return MHD_NO;
    }
    memcpy(p + *len, data, size);
    *len += size;
    p[*len] = '\0';
    *buf = p;
    return MHD_YES;
}


/* The outcome is in: the connection goes on to answer it. */
static void
tl_http_resume(tl_req_t *rq, tl_verdict_t v)
{
    rq->v = v;
    if (v != TL_OK && v != TL_QUEUED) {
        rq->out = NULL;
    }
    rq->done = 1;
    MHD_resume_connection(rq->c);
}


/* From whoever settled the parked append, under tl->lock or not (it is
 * no longer parked); err NULL: none. */
static void
tl_http_unpark(tl_park_t *p, tl_verdict_t v, char *token,
    const sk_err_t *err)
{
    tl_req_t  *rq = (tl_req_t *) ((char *) p - offsetof(tl_req_t, park));

    if (v != TL_OK) {
        free(rq->out);          /* the stamped entry, not the answer */
        rq->out = token;
        rq->outlen = TL_TOKEN_HEX - 1;
    }
    if (err != NULL) {
        rq->err = *err;
    }
    tl_http_resume(rq, v);
}


/* In an append thread: the append, then the connection goes on, or, once
 * written, waits for its batch's sync without the thread.  A task the
 * queue refused is answered at once. */
static void
tl_http_run(tl_task_t *t)
{
    tl_req_t      *rq = (tl_req_t *) t;
    tl_verdict_t   v;

    sk_err_clear(&rq->err);
    if (t->refuse != TL_OK) {
        if (t->refuse == TL_UNAVAILABLE) {     /* 503, Retry-After */
            sk_err_set(&rq->err, SK_ERR_UNAVAILABLE, "rate limit: more "
                "than %" PRIu64 " new entries per second",
                rq->tl->conf.rate_global);
            tl_metrics_queue_refused(rq->tl, TL_METRICS_RATE_GLOBAL);
        }
        tl_http_resume(rq, t->refuse == TL_UNAVAILABLE ? TL_RETRY
                                                       : t->refuse);
        return;
    }
    rq->park.done = tl_http_unpark;
    v = tl_append(rq->tl, &rq->out, &rq->outlen, rq->e, rq->elen,
        rq->ref, rq->reflen, &rq->park, &rq->err);
    if (v != TL_OK && v != TL_PARKED && v != TL_QUEUED) {
        tl_work_refund(rq->tl, t);      /* nothing stored */
    }
    if (v != TL_PARKED) {       /* else rq may be gone already */
        tl_http_resume(rq, v);
    }
}


static enum MHD_Result
tl_http_append_reply(struct MHD_Connection *c, tl_req_t *rq)
{
    char  *out = rq->out;

    rq->out = NULL;             /* the reply takes it */
    if (rq->v == TL_GONE) {
        return MHD_NO;          /* nobody to answer: closed */
    }
    if (rq->v == TL_OK) {
        return sk_httpd_reply(c, MHD_HTTP_CREATED, out, rq->outlen,
            TL_HTTP_TEXT);
    }
    if (rq->v == TL_QUEUED) {
        return tl_http_queued(c, out);
    }
    if (rq->v == TL_RETRY) {
        return tl_http_retry(c, &rq->err);
    }
    if (rq->v == TL_FAULT) {
        tl_log("append: %s", rq->err.msg);
    }
    return tl_http_err(c, tl_http_status(rq->v), &rq->err);
}


/* The whole body is in: answer a bad form, else hand the append over. */
static enum MHD_Result
tl_http_append_done(struct MHD_Connection *c, tl_timeline_t *tl,
    tl_req_t *rq)
{
    int  rc;

    if (rq->done) {
        return tl_http_append_reply(c, rq);
    }
    /* An empty last value ("e=...&e=") reaches tl_http_post_field only
     * when the post processor is destroyed, and a last field without "="
     * never does (destroy says MHD_NO): destroyed here, before the form
     * is judged, so neither goes unseen. */
    if (rq->pp != NULL) {
        if (MHD_destroy_post_processor(rq->pp) != MHD_YES
            && rq->bad[0] == '\0')
        {
            snprintf(rq->bad, sizeof(rq->bad), "form: malformed body "
                "(cut short, or a field without \"=\")");
        }
        rq->pp = NULL;
    }
    if (rq->bad[0] != '\0') {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST, "%s\n", rq->bad);
    }
    if (rq->e == NULL) {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
            "form: field \"e\" missing\n");
    }
    if (strlen(rq->e) != rq->elen
        || (rq->ref != NULL && strlen(rq->ref) != rq->reflen))
    {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
            "%s: contains a NUL byte\n",
            strlen(rq->e) != rq->elen ? "entry" : "ref");
    }
    rc = tl_work_submit(tl, &rq->task, c, sk_httpd_client(c));
    if (rc > 0) {
        tl_metrics_queue_refused(tl, TL_METRICS_CLIENT_QUEUE);
        return sk_httpd_too_many(c, 1, "append: %d appends of this client "
            "wait already: retry\n", TL_WORK_QUEUE_MAX);
    }
    if (rc < 0) {
        return sk_httpd_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "append: not "
            "taken now (stopping, or no thread could start): retry\n");
    }
    return MHD_YES;
}


/* The body limit is sk_httpd's: a larger declared body never gets here,
 * a larger chunked one closes the connection. */
static enum MHD_Result
tl_http_append(struct MHD_Connection *c, tl_timeline_t *tl, void **con_cls,
    const char *data, size_t *size)
{
    tl_req_t  *rq = *con_cls;

    if (rq == NULL) {
        rq = calloc(1, sizeof(*rq));
        if (rq == NULL) {
            return MHD_NO;
        }
        *con_cls = rq;
        rq->task.run = tl_http_run;
        rq->tl = tl;
        rq->c = c;
        rq->pp = MHD_create_post_processor(c, 16 * 1024, tl_http_post_field,
            rq);
        if (rq->pp == NULL) {
            snprintf(rq->bad, sizeof(rq->bad),
                "form: want application/x-www-form-urlencoded or "
                "multipart/form-data");
        }
        return MHD_YES;
    }
    if (*size != 0) {
        if (rq->pp != NULL && MHD_post_process(rq->pp, data, *size) != MHD_YES
            && rq->bad[0] == '\0')
        {
            snprintf(rq->bad, sizeof(rq->bad), "form: malformed body");
        }
        *size = 0;
        return MHD_YES;
    }
    return tl_http_append_done(c, tl, rq);
}


static enum MHD_Result
tl_http_handler(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *data, size_t *size,
    void **con_cls)
{
    tl_timeline_t  *tl = cls;

    (void) version;
    if (strcmp(url, "/append") == 0
        && strcmp(method, MHD_HTTP_METHOD_POST) == 0)
    {
        return tl_http_append(c, tl, con_cls, data, size);
    }
    /* Answer on the second call, once the whole request is in: an answer
     * queued earlier makes libmicrohttpd close the connection. */
    if (*con_cls == NULL) {
        *con_cls = &tl_http_first;
        return MHD_YES;
    }
    if (*size != 0) {
        *size = 0;              /* a body on a GET: ignored */
        return MHD_YES;
    }
    if (strcmp(url, "/append") == 0) {
        return sk_httpd_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
            "append: use POST\n");
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0
        && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    {
        return sk_httpd_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET\n");
    }
    return tl_http_get(c, tl, url);
}


static void
tl_http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
    tl_req_t  *rq = *con_cls;

    (void) cls;
    (void) c;
    (void) toe;
    if (rq != NULL && *con_cls != &tl_http_first) {
        if (rq->pp != NULL) {
            MHD_destroy_post_processor(rq->pp);
        }
        free(rq->e);
        free(rq->ref);
        free(rq->out);
        free(rq);
        *con_cls = NULL;
    }
}


/* What takes a token of its client's (rate_per_client): an append. */
static int
tl_http_costly(void *cls, const char *method, const char *url)
{
    (void) cls;
    return strcmp(method, MHD_HTTP_METHOD_POST) == 0
           && strcmp(url, "/append") == 0;
}


int
tl_http_start(tl_timeline_t *tl, sk_httpd_t **h, sk_err_t *err)
{
    sk_httpd_conf_t  hc;

    tl_work_init(tl);
    if (tl_store_start(tl, err) != 0) {
        return -1;
    }
    if (tl_append_start(tl, err) != 0) {
        tl_store_stop(tl);
        return -1;
    }
    memset(&hc, 0, sizeof(hc));
    hc.prog = TL_PROG;
    hc.listen = tl->conf.listen;
    hc.threads = (unsigned) tl->conf.http_threads;
    hc.limits = tl->conf.http;
    hc.max_body = tl->conf.max_body;
    hc.suspend = 1;
    hc.handler = tl_http_handler;
    hc.completed = tl_http_completed;
    hc.cls = tl;
    hc.metrics = tl_metrics_http(tl);
    hc.costly = tl_http_costly;
    if (sk_httpd_start(h, &hc, err) != 0) {
        tl_append_stop(tl);
        tl_store_stop(tl);
        return -1;
    }
    if (tl_metrics_refusals_start(tl, err) != 0) {
        sk_httpd_stop(*h);
        tl_append_stop(tl);
        tl_store_stop(tl);
        return -1;
    }
    return 0;
}


void
tl_http_stop(tl_timeline_t *tl, sk_httpd_t *h)
{
    /* Every suspended connection is resumed before libmicrohttpd stops
     * (it refuses to stop with one still suspended): the tasks run, then
     * the batches of those parked are synced. */
    tl_work_stop(tl);
    tl_store_stop(tl);
    tl_append_stop(tl);
    sk_httpd_stop(h);
}
