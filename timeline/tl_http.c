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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>
#include <sk/addr.h>
#include <sk/httpd.h>

#include "tl.h"

#define TL_HTTP_TIMEOUT  30     /* seconds of silence before closing */
#define TL_HTTP_TEXT     "text/plain; charset=us-ascii"

/* *con_cls of a request other than POST /append, between the calls. */
static int  tl_http_first;

/* One POST in flight. */
typedef struct {
    struct MHD_PostProcessor  *pp;
    char                      *e;       /* the "e" field so far */
    size_t                     elen;
    char                      *ref;     /* "ref": an Incorporate's copy */
    size_t                     reflen;
    uint64_t                   total;   /* body bytes seen */
    int                        too_big;
    char                       bad[128];    /* a form error, or "" */
} tl_req_t;


static enum MHD_Result
tl_http_err(struct MHD_Connection *c, unsigned status, const sk_err_t *err)
{
    return sk_httpd_text(c, status, "%s\n", err->msg);
}


/* Strict decimal from the query or path; -1 if absent or not a number. */
static int
tl_http_u64(uint64_t *v, const char *s)
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
    int          inclusion = strcmp(kind, "inclusion") == 0;

    if (!inclusion && strcmp(kind, "consistency") != 0) {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "no proof \"%s\"\n", kind);
    }
    an = inclusion ? "sn" : "from";
    bn = inclusion ? "size" : "to";
    if (tl_http_u64(&a, MHD_lookup_connection_value(c,
            MHD_GET_ARGUMENT_KIND, an)) != 0)
    {
        return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
            "proof: \"%s\" missing or not a number\n", an);
    }
    if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, bn) == NULL) {
        b = n;
    } else if (tl_http_u64(&b, MHD_lookup_connection_value(c,
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
    return tl_http_u64(a, buf) == 0 && tl_http_u64(b, p + strlen(sep)) == 0
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
    char                  buf[48];
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
            name);
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
    char      *out;

    if (strncmp(url, "since/", 6) == 0) {
        if (tl_http_u64(&a, url + 6) != 0) {
            return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
                "chunks: bad SN \"%s\"\n", url + 6);
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
        [TL_QUEUED] = MHD_HTTP_ACCEPTED,
    };

    return status[v];
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
    char         *entry, *out;

    pthread_mutex_lock(&tl->lock);
    t = tl_token_find_hex(tl, hex);
    if (t != NULL) {
        copy = *t;
    }
    pthread_mutex_unlock(&tl->lock);
    if (t == NULL) {
        return sk_httpd_text(c, MHD_HTTP_GONE,
            "status: unknown token \"%.40s\" (never issued, or too old)\n",
            hex);
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
    char        *out;
    int          rc;

    if (tl_http_u64(&sn, s) != 0 || sn >= tl_http_durable(tl)) {
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND,
            "incorporated: no SN \"%.24s\"\n", s);
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
    char      *out;
    int        rc;

    if (strcmp(url, "/status") == 0 || strcmp(url, "/checkpoint") == 0) {
        rc = url[1] == 's' ? tl_publish_tfm(tl, &out, &len, &err)
                           : tl_publish_checkpoint(tl, &out, &len, &err);
        if (rc != 0) {
            return tl_http_err(c, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        }
        return sk_httpd_reply(c, MHD_HTTP_OK, out, len, TL_HTTP_TEXT);
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
        if (tl_http_u64(&sn, url + 7) != 0) {
            return sk_httpd_text(c, MHD_HTTP_BAD_REQUEST,
                "entry: bad SN \"%s\"\n", url + 7);
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
    char      *p, **buf;

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
        snprintf(rq->bad, sizeof(rq->bad), "form: unknown field \"%.40s\"",
            key);
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


static enum MHD_Result
tl_http_append_done(struct MHD_Connection *c, tl_timeline_t *tl,
    tl_req_t *rq)
{
    tl_verdict_t  v;
    sk_err_t      err;
    size_t        len;
    char         *out;

    if (rq->too_big) {
        return sk_httpd_text(c, MHD_HTTP_CONTENT_TOO_LARGE,
            "form: body larger than %" PRIu64 " bytes\n", tl->conf.max_body);
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
    sk_err_clear(&err);
    v = tl_append(tl, &out, &len, rq->e, rq->elen, rq->ref, rq->reflen,
        &err);
    if (v == TL_OK) {
        return sk_httpd_reply(c, MHD_HTTP_CREATED, out, len, TL_HTTP_TEXT);
    }
    if (v == TL_QUEUED) {
        return tl_http_queued(c, out);
    }
    if (v == TL_FAULT) {
        tl_log("append: %s", err.msg);
    }
    return tl_http_err(c, tl_http_status(v), &err);
}


static enum MHD_Result
tl_http_append(struct MHD_Connection *c, tl_timeline_t *tl, void **con_cls,
    const char *data, size_t *size)
{
    const char  *cl;
    uint64_t     n;
    tl_req_t    *rq = *con_cls;

    if (rq == NULL) {
        rq = calloc(1, sizeof(*rq));
        if (rq == NULL) {
            return MHD_NO;
        }
        *con_cls = rq;
        cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
            MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl != NULL && tl_http_u64(&n, cl) == 0 && n > tl->conf.max_body)
        {
            rq->too_big = 1;
            return MHD_YES;
        }
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
        rq->total += *size;
        if (rq->total > tl->conf.max_body) {
            rq->too_big = 1;
        }
        if (!rq->too_big && rq->pp != NULL
            && MHD_post_process(rq->pp, data, *size) != MHD_YES
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
        free(rq);
        *con_cls = NULL;
    }
}


int
tl_http_start(tl_timeline_t *tl, struct MHD_Daemon **d, sk_err_t *err)
{
    struct sockaddr_storage  ss;
    unsigned                 flags;

    if (sk_addr_parse(&ss, tl->conf.listen, err) != 0) {
        return -1;
    }
    flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD
            | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
    }
    *d = MHD_start_daemon(flags, 0, NULL, NULL, tl_http_handler, tl,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ss,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned) tl->conf.threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) TL_HTTP_TIMEOUT,
        MHD_OPTION_NOTIFY_COMPLETED, tl_http_completed, NULL,
        MHD_OPTION_END);
    if (*d == NULL) {
        return sk_err_set(err, SK_ERR_SYSTEM, "listen %s: cannot start "
            "the HTTP server (address in use?)", tl->conf.listen);
    }
    return 0;
}
