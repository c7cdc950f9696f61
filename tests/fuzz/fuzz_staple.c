/*
 * fuzz_staple.c -- the stapled proof's parsers on untrusted bytes, in
 * both forms a server sends: the TLS extension's bytes (sk_staple_parse,
 * then a client's check of each answer) and the certificate that wraps
 * them (d2i_X509, sk_staple_unwrap).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static sk_client_trust_t  trust;


static void
fuzz_init(void)
{
    sk_key_t  *k;

    fuzz_trust_timelines(&trust);
    if (sk_key_generate(&k, SK_KEY_ED25519, 0, NULL) != 0
        || sk_client_trust_add_mirror(&trust, "http://m.test", k, NULL) != 0)
    {
        abort();
    }
    sk_key_free(k);
}


/* What parses formats back to the same bytes, and each answer gets a
 * verdict with a reason. */
static void
fuzz_parsed(const sk_staple_t *s, const uint8_t *data, size_t size)
{
    sk_client_view_t  v;
    unsigned char    *out;
    size_t            len, i;
    sk_err_t          err;

    if (s->n == 0 || s->n > SK_STAPLE_MAX_ANSWERS
        || sk_staple_format(&out, &len, s->a, s->n, &err) != 0
        || len != size || memcmp(out, data, size) != 0)
    {
        abort();
    }
    free(out);
    for (i = 0; i < s->n; i++) {
        if (sk_client_staple_view(&v, NULL, s, s->a[i].name, &trust,
                1800000000, &err) == 0)
        {
            sk_client_view_free(&v);
        } else if (err.msg[0] == '\0' || v.items != NULL) {
            abort();
        }
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const unsigned char  *p = data;
    unsigned char        *back;
    sk_staple_t           s;
    sk_err_t              err;
    size_t                blen;
    X509                 *x;

    if (trust.ntl == 0) {
        fuzz_init();
    }
    if (sk_staple_parse(&s, data, size, &err) == 0) {
        fuzz_parsed(&s, data, size);
        sk_staple_free(&s);
    } else if (err.msg[0] == '\0' || s.buf != NULL) {
        abort();
    }
    x = d2i_X509(NULL, &p, (long) size);
    if (x != NULL) {
        if (sk_staple_unwrap(&back, &blen, x, &err) == 0) {
            if (sk_staple_parse(&s, back, blen, &err) != 0) {
                abort();            /* unwrap hands out parsed bytes only */
            }
            sk_staple_free(&s);
            free(back);
        } else if (err.msg[0] == '\0' || back != NULL) {
            abort();
        }
        X509_free(x);
    }
    return 0;
}
