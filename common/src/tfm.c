/*
 * tfm.c -- strict parser and signature check of Timeline Freshness
 * Messages (sk/tfm.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sk/b64.h"
#include "sk/tfm.h"

static const char  *sk_tfm_fields[] = {
    "Max-Published-SN", "Max-Published-Timestamp", "Max-SN",
    "Max-Timestamp", "Root-Hash", "Signature", "TID", "Timestamp",
    "Tree-Size"
};

#define SK_TFM_NFIELDS  (sizeof(sk_tfm_fields) / sizeof(sk_tfm_fields[0]))


/* Decimal without leading zeros, at most max; "N/A" gives *na = 1. */
static int
sk_tfm_uint(uint64_t *out, int *na, const char *v, size_t len, uint64_t max)
{
    uint64_t  n = 0;
    size_t    i;

    if (na != NULL) {
        *na = 0;
        if (len == 3 && memcmp(v, "N/A", 3) == 0) {
            *na = 1;
            *out = 0;
            return 0;
        }
    }
    if (len == 0 || len > 20 || (len > 1 && v[0] == '0')) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9'
            || n > (max - (uint64_t) (v[i] - '0')) / 10)
        {
            return -1;
        }
        n = n * 10 + (uint64_t) (v[i] - '0');
    }
    *out = n;
    return 0;
}


static int
sk_tfm_field(sk_tfm_t *tfm, size_t i, const char *v, size_t len,
    const char *base, int *na_pub, int *na_max, sk_err_t *err)
{
    unsigned char  *raw;
    uint64_t        u;
    size_t          rawlen;
    int             na;

    switch (i) {
    case 0: case 1: case 2: case 3:
        if (sk_tfm_uint(&u, &na, v, len, i % 2 ? INT64_MAX : UINT64_MAX)
            != 0)
        {
            break;
        }
        if (i == 0) {
            tfm->max_published_sn = u;
            *na_pub = na;
        } else if (i == 1) {
            tfm->max_published_ts = (int64_t) u;
            if (na != *na_pub) {
                break;
            }
        } else if (i == 2) {
            tfm->max_sn = u;
            *na_max = na;
        } else {
            tfm->max_ts = (int64_t) u;
            if (na != *na_max) {
                break;
            }
        }
        return 0;
    case 4:
        if (sk_b64_decode(&raw, &rawlen, v, len, NULL) != 0) {
            break;
        }
        if (rawlen != sizeof(tfm->root)) {
            free(raw);
            break;
        }
        memcpy(tfm->root, raw, rawlen);
        free(raw);
        return 0;
    case 5:
        if (sk_b64_decode(&raw, &rawlen, v, len, NULL) != 0) {
            break;
        }
        free(raw);
        tfm->sig_off = (size_t) (v - base);
        tfm->sig_len = len;
        return 0;
    case 6:
        if (sk_tfm_uint(&tfm->tid, NULL, v, len, UINT64_MAX) != 0) {
            break;
        }
        return 0;
    case 7:
        if (sk_tfm_uint(&u, NULL, v, len, INT64_MAX) != 0) {
            break;
        }
        tfm->timestamp = (int64_t) u;
        return 0;
    case 8:
        if (sk_tfm_uint(&tfm->tree_size, NULL, v, len, UINT64_MAX) != 0) {
            break;
        }
        return 0;
    }
    return sk_err_set(err, SK_ERR_FORMAT, "tfm: line %zu: field \"%s\": "
        "bad value", i + 2, sk_tfm_fields[i]);
}


int
sk_tfm_parse(sk_tfm_t *tfm, size_t *used, const char *buf, size_t len,
    sk_err_t *err)
{
    const char  *p, *end, *nl, *colon;
    size_t       i, hl = sizeof(SK_TFM_HEADER) - 1, fl;
    int          na_pub = 0, na_max = 0;

    memset(tfm, 0, sizeof(*tfm));
    if (len < hl || memcmp(buf, SK_TFM_HEADER, hl) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "tfm: line 1: want \"Timeline-Freshness: 1\"");
    }
    p = buf + hl;
    end = buf + (len < SK_TFM_MAX ? len : SK_TFM_MAX);
    for (i = 0; i < SK_TFM_NFIELDS; i++) {
        nl = memchr(p, '\n', (size_t) (end - p));
        fl = strlen(sk_tfm_fields[i]);
        if (nl == NULL) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "tfm: line %zu: truncated", i + 2);
        }
        colon = p + fl;
        if ((size_t) (nl - p) < fl + 2
            || memcmp(p, sk_tfm_fields[i], fl) != 0
            || colon[0] != ':' || colon[1] != ' ')
        {
            return sk_err_set(err, SK_ERR_FORMAT,
                "tfm: line %zu: want field \"%s\"", i + 2, sk_tfm_fields[i]);
        }
        if (sk_tfm_field(tfm, i, colon + 2, (size_t) (nl - colon - 2), buf,
                &na_pub, &na_max, err) != 0)
        {
            return -1;
        }
        p = nl + 1;
    }
    if (p >= end || *p != '\n') {
        return sk_err_set(err, SK_ERR_FORMAT,
            "tfm: line %zu: want the blank line that ends it", i + 2);
    }
    tfm->has_published = !na_pub;
    tfm->has_max = !na_max;
    if (used != NULL) {
        *used = (size_t) (p + 1 - buf);
    } else if ((size_t) (p + 1 - buf) != len) {
        return sk_err_set(err, SK_ERR_FORMAT, "tfm: bytes after its end");
    }
    return 0;
}


int
sk_tfm_verify(sk_tfm_t *tfm, size_t *used, const char *buf, size_t len,
    const sk_key_t *key, sk_err_t *err)
{
    unsigned char  *sig;
    size_t          n, siglen, slen;
    char           *msg;
    int             rc;

    if (sk_tfm_parse(tfm, &n, buf, len, err) != 0) {
        return -1;
    }
    if (used == NULL && n != len) {
        return sk_err_set(err, SK_ERR_FORMAT, "tfm: bytes after its end");
    }
    if (sk_b64_decode(&sig, &siglen, buf + tfm->sig_off, tfm->sig_len, err)
        != 0)
    {
        return -1;
    }
    /* The signed text: the same with "N/A" as the Signature value. */
    slen = n - tfm->sig_len + 3;
    msg = malloc(slen);
    if (msg == NULL) {
        free(sig);
        return sk_err_set(err, SK_ERR_NOMEM, "tfm");
    }
    memcpy(msg, buf, tfm->sig_off);
    memcpy(msg + tfm->sig_off, "N/A", 3);
    memcpy(msg + tfm->sig_off + 3, buf + tfm->sig_off + tfm->sig_len,
        n - tfm->sig_off - tfm->sig_len);
    rc = sk_key_verify(key, sig, siglen, (unsigned char *) msg, slen, err);
    free(msg);
    free(sig);
    if (rc != 0) {
        return sk_err_prefix(err, "tfm: Signature");
    }
    if (used != NULL) {
        *used = n;
    }
    return 0;
}
