/*
 * mr_check.c -- the per-name consistency of a timeline's entries (the
 * draft's per-type rules, as sk-timeline applies them when it accepts an
 * entry): one Bind per name and timeline; an Unbind or a Change-Services
 * needs the name bound there and an SK-Signature by the SK in force (the
 * Key of its newest Bind or Rebind); a Rebind needs the name unbound, its
 * Rebinder-Name listed by the revoked record and bound, and a
 * Rebinder-Signature by that name's SK.  The state comes from the entries
 * of this round not yet stored (mr_pending_t), else from the stored copy
 * through the name index, whose rows for the name must give the name's
 * value in the map the mirror checked (mr_check_proven): a damaged row
 * is damage, logged and rebuilt, never a verdict.  A timeline that signs
 * an update breaking this has reneged.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sk/b64.h>

#include "mr.h"


static int
mr_strdup_or_null(char **out, const char *s)
{
    *out = s != NULL ? strdup(s) : NULL;
    return s != NULL && *out == NULL ? -1 : 0;
}


/* Note what entry e (just accepted) does to its name. */
int
mr_pending_note(mr_pending_t *p, const sk_entry_t *e, sk_err_t *err)
{
    sk_entry_type_t  ty = sk_entry_type(e);
    const char      *name = sk_entry_name(e);
    mr_pstate_t     *ps;
    char            *k, *rb;
    int              made;

    if (name == NULL || ty == SK_ENTRY_CHANGE_SERVICES) {
        return 0;
    }
    if (p->t.slot_size == 0) {
        sk_strtab_init(&p->t, sizeof(mr_pstate_t));
    }
    ps = sk_strtab_add(&p->t, name, &made, "pending names", err);
    if (ps == NULL) {
        return -1;
    }
    if (ty == SK_ENTRY_UNBIND) {
        ps->bound = 0;
        return 0;
    }
    if (mr_strdup_or_null(&k, sk_entry_get(e, "Key")) != 0
        || mr_strdup_or_null(&rb, sk_entry_get(e, "Rebinder-Names")) != 0)
    {
        free(k);
        return sk_err_set(err, SK_ERR_NOMEM, "pending names");
    }
    free(ps->key);
    free(ps->rebinders);
    ps->key = k;
    ps->rebinders = rb;
    ps->bound = 1;
    return 0;
}


void
mr_pending_free(mr_pending_t *p)
{
    mr_pstate_t  *ps;
    size_t        i;

    for (i = 0; i < p->t.nslots; i++) {
        ps = sk_strtab_at(&p->t, i);
        free(ps->key);
        free(ps->rebinders);
    }
    sk_strtab_free(&p->t);
}


/* The map's (count, newest SN, chain) for name on t against its rows
 * below the map's size (refs, one timeline's in SN order): equal, or the
 * index is damaged.  The value is read through the stored tree
 * hash-linked to the Map-Root entry of the checkpoint the mirror checked
 * (t->map_hash), and each leaf chained is the one an entry read back is
 * checked against (mr_copy_pread): so a names, entries or map row
 * changed, dropped or pointed elsewhere is found here, never decides.
 * A timeline whose checkpoint ends in no Map-Root entry has no map: its
 * rows are held to their bucket's digest alone, as before maps. */
static int
mr_check_proven(mr_mirror_t *m, mr_tl_t *t, const char *name,
    const mr_ref_t *refs, size_t nrefs, sk_err_t *err)
{
    unsigned char     key[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  root;
    sk_map_value_t    want, got;
    sk_db_txn_t      *txn;
    uint64_t          cpsize, size = 0;
    sk_err_t          why;
    int               rc, mapped;

    mr_lock(m);
    mapped = t->mapped;
    cpsize = t->cpv.size;
    memcpy(root, t->map_hash, sizeof(root));
    mr_unlock(m);
    if (!mapped) {
        return 0;
    }
    if (sk_map_key(key, name, err) != 0) {
        return -1;
    }
    if (sk_db_begin(m->db, 0, &txn, err) != 0) {
        return -1;
    }
    rc = mr_map_size(m, t, txn, &size, &why);
    if (rc == 0 && size != cpsize) {
        rc = sk_err_set(&why, SK_ERR_FORMAT, "meta: map-%" PRIu64 ": the "
            "map covers %" PRIu64 " entries, the checkpoint %" PRIu64,
            t->conf->tid, size, cpsize);
    }
    if (rc == 0) {
        rc = sk_map_get_proven(txn, m->map, t->conf->tid, key, root, &want,
            &why);
    }
    sk_db_abort(txn);
    if (rc == -1 && why.code != SK_ERR_FORMAT) {
        *err = why;
        return -1;
    }
    if (rc == -1) {
        return mr_state_damaged(m, err, "%s (%s, timeline %" PRIu64 ")",
            why.msg, name, t->conf->tid);
    }
    if (rc == 1) {
        sk_map_value_init(&want);
    }
    if (!mr_map_history(t, refs, nrefs, size, &want, &got)) {
        return mr_state_damaged(m, err, "names: %s: timeline %" PRIu64 ": "
            "the rows of its %" PRIu64 " entries below SN %" PRIu64 " do not "
            "give the value its name map proves (%" PRIu64 " entries, the "
            "newest SN %" PRIu64 ")", name, t->conf->tid, got.count, size,
            want.count, want.newest_sn);
    }
    return 0;
}


/* The name's state on t before SN sn from the stored copy (st->name NULL
 * if the name has no Bind, Rebind or Unbind there). */
static int
mr_check_stored(mr_mirror_t *m, mr_tl_t *t, const char *name, uint64_t sn,
    mr_pstate_t *st, sk_err_t *err)
{
    sk_entry_t       *e;
    mr_ref_t         *refs;
    uint64_t         *sns = NULL, *inc = NULL;
    size_t            i, cnt = 0, ninc, len, nrefs;
    char             *text;
    int               rc = 0, unbound = 0, is_inc;

    memset(st, 0, sizeof(*st));
    /* Copies the timeline incorporated count as its own entries. */
    ninc = t->inc != NULL ? mr_inc_for_name(t, name, sn, &inc) : 0;
    if (ninc > 0 && inc == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "name state");
    }
    if (mr_index_refs(m, name, &refs, &nrefs, err) != 0) {
        free(inc);
        return -1;
    }
    if (mr_check_proven(m, t, name, refs, nrefs, err) != 0) {
        free(refs);
        free(inc);
        return -1;
    }
    if (nrefs > 0 && (sns = malloc(nrefs * sizeof(*sns))) == NULL) {
        free(refs);
        free(inc);
        return sk_err_set(err, SK_ERR_NOMEM, "name state");
    }
    for (i = 0; i < nrefs; i++) {
        if (refs[i].tl == t->index && refs[i].sn < sn) {
            sns[cnt++] = refs[i].sn;
        }
    }
    free(refs);
    /* Newest first (one timeline's refs are in SN order, and so are its
     * copies), back to the newest Bind or Rebind. */
    while ((cnt > 0 || ninc > 0) && st->key == NULL && rc == 0) {
        is_inc = ninc > 0 && (cnt == 0 || inc[ninc - 1] > sns[cnt - 1]);
        rc = is_inc ? mr_inc_read(t, inc[--ninc], &text, &len, err)
                    : mr_store_read(m, t, &text, &len, sns[--cnt], err);
        if (rc != 0) {
            break;
        }
        rc = sk_entry_parse(&e, text, len, err);
        free(text);
        if (rc != 0) {
            break;
        }
        switch (sk_entry_type(e)) {
        case SK_ENTRY_UNBIND:
            unbound = 1;
            st->name = (char *) name;
            break;
        case SK_ENTRY_BIND:
        case SK_ENTRY_REBIND:
            st->name = (char *) name;
            st->bound = !unbound;
            if (mr_strdup_or_null(&st->key, sk_entry_get(e, "Key")) != 0
                || mr_strdup_or_null(&st->rebinders,
                       sk_entry_get(e, "Rebinder-Names")) != 0)
            {
                rc = sk_err_set(err, SK_ERR_NOMEM, "name state");
            }
            break;
        default:
            break;
        }
        sk_entry_free(e);
    }
    free(sns);
    free(inc);
    return rc;
}


/* The state of name before sn: pending (this round) first. */
static int
mr_check_state(mr_mirror_t *m, mr_tl_t *t, const char *name, uint64_t sn,
    const mr_pending_t *p, mr_pstate_t *st, sk_err_t *err)
{
    const mr_pstate_t  *ps;
    sk_err_t            why;

    ps = p != NULL ? sk_strtab_find(&p->t, name) : NULL;
    if (ps != NULL) {
        if (ps->key == NULL) {
            /* Only an Unbind this round: the record is in the copy. */
            if (mr_check_stored(m, t, name, sn, st, &why) != 0) {
                free(st->key);
                free(st->rebinders);
                return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", why.msg);
            }
            st->name = ps->name;
            st->bound = 0;
            return 0;
        }
        memset(st, 0, sizeof(*st));
        st->name = ps->name;
        st->bound = ps->bound;
        if (mr_strdup_or_null(&st->key, ps->key) != 0
            || mr_strdup_or_null(&st->rebinders, ps->rebinders) != 0)
        {
            free(st->key);
            return sk_err_set(err, SK_ERR_NOMEM, "name state");
        }
        return 0;
    }
    if (mr_check_stored(m, t, name, sn, st, &why) != 0) {
        free(st->key);
        free(st->rebinders);
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", why.msg);
    }
    return 0;
}


/* Field which of e signed by the SK whose Key is key. */
static int
mr_check_sig(const sk_entry_t *e, sk_sig_field_t which, const char *key,
    sk_err_t *err)
{
    unsigned char  *der;
    sk_key_t       *k;
    size_t          len;
    int             rc;

    if (sk_b64_decode(&der, &len, key, strlen(key), err) != 0) {
        return -1;
    }
    rc = sk_key_from_spki(&k, der, len, err);
    free(der);
    if (rc != 0) {
        return -1;
    }
    rc = sk_entry_verify(e, which, k, err);
    sk_key_free(k);
    return rc;
}


static int
mr_check_listed(const char *list, const char *name)
{
    size_t       nlen = strlen(name);
    const char  *p = list;

    while (p != NULL && (p = strstr(p, name)) != NULL) {
        if ((p == list || p[-1] == ',') && (p[nlen] == ',' || p[nlen] == 0)) {
            return 1;
        }
        p += nlen;
    }
    return 0;
}


static int
mr_check_rebind(mr_mirror_t *m, mr_tl_t *t, const sk_entry_t *e,
    uint64_t sn, const mr_pending_t *p, const mr_pstate_t *st,
    sk_err_t *err)
{
    const char   *rb = sk_entry_get(e, "Rebinder-Name");
    mr_pstate_t   r;
    int           rc;

    if (st->name == NULL || st->bound) {
        return sk_err_set(err, SK_ERR_FORMAT, "rebind: the newest entry for "
            "%s is not an Unbind", sk_entry_name(e));
    }
    if (rb == NULL || !mr_check_listed(st->rebinders, rb)) {
        return sk_err_set(err, SK_ERR_PERM, "rebind: %s is not among the "
            "rebinders of %s", rb != NULL ? rb : "?", sk_entry_name(e));
    }
    if (mr_check_state(m, t, rb, sn, p, &r, err) != 0) {
        return -1;
    }
    if (!r.bound || r.key == NULL) {
        rc = sk_err_set(err, SK_ERR_NOT_FOUND, "rebind: rebinder %s is not "
            "bound", rb);
    } else {
        rc = mr_check_sig(e, SK_SIG_REBINDER, r.key, err);
        if (rc != 0) {
            sk_err_prefix(err, "rebind: Rebinder-Signature by %s", rb);
        }
    }
    free(r.key);
    free(r.rebinders);
    return rc;
}


int
mr_check_update(mr_mirror_t *m, mr_tl_t *t, const sk_entry_t *e,
    uint64_t sn, const mr_pending_t *p, sk_err_t *err)
{
    sk_entry_type_t  ty = sk_entry_type(e);
    const char      *name = sk_entry_name(e);
    mr_pstate_t      st;
    int              rc = 0;

    if (ty != SK_ENTRY_BIND && ty != SK_ENTRY_REBIND && ty != SK_ENTRY_UNBIND
        && ty != SK_ENTRY_CHANGE_SERVICES)
    {
        return 0;
    }
    if (mr_check_state(m, t, name, sn, p, &st, err) != 0) {
        return -1;
    }
    if (ty == SK_ENTRY_BIND) {
        if (st.key != NULL) {
            rc = sk_err_set(err, SK_ERR_EXISTS, "bind: %s already has a "
                "Bind on this timeline", name);
        }
    } else if (ty == SK_ENTRY_REBIND) {
        rc = mr_check_rebind(m, t, e, sn, p, &st, err);
    } else if (!st.bound || st.key == NULL) {
        rc = sk_err_set(err, SK_ERR_NOT_FOUND, "%s is not bound on this "
            "timeline", name);
    } else if (mr_check_sig(e, SK_SIG_SK, st.key, err) != 0) {
        rc = sk_err_prefix(err, "SK-Signature by the SK in force");
    }
    free(st.key);
    free(st.rebinders);
    return rc;
}


/* Incorporate entries (mr_incorp.c keeps their copies): the copy judged
 * by its own rules, then by the names' rules as if submitted here. */
#define MR_BAD(...)  (snprintf(why, whylen, __VA_ARGS__), 1)

int
mr_check_incorporate(mr_mirror_t *m, mr_tl_t *t, const sk_entry_t *inc, uint64_t sn,
    const char *text, size_t len, const sk_entry_t *earlier,
    const mr_pending_t *p, sk_entry_t **copy, uint64_t *earlier_sn,
    char *why, size_t whylen, sk_err_t *err)
{
    unsigned char     h[SK_SHA256_BYTES];
    char              hb[64];
    sk_entry_type_t   ty;
    sk_entry_t       *c;
    mr_tl_t          *src;
    sk_err_t          e2;
    uint64_t          tid, csn, want_tid, want_sn, at = 0, last = 0;
    int64_t           ts;
    int               rc;

    *copy = NULL;
    *earlier_sn = UINT64_MAX;
    want_tid = strtoull(sk_entry_get(inc, "Incorporated-TID"), NULL, 10);
    want_sn = strtoull(sk_entry_get(inc, "Incorporated-SN"), NULL, 10);
    if (want_tid == t->conf->tid) {
        return MR_BAD("SN %" PRIu64 ": an Incorporate of the timeline's own "
            "SN %" PRIu64, sn, want_sn);
    }
    if (sk_entry_parse(&c, text, len, err) != 0) {
        return sk_err_prefix(err, "the copy of Incorporate SN %" PRIu64, sn);
    }
    if (sk_entry_hash(h, c, err) != 0) {
        sk_entry_free(c);
        return -1;
    }
    sk_b64_encode(hb, h, sizeof(h));
    if (strcmp(hb, sk_entry_get(inc, "Incorporated-Hash")) != 0) {
        sk_entry_free(c);
        return sk_err_set(err, SK_ERR_FORMAT, "the copy of Incorporate SN %"
            PRIu64 " is not the entry its Incorporated-Hash names", sn);
    }
    /* The Incorporate names this very copy: what follows is held against
     * the timeline that signed the Incorporate. */
    ty = sk_entry_type(c);
    if (sk_entry_tid(c, &tid, &e2) != 0 || sk_entry_sn(c, &csn, &e2) != 0
        || sk_entry_timestamp(c, &ts, &e2) != 0)
    {
        rc = MR_BAD("SN %" PRIu64 ": the incorporated entry is not stamped: "
            "%s", sn, e2.msg);
    } else if (tid != want_tid || csn != want_sn) {
        rc = MR_BAD("SN %" PRIu64 ": the incorporated entry is TID %" PRIu64
            " SN %" PRIu64 ", not the Incorporated-TID %" PRIu64 " and SN %"
            PRIu64, sn, tid, csn, want_tid, want_sn);
    } else if ((src = mr_inc_source(m, tid)) == NULL) {
        rc = sk_err_set(err, SK_ERR_UNAVAILABLE, "SN %" PRIu64 ": an "
            "Incorporate from timeline %" PRIu64 ", which this mirror does "
            "not mirror: its signature cannot be checked", sn, tid);
    } else if (sk_entry_verify(c, SK_SIG_TIMELINE, src->key, &e2) != 0) {
        rc = MR_BAD("SN %" PRIu64 ": the incorporated entry (timeline %"
            PRIu64 " SN %" PRIu64 ") is not signed by timeline %" PRIu64
            ": %s", sn, tid, csn, tid, e2.msg);
    } else if (ty != SK_ENTRY_BIND && ty != SK_ENTRY_REBIND
               && ty != SK_ENTRY_UNBIND && ty != SK_ENTRY_CHANGE_SERVICES)
    {
        rc = MR_BAD("SN %" PRIu64 ": an Incorporate of a %s entry", sn,
            sk_entry_type_name(ty));
    } else {
        rc = 0;
    }
    if (rc != 0) {
        sk_entry_free(c);
        return rc;
    }
    /* Up in the peer's SN: never the same entry twice. */
    if (earlier != NULL) {
        last = strtoull(sk_entry_get(earlier, "Incorporated-SN"), NULL, 10);
        if (sk_entry_type(earlier) == SK_ENTRY_INCORPORATE
            && strtoull(sk_entry_get(earlier, "Incorporated-TID"), NULL, 10)
               == tid && sk_entry_sn(earlier, &at, &e2) == 0 && at < sn
            && last >= csn)
        {
            *earlier_sn = at;
        }
    } else if (mr_inc_last_from(t, tid, sn, &at, &last) && last >= csn) {
        *earlier_sn = at;
    }
    if (*earlier_sn != UINT64_MAX) {
        sk_entry_free(c);
        return MR_BAD("SN %" PRIu64 ": an Incorporate of timeline %" PRIu64
            " SN %" PRIu64 ", not after SN %" PRIu64 " incorporated at SN %"
            PRIu64, sn, tid, csn, last, *earlier_sn);
    }
    /* As if submitted to this timeline at its own time. */
    if (ty == SK_ENTRY_BIND || ty == SK_ENTRY_REBIND) {
        rc = mr_roots_check_bind(m, t, c, sn, ts, &e2);
        if (rc != 0 && e2.code == SK_ERR_UNAVAILABLE) {
            *err = e2;
            sk_entry_free(c);
            return -1;
        }
        if (rc != 0) {
            sk_entry_free(c);
            return MR_BAD("SN %" PRIu64 ": the incorporated %s for %s is not "
                "validly backed here: %s", sn, sk_entry_type_name(ty),
                sk_entry_name(c), e2.msg);
        }
    }
    rc = mr_check_update(m, t, c, sn, p, &e2);
    if (rc != 0 && (e2.code == SK_ERR_UNAVAILABLE || e2.code == SK_ERR_NOMEM))
    {
        *err = e2;
        sk_entry_free(c);
        return -1;
    }
    if (rc != 0) {
        rc = MR_BAD("SN %" PRIu64 ": the incorporated %s for %s against the "
            "name's state here: %s", sn, sk_entry_type_name(ty),
            sk_entry_name(c), e2.msg);
        sk_entry_free(c);
        return rc;
    }
    *copy = c;
    return 0;
}
