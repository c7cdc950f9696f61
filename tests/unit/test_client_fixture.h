/*
 * test_client_fixture.h -- a small world for the client tests, made of
 * real pieces: timelines with Ed25519 keys and Merkle trees, entries
 * signed by SKs and stamped by timelines, signed checkpoints, and mirror
 * answers in the layout of docs/protocol.md "Mirror answers", signed by a
 * mirror key.
 */
#ifndef SK_TEST_CLIENT_FIXTURE_H
#define SK_TEST_CLIENT_FIXTURE_H

#include <inttypes.h>

#include "testutil.h"

#include <sk/client.h>

#define FX_MAX_TL      8
#define FX_MAX_ENTRIES 64
#define FX_NOW         1800000000      /* the tests' clock */

typedef struct {
    uint64_t           tid;
    sk_key_t          *key;
    sk_merkle_tree_t  *tree;
    char              *text[FX_MAX_ENTRIES];    /* canonical, by SN */
    size_t             len[FX_MAX_ENTRIES];
    uint64_t           n;
    int64_t            cp_ts;                   /* checkpoint's Timestamp */
    const char        *state;                   /* in answers: "Idle" */
} fx_tl_t;

typedef struct {
    fx_tl_t             tl[FX_MAX_TL];
    size_t              ntl;
    sk_key_t           *mirror;                 /* answer-signing key */
    sk_client_trust_t   trust;
    int64_t             ans_ts;                 /* answers' Timestamp
                                                   (0: FX_NOW) */
} fx_world_t;


static inline sk_key_t *
fx_key(void)
{
    sk_key_t  *k;
    sk_err_t   err;

    tu_assert_ok(sk_key_generate(&k, SK_KEY_ED25519, 0, &err), &err);
    return k;
}


/* ntl timelines, TIDs 1.., all trusted, checkpoints dated FX_NOW. */
static inline void
fx_init(fx_world_t *w, size_t ntl)
{
    sk_err_t  err;
    size_t    i;

    memset(w, 0, sizeof(*w));
    sk_client_trust_init(&w->trust);
    w->ntl = ntl;
    w->mirror = fx_key();
    for (i = 0; i < ntl; i++) {
        w->tl[i].tid = i + 1;
        w->tl[i].key = fx_key();
        w->tl[i].cp_ts = FX_NOW;
        w->tl[i].state = "Idle";
        tu_assert_ok(sk_merkle_tree_new(&w->tl[i].tree, &err), &err);
        tu_assert_ok(sk_client_trust_add_timeline(&w->trust, i + 1,
            w->tl[i].key, NULL, &err), &err);
    }
}


static inline void
fx_free(fx_world_t *w)
{
    size_t  i, j;

    for (i = 0; i < w->ntl; i++) {
        sk_key_free(w->tl[i].key);
        sk_merkle_tree_free(w->tl[i].tree);
        for (j = 0; j < w->tl[i].n; j++) {
            free(w->tl[i].text[j]);
        }
    }
    sk_key_free(w->mirror);
    sk_client_trust_free(&w->trust);
}


/* tw, "the test world", and sk1, its SK, for the tests that use them;
 * their teardown. */
static fx_world_t  tw __attribute__((unused));
static sk_key_t   *sk1 __attribute__((unused));

static inline int
fx_teardown(void **state)
{
    (void) state;
    sk_key_free(sk1);
    fx_free(&tw);
    return 0;
}


/* An SK-signed entry of type for name; fv: field, value, ..., NULL. */
static inline sk_entry_t *
fx_entry(sk_entry_type_t type, const char *name, const sk_key_t *sk,
    const char *const *fv)
{
    sk_entry_t  *e;
    sk_err_t     err;

    tu_assert_ok(sk_entry_new(&e, type, &err), &err);
    tu_assert_ok(sk_entry_set(e, "Name", name, &err), &err);
    for (; fv != NULL && fv[0] != NULL; fv += 2) {
        tu_assert_ok(sk_entry_set(e, fv[0], fv[1], &err), &err);
    }
    tu_assert_ok(sk_entry_sign(e, SK_SIG_SK, sk, &err), &err);
    return e;
}


static inline sk_entry_t *
fx_bind(const char *name, const sk_key_t *sk, const char *services,
    int subdomains)
{
    const char *fv[] = {
        "CA-Cert-Chain", TU_DOC_CERT_ROOT,
        "Includes-Subdomains", subdomains ? "1" : "0",
        "Rebinder-Names", "none", "Services", services, NULL
    };

    return fx_entry(SK_ENTRY_BIND, name, sk, fv);
}


/* Stamp e on timeline i at ts (next SN), append it; frees e. */
static inline void
fx_append(fx_world_t *w, size_t i, sk_entry_t *e, int64_t ts)
{
    fx_tl_t           *tl = &w->tl[i];
    sk_merkle_hash_t   leaf;
    sk_err_t           err;

    assert_true(tl->n < FX_MAX_ENTRIES);
    tu_assert_ok(sk_entry_stamp(e, tl->tid, tl->n, ts, tl->key, &err), &err);
    tu_assert_ok(sk_entry_format(&tl->text[tl->n], &tl->len[tl->n], e,
        &err), &err);
    tu_assert_ok(sk_merkle_leaf_hash(leaf, tl->text[tl->n], tl->len[tl->n],
        &err), &err);
    tu_assert_ok(sk_merkle_tree_append(tl->tree, leaf, &err), &err);
    tl->n++;
    sk_entry_free(e);
}


/* Timeline i's checkpoint of its whole tree, dated tl->cp_ts, signed by
 * key (the timeline's own when NULL). */
static inline char *
fx_checkpoint(fx_world_t *w, size_t i, const sk_key_t *key, size_t *len)
{
    fx_tl_t          *tl = &w->tl[i];
    sk_checkpoint_t   cp;
    sk_err_t          err;
    char             *note;

    memset(&cp, 0, sizeof(cp));
    snprintf(cp.origin, sizeof(cp.origin), "sk-timeline-%" PRIu64, tl->tid);
    cp.size = tl->n;
    tu_assert_ok(sk_merkle_tree_root(cp.root, tl->tree, tl->n, &err), &err);
    snprintf(cp.ext, sizeof(cp.ext), "Timestamp %" PRId64 "\n", tl->cp_ts);
    tu_assert_ok(sk_checkpoint_format(&note, len, &cp, cp.origin,
        key != NULL ? key : tl->key, &err), &err);
    return note;
}


static inline void
fx_add(char **buf, size_t *len, const char *data, size_t n)
{
    *buf = realloc(*buf, *len + n + 1);
    assert_non_null(*buf);
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}


static inline void
fx_addf(char **buf, size_t *len, const char *fmt, ...) SK_PRINTF(3, 4);

static inline void
fx_addf(char **buf, size_t *len, const char *fmt, ...)
{
    char     line[1024];
    va_list  ap;
    int      n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t) n < sizeof(line));
    fx_add(buf, len, line, (size_t) n);
}


/* Timeline i's name map at its whole tree: every named entry's key and
 * value, sorted by key; *n keys. */
static inline void
fx_map(fx_world_t *w, size_t i, unsigned char (*keys)[SK_MAP_KEY_BYTES],
    sk_map_value_t *vals, size_t *n)
{
    fx_tl_t           *tl = &w->tl[i];
    unsigned char      k[SK_MAP_KEY_BYTES], tk[SK_MAP_KEY_BYTES];
    sk_map_value_t     tv;
    sk_merkle_hash_t   leaf;
    sk_entry_t        *e;
    sk_err_t           err;
    uint64_t           sn;
    size_t             j;

    *n = 0;
    for (sn = 0; sn < tl->n; sn++) {
        tu_assert_ok(sk_entry_parse(&e, tl->text[sn], tl->len[sn], &err),
            &err);
        if (sk_entry_name(e) != NULL) {
            tu_assert_ok(sk_map_key(k, sk_entry_name(e), &err), &err);
            for (j = 0; j < *n && memcmp(keys[j], k, sizeof(k)) != 0; j++) {
            }
            if (j == *n) {
                memcpy(keys[j], k, sizeof(k));
                sk_map_value_init(&vals[j]);
                (*n)++;
            }
            tu_assert_ok(sk_merkle_leaf_hash(leaf, tl->text[sn], tl->len[sn],
                &err), &err);
            sk_map_value_add(&vals[j], sn, leaf);
            /* keep sorted: bubble the key into place */
            for (; j > 0 && memcmp(keys[j - 1], keys[j], sizeof(k)) > 0;
                 j--)
            {
                memcpy(tk, keys[j], sizeof(k));
                memcpy(keys[j], keys[j - 1], sizeof(k));
                memcpy(keys[j - 1], tk, sizeof(k));
                tv = vals[j];
                vals[j] = vals[j - 1];
                vals[j - 1] = tv;
            }
        }
        sk_entry_free(e);
    }
}


static inline int
fx_bit(const unsigned char *key, unsigned d)
{
    return (key[d / 8] >> (7 - d % 8)) & 1;
}


/* The hash of the subtree at depth d holding keys[0..n). */
static inline void
fx_subtree(sk_merkle_hash_t out, unsigned char (*keys)[SK_MAP_KEY_BYTES],
    const sk_map_value_t *vals, size_t n, unsigned d)
{
    sk_merkle_hash_t  l, r, v;
    size_t            mid;

    if (n == 0) {
        memset(out, 0, sizeof(sk_merkle_hash_t));
        return;
    }
    if (n == 1) {
        sk_map_value_hash(v, &vals[0]);
        sk_map_leaf_hash(out, keys[0], v);
        return;
    }
    for (mid = 0; mid < n && !fx_bit(keys[mid], d); mid++) {
    }
    fx_subtree(l, keys, vals, mid, d + 1);
    fx_subtree(r, keys + mid, vals + mid, n - mid, d + 1);
    sk_map_node_hash(out, l, r);
}


/* A small prover over the sorted map: the walk down key's path. */
static inline void
fx_map_prove(sk_map_proof_t *p, unsigned char (*keys)[SK_MAP_KEY_BYTES],
    const sk_map_value_t *vals, size_t n, const unsigned char *key)
{
    sk_merkle_hash_t  sib;
    size_t            mid;
    unsigned          d = 0;

    memset(p, 0, sizeof(*p));
    while (n >= 2) {
        for (mid = 0; mid < n && !fx_bit(keys[mid], d); mid++) {
        }
        if (fx_bit(key, d)) {
            fx_subtree(sib, keys, vals, mid, d + 1);
            keys += mid;
            vals += mid;
            n -= mid;
        } else {
            fx_subtree(sib, keys + mid, vals + mid, n - mid, d + 1);
            n = mid;
        }
        if (memcmp(sib, (sk_merkle_hash_t) { 0 }, sizeof(sib)) != 0) {
            p->bitmap[d / 8] |= (unsigned char) (0x80 >> (d % 8));
            memcpy(p->siblings[p->nsiblings++], sib, sizeof(sib));
        }
        d++;
    }
    p->depth = d;
    p->end = n == 0 ? SK_MAP_END_EMPTY : SK_MAP_END_LEAF;
    if (n == 1) {
        memcpy(p->leaf_key, keys[0], SK_MAP_KEY_BYTES);
        sk_map_value_hash(p->leaf_value, &vals[0]);
    }
}


/* Timeline i's map proof for name, as text (the map of its whole tree). */
static inline char *
fx_map_proof(fx_world_t *w, size_t i, const char *name, size_t *len)
{
    static unsigned char  keys[FX_MAX_ENTRIES][SK_MAP_KEY_BYTES];
    static sk_map_value_t vals[FX_MAX_ENTRIES];
    unsigned char         key[SK_MAP_KEY_BYTES];
    sk_map_proof_t        p;
    sk_err_t              err;
    size_t                n;
    char                 *text;

    fx_map(w, i, keys, vals, &n);
    tu_assert_ok(sk_map_key(key, name, &err), &err);
    fx_map_prove(&p, keys, vals, n, key);
    tu_assert_ok(sk_map_proof_format(&text, len, &p, &err), &err);
    return text;
}


/* Append timeline i's Map-Root entry over its entries so far, at ts. */
static inline void
fx_map_root(fx_world_t *w, size_t i, int64_t ts)
{
    static unsigned char  keys[FX_MAX_ENTRIES][SK_MAP_KEY_BYTES];
    static sk_map_value_t vals[FX_MAX_ENTRIES];
    sk_merkle_hash_t      hv[FX_MAX_ENTRIES], root;
    sk_entry_t           *e;
    sk_err_t              err;
    char                 *b64, names[24];
    size_t                n, j;

    fx_map(w, i, keys, vals, &n);
    for (j = 0; j < n; j++) {
        sk_map_value_hash(hv[j], &vals[j]);
    }
    tu_assert_ok(sk_map_root_sorted(root,
        (const unsigned char (*)[SK_MAP_KEY_BYTES]) keys, hv, n, &err), &err);
    tu_assert_ok(sk_entry_new(&e, SK_ENTRY_MAP_ROOT, &err), &err);
    b64 = sk_b64_encode_alloc(root, sizeof(root));
    snprintf(names, sizeof(names), "%zu", n);
    tu_assert_ok(sk_entry_set(e, "Map-Hash", b64, &err), &err);
    tu_assert_ok(sk_entry_set(e, "Map-Names", names, &err), &err);
    free(b64);
    fx_append(w, i, e, ts);
}


/* Is timeline i's last entry a Map-Root? */
static inline int
fx_mapped(fx_world_t *w, size_t i)
{
    fx_tl_t     *tl = &w->tl[i];
    sk_entry_t  *e;
    sk_err_t     err;
    int          r;

    if (tl->n == 0) {
        return 0;
    }
    tu_assert_ok(sk_entry_parse(&e, tl->text[tl->n - 1], tl->len[tl->n - 1],
        &err), &err);
    r = sk_entry_type(e) == SK_ENTRY_MAP_ROOT;
    sk_entry_free(e);
    return r;
}


/* "Last-Entry: ", timeline i's last entry, its proof, and its map proof
 * for name when it is a Map-Root (docs/protocol.md, "In a mirror
 * answer"); nothing for an empty tree. */
static inline void
fx_answer_last(fx_world_t *w, size_t i, const char *name, char **buf,
    size_t *len)
{
    fx_tl_t            *tl = &w->tl[i];
    sk_merkle_proof_t   proof;
    sk_err_t            err;
    char               *ptext;
    size_t              plen;

    if (tl->n == 0) {
        return;
    }
    tu_assert_ok(sk_merkle_tree_inclusion(&proof, tl->tree, tl->n - 1, tl->n,
        &err), &err);
    tu_assert_ok(sk_merkle_proof_format(&ptext, &plen, &proof, &err), &err);
    fx_addf(buf, len, "Last-Entry: %zu\n", tl->len[tl->n - 1]);
    fx_add(buf, len, tl->text[tl->n - 1], tl->len[tl->n - 1]);
    fx_addf(buf, len, "Proof: %zu\n", proof.len);
    fx_add(buf, len, ptext, plen);
    free(ptext);
    if (fx_mapped(w, i)) {
        ptext = fx_map_proof(w, i, name, &plen);
        fx_add(buf, len, ptext, plen);
        free(ptext);
    }
}


/* Timeline i's entries for name: Entry/Proof pieces (SN skip_sn left
 * out, as a mirror hiding it would). */
static inline size_t
fx_answer_entries(fx_world_t *w, size_t i, const char *name,
    uint64_t skip_sn, char **buf, size_t *len)
{
    fx_tl_t            *tl = &w->tl[i];
    sk_merkle_proof_t   proof;
    sk_entry_t         *e;
    sk_err_t            err;
    char               *ptext;
    size_t              plen, count = 0, j;
    uint64_t            sn;

    for (sn = 0; sn < tl->n; sn++) {
        tu_assert_ok(sk_entry_parse(&e, tl->text[sn], tl->len[sn], &err),
            &err);
        j = sk_entry_name(e) != NULL && strcmp(sk_entry_name(e), name) == 0
            && sn != skip_sn;
        sk_entry_free(e);
        if (!j) {
            continue;
        }
        tu_assert_ok(sk_merkle_tree_inclusion(&proof, tl->tree, sn, tl->n,
            &err), &err);
        tu_assert_ok(sk_merkle_proof_format(&ptext, &plen, &proof, &err),
            &err);
        fx_addf(buf, len, "Entry: %" PRIu64 " %zu\n", sn, tl->len[sn]);
        fx_add(buf, len, tl->text[sn], tl->len[sn]);
        fx_addf(buf, len, "Proof: %zu\n", proof.len);
        fx_add(buf, len, ptext, plen);
        free(ptext);
        count++;
    }
    return count;
}


/* buf (the answer) with the mirror's signature line after it. */
static inline char *
fx_sign(fx_world_t *w, char *buf, size_t *len)
{
    unsigned char  *sig;
    sk_err_t        err;
    char           *b64, line[128];
    size_t          siglen;

    tu_assert_ok(sk_key_sign(&sig, &siglen, w->mirror,
        (unsigned char *) buf, *len, &err), &err);
    b64 = sk_b64_encode_alloc(sig, siglen);
    snprintf(line, sizeof(line), "Signature: %s\n", b64);
    free(b64);
    free(sig);
    buf = realloc(buf, *len + strlen(line) + 1);
    assert_non_null(buf);
    memcpy(buf + *len, line, strlen(line) + 1);
    *len += strlen(line);
    return buf;
}


/* An answer for name, as sk-mirror builds it (docs/protocol.md), leaving
 * out entry skip_sn of timeline skip_tid (0: none); unsigned. */
static inline char *
fx_answer_body(fx_world_t *w, const char *name, uint64_t skip_tid,
    uint64_t skip_sn, size_t *len)
{
    char           *buf = NULL, *ebuf, *note;
    size_t          elen, nlen, i, n;
    int             served;

    *len = 0;
    fx_addf(&buf, len, "SK-Mirror-Answer: 1\nName: %s\nSince: 0\n"
        "Timestamp: %" PRId64 "\nReneged-Hash: e3b0c442\nTimelines: %zu\n",
        name, w->ans_ts != 0 ? w->ans_ts : (int64_t) FX_NOW, w->ntl);
    for (i = 0; i < w->ntl; i++) {
        served = strcmp(w->tl[i].state, "Idle") == 0
            || strcmp(w->tl[i].state, "Syncing") == 0;
        fx_addf(&buf, len, "Timeline: %" PRIu64 " %s\n", w->tl[i].tid,
            w->tl[i].state);
        if (!served) {
            fx_addf(&buf, len, "Checkpoint: 0\nEntries: 0\n");
            continue;
        }
        note = fx_checkpoint(w, i, NULL, &nlen);
        fx_addf(&buf, len, "Checkpoint: %zu\n", nlen);
        fx_add(&buf, len, note, nlen);
        free(note);
        fx_answer_last(w, i, name, &buf, len);
        ebuf = NULL;
        elen = 0;
        n = fx_answer_entries(w, i, name, w->tl[i].tid == skip_tid
            ? skip_sn : UINT64_MAX, &ebuf, &elen);
        fx_addf(&buf, len, "Entries: %zu\n", n);
        if (elen > 0) {
            fx_add(&buf, len, ebuf, elen);
        }
        free(ebuf);
    }
    return buf;
}


/* The same, signed by the world's mirror. */
static inline char *
fx_answer_omit(fx_world_t *w, const char *name, uint64_t skip_tid,
    uint64_t skip_sn, size_t *len)
{
    return fx_sign(w, fx_answer_body(w, name, skip_tid, skip_sn, len), len);
}


static inline char *
fx_answer(fx_world_t *w, const char *name, size_t *len)
{
    return fx_answer_omit(w, name, 0, 0, len);
}


/* What a mirror reads in a query URL ".../query/<name>[?nonce=<n>]":
 * name, and the nonce ("" if none). */
static inline void
fx_query(const char *url, char *name, size_t cap,
    char nonce[SK_NONCE_TEXT + 1])
{
    const char  *p = strstr(url, "/query/"), *q;

    assert_non_null(p);
    p += 7;
    q = strstr(p, "?nonce=");
    snprintf(name, cap, "%.*s", (int) (q != NULL ? (size_t) (q - p)
        : strlen(p)), p);
    snprintf(nonce, SK_NONCE_TEXT + 1, "%s", q != NULL ? q + 7 : "");
}


/* buf (an answer) with its trailer for nonce, signed by key as sk-mirror
 * does, alone in its batch; a nonce "" leaves it as it is. */
static inline char *
fx_nonce_by(const sk_key_t *key, char *buf, size_t *len, const char *nonce)
{
    sk_nonce_item_t   item, *one = &item;
    sk_err_t          err;

    if (nonce[0] == '\0') {
        return buf;
    }
    tu_assert_ok(sk_nonce_parse(item.nonce, nonce, strlen(nonce), &err),
        &err);
    sk_nonce_leaf(item.leaf, item.nonce, buf, *len);
    tu_assert_ok(sk_nonce_sign(&one, 1, key, &err), &err);
    buf = realloc(buf, *len + item.len + 1);
    assert_non_null(buf);
    memcpy(buf + *len, item.trailer, item.len);
    *len += item.len;
    buf[*len] = '\0';
    return buf;
}


static inline char *
fx_nonce(fx_world_t *w, char *buf, size_t *len, const char *nonce)
{
    return fx_nonce_by(w->mirror, buf, len, nonce);
}


/* The world's answer to a query URL, as sk-mirror gives it. */
static inline char *
fx_reply(fx_world_t *w, const char *url, size_t *len)
{
    char  name[SK_NAME_MAX + 1], nonce[SK_NONCE_TEXT + 1];

    fx_query(url, name, sizeof(name), nonce);
    return fx_nonce(w, fx_answer(w, name, len), len, nonce);
}


/* The verified view of name from a fresh answer. */
static inline void
fx_view(fx_world_t *w, sk_client_view_t *v, const char *name)
{
    sk_err_t  err;
    size_t    len;
    char     *a = fx_answer(w, name, &len);

    tu_assert_ok(sk_client_answer_verify(v, NULL, a, len, name, 0, w->mirror,
        &w->trust, FX_NOW, &err), &err);
    free(a);
}

#endif
