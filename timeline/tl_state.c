/*
 * tl_state.c -- what the log implies: each name's current SK and newest
 * entry, each SK's revocation budget, and the trusted roots.  Names live
 * in the index (tl_index.c); the ones in use or changed since its last
 * flush are in the working set here.  The roots, few, stay in memory.
 * Kept up by every accepted (or replayed) entry.
 */
#include <stdlib.h>
#include <string.h>

#include "tl.h"


/* The name from the working set, else from the index (then kept in the
 * working set until the next flush, marked absent if neither the index
 * nor the map has it); NULL if it cannot be read.  An index that cannot
 * be read, or whose rows for the name do not check, is marked damaged
 * (tl->index_bad): "no such name" would let a second Bind in, so no
 * append is decided before it is rebuilt. */
static tl_name_t *
tl_state_entry(tl_timeline_t *tl, const char *name)
{
    tl_name_t  *n, **slot;
    sk_err_t    err;
    int         rc;

    if (tl->nslots > 0) {
        slot = tl_names_slot(tl->names, tl->nslots, name);
        if (*slot != NULL) {
            return *slot;
        }
    }
    if ((n = calloc(1, sizeof(*n))) == NULL) {
        tl_fail(tl, "name table: out of memory; appends refused until a "
            "restart");
        return NULL;
    }
    rc = tl->db != NULL ? tl_index_name_get(tl, name, n, &err) : 1;
    if (rc >= 0) {
        rc = tl_map_name(tl, name, n, rc == 0, &err);
    }
    if (rc >= 0 && (n->name = strdup(name)) == NULL) {
        rc = sk_err_set(&err, SK_ERR_NOMEM, "name table");
    }
    n->absent = rc == 1;
    if (rc >= 0 && tl_names_insert(tl, n, &err) == 0) {
        return n;
    }
    tl_name_free(n);
    if (rc >= 0) {
        tl_fail(tl, "%s; appends refused until a restart", err.msg);
    } else {
        tl_index_damaged(tl, "%s", err.msg);
    }
    return NULL;
}


/* The name's state; NULL if it has none (or it cannot be read). */
tl_name_t *
tl_state_name(tl_timeline_t *tl, const char *name)
{
    tl_name_t  *n = tl_state_entry(tl, name);

    return n != NULL && !n->absent ? n : NULL;
}


static int
tl_state_strset(char **dst, const char *v, sk_err_t *err)
{
    char  *s = strdup(v != NULL ? v : "");

    if (s == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "name table");
    }
    free(*dst);
    *dst = s;
    return 0;
}


/* Bind or Rebind: the name (new or not) now has this SK and budget. */
static int
tl_state_bind(tl_timeline_t *tl, const sk_entry_t *e, int64_t ts,
    sk_err_t *err)
{
    const char  *name = sk_entry_name(e);
    tl_name_t   *n = tl_state_entry(tl, name);

    if (n == NULL) {
        if (tl->failed) {
            return sk_err_set(err, SK_ERR_SYSTEM, "%s", tl->failed_msg);
        }
        return sk_err_set(err, SK_ERR_FORMAT, "%s: found damaged",
            tl->db_dir);
    }
    n->absent = 0;
    if (tl_state_strset(&n->key, sk_entry_get(e, "Key"), err) != 0
        || tl_state_strset(&n->rebinders, sk_entry_get(e, "Rebinder-Names"),
               err) != 0)
    {
        return -1;
    }
    n->tokens = (double) tl->conf.sk_budget;
    n->tokens_at = ts;
    n->dirty = 1;
    return 0;
}


int
tl_state_seen(tl_timeline_t *tl, const tl_name_t *n, const char *sig)
{
    unsigned char  h[SK_SHA256_BYTES];
    size_t         i;

    sk_merkle_digest(h, sig, strlen(sig));
    for (i = 0; i < n->nseen; i++) {
        if (memcmp(n->seen[i], h, sizeof(h)) == 0) {
            return 1;
        }
    }
    return tl->db != NULL && tl_index_seen(tl, n->name, h);
}


static int
tl_state_see(tl_name_t *n, const char *sig, sk_err_t *err)
{
    unsigned char  (*p)[SK_SHA256_BYTES];

    p = realloc(n->seen, (n->nseen + 1) * sizeof(*p));
    if (p == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "name table");
    }
    n->seen = p;
    sk_merkle_digest(p[n->nseen++], sig, strlen(sig));
    n->dirty = 1;
    return 0;
}


/* Refill then spend one token of n's budget; -1 if there is none. */
int
tl_state_spend(tl_timeline_t *tl, tl_name_t *n, int64_t now, int dry)
{
    double  t = n->tokens;

    if (tl->conf.sk_refill > 0 && now > n->tokens_at) {
        t += (double) (now - n->tokens_at) / (double) tl->conf.sk_refill;
    }
    if (t > (double) tl->conf.sk_budget) {
        t = (double) tl->conf.sk_budget;
    }
    if (t < 1.0) {
        return -1;
    }
    if (!dry) {
        n->tokens = t - 1.0;
        n->tokens_at = now;
        n->dirty = 1;
    }
    return 0;
}


/* 0 once e's root is added; 1 if it is trusted already. */
static int
tl_state_root_add(tl_timeline_t *tl, const sk_entry_t *e, sk_err_t *err)
{
    unsigned char  *der;
    size_t          len;
    int             rc;

    if (sk_b64_decode(&der, &len, sk_entry_get(e, "CA-Cert"),
            strlen(sk_entry_get(e, "CA-Cert")), err) != 0)
    {
        return -1;
    }
    rc = tl_roots_add(tl, der, len, err);
    free(der);
    return rc;
}


int
tl_state_root_serial(const tl_timeline_t *tl, const sk_entry_t *e,
    sk_err_t *err)
{
    unsigned long  serial = strtoul(sk_entry_get(e, "CA-Serial"), NULL, 10);

    if (serial < tl->ca_next) {
        return sk_err_set(err, SK_ERR_EXISTS, "CA-Serial %lu is not above "
            "%lu, the newest root change's: a replay or out of order",
            serial, (unsigned long) tl->ca_next - 1);
    }
    return 0;
}


/* Index of the root whose SHA-256 (of DER) is the base64url hash. */
int
tl_state_root_find(tl_timeline_t *tl, const char *hash_b64)
{
    unsigned char  *h;
    size_t          len, i;
    int             found = -1;

    if (sk_b64_decode(&h, &len, hash_b64, strlen(hash_b64), NULL) != 0) {
        return -1;
    }
    for (i = 0; len == SK_SHA256_BYTES && i < tl->nroots; i++) {
        if (memcmp(tl->roots[i].hash, h, len) == 0) {
            found = (int) i;
        }
    }
    free(h);
    return found;
}


/* A root change as sk-mirror applies it too: one whose CA-Serial is not
 * above the newest taken changes nothing (a log from before the rule may
 * hold such a replay), an Add of a trusted root changes nothing, a Remove
 * ends the trust in it. */
static int
tl_state_root_change(tl_timeline_t *tl, const sk_entry_t *e, sk_err_t *err)
{
    sk_err_t  why;
    int       i, add = sk_entry_type(e) == SK_ENTRY_ADD_ROOT_CA;

    if (tl_state_root_serial(tl, e, &why) != 0) {
        tl_log("%s: %s; ignored", sk_entry_type_name(sk_entry_type(e)),
            why.msg);
        return 0;
    }
    tl->ca_next = (uint32_t) strtoul(sk_entry_get(e, "CA-Serial"), NULL, 10)
                  + 1;
    tl->roots_dirty = 1;
    if (add) {
        i = tl_state_root_add(tl, e, err);
        return i == 0 ? tl_roots_store(tl, err) : i > 0 ? 0 : -1;
    }
    i = tl_state_root_find(tl, sk_entry_get(e, "CA-Cert-Hash"));
    if (i >= 0) {
        X509_free(tl->roots[i].cert);
        tl->roots[i] = tl->roots[--tl->nroots];
    }
    return tl_roots_store(tl, err);
}


int
tl_state_incorporate(tl_timeline_t *tl, const sk_entry_t *e, const sk_entry_t *ref,
    int64_t ts, sk_err_t *err)
{
    tl_copy_t         c;
    sk_entry_t       *own = NULL;
    tl_peer_t        *p;
    uint64_t          tid, sn;
    char             *text;
    int               rc;

    if (ref == NULL) {
        rc = tl_inc_copy(tl, e, &c, err);
        if (rc != 0) {
            return rc < 0 ? -1 : sk_err_set(err, SK_ERR_NOT_FOUND,
                "Incorporate: no copy of the entry in %s", TL_INC_FILE);
        }
        if (tl_inc_load(tl, &c, &text, err) != 0) {
            return -1;
        }
        rc = sk_entry_parse(&own, text, c.len, err);
        free(text);
        if (rc != 0) {
            return -1;
        }
        ref = own;
    }
    rc = -1;
    if (sk_entry_tid(ref, &tid, err) == 0 && sk_entry_sn(ref, &sn, err) == 0)
    {
        /* A peer no longer configured: its copies were checked then. */
        p = tl_inc_find_peer(tl, tid);
        if (p != NULL) {
            p->next_sn = sn + 1;
        }
        rc = tl_state_apply(tl, ref, ts, err);
    }
    sk_entry_free(own);
    return rc;
}


/* Entry e's (SN sn) leaf hash: an append's, written before its state
 * is applied, is the one just indexed from the same text; a replayed
 * entry's, applied before it is indexed, is taken here. */
static int
tl_state_leaf(tl_timeline_t *tl, const sk_entry_t *e, uint64_t sn,
    sk_merkle_hash_t leaf, sk_err_t *err)
{
    char   *text;
    size_t  len;
    int     rc;

    if (sn < tl->size) {
        return tl_index_leaf(tl, sn, 0, leaf, err);
    }
    if (sk_entry_format(&text, &len, e, err) != 0) {
        return -1;
    }
    rc = sk_merkle_leaf_hash(leaf, text, len, err);
    free(text);
    return rc;
}


/* With the name map on, an entry e of this timeline moves n's value on
 * (tl_map_note); an incorporated copy is another timeline's entry. */
static int
tl_state_map(tl_timeline_t *tl, tl_name_t *n, const sk_entry_t *e,
    sk_err_t *err)
{
    sk_merkle_hash_t  leaf;
    uint64_t          sn, tid;

    if (tl->map == NULL) {
        return 0;
    }
    if (sk_entry_tid(e, &tid, err) != 0 || sk_entry_sn(e, &sn, err) != 0) {
        return -1;
    }
    if (tid != tl->conf.tid) {
        return 0;
    }
    if (tl_state_leaf(tl, e, sn, leaf, err) != 0) {
        return -1;
    }
    tl_map_note(tl, n, sn, leaf);
    return 0;
}


int
tl_state_apply(tl_timeline_t *tl, const sk_entry_t *e, int64_t ts,
    sk_err_t *err)
{
    tl_name_t  *n;

    switch (sk_entry_type(e)) {
    case SK_ENTRY_BIND:
    case SK_ENTRY_REBIND:
        if (tl_state_bind(tl, e, ts, err) != 0) {
            return -1;
        }
        break;
    case SK_ENTRY_UNBIND:
    case SK_ENTRY_CHANGE_SERVICES:
        n = tl_state_name(tl, sk_entry_name(e));
        if (n == NULL) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s for unbound name %s",
                sk_entry_type_name(sk_entry_type(e)), sk_entry_name(e));
        }
        (void) tl_state_spend(tl, n, ts, 0);
        if (sk_entry_type(e) == SK_ENTRY_CHANGE_SERVICES
            && tl_state_see(n, sk_entry_get(e, "SK-Signature"), err) != 0)
        {
            return -1;
        }
        break;
    case SK_ENTRY_INCORPORATE:
        return tl_state_incorporate(tl, e, NULL, ts, err);
    case SK_ENTRY_ADD_ROOT_CA:
    case SK_ENTRY_REMOVE_ROOT_CA:
        return tl_state_root_change(tl, e, err);
    default:
        return 0;
    }
    n = tl_state_name(tl, sk_entry_name(e));
    n->last = sk_entry_type(e);
    n->dirty = 1;
    return tl_state_map(tl, n, e, err);
}


void
tl_state_free(tl_timeline_t *tl)
{
    tl_names_forget(tl);
    tl_roots_clear(tl);
    free(tl->roots);
}
