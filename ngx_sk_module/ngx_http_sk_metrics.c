
/*
 * ngx_http_sk_metrics.c -- sovereign_key_metrics: the module's counters in
 * the Prometheus text format (version 0.0.4), with the names, units and
 * HELP/TYPE lines libsk's writer (sk/metrics.h) gives the daemons.
 *
 * libsk's registry lives in one process's memory; nginx has many workers,
 * so the counters live in a shared memory zone instead (plain atomics,
 * ngx_atomic_fetch_add) and any worker's answer holds every worker's
 * counts.  They are kept per server label: a TLS server's first
 * server_name if it has sovereign-key directives, "_" for all the others
 * together, so a server block is the unit and the series grow with the
 * servers that use sovereign keys, not with every name or every TLS
 * server.  The zone is made at postconfiguration, sized for the labels
 * (a power of two of slots, so most reloads keep its size and with it
 * the counts), and a slot is found by the label's hash, the same across
 * reloads.  Gauges (staple age, carrier expiry) are read at scrape time
 * from the answering worker's configuration and staples, over lists
 * sorted at configuration time: a scrape is linear in the names.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <nginx.h>

#include "ngx_http_sk.h"


#define NGX_HTTP_SK_METRICS_SLOTS_MIN  64
#define NGX_HTTP_SK_OTHERS             "_"


typedef struct {
    ngx_uint_t                nslots;         /* a power of two */
    ngx_http_sk_counters_t    slots[1];
} ngx_http_sk_metrics_shm_t;


/* A family: its name, HELP and TYPE; for a counter, its index and
 * whether only staplers' labels have it. */
typedef struct {
    ngx_str_t                 name;
    const char               *help;
    const char               *type;
    ngx_uint_t                m;
    ngx_uint_t                staple;
} ngx_http_sk_metric_def_t;


static ngx_http_sk_metric_def_t  ngx_http_sk_counters[] = {
    { ngx_string("sk_nginx_handshakes_total"),
      "Full TLS handshakes (not resumed), by server.", "counter",
      NGX_HTTP_SK_M_HANDSHAKES, 0 },
    { ngx_string("sk_nginx_carrier_handshakes_total"),
      "Full TLS handshakes whose certificate chain carried an SK carrier.",
      "counter", NGX_HTTP_SK_M_CARRIER, 0 },
    { ngx_string("sk_nginx_staple_requests_total"),
      "TLS handshakes whose ClientHello asked for the SK staple "
      "(extension 0xFF53).", "counter", NGX_HTTP_SK_M_REQUESTED, 0 },
    { ngx_string("sk_nginx_staples_sent_total"),
      "TLS handshakes that carried the SK staple (extension or chain).",
      "counter", NGX_HTTP_SK_M_SENT, 0 },
    { ngx_string("sk_nginx_cache_errors_total"),
      "Failures to open the key-material cache while refreshing staples.",
      "counter", NGX_HTTP_SK_M_CACHE_ERRORS, 1 },
    { ngx_null_string, NULL, NULL, 0, 0 }
};

static ngx_http_sk_metric_def_t  ngx_http_sk_refreshes = {
    ngx_string("sk_nginx_staple_refreshes_total"),
    "Staple refreshes by result: ok, or what kept the staple from being "
    "renewed (mirror_down, bad_answer, timeline_stale, timeline_missing; "
    "error: a local failure); a result shows once counted.", "counter",
    NGX_HTTP_SK_M_REFRESH, 1
};

static ngx_http_sk_metric_def_t  ngx_http_sk_expiry = {
    ngx_string("sk_nginx_carrier_expiry_seconds"),
    "Seconds until the earliest carrier of the name expires (negative: "
    "expired).", "gauge", 0, 0
};

static ngx_http_sk_metric_def_t  ngx_http_sk_age = {
    ngx_string("sk_nginx_staple_age_seconds"),
    "Age of the oldest answer stapled for the name (the newest each "
    "server held, also once dropped).", "gauge", 0, 0
};

static ngx_http_sk_metric_def_t  ngx_http_sk_served = {
    ngx_string("sk_nginx_staple_served"),
    "1 while every server stapling the name serves an answer for it, else "
    "0.", "gauge", 0, 0
};

/* What a line needs besides its name and selector: the longest number. */
#define NGX_HTTP_SK_METRICS_LINE  (NGX_INT64_LEN + 48)


typedef struct {
    uint64_t                  key;
    ngx_str_t                 sel;
    ngx_http_sk_srv_conf_t   *skcf;
} ngx_http_sk_server_t;


static int  ngx_http_sk_ctx_index = -1;
static int  ngx_http_sk_ssl_index = -1;
static int  ngx_http_sk_x509_index = -1;
static void (*ngx_http_sk_next_info)(const SSL *ssl, int where, int ret);


/* A label's slot key: 64 bits of two hashes; never 0 (a free slot). */
static uint64_t
ngx_http_sk_metrics_key(ngx_str_t *s)
{
    uint64_t  key;

    key = ((uint64_t) ngx_crc32_long(s->data, s->len) << 32)
          | ngx_murmur_hash2(s->data, s->len);

    return key ? key : 1;
}


/* The slot of key (made if new, table locked); NULL if the table is
 * full. */
static ngx_http_sk_counters_t *
ngx_http_sk_metrics_slot(ngx_http_sk_metrics_shm_t *t, uint64_t key)
{
    ngx_uint_t               i, n;
    ngx_http_sk_counters_t  *c;

    i = (ngx_uint_t) key & (t->nslots - 1);

    for (n = 0; n < t->nslots; n++) {
        c = &t->slots[(i + n) & (t->nslots - 1)];

        if (c->key == key) {
            return c;
        }

        if (c->key == 0) {
            c->key = key;
            return c;
        }
    }

    return NULL;
}


/*
 * In the master, for a new configuration: the table (kept from the old
 * zone on a reload of the same size), and each label's slot.  A table
 * that the labels of past configurations filled starts again empty: the
 * counts restart, which Prometheus takes as a restart.
 */
static ngx_int_t
ngx_http_sk_metrics_zone_init(ngx_shm_zone_t *zone, void *data)
{
    size_t                      size;
    ngx_uint_t                  i, retried;
    ngx_slab_pool_t            *shpool;
    ngx_http_sk_label_t       **lp;
    ngx_http_sk_main_conf_t    *mcf;
    ngx_http_sk_metrics_shm_t  *t;

    mcf = zone->data;
    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    t = shpool->data;

    if (data == NULL && !zone->shm.exists) {
        size = sizeof(ngx_http_sk_metrics_shm_t)
               + mcf->metrics_slots * sizeof(ngx_http_sk_counters_t);

        t = ngx_slab_calloc(shpool, size);
        if (t == NULL) {
            return NGX_ERROR;
        }

        t->nslots = mcf->metrics_slots;
        shpool->data = t;
    }

    lp = mcf->labels.elts;
    retried = 0;

    ngx_shmtx_lock(&shpool->mutex);

    for (i = 0; i < mcf->labels.nelts; i++) {
        lp[i]->counters = ngx_http_sk_metrics_slot(t, lp[i]->key);

        if (lp[i]->counters == NULL) {
            if (retried++) {
                ngx_shmtx_unlock(&shpool->mutex);
                return NGX_ERROR;
            }

            ngx_memzero(t->slots, t->nslots * sizeof(ngx_http_sk_counters_t));
            i = (ngx_uint_t) -1;
        }
    }

    ngx_shmtx_unlock(&shpool->mutex);

    return NGX_OK;
}


ngx_int_t
ngx_http_sk_metrics_carrier(ngx_conf_t *cf, ngx_http_sk_main_conf_t *mcf,
    X509 *x, const char *name, time_t not_after)
{
    ngx_http_sk_expiry_t  *e;

    if (ngx_http_sk_x509_index == -1) {
        ngx_http_sk_x509_index = X509_get_ex_new_index(0, NULL, NULL, NULL,
                                                       NULL);
        if (ngx_http_sk_x509_index == -1) {
            ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0,
                          "X509_get_ex_new_index() failed");
            return NGX_ERROR;
        }
    }

    if (X509_set_ex_data(x, ngx_http_sk_x509_index, (void *) 1) != 1) {
        ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0,
                      "X509_set_ex_data() failed");
        return NGX_ERROR;
    }

    e = ngx_array_push(&mcf->expiry);
    if (e == NULL) {
        return NGX_ERROR;
    }

    e->name = (char *) name;
    e->not_after = not_after;

    return NGX_OK;
}


/* Counts each connection's first completed full handshake for the
 * server SNI chose: with a carrier if the certificate it served has one
 * after its chain, and its staple if that is in the chain. */
static void
ngx_http_sk_metrics_info(const SSL *ssl, int where, int ret)
{
    X509                    *x;
    ngx_http_sk_srv_conf_t  *skcf;

    if (ngx_http_sk_next_info != NULL) {
        ngx_http_sk_next_info(ssl, where, ret);
    }

    if (!(where & SSL_CB_HANDSHAKE_DONE)
        || SSL_get_ex_data(ssl, ngx_http_sk_ssl_index) != NULL
        || SSL_session_reused((SSL *) ssl))
    {
        return;
    }

    SSL_set_ex_data((SSL *) ssl, ngx_http_sk_ssl_index, (void *) 1);

    skcf = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ngx_http_sk_ctx_index);

    if (skcf == NULL) {
        return;
    }

    ngx_http_sk_count(skcf->label, NGX_HTTP_SK_M_HANDSHAKES);

    x = SSL_get_certificate(ssl);

    if (x != NULL && ngx_http_sk_x509_index != -1
        && X509_get_ex_data(x, ngx_http_sk_x509_index) != NULL)
    {
        ngx_http_sk_count(skcf->label, NGX_HTTP_SK_M_CARRIER);
    }

    if (ngx_http_sk_staple_in_chain(skcf->staple)) {
        ngx_http_sk_count(skcf->label, NGX_HTTP_SK_M_SENT);
    }
}


/* The selector {key="value"} (value escaped; close 0: without the "}",
 * for more labels), made once so that a scrape only copies it. */
static ngx_int_t
ngx_http_sk_metrics_sel(ngx_conf_t *cf, ngx_str_t *sel, const char *key,
    u_char *value, size_t len, ngx_uint_t close)
{
    u_char      *p;
    ngx_uint_t   i;

    p = ngx_pnalloc(cf->pool, ngx_strlen(key) + 2 * len + 5);
    if (p == NULL) {
        return NGX_ERROR;
    }

    sel->data = p;
    p = ngx_sprintf(p, "{%s=\"", key);

    for (i = 0; i < len; i++) {
        if (value[i] == '\\' || value[i] == '"') {
            *p++ = '\\';
        }

        *p++ = value[i];
    }

    *p++ = '"';

    if (close) {
        *p++ = '}';
    }

    sel->len = p - sel->data;

    return NGX_OK;
}


static int ngx_libc_cdecl
ngx_http_sk_expiry_cmp(const void *a, const void *b)
{
    const ngx_http_sk_expiry_t  *x = a, *y = b;

    return ngx_strcmp(x->name, y->name);
}


static int ngx_libc_cdecl
ngx_http_sk_ref_cmp(const void *a, const void *b)
{
    const ngx_http_sk_staple_ref_t  *x = a, *y = b;

    return ngx_strcmp(x->name, y->name);
}


static int ngx_libc_cdecl
ngx_http_sk_server_cmp(const void *a, const void *b)
{
    const ngx_http_sk_server_t  *x = a, *y = b;

    return x->key < y->key ? -1 : x->key > y->key;
}


/* The carriers' names, once each with their earliest end; the staples'
 * names, sorted, to find each name's staples in one pass. */
static ngx_int_t
ngx_http_sk_metrics_sort(ngx_conf_t *cf, ngx_http_sk_main_conf_t *mcf)
{
    ngx_uint_t                   i, k, n;
    ngx_http_sk_expiry_t        *e;
    ngx_http_sk_staple_t       **stp;
    ngx_http_sk_staple_ref_t    *ref;
    ngx_http_sk_staple_group_t  *g;

    e = mcf->expiry.elts;
    ngx_qsort(e, mcf->expiry.nelts, sizeof(ngx_http_sk_expiry_t),
              ngx_http_sk_expiry_cmp);

    for (i = 0, n = 0; i < mcf->expiry.nelts; i++) {
        if (n > 0 && ngx_strcmp(e[n - 1].name, e[i].name) == 0) {
            e[n - 1].not_after = ngx_min(e[n - 1].not_after, e[i].not_after);
            continue;
        }

        e[n++] = e[i];
    }

    mcf->expiry.nelts = n;

    for (i = 0; i < n; i++) {
        if (ngx_http_sk_metrics_sel(cf, &e[i].sel, "name",
                                    (u_char *) e[i].name,
                                    ngx_strlen(e[i].name), 1)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ngx_array_init(&mcf->names, cf->pool, 4,
                       sizeof(ngx_http_sk_staple_ref_t))
        != NGX_OK
        || ngx_array_init(&mcf->groups, cf->pool, 4,
                          sizeof(ngx_http_sk_staple_group_t))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    stp = mcf->staples.elts;

    for (i = 0; i < mcf->staples.nelts; i++) {
        for (k = 0; k < ngx_http_sk_staple_nnames(stp[i]); k++) {
            ref = ngx_array_push(&mcf->names);
            if (ref == NULL) {
                return NGX_ERROR;
            }

            ref->st = stp[i];
            ref->k = k;
            ref->name = ngx_http_sk_staple_name(stp[i], k, 0, NULL, NULL);
        }
    }

    ngx_qsort(mcf->names.elts, mcf->names.nelts,
              sizeof(ngx_http_sk_staple_ref_t), ngx_http_sk_ref_cmp);

    ref = mcf->names.elts;

    for (i = 0; i < mcf->names.nelts; i = k) {
        for (k = i + 1;
             k < mcf->names.nelts && ngx_strcmp(ref[k].name, ref[i].name) == 0;
             k++)
        {
            /* void */
        }

        g = ngx_array_push(&mcf->groups);
        if (g == NULL
            || ngx_http_sk_metrics_sel(cf, &g->sel, "name",
                                       (u_char *) ref[i].name,
                                       ngx_strlen(ref[i].name), 1)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        g->first = i;
        g->last = k;
    }

    return NGX_OK;
}


/* A server's label: its first server_name with sovereign-key directives,
 * else "_"; as a selector. */
static ngx_int_t
ngx_http_sk_metrics_label(ngx_conf_t *cf, ngx_http_core_srv_conf_t *cscf,
    ngx_http_sk_srv_conf_t *skcf, ngx_str_t *sel)
{
    ngx_str_t                name;
    ngx_http_server_name_t  *sn;

    ngx_str_set(&name, NGX_HTTP_SK_OTHERS);

    sn = cscf->server_names.elts;

    if ((skcf->src != NULL || skcf->staple != NULL)
        && cscf->server_names.nelts > 0 && sn[0].name.len > 0)
    {
        name = sn[0].name;
    }

    return ngx_http_sk_metrics_sel(cf, sel, "server", name.data, name.len, 0);
}


/* Every TLS server's label, the distinct ones in mcf->labels. */
static ngx_int_t
ngx_http_sk_metrics_labels(ngx_conf_t *cf, ngx_http_sk_main_conf_t *mcf,
    ngx_uint_t ctx_index)
{
    ngx_uint_t                  s, i, n;
    ngx_array_t                 servers;
    ngx_http_sk_label_t        *l, **lp;
    ngx_http_sk_server_t       *sv;
    ngx_http_sk_srv_conf_t     *skcf;
    ngx_http_ssl_srv_conf_t    *sscf;
    ngx_http_core_srv_conf_t  **cscfp;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    cscfp = cmcf->servers.elts;

    if (ngx_array_init(&servers, cf->temp_pool, cmcf->servers.nelts + 1,
                       sizeof(ngx_http_sk_server_t))
        != NGX_OK
        || ngx_array_init(&mcf->labels, cf->pool, 4,
                          sizeof(ngx_http_sk_label_t *))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    for (s = 0; s < cmcf->servers.nelts; s++) {
        skcf = cscfp[s]->ctx->srv_conf[ctx_index];
        sscf = cscfp[s]->ctx->srv_conf[ngx_http_ssl_module.ctx_index];

        if (sscf->ssl.ctx == NULL) {
            continue;
        }

        sv = ngx_array_push(&servers);
        if (sv == NULL
            || ngx_http_sk_metrics_label(cf, cscfp[s], skcf, &sv->sel)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        sv->key = ngx_http_sk_metrics_key(&sv->sel);
        sv->skcf = skcf;
    }

    sv = servers.elts;
    n = servers.nelts;
    ngx_qsort(sv, n, sizeof(ngx_http_sk_server_t), ngx_http_sk_server_cmp);

    l = NULL;

    for (i = 0; i < n; i++) {
        if (l == NULL || l->key != sv[i].key) {
            l = ngx_pcalloc(cf->pool, sizeof(ngx_http_sk_label_t));
            lp = ngx_array_push(&mcf->labels);
            if (l == NULL || lp == NULL) {
                return NGX_ERROR;
            }

            l->sel = sv[i].sel;
            l->key = sv[i].key;
            *lp = l;
        }

        l->staple |= sv[i].skcf->staple != NULL;
        sv[i].skcf->label = l;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_sk_metrics_register(ngx_conf_t *cf, ngx_uint_t ctx_index,
    void *tag)
{
    size_t                      size;
    ngx_str_t                   name = ngx_string("sovereign_key_metrics");
    ngx_uint_t                  s, slots;
    ngx_shm_zone_t             *zone;
    ngx_http_sk_srv_conf_t     *skcf;
    ngx_http_ssl_srv_conf_t    *sscf;
    ngx_http_sk_main_conf_t    *mcf;
    ngx_http_core_srv_conf_t  **cscfp;
    ngx_http_core_main_conf_t  *cmcf;

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_sk_module);

    if (!mcf->metrics_on) {
        return NGX_OK;
    }

    if (ngx_http_sk_ctx_index == -1) {
        ngx_http_sk_ctx_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL,
                                                         NULL);
        ngx_http_sk_ssl_index = SSL_get_ex_new_index(0, NULL, NULL, NULL,
                                                     NULL);

        if (ngx_http_sk_ctx_index == -1 || ngx_http_sk_ssl_index == -1) {
            ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0,
                          "sovereign_key_metrics: SSL_get_ex_new_index() "
                          "failed");
            return NGX_ERROR;
        }
    }

    if (ngx_http_sk_metrics_sort(cf, mcf) != NGX_OK
        || ngx_http_sk_metrics_labels(cf, mcf, ctx_index) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* twice the slots the labels need, rounded up to a power of two */
    for (slots = NGX_HTTP_SK_METRICS_SLOTS_MIN;
         slots < 2 * mcf->labels.nelts;
         slots *= 2)
    {
        /* void */
    }

    /* the slab allocator's pages and bookkeeping besides the table: the
     * size depends on the slots alone, so a reload keeps the zone */
    size = 8 * ngx_pagesize
           + 2 * ngx_align(slots * sizeof(ngx_http_sk_counters_t),
                           ngx_pagesize);
    mcf->metrics_slots = slots;

    zone = ngx_shared_memory_add(cf, &name, size, tag);
    if (zone == NULL) {
        return NGX_ERROR;
    }

    zone->init = ngx_http_sk_metrics_zone_init;
    zone->data = mcf;
    mcf->metrics = zone;

    /* every TLS server's handshakes are watched (nginx sets the same
     * info callback on each, which is called first) */
    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    cscfp = cmcf->servers.elts;

    for (s = 0; s < cmcf->servers.nelts; s++) {
        skcf = cscfp[s]->ctx->srv_conf[ctx_index];
        sscf = cscfp[s]->ctx->srv_conf[ngx_http_ssl_module.ctx_index];

        if (sscf->ssl.ctx == NULL) {
            continue;
        }

        if (SSL_CTX_set_ex_data(sscf->ssl.ctx, ngx_http_sk_ctx_index, skcf)
            != 1)
        {
            ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0,
                          "SSL_CTX_set_ex_data() failed");
            return NGX_ERROR;
        }

        if (SSL_CTX_get_info_callback(sscf->ssl.ctx)
            != ngx_http_sk_metrics_info)
        {
            ngx_http_sk_next_info = SSL_CTX_get_info_callback(sscf->ssl.ctx);
            SSL_CTX_set_info_callback(sscf->ssl.ctx,
                                      ngx_http_sk_metrics_info);
        }
    }

    return NGX_OK;
}


static u_char *
ngx_http_sk_metrics_head(u_char *p, ngx_http_sk_metric_def_t *def)
{
    return ngx_sprintf(p, "# HELP %V %s\n# TYPE %V %s\n", &def->name,
                       def->help, &def->name, def->type);
}


/* NAME SEL[TAIL] V: copies and a number, no format to walk per byte (a
 * scrape writes a line per label and per name). */
static u_char *
ngx_http_sk_metrics_line(u_char *p, ngx_http_sk_metric_def_t *def,
    ngx_str_t *sel, const char *tail, int64_t v)
{
    p = ngx_cpymem(p, def->name.data, def->name.len);
    p = ngx_cpymem(p, sel->data, sel->len);

    while (*tail) {
        *p++ = *tail++;
    }

    return ngx_sprintf(p, " %L\n", v);
}


/* At most what ngx_http_sk_metrics_render() writes. */
static size_t
ngx_http_sk_metrics_size(ngx_http_sk_main_conf_t *mcf)
{
    size_t                       size;
    ngx_uint_t                   i;
    ngx_http_sk_label_t        **lp;
    ngx_http_sk_expiry_t        *e;
    ngx_http_sk_staple_group_t  *g;

    size = 8192;

    lp = mcf->labels.elts;
    for (i = 0; i < mcf->labels.nelts; i++) {
        size += (NGX_HTTP_SK_M_N + 1)
                * (lp[i]->sel.len + NGX_HTTP_SK_METRICS_LINE + 48);
    }

    e = mcf->expiry.elts;
    for (i = 0; i < mcf->expiry.nelts; i++) {
        size += e[i].sel.len + NGX_HTTP_SK_METRICS_LINE + 48;
    }

    g = mcf->groups.elts;
    for (i = 0; i < mcf->groups.nelts; i++) {
        size += 2 * (g[i].sel.len + NGX_HTTP_SK_METRICS_LINE + 48);
    }

    return size;
}


/* The counters of every label (the staplers' for a stapler's family),
 * from a copy taken in one pass: the slots lie where their hashes put
 * them, and each family would visit them all again. */
static u_char *
ngx_http_sk_metrics_counters(u_char *p, ngx_http_sk_main_conf_t *mcf,
    ngx_atomic_uint_t *snap)
{
    u_char                     tail[64];
    ngx_uint_t                 d, i, c;
    ngx_atomic_uint_t          v, *cnt;
    ngx_http_sk_label_t      **lp;
    ngx_http_sk_metric_def_t  *def;

    lp = mcf->labels.elts;

    for (i = 0; i < mcf->labels.nelts; i++) {
        for (c = 0; c < NGX_HTTP_SK_M_N; c++) {
            snap[i * NGX_HTTP_SK_M_N + c] = lp[i]->counters->count[c];
        }
    }

    for (d = 0; ngx_http_sk_counters[d].name.len; d++) {
        def = &ngx_http_sk_counters[d];
        p = ngx_http_sk_metrics_head(p, def);

        for (i = 0; i < mcf->labels.nelts; i++) {
            if (!def->staple || lp[i]->staple) {
                p = ngx_http_sk_metrics_line(p, def, &lp[i]->sel, "}",
                                       snap[i * NGX_HTTP_SK_M_N + def->m]);
            }
        }
    }

    def = &ngx_http_sk_refreshes;
    p = ngx_http_sk_metrics_head(p, def);

    for (i = 0; i < mcf->labels.nelts; i++) {
        if (!lp[i]->staple) {
            continue;
        }

        cnt = &snap[i * NGX_HTTP_SK_M_N];

        for (c = 0; c <= SK_STAPLE_CAUSES; c++) {
            v = cnt[def->m + c];

            if (v == 0 && c != SK_STAPLE_RENEWED) {
                continue;
            }

            ngx_sprintf(tail, ",result=\"%s\"}%Z",
                        c < SK_STAPLE_CAUSES
                        ? sk_staple_cause_name((sk_staple_cause_t) c)
                        : "error");
            p = ngx_http_sk_metrics_line(p, def, &lp[i]->sel,
                                         (char *) tail, v);
        }
    }

    return p;
}


/* Per staple name, over all its staples: the oldest answer's age (the
 * newest held or last held by each) and whether every one serves it (in
 * all[], for the second family: each staple is read once). */
static u_char *
ngx_http_sk_metrics_staples(u_char *p, ngx_http_sk_main_conf_t *mcf,
    time_t now, u_char *all)
{
    time_t                       t, oldest;
    ngx_uint_t                   i, j, served;
    ngx_http_sk_staple_ref_t    *ref;
    ngx_http_sk_staple_group_t  *g;

    ref = mcf->names.elts;
    g = mcf->groups.elts;

    p = ngx_http_sk_metrics_head(p, &ngx_http_sk_age);

    for (i = 0; i < mcf->groups.nelts; i++) {
        oldest = 0;
        all[i] = 1;

        for (j = g[i].first; j < g[i].last; j++) {
            (void) ngx_http_sk_staple_name(ref[j].st, ref[j].k, now, &t,
                                           &served);
            all[i] &= served;

            if (t != 0 && (oldest == 0 || t < oldest)) {
                oldest = t;
            }
        }

        if (oldest != 0) {
            p = ngx_http_sk_metrics_line(p, &ngx_http_sk_age, &g[i].sel, "",
                                         now - oldest);
        }
    }

    p = ngx_http_sk_metrics_head(p, &ngx_http_sk_served);

    for (i = 0; i < mcf->groups.nelts; i++) {
        p = ngx_http_sk_metrics_line(p, &ngx_http_sk_served, &g[i].sel, "",
                                     all[i]);
    }

    return p;
}


static u_char *
ngx_http_sk_metrics_render(u_char *p, ngx_http_sk_main_conf_t *mcf,
    ngx_atomic_uint_t *snap, u_char *all)
{
    time_t                  now;
    ngx_uint_t              i;
    ngx_http_sk_expiry_t   *e;

    now = ngx_time();

    p = ngx_sprintf(p, "# HELP sk_nginx_build_info The sovereign-keys "
                    "version of the module and the nginx it runs in (always "
                    "1).\n# TYPE sk_nginx_build_info gauge\n"
                    "sk_nginx_build_info{version=\"%s\",nginx=\"%s\"} 1\n",
                    SK_VERSION, NGINX_VERSION);

    p = ngx_http_sk_metrics_counters(p, mcf, snap);

    p = ngx_http_sk_metrics_head(p, &ngx_http_sk_expiry);

    e = mcf->expiry.elts;
    for (i = 0; i < mcf->expiry.nelts; i++) {
        p = ngx_http_sk_metrics_line(p, &ngx_http_sk_expiry, &e[i].sel, "",
                                     e[i].not_after - now);
    }

    return ngx_http_sk_metrics_staples(p, mcf, now, all);
}


ngx_int_t
ngx_http_sk_metrics_handler(ngx_http_request_t *r,
    ngx_http_sk_main_conf_t *mcf)
{
    u_char                   *p, *all;
    size_t                    size;
    ngx_int_t                 rc;
    ngx_buf_t                *b;
    ngx_atomic_uint_t        *snap;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    size = ngx_http_sk_metrics_size(mcf);

    p = ngx_pnalloc(r->pool, size);
    snap = ngx_palloc(r->pool, (mcf->labels.nelts + 1) * NGX_HTTP_SK_M_N
                               * sizeof(ngx_atomic_uint_t));
    all = ngx_pnalloc(r->pool, mcf->groups.nelts + 1);
    b = ngx_calloc_buf(r->pool);
    if (p == NULL || snap == NULL || all == NULL || b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = p;
    b->last = ngx_http_sk_metrics_render(p, mcf, snap, all);

    return ngx_http_sk_send(r, b, SK_METRICS_CONTENT_TYPE);
}


/* The whole answer, b, with its Content-Type. */
ngx_int_t
ngx_http_sk_send(ngx_http_request_t *r, ngx_buf_t *b, const char *type)
{
    ngx_int_t    rc;
    ngx_chain_t  out;

    r->headers_out.content_type.data = (u_char *) type;
    r->headers_out.content_type.len = ngx_strlen(type);
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b->memory = 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
