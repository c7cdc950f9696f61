/*
 * test_merkle.c -- RFC 6962 hashing against known answers and a naive
 * recursive model, proofs for every size and index, checkpoints.
 */
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "testutil.h"

#define NLEAVES 300

/* The RFC 6962 / RFC 9162 reference leaves and roots (as used by
 * certificate-transparency test suites). */
static const char *const kat_leaves[] = {
    "", "00", "10", "2021", "3031", "40414243",
    "5051525354555657", "606162636465666768696a6b6c6d6e6f"
};
static const char *const kat_roots[] = {
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

static sk_merkle_tree_t  *tree;
static sk_merkle_hash_t   leaf[NLEAVES];



/* The model: RFC 6962 section 2.1 written as literally as possible. */

static void
naive_sha(sk_merkle_hash_t out, const unsigned char *a, size_t alen,
    const unsigned char *b, size_t blen, unsigned char prefix)
{
    unsigned char  buf[1 + 2 * 32 + 64];

    assert_true(alen + blen <= 2 * 32 + 64);
    buf[0] = prefix;
    memcpy(buf + 1, a, alen);
    memcpy(buf + 1 + alen, b, blen);
    SHA256(buf, 1 + alen + blen, out);
}


static uint64_t
naive_k(uint64_t n)
{
    uint64_t  k = 1;

    while (k * 2 < n) {
        k *= 2;
    }
    return k;
}


static void
naive_mth(sk_merkle_hash_t out, uint64_t a, uint64_t b)
{
    sk_merkle_hash_t  l, r;
    uint64_t          k;

    if (b == a) {
        SHA256((const unsigned char *) "", 0, out);
    } else if (b - a == 1) {
        memcpy(out, leaf[a], 32);
    } else {
        k = naive_k(b - a);
        naive_mth(l, a, a + k);
        naive_mth(r, a + k, b);
        naive_sha(out, l, 32, r, 32, 0x01);
    }
}


static void
naive_path(sk_merkle_proof_t *p, uint64_t m, uint64_t a, uint64_t b)
{
    uint64_t  k;

    if (b - a <= 1) {
        return;
    }
    k = naive_k(b - a);
    if (m - a < k) {
        naive_path(p, m, a, a + k);
        naive_mth(p->hash[p->len++], a + k, b);
    } else {
        naive_path(p, m, a + k, b);
        naive_mth(p->hash[p->len++], a, a + k);
    }
}


static void
naive_subproof(sk_merkle_proof_t *p, uint64_t m, uint64_t a, uint64_t b,
    int flag)
{
    uint64_t  k;

    if (m == b - a) {
        if (!flag) {
            naive_mth(p->hash[p->len++], a, b);
        }
        return;
    }
    k = naive_k(b - a);
    if (m <= k) {
        naive_subproof(p, m, a, a + k, flag);
        naive_mth(p->hash[p->len++], a + k, b);
    } else {
        naive_subproof(p, m - k, a + k, b, 0);
        naive_mth(p->hash[p->len++], a, a + k);
    }
}


static int
setup(void **state)
{
    unsigned char  data[16];
    sk_err_t       err;
    int            i;

    (void) state;
    if (sk_merkle_tree_new(&tree, &err) != 0) {
        return -1;
    }
    for (i = 0; i < NLEAVES; i++) {
        snprintf((char *) data, sizeof(data), "entry %d", i);
        if (sk_merkle_leaf_hash(leaf[i], data, strlen((char *) data), &err)
            != 0 || sk_merkle_tree_append(tree, leaf[i], &err) != 0)
        {
            return -1;
        }
    }
    return 0;
}


static int
teardown(void **state)
{
    (void) state;
    sk_merkle_tree_free(tree);
    return 0;
}


static void
test_known_answers(void **state)
{
    sk_merkle_tree_t  *t;
    sk_merkle_hash_t   h, want;
    unsigned char      data[32];
    size_t             i, n;
    sk_err_t           err;

    (void) state;
    tu_assert_ok(sk_merkle_tree_new(&t, &err), &err);
    for (i = 0; i <= 8; i++) {
        tu_unhex(want, kat_roots[i]);
        tu_assert_ok(sk_merkle_tree_root(h, t, i, &err), &err);
        assert_memory_equal(h, want, 32);
        if (i < 8) {
            n = tu_unhex(data, kat_leaves[i]);
            tu_assert_ok(sk_merkle_leaf_hash(h, data, n, &err), &err);
            tu_assert_ok(sk_merkle_tree_append(t, h, &err), &err);
        }
    }
    /* Any earlier size is still answerable; a later one is not. */
    tu_unhex(want, kat_roots[3]);
    tu_assert_ok(sk_merkle_tree_root(h, t, 3, &err), &err);
    assert_memory_equal(h, want, 32);
    tu_assert_err(sk_merkle_tree_root(h, t, 9, &err), &err, SK_ERR_NOT_FOUND,
        "tree size 9 beyond 8");
    assert_null(sk_merkle_tree_leaf(t, 8));
    assert_non_null(sk_merkle_tree_leaf(t, 7));
    sk_merkle_tree_free(t);
    sk_merkle_tree_free(NULL);
}


static void
test_roots_match_model(void **state)
{
    sk_merkle_hash_t  got, want;
    uint64_t          n;
    sk_err_t          err;

    (void) state;
    assert_int_equal(sk_merkle_tree_size(tree), NLEAVES);
    for (n = 0; n <= NLEAVES; n++) {
        naive_mth(want, 0, n);
        tu_assert_ok(sk_merkle_tree_root(got, tree, n, &err), &err);
        assert_memory_equal(got, want, 32);
    }
}


static void
test_inclusion_all(void **state)
{
    sk_merkle_proof_t  p, model, bad;
    sk_merkle_hash_t   root;
    uint64_t           n, m;
    size_t             i;
    sk_err_t           err;

    (void) state;
    for (n = 1; n <= NLEAVES; n++) {
        tu_assert_ok(sk_merkle_tree_root(root, tree, n, &err), &err);
        for (m = 0; m < n; m++) {
            tu_assert_ok(sk_merkle_tree_inclusion(&p, tree, m, n, &err),
                &err);
            if (n <= 64) {
                model.len = 0;
                naive_path(&model, m, 0, n);
                assert_int_equal(p.len, model.len);
                assert_memory_equal(p.hash, model.hash, p.len * 32);
            }
            tu_assert_ok(sk_merkle_verify_inclusion(leaf[m], m, n, &p, root,
                &err), &err);
            if (n > 64) {
                continue;
            }
            /* Tampering: every hash, the leaf, the index, the size. */
            for (i = 0; i < p.len; i++) {
                bad = p;
                bad.hash[i][i % 32] ^= 0x40;
                tu_assert_err(sk_merkle_verify_inclusion(leaf[m], m, n, &bad,
                    root, &err), &err, SK_ERR_SIGNATURE, "root mismatch");
            }
            if (n > 1) {
                tu_assert_err(sk_merkle_verify_inclusion(leaf[(m + 1) % n],
                    m, n, &p, root, &err), &err, SK_ERR_SIGNATURE,
                    "root mismatch");
                assert_int_equal(sk_merkle_verify_inclusion(leaf[m],
                    (m + 1) % n, n, &p, root, &err), -1);
            }
            bad = p;
            memcpy(bad.hash[bad.len++], root, 32);
            tu_assert_err(sk_merkle_verify_inclusion(leaf[m], m, n, &bad,
                root, &err), &err, SK_ERR_SIGNATURE, "too long");
            if (p.len > 0) {
                bad = p;
                bad.len--;
                tu_assert_err(sk_merkle_verify_inclusion(leaf[m], m, n, &bad,
                    root, &err), &err, SK_ERR_SIGNATURE, "too short");
            }
        }
    }
    tu_assert_err(sk_merkle_tree_inclusion(&p, tree, 5, 5, &err), &err,
        SK_ERR_NOT_FOUND, "leaf 5 not in a tree of size 5");
    tu_assert_err(sk_merkle_tree_inclusion(&p, tree, 0, NLEAVES + 1, &err),
        &err, SK_ERR_NOT_FOUND, "beyond");
    tu_assert_err(sk_merkle_verify_inclusion(leaf[0], 3, 3, &p, root, &err),
        &err, SK_ERR_SIGNATURE, "not in a tree of size 3");
}


static void
test_consistency_all(void **state)
{
    sk_merkle_proof_t  p, model, bad;
    sk_merkle_hash_t   r1, r2;
    uint64_t           m, n;
    size_t             i;
    sk_err_t           err;

    (void) state;
    for (n = 1; n <= NLEAVES; n++) {
        tu_assert_ok(sk_merkle_tree_root(r2, tree, n, &err), &err);
        for (m = 1; m <= n; m += (n > 64 ? 7 : 1)) {
            tu_assert_ok(sk_merkle_tree_root(r1, tree, m, &err), &err);
            tu_assert_ok(sk_merkle_tree_consistency(&p, tree, m, n, &err),
                &err);
            if (n <= 64 && m < n) {
                model.len = 0;
                naive_subproof(&model, m, 0, n, 1);
                assert_int_equal(p.len, model.len);
                assert_memory_equal(p.hash, model.hash, p.len * 32);
            }
            tu_assert_ok(sk_merkle_verify_consistency(m, n, r1, r2, &p,
                &err), &err);
            if (n > 64) {
                continue;
            }
            for (i = 0; i < p.len; i++) {
                bad = p;
                bad.hash[i][31 - i % 32] ^= 0x01;
                tu_assert_err(sk_merkle_verify_consistency(m, n, r1, r2, &bad,
                    &err), &err, SK_ERR_SIGNATURE, "root mismatch");
            }
            if (m < n) {
                /* The old root swapped for another tree's is refused. */
                tu_assert_err(sk_merkle_verify_consistency(m, n, r2, r2, &p,
                    &err), &err, SK_ERR_SIGNATURE, "consistency proof");
                bad = p;
                bad.len--;
                assert_int_equal(sk_merkle_verify_consistency(m, n, r1, r2,
                    &bad, &err), -1);
                bad = p;
                memcpy(bad.hash[bad.len++], r1, 32);
                assert_int_equal(sk_merkle_verify_consistency(m, n, r1, r2,
                    &bad, &err), -1);
            } else {
                assert_int_equal(p.len, 0);
            }
        }
    }
    tu_assert_ok(sk_merkle_tree_root(r1, tree, 0, &err), &err);
    p.len = 0;
    tu_assert_ok(sk_merkle_verify_consistency(0, 9, r1, r2, &p, &err), &err);
    tu_assert_err(sk_merkle_verify_consistency(0, 9, r2, r2, &p, &err), &err,
        SK_ERR_SIGNATURE, "root mismatch");
    tu_assert_err(sk_merkle_verify_consistency(4, 9, r1, r2, &p, &err), &err,
        SK_ERR_SIGNATURE, "empty");
    tu_assert_err(sk_merkle_verify_consistency(9, 4, r1, r2, &p, &err), &err,
        SK_ERR_SIGNATURE, "shrinks");
    tu_assert_err(sk_merkle_tree_consistency(&p, tree, 0, 4, &err), &err,
        SK_ERR_USAGE, "no consistency proof from 0 to 4");
    tu_assert_err(sk_merkle_tree_consistency(&p, tree, 5, 4, &err), &err,
        SK_ERR_USAGE, "from 5 to 4");
    tu_assert_err(sk_merkle_tree_consistency(&p, tree, 1, NLEAVES + 1, &err),
        &err, SK_ERR_NOT_FOUND, "beyond");
}


static void
test_proof_text(void **state)
{
    sk_merkle_proof_t  p, q;
    char              *txt, buf[128];
    size_t             len;
    sk_err_t           err;

    (void) state;
    tu_assert_ok(sk_merkle_tree_inclusion(&p, tree, 77, 200, &err), &err);
    tu_assert_ok(sk_merkle_proof_format(&txt, &len, &p, &err), &err);
    assert_int_equal(len, p.len * 45);
    tu_assert_ok(sk_merkle_proof_parse(&q, txt, len, &err), &err);
    assert_int_equal(q.len, p.len);
    assert_memory_equal(q.hash, p.hash, p.len * 32);
    tu_assert_err(sk_merkle_proof_parse(&q, txt, len - 1, &err), &err,
        SK_ERR_FORMAT, "no newline");
    free(txt);
    tu_assert_ok(sk_merkle_proof_parse(&q, "", 0, &err), &err);
    assert_int_equal(q.len, 0);

    strcpy(buf, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n");
    tu_assert_ok(sk_merkle_proof_parse(&q, buf, strlen(buf), &err), &err);
    /* URL-safe alphabet, lost padding, non-zero trailing bits, short. */
    strcpy(buf, "47DEQpj8HBSa-_TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n");
    tu_assert_err(sk_merkle_proof_parse(&q, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "proof line 1: bad base64 at position 13");
    strcpy(buf, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU\n");
    tu_assert_err(sk_merkle_proof_parse(&q, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "bad base64 length 43");
    strcpy(buf, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFV=\n");
    tu_assert_err(sk_merkle_proof_parse(&q, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "non-canonical base64");
    strcpy(buf, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hS\n");
    tu_assert_err(sk_merkle_proof_parse(&q, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "30 bytes, not 32");
}


/* golang.org/x/mod/sumdb/note's documented example key and note. */
static void
test_signed_note_known_answer(void **state)
{
    static const char  vkey[] = "ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
    static const char  text[] =
        "If you think cryptography is the answer to your problem,\n"
        "then you don't know what your problem is.\n";
    static const char  sig[] = "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZIn"
        "NIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=";
    unsigned char      raw[64], id[4], blob[80];
    EVP_PKEY          *pk;
    sk_key_t          *key;
    sk_err_t           err;

    (void) state;
    assert_int_equal(EVP_DecodeBlock(raw, (const unsigned char *) vkey,
        (int) strlen(vkey)), 33);
    assert_int_equal(raw[0], 0x01);
    pk = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw + 1, 32);
    assert_non_null(pk);
    tu_assert_ok(sk_key_from_pkey(&key, pk, &err), &err);
    EVP_PKEY_free(pk);
    tu_assert_ok(sk_checkpoint_key_id(id, "PeterNeumann", key, &err), &err);
    tu_unhex(raw, "c74f20a3");
    assert_memory_equal(id, raw, 4);
    assert_int_equal(EVP_DecodeBlock(blob, (const unsigned char *) sig,
        (int) strlen(sig)), 69);
    assert_memory_equal(blob, id, 4);
    tu_assert_ok(sk_key_verify(key, blob + 4, 64,
        (const unsigned char *) text, strlen(text), &err), &err);
    tu_assert_err(sk_checkpoint_key_id(id, "Peter+Neumann", key, &err), &err,
        SK_ERR_USAGE, "has spaces or '+'");
    sk_key_free(key);
}


static void
test_checkpoint(void **state)
{
    sk_checkpoint_t  cp, got;
    sk_key_t        *k1, *k2;
    char            *note, *note2, buf[SK_CHECKPOINT_MAX + 16], *p;
    size_t           len, len2;
    sk_err_t         err;
    int              i;

    (void) state;
    tu_assert_ok(sk_key_generate(&k1, SK_KEY_ED25519, 0, &err), &err);
    tu_assert_ok(sk_key_generate(&k2, SK_KEY_ED25519, 0, &err), &err);
    memset(&cp, 0, sizeof(cp));
    strcpy(cp.origin, "timeline.example.org/sk/7");
    cp.size = 200;
    tu_assert_ok(sk_merkle_tree_root(cp.root, tree, 200, &err), &err);
    strcpy(cp.ext, "Timestamp 1700000000\n");
    tu_assert_ok(sk_checkpoint_format(&note, &len, &cp, "sk-timeline-7", k1,
        &err), &err);
    assert_int_equal(strlen(note), len);
    assert_non_null(strstr(note, "timeline.example.org/sk/7\n200\n"));
    assert_non_null(strstr(note, "\nTimestamp 1700000000\n\n\xe2\x80\x94 "
        "sk-timeline-7 "));

    tu_assert_ok(sk_checkpoint_verify(&got, note, len, "sk-timeline-7", k1,
        &err), &err);
    assert_string_equal(got.origin, cp.origin);
    assert_int_equal(got.size, 200);
    assert_memory_equal(got.root, cp.root, 32);
    assert_string_equal(got.ext, cp.ext);
    tu_assert_ok(sk_checkpoint_parse(&got, note, len, &err), &err);

    /* Wrong key, wrong name, tampered body or signature. */
    tu_assert_err(sk_checkpoint_verify(&got, note, len, "sk-timeline-7", k2,
        &err), &err, SK_ERR_SIGNATURE, "no signature by key");
    tu_assert_err(sk_checkpoint_verify(&got, note, len, "other", k1, &err),
        &err, SK_ERR_SIGNATURE, "no signature by key \"other\"");
    memcpy(buf, note, len);
    buf[len] = '\0';
    p = strstr(buf, "\n200\n");
    p[3] = '1';
    tu_assert_err(sk_checkpoint_verify(&got, buf, len, "sk-timeline-7", k1,
        &err), &err, SK_ERR_SIGNATURE, "checkpoint signature by");
    assert_int_equal(got.size, 0);
    memcpy(buf, note, len);
    buf[len - 10] ^= 0x01;
    assert_int_equal(sk_checkpoint_verify(&got, buf, len, "sk-timeline-7",
        k1, &err), -1);

    /* A co-signature by another key is carried and ignored. */
    tu_assert_ok(sk_checkpoint_format(&note2, &len2, &cp, "witness", k2,
        &err), &err);
    p = strstr(note2, "\xe2\x80\x94");
    snprintf(buf, sizeof(buf), "%.*s%s", (int) len, note, p);
    tu_assert_ok(sk_checkpoint_verify(&got, buf, strlen(buf), "sk-timeline-7",
        k1, &err), &err);
    tu_assert_ok(sk_checkpoint_verify(&got, buf, strlen(buf), "witness", k2,
        &err), &err);
    free(note2);

    /* Structure errors, each naming the line. */
    tu_assert_err(sk_checkpoint_parse(&got, note, len - 1, &err), &err,
        SK_ERR_FORMAT, "no final newline");
    snprintf(buf, sizeof(buf), "o\n0200\n%s", strchr(note + 30, '\n') + 1);
    tu_assert_err(sk_checkpoint_parse(&got, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "line 2: tree size empty or with leading zeros");
    tu_assert_err(sk_checkpoint_parse(&got, "o\n1x\n", 5, &err), &err,
        SK_ERR_FORMAT, "line 2: tree size not a 64-bit decimal");
    tu_assert_err(sk_checkpoint_parse(&got, "o\n18446744073709551616\n", 23,
        &err), &err, SK_ERR_FORMAT, "not a 64-bit decimal");
    tu_assert_err(sk_checkpoint_parse(&got, "o\n1\n\n", 5, &err), &err,
        SK_ERR_FORMAT, "line 3: blank before the root hash");
    tu_assert_err(sk_checkpoint_parse(&got, "o\n1\nAAAA\n", 9, &err), &err,
        SK_ERR_FORMAT, "checkpoint line 3: 3 bytes, not 32");
    tu_assert_err(sk_checkpoint_parse(&got, "\xc3\xa9\n", 3, &err), &err,
        SK_ERR_FORMAT, "line 1: not printable ascii");
    snprintf(buf, sizeof(buf), "%.*s", (int) (strstr(note, "\n\n") - note + 2),
        note);
    tu_assert_err(sk_checkpoint_parse(&got, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "no signature lines");
    snprintf(buf, sizeof(buf), "%s- x AAAA\n", note);
    tu_assert_err(sk_checkpoint_parse(&got, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "line 7: signature line must start with an em dash");
    snprintf(buf, sizeof(buf), "%s\xe2\x80\x94 a+b AAAAAAAA\n", note);
    tu_assert_err(sk_checkpoint_parse(&got, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "line 7: bad key name");
    snprintf(buf, sizeof(buf), "%s\xe2\x80\x94 ab AAAA\n", note);
    tu_assert_err(sk_checkpoint_parse(&got, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "line 7: signature too short");
    p = buf + snprintf(buf, sizeof(buf), "%s", note);
    for (i = 0; i < 64; i++) {
        p += sprintf(p, "\xe2\x80\x94 w%d AAAAAAAA\n", i);
    }
    tu_assert_err(sk_checkpoint_parse(&got, buf, strlen(buf), &err), &err,
        SK_ERR_FORMAT, "more than 64 signatures");
    memset(buf, 'a', sizeof(buf));
    tu_assert_err(sk_checkpoint_parse(&got, buf, SK_CHECKPOINT_MAX + 1, &err),
        &err, SK_ERR_FORMAT, "larger than 8192 bytes");

    /* What the signer refuses to write. */
    strcpy(cp.ext, "no newline");
    tu_assert_err(sk_checkpoint_format(&note2, &len2, &cp, "n", k1, &err),
        &err, SK_ERR_USAGE, "checkpoint extensions");
    cp.ext[0] = '\0';
    cp.origin[0] = '\0';
    tu_assert_err(sk_checkpoint_format(&note2, &len2, &cp, "n", k1, &err),
        &err, SK_ERR_USAGE, "checkpoint origin");
    strcpy(cp.origin, "o");
    tu_assert_err(sk_checkpoint_format(&note2, &len2, &cp, "a b", k1, &err),
        &err, SK_ERR_USAGE, "checkpoint key name");
    free(note);
    sk_key_free(k1);
    sk_key_free(k2);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_roots_match_model),
        cmocka_unit_test(test_inclusion_all),
        cmocka_unit_test(test_consistency_all),
        cmocka_unit_test(test_proof_text),
        cmocka_unit_test(test_signed_note_known_answer),
        cmocka_unit_test(test_checkpoint),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
