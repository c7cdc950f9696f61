
/*
 * ngx_http_sk_metrics.c -- sovereign_key_metrics: the module's counters in
 * the Prometheus text format (version 0.0.4), with the names, units and
 * HELP/TYPE lines libsk's writer (sk/metrics.h) gives the daemons.
 *
 * libsk's registry lives in one process's memory; nginx has many workers,
 * so the counters live in a shared memory zone instead (plain atomics,
 * ngx_atomic_fetch_add) and any worker's answer holds every worker's
 * counts.  The zone is made only when some location has the directive,
 * and it survives reloads (same name, same size).  Gauges (staple age,
 * carrier expiry) are read at scrape time from the answering worker's
 * configuration and staples.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_sk.h"


#define NGX_HTTP_SK_METRICS_ZONE_SIZE  (8 * ngx_pagesize)


typedef struct {
    const char               *name;
    const char               *help;
} ngx_http_sk_metric_def_t;


/* In ngx_http_sk_metric_e's order. */
static ngx_http_sk_metric_def_t  ngx_http_sk_counters[NGX_HTTP_SK_M_N] = {
    { "sk_nginx_carrier_handshakes_total",
      "Full TLS handshakes whose certificate chain carried an SK carrier." },
    { "sk_nginx_staple_requests_total",
      "TLS handshakes whose ClientHello asked for the SK staple "
      "(extension 0xFF53)." },
    { "sk_nginx_staples_sent_total",
      "TLS handshakes that carried the SK staple (extension or chain)." },
    { "sk_nginx_staple_refresh_failures_total",
      "Staple refreshes that left a name without a fresh answer." },
    { "sk_nginx_cache_errors_total",
      "Failures to open the key-material cache while refreshing staples." },
};


static int  ngx_http_sk_ctx_index = -1;
static int  ngx_http_sk_ssl_index = -1;
static void (*ngx_http_sk_next_info)(const SSL *ssl, int where, int ret);


static ngx_int_t
ngx_http_sk_metrics_zone_init(ngx_shm_zone_t *zone, void *data)
{
    ngx_slab_pool_t            *shpool;
    ngx_http_sk_metrics_shm_t  *shm;

    if (data != NULL) {             /* a reload: the counts go on */
        zone->data = data;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (zone->shm.exists) {
        zone->data = shpool->data;
        return NGX_OK;
    }

    shm = ngx_slab_calloc(shpool, sizeof(ngx_http_sk_metrics_shm_t));
    if (shm == NULL) {
        return NGX_ERROR;
    }

    shpool->data = shm;
    zone->data = shm;

    return NGX_OK;
}


/* A process counts into its own cycle's zone, or nowhere (a reload may
 * have dropped the directive, and the old zone with it). */
void
ngx_http_sk_metrics_init_process(ngx_http_sk_main_conf_t *mcf)
{
    ngx_http_sk_metrics_shm = mcf != NULL && mcf->metrics != NULL
                              ? mcf->metrics->data : NULL;
}


/* The directive's share of the work: the zone, once per configuration. */
ngx_int_t
ngx_http_sk_metrics_zone(ngx_conf_t *cf, ngx_http_sk_main_conf_t *mcf,
    void *tag)
{
    ngx_str_t                 name = ngx_string("sovereign_key_metrics");
    ngx_shm_zone_t           *zone;

    if (mcf->metrics != NULL) {
        return NGX_OK;
    }

    zone = ngx_shared_memory_add(cf, &name, NGX_HTTP_SK_METRICS_ZONE_SIZE,
                                 tag);
    if (zone == NULL) {
        return NGX_ERROR;
    }

    zone->init = ngx_http_sk_metrics_zone_init;
    mcf->metrics = zone;

    return NGX_OK;
}


/* Remembers a carrier's name and end for its expiry gauge; the earliest
 * end per name. */
ngx_int_t
ngx_http_sk_metrics_carrier(ngx_conf_t *cf, ngx_http_sk_main_conf_t *mcf,
    const char *name, time_t not_after)
{
    ngx_uint_t                 i;
    ngx_http_sk_expiry_t      *e;

    e = mcf->expiry.elts;
    for (i = 0; i < mcf->expiry.nelts; i++) {
        if (ngx_strcmp(e[i].name, name) == 0) {
            e[i].not_after = ngx_min(e[i].not_after, not_after);
            return NGX_OK;
        }
    }

    e = ngx_array_push(&mcf->expiry);
    if (e == NULL) {
        return NGX_ERROR;
    }

    e->name = ngx_pnalloc(cf->pool, ngx_strlen(name) + 1);
    if (e->name == NULL) {
        return NGX_ERROR;
    }

    ngx_cpystrn((u_char *) e->name, (u_char *) name, ngx_strlen(name) + 1);
    e->not_after = not_after;

    return NGX_OK;
}


/* Wraps nginx's info callback: counts each connection's first completed
 * full handshake on a server with carriers, and its staple if in the
 * chain. */
static void
ngx_http_sk_metrics_info(const SSL *ssl, int where, int ret)
{
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

    if (skcf == NULL || skcf->status.len == 0) {
        return;
    }

    ngx_http_sk_metric_inc(NGX_HTTP_SK_M_HANDSHAKES);

    if (ngx_http_sk_staple_in_chain(skcf->staple)) {
        ngx_http_sk_metric_inc(NGX_HTTP_SK_M_SENT);
    }
}


/* Postconfiguration: every TLS server's handshakes are watched (nginx
 * sets the same info callback on each, which is called first). */
ngx_int_t
ngx_http_sk_metrics_register(ngx_conf_t *cf, ngx_uint_t ctx_index)
{
    ngx_uint_t                  s;
    ngx_http_sk_srv_conf_t     *skcf;
    ngx_http_ssl_srv_conf_t    *sscf;
    ngx_http_core_srv_conf_t  **cscfp;
    ngx_http_core_main_conf_t  *cmcf;

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
ngx_http_sk_metrics_head(u_char *p, u_char *last, const char *name,
    const char *help, const char *type)
{
    return ngx_slprintf(p, last, "# HELP %s %s\n# TYPE %s %s\n",
                        name, help, name, type);
}


static size_t
ngx_http_sk_metrics_size(ngx_http_sk_main_conf_t *mcf)
{
    size_t                  size;
    ngx_uint_t              i;
    ngx_http_sk_staple_t  **stp;

    size = 4096 + mcf->expiry.nelts * (SK_NAME_MAX + 64);

    stp = mcf->staples.elts;
    for (i = 0; i < mcf->staples.nelts; i++) {
        size += ngx_http_sk_staple_metrics_size(stp[i]);
    }

    return size;
}


static u_char *
ngx_http_sk_metrics_render(u_char *p, u_char *last,
    ngx_http_sk_main_conf_t *mcf)
{
    time_t                  now;
    ngx_uint_t              i;
    ngx_http_sk_expiry_t   *e;

    now = ngx_time();

    for (i = 0; i < NGX_HTTP_SK_M_N; i++) {
        p = ngx_http_sk_metrics_head(p, last, ngx_http_sk_counters[i].name,
                                     ngx_http_sk_counters[i].help, "counter");
        p = ngx_slprintf(p, last, "%s %uA\n", ngx_http_sk_counters[i].name,
                         ngx_http_sk_metrics_shm->count[i]);
    }

    p = ngx_http_sk_metrics_head(p, last, "sk_nginx_carrier_expiry_seconds",
                                 "Seconds until the earliest carrier of "
                                 "the name expires (negative: expired).",
                                 "gauge");

    e = mcf->expiry.elts;
    for (i = 0; i < mcf->expiry.nelts; i++) {
        p = ngx_slprintf(p, last,
                         "sk_nginx_carrier_expiry_seconds{name=\"%s\"} %T\n",
                         e[i].name, e[i].not_after - now);
    }

    p = ngx_http_sk_metrics_head(p, last, "sk_nginx_staple_age_seconds",
                                 "Age of the oldest answer this worker "
                                 "staples for the name.", "gauge");

    return ngx_http_sk_staple_metrics(p, last, mcf->staples.elts,
                                      mcf->staples.nelts, now);
}


ngx_int_t
ngx_http_sk_metrics_handler(ngx_http_request_t *r,
    ngx_http_sk_main_conf_t *mcf)
{
    u_char                   *p;
    size_t                    size;
    ngx_int_t                 rc;
    ngx_buf_t                *b;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ngx_http_sk_metrics_shm == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    size = ngx_http_sk_metrics_size(mcf);

    p = ngx_pnalloc(r->pool, size);
    b = ngx_calloc_buf(r->pool);
    if (p == NULL || b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = p;
    b->last = ngx_http_sk_metrics_render(p, p + size, mcf);

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
