/*
 * tl_publish.c -- what the timeline signs about itself: the Timeline
 * Freshness Message (canonical form, like an entry) and the C2SP
 * checkpoint.  /status and the checkpoint describe the durable tree; the
 * TFM closing a chunk describes the tree that ends with the chunk.
 *
 *   Timeline-Freshness: 1
 *   Max-Published-SN: ...        (newest SN in a chunk; N/A: none)
 *   Max-Published-Timestamp: ...
 *   Max-SN: ...
 *   Max-Timestamp: ...
 *   Root-Hash: <base64url>
 *   Signature: <base64url, over this text with Signature: N/A>
 *   TID: ...
 *   Timestamp: <now>
 *   Tree-Size: ...               (Root-Hash is of this many entries)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl.h"

#define TL_TFM_MAX  1024


/* The durable size (or size, if not UINT64_MAX), its root and timestamps
 * of the newest and of the newest published entry, read under the lock. */
typedef struct {
    uint64_t          size, published, max_sn;
    int64_t           max_ts, pub_ts;
    sk_merkle_hash_t  root;
} tl_head_t;


/* Under tl->lock: entry sn's stamp, read from the entry (checked), not
 * from the index's row. */
static int
tl_publish_ts(tl_timeline_t *tl, uint64_t sn, int64_t *ts, sk_err_t *err)
{
    sk_entry_t  *e = NULL;
    size_t       len;
    char        *text;
    int          rc;

    if (sn >= tl->size) {
        return sk_err_set(err, SK_ERR_USAGE, "SN %" PRIu64 " past the log",
            sn);
    }
    if (sn >= tl->indexed) {
        *ts = tl->pend[sn - tl->indexed].ts;
        return 0;
    }
    /* The row's stamp is not covered by the leaf hash: the entry's is. */
    if (tl_store_read_locked(tl, &text, &len, sn, err) != 0) {
        return -1;
    }
    rc = sk_entry_parse(&e, text, len, err) != 0 ? -1
        : sk_entry_timestamp(e, ts, err);
    sk_entry_free(e);
    free(text);
    return rc;
}


static int
tl_publish_head(tl_timeline_t *tl, tl_head_t *h, uint64_t size,
    sk_err_t *err)
{
    int  rc;

    pthread_mutex_lock(&tl->lock);
    h->max_sn = tl->durable;
    h->size = size == UINT64_MAX ? tl->durable : size;
    h->max_ts = h->pub_ts = 0;
    rc = (h->max_sn > 0 && tl_publish_ts(tl, h->max_sn - 1, &h->max_ts, err)
            != 0)
         || (h->published > 0
             && tl_publish_ts(tl, h->published - 1, &h->pub_ts, err) != 0)
         ? -1 : sk_merkle_tree_root(h->root, tl->tree, h->size, err);
    pthread_mutex_unlock(&tl->lock);
    return rc;
}


/* "N/A" for count 0, else count - 1 (an SN) or the timestamp. */
static void
tl_publish_sn(char sn[24], char ts[24], uint64_t count, int64_t t)
{
    if (count > 0) {
        snprintf(sn, 24, "%" PRIu64, count - 1);
        snprintf(ts, 24, "%" PRId64, t);
    } else {
        strcpy(sn, SK_NA);
        strcpy(ts, SK_NA);
    }
}


static int
tl_publish_tfm_text(char *buf, size_t cap, const tl_timeline_t *tl,
    const tl_head_t *h, const char *root, int64_t now, const char *sig)
{
    char  psn[24], pts[24], sn[24], ts[24];

    tl_publish_sn(psn, pts, h->published, h->pub_ts);
    tl_publish_sn(sn, ts, h->max_sn, h->max_ts);
    return snprintf(buf, cap, "Timeline-Freshness: 1\n"
        "Max-Published-SN: %s\nMax-Published-Timestamp: %s\n"
        "Max-SN: %s\nMax-Timestamp: %s\nRoot-Hash: %s\nSignature: %s\n"
        "TID: %" PRIu64 "\nTimestamp: %" PRId64 "\nTree-Size: %" PRIu64
        "\n\n", psn, pts, sn, ts, root, sig, tl->conf.tid, now, h->size);
}


int
tl_publish_tfm_at(tl_timeline_t *tl, char **out, size_t *len, uint64_t size,
    uint64_t published, sk_err_t *err)
{
    unsigned char  *sig;
    char            rootb[64], *sigb, buf[TL_TFM_MAX];
    tl_head_t       h;
    int64_t         now = tl_now(tl);
    size_t          siglen;
    int             n;

    h.published = published;
    if (tl_publish_head(tl, &h, size, err) != 0) {
        return -1;
    }
    sk_b64_encode(rootb, h.root, sizeof(h.root));
    n = tl_publish_tfm_text(buf, sizeof(buf), tl, &h, rootb, now, SK_NA);
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
    *len = (size_t) tl_publish_tfm_text(*out, TL_TFM_MAX, tl, &h, rootb, now,
        sigb);
    free(sigb);
    return 0;
}


int
tl_publish_tfm(tl_timeline_t *tl, char **out, size_t *len,
    uint64_t published, sk_err_t *err)
{
    return tl_publish_tfm_at(tl, out, len, UINT64_MAX, published, err);
}


int
tl_publish_checkpoint(tl_timeline_t *tl, char **out, size_t *len,
    sk_err_t *err)
{
    sk_checkpoint_t  cp;
    tl_head_t        h;

    memset(&cp, 0, sizeof(cp));
    h.published = 0;
    if (tl_publish_head(tl, &h, UINT64_MAX, err) != 0) {
        return -1;
    }
    cp.size = h.size;
    memcpy(cp.root, h.root, sizeof(cp.root));
    snprintf(cp.origin, sizeof(cp.origin), "%s", tl->conf.origin);
    snprintf(cp.ext, sizeof(cp.ext), "Timestamp %" PRId64 "\n", tl_now(tl));
    return sk_checkpoint_format(out, len, &cp, tl->conf.origin, tl->key,
        err);
}
