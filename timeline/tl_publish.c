/*
 * tl_publish.c -- what the timeline signs about itself: the Timeline
 * Freshness Message (canonical form, like an entry) and the C2SP
 * checkpoint, both of the durable tree only.
 *
 *   Timeline-Freshness: 1
 *   Max-Published-SN: ...        (N/A while the log is empty)
 *   Max-Published-Timestamp: ...
 *   Max-SN: ...
 *   Max-Timestamp: ...
 *   Root-Hash: <base64url>
 *   Signature: <base64url, over this text with Signature: N/A>
 *   TID: ...
 *   Timestamp: <now>
 *   Tree-Size: ...
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl.h"

#define TL_TFM_MAX  1024


/* Durable size, its root and newest timestamp, read under the lock. */
static int
tl_publish_head(tl_timeline_t *tl, uint64_t *size, sk_merkle_hash_t root,
    int64_t *last, sk_err_t *err)
{
    int  rc;

    pthread_mutex_lock(&tl->lock);
    *size = tl->durable;
    *last = *size > 0 ? tl->ts[*size - 1] : 0;
    rc = sk_merkle_tree_root(root, tl->tree, *size, err);
    pthread_mutex_unlock(&tl->lock);
    return rc;
}


static int
tl_publish_tfm_text(char *buf, size_t cap, const tl_timeline_t *tl,
    uint64_t size, const char *root, int64_t last, int64_t now,
    const char *sig)
{
    char  sn[24], ts[24];

    if (size > 0) {
        snprintf(sn, sizeof(sn), "%" PRIu64, size - 1);
        snprintf(ts, sizeof(ts), "%" PRId64, last);
    } else {
        strcpy(sn, SK_NA);
        strcpy(ts, SK_NA);
    }
    return snprintf(buf, cap, "Timeline-Freshness: 1\n"
        "Max-Published-SN: %s\nMax-Published-Timestamp: %s\n"
        "Max-SN: %s\nMax-Timestamp: %s\nRoot-Hash: %s\nSignature: %s\n"
        "TID: %" PRIu64 "\nTimestamp: %" PRId64 "\nTree-Size: %" PRIu64
        "\n\n", sn, ts, sn, ts, root, sig, tl->conf.tid, now, size);
}


int
tl_publish_tfm(tl_timeline_t *tl, char **out, size_t *len, sk_err_t *err)
{
    sk_merkle_hash_t   root;
    unsigned char     *sig;
    char               rootb[64], *sigb, buf[TL_TFM_MAX];
    uint64_t           size;
    int64_t            last, now = tl_now(tl);
    size_t             siglen;
    int                n;

    if (tl_publish_head(tl, &size, root, &last, err) != 0) {
        return -1;
    }
    sk_b64_encode(rootb, root, sizeof(root));
    n = tl_publish_tfm_text(buf, sizeof(buf), tl, size, rootb, last, now,
        SK_NA);
    if (sk_key_sign(&sig, &siglen, tl->key, (unsigned char *) buf,
            (size_t) n, err) != 0)
    {
        return -1;
    }
    sigb = sk_b64_encode_alloc(sig, siglen);
    free(sig);
    *out = malloc(TL_TFM_MAX);
    if (sigb == NULL || *out == NULL) {
        free(sigb);
        free(*out);
        return sk_err_set(err, SK_ERR_NOMEM, "tfm");
    }
    *len = (size_t) tl_publish_tfm_text(*out, TL_TFM_MAX, tl, size, rootb,
        last, now, sigb);
    free(sigb);
    return 0;
}


int
tl_publish_checkpoint(tl_timeline_t *tl, char **out, size_t *len,
    sk_err_t *err)
{
    sk_checkpoint_t  cp;
    int64_t          last;

    memset(&cp, 0, sizeof(cp));
    if (tl_publish_head(tl, &cp.size, cp.root, &last, err) != 0) {
        return -1;
    }
    snprintf(cp.origin, sizeof(cp.origin), "%s", tl->conf.origin);
    snprintf(cp.ext, sizeof(cp.ext), "Timestamp %" PRId64 "\n", tl_now(tl));
    return sk_checkpoint_format(out, len, &cp, tl->conf.origin, tl->key,
        err);
}
