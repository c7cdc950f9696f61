/*
 * mr_nonce.c -- the answer to a query with a nonce (docs/protocol.md,
 * "Nonces"): the answer as without one (a cached answer stays cached and
 * is not signed again) and its trailer, which signs the nonce with the
 * answer's digest.
 *
 * Each query is signed alone, in the thread that answers it.  Batches
 * (Roughtime's: one signature over a tree of the nonces that came in
 * together) were measured and lost on the bench machine: a suspended
 * connection resumed by a signer thread cost libmicrohttpd and the kernel
 * about as much as the signature it saved (docs/benchmarks.md,
 * mirror-query-nonce).  The trailer's format keeps batches open: a
 * client checks a batch of any size.
 */
#include <stdlib.h>
#include <string.h>

#include "mr.h"


int
mr_nonce_answer(mr_mirror_t *m, char **out, size_t *len,
    const unsigned char nonce[SK_NONCE_BYTES], sk_err_t *err)
{
    sk_nonce_item_t   item, *one = &item;
    char             *p;

    memcpy(item.nonce, nonce, SK_NONCE_BYTES);
    sk_nonce_leaf(item.leaf, nonce, *out, *len);
    if (sk_nonce_sign(&one, 1, m->key, err) != 0) {
        p = NULL;
        sk_err_prefix(err, "nonce");
    } else if ((p = realloc(*out, *len + item.len)) == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "nonce: answer");
    }
    if (p == NULL) {
        free(*out);
        *out = NULL;
        return -1;
    }
    memcpy(p + *len, item.trailer, item.len);
    *out = p;
    *len += item.len;
    return 0;
}
