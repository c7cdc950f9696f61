/*
 * client_view.c -- a name's evidence as the client holds it: each
 * timeline's signed checkpoint, and each entry for the name with its
 * inclusion proof in that checkpoint's tree.  Building, checking, and
 * combining into the name's record.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/client.h>

#include "client_int.h"

#define SK_VIEW_FUTURE  3600    /* checkpoint clocks may run this far ahead */


static void
sk_view_cp_clear(sk_client_cp_t *cp)
{
    free(cp->note);
    free(cp->last);
    free(cp->mproof);
    cp->note = cp->last = NULL;
    cp->mproof = NULL;
}


int
sk_client_view_add_cp(sk_client_view_t *v, uint64_t tid, const char *note,
    size_t len, sk_err_t *err)
{
    sk_client_cp_t  *cps, *cp = NULL;
    char            *copy;
    size_t           i;

    if (len == 0 || len > SK_CHECKPOINT_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "timeline %" PRIu64
            ": checkpoint of %zu bytes", tid, len);
    }
    copy = malloc(len + 1);
    if (copy == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "checkpoint");
    }
    memcpy(copy, note, len);
    copy[len] = '\0';
    for (i = 0; i < v->ncps; i++) {
        if (v->cps[i].tid == tid) {
            cp = &v->cps[i];
            sk_view_cp_clear(cp);
        }
    }
    if (cp == NULL) {
        if (v->ncps == SK_CLIENT_MAX_TIMELINES) {
            free(copy);
            return sk_err_set(err, SK_ERR_FORMAT, "more than %d checkpoints",
                SK_CLIENT_MAX_TIMELINES);
        }
        cps = realloc(v->cps, (v->ncps + 1) * sizeof(*cps));
        if (cps == NULL) {
            free(copy);
            return sk_err_set(err, SK_ERR_NOMEM, "checkpoint");
        }
        v->cps = cps;
        cp = &v->cps[v->ncps++];
    }
    memset(cp, 0, sizeof(*cp));
    cp->tid = tid;
    cp->note = copy;
    cp->notelen = len;
    return 0;
}


int
sk_client_view_add_item(sk_client_view_t *v, const char *text, size_t len,
    const sk_merkle_proof_t *proof, sk_err_t *err)
{
    sk_client_item_t  *items, *it;
    sk_entry_t        *e;

    if (v->nitems == SK_CLIENT_MAX_ITEMS) {
        return sk_err_set(err, SK_ERR_FORMAT, "more than %d entries",
            SK_CLIENT_MAX_ITEMS);
    }
    if (sk_entry_parse(&e, text, len, err) != 0) {
        return sk_err_prefix(err, "entry %zu", v->nitems + 1);
    }
    items = realloc(v->items, (v->nitems + 1) * sizeof(*items));
    if (items == NULL) {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_NOMEM, "entry");
    }
    v->items = items;
    it = &v->items[v->nitems];
    memset(it, 0, sizeof(*it));
    it->text = malloc(len + 1);
    if (it->text == NULL) {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_NOMEM, "entry");
    }
    memcpy(it->text, text, len);
    it->text[len] = '\0';
    it->len = len;
    it->entry = e;
    it->proof = *proof;
    if (sk_entry_tid(e, &it->tid, NULL) != 0
        || sk_entry_sn(e, &it->sn, NULL) != 0)
    {
        it->tid = it->sn = UINT64_MAX;      /* verify says "not stamped" */
    }
    v->nitems++;
    return 0;
}


int
sk_client_view_set_last(sk_client_view_t *v, uint64_t tid, const char *text,
    size_t len, const sk_merkle_proof_t *proof, const sk_map_proof_t *mp,
    sk_err_t *err)
{
    sk_client_cp_t  *cp = (sk_client_cp_t *) sk_client_view_cp(v, tid);
    char            *copy;
    sk_map_proof_t  *mcopy = NULL;

    if (cp == NULL) {
        return sk_err_set(err, SK_ERR_USAGE, "timeline %" PRIu64 ": a last "
            "entry without a checkpoint", tid);
    }
    if (len == 0 || len > SK_ENTRY_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "timeline %" PRIu64 ": last "
            "entry of %zu bytes", tid, len);
    }
    copy = malloc(len + 1);
    if (copy == NULL || (mp != NULL
            && (mcopy = malloc(sizeof(*mcopy))) == NULL))
    {
        free(copy);
        return sk_err_set(err, SK_ERR_NOMEM, "last entry");
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    if (mp != NULL) {
        *mcopy = *mp;
    }
    free(cp->last);
    free(cp->mproof);
    cp->last = copy;
    cp->lastlen = len;
    cp->last_proof = *proof;
    cp->mproof = mcopy;
    cp->map = SK_CLIENT_MAP_UNMAPPED;
    return 0;
}


const char *
sk_client_map_name(sk_client_map_t m)
{
    switch (m) {
    case SK_CLIENT_MAP_ABSENT:  return "absent";
    case SK_CLIENT_MAP_PRESENT: return "present";
    default:
        break;
    }
    return "unmapped";
}


const sk_client_cp_t *
sk_client_view_cp(const sk_client_view_t *v, uint64_t tid)
{
    size_t  i;

    for (i = 0; i < v->ncps; i++) {
        if (v->cps[i].tid == tid) {
            return &v->cps[i];
        }
    }
    return NULL;
}


const sk_client_item_t *
sk_client_view_item(const sk_client_view_t *v, uint64_t tid, uint64_t sn)
{
    size_t  i;

    for (i = 0; i < v->nitems; i++) {
        if (v->items[i].tid == tid && v->items[i].sn == sn) {
            return &v->items[i];
        }
    }
    return NULL;
}


/* The "Timestamp <n>" extension line of a checkpoint. */
static int
sk_view_cp_ts(int64_t *ts, const sk_checkpoint_t *cp)
{
    const char  *p = cp->ext;
    char        *end;
    long long    v;

    while (*p != '\0') {
        if (strncmp(p, "Timestamp ", 10) == 0 && p[10] >= '0'
            && p[10] <= '9')
        {
            v = strtoll(p + 10, &end, 10);
            if (*end == '\n' && v >= 0) {
                *ts = v;
                return 0;
            }
        }
        p = strchr(p, '\n');
        if (p == NULL) {
            break;
        }
        p++;
    }
    return -1;
}


static int
sk_view_verify_cp(sk_client_cp_t *cp, const sk_client_trust_t *t,
    int64_t now, sk_err_t *err)
{
    const sk_client_timeline_t  *tl = sk_client_trust_find(t, cp->tid);

    if (tl == NULL) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "timeline %" PRIu64
            ": not a trusted timeline", cp->tid);
    }
    if (sk_checkpoint_verify(&cp->cp, cp->note, cp->notelen, tl->origin,
            tl->key, err) != 0)
    {
        return sk_err_prefix(err, "timeline %" PRIu64 ": checkpoint",
            cp->tid);
    }
    if (strcmp(cp->cp.origin, tl->origin) != 0) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "timeline %" PRIu64
            ": checkpoint origin \"%.64s\", not \"%s\"", cp->tid,
            cp->cp.origin, tl->origin);
    }
    if (sk_view_cp_ts(&cp->ts, &cp->cp) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "timeline %" PRIu64
            ": checkpoint has no Timestamp line", cp->tid);
    }
    if (cp->ts > now + SK_VIEW_FUTURE) {
        return sk_err_set(err, SK_ERR_NOT_YET_VALID, "timeline %" PRIu64
            ": checkpoint dated %" PRId64 ", in the future", cp->tid,
            cp->ts);
    }
    return 0;
}


static int
sk_view_verify_item(const sk_client_item_t *it, const sk_client_view_t *v,
    const sk_client_trust_t *t, sk_err_t *err)
{
    const sk_client_timeline_t  *tl;
    const sk_client_cp_t        *cp;
    const char                  *name = sk_entry_name(it->entry);
    sk_merkle_hash_t             leaf;

    if (it->tid == UINT64_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "entry not stamped");
    }
    if (name == NULL || strcmp(name, v->name) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "entry for \"%.64s\", not %s",
            name != NULL ? name : "(no name)", v->name);
    }
    tl = sk_client_trust_find(t, it->tid);
    cp = sk_client_view_cp(v, it->tid);
    if (tl == NULL || cp == NULL) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "%s",
            tl == NULL ? "not a trusted timeline" : "no checkpoint of its "
            "timeline");
    }
    if (sk_entry_verify(it->entry, SK_SIG_TIMELINE, tl->key, err) != 0) {
        return -1;
    }
    if (it->sn >= cp->cp.size) {
        return sk_err_set(err, SK_ERR_FORMAT, "beyond the checkpoint's "
            "tree of %" PRIu64 " entries", cp->cp.size);
    }
    if (sk_merkle_leaf_hash(leaf, it->text, it->len, err) != 0
        || sk_merkle_verify_inclusion(leaf, it->sn, cp->cp.size, &it->proof,
               cp->cp.root, err) != 0)
    {
        return sk_err_prefix(err, "inclusion in the checkpoint of %" PRIu64,
            cp->cp.size);
    }
    return 0;
}


int
sk_client_view_verify(sk_client_view_t *v, const sk_client_trust_t *t,
    int64_t now, sk_err_t *err)
{
    size_t  i, j;

    if (sk_name_check(v->name, strlen(v->name), err) != 0) {
        return -1;
    }
    for (i = 0; i < v->ncps; i++) {
        if (sk_view_verify_cp(&v->cps[i], t, now, err) != 0) {
            return -1;
        }
    }
    for (i = 0; i < v->nitems; i++) {
        for (j = 0; j < i; j++) {
            if (v->items[j].tid == v->items[i].tid
                && v->items[j].sn == v->items[i].sn)
            {
                return sk_err_set(err, SK_ERR_FORMAT, "timeline %" PRIu64
                    " SN %" PRIu64 ": given twice", v->items[i].tid,
                    v->items[i].sn);
            }
        }
        if (sk_view_verify_item(&v->items[i], v, t, err) != 0) {
            return sk_err_prefix(err, "timeline %" PRIu64 " SN %" PRIu64,
                v->items[i].tid, v->items[i].sn);
        }
    }
    for (i = 0; i < v->ncps; i++) {
        if (sk_cl_map_check(&v->cps[i], v, sk_client_trust_find(t,
                v->cps[i].tid), err) != 0)
        {
            return sk_err_prefix(err, "timeline %" PRIu64, v->cps[i].tid);
        }
    }
    return 0;
}


int
sk_client_view_record(sk_record_t *rec, const sk_client_view_t *v,
    sk_rebinder_key_fn lookup, void *arg, sk_err_t *err)
{
    const sk_entry_t  **es;
    size_t              i;
    int                 rc;

    es = malloc((v->nitems + 1) * sizeof(*es));
    if (es == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "record");
    }
    for (i = 0; i < v->nitems; i++) {
        es[i] = v->items[i].entry;
    }
    rc = sk_record_combine(rec, v->name, es, v->nitems, lookup, arg, err);
    free(es);
    return rc;
}


void
sk_client_view_free(sk_client_view_t *v)
{
    size_t  i;

    if (v == NULL) {
        return;
    }
    for (i = 0; i < v->ncps; i++) {
        sk_view_cp_clear(&v->cps[i]);
    }
    for (i = 0; i < v->nitems; i++) {
        sk_entry_free(v->items[i].entry);
        free(v->items[i].text);
    }
    free(v->cps);
    free(v->items);
    memset(v, 0, sizeof(*v));
}
