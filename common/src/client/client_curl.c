/*
 * client_curl.c -- a ready sk_client_fetch_fn on libcurl: one HTTP GET
 * into a growing buffer, NUL-terminated, at most SK_CLIENT_ANSWER_MAX
 * bytes, directly or through Tor's SOCKS port (SOCKS5, the host name
 * resolved by Tor: a .onion, or any host without a DNS query of the
 * client's).  In its own file so that only programs that call it link
 * libcurl (libsk.a is a static archive).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include <sk/client.h>

typedef struct {
    char    *p;
    size_t   len, cap;
    int      too_big;
} sk_curl_buf_t;


static size_t
sk_curl_body(char *data, size_t size, size_t nmemb, void *arg)
{
    sk_curl_buf_t  *b = arg;
    size_t            n = size * nmemb, cap;
    char             *p;

    if (n > SK_CLIENT_ANSWER_MAX - b->len) {
        b->too_big = 1;
        return 0;
    }
    if (b->len + n + 1 > b->cap) {
        cap = b->cap > 0 ? b->cap : 16384;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        p = realloc(b->p, cap);
        if (p == NULL) {
            return 0;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return n;
}


int
sk_client_fetch_curl(char **body, size_t *len, int *status, const char *url,
    void *arg, sk_err_t *err)
{
    const sk_client_curl_t  *o = arg;
    sk_curl_buf_t            b = { NULL, 0, 0, 0 };
    char                     ebuf[CURL_ERROR_SIZE] = "";
    char                     proxy[SK_CLIENT_TOR_MAX + 16];
    long                     code = 0;
    CURLcode                 rc;
    CURL                    *c;

    *body = NULL;
    *len = 0;
    *status = 0;
    c = curl_easy_init();
    if (c == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "curl: cannot start");
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o != NULL && o->timeout_ms > 0
        ? o->timeout_ms : 10000L);
    if (o != NULL && o->connect_timeout_ms > 0) {
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
    }
    if (o != NULL && o->socks != NULL) {
        snprintf(proxy, sizeof(proxy), "socks5h://%s", o->socks);
        curl_easy_setopt(c, CURLOPT_PROXY, proxy);
    }
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sk_curl_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    rc = curl_easy_perform(c);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    }
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        free(b.p);
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", b.too_big
            ? "answer too large" : ebuf[0] != '\0' ? ebuf
            : curl_easy_strerror(rc));
    }
    if (b.p == NULL && (b.p = strdup("")) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "answer");
    }
    *body = b.p;
    *len = b.len;
    *status = (int) code;
    return 0;
}


void
sk_client_curl_init(sk_client_curl_t *direct, sk_client_curl_t *tor,
    const sk_client_trust_t *t)
{
    memset(direct, 0, sizeof(*direct));
    memset(tor, 0, sizeof(*tor));
    direct->timeout_ms = (long) t->mirror_timeout * 1000;
    tor->timeout_ms = (long) t->tor_timeout * 1000;
    tor->socks = t->tor;
}
