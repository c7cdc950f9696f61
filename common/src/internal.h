/*
 * internal.h -- helpers shared by several libsk source files; not part of
 * the public API.  One section per owner.
 */
#ifndef SK_INTERNAL_H
#define SK_INTERNAL_H

#include <stddef.h>

/* entry.c: 1 if the comma-separated list s[0..len) has the element
 * name[0..nlen) (Rebinder-Names lookups), 0 otherwise. */
int sk_list_has(const char *s, size_t len, const char *name, size_t nlen);

#endif
