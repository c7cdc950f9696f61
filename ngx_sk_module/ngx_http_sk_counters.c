
/*
 * ngx_http_sk_counters.c -- the counters of /metrics, in the shared zone
 * ngx_http_sk_metrics.c makes: counted where they happen (the staple, the
 * handshake watch), under both, into the slot of the server's label.
 */


#include "ngx_http_sk.h"


void
ngx_http_sk_count(ngx_http_sk_label_t *l, ngx_uint_t m)
{
    if (l != NULL && l->counters != NULL) {
        (void) ngx_atomic_fetch_add(&l->counters->count[m], 1);
    }
}
