/*
 * dnssec.c -- DNSSEC evidence (sk/dnssec.h).  libldns reads the wire form
 * and does the cryptography (RRSIG verification at a given time, DNSKEY
 * digests for DS); this file walks the chain itself, top-down from the
 * anchors, so that a refusal names the RRset or zone that broke it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "sk/b64.h"
#include "sk/dnssec.h"
#include "dnssec_int.h"

/* An RRset of the chain and the RRSIGs over it. */
typedef struct {
    ldns_rr_list  *rrs;
    ldns_rr_list  *sigs;
    ldns_rdf      *owner;       /* borrowed from rrs' first RR */
    ldns_rdf      *signer;      /* borrowed from sigs' first RR */
    ldns_rr_type   type;
} sk_dnssec_set_t;

/*
 * set[0] the record's RRset; then set[1 + 2k] zone k's DNSKEY RRset and
 * set[2 + 2k] its DS RRset, zone 0 being the record's signer; the last
 * is the root's DNSKEY RRset.
 */
struct sk_dnssec_chain_s {
    sk_dnssec_set_t  *set;
    size_t            n;
};


/* "TYPE OWNER" of a set, for messages. */
static void
sk_dnssec_what(char *out, size_t size, ldns_rr_type type,
    const ldns_rdf *owner)
{
    char  *t = ldns_rr_type2str(type), *o = ldns_rdf2str(owner);

    snprintf(out, size, "%s %s", t ? t : "?", o ? o : "?");
    free(t);
    free(o);
}


/* "dnssec chain: <pre><dname><post>" */
static int
sk_dnssec_name_err(sk_err_t *err, sk_err_code_t code, const char *pre,
    const ldns_rdf *dname, const char *post)
{
    char  *s = ldns_rdf2str(dname);
    int    rc;

    rc = sk_err_set(err, code, "dnssec chain: %s%s%s", pre, s ? s : "?",
        post);
    free(s);
    return rc;
}


/* One RR at *pos: whole, class IN, and exactly its uncompressed wire
 * form (which rules out name compression and trailing rdata). */
static int
sk_dnssec_read_rr(ldns_rr **rr, const unsigned char *p, size_t len,
    size_t *pos, size_t i, sk_err_t *err)
{
    ldns_status  st;
    uint8_t     *wire = NULL;
    size_t       start = *pos, wlen = 0;

    st = ldns_wire2rr(rr, p, len, pos, LDNS_SECTION_ANSWER);
    if (st != LDNS_STATUS_OK) {
        *rr = NULL;
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: RR %zu (offset "
            "%zu): %s", i, start, ldns_get_errorstr_by_id(st));
    }
    if (ldns_rr_get_class(*rr) != LDNS_RR_CLASS_IN) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: RR %zu (offset "
            "%zu): class is not IN", i, start);
    }
    st = ldns_rr2wire(&wire, *rr, LDNS_SECTION_ANSWER, &wlen);
    if (st != LDNS_STATUS_OK || wlen != *pos - start
        || memcmp(wire, p + start, wlen) != 0)
    {
        free(wire);
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: RR %zu (offset "
            "%zu): not in uncompressed wire form", i, start);
    }
    free(wire);
    return 0;
}


static void
sk_dnssec_set_free(sk_dnssec_set_t *s)
{
    ldns_rr_list_deep_free(s->rrs);
    ldns_rr_list_deep_free(s->sigs);
}


void
sk_dnssec_chain_free(sk_dnssec_chain_t *c)
{
    size_t  i;

    if (c == NULL) {
        return;
    }
    for (i = 0; i < c->n; i++) {
        sk_dnssec_set_free(&c->set[i]);
    }
    free(c->set);
    free(c);
}


/* rr (index i) goes in the open set s, or opens a new one: 1 if it does
 * not belong to s. */
static int
sk_dnssec_belongs(const sk_dnssec_set_t *s, const ldns_rr *rr)
{
    ldns_rr_type  t = ldns_rr_get_type(rr);

    if (s == NULL || ldns_dname_compare(s->owner, ldns_rr_owner(rr)) != 0) {
        return 0;
    }
    if (t == LDNS_RR_TYPE_RRSIG) {
        return ldns_rdf2rr_type(ldns_rr_rrsig_typecovered(rr)) == s->type;
    }
    return t == s->type && ldns_rr_list_rr_count(s->sigs) == 0;
}


static int
sk_dnssec_add(sk_dnssec_chain_t *c, ldns_rr *rr, size_t i, size_t off,
    sk_err_t *err)
{
    sk_dnssec_set_t  *s = c->n ? &c->set[c->n - 1] : NULL, *ns;
    ldns_rr_type      t = ldns_rr_get_type(rr);

    if (!sk_dnssec_belongs(s, rr)) {
        if (t == LDNS_RR_TYPE_RRSIG) {
            return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: RR %zu "
                "(offset %zu): an RRSIG not after the RRset it covers", i,
                off);
        }
        if (s != NULL && ldns_rr_list_rr_count(s->sigs) == 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: RR %zu "
                "(offset %zu): the RRset before it has no RRSIG", i, off);
        }
        ns = realloc(c->set, (c->n + 1) * sizeof(*ns));
        if (ns == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "dnssec chain");
        }
        c->set = ns;
        s = &c->set[c->n];
        memset(s, 0, sizeof(*s));
        s->rrs = ldns_rr_list_new();
        s->sigs = ldns_rr_list_new();
        c->n++;
        if (s->rrs == NULL || s->sigs == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "dnssec chain");
        }
        s->type = t;
        s->owner = ldns_rr_owner(rr);
    }
    if (!ldns_rr_list_push_rr(t == LDNS_RR_TYPE_RRSIG ? s->sigs : s->rrs,
                              rr))
    {
        return sk_err_set(err, SK_ERR_NOMEM, "dnssec chain");
    }
    if (t == LDNS_RR_TYPE_RRSIG && s->signer == NULL) {
        s->signer = ldns_rr_rrsig_signame(rr);
    }
    return 0;
}


/* Each set's RRSIGs by one signer, over the owner's name itself (no
 * wildcard). */
static int
sk_dnssec_sigs_ok(const sk_dnssec_set_t *s, sk_err_t *err)
{
    const ldns_rr  *sig;
    ldns_rdf       *labels;
    char            what[300];
    size_t          i;

    sk_dnssec_what(what, sizeof(what), s->type, s->owner);
    if (s->signer == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: %s has no "
            "RRSIG", what);
    }
    for (i = 0; i < ldns_rr_list_rr_count(s->sigs); i++) {
        sig = ldns_rr_list_rr(s->sigs, i);
        if (ldns_dname_compare(ldns_rr_rrsig_signame(sig), s->signer) != 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: %s: RRSIGs "
                "by two signers", what);
        }
        labels = ldns_rr_rrsig_labels(sig);
        if (labels == NULL || ldns_rdf2native_int8(labels)
            != ldns_dname_label_count(s->owner))
        {
            return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: %s: RRSIG "
                "of a wildcard expansion, not evidence", what);
        }
    }
    return 0;
}


/* set i has type t at owner zone. */
static int
sk_dnssec_want(const sk_dnssec_chain_t *c, size_t i, ldns_rr_type t,
    const ldns_rdf *zone, sk_err_t *err)
{
    char  want[300], got[300];

    sk_dnssec_what(want, sizeof(want), t, zone);
    if (i >= c->n) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: ends before "
            "%s (truncated)", want);
    }
    if (c->set[i].type != t
        || ldns_dname_compare(c->set[i].owner, zone) != 0)
    {
        sk_dnssec_what(got, sizeof(got), c->set[i].type, c->set[i].owner);
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: RRset %zu is "
            "%s, want %s", i, got, want);
    }
    return 0;
}


/* The order of the RRsets: see struct sk_dnssec_chain_s. */
static int
sk_dnssec_order(const sk_dnssec_chain_t *c, sk_err_t *err)
{
    const ldns_rdf  *zone, *parent;
    size_t           i;

    /* before the shape: an NSEC3 proof is two or three RRsets */
    if (c->n > 0 && (c->set[0].type == LDNS_RR_TYPE_NSEC
                     || c->set[0].type == LDNS_RR_TYPE_NSEC3))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: an NSEC or "
            "NSEC3 proof of non-existence, not a record");
    }
    for (i = 0; i < c->n; i++) {
        if (sk_dnssec_sigs_ok(&c->set[i], err) != 0) {
            return -1;
        }
    }
    if (c->n == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: empty");
    }
    zone = c->set[0].signer;
    if (!ldns_dname_is_subdomain(c->set[0].owner, zone)
        && ldns_dname_compare(c->set[0].owner, zone) != 0)
    {
        return sk_dnssec_name_err(err, SK_ERR_FORMAT, "the record is signed "
            "by ", zone, ", not an enclosing zone");
    }
    for (i = 1;; i += 2) {
        if (sk_dnssec_want(c, i, LDNS_RR_TYPE_DNSKEY, zone, err) != 0) {
            return -1;
        }
        if (ldns_dname_compare(c->set[i].signer, zone) != 0) {
            return sk_dnssec_name_err(err, SK_ERR_FORMAT, "DNSKEY ", zone,
                " not signed by its own zone");
        }
        if (ldns_dname_label_count(zone) == 0) {
            break;
        }
        if (sk_dnssec_want(c, i + 1, LDNS_RR_TYPE_DS, zone, err) != 0) {
            return -1;
        }
        parent = c->set[i + 1].signer;
        if (!ldns_dname_is_subdomain(zone, parent)) {
            return sk_dnssec_name_err(err, SK_ERR_FORMAT, "DS ", zone,
                " not signed by a parent zone");
        }
        zone = parent;
    }
    if (i + 1 != c->n) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: RRset %zu "
            "after the root's DNSKEY", i + 1);
    }
    return 0;
}


int
sk_dnssec_chain_parse(sk_dnssec_chain_t **c, const unsigned char *p,
    size_t len, sk_err_t *err)
{
    ldns_rr  *rr;
    size_t    pos = 0, off, i;

    *c = NULL;
    if (len > SK_DNSSEC_CHAIN_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: %zu bytes, "
            "more than %d", len, SK_DNSSEC_CHAIN_MAX);
    }
    *c = calloc(1, sizeof(**c));
    if (*c == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "dnssec chain");
    }
    for (i = 0; pos < len; i++) {
        off = pos;
        if (sk_dnssec_read_rr(&rr, p, len, &pos, i, err) != 0) {
            ldns_rr_free(rr);
            goto fail;
        }
        if (sk_dnssec_add(*c, rr, i, off, err) != 0) {
            ldns_rr_free(rr);
            goto fail;
        }
    }
    if (sk_dnssec_order(*c, err) == 0) {
        return 0;
    }
fail:
    sk_dnssec_chain_free(*c);
    *c = NULL;
    return -1;
}


/* The refusal for ldns status st over set s. */
static int
sk_dnssec_sig_err(const sk_dnssec_set_t *s, ldns_status st, sk_err_t *err)
{
    sk_err_code_t  code = SK_ERR_SIGNATURE;
    char           what[300];

    if (st == LDNS_STATUS_CRYPTO_SIG_EXPIRED) {
        code = SK_ERR_EXPIRED;
    } else if (st == LDNS_STATUS_CRYPTO_SIG_NOT_INCEPTED) {
        code = SK_ERR_NOT_YET_VALID;
    }
    sk_dnssec_what(what, sizeof(what), s->type, s->owner);
    return sk_err_set(err, code, "dnssec chain: RRSIG over %s: %s", what,
        ldns_get_errorstr_by_id(st));
}


/* Some RRSIG over s verifies with one of keys at time at.  The reported
 * failure is the most telling: a bad time or algorithm beats a key tag
 * that matched none of keys. */
static int
sk_dnssec_verify(const sk_dnssec_set_t *s, const ldns_rr_list *keys,
    int64_t at, sk_err_t *err)
{
    ldns_status  st, worst = LDNS_STATUS_CRYPTO_NO_MATCHING_KEYTAG_DNSKEY;
    size_t       i;

    for (i = 0; i < ldns_rr_list_rr_count(s->sigs); i++) {
        st = ldns_verify_rrsig_keylist_time(s->rrs,
            ldns_rr_list_rr(s->sigs, i), keys, (time_t) at, NULL);
        if (st == LDNS_STATUS_OK) {
            return 0;
        }
        if (st != LDNS_STATUS_CRYPTO_NO_MATCHING_KEYTAG_DNSKEY) {
            worst = st;
        }
    }
    return sk_dnssec_sig_err(s, worst, err);
}


/* The keys of DNSKEY set k that one of refs (DS, or DNSKEY anchors)
 * names, in *out (a list of borrowed pointers, freed by the caller with
 * ldns_rr_list_free). */
static int
sk_dnssec_linked(ldns_rr_list **out, const sk_dnssec_set_t *k,
    const ldns_rr_list *refs, sk_err_t *err)
{
    ldns_rr  *key;
    size_t    i, j;

    *out = ldns_rr_list_new();
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "dnssec chain");
    }
    for (i = 0; i < ldns_rr_list_rr_count(k->rrs); i++) {
        key = ldns_rr_list_rr(k->rrs, i);
        for (j = 0; j < ldns_rr_list_rr_count(refs); j++) {
            if (ldns_rr_compare_ds(ldns_rr_list_rr(refs, j), key)) {
                if (!ldns_rr_list_push_rr(*out, key)) {
                    return sk_err_set(err, SK_ERR_NOMEM, "dnssec chain");
                }
                break;
            }
        }
    }
    return 0;
}


/* Whether an RRSIG over DNSKEY set k names key (its key tag and
 * algorithm): whether key signed k, as far as names go. */
static int
sk_dnssec_signs(const sk_dnssec_set_t *k, const ldns_rr *key)
{
    const ldns_rr  *sig;
    size_t          i;

    for (i = 0; i < ldns_rr_list_rr_count(k->sigs); i++) {
        sig = ldns_rr_list_rr(k->sigs, i);
        if (ldns_rdf2native_int16(ldns_rr_rrsig_keytag(sig))
                == ldns_calc_keytag(key)
            && ldns_rdf2native_int8(ldns_rr_rrsig_algorithm(sig))
               == ldns_rdf2native_int8(ldns_rr_dnskey_algorithm(key)))
        {
            return 1;
        }
    }
    return 0;
}


/* The keys of list in that sign DNSKEY set k, in a new list of borrowed
 * RRs (NULL: no memory). */
static ldns_rr_list *
sk_dnssec_signing(const sk_dnssec_set_t *k, const ldns_rr_list *in)
{
    ldns_rr_list  *out = ldns_rr_list_new();
    ldns_rr       *key;
    size_t         i;

    for (i = 0; out != NULL && i < ldns_rr_list_rr_count(in); i++) {
        key = ldns_rr_list_rr(in, i);
        if (sk_dnssec_signs(k, key) && !ldns_rr_list_push_rr(out, key))
        {
            ldns_rr_list_free(out);
            out = NULL;
        }
    }
    return out;
}


/* DNSKEY set k is trusted through refs (DS records): one of its keys is
 * named there and signs it. */
static int
sk_dnssec_zone_keys(const sk_dnssec_set_t *k, const ldns_rr_list *refs,
    int64_t at, sk_err_t *err)
{
    ldns_rr_list  *linked;
    int            rc = -1;

    if (sk_dnssec_linked(&linked, k, refs, err) != 0) {
        ldns_rr_list_free(linked);
        return -1;
    }
    if (ldns_rr_list_rr_count(linked) == 0) {
        sk_dnssec_name_err(err, SK_ERR_SIGNATURE, "broken DS link: no "
            "DNSKEY of zone ", k->owner, " matches its DS RRset");
    } else {
        rc = sk_dnssec_verify(k, linked, at, err);
    }
    ldns_rr_list_free(linked);
    return rc;
}


/*
 * The root's DNSKEY set k, through the anchors in force at at: signed by
 * a key one of them names.  A set signed by no such key (whatever keys it
 * only publishes: in a rollover the next key is in the set long before it
 * signs) is a trust anchor mismatch, judged as the anchors' windows allow
 * (sk_dnssec_anchors_mismatch); one that names such a key must verify.
 */
static int
sk_dnssec_root_keys(const sk_dnssec_set_t *k, const sk_dnssec_anchors_t *a,
    int64_t at, sk_err_t *err)
{
    ldns_rr_list  *inforce, *linked = NULL, *signers = NULL;
    int            dated, rc = -1;

    if (sk_dnssec_anchors_at(&inforce, &dated, a, at, err) != 0
        || sk_dnssec_linked(&linked, k, inforce, err) != 0)
    {
        goto done;
    }
    signers = sk_dnssec_signing(k, linked);
    if (signers == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "dnssec chain");
        goto done;
    }
    if (ldns_rr_list_rr_count(signers) > 0) {
        rc = sk_dnssec_verify(k, linked, at, err);
        goto done;
    }
    ldns_rr_list_free(signers);
    signers = sk_dnssec_signing(k, k->rrs);
    if (signers == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "dnssec chain");
        goto done;
    }
    sk_dnssec_anchors_mismatch(signers, a, at, dated, err);
done:
    ldns_rr_list_free(inforce);
    ldns_rr_list_free(linked);
    ldns_rr_list_free(signers);
    return rc;
}


/* Top-down: the root's keys through the anchors in force at at, then
 * each DS RRset with the parent's keys and each zone's keys through its
 * DS, and last the record with its zone's keys. */
static int
sk_dnssec_chain_valid(const sk_dnssec_chain_t *c,
    const sk_dnssec_anchors_t *a, int64_t at, sk_err_t *err)
{
    size_t  i = c->n - 1;

    if (sk_dnssec_root_keys(&c->set[i], a, at, err) != 0) {
        return -1;
    }
    for (; i > 1; i -= 2) {
        if (sk_dnssec_verify(&c->set[i - 1], c->set[i].rrs, at, err) != 0
            || sk_dnssec_zone_keys(&c->set[i - 2], c->set[i - 1].rrs, at,
                                   err) != 0)
        {
            return -1;
        }
    }
    return sk_dnssec_verify(&c->set[0], c->set[1].rrs, at, err);
}


/* The record's text, its character-strings joined, in out. */
static int
sk_dnssec_txt(char *out, size_t size, const ldns_rr *rr)
{
    const ldns_rdf  *rd;
    size_t           i, n, len = 0;

    for (i = 0; i < ldns_rr_rd_count(rr); i++) {
        rd = ldns_rr_rdf(rr, i);
        n = ldns_rdf_size(rd);
        if (n == 0 || (size_t) ldns_rdf_data(rd)[0] != n - 1
            || len + n - 1 >= size)
        {
            return -1;
        }
        memcpy(out + len, ldns_rdf_data(rd) + 1, n - 1);
        len += n - 1;
    }
    out[len] = '\0';
    return memchr(out, '\0', len) == NULL ? 0 : -1;
}


/* "v=sk1; spki-sha256=<hex>" of sk. */
static void
sk_dnssec_text(char out[SK_FINGERPRINT_SIZE + 32], const sk_key_t *sk)
{
    char  fp[SK_FINGERPRINT_SIZE];

    sk_key_fingerprint(fp, sk);
    snprintf(out, SK_FINGERPRINT_SIZE + 32, "%s; spki-sha256=%s",
        SK_DNSSEC_VERSION, fp + strlen("sha256:"));
}


/* The record's RRset: one TXT, of the v=sk1 form, with sk's hash. */
static int
sk_dnssec_content(const sk_dnssec_set_t *s, const char *owner,
    const sk_key_t *sk, sk_err_t *err)
{
    char    txt[512], want[SK_FINGERPRINT_SIZE + 32];
    size_t  n = ldns_rr_list_rr_count(s->rrs), vlen;

    if (n != 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: %zu TXT records "
            "at %s, want exactly one", n, owner);
    }
    sk_dnssec_text(want, sk);
    vlen = strlen(SK_DNSSEC_VERSION "; spki-sha256=");
    if (sk_dnssec_txt(txt, sizeof(txt), ldns_rr_list_rr(s->rrs, 0)) != 0
        || strncmp(txt, want, vlen) != 0 || strlen(txt) != strlen(want)
        || strspn(txt + vlen, "0123456789abcdef") != strlen(txt + vlen))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: the TXT at %s "
            "is not of the form \"" SK_DNSSEC_VERSION "; spki-sha256=<64 "
            "lowercase hex digits>\"", owner);
    }
    if (strcmp(txt, want) != 0) {
        return sk_err_set(err, SK_ERR_WRONG_SK, "dnssec chain: the TXT at %s "
            "holds %s, not the SK's hash", owner, txt + vlen);
    }
    return 0;
}


int
sk_dnssec_chain_check(const sk_dnssec_chain_t *c, const char *name,
    const sk_key_t *sk, const sk_dnssec_anchors_t *a, int64_t at,
    sk_err_t *err)
{
    const sk_dnssec_set_t  *r = &c->set[0];
    ldns_rdf               *owner;
    char                    want[300], got[300];
    int                     same;

    snprintf(want, sizeof(want), SK_DNSSEC_LABEL ".%s.", name);
    owner = ldns_dname_new_frm_str(want);
    if (owner == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec: %s: not a DNS name",
            want);
    }
    same = ldns_dname_compare(owner, r->owner) == 0;
    ldns_rdf_deep_free(owner);
    if (!same || r->type != LDNS_RR_TYPE_TXT) {
        sk_dnssec_what(got, sizeof(got), r->type, r->owner);
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec chain: record %s, want "
            "TXT %s", got, want);
    }
    if (sk_dnssec_chain_valid(c, a, at, err) != 0) {
        return -1;
    }
    return sk_dnssec_content(r, want, sk, err);
}


int
sk_dnssec_check(const unsigned char *p, size_t len, const char *name,
    const sk_key_t *sk, const sk_dnssec_anchors_t *a, int64_t at,
    sk_err_t *err)
{
    sk_dnssec_chain_t  *c;
    int                 rc;

    if (sk_dnssec_chain_parse(&c, p, len, err) != 0) {
        return -1;
    }
    rc = sk_dnssec_chain_check(c, name, sk, a, at, err);
    sk_dnssec_chain_free(c);
    return rc;
}


int
sk_dnssec_check_entry(const sk_entry_t *e, const sk_key_t *sk,
    const sk_dnssec_anchors_t *a, int64_t at, sk_err_t *err)
{
    const char     *v = sk_entry_get(e, "DNSSEC-Chain");
    const char     *name = sk_entry_name(e);
    unsigned char  *raw;
    size_t          len;
    int             rc;

    if (v == NULL || name == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec: no DNSSEC-Chain");
    }
    if (sk_b64_decode(&raw, &len, v, strlen(v), err) != 0) {
        return sk_err_prefix(err, "dnssec: DNSSEC-Chain");
    }
    rc = sk_dnssec_check(raw, len, name, sk, a, at, err);
    free(raw);
    return rc;
}


int
sk_dnssec_record(char **line, const char *name, const sk_key_t *sk,
    sk_err_t *err)
{
    char    text[SK_FINGERPRINT_SIZE + 32];
    size_t  size;

    sk_dnssec_text(text, sk);
    size = strlen(name) + strlen(text) + 64;
    *line = malloc(size);
    if (*line == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "dnssec record");
    }
    snprintf(*line, size, SK_DNSSEC_LABEL ".%s. 3600 IN TXT \"%s\"", name,
        text);
    return 0;
}
