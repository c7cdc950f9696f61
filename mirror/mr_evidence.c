/*
 * mr_evidence.c -- renegation evidence: the contradicting signed
 * statements, in the text form docs/protocol.md ("Renegation tracking")
 * gives, and the check anyone (this mirror, a peer) runs before holding a
 * timeline as reneged:
 *
 *   Reason: <one line>\n
 *   Kind: <kind>\n
 *   \n
 *   Statement: <entry|checkpoint|tfm> <n>\n<n bytes> ...
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/evidence.h>

#include "mr.h"

/* checkpoint-root evidence holds every entry a head covers. */
#define MR_EV_MAX_STATEMENTS  (1u << 24)


void
mr_evidence_begin(mr_evidence_t *ev, const char *kind, const char *reason)
{
    memset(ev, 0, sizeof(*ev));
    mr_buf_printf(&ev->buf, "Reason: %s\nKind: %s\n\n", reason, kind);
}


void
mr_evidence_add(mr_evidence_t *ev, const char *type, const char *p,
    size_t len)
{
    mr_buf_printf(&ev->buf, "Statement: %s %zu\n", type, len);
    mr_buf_add(&ev->buf, p, len);
}


/* The timeline as evidence about it is checked. */
static void
mr_ev_who(sk_evidence_tl_t *who, const mr_tl_t *t)
{
    who->tid = t->conf->tid;
    who->origin = t->conf->origin;
    who->key = t->key;
}


/* An entry statement signed by t: its SN and timestamp. */
static int
mr_ev_entry(sk_entry_t **e, uint64_t *sn, int64_t *ts, const mr_tl_t *t,
    const sk_evidence_stmt_t *s, sk_err_t *err)
{
    sk_evidence_tl_t  who;

    mr_ev_who(&who, t);
    return sk_evidence_entry(e, sn, ts, &who, s, err);
}


/* Unbacked by the timeline's own root history, as this mirror's copy
 * holds it (a peer could leave out an Add-Root-CA; the copy cannot). */
static int
mr_ev_bind(mr_mirror_t *m, mr_tl_t *t, const sk_evidence_stmt_t *s, size_t n,
    sk_err_t *err)
{
    sk_entry_t  *e;
    sk_err_t     why;
    uint64_t     sn;
    int64_t      ts;
    int          rc;

    if (n != 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "want one statement");
    }
    if (mr_ev_entry(&e, &sn, &ts, t, &s[0], err) != 0) {
        return -1;
    }
    if (sk_entry_type(e) != SK_ENTRY_BIND
        && sk_entry_type(e) != SK_ENTRY_REBIND)
    {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_FORMAT, "not a Bind or Rebind");
    }
    rc = mr_roots_check_bind(m, t, e, sn, ts, &why);
    sk_entry_free(e);
    if (rc == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "the entry is backed");
    }
    if (why.code == SK_ERR_UNAVAILABLE) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", why.msg);
    }
    return 0;
}


/* An Unbind or Change-Services (binds: a Bind or Rebind) against the
 * names' state on the verifier's own copy (with p, the sync thread's
 * pending entries). */
static int
mr_ev_update(mr_mirror_t *m, mr_tl_t *t, const sk_evidence_stmt_t *s, size_t n,
    const mr_pending_t *p, int binds, sk_err_t *err)
{
    sk_entry_type_t  ty;
    sk_entry_t  *e;
    sk_err_t     why;
    uint64_t     sn, size;
    int64_t      ts;
    int          rc;

    if (n != 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "want one statement");
    }
    if (mr_ev_entry(&e, &sn, &ts, t, &s[0], err) != 0) {
        return -1;
    }
    mr_lock(m);
    size = t->size;
    mr_unlock(m);
    if (p == NULL && size < sn) {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "the copy holds %" PRIu64
            " entries, not yet SN %" PRIu64, size, sn);
    }
    ty = sk_entry_type(e);
    if (binds ? ty != SK_ENTRY_BIND && ty != SK_ENTRY_REBIND
              : ty != SK_ENTRY_UNBIND && ty != SK_ENTRY_CHANGE_SERVICES)
    {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_FORMAT, "an entry of another type");
    }
    rc = mr_check_update(m, t, e, sn, p, &why);
    sk_entry_free(e);
    if (rc == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "the update is consistent");
    }
    if (why.code == SK_ERR_UNAVAILABLE || why.code == SK_ERR_NOMEM) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", why.msg);
    }
    return 0;
}


/* An Incorporate signed by t whose copy (the entry its Incorporated-Hash
 * names) breaks the incorporation rules, judged against the verifier's
 * own copies (with p, the sync thread's pending entries); a third
 * statement: the earlier Incorporate that took the peer's SN already. */
static int
mr_ev_incorporate(mr_mirror_t *m, mr_tl_t *t, const sk_evidence_stmt_t *s, size_t n,
    const mr_pending_t *p, sk_err_t *err)
{
    sk_entry_t  *e, *earlier = NULL, *copy;
    uint64_t     sn, esn, size;
    int64_t      ts;
    char         why[SK_ERR_MSG_MAX];
    int          rc;

    if (n != 2 && n != 3) {
        return sk_err_set(err, SK_ERR_FORMAT, "want two or three statements");
    }
    if (!sk_evidence_is(&s[1], "copy")) {
        return sk_err_set(err, SK_ERR_FORMAT, "statement 2: want a copy");
    }
    if (mr_ev_entry(&e, &sn, &ts, t, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    if (sk_entry_type(e) != SK_ENTRY_INCORPORATE) {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_FORMAT, "statement 1: not an "
            "Incorporate");
    }
    if (n == 3 && mr_ev_entry(&earlier, &esn, &ts, t, &s[2], err) != 0) {
        sk_entry_free(e);
        return sk_err_prefix(err, "statement 3");
    }
    mr_lock(m);
    size = t->size;
    mr_unlock(m);
    if (p == NULL && size < sn) {
        rc = sk_err_set(err, SK_ERR_UNAVAILABLE, "the copy holds %" PRIu64
            " entries, not yet SN %" PRIu64, size, sn);
    } else {
        rc = mr_check_incorporate(m, t, e, sn, s[1].p, s[1].len, earlier, p, &copy,
            &esn, why, sizeof(why), err);
        if (rc == 0) {
            sk_entry_free(copy);
            rc = sk_err_set(err, SK_ERR_FORMAT, "the incorporation is valid");
        } else if (rc > 0) {
            rc = n == 3 && esn == UINT64_MAX ? sk_err_set(err, SK_ERR_FORMAT,
                "statement 3 is not an earlier Incorporate of that SN") : 0;
        }
    }
    sk_entry_free(e);
    sk_entry_free(earlier);
    return rc;
}


int
mr_evidence_verify(mr_mirror_t *m, mr_tl_t *t, const char *text, size_t len,
    const mr_pending_t *p, sk_err_t *err)
{
    sk_evidence_tl_t  who;
    sk_evidence_t     ev;
    int               rc;

    if (sk_evidence_parse(&ev, text, len, MR_EV_MAX_STATEMENTS, err) != 0) {
        return -1;
    }
    mr_ev_who(&who, t);
    rc = sk_evidence_check(&ev, &who, err);
    if (rc != 1) {
        /* judged by the timeline's signatures alone */
    } else if (strcmp(ev.kind, "unbacked-bind") == 0) {
        rc = mr_ev_bind(m, t, ev.s, ev.n, err);
    } else if (strcmp(ev.kind, "unsigned-update") == 0) {
        rc = mr_ev_update(m, t, ev.s, ev.n, p, 0, err);
    } else if (strcmp(ev.kind, "inconsistent-bind") == 0) {
        rc = mr_ev_update(m, t, ev.s, ev.n, p, 1, err);
    } else if (strcmp(ev.kind, "bad-incorporation") == 0) {
        rc = mr_ev_incorporate(m, t, ev.s, ev.n, p, err);
    } else {
        rc = sk_err_set(err, SK_ERR_FORMAT, "unknown kind \"%s\"", ev.kind);
    }
    sk_evidence_free(&ev);
    return rc == 0 ? 0 : sk_err_prefix(err, "evidence (%s)", ev.kind);
}


void
mr_evidence_renege(mr_mirror_t *m, mr_tl_t *t, mr_evidence_t *ev,
    const mr_pending_t *p)
{
    sk_err_t  err;
    char     *text;
    size_t    len;

    if (mr_buf_finish(&ev->buf, &text, &len, &err) != 0) {
        mr_log("timeline %" PRIu64 ": evidence: %s", t->conf->tid, err.msg);
        return;
    }
    /* Only what anyone can check is held against a timeline. */
    if (mr_evidence_verify(m, t, text, len, p, &err) != 0) {
        mr_log("timeline %" PRIu64 ": not marked Corrupt, own %s",
            t->conf->tid, err.msg);
        mr_lock(m);
        mr_state_set(m, t, MR_STUCK, err.msg);
        mr_unlock(m);
    } else if (mr_store_evidence(m, t, text, len, &err) != 0) {
        mr_log("timeline %" PRIu64 ": storing evidence: %s", t->conf->tid,
            err.msg);
    }
    free(text);
}


void
mr_evidence_map(mr_mirror_t *m, mr_tl_t *t, uint64_t sn, const mr_batch_t *b,
    const mr_pending_t *p, const char *reason)
{
    static const mr_batch_t  none;
    mr_evidence_t            ev;
    sk_err_t                 err;
    uint64_t                 i;
    size_t                   len;
    char                    *text;

    mr_evidence_begin(&ev, "map-root", reason);
    for (i = 0; i <= sn && !ev.buf.failed; i++) {
        /* the Map-Root first, then SN 0.. */
        if (mr_store_text(m, t, b != NULL ? b : &none, i == 0 ? sn : i - 1,
                &text, &len, &err) != 0)
        {
            mr_log("timeline %" PRIu64 ": map-root evidence: %s",
                t->conf->tid, err.msg);
            free(ev.buf.p);
            return;
        }
        mr_evidence_add(&ev, "entry", text, len);
        free(text);
    }
    mr_evidence_renege(m, t, &ev, p);
}
