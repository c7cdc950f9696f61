/*
 * test_map.c -- the name map's hashing, root and proofs against a naive
 * model (map_model.h) on seeded random key sets of 1 to 2000 keys:
 * roots, proofs for every key present and for absent ones, every
 * single-bit change of a proof or root refused or still true, and the
 * strict text form.
 */
#include "map_model.h"

#define SEED  UINT64_C(0x5eed0023)


/* What the model says of key: 1 and its value, or 0. */
static int
truth(const mm_map_t *m, const unsigned char *key, sk_merkle_hash_t value)
{
    const mm_item_t  *it = mm_find(m, key);

    if (it != NULL) {
        memcpy(value, it->value, 32);
    }
    return it != NULL;
}


/* p verifies for key against root, and says what the model says. */
static void
verify_true(const mm_map_t *m, const sk_map_proof_t *p,
    const unsigned char *key, const sk_merkle_hash_t root)
{
    sk_merkle_hash_t  value, want;
    int               present, is;
    sk_err_t          err;

    is = truth(m, key, want);
    tu_assert_ok(sk_map_proof_verify(p, key, root, &present, value, &err),
        &err);
    assert_int_equal(present, is);
    if (is) {
        assert_memory_equal(value, want, 32);
    }
}


/* p, changed, must not verify for key, or say only what is true. */
static void
verify_refused_or_true(const mm_map_t *m, const sk_map_proof_t *p,
    const unsigned char *key, const sk_merkle_hash_t root, unsigned *passed)
{
    sk_merkle_hash_t  value, want;
    int               present = -1, is;
    sk_err_t          err;

    is = truth(m, key, want);
    sk_err_clear(&err);
    if (sk_map_proof_verify(p, key, root, &present, value, &err) != 0) {
        assert_int_equal(err.code, SK_ERR_SIGNATURE);
        assert_true(strncmp(err.msg, "map proof: ", 11) == 0);
        return;
    }
    (*passed)++;
    assert_int_equal(present, is);
    if (is) {
        assert_memory_equal(value, want, 32);
    }
}


static void
flip(unsigned char *b, unsigned bit)
{
    b[bit / 8] ^= (unsigned char) (0x80 >> (bit % 8));
}


/* Every single-bit change of every part of p (and of root), and the
 * other end, and the depth one up or down: refused, never a lie. */
static void
tamper_all(const mm_map_t *m, const sk_map_proof_t *p,
    const unsigned char *key, const sk_merkle_hash_t root)
{
    sk_map_proof_t    t;
    sk_merkle_hash_t  r;
    unsigned          i, j, bit, passed = 0;

    for (bit = 0; bit < 256; bit++) {
        memcpy(r, root, 32);
        flip(r, bit);
        verify_refused_or_true(m, p, key, r, &passed);
        if (p->end == SK_MAP_END_LEAF) {     /* else not in the proof */
            t = *p;
            flip(t.leaf_key, bit);
            verify_refused_or_true(m, &t, key, root, &passed);
            t = *p;
            flip(t.leaf_value, bit);
            verify_refused_or_true(m, &t, key, root, &passed);
        }
        for (i = 0; i < p->nsiblings; i++) {
            t = *p;
            flip(t.siblings[i], bit);
            verify_refused_or_true(m, &t, key, root, &passed);
        }
        t = *p;
        flip(t.bitmap, bit);
        verify_refused_or_true(m, &t, key, root, &passed);
        if (bit >= p->depth) {
            continue;
        }
        /* The bitmap and the siblings changed together: a sibling
         * dropped or an empty one added. */
        t = *p;
        flip(t.bitmap, bit);
        t.nsiblings = 0;
        for (i = 0, j = 0; i < p->depth; i++) {
            if (mm_bit(t.bitmap, i)) {
                if (mm_bit(p->bitmap, i)) {
                    memcpy(t.siblings[t.nsiblings], p->siblings[j], 32);
                } else {
                    memset(t.siblings[t.nsiblings], 0, 32);
                }
                t.nsiblings++;
            }
            j += mm_bit(p->bitmap, i);
        }
        verify_refused_or_true(m, &t, key, root, &passed);
    }
    t = *p;
    t.end = p->end == SK_MAP_END_LEAF ? SK_MAP_END_EMPTY : SK_MAP_END_LEAF;
    verify_refused_or_true(m, &t, key, root, &passed);
    for (i = 0; i < 3; i++) {
        t = *p;
        t.depth = i == 0 ? p->depth + 1 : i == 1 ? p->depth - 1 : 257;
        verify_refused_or_true(m, &t, key, root, &passed);
    }
    /* With SHA-256 no changed proof folds to the root. */
    assert_int_equal(passed, 0);
}


/* A random map of n keys, inserted in random order. */
static void
random_map(mm_map_t *m, uint64_t *s, size_t n)
{
    unsigned char     key[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  value;

    memset(m, 0, sizeof(*m));
    while (m->n < n) {
        mm_rand_key(s, m, key);
        mm_rand_bytes(s, value, 32);
        mm_put(m, key, value);
    }
}


static void
root_of(const mm_map_t *m, sk_merkle_hash_t root)
{
    unsigned char    (*keys)[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  *values;
    sk_err_t           err;

    mm_sorted(m, &keys, &values);
    tu_assert_ok(sk_map_root_sorted(root,
        (const unsigned char (*)[SK_MAP_KEY_BYTES]) keys, values, m->n,
        &err), &err);
    free(keys);
    free(values);
}


/* The hashing is the documented bytes. */
static void
test_hashes(void **state)
{
    static const unsigned char  leaf[32] = { 1, 2, 3 };
    sk_map_value_t    v;
    sk_merkle_hash_t  got, want, chain;
    unsigned char     a[32], b[32], buf[49], key[SK_MAP_KEY_BYTES];
    sk_err_t          err;

    (void) state;
    memset(a, 0xaa, 32);
    memset(b, 0xbb, 32);
    sk_map_leaf_hash(got, a, b);
    mm_sha(want, 0x10, a, 32, b, 32);
    assert_memory_equal(got, want, 32);
    sk_map_node_hash(got, a, b);
    mm_sha(want, 0x11, a, 32, b, 32);
    assert_memory_equal(got, want, 32);

    sk_map_value_init(&v);
    assert_int_equal(v.count, 0);
    sk_map_value_add(&v, 7, leaf);
    sk_map_value_add(&v, 9, leaf);
    memset(chain, 0, 32);
    mm_sha(chain, 0x13, chain, 32, leaf, 32);
    mm_sha(chain, 0x13, chain, 32, leaf, 32);
    assert_int_equal(v.count, 2);
    assert_int_equal(v.newest_sn, 9);
    assert_memory_equal(v.chain, chain, 32);
    sk_map_value_hash(got, &v);
    memset(buf, 0, sizeof(buf));
    buf[0] = 0x12;
    buf[8] = 2;
    buf[16] = 9;
    memcpy(buf + 17, chain, 32);
    SHA256(buf, sizeof(buf), want);
    assert_memory_equal(got, want, 32);

    tu_assert_ok(sk_map_key(key, "example.com", &err), &err);
    SHA256((const unsigned char *) "example.com", 11, want);
    assert_memory_equal(key, want, 32);
    tu_assert_err(sk_map_key(key, "Example.com", &err), &err, SK_ERR_FORMAT,
        "map key: name: label 1, character 1 ('E'): uppercase");
    tu_assert_err(sk_map_key(key, "example.com.", &err), &err, SK_ERR_FORMAT,
        "trailing dot");
    tu_assert_err(sk_map_key(key, "", &err), &err, SK_ERR_FORMAT, "empty");
}


/* Empty and one-key maps; keys out of order or twice are refused. */
static void
test_root_edges(void **state)
{
    unsigned char     keys[2][SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  values[2], root, want;
    sk_err_t          err;

    (void) state;
    memset(keys, 0, sizeof(keys));
    memset(values, 0x55, sizeof(values));
    tu_assert_ok(sk_map_root_sorted(root,
        (const unsigned char (*)[SK_MAP_KEY_BYTES]) keys, values, 0, &err),
        &err);
    memset(want, 0, 32);
    assert_memory_equal(root, want, 32);
    keys[0][5] = 9;
    tu_assert_ok(sk_map_root_sorted(root,
        (const unsigned char (*)[SK_MAP_KEY_BYTES]) keys, values, 1, &err),
        &err);
    mm_sha(want, 0x10, keys[0], 32, values[0], 32);
    assert_memory_equal(root, want, 32);
    tu_assert_err(sk_map_root_sorted(root,
        (const unsigned char (*)[SK_MAP_KEY_BYTES]) keys, values, 2, &err),
        &err, SK_ERR_USAGE, "key 2 is not above key 1");
    memcpy(keys[1], keys[0], 32);
    tu_assert_err(sk_map_root_sorted(root,
        (const unsigned char (*)[SK_MAP_KEY_BYTES]) keys, values, 2, &err),
        &err, SK_ERR_USAGE, "key 2 is not above key 1");
}


/* Roots and proofs of random maps: every key present, as many absent
 * (many of them near a present key), against the model. */
static void
test_random_maps(void **state)
{
    static const size_t  sizes[] = { 1, 2, 3, 4, 7, 16, 33, 100, 517, 2000 };
    uint64_t          s = SEED;
    mm_map_t          m;
    sk_map_proof_t    p;
    sk_merkle_hash_t  root, want;
    unsigned char     key[SK_MAP_KEY_BYTES];
    size_t            i, j;

    (void) state;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        random_map(&m, &s, sizes[i]);
        root_of(&m, root);
        mm_root(&m, want);
        assert_memory_equal(root, want, 32);
        for (j = 0; j < m.n; j++) {
            mm_prove(&m, m.items[j].key, &p);
            assert_int_equal(p.end, SK_MAP_END_LEAF);
            verify_true(&m, &p, m.items[j].key, root);
            mm_rand_key(&s, &m, key);
            mm_prove(&m, key, &p);
            verify_true(&m, &p, key, root);
        }
        mm_free(&m);
    }
}


/* Two keys apart only in their last bit: a walk of 256 steps. */
static void
test_depth_256(void **state)
{
    mm_map_t          m;
    sk_map_proof_t    p, q;
    sk_merkle_hash_t  root, value;
    unsigned char     key[SK_MAP_KEY_BYTES];
    char             *text;
    size_t            len, used;
    sk_err_t          err;

    (void) state;
    memset(&m, 0, sizeof(m));
    memset(key, 0x3c, 32);
    memset(value, 1, 32);
    mm_put(&m, key, value);
    key[31] ^= 1;
    mm_put(&m, key, value);
    root_of(&m, root);
    mm_prove(&m, key, &p);
    assert_int_equal(p.depth, 256);
    assert_int_equal(p.nsiblings, 1);
    verify_true(&m, &p, key, root);
    tamper_all(&m, &p, key, root);
    tu_assert_ok(sk_map_proof_format(&text, &len, &p, &err), &err);
    tu_assert_ok(sk_map_proof_parse(&q, &used, text, len, &err), &err);
    assert_int_equal(used, len);
    assert_memory_equal(&p, &q, sizeof(p));
    free(text);
    mm_free(&m);
}


/* Every bit of proofs and roots, for present and absent keys, in maps
 * small and large. */
static void
test_tamper(void **state)
{
    static const size_t  sizes[] = { 1, 2, 5, 60, 2000 };
    uint64_t          s = SEED + 1;
    mm_map_t          m;
    sk_map_proof_t    p;
    sk_merkle_hash_t  root;
    unsigned char     key[SK_MAP_KEY_BYTES];
    size_t            i, j;
    unsigned          ends[2] = { 0, 0 };

    (void) state;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        random_map(&m, &s, sizes[i]);
        mm_root(&m, root);
        for (j = 0; j < 6; j++) {
            if (j % 2 == 0) {
                memcpy(key, m.items[mm_rand(&s) % m.n].key, 32);
            } else {
                do {
                    mm_rand_key(&s, &m, key);
                } while (mm_find(&m, key) != NULL);
            }
            mm_prove(&m, key, &p);
            ends[p.end]++;
            tamper_all(&m, &p, key, root);
        }
        mm_free(&m);
    }
    /* Both kinds of absence were met. */
    assert_true(ends[SK_MAP_END_EMPTY] > 0);
    assert_true(ends[SK_MAP_END_LEAF] > 15);
}


/* A proof for one key, checked for another: a true absence at most. */
static void
test_other_key(void **state)
{
    uint64_t          s = SEED + 2;
    mm_map_t          m;
    sk_map_proof_t    p;
    sk_merkle_hash_t  root, value;
    unsigned char     key[SK_MAP_KEY_BYTES];
    unsigned          i, passed = 0, absent = 0;
    int               present;

    (void) state;
    random_map(&m, &s, 300);
    mm_root(&m, root);
    for (i = 0; i < 2000; i++) {
        mm_prove(&m, m.items[i % m.n].key, &p);
        memcpy(key, m.items[i % m.n].key, 32);
        flip(key, (unsigned) (mm_rand(&s) % 256));
        verify_refused_or_true(&m, &p, key, root, &passed);
        if (sk_map_proof_verify(&p, key, root, &present, value, NULL) == 0) {
            absent += !present;
        }
    }
    /* Keys near a present one (past the walk's depth) share its proof:
     * an absence proof for them, and a true one. */
    assert_true(absent > 0);
    assert_int_equal(absent, passed);
    mm_free(&m);
}


/* Text: every model proof formats and parses back to itself; a byte
 * changed in the text is refused or still true. */
static void
test_text_round_trip(void **state)
{
    uint64_t          s = SEED + 3;
    mm_map_t          m;
    sk_map_proof_t    p, q;
    sk_merkle_hash_t  root;
    unsigned char     key[SK_MAP_KEY_BYTES];
    char             *text, *more;
    size_t            len, used, i, j;
    unsigned          passed = 0;
    sk_err_t          err;

    (void) state;
    random_map(&m, &s, 700);
    mm_root(&m, root);
    for (i = 0; i < 200; i++) {
        if (i % 2 == 0) {
            memcpy(key, m.items[i].key, 32);
        } else {
            mm_rand_key(&s, &m, key);
        }
        mm_prove(&m, key, &p);
        tu_assert_ok(sk_map_proof_format(&text, &len, &p, &err), &err);
        assert_int_equal(len, strlen(text));
        assert_true(strncmp(text, "Map-Proof: ", 11) == 0);
        /* What follows the proof is the caller's. */
        more = malloc(len + 8);
        assert_non_null(more);
        memcpy(more, text, len);
        memcpy(more + len, "Entries", 7);
        tu_assert_ok(sk_map_proof_parse(&q, &used, more, len + 7, &err),
            &err);
        assert_int_equal(used, len);
        assert_memory_equal(&p, &q, sizeof(p));
        free(more);
        for (j = 0; i < 20 && j < len; j++) {
            text[j] ^= 0x01;
            if (sk_map_proof_parse(&q, &used, text, len, &err) == 0) {
                verify_refused_or_true(&m, &q, key, root, &passed);
            } else {
                assert_int_equal(err.code, SK_ERR_FORMAT);
                assert_true(strncmp(err.msg, "map proof: ", 11) == 0);
            }
            text[j] ^= 0x01;
        }
        free(text);
    }
    assert_int_equal(passed, 0);
    mm_free(&m);
}


#define H44  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
#define K43  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

/* Every malformed text is refused, naming the part. */
static void
test_text_refused(void **state)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        { "", "no \"Map-Proof: \" line" },
        { "Map-proof: 0 - empty\n", "no \"Map-Proof: \" line" },
        { "Map-Proof: 0 - empty", "no newline" },
        { "Map-Proof: 00 - empty\n", "depth: not a number from 0 to 256" },
        { "Map-Proof: -1 - empty\n", "depth: character 1 is not a digit" },
        { "Map-Proof:  0 - empty\n", "depth: not a number" },
        { "Map-Proof: 257 " "-" " empty\n", "depth 257, more than 256" },
        { "Map-Proof: 1000 - empty\n", "depth: not a number" },
        { "Map-Proof: 0 00 empty\n", "bitmap: not \"-\" at depth 0" },
        { "Map-Proof: 1 - empty\n", "bitmap: 1 characters, not 2" },
        { "Map-Proof: 1 8 empty\n", "bitmap: 1 characters, not 2" },
        { "Map-Proof: 9 80 empty\n", "bitmap: 2 characters, not 4 for "
          "depth 9" },
        { "Map-Proof: 8 FF empty\n", "bitmap: character 1 is not lowercase" },
        { "Map-Proof: 8 fG empty\n", "bitmap: character 2 is not lowercase" },
        { "Map-Proof: 1 c0 empty\n", "bitmap: bit 1 is set, past depth 1" },
        { "Map-Proof: 12 0008 empty\n", "bitmap: bit 12 is set, past depth" },
        { "Map-Proof: 0 - full\n", "end: not \"empty\" or \"leaf\"" },
        { "Map-Proof: 0 -\n", "end: not \"empty\" or \"leaf\"" },
        { "Map-Proof: 0 - empty x\n", "more after the end" },
        { "Map-Proof: 0 - empty \n", "more after the end" },
        { "Map-Proof: 0 - leaf\n", "leaf key" },
        { "Map-Proof: 0 - leaf AAAA " K43 "\n", "leaf key: 3 bytes, not 32" },
        { "Map-Proof: 0 - leaf " K43 "=" " " K43 "\n", "leaf key" },
        { "Map-Proof: 0 - leaf " K43 "\n", "leaf value" },
        { "Map-Proof: 0 - leaf " K43 " " K43 "A\n", "leaf value" },
        { "Map-Proof: 0 - leaf " K43 " " K43 " \n",
          "more after the leaf value" },
        { "Map-Proof: 0 - leaf " K43 " " K43 " x\n",
          "more after the leaf value" },
        { "Map-Proof: 1 80 empty\n", "hash line 1 of 1: missing" },
        { "Map-Proof: 1 80 empty\n" H44, "hash line 1 of 1: no newline" },
        { "Map-Proof: 2 c0 empty\n" H44 "\n", "hash line 2 of 2: missing" },
        { "Map-Proof: 1 80 empty\nAAAA\n", "hash line 1: 3 bytes, not 32" },
        { "Map-Proof: 1 80 empty\n" K43 "_\n", "hash line 1" },
        { "Map-Proof: 1 80 empty\n" K43 "B=\n",
          "hash line 1: bad base64 length 45" },
    };
    sk_map_proof_t  p;
    size_t          i, used;
    sk_err_t        err;

    (void) state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sk_err_clear(&err);
        if (sk_map_proof_parse(&p, &used, bad[i].text, strlen(bad[i].text),
                &err) == 0 || err.code != SK_ERR_FORMAT
            || strstr(err.msg, bad[i].msg) == NULL
            || strncmp(err.msg, "map proof: ", 11) != 0)
        {
            fail_msg("\"%s\": want \"%s\", got \"%s\"", bad[i].text,
                bad[i].msg, err.msg);
        }
    }
    /* The shortest of each kind is taken. */
    tu_assert_ok(sk_map_proof_parse(&p, &used, "Map-Proof: 0 - empty\n", 21,
        &err), &err);
    assert_int_equal(used, 21);
    assert_int_equal(p.end, SK_MAP_END_EMPTY);
    tu_assert_ok(sk_map_proof_parse(&p, &used, "Map-Proof: 1 80 leaf " K43
        " " K43 "\n" H44 "\n", 21 + 88 + 45, &err), &err);
    assert_int_equal(used, 21 + 88 + 45);
    assert_int_equal(p.nsiblings, 1);
}


/* Format refuses a proof whose parts disagree; verify refuses one with
 * an empty last sibling even when its hashes fold to the root. */
static void
test_shape_refused(void **state)
{
    static const sk_merkle_hash_t  zero;
    sk_map_proof_t    p;
    sk_merkle_hash_t  root, value;
    unsigned char     key[SK_MAP_KEY_BYTES];
    char             *text;
    size_t            len;
    int               present;
    sk_err_t          err;

    (void) state;
    memset(&p, 0, sizeof(p));
    p.depth = 3;
    p.bitmap[0] = 0xa0;
    p.nsiblings = 1;
    tu_assert_err(sk_map_proof_format(&text, &len, &p, &err), &err,
        SK_ERR_USAGE, "map proof: 1 siblings, the bitmap has 2 bits set");
    p.bitmap[0] = 0x10;
    tu_assert_err(sk_map_proof_format(&text, &len, &p, &err), &err,
        SK_ERR_USAGE, "map proof: bitmap bit 3 set past depth 3");
    p.depth = 257;
    tu_assert_err(sk_map_proof_format(&text, &len, &p, &err), &err,
        SK_ERR_USAGE, "map proof: depth 257");

    /* A one-key map (root = its leaf) proven one step too deep: the
     * node over the leaf and an empty sibling is not the root. The
     * root that fold gives is refused by the compression rule. */
    memset(&p, 0, sizeof(p));
    memset(key, 0, sizeof(key));
    p.depth = 1;
    p.end = SK_MAP_END_LEAF;
    memset(p.leaf_value, 7, 32);
    sk_map_leaf_hash(value, key, p.leaf_value);
    sk_map_node_hash(root, value, zero);
    tu_assert_err(sk_map_proof_verify(&p, key, root, &present, value, &err),
        &err, SK_ERR_SIGNATURE, "map proof: the sibling at depth 1 is "
        "empty");
    memset(root, 0, 32);
    p.depth = 0;
    tu_assert_err(sk_map_proof_verify(&p, key, root, &present, value, &err),
        &err, SK_ERR_SIGNATURE, "does not lead to the map root");
    /* A leaf off the key's path. */
    p.depth = 1;
    p.bitmap[0] = 0x80;
    p.nsiblings = 1;
    p.leaf_key[0] = 0x80;
    tu_assert_err(sk_map_proof_verify(&p, key, root, &present, value, &err),
        &err, SK_ERR_SIGNATURE, "the leaf key leaves the key's path at bit 0");
    p.leaf_key[0] = 0;
    tu_assert_err(sk_map_proof_verify(&p, key, root, &present, value, &err),
        &err, SK_ERR_SIGNATURE, "map proof: hash 1 is of an empty subtree");
    p.nsiblings = 0;
    tu_assert_err(sk_map_proof_verify(&p, key, root, &present, value, &err),
        &err, SK_ERR_SIGNATURE, "0 siblings, the bitmap has 1 bits set");
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hashes),
        cmocka_unit_test(test_root_edges),
        cmocka_unit_test(test_random_maps),
        cmocka_unit_test(test_depth_256),
        cmocka_unit_test(test_tamper),
        cmocka_unit_test(test_other_key),
        cmocka_unit_test(test_text_round_trip),
        cmocka_unit_test(test_text_refused),
        cmocka_unit_test(test_shape_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
