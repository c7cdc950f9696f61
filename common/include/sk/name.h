/*
 * sk/name.h -- DNS names as sovereign keys bind them.
 *
 * A bound name is in A-label form (IDNs as "xn--" punycode, never raw
 * UTF-8), lowercase LDH labels of 1-63 octets, at most 253 octets in all,
 * at least two labels, no trailing dot, no label starting or ending with
 * '-'.  The wildcard is not written in the name: a Bind's
 * Includes-Subdomains flag extends it to every name below.
 */
#ifndef SK_NAME_H
#define SK_NAME_H

#include <stddef.h>
#include "err.h"

#define SK_NAME_MAX 253

/* 0 if name[0..len) is a well-formed name; SK_ERR_FORMAT saying why. */
int sk_name_check(const char *name, size_t len, sk_err_t *err) SK_WUR;

/* 1 if bound (with its Includes-Subdomains flag) covers query: equal, or
 * include_subdomains and query ends in "." + bound.  Case-insensitive on
 * query, 0 otherwise. */
int sk_name_covers(const char *bound, int include_subdomains,
    const char *query);

#endif
