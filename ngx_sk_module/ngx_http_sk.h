
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


/* Counters of one server label, in the shared zone
 * (ngx_http_sk_counters.c): the server's first server_name, or "_" for
 * the TLS servers without sovereign-key directives. */
typedef enum {
    NGX_HTTP_SK_M_HANDSHAKES = 0,       /* full handshakes */
    NGX_HTTP_SK_M_CARRIER,              /* of them, the certificate's
                                           chain with a carrier */
    NGX_HTTP_SK_M_REQUESTED,
    NGX_HTTP_SK_M_SENT,
    NGX_HTTP_SK_M_CACHE_ERRORS,
    NGX_HTTP_SK_M_REFRESH,              /* + an sk_staple_cause_t; + its
                                           count: a local failure */
    NGX_HTTP_SK_M_N = NGX_HTTP_SK_M_REFRESH + SK_STAPLE_CAUSES + 1
} ngx_http_sk_metric_e;

typedef struct {
    uint64_t                  key;            /* the label's hash; 0: free */
    ngx_atomic_t              count[NGX_HTTP_SK_M_N];
} ngx_http_sk_counters_t;

typedef struct {
    ngx_str_t                 sel;            /* {server="label" (open:
                                                 more labels may follow) */
    uint64_t                  key;
    ngx_uint_t                staple;         /* a server of it staples */
    ngx_http_sk_counters_t   *counters;       /* set when the zone is
                                                 initialised; NULL: no
                                                 sovereign_key_metrics */
} ngx_http_sk_label_t;


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
    ngx_http_sk_label_t      *label;          /* its counters' (TLS
                                                 servers, with metrics) */
} ngx_http_sk_srv_conf_t;


typedef struct {
    char                     *name;
    time_t                    not_after;
    ngx_str_t                 sel;            /* {name="name"} */
} ngx_http_sk_expiry_t;


/* A name one staple answers for: its k-th (the staples' names, sorted,
 * for /metrics). */
typedef struct {
    const char               *name;
    ngx_http_sk_staple_t     *st;
    ngx_uint_t                k;
} ngx_http_sk_staple_ref_t;

/* The refs [first, last) of one name. */
typedef struct {
    ngx_str_t                 sel;            /* {name="name"} */
    ngx_uint_t                first, last;
} ngx_http_sk_staple_group_t;


typedef struct {
    ngx_array_t               srcs;           /* ngx_http_sk_src_t * */
    ngx_array_t               staples;        /* ngx_http_sk_staple_t * */
    ngx_array_t               trusts;         /* ngx_http_sk_trust_t */
    void                     *thread_pool;    /* ngx_thread_pool_t * */
    ngx_array_t               expiry;         /* ngx_http_sk_expiry_t,
                                                 sorted by name at
                                                 postconfiguration */
    ngx_uint_t                metrics_on;     /* sovereign_key_metrics */
    ngx_uint_t                metrics_slots;  /* its zone's counters */
    ngx_shm_zone_t           *metrics;        /* its zone, made at
                                                 postconfiguration */
    ngx_array_t               labels;         /* ngx_http_sk_label_t *,
                                                 distinct */
    ngx_array_t               names;          /* ngx_http_sk_staple_ref_t,
                                                 sorted by name */
    ngx_array_t               groups;         /* ..._staple_group_t */
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

/* The names of st, for /metrics: how many; the k-th and, at now, the
 * oldest checkpoint of the newest answer it held for it (0: never one,
 * also once dropped) and whether it is served now (last, served: NULL,
 * not asked). */
ngx_uint_t ngx_http_sk_staple_nnames(ngx_http_sk_staple_t *st);
const char *ngx_http_sk_staple_name(ngx_http_sk_staple_t *st, ngx_uint_t k,
    time_t now, time_t *last, ngx_uint_t *served);

/* Whether st is stapled after the chain now (each full handshake sends
 * it). */
ngx_uint_t ngx_http_sk_staple_in_chain(ngx_http_sk_staple_t *st);

/* A carrier attached after the chain of certificate x: its name and end
 * for the expiry gauge, and x marked for the handshake count. */
ngx_int_t ngx_http_sk_metrics_carrier(ngx_conf_t *cf,
    ngx_http_sk_main_conf_t *mcf, X509 *x, const char *name,
    time_t not_after);
/* Postconfiguration, after every server: labels, the zone (tag: the
 * module), the handshake watch on every TLS server; ctx_index: the
 * module's, to find each server's configuration. */
ngx_int_t ngx_http_sk_metrics_register(ngx_conf_t *cf, ngx_uint_t ctx_index,
    void *tag);
ngx_int_t ngx_http_sk_metrics_handler(ngx_http_request_t *r,
    ngx_http_sk_main_conf_t *mcf);

/* ngx_http_sk_counters.c: add one to a label's counter m (l, or its
 * counters, NULL: nothing). */
void ngx_http_sk_count(ngx_http_sk_label_t *l, ngx_uint_t m);

/* ngx_http_sk_metrics.c: the whole answer, b, with its Content-Type. */
ngx_int_t ngx_http_sk_send(ngx_http_request_t *r, ngx_buf_t *b,
    const char *type);

/* ngx_http_sk_staple.c: s as a JSON string ("null" for NULL). */
u_char *ngx_http_sk_json_str(u_char *p, u_char *last, const char *s);


#endif /* _NGX_HTTP_SK_H_INCLUDED_ */
