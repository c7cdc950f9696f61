
/*
 * ngx_http_sk_counters.c -- the counters of /metrics, in the shared zone
 * ngx_http_sk_metrics.c makes: counted where they happen (the staple, the
 * handshake watch), under both.
 */


#include "ngx_http_sk.h"


ngx_http_sk_metrics_shm_t  *ngx_http_sk_metrics_shm;


void
ngx_http_sk_metric_inc(ngx_http_sk_metric_e m)
{
    if (ngx_http_sk_metrics_shm != NULL) {
        (void) ngx_atomic_fetch_add(&ngx_http_sk_metrics_shm->count[m], 1);
    }
}
