/*
 * merkle_hash.c -- RFC 6962 hashing: leaves, inner nodes, the empty tree,
 * with SHA-256 fetched once; under merkle.c (trees, proofs) and
 * merkle_tiles.c (the tree on disk), which both hash nodes.
 */
#include <pthread.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "merkle_int.h"


static EVP_MD          *sk_merkle_md;
static pthread_once_t   sk_merkle_md_once = PTHREAD_ONCE_INIT;


static void
sk_merkle_md_fetch(void)
{
    sk_merkle_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}


/* SHA-256 fetched once: EVP_sha256() and SHA256() look the algorithm up
 * by name on every call in OpenSSL 3 (a provider lock, a reference taken
 * and dropped), which was most of the cost of an inclusion proof from
 * tiles (up to 255 node hashes a tile level). */
static const EVP_MD *
sk_merkle_sha256(void)
{
    pthread_once(&sk_merkle_md_once, sk_merkle_md_fetch);
    return sk_merkle_md != NULL ? sk_merkle_md : EVP_sha256();
}


int
sk_merkle_leaf_hash(sk_merkle_hash_t out, const void *data, size_t len,
    sk_err_t *err)
{
    static const unsigned char  zero = 0x00;
    EVP_MD_CTX                 *ctx;
    int                         ok;

    ctx = EVP_MD_CTX_new();
    ok = ctx != NULL
         && EVP_DigestInit_ex(ctx, sk_merkle_sha256(), NULL) == 1
         && EVP_DigestUpdate(ctx, &zero, 1) == 1
         && EVP_DigestUpdate(ctx, data, len) == 1
         && EVP_DigestFinal_ex(ctx, out, NULL) == 1;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : sk_err_crypto(err, "merkle leaf hash");
}


void
sk_merkle_digest(sk_merkle_hash_t out, const void *buf, size_t len)
{
    /* Fails only without memory for its context: then SHA256(), whose
     * context is on the stack. */
    if (EVP_Digest(buf, len, out, NULL, sk_merkle_sha256(), NULL) != 1) {
        SHA256(buf, len, out);
    }
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
    SHA256((const unsigned char *) "", 0, out);
}
