/*
 * tl_conf.c -- sk-timeline's configuration file.
 *
 *   # comment
 *   listen   = 127.0.0.1:8080
 *   data_dir = /var/lib/sk-timeline
 *   tid      = 7
 *
 * One "key = value" per line, every key known, none but "peer" repeated
 * (read by sk/conf.h, whose errors name the file's line).
 * docs/timeline.md documents each key.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/addr.h>
#include <sk/conf.h>

#include "tl.h"

#define TL_CONF_MAX  (64 * 1024)
/* The most an append's body needs: the form's two fields (an
 * Incorporate's entry and ref) of SK_TILE_ENTRY_MAX bytes each, every
 * byte percent-encoded, and 1 KiB for the form's own text.  A larger
 * max_body only lets in entries refused once read (413). */
#define TL_BODY_MAX  (2 * 3 * SK_TILE_ENTRY_MAX + 1024)

#define TL_S(name, field)                                                   \
    { name, SK_CONF_STR, 0, 0, offsetof(tl_conf_t, field), NULL }
#define TL_U(name, field, dflt)                                             \
    { name, SK_CONF_UINT, 0, 0, offsetof(tl_conf_t, field), dflt }
#define TL_B(name, field, dflt)                                             \
    { name, SK_CONF_BOOL, 0, 0, offsetof(tl_conf_t, field), dflt }

static const sk_conf_def_t  tl_confdefs[] = {
    /* name        type          req rep offset                     default */
    { "listen",   SK_CONF_STR,  1, 0, offsetof(tl_conf_t, listen),   NULL },
    { "data_dir", SK_CONF_STR,  1, 0, offsetof(tl_conf_t, data_dir), NULL },
    { "tid",      SK_CONF_UINT, 1, 0, offsetof(tl_conf_t, tid),      NULL },
    { "peer",     SK_CONF_CUSTOM, 0, 1, offsetof(tl_conf_t, peers),  NULL },
    TL_S("key", key_file),
    TL_S("operator_key", operator_key),
    TL_S("origin", origin),
    TL_S("clock_file", clock_file),
    TL_S("metrics_listen", metrics_listen),
    TL_S("trusted_proxies", http.proxies),
    TL_U("max_body", max_body, "65536"),
    TL_U("threads", threads, "256"),
    TL_U("http_threads", http_threads, "2"),
    TL_U("connections", http.connections, "4096"),
    TL_U("connections_per_ip", http.per_ip, "64"),
    TL_U("request_timeout", http.request_timeout, "10"),
    TL_U("idle_timeout", http.idle_timeout, "30"),
    TL_U("rate_per_client", http.rate, "20"),
    TL_U("rate_burst", http.burst, "100"),
    TL_U("rate_global", rate_global, "0"),
    TL_U("max_chain", max_chain, "8"),
    TL_U("max_chain_bytes", max_chain_bytes, "24576"),
    TL_U("sk_budget", sk_budget, "5"),
    TL_U("sk_refill", sk_refill, "1209600"),
    TL_U("clock_wait_ms", clock_wait_ms, "2000"),
    TL_U("max_clock_ahead", max_clock_ahead, "0"),
    TL_B("verify_on_start", verify_on_start, "no"),
    TL_U("checkpoint_interval", checkpoint_interval, "1"),
    TL_U("chunk_interval", chunk_interval, "60"),
    TL_U("chunk_fanout", chunk_fanout, "4"),
    TL_U("chunk_levels", chunk_levels, "6"),
    TL_U("chunk_nice", chunk_nice, "10"),
    TL_U("chunk_max_entries", chunk_max_entries, "50000"),
    { "evidence", SK_CONF_STR, 0, 0, offsetof(tl_conf_t, evidence), "ca" },
    { "dnssec_anchors", SK_CONF_STR, 0, 0,
      offsetof(tl_conf_t, dnssec_anchors), SK_DNSSEC_ANCHORS },
    TL_B("ocsp", ocsp, "yes"),
    TL_B("ocsp_require", ocsp_require, "no"),
    TL_U("ocsp_timeout_ms", ocsp_timeout_ms, "5000"),
    TL_U("ocsp_cache", ocsp_cache, "3600"),
    TL_U("reply_ms", reply_ms, "1000"),
    TL_U("tokens", tokens, "4096"),
    TL_U("sync_delay_ms", sync_delay_ms, "0"),
    TL_U("commit_delay_us", commit_delay_us, "1000"),
    TL_U("index_batch", index_batch, "4096"),
    TL_U("index_map_size", index_map_size, "1099511627776"),
    TL_B("name_map", name_map, "yes"),
    TL_B("map_lie", map_lie, "no"),
    { NULL, SK_CONF_STR, 0, 0, 0, NULL }
};


/* "TID KEYFILE": exactly two words, TID a plain decimal above 0
 * (sk_conf_u64: no sign, no blanks, no overflow), KEYFILE into
 * path[0..size). */
int
tl_conf_peer(const char *v, uint64_t *tid, char *path, size_t size,
    sk_err_t *err)
{
    char         num[24];
    const char  *file;
    size_t       n, m;

    n = strcspn(v, " \t");
    file = v + n + strspn(v + n, " \t");
    m = strcspn(file, " \t");
    if (n == 0 || m == 0 || file[m] != '\0') {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"peer\": want \"TID KEYFILE\", not \"%.128s\"", v);
    }
    if (n >= sizeof(num)) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"peer\": illegal TID "
            "\"%.*s\" (want a number)", (int) n, v);
    }
    memcpy(num, v, n);
    num[n] = '\0';
    if (sk_conf_u64(tid, "peer", num, err) != 0) {
        return -1;
    }
    if (*tid == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"peer\": TID must be above "
            "0");
    }
    if (m >= size) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"peer\": KEYFILE of more "
            "than %zu bytes", size - 1);
    }
    memcpy(path, file, m);
    path[m] = '\0';
    return 0;
}


/* "peer = TID KEYFILE", checked here so that -n and the line number come
 * with it; kept in file order (the only custom key). */
static int
tl_conf_set(void *conf, const sk_conf_def_t *d, char *v, sk_err_t *err)
{
    tl_conf_list_t  *l = (tl_conf_list_t *) ((char *) conf + d->offset);
    char           **p, path[TL_PATH_MAX];
    uint64_t         tid, other;
    size_t           i;

    if (tl_conf_peer(v, &tid, path, sizeof(path), err) != 0) {
        return -1;
    }
    for (i = 0; i < l->n; i++) {
        if (tl_conf_peer(l->v[i], &other, path, sizeof(path), err) == 0
            && other == tid)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "\"peer\": TID %" PRIu64
                " given twice", tid);
        }
    }
    p = realloc(l->v, (l->n + 1) * sizeof(*p));
    if (p == NULL || (p[l->n] = strdup(v)) == NULL) {
        if (p != NULL) {
            l->v = p;
        }
        return sk_err_set(err, SK_ERR_NOMEM, "%s", d->name);
    }
    l->v = p;
    l->n++;
    return 0;
}


/* The checks that combine keys, and derived defaults. */
/* "evidence": the kinds of a Bind's evidence accepted, "ca" and
 * "dnssec", comma-separated (blanks allowed around each). */
static int
tl_conf_evidence(tl_conf_t *conf, sk_err_t *err)
{
    const char  *p = conf->evidence;
    size_t       n;

    conf->evidence_ca = conf->evidence_dnssec = 0;
    for (;;) {
        p += strspn(p, " \t");
        n = strcspn(p, ", \t");
        if (n == 2 && memcmp(p, "ca", 2) == 0 && !conf->evidence_ca) {
            conf->evidence_ca = 1;
        } else if (n == 6 && memcmp(p, "dnssec", 6) == 0
                   && !conf->evidence_dnssec)
        {
            conf->evidence_dnssec = 1;
        } else {
            return sk_err_set(err, SK_ERR_FORMAT, "\"evidence\": want \"ca\", "
                "\"dnssec\" or \"ca, dnssec\", not \"%.64s\"",
                conf->evidence);
        }
        p += n;
        p += strspn(p, " \t");
        if (*p == '\0') {
            return 0;
        }
        if (*p++ != ',') {
            return sk_err_set(err, SK_ERR_FORMAT, "\"evidence\": want a "
                "comma-separated list, not \"%.64s\"", conf->evidence);
        }
    }
}


/* No peer may be this timeline itself ("tid" may come after the peers). */
static int
tl_conf_peers_own(const tl_conf_t *conf, sk_err_t *err)
{
    char      path[TL_PATH_MAX];
    uint64_t  tid;
    size_t    i;

    for (i = 0; i < conf->peers.n; i++) {
        if (tl_conf_peer(conf->peers.v[i], &tid, path, sizeof(path), err)
            != 0)
        {
            return -1;
        }
        if (tid == conf->tid) {
            return sk_err_set(err, SK_ERR_FORMAT, "\"peer\": TID %" PRIu64
                " is this timeline's own", tid);
        }
    }
    return 0;
}


static int
tl_conf_finish(tl_conf_t *conf, sk_err_t *err)
{
    struct sockaddr_storage  ss;
    char                     buf[64];

    if (sk_conf_listen_key(conf->listen, &conf->key_file, conf->data_dir,
            TL_KEY_FILE, err) != 0)
    {
        return -1;
    }
    if (conf->metrics_listen != NULL
        && sk_addr_parse(&ss, conf->metrics_listen, err) != 0)
    {
        return sk_err_prefix(err, "\"metrics_listen\"");
    }
    if (conf->tid == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"tid\": must be above 0");
    }
    if (tl_conf_peers_own(conf, err) != 0) {
        return -1;
    }
    if (tl_conf_evidence(conf, err) != 0) {
        return -1;
    }
    if (conf->threads == 0 || conf->max_body == 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"threads\" and \"max_body\" must be above 0");
    }
    if (conf->max_body > TL_BODY_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"max_body\": %" PRIu64
            " is more than any append needs (%d: an entry and its ref of %d "
            "bytes each, every byte percent-encoded; no entry is longer)",
            conf->max_body, TL_BODY_MAX, SK_TILE_ENTRY_MAX);
    }
    if (conf->max_chain == 0 || conf->max_chain_bytes == 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"max_chain\" and \"max_chain_bytes\" must be above 0");
    }
    if (conf->http_threads == 0 || conf->http_threads > 64) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"http_threads\" must be within 1..64");
    }
    if (sk_httpd_limits_check(&conf->http, err) != 0) {
        return -1;
    }
    if (conf->tokens == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"tokens\" must be above 0");
    }
    if (conf->ocsp_timeout_ms == 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"ocsp_timeout_ms\" must be above 0");
    }
    if (conf->checkpoint_interval == 0
        || conf->checkpoint_interval > TL_CHECKPOINT_INTERVAL_MAX)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"checkpoint_interval\" must "
            "be within 1..%d", TL_CHECKPOINT_INTERVAL_MAX);
    }
    if (conf->chunk_interval == 0 || conf->chunk_max_entries == 0
        || conf->chunk_fanout < 2 || conf->chunk_fanout > TL_CHUNK_FANOUT_MAX)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"chunk_interval\" and "
            "\"chunk_max_entries\" must be above 0, \"chunk_fanout\" "
            "within 2..%d", TL_CHUNK_FANOUT_MAX);
    }
    if (conf->index_batch == 0 || conf->index_map_size < (1u << 20)) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"index_batch\" must be "
            "above 0, \"index_map_size\" at least 1048576");
    }
    if (conf->commit_delay_us > TL_COMMIT_DELAY_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"commit_delay_us\" must be "
            "at most %d", TL_COMMIT_DELAY_MAX);
    }
    if (conf->chunk_nice > 19) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"chunk_nice\" must be "
            "within 0..19");
    }
    if (conf->origin == NULL) {
        snprintf(buf, sizeof(buf), "sk-timeline-%llu",
            (unsigned long long) conf->tid);
        conf->origin = strdup(buf);
        if (conf->origin == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "origin");
        }
    }
    if (strchr(conf->origin, ' ') != NULL || strchr(conf->origin, '+')) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"origin\": no spaces or '+' (it is also the key name)");
    }
    /* c2sp.org/tlog-checkpoint: a schema-less URL. */
    if (strstr(conf->origin, "://") != NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"origin\": a schema-less "
            "URL, without \"%.*s://\" (c2sp.org/tlog-checkpoint)",
            (int) (strstr(conf->origin, "://") - conf->origin),
            conf->origin);
    }
    return 0;
}


int
tl_conf_parse(tl_conf_t *conf, const char *text, size_t len,
    const char *path, sk_err_t *err)
{
    int  rc;

    memset(conf, 0, sizeof(*conf));
    rc = sk_conf_load(conf, tl_confdefs, tl_conf_set, text, len, path, err);
    if (rc == 0 && tl_conf_finish(conf, err) != 0) {
        rc = sk_err_prefix(err, "%s", path);
    }
    if (rc != 0) {
        tl_conf_free(conf);
    }
    return rc;
}


int
tl_conf_load(tl_conf_t *conf, const char *path, sk_err_t *err)
{
    size_t  len;
    char   *buf;
    int     rc;

    memset(conf, 0, sizeof(*conf));
    if (sk_file_read(&buf, &len, path, TL_CONF_MAX, err) != 0) {
        return -1;
    }
    rc = tl_conf_parse(conf, buf, len, path, err);
    free(buf);
    return rc;
}


void
tl_conf_free(tl_conf_t *conf)
{
    size_t  i;

    sk_conf_free_strings(conf, tl_confdefs);
    for (i = 0; i < conf->peers.n; i++) {
        free(conf->peers.v[i]);
    }
    free(conf->peers.v);
    conf->peers.v = NULL;
    conf->peers.n = 0;
}
