/*
 * client_reneged.c -- renegation evidence checked by a client
 * (docs/protocol.md, "Renegation tracking").  A mirror that holds a
 * timeline as reneged says so through Reneged-Hash; the client fetches
 * the evidence and believes it only if it verifies with what the client
 * itself ships with (the timelines' keys and origins, the root's DNSSEC
 * trust anchors).  Kinds whose proof needs a copy of the timeline's
 * history (its root-CA changes, a name's earlier entries) cannot be
 * checked that way: SK_ERR_UNAVAILABLE, and the timeline keeps the
 * client's trust.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/b64.h>
#include <sk/client.h>
#include <sk/dnssec.h>
#include <sk/evidence.h>

/* A mirror may hold a whole timeline as checkpoint-root evidence; a client
 * bounds what it parses. */
#define SK_EV_MAX_STATEMENTS  (1u << 20)


/* A DNSSEC-Chain whose SK-Signature is good, at the entry's Timestamp
 * ts, against the client's own trust anchors (read now: evidence is
 * rare).  0: it does not hold, proven; SK_ERR_UNAVAILABLE: not judged. */
static int
sk_ev_dnssec(const sk_client_trust_t *t, const sk_entry_t *e,
    const sk_key_t *k, int64_t ts, sk_err_t *err)
{
    sk_dnssec_anchors_t  *a;
    sk_err_t              why;
    int                   rc;

    if (sk_dnssec_anchors_load(&a, t->dnssec_anchors, &why) != 0) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "its DNSSEC-Chain needs "
            "the root's trust anchors (dnssec_anchors): %s", why.msg);
    }
    rc = sk_dnssec_check_entry(e, k, a, ts, &why);
    sk_dnssec_anchors_free(a);
    if (rc == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "its DNSSEC-Chain holds at "
            "its Timestamp against %s: the Bind is backed",
            t->dnssec_anchors);
    }
    if (why.code == SK_ERR_UNAVAILABLE || why.code == SK_ERR_NOMEM) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "its DNSSEC-Chain is "
            "not judged: %s", why.msg);
    }
    return 0;
}


/* unbacked-bind: provable here when the Bind's own SK-Signature fails, or
 * when its DNSSEC-Chain does not hold against the client's trust anchors;
 * a CA-Cert-Chain is judged against the timeline's root history, which a
 * client does not hold. */
static int
sk_ev_bind(const sk_client_trust_t *t, const sk_evidence_tl_t *tl,
    const sk_evidence_stmt_t *s, size_t n, sk_err_t *err)
{
    unsigned char  *der;
    sk_entry_t     *e;
    sk_key_t       *k = NULL;
    const char     *key;
    uint64_t        sn;
    int64_t         ts;
    size_t          len;
    sk_err_t        why;
    int             rc;

    if (n != 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "want one statement");
    }
    if (sk_evidence_entry(&e, &sn, &ts, tl, &s[0], err) != 0) {
        return -1;
    }
    key = sk_entry_get(e, "Key");
    if (sk_entry_type(e) != SK_ENTRY_BIND
        && sk_entry_type(e) != SK_ENTRY_REBIND)
    {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_FORMAT, "not a Bind or Rebind");
    }
    rc = key == NULL ? -1 : sk_b64_decode(&der, &len, key, strlen(key), &why);
    if (rc == 0) {
        rc = sk_key_from_spki(&k, der, len, &why);
        free(der);
    }
    if (rc != 0 || sk_entry_verify(e, SK_SIG_SK, k, &why) != 0) {
        rc = 0;                 /* its SK-Signature fails: proven */
    } else if (sk_entry_get(e, "DNSSEC-Chain") != NULL) {
        rc = sk_ev_dnssec(t, e, k, ts, err);
    } else {
        rc = sk_err_set(err, SK_ERR_UNAVAILABLE, "its SK-Signature is good; "
            "the chain is judged against the timeline's root history, "
            "which a client does not hold");
    }
    sk_key_free(k);
    sk_entry_free(e);
    return rc;
}


/* bad-incorporation: what the Incorporate and its copy show alone. */
static int
sk_ev_incorporate(const sk_client_trust_t *t, const sk_evidence_tl_t *tl,
    const sk_evidence_stmt_t *s, size_t n, sk_err_t *err)
{
    const sk_client_timeline_t  *src;
    unsigned char                h[SK_SHA256_BYTES];
    char                         hb[64];
    sk_entry_type_t              ty;
    sk_entry_t                  *e, *c = NULL, *prev = NULL;
    uint64_t                     sn, want_tid, want_sn, ctid, csn, psn;
    int64_t                      ts;
    sk_err_t                     why;
    int                          rc;

    if ((n != 2 && n != 3) || !sk_evidence_is(&s[1], "copy")) {
        return sk_err_set(err, SK_ERR_FORMAT, "want an entry, a copy and "
            "maybe an earlier entry");
    }
    if (sk_evidence_entry(&e, &sn, &ts, tl, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    if (sk_entry_type(e) != SK_ENTRY_INCORPORATE) {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_FORMAT, "statement 1: not an "
            "Incorporate");
    }
    want_tid = strtoull(sk_entry_get(e, "Incorporated-TID"), NULL, 10);
    want_sn = strtoull(sk_entry_get(e, "Incorporated-SN"), NULL, 10);
    if (want_tid == tl->tid) {
        sk_entry_free(e);
        return 0;
    }
    if (sk_entry_parse(&c, s[1].p, s[1].len, err) != 0
        || sk_entry_hash(h, c, err) != 0)
    {
        rc = sk_err_prefix(err, "statement 2");
        goto done;
    }
    sk_b64_encode(hb, h, sizeof(h));
    if (strcmp(hb, sk_entry_get(e, "Incorporated-Hash")) != 0) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "the copy is not the one the "
            "Incorporate names");
        goto done;
    }
    ty = sk_entry_type(c);
    src = sk_client_trust_find(t, want_tid);
    if (sk_entry_tid(c, &ctid, &why) != 0 || sk_entry_sn(c, &csn, &why) != 0
        || ctid != want_tid || csn != want_sn
        || (ty != SK_ENTRY_BIND && ty != SK_ENTRY_REBIND
            && ty != SK_ENTRY_UNBIND && ty != SK_ENTRY_CHANGE_SERVICES)
        || (src != NULL
            && sk_entry_verify(c, SK_SIG_TIMELINE, src->key, &why) != 0))
    {
        rc = 0;
        goto done;
    }
    if (n == 3) {
        if (sk_evidence_entry(&prev, &psn, &ts, tl, &s[2], err) != 0) {
            rc = sk_err_prefix(err, "statement 3");
            goto done;
        }
        if (sk_entry_type(prev) == SK_ENTRY_INCORPORATE && psn < sn
            && strtoull(sk_entry_get(prev, "Incorporated-TID"), NULL, 10)
               == want_tid
            && strtoull(sk_entry_get(prev, "Incorporated-SN"), NULL, 10)
               >= want_sn)
        {
            rc = 0;
            goto done;
        }
    }
    rc = sk_err_set(err, SK_ERR_UNAVAILABLE, src == NULL ? "the copy is "
        "from a timeline the client does not trust" : "the copy is judged "
        "against the timeline's history, which a client does not hold");
done:
    sk_entry_free(e);
    sk_entry_free(c);
    sk_entry_free(prev);
    return rc;
}


int
sk_client_evidence_verify(const sk_client_trust_t *t, uint64_t tid,
    const char *text, size_t len, sk_err_t *err)
{
    const sk_client_timeline_t  *tl = sk_client_trust_find(t, tid);
    sk_evidence_tl_t             who;
    sk_evidence_t                ev;
    int                          rc;

    if (tl == NULL) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "timeline %" PRIu64
            " is not trusted", tid);
    }
    if (sk_evidence_parse(&ev, text, len, SK_EV_MAX_STATEMENTS, err) != 0) {
        return -1;
    }
    who.tid = tl->tid;
    who.origin = tl->origin;
    who.key = tl->key;
    rc = sk_evidence_check(&ev, &who, err);
    if (rc != 1) {
        /* judged by the timeline's signatures alone */
    } else if (strcmp(ev.kind, "unbacked-bind") == 0) {
        rc = sk_ev_bind(t, &who, ev.s, ev.n, err);
    } else if (strcmp(ev.kind, "bad-incorporation") == 0) {
        rc = sk_ev_incorporate(t, &who, ev.s, ev.n, err);
    } else if (strcmp(ev.kind, "unsigned-update") == 0
               || strcmp(ev.kind, "inconsistent-bind") == 0)
    {
        rc = sk_err_set(err, SK_ERR_UNAVAILABLE, "judged against the "
            "names' earlier entries on the timeline, which a client does "
            "not hold");
    } else {
        rc = sk_err_set(err, SK_ERR_FORMAT, "unknown kind \"%s\"", ev.kind);
    }
    sk_evidence_free(&ev);
    return rc == 0 ? 0 : sk_err_prefix(err, "evidence (%s)", ev.kind);
}


int
sk_client_trust_distrust(sk_client_trust_t *t, uint64_t tid)
{
    size_t  i;

    for (i = 0; i < t->ntl; i++) {
        if (t->tl[i].tid == tid) {
            memmove(&t->tl[i], &t->tl[i + 1],
                (t->ntl - i - 1) * sizeof(t->tl[0]));
            t->ntl--;
            return 1;
        }
    }
    return 0;
}
