/*
 * sk/strtab.h -- open-addressing tables keyed by a string, the shape the
 * daemons' name tables share (sk-timeline's names, sk-mirror's pending
 * names): slots are structs whose first member is the key, a char *
 * (NULL: the slot is empty); FNV-1a, linear probing, a power of two of
 * slots, never more than half full.  Not thread-safe: lock around it.
 */
#ifndef SK_STRTAB_H
#define SK_STRTAB_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

typedef struct {
    void    *slots;
    size_t   slot_size;     /* bytes of one slot, its key first */
    size_t   n;             /* keys held */
    size_t   nslots;        /* 0 or a power of 2 */
} sk_strtab_t;

/* FNV-1a of a NUL-terminated string. */
uint64_t sk_strhash(const char *s);

/* An empty table of slots of slot_size bytes (at least a char *). */
void sk_strtab_init(sk_strtab_t *t, size_t slot_size);
/* The slot of key, or NULL. */
void *sk_strtab_find(const sk_strtab_t *t, const char *key);
/* The slot of key, made (its key a copy, the rest zero, *made = 1) if
 * absent; NULL with SK_ERR_NOMEM naming what.  Slots move when the table
 * grows: pointers to them last until the next add. */
void *sk_strtab_add(sk_strtab_t *t, const char *key, int *made,
    const char *what, sk_err_t *err);
/* Slot i (0 <= i < nslots), empty or not. */
void *sk_strtab_at(const sk_strtab_t *t, size_t i);
/* Free the keys and the slots (not what the slots point to besides). */
void sk_strtab_free(sk_strtab_t *t);

#endif
