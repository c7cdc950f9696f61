/*
 * tl_incorporate.c -- incorporation by reference of another timeline's
 * entry.
 *
 * A submitter POSTs an Incorporate (Incorporated-TID, -SN, -Hash) in form
 * field e= and the peer's stamped entry itself in ref=.  The copy must be
 * the entry the reference names (its TID, SN and SHA-256), signed by that
 * peer's configured key, a registrant's entry (Bind, Rebind, Unbind,
 * Change-Services), later in the peer's log than the last one taken from
 * it, and valid here as if it had been submitted here at its own time:
 * the Bind checks against this timeline's roots at the copy's Timestamp
 * (no OCSP question: today's answer says nothing about then), and the
 * state rules (no second Bind, the SK in force, rebinders, the budget).
 * The copies and the peers are tl_incorporated.c's.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tl.h"


static tl_verdict_t
tl_inc_forbid(sk_err_t *err)
{
    sk_err_prefix(err, "incorporate");
    return TL_FORBIDDEN;
}


/* The reference and the copy agree: TID, SN, hash. */
static tl_verdict_t
tl_inc_match(const sk_entry_t *e, const sk_entry_t *ref, sk_err_t *err)
{
    unsigned char  h[SK_SHA256_BYTES];
    char           hb[64];
    uint64_t       tid, sn;

    if (sk_entry_tid(ref, &tid, err) != 0 || sk_entry_sn(ref, &sn, err) != 0)
    {
        sk_err_prefix(err, "ref: not stamped");
        return tl_inc_forbid(err);
    }
    if (strtoull(sk_entry_get(e, "Incorporated-TID"), NULL, 10) != tid
        || strtoull(sk_entry_get(e, "Incorporated-SN"), NULL, 10) != sn)
    {
        sk_err_set(err, SK_ERR_FORMAT, "ref is TID %" PRIu64 " SN %" PRIu64
            ", not the Incorporated-TID and Incorporated-SN", tid, sn);
        return tl_inc_forbid(err);
    }
    if (sk_entry_hash(h, ref, err) != 0) {
        return TL_FAULT;
    }
    sk_b64_encode(hb, h, sizeof(h));
    if (strcmp(hb, sk_entry_get(e, "Incorporated-Hash")) != 0) {
        sk_err_set(err, SK_ERR_FORMAT,
            "Incorporated-Hash is not the SHA-256 of ref");
        return tl_inc_forbid(err);
    }
    return TL_OK;
}


tl_verdict_t
tl_inc_validate_static(tl_timeline_t *tl, const sk_entry_t *e,
    const char *ref_text, size_t ref_len, sk_entry_t **ref, sk_err_t *err)
{
    sk_entry_type_t   type;
    tl_verdict_t      v;
    tl_peer_t        *p;
    uint64_t          tid = strtoull(sk_entry_get(e, "Incorporated-TID"),
                                     NULL, 10);
    int64_t           ts;

    *ref = NULL;
    if ((p = tl_inc_find_peer(tl, tid)) == NULL) {
        sk_err_set(err, SK_ERR_PERM, "timeline %" PRIu64
            " is not a configured peer", tid);
        return tl_inc_forbid(err);
    }
    if (ref_text == NULL) {
        sk_err_set(err, SK_ERR_FORMAT, "form: an Incorporate needs the "
            "entry itself in field \"ref\"");
        return TL_BAD_REQUEST;
    }
    if (sk_entry_parse(ref, ref_text, ref_len, err) != 0) {
        sk_err_prefix(err, "ref");
        return TL_BAD_REQUEST;
    }
    type = sk_entry_type(*ref);
    if (type != SK_ENTRY_BIND && type != SK_ENTRY_REBIND
        && type != SK_ENTRY_UNBIND && type != SK_ENTRY_CHANGE_SERVICES)
    {
        sk_err_set(err, SK_ERR_PERM, "a %s entry is not incorporated",
            sk_entry_type_name(type));
        v = tl_inc_forbid(err);
    } else if ((v = tl_inc_match(e, *ref, err)) != TL_OK) {
        /* said */
    } else if (sk_entry_verify(*ref, SK_SIG_TIMELINE, p->key, err) != 0) {
        sk_err_prefix(err, "ref: timeline %" PRIu64 "'s Signature", tid);
        v = tl_inc_forbid(err);
    } else if (sk_entry_timestamp(*ref, &ts, err) != 0) {
        v = TL_BAD_REQUEST;
    } else if ((v = tl_validate_static(tl, *ref, ts, 0, err)) == TL_FORBIDDEN)
    {
        tl_inc_forbid(err);
    }
    if (v != TL_OK) {
        sk_entry_free(*ref);
        *ref = NULL;
    }
    return v;
}


tl_verdict_t
tl_inc_validate_state(tl_timeline_t *tl, const sk_entry_t *ref, int64_t now,
    sk_err_t *err)
{
    tl_verdict_t  v;
    tl_peer_t    *p;
    uint64_t      tid = 0, sn = 0;

    if (sk_entry_tid(ref, &tid, err) != 0 || sk_entry_sn(ref, &sn, err) != 0
        || (p = tl_inc_find_peer(tl, tid)) == NULL)
    {
        return TL_FAULT;
    }
    if (sn < p->next_sn) {
        sk_err_set(err, SK_ERR_EXISTS, "timeline %" PRIu64 " SN %" PRIu64
            " is not after the last one incorporated from it (SN %" PRIu64
            ")", tid, sn, p->next_sn - 1);
        return tl_inc_forbid(err);
    }
    v = tl_validate_state(tl, ref, now, err);
    if (v == TL_FORBIDDEN) {
        tl_inc_forbid(err);
    }
    return v;
}


int
tl_inc_read(tl_timeline_t *tl, const sk_entry_t *e, char **out, size_t *len,
    sk_err_t *err)
{
    tl_copy_t  copy;
    uint64_t   gen;
    int        rc, again;

    for (again = 0; ; again = 1) {
        pthread_mutex_lock(&tl->lock);
        gen = tl->reindexed;
        rc = tl_inc_copy(tl, e, &copy, err);
        pthread_mutex_unlock(&tl->lock);
        if (rc == 1) {
            /* The log's Incorporate says the copy was kept. */
            sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: table copies: no "
                "row for the copy an Incorporate of the log names",
                tl->db_dir);
        } else if (rc == 0) {
            *len = copy.len;
            rc = tl_inc_load(tl, &copy, out, err);
        }
        if (rc == 0) {
            return 0;
        }
        if (again || tl_store_mend(tl, gen, 0, err) != 0) {
            return -1;
        }
    }
}
