/*
 * nonce.c -- the trailer that binds a mirror's answer to a client's nonce
 * (sk/nonce.h; docs/protocol.md, "Nonces"): made by sk-mirror for a batch
 * of queries, checked by the client.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include <sk/b64.h>
#include <sk/nonce.h>

#define SK_NONCE_SIG_B64  86            /* 64 bytes */


int
sk_nonce_new(char out[SK_NONCE_TEXT + 1], sk_err_t *err)
{
    unsigned char  raw[SK_NONCE_BYTES];

    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        return sk_err_crypto(err, "nonce: no random bytes");
    }
    sk_b64_encode(out, raw, sizeof(raw));
    return 0;
}


/* n bytes from the base64url text s of exactly sk_b64_encoded_len(n)
 * characters (canonical: sk_b64_decode). */
static int
sk_nonce_b64(unsigned char *out, size_t n, const char *s, size_t len,
    const char *what, sk_err_t *err)
{
    unsigned char  *raw;
    size_t          rlen;

    if (len != sk_b64_encoded_len(n)) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: %zu characters, not %zu",
            what, len, sk_b64_encoded_len(n));
    }
    if (sk_b64_decode(&raw, &rlen, s, len, err) != 0) {
        return sk_err_prefix(err, "%s", what);
    }
    if (rlen != n) {            /* cannot happen with the length checked */
        free(raw);
        return sk_err_set(err, SK_ERR_FORMAT, "%s: %zu bytes", what, rlen);
    }
    memcpy(out, raw, n);
    free(raw);
    return 0;
}


int
sk_nonce_parse(unsigned char out[SK_NONCE_BYTES], const char *s, size_t len,
    sk_err_t *err)
{
    return sk_nonce_b64(out, SK_NONCE_BYTES, s, len, "nonce", err);
}


void
sk_nonce_leaf(sk_merkle_hash_t out, const unsigned char nonce[SK_NONCE_BYTES],
    const char *answer, size_t len)
{
    unsigned char  data[1 + SK_NONCE_BYTES + SK_MERKLE_HASH_BYTES];

    /* RFC 6962's leaf hash, 0x00 first, of nonce || SHA-256(answer). */
    data[0] = 0x00;
    memcpy(data + 1, nonce, SK_NONCE_BYTES);
    sk_merkle_digest(data + 1 + SK_NONCE_BYTES, answer, len);
    sk_merkle_digest(out, data, sizeof(data));
}


/* What the signature covers: the context, then the root. */
static void
sk_nonce_message(unsigned char out[sizeof(SK_NONCE_CONTEXT) - 1
    + SK_MERKLE_HASH_BYTES], const sk_merkle_hash_t root)
{
    memcpy(out, SK_NONCE_CONTEXT, sizeof(SK_NONCE_CONTEXT) - 1);
    memcpy(out + sizeof(SK_NONCE_CONTEXT) - 1, root, SK_MERKLE_HASH_BYTES);
}


/* Item i's trailer, its proof and the batch's signature (sig) given. */
static void
sk_nonce_format(sk_nonce_item_t *it, size_t i, size_t k,
    const sk_merkle_proof_t *proof, const char *sig)
{
    char    *p = it->trailer;
    size_t   j;

    memcpy(p, "Nonce: ", 7);
    sk_b64_encode(p + 7, it->nonce, SK_NONCE_BYTES);
    p += 7 + SK_NONCE_TEXT;
    p += sprintf(p, "\nNonce-Batch: %zu %zu", i, k);
    for (j = 0; j < proof->len; j++) {
        *p++ = ' ';
        sk_b64_encode(p, proof->hash[j], SK_MERKLE_HASH_BYTES);
        p += SK_NONCE_TEXT;
    }
    p += sprintf(p, "\nNonce-Signature: %s\n", sig);
    it->len = (size_t) (p - it->trailer);
}


int
sk_nonce_sign(sk_nonce_item_t *const *items, size_t k, const sk_key_t *key,
    sk_err_t *err)
{
    unsigned char      msg[sizeof(SK_NONCE_CONTEXT) - 1
                           + SK_MERKLE_HASH_BYTES], *sig = NULL;
    char               sigtext[SK_NONCE_SIG_B64 + 1];
    sk_merkle_tree_t  *tree = NULL;
    sk_merkle_proof_t  proof;
    sk_merkle_hash_t   root;
    size_t             i, siglen;
    int                rc = -1;

    if (k == 0 || k > SK_NONCE_BATCH_MAX) {
        return sk_err_set(err, SK_ERR_USAGE, "nonce: a batch of %zu", k);
    }
    if (sk_merkle_tree_new(&tree, err) != 0) {
        return -1;
    }
    for (i = 0; i < k; i++) {
        if (sk_merkle_tree_append(tree, items[i]->leaf, err) != 0) {
            goto done;
        }
    }
    if (sk_merkle_tree_root(root, tree, k, err) != 0) {
        goto done;
    }
    sk_nonce_message(msg, root);
    if (sk_key_sign(&sig, &siglen, key, msg, sizeof(msg), err) != 0) {
        goto done;
    }
    if (siglen != 64) {
        sk_err_set(err, SK_ERR_USAGE, "nonce: the mirror's key is not "
            "Ed25519");
        goto done;
    }
    sk_b64_encode(sigtext, sig, siglen);
    for (i = 0; i < k; i++) {
        if (sk_merkle_tree_inclusion(&proof, tree, i, k, err) != 0) {
            goto done;
        }
        sk_nonce_format(items[i], i, k, &proof, sigtext);
    }
    rc = 0;

done:
    free(sig);
    sk_merkle_tree_free(tree);
    return rc;
}


/* The line before end (end just past its '\n'): [*start, end). */
static int
sk_nonce_line(const char **start, const char *doc, const char *end)
{
    const char  *p = end - 1;

    if (p < doc || *p != '\n') {
        return -1;
    }
    while (p > doc && p[-1] != '\n') {
        p--;
    }
    *start = p;
    return 0;
}


/* A decimal without sign or leading zero, at most max, at *s (moved
 * past it, to the byte that ends it, which must be there). */
static int
sk_nonce_num(size_t *out, const char **s, const char *end, size_t max)
{
    const char  *p = *s;
    size_t       v = 0;

    if (p == end || *p < '0' || *p > '9') {
        return -1;
    }
    if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9') {
        return -1;
    }
    while (p < end && *p >= '0' && *p <= '9') {
        v = v * 10 + (size_t) (*p++ - '0');
        if (v > max) {
            return -1;
        }
    }
    if (p == end) {
        return -1;
    }
    *out = v;
    *s = p;
    return 0;
}


/* "Nonce-Batch: <i> <k>[ <hash>...]\n", exactly [p, end). */
static int
sk_nonce_batch(size_t *i, size_t *k, sk_merkle_proof_t *proof,
    const char *p, const char *end, sk_err_t *err)
{
    if ((size_t) (end - p) < 13 || memcmp(p, "Nonce-Batch: ", 13) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "nonce: want a "
            "\"Nonce-Batch: \" line before the last");
    }
    p += 13;
    if (sk_nonce_num(i, &p, end, SK_NONCE_BATCH_MAX) != 0 || *p++ != ' '
        || sk_nonce_num(k, &p, end, SK_NONCE_BATCH_MAX) != 0
        || *k == 0 || *i >= *k)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "nonce: Nonce-Batch: want "
            "\"<i> <k>\", i < k <= %d, decimals without leading zeros",
            SK_NONCE_BATCH_MAX);
    }
    proof->len = 0;
    while (*p == ' ') {
        if (proof->len == SK_NONCE_PROOF_MAX
            || (size_t) (end - p) < 1 + SK_NONCE_TEXT + 1
            || sk_nonce_b64(proof->hash[proof->len], SK_MERKLE_HASH_BYTES,
                   p + 1, SK_NONCE_TEXT, "nonce: Nonce-Batch: hash", err)
               != 0)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "nonce: Nonce-Batch: "
                "hash %zu is not 43 base64url characters, or one of more "
                "than %d", proof->len + 1, SK_NONCE_PROOF_MAX);
        }
        proof->len++;
        p += 1 + SK_NONCE_TEXT;
    }
    if (*p != '\n' || p + 1 != end) {
        return sk_err_set(err, SK_ERR_FORMAT, "nonce: Nonce-Batch: bytes "
            "after its last hash");
    }
    return 0;
}


int
sk_nonce_verify(size_t *answer_len, const char *doc, size_t len,
    const char *nonce, const sk_key_t *key, sk_err_t *err)
{
    unsigned char      raw[SK_NONCE_BYTES], sig[64];
    unsigned char      msg[sizeof(SK_NONCE_CONTEXT) - 1
                           + SK_MERKLE_HASH_BYTES];
    const char        *end = doc + len, *ls, *lb, *ln;
    sk_merkle_proof_t  proof;
    sk_merkle_hash_t   leaf, root;
    size_t             i, k;

    *answer_len = 0;
    if (sk_nonce_parse(raw, nonce, strlen(nonce), err) != 0) {
        return sk_err_prefix(err, "the nonce asked with");
    }
    if (sk_nonce_line(&ls, doc, end) != 0
        || sk_nonce_line(&lb, doc, ls) != 0
        || sk_nonce_line(&ln, doc, lb) != 0
        || ln == doc)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "nonce: the answer does not "
            "end in a nonce trailer (Nonce, Nonce-Batch, Nonce-Signature "
            "lines)");
    }
    if ((size_t) (lb - ln) != 7 + SK_NONCE_TEXT + 1
        || memcmp(ln, "Nonce: ", 7) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "nonce: want a \"Nonce: \" "
            "line of 43 base64url characters, third from last");
    }
    if (memcmp(ln + 7, nonce, SK_NONCE_TEXT) != 0) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "nonce: the answer is for "
            "nonce %.*s, not %s (an answer replayed)", SK_NONCE_TEXT,
            ln + 7, nonce);
    }
    if ((size_t) (end - ls) != 17 + SK_NONCE_SIG_B64 + 1
        || memcmp(ls, "Nonce-Signature: ", 17) != 0
        || sk_nonce_b64(sig, sizeof(sig), ls + 17, SK_NONCE_SIG_B64,
               "nonce: Nonce-Signature", err) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "nonce: the last line is not "
            "\"Nonce-Signature: \" and 86 base64url characters");
    }
    if (sk_nonce_batch(&i, &k, &proof, lb, ls, err) != 0) {
        return -1;
    }
    sk_nonce_leaf(leaf, raw, doc, (size_t) (ln - doc));
    if (sk_merkle_inclusion_root(root, leaf, i, k, &proof, err) != 0) {
        return sk_err_prefix(err, "nonce: Nonce-Batch");
    }
    if (key != NULL) {
        sk_nonce_message(msg, root);
        if (sk_key_verify(key, sig, sizeof(sig), msg, sizeof(msg), err)
            != 0)
        {
            return sk_err_set(err, SK_ERR_SIGNATURE, "nonce: the mirror's "
                "Nonce-Signature does not verify for this answer and "
                "nonce");
        }
    }
    *answer_len = (size_t) (ln - doc);
    return 0;
}
