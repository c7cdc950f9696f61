/*
 * test_db.c -- the LMDB wrapper: rows across reopen, abort, prefix
 * iteration, the meta record, damaged and cut-short files refused.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "testutil.h"


static sk_db_t *
open_db(const char *dir)
{
    sk_db_opts_t o = { .map_size = 64u << 20 };
    sk_db_t     *db;
    sk_err_t     err;

    tu_assert_ok(sk_db_open(&db, dir, &o, &err), &err);
    return db;
}


static void
put_str(sk_db_txn_t *t, sk_db_table_t tab, const char *k, const char *v)
{
    sk_err_t err;

    tu_assert_ok(sk_db_put(t, tab, k, strlen(k), v, strlen(v), &err), &err);
}


static void
test_rows_survive_reopen(void **state)
{
    char          *dir = tu_tmpdir(), *idx = tu_path(dir, "index");
    sk_db_t       *db = open_db(idx);
    sk_db_table_t  names;
    sk_db_txn_t   *t;
    const void    *v;
    size_t         vlen;
    uint64_t       n;
    struct stat    st;
    sk_err_t       err;

    (void) state;
    assert_int_equal(stat(idx, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    tu_assert_ok(sk_db_table(db, "names", 1, &names, &err), &err);
    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    put_str(t, names, "example.com", "key1");
    put_str(t, names, "example.org", "key2");
    put_str(t, names, "example.com", "key3");       /* replaces */
    tu_assert_ok(sk_db_commit(t, &err), &err);

    /* An aborted transaction leaves nothing. */
    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    put_str(t, names, "aborted.net", "x");
    assert_int_equal(sk_db_del(t, names, "example.org", 11, &err), 0);
    sk_db_abort(t);
    sk_db_close(db);

    db = open_db(idx);
    tu_assert_ok(sk_db_table(db, "names", 0, &names, &err), &err);
    tu_assert_ok(sk_db_begin(db, 0, &t, &err), &err);
    assert_int_equal(sk_db_get(t, names, "example.com", 11, &v, &vlen, &err),
        0);
    assert_int_equal(vlen, 4);
    assert_memory_equal(v, "key3", 4);
    assert_int_equal(sk_db_get(t, names, "example.org", 11, &v, &vlen, &err),
        0);
    assert_int_equal(sk_db_get(t, names, "aborted.net", 11, &v, &vlen, &err),
        1);
    tu_assert_ok(sk_db_count(t, names, &n, &err), &err);
    assert_int_equal(n, 2);
    sk_db_abort(t);

    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    assert_int_equal(sk_db_del(t, names, "example.org", 11, &err), 0);
    assert_int_equal(sk_db_del(t, names, "example.org", 11, &err), 1);
    tu_assert_ok(sk_db_commit(t, &err), &err);

    /* A table never made is not found without create. */
    tu_assert_err(sk_db_table(db, "missing", 0, &names, &err), &err,
        SK_ERR_NOT_FOUND, "table \"missing\"");
    sk_db_close(db);
    free(idx);
    tu_rmtree(dir);
}


static void
test_prefix_iteration(void **state)
{
    char          *dir = tu_tmpdir();
    sk_db_t       *db = open_db(dir);
    sk_db_table_t  tab;
    sk_db_txn_t   *t;
    sk_db_iter_t  *it;
    const void    *k, *v;
    size_t         klen, vlen, n = 0;
    unsigned char  key[8];
    uint64_t       i;
    sk_err_t       err;
    int            rc;

    (void) state;
    tu_assert_ok(sk_db_table(db, "rows", 1, &tab, &err), &err);
    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    put_str(t, tab, "a/2", "two");
    put_str(t, tab, "a/1", "one");
    put_str(t, tab, "a", "bare");
    put_str(t, tab, "a0", "after");
    put_str(t, tab, "b/1", "other");
    tu_assert_ok(sk_db_commit(t, &err), &err);

    tu_assert_ok(sk_db_begin(db, 0, &t, &err), &err);
    tu_assert_ok(sk_db_iter_open(t, tab, "a/", 2, &it, &err), &err);
    while ((rc = sk_db_iter_next(it, &k, &klen, &v, &vlen, &err)) == 0) {
        assert_int_equal(klen, 3);
        assert_memory_equal(k, n == 0 ? "a/1" : "a/2", 3);
        assert_memory_equal(v, n == 0 ? "one" : "two", 3);
        n++;
    }
    assert_int_equal(rc, 1);
    assert_int_equal(n, 2);
    assert_int_equal(sk_db_iter_next(it, &k, &klen, &v, &vlen, &err), 1);
    sk_db_iter_close(it);

    /* No prefix: every row, in byte order. */
    tu_assert_ok(sk_db_iter_open(t, tab, NULL, 0, &it, &err), &err);
    n = 0;
    while (sk_db_iter_next(it, &k, &klen, &v, &vlen, &err) == 0) {
        n++;
    }
    assert_int_equal(n, 5);
    sk_db_iter_close(it);

    /* A prefix past every key: nothing. */
    tu_assert_ok(sk_db_iter_open(t, tab, "z", 1, &it, &err), &err);
    assert_int_equal(sk_db_iter_next(it, &k, &klen, &v, &vlen, &err), 1);
    sk_db_iter_close(it);

    /* Seek: the row at a key, or the first after it, whatever its
     * prefix; none past the last. */
    assert_int_equal(sk_db_seek(t, tab, "a/1", 3, &k, &klen, &v, &vlen,
        &err), 0);
    assert_true(klen == 3 && memcmp(k, "a/1", 3) == 0);
    assert_memory_equal(v, "one", 3);
    assert_int_equal(sk_db_seek(t, tab, "a/3", 3, &k, &klen, &v, &vlen,
        &err), 0);
    assert_true(klen == 2 && memcmp(k, "a0", 2) == 0);
    assert_int_equal(sk_db_seek(t, tab, "b/2", 3, &k, &klen, &v, &vlen,
        &err), 1);
    sk_db_abort(t);

    /* Big-endian numbers sort as numbers: the last key is the largest. */
    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    tu_assert_ok(sk_db_clear(t, tab, &err), &err);
    assert_int_equal(sk_db_last(t, tab, &k, &klen, &v, &vlen, &err), 1);
    for (i = 0; i < 300; i += 7) {
        sk_db_u64_put(key, i * 1000);
        tu_assert_ok(sk_db_put(t, tab, key, 8, "x", 1, &err), &err);
    }
    assert_int_equal(sk_db_last(t, tab, &k, &klen, &v, &vlen, &err), 0);
    assert_int_equal(klen, 8);
    assert_int_equal(sk_db_u64_get(k), 294000);
    tu_assert_ok(sk_db_commit(t, &err), &err);
    sk_db_close(db);
    tu_rmtree(dir);
}


static void
test_meta(void **state)
{
    char          *dir = tu_tmpdir();
    sk_db_t       *db = open_db(dir);
    sk_db_table_t  rows;
    sk_db_txn_t   *t;
    sk_db_meta_t   m = { 0 }, got;
    sk_db_opts_t   ro = { .map_size = 64u << 20, .read_only = 1 };
    sk_err_t       err;

    (void) state;
    tu_assert_ok(sk_db_table(db, "rows", 1, &rows, &err), &err);
    tu_assert_ok(sk_db_begin(db, 0, &t, &err), &err);
    assert_int_equal(sk_db_meta_get(t, "timeline", &got, &err), 1);
    sk_db_abort(t);

    /* Rows and meta in one transaction: both or neither. */
    m.schema = 3;
    m.next_sn = 12345;
    m.log_end = UINT64_C(1) << 40;
    memset(m.tag, 0xab, sizeof(m.tag));
    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    put_str(t, rows, "r", "1");
    tu_assert_ok(sk_db_meta_put(t, "timeline", &m, &err), &err);
    tu_assert_ok(sk_db_commit(t, &err), &err);
    m.next_sn = 99999;
    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    put_str(t, rows, "s", "2");
    tu_assert_ok(sk_db_meta_put(t, "timeline", &m, &err), &err);
    sk_db_abort(t);

    /* A damaged record is refused with its name. */
    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    tu_assert_ok(sk_db_meta_put(t, "other", &m, &err), &err);
    tu_assert_ok(sk_db_commit(t, &err), &err);
    sk_db_close(db);

    tu_assert_ok(sk_db_open(&db, dir, &ro, &err), &err);
    tu_assert_ok(sk_db_begin(db, 0, &t, &err), &err);
    tu_assert_ok(sk_db_meta_get(t, "timeline", &got, &err), &err);
    assert_int_equal(got.schema, 3);
    assert_int_equal(got.next_sn, 12345);
    assert_int_equal(got.log_end, UINT64_C(1) << 40);
    assert_memory_equal(got.tag, m.tag, sizeof(m.tag));
    sk_db_abort(t);
    /* Read-only: no write transaction. */
    tu_assert_err(sk_db_begin(db, 1, &t, &err), &err, SK_ERR_SYSTEM,
        "begin write");
    sk_db_close(db);

    db = open_db(dir);
    tu_assert_ok(sk_db_table(db, "meta", 0, &rows, &err), &err);
    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    tu_assert_ok(sk_db_put(t, rows, "other", 5, "short", 5, &err), &err);
    tu_assert_err(sk_db_meta_get(t, "other", &got, &err), &err,
        SK_ERR_FORMAT, "meta record \"other\" is damaged");
    sk_db_abort(t);
    sk_db_close(db);
    tu_rmtree(dir);
}


/* Fill an index with enough rows to span many pages. */
static void
fill(const char *dir)
{
    sk_db_t       *db = open_db(dir);
    sk_db_table_t  tab;
    sk_db_txn_t   *t;
    unsigned char  key[8];
    char           val[200];
    uint64_t       i;
    sk_err_t       err;

    memset(val, 'v', sizeof(val));
    tu_assert_ok(sk_db_table(db, "rows", 1, &tab, &err), &err);
    tu_assert_ok(sk_db_begin(db, 1, &t, &err), &err);
    for (i = 0; i < 5000; i++) {
        sk_db_u64_put(key, i);
        tu_assert_ok(sk_db_put(t, tab, key, 8, val, sizeof(val), &err), &err);
    }
    tu_assert_ok(sk_db_commit(t, &err), &err);
    sk_db_close(db);
}


static void
test_damaged_files(void **state)
{
    char         *dir = tu_tmpdir(), *data = tu_path(dir, "data.mdb");
    sk_db_t      *db;
    struct stat   st;
    char          junk[8192];
    int           fd;
    sk_db_opts_t  o = { .map_size = 64u << 20 };
    sk_err_t      err;

    (void) state;
    /* Cut short: the meta page names pages past the end. */
    fill(dir);
    assert_int_equal(stat(data, &st), 0);
    assert_true(st.st_size > 100000);
    assert_int_equal(truncate(data, st.st_size / 2), 0);
    tu_assert_err(sk_db_open(&db, dir, &o, &err), &err, SK_ERR_FORMAT,
        "the file was cut short");
    assert_non_null(strstr(err.msg, dir));

    /* Garbage over the meta pages: LMDB refuses it. */
    tu_rmtree(dir);
    dir = tu_tmpdir();
    free(data);
    data = tu_path(dir, "data.mdb");
    fill(dir);
    memset(junk, 0x5a, sizeof(junk));
    fd = open(data, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, junk, sizeof(junk), 0), sizeof(junk));
    close(fd);
    tu_assert_err(sk_db_open(&db, dir, &o, &err), &err, SK_ERR_FORMAT,
        "File is not an LMDB file");

    /* A directory that cannot be made. */
    tu_assert_err(sk_db_open(&db, "/proc/sk-no/such", NULL, &err), &err,
        SK_ERR_SYSTEM, "index /proc/sk-no/such: mkdir");
    free(data);
    tu_rmtree(dir);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_survive_reopen),
        cmocka_unit_test(test_prefix_iteration),
        cmocka_unit_test(test_meta),
        cmocka_unit_test(test_damaged_files),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
