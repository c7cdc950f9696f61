/*
 * test_map_store.c -- the name map on LMDB (map_store.c) against the
 * naive model (map_model.h): seeded random puts, new keys and updates,
 * in several spaces and transactions of random size, one aborted; roots,
 * proofs, get and get_proven for every key and absent ones; clear; a
 * changed byte in a map.node or map.leaf row found on the key's path and
 * nowhere else; the same with puts staged in memory and written now and
 * then; and the cost of a put at 100,000 keys.
 */
#include <time.h>

#include "map_model.h"

#define SEED     UINT64_C(0x5eed0024)
#define NSPACES  3

static const uint64_t  spaces[NSPACES] = { 0, 1, UINT64_C(0x0100000000) };

typedef struct {
    char       *dir;
    sk_db_t    *db;
    sk_map_t   *map;
    mm_map_t    model[NSPACES];
} fixture_t;


static int
setup(void **state)
{
    fixture_t  *f = calloc(1, sizeof(*f));
    sk_err_t    err;

    assert_non_null(f);
    f->dir = tu_tmpdir();
    tu_assert_ok(sk_db_open(&f->db, f->dir, NULL, &err), &err);
    tu_assert_ok(sk_map_open(&f->map, f->db, &err), &err);
    *state = f;
    return 0;
}


static int
teardown(void **state)
{
    fixture_t  *f = *state;
    int         i;

    sk_map_close(f->map);
    sk_db_close(f->db);
    tu_rmtree(f->dir);
    for (i = 0; i < NSPACES; i++) {
        mm_free(&f->model[i]);
    }
    free(f);
    return 0;
}


static sk_db_txn_t *
begin(fixture_t *f, int write)
{
    sk_db_txn_t  *txn;
    sk_err_t      err;

    tu_assert_ok(sk_db_begin(f->db, write, &txn, &err), &err);
    return txn;
}


static void
commit(sk_db_txn_t *txn)
{
    sk_err_t  err;

    tu_assert_ok(sk_db_commit(txn, &err), &err);
}


static void
rand_value(uint64_t *s, sk_map_value_t *v)
{
    v->count = mm_rand(s) % 100 + 1;
    v->newest_sn = mm_rand(s);
    mm_rand_bytes(s, v->chain, 32);
}


/* Put key = v in the store and the model of space i. */
static void
put(fixture_t *f, sk_db_txn_t *txn, int i, const unsigned char *key,
    const sk_map_value_t *v)
{
    sk_merkle_hash_t  vh;
    sk_err_t          err;

    tu_assert_ok(sk_map_put(txn, f->map, spaces[i], key, v, &err), &err);
    sk_map_value_hash(vh, v);
    mm_put(&f->model[i], key, vh);
}


/* The store's root and count are the model's, and sk_map_root_sorted's. */
static void
check_root(fixture_t *f, sk_db_txn_t *txn, int i, sk_merkle_hash_t root)
{
    unsigned char    (*keys)[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  *values, want, sorted;
    uint64_t           names;
    sk_err_t           err;

    tu_assert_ok(sk_map_root(txn, f->map, spaces[i], root, &names, &err),
        &err);
    mm_root(&f->model[i], want);
    assert_memory_equal(root, want, 32);
    assert_int_equal(names, f->model[i].n);
    mm_sorted(&f->model[i], &keys, &values);
    tu_assert_ok(sk_map_root_sorted(sorted,
        (const unsigned char (*)[SK_MAP_KEY_BYTES]) keys, values,
        f->model[i].n, &err), &err);
    assert_memory_equal(sorted, want, 32);
    free(keys);
    free(values);
}


/* One key of space i: proof (the model's, and it verifies), get,
 * get_proven and get_proof (value and proof of one descent) agree with
 * the model. */
static void
check_key(fixture_t *f, sk_db_txn_t *txn, int i, const unsigned char *key,
    const sk_merkle_hash_t root)
{
    const mm_item_t  *it = mm_find(&f->model[i], key);
    sk_map_proof_t    p, want, gp;
    sk_map_value_t    v, pv, gv;
    sk_merkle_hash_t  value, vh;
    int               present, rc;
    sk_err_t          err;

    tu_assert_ok(sk_map_prove(txn, f->map, spaces[i], key, &p, &err), &err);
    mm_prove(&f->model[i], key, &want);
    assert_memory_equal(&p, &want, sizeof(p));
    tu_assert_ok(sk_map_proof_verify(&p, key, root, &present, value, &err),
        &err);
    assert_int_equal(present, it != NULL);

    rc = sk_map_get(txn, f->map, spaces[i], key, &v, &err);
    assert_int_equal(rc, it != NULL ? 0 : 1);
    rc = sk_map_get_proven(txn, f->map, spaces[i], key, root, &pv, &err);
    assert_int_equal(rc, it != NULL ? 0 : 1);
    rc = sk_map_get_proof(txn, f->map, spaces[i], key, root, &gv, &gp, &err);
    assert_int_equal(rc, it != NULL ? 0 : 1);
    assert_memory_equal(&gp, &want, sizeof(gp));
    if (it != NULL) {
        assert_memory_equal(&gv, &v, sizeof(v));
        assert_memory_equal(value, it->value, 32);
        sk_map_value_hash(vh, &v);
        assert_memory_equal(vh, it->value, 32);
        assert_memory_equal(&pv, &v, sizeof(v));
    }
}


static void
check_space(fixture_t *f, sk_db_txn_t *txn, int i, uint64_t *s)
{
    sk_merkle_hash_t  root;
    unsigned char     key[SK_MAP_KEY_BYTES];
    size_t            j;

    check_root(f, txn, i, root);
    for (j = 0; j < f->model[i].n; j++) {
        check_key(f, txn, i, f->model[i].items[j].key, root);
        mm_rand_key(s, &f->model[i], key);
        check_key(f, txn, i, key, root);
    }
    if (f->model[i].n == 0) {
        mm_rand_bytes(s, key, 32);
        check_key(f, txn, i, key, root);
    }
}


/* Random puts into the three spaces, a third of them updates, in
 * transactions of 1 to 120 puts; after each, the roots. */
static void
fill(fixture_t *f, uint64_t *s, size_t n)
{
    sk_db_txn_t      *txn;
    sk_map_value_t    v;
    sk_merkle_hash_t  root;
    unsigned char     key[SK_MAP_KEY_BYTES];
    size_t            done = 0, b, batch;
    int               i;

    while (done < n) {
        txn = begin(f, 1);
        batch = mm_rand(s) % 120 + 1;
        for (b = 0; b < batch && done < n; b++, done++) {
            i = (int) (mm_rand(s) % 8 < 5 ? 0 : mm_rand(s) % NSPACES);
            if (f->model[i].n > 0 && mm_rand(s) % 3 == 0) {
                memcpy(key, f->model[i].items[mm_rand(s)
                    % f->model[i].n].key, 32);
            } else {
                mm_rand_key(s, &f->model[i], key);
            }
            rand_value(s, &v);
            put(f, txn, i, key, &v);
        }
        for (i = 0; i < NSPACES; i++) {
            check_root(f, txn, i, root);
        }
        commit(txn);
    }
}


static void
test_against_model(void **state)
{
    fixture_t       *f = *state;
    uint64_t         s = SEED;
    sk_db_txn_t     *txn;
    sk_map_value_t   v;
    sk_merkle_hash_t root, before[NSPACES];
    uint64_t         names;
    unsigned char    key[SK_MAP_KEY_BYTES];
    int              i;
    sk_err_t         err;

    txn = begin(f, 0);
    for (i = 0; i < NSPACES; i++) {
        check_space(f, txn, i, &s);         /* empty maps */
    }
    sk_db_abort(txn);
    fill(f, &s, 1);
    fill(f, &s, 1500);
    txn = begin(f, 0);
    for (i = 0; i < NSPACES; i++) {
        check_space(f, txn, i, &s);
        check_root(f, txn, i, before[i]);
    }
    sk_db_abort(txn);

    /* An aborted transaction leaves nothing behind. */
    txn = begin(f, 1);
    for (i = 0; i < 50; i++) {
        mm_rand_bytes(&s, key, 32);
        rand_value(&s, &v);
        tu_assert_ok(sk_map_put(txn, f->map, spaces[i % NSPACES], key, &v,
            &err), &err);
    }
    sk_db_abort(txn);
    txn = begin(f, 0);
    for (i = 0; i < NSPACES; i++) {
        tu_assert_ok(sk_map_root(txn, f->map, spaces[i], root, &names, &err),
            &err);
        assert_memory_equal(root, before[i], 32);
        assert_int_equal(names, f->model[i].n);
    }
    sk_db_abort(txn);
}


/* Clearing one space leaves it empty and the others as they were; it
 * fills again from there. */
static void
test_clear(void **state)
{
    fixture_t        *f = *state;
    uint64_t          s = SEED + 1;
    sk_db_txn_t      *txn;
    sk_merkle_hash_t  root, zero;
    uint64_t          names;
    sk_err_t          err;

    fill(f, &s, 400);
    assert_true(f->model[1].n > 0);
    txn = begin(f, 1);
    tu_assert_ok(sk_map_clear(txn, f->map, spaces[1], &err), &err);
    tu_assert_ok(sk_map_root(txn, f->map, spaces[1], root, &names, &err),
        &err);
    memset(zero, 0, 32);
    assert_memory_equal(root, zero, 32);
    assert_int_equal(names, 0);
    mm_free(&f->model[1]);
    check_space(f, txn, 0, &s);
    check_space(f, txn, 1, &s);
    check_space(f, txn, 2, &s);
    commit(txn);
    fill(f, &s, 200);
    txn = begin(f, 0);
    check_space(f, txn, 1, &s);
    sk_db_abort(txn);
}


/* A key of space 0 whose walk is at least min_depth steps long. */
static const unsigned char *
deep_key(fixture_t *f, sk_db_txn_t *txn, unsigned min_depth)
{
    sk_map_proof_t  p;
    size_t          j;
    sk_err_t        err;

    for (j = 0; j < f->model[0].n; j++) {
        tu_assert_ok(sk_map_prove(txn, f->map, spaces[0],
            f->model[0].items[j].key, &p, &err), &err);
        if (p.depth >= min_depth) {
            return f->model[0].items[j].key;
        }
    }
    fail_msg("no key %u deep", min_depth);
    return NULL;
}


/* A key of space 0 whose path leaves key's at bit 0. */
static const unsigned char *
far_key(fixture_t *f, const unsigned char *key)
{
    size_t  j;

    for (j = 0; j < f->model[0].n; j++) {
        if (mm_bit(f->model[0].items[j].key, 0) != mm_bit(key, 0)) {
            return f->model[0].items[j].key;
        }
    }
    fail_msg("no key on the other side");
    return NULL;
}


/* After damage in txn: key's read fails naming what, far's succeeds. */
static void
expect_damage(fixture_t *f, sk_db_txn_t *txn, const unsigned char *key,
    const unsigned char *far, const char *what)
{
    sk_merkle_hash_t  root;
    sk_map_value_t    v;
    sk_err_t          err;

    mm_root(&f->model[0], root);
    tu_assert_err(sk_map_get_proven(txn, f->map, spaces[0], key, root, &v,
        &err), &err, SK_ERR_FORMAT, what);
    tu_assert_ok(sk_map_get_proven(txn, f->map, spaces[0], far, root, &v,
        &err), &err);
    sk_db_abort(txn);
}


static void
test_damage(void **state)
{
    fixture_t            *f = *state;
    uint64_t              s = SEED + 2;
    sk_db_txn_t          *txn;
    sk_db_table_t         leaf, node;
    const unsigned char  *key, *far;
    unsigned char         k[64], row[193];
    const void           *val;
    size_t                vlen;
    sk_err_t              err;

    fill(f, &s, 600);
    tu_assert_ok(sk_db_table(f->db, "map.leaf", 0, &leaf, &err), &err);
    tu_assert_ok(sk_db_table(f->db, "map.node", 0, &node, &err), &err);
    txn = begin(f, 0);
    key = deep_key(f, txn, 4);
    far = far_key(f, key);
    sk_db_abort(txn);

    /* A byte of a node hash, at depth 2 on key's path (either half), and
     * at depth 3, whose row is in the same map.node value. */
    for (int at = 0; at < 3; at++) {
        txn = begin(f, 1);
        memset(k, 0, 8);                        /* space 0 */
        k[8] = 2;
        k[9] = key[0] & 0xc0;
        assert_int_equal(sk_db_get(txn, node, k, 10, &val, &vlen, &err), 0);
        memcpy(row, val, vlen);
        /* flags, the node's row, then its children's that are there */
        assert_int_equal(vlen, 1 + 64 * (1 + (row[0] & 1) + (row[0] >> 1)));
        assert_true(row[0] & (1 << mm_bit(key, 2)));
        row[at < 2 ? 1 + (unsigned) at * 32 + 5
                   : 1 + 64 + 64 * (mm_bit(key, 2) & row[0]) + 40] ^= 0x40;
        tu_assert_ok(sk_db_put(txn, node, k, 10, row, vlen, &err), &err);
        expect_damage(f, txn, key, far, at < 2
            ? "map.node row (space 0, depth 2): its hashes do not give the "
              "hash above it"
            : "map.node row (space 0, depth 3): its hashes do not give the "
              "hash above it");
    }

    /* A byte of the key of key's leaf row (the row moves), and of its
     * value. */
    memset(k, 0, 8);
    memcpy(k + 8, key, 32);
    for (int where = 0; where < 3; where++) {
        txn = begin(f, 1);
        assert_int_equal(sk_db_get(txn, leaf, k, 40, &val, &vlen, &err), 0);
        memcpy(row, val, 48);
        if (where < 2) {
            assert_int_equal(sk_db_del(txn, leaf, k, 40, &err), 0);
            k[8 + (where == 0 ? 31 : 0)] ^= 0x01;
            tu_assert_ok(sk_db_put(txn, leaf, k, 40, row, 48, &err), &err);
            k[8 + (where == 0 ? 31 : 0)] ^= 0x01;
        } else {
            row[20] ^= 0x01;
            tu_assert_ok(sk_db_put(txn, leaf, k, 40, row, 48, &err), &err);
        }
        expect_damage(f, txn, key, far, "map.leaf row (space 0, depth ");
    }

    /* A node row gone (its key damaged): the walk stops short. */
    txn = begin(f, 1);
    memset(k, 0, 8);
    k[8] = 2;
    k[9] = key[0] & 0xc0;
    assert_int_equal(sk_db_del(txn, node, k, 10, &err), 0);
    expect_damage(f, txn, key, far, "map.leaf row (space 0, depth 2)");

    /* The prover checks against the stored root too. */
    txn = begin(f, 1);
    memset(k, 0, 8);
    assert_int_equal(sk_db_get(txn, node, k, 8, &val, &vlen, &err), 0);
    memcpy(row, val, 40);
    row[0] ^= 0x80;
    tu_assert_ok(sk_db_put(txn, node, k, 8, row, 40, &err), &err);
    {
        sk_map_proof_t  p;

        tu_assert_err(sk_map_prove(txn, f->map, spaces[0], far, &p, &err),
            &err, SK_ERR_FORMAT, "map.node row (space 0, depth 0)");
    }
    sk_db_abort(txn);
}


/* 100,000 keys in batches of 1,000 (a put each and the root once a
 * batch, as the timeline does per batch); the root is
 * sk_map_root_sorted's. */
static void
test_cost_100k(void **state)
{
    fixture_t        *f = *state;
    uint64_t          s = SEED + 3;
    sk_db_txn_t      *txn;
    sk_map_value_t    v;
    sk_merkle_hash_t  root, want, *values;
    unsigned char   (*keys)[SK_MAP_KEY_BYTES];
    struct timespec   t0, t1;
    uint64_t          names;
    double            us = 0;
    size_t            i, n = 100000, batch = 1000, late = 0;
    sk_err_t          err;

    keys = malloc(n * SK_MAP_KEY_BYTES);
    values = malloc(n * sizeof(*values));
    assert_true(keys != NULL && values != NULL);
    for (i = 0; i < n; i++) {
        mm_rand_bytes(&s, keys[i], 32);
    }
    txn = begin(f, 1);      /* commits are the caller's cost, not here */
    for (i = 0; i < n; i += batch) {
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        for (size_t j = i; j < i + batch; j++) {
            rand_value(&s, &v);
            sk_map_value_hash(values[j], &v);
            tu_assert_ok(sk_map_put(txn, f->map, 9, keys[j], &v, &err),
                &err);
        }
        tu_assert_ok(sk_map_root(txn, f->map, 9, root, &names, &err), &err);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
        if (i >= n - 10 * batch) {              /* the last 10,000 */
            us += (double) (t1.tv_sec - t0.tv_sec) * 1e6
                  + (double) (t1.tv_nsec - t0.tv_nsec) / 1e3;
            late += batch;
        }
    }
    commit(txn);
    assert_int_equal(names, n);
    {
        mm_item_t  *it = malloc(n * sizeof(*it));

        assert_non_null(it);
        for (i = 0; i < n; i++) {
            memcpy(it[i].key, keys[i], 32);
            memcpy(it[i].value, values[i], 32);
        }
        qsort(it, n, sizeof(*it), mm_item_cmp);
        for (i = 0; i < n; i++) {
            memcpy(keys[i], it[i].key, 32);
            memcpy(values[i], it[i].value, 32);
        }
        free(it);
    }
    tu_assert_ok(sk_map_root_sorted(want,
        (const unsigned char (*)[SK_MAP_KEY_BYTES]) keys, values, n, &err),
        &err);
    assert_memory_equal(root, want, 32);
    printf("map: %.1f us per put (and root per %zu) at 100,000 keys\n",
        us / (double) late, batch);
    free(keys);
    free(values);
}


/* Staged (sk_map_open_staged): random puts in batches through read
 * transactions, the roots after each batch and every key and absent
 * ones now and then, read back through the stage over what is stored;
 * every few batches the stage written and committed, once written into
 * a transaction that is aborted (the stage is kept and written later).
 * In the end, the rows stored are the model's through an unstaged map. */
static void
test_staged(void **state)
{
    fixture_t        *f = *state;
    uint64_t          s = SEED + 4;
    sk_db_txn_t      *txn;
    sk_map_t         *direct = f->map;
    sk_map_value_t    v;
    sk_merkle_hash_t  root;
    sk_db_table_t     node;
    const unsigned char *deep, *far;
    const void       *val;
    unsigned char     key[SK_MAP_KEY_BYTES], k[64], row[193];
    size_t            batch, b, round, vlen;
    int               i;
    sk_err_t          err;

    tu_assert_ok(sk_db_table(f->db, "map.node", 0, &node, &err), &err);
    tu_assert_ok(sk_map_open_staged(&f->map, f->db, &err), &err);
    for (round = 0; round < 60; round++) {
        txn = begin(f, 0);
        batch = mm_rand(&s) % 40 + 1;
        for (b = 0; b < batch; b++) {
            i = (int) (mm_rand(&s) % 8 < 5 ? 0 : mm_rand(&s) % NSPACES);
            if (f->model[i].n > 0 && mm_rand(&s) % 3 == 0) {
                memcpy(key, f->model[i].items[mm_rand(&s)
                    % f->model[i].n].key, 32);
            } else {
                mm_rand_key(&s, &f->model[i], key);
            }
            rand_value(&s, &v);
            put(f, txn, i, key, &v);
        }
        for (i = 0; i < NSPACES; i++) {
            if (round % 10 == 9) {
                check_space(f, txn, i, &s);
            }
            check_root(f, txn, i, root);
        }
        sk_db_abort(txn);
        assert_true(sk_map_staged(f->map) > 0);
        if (round % 7 == 3) {
            txn = begin(f, 1);
            tu_assert_ok(sk_map_write(txn, f->map, &err), &err);
            sk_db_abort(txn);
        } else if (round % 7 == 6) {
            txn = begin(f, 1);
            tu_assert_ok(sk_map_write(txn, f->map, &err), &err);
            commit(txn);
            sk_map_unstage(f->map);
            assert_int_equal(sk_map_staged(f->map), 0);
        }
    }
    txn = begin(f, 1);
    tu_assert_ok(sk_map_write(txn, f->map, &err), &err);
    commit(txn);
    sk_map_unstage(f->map);
    sk_map_close(f->map);
    f->map = direct;
    txn = begin(f, 0);
    for (i = 0; i < NSPACES; i++) {
        check_space(f, txn, i, &s);
    }
    sk_db_abort(txn);

    /* A stored row changed under staged ones is found through the stage:
     * one key staged, a node row on another key's path damaged. */
    tu_assert_ok(sk_map_open_staged(&f->map, f->db, &err), &err);
    txn = begin(f, 0);
    deep = deep_key(f, txn, 4);
    far = far_key(f, deep);
    rand_value(&s, &v);
    put(f, txn, 0, far, &v);
    sk_db_abort(txn);
    txn = begin(f, 1);
    memset(k, 0, 8);
    k[8] = 2;
    k[9] = deep[0] & 0xc0;
    assert_int_equal(sk_db_get(txn, node, k, 10, &val, &vlen, &err), 0);
    memcpy(row, val, vlen);
    row[1 + 5] ^= 0x40;
    tu_assert_ok(sk_db_put(txn, node, k, 10, row, vlen, &err), &err);
    expect_damage(f, txn, deep, far, "map.node row (space 0, depth 2): its "
        "hashes do not give the hash above it");
    sk_map_close(f->map);
    f->map = direct;
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_against_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clear, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_staged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_100k, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
