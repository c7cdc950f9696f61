/*
 * client_reneged.c -- renegation evidence checked by a client
 * (docs/protocol.md, "Renegation tracking").  A mirror that holds a
 * timeline as reneged says so through Reneged-Hash; the client fetches
 * the evidence and believes it only if it verifies with what the client
 * itself ships with (the timelines' keys and origins).  Kinds whose proof
 * needs a copy of the timeline's history (its root-CA changes, a name's
 * earlier entries) cannot be checked that way: SK_ERR_UNAVAILABLE, and the
 * timeline keeps the client's trust.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/b64.h>
#include <sk/client.h>
#include <sk/tfm.h>

#define SK_EV_MAX_STATEMENTS  (1u << 20)

typedef struct {
    const char  *type;
    size_t       typelen;
    const char  *p;
    size_t       len;
} sk_ev_stmt_t;

typedef struct {
    uint64_t          size;
    sk_merkle_hash_t  root;
    int64_t           ts;
} sk_ev_head_t;


static int
sk_ev_is(const sk_ev_stmt_t *s, const char *type)
{
    return s->typelen == strlen(type) && memcmp(s->type, type, s->typelen)
        == 0;
}


static int
sk_ev_parse(sk_ev_stmt_t **out, size_t *n, char *kind, size_t kindcap,
    const char *text, size_t len, sk_err_t *err)
{
    const char          *p = text, *end = text + len, *nl, *sp;
    sk_ev_stmt_t        *s = NULL, *ns;
    char                *e;
    unsigned long long   v;
    size_t               cap = 0;

    *out = NULL;
    *n = 0;
    nl = memchr(p, '\n', len);
    if (len < 8 || memcmp(p, "Reason: ", 8) != 0 || nl == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "evidence: line 1: want "
            "\"Reason: \"");
    }
    p = nl + 1;
    nl = memchr(p, '\n', (size_t) (end - p));
    if (nl == NULL || end - p < 7 || memcmp(p, "Kind: ", 6) != 0
        || (size_t) (nl - p - 6) >= kindcap || nl + 1 >= end || nl[1] != '\n')
    {
        return sk_err_set(err, SK_ERR_FORMAT, "evidence: line 2: want "
            "\"Kind: \" and a blank line");
    }
    memcpy(kind, p + 6, (size_t) (nl - p - 6));
    kind[nl - p - 6] = '\0';
    for (p = nl + 2; p < end; p = nl + 1 + v) {
        nl = memchr(p, '\n', (size_t) (end - p));
        sp = nl != NULL && nl - p > 11 ? memchr(p + 11, ' ',
            (size_t) (nl - p - 11)) : NULL;
        if (sp == NULL || memcmp(p, "Statement: ", 11) != 0 || sp + 1 >= nl
            || sp[1] < '0' || sp[1] > '9')
        {
            free(s);
            return sk_err_set(err, SK_ERR_FORMAT, "evidence: offset %zu: "
                "want \"Statement: TYPE N\"", (size_t) (p - text));
        }
        v = strtoull(sp + 1, &e, 10);
        if (e != nl || v > (unsigned long long) (end - nl - 1)
            || *n >= SK_EV_MAX_STATEMENTS)
        {
            free(s);
            return sk_err_set(err, SK_ERR_FORMAT, "evidence: offset %zu: "
                "statement length past the end", (size_t) (p - text));
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 4;
            ns = realloc(s, cap * sizeof(*s));
            if (ns == NULL) {
                free(s);
                return sk_err_set(err, SK_ERR_NOMEM, "evidence");
            }
            s = ns;
        }
        s[*n].type = p + 11;
        s[*n].typelen = (size_t) (sp - p - 11);
        s[*n].p = nl + 1;
        s[*n].len = (size_t) v;
        (*n)++;
    }
    *out = s;
    return 0;
}


/* An entry statement stamped and signed by timeline tl. */
static int
sk_ev_entry(sk_entry_t **e, uint64_t *sn, int64_t *ts,
    const sk_client_timeline_t *tl, const sk_ev_stmt_t *s, sk_err_t *err)
{
    uint64_t  tid;

    *e = NULL;
    if (!sk_ev_is(s, "entry")) {
        return sk_err_set(err, SK_ERR_FORMAT, "want an entry statement");
    }
    if (sk_entry_parse(e, s->p, s->len, err) != 0) {
        return -1;
    }
    if (sk_entry_tid(*e, &tid, err) != 0 || sk_entry_sn(*e, sn, err) != 0
        || sk_entry_timestamp(*e, ts, err) != 0)
    {
        goto fail;
    }
    if (tid != tl->tid) {
        sk_err_set(err, SK_ERR_FORMAT, "an entry of timeline %" PRIu64, tid);
        goto fail;
    }
    if (sk_entry_verify(*e, SK_SIG_TIMELINE, tl->key, err) != 0) {
        goto fail;
    }
    return 0;
fail:
    sk_entry_free(*e);
    *e = NULL;
    return -1;
}


static int
sk_ev_head(sk_ev_head_t *h, const sk_client_timeline_t *tl,
    const sk_ev_stmt_t *s, sk_err_t *err)
{
    sk_checkpoint_t  cp;
    sk_tfm_t         tfm;
    const char      *p;

    if (sk_ev_is(s, "checkpoint")) {
        if (sk_checkpoint_verify(&cp, s->p, s->len, tl->origin, tl->key, err)
            != 0)
        {
            return -1;
        }
        h->size = cp.size;
        memcpy(h->root, cp.root, sizeof(h->root));
        h->ts = 0;
        for (p = cp.ext; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
            p += *p == '\n';
            if (strncmp(p, "Timestamp ", 10) == 0) {
                h->ts = strtoll(p + 10, NULL, 10);
            }
        }
        return 0;
    }
    if (sk_ev_is(s, "tfm")) {
        if (sk_tfm_verify(&tfm, NULL, s->p, s->len, tl->key, err) != 0) {
            return -1;
        }
        if (tfm.tid != tl->tid) {
            return sk_err_set(err, SK_ERR_FORMAT, "tfm of TID %" PRIu64,
                tfm.tid);
        }
        h->size = tfm.tree_size;
        memcpy(h->root, tfm.root, sizeof(h->root));
        h->ts = tfm.timestamp;
        return 0;
    }
    return sk_err_set(err, SK_ERR_FORMAT, "want a checkpoint or tfm "
        "statement");
}


/* duplicate-sn (dup) and timestamp-regression. */
static int
sk_ev_two_entries(const sk_client_timeline_t *tl, const sk_ev_stmt_t *s,
    size_t n, int dup, sk_err_t *err)
{
    sk_entry_t  *a, *b;
    uint64_t     sna, snb;
    int64_t      tsa, tsb;

    if (n != 2) {
        return sk_err_set(err, SK_ERR_FORMAT, "want two statements");
    }
    if (sk_ev_entry(&a, &sna, &tsa, tl, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    sk_entry_free(a);
    if (sk_ev_entry(&b, &snb, &tsb, tl, &s[1], err) != 0) {
        return sk_err_prefix(err, "statement 2");
    }
    sk_entry_free(b);
    if (dup ? sna != snb || (s[0].len == s[1].len
                             && memcmp(s[0].p, s[1].p, s[0].len) == 0)
            : !(sna < snb && tsa > tsb))
    {
        return sk_err_set(err, SK_ERR_FORMAT, dup ? "not two different "
            "entries with one SN" : "no timestamp regression");
    }
    return 0;
}


static int
sk_ev_heads(const sk_client_timeline_t *tl, const sk_ev_stmt_t *s, size_t n,
    int fork, sk_err_t *err)
{
    sk_ev_head_t  a, b;
    sk_entry_t   *e;
    uint64_t      sn;
    int64_t       ts;

    if (n != 2) {
        return sk_err_set(err, SK_ERR_FORMAT, "want two statements");
    }
    if (sk_ev_head(&a, tl, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    if (fork) {
        if (sk_ev_head(&b, tl, &s[1], err) != 0) {
            return sk_err_prefix(err, "statement 2");
        }
        if (a.size != b.size || memcmp(a.root, b.root, sizeof(a.root)) == 0)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "heads do not fork");
        }
        return 0;
    }
    if (sk_ev_entry(&e, &sn, &ts, tl, &s[1], err) != 0) {
        return sk_err_prefix(err, "statement 2");
    }
    sk_entry_free(e);
    if (!(sn < a.size && ts > a.ts)) {
        return sk_err_set(err, SK_ERR_FORMAT, "the entry is not covered by "
            "the head, or not younger");
    }
    return 0;
}


static int
sk_ev_root(const sk_client_timeline_t *tl, const sk_ev_stmt_t *s, size_t n,
    sk_err_t *err)
{
    sk_merkle_tree_t  *tree;
    sk_merkle_hash_t   leaf, root;
    sk_ev_head_t       h;
    sk_entry_t        *e;
    uint64_t           sn;
    int64_t            ts;
    size_t             i;
    int                rc = -1;

    if (n < 2 || sk_ev_head(&h, tl, &s[0], err) != 0) {
        return n < 2 ? sk_err_set(err, SK_ERR_FORMAT, "no entries") : -1;
    }
    if (h.size != n - 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "want the head and every entry "
            "it covers");
    }
    if (sk_merkle_tree_new(&tree, err) != 0) {
        return -1;
    }
    for (i = 1; i < n; i++) {
        if (sk_ev_entry(&e, &sn, &ts, tl, &s[i], err) != 0) {
            sk_err_prefix(err, "statement %zu", i + 1);
            goto done;
        }
        sk_entry_free(e);
        if (sn != i - 1) {
            sk_err_set(err, SK_ERR_FORMAT, "statement %zu: SN %" PRIu64,
                i + 1, sn);
            goto done;
        }
        if (sk_merkle_leaf_hash(leaf, s[i].p, s[i].len, err) != 0
            || sk_merkle_tree_append(tree, leaf, err) != 0)
        {
            goto done;
        }
    }
    if (sk_merkle_tree_root(root, tree, h.size, err) == 0) {
        rc = memcmp(root, h.root, sizeof(root)) != 0 ? 0
            : sk_err_set(err, SK_ERR_FORMAT, "the root matches");
    }
done:
    sk_merkle_tree_free(tree);
    return rc;
}


/* unbacked-bind: provable here only when the Bind's own SK-Signature
 * fails; its chain is judged against the timeline's root history, which
 * a client does not hold. */
static int
sk_ev_bind(const sk_client_timeline_t *tl, const sk_ev_stmt_t *s, size_t n,
    sk_err_t *err)
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
    if (sk_ev_entry(&e, &sn, &ts, tl, &s[0], err) != 0) {
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
sk_ev_incorporate(const sk_client_trust_t *t, const sk_client_timeline_t *tl,
    const sk_ev_stmt_t *s, size_t n, sk_err_t *err)
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

    if ((n != 2 && n != 3) || !sk_ev_is(&s[1], "copy")) {
        return sk_err_set(err, SK_ERR_FORMAT, "want an entry, a copy and "
            "maybe an earlier entry");
    }
    if (sk_ev_entry(&e, &sn, &ts, tl, &s[0], err) != 0) {
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
        if (sk_ev_entry(&prev, &psn, &ts, tl, &s[2], err) != 0) {
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
    sk_ev_stmt_t                *s;
    size_t                       n;
    char                         kind[64];
    int                          rc;

    if (tl == NULL) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "timeline %" PRIu64
            " is not trusted", tid);
    }
    if (sk_ev_parse(&s, &n, kind, sizeof(kind), text, len, err) != 0) {
        return -1;
    }
    if (strcmp(kind, "duplicate-sn") == 0) {
        rc = sk_ev_two_entries(tl, s, n, 1, err);
    } else if (strcmp(kind, "timestamp-regression") == 0) {
        rc = sk_ev_two_entries(tl, s, n, 0, err);
    } else if (strcmp(kind, "forked-checkpoint") == 0) {
        rc = sk_ev_heads(tl, s, n, 1, err);
    } else if (strcmp(kind, "checkpoint-before-entry") == 0) {
        rc = sk_ev_heads(tl, s, n, 0, err);
    } else if (strcmp(kind, "checkpoint-root") == 0) {
        rc = sk_ev_root(tl, s, n, err);
    } else if (strcmp(kind, "unbacked-bind") == 0) {
        rc = sk_ev_bind(tl, s, n, err);
    } else if (strcmp(kind, "bad-incorporation") == 0) {
        rc = sk_ev_incorporate(t, tl, s, n, err);
    } else if (strcmp(kind, "unsigned-update") == 0
               || strcmp(kind, "inconsistent-bind") == 0)
    {
        rc = sk_err_set(err, SK_ERR_UNAVAILABLE, "judged against the "
            "names' earlier entries on the timeline, which a client does "
            "not hold");
    } else {
        rc = sk_err_set(err, SK_ERR_FORMAT, "unknown kind \"%s\"", kind);
    }
    free(s);
    return rc == 0 ? 0 : sk_err_prefix(err, "evidence (%s)", kind);
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
