/*
 * chain.c -- a Bind's CA-Cert-Chain against the roots of claim time.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_dispatch.h>
#include <openssl/err.h>
#include <openssl/provider.h>
#include <openssl/x509v3.h>

#include "sk/b64.h"
#include "sk/chain.h"
#include "sk/merkle.h"


/*
 * OpenSSL 3.0 decodes a certificate's public key while it decodes the
 * certificate, through the decoder framework, which for each key lists and
 * matches by name every key manager and every decoder of every provider:
 * ~0.1 ms a certificate, the largest part of an append.  An end-entity
 * certificate's key must be the SK (Ed25519, P-256 or RSA), so it is
 * decoded in a library context of its own whose one provider ("sk-lean")
 * is the default provider with only those three key managers and their
 * SubjectPublicKeyInfo decoders listed (every other operation passed
 * through): about a third of the time.  A key of another type is left
 * undecoded and the chain check refuses the certificate.
 */
#define SK_CHAIN_LEAN_MAX  8

static const char *const  sk_chain_lean_types[] = { "ED25519", "EC", "RSA",
    NULL };

static struct {
    pthread_once_t       once;
    OSSL_PROVIDER       *deflt;          /* in a library context of its own */
    OSSL_LIB_CTX        *ctx;            /* NULL: no lean context, use 0's */
    OSSL_ALGORITHM       keymgmt[SK_CHAIN_LEAN_MAX + 1];
    OSSL_ALGORITHM       decoder[SK_CHAIN_LEAN_MAX + 1];
} sk_chain_lean = { PTHREAD_ONCE_INIT, NULL, NULL, { { 0 } }, { { 0 } } };


/* "ED25519:1.3.101.112" is ED25519's; "EC:id-ecPublicKey:..." is EC's. */
static int
sk_chain_lean_type(const char *names)
{
    size_t  i, n;

    for (i = 0; sk_chain_lean_types[i] != NULL; i++) {
        n = strlen(sk_chain_lean_types[i]);
        if (strncmp(names, sk_chain_lean_types[i], n) == 0
            && (names[n] == ':' || names[n] == '\0'))
        {
            return 1;
        }
    }
    return 0;
}


/* The default provider's algorithms of operation op for the lean types
 * (decoders: DER SubjectPublicKeyInfo only) into out; 0 if none. */
static int
sk_chain_lean_pick(int op, OSSL_ALGORITHM *out)
{
    const OSSL_ALGORITHM  *a;
    const char            *prop;
    size_t                 n = 0;
    int                    no_cache;

    a = OSSL_PROVIDER_query_operation(sk_chain_lean.deflt, op, &no_cache);
    for (; a != NULL && a->algorithm_names != NULL; a++) {
        prop = a->property_definition != NULL ? a->property_definition : "";
        if (!sk_chain_lean_type(a->algorithm_names)
            || (op == OSSL_OP_DECODER
                && (strstr(prop, "input=der") == NULL
                    || strstr(prop, "structure=SubjectPublicKeyInfo")
                       == NULL)))
        {
            continue;
        }
        if (n == SK_CHAIN_LEAN_MAX) {
            return 0;
        }
        out[n++] = *a;
    }
    return n > 0;
}


static const OSSL_ALGORITHM *
sk_chain_lean_query(void *provctx, int op, int *no_cache)
{
    (void) provctx;
    switch (op) {
    case OSSL_OP_KEYMGMT:
        *no_cache = 0;
        return sk_chain_lean.keymgmt;
    case OSSL_OP_DECODER:
        *no_cache = 0;
        return sk_chain_lean.decoder;
    default:
        return OSSL_PROVIDER_query_operation(sk_chain_lean.deflt, op,
            no_cache);
    }
}


static const OSSL_DISPATCH  sk_chain_lean_dispatch[] = {
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION,
      (void (*)(void)) sk_chain_lean_query },
    { 0, NULL }
};


/* The algorithms are the default provider's: they get its context. */
static int
sk_chain_lean_provider(const OSSL_CORE_HANDLE *handle,
    const OSSL_DISPATCH *in, const OSSL_DISPATCH **out, void **provctx)
{
    (void) handle;
    (void) in;
    *out = sk_chain_lean_dispatch;
    *provctx = OSSL_PROVIDER_get0_provider_ctx(sk_chain_lean.deflt);
    return 1;
}


/* Made once; on any failure the end-entity certificates are decoded in
 * the default context as before. */
static void
sk_chain_lean_init(void)
{
    OSSL_LIB_CTX  *inner = OSSL_LIB_CTX_new(), *ctx = OSSL_LIB_CTX_new();

    sk_chain_lean.deflt = inner != NULL
        ? OSSL_PROVIDER_load(inner, "default") : NULL;
    if (sk_chain_lean.deflt == NULL || ctx == NULL
        || !sk_chain_lean_pick(OSSL_OP_KEYMGMT, sk_chain_lean.keymgmt)
        || !sk_chain_lean_pick(OSSL_OP_DECODER, sk_chain_lean.decoder)
        || OSSL_PROVIDER_add_builtin(ctx, "sk-lean",
               sk_chain_lean_provider) != 1
        || OSSL_PROVIDER_load(ctx, "sk-lean") == NULL)
    {
        OSSL_LIB_CTX_free(ctx);
        if (sk_chain_lean.deflt != NULL) {
            OSSL_PROVIDER_unload(sk_chain_lean.deflt);
            sk_chain_lean.deflt = NULL;
        }
        OSSL_LIB_CTX_free(inner);
        ERR_clear_error();
        return;
    }
    sk_chain_lean.ctx = ctx;
}


X509 *
sk_chain_d2i_ee(const unsigned char **pp, long len)
{
    X509  *x;

    pthread_once(&sk_chain_lean.once, sk_chain_lean_init);
    x = X509_new_ex(sk_chain_lean.ctx, NULL);
    return x != NULL ? d2i_X509(&x, pp, len) : NULL;
}


/*
 * CA certificates recur in every Bind their CA's customers make: the last
 * SK_CHAIN_CA_CACHE that decoded cleanly are kept decoded, by the SHA-256
 * of their DER, and shared (up-referenced) by every chain that carries
 * them.  End-entity certificates, one per name, are always decoded.
 */
#define SK_CHAIN_CA_CACHE  64

static struct {
    pthread_mutex_t  lock;
    unsigned char    hash[SK_CHAIN_CA_CACHE][SK_SHA256_BYTES];
    X509            *x[SK_CHAIN_CA_CACHE];
    size_t           next;
} sk_chain_cas = { PTHREAD_MUTEX_INITIALIZER, { { 0 } }, { NULL }, 0 };


/* The cached certificate of this hash, up-referenced, or NULL. */
static X509 *
sk_chain_ca_get(const unsigned char h[SK_SHA256_BYTES])
{
    X509    *x = NULL;
    size_t   i;

    pthread_mutex_lock(&sk_chain_cas.lock);
    for (i = 0; i < SK_CHAIN_CA_CACHE && sk_chain_cas.x[i] != NULL; i++) {
        if (memcmp(sk_chain_cas.hash[i], h, SK_SHA256_BYTES) == 0) {
            x = X509_up_ref(sk_chain_cas.x[i]) == 1 ? sk_chain_cas.x[i]
                                                    : NULL;
            break;
        }
    }
    pthread_mutex_unlock(&sk_chain_cas.lock);
    return x;
}


static void
sk_chain_ca_put(const unsigned char h[SK_SHA256_BYTES], X509 *x)
{
    X509  *old;

    if (X509_up_ref(x) != 1) {
        return;
    }
    pthread_mutex_lock(&sk_chain_cas.lock);
    old = sk_chain_cas.x[sk_chain_cas.next];
    memcpy(sk_chain_cas.hash[sk_chain_cas.next], h, SK_SHA256_BYTES);
    sk_chain_cas.x[sk_chain_cas.next] = x;
    sk_chain_cas.next = (sk_chain_cas.next + 1) % SK_CHAIN_CA_CACHE;
    pthread_mutex_unlock(&sk_chain_cas.lock);
    X509_free(old);
}


/* Certificate i (0: the end-entity) of a chain, s[0..len) in base64url;
 * any key type but the SK's is left undecoded (sk_chain_d2i_ee), which
 * only a certificate that is no SK and no usual CA has. */
static int
sk_chain_cert(X509 **out, const char *s, size_t len, int i, sk_err_t *err)
{
    const unsigned char  *p;
    unsigned char        *der, h[SK_SHA256_BYTES];
    size_t                n;
    X509                 *x;

    if (len == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "empty (want base64url)");
    }
    if (sk_b64_decode(&der, &n, s, len, err) != 0) {
        return -1;
    }
    if (n > (size_t) SK_ENTRY_MAX) {
        free(der);
        return sk_err_set(err, SK_ERR_FORMAT, "not a DER certificate");
    }
    if (i > 0) {
        sk_merkle_digest(h, der, n);
        if ((*out = sk_chain_ca_get(h)) != NULL) {
            free(der);
            return 0;
        }
    }
    p = der;
    x = sk_chain_d2i_ee(&p, (long) n);
    if (x == NULL) {
        free(der);
        sk_err_crypto(err, "not a DER certificate");
        if (err != NULL && err->code == SK_ERR_CRYPTO) {
            err->code = SK_ERR_FORMAT;      /* bad input, not our fault */
        }
        return -1;
    }
    if ((size_t) (p - der) != n) {
        free(der);
        X509_free(x);
        return sk_err_set(err, SK_ERR_FORMAT,
            "trailing bytes after the certificate");
    }
    free(der);
    if (i > 0 && X509_check_ca(x) > 0) {
        sk_chain_ca_put(h, x);
    }
    *out = x;
    return 0;
}


int
sk_chain_decode(STACK_OF(X509) **chain, const char *v, size_t len,
    sk_err_t *err)
{
    const char  *comma;
    size_t       off, end;
    X509        *x = NULL;

    *chain = sk_X509_new_null();
    if (*chain == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "chain");
    }
    for (off = 0; ; off = end + 1) {
        comma = memchr(v + off, ',', len - off);
        end = comma == NULL ? len : (size_t) (comma - v);
        if (sk_chain_cert(&x, v + off, end - off, sk_X509_num(*chain), err)
            != 0)
        {
            sk_err_prefix(err, "certificate %d", sk_X509_num(*chain) + 1);
            break;
        }
        if (sk_X509_push(*chain, x) == 0) {
            X509_free(x);
            sk_err_set(err, SK_ERR_NOMEM, "chain");
            break;
        }
        if (comma == NULL) {
            return 0;
        }
    }
    sk_X509_pop_free(*chain, X509_free);
    *chain = NULL;
    return -1;
}


int
sk_chain_check(STACK_OF(X509) **verified, const sk_entry_t *e,
    const sk_key_t *sk, X509_STORE *roots, int64_t at, sk_err_t *err)
{
    STACK_OF(X509)  *chain = sk_entry_get0_chain(e);
    X509_STORE_CTX  *ctx = NULL;
    const char      *name = sk_entry_name(e);
    EVP_PKEY        *eek;
    X509            *ee;
    int              rc = -1;

    if (verified != NULL) {
        *verified = NULL;
    }
    if (chain == NULL || name == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "chain: no CA-Cert-Chain (not "
            "a Bind or Rebind, or one with DNSSEC evidence)");
    }
    ee = sk_X509_value(chain, 0);
    /* Decoded knowing only the key types an SK can be (sk_chain_d2i_ee):
     * any other type leaves no key, and the verifier would fail with a
     * bare "internal error".  Such a key is not the SK either way. */
    if (X509_get0_pubkey(ee) == NULL) {
        ERR_clear_error();
        sk_err_set(err, SK_ERR_KEY_MISMATCH, "key: end-entity certificate's "
            "key is not the SK (not an Ed25519, ECDSA or RSA key)");
        goto done;
    }
    ctx = X509_STORE_CTX_new();
    if (ctx == NULL || X509_STORE_CTX_init(ctx, roots, ee, chain) != 1) {
        sk_err_crypto(err, "chain: verifier");
        if (err != NULL) {
            err->code = SK_ERR_NOMEM;   /* the host's fault, not the chain's */
        }
        goto done;
    }
    X509_STORE_CTX_set_time(ctx, 0, (time_t) at);
    if (X509_verify_cert(ctx) != 1) {
        sk_err_set(err, SK_ERR_SIGNATURE,
            "chain: not valid to a trusted root at claim time: %s",
            X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
        goto done;
    }
    if (X509_check_host(ee, name, strlen(name), 0, NULL) != 1) {
        sk_err_set(err, SK_ERR_FORMAT,
            "name: end-entity certificate is not for %s", name);
        goto done;
    }
    eek = X509_get0_pubkey(ee);
    if (eek == NULL || EVP_PKEY_eq(eek, sk_key_get0_pkey(sk)) != 1) {
        sk_err_set(err, SK_ERR_KEY_MISMATCH,
            "key: end-entity certificate's key is not the SK");
        goto done;
    }
    if (verified != NULL) {
        *verified = X509_STORE_CTX_get1_chain(ctx);
        if (*verified == NULL) {
            sk_err_set(err, SK_ERR_NOMEM, "chain");
            goto done;
        }
    }
    rc = 0;
done:
    X509_STORE_CTX_free(ctx);
    return rc;
}
