/*
 * map_store.c -- the name map kept in an sk_db environment, one map per
 * space (docs/protocol.md, "The name map": "On disk").
 *
 *   map.leaf  be64(space) | key                  -> be64(count) |
 *                                                   be64(newest SN) | chain
 *   map.node  be64(space) | depth | prefix       -> flags | node |
 *                                                   [child 0] [child 1]
 *   map.node  be64(space)                        -> root | be64(names)
 *
 * A node of the tree is a subtree of two keys or more; its row is its two
 * halves' hashes (64 bytes), so a node's own hash (SHA-256(0x11 | row))
 * is the one its parent's row holds.  A map.node row holds the node at an
 * even depth (0..254) whose path is the prefix's first depth bits
 * (packed, most significant first, unused bits 0), then the rows of
 * those of its two children at depth + 1 that are nodes (flags bit 0, 1):
 * one LMDB row for two levels, so a put reads and writes about
 * log2(names) / 2 of them.  A subtree of one key has no row: its key is
 * the first map.leaf row at or after the subtree's prefix.  Puts are
 * eager: each rewrites the path to the root and the space's root record,
 * in the caller's transaction, so an aborted transaction leaves nothing
 * behind.  A staged map (sk_map_open_staged) puts the same rows into its
 * stage (map_stage.c) instead, read before the stored ones, with a tip
 * row for each key whose subtree a staged put made or split: the first
 * stored row at or after the prefix cannot name a key not yet stored.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sk/map.h>

#include "internal.h"

#define SK_MAP_HASH      SK_MERKLE_HASH_BYTES
#define SK_MAP_ROW       (2 * SK_MAP_HASH)             /* a node's halves */
#define SK_MAP_PAIR      (3 * SK_MAP_ROW)              /* a node and children */
#define SK_MAP_LEAF_VAL  (8 + 8 + SK_MAP_HASH)
#define SK_MAP_REC_VAL   (SK_MAP_HASH + 8)
#define SK_MAP_LEAF_KEY  (8 + SK_MAP_KEY_BYTES)
#define SK_MAP_NODE_KEY  (8 + 1 + SK_MAP_KEY_BYTES)
#define SK_MAP_NODES_MAX (SK_MAP_DEPTH_MAX - 1)         /* deepest: 255 */

struct sk_map_s {
    sk_db_table_t    leaf;
    sk_db_table_t    node;
    sk_map_stage_t  *stage;     /* staged rows; NULL: puts go to the txn */
};

/* The node rows on a key's path from the root, while there are any, and
 * the map.node values they came from; a put's rows, two levels at a
 * time, on their way to the table (pending: the even depth of the value
 * in out, or -1). */
typedef struct {
    unsigned          depth;                    /* rows read */
    unsigned char     row[SK_MAP_DEPTH_MAX][SK_MAP_ROW];
    unsigned          npairs;                   /* values read */
    unsigned char     pair[SK_MAP_DEPTH_MAX / 2][SK_MAP_PAIR];
    unsigned char     staged[SK_MAP_DEPTH_MAX / 2];  /* pair from the stage */
    int               pending;
    unsigned char     out[SK_MAP_PAIR];
    sk_merkle_hash_t  root;                     /* the space's record */
    uint64_t          names;
} sk_map_path_t;

/* The subtree a walk ends at (its tip): its one key, if any. */
typedef struct {
    int               found;
    unsigned char     key[SK_MAP_KEY_BYTES];
    sk_map_value_t    value;
    sk_merkle_hash_t  leaf;                     /* its leaf hash */
} sk_map_tip_t;

static const sk_merkle_hash_t  sk_map_zero;

static pthread_key_t    sk_map_path_key;
static pthread_once_t   sk_map_path_once = PTHREAD_ONCE_INIT;
static int              sk_map_path_keyed;


static unsigned
sk_map_bit(const unsigned char *key, unsigned i)
{
    return (key[i / 8] >> (7 - i % 8)) & 1;
}


static unsigned
sk_map_first_diff(const unsigned char *a, const unsigned char *b,
    unsigned from)
{
    while (from < SK_MAP_DEPTH_MAX && sk_map_bit(a, from) == sk_map_bit(b,
               from))
    {
        from++;
    }
    return from;
}


static void
sk_map_leaf_row_key(unsigned char out[SK_MAP_LEAF_KEY], uint64_t space,
    const unsigned char *key)
{
    sk_db_u64_put(out, space);
    memcpy(out + 8, key, SK_MAP_KEY_BYTES);
}


/* The map.node key of the node at depth on key's path; its length. */
static size_t
sk_map_node_row_key(unsigned char out[SK_MAP_NODE_KEY], uint64_t space,
    const unsigned char *key, unsigned depth)
{
    size_t  n = (depth + 7) / 8;

    sk_db_u64_put(out, space);
    out[8] = (unsigned char) depth;
    memcpy(out + 9, key, n);
    if (depth % 8 != 0) {
        out[9 + n - 1] &= (unsigned char) (0xff << (8 - depth % 8));
    }
    return 9 + n;
}


static void
sk_map_value_put(unsigned char out[SK_MAP_LEAF_VAL], const sk_map_value_t *v)
{
    sk_db_u64_put(out, v->count);
    sk_db_u64_put(out + 8, v->newest_sn);
    memcpy(out + 16, v->chain, SK_MAP_HASH);
}


static void
sk_map_value_get(sk_map_value_t *v, const unsigned char *in)
{
    v->count = sk_db_u64_get(in);
    v->newest_sn = sk_db_u64_get(in + 8);
    memcpy(v->chain, in + 16, SK_MAP_HASH);
}


static void
sk_map_leaf_of(sk_merkle_hash_t out, const unsigned char *key,
    const sk_map_value_t *v)
{
    sk_merkle_hash_t  vh;

    sk_map_value_hash(vh, v);
    sk_map_leaf_hash(out, key, vh);
}


static int
sk_map_open_as(sk_map_t **m, sk_db_t *db, int staged, sk_err_t *err)
{
    sk_map_t  *map = calloc(1, sizeof(*map));

    if (map == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "map");
    }
    if (sk_db_table(db, "map.leaf", 1, &map->leaf, err) != 0
        || sk_db_table(db, "map.node", 1, &map->node, err) != 0
        || (staged && sk_map_stage_new(&map->stage, err) != 0))
    {
        free(map);
        return -1;
    }
    *m = map;
    return 0;
}


int
sk_map_open(sk_map_t **m, sk_db_t *db, sk_err_t *err)
{
    return sk_map_open_as(m, db, 0, err);
}


int
sk_map_open_staged(sk_map_t **m, sk_db_t *db, sk_err_t *err)
{
    return sk_map_open_as(m, db, 1, err);
}


void
sk_map_close(sk_map_t *m)
{
    if (m != NULL) {
        sk_map_stage_free(m->stage);
        free(m);
    }
}


/* The table of a row of kind SK_MAP_ROW_NODE or _LEAF. */
static sk_db_table_t
sk_map_table(const sk_map_t *m, unsigned kind)
{
    return kind == SK_MAP_ROW_NODE ? m->node : m->leaf;
}


/* A row of kind (SK_MAP_ROW_NODE or _LEAF), staged (*staged, if not
 * NULL, says so) or else stored: 0, 1 if none, -1. */
static int
sk_map_row_get(sk_db_txn_t *txn, sk_map_t *m, unsigned kind,
    const unsigned char *k, size_t klen, const void **val, size_t *vlen,
    unsigned char *staged, sk_err_t *err)
{
    const sk_map_row_t  *r;

    r = m->stage != NULL ? sk_map_stage_get(m->stage, kind, k, klen) : NULL;
    if (staged != NULL) {
        *staged = r != NULL;
    }
    if (r != NULL) {
        *val = r->val;
        *vlen = r->vlen;
        return 0;
    }
    return sk_db_get(txn, sk_map_table(m, kind), k, klen, val, vlen, err);
}


/* Write a row of kind (SK_MAP_ROW_NODE or _LEAF): staged, or into txn. */
static int
sk_map_row_put(sk_db_txn_t *txn, sk_map_t *m, unsigned kind,
    const unsigned char *k, size_t klen, const unsigned char *v,
    size_t vlen, sk_err_t *err)
{
    if (m->stage != NULL) {
        return sk_map_stage_put(m->stage, kind, k, klen, v, vlen, err);
    }
    return sk_db_put(txn, sk_map_table(m, kind), k, klen, v, vlen, err);
}


/* Staged: key is the one key of its subtree at depth (the walk for any
 * key under that prefix ends there and finds it, stored or not).  A tip
 * left behind when its subtree grows into a node is never asked for
 * again: keys are never taken out. */
static int
sk_map_tip_note(sk_map_t *m, uint64_t space, const unsigned char *key,
    unsigned depth, sk_err_t *err)
{
    unsigned char  k[SK_MAP_NODE_KEY];
    size_t         klen;

    if (m->stage == NULL) {
        return 0;
    }
    klen = sk_map_node_row_key(k, space, key, depth);
    return sk_map_stage_put(m->stage, SK_MAP_ROW_TIP, k, klen, key,
        SK_MAP_KEY_BYTES, err);
}


/* The space's root record: an absent one is the empty map. */
static int
sk_map_record(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    unsigned char *root, uint64_t *names, sk_err_t *err)
{
    unsigned char  k[8];
    const void    *val;
    size_t         vlen;
    int            rc;

    sk_db_u64_put(k, space);
    rc = sk_map_row_get(txn, m, SK_MAP_ROW_NODE, k, sizeof(k), &val, &vlen,
        NULL, err);
    if (rc < 0) {
        return -1;
    }
    if (rc == 1) {
        memset(root, 0, SK_MAP_HASH);
        *names = 0;
        return 0;
    }
    if (vlen != SK_MAP_REC_VAL) {
        return sk_err_set(err, SK_ERR_FORMAT, "map.node: the root record of "
            "space %" PRIu64 " is %zu bytes, not %d", space, vlen,
            SK_MAP_REC_VAL);
    }
    memcpy(root, val, SK_MAP_HASH);
    *names = sk_db_u64_get((const unsigned char *) val + SK_MAP_HASH);
    return 0;
}


/* Where the row of the node at depth on key's path is in its map.node
 * value: 0, or the child's 1 or 2. */
static unsigned
sk_map_part(const unsigned char *key, unsigned depth)
{
    return depth % 2 == 0 ? 0 : 1 + sk_map_bit(key, depth - 1);
}


/* The map.node value at even depth on key's path, as the node's row and
 * its children's (64 zero bytes for a child that is no node): 0, 1 if
 * none, -1.  Stored, a flag byte says which children are there, and only
 * those follow the node's row. */
static int
sk_map_pair_get(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char *key, unsigned depth, unsigned char *out,
    unsigned char *staged, sk_err_t *err)
{
    unsigned char         k[SK_MAP_NODE_KEY];
    const unsigned char  *v;
    const void           *val;
    size_t                klen, vlen, want;
    unsigned              c, flags;
    int                   rc;

    klen = sk_map_node_row_key(k, space, key, depth);
    rc = sk_map_row_get(txn, m, SK_MAP_ROW_NODE, k, klen, &val, &vlen,
        staged, err);
    if (rc != 0) {
        return rc;
    }
    v = val;
    flags = vlen > 0 ? v[0] : 4;
    want = flags <= 3 ? 1 + SK_MAP_ROW * (1 + (flags & 1) + (flags >> 1)) : 0;
    if (vlen != want) {
        return sk_err_set(err, SK_ERR_FORMAT, "map.node row (space %" PRIu64
            ", depth %u): %zu bytes, not as its flags say", space, depth,
            vlen);
    }
    memcpy(out, v + 1, SK_MAP_ROW);
    v += 1 + SK_MAP_ROW;
    for (c = 0; c < 2; c++) {
        if (flags & (1u << c)) {
            memcpy(out + SK_MAP_ROW * (1 + c), v, SK_MAP_ROW);
            v += SK_MAP_ROW;
        } else {
            memset(out + SK_MAP_ROW * (1 + c), 0, SK_MAP_ROW);
        }
    }
    return 0;
}


/* 1 if row is 64 zero bytes: no node. */
static int
sk_map_row_none(const unsigned char *row)
{
    return memcmp(row, sk_map_zero, SK_MAP_HASH) == 0
           && memcmp(row + SK_MAP_HASH, sk_map_zero, SK_MAP_HASH) == 0;
}


/* The root record and the node rows on key's path. */
static int
sk_map_walk(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char *key, sk_map_path_t *p, sk_err_t *err)
{
    const unsigned char  *part;
    unsigned              t;
    int                   rc;

    p->npairs = 0;
    p->pending = -1;
    if (sk_map_record(txn, m, space, p->root, &p->names, err) != 0) {
        return -1;
    }
    for (t = 0; t <= SK_MAP_NODES_MAX; t++) {
        p->depth = t;
        if (t % 2 == 0) {
            rc = sk_map_pair_get(txn, m, space, key, t, p->pair[t / 2],
                &p->staged[t / 2], err);
            if (rc != 0) {
                return rc < 0 ? -1 : 0;
            }
            p->npairs++;
        }
        part = p->pair[t / 2] + SK_MAP_ROW * sk_map_part(key, t);
        if (t % 2 == 1 && sk_map_row_none(part)) {
            return 0;                           /* the child is no node */
        }
        memcpy(p->row[t], part, SK_MAP_ROW);
    }
    p->depth = SK_MAP_DEPTH_MAX;
    return 0;
}


/* The hash the path's last row (or the root record) holds for the
 * subtree below it on key's path. */
static const unsigned char *
sk_map_tip_hash(const sk_map_path_t *p, const unsigned char *key)
{
    if (p->depth == 0) {
        return p->root;
    }
    return p->row[p->depth - 1] + SK_MAP_HASH
           * sk_map_bit(key, p->depth - 1);
}


/* The first key under key's first depth bits (the subtree's only one,
 * if it holds one), its value and leaf hash. */
static int
sk_map_tip(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char *key, unsigned depth, sk_map_tip_t *tip,
    sk_err_t *err)
{
    unsigned char        k[SK_MAP_LEAF_KEY], nk[SK_MAP_NODE_KEY];
    const unsigned char *fk;
    const void          *fkv, *val;
    const sk_map_row_t  *r;
    size_t               fklen, vlen;
    unsigned             i;
    int                  rc;

    tip->found = 0;
    r = m->stage == NULL ? NULL : sk_map_stage_get(m->stage, SK_MAP_ROW_TIP,
        nk, sk_map_node_row_key(nk, space, key, depth));
    if (r != NULL) {
        /* A key staged, or moved by a staged one, may not be stored. */
        sk_map_leaf_row_key(k, space, r->val);
        rc = sk_map_row_get(txn, m, SK_MAP_ROW_LEAF, k, sizeof(k), &val,
            &vlen, NULL, err);
        if (rc != 0) {
            return rc < 0 ? -1 : sk_err_set(err, SK_ERR_FORMAT, "map.leaf "
                "row (space %" PRIu64 ", depth %u): missing for a staged "
                "key", space, depth);
        }
        fk = k;
    } else {
        sk_map_leaf_row_key(k, space, key);
        for (i = depth; i < SK_MAP_DEPTH_MAX; i++) {
            k[8 + i / 8] &= (unsigned char) ~(0x80 >> (i % 8));
        }
        rc = sk_db_seek(txn, m->leaf, k, sizeof(k), &fkv, &fklen, &val,
            &vlen, err);
        fk = fkv;
        if (rc != 0 || fklen != SK_MAP_LEAF_KEY || memcmp(fk, k, 8) != 0
            || sk_map_first_diff(fk + 8, key, 0) < depth)
        {
            return rc < 0 ? -1 : 0;
        }
        /* A stored key whose value is staged. */
        if (m->stage != NULL
            && (r = sk_map_stage_get(m->stage, SK_MAP_ROW_LEAF, fk,
                    SK_MAP_LEAF_KEY)) != NULL)
        {
            val = r->val;
            vlen = r->vlen;
        }
    }
    if (vlen != SK_MAP_LEAF_VAL) {
        return sk_err_set(err, SK_ERR_FORMAT, "map.leaf row (space %" PRIu64
            ", depth %u): %zu bytes, not %d", space, depth, vlen,
            SK_MAP_LEAF_VAL);
    }
    tip->found = 1;
    memcpy(tip->key, fk + 8, SK_MAP_KEY_BYTES);
    sk_map_value_get(&tip->value, val);
    sk_map_leaf_of(tip->leaf, tip->key, &tip->value);
    return 0;
}


int
sk_map_get(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], sk_map_value_t *v,
    sk_err_t *err)
{
    unsigned char  k[SK_MAP_LEAF_KEY];
    const void    *val;
    size_t         vlen;
    int            rc;

    sk_map_leaf_row_key(k, space, key);
    rc = sk_map_row_get(txn, m, SK_MAP_ROW_LEAF, k, sizeof(k), &val, &vlen,
        NULL, err);
    if (rc != 0) {
        return rc;
    }
    if (vlen != SK_MAP_LEAF_VAL) {
        return sk_err_set(err, SK_ERR_FORMAT, "map.leaf row (space %" PRIu64
            "): %zu bytes, not %d", space, vlen, SK_MAP_LEAF_VAL);
    }
    sk_map_value_get(v, val);
    return 0;
}


static int
sk_map_flush(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char *key, sk_map_path_t *p, sk_err_t *err)
{
    unsigned char  k[SK_MAP_NODE_KEY], v[1 + SK_MAP_PAIR];
    size_t         klen, n = 1 + SK_MAP_ROW;
    unsigned       c;

    if (p->pending < 0) {
        return 0;
    }
    klen = sk_map_node_row_key(k, space, key, (unsigned) p->pending);
    p->pending = -1;
    v[0] = 0;
    memcpy(v + 1, p->out, SK_MAP_ROW);
    for (c = 0; c < 2; c++) {
        if (!sk_map_row_none(p->out + SK_MAP_ROW * (1 + c))) {
            v[0] |= (unsigned char) (1u << c);
            memcpy(v + n, p->out + SK_MAP_ROW * (1 + c), SK_MAP_ROW);
            n += SK_MAP_ROW;
        }
    }
    return sk_map_row_put(txn, m, SK_MAP_ROW_NODE, k, klen, v, n, err);
}


/* The row of the node at depth on key's path, rows written deepest
 * first: each map.node value is written once, when its node's row is. */
static int
sk_map_put_row(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char *key, sk_map_path_t *p, unsigned depth,
    const unsigned char *row, sk_err_t *err)
{
    unsigned  even = depth & ~1u;

    if (p->pending != (int) even) {
        if (sk_map_flush(txn, m, space, key, p, err) != 0) {
            return -1;
        }
        p->pending = (int) even;
        if (even / 2 < p->npairs) {
            memcpy(p->out, p->pair[even / 2], SK_MAP_PAIR);
        } else {
            memset(p->out, 0, SK_MAP_PAIR);
        }
    }
    memcpy(p->out + SK_MAP_ROW * sk_map_part(key, depth), row, SK_MAP_ROW);
    return depth == even ? sk_map_flush(txn, m, space, key, p, err) : 0;
}


/* A new key meets the one key (other, its leaf hash other_leaf) of the
 * subtree at depth on its path: rows for every node from the one where
 * they part up to depth; h is the subtree's new hash. */
static int
sk_map_split(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char *key, sk_map_path_t *p, const sk_merkle_hash_t leaf,
    const sk_map_tip_t *other, sk_merkle_hash_t h, sk_err_t *err)
{
    unsigned       depth = p->depth;
    unsigned char  row[SK_MAP_ROW];
    unsigned       t = sk_map_first_diff(key, other->key, depth), b;

    if (sk_map_tip_note(m, space, key, t + 1, err) != 0
        || sk_map_tip_note(m, space, other->key, t + 1, err) != 0)
    {
        return -1;
    }
    b = sk_map_bit(key, t);
    memcpy(row + SK_MAP_HASH * b, leaf, SK_MAP_HASH);
    memcpy(row + SK_MAP_HASH * !b, other->leaf, SK_MAP_HASH);
    for (;;) {
        if (sk_map_put_row(txn, m, space, key, p, t, row, err) != 0) {
            return -1;
        }
        sk_map_node_hash(h, row, row + SK_MAP_HASH);
        if (t-- == depth) {
            return 0;
        }
        b = sk_map_bit(key, t);
        memcpy(row + SK_MAP_HASH * b, h, SK_MAP_HASH);
        memset(row + SK_MAP_HASH * !b, 0, SK_MAP_HASH);
    }
}


static void
sk_map_path_key_make(void)
{
    sk_map_path_keyed = pthread_key_create(&sk_map_path_key, free) == 0;
}


/* The calling thread's path for lookups, kept for its life (freed when
 * it ends): malloc gives 41 KiB back to the system at each free, and a
 * lookup that takes it again faults its pages in (an eighth of an
 * answer's time).  NULL without memory. */
static sk_map_path_t *
sk_map_path_get(void)
{
    sk_map_path_t  *p;

    pthread_once(&sk_map_path_once, sk_map_path_key_make);
    if (!sk_map_path_keyed) {
        return NULL;
    }
    p = pthread_getspecific(sk_map_path_key);
    if (p == NULL && (p = malloc(sizeof(*p))) != NULL
        && pthread_setspecific(sk_map_path_key, p) != 0)
    {
        free(p);
        p = NULL;
    }
    return p;
}


/* The path's rows, h set in each on key's side from the bottom up, and
 * the root record. */
static int
sk_map_put_path(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char *key, sk_map_path_t *p, sk_merkle_hash_t h,
    sk_err_t *err)
{
    unsigned char  k[8], rec[SK_MAP_REC_VAL];
    unsigned       t;

    for (t = p->depth; t-- > 0; ) {
        memcpy(p->row[t] + SK_MAP_HASH * sk_map_bit(key, t), h, SK_MAP_HASH);
        if (sk_map_put_row(txn, m, space, key, p, t, p->row[t], err) != 0)
        {
            return -1;
        }
        sk_map_node_hash(h, p->row[t], p->row[t] + SK_MAP_HASH);
    }
    if (sk_map_flush(txn, m, space, key, p, err) != 0) {
        return -1;
    }
    sk_db_u64_put(k, space);
    memcpy(rec, h, SK_MAP_HASH);
    sk_db_u64_put(rec + SK_MAP_HASH, p->names);
    return sk_map_row_put(txn, m, SK_MAP_ROW_NODE, k, sizeof(k), rec,
        sizeof(rec), err);
}


int
sk_map_put(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_map_value_t *v,
    sk_err_t *err)
{
    sk_map_path_t     *p;
    sk_map_tip_t       tip;
    sk_merkle_hash_t   leaf, h;
    unsigned char      k[SK_MAP_LEAF_KEY], val[SK_MAP_LEAF_VAL];
    int                rc;

    p = sk_map_path_get();
    if (p == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "map path");
    }
    sk_map_leaf_of(leaf, key, v);
    memcpy(h, leaf, SK_MAP_HASH);
    rc = sk_map_walk(txn, m, space, key, p, err);
    if (rc == 0) {
        rc = sk_map_tip(txn, m, space, key, p->depth, &tip, err);
    }
    if (rc == 0 && !(tip.found
                     && memcmp(tip.key, key, SK_MAP_KEY_BYTES) == 0))
    {
        p->names++;
        rc = tip.found
             ? sk_map_split(txn, m, space, key, p, leaf, &tip, h, err)
             : sk_map_tip_note(m, space, key, p->depth, err);
    }
    sk_map_leaf_row_key(k, space, key);
    sk_map_value_put(val, v);
    if (rc == 0) {
        rc = sk_map_row_put(txn, m, SK_MAP_ROW_LEAF, k, sizeof(k), val,
            sizeof(val), err);
    }
    if (rc == 0) {
        rc = sk_map_put_path(txn, m, space, key, p, h, err);
    }
    return rc;
}


int
sk_map_root(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    sk_merkle_hash_t root, uint64_t *names, sk_err_t *err)
{
    return sk_map_record(txn, m, space, root, names, err);
}


/* The walk for key and the subtree it ends at, every row held against
 * the hash above it from root (NULL: the space's record) down, the end
 * too, so a changed byte on the path is found. */
static int
sk_map_descend(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char *key, const unsigned char *root, sk_map_path_t *p,
    sk_map_tip_t *tip, sk_err_t *err)
{
    sk_merkle_hash_t      h;
    const unsigned char  *above;
    unsigned              t;
    int                   trust;

    if (sk_map_walk(txn, m, space, key, p, err) != 0
        || sk_map_tip(txn, m, space, key, p->depth, tip, err) != 0)
    {
        return -1;
    }
    /* Staged rows are this process's own, each under a staged parent up
     * to the staged root: when that is the root asked for, they need no
     * check, only the stored rows below them. */
    trust = root == NULL || (m->stage != NULL
                             && memcmp(p->root, root, SK_MAP_HASH) == 0);
    if (root != NULL) {
        memcpy(p->root, root, SK_MAP_HASH);
    }
    for (t = 0; t < p->depth; t++) {
        if (trust && p->staged[t / 2]) {
            continue;
        }
        above = t == 0 ? p->root : p->row[t - 1] + SK_MAP_HASH
                                   * sk_map_bit(key, t - 1);
        sk_map_node_hash(h, p->row[t], p->row[t] + SK_MAP_HASH);
        if (memcmp(h, above, SK_MAP_HASH) != 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "map.node row (space %"
                PRIu64 ", depth %u): its hashes do not give the hash above "
                "it", space, t);
        }
    }
    above = sk_map_tip_hash(p, key);
    if (memcmp(above, sk_map_zero, SK_MAP_HASH) == 0) {
        tip->found = 0;         /* the tree says: no key here */
    } else if (!tip->found || memcmp(tip->leaf, above, SK_MAP_HASH) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "map.leaf row (space %" PRIu64
            ", depth %u): %s", space, p->depth, tip->found
            ? "its key and value do not give the hash above it"
            : "missing (or a map.node row is), for the hash above it");
    }
    return 0;
}


/* The proof of key from a descent (its path and tip). */
static void
sk_map_proof_of(sk_map_proof_t *pr, const unsigned char *key,
    const sk_map_path_t *p, const sk_map_tip_t *tip)
{
    const unsigned char  *sib;
    unsigned              t;

    memset(pr, 0, sizeof(*pr));
    pr->depth = p->depth;
    for (t = 0; t < p->depth; t++) {
        sib = p->row[t] + SK_MAP_HASH * !sk_map_bit(key, t);
        if (memcmp(sib, sk_map_zero, SK_MAP_HASH) != 0) {
            pr->bitmap[t / 8] |= (unsigned char) (0x80 >> (t % 8));
            memcpy(pr->siblings[pr->nsiblings++], sib, SK_MAP_HASH);
        }
    }
    pr->end = tip->found ? SK_MAP_END_LEAF : SK_MAP_END_EMPTY;
    if (tip->found) {
        memcpy(pr->leaf_key, tip->key, SK_MAP_KEY_BYTES);
        sk_map_value_hash(pr->leaf_value, &tip->value);
    }
}


/* One descent: key's value (with root: hash-linked to it) and, with pr,
 * its proof. */
static int
sk_map_lookup(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char *key, const unsigned char *root, sk_map_value_t *v,
    sk_map_proof_t *pr, sk_err_t *err)
{
    sk_map_path_t  *p;
    sk_map_tip_t    tip;
    int             rc;

    p = sk_map_path_get();
    if (p == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "map path");
    }
    rc = sk_map_descend(txn, m, space, key, root, p, &tip, err);
    if (rc == 0 && pr != NULL) {
        sk_map_proof_of(pr, key, p, &tip);
    }
    if (rc != 0) {
        return -1;
    }
    if (!tip.found || memcmp(tip.key, key, SK_MAP_KEY_BYTES) != 0) {
        return 1;
    }
    if (v != NULL) {
        *v = tip.value;
    }
    return 0;
}


int
sk_map_prove(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], sk_map_proof_t *pr,
    sk_err_t *err)
{
    return sk_map_lookup(txn, m, space, key, NULL, NULL, pr, err) < 0
        ? -1 : 0;
}


int
sk_map_get_proven(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_merkle_hash_t root,
    sk_map_value_t *v, sk_err_t *err)
{
    return sk_map_lookup(txn, m, space, key, root, v, NULL, err);
}


int
sk_map_get_proof(sk_db_txn_t *txn, sk_map_t *m, uint64_t space,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_merkle_hash_t root,
    sk_map_value_t *v, sk_map_proof_t *pr, sk_err_t *err)
{
    return sk_map_lookup(txn, m, space, key, root, v, pr, err);
}


/* Every row of table t whose key starts with space's 8 bytes. */
static int
sk_map_clear_table(sk_db_txn_t *txn, sk_db_table_t t, uint64_t space,
    sk_err_t *err)
{
    unsigned char  pre[8], k[511];      /* LMDB's longest key */
    const void    *fk, *val;
    size_t         fklen, vlen;
    int            rc;

    sk_db_u64_put(pre, space);
    while ((rc = sk_db_seek(txn, t, pre, sizeof(pre), &fk, &fklen, &val,
                &vlen, err)) == 0
           && fklen >= sizeof(pre) && fklen <= sizeof(k)
           && memcmp(fk, pre, sizeof(pre)) == 0)
    {
        memcpy(k, fk, fklen);
        if (sk_db_del(txn, t, k, fklen, err) < 0) {
            return -1;
        }
    }
    return rc < 0 ? -1 : 0;
}


int
sk_map_clear(sk_db_txn_t *txn, sk_map_t *m, uint64_t space, sk_err_t *err)
{
    if (m->stage != NULL) {
        sk_map_stage_clear(m->stage);
    }
    if (sk_map_clear_table(txn, m->leaf, space, err) != 0
        || sk_map_clear_table(txn, m->node, space, err) != 0)
    {
        return -1;
    }
    return 0;
}


typedef struct {
    sk_db_txn_t  *txn;
    sk_map_t     *m;
} sk_map_writing_t;


static int
sk_map_write_row(const sk_map_row_t *r, void *arg, sk_err_t *err)
{
    sk_map_writing_t  *w = arg;

    if (r->kind == SK_MAP_ROW_TIP) {
        return 0;
    }
    return sk_db_put(w->txn, sk_map_table(w->m, r->kind), r->key, r->klen,
        r->val, r->vlen, err);
}


int
sk_map_write(sk_db_txn_t *txn, sk_map_t *m, sk_err_t *err)
{
    sk_map_writing_t  w = { txn, m };

    return m->stage == NULL ? 0
        : sk_map_stage_each(m->stage, sk_map_write_row, &w, err);
}


void
sk_map_unstage(sk_map_t *m)
{
    if (m->stage != NULL) {
        sk_map_stage_clear(m->stage);
    }
}


size_t
sk_map_staged(const sk_map_t *m)
{
    return m->stage != NULL ? sk_map_stage_count(m->stage) : 0;
}
