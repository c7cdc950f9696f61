/*
 * mr_roots.c -- each mirrored timeline's root-CA history (its
 * Add-Root-CA and Remove-Root-CA entries, which the timeline signed), and
 * the check that a Bind or Rebind was backed when it was stamped: a valid
 * SK-Signature by its Key, and a CA-Cert-Chain valid at its Timestamp to
 * a root the timeline trusted just before it, for its Name, certifying
 * the SK (sk/chain.h; OCSP answers of the past cannot be asked again).
 * The rules are sk-timeline's (tl_state.c): a change whose CA-Serial is
 * not above the newest one noted changes nothing (a replay), and a root
 * is trusted at SN n while its newest change before n is an Add.
 * Called with the mirror's lock held.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>
#include <openssl/x509.h>

#include <sk/chain.h>
#include <sk/dnssec.h>

#include "mr.h"


int
mr_roots_note(mr_tl_t *t, const sk_entry_t *e, uint64_t sn, sk_err_t *err)
{
    const unsigned char  *p;
    unsigned char        *der;
    mr_root_t            *r;
    size_t                len;
    unsigned long         serial;
    X509                 *x = NULL;
    int                   add = sk_entry_type(e) == SK_ENTRY_ADD_ROOT_CA;

    t->roots_upto = sn + 1;
    if (!add && sk_entry_type(e) != SK_ENTRY_REMOVE_ROOT_CA) {
        return 0;
    }
    serial = strtoul(sk_entry_get(e, "CA-Serial"), NULL, 10);
    if (t->nroots > 0 && serial <= t->roots[t->nroots - 1].serial) {
        mr_log("timeline %" PRIu64 ": SN %" PRIu64 ": %s with CA-Serial %lu"
            " not above %lu, the newest root change's: it changes nothing",
            t->conf->tid, sn, sk_entry_type_name(sk_entry_type(e)), serial,
            t->roots[t->nroots - 1].serial);
        return 0;
    }
    if (t->nroots == t->rootcap) {
        r = realloc(t->roots, (t->rootcap ? t->rootcap * 2 : 8) * sizeof(*r));
        if (r == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "roots");
        }
        t->roots = r;
        t->rootcap = t->rootcap ? t->rootcap * 2 : 8;
    }
    r = &t->roots[t->nroots];
    memset(r, 0, sizeof(*r));
    r->sn = sn;
    r->serial = serial;
    if (sk_b64_decode(&der, &len, sk_entry_get(e, add ? "CA-Cert"
            : "CA-Cert-Hash"), strlen(sk_entry_get(e, add ? "CA-Cert"
            : "CA-Cert-Hash")), err) != 0)
    {
        return -1;
    }
    if (add) {
        p = der;
        x = d2i_X509(NULL, &p, (long) len);
        if (x == NULL) {
            free(der);
            return sk_err_crypto(err, "SN %" PRIu64 ": CA-Cert", sn);
        }
        SHA256(der, len, r->hash);
        r->cert = x;
    } else if (len == SK_SHA256_BYTES) {
        memcpy(r->hash, der, len);
    }
    free(der);
    t->nroots++;
    return 0;
}


static void
mr_roots_drop_store(mr_tl_t *t)
{
    X509_STORE_free(t->store);
    t->store = NULL;
    t->store_k = 0;
}


void
mr_roots_rewind(mr_tl_t *t, uint64_t size)
{
    while (t->nroots > 0 && t->roots[t->nroots - 1].sn >= size) {
        X509_free(t->roots[--t->nroots].cert);
    }
    if (t->store_k > t->nroots) {
        mr_roots_drop_store(t);
    }
    if (t->roots_upto > size) {
        t->roots_upto = size;
    }
}


void
mr_roots_free(mr_tl_t *t)
{
    mr_roots_rewind(t, 0);
    mr_roots_drop_store(t);
    free(t->roots);
    t->roots = NULL;
    t->rootcap = 0;
}


/* The roots in force just before SN sn: the first k root changes. */
static X509_STORE *
mr_roots_build(const mr_tl_t *t, size_t k)
{
    X509_STORE  *st;
    size_t       i, j;
    int          removed;

    st = X509_STORE_new();
    for (i = 0; st != NULL && i < k; i++) {
        if (t->roots[i].cert == NULL) {
            continue;
        }
        removed = 0;
        for (j = i + 1; j < k; j++) {
            removed |= t->roots[j].cert == NULL
                && memcmp(t->roots[j].hash, t->roots[i].hash,
                       SK_SHA256_BYTES) == 0;
        }
        if (!removed && X509_STORE_add_cert(st, t->roots[i].cert) != 1) {
            X509_STORE_free(st);
            st = NULL;
        }
    }
    return st;
}


/* Kept while syncing forward: rebuilt only when a root change comes
 * between the last Bind checked and this one (or to check an older SN). */
static X509_STORE *
mr_roots_store(mr_tl_t *t, uint64_t sn)
{
    size_t  k = t->nroots;

    while (k > 0 && t->roots[k - 1].sn >= sn) {
        k--;
    }
    if (t->store == NULL || t->store_k != k) {
        mr_roots_drop_store(t);
        t->store = mr_roots_build(t, k);
        t->store_k = k;
    }
    return t->store;
}


void
mr_roots_anchors(mr_mirror_t *m)
{
    sk_err_t  err;

    if (sk_dnssec_anchors_load(&m->anchors, m->conf.dnssec_anchors, &err)
        != 0)
    {
        snprintf(m->anchors_err, sizeof(m->anchors_err), "%s", err.msg);
        mr_log("dnssec_anchors: %s: DNSSEC evidence cannot be checked; a "
            "timeline's sync waits at a Bind carrying it", err.msg);
    }
}


/* A DNSSEC-Chain at ts.  No anchors: not known (SK_ERR_UNAVAILABLE),
 * never a proof against the timeline. */
static int
mr_roots_check_dnssec(mr_mirror_t *m, const sk_entry_t *e, const sk_key_t *k,
    int64_t ts, sk_err_t *err)
{
    if (m->anchors == NULL) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "dnssec_anchors: %s",
            m->anchors_err);
    }
    return sk_dnssec_check_entry(e, k, m->anchors, ts, err);
}


int
mr_roots_check_bind(mr_mirror_t *m, mr_tl_t *t, const sk_entry_t *e,
    uint64_t sn, int64_t ts, sk_err_t *err)
{
    X509_STORE  *st;
    sk_key_t    *k;
    uint64_t     upto;
    int          rc;

    if (sk_entry_key(&k, e, err) != 0) {
        return sk_err_prefix(err, "Key");
    }
    if (sk_entry_verify(e, SK_SIG_SK, k, err) != 0) {
        sk_key_free(k);
        return sk_err_prefix(err, "SK-Signature");
    }
    if (sk_entry_get(e, "DNSSEC-Chain") != NULL) {
        rc = mr_roots_check_dnssec(m, e, k, ts, err);
        sk_key_free(k);
        return rc;
    }
    /* Only the store is taken under the lock (a reference: another
     * thread may replace t's); the signatures are checked outside it, so
     * one sync thread per timeline checks on every core. */
    mr_lock(m);
    upto = t->roots_upto;
    st = upto >= sn ? mr_roots_store(t, sn) : NULL;
    if (st != NULL && X509_STORE_up_ref(st) != 1) {
        st = NULL;
    }
    mr_unlock(m);
    if (upto < sn) {
        sk_key_free(k);
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "the copy holds %" PRIu64
            " entries, not yet SN %" PRIu64, upto, sn);
    }
    if (st == NULL) {
        sk_key_free(k);
        return sk_err_crypto(err, "roots");
    }
    rc = sk_chain_check(NULL, e, k, st, ts, err);
    X509_STORE_free(st);
    sk_key_free(k);
    return rc;
}
