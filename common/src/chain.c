/*
 * chain.c -- a Bind's CA-Cert-Chain against the roots of claim time.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/x509v3.h>

#include "sk/b64.h"
#include "sk/chain.h"


int
sk_chain_decode(STACK_OF(X509) **chain, const char *v, sk_err_t *err)
{
    return sk_chain_decode_by(chain, v, NULL, NULL, err);
}


/* The default sk_chain_d2i_fn: OpenSSL's own decoder. */
static X509 *
sk_chain_d2i_der(void *arg, const unsigned char *der, size_t len, int i)
{
    const unsigned char  *p = der;

    (void) arg;
    (void) i;
    return d2i_X509(NULL, &p, (long) len);
}


int
sk_chain_decode_by(STACK_OF(X509) **chain, const char *v,
    sk_chain_d2i_fn d2i, void *arg, sk_err_t *err)
{
    const char           *comma;
    unsigned char        *der;
    size_t                n, len;
    X509                 *x;

    *chain = sk_X509_new_null();
    if (*chain == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "chain");
    }
    for (;;) {
        comma = strchr(v, ',');
        len = comma != NULL ? (size_t) (comma - v) : strlen(v);
        if (sk_b64_decode(&der, &n, v, len, err) != 0) {
            return -1;
        }
        x = (d2i != NULL ? d2i : sk_chain_d2i_der)(arg, der, n,
            sk_X509_num(*chain));
        free(der);
        if (x == NULL || sk_X509_push(*chain, x) == 0) {
            X509_free(x);
            return sk_err_crypto(err, "certificate %d",
                sk_X509_num(*chain) + 1);
        }
        if (comma == NULL) {
            return 0;
        }
        v = comma + 1;
    }
}


/* The parsed entry's end-entity certificate first, then d2i's. */
typedef struct {
    X509            *ee;
    sk_chain_d2i_fn  d2i;
    void            *arg;
} sk_chain_src_t;


static X509 *
sk_chain_d2i_parsed(void *arg, const unsigned char *der, size_t len, int i)
{
    sk_chain_src_t  *src = arg;

    if (i == 0 && src->ee != NULL) {
        return X509_up_ref(src->ee) == 1 ? src->ee : NULL;
    }
    return (src->d2i != NULL ? src->d2i : sk_chain_d2i_der)(src->arg, der,
        len, i);
}


int
sk_chain_check(STACK_OF(X509) **verified, const sk_entry_t *e,
    const sk_key_t *sk, X509_STORE *roots, int64_t at, sk_err_t *err)
{
    return sk_chain_check_by(verified, e, sk, roots, at, NULL, NULL, err);
}


int
sk_chain_check_by(STACK_OF(X509) **verified, const sk_entry_t *e,
    const sk_key_t *sk, X509_STORE *roots, int64_t at, sk_chain_d2i_fn d2i,
    void *arg, sk_err_t *err)
{
    STACK_OF(X509)  *chain = NULL;
    X509_STORE_CTX  *ctx = NULL;
    const char      *name = sk_entry_name(e), *v;
    sk_chain_src_t   src = { sk_entry_get0_ee(e), d2i, arg };
    EVP_PKEY        *eek;
    X509            *ee;
    int              rc = -1;

    if (verified != NULL) {
        *verified = NULL;
    }
    v = sk_entry_get(e, "CA-Cert-Chain");
    if (v == NULL || name == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "chain: no CA-Cert-Chain (not "
            "a Bind or Rebind, or one with DNSSEC evidence)");
    }
    if (sk_chain_decode_by(&chain, v, sk_chain_d2i_parsed, &src, err) != 0) {
        sk_err_prefix(err, "chain: CA-Cert-Chain");
        goto done;
    }
    ee = sk_X509_value(chain, 0);
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
    sk_X509_pop_free(chain, X509_free);
    return rc;
}
