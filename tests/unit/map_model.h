/*
 * map_model.h -- the name map written naively, apart from the code under
 * test (tests/unit/test_map*.c): a plain array of keys and value hashes,
 * SHA-256 called directly, a tree built by splitting the key set bit by
 * bit, and a prover walking that tree.  Header-only, as testutil.h.
 */
#ifndef SK_MAP_MODEL_H
#define SK_MAP_MODEL_H

#include <openssl/sha.h>

#include "testutil.h"

typedef struct {
    unsigned char     key[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  value;
} mm_item_t;

typedef struct mm_node_s mm_node_t;
struct mm_node_s {
    sk_merkle_hash_t  hash;
    mm_node_t        *child[2];     /* a node of two keys or more */
    const mm_item_t  *item;         /* a subtree of one key */
};

typedef struct {
    mm_item_t  *items;
    size_t      n, cap;
    mm_node_t  *root;               /* NULL: empty, or not built */
} mm_map_t;


/* xorshift64*: reproducible from its seed on every platform. */
static inline uint64_t
mm_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}


static inline void
mm_rand_bytes(uint64_t *s, unsigned char *out, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        out[i] = (unsigned char) (mm_rand(s) >> 56);
    }
}


static inline unsigned
mm_bit(const unsigned char *key, unsigned i)
{
    return (key[i / 8] >> (7 - i % 8)) & 1;
}


static inline void
mm_sha(sk_merkle_hash_t out, unsigned char prefix, const unsigned char *a,
    size_t alen, const unsigned char *b, size_t blen)
{
    unsigned char  buf[1 + 64];

    buf[0] = prefix;
    memcpy(buf + 1, a, alen);
    memcpy(buf + 1 + alen, b, blen);
    SHA256(buf, 1 + alen + blen, out);
}


/* A key near another (sharing a random number of leading bits, up to
 * all but the last), or a fresh random one. */
static inline void
mm_rand_key(uint64_t *s, const mm_map_t *m, unsigned char key[SK_MAP_KEY_BYTES])
{
    unsigned  b;

    mm_rand_bytes(s, key, SK_MAP_KEY_BYTES);
    if (m->n > 0 && mm_rand(s) % 3 == 0) {
        b = (unsigned) (mm_rand(s) % 256);
        memcpy(key, m->items[mm_rand(s) % m->n].key, SK_MAP_KEY_BYTES);
        key[b / 8] ^= (unsigned char) (0x80 >> (b % 8));
    }
}


static inline mm_item_t *
mm_find(const mm_map_t *m, const unsigned char *key)
{
    size_t  i;

    for (i = 0; i < m->n; i++) {
        if (memcmp(m->items[i].key, key, SK_MAP_KEY_BYTES) == 0) {
            return &m->items[i];
        }
    }
    return NULL;
}


static inline void
mm_free_tree(mm_node_t *t)
{
    if (t != NULL) {
        mm_free_tree(t->child[0]);
        mm_free_tree(t->child[1]);
        free(t);
    }
}


/* Insert or replace; the tree must be built again. */
static inline void
mm_put(mm_map_t *m, const unsigned char *key, const sk_merkle_hash_t value)
{
    mm_item_t  *it = mm_find(m, key);

    if (it == NULL) {
        if (m->n == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 64;
            m->items = realloc(m->items, m->cap * sizeof(*m->items));
            assert_non_null(m->items);
        }
        it = &m->items[m->n++];
        memcpy(it->key, key, SK_MAP_KEY_BYTES);
    }
    memcpy(it->value, value, 32);
    mm_free_tree(m->root);
    m->root = NULL;
}


/* The subtree of the n items in set at depth: the definition's table,
 * literally. */
static inline mm_node_t *
mm_build(const mm_item_t **set, size_t n, unsigned depth)
{
    static const sk_merkle_hash_t  zero;
    const mm_item_t  **half[2];
    size_t             k[2] = { 0, 0 }, i;
    mm_node_t         *t;
    int                b;

    if (n == 0) {
        return NULL;
    }
    t = calloc(1, sizeof(*t));
    assert_non_null(t);
    if (n == 1) {
        t->item = set[0];
        mm_sha(t->hash, 0x10, set[0]->key, 32, set[0]->value, 32);
        return t;
    }
    assert_true(depth < 256);
    for (b = 0; b < 2; b++) {
        half[b] = malloc(n * sizeof(*half[b]));
        assert_non_null(half[b]);
    }
    for (i = 0; i < n; i++) {
        b = (int) mm_bit(set[i]->key, depth);
        half[b][k[b]++] = set[i];
    }
    for (b = 0; b < 2; b++) {
        t->child[b] = mm_build(half[b], k[b], depth + 1);
        free(half[b]);
    }
    mm_sha(t->hash, 0x11, t->child[0] ? t->child[0]->hash : zero, 32,
        t->child[1] ? t->child[1]->hash : zero, 32);
    return t;
}


static inline void
mm_root(const mm_map_t *mc, sk_merkle_hash_t out)
{
    mm_map_t          *m = (mm_map_t *) mc;
    const mm_item_t  **set;
    size_t             i;

    if (m->root == NULL && m->n > 0) {
        set = malloc(m->n * sizeof(*set));
        assert_non_null(set);
        for (i = 0; i < m->n; i++) {
            set[i] = &m->items[i];
        }
        m->root = mm_build(set, m->n, 0);
        free(set);
    }
    if (m->root == NULL) {
        memset(out, 0, 32);
    } else {
        memcpy(out, m->root->hash, 32);
    }
}


/* The proof the definition asks for, from the model's tree. */
static inline void
mm_prove(const mm_map_t *m, const unsigned char *key, sk_map_proof_t *p)
{
    sk_merkle_hash_t   root;
    const mm_node_t   *t;
    unsigned           b;

    mm_root(m, root);
    memset(p, 0, sizeof(*p));
    t = m->root;
    while (t != NULL && t->item == NULL) {
        b = mm_bit(key, p->depth);
        if (t->child[!b] != NULL) {
            p->bitmap[p->depth / 8] |= (unsigned char) (0x80 >> (p->depth % 8));
            memcpy(p->siblings[p->nsiblings++], t->child[!b]->hash, 32);
        }
        p->depth++;
        t = t->child[b];
    }
    if (t == NULL) {
        p->end = SK_MAP_END_EMPTY;
        return;
    }
    p->end = SK_MAP_END_LEAF;
    memcpy(p->leaf_key, t->item->key, 32);
    memcpy(p->leaf_value, t->item->value, 32);
}


static inline int
mm_item_cmp(const void *a, const void *b)
{
    return memcmp(((const mm_item_t *) a)->key, ((const mm_item_t *) b)->key,
        SK_MAP_KEY_BYTES);
}


/* Keys and values sorted, as sk_map_root_sorted takes them (free both). */
static inline void
mm_sorted(const mm_map_t *m, unsigned char (**keys)[SK_MAP_KEY_BYTES],
    sk_merkle_hash_t **values)
{
    mm_item_t  *c = malloc((m->n + 1) * sizeof(*c));
    size_t      i;

    assert_non_null(c);
    if (m->n > 0) {
        memcpy(c, m->items, m->n * sizeof(*c));
        qsort(c, m->n, sizeof(*c), mm_item_cmp);
    }
    *keys = malloc((m->n + 1) * SK_MAP_KEY_BYTES);
    *values = malloc((m->n + 1) * sizeof(sk_merkle_hash_t));
    assert_true(*keys != NULL && *values != NULL);
    for (i = 0; i < m->n; i++) {
        memcpy((*keys)[i], c[i].key, 32);
        memcpy((*values)[i], c[i].value, 32);
    }
    free(c);
}


static inline void
mm_free(mm_map_t *m)
{
    mm_free_tree(m->root);
    free(m->items);
    memset(m, 0, sizeof(*m));
}

#endif
