/*
 * test_tiles.c -- the Merkle tree kept as C2SP tlog-tiles against the
 * in-memory tree: roots, proofs and tiles for many sizes, reopening at
 * the log's size (shorter too), damaged and missing tiles, the read-only
 * check, proofs from several threads at once, and the tile path syntax.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

#include "testutil.h"

/* Past one full level-1 tile (65536 leaves), so three tile levels. */
#define NMAX 70000

static uint64_t  leaf_calls;
static int       leaf_variant;     /* 1: the log was replaced from some SN */
static uint64_t  variant_from;


static int
leaf_of(sk_merkle_hash_t out, uint64_t i, void *arg, sk_err_t *err)
{
    char  buf[64];
    int   n;

    (void) arg;
    leaf_calls++;
    n = snprintf(buf, sizeof(buf), "%s entry %llu",
        leaf_variant && i >= variant_from ? "other" : "first",
        (unsigned long long) i);
    return sk_merkle_leaf_hash(out, buf, (size_t) n, err);
}


static sk_merkle_tree_t *
mem_tree(uint64_t n)
{
    sk_merkle_tree_t  *m;
    sk_merkle_hash_t   h;
    sk_err_t           err;
    uint64_t           i;

    assert_int_equal(sk_merkle_tree_new(&m, &err), 0);
    for (i = 0; i < n; i++) {
        assert_int_equal(leaf_of(h, i, NULL, &err), 0);
        assert_int_equal(sk_merkle_tree_append(m, h, &err), 0);
    }
    return m;
}


/* Roots, a sample of proofs and every tile of sizes up to size agree. */
static void
same_trees(const sk_merkle_tree_t *t, const sk_merkle_tree_t *m,
    uint64_t size)
{
    sk_merkle_hash_t   a, b;
    sk_merkle_proof_t  pa, pb;
    unsigned char      ta[SK_TILE_BYTES], tb[SK_TILE_BYTES];
    size_t             la, lb;
    sk_err_t           err;
    uint64_t           s, i, step, n;
    unsigned           level, w;

    assert_int_equal(sk_merkle_tree_size(t), size);
    step = size / 7 + 1;
    for (s = 0; s <= size; s += (s < 600 ? 97 : step)) {
        assert_int_equal(sk_merkle_tree_root(a, t, s, &err), 0);
        assert_int_equal(sk_merkle_tree_root(b, m, s, &err), 0);
        assert_memory_equal(a, b, 32);
        for (i = 0; i < s; i += s / 5 + 1) {
            assert_int_equal(sk_merkle_tree_inclusion(&pa, t, i, s, &err), 0);
            assert_int_equal(sk_merkle_tree_inclusion(&pb, m, i, s, &err), 0);
            assert_int_equal(pa.len, pb.len);
            assert_memory_equal(pa.hash, pb.hash, pa.len * 32);
            assert_int_equal(sk_merkle_tree_leaf_get(a, t, i, &err), 0);
            assert_memory_equal(a, sk_merkle_tree_leaf(m, i), 32);
            if (i > 0) {
                assert_int_equal(sk_merkle_tree_consistency(&pa, t, i, s,
                    &err), 0);
                assert_int_equal(sk_merkle_tree_consistency(&pb, m, i, s,
                    &err), 0);
                assert_int_equal(pa.len, pb.len);
                assert_memory_equal(pa.hash, pb.hash, pa.len * 32);
            }
        }
    }
    /* The last tile of each level, full and partial, at the full size. */
    for (level = 0; level < 3; level++) {
        n = (size >> (8 * level));
        for (w = 1; w <= 256; w = w < 8 ? w + 1 : w * 2) {
            if (n < w) {
                break;
            }
            i = (n - w) / 256;
            if (i * 256 + w > n) {
                continue;
            }
            assert_int_equal(sk_merkle_tree_tile(ta, &la, t, level, i, w,
                size, &err), 0);
            assert_int_equal(sk_merkle_tree_tile(tb, &lb, m, level, i, w,
                size, &err), 0);
            assert_int_equal(la, (size_t) w * 32);
            assert_memory_equal(ta, tb, la);
        }
        /* One hash more than the tree holds is refused. */
        if (n % 256 != 0) {
            assert_int_not_equal(sk_merkle_tree_tile(ta, &la, t, level,
                n / 256, (unsigned) (n % 256) + 1, size, &err), 0);
            assert_int_equal(err.code, SK_ERR_NOT_FOUND);
        }
    }
}


static void
test_tiles_append_and_reopen(void **state)
{
    static const uint64_t  sizes[] = { 0, 1, 2, 255, 256, 257, 511, 512,
                                       513, 65535, 65536, 65537, NMAX };
    sk_merkle_tree_t      *t, *m;
    sk_merkle_hash_t       h;
    sk_err_t               err;
    char                  *dir = tu_tmpdir(), *td = tu_path(dir, "tile");
    uint64_t               i = 0;
    size_t                 k;

    (void) state;
    leaf_variant = 0;
    m = mem_tree(NMAX);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, 0, SK_TILES_OPEN,
        leaf_of, NULL, &err), 0);
    for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        for (; i < sizes[k]; i++) {
            assert_int_equal(leaf_of(h, i, NULL, &err), 0);
            assert_int_equal(sk_merkle_tree_append(t, h, &err), 0);
        }
        same_trees(t, m, sizes[k]);
        /* Reopened at this size: only the partial edge is hashed again. */
        sk_merkle_tree_free(t);
        leaf_calls = 0;
        assert_int_equal(sk_merkle_tree_open_tiles(&t, td, sizes[k],
            SK_TILES_OPEN, leaf_of, NULL, &err), 0);
        assert_true(leaf_calls < 256);
        same_trees(t, m, sizes[k]);
    }
    sk_merkle_tree_free(t);
    sk_merkle_tree_free(m);

    /* The log is shorter than the tiles (cut at 300) and then grows
     * with other entries: the old tiles past 300 are ignored, then
     * replaced. */
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, 300, SK_TILES_OPEN,
        leaf_of, NULL, &err), 0);
    leaf_variant = 1;
    variant_from = 300;
    m = mem_tree(70000);
    for (i = 300; i < 70000; i++) {
        assert_int_equal(leaf_of(h, i, NULL, &err), 0);
        assert_int_equal(sk_merkle_tree_append(t, h, &err), 0);
    }
    same_trees(t, m, 70000);
    sk_merkle_tree_free(t);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, 70000,
        SK_TILES_CHECK, leaf_of, NULL, &err), 0);
    same_trees(t, m, 70000);
    sk_merkle_tree_free(t);
    sk_merkle_tree_free(m);
    leaf_variant = 0;
    free(td);
    tu_rmtree(dir);
}


static void
poke(const char *td, const char *rel, int how)
{
    char    *p = tu_path(td, rel);
    int      fd;
    unsigned char  c;

    if (how == 0) {
        assert_int_equal(unlink(p), 0);
    } else if (how == 1) {
        assert_int_equal(truncate(p, 100), 0);
    } else {
        fd = open(p, O_RDWR);
        assert_true(fd >= 0);
        assert_int_equal(pread(fd, &c, 1, 77), 1);
        c ^= 0x40;
        assert_int_equal(pwrite(fd, &c, 1, 77), 1);
        close(fd);
    }
    free(p);
}


static void
test_tiles_damage(void **state)
{
    sk_merkle_tree_t  *t, *m;
    sk_merkle_hash_t   a, b;
    sk_merkle_proof_t  pa, pb;
    sk_err_t           err;
    const char        *last;
    char              *dir = tu_tmpdir(), *td = tu_path(dir, "tile");
    int                how;

    (void) state;
    leaf_variant = 0;
    m = mem_tree(NMAX);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX,
        SK_TILES_REBUILD, leaf_of, NULL, &err), 0);
    same_trees(t, m, NMAX);
    sk_merkle_tree_free(t);

    /* A level-0 tile under a full parent: found when read, rebuilt, and
     * the proof is the right one; the file is whole again. */
    for (how = 0; how < 3; how++) {
        poke(td, "0/001", how);
        assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX,
            SK_TILES_CHECK, leaf_of, NULL, &err), -1);
        assert_int_equal(err.code, SK_ERR_FORMAT);
        assert_non_null(strstr(err.msg, "0/001"));
        assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX,
            SK_TILES_OPEN, leaf_of, NULL, &err), 0);
        assert_int_equal(sk_merkle_tree_inclusion(&pa, t, 300, NMAX, &err),
            0);
        assert_int_equal(sk_merkle_tree_inclusion(&pb, m, 300, NMAX, &err),
            0);
        assert_memory_equal(pa.hash, pb.hash, pa.len * 32);
        assert_int_equal(sk_merkle_tree_tiles_rebuilt(t, &last), 1);
        assert_non_null(strstr(last, "0/001"));
        sk_merkle_tree_free(t);
        assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX,
            SK_TILES_CHECK, leaf_of, NULL, &err), 0);
        sk_merkle_tree_free(t);
    }

    /* A tile the right edge is made of (1/000, under no full parent):
     * missing, it is rebuilt at open; altered, the root comes out wrong,
     * which the caller's signed root catches, and a rebuild mends. */
    poke(td, "1/000", 0);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX, SK_TILES_OPEN,
        leaf_of, NULL, &err), 0);
    same_trees(t, m, NMAX);
    sk_merkle_tree_free(t);
    poke(td, "1/000", 2);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX, SK_TILES_OPEN,
        leaf_of, NULL, &err), 0);
    assert_int_equal(sk_merkle_tree_root(a, t, NMAX, &err), 0);
    assert_int_equal(sk_merkle_tree_root(b, m, NMAX, &err), 0);
    assert_memory_not_equal(a, b, 32);
    sk_merkle_tree_free(t);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX, SK_TILES_CHECK,
        leaf_of, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "1/000"));
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX,
        SK_TILES_REBUILD, leaf_of, NULL, &err), 0);
    same_trees(t, m, NMAX);
    sk_merkle_tree_free(t);

    /* A tile that disagrees with the log (the log changed): rebuilt from
     * the log it still does not hash to its parent; refused, not used. */
    leaf_variant = 1;
    variant_from = 256;
    poke(td, "0/001", 2);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX, SK_TILES_OPEN,
        leaf_of, NULL, &err), 0);
    assert_int_equal(sk_merkle_tree_inclusion(&pa, t, 300, NMAX, &err), -1);
    assert_int_equal(err.code, SK_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "the log and the tree disagree"));
    sk_merkle_tree_free(t);
    leaf_variant = 0;

    sk_merkle_tree_free(m);
    free(td);
    tu_rmtree(dir);
}


/* Tiles that cannot be written (here "0" is a file, not a directory):
 * appends go on, each unwritten tile is noted, and a read rebuilds it
 * from the leaves and checks it against its parent. */
/* One thread's share of test_tiles_parallel: proofs for leaves i, i +
 * step, ... against the in-memory tree's. */
typedef struct {
    const sk_merkle_tree_t  *t, *m;
    uint64_t                 first, step;
    unsigned long            proofs, wrong;
} par_job_t;


static void *
par_proofs(void *arg)
{
    par_job_t          *j = arg;
    sk_merkle_proof_t   pa, pb;
    sk_err_t            err;
    uint64_t            i;

    for (i = j->first; i < NMAX; i += j->step) {
        j->proofs++;
        if (sk_merkle_tree_inclusion(&pa, j->t, i, NMAX, &err) != 0
            || sk_merkle_tree_inclusion(&pb, j->m, i, NMAX, &err) != 0
            || pa.len != pb.len
            || memcmp(pa.hash, pb.hash, pa.len * SK_MERKLE_HASH_BYTES) != 0)
        {
            j->wrong++;
        }
    }
    return NULL;
}


/* Proofs read by four threads at once (sk-mirror answers in parallel),
 * striding over 273 level-0 tiles so that each misses the cache, loads
 * and evicts: every proof is the in-memory tree's, and a damaged tile met
 * by them all is rebuilt once. */
static void
test_tiles_parallel(void **state)
{
    sk_merkle_tree_t  *t, *m;
    par_job_t          job[4];
    pthread_t          th[4];
    sk_err_t           err;
    const char        *last;
    char              *dir = tu_tmpdir(), *td = tu_path(dir, "tile");
    int                k;

    (void) state;
    leaf_variant = 0;
    m = mem_tree(NMAX);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX,
        SK_TILES_REBUILD, leaf_of, NULL, &err), 0);
    sk_merkle_tree_free(t);
    poke(td, "0/017", 2);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, NMAX, SK_TILES_OPEN,
        leaf_of, NULL, &err), 0);
    for (k = 0; k < 4; k++) {
        job[k] = (par_job_t) { .t = t, .m = m, .first = (uint64_t) k * 97,
                               .step = 251 };
        assert_int_equal(pthread_create(&th[k], NULL, par_proofs, &job[k]),
            0);
    }
    for (k = 0; k < 4; k++) {
        assert_int_equal(pthread_join(th[k], NULL), 0);
        assert_true(job[k].proofs > 270);
        assert_int_equal(job[k].wrong, 0);
    }
    assert_int_equal(sk_merkle_tree_tiles_rebuilt(t, &last), 1);
    assert_non_null(strstr(last, "0/017"));
    sk_merkle_tree_free(t);
    sk_merkle_tree_free(m);
    free(td);
    tu_rmtree(dir);
}


static void
test_tiles_unwritable(void **state)
{
    sk_merkle_tree_t  *t, *m;
    sk_merkle_hash_t   h;
    sk_merkle_proof_t  pa, pb;
    sk_err_t           err;
    const char        *last;
    char              *dir = tu_tmpdir(), *td = tu_path(dir, "tile"), *zero;
    uint64_t           i;
    FILE              *f;

    (void) state;
    leaf_variant = 0;
    assert_int_equal(mkdir(td, 0755), 0);
    zero = tu_path(td, "0");
    f = fopen(zero, "w");
    assert_non_null(f);
    fclose(f);
    m = mem_tree(600);
    assert_int_equal(sk_merkle_tree_open_tiles(&t, td, 0, SK_TILES_OPEN,
        leaf_of, NULL, &err), 0);
    for (i = 0; i < 600; i++) {
        assert_int_equal(leaf_of(h, i, NULL, &err), 0);
        assert_int_equal(sk_merkle_tree_append(t, h, &err), 0);
    }
    assert_int_equal(sk_merkle_tree_tiles_rebuilt(t, &last), 2);
    assert_non_null(strstr(last, "0/001"));
    assert_non_null(strstr(last, "(rebuilt when read)"));
    leaf_calls = 0;
    assert_int_equal(sk_merkle_tree_inclusion(&pa, t, 10, 600, &err), 0);
    assert_int_equal(sk_merkle_tree_inclusion(&pb, m, 10, 600, &err), 0);
    assert_int_equal(pa.len, pb.len);
    assert_memory_equal(pa.hash, pb.hash, pa.len * 32);
    assert_int_equal(leaf_calls, 256);
    same_trees(t, m, 600);
    sk_merkle_tree_free(t);
    sk_merkle_tree_free(m);
    free(zero);
    free(td);
    tu_rmtree(dir);
}


static void
test_tile_paths(void **state)
{
    static const struct {
        int          level;
        uint64_t     n;
        unsigned     w;
        const char  *path;
    } ok[] = {
        { 0, 0, 256, "0/000" },
        { 0, 1234067, 256, "0/x001/x234/067" },
        { 2, 5, 7, "2/005.p/7" },
        { 63, 1000, 255, "63/x001/000.p/255" },
        { SK_TILE_ENTRIES, 48, 256, "entries/048" },
        { SK_TILE_ENTRIES, 48, 1, "entries/048.p/1" },
        { 0, UINT64_MAX, 256, "0/x018/x446/x744/x073/x709/x551/615" },
    };
    static const char *const bad[] = {
        "", "0", "0/", "00/000", "64/000", "a/000", "0/00", "0/0000",
        "0/x000/123", "0/x1/123", "0/001.p/0", "0/001.p/256", "0/001.p/07",
        "0/001.p/", "0/001/", "0/001.q/1", "entries/", "entries/1",
        "0/x018/x446/x744/x073/x709/x551/616", "0/001.p/1x", "-1/000",
    };
    char      path[SK_TILE_PATH_MAX];
    sk_err_t  err;
    uint64_t  n;
    unsigned  w;
    size_t    i;
    int       level;

    (void) state;
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        sk_tile_path(path, ok[i].level, ok[i].n, ok[i].w);
        assert_string_equal(path, ok[i].path);
        assert_int_equal(sk_tile_path_parse(&level, &n, &w, ok[i].path,
            &err), 0);
        assert_int_equal(level, ok[i].level);
        assert_true(n == ok[i].n);
        assert_int_equal(w, ok[i].w);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sk_tile_path_parse(&level, &n, &w, bad[i], &err),
            -1);
        assert_int_equal(err.code, SK_ERR_FORMAT);
    }
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tile_paths),
        cmocka_unit_test(test_tiles_append_and_reopen),
        cmocka_unit_test(test_tiles_damage),
        cmocka_unit_test(test_tiles_parallel),
        cmocka_unit_test(test_tiles_unwritable),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
