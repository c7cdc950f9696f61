/*
 * evidence.c -- renegation evidence (sk/evidence.h): the strict parser
 * and the kinds a timeline's own signatures prove, so that sk-mirror and
 * the client judge them alike.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sk/b64.h"
#include "sk/evidence.h"
#include "sk/map.h"
#include "sk/tfm.h"


int
sk_evidence_parse(sk_evidence_t *ev, const char *text, size_t len,
    size_t max, sk_err_t *err)
{
    const char          *p = text, *end = text + len, *nl, *sp;
    sk_evidence_stmt_t  *s = NULL, *ns;
    char                *e;
    unsigned long long   v;
    size_t               cap = 0, n = 0;

    memset(ev, 0, sizeof(*ev));
    nl = memchr(p, '\n', len);
    if (len < 8 || memcmp(p, "Reason: ", 8) != 0 || nl == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "evidence: line 1: want "
            "\"Reason: \"");
    }
    p = nl + 1;
    nl = memchr(p, '\n', (size_t) (end - p));
    if (nl == NULL || end - p < 7 || memcmp(p, "Kind: ", 6) != 0
        || (size_t) (nl - p - 6) >= sizeof(ev->kind) || nl + 1 >= end
        || nl[1] != '\n')
    {
        return sk_err_set(err, SK_ERR_FORMAT, "evidence: line 2: want "
            "\"Kind: \" and a blank line");
    }
    memcpy(ev->kind, p + 6, (size_t) (nl - p - 6));
    ev->kind[nl - p - 6] = '\0';
    for (p = nl + 2; p < end; p = nl + 1 + v) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL || end - p < 11 || memcmp(p, "Statement: ", 11) != 0) {
            free(s);
            return sk_err_set(err, SK_ERR_FORMAT, "evidence: offset %zu: "
                "want \"Statement: TYPE N\"", (size_t) (p - text));
        }
        /* the memcmp above put nl at least 11 bytes past p */
        sp = memchr(p + 11, ' ', (size_t) (nl - p - 11));
        if (sp == NULL || sp + 1 >= nl || sp[1] < '0' || sp[1] > '9') {
            free(s);
            return sk_err_set(err, SK_ERR_FORMAT, "evidence: offset %zu: "
                "bad statement line", (size_t) (p - text));
        }
        v = strtoull(sp + 1, &e, 10);
        if (e != nl || v > (unsigned long long) (end - nl - 1)) {
            free(s);
            return sk_err_set(err, SK_ERR_FORMAT, "evidence: offset %zu: "
                "statement length past the end", (size_t) (p - text));
        }
        if (n >= max) {
            free(s);
            return sk_err_set(err, SK_ERR_FORMAT, "evidence: offset %zu: "
                "more than %zu statements", (size_t) (p - text), max);
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            ns = realloc(s, cap * sizeof(*s));
            if (ns == NULL) {
                free(s);
                return sk_err_set(err, SK_ERR_NOMEM, "evidence");
            }
            s = ns;
        }
        s[n].type = p + 11;
        s[n].typelen = (size_t) (sp - p - 11);
        s[n].p = nl + 1;
        s[n].len = (size_t) v;
        n++;
    }
    ev->s = s;
    ev->n = n;
    return 0;
}


void
sk_evidence_free(sk_evidence_t *ev)
{
    if (ev != NULL) {
        free(ev->s);
        ev->s = NULL;
        ev->n = 0;
    }
}


int
sk_evidence_is(const sk_evidence_stmt_t *s, const char *type)
{
    return s->typelen == strlen(type) && memcmp(s->type, type, s->typelen)
        == 0;
}


int
sk_evidence_entry(sk_entry_t **e, uint64_t *sn, int64_t *ts,
    const sk_evidence_tl_t *tl, const sk_evidence_stmt_t *s, sk_err_t *err)
{
    uint64_t  tid;

    *e = NULL;
    if (!sk_evidence_is(s, "entry")) {
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
        sk_err_set(err, SK_ERR_FORMAT, "entry: TID %" PRIu64 ", want TID %"
            PRIu64, tid, tl->tid);
        goto fail;
    }
    if (sk_entry_verify(*e, SK_SIG_TIMELINE, tl->key, err) != 0) {
        sk_err_prefix(err, "entry SN %" PRIu64 ": timeline signature", *sn);
        goto fail;
    }
    return 0;
fail:
    sk_entry_free(*e);
    *e = NULL;
    return -1;
}


int
sk_evidence_head(sk_evidence_head_t *h, const sk_evidence_tl_t *tl,
    const sk_evidence_stmt_t *s, sk_err_t *err)
{
    sk_checkpoint_t  cp;
    sk_tfm_t         tfm;

    if (sk_evidence_is(s, "checkpoint")) {
        if (sk_checkpoint_verify(&cp, s->p, s->len, tl->origin, tl->key, err)
            != 0)
        {
            return -1;
        }
        h->size = cp.size;
        memcpy(h->root, cp.root, sizeof(h->root));
        h->ts = sk_checkpoint_timestamp(&cp);
        return 0;
    }
    if (sk_evidence_is(s, "tfm")) {
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
sk_evidence_two_entries(const sk_evidence_tl_t *tl,
    const sk_evidence_stmt_t *s, size_t n, int dup, sk_err_t *err)
{
    sk_entry_t  *a, *b;
    uint64_t     sna, snb;
    int64_t      tsa, tsb;

    if (n != 2) {
        return sk_err_set(err, SK_ERR_FORMAT, "want two statements");
    }
    if (sk_evidence_entry(&a, &sna, &tsa, tl, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    sk_entry_free(a);
    if (sk_evidence_entry(&b, &snb, &tsb, tl, &s[1], err) != 0) {
        return sk_err_prefix(err, "statement 2");
    }
    sk_entry_free(b);
    if (dup) {
        if (sna != snb || (s[0].len == s[1].len
                           && memcmp(s[0].p, s[1].p, s[0].len) == 0))
        {
            return sk_err_set(err, SK_ERR_FORMAT, "not two different "
                "entries with one SN");
        }
    } else if (!(sna < snb && tsa > tsb)) {
        return sk_err_set(err, SK_ERR_FORMAT, "no timestamp regression");
    }
    return 0;
}


/* forked-checkpoint (fork) and checkpoint-before-entry. */
static int
sk_evidence_heads(const sk_evidence_tl_t *tl, const sk_evidence_stmt_t *s,
    size_t n, int fork, sk_err_t *err)
{
    sk_evidence_head_t  a, b;
    sk_entry_t         *e;
    uint64_t            sn;
    int64_t             ts;

    if (n != 2) {
        return sk_err_set(err, SK_ERR_FORMAT, "want two statements");
    }
    if (sk_evidence_head(&a, tl, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    if (fork) {
        if (sk_evidence_head(&b, tl, &s[1], err) != 0) {
            return sk_err_prefix(err, "statement 2");
        }
        if (a.size != b.size || memcmp(a.root, b.root, sizeof(a.root)) == 0)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "heads do not fork");
        }
        return 0;
    }
    if (sk_evidence_entry(&e, &sn, &ts, tl, &s[1], err) != 0) {
        return sk_err_prefix(err, "statement 2");
    }
    sk_entry_free(e);
    if (!(sn < a.size && ts > a.ts)) {
        return sk_err_set(err, SK_ERR_FORMAT, "the entry is not covered by "
            "the head, or not younger");
    }
    return 0;
}


/* checkpoint-root: a head, then entries 0..size-1 whose root is not the
 * head's. */
static int
sk_evidence_root(const sk_evidence_tl_t *tl, const sk_evidence_stmt_t *s,
    size_t n, sk_err_t *err)
{
    sk_merkle_tree_t    *tree;
    sk_merkle_hash_t     leaf, root;
    sk_evidence_head_t   h;
    sk_entry_t          *e;
    uint64_t             sn;
    int64_t              ts;
    size_t               i;
    int                  rc = -1;

    if (n < 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "no statements");
    }
    if (sk_evidence_head(&h, tl, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    if (h.size != n - 1 || h.size == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "want the head and every entry "
            "it covers");
    }
    if (sk_merkle_tree_new(&tree, err) != 0) {
        return -1;
    }
    for (i = 1; i < n; i++) {
        if (sk_evidence_entry(&e, &sn, &ts, tl, &s[i], err) != 0) {
            sk_err_prefix(err, "statement %zu", i + 1);
            goto done;
        }
        sk_entry_free(e);
        if (sn != i - 1) {
            sk_err_set(err, SK_ERR_FORMAT, "statement %zu: SN %" PRIu64
                ", want SN %zu", i + 1, sn, i - 1);
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


int
sk_evidence_map_root(const sk_entry_t *e, sk_merkle_hash_t root,
    uint64_t *names, sk_err_t *err)
{
    const char     *h, *nv;
    unsigned char  *raw;
    size_t          rawlen;
    char           *end;

    if (sk_entry_type(e) != SK_ENTRY_MAP_ROOT) {
        return sk_err_set(err, SK_ERR_FORMAT, "not a Map-Root entry");
    }
    h = sk_entry_get(e, "Map-Hash");
    nv = sk_entry_get(e, "Map-Names");
    if (h == NULL || nv == NULL || nv[0] < '0' || nv[0] > '9') {
        return sk_err_set(err, SK_ERR_FORMAT, "Map-Root: no Map-Hash or "
            "Map-Names");
    }
    if (sk_b64_decode(&raw, &rawlen, h, strlen(h), err) != 0) {
        return sk_err_prefix(err, "Map-Hash");
    }
    if (rawlen != SK_MERKLE_HASH_BYTES) {
        free(raw);
        return sk_err_set(err, SK_ERR_FORMAT, "Map-Hash: %zu bytes, want %d",
            rawlen, SK_MERKLE_HASH_BYTES);
    }
    memcpy(root, raw, SK_MERKLE_HASH_BYTES);
    free(raw);
    *names = strtoull(nv, &end, 10);
    if (*end != '\0') {
        return sk_err_set(err, SK_ERR_FORMAT, "Map-Names: not a number");
    }
    return 0;
}


/* One named entry of a map-root evidence: its key, SN and leaf. */
typedef struct {
    unsigned char     key[SK_MAP_KEY_BYTES];
    uint64_t          sn;
    sk_merkle_hash_t  leaf;
} sk_ev_named_t;


static int
sk_ev_named_cmp(const void *a, const void *b)
{
    const sk_ev_named_t  *x = a, *y = b;
    int                   c = memcmp(x->key, y->key, SK_MAP_KEY_BYTES);

    return c != 0 ? c : (x->sn > y->sn) - (x->sn < y->sn);
}


/* The root and size of the map of the named entries (sorted by key, then
 * SN): one value per key, accumulated in SN order. */
static int
sk_ev_map(sk_merkle_hash_t root, uint64_t *names, sk_ev_named_t *v, size_t n,
    sk_err_t *err)
{
    unsigned char     (*keys)[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t   *vals;
    sk_map_value_t      val;
    size_t              i, k = 0;
    int                 rc;

    keys = malloc((n ? n : 1) * sizeof(*keys));
    vals = malloc((n ? n : 1) * sizeof(*vals));
    if (keys == NULL || vals == NULL) {
        free(keys);
        free(vals);
        return sk_err_set(err, SK_ERR_NOMEM, "map");
    }
    for (i = 0; i < n; i++) {
        if (i == 0 || memcmp(v[i].key, v[i - 1].key, SK_MAP_KEY_BYTES) != 0)
        {
            sk_map_value_init(&val);
        }
        sk_map_value_add(&val, v[i].sn, v[i].leaf);
        if (i + 1 == n
            || memcmp(v[i].key, v[i + 1].key, SK_MAP_KEY_BYTES) != 0)
        {
            memcpy(keys[k], v[i].key, SK_MAP_KEY_BYTES);
            sk_map_value_hash(vals[k++], &val);
        }
    }
    rc = sk_map_root_sorted(root, (const unsigned char (*)[SK_MAP_KEY_BYTES])
        keys, vals, k, err);
    *names = k;
    free(keys);
    free(vals);
    return rc;
}


/* map-root: a Map-Root entry at SN s, then entries 0..s-1 whose map is
 * not the one it names. */
static int
sk_evidence_map(const sk_evidence_tl_t *tl, const sk_evidence_stmt_t *s,
    size_t n, sk_err_t *err)
{
    sk_merkle_hash_t   want, root;
    sk_ev_named_t     *v;
    sk_entry_t        *e;
    uint64_t           sn, wnames, names = 0;
    int64_t            ts;
    size_t             i, k = 0;
    int                rc = -1;

    if (n < 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "no statements");
    }
    if (sk_evidence_entry(&e, &sn, &ts, tl, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    rc = sk_evidence_map_root(e, want, &wnames, err);
    sk_entry_free(e);
    if (rc != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    if (sn != n - 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "want the Map-Root and every "
            "entry before it");
    }
    v = malloc(n * sizeof(*v));
    if (v == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "evidence");
    }
    rc = -1;
    for (i = 1; i < n; i++) {
        if (sk_evidence_entry(&e, &sn, &ts, tl, &s[i], err) != 0) {
            sk_err_prefix(err, "statement %zu", i + 1);
            goto done;
        }
        if (sn != i - 1) {
            sk_entry_free(e);
            sk_err_set(err, SK_ERR_FORMAT, "statement %zu: SN %" PRIu64
                ", want SN %zu", i + 1, sn, i - 1);
            goto done;
        }
        if (sk_entry_name(e) != NULL
            && (sk_map_key(v[k].key, sk_entry_name(e), err) != 0
                || sk_merkle_leaf_hash(v[k].leaf, s[i].p, s[i].len, err)
                   != 0))
        {
            sk_entry_free(e);
            sk_err_prefix(err, "statement %zu", i + 1);
            goto done;
        }
        if (sk_entry_name(e) != NULL) {
            v[k++].sn = sn;
        }
        sk_entry_free(e);
    }
    qsort(v, k, sizeof(*v), sk_ev_named_cmp);
    if (sk_ev_map(root, &names, v, k, err) == 0) {
        rc = memcmp(root, want, sizeof(root)) != 0 || names != wnames ? 0
            : sk_err_set(err, SK_ERR_FORMAT, "the map root matches");
    }
done:
    free(v);
    return rc;
}


int
sk_evidence_check(const sk_evidence_t *ev, const sk_evidence_tl_t *tl,
    sk_err_t *err)
{
    if (strcmp(ev->kind, "duplicate-sn") == 0) {
        return sk_evidence_two_entries(tl, ev->s, ev->n, 1, err);
    }
    if (strcmp(ev->kind, "timestamp-regression") == 0) {
        return sk_evidence_two_entries(tl, ev->s, ev->n, 0, err);
    }
    if (strcmp(ev->kind, "forked-checkpoint") == 0) {
        return sk_evidence_heads(tl, ev->s, ev->n, 1, err);
    }
    if (strcmp(ev->kind, "checkpoint-before-entry") == 0) {
        return sk_evidence_heads(tl, ev->s, ev->n, 0, err);
    }
    if (strcmp(ev->kind, "checkpoint-root") == 0) {
        return sk_evidence_root(tl, ev->s, ev->n, err);
    }
    if (strcmp(ev->kind, "map-root") == 0) {
        return sk_evidence_map(tl, ev->s, ev->n, err);
    }
    return 1;
}
