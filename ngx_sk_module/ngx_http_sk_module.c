
/*
 * ngx_http_sk_module -- staples the sovereign-key cross-signature (the
 * carrier certificate) after each ssl_certificate's chain, adds
 * Onion-Location, sets up the onion service and serves the SK status.
 *
 * All the work happens at configuration time in the master (and in
 * "nginx -t"): carriers are loaded, checked against the SK and appended
 * to the SSL_CTX; workers serve them from memory and never block.  The
 * stapled proof (sovereign_key_staple) is ngx_http_sk_staple.c's.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <pwd.h>
#include <openssl/sha.h>

#include "ngx_http_sk.h"


#define NGX_HTTP_SK_SERVICES  "https"

/* Last good carriers from a cache, kept across reloads: the .so stays
 * mapped, so a Redis outage at reload can keep serving them. */
#define NGX_HTTP_SK_LAST_GOOD_MAX  256


/* Where a server's carriers come from; shared by the servers that inherit
 * it, so "matches no certificate" is judged where it was written. */
struct ngx_http_sk_src_s {
    ngx_array_t              *carrier_files;  /* ngx_str_t */
    ngx_str_t                 key;            /* single-host mode */
    ngx_str_t                 cache;
    ngx_str_t                 pub;
    ngx_str_t                 services;
    time_t                    days;

    u_char                   *file;           /* where it was written */
    ngx_uint_t                line;

    ngx_uint_t                loaded;         /* unsigned: 0 / 1 */
    sk_key_t                 *sk;             /* public, or the private key */
    sk_cache_t               *cache_handle;
    sk_err_t                  cache_err;      /* why it is down, if */
    ngx_uint_t                cache_down;     /* unsigned: 0 / 1 */
    ngx_array_t               carriers;       /* ngx_http_sk_carrier_t */
};


typedef struct {
    sk_carrier_t             *carrier;
    ngx_str_t                 file;           /* empty: cache or made here */
    ngx_uint_t                used;
} ngx_http_sk_carrier_t;


typedef struct {
    ngx_flag_t                status;         /* sovereign_key_status */
    ngx_flag_t                metrics;        /* sovereign_key_metrics */
} ngx_http_sk_loc_conf_t;


typedef struct {
    u_char                    hash[SK_SHA256_BYTES];
    u_char                   *der;
    size_t                    len;
} ngx_http_sk_last_good_t;


static void ngx_http_sk_cache_down(ngx_conf_t *cf, ngx_http_sk_src_t *src,
    const sk_err_t *err);
static void *ngx_http_sk_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_sk_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_sk_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child);
static void *ngx_http_sk_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_sk_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_sk_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_sk_init_process(ngx_cycle_t *cycle);

static char *ngx_http_sk_carrier(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_sk_key(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_sk_str(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_sk_onion_dir(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_sk_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_sk_metrics(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

static ngx_int_t ngx_http_sk_staple_names(ngx_conf_t *cf,
    ngx_http_core_srv_conf_t *cscf, ngx_http_sk_srv_conf_t *skcf,
    SSL_CTX *ctx, ngx_http_sk_carrier_t **cs, ngx_uint_t ncs);
static ngx_int_t ngx_http_sk_status_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_sk_header_filter(ngx_http_request_t *r);


static ngx_command_t  ngx_http_sk_commands[] = {

    { ngx_string("sovereign_key_carrier"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_sk_carrier,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("sovereign_key"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE123,
      ngx_http_sk_key,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("sovereign_key_public"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_sk_str,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_sk_srv_conf_t, pub),
      NULL },

    { ngx_string("sovereign_key_cache"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_sk_str,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_sk_srv_conf_t, cache),
      NULL },

    { ngx_string("sovereign_key_onion"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_sk_str,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_sk_srv_conf_t, onion),
      NULL },

    { ngx_string("sovereign_key_onion_dir"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE12,
      ngx_http_sk_onion_dir,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("sovereign_key_staple"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_sk_staple_directive,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("sovereign_key_trust"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_sk_str,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_sk_srv_conf_t, trust),
      NULL },

    { ngx_string("sovereign_key_staple_cache"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_sk_str,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_sk_srv_conf_t, staple_cache),
      NULL },

    { ngx_string("sovereign_key_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_sk_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("sovereign_key_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_sk_metrics,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_sk_module_ctx = {
    NULL,                                  /* preconfiguration */
    ngx_http_sk_init,                      /* postconfiguration */

    ngx_http_sk_create_main_conf,          /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_http_sk_create_srv_conf,           /* create server configuration */
    ngx_http_sk_merge_srv_conf,            /* merge server configuration */

    ngx_http_sk_create_loc_conf,           /* create location configuration */
    ngx_http_sk_merge_loc_conf             /* merge location configuration */
};


ngx_module_t  ngx_http_sk_module = {
    NGX_MODULE_V1,
    &ngx_http_sk_module_ctx,               /* module context */
    ngx_http_sk_commands,                  /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_sk_init_process,              /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;

static ngx_http_sk_last_good_t
    ngx_http_sk_last_good[NGX_HTTP_SK_LAST_GOOD_MAX];
static ngx_uint_t  ngx_http_sk_nlast_good;


static void *
ngx_http_sk_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_sk_main_conf_t  *mcf;

    mcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_sk_main_conf_t));
    if (mcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&mcf->srcs, cf->pool, 4, sizeof(ngx_http_sk_src_t *))
        != NGX_OK
        || ngx_array_init(&mcf->staples, cf->pool, 4,
                          sizeof(ngx_http_sk_staple_t *))
           != NGX_OK
        || ngx_array_init(&mcf->expiry, cf->pool, 4,
                          sizeof(ngx_http_sk_expiry_t))
           != NGX_OK)
    {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     mcf->trusts = { 0 };      initialised on first use
     *     mcf->thread_pool = NULL;
     *     mcf->metrics_on = 0;
     *     mcf->metrics_slots = 0;
     *     mcf->metrics = NULL;
     *     mcf->labels = { 0 };      made at postconfiguration
     *     mcf->names = { 0 };
     */

    return mcf;
}


static void *
ngx_http_sk_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_sk_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_sk_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->key = { 0, NULL };
     *     conf->cache = { 0, NULL };
     *     conf->pub = { 0, NULL };
     *     conf->services = { 0, NULL };
     *     conf->onion = { 0, NULL };
     *     conf->onion_dir = { 0, NULL };
     *     conf->onion_user = { 0, NULL };
     *     conf->file = NULL;
     *     conf->onion_file = NULL;
     *     conf->src = NULL;
     *     conf->onion_addr = { 0, NULL };
     *     conf->status = { 0, NULL };
     *     conf->trust = { 0, NULL };
     *     conf->staple_cache = { 0, NULL };
     *     conf->staple_file = NULL;
     *     conf->staple = NULL;
     */

    conf->carrier_files = NGX_CONF_UNSET_PTR;
    conf->days = NGX_CONF_UNSET;
    conf->staple_mode = NGX_CONF_UNSET_UINT;

    return conf;
}


static ngx_uint_t
ngx_http_sk_has_mode(ngx_http_sk_srv_conf_t *conf)
{
    return conf->carrier_files != NGX_CONF_UNSET_PTR
           || conf->key.data != NULL || conf->cache.data != NULL;
}


/* The source of a conf level that names its own carriers, key or cache. */
static ngx_http_sk_src_t *
ngx_http_sk_src_create(ngx_conf_t *cf, ngx_http_sk_srv_conf_t *conf)
{
    ngx_http_sk_src_t  *src;

    src = ngx_pcalloc(cf->pool, sizeof(ngx_http_sk_src_t));
    if (src == NULL) {
        return NULL;
    }

    src->carrier_files = conf->carrier_files;
    src->key = conf->key;
    src->cache = conf->cache;
    src->pub = conf->pub;
    src->services = conf->services;
    src->days = conf->days;
    src->file = conf->file;
    src->line = conf->line;

    return src;
}


static char *
ngx_http_sk_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_sk_srv_conf_t *prev = parent;
    ngx_http_sk_srv_conf_t *conf = child;

    ngx_uint_t  own;

    /* carrier, key and cache are one choice: a server naming any of them
     * inherits none of the others */
    own = ngx_http_sk_has_mode(conf) || conf->pub.data != NULL;

    if (!ngx_http_sk_has_mode(conf)) {
        conf->carrier_files = prev->carrier_files;
        conf->key = prev->key;
        conf->cache = prev->cache;
        conf->services = prev->services;
        conf->days = prev->days;
    }

    if (conf->file == NULL) {
        conf->file = prev->file;
        conf->line = prev->line;
    }

    ngx_conf_merge_ptr_value(conf->carrier_files, prev->carrier_files, NULL);
    ngx_conf_merge_str_value(conf->pub, prev->pub, "");
    ngx_conf_merge_str_value(conf->services, prev->services,
                             NGX_HTTP_SK_SERVICES);
    ngx_conf_merge_value(conf->days, prev->days, SK_CARRIER_DEFAULT_DAYS);
    ngx_conf_merge_str_value(conf->onion, prev->onion, "");
    ngx_conf_merge_str_value(conf->onion_dir, prev->onion_dir, "");
    ngx_conf_merge_str_value(conf->onion_user, prev->onion_user, "");

    if (conf->onion_file == NULL) {
        conf->onion_file = prev->onion_file;
        conf->onion_line = prev->onion_line;
    }

    ngx_conf_merge_uint_value(conf->staple_mode, prev->staple_mode,
                              NGX_HTTP_SK_STAPLE_OFF);
    ngx_conf_merge_str_value(conf->trust, prev->trust, "");
    ngx_conf_merge_str_value(conf->staple_cache, prev->staple_cache, "");

    if (conf->staple_file == NULL) {
        conf->staple_file = prev->staple_file;
        conf->staple_line = prev->staple_line;
    }

    if ((conf->carrier_files != NULL) + (conf->key.len != 0)
        + (conf->cache.len != 0) > 1)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "only one of \"sovereign_key_carrier\", "
                      "\"sovereign_key\" and \"sovereign_key_cache\" "
                      "may be used in %s:%ui", conf->file, conf->line);
        return NGX_CONF_ERROR;
    }

    if (conf->carrier_files == NULL && conf->key.len == 0
        && conf->cache.len == 0)
    {
        return NGX_CONF_OK;
    }

    if (!own) {
        if (prev->src == NULL) {
            /* conf now holds prev's values, defaults applied */
            prev->src = ngx_http_sk_src_create(cf, conf);
            if (prev->src == NULL) {
                return NGX_CONF_ERROR;
            }
        }

        conf->src = prev->src;
        return NGX_CONF_OK;
    }

    conf->src = ngx_http_sk_src_create(cf, conf);
    if (conf->src == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_sk_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_sk_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_sk_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->status = NGX_CONF_UNSET;
    conf->metrics = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_http_sk_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_sk_loc_conf_t *prev = parent;
    ngx_http_sk_loc_conf_t *conf = child;

    ngx_conf_merge_value(conf->status, prev->status, 0);
    ngx_conf_merge_value(conf->metrics, prev->metrics, 0);

    return NGX_CONF_OK;
}


static void
ngx_http_sk_mark(ngx_conf_t *cf, ngx_http_sk_srv_conf_t *conf)
{
    if (conf->file == NULL) {
        conf->file = cf->conf_file->file.name.data;
        conf->line = cf->conf_file->line;
    }
}


static char *
ngx_http_sk_carrier(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_sk_srv_conf_t *skcf = conf;

    ngx_str_t  *value, *s;

    value = cf->args->elts;

    if (skcf->carrier_files == NGX_CONF_UNSET_PTR) {
        skcf->carrier_files = ngx_array_create(cf->pool, 2,
                                               sizeof(ngx_str_t));
        if (skcf->carrier_files == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    s = ngx_array_push(skcf->carrier_files);
    if (s == NULL) {
        return NGX_CONF_ERROR;
    }

    *s = value[1];

    if (ngx_conf_full_name(cf->cycle, s, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_http_sk_mark(cf, skcf);

    return NGX_CONF_OK;
}


/* sovereign_key FILE [services=S] [days=N]; */
static char *
ngx_http_sk_key(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_sk_srv_conf_t *skcf = conf;

    ngx_str_t   *value, v;
    ngx_int_t    n;
    ngx_uint_t   i;

    if (skcf->key.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    skcf->key = value[1];

    if (ngx_conf_full_name(cf->cycle, &skcf->key, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "services=", 9) == 0
            && value[i].len > 9)
        {
            skcf->services.data = value[i].data + 9;
            skcf->services.len = value[i].len - 9;
            continue;
        }

        if (ngx_strncmp(value[i].data, "days=", 5) == 0) {
            v.data = value[i].data + 5;
            v.len = value[i].len - 5;
            n = ngx_atoi(v.data, v.len);
            if (n > 0 && n <= 3650) {
                skcf->days = n;
                continue;
            }
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    ngx_http_sk_mark(cf, skcf);

    return NGX_CONF_OK;
}


/* sovereign_key_public, _cache, _onion, _trust, _staple_cache: one
 * string each. */
static char *
ngx_http_sk_str(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_sk_srv_conf_t *skcf = conf;

    ngx_str_t  *field, *value;

    field = (ngx_str_t *) ((u_char *) conf + cmd->offset);

    if (field->data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    *field = value[1];

    if (field == &skcf->onion) {
        if (ngx_strcmp(field->data, "auto") != 0) {
            sk_err_t  err;

            if (sk_onion_address_check((char *) field->data, field->len,
                                       &err)
                != 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid onion address \"%V\": %s",
                                   field, err.msg);
                return NGX_CONF_ERROR;
            }
        }

        skcf->onion_file = cf->conf_file->file.name.data;
        skcf->onion_line = cf->conf_file->line;
        return NGX_CONF_OK;
    }

    if ((field == &skcf->pub || field == &skcf->trust)
        && ngx_conf_full_name(cf->cycle, field, 1) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* libsk's own parser, so nginx takes every form sk-mirror and
     * sk-milter take (redis-cluster:// too) with the same messages; it
     * connects to nothing: the master opens the cache later */
    if (field == &skcf->cache || field == &skcf->staple_cache) {
        sk_err_t  err;

        if (sk_cache_check((char *) field->data, &err) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: %s",
                               &cmd->name, err.msg);
            return NGX_CONF_ERROR;
        }
    }

    if (field == &skcf->trust || field == &skcf->staple_cache) {
        return NGX_CONF_OK;
    }

    ngx_http_sk_mark(cf, skcf);

    return NGX_CONF_OK;
}


/* sovereign_key_onion_dir DIR [user=NAME]; */
static char *
ngx_http_sk_onion_dir(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_sk_srv_conf_t *skcf = conf;

    ngx_str_t  *value;

    if (skcf->onion_dir.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    skcf->onion_dir = value[1];

    if (ngx_conf_full_name(cf->cycle, &skcf->onion_dir, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (cf->args->nelts == 3) {
        if (ngx_strncmp(value[2].data, "user=", 5) != 0
            || value[2].len == 5)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[2]);
            return NGX_CONF_ERROR;
        }

        skcf->onion_user.data = value[2].data + 5;
        skcf->onion_user.len = value[2].len - 5;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_sk_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_sk_loc_conf_t *slcf = conf;

    ngx_http_core_loc_conf_t  *clcf;

    if (slcf->status != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    slcf->status = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_sk_status_handler;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_sk_metrics_page(ngx_http_request_t *r)
{
    return ngx_http_sk_metrics_handler(r,
               ngx_http_get_module_main_conf(r, ngx_http_sk_module));
}


static char *
ngx_http_sk_metrics(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_sk_loc_conf_t *slcf = conf;

    ngx_http_sk_main_conf_t   *mcf;
    ngx_http_core_loc_conf_t  *clcf;

    if (slcf->metrics != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    slcf->metrics = 1;
    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_sk_module);
    mcf->metrics_on = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_sk_metrics_page;

    return NGX_CONF_OK;
}


/* Configuration-time checks and attachment. */

static ngx_int_t
ngx_http_sk_fail(ngx_conf_t *cf, u_char *file, ngx_uint_t line,
    const char *what, sk_err_t *err)
{
    ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "%s: %s in %s:%ui", what,
                  err->msg, file, line);
    return NGX_ERROR;
}


static void
ngx_http_sk_src_cleanup(void *data)
{
    ngx_http_sk_src_t *src = data;

    ngx_uint_t              i;
    ngx_http_sk_carrier_t  *c;

    c = src->carriers.elts;
    for (i = 0; i < src->carriers.nelts; i++) {
        sk_carrier_free(c[i].carrier);
    }

    sk_key_free(src->sk);
    sk_cache_close(src->cache_handle);
}


static ngx_http_sk_carrier_t *
ngx_http_sk_src_add(ngx_http_sk_src_t *src, sk_carrier_t *carrier,
    ngx_str_t *file)
{
    ngx_http_sk_carrier_t  *c;

    c = ngx_array_push(&src->carriers);
    if (c == NULL) {
        sk_carrier_free(carrier);
        return NULL;
    }

    c->carrier = carrier;
    c->used = 0;

    if (file != NULL) {
        c->file = *file;
    } else {
        ngx_str_null(&c->file);
    }

    return c;
}


/* The carrier's own checks: signed by the SK and valid now. */
static int
ngx_http_sk_check(sk_carrier_t *carrier, sk_key_t *sk, sk_err_t *err)
{
    const unsigned char  *spki;
    size_t                len;

    spki = sk_carrier_subject_spki(carrier, &len);

    return sk_carrier_verify(carrier, sk, spki, len, ngx_time(), err);
}


static ngx_int_t
ngx_http_sk_load_files(ngx_conf_t *cf, ngx_http_sk_src_t *src)
{
    size_t          n, i, j;
    sk_err_t        err;
    ngx_str_t      *files;
    ngx_uint_t      failed;
    sk_carrier_t  **cs;

    files = src->carrier_files->elts;
    failed = 0;

    for (i = 0; i < src->carrier_files->nelts; i++) {

        if (sk_carrier_load_pem(&cs, &n, (char *) files[i].data, &err)
            != 0)
        {
            return ngx_http_sk_fail(cf, src->file, src->line,
                                    "sovereign_key_carrier", &err);
        }

        /* ngx_http_sk_src_add() frees what it cannot keep */
        for (j = 0; j < n; j++) {
            if (failed) {
                sk_carrier_free(cs[j]);

            } else if (ngx_http_sk_src_add(src, cs[j], &files[i]) == NULL) {
                failed = 1;
            }
        }

        free(cs);

        if (failed) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_sk_src_load(ngx_conf_t *cf, ngx_http_sk_src_t *src)
{
    sk_err_t                  err;
    ngx_uint_t                i;
    ngx_pool_cleanup_t       *cln;
    ngx_http_sk_carrier_t    *c;
    ngx_http_sk_main_conf_t  *mcf;

    if (src->loaded) {
        return NGX_OK;
    }

    src->loaded = 1;

    if (ngx_array_init(&src->carriers, cf->pool, 4,
                       sizeof(ngx_http_sk_carrier_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_sk_src_cleanup;
    cln->data = src;

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_sk_module);
    if (ngx_array_push(&mcf->srcs) == NULL) {
        return NGX_ERROR;
    }

    ((ngx_http_sk_src_t **) mcf->srcs.elts)[mcf->srcs.nelts - 1] = src;

    if (src->key.len) {
        if (sk_key_load_private(&src->sk, (char *) src->key.data, &err)
            != 0)
        {
            return ngx_http_sk_fail(cf, src->file, src->line,
                                    "sovereign_key", &err);
        }

        return NGX_OK;
    }

    if (src->pub.len == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"sovereign_key_public\" is required to check the "
                      "carriers in %s:%ui", src->file, src->line);
        return NGX_ERROR;
    }

    if (sk_key_load_public(&src->sk, (char *) src->pub.data, &err) != 0) {
        return ngx_http_sk_fail(cf, src->file, src->line,
                                "sovereign_key_public", &err);
    }

    if (src->cache.len) {
        if (sk_cache_open(&src->cache_handle, (char *) src->cache.data,
                          1000, &err)
            == 0)
        {
            return NGX_OK;
        }

        if (err.code != SK_ERR_UNAVAILABLE) {
            return ngx_http_sk_fail(cf, src->file, src->line,
                                    "sovereign_key_cache", &err);
        }

        ngx_http_sk_cache_down(cf, src, &err);
        return NGX_OK;
    }

    if (ngx_http_sk_load_files(cf, src) != NGX_OK) {
        return NGX_ERROR;
    }

    c = src->carriers.elts;
    for (i = 0; i < src->carriers.nelts; i++) {
        if (ngx_http_sk_check(c[i].carrier, src->sk, &err) != 0) {
            sk_err_prefix(&err, "%s", c[i].file.data);
            return ngx_http_sk_fail(cf, src->file, src->line,
                                    "sovereign_key_carrier", &err);
        }
    }

    return NGX_OK;
}


static ngx_http_sk_last_good_t *
ngx_http_sk_last_good_find(const u_char *hash)
{
    ngx_uint_t  i;

    for (i = 0; i < ngx_http_sk_nlast_good; i++) {
        if (ngx_memcmp(ngx_http_sk_last_good[i].hash, hash, SK_SHA256_BYTES)
            == 0)
        {
            return &ngx_http_sk_last_good[i];
        }
    }

    return NULL;
}


/* Remember a cache's carrier, in malloc()ed memory that outlives the
 * cycle, for the next reload. */
static void
ngx_http_sk_last_good_put(const u_char *hash, sk_carrier_t *carrier)
{
    u_char                   *der;
    size_t                    len;
    const u_char             *p;
    ngx_http_sk_last_good_t  *lg;

    lg = ngx_http_sk_last_good_find(hash);

    if (lg == NULL) {
        if (ngx_http_sk_nlast_good == NGX_HTTP_SK_LAST_GOOD_MAX) {
            return;
        }

        lg = &ngx_http_sk_last_good[ngx_http_sk_nlast_good];
        ngx_memcpy(lg->hash, hash, SK_SHA256_BYTES);
        lg->der = NULL;
        lg->len = 0;
        ngx_http_sk_nlast_good++;
    }

    p = sk_carrier_get0_der(carrier, &len);

    der = malloc(len);
    if (der == NULL) {
        return;
    }

    ngx_memcpy(der, p, len);
    free(lg->der);
    lg->der = der;
    lg->len = len;
}


/*
 * The cache failed (down, hung, slow: each call ends by its 1 s deadline):
 * it is not asked again while this configuration loads, so a test or a
 * reload waits for it once, not once per certificate.
 */
static void
ngx_http_sk_cache_down(ngx_conf_t *cf, ngx_http_sk_src_t *src,
    const sk_err_t *err)
{
    src->cache_down = 1;
    src->cache_err = *err;

    ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                  "sovereign_key_cache \"%V\" unavailable (%s): not asked "
                  "again for the configuration in %s:%ui", &src->cache,
                  err->msg, src->file, src->line);
}


/*
 * The carrier for one certificate from the cache.  NGX_DECLINED: none to
 * serve for it (logged).  A Redis outage keeps the last good carrier of an
 * earlier cycle; with none, it is an error in the master, and no concern
 * of the "nginx -s reload" signaller, which serves nothing.
 */
static ngx_int_t
ngx_http_sk_from_cache(ngx_conf_t *cf, ngx_http_sk_src_t *src,
    const u_char *hash, sk_carrier_t **carrier)
{
    char                      fp[SK_FINGERPRINT_SIZE];
    sk_err_t                  err;
    ngx_http_sk_last_good_t  *lg;

    sk_fingerprint_format(fp, hash);

    /* sk_cache_open() returns the handle even when Redis is down */
    if (src->cache_down) {
        err = src->cache_err;

    } else if (sk_cache_get_carrier(carrier, src->cache_handle, hash, &err)
               == 0)
    {
        ngx_http_sk_last_good_put(hash, *carrier);
        return NGX_OK;

    } else if (err.code == SK_ERR_UNAVAILABLE) {
        ngx_http_sk_cache_down(cf, src, &err);
    }

    if (err.code == SK_ERR_NOT_FOUND) {
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "sovereign_key_cache \"%V\": no carrier for key %s "
                      "in %s:%ui", &src->cache, fp, src->file, src->line);
        return NGX_DECLINED;
    }

    if (err.code != SK_ERR_UNAVAILABLE) {
        sk_err_prefix(&err, "key %s", fp);
        return ngx_http_sk_fail(cf, src->file, src->line,
                                "sovereign_key_cache", &err);
    }

    lg = ngx_http_sk_last_good_find(hash);

    if (lg != NULL && lg->der != NULL
        && sk_carrier_from_der(carrier, lg->der, lg->len, NULL) == 0)
    {
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "sovereign_key_cache \"%V\" unavailable (%s), keeping "
                      "the last good carrier for key %s in %s:%ui",
                      &src->cache, err.msg, fp, src->file, src->line);
        return NGX_OK;
    }

    if (ngx_process == NGX_PROCESS_SIGNALLER) {
        return NGX_DECLINED;
    }

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "sovereign_key_cache \"%V\" unavailable (%s) and no "
                  "carrier loaded before for key %s in %s:%ui",
                  &src->cache, err.msg, fp, src->file, src->line);
    return NGX_ERROR;
}


/* A server_name that is a name: no regex, no wildcard. */
static ngx_uint_t
ngx_http_sk_plain_name(ngx_http_server_name_t *sn)
{
#if (NGX_PCRE)
    if (sn->regex) {
        return 0;
    }
#endif
    return sn->name.len != 0 && sn->name.data[0] != '*'
           && sn->name.data[0] != '.'
           && sn->name.data[sn->name.len - 1] != '*';
}


static ngx_str_t *
ngx_http_sk_server_name(ngx_http_core_srv_conf_t *cscf)
{
    ngx_uint_t               i;
    ngx_http_server_name_t  *sn;

    sn = cscf->server_names.elts;
    for (i = 0; i < cscf->server_names.nelts; i++) {
        if (ngx_http_sk_plain_name(&sn[i])) {
            return &sn[i].name;
        }
    }

    return NULL;
}


/* Single-host mode: the SK certifies this certificate's key now. */
static ngx_int_t
ngx_http_sk_make(ngx_conf_t *cf, ngx_http_sk_src_t *src,
    ngx_http_core_srv_conf_t *cscf, sk_key_t *op, sk_carrier_t **carrier)
{
    u_char                *name, *services;
    time_t                 now;
    sk_err_t               err;
    ngx_str_t             *sn;
    sk_carrier_params_t    params;

    sn = ngx_http_sk_server_name(cscf);
    if (sn == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign_key: the server in %s:%ui has no plain "
                      "\"server_name\" to certify in %s:%ui",
                      cscf->file_name, cscf->line, src->file, src->line);
        return NGX_ERROR;
    }

    name = ngx_pnalloc(cf->pool, sn->len + 1);
    services = ngx_pnalloc(cf->pool, src->services.len + 1);
    if (name == NULL || services == NULL) {
        return NGX_ERROR;
    }

    ngx_cpystrn(name, sn->data, sn->len + 1);
    ngx_cpystrn(services, src->services.data, src->services.len + 1);

    /* an hour back, for clients whose clocks run slow */
    now = ngx_time();
    params.name = (char *) name;
    params.services = (char *) services;
    params.not_before = now - 3600;
    params.not_after = now + src->days * 86400;

    if (sk_carrier_create(carrier, src->sk, op, &params, &err) != 0) {
        return ngx_http_sk_fail(cf, src->file, src->line, "sovereign_key",
                                &err);
    }

    return NGX_OK;
}


/* The carrier for the current certificate of the server, checked. */
static ngx_int_t
ngx_http_sk_find(ngx_conf_t *cf, ngx_http_sk_src_t *src,
    ngx_http_core_srv_conf_t *cscf, sk_key_t *op, ngx_http_sk_carrier_t **out)
{
    u_char                  hash[SK_SHA256_BYTES];
    size_t                  len, clen;
    sk_err_t                err;
    ngx_int_t               rc;
    ngx_uint_t              i;
    sk_carrier_t           *carrier;
    const u_char           *spki, *cspki;
    ngx_http_sk_carrier_t  *c;

    spki = sk_key_get0_spki(op, &len);

    if (src->carrier_files != NULL) {
        c = src->carriers.elts;
        for (i = 0; i < src->carriers.nelts; i++) {
            cspki = sk_carrier_subject_spki(c[i].carrier, &clen);
            if (clen == len && ngx_memcmp(cspki, spki, len) == 0) {
                *out = &c[i];
                return NGX_OK;
            }
        }

        return NGX_DECLINED;
    }

    sk_key_spki_sha256(hash, op);

    if (src->cache.len) {
        rc = ngx_http_sk_from_cache(cf, src, hash, &carrier);
    } else {
        rc = ngx_http_sk_make(cf, src, cscf, op, &carrier);
    }

    if (rc != NGX_OK) {
        return rc;
    }

    c = ngx_http_sk_src_add(src, carrier, NULL);
    if (c == NULL) {
        return NGX_ERROR;
    }

    if (sk_carrier_verify(carrier, src->sk, spki, len, ngx_time(), &err)
        != 0)
    {
        return ngx_http_sk_fail(cf, src->file, src->line,
                                src->cache.len ? "sovereign_key_cache"
                                               : "sovereign_key", &err);
    }

    *out = c;
    return NGX_OK;
}


/*
 * {"name":N,"sk":"sha256:…","services":S,"carriers":[{"key":"sha256:…",
 * "not_before":T,"not_after":T}…],"onion":O|null, and the staple's
 * member at request time (ngx_http_sk_staple_status), then "}".
 */
static ngx_int_t
ngx_http_sk_status_build(ngx_conf_t *cf, ngx_http_sk_srv_conf_t *skcf,
    ngx_http_sk_carrier_t **cs, ngx_uint_t n)
{
    u_char                hash[SK_SHA256_BYTES], *p, *last;
    char                  fp[SK_FINGERPRINT_SIZE], onion[SK_ONION_ADDR_LEN + 1];
    size_t                size, len;
    ngx_uint_t            i;
    const u_char         *spki;
    sk_carrier_t         *c;

    size = 256 + n * 192;
    for (i = 0; i < n; i++) {
        size += 2 * ngx_strlen(sk_carrier_name(cs[i]->carrier))
                + 2 * ngx_strlen(sk_carrier_services(cs[i]->carrier));
    }

    p = ngx_pnalloc(cf->pool, size);
    if (p == NULL) {
        return NGX_ERROR;
    }

    skcf->status.data = p;
    last = p + size;

    c = cs[0]->carrier;
    sk_key_fingerprint(fp, skcf->src->sk);

    p = ngx_slprintf(p, last, "{\"name\":");
    p = ngx_http_sk_json_str(p, last, sk_carrier_name(c));
    p = ngx_slprintf(p, last, ",\"sk\":\"%s\",\"services\":", fp);
    p = ngx_http_sk_json_str(p, last, sk_carrier_services(c));
    p = ngx_slprintf(p, last, ",\"carriers\":[");

    for (i = 0; i < n; i++) {
        c = cs[i]->carrier;
        spki = sk_carrier_subject_spki(c, &len);
        SHA256(spki, len, hash);
        sk_fingerprint_format(fp, hash);

        p = ngx_slprintf(p, last,
                         "%s{\"key\":\"%s\",\"not_before\":%T,"
                         "\"not_after\":%T}",
                         i ? "," : "", fp, sk_carrier_not_before(c),
                         sk_carrier_not_after(c));
    }

    p = ngx_slprintf(p, last, "],\"onion\":");

    if (skcf->onion_addr.len) {
        ngx_cpystrn((u_char *) onion, skcf->onion_addr.data,
                    sizeof(onion));
        p = ngx_http_sk_json_str(p, last, onion);

    } else {
        p = ngx_http_sk_json_str(p, last, NULL);
    }

    skcf->status.len = p - skcf->status.data;

    return NGX_OK;
}


/* Append each certificate's carrier after that certificate's chain. */
static ngx_int_t
ngx_http_sk_attach(ngx_conf_t *cf, ngx_http_core_srv_conf_t *cscf,
    ngx_http_sk_srv_conf_t *skcf, ngx_http_ssl_srv_conf_t *sscf)
{
    int                     more;
    char                    fp[SK_FINGERPRINT_SIZE];
    X509                   *x, *first;
    SSL_CTX                *ctx;
    sk_err_t                err;
    sk_key_t               *op;
    ngx_int_t               rc;
    ngx_uint_t              n;
    ngx_http_sk_src_t      *src;
    ngx_http_sk_carrier_t  *c, *attached[16];

    src = skcf->src;
    ctx = sscf->ssl.ctx;

    if (sscf->certificate_values != NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign keys do not support \"ssl_certificate\" "
                      "with variables (server in %s:%ui)",
                      cscf->file_name, cscf->line);
        return NGX_ERROR;
    }

    n = 0;
    first = NULL;

    for (more = SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_FIRST);
         more == 1;
         more = SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_NEXT))
    {
        x = SSL_CTX_get0_certificate(ctx);
        if (x == NULL) {
            continue;
        }

        if (first == NULL) {
            first = x;
        }

        if (sk_key_from_pkey(&op, X509_get0_pubkey(x), &err) != 0) {
            return ngx_http_sk_fail(cf, cscf->file_name, cscf->line,
                                    "ssl_certificate", &err);
        }

        sk_key_fingerprint(fp, op);

        c = NULL;
        rc = ngx_http_sk_find(cf, src, cscf, op, &c);
        sk_key_free(op);

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rc == NGX_DECLINED) {
            if (src->carrier_files != NULL) {
                ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                              "sovereign_key_carrier: no carrier for the "
                              "certificate key %s of the server in %s:%ui",
                              fp, cscf->file_name, cscf->line);
            }

            continue;
        }

        if (SSL_CTX_add1_chain_cert(ctx, sk_carrier_get0_x509(c->carrier))
            != 1)
        {
            ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0,
                          "SSL_CTX_add1_chain_cert() failed");
            return NGX_ERROR;
        }

        c->used = 1;

        if (ngx_http_sk_metrics_carrier(cf,
                ngx_http_conf_get_module_main_conf(cf, ngx_http_sk_module),
                x, sk_carrier_name(c->carrier),
                sk_carrier_not_after(c->carrier))
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (n < sizeof(attached) / sizeof(attached[0])) {
            attached[n++] = c;
        }
    }

    ERR_clear_error();

    if (first != NULL) {
        SSL_CTX_select_current_cert(ctx, first);
    }

    if (n == 0) {
        if (src->carrier_files != NULL) {
            return NGX_OK;      /* judged by the file's own check */
        }

        if (ngx_process == NGX_PROCESS_SIGNALLER) {
            return NGX_OK;
        }

        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign_key_cache \"%V\": no carrier for any "
                      "certificate of the server in %s:%ui",
                      &src->cache, cscf->file_name, cscf->line);
        return NGX_ERROR;
    }

    if (ngx_http_sk_status_build(cf, skcf, attached, n) != NGX_OK) {
        return NGX_ERROR;
    }

    if (skcf->staple_mode == NGX_HTTP_SK_STAPLE_OFF) {
        return NGX_OK;
    }

    return ngx_http_sk_staple_names(cf, cscf, skcf, ctx, attached, n);
}


/* A name once: 1 if added, 0 if there already or no room. */
static ngx_uint_t
ngx_http_sk_name_add(const char **names, ngx_uint_t *n, const char *name)
{
    ngx_uint_t  i;

    for (i = 0; i < *n; i++) {
        if (ngx_strcmp(names[i], name) == 0) {
            return 0;
        }
    }

    if (*n == SK_STAPLE_MAX_ANSWERS) {
        return 0;
    }

    names[(*n)++] = name;

    return 1;
}


/*
 * The names a staple answers for: each carrier's name, and each plain
 * server_name below one, with the names between (a client of
 * www.a.example.com covered by example.com's wildcard SK looks up all
 * three).
 */
static ngx_int_t
ngx_http_sk_staple_names(ngx_conf_t *cf, ngx_http_core_srv_conf_t *cscf,
    ngx_http_sk_srv_conf_t *skcf, SSL_CTX *ctx, ngx_http_sk_carrier_t **cs,
    ngx_uint_t ncs)
{
    u_char                  *name, *dot;
    size_t                   len, clen;
    ngx_uint_t               i, k, n;
    const char              *names[SK_STAPLE_MAX_ANSWERS], *cname;
    ngx_http_server_name_t  *sn;

    n = 0;

    for (k = 0; k < ncs; k++) {
        ngx_http_sk_name_add(names, &n, sk_carrier_name(cs[k]->carrier));
    }

    sn = cscf->server_names.elts;

    for (i = 0; i < cscf->server_names.nelts; i++) {
        len = sn[i].name.len;

        if (!ngx_http_sk_plain_name(&sn[i])
            || sk_name_check((char *) sn[i].name.data, len, NULL) != 0)
        {
            continue;
        }

        for (k = 0; k < ncs; k++) {
            cname = sk_carrier_name(cs[k]->carrier);
            clen = ngx_strlen(cname);

            if (len <= clen || sn[i].name.data[len - clen - 1] != '.'
                || ngx_strncmp(sn[i].name.data + len - clen, cname, clen)
                   != 0)
            {
                continue;
            }

            name = ngx_pnalloc(cf->pool, len + 1);
            if (name == NULL) {
                return NGX_ERROR;
            }

            ngx_cpystrn(name, sn[i].name.data, len + 1);

            /* the server name and its parents down to the carrier's */
            for (dot = name; dot < name + len - clen - 1; ) {
                ngx_http_sk_name_add(names, &n, (char *) dot);
                dot = (u_char *) ngx_strchr(dot, '.') + 1;
            }
        }
    }

    return ngx_http_sk_staple_init(cf,
               ngx_http_conf_get_module_main_conf(cf, ngx_http_sk_module),
               cscf, skcf, ctx, names, n);
}


/* A carrier file's carrier that certifies none of the server keys is an
 * error where the directive was written. */
static ngx_int_t
ngx_http_sk_check_unused(ngx_conf_t *cf, ngx_http_sk_src_t *src)
{
    u_char                  hash[SK_SHA256_BYTES];
    char                    fp[SK_FINGERPRINT_SIZE];
    size_t                  len;
    ngx_uint_t              i;
    const u_char           *spki;
    ngx_http_sk_carrier_t  *c;

    c = src->carriers.elts;
    for (i = 0; i < src->carriers.nelts; i++) {
        if (c[i].used || c[i].file.len == 0) {
            continue;
        }

        spki = sk_carrier_subject_spki(c[i].carrier, &len);
        SHA256(spki, len, hash);
        sk_fingerprint_format(fp, hash);

        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign_key_carrier: %V: carrier for key %s "
                      "matches no \"ssl_certificate\" in %s:%ui",
                      &c[i].file, fp, src->file, src->line);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* Tor's user for the HiddenServiceDir: user=, else debian-tor as root. */
static ngx_int_t
ngx_http_sk_onion_owner(ngx_conf_t *cf, ngx_http_sk_srv_conf_t *skcf,
    uid_t *uid, gid_t *gid)
{
    const char     *user;
    struct passwd  *pw;

    *uid = (uid_t) -1;
    *gid = (gid_t) -1;

    if (skcf->onion_user.len) {
        user = (char *) skcf->onion_user.data;

    } else if (geteuid() == 0) {
        user = "debian-tor";

    } else {
        return NGX_OK;
    }

    pw = getpwnam(user);

    if (pw == NULL) {
        if (skcf->onion_user.len == 0) {
            return NGX_OK;
        }

        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign_key_onion_dir: no such user \"%s\" "
                      "in %s:%ui", user, skcf->onion_file, skcf->onion_line);
        return NGX_ERROR;
    }

    *uid = pw->pw_uid;
    *gid = pw->pw_gid;

    return NGX_OK;
}


/* HiddenServicePort for each listen port of the server (wildcard
 * addresses are reached on the loopback). */
static ngx_int_t
ngx_http_sk_onion_torrc(ngx_conf_t *cf, ngx_http_core_srv_conf_t *cscf,
    ngx_http_sk_srv_conf_t *skcf)
{
    u_char                     *path, *target;
    size_t                      n, k;
    sk_err_t                    err;
    in_port_t                   port;
    ngx_uint_t                  p, a, s;
    sk_onion_port_t             ports[32];
    struct sockaddr            *sa;
    ngx_http_conf_addr_t       *addr;
    ngx_http_conf_port_t       *cport;
    ngx_http_core_srv_conf_t  **servers;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    n = 0;

    cport = cmcf->ports ? cmcf->ports->elts : NULL;
    for (p = 0; cport != NULL && p < cmcf->ports->nelts; p++) {
        addr = cport[p].addrs.elts;

        for (a = 0; a < cport[p].addrs.nelts; a++) {
            servers = addr[a].servers.elts;

            for (s = 0; s < addr[a].servers.nelts; s++) {
                if (servers[s] != cscf || n == 32) {
                    continue;
                }

                sa = addr[a].opt.sockaddr;
                port = ngx_inet_get_port(sa);

                for (k = 0; k < n && ports[k].virtport != port; k++) {
                    /* void */
                }

                if (k < n) {
                    continue;
                }

                target = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
                if (target == NULL) {
                    return NGX_ERROR;
                }

                if (addr[a].opt.wildcard) {
                    *ngx_sprintf(target, "127.0.0.1:%d", (int) port) = '\0';

                } else {
                    target[ngx_sock_ntop(sa, addr[a].opt.socklen, target,
                                         NGX_SOCKADDR_STRLEN, 1)] = '\0';
                }

                ports[n].virtport = port;
                ports[n].target = (char *) target;
                n++;
            }
        }
    }

    path = ngx_pnalloc(cf->pool, skcf->onion_dir.len + sizeof(".torrc"));
    if (path == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(path, "%V.torrc%Z", &skcf->onion_dir);

    if (sk_onion_write_torrc((char *) path, (char *) skcf->onion_dir.data,
                             ports, n, &err)
        != 0)
    {
        return ngx_http_sk_fail(cf, skcf->onion_file, skcf->onion_line,
                                "sovereign_key_onion_dir", &err);
    }

    return NGX_OK;
}


/*
 * sovereign_key_onion_dir: create the HiddenServiceDir if absent (never
 * touching existing keys) and write its torrc snippet; the address comes
 * from its secret key.  "nginx -t" and the reload signaller only read.
 */
static ngx_int_t
ngx_http_sk_onion_setup(ngx_conf_t *cf, ngx_http_core_srv_conf_t *cscf,
    ngx_http_sk_srv_conf_t *skcf, char *addr)
{
    char           *dir;
    uid_t           uid;
    gid_t           gid;
    sk_err_t        err;
    sk_key_t       *key;
    ngx_uint_t      dry;
    unsigned char   pub[32];

    dry = ngx_test_config || ngx_process == NGX_PROCESS_SIGNALLER;
    dir = (char *) skcf->onion_dir.data;

    if (sk_onion_read_public(pub, dir, &err) != 0) {
        if (err.code != SK_ERR_SYSTEM || err.sys_errno != NGX_ENOENT) {
            return ngx_http_sk_fail(cf, skcf->onion_file, skcf->onion_line,
                                    "sovereign_key_onion_dir", &err);
        }

        if (dry) {
            return NGX_DECLINED;
        }

        if (ngx_http_sk_onion_owner(cf, skcf, &uid, &gid) != NGX_OK) {
            return NGX_ERROR;
        }

        key = NULL;

        if (sk_key_generate(&key, SK_KEY_ED25519, 0, &err) != 0
            || sk_onion_write_dir(dir, key, uid, gid, &err) != 0
            || sk_key_ed25519_public(pub, key, &err) != 0)
        {
            sk_key_free(key);
            return ngx_http_sk_fail(cf, skcf->onion_file, skcf->onion_line,
                                    "sovereign_key_onion_dir", &err);
        }

        sk_key_free(key);
    }

    sk_onion_address(addr, pub);

    if (dry) {
        return NGX_OK;
    }

    return ngx_http_sk_onion_torrc(cf, cscf, skcf);
}


static ngx_int_t
ngx_http_sk_onion_init(ngx_conf_t *cf, ngx_http_core_srv_conf_t *cscf,
    ngx_http_sk_srv_conf_t *skcf)
{
    char       addr[SK_ONION_ADDR_LEN + 1];
    ngx_int_t  rc;

    addr[0] = '\0';

    if (skcf->onion_dir.len) {
        rc = ngx_http_sk_onion_setup(cf, cscf, skcf, addr);
        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }
    }

    if (skcf->onion.len == 0) {
        return NGX_OK;
    }

    if (ngx_strcmp(skcf->onion.data, "auto") != 0) {
        skcf->onion_addr = skcf->onion;
        return NGX_OK;
    }

    if (skcf->onion_dir.len == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"sovereign_key_onion auto\" needs "
                      "\"sovereign_key_onion_dir\" in %s:%ui",
                      skcf->onion_file, skcf->onion_line);
        return NGX_ERROR;
    }

    if (addr[0] == '\0') {
        return NGX_OK;          /* "nginx -t" before the dir exists */
    }

    skcf->onion_addr.len = ngx_strlen(addr);
    skcf->onion_addr.data = ngx_pnalloc(cf->pool, skcf->onion_addr.len);
    if (skcf->onion_addr.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(skcf->onion_addr.data, addr, skcf->onion_addr.len);

    return NGX_OK;
}


static ngx_int_t
ngx_http_sk_init(ngx_conf_t *cf)
{
    ngx_uint_t                  s;
    ngx_http_sk_src_t         **srcs;
    ngx_http_sk_srv_conf_t     *skcf;
    ngx_http_ssl_srv_conf_t    *sscf;
    ngx_http_sk_main_conf_t    *mcf;
    ngx_http_core_srv_conf_t  **cscfp;
    ngx_http_core_main_conf_t  *cmcf;

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_sk_header_filter;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_sk_module);

    cscfp = cmcf->servers.elts;

    for (s = 0; s < cmcf->servers.nelts; s++) {
        skcf = cscfp[s]->ctx->srv_conf[ngx_http_sk_module.ctx_index];
        sscf = cscfp[s]->ctx->srv_conf[ngx_http_ssl_module.ctx_index];

        if (ngx_http_sk_onion_init(cf, cscfp[s], skcf) != NGX_OK) {
            return NGX_ERROR;
        }

        if (skcf->src == NULL) {
            if (skcf->staple_mode != NGX_HTTP_SK_STAPLE_OFF
                && sscf->ssl.ctx != NULL)
            {
                ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                              "sovereign_key_staple: the server in %s:%ui "
                              "has no carrier, so nothing to staple",
                              cscfp[s]->file_name, cscfp[s]->line);
            }

            continue;
        }

        if (ngx_http_sk_src_load(cf, skcf->src) != NGX_OK) {
            return NGX_ERROR;
        }

        if (sscf->ssl.ctx == NULL) {
            continue;
        }

        if (ngx_http_sk_attach(cf, cscfp[s], skcf, sscf) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (mcf->staples.nelts > 0 && ngx_http_sk_staple_register(cf, ngx_http_sk_module.ctx_index)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_sk_metrics_register(cf, ngx_http_sk_module.ctx_index,
                                     &ngx_http_sk_module)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    srcs = mcf->srcs.elts;

    for (s = 0; s < mcf->srcs.nelts; s++) {
        if (ngx_http_sk_check_unused(cf, srcs[s]) != NGX_OK) {
            return NGX_ERROR;
        }

        /* the SK private key stays in the master no longer than needed,
         * and never reaches a worker */
        if (srcs[s]->key.len) {
            sk_key_free(srcs[s]->sk);
            srcs[s]->sk = NULL;
        }

        sk_cache_close(srcs[s]->cache_handle);
        srcs[s]->cache_handle = NULL;
    }

    /* nothing of ours may reach the workers' first handshake as a "stale
     * global SSL error" */
    ERR_clear_error();

    return NGX_OK;
}


/* Request time. */

static ngx_int_t
ngx_http_sk_header_filter(ngx_http_request_t *r)
{
    ngx_table_elt_t         *h;
    ngx_http_sk_srv_conf_t  *skcf;

    skcf = ngx_http_get_module_srv_conf(r, ngx_http_sk_module);

    if (skcf->onion_addr.len == 0 || r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->value.len = sizeof("http://") - 1 + skcf->onion_addr.len
                   + r->unparsed_uri.len;
    h->value.data = ngx_pnalloc(r->pool, h->value.len);
    if (h->value.data == NULL) {
        h->hash = 0;
        return NGX_ERROR;
    }

    ngx_sprintf(h->value.data, "http://%V%V", &skcf->onion_addr,
                &r->unparsed_uri);

    h->hash = 1;
    ngx_str_set(&h->key, "Onion-Location");

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_sk_init_process(ngx_cycle_t *cycle)
{
    ngx_http_sk_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_sk_module);

    return ngx_http_sk_staple_init_process(cycle, mcf);
}


/* The document: what configuration time built, and this worker's
 * staple as it is now. */
static ngx_int_t
ngx_http_sk_status_handler(ngx_http_request_t *r)
{
    u_char                  *p, *last;
    size_t                   size;
    ngx_int_t                rc;
    ngx_buf_t               *b;
    ngx_http_sk_srv_conf_t  *skcf;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    skcf = ngx_http_get_module_srv_conf(r, ngx_http_sk_module);

    if (skcf->status.len == 0) {
        return NGX_HTTP_NOT_FOUND;
    }

    size = skcf->status.len + sizeof("}\n")
           + ngx_http_sk_staple_status_size(skcf->staple);

    p = ngx_pnalloc(r->pool, size);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    last = p + size;
    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = p;
    p = ngx_cpymem(p, skcf->status.data, skcf->status.len);
    p = ngx_http_sk_staple_status(p, last, skcf->staple);
    p = ngx_slprintf(p, last, "}\n");
    b->last = p;

    return ngx_http_sk_send(r, b, "application/json");
}
