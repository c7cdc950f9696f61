/*
 * sk/tfm.h -- the Timeline Freshness Message, as sk-timeline serves it on
 * /status and at the end of every chunk (docs/timeline.md):
 *
 *   Timeline-Freshness: 1\n
 *   Max-Published-SN: <sn or N/A>\n
 *   Max-Published-Timestamp: <t or N/A>\n
 *   Max-SN: <sn or N/A>\n
 *   Max-Timestamp: <t or N/A>\n
 *   Root-Hash: <base64url of 32 bytes>\n
 *   Signature: <base64url>\n      timeline key, over the text with N/A here
 *   TID: <tid>\n
 *   Timestamp: <t>\n
 *   Tree-Size: <n>\n
 *   \n
 *
 * Fields exactly in this order, each once; integers as in entries.
 */
#ifndef SK_TFM_H
#define SK_TFM_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "key.h"
#include "merkle.h"

#define SK_TFM_HEADER  "Timeline-Freshness: 1\n"
#define SK_TFM_MAX     1024

typedef struct {
    int               has_published;    /* 0: Max-Published-* are N/A */
    uint64_t          max_published_sn;
    int64_t           max_published_ts;
    int               has_max;          /* 0: Max-SN, Max-Timestamp N/A */
    uint64_t          max_sn;
    int64_t           max_ts;
    sk_merkle_hash_t  root;
    uint64_t          tid;
    int64_t           timestamp;
    uint64_t          tree_size;
    size_t            sig_off, sig_len; /* Signature value in the text */
} sk_tfm_t;

/* Parse the TFM at the start of buf; *used (may be NULL) is its length.
 * SK_ERR_FORMAT naming the line and field. */
int sk_tfm_parse(sk_tfm_t *tfm, size_t *used, const char *buf, size_t len,
    sk_err_t *err) SK_WUR;

/* Parse, then check the Signature with the timeline's key. */
int sk_tfm_verify(sk_tfm_t *tfm, size_t *used, const char *buf, size_t len,
    const sk_key_t *key, sk_err_t *err) SK_WUR;

#endif
