/*
 * map_stage.c -- rows of a staged name map (sk_map_open_staged), held in
 * memory until they are written into a transaction: a dense array of
 * rows and an open-addressing index of them by kind and key.
 *
 * Why: a writer that seals a map root every few appends (the timeline's
 * batches) and committed each one to LMDB wrote the pages of every
 * touched row each time, ~6 pages an append; staged, a row touched by
 * many batches is written once per commit.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct sk_map_stage_s {
    sk_map_row_t  *rows;
    size_t         nrows, cap;
    uint64_t      *slots;       /* hash << 32 | row index + 1, 0 empty:
                                   a probe reads no row it cannot be */
    size_t         nslots;      /* a power of two, at least 2 * nrows */
};


static uint32_t
sk_map_stage_hash(unsigned kind, const unsigned char *key, size_t klen)
{
    uint64_t  h = UINT64_C(0xcbf29ce484222325) ^ kind;
    size_t    i;

    for (i = 0; i < klen; i++) {
        h = (h ^ key[i]) * UINT64_C(0x100000001b3);
    }
    return (uint32_t) (h ^ (h >> 32));
}


int
sk_map_stage_new(sk_map_stage_t **out, sk_err_t *err)
{
    if ((*out = calloc(1, sizeof(**out))) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "map stage");
    }
    return 0;
}


void
sk_map_stage_free(sk_map_stage_t *s)
{
    if (s != NULL) {
        free(s->rows);
        free(s->slots);
        free(s);
    }
}


void
sk_map_stage_clear(sk_map_stage_t *s)
{
    s->nrows = 0;
    if (s->slots != NULL) {
        memset(s->slots, 0, s->nslots * sizeof(*s->slots));
    }
}


size_t
sk_map_stage_count(const sk_map_stage_t *s)
{
    return s->nrows;
}


/* The slot of (kind, key): its row's, or the empty one it would take. */
static uint64_t *
sk_map_stage_slot(const sk_map_stage_t *s, unsigned kind,
    const unsigned char *key, size_t klen, uint32_t hash)
{
    size_t               i = hash & (s->nslots - 1);
    const sk_map_row_t  *r;

    for (;; i = (i + 1) & (s->nslots - 1)) {
        if (s->slots[i] == 0) {
            return &s->slots[i];
        }
        if ((uint32_t) (s->slots[i] >> 32) != hash) {
            continue;
        }
        r = &s->rows[(uint32_t) s->slots[i] - 1];
        if (r->kind == kind && r->klen == klen
            && memcmp(r->key, key, klen) == 0)
        {
            return &s->slots[i];
        }
    }
}


static uint64_t
sk_map_stage_ref(uint32_t hash, size_t row)
{
    return (uint64_t) hash << 32 | (uint64_t) (row + 1);
}


const sk_map_row_t *
sk_map_stage_get(const sk_map_stage_t *s, unsigned kind,
    const unsigned char *key, size_t klen)
{
    uint64_t  *slot;

    if (s->nrows == 0) {
        return NULL;
    }
    slot = sk_map_stage_slot(s, kind, key, klen,
        sk_map_stage_hash(kind, key, klen));
    return *slot != 0 ? &s->rows[(uint32_t) *slot - 1] : NULL;
}


/* Room for one more row: the array and, at half full, the index. */
static int
sk_map_stage_grow(sk_map_stage_t *s, sk_err_t *err)
{
    sk_map_row_t  *rows;
    uint64_t      *slots;
    size_t         n, i;

    if (s->nrows == s->cap) {
        n = s->cap != 0 ? 2 * s->cap : 1024;
        if (n > UINT32_MAX - 1
            || (rows = realloc(s->rows, n * sizeof(*rows))) == NULL)
        {
            return sk_err_set(err, SK_ERR_NOMEM, "map stage: %zu rows",
                s->nrows);
        }
        s->rows = rows;
        s->cap = n;
    }
    if (2 * (s->nrows + 1) <= s->nslots) {
        return 0;
    }
    n = s->nslots != 0 ? 2 * s->nslots : 4096;
    if ((slots = calloc(n, sizeof(*slots))) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "map stage: %zu rows",
            s->nrows);
    }
    free(s->slots);
    s->slots = slots;
    s->nslots = n;
    for (i = 0; i < s->nrows; i++) {
        *sk_map_stage_slot(s, s->rows[i].kind, s->rows[i].key,
            s->rows[i].klen, s->rows[i].hash)
            = sk_map_stage_ref(s->rows[i].hash, i);
    }
    return 0;
}


int
sk_map_stage_put(sk_map_stage_t *s, unsigned kind, const unsigned char *key,
    size_t klen, const unsigned char *val, size_t vlen, sk_err_t *err)
{
    sk_map_row_t  *r;
    uint64_t      *slot;
    uint32_t       hash = sk_map_stage_hash(kind, key, klen);

    if (klen > sizeof(r->key) || vlen > sizeof(r->val)) {
        return sk_err_set(err, SK_ERR_USAGE, "map stage: a row of %zu and "
            "%zu bytes", klen, vlen);
    }
    if (sk_map_stage_grow(s, err) != 0) {
        return -1;
    }
    slot = sk_map_stage_slot(s, kind, key, klen, hash);
    if (*slot == 0) {
        *slot = sk_map_stage_ref(hash, s->nrows);
        r = &s->rows[s->nrows++];
        r->hash = hash;
        r->kind = (unsigned char) kind;
        r->klen = (unsigned char) klen;
        memcpy(r->key, key, klen);
    } else {
        r = &s->rows[(uint32_t) *slot - 1];
    }
    r->vlen = (unsigned char) vlen;
    memcpy(r->val, val, vlen);
    return 0;
}


/* LMDB's order (memcmp, then length) within a kind. */
static int
sk_map_stage_cmp(const void *a, const void *b)
{
    const sk_map_row_t  *x = *(const sk_map_row_t *const *) a;
    const sk_map_row_t  *y = *(const sk_map_row_t *const *) b;
    size_t               n = x->klen < y->klen ? x->klen : y->klen;
    int                  c;

    if (x->kind != y->kind) {
        return x->kind < y->kind ? -1 : 1;
    }
    if ((c = memcmp(x->key, y->key, n)) != 0) {
        return c;
    }
    return x->klen < y->klen ? -1 : x->klen > y->klen;
}


int
sk_map_stage_each(const sk_map_stage_t *s,
    int (*fn)(const sk_map_row_t *r, void *arg, sk_err_t *err), void *arg,
    sk_err_t *err)
{
    const sk_map_row_t  **order;
    size_t                i;
    int                   rc = 0;

    if (s->nrows == 0) {
        return 0;
    }
    /* In key order: a B-tree filled in order touches each page once. */
    if ((order = malloc(s->nrows * sizeof(*order))) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "map stage: %zu rows",
            s->nrows);
    }
    for (i = 0; i < s->nrows; i++) {
        order[i] = &s->rows[i];
    }
    qsort(order, s->nrows, sizeof(*order), sk_map_stage_cmp);
    for (i = 0; i < s->nrows && rc == 0; i++) {
        rc = fn(order[i], arg, err);
    }
    free(order);
    return rc;
}
