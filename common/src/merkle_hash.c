/*
 * merkle_hash.c -- RFC 6962 hashing: leaves, inner nodes, the empty tree;
 * under merkle.c (trees, proofs) and merkle_tiles.c (the tree on disk),
 * which both hash nodes, and map.c, whose nodes are digests too.
 *
 * Node hashes are most of a proof's cost (a level-0 tile loaded is 255 of
 * them, a map path 24): they call SHA-256 directly, 120 ns a node on the
 * bench machine against 180 ns through EVP, whose provider dispatch, and
 * the cleanse of its context at each final, are a third of the cost of a
 * 65-byte hash.  SHA256_Init and friends are deprecated in OpenSSL 3.0
 * (still there, unchanged, and the provider's own implementation calls
 * them); they cannot fail.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <string.h>

#include <openssl/sha.h>

#include "merkle_int.h"


int
sk_merkle_leaf_hash(sk_merkle_hash_t out, const void *data, size_t len,
    sk_err_t *err)
{
    static const unsigned char  zero = 0x00;
    SHA256_CTX                  c;

    (void) err;
    SHA256_Init(&c);
    SHA256_Update(&c, &zero, 1);
    SHA256_Update(&c, data, len);
    SHA256_Final(out, &c);
    return 0;
}


void
sk_merkle_digest(sk_merkle_hash_t out, const void *buf, size_t len)
{
    SHA256_CTX  c;

    SHA256_Init(&c);
    SHA256_Update(&c, buf, len);
    SHA256_Final(out, &c);
}


void
sk_merkle_node_hash(sk_merkle_hash_t out, const sk_merkle_hash_t left,
    const sk_merkle_hash_t right)
{
    unsigned char  buf[1 + 2 * SK_MERKLE_HASH_BYTES];

    buf[0] = 0x01;
    memcpy(buf + 1, left, SK_MERKLE_HASH_BYTES);
    memcpy(buf + 1 + SK_MERKLE_HASH_BYTES, right, SK_MERKLE_HASH_BYTES);
    sk_merkle_digest(out, buf, sizeof(buf));
}


void
sk_merkle_empty_root(sk_merkle_hash_t out)
{
    sk_merkle_digest(out, "", 0);
}
