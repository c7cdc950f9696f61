/*
 * tl_ocsp.c -- "OCSP good" for a Bind's end-entity certificate: ask the
 * responder its Authority Information Access names (HTTP POST of an
 * application/ocsp-request, libcurl), check the signed answer with
 * OpenSSL, and cache definite answers (good, revoked, unknown) per
 * certificate id until the answer's nextUpdate or ocsp_cache seconds.
 *
 * No definite answer (responder down, slow, malformed or badly signed
 * reply, "tryLater"): 408, the draft's "validation timed out", so the
 * registrant retries.  Revoked or unknown: 403.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/ocsp.h>
#include <openssl/sha.h>
#include <openssl/x509v3.h>

#include "tl.h"

#define TL_OCSP_SLOTS     4096          /* direct-mapped cache */
#define TL_OCSP_RESP_MAX  (64 * 1024)   /* bytes of a response */
#define TL_OCSP_LEEWAY    300           /* seconds of clock skew allowed */

typedef struct {
    unsigned char   id[SK_SHA256_BYTES];    /* SHA-256 of the DER CertID */
    int             status;                 /* V_OCSP_CERTSTATUS_* */
    int64_t         until;                  /* 0: empty slot */
} tl_ocsp_slot_t;

struct tl_ocsp_s {
    pthread_mutex_t  lock;
    tl_ocsp_slot_t   slot[TL_OCSP_SLOTS];
};

typedef struct {
    unsigned char  *buf;
    size_t          len;
} tl_ocsp_buf_t;


int
tl_ocsp_init(tl_timeline_t *tl, sk_err_t *err)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return sk_err_set(err, SK_ERR_SYSTEM, "ocsp: curl_global_init");
    }
    tl->ocsp = calloc(1, sizeof(*tl->ocsp));
    if (tl->ocsp == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "ocsp cache");
    }
    pthread_mutex_init(&tl->ocsp->lock, NULL);
    return 0;
}


void
tl_ocsp_free(tl_timeline_t *tl)
{
    if (tl->ocsp != NULL) {
        pthread_mutex_destroy(&tl->ocsp->lock);
        free(tl->ocsp);
        tl->ocsp = NULL;
        curl_global_cleanup();
    }
}


static tl_ocsp_slot_t *
tl_ocsp_slot(tl_timeline_t *tl, const unsigned char *id)
{
    size_t  i = ((size_t) id[0] << 8 | id[1]) % TL_OCSP_SLOTS;

    return &tl->ocsp->slot[i];
}


/* The cached status for id, or -1. */
static int
tl_ocsp_cached(tl_timeline_t *tl, const unsigned char *id, int64_t now)
{
    tl_ocsp_slot_t  *s;
    int              status = -1;

    pthread_mutex_lock(&tl->ocsp->lock);
    s = tl_ocsp_slot(tl, id);
    if (s->until > now && memcmp(s->id, id, sizeof(s->id)) == 0) {
        status = s->status;
    }
    pthread_mutex_unlock(&tl->ocsp->lock);
    return status;
}


static void
tl_ocsp_remember(tl_timeline_t *tl, const unsigned char *id, int status,
    int64_t until)
{
    tl_ocsp_slot_t  *s;

    pthread_mutex_lock(&tl->ocsp->lock);
    s = tl_ocsp_slot(tl, id);
    memcpy(s->id, id, sizeof(s->id));
    s->status = status;
    s->until = until;
    pthread_mutex_unlock(&tl->ocsp->lock);
}


static size_t
tl_ocsp_write(char *p, size_t size, size_t n, void *arg)
{
    tl_ocsp_buf_t  *b = arg;
    unsigned char  *q;

    n *= size;
    if (b->len + n > TL_OCSP_RESP_MAX) {
        return 0;
    }
    q = realloc(b->buf, b->len + n);
    if (q == NULL) {
        return 0;
    }
    memcpy(q + b->len, p, n);
    b->buf = q;
    b->len += n;
    return n;
}


/* The first http(s) OCSP responder in ee's AIA, malloc()ed, or NULL. */
static char *
tl_ocsp_url(X509 *ee)
{
    STACK_OF(OPENSSL_STRING)  *urls = X509_get1_ocsp(ee);
    const char                *u;
    char                      *url = NULL;
    int                        i;

    for (i = 0; url == NULL && i < sk_OPENSSL_STRING_num(urls); i++) {
        u = sk_OPENSSL_STRING_value(urls, i);
        if (strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0) {
            url = strdup(u);
        }
    }
    X509_email_free(urls);
    return url;
}


static int
tl_ocsp_post(tl_timeline_t *tl, tl_ocsp_buf_t *resp, const char *url,
    const unsigned char *req, size_t len, sk_err_t *err)
{
    struct curl_slist  *hdr;
    CURLcode            rc;
    CURL               *c;
    long                code = 0;

    c = curl_easy_init();
    hdr = curl_slist_append(NULL, "Content-Type: application/ocsp-request");
    if (c == NULL || hdr == NULL) {
        curl_easy_cleanup(c);
        curl_slist_free_all(hdr);
        return sk_err_set(err, SK_ERR_NOMEM, "ocsp: curl");
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long) tl->conf.ocsp_timeout_ms);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long) len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, tl_ocsp_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    tl_work_block(tl);
    rc = curl_easy_perform(c);
    tl_work_unblock(tl);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdr);
    if (rc != CURLE_OK) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "responder %s: %s", url,
            curl_easy_strerror(rc));
    }
    if (code != 200) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "responder %s: HTTP %ld",
            url, code);
    }
    return 0;
}


/* A definite, verified answer for id from the response bytes. */
static int
tl_ocsp_answer(int *status, int64_t *until, const tl_ocsp_buf_t *resp,
    OCSP_CERTID *id, STACK_OF(X509) *chain, X509_STORE *st, int64_t now,
    uint64_t cache, sk_err_t *err)
{
    ASN1_GENERALIZEDTIME  *thisupd, *nextupd;
    const unsigned char   *p = resp->buf;
    OCSP_BASICRESP        *bs = NULL;
    OCSP_RESPONSE         *rsp;
    struct tm              tm;
    int                    reason, rc = -1, rs;

    rsp = d2i_OCSP_RESPONSE(NULL, &p, (long) resp->len);
    if (rsp == NULL) {
        sk_err_crypto(err, "response");
        goto done;
    }
    rs = OCSP_response_status(rsp);
    if (rs != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
        sk_err_set(err, SK_ERR_UNAVAILABLE, "responder says %s",
            OCSP_response_status_str(rs));
        goto done;
    }
    bs = OCSP_response_get1_basic(rsp);
    if (bs == NULL || OCSP_basic_verify(bs, chain, st, 0) <= 0) {
        sk_err_crypto(err, "response not signed by the issuer or its "
            "responder");
        goto done;
    }
    if (OCSP_resp_find_status(bs, id, status, &reason, NULL, &thisupd,
            &nextupd) != 1)
    {
        sk_err_set(err, SK_ERR_FORMAT, "response has no answer for the "
            "certificate");
        goto done;
    }
    if (OCSP_check_validity(thisupd, nextupd, TL_OCSP_LEEWAY, -1) != 1) {
        sk_err_crypto(err, "answer out of date");
        goto done;
    }
    *until = now + (int64_t) cache;
    if (nextupd != NULL && ASN1_TIME_to_tm(nextupd, &tm) == 1
        && (int64_t) timegm(&tm) < *until)
    {
        *until = (int64_t) timegm(&tm);
    }
    rc = 0;
done:
    OCSP_BASICRESP_free(bs);
    OCSP_RESPONSE_free(rsp);
    return rc;
}


/* Ask url about id: 0 and *status, or -1. */
static int
tl_ocsp_query(tl_timeline_t *tl, int *status, int64_t *until,
    const char *url, OCSP_CERTID *id, STACK_OF(X509) *chain, X509_STORE *st,
    int64_t now, sk_err_t *err)
{
    tl_ocsp_buf_t   resp = { NULL, 0 };
    OCSP_CERTID    *rid;
    OCSP_REQUEST   *req;
    unsigned char  *der = NULL;
    int             len = -1, rc = -1;

    req = OCSP_REQUEST_new();
    rid = OCSP_CERTID_dup(id);
    if (req == NULL || rid == NULL || OCSP_request_add0_id(req, rid) == NULL)
    {
        OCSP_CERTID_free(rid);
    } else {
        len = i2d_OCSP_REQUEST(req, &der);
    }
    OCSP_REQUEST_free(req);
    if (len <= 0) {
        return sk_err_crypto(err, "request");
    }
    if (tl_ocsp_post(tl, &resp, url, der, (size_t) len, err) == 0) {
        rc = tl_ocsp_answer(status, until, &resp, id, chain, st, now,
            tl->conf.ocsp_cache, err);
    }
    OPENSSL_free(der);
    free(resp.buf);
    return rc;
}


tl_verdict_t
tl_ocsp_check(tl_timeline_t *tl, STACK_OF(X509) *chain, X509_STORE *st,
    sk_err_t *err)
{
    X509           *ee = sk_X509_value(chain, 0);
    X509           *issuer = sk_X509_value(chain, 1);
    OCSP_CERTID    *id = NULL;
    unsigned char   key[SK_SHA256_BYTES], *der = NULL;
    tl_verdict_t    v = TL_TIMEOUT;
    int64_t         now = (int64_t) time(NULL), until = 0;
    uint64_t        us;
    char           *url;
    int             len, status, rc;

    /* A trusted self-signed end-entity has no issuer to ask. */
    if (!tl->conf.ocsp || issuer == NULL) {
        return TL_OK;
    }
    url = tl_ocsp_url(ee);
    if (url == NULL) {
        if (!tl->conf.ocsp_require) {
            return TL_OK;
        }
        sk_err_set(err, SK_ERR_NOT_FOUND, "ocsp: end-entity certificate "
            "names no OCSP responder");
        return TL_FORBIDDEN;
    }
    /* chain is the verified one, so the issuer is there (the root too). */
    id = OCSP_cert_to_id(NULL, ee, issuer);
    len = id != NULL ? i2d_OCSP_CERTID(id, &der) : -1;
    if (len <= 0) {
        sk_err_crypto(err, "ocsp: certificate id");
        v = TL_FAULT;
        goto done;
    }
    SHA256(der, (size_t) len, key);
    status = tl_ocsp_cached(tl, key, now);
    if (status < 0) {
        us = tl_us();
        rc = tl_ocsp_query(tl, &status, &until, url, id, chain, st, now, err);
        tl_metrics_ocsp(tl, rc != 0 ? TL_OCSP_FAILED
            : status == V_OCSP_CERTSTATUS_GOOD ? TL_OCSP_GOOD
            : status == V_OCSP_CERTSTATUS_REVOKED ? TL_OCSP_REVOKED
            : TL_OCSP_UNKNOWN, tl_us() - us);
        if (rc != 0) {
            sk_err_prefix(err, "ocsp: no definite answer");
            goto done;
        }
        tl_ocsp_remember(tl, key, status, until);
    }
    if (status == V_OCSP_CERTSTATUS_GOOD) {
        v = TL_OK;
    } else {
        sk_err_set(err, SK_ERR_SIGNATURE, "ocsp: %s says the certificate is "
            "%s", url, OCSP_cert_status_str(status));
        v = TL_FORBIDDEN;
    }
done:
    OPENSSL_free(der);
    OCSP_CERTID_free(id);
    free(url);
    return v;
}
