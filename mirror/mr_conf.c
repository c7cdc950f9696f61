/*
 * mr_conf.c -- sk-mirror's configuration file (read by sk/conf.h):
 *
 *   listen   = 127.0.0.1:8480
 *   data_dir = /var/lib/sk-mirror
 *   timeline = 7 https://tl7.example.net /etc/sk-mirror/tl7.pub
 *   timeline = 9 https://tl9.example.org /etc/sk-mirror/tl9.pub tl-nine
 *   peer     = https://mirror2.example.net
 *   onion_dir = /var/lib/tor/sk-mirror
 *
 * docs/mirror.md documents each key.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sk/addr.h>
#include <sk/conf.h>

#include "mr.h"

#define MR_CONF_MAX  (64 * 1024)

#define MR_U(name, field, dflt)                                             \
    { name, SK_CONF_UINT, 0, 0, offsetof(mr_conf_t, field), dflt }

static const sk_conf_def_t  mr_confdefs[] = {
    /* name        type            req rep offset                  default */
    { "listen",   SK_CONF_STR,    1, 0, offsetof(mr_conf_t, listen),   NULL },
    { "data_dir", SK_CONF_STR,    1, 0, offsetof(mr_conf_t, data_dir), NULL },
    { "key",      SK_CONF_STR,    0, 0, offsetof(mr_conf_t, key_file), NULL },
    { "answer_cache", SK_CONF_STR, 0, 0, offsetof(mr_conf_t, answer_cache),
      NULL },
    { "metrics_listen", SK_CONF_STR, 0, 0,
      offsetof(mr_conf_t, metrics_listen), NULL },
    { "trusted_proxies", SK_CONF_STR, 0, 0,
      offsetof(mr_conf_t, http.proxies), NULL },
    { "dnssec_anchors", SK_CONF_STR, 0, 0,
      offsetof(mr_conf_t, dnssec_anchors), SK_DNSSEC_ANCHORS },
    { "onion_dir", SK_CONF_STR, 0, 0, offsetof(mr_conf_t, onion_dir), NULL },
    { "onion_user", SK_CONF_STR, 0, 0, offsetof(mr_conf_t, onion_user),
      NULL },
    { "timeline", SK_CONF_CUSTOM, 1, 1, 0,                             NULL },
    { "peer",     SK_CONF_CUSTOM, 0, 1, 0,                             NULL },
    MR_U("poll_interval", poll_interval, "60"),
    MR_U("retry_min", retry_min, "2"),
    MR_U("retry_max", retry_max, "3600"),
    MR_U("defunct_after", defunct_after, "86400"),
    MR_U("fetch_timeout_ms", fetch_timeout_ms, "10000"),
    MR_U("chunk_max", chunk_max, "67108864"),
    MR_U("chunk_text_max", chunk_text_max, "268435456"),
    MR_U("tail_max", tail_max, "1000"),
    MR_U("tiles_commit", tiles_commit, "16384"),
    MR_U("query_cache", query_cache, "60"),
    MR_U("query_cache_size", query_cache_size, "67108864"),
    MR_U("threads", threads, "0"),
    MR_U("connections", http.connections, "4096"),
    MR_U("connections_per_ip", http.per_ip, "64"),
    MR_U("request_timeout", http.request_timeout, "10"),
    MR_U("idle_timeout", http.idle_timeout, "30"),
    MR_U("onion_port", onion_port, "80"),
    MR_U("rate_per_client", http.rate, "100"),
    MR_U("rate_burst", http.burst, "200"),
    { NULL, SK_CONF_STR, 0, 0, 0, NULL }
};


/* An http:// or https:// base URL with a host, one word; its trailing
 * '/'s dropped (paths are appended to it). */
static int
mr_conf_url(char *v, const char *key, sk_err_t *err)
{
    size_t  n, s;

    s = strncmp(v, "http://", 7) == 0 ? 7
        : strncmp(v, "https://", 8) == 0 ? 8 : 0;
    if (s == 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"%s\": URL \"%s\" is not http:// or https://", key, v);
    }
    if (strpbrk(v, " \t") != NULL) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"%s\": want one URL, not \"%s\"", key, v);
    }
    n = strlen(v);
    while (n > s && v[n - 1] == '/') {
        v[--n] = '\0';
    }
    if (n == s || v[s] == '/') {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"%s\": URL \"%s\" has no host", key, v);
    }
    return 0;
}


/* "TID URL PUBKEY [ORIGIN]" */
static int
mr_conf_timeline(mr_conf_t *conf, char *v, sk_err_t *err)
{
    mr_tlconf_t  *tc;
    char         *w[5], *save = NULL, buf[64];
    size_t        n = 0, i;

    if (conf->ntl == MR_MAX_TIMELINES) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"timeline\": more than %d timelines", MR_MAX_TIMELINES);
    }
    for (w[n] = strtok_r(v, " \t", &save); w[n] != NULL && n < 4;
         w[n] = strtok_r(NULL, " \t", &save))
    {
        n++;
    }
    if (n < 3 || w[n] != NULL) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"timeline\": want \"TID URL PUBKEY [ORIGIN]\"");
    }
    tc = &conf->tl[conf->ntl];
    if (sk_conf_u64(&tc->tid, "timeline", w[0], err) != 0) {
        return -1;
    }
    if (tc->tid == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"timeline\": TID must be "
            "above 0");
    }
    for (i = 0; i < conf->ntl; i++) {
        if (conf->tl[i].tid == tc->tid) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "\"timeline\": TID %s given twice", w[0]);
        }
    }
    if (mr_conf_url(w[1], "timeline", err) != 0) {
        return -1;
    }
    snprintf(buf, sizeof(buf), "sk-timeline-%llu",
        (unsigned long long) tc->tid);
    tc->url = strdup(w[1]);
    tc->pub_file = strdup(w[2]);
    tc->origin = strdup(n == 4 ? w[3] : buf);
    conf->ntl++;
    if (tc->url == NULL || tc->pub_file == NULL || tc->origin == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "timeline");
    }
    return 0;
}


static int
mr_conf_set(void *arg, const sk_conf_def_t *d, char *v, sk_err_t *err)
{
    mr_conf_t  *conf = arg;
    size_t      i;

    if (strcmp(d->name, "timeline") == 0) {
        return mr_conf_timeline(conf, v, err);
    }
    if (conf->npeers == MR_MAX_PEERS) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"peer\": more than %d peers",
            MR_MAX_PEERS);
    }
    if (mr_conf_url(v, "peer", err) != 0) {
        return -1;
    }
    /* Once is enough: a second line would only double the polls. */
    for (i = 0; i < conf->npeers; i++) {
        if (strcmp(conf->peer[i], v) == 0) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "\"peer\": %s given twice", v);
        }
    }
    conf->peer[conf->npeers] = strdup(v);
    if (conf->peer[conf->npeers] == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "peer");
    }
    conf->npeers++;
    return 0;
}


/* The checks that combine keys, and derived defaults. */
static int
mr_conf_finish(mr_conf_t *conf, sk_err_t *err)
{
    struct sockaddr_storage  ss;

    if (sk_conf_listen_key(conf->listen, &conf->key_file, conf->data_dir,
            MR_KEY_FILE, err) != 0)
    {
        return -1;
    }
    if (conf->metrics_listen != NULL
        && sk_addr_parse(&ss, conf->metrics_listen, err) != 0)
    {
        return sk_err_prefix(err, "\"metrics_listen\"");
    }
    if (conf->poll_interval == 0 || conf->retry_min == 0
        || conf->retry_max < conf->retry_min || conf->fetch_timeout_ms == 0
        || conf->chunk_max == 0
        || conf->chunk_text_max == 0 || conf->tiles_commit == 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"poll_interval\", "
            "\"retry_min\", \"fetch_timeout_ms\", "
            "\"chunk_max\", \"chunk_text_max\" and \"tiles_commit\" "
            "must be above 0, "
            "\"retry_max\" at least \"retry_min\"");
    }
    /* One polling thread per core, as nginx's "worker_processes auto":
     * answers run on every thread at once, and more threads than cores
     * only get answers preempted halfway (at 2M names, 4 connections on
     * 2 cores: p99 0.68-0.81 ms with 2 threads, 0.74-1.53 ms with 4). */
    if (conf->threads == 0) {
        long  n = sysconf(_SC_NPROCESSORS_ONLN);

        conf->threads = n < 1 ? 1 : n > 256 ? 256 : (uint64_t) n;
    }
    if (sk_httpd_limits_check(&conf->http, err) != 0) {
        return -1;
    }
    if (conf->threads > 256 || conf->chunk_text_max > ((uint64_t) 1 << 32))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"threads\" is at most 256, "
            "\"chunk_text_max\" at most 4294967296");
    }
    if (conf->onion_port == 0 || conf->onion_port > 65535) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"onion_port\" is 1 to "
            "65535");
    }
    return 0;
}


int
mr_conf_load(mr_conf_t *conf, const char *path, sk_err_t *err)
{
    char    *buf;
    size_t   len;
    int      rc;

    memset(conf, 0, sizeof(*conf));
    if (sk_file_read(&buf, &len, path, MR_CONF_MAX, err) != 0) {
        return -1;
    }
    rc = sk_conf_load(conf, mr_confdefs, mr_conf_set, buf, len, path, err);
    free(buf);
    if (rc == 0 && mr_conf_finish(conf, err) != 0) {
        rc = sk_err_prefix(err, "%s", path);
    }
    if (rc != 0) {
        mr_conf_free(conf);
    }
    return rc;
}


void
mr_conf_free(mr_conf_t *conf)
{
    size_t  i;

    sk_conf_free_strings(conf, mr_confdefs);
    for (i = 0; i < conf->ntl; i++) {
        free(conf->tl[i].url);
        free(conf->tl[i].pub_file);
        free(conf->tl[i].origin);
    }
    for (i = 0; i < conf->npeers; i++) {
        free(conf->peer[i]);
    }
    memset(conf, 0, sizeof(*conf));
}
