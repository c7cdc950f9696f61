/*
 * merkle.c -- RFC 6962 trees, proofs, and C2SP checkpoints; the hashes are
 * merkle_hash.c's, a tree kept on disk is merkle_tiles.c's.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "merkle_int.h"

#define SK_CHECKPOINT_SIGS_MAX  64
#define SK_EMDASH               "\xe2\x80\x94"



int
sk_merkle_tree_new(sk_merkle_tree_t **t, sk_err_t *err)
{
    *t = calloc(1, sizeof(**t));
    return *t != NULL ? 0 : sk_err_set(err, SK_ERR_NOMEM, "merkle tree");
}


void
sk_merkle_tree_free(sk_merkle_tree_t *t)
{
    int  k;

    if (t == NULL) {
        return;
    }
    for (k = 0; k < SK_MERKLE_LEVELS; k++) {
        free(t->level[k].hash);
    }
    sk_merkle_tiles_free(t->tiles);
    free(t);
}


uint64_t
sk_merkle_tree_size(const sk_merkle_tree_t *t)
{
    return t->size;
}


static int
sk_merkle_level_push(sk_merkle_level_t *l, const sk_merkle_hash_t h,
    sk_err_t *err)
{
    sk_merkle_hash_t  *p;
    uint64_t           cap;

    if (l->n == l->cap) {
        cap = l->cap != 0 ? l->cap * 2 : 64;
        p = realloc(l->hash, cap * sizeof(*p));
        if (p == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "merkle tree level");
        }
        l->hash = p;
        l->cap = cap;
    }
    memcpy(l->hash[l->n++], h, SK_MERKLE_HASH_BYTES);
    return 0;
}


int
sk_merkle_tree_append(sk_merkle_tree_t *t, const sk_merkle_hash_t leaf,
    sk_err_t *err)
{
    sk_merkle_hash_t   node;
    sk_merkle_level_t *l;
    int                k;

    if (t->tiles != NULL) {
        if (sk_merkle_tiles_append(t, leaf, err) != 0) {
            return -1;
        }
        t->size++;
        return 0;
    }
    if (sk_merkle_level_push(&t->level[0], leaf, err) != 0) {
        return -1;
    }
    /* Each completed pair makes one subtree a level up. */
    for (k = 0; k + 1 < SK_MERKLE_LEVELS && t->level[k].n % 2 == 0; k++) {
        l = &t->level[k];
        sk_merkle_node_hash(node, l->hash[l->n - 2], l->hash[l->n - 1]);
        if (sk_merkle_level_push(&t->level[k + 1], node, err) != 0) {
            /* Roll back so the tree stays consistent with its size. */
            while (k >= 0) {
                t->level[k--].n--;
            }
            return -1;
        }
    }
    t->size++;
    return 0;
}


const unsigned char *
sk_merkle_tree_leaf(const sk_merkle_tree_t *t, uint64_t index)
{
    return index < t->size && t->tiles == NULL ? t->level[0].hash[index]
        : NULL;
}


/* The complete subtree idx at level lg, from RAM or from the tiles. */
static int
sk_merkle_node(sk_merkle_hash_t out, const sk_merkle_tree_t *t, unsigned lg,
    uint64_t idx, sk_err_t *err)
{
    if (t->tiles != NULL) {
        return sk_merkle_tiles_node(out, t, lg, idx, err);
    }
    memcpy(out, t->level[lg].hash[idx], SK_MERKLE_HASH_BYTES);
    return 0;
}


int
sk_merkle_tree_leaf_get(sk_merkle_hash_t out, const sk_merkle_tree_t *t,
    uint64_t index, sk_err_t *err)
{
    if (index >= t->size) {
        return sk_err_set(err, SK_ERR_NOT_FOUND,
            "leaf %" PRIu64 " beyond tree size %" PRIu64, index, t->size);
    }
    return sk_merkle_node(out, t, 0, index, err);
}


int
sk_merkle_tree_tile(unsigned char *out, size_t *len,
    const sk_merkle_tree_t *t, unsigned level, uint64_t n, unsigned width,
    uint64_t size, sk_err_t *err)
{
    uint64_t  have;
    unsigned  i;

    if (level >= SK_MERKLE_LEVELS / SK_TILE_HEIGHT || width == 0
        || width > SK_TILE_WIDTH)
    {
        return sk_err_set(err, SK_ERR_USAGE, "tile %u/%" PRIu64 " width %u:"
            " no such tile", level, n, width);
    }
    if (size > t->size) {
        return sk_err_set(err, SK_ERR_NOT_FOUND,
            "tree size %" PRIu64 " beyond %" PRIu64, size, t->size);
    }
    /* Hashes at tree level 8 * level in a tree of size leaves. */
    have = size >> (SK_TILE_HEIGHT * level);
    if (n >= have / SK_TILE_WIDTH + 1
        || n * SK_TILE_WIDTH + width > have)
    {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "tile %u/%" PRIu64
            " width %u: beyond tree size %" PRIu64, level, n, width, size);
    }
    for (i = 0; i < width; i++) {
        if (sk_merkle_node(out + (size_t) i * SK_MERKLE_HASH_BYTES, t,
                SK_TILE_HEIGHT * level, n * SK_TILE_WIDTH + i, err) != 0)
        {
            return -1;
        }
    }
    *len = (size_t) width * SK_MERKLE_HASH_BYTES;
    return 0;
}


/* Largest power of two strictly below n (n >= 2). */
static uint64_t
sk_merkle_split(uint64_t n)
{
    return (uint64_t) 1 << (63 - __builtin_clzll(n - 1));
}


/* MTH(D[a:b]) for a < b <= size. */
static int
sk_merkle_range(sk_merkle_hash_t out, const sk_merkle_tree_t *t, uint64_t a,
    uint64_t b, sk_err_t *err)
{
    sk_merkle_hash_t  l, r;
    uint64_t          n = b - a, k;
    unsigned          lg;

    if ((n & (n - 1)) == 0 && a % n == 0) {
        lg = (unsigned) __builtin_ctzll(n);
        return sk_merkle_node(out, t, lg, a >> lg, err);
    }
    k = sk_merkle_split(n);
    if (sk_merkle_range(l, t, a, a + k, err) != 0
        || sk_merkle_range(r, t, a + k, b, err) != 0)
    {
        return -1;
    }
    sk_merkle_node_hash(out, l, r);
    return 0;
}


int
sk_merkle_tree_root(sk_merkle_hash_t out, const sk_merkle_tree_t *t,
    uint64_t size, sk_err_t *err)
{
    if (size > t->size) {
        return sk_err_set(err, SK_ERR_NOT_FOUND,
            "tree size %" PRIu64 " beyond %" PRIu64, size, t->size);
    }
    if (size == 0) {
        sk_merkle_empty_root(out);
        return 0;
    }
    return sk_merkle_range(out, t, 0, size, err);
}


static int
sk_merkle_proof_add(sk_merkle_proof_t *p, const sk_merkle_tree_t *t,
    uint64_t a, uint64_t b, sk_err_t *err)
{
    return sk_merkle_range(p->hash[p->len++], t, a, b, err);
}


/* RFC 6962 2.1.1 PATH(m, D[a:b]), appending leaf-to-root. */
static int
sk_merkle_path(sk_merkle_proof_t *p, const sk_merkle_tree_t *t, uint64_t m,
    uint64_t a, uint64_t b, sk_err_t *err)
{
    uint64_t  k;

    if (b - a <= 1) {
        return 0;
    }
    k = sk_merkle_split(b - a);
    if (m < a + k) {
        return sk_merkle_path(p, t, m, a, a + k, err) != 0 ? -1
            : sk_merkle_proof_add(p, t, a + k, b, err);
    }
    return sk_merkle_path(p, t, m, a + k, b, err) != 0 ? -1
        : sk_merkle_proof_add(p, t, a, a + k, err);
}


int
sk_merkle_tree_inclusion(sk_merkle_proof_t *proof, const sk_merkle_tree_t *t,
    uint64_t index, uint64_t size, sk_err_t *err)
{
    proof->len = 0;
    if (size > t->size) {
        return sk_err_set(err, SK_ERR_NOT_FOUND,
            "tree size %" PRIu64 " beyond %" PRIu64, size, t->size);
    }
    if (index >= size) {
        return sk_err_set(err, SK_ERR_NOT_FOUND,
            "leaf %" PRIu64 " not in a tree of size %" PRIu64, index, size);
    }
    return sk_merkle_path(proof, t, index, 0, size, err);
}


/* RFC 6962 2.1.2 SUBPROOF(m, D[a:b], b); m counts leaves from 0. */
static int
sk_merkle_subproof(sk_merkle_proof_t *p, const sk_merkle_tree_t *t,
    uint64_t m, uint64_t a, uint64_t b, int whole, sk_err_t *err)
{
    uint64_t  k;

    if (m == b) {
        return whole ? 0 : sk_merkle_proof_add(p, t, a, b, err);
    }
    k = sk_merkle_split(b - a);
    if (m <= a + k) {
        return sk_merkle_subproof(p, t, m, a, a + k, whole, err) != 0 ? -1
            : sk_merkle_proof_add(p, t, a + k, b, err);
    }
    return sk_merkle_subproof(p, t, m, a + k, b, 0, err) != 0 ? -1
        : sk_merkle_proof_add(p, t, a, a + k, err);
}


int
sk_merkle_tree_consistency(sk_merkle_proof_t *proof,
    const sk_merkle_tree_t *t, uint64_t from, uint64_t to, sk_err_t *err)
{
    proof->len = 0;
    if (to > t->size) {
        return sk_err_set(err, SK_ERR_NOT_FOUND,
            "tree size %" PRIu64 " beyond %" PRIu64, to, t->size);
    }
    if (from == 0 || from > to) {
        return sk_err_set(err, SK_ERR_USAGE,
            "no consistency proof from %" PRIu64 " to %" PRIu64, from, to);
    }
    return from < to ? sk_merkle_subproof(proof, t, from, 0, to, 1, err)
        : 0;
}


/* Shift fn and sn right until fn's low bit is set or fn is 0. */
static void
sk_merkle_shift(uint64_t *fn, uint64_t *sn)
{
    while ((*fn & 1) == 0 && *fn != 0) {
        *fn >>= 1;
        *sn >>= 1;
    }
}


int
sk_merkle_inclusion_root(sk_merkle_hash_t root, const sk_merkle_hash_t leaf,
    uint64_t index, uint64_t size, const sk_merkle_proof_t *proof,
    sk_err_t *err)
{
    sk_merkle_hash_t  r;
    uint64_t          fn, sn;
    size_t            i;

    if (index >= size) {
        return sk_err_set(err, SK_ERR_SIGNATURE,
            "inclusion proof: leaf %" PRIu64 " not in a tree of size %"
            PRIu64, index, size);
    }
    fn = index;
    sn = size - 1;
    memcpy(r, leaf, SK_MERKLE_HASH_BYTES);
    for (i = 0; i < proof->len; i++) {
        if (sn == 0) {
            return sk_err_set(err, SK_ERR_SIGNATURE,
                "inclusion proof: too long (%zu hashes)", proof->len);
        }
        if ((fn & 1) || fn == sn) {
            sk_merkle_node_hash(r, proof->hash[i], r);
            sk_merkle_shift(&fn, &sn);
        } else {
            sk_merkle_node_hash(r, r, proof->hash[i]);
        }
        fn >>= 1;
        sn >>= 1;
    }
    if (sn != 0) {
        return sk_err_set(err, SK_ERR_SIGNATURE,
            "inclusion proof: too short (%zu hashes)", proof->len);
    }
    memcpy(root, r, SK_MERKLE_HASH_BYTES);
    return 0;
}


int
sk_merkle_verify_inclusion(const sk_merkle_hash_t leaf, uint64_t index,
    uint64_t size, const sk_merkle_proof_t *proof,
    const sk_merkle_hash_t root, sk_err_t *err)
{
    sk_merkle_hash_t  r;

    if (sk_merkle_inclusion_root(r, leaf, index, size, proof, err) != 0) {
        return -1;
    }
    if (memcmp(r, root, SK_MERKLE_HASH_BYTES) != 0) {
        return sk_err_set(err, SK_ERR_SIGNATURE,
            "inclusion proof: root mismatch");
    }
    return 0;
}


int
sk_merkle_verify_consistency(uint64_t from, uint64_t to,
    const sk_merkle_hash_t from_root, const sk_merkle_hash_t to_root,
    const sk_merkle_proof_t *proof, sk_err_t *err)
{
    sk_merkle_hash_t     fr, sr, empty;
    const unsigned char *c;
    uint64_t             fn, sn;
    size_t               i, start;

    if (from > to) {
        return sk_err_set(err, SK_ERR_SIGNATURE,
            "consistency proof: size %" PRIu64 " shrinks to %" PRIu64,
            from, to);
    }
    if (from == 0 || from == to) {
        if (proof->len != 0) {
            return sk_err_set(err, SK_ERR_SIGNATURE,
                "consistency proof: must be empty from %" PRIu64
                " to %" PRIu64, from, to);
        }
        sk_merkle_empty_root(empty);
        if (memcmp(from_root, from == 0 ? empty : to_root,
                   SK_MERKLE_HASH_BYTES) != 0)
        {
            return sk_err_set(err, SK_ERR_SIGNATURE,
                "consistency proof: root mismatch");
        }
        return 0;
    }
    if (proof->len == 0) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "consistency proof: empty");
    }

    /* A power-of-two old tree is its own first proof node (implied). */
    start = ((from & (from - 1)) == 0) ? 0 : 1;
    c = start == 0 ? from_root : proof->hash[0];
    memcpy(fr, c, SK_MERKLE_HASH_BYTES);
    memcpy(sr, c, SK_MERKLE_HASH_BYTES);
    fn = from - 1;
    sn = to - 1;
    while (fn & 1) {
        fn >>= 1;
        sn >>= 1;
    }
    for (i = start; i < proof->len; i++) {
        c = proof->hash[i];
        if (sn == 0) {
            return sk_err_set(err, SK_ERR_SIGNATURE,
                "consistency proof: too long (%zu hashes)", proof->len);
        }
        if ((fn & 1) || fn == sn) {
            sk_merkle_node_hash(fr, c, fr);
            sk_merkle_node_hash(sr, c, sr);
            sk_merkle_shift(&fn, &sn);
        } else {
            sk_merkle_node_hash(sr, sr, c);
        }
        fn >>= 1;
        sn >>= 1;
    }
    if (sn != 0) {
        return sk_err_set(err, SK_ERR_SIGNATURE,
            "consistency proof: too short (%zu hashes)", proof->len);
    }
    if (memcmp(fr, from_root, SK_MERKLE_HASH_BYTES) != 0
        || memcmp(sr, to_root, SK_MERKLE_HASH_BYTES) != 0)
    {
        return sk_err_set(err, SK_ERR_SIGNATURE,
            "consistency proof: root mismatch");
    }
    return 0;
}


/* Standard base64 (RFC 4648 section 4) with padding, strict: the encoding
 * must be the one canonical encoding of the bytes. */
static int
sk_b64std_decode(unsigned char *out, size_t *outlen, size_t max,
    const char *in, size_t len, const char *what, sk_err_t *err)
{
    static const char  alpha[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char      tmp[SK_CHECKPOINT_MAX];
    char               back[SK_CHECKPOINT_MAX + 1];
    size_t             i, pad = 0;
    int                n;

    /* Lines are never longer than a whole note. */
    if (len == 0 || len % 4 != 0 || len / 4 * 3 > max + 2
        || len > SK_CHECKPOINT_MAX)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: bad base64 length %zu",
            what, len);
    }
    for (i = 0; i < len; i++) {
        if (in[i] == '=' && i >= len - 2) {
            pad++;
        } else if (in[i] == '\0' || pad != 0 || strchr(alpha, in[i]) == NULL)
        {
            return sk_err_set(err, SK_ERR_FORMAT,
                "%s: bad base64 at position %zu", what, i + 1);
        }
    }
    n = EVP_DecodeBlock(tmp, (const unsigned char *) in, (int) len);
    if (n < 0 || (size_t) n < pad) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: bad base64", what);
    }
    n -= (int) pad;
    if ((size_t) n > max) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: more than %zu bytes",
            what, max);
    }
    EVP_EncodeBlock((unsigned char *) back, tmp, n);
    if (strlen(back) != len || memcmp(back, in, len) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: non-canonical base64",
            what);
    }
    memcpy(out, tmp, (size_t) n);
    *outlen = (size_t) n;
    return 0;
}


void
sk_b64std_hash(char out[SK_B64STD_HASH_LEN + 1], const sk_merkle_hash_t h)
{
    EVP_EncodeBlock((unsigned char *) out, h, SK_MERKLE_HASH_BYTES);
}


int
sk_b64std_decode_hash(sk_merkle_hash_t out, const char *in, size_t len,
    const char *what, sk_err_t *err)
{
    size_t  n;

    if (sk_b64std_decode(out, &n, SK_MERKLE_HASH_BYTES, in, len, what, err)
        != 0)
    {
        return -1;
    }
    if (n != SK_MERKLE_HASH_BYTES) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: %zu bytes, not %d", what,
            n, SK_MERKLE_HASH_BYTES);
    }
    return 0;
}


int
sk_merkle_proof_format(char **out, size_t *len, const sk_merkle_proof_t *proof,
    sk_err_t *err)
{
    char    *p;
    size_t   i;

    *out = malloc(proof->len * (SK_B64STD_HASH_LEN + 1) + 1);
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "merkle proof");
    }
    p = *out;
    *p = '\0';
    for (i = 0; i < proof->len; i++) {
        sk_b64std_hash(p, proof->hash[i]);
        p += SK_B64STD_HASH_LEN;
        *p++ = '\n';
    }
    *p = '\0';
    *len = (size_t) (p - *out);
    return 0;
}


int
sk_merkle_proof_parse(sk_merkle_proof_t *proof, const char *buf, size_t len,
    sk_err_t *err)
{
    const char  *p = buf, *end = buf + len, *nl;
    char         what[32];

    proof->len = 0;
    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));
        snprintf(what, sizeof(what), "proof line %zu", proof->len + 1);
        if (nl == NULL) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: no newline", what);
        }
        if (proof->len == SK_MERKLE_PROOF_MAX) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "proof: more than %d hashes", SK_MERKLE_PROOF_MAX);
        }
        if (sk_b64std_decode_hash(proof->hash[proof->len], p,
                (size_t) (nl - p), what, err) != 0)
        {
            return -1;
        }
        proof->len++;
        p = nl + 1;
    }
    return 0;
}


/* Checkpoints */

/* Printable ASCII; spaces allowed only if `spaces`. */
static int
sk_checkpoint_text_ok(const char *s, size_t len, int spaces)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (s[i] < 0x20 || s[i] > 0x7e || (!spaces && s[i] == ' ')) {
            return 0;
        }
    }
    return 1;
}


/* signed-note key names: non-empty, no whitespace, no '+'. */
static int
sk_checkpoint_keyname_ok(const char *s, size_t len)
{
    return len > 0 && len < SK_CHECKPOINT_ORIGIN_MAX
           && sk_checkpoint_text_ok(s, len, 0) && memchr(s, '+', len) == NULL;
}


int
sk_checkpoint_key_id(unsigned char out[SK_CHECKPOINT_KEYID_BYTES],
    const char *keyname, const sk_key_t *key, sk_err_t *err)
{
    unsigned char  buf[SK_CHECKPOINT_ORIGIN_MAX + 2 + 32], md[32];
    size_t         n = strlen(keyname);

    if (!sk_checkpoint_keyname_ok(keyname, n)) {
        return sk_err_set(err, SK_ERR_USAGE,
            "checkpoint key name \"%s\": empty, too long, or has spaces "
            "or '+'", keyname);
    }
    if (sk_key_alg(key) != SK_KEY_ED25519) {
        return sk_err_set(err, SK_ERR_USAGE,
            "checkpoint key \"%s\": not an ed25519 key", keyname);
    }
    memcpy(buf, keyname, n);
    buf[n] = 0x0a;
    buf[n + 1] = 0x01;      /* signature type: Ed25519 */
    if (sk_key_ed25519_public(buf + n + 2, key, err) != 0) {
        return -1;
    }
    /* Not SHA256(): OpenSSL 3.0 fetches the digest by name on each call,
     * 280 k instructions against 2 k (docs/benchmarks.md, "Fetch"). */
    sk_merkle_digest(md, buf, n + 2 + 32);
    memcpy(out, md, SK_CHECKPOINT_KEYID_BYTES);
    return 0;
}


/* The signed body: origin, size, root, extensions.  malloc()ed. */
static int
sk_checkpoint_body(char **out, size_t *len, const sk_checkpoint_t *cp,
    sk_err_t *err)
{
    char    root[SK_B64STD_HASH_LEN + 1];
    size_t  olen = strnlen(cp->origin, sizeof(cp->origin));
    size_t  elen = strnlen(cp->ext, sizeof(cp->ext)), cap;
    int     n;

    if (olen == 0 || olen == sizeof(cp->origin)
        || !sk_checkpoint_text_ok(cp->origin, olen, 1))
    {
        return sk_err_set(err, SK_ERR_USAGE,
            "checkpoint origin: empty, too long or not printable ascii");
    }
    if (elen == sizeof(cp->ext)
        || (elen > 0 && cp->ext[elen - 1] != '\n')
        || strstr(cp->ext, "\n\n") != NULL || cp->ext[0] == '\n')
    {
        return sk_err_set(err, SK_ERR_USAGE,
            "checkpoint extensions: must be non-empty lines ending in "
            "newlines");
    }
    sk_b64std_hash(root, cp->root);
    cap = olen + elen + 64;
    *out = malloc(cap);
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "checkpoint");
    }
    n = snprintf(*out, cap, "%s\n%" PRIu64 "\n%s\n%s", cp->origin, cp->size,
        root, cp->ext);
    *len = (size_t) n;
    return 0;
}


int
sk_checkpoint_format(char **out, size_t *len, const sk_checkpoint_t *cp,
    const char *keyname, const sk_key_t *key, sk_err_t *err)
{
    unsigned char  blob[SK_CHECKPOINT_KEYID_BYTES + 64], *sig = NULL;
    char           b64[2 * sizeof(blob)], *body = NULL, *note;
    size_t         blen = 0, siglen, cap;
    int            rc = -1;

    if (sk_checkpoint_key_id(blob, keyname, key, err) != 0
        || sk_checkpoint_body(&body, &blen, cp, err) != 0
        || sk_key_sign(&sig, &siglen, key, (unsigned char *) body, blen, err)
           != 0)
    {
        goto done;
    }
    if (siglen != 64) {
        sk_err_set(err, SK_ERR_CRYPTO, "checkpoint: ed25519 signature of "
            "%zu bytes", siglen);
        goto done;
    }
    memcpy(blob + SK_CHECKPOINT_KEYID_BYTES, sig, siglen);
    EVP_EncodeBlock((unsigned char *) b64, blob, sizeof(blob));
    cap = blen + strlen(keyname) + strlen(b64) + 16;
    note = malloc(cap);
    if (note == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "checkpoint");
        goto done;
    }
    *len = (size_t) snprintf(note, cap, "%s\n" SK_EMDASH " %s %s\n", body,
        keyname, b64);
    *out = note;
    rc = 0;
done:
    free(body);
    free(sig);
    return rc;
}


/* One parsed signature line. */
typedef struct {
    const char     *name;
    size_t          namelen;
    unsigned char   blob[SK_CHECKPOINT_MAX];
    size_t          bloblen;
} sk_checkpoint_sig_t;


/* Parse "— name base64" (without its newline). */
static int
sk_checkpoint_sig_parse(sk_checkpoint_sig_t *s, const char *line, size_t len,
    unsigned lineno, sk_err_t *err)
{
    const char  *sp;
    char         what[48];
    size_t       pre = sizeof(SK_EMDASH " ") - 1;

    snprintf(what, sizeof(what), "checkpoint line %u", lineno);
    if (len < pre || memcmp(line, SK_EMDASH " ", pre) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "%s: signature line must start with an em dash and a space",
            what);
    }
    line += pre;
    len -= pre;
    sp = memchr(line, ' ', len);
    if (sp == NULL || !sk_checkpoint_keyname_ok(line, (size_t) (sp - line))) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: bad key name", what);
    }
    s->name = line;
    s->namelen = (size_t) (sp - line);
    if (sk_b64std_decode(s->blob, &s->bloblen, sizeof(s->blob), sp + 1,
            len - s->namelen - 1, what, err) != 0)
    {
        return -1;
    }
    if (s->bloblen < SK_CHECKPOINT_KEYID_BYTES + 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: signature too short",
            what);
    }
    return 0;
}


static int
sk_checkpoint_size_parse(uint64_t *v, const char *s, size_t len,
    sk_err_t *err)
{
    size_t  i;

    *v = 0;
    if (len == 0 || (len > 1 && s[0] == '0')) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "checkpoint line 2: tree size empty or with leading zeros");
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || *v > (UINT64_MAX - 9) / 10) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "checkpoint line 2: tree size not a 64-bit decimal");
        }
        *v = *v * 10 + (uint64_t) (s[i] - '0');
    }
    return 0;
}


/* Parse the note; if keyname is non-NULL, also find and check its
 * signature over the text before the blank line. */
static int
sk_checkpoint_open(sk_checkpoint_t *cp, const char *buf, size_t len,
    const char *keyname, const sk_key_t *key, sk_err_t *err)
{
    sk_checkpoint_sig_t        *s;
    unsigned char               id[SK_CHECKPOINT_KEYID_BYTES];
    const char                 *p = buf, *end = buf + len, *nl;
    size_t                      ll, elen = 0, bodylen = 0;
    unsigned                    lineno = 0, nsigs = 0;
    int                         in_sigs = 0, found = 0, rc = -1;

    memset(cp, 0, sizeof(*cp));
    if (keyname != NULL && sk_checkpoint_key_id(id, keyname, key, err) != 0) {
        return -1;
    }
    if (len > SK_CHECKPOINT_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "checkpoint: larger than %d bytes", SK_CHECKPOINT_MAX);
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "checkpoint");
    }

    while (p < end) {
        lineno++;
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            sk_err_set(err, SK_ERR_FORMAT,
                "checkpoint line %u: no final newline", lineno);
            goto done;
        }
        ll = (size_t) (nl - p);
        if (in_sigs) {
            if (++nsigs > SK_CHECKPOINT_SIGS_MAX) {
                sk_err_set(err, SK_ERR_FORMAT,
                    "checkpoint: more than %d signatures",
                    SK_CHECKPOINT_SIGS_MAX);
                goto done;
            }
            if (sk_checkpoint_sig_parse(s, p, ll, lineno, err) != 0) {
                goto done;
            }
            if (keyname != NULL && !found
                && s->namelen == strlen(keyname)
                && memcmp(s->name, keyname, s->namelen) == 0
                && memcmp(s->blob, id, sizeof(id)) == 0)
            {
                if (sk_key_verify(key, s->blob + sizeof(id),
                        s->bloblen - sizeof(id), (const unsigned char *) buf,
                        bodylen, err) != 0)
                {
                    sk_err_prefix(err, "checkpoint signature by \"%s\"",
                        keyname);
                    goto done;
                }
                found = 1;
            }
        } else if (ll == 0) {
            if (lineno < 4) {
                sk_err_set(err, SK_ERR_FORMAT,
                    "checkpoint line %u: blank before the root hash",
                    lineno);
                goto done;
            }
            in_sigs = 1;
            bodylen = (size_t) (p - buf);
        } else if (!sk_checkpoint_text_ok(p, ll, lineno != 3)) {
            sk_err_set(err, SK_ERR_FORMAT,
                "checkpoint line %u: not printable ascii", lineno);
            goto done;
        } else if (lineno == 1) {
            if (ll >= sizeof(cp->origin)) {
                sk_err_set(err, SK_ERR_FORMAT,
                    "checkpoint line 1: origin too long");
                goto done;
            }
            memcpy(cp->origin, p, ll);
        } else if (lineno == 2) {
            if (sk_checkpoint_size_parse(&cp->size, p, ll, err) != 0) {
                goto done;
            }
        } else if (lineno == 3) {
            if (sk_b64std_decode_hash(cp->root, p, ll, "checkpoint line 3",
                    err) != 0)
            {
                goto done;
            }
        } else {
            if (elen + ll + 1 >= sizeof(cp->ext)) {
                sk_err_set(err, SK_ERR_FORMAT,
                    "checkpoint line %u: extensions too long", lineno);
                goto done;
            }
            memcpy(cp->ext + elen, p, ll + 1);
            elen += ll + 1;
        }
        p = nl + 1;
    }
    if (nsigs == 0) {
        sk_err_set(err, SK_ERR_FORMAT, "checkpoint: no signature lines");
        goto done;
    }
    if (keyname != NULL && !found) {
        sk_err_set(err, SK_ERR_SIGNATURE,
            "checkpoint: no signature by key \"%s\"", keyname);
        goto done;
    }
    rc = 0;
done:
    free(s);
    if (rc != 0) {
        memset(cp, 0, sizeof(*cp));
    }
    return rc;
}


int
sk_checkpoint_parse(sk_checkpoint_t *cp, const char *buf, size_t len,
    sk_err_t *err)
{
    return sk_checkpoint_open(cp, buf, len, NULL, NULL, err);
}


int
sk_checkpoint_verify(sk_checkpoint_t *cp, const char *buf, size_t len,
    const char *keyname, const sk_key_t *key, sk_err_t *err)
{
    return sk_checkpoint_open(cp, buf, len, keyname, key, err);
}


int64_t
sk_checkpoint_timestamp(const sk_checkpoint_t *cp)
{
    const char  *p = cp->ext;

    while (p != NULL && *p != '\0') {
        if (strncmp(p, "Timestamp ", 10) == 0) {
            return strtoll(p + 10, NULL, 10);
        }
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return 0;
}


int
sk_merkle_tree_open_tiles(sk_merkle_tree_t **tp, const char *dir,
    uint64_t size, sk_tiles_how_t how, sk_merkle_leaf_fn leaf, void *arg,
    sk_err_t *err)
{
    sk_merkle_tree_t  *t;
    sk_merkle_hash_t   h;
    uint64_t           i;
    int                rc;

    *tp = NULL;
    if (sk_merkle_tree_new(&t, err) != 0) {
        return -1;
    }
    rc = sk_merkle_tiles_open(t, dir, how, leaf, arg, err);
    if (rc == 0 && how == SK_TILES_OPEN) {
        rc = sk_merkle_tiles_edge(t, size, err);
    } else {
        /* Every leaf again, each full tile written or compared. */
        for (i = 0; rc == 0 && i < size; i++) {
            rc = leaf(h, i, arg, err) != 0 ? -1
                : sk_merkle_tree_append(t, h, err);
        }
    }
    if (rc == 0 && how == SK_TILES_REBUILD) {
        rc = sk_merkle_tiles_rebuilt(t, err);
    }
    if (rc != 0) {
        sk_merkle_tree_free(t);
        return -1;
    }
    *tp = t;
    return 0;
}
