/*
 * name.c -- checking bound names and matching queries against them.
 *
 * ASCII only and locale-free: a name's bytes must mean the same thing in
 * every client, so no tolower() and no IDNA mapping here.
 */
#include <string.h>

#include <sk/name.h>

#define SK_NAME_LABEL_MAX 63


/* Label idx (from 1) of a name, starting at character off (from 0). */
static int
sk_name_check_label(const char *label, size_t len, size_t idx, size_t off,
    sk_err_t *err)
{
    unsigned char  c;
    size_t         i;

    if (len == 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "name: label %zu is empty (character %zu)", idx, off + 1);
    }
    for (i = 0; i < len; i++) {
        c = (unsigned char) label[i];
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') {
            continue;
        }
        if (c >= 'A' && c <= 'Z') {
            return sk_err_set(err, SK_ERR_FORMAT, "name: label %zu, "
                "character %zu ('%c'): uppercase (names are lowercase)",
                idx, off + i + 1, c);
        }
        if (c == '*') {
            return sk_err_set(err, SK_ERR_FORMAT, "name: label %zu, "
                "character %zu: '*' is not part of a name (the wildcard "
                "is the Includes-Subdomains flag)", idx, off + i + 1);
        }
        if (c >= 0x80) {
            return sk_err_set(err, SK_ERR_FORMAT, "name: label %zu, "
                "character %zu (0x%02x): not ASCII (write the xn-- "
                "A-label)", idx, off + i + 1, c);
        }
        return sk_err_set(err, SK_ERR_FORMAT, "name: label %zu, "
            "character %zu (0x%02x): not a letter, digit or '-'",
            idx, off + i + 1, c);
    }
    if (len > SK_NAME_LABEL_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "name: label %zu is %zu "
            "octets, more than %d", idx, len, SK_NAME_LABEL_MAX);
    }
    /* Only LDH characters and at most 63 of them: safe to quote. */
    if (label[0] == '-' || label[len - 1] == '-') {
        return sk_err_set(err, SK_ERR_FORMAT,
            "name: label %zu \"%.*s\" %s with '-'", idx, (int) len, label,
            label[0] == '-' ? "starts" : "ends");
    }
    return 0;
}


int
sk_name_check(const char *name, size_t len, sk_err_t *err)
{
    const char  *dot;
    size_t       off, n, idx;

    if (len == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "name: empty");
    }
    if (len > SK_NAME_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "name: %zu octets, more than %d", len, SK_NAME_MAX);
    }
    if (name[len - 1] == '.') {
        return sk_err_set(err, SK_ERR_FORMAT,
            "name: trailing dot (write the name without it)");
    }
    for (off = 0, idx = 1; ; idx++) {
        dot = memchr(name + off, '.', len - off);
        n = (dot == NULL ? len : (size_t) (dot - name)) - off;
        if (sk_name_check_label(name + off, n, idx, off, err) != 0) {
            return -1;
        }
        if (dot == NULL) {
            break;
        }
        off += n + 1;
    }
    if (idx < 2) {
        return sk_err_set(err, SK_ERR_FORMAT, "name: single label \"%.*s\" "
            "(at least two are required)", (int) len, name);
    }
    return 0;
}


static unsigned char
sk_name_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char) (c - 'A' + 'a') : c;
}


static int
sk_name_equal_nocase(const char *a, const char *b, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (sk_name_lower((unsigned char) a[i])
            != sk_name_lower((unsigned char) b[i]))
        {
            return 0;
        }
    }
    return 1;
}


int
sk_name_covers(const char *bound, int include_subdomains, const char *query)
{
    size_t  blen, qlen;

    if (bound == NULL || query == NULL) {
        return 0;
    }
    blen = strlen(bound);
    qlen = strlen(query);
    if (blen == 0) {
        return 0;
    }
    if (qlen == blen) {
        return sk_name_equal_nocase(query, bound, blen);
    }
    /* At least one character and the dot before the bound name, so that
     * "exampleexample.com" is not under "example.com". */
    if (!include_subdomains || qlen < blen + 2
        || query[qlen - blen - 1] != '.')
    {
        return 0;
    }
    return sk_name_equal_nocase(query + qlen - blen, bound, blen);
}
