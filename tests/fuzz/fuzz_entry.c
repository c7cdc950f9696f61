/*
 * fuzz_entry.c -- the entry parser on arbitrary bytes.
 *
 * Whatever parses must format back to exactly the bytes it came from
 * (values are kept verbatim, so one entry has one text), and every
 * derived form (signed bytes, hash, copy) must be computable.  The input
 * is also read as a stream with sk_entry_parse_next.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static void
fuzz_entry_check(const sk_entry_t *e, const char *text, size_t len)
{
    static const sk_sig_field_t  sigs[] = {
        SK_SIG_TIMELINE, SK_SIG_SK, SK_SIG_REBINDER, SK_SIG_OPERATOR
    };
    unsigned char  h[SK_SHA256_BYTES];
    sk_entry_t    *d;
    char          *out;
    size_t         n, i;
    sk_err_t       err;

    if (sk_entry_format(&out, &n, e, &err) != 0 || n != len
        || memcmp(out, text, len) != 0)
    {
        abort();
    }
    free(out);
    for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        if (sk_entry_signed_bytes(&out, &n, e, sigs[i], &err) == 0) {
            free(out);
        } else if (err.code != SK_ERR_USAGE) {
            abort();
        }
    }
    if (sk_entry_hash(h, e, &err) != 0) {
        abort();
    }
    d = sk_entry_dup(e);
    if (d == NULL || sk_entry_format(&out, &n, d, &err) != 0 || n != len
        || memcmp(out, text, len) != 0)
    {
        abort();
    }
    free(out);
    sk_entry_free(d);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char  *buf = (const char *) data;
    sk_entry_t  *e;
    size_t       off, used;
    sk_err_t     err;

    if (sk_entry_parse(&e, buf, size, &err) == 0) {
        fuzz_entry_check(e, buf, size);
        sk_entry_free(e);
    } else if (e != NULL || err.code == SK_OK || err.msg[0] == '\0') {
        abort();
    }

    for (off = 0; off < size; off += used) {
        if (sk_entry_parse_next(&e, &used, buf + off, size - off, &err)
            != 0)
        {
            break;
        }
        if (used == 0 || used > size - off) {
            abort();
        }
        fuzz_entry_check(e, buf + off, used);
        sk_entry_free(e);
    }
    return 0;
}
