/*
 * map.c -- the name map's hashing, its root from sorted keys, and map
 * proofs: their text and their check (docs/protocol.md, "The name map").
 * The store over sk_db is map_store.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/b64.h>
#include <sk/map.h>
#include <sk/name.h>

#include "merkle_int.h"

#define SK_MAP_LEAF      0x10
#define SK_MAP_NODE      0x11
#define SK_MAP_VALUE     0x12
#define SK_MAP_CHAIN     0x13
#define SK_MAP_TAG       "Map-Proof: "
#define SK_MAP_B64_HASH  43         /* base64url of 32 bytes */
/* "Map-Proof: 256 <64 hex> leaf <43> <43>\n" */
#define SK_MAP_LINE_MAX  (sizeof(SK_MAP_TAG) + 4 + SK_MAP_DEPTH_MAX / 4 + 6 \
                          + 2 * (SK_MAP_B64_HASH + 1) + 1)

static const sk_merkle_hash_t  sk_map_zero;


/* Bit i of key: the most significant bit of byte 0 is bit 0. */
static unsigned
sk_map_bit(const unsigned char *key, unsigned i)
{
    return (key[i / 8] >> (7 - i % 8)) & 1;
}


int
sk_map_key(unsigned char key[SK_MAP_KEY_BYTES], const char *name,
    sk_err_t *err)
{
    size_t  len = strlen(name);

    if (sk_name_check(name, len, err) != 0) {
        return sk_err_prefix(err, "map key");
    }
    sk_merkle_digest(key, name, len);
    return 0;
}


void
sk_map_value_init(sk_map_value_t *v)
{
    memset(v, 0, sizeof(*v));
}


void
sk_map_value_add(sk_map_value_t *v, uint64_t sn, const sk_merkle_hash_t leaf)
{
    unsigned char  buf[1 + 2 * SK_MERKLE_HASH_BYTES];

    buf[0] = SK_MAP_CHAIN;
    memcpy(buf + 1, v->chain, SK_MERKLE_HASH_BYTES);
    memcpy(buf + 1 + SK_MERKLE_HASH_BYTES, leaf, SK_MERKLE_HASH_BYTES);
    sk_merkle_digest(v->chain, buf, sizeof(buf));
    v->count++;
    v->newest_sn = sn;
}


/* Big-endian, as sk_db_u64_put (not called: clients that check proofs
 * link no LMDB). */
static void
sk_map_be64(unsigned char out[8], uint64_t v)
{
    int  i;

    for (i = 7; i >= 0; i--) {
        out[i] = (unsigned char) (v & 0xff);
        v >>= 8;
    }
}


void
sk_map_value_hash(sk_merkle_hash_t out, const sk_map_value_t *v)
{
    unsigned char  buf[1 + 8 + 8 + SK_MERKLE_HASH_BYTES];

    buf[0] = SK_MAP_VALUE;
    sk_map_be64(buf + 1, v->count);
    sk_map_be64(buf + 9, v->newest_sn);
    memcpy(buf + 17, v->chain, SK_MERKLE_HASH_BYTES);
    sk_merkle_digest(out, buf, sizeof(buf));
}


/* SHA-256(prefix | a | b), a and b 32 bytes each. */
static void
sk_map_hash2(sk_merkle_hash_t out, unsigned char prefix,
    const unsigned char *a, const unsigned char *b)
{
    unsigned char  buf[1 + 2 * SK_MERKLE_HASH_BYTES];

    buf[0] = prefix;
    memcpy(buf + 1, a, SK_MERKLE_HASH_BYTES);
    memcpy(buf + 1 + SK_MERKLE_HASH_BYTES, b, SK_MERKLE_HASH_BYTES);
    sk_merkle_digest(out, buf, sizeof(buf));
}


void
sk_map_leaf_hash(sk_merkle_hash_t out,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_merkle_hash_t value)
{
    sk_map_hash2(out, SK_MAP_LEAF, key, value);
}


void
sk_map_node_hash(sk_merkle_hash_t out, const sk_merkle_hash_t left,
    const sk_merkle_hash_t right)
{
    sk_map_hash2(out, SK_MAP_NODE, left, right);
}


/* The subtree of keys[0..n) at depth (they share its first depth bits):
 * at most SK_MAP_DEPTH_MAX + 1 calls deep, as distinct keys part by
 * then. */
static void
sk_map_subtree(sk_merkle_hash_t out,
    const unsigned char (*keys)[SK_MAP_KEY_BYTES],
    const sk_merkle_hash_t *values, size_t n, unsigned depth)
{
    sk_merkle_hash_t  left, right;
    size_t            lo = 0, hi = n, mid;

    if (n == 0) {
        memset(out, 0, SK_MERKLE_HASH_BYTES);
        return;
    }
    if (n == 1) {
        sk_map_leaf_hash(out, keys[0], values[0]);
        return;
    }
    /* The first key whose bit depth is 1: sorted keys of one prefix have
     * their 0s before their 1s there. */
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (sk_map_bit(keys[mid], depth)) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    sk_map_subtree(left, keys, values, lo, depth + 1);
    sk_map_subtree(right, keys + lo, values + lo, n - lo, depth + 1);
    sk_map_node_hash(out, left, right);
}


int
sk_map_root_sorted(sk_merkle_hash_t root,
    const unsigned char (*keys)[SK_MAP_KEY_BYTES],
    const sk_merkle_hash_t *values, size_t n, sk_err_t *err)
{
    size_t  i;

    for (i = 1; i < n; i++) {
        if (memcmp(keys[i - 1], keys[i], SK_MAP_KEY_BYTES) >= 0) {
            return sk_err_set(err, SK_ERR_USAGE, "map root: key %zu is not "
                "above key %zu (keys must be sorted, none twice)", i + 1, i);
        }
    }
    sk_map_subtree(root, keys, values, n, 0);
    return 0;
}


/* Proofs */

static unsigned
sk_map_popcount(const unsigned char *bitmap, unsigned depth)
{
    unsigned  i, n = 0;

    for (i = 0; i < depth; i++) {
        n += sk_map_bit(bitmap, i);
    }
    return n;
}


/* The proof's shape is its own: depth, bitmap (unused bits 0) and the
 * number of siblings agree; code: what to fail with. */
static int
sk_map_proof_shape(const sk_map_proof_t *p, sk_err_code_t code,
    sk_err_t *err)
{
    unsigned  i;

    if (p->depth > SK_MAP_DEPTH_MAX) {
        return sk_err_set(err, code, "map proof: depth %u, more "
            "than %d", p->depth, SK_MAP_DEPTH_MAX);
    }
    for (i = p->depth; i < SK_MAP_DEPTH_MAX; i++) {
        if (sk_map_bit(p->bitmap, i)) {
            return sk_err_set(err, code, "map proof: bitmap bit %u "
                "set past depth %u", i, p->depth);
        }
    }
    if (p->nsiblings != sk_map_popcount(p->bitmap, p->depth)) {
        return sk_err_set(err, code, "map proof: %u siblings, the "
            "bitmap has %u bits set", p->nsiblings,
            sk_map_popcount(p->bitmap, p->depth));
    }
    if (p->end != SK_MAP_END_EMPTY && p->end != SK_MAP_END_LEAF) {
        return sk_err_set(err, code, "map proof: end %d",
            (int) p->end);
    }
    return 0;
}


int
sk_map_proof_format(char **out, size_t *len, const sk_map_proof_t *p,
    sk_err_t *err)
{
    char      *s;
    unsigned   i;
    int        n;

    if (sk_map_proof_shape(p, SK_ERR_USAGE, err) != 0) {
        return -1;
    }
    s = malloc(SK_MAP_LINE_MAX + (size_t) p->nsiblings
               * (SK_B64STD_HASH_LEN + 1) + 1);
    if (s == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "map proof");
    }
    n = sprintf(s, SK_MAP_TAG "%u ", p->depth);
    for (i = 0; i < (p->depth + 7) / 8; i++) {
        n += sprintf(s + n, "%02x", p->bitmap[i]);
    }
    if (p->depth == 0) {
        s[n++] = '-';
    }
    if (p->end == SK_MAP_END_EMPTY) {
        n += sprintf(s + n, " empty\n");
    } else {
        n += sprintf(s + n, " leaf ");
        sk_b64_encode(s + n, p->leaf_key, SK_MAP_KEY_BYTES);
        n += SK_MAP_B64_HASH;
        s[n++] = ' ';
        sk_b64_encode(s + n, p->leaf_value, SK_MERKLE_HASH_BYTES);
        n += SK_MAP_B64_HASH;
        s[n++] = '\n';
    }
    for (i = 0; i < p->nsiblings; i++) {
        sk_b64std_hash(s + n, p->siblings[i]);
        n += SK_B64STD_HASH_LEN;
        s[n++] = '\n';
    }
    s[n] = '\0';
    *out = s;
    *len = (size_t) n;
    return 0;
}


/* The next space-separated word of [*p, end): *w, *wlen; *p past it and
 * one space. */
static void
sk_map_word(const char **p, const char *end, const char **w, size_t *wlen)
{
    const char  *sp = memchr(*p, ' ', (size_t) (end - *p));

    *w = *p;
    *wlen = (size_t) ((sp != NULL ? sp : end) - *p);
    *p = sp != NULL ? sp + 1 : end;
}


static int
sk_map_parse_depth(sk_map_proof_t *p, const char *w, size_t n,
    sk_err_t *err)
{
    size_t  i;

    if (n == 0 || n > 3 || (n > 1 && w[0] == '0')) {
        return sk_err_set(err, SK_ERR_FORMAT, "map proof: depth: not a "
            "number from 0 to %d", SK_MAP_DEPTH_MAX);
    }
    p->depth = 0;
    for (i = 0; i < n; i++) {
        if (w[i] < '0' || w[i] > '9') {
            return sk_err_set(err, SK_ERR_FORMAT, "map proof: depth: "
                "character %zu is not a digit", i + 1);
        }
        p->depth = p->depth * 10 + (unsigned) (w[i] - '0');
    }
    if (p->depth > SK_MAP_DEPTH_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "map proof: depth %u, more "
            "than %d", p->depth, SK_MAP_DEPTH_MAX);
    }
    return 0;
}


static int
sk_map_hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}


static int
sk_map_parse_bitmap(sk_map_proof_t *p, const char *w, size_t n,
    sk_err_t *err)
{
    size_t  i, want = (p->depth + 7) / 8 * 2;
    int     hi, lo;

    memset(p->bitmap, 0, sizeof(p->bitmap));
    if (p->depth == 0) {
        if (n != 1 || w[0] != '-') {
            return sk_err_set(err, SK_ERR_FORMAT, "map proof: bitmap: not "
                "\"-\" at depth 0");
        }
        p->nsiblings = 0;
        return 0;
    }
    if (n != want) {
        return sk_err_set(err, SK_ERR_FORMAT, "map proof: bitmap: %zu "
            "characters, not %zu for depth %u", n, want, p->depth);
    }
    for (i = 0; i < n; i += 2) {
        hi = sk_map_hexval(w[i]);
        lo = sk_map_hexval(w[i + 1]);
        if (hi < 0 || lo < 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "map proof: bitmap: "
                "character %zu is not lowercase hex", i + 1 + (hi >= 0));
        }
        p->bitmap[i / 2] = (unsigned char) (hi << 4 | lo);
    }
    for (i = p->depth; i < want * 4; i++) {
        if (sk_map_bit(p->bitmap, (unsigned) i)) {
            return sk_err_set(err, SK_ERR_FORMAT, "map proof: bitmap: bit "
                "%zu is set, past depth %u", i, p->depth);
        }
    }
    p->nsiblings = sk_map_popcount(p->bitmap, p->depth);
    return 0;
}


/* A base64url 32-byte value of the leaf: what names it. */
static int
sk_map_parse_b64(unsigned char out[SK_MERKLE_HASH_BYTES], const char *w,
    size_t n, const char *what, sk_err_t *err)
{
    unsigned char  *bytes;
    size_t          len;

    if (sk_b64_decode(&bytes, &len, w, n, err) != 0) {
        return sk_err_prefix(err, "map proof: %s", what);
    }
    if (len != SK_MERKLE_HASH_BYTES) {
        free(bytes);
        return sk_err_set(err, SK_ERR_FORMAT, "map proof: %s: %zu bytes, "
            "not %d", what, len, SK_MERKLE_HASH_BYTES);
    }
    memcpy(out, bytes, len);
    free(bytes);
    return 0;
}


/* "<depth> <bitmap> empty" or "<depth> <bitmap> leaf <key> <value>". */
static int
sk_map_parse_head(sk_map_proof_t *p, const char *s, const char *end,
    sk_err_t *err)
{
    const char  *w;
    size_t       n;

    sk_map_word(&s, end, &w, &n);
    if (sk_map_parse_depth(p, w, n, err) != 0) {
        return -1;
    }
    sk_map_word(&s, end, &w, &n);
    if (sk_map_parse_bitmap(p, w, n, err) != 0) {
        return -1;
    }
    sk_map_word(&s, end, &w, &n);
    if (n == 5 && memcmp(w, "empty", 5) == 0) {
        p->end = SK_MAP_END_EMPTY;
    } else if (n == 4 && memcmp(w, "leaf", 4) == 0) {
        p->end = SK_MAP_END_LEAF;
        sk_map_word(&s, end, &w, &n);
        if (sk_map_parse_b64(p->leaf_key, w, n, "leaf key", err) != 0) {
            return -1;
        }
        sk_map_word(&s, end, &w, &n);
        if (sk_map_parse_b64(p->leaf_value, w, n, "leaf value", err) != 0) {
            return -1;
        }
    } else {
        return sk_err_set(err, SK_ERR_FORMAT, "map proof: end: not "
            "\"empty\" or \"leaf\"");
    }
    if (s != end || end[-1] == ' ') {
        return sk_err_set(err, SK_ERR_FORMAT, "map proof: more after the "
            "%s", p->end == SK_MAP_END_EMPTY ? "end" : "leaf value");
    }
    return 0;
}


int
sk_map_proof_parse(sk_map_proof_t *p, size_t *used, const char *buf,
    size_t len, sk_err_t *err)
{
    const char  *s = buf, *end = buf + len, *nl;
    char         what[40];
    unsigned     i;

    memset(p, 0, sizeof(*p));
    nl = memchr(s, '\n', len);
    if (len < sizeof(SK_MAP_TAG) - 1
        || memcmp(s, SK_MAP_TAG, sizeof(SK_MAP_TAG) - 1) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "map proof: no \""
            SK_MAP_TAG "\" line");
    }
    if (nl == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "map proof: no newline");
    }
    if (sk_map_parse_head(p, s + sizeof(SK_MAP_TAG) - 1, nl, err) != 0) {
        return -1;
    }
    s = nl + 1;
    for (i = 0; i < p->nsiblings; i++) {
        snprintf(what, sizeof(what), "map proof: hash line %u", i + 1);
        nl = s < end ? memchr(s, '\n', (size_t) (end - s)) : NULL;
        if (nl == NULL) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s of %u: %s", what,
                p->nsiblings, s < end ? "no newline" : "missing");
        }
        if (sk_b64std_decode_hash(p->siblings[i], s, (size_t) (nl - s),
                what, err) != 0)
        {
            return -1;
        }
        s = nl + 1;
    }
    *used = (size_t) (s - buf);
    return 0;
}


int
sk_map_proof_verify(const sk_map_proof_t *p,
    const unsigned char key[SK_MAP_KEY_BYTES], const sk_merkle_hash_t root,
    int *present, sk_merkle_hash_t value, sk_err_t *err)
{
    sk_merkle_hash_t  h;
    const unsigned char *sib;
    unsigned          i, next;

    if (sk_map_proof_shape(p, SK_ERR_SIGNATURE, err) != 0) {
        return -1;
    }
    if (p->depth > 0 && !sk_map_bit(p->bitmap, p->depth - 1)) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "map proof: the sibling at "
            "depth %u is empty: a one-key node that should have been "
            "compressed", p->depth);
    }
    if (p->end == SK_MAP_END_LEAF) {
        for (i = 0; i < p->depth; i++) {
            if (sk_map_bit(p->leaf_key, i) != sk_map_bit(key, i)) {
                return sk_err_set(err, SK_ERR_SIGNATURE, "map proof: the "
                    "leaf key leaves the key's path at bit %u", i);
            }
        }
        sk_map_leaf_hash(h, p->leaf_key, p->leaf_value);
    } else {
        memset(h, 0, sizeof(h));
    }
    for (i = 0; i < p->nsiblings; i++) {
        if (memcmp(p->siblings[i], sk_map_zero, SK_MERKLE_HASH_BYTES) == 0) {
            return sk_err_set(err, SK_ERR_SIGNATURE, "map proof: hash %u is "
                "of an empty subtree (its bitmap bit must be 0)", i + 1);
        }
    }
    next = p->nsiblings;
    for (i = p->depth; i-- > 0; ) {
        sib = sk_map_bit(p->bitmap, i) ? p->siblings[--next] : sk_map_zero;
        if (sk_map_bit(key, i)) {
            sk_map_node_hash(h, sib, h);
        } else {
            sk_map_node_hash(h, h, sib);
        }
    }
    if (memcmp(h, root, SK_MERKLE_HASH_BYTES) != 0) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "map proof: does not lead "
            "to the map root");
    }
    *present = p->end == SK_MAP_END_LEAF
               && memcmp(p->leaf_key, key, SK_MAP_KEY_BYTES) == 0;
    if (*present) {
        memcpy(value, p->leaf_value, SK_MERKLE_HASH_BYTES);
    }
    return 0;
}
