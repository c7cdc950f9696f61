/*
 * mr_fetch.c -- one GET with libcurl into memory, bounded in size and
 * time.  Each thread keeps its own easy handle (connections are reused).
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "mr.h"

typedef struct {
    mr_buf_t   buf;
    size_t     max;
    int        too_big;
} mr_sink_t;


static size_t
mr_fetch_write(char *data, size_t size, size_t nmemb, void *arg)
{
    mr_sink_t  *s = arg;
    size_t      n = size * nmemb;

    if (s->buf.len + n > s->max) {
        s->too_big = 1;
        return 0;               /* curl fails the transfer */
    }
    mr_buf_add(&s->buf, data, n);
    return s->buf.failed ? 0 : n;
}


/* Called about once a second even when nothing moves: a stopping mirror
 * must not wait out fetch_timeout_ms of a timeline that went silent. */
static int
mr_fetch_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow)
{
    mr_mirror_t  *m = arg;

    (void) dltotal;
    (void) dlnow;
    (void) ultotal;
    (void) ulnow;
    return atomic_load(&m->halt);
}


int
mr_fetch(mr_mirror_t *m, mr_resp_t *r, void *curl, const char *url,
    size_t max, sk_err_t *err)
{
    uint64_t   timeout_ms = m->conf.fetch_timeout_ms;

    mr_sink_t  sink;
    CURLcode   cc;

    memset(r, 0, sizeof(*r));
    memset(&sink, 0, sizeof(sink));
    sink.max = max;
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, mr_fetch_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long) timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long) timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, mr_fetch_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, m);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    cc = curl_easy_perform(curl);
    if (cc != CURLE_OK) {
        free(sink.buf.p);
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "GET %s: %s", url,
            sink.too_big ? "answer too big" : curl_easy_strerror(cc));
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r->status);
    if (sink.buf.p == NULL) {
        mr_buf_add(&sink.buf, "", 0);
    }
    return mr_buf_finish(&sink.buf, &r->body, &r->len, err);
}
