/*
 * tl_names.c -- the working set: the names (tl_name_t) in use or changed
 * since the index's last flush, an open-addressing hash table in
 * tl->names.  tl_state.c fills it (from the index, on a miss); the
 * index's flush writes the dirty ones and empties it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tl.h"


static uint64_t
tl_names_hash(const char *s)
{
    uint64_t  h = 14695981039346656037ull;      /* FNV-1a */

    while (*s != '\0') {
        h = (h ^ (unsigned char) *s++) * 1099511628211ull;
    }
    return h;
}


/* The slot of name in the working set: its entry, or the free slot. */
tl_name_t **
tl_names_slot(tl_name_t **slots, size_t nslots, const char *name)
{
    size_t  i = (size_t) tl_names_hash(name) & (nslots - 1);

    while (slots[i] != NULL && strcmp(slots[i]->name, name) != 0) {
        i = (i + 1) & (nslots - 1);
    }
    return &slots[i];
}


static int
tl_names_grow(tl_timeline_t *tl, sk_err_t *err)
{
    tl_name_t  **slots;
    size_t       n = tl->nslots != 0 ? tl->nslots * 2 : 1024, i;

    slots = calloc(n, sizeof(*slots));
    if (slots == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "name table");
    }
    for (i = 0; i < tl->nslots; i++) {
        if (tl->names[i] != NULL) {
            *tl_names_slot(slots, n, tl->names[i]->name) = tl->names[i];
        }
    }
    free(tl->names);
    tl->names = slots;
    tl->nslots = n;
    return 0;
}


void
tl_name_free(tl_name_t *n)
{
    if (n != NULL) {
        free(n->name);
        free(n->key);
        free(n->rebinders);
        free(n->seen);
        free(n);
    }
}


/* Put n (its own allocation) into the working set. */
int
tl_names_insert(tl_timeline_t *tl, tl_name_t *n, sk_err_t *err)
{
    if (2 * (tl->nnames + 1) > tl->nslots && tl_names_grow(tl, err) != 0) {
        return -1;
    }
    *tl_names_slot(tl->names, tl->nslots, n->name) = n;
    tl->nnames++;
    return 0;
}


void
tl_names_forget(tl_timeline_t *tl)
{
    size_t  i;

    for (i = 0; i < tl->nslots; i++) {
        tl_name_free(tl->names[i]);
    }
    free(tl->names);
    tl->names = NULL;
    tl->mdirty = NULL;
    tl->nslots = tl->nnames = 0;
}
