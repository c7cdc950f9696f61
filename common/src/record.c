/*
 * record.c -- combining a name's entries from several timelines into the
 * record a client enforces (draft 1.4).
 *
 * The walk is oldest first, so that "the SK in force" is always defined
 * when an entry's signature is checked: an Unbind or Change-Services is
 * believed only if the key of the record it follows signed it.  Only the
 * registrants' signatures are checked here; the timelines' Signature is
 * the caller's business (mirrors check it on sync).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sk/record.h>

#include "internal.h"

typedef struct {
    const sk_entry_t  *e;
    int64_t            ts;
    uint64_t           tid;
    uint64_t           sn;
    size_t             idx;         /* position in the input: ties */
} sk_record_item_t;


/* Compare stamps; unstamped entries (all -1/0) sort first. */
static int
sk_record_cmp_stamps(int64_t xt, uint64_t xtid, uint64_t xsn, int64_t yt,
    uint64_t ytid, uint64_t ysn)
{
    if (xt != yt) {
        return xt < yt ? -1 : 1;
    }
    if (xtid != ytid) {
        return xtid < ytid ? -1 : 1;
    }
    if (xsn != ysn) {
        return xsn < ysn ? -1 : 1;
    }
    return 0;
}


static int
sk_record_stamp(sk_record_item_t *it, const sk_entry_t *e, sk_err_t *err)
{
    it->e = e;
    if (sk_entry_timestamp(e, &it->ts, err) != 0
        || sk_entry_tid(e, &it->tid, err) != 0
        || sk_entry_sn(e, &it->sn, err) != 0)
    {
        return -1;
    }
    return 0;
}


int
sk_entry_order(const sk_entry_t *x, const sk_entry_t *y)
{
    sk_record_item_t  a, b;

    /* An unstamped field leaves its default, so order stays total. */
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.ts = b.ts = -1;
    (void) sk_record_stamp(&a, x, NULL);
    (void) sk_record_stamp(&b, y, NULL);
    return sk_record_cmp_stamps(a.ts, a.tid, a.sn, b.ts, b.tid, b.sn);
}


static int
sk_record_item_cmp(const void *pa, const void *pb)
{
    const sk_record_item_t *a = pa, *b = pb;
    int                     c;

    c = sk_record_cmp_stamps(a->ts, a->tid, a->sn, b->ts, b->tid, b->sn);
    if (c != 0) {
        return c;
    }
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}


/*
 * 1 if the check passed, 0 if it failed with SK_ERR_SIGNATURE (the entry
 * is skipped and counted), -1 for any other failure (out of memory, a
 * lookup backend down): those must not silently change the record.
 */
static int
sk_record_judge(sk_record_t *rec, int rc, const sk_err_t *e, sk_err_t *err)
{
    if (rc == 0) {
        return 1;
    }
    if (e->code == SK_ERR_SIGNATURE) {
        rec->skipped++;
        return 0;
    }
    if (err != NULL) {
        *err = *e;
    }
    return -1;
}


static int
sk_record_verify(sk_record_t *rec, const sk_entry_t *e, sk_sig_field_t which,
    const sk_key_t *key, sk_err_t *err)
{
    sk_err_t  e2;

    sk_err_clear(&e2);
    return sk_record_judge(rec, sk_entry_verify(e, which, key, &e2), &e2,
        err);
}


static int
sk_record_set_services(sk_record_t *rec, const sk_entry_t *e, sk_err_t *err)
{
    const char     *s = sk_entry_get(e, "Services");
    sk_services_t   svcs;

    if (sk_services_parse(&svcs, s, strlen(s), err) != 0) {
        return -1;
    }
    sk_services_free(&rec->services);
    rec->services = svcs;
    return 0;
}


/* e (a Bind or Rebind whose signatures passed) starts the record. */
static int
sk_record_start(sk_record_t *rec, const sk_entry_t *e, sk_key_t *key,
    sk_err_t *err)
{
    if (sk_record_set_services(rec, e, err) != 0) {
        sk_key_free(key);
        return -1;
    }
    sk_key_free(rec->key);
    rec->key = key;
    rec->state = SK_RECORD_BOUND;
    rec->entry = e;
    rec->change = NULL;
    rec->unbind = NULL;
    rec->include_subdomains =
        strcmp(sk_entry_get(e, "Includes-Subdomains"), "1") == 0;
    return 0;
}


/* The entry's own key and SK-Signature: 1 valid (*key set), 0 skipped. */
static int
sk_record_self_signed(sk_record_t *rec, sk_key_t **key, const sk_entry_t *e,
    sk_err_t *err)
{
    int  ok;

    if (sk_entry_key(key, e, err) != 0) {
        return -1;
    }
    ok = sk_record_verify(rec, e, SK_SIG_SK, *key, err);
    if (ok != 1) {
        sk_key_free(*key);
        *key = NULL;
    }
    return ok;
}


static int
sk_record_bind(sk_record_t *rec, const sk_entry_t *e, sk_err_t *err)
{
    sk_key_t  *key;
    int        ok;

    if (rec->state != SK_RECORD_NONE) {
        return 0;                   /* a younger claim: the oldest wins */
    }
    ok = sk_record_self_signed(rec, &key, e, err);
    return ok == 1 ? sk_record_start(rec, e, key, err) : ok;
}


static int
sk_record_unbind(sk_record_t *rec, const sk_entry_t *e, sk_err_t *err)
{
    int  ok;

    if (rec->state != SK_RECORD_BOUND) {
        return 0;                   /* nothing in force to revoke */
    }
    ok = sk_record_verify(rec, e, SK_SIG_SK, rec->key, err);
    if (ok != 1) {
        return ok;
    }
    rec->state = SK_RECORD_UNBOUND;
    rec->unbind = e;
    rec->change = NULL;
    rec->include_subdomains = 0;
    sk_services_free(&rec->services);
    return 0;
}


static int
sk_record_rebind(sk_record_t *rec, const sk_entry_t *e,
    sk_rebinder_key_fn lookup, void *arg, sk_err_t *err)
{
    const char  *rebinder = sk_entry_get(e, "Rebinder-Name");
    const char  *allowed;
    sk_key_t    *key, *rkey;
    sk_err_t     e2;
    int          ok;

    if (rec->state != SK_RECORD_UNBOUND) {
        return 0;                   /* only an Unbind opens the name */
    }
    /* Not authorised by the revoked record: as good as a forged signature. */
    allowed = sk_entry_get(rec->entry, "Rebinder-Names");
    if (lookup == NULL
        || !sk_list_has(allowed, strlen(allowed), rebinder, strlen(rebinder)))
    {
        rec->skipped++;
        return 0;
    }
    ok = sk_record_self_signed(rec, &key, e, err);
    if (ok != 1) {
        return ok;
    }
    sk_err_clear(&e2);
    if (lookup(&rkey, rebinder, arg, &e2) != 0) {
        sk_key_free(key);
        /* An inheritor with no SK of its own cannot have signed. */
        if (e2.code == SK_ERR_NOT_FOUND) {
            rec->skipped++;
            return 0;
        }
        return sk_record_judge(rec, -1, &e2, err);
    }
    ok = sk_record_verify(rec, e, SK_SIG_REBINDER, rkey, err);
    sk_key_free(rkey);
    if (ok != 1) {
        sk_key_free(key);
        return ok;
    }
    return sk_record_start(rec, e, key, err);
}


static int
sk_record_change(sk_record_t *rec, const sk_entry_t *e, sk_err_t *err)
{
    int  ok;

    if (rec->state != SK_RECORD_BOUND) {
        return 0;
    }
    ok = sk_record_verify(rec, e, SK_SIG_SK, rec->key, err);
    if (ok != 1) {
        return ok;
    }
    if (sk_record_set_services(rec, e, err) != 0) {
        return -1;
    }
    rec->change = e;
    return 0;
}


/* Every entry is for name and stamped, before anything is believed. */
static int
sk_record_items(sk_record_item_t *items, const char *name,
    const sk_entry_t *const *entries, size_t n, sk_err_t *err)
{
    const char  *en;
    size_t       i;
    sk_err_t     e2;

    for (i = 0; i < n; i++) {
        en = sk_entry_name(entries[i]);
        if (en == NULL || strcmp(en, name) != 0) {
            return sk_err_set(err, SK_ERR_USAGE, "entry %zu (%s): not for "
                "\"%s\"", i + 1, sk_entry_type_name(sk_entry_type(entries[i])),
                name);
        }
        if (sk_record_stamp(&items[i], entries[i], &e2) != 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "entry %zu (%s): %s", i + 1,
                sk_entry_type_name(sk_entry_type(entries[i])), e2.msg);
        }
        items[i].idx = i;
    }
    return 0;
}


int
sk_record_combine(sk_record_t *rec, const char *name,
    const sk_entry_t *const *entries, size_t n, sk_rebinder_key_fn lookup,
    void *arg, sk_err_t *err)
{
    sk_record_item_t  *items;
    const sk_entry_t  *e;
    size_t             i;
    int                rc = 0;

    memset(rec, 0, sizeof(*rec));
    items = calloc(n == 0 ? 1 : n, sizeof(sk_record_item_t));
    if (items == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    if (sk_record_items(items, name, entries, n, err) != 0) {
        free(items);
        return -1;
    }
    qsort(items, n, sizeof(sk_record_item_t), sk_record_item_cmp);

    for (i = 0; i < n && rc == 0; i++) {
        e = items[i].e;
        switch (sk_entry_type(e)) {
        case SK_ENTRY_BIND:
            rc = sk_record_bind(rec, e, err);
            break;
        case SK_ENTRY_UNBIND:
            rc = sk_record_unbind(rec, e, err);
            break;
        case SK_ENTRY_REBIND:
            rc = sk_record_rebind(rec, e, lookup, arg, err);
            break;
        default:
            rc = sk_record_change(rec, e, err);
            break;
        }
    }
    free(items);
    if (rc != 0) {
        sk_record_free(rec);
        return -1;
    }
    return 0;
}


void
sk_record_free(sk_record_t *rec)
{
    if (rec != NULL) {
        sk_key_free(rec->key);
        sk_services_free(&rec->services);
        memset(rec, 0, sizeof(*rec));
    }
}
