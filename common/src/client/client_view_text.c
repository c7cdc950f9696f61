/*
 * client_view_text.c -- a view as text, for the client's cache:
 *
 *   SK-Client-View: 1\n
 *   Name: <name>\n
 *   Checkpoint: <tid> <bytes>\n<the signed note>      one per timeline
 *   Entry: <bytes> <hashes>\n<canonical entry><proof>  one per entry
 *   End\n
 *
 * The proof is <hashes> lines of standard base64 (sk_merkle_proof_format).
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


static int
sk_view_parse_body(sk_client_view_t *v, const char *p, const char *end,
    sk_err_t *err)
{
    sk_merkle_proof_t  proof;
    uint64_t           a, b;
    char               val[SK_NAME_MAX + 2];
    size_t             k = 0;

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
            continue;
        }
        if (sk_cl_line(&p, end, "Entry: ", val, sizeof(val)) == 0) {
            if (sk_cl_nums(val, &a, &b) != 0 || a > SK_ENTRY_MAX
                || b > SK_MERKLE_PROOF_MAX || a > (uint64_t) (end - p)
                || b * SK_CL_HASH_LINE > (uint64_t) (end - p) - a)
            {
                return sk_err_set(err, SK_ERR_FORMAT, "part %zu: bad Entry "
                    "line", k);
            }
            if (sk_merkle_proof_parse(&proof, p + a, (size_t) b
                    * SK_CL_HASH_LINE, err) != 0
                || proof.len != b
                || sk_client_view_add_item(v, p, (size_t) a, &proof, err)
                   != 0)
            {
                return sk_err_prefix(err, "part %zu", k);
            }
            p += a + b * SK_CL_HASH_LINE;
            continue;
        }
        return sk_err_set(err, SK_ERR_FORMAT, "part %zu: want Checkpoint, "
            "Entry or End", k);
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
