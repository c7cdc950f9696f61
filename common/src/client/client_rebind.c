/*
 * client_rebind.c -- the rebinder lookup for combining: a Rebind counts
 * only with a Rebinder-Signature by the SK in force for its
 * Rebinder-Name, which the client learns like any other name's.
 */
#include <string.h>

#include <sk/client.h>


int
sk_client_rebinder_key(sk_key_t **key, const char *rebinder, void *arg,
    sk_err_t *err)
{
    const sk_client_ctx_t  *ctx = arg;
    sk_client_ctx_t         inner;
    sk_client_result_t      res;
    sk_record_t             rec;
    int                     rc;

    *key = NULL;
    if (ctx->depth >= SK_CLIENT_REBIND_DEPTH) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "%s: rebinders nest more "
            "than %d deep", rebinder, SK_CLIENT_REBIND_DEPTH);
    }
    if (sk_client_lookup_ctx(&res, rebinder, ctx, err) != 0) {
        return -1;
    }
    inner = *ctx;
    inner.depth++;
    rc = sk_client_view_record(&rec, &res.view, sk_client_rebinder_key,
        &inner, err);
    if (rc == 0) {
        if (res.outcome == SK_FRESH_CLOSED) {
            /* Not known to have no SK, nor which SK is in force now: the
             * Rebind may count or not, so the name is neither unbound
             * nor rebound (fails closed, not "none", never "accept"). */
            rc = sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: rebinder of a "
                "Rebind: no mirror gave a fresh enough answer (%zu of %zu "
                "timelines fresh)", rebinder, res.fresh.fresh,
                res.fresh.ntl);
        } else if (rec.state != SK_RECORD_BOUND) {
            rc = sk_err_set(err, SK_ERR_NOT_FOUND, "%s: no SK in force",
                rebinder);
        } else {
            rc = sk_key_from_pkey(key, sk_key_get0_pkey(rec.key), err);
        }
        sk_record_free(&rec);
    }
    sk_client_result_free(&res);
    return rc;
}
