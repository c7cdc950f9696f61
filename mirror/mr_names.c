/*
 * mr_names.c -- the name index: for each name, where its entries are
 * (timeline, SN), and the answer last built for it.  Open addressing with
 * FNV-1a, at most half full; called with the mirror's lock held.
 */
#include <stdlib.h>
#include <string.h>

#include "mr.h"


static uint64_t
mr_names_hash(const char *s)
{
    uint64_t  h = 1469598103934665603ULL;

    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char) *s) * 1099511628211ULL;
    }
    return h;
}


static mr_name_t *
mr_names_slot(mr_name_t *slots, size_t nslots, const char *name)
{
    size_t  i = (size_t) mr_names_hash(name) & (nslots - 1);

    while (slots[i].name != NULL && strcmp(slots[i].name, name) != 0) {
        i = (i + 1) & (nslots - 1);
    }
    return &slots[i];
}


static int
mr_names_grow(mr_mirror_t *m)
{
    mr_name_t  *slots, *s;
    size_t      n = m->nslots ? m->nslots * 2 : 1024, i;

    slots = calloc(n, sizeof(*slots));
    if (slots == NULL) {
        return -1;
    }
    for (i = 0; i < m->nslots; i++) {
        if (m->names[i].name != NULL) {
            s = mr_names_slot(slots, n, m->names[i].name);
            *s = m->names[i];
        }
    }
    free(m->names);
    m->names = slots;
    m->nslots = n;
    return 0;
}


int
mr_names_add(mr_mirror_t *m, const char *name, uint32_t tl, uint64_t sn)
{
    mr_name_t  *s;
    mr_ref_t   *r;

    if ((m->nnames + 1) * 2 > m->nslots && mr_names_grow(m) != 0) {
        return -1;
    }
    s = mr_names_slot(m->names, m->nslots, name);
    if (s->name == NULL) {
        s->name = strdup(name);
        if (s->name == NULL) {
            return -1;
        }
        m->nnames++;
    }
    if (s->nrefs == s->cap) {
        r = realloc(s->refs, (s->cap ? s->cap * 2 : 4) * sizeof(*r));
        if (r == NULL) {
            return -1;
        }
        s->refs = r;
        s->cap = s->cap ? s->cap * 2 : 4;
    }
    s->refs[s->nrefs].tl = tl;
    s->refs[s->nrefs++].sn = sn;
    /* A new entry for the name (an Unbind above all) voids its answer,
     * also one that said the name had no entries. */
    mr_lru_drop(&m->answers, name);
    return 0;
}


mr_name_t *
mr_names_find(mr_mirror_t *m, const char *name)
{
    mr_name_t  *s;

    if (m->nslots == 0) {
        return NULL;
    }
    s = mr_names_slot(m->names, m->nslots, name);
    return s->name != NULL ? s : NULL;
}


void
mr_names_free(mr_mirror_t *m)
{
    size_t  i;

    for (i = 0; i < m->nslots; i++) {
        free(m->names[i].name);
        free(m->names[i].refs);
    }
    free(m->names);
    m->names = NULL;
    m->nslots = m->nnames = 0;
}
