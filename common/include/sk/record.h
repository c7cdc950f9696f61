/*
 * sk/record.h -- a name's current record from its entries on several
 * timelines (draft 1.4).
 *
 * Order: X precedes Y if X.Timestamp < Y.Timestamp, or equal and
 * X.TID < Y.TID, or both equal and X.SN < Y.SN.  Walking oldest first, the
 * record is the oldest Bind; a valid Unbind (SK-Signature by the SK in
 * force) ends it, and only a valid Rebind after it starts a new one; the
 * newest valid Change-Services after the record sets its services.
 * Entries whose signatures fail are skipped and counted, and so are
 * Rebinds whose Rebinder-Name the revoked record does not list or whose
 * rebinder has no SK (lookup says SK_ERR_NOT_FOUND).  Other failures
 * (memory, a lookup backend) fail the call.  When UNBOUND, entry and key
 * are the revoked record's, services is empty.
 */
#ifndef SK_RECORD_H
#define SK_RECORD_H

#include <stddef.h>
#include "err.h"
#include "key.h"
#include "entry.h"
#include "services.h"

typedef enum {
    SK_RECORD_NONE = 0,     /* no Bind for the name: no SK known */
    SK_RECORD_BOUND,        /* an SK is in force */
    SK_RECORD_UNBOUND       /* revoked by an Unbind and not rebound */
} sk_record_state_t;

typedef struct {
    sk_record_state_t  state;
    const sk_entry_t  *entry;          /* the Bind/Rebind in force; borrowed */
    const sk_entry_t  *change;         /* Change-Services applied, or NULL */
    const sk_entry_t  *unbind;         /* for UNBOUND: the Unbind; borrowed */
    sk_key_t          *key;            /* the SK in force; owned */
    sk_services_t      services;       /* effective services; owned */
    int                include_subdomains;
    size_t             skipped;        /* entries ignored for bad signatures */
} sk_record_t;

/* How combining finds a rebinder's SK (the record of Rebinder-Name). */
typedef int (*sk_rebinder_key_fn)(sk_key_t **key, const char *rebinder,
    void *arg, sk_err_t *err);

/* -1, 0, 1 by the draft's order. */
int sk_entry_order(const sk_entry_t *x, const sk_entry_t *y);

/* Combine the n stamped entries for name (entries for other names are an
 * SK_ERR_USAGE error).  Rebinds are accepted only through lookup (NULL:
 * every Rebind is skipped).  Entries stay owned by the caller and must
 * outlive rec. */
int sk_record_combine(sk_record_t *rec, const char *name,
    const sk_entry_t *const *entries, size_t n, sk_rebinder_key_fn lookup,
    void *arg, sk_err_t *err) SK_WUR;

void sk_record_free(sk_record_t *rec);        /* zeroes it; NULL ok */

#endif
