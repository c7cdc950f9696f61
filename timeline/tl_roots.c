/*
 * tl_roots.c -- the trusted roots, few, kept in memory (tl->roots) with
 * the X509_STORE chains verify against: tl_state.c changes them as root-CA
 * entries come, the index loads them at start.
 */
#include <string.h>

#include <openssl/sha.h>
#include <openssl/x509.h>

#include "tl.h"


/* 0 once the root (DER) is added; 1 if it is trusted already. */
int
tl_roots_add(tl_timeline_t *tl, const unsigned char *der, size_t len,
    sk_err_t *err)
{
    unsigned char         h[SK_SHA256_BYTES];
    const unsigned char  *p;
    size_t                i;
    tl_root_t            *r;
    X509                 *x;

    SHA256(der, len, h);
    for (i = 0; i < tl->nroots; i++) {
        if (memcmp(tl->roots[i].hash, h, sizeof(h)) == 0) {
            return 1;
        }
    }
    p = der;
    x = d2i_X509(NULL, &p, (long) len);
    r = realloc(tl->roots, (tl->nroots + 1) * sizeof(*r));
    if (x == NULL || r == NULL) {
        X509_free(x);
        return x == NULL ? sk_err_crypto(err, "CA-Cert")
                         : sk_err_set(err, SK_ERR_NOMEM, "roots");
    }
    tl->roots = r;
    r += tl->nroots++;
    r->cert = x;
    memcpy(r->hash, h, sizeof(h));
    return 0;
}


/* st (or NULL) becomes the store; a chain being verified keeps its
 * reference to the old one. */
static void
tl_roots_set(tl_timeline_t *tl, X509_STORE *st)
{
    X509_STORE  *old;

    pthread_mutex_lock(&tl->store_lock);
    old = tl->store;
    tl->store = st;
    pthread_mutex_unlock(&tl->store_lock);
    X509_STORE_free(old);
}


/* The store chains verify against: every root, made anew when they
 * change. */
int
tl_roots_store(tl_timeline_t *tl, sk_err_t *err)
{
    X509_STORE  *st = X509_STORE_new();
    size_t       i;

    for (i = 0; st != NULL && i < tl->nroots; i++) {
        if (X509_STORE_add_cert(st, tl->roots[i].cert) != 1) {
            X509_STORE_free(st);
            st = NULL;
        }
    }
    if (st == NULL) {
        return sk_err_crypto(err, "roots: store");
    }
    tl_roots_set(tl, st);
    return 0;
}


X509_STORE *
tl_roots_get(tl_timeline_t *tl)
{
    X509_STORE  *st;

    pthread_mutex_lock(&tl->store_lock);
    st = tl->store;
    if (st != NULL && X509_STORE_up_ref(st) != 1) {
        st = NULL;
    }
    pthread_mutex_unlock(&tl->store_lock);
    return st != NULL ? st : X509_STORE_new();     /* no roots yet */
}


void
tl_roots_clear(tl_timeline_t *tl)
{
    size_t  i;

    for (i = 0; i < tl->nroots; i++) {
        X509_free(tl->roots[i].cert);
    }
    tl->nroots = 0;
    tl_roots_set(tl, NULL);
}
