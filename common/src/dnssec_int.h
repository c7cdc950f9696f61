/*
 * dnssec_int.h -- what dnssec.c asks of the trust anchors
 * (dnssec_anchors.c); not part of the public API.
 */
#ifndef SK_DNSSEC_INT_H
#define SK_DNSSEC_INT_H

#include <stdint.h>

#include <ldns/ldns.h>

#include <sk/dnssec.h>

/*
 * The DS or DNSKEY records of the anchors in force at time at, in *out
 * (borrowed RRs, the list freed by the caller with ldns_rr_list_free);
 * *dated: whether one of them has a validity window, that is whether the
 * file says which keys the root had at that time.  An anchor without a
 * window is in force at any time.
 */
int sk_dnssec_anchors_at(ldns_rr_list **out, int *dated,
    const sk_dnssec_anchors_t *a, int64_t at, sk_err_t *err);

/*
 * The refusal of a root DNSKEY RRset signed (keys: the keys of the set
 * that sign it) by no key an anchor in force at at names.
 * SK_ERR_SIGNATURE when the file has a dated anchor in force then (it
 * says which keys the root had: another key is no key of the root's);
 * SK_ERR_UNAVAILABLE otherwise (an anchors file without windows cannot
 * tell a key the root used before a rollover from a forgery: not
 * judged).  The message names the signing keys, and an anchor out of its
 * window among them.
 */
int sk_dnssec_anchors_mismatch(const ldns_rr_list *keys,
    const sk_dnssec_anchors_t *a, int64_t at, int dated, sk_err_t *err);

#endif
