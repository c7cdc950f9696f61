
/*
 * ngx_http_sk.h -- what the module's files share.  Layers, top down (no
 * file calls one above it; the module object stays in the top one, which
 * hands the others their configuration):
 *   ngx_http_sk_module.c (directives, carriers, onion, status)
 *   -> ngx_http_sk_metrics.c (/metrics, the handshake watch)
 *   -> ngx_http_sk_staple.c (the stapled proof, TLS extension 0xFF53)
 *   -> ngx_http_sk_counters.c (the counters in shared memory).
 */

#ifndef _NGX_HTTP_SK_H_INCLUDED_
#define _NGX_HTTP_SK_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sk/sk.h>
#include <sk/staple_serve.h>
#include <sk/metrics.h>


#define NGX_HTTP_SK_STAPLE_OFF        0
#define NGX_HTTP_SK_STAPLE_EXTENSION  1
#define NGX_HTTP_SK_STAPLE_CHAIN      2


typedef struct ngx_http_sk_src_s     ngx_http_sk_src_t;
typedef struct ngx_http_sk_staple_s  ngx_http_sk_staple_t;


typedef struct {
    ngx_array_t              *carrier_files;  /* sovereign_key_carrier */
    ngx_str_t                 key;            /* sovereign_key */
    ngx_str_t                 cache;          /* sovereign_key_cache */
    ngx_str_t                 pub;            /* sovereign_key_public */
    ngx_str_t                 services;       /* sovereign_key services= */
    time_t                    days;           /* sovereign_key days= */
    ngx_str_t                 onion;          /* sovereign_key_onion */
    ngx_str_t                 onion_dir;      /* sovereign_key_onion_dir */
    ngx_str_t                 onion_user;     /* ... user= */
    ngx_uint_t                staple_mode;    /* sovereign_key_staple */
    ngx_str_t                 trust;          /* sovereign_key_trust */
    ngx_str_t                 staple_cache;   /* sovereign_key_staple_cache */

    u_char                   *file;           /* first SK directive here */
    ngx_uint_t                line;
    u_char                   *onion_file;
    ngx_uint_t                onion_line;
    u_char                   *staple_file;
    ngx_uint_t                staple_line;

    ngx_http_sk_src_t        *src;
    ngx_str_t                 onion_addr;     /* resolved at postconfig */
    ngx_str_t                 status;         /* the JSON document, but
                                                 its closing brace */
    ngx_http_sk_staple_t     *staple;         /* this server's, if any */
} ngx_http_sk_srv_conf_t;


/* Counters in the shared zone (ngx_http_sk_counters.c). */
typedef enum {
    NGX_HTTP_SK_M_HANDSHAKES = 0,
    NGX_HTTP_SK_M_REQUESTED,
    NGX_HTTP_SK_M_SENT,
    NGX_HTTP_SK_M_REFRESH_FAILURES,
    NGX_HTTP_SK_M_CACHE_ERRORS,
    NGX_HTTP_SK_M_N
} ngx_http_sk_metric_e;


/* The counters' shared memory; NULL where the zone is not configured. */
typedef struct {
    ngx_atomic_t              count[NGX_HTTP_SK_M_N];
} ngx_http_sk_metrics_shm_t;

extern ngx_http_sk_metrics_shm_t  *ngx_http_sk_metrics_shm;


typedef struct {
    char                     *name;
    time_t                    not_after;
} ngx_http_sk_expiry_t;


typedef struct {
    ngx_array_t               srcs;           /* ngx_http_sk_src_t * */
    ngx_array_t               staples;        /* ngx_http_sk_staple_t * */
    ngx_array_t               trusts;         /* ngx_http_sk_trust_t */
    void                     *thread_pool;    /* ngx_thread_pool_t * */
    ngx_array_t               expiry;         /* ngx_http_sk_expiry_t */
    ngx_shm_zone_t           *metrics;        /* sovereign_key_metrics */
} ngx_http_sk_main_conf_t;


extern ngx_module_t  ngx_http_sk_module;


char *ngx_http_sk_staple_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* Postconfiguration: a server's staple for the names its carriers
 * certify (and its server names below them), from the cache, attached
 * to its SSL_CTX. */
ngx_int_t ngx_http_sk_staple_init(ngx_conf_t *cf,
    ngx_http_sk_main_conf_t *mcf, ngx_http_core_srv_conf_t *cscf,
    ngx_http_sk_srv_conf_t *skcf, SSL_CTX *ctx, const char **names,
    ngx_uint_t n);

/* Postconfiguration, after every server: extension 0xFF53 on every
 * server's SSL_CTX, for the SNI switch. */
ngx_int_t ngx_http_sk_staple_register(ngx_conf_t *cf, ngx_uint_t ctx_index);

ngx_int_t ngx_http_sk_staple_init_process(ngx_cycle_t *cycle,
    ngx_http_sk_main_conf_t *mcf);

/* The status JSON's "staple" member (",\"staple\":{...}"), at most
 * ngx_http_sk_staple_status_size() bytes. */
size_t ngx_http_sk_staple_status_size(ngx_http_sk_staple_t *st);
u_char *ngx_http_sk_staple_status(u_char *p, u_char *last,
    ngx_http_sk_staple_t *st);

/* The staple age of each name of the staples stp[0..n), one
 * sk_nginx_staple_age_seconds line per name, at most the sum of
 * ngx_http_sk_staple_metrics_size() bytes. */
size_t ngx_http_sk_staple_metrics_size(ngx_http_sk_staple_t *st);
u_char *ngx_http_sk_staple_metrics(u_char *p, u_char *last,
    ngx_http_sk_staple_t **stp, ngx_uint_t n, time_t now);

/* Whether st is stapled after the chain now (each full handshake sends
 * it). */
ngx_uint_t ngx_http_sk_staple_in_chain(ngx_http_sk_staple_t *st);

/* The metrics zone (tag: the module), once per configuration. */
ngx_int_t ngx_http_sk_metrics_zone(ngx_conf_t *cf,
    ngx_http_sk_main_conf_t *mcf, void *tag);
ngx_int_t ngx_http_sk_metrics_carrier(ngx_conf_t *cf,
    ngx_http_sk_main_conf_t *mcf, const char *name, time_t not_after);
/* ctx_index: the module's, to find each server's configuration. */
ngx_int_t ngx_http_sk_metrics_register(ngx_conf_t *cf, ngx_uint_t ctx_index);
void ngx_http_sk_metrics_init_process(ngx_http_sk_main_conf_t *mcf);
ngx_int_t ngx_http_sk_metrics_handler(ngx_http_request_t *r,
    ngx_http_sk_main_conf_t *mcf);

/* ngx_http_sk_counters.c */
void ngx_http_sk_metric_inc(ngx_http_sk_metric_e m);

/* ngx_http_sk_metrics.c: the whole answer, b, with its Content-Type. */
ngx_int_t ngx_http_sk_send(ngx_http_request_t *r, ngx_buf_t *b,
    const char *type);

/* ngx_http_sk_staple.c: s as a JSON string ("null" for NULL). */
u_char *ngx_http_sk_json_str(u_char *p, u_char *last, const char *s);


#endif /* _NGX_HTTP_SK_H_INCLUDED_ */
