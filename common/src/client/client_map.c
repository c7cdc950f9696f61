/*
 * client_map.c -- the client rule (docs/protocol.md, "The name map"):
 * what a timeline's checkpoint proves about the name.  Its tree's last
 * entry, signed by the timeline at SN size - 1, is either a Map-Root
 * entry, whose map proof then shows the name absent (and the view holds
 * none of its entries on that timeline) or present with a value that the
 * view's entries must give exactly; or any other entry (a timeline from
 * before maps: "unmapped", absence believed as before).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sk/client.h>
#include <sk/evidence.h>

#include "client_int.h"


/* The checkpoint's last entry: the timeline's, SN size - 1, in its tree. */
static int
sk_clmap_last(sk_entry_t **e, const sk_client_cp_t *cp,
    const sk_client_timeline_t *tl, sk_err_t *err)
{
    sk_merkle_hash_t  leaf;
    uint64_t          tid, sn;

    if (sk_entry_parse(e, cp->last, cp->lastlen, err) != 0) {
        return -1;
    }
    if (sk_entry_tid(*e, &tid, NULL) != 0 || sk_entry_sn(*e, &sn, NULL) != 0
        || tid != cp->tid || sn != cp->cp.size - 1)
    {
        sk_err_set(err, SK_ERR_SIGNATURE, "not stamped TID %" PRIu64 " SN %"
            PRIu64 " (the checkpoint's size less one)", cp->tid,
            cp->cp.size - 1);
        goto fail;
    }
    if (sk_entry_verify(*e, SK_SIG_TIMELINE, tl->key, err) != 0) {
        goto fail;
    }
    if (sk_merkle_leaf_hash(leaf, cp->last, cp->lastlen, err) != 0
        || sk_merkle_verify_inclusion(leaf, sn, cp->cp.size, &cp->last_proof,
               cp->cp.root, err) != 0)
    {
        sk_err_prefix(err, "inclusion in the checkpoint of %" PRIu64,
            cp->cp.size);
        goto fail;
    }
    return 0;

fail:
    sk_entry_free(*e);
    *e = NULL;
    return -1;
}


/* The value the view's entries of cp's timeline give, in SN order. */
static int
sk_clmap_history(sk_map_value_t *val, const sk_client_view_t *v,
    uint64_t tid, sk_err_t *err)
{
    const sk_client_item_t  *it;
    sk_merkle_hash_t         leaf;
    size_t                   i;

    sk_map_value_init(val);
    for (i = 0; i < v->nitems; i++) {
        it = &v->items[i];
        if (it->tid != tid) {
            continue;
        }
        if (val->count > 0 && it->sn <= val->newest_sn) {
            return sk_err_set(err, SK_ERR_FORMAT, "map proof: SN %" PRIu64
                " after SN %" PRIu64 ": the history is out of order", it->sn,
                val->newest_sn);
        }
        if (sk_merkle_leaf_hash(leaf, it->text, it->len, err) != 0) {
            return -1;
        }
        sk_map_value_add(val, it->sn, leaf);
    }
    return 0;
}


/* The map proof of a Map-Root last entry, and the view's history. */
static int
sk_clmap_proof(sk_client_cp_t *cp, const sk_client_view_t *v,
    const sk_entry_t *last, sk_err_t *err)
{
    unsigned char     key[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  root, value, got;
    sk_map_value_t    val;
    uint64_t          names;
    int               present;

    if (cp->mproof == NULL) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "map proof: none, but the "
            "last entry is a Map-Root");
    }
    if (sk_evidence_map_root(last, root, &names, err) != 0
        || sk_map_key(key, v->name, err) != 0)
    {
        return sk_err_prefix(err, "map proof");
    }
    /* Its messages begin "map proof: ". */
    if (sk_map_proof_verify(cp->mproof, key, root, &present, value, err)
        != 0)
    {
        return -1;
    }
    if (sk_clmap_history(&val, v, cp->tid, err) != 0) {
        return -1;
    }
    if (!present) {
        if (val.count > 0) {
            return sk_err_set(err, SK_ERR_SIGNATURE, "map proof: the name is "
                "absent from the map of %" PRIu64 ", but %" PRIu64 " entries "
                "are given", cp->cp.size, val.count);
        }
        cp->map = SK_CLIENT_MAP_ABSENT;
        return 0;
    }
    if (val.count == 0) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "map proof: the name is in "
            "the map of %" PRIu64 ", but no entries are given", cp->cp.size);
    }
    sk_map_value_hash(got, &val);
    if (memcmp(got, value, sizeof(got)) != 0) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "map proof: the %" PRIu64
            " entries given (newest SN %" PRIu64 ") are not the name's "
            "history in the map of %" PRIu64 ": one is left out or added",
            val.count, val.newest_sn, cp->cp.size);
    }
    cp->map = SK_CLIENT_MAP_PRESENT;
    return 0;
}


int
sk_cl_map_check(sk_client_cp_t *cp, const sk_client_view_t *v,
    const sk_client_timeline_t *tl, sk_err_t *err)
{
    sk_entry_t  *last;
    int          rc;

    cp->map = SK_CLIENT_MAP_UNMAPPED;
    if (cp->cp.size == 0) {
        /* An empty tree has no last entry, and no entry of the name. */
        if (cp->last != NULL) {
            return sk_err_set(err, SK_ERR_FORMAT, "last entry of an empty "
                "tree");
        }
        cp->map = SK_CLIENT_MAP_ABSENT;
        return 0;
    }
    if (cp->last == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "no last entry (Last-Entry)");
    }
    if (sk_clmap_last(&last, cp, tl, err) != 0) {
        return sk_err_prefix(err, "last entry");
    }
    if (sk_entry_type(last) == SK_ENTRY_MAP_ROOT) {
        rc = sk_clmap_proof(cp, v, last, err);
    } else if (cp->mproof != NULL) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "map proof: given, but the last "
            "entry is a %s", sk_entry_type_name(sk_entry_type(last)));
    } else {
        rc = 0;
    }
    sk_entry_free(last);
    return rc;
}
