/*
 * client_view_text.c -- a view as text, for the client's cache:
 *
 *   SK-Client-View: 1\n
 *   Name: <name>\n
 *   Checkpoint: <tid> <bytes>\n<the signed note>      one per timeline
 *   Last-Entry: <bytes> <hashes>\n<its last entry><proof>[<map proof>]
 *   Entry: <bytes> <hashes>\n<canonical entry><proof>  one per entry
 *   End\n
 *
 * The proof is <hashes> lines of standard base64 (sk_merkle_proof_format);
 * the map proof is as in a mirror answer (sk_map_proof_format), after
 * the last entry of a checkpoint when that is a Map-Root entry.
 * Lengths are decimal byte counts; nothing may follow "End\n".  Parsing
 * only builds the view: sk_client_view_verify checks it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/client.h>

#include "client_int.h"

#define SK_VIEW_MAGIC  "SK-Client-View: 1\n"


/* "Last-Entry: <bytes> <hashes>", the entry, its proof, its map proof. */
static int
sk_view_format_last(sk_cl_buf_t *b, const sk_client_cp_t *cp, sk_err_t *err)
{
    char    line[64], *proof, *mproof = NULL;
    size_t  plen, mlen = 0;

    if (cp->last == NULL) {
        return 0;
    }
    if (sk_merkle_proof_format(&proof, &plen, &cp->last_proof, err) != 0) {
        return -1;
    }
    if (cp->mproof != NULL
        && sk_map_proof_format(&mproof, &mlen, cp->mproof, err) != 0)
    {
        free(proof);
        return -1;
    }
    snprintf(line, sizeof(line), "Last-Entry: %zu %zu\n", cp->lastlen,
        cp->last_proof.len);
    sk_cl_buf_add(b, line, strlen(line));
    sk_cl_buf_add(b, cp->last, cp->lastlen);
    sk_cl_buf_add(b, proof, plen);
    if (mproof != NULL) {
        sk_cl_buf_add(b, mproof, mlen);
    }
    free(proof);
    free(mproof);
    return 0;
}


int
sk_client_view_format(char **out, size_t *len, const sk_client_view_t *v,
    sk_err_t *err)
{
    sk_cl_buf_t  b = { NULL, 0, 0, 0 };
    char       line[SK_NAME_MAX + 64], *proof;
    size_t     i, plen;

    sk_cl_buf_add(&b, SK_VIEW_MAGIC, strlen(SK_VIEW_MAGIC));
    snprintf(line, sizeof(line), "Name: %s\n", v->name);
    sk_cl_buf_add(&b, line, strlen(line));
    for (i = 0; i < v->ncps; i++) {
        snprintf(line, sizeof(line), "Checkpoint: %" PRIu64 " %zu\n",
            v->cps[i].tid, v->cps[i].notelen);
        sk_cl_buf_add(&b, line, strlen(line));
        sk_cl_buf_add(&b, v->cps[i].note, v->cps[i].notelen);
        if (sk_view_format_last(&b, &v->cps[i], err) != 0) {
            free(b.p);
            return -1;
        }
    }
    for (i = 0; i < v->nitems; i++) {
        if (sk_merkle_proof_format(&proof, &plen, &v->items[i].proof, err)
            != 0)
        {
            free(b.p);
            return -1;
        }
        snprintf(line, sizeof(line), "Entry: %zu %zu\n", v->items[i].len,
            v->items[i].proof.len);
        sk_cl_buf_add(&b, line, strlen(line));
        sk_cl_buf_add(&b, v->items[i].text, v->items[i].len);
        sk_cl_buf_add(&b, proof, plen);
        free(proof);
    }
    sk_cl_buf_add(&b, "End\n", 4);
    if (b.failed) {
        free(b.p);
        return sk_err_set(err, SK_ERR_NOMEM, "view text");
    }
    *out = b.p;
    *len = b.len;
    return 0;
}


/* After a "<what>: <bytes> <hashes>" line (val): the entry and its
 * proof lines at *p. */
static int
sk_view_parse_proven(const char **text, size_t *len, sk_merkle_proof_t *proof,
    const char **p, const char *end, const char *val, const char *what,
    sk_err_t *err)
{
    uint64_t  a, b;

    if (sk_cl_nums(val, &a, &b) != 0 || a > SK_ENTRY_MAX
        || b > SK_MERKLE_PROOF_MAX || a > (uint64_t) (end - *p)
        || b * SK_CL_HASH_LINE > (uint64_t) (end - *p) - a)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "bad %s line", what);
    }
    if (sk_merkle_proof_parse(proof, *p + a, (size_t) b * SK_CL_HASH_LINE,
            err) != 0 || proof->len != b)
    {
        return -1;
    }
    *text = *p;
    *len = (size_t) a;
    *p += a + b * SK_CL_HASH_LINE;
    return 0;
}


/* A checkpoint's last entry and, if a "Map-Proof: " follows, its map
 * proof. */
static int
sk_view_parse_last(sk_client_view_t *v, uint64_t tid, const char **p,
    const char *end, const char *val, sk_err_t *err)
{
    static const char   mprefix[] = "Map-Proof: ";
    sk_merkle_proof_t   proof;
    sk_map_proof_t     *mp = NULL;
    const char         *text;
    size_t              len, used;
    int                 rc;

    if (sk_view_parse_proven(&text, &len, &proof, p, end, val, "Last-Entry",
            err) != 0)
    {
        return -1;
    }
    if ((size_t) (end - *p) >= sizeof(mprefix) - 1
        && memcmp(*p, mprefix, sizeof(mprefix) - 1) == 0)
    {
        mp = malloc(sizeof(*mp));
        if (mp == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "map proof");
        }
        if (sk_map_proof_parse(mp, &used, *p, (size_t) (end - *p), err)
            != 0)
        {
            free(mp);
            return -1;
        }
        *p += used;
    }
    rc = sk_client_view_set_last(v, tid, text, len, &proof, mp, err);
    free(mp);
    return rc;
}


static int
sk_view_parse_body(sk_client_view_t *v, const char *p, const char *end,
    sk_err_t *err)
{
    sk_merkle_proof_t  proof;
    const char        *text;
    uint64_t           a, b, cp_tid = UINT64_MAX;
    char               val[SK_NAME_MAX + 2];
    size_t             k = 0, len;

    for (;;) {
        k++;
        if ((size_t) (end - p) == 4 && memcmp(p, "End\n", 4) == 0) {
            return 0;
        }
        if (sk_cl_line(&p, end, "Checkpoint: ", val, sizeof(val)) == 0) {
            if (sk_cl_nums(val, &a, &b) != 0 || b > SK_CHECKPOINT_MAX
                || b > (uint64_t) (end - p))
            {
                return sk_err_set(err, SK_ERR_FORMAT, "part %zu: bad "
                    "Checkpoint line", k);
            }
            if (sk_client_view_cp(v, a) != NULL) {
                return sk_err_set(err, SK_ERR_FORMAT, "part %zu: a second "
                    "checkpoint of timeline %" PRIu64, k, a);
            }
            if (sk_client_view_add_cp(v, a, p, (size_t) b, err) != 0) {
                return -1;
            }
            p += b;
            cp_tid = a;
            continue;
        }
        /* A last entry belongs to the checkpoint just before it. */
        if (cp_tid != UINT64_MAX
            && sk_cl_line(&p, end, "Last-Entry: ", val, sizeof(val)) == 0)
        {
            if (sk_view_parse_last(v, cp_tid, &p, end, val, err) != 0) {
                return sk_err_prefix(err, "part %zu", k);
            }
            cp_tid = UINT64_MAX;
            continue;
        }
        cp_tid = UINT64_MAX;
        if (sk_cl_line(&p, end, "Entry: ", val, sizeof(val)) == 0) {
            if (sk_view_parse_proven(&text, &len, &proof, &p, end, val,
                    "Entry", err) != 0
                || sk_client_view_add_item(v, text, len, &proof, err) != 0)
            {
                return sk_err_prefix(err, "part %zu", k);
            }
            continue;
        }
        return sk_err_set(err, SK_ERR_FORMAT, "part %zu: want Checkpoint, "
            "Last-Entry, Entry or End", k);
    }
}


int
sk_client_view_parse(sk_client_view_t *v, const char *buf, size_t len,
    sk_err_t *err)
{
    const char  *p = buf, *end = buf + len;
    size_t       mlen = strlen(SK_VIEW_MAGIC);

    memset(v, 0, sizeof(*v));
    if (len < mlen || memcmp(buf, SK_VIEW_MAGIC, mlen) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "not a client view (want "
            "\"SK-Client-View: 1\")");
    }
    p += mlen;
    if (sk_cl_line(&p, end, "Name: ", v->name, sizeof(v->name)) != 0
        || sk_name_check(v->name, strlen(v->name), NULL) != 0)
    {
        memset(v, 0, sizeof(*v));
        return sk_err_set(err, SK_ERR_FORMAT, "view: bad Name line");
    }
    if (sk_view_parse_body(v, p, end, err) != 0) {
        sk_client_view_free(v);
        return -1;
    }
    return 0;
}
