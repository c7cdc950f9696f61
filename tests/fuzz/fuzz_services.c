/*
 * fuzz_services.c -- the Services parser, plus the name and base64url
 * checkers, on arbitrary bytes.
 *
 * Each text has one spelling, so whatever parses must format back to the
 * very same bytes, and parse again to an equal set.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>


static void
fuzz_mx(const char *p)
{
    char  host[SK_NAME_MAX + 8];

    if (p[0] != '*') {
        if (!sk_services_mx_match(p, p)) {
            abort();
        }
        return;
    }
    snprintf(host, sizeof(host), "a%s", p + 1);
    if (!sk_services_mx_match(p, host) || sk_services_mx_match(p, p + 2)
        || sk_services_mx_match(p, p))
    {
        abort();
    }
}


static void
fuzz_services(const char *s, size_t len)
{
    sk_services_t  a, b;
    char          *out;
    size_t         i, j;
    sk_err_t       err;

    if (sk_services_parse(&a, s, len, &err) != 0) {
        if (a.v != NULL || a.n != 0 || err.code != SK_ERR_FORMAT) {
            abort();
        }
        return;
    }
    if (sk_services_format(&out, &a, &err) != 0) {
        abort();
    }
    if (strlen(out) != len || memcmp(out, s, len) != 0) {
        abort();
    }
    if (sk_services_parse(&b, out, strlen(out), &err) != 0
        || !sk_services_equal(&a, &b))
    {
        abort();
    }
    /* Lookups must agree with each other on every element's own key. */
    for (i = 0; i < a.n; i++) {
        if (!sk_services_covers(&a, a.v[i].name, a.v[i].port)
            || sk_services_find(&a, a.v[i].name, a.v[i].port) == NULL)
        {
            abort();
        }
    }
    /* An "mx=" pattern matches what it spells: itself, or for "*.NAME"
     * one label under NAME and never NAME itself. */
    for (i = 0; i < a.n; i++) {
        for (j = 0; j < a.v[i].nmx; j++) {
            fuzz_mx(a.v[i].mx[j]);
        }
    }
    (void) sk_services_covers(&a, "https", 0);
    free(out);
    sk_services_free(&a);
    sk_services_free(&b);
}


static void
fuzz_name(const char *s, size_t len)
{
    char  *z;

    if (sk_name_check(s, len, NULL) != 0 || memchr(s, '\0', len) != NULL) {
        return;
    }
    z = malloc(len + 5);
    if (z == NULL) {
        return;
    }
    memcpy(z, "www.", 4);
    memcpy(z + 4, s, len);
    z[len + 4] = '\0';
    /* A valid name covers itself, and its subdomains only with the flag. */
    if (!sk_name_covers(z + 4, 0, z + 4) || sk_name_covers(z + 4, 0, z)
        || !sk_name_covers(z + 4, 1, z) || sk_name_covers(z, 1, z + 4))
    {
        abort();
    }
    free(z);
}


static void
fuzz_b64(const char *s, size_t len)
{
    unsigned char *bin;
    size_t         n;
    char          *back;

    if (sk_b64_decode(&bin, &n, s, len, NULL) != 0) {
        return;
    }
    back = sk_b64_encode_alloc(bin, n);
    if (back == NULL || strlen(back) != len || memcmp(back, s, len) != 0) {
        abort();
    }
    free(back);
    free(bin);
}


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char  *s = (const char *) data;

    fuzz_services(s, size);
    fuzz_name(s, size);
    fuzz_b64(s, size);
    return 0;
}
