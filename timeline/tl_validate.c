/*
 * tl_validate.c -- the draft's validation rules.  Each rejection is a 403
 * whose message starts with the rule ("bind: ...", "unbind: ..."), as
 * does a 408 (no definite OCSP answer).
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/x509v3.h>

#include <sk/chain.h>

#include "tl.h"

/* Seconds a DNSSEC chain must stay valid past the validation. */
#define TL_DNSSEC_MARGIN  300


static tl_verdict_t
tl_forbid(sk_err_t *err, const char *rule)
{
    sk_err_prefix(err, "%s", rule);
    return TL_FORBIDDEN;
}


int
tl_validate_init(tl_timeline_t *tl, sk_err_t *err)
{
    if (!tl->conf.evidence_dnssec) {
        return 0;
    }
    if (sk_dnssec_anchors_load(&tl->anchors, tl->conf.dnssec_anchors, err)
        != 0)
    {
        return sk_err_prefix(err, "dnssec_anchors");
    }
    return 0;
}


void
tl_validate_free(tl_timeline_t *tl)
{
    sk_dnssec_anchors_free(tl->anchors);
    tl->anchors = NULL;
}


/* The chain a submission carries must be the path it verified by, end-
 * entity first, with or without the root: nothing else is kept for good
 * in certs.log (Sunlight and Google's CT front end store exactly the
 * verified path, too). */
static tl_verdict_t
tl_validate_path(const sk_entry_t *e, STACK_OF(X509) *path, sk_err_t *err)
{
    STACK_OF(X509)  *sent = sk_entry_get0_chain(e);
    int              i, n = sk_X509_num(sent), m = sk_X509_num(path);

    for (i = 0; i < n && i < m; i++) {
        if (X509_cmp(sk_X509_value(sent, i), sk_X509_value(path, i)) != 0) {
            break;
        }
    }
    if (i == n && n >= m - 1) {
        return TL_OK;
    }
    sk_err_set(err, SK_ERR_FORMAT, "chain: CA-Cert-Chain is not the "
        "verified path: certificate %d of %d is %s (send the end-entity "
        "certificate and the intermediates of its path to the root, in "
        "order, and nothing else)", i + 1, n, i < m ? "not the path's next"
                                                  : "past the root");
    return TL_FORBIDDEN;
}


/* "CA chain valid to a trusted root at claim time, name matches the
 * end-entity certificate, the key is bound by it" (sk/chain.h); for a
 * submission of its own, exactly the verified path, then the OCSP
 * question on it. */
static tl_verdict_t
tl_validate_chain(tl_timeline_t *tl, const sk_entry_t *e, const sk_key_t *sk,
    int64_t now, int own, sk_err_t *err)
{
    STACK_OF(X509)  *chain = NULL;
    X509_STORE      *st;
    tl_verdict_t     v;

    st = tl_roots_get(tl);
    if (st == NULL) {
        sk_err_crypto(err, "chain: verifier");
        return TL_FAULT;
    }
    if (sk_chain_check(own ? &chain : NULL, e, sk, st, now, err) != 0) {
        v = err != NULL && err->code == SK_ERR_NOMEM ? TL_FAULT
                                                     : TL_FORBIDDEN;
    } else if (own && (v = tl_validate_path(e, chain, err)) == TL_OK) {
        v = tl_ocsp_check(tl, chain, st, err);
    } else if (!own) {
        v = TL_OK;
    }
    sk_X509_pop_free(chain, X509_free);
    X509_STORE_free(st);
    return v;
}


/* DNSSEC-Chain, if this timeline takes it (sk/dnssec.h), at now and
 * TL_DNSSEC_MARGIN later: mirrors check it at the Timestamp, stamped
 * after now (clock_wait_ms, the queue), and RRSIGs expire often. */
static tl_verdict_t
tl_validate_dnssec(tl_timeline_t *tl, const sk_entry_t *e,
    const sk_key_t *sk, int64_t now, sk_err_t *err)
{
    int  rc;

    if (tl->anchors == NULL) {
        sk_err_set(err, SK_ERR_FORMAT, "DNSSEC evidence is not accepted "
            "here (evidence = %s)", tl->conf.evidence);
        return TL_FORBIDDEN;
    }
    rc = sk_dnssec_check_entry(e, sk, tl->anchors, now, err);
    if (rc == 0) {
        rc = sk_dnssec_check_entry(e, sk, tl->anchors,
            now + TL_DNSSEC_MARGIN, err);
        if (rc != 0) {
            sk_err_prefix(err, "valid now, not %d s later (it must hold "
                "until stamped)", TL_DNSSEC_MARGIN);
        }
    }
    if (rc != 0) {
        return err != NULL && err->code == SK_ERR_NOMEM ? TL_FAULT
                                                        : TL_FORBIDDEN;
    }
    return TL_OK;
}


static tl_verdict_t
tl_validate_bind(tl_timeline_t *tl, const sk_entry_t *e, const char *rule,
    int64_t now, int own, sk_err_t *err)
{
    sk_key_t      *sk;
    tl_verdict_t   v;

    if (sk_entry_key(&sk, e, err) != 0) {
        return TL_BAD_REQUEST;
    }
    if (sk_entry_verify(e, SK_SIG_SK, sk, err) != 0) {
        sk_key_free(sk);
        sk_err_prefix(err, "SK-Signature");
        return tl_forbid(err, rule);
    }
    if (sk_entry_get(e, "DNSSEC-Chain") != NULL) {
        v = tl_validate_dnssec(tl, e, sk, now, err);
    } else if (!tl->conf.evidence_ca) {
        sk_err_set(err, SK_ERR_FORMAT, "CA evidence is not accepted here "
            "(evidence = %s)", tl->conf.evidence);
        v = TL_FORBIDDEN;
    } else {
        v = tl_validate_chain(tl, e, sk, now, own, err);
    }
    sk_key_free(sk);
    if (v == TL_TIMEOUT) {
        sk_err_prefix(err, "%s", rule);
    }
    return v == TL_FORBIDDEN ? tl_forbid(err, rule) : v;
}


static tl_verdict_t
tl_validate_operator(tl_timeline_t *tl, const sk_entry_t *e, sk_err_t *err)
{
    if (tl->operator_key == NULL) {
        sk_err_set(err, SK_ERR_PERM, "no operator key configured");
        return tl_forbid(err, "operator");
    }
    if (sk_entry_verify(e, SK_SIG_OPERATOR, tl->operator_key, err) != 0) {
        return tl_forbid(err, "operator: Operator-Signature");
    }
    return TL_OK;
}


/* An Incorporate's own checks are tl_inc_validate_static's. */
tl_verdict_t
tl_validate_static(tl_timeline_t *tl, const sk_entry_t *e, int64_t now,
    int own, sk_err_t *err)
{
    switch (sk_entry_type(e)) {
    case SK_ENTRY_BIND:
        return tl_validate_bind(tl, e, "bind", now, own, err);
    case SK_ENTRY_REBIND:
        return tl_validate_bind(tl, e, "rebind", now, own, err);
    case SK_ENTRY_ADD_ROOT_CA:
    case SK_ENTRY_REMOVE_ROOT_CA:
        return tl_validate_operator(tl, e, err);
    case SK_ENTRY_MAP_ROOT:
        sk_err_set(err, SK_ERR_PERM,
            "only the timeline makes Map-Root entries");
        return tl_forbid(err, "map-root");
    default:
        return TL_OK;
    }
}


/* The SK of a name's current record signed field `which` of e. */
static int
tl_validate_sig_by(const tl_name_t *n, const sk_entry_t *e,
    sk_sig_field_t which, sk_err_t *err)
{
    unsigned char  *der;
    sk_key_t       *key;
    size_t          len;
    int             rc;

    if (sk_b64_decode(&der, &len, n->key, strlen(n->key), err) != 0) {
        return -1;
    }
    rc = sk_key_from_spki(&key, der, len, err);
    free(der);
    if (rc != 0) {
        return -1;
    }
    rc = sk_entry_verify(e, which, key, err);
    sk_key_free(key);
    return rc;
}


static int
tl_validate_listed(const char *list, const char *name)
{
    size_t       nlen = strlen(name);
    const char  *p = list;

    while ((p = strstr(p, name)) != NULL) {
        if ((p == list || p[-1] == ',') && (p[nlen] == ',' || p[nlen] == 0)) {
            return 1;
        }
        p += nlen;
    }
    return 0;
}


static int
tl_validate_bound(const tl_name_t *n)
{
    return n != NULL && n->last != SK_ENTRY_UNBIND;
}


/* Unbind and Change-Services, once bound (tl_validate_early): signed by
 * its SK, within budget. */
static tl_verdict_t
tl_validate_update(tl_timeline_t *tl, const sk_entry_t *e, const char *rule,
    int64_t now, sk_err_t *err)
{
    tl_name_t  *n = tl_state_name(tl, sk_entry_name(e));   /* bound */

    if (tl_validate_sig_by(n, e, SK_SIG_SK, err) != 0) {
        sk_err_prefix(err, "SK-Signature");
        return tl_forbid(err, rule);
    }
    /* A Change-Services carries no time: an old one, replayed, would
     * bring old services back (and spend the SK's budget). */
    if (sk_entry_type(e) == SK_ENTRY_CHANGE_SERVICES
        && tl_state_seen(tl, n, sk_entry_get(e, "SK-Signature")))
    {
        sk_err_set(err, SK_ERR_EXISTS, "%s: this entry (its SK-Signature) "
            "was taken before: a replay", sk_entry_name(e));
        return tl_forbid(err, rule);
    }
    if (tl_state_spend(tl, n, now, 1) != 0) {
        sk_err_set(err, SK_ERR_UNAVAILABLE,
            "rate limit: %s: budget of %llu per SK spent", rule,
            (unsigned long long) tl->conf.sk_budget);
        return TL_LIMITED;
    }
    return TL_OK;
}


static tl_verdict_t
tl_validate_rebind(tl_timeline_t *tl, const sk_entry_t *e, sk_err_t *err)
{
    tl_name_t   *n = tl_state_name(tl, sk_entry_name(e)), *r;
    const char  *rb = sk_entry_get(e, "Rebinder-Name");

    if (!tl_validate_listed(n->rebinders, rb)) {
        sk_err_set(err, SK_ERR_PERM, "%s is not among the rebinders of %s",
            rb, n->name);
        return tl_forbid(err, "rebind");
    }
    r = tl_state_name(tl, rb);
    if (!tl_validate_bound(r)) {
        sk_err_set(err, SK_ERR_NOT_FOUND, "rebinder %s is not bound", rb);
        return tl_forbid(err, "rebind");
    }
    if (tl_validate_sig_by(r, e, SK_SIG_REBINDER, err) != 0) {
        sk_err_prefix(err, "Rebinder-Signature");
        return tl_forbid(err, "rebind");
    }
    return TL_OK;
}


tl_verdict_t
tl_validate_early(tl_timeline_t *tl, const sk_entry_t *e, sk_err_t *err)
{
    tl_name_t  *n;

    switch (sk_entry_type(e)) {
    case SK_ENTRY_BIND:
        if (tl_state_name(tl, sk_entry_name(e)) != NULL) {
            sk_err_set(err, SK_ERR_EXISTS,
                "%s already has a Bind on this timeline", sk_entry_name(e));
            return tl_forbid(err, "bind");
        }
        return TL_OK;
    case SK_ENTRY_REBIND:
        n = tl_state_name(tl, sk_entry_name(e));
        if (n == NULL || n->last != SK_ENTRY_UNBIND) {
            sk_err_set(err, SK_ERR_FORMAT,
                "newest entry for %s is not an Unbind", sk_entry_name(e));
            return tl_forbid(err, "rebind");
        }
        return TL_OK;
    case SK_ENTRY_UNBIND:
    case SK_ENTRY_CHANGE_SERVICES:
        if (!tl_validate_bound(tl_state_name(tl, sk_entry_name(e)))) {
            sk_err_set(err, SK_ERR_NOT_FOUND, "%s is not bound",
                sk_entry_name(e));
            return tl_forbid(err, sk_entry_type(e) == SK_ENTRY_UNBIND
                ? "unbind" : "change-services");
        }
        return TL_OK;
    default:
        return TL_OK;
    }
}


tl_verdict_t
tl_validate_state(tl_timeline_t *tl, const sk_entry_t *e, int64_t now,
    sk_err_t *err)
{
    tl_verdict_t  v = tl_validate_early(tl, e, err);

    if (v != TL_OK) {
        return v;
    }
    switch (sk_entry_type(e)) {
    case SK_ENTRY_REBIND:
        return tl_validate_rebind(tl, e, err);
    case SK_ENTRY_UNBIND:
        return tl_validate_update(tl, e, "unbind", now, err);
    case SK_ENTRY_CHANGE_SERVICES:
        return tl_validate_update(tl, e, "change-services", now, err);
    case SK_ENTRY_ADD_ROOT_CA:
        if (tl_state_root_serial(tl, e, err) != 0) {
            return tl_forbid(err, "add-root-ca");
        }
        return TL_OK;
    case SK_ENTRY_REMOVE_ROOT_CA:
        if (tl_state_root_serial(tl, e, err) != 0) {
            return tl_forbid(err, "remove-root-ca");
        }
        if (tl_state_root_find(tl, sk_entry_get(e, "CA-Cert-Hash")) < 0) {
            sk_err_set(err, SK_ERR_NOT_FOUND, "no such trusted root");
            return tl_forbid(err, "remove-root-ca");
        }
        return TL_OK;
    default:
        return TL_OK;
    }
}
