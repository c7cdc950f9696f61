/*
 * mr_prefix.c -- the signed head of a first sync committed in steps.
 *
 * Entry bundles carry no signed head, so a sync through tiles could
 * otherwise commit only once the whole gap up to the checkpoint is held
 * (20 million entries on a first sync).  Instead every tiles_commit
 * entries the round asks the timeline for a consistency proof from the
 * copy's new size k to the checkpoint's size N; once the copy's root at
 * k and that proof lead to the checkpoint's signed root, the first k
 * entries are the prefix of a tree the timeline signed, as sure as if a
 * TFM of size k closed them, and are committed.  The head is kept in
 * tl-<tid>/prefix so a restart accepts them as it accepts a TFM's:
 *
 *   <k>\n
 *   <consistency proof from k to N: a base64 hash a line>
 *   \n
 *   <the checkpoint of size N, as signed>
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mr.h"


int
mr_prefix_format(char **out, size_t *len, uint64_t size,
    const sk_merkle_proof_t *proof, const char *cp, size_t cplen,
    sk_err_t *err)
{
    char    *p, *text, head[32];
    size_t   plen;
    int      hlen;

    if (sk_merkle_proof_format(&p, &plen, proof, err) != 0) {
        return -1;
    }
    hlen = snprintf(head, sizeof(head), "%" PRIu64 "\n", size);
    *len = (size_t) hlen + plen + 1 + cplen;
    text = malloc(*len + 1);
    if (text == NULL) {
        free(p);
        return sk_err_set(err, SK_ERR_NOMEM, "prefix");
    }
    memcpy(text, head, (size_t) hlen);
    memcpy(text + hlen, p, plen);
    text[hlen + plen] = '\n';
    memcpy(text + hlen + plen + 1, cp, cplen);
    text[*len] = '\0';
    free(p);
    *out = text;
    return 0;
}


int
mr_prefix_parse(mr_prefix_t *pf, const mr_tl_t *t, const char *text,
    size_t len, sk_err_t *err)
{
    const char  *nl, *end = text + len, *blank;
    uint64_t     size = 0;
    const char  *p;

    memset(pf, 0, sizeof(*pf));
    nl = memchr(text, '\n', len);
    if (nl == NULL || nl == text || nl - text > 20) {
        return sk_err_set(err, SK_ERR_FORMAT, "prefix: line 1: want the "
            "size, a decimal number");
    }
    for (p = text; p < nl; p++) {
        if (*p < '0' || *p > '9' || (p == text && *p == '0')
            || size > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "prefix: line 1: want "
                "the size, a decimal number above 0");
        }
        size = size * 10 + (uint64_t) (*p - '0');
    }
    /* The proof ends at the first empty line. */
    for (blank = nl + 1; blank < end && *blank != '\n';) {
        p = memchr(blank, '\n', (size_t) (end - blank));
        if (p == NULL) {
            break;
        }
        blank = p + 1;
    }
    if (blank >= end || *blank != '\n') {
        return sk_err_set(err, SK_ERR_FORMAT, "prefix: no empty line after "
            "the proof");
    }
    if (sk_merkle_proof_parse(&pf->proof, nl + 1,
            (size_t) (blank - (nl + 1)), err) != 0)
    {
        return sk_err_prefix(err, "prefix: proof");
    }
    if (sk_checkpoint_verify(&pf->cpv, blank + 1, (size_t) (end - blank - 1),
            t->conf->origin, t->key, err) != 0)
    {
        return sk_err_prefix(err, "prefix: checkpoint");
    }
    if (size > pf->cpv.size) {
        return sk_err_set(err, SK_ERR_FORMAT, "prefix: size %" PRIu64 " past "
            "the checkpoint's %" PRIu64, size, pf->cpv.size);
    }
    pf->size = size;
    return 0;
}


int
mr_prefix_check(const mr_prefix_t *pf, const sk_merkle_hash_t root,
    sk_err_t *err)
{
    if (sk_merkle_verify_consistency(pf->size, pf->cpv.size, root,
            pf->cpv.root, &pf->proof, err) != 0)
    {
        return sk_err_prefix(err, "the first %" PRIu64 " entries are not a "
            "prefix of the checkpoint of size %" PRIu64, pf->size,
            pf->cpv.size);
    }
    return 0;
}
