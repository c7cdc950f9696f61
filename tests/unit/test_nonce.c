/*
 * test_nonce.c -- an answer bound to a client's nonce (sk/nonce.h): the
 * nonce's strict text, the trailer a mirror signs for a batch of any
 * size, and what a client refuses: another nonce (a replay), another
 * key, another answer, and every malformed trailer.
 */
#include "testutil.h"

#define ANSWER  "SK-Mirror-Answer: 1\nName: example.com\nSignature: x\n"
#define NONCE   "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"


static sk_key_t *
key_new(void)
{
    sk_key_t  *k;
    sk_err_t   err;

    tu_assert_ok(sk_key_generate(&k, SK_KEY_ED25519, 0, &err), &err);
    return k;
}


/* The answer and item i's trailer, as a mirror sends them. */
static char *
doc(const char *answer, const sk_nonce_item_t *it, size_t *len)
{
    char  *d;

    *len = strlen(answer) + it->len;
    d = malloc(*len + 1);
    assert_non_null(d);
    memcpy(d, answer, strlen(answer));
    memcpy(d + strlen(answer), it->trailer, it->len);
    d[*len] = '\0';
    return d;
}


/* A batch of k items, item i for answer i ("<ANSWER>i\n" less its
 * newline) and a nonce of its own, signed by key. */
static sk_nonce_item_t *
batch(size_t k, const sk_key_t *key, char (*answers)[128],
    char (*nonces)[SK_NONCE_TEXT + 1])
{
    sk_nonce_item_t   *items, **ptrs;
    sk_err_t           err;
    size_t             i;

    items = calloc(k, sizeof(*items));
    ptrs = calloc(k, sizeof(*ptrs));
    assert_true(items != NULL && ptrs != NULL);
    for (i = 0; i < k; i++) {
        snprintf(answers[i], 128, "SK-Mirror-Answer: 1\nName: n%zu.example\n"
            "Signature: x\n", i);
        tu_assert_ok(sk_nonce_new(nonces[i], &err), &err);
        tu_assert_ok(sk_nonce_parse(items[i].nonce, nonces[i],
            strlen(nonces[i]), &err), &err);
        sk_nonce_leaf(items[i].leaf, items[i].nonce, answers[i],
            strlen(answers[i]));
        ptrs[i] = &items[i];
    }
    tu_assert_ok(sk_nonce_sign(ptrs, k, key, &err), &err);
    free(ptrs);
    return items;
}


static void
test_nonce_text(void **state)
{
    unsigned char  raw[SK_NONCE_BYTES];
    char           a[SK_NONCE_TEXT + 1], b[SK_NONCE_TEXT + 1];
    sk_err_t       err;
    size_t         i;

    (void) state;
    tu_assert_ok(sk_nonce_new(a, &err), &err);
    tu_assert_ok(sk_nonce_new(b, &err), &err);
    assert_int_equal(strlen(a), SK_NONCE_TEXT);
    assert_string_not_equal(a, b);
    tu_assert_ok(sk_nonce_parse(raw, a, strlen(a), &err), &err);
    tu_assert_ok(sk_nonce_parse(raw, NONCE, strlen(NONCE), &err), &err);
    for (i = 0; i < SK_NONCE_BYTES; i++) {
        assert_int_equal(raw[i], i);
    }
    /* Exactly 43 characters, the canonical base64url of 32 bytes. */
    tu_assert_err(sk_nonce_parse(raw, NONCE, 42, &err), &err, SK_ERR_FORMAT,
        "nonce: 42 characters, not 43");
    tu_assert_err(sk_nonce_parse(raw, NONCE "=", 44, &err), &err,
        SK_ERR_FORMAT, "nonce: 44 characters, not 43");
    tu_assert_err(sk_nonce_parse(raw, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9",
        43, &err), &err, SK_ERR_FORMAT, "nonce");
    tu_assert_err(sk_nonce_parse(raw, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxw+Hh8",
        43, &err), &err, SK_ERR_FORMAT, "nonce");
}


/* Every item of batches of 1 to 33 verifies with its own answer and
 * nonce, whatever its place in the tree; no other. */
static void
test_batches(void **state)
{
    static const size_t   sizes[] = { 1, 2, 3, 5, 8, 16, 33 };
    static char           answers[33][128];
    static char           nonces[33][SK_NONCE_TEXT + 1];
    sk_nonce_item_t      *items;
    sk_key_t             *key = key_new();
    sk_err_t              err;
    size_t                s, i, len, alen;
    char                 *d;

    (void) state;
    free(batch(33, key, answers, nonces));      /* every answer, nonce */
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        items = batch(sizes[s], key, answers, nonces);
        for (i = 0; i < sizes[s]; i++) {
            d = doc(answers[i], &items[i], &len);
            tu_assert_ok(sk_nonce_verify(&alen, d, len, nonces[i], key,
                &err), &err);
            assert_int_equal(alen, strlen(answers[i]));
            /* Another query's nonce: a replay. */
            tu_assert_err(sk_nonce_verify(&alen, d, len,
                nonces[(i + 1) % 33], key, &err), &err, SK_ERR_SIGNATURE,
                "an answer replayed");
            free(d);
            /* Another answer under this trailer. */
            d = doc(answers[(i + 1) % 33], &items[i], &len);
            tu_assert_err(sk_nonce_verify(&alen, d, len, nonces[i], key,
                &err), &err, SK_ERR_SIGNATURE, "does not verify");
            free(d);
        }
        free(items);
    }
    sk_key_free(key);
}


/* What a client refuses: each gives its reason, and no answer length. */
static void
test_refused(void **state)
{
    static char       answers[4][128];
    static char       nonces[4][SK_NONCE_TEXT + 1];
    sk_nonce_item_t  *items;
    sk_key_t         *key = key_new(), *other = key_new();
    sk_err_t          err;
    size_t            len, alen;
    char             *d, *p, *q, buf[2048];

    (void) state;
    items = batch(4, key, answers, nonces);
    d = doc(answers[1], &items[1], &len);

    /* Another mirror's key; a byte of the answer changed. */
    tu_assert_err(sk_nonce_verify(&alen, d, len, nonces[1], other, &err),
        &err, SK_ERR_SIGNATURE, "nonce: the mirror's Nonce-Signature does "
        "not verify");
    assert_int_equal(alen, 0);
    d[5] ^= 1;
    tu_assert_err(sk_nonce_verify(&alen, d, len, nonces[1], key, &err), &err,
        SK_ERR_SIGNATURE, "does not verify");
    d[5] ^= 1;
    /* The key NULL checks everything but the signature. */
    tu_assert_ok(sk_nonce_verify(&alen, d, len, nonces[1], NULL, &err),
        &err);

    /* No trailer (an answer of a mirror that ignores the nonce). */
    snprintf(buf, sizeof(buf), "Last: 1\n%s", answers[1]);
    tu_assert_err(sk_nonce_verify(&alen, buf, strlen(buf), nonces[1], key,
        &err), &err, SK_ERR_FORMAT, "nonce: want a \"Nonce: \" line of 43 "
        "base64url characters, third from last");
    tu_assert_err(sk_nonce_verify(&alen, "x\n", 2, nonces[1], key, &err),
        &err, SK_ERR_FORMAT, "does not end in a nonce trailer");
    /* Cut short, or with a byte after it. */
    tu_assert_err(sk_nonce_verify(&alen, d, len - 1, nonces[1], key, &err),
        &err, SK_ERR_FORMAT, "nonce");
    memcpy(buf, d, len);
    buf[len] = '\n';
    tu_assert_err(sk_nonce_verify(&alen, buf, len + 1, nonces[1], key, &err),
        &err, SK_ERR_FORMAT, "nonce");

    /* The batch line: leading zeros, i >= k, a hash too many or too few,
     * two spaces. */
    p = strstr(d, "Nonce-Batch: ");
    q = strchr(p, '\n');
    assert_true(p != NULL && q != NULL);
#define BATCH_REFUSED(line, code, why)                                     \
    do {                                                                   \
        size_t  n = (size_t) (p - d);                                      \
        memcpy(buf, d, n);                                                 \
        n += (size_t) sprintf(buf + n, "%s", line);                        \
        memcpy(buf + n, q, len - (size_t) (q - d));                        \
        n += len - (size_t) (q - d);                                       \
        tu_assert_err(sk_nonce_verify(&alen, buf, n, nonces[1], key,       \
            &err), &err, code, why);                                       \
    } while (0)
    BATCH_REFUSED("Nonce-Batch: 01 4", SK_ERR_FORMAT, "decimals without "
        "leading zeros");
    BATCH_REFUSED("Nonce-Batch: 4 4", SK_ERR_FORMAT, "i < k");
    BATCH_REFUSED("Nonce-Batch: 1 1025", SK_ERR_FORMAT, "i < k <= 1024");
    BATCH_REFUSED("Nonce-Batch: 1 4", SK_ERR_SIGNATURE, "inclusion proof: "
        "too short");
    BATCH_REFUSED("Nonce-Batch: 1 4 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
        " AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
        " AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", SK_ERR_SIGNATURE,
        "inclusion proof: too long");
    BATCH_REFUSED("Nonce-Batch: 1  4", SK_ERR_FORMAT, "Nonce-Batch: want");
    BATCH_REFUSED("Nonce-Batch: 1 4 AAEC", SK_ERR_FORMAT, "hash 1 is not 43 "
        "base64url characters");
#undef BATCH_REFUSED
    free(d);
    free(items);
    sk_key_free(key);
    sk_key_free(other);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nonce_text),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
