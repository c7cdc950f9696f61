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


int
mr_fetch(mr_resp_t *r, void *curl, const char *url, size_t max,
    uint64_t timeout_ms, sk_err_t *err)
{
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
