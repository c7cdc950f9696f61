/*
 * fuzz_dnssec.c -- the DNSSEC chain parser (sk_dnssec_chain_parse) on
 * arbitrary bytes.  A refusal is a format error with a message; what it
 * accepts must then be judged by sk_dnssec_chain_check without a crash
 * (against no anchor, so never accepted).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <sk/dnssec.h>

#include "fuzz.h"


/* An anchor no chain can reach: a DS of the root with a digest of
 * zeros, written once per process. */
static sk_dnssec_anchors_t *
fuzz_anchors(void)
{
    static sk_dnssec_anchors_t  *a;
    char                         path[] = "/tmp/fuzz-dnssec.XXXXXX";
    sk_err_t                     err;
    FILE                        *f;
    int                          fd;

    if (a != NULL) {
        return a;
    }
    fd = mkstemp(path);
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        abort();
    }
    fprintf(f, ". IN DS 1 15 2 %064d\n", 0);
    fclose(f);
    if (sk_dnssec_anchors_load(&a, path, &err) != 0) {
        abort();
    }
    unlink(path);
    return a;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_dnssec_chain_t  *c;
    sk_err_t            err;
    char               *buf = fuzz_copy(data, size);

    if (buf == NULL) {
        return 0;
    }
    if (sk_dnssec_chain_parse(&c, (const unsigned char *) buf, size, &err)
        != 0)
    {
        if (c != NULL || (err.code != SK_ERR_FORMAT
                          && err.code != SK_ERR_NOMEM) || err.msg[0] == '\0')
        {
            abort();
        }
        free(buf);
        return 0;
    }
    if (sk_dnssec_chain_check(c, "example.test", fuzz_key(), fuzz_anchors(),
                              1798761600, &err) == 0)
    {
        abort();
    }
    sk_dnssec_chain_free(c);
    free(buf);
    return 0;
}
