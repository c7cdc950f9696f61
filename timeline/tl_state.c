/*
 * tl_state.c -- what the log implies: each name's current SK and newest
 * entry, each SK's revocation budget, and the trusted roots.  Rebuilt by
 * replaying the log at start, then kept up by every accepted entry.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "tl.h"


tl_name_t *
tl_state_name(tl_timeline_t *tl, const char *name)
{
    return sk_strtab_find(&tl->names, name);
}


static int
tl_state_strset(char **dst, const char *v, sk_err_t *err)
{
    char  *s = strdup(v != NULL ? v : "");

    if (s == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "name table");
    }
    free(*dst);
    *dst = s;
    return 0;
}


/* Bind or Rebind: the name (new or not) now has this SK and budget. */
static int
tl_state_bind(tl_timeline_t *tl, const sk_entry_t *e, int64_t ts,
    sk_err_t *err)
{
    const char  *name = sk_entry_name(e);
    tl_name_t   *n;
    int          made;

    n = sk_strtab_add(&tl->names, name, &made, "name table", err);
    if (n == NULL) {
        return -1;
    }
    if (tl_state_strset(&n->key, sk_entry_get(e, "Key"), err) != 0
        || tl_state_strset(&n->rebinders, sk_entry_get(e, "Rebinder-Names"),
               err) != 0)
    {
        return -1;
    }
    n->tokens = (double) tl->conf.sk_budget;
    n->tokens_at = ts;
    return 0;
}


int
tl_state_seen(const tl_name_t *n, const char *sig)
{
    unsigned char  h[SK_SHA256_BYTES];
    size_t         i;

    SHA256((const unsigned char *) sig, strlen(sig), h);
    for (i = 0; i < n->nseen; i++) {
        if (memcmp(n->seen[i], h, sizeof(h)) == 0) {
            return 1;
        }
    }
    return 0;
}


static int
tl_state_see(tl_name_t *n, const char *sig, sk_err_t *err)
{
    unsigned char  (*p)[SK_SHA256_BYTES];

    p = realloc(n->seen, (n->nseen + 1) * sizeof(*p));
    if (p == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "name table");
    }
    n->seen = p;
    SHA256((const unsigned char *) sig, strlen(sig), p[n->nseen++]);
    return 0;
}


/* Refill then spend one token of n's budget; -1 if there is none. */
int
tl_state_spend(tl_timeline_t *tl, tl_name_t *n, int64_t now, int dry)
{
    double  t = n->tokens;

    if (tl->conf.sk_refill > 0 && now > n->tokens_at) {
        t += (double) (now - n->tokens_at) / (double) tl->conf.sk_refill;
    }
    if (t > (double) tl->conf.sk_budget) {
        t = (double) tl->conf.sk_budget;
    }
    if (t < 1.0) {
        return -1;
    }
    if (!dry) {
        n->tokens = t - 1.0;
        n->tokens_at = now;
    }
    return 0;
}


/* 0 once e's root is added; 1 if it is trusted already. */
static int
tl_state_root_add(tl_timeline_t *tl, const sk_entry_t *e, sk_err_t *err)
{
    unsigned char        *der, h[SK_SHA256_BYTES];
    const unsigned char  *p;
    size_t                len, i;
    tl_root_t            *r;
    X509                 *x;

    if (sk_b64_decode(&der, &len, sk_entry_get(e, "CA-Cert"),
            strlen(sk_entry_get(e, "CA-Cert")), err) != 0)
    {
        return -1;
    }
    SHA256(der, len, h);
    for (i = 0; i < tl->nroots; i++) {
        if (memcmp(tl->roots[i].hash, h, sizeof(h)) == 0) {
            free(der);
            return 1;
        }
    }
    p = der;
    x = d2i_X509(NULL, &p, (long) len);
    r = realloc(tl->roots, (tl->nroots + 1) * sizeof(*r));
    if (x == NULL || r == NULL) {
        X509_free(x);
        free(der);
        return x == NULL ? sk_err_crypto(err, "CA-Cert")
                         : sk_err_set(err, SK_ERR_NOMEM, "roots");
    }
    tl->roots = r;
    r += tl->nroots++;
    r->cert = x;
    memcpy(r->hash, h, sizeof(h));
    free(der);
    return 0;
}


int
tl_state_root_serial(const tl_timeline_t *tl, const sk_entry_t *e,
    sk_err_t *err)
{
    unsigned long  serial = strtoul(sk_entry_get(e, "CA-Serial"), NULL, 10);

    if (serial < tl->ca_next) {
        return sk_err_set(err, SK_ERR_EXISTS, "CA-Serial %lu is not above "
            "%lu, the newest root change's: a replay or out of order",
            serial, (unsigned long) tl->ca_next - 1);
    }
    return 0;
}


/* Index of the root whose SHA-256 (of DER) is the base64url hash. */
int
tl_state_root_find(tl_timeline_t *tl, const char *hash_b64)
{
    unsigned char  *h;
    size_t          len, i;
    int             found = -1;

    if (sk_b64_decode(&h, &len, hash_b64, strlen(hash_b64), NULL) != 0) {
        return -1;
    }
    for (i = 0; len == SK_SHA256_BYTES && i < tl->nroots; i++) {
        if (memcmp(tl->roots[i].hash, h, len) == 0) {
            found = (int) i;
        }
    }
    free(h);
    return found;
}


/* The store chains verify against: every root, made anew when they
 * change (a chain being verified keeps its reference to the old one). */
static int
tl_state_store(tl_timeline_t *tl, sk_err_t *err)
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
    X509_STORE_free(tl->store);
    tl->store = st;
    return 0;
}


/* A root change as sk-mirror applies it too: one whose CA-Serial is not
 * above the newest taken changes nothing (a log from before the rule may
 * hold such a replay), an Add of a trusted root changes nothing, a Remove
 * ends the trust in it. */
static int
tl_state_root_change(tl_timeline_t *tl, const sk_entry_t *e, sk_err_t *err)
{
    sk_err_t  why;
    int       i, add = sk_entry_type(e) == SK_ENTRY_ADD_ROOT_CA;

    if (tl_state_root_serial(tl, e, &why) != 0) {
        tl_log("%s: %s; ignored", sk_entry_type_name(sk_entry_type(e)),
            why.msg);
        return 0;
    }
    tl->ca_next = (uint32_t) strtoul(sk_entry_get(e, "CA-Serial"), NULL, 10)
                  + 1;
    if (add) {
        i = tl_state_root_add(tl, e, err);
        return i == 0 ? tl_state_store(tl, err) : i > 0 ? 0 : -1;
    }
    i = tl_state_root_find(tl, sk_entry_get(e, "CA-Cert-Hash"));
    if (i >= 0) {
        X509_free(tl->roots[i].cert);
        tl->roots[i] = tl->roots[--tl->nroots];
    }
    return tl_state_store(tl, err);
}


int
tl_state_apply(tl_timeline_t *tl, const sk_entry_t *e, int64_t ts,
    sk_err_t *err)
{
    tl_name_t  *n;

    switch (sk_entry_type(e)) {
    case SK_ENTRY_BIND:
    case SK_ENTRY_REBIND:
        if (tl_state_bind(tl, e, ts, err) != 0) {
            return -1;
        }
        break;
    case SK_ENTRY_UNBIND:
    case SK_ENTRY_CHANGE_SERVICES:
        n = tl_state_name(tl, sk_entry_name(e));
        if (n == NULL) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s for unbound name %s",
                sk_entry_type_name(sk_entry_type(e)), sk_entry_name(e));
        }
        (void) tl_state_spend(tl, n, ts, 0);
        if (sk_entry_type(e) == SK_ENTRY_CHANGE_SERVICES
            && tl_state_see(n, sk_entry_get(e, "SK-Signature"), err) != 0)
        {
            return -1;
        }
        break;
    case SK_ENTRY_INCORPORATE:
        return tl_inc_apply(tl, e, NULL, ts, err);
    case SK_ENTRY_ADD_ROOT_CA:
    case SK_ENTRY_REMOVE_ROOT_CA:
        return tl_state_root_change(tl, e, err);
    default:
        return 0;
    }
    n = tl_state_name(tl, sk_entry_name(e));
    n->last = sk_entry_type(e);
    return 0;
}


void
tl_state_free(tl_timeline_t *tl)
{
    tl_name_t  *n;
    size_t      i;

    for (i = 0; i < tl->names.nslots; i++) {
        n = sk_strtab_at(&tl->names, i);
        free(n->key);
        free(n->rebinders);
        free(n->seen);
    }
    sk_strtab_free(&tl->names);
    for (i = 0; i < tl->nroots; i++) {
        X509_free(tl->roots[i].cert);
    }
    free(tl->roots);
    X509_STORE_free(tl->store);
}
