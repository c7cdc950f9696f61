/*
 * fuzz_dnssec.c -- the DNSSEC chain parser (sk_dnssec_chain_parse) on
 * arbitrary bytes.  A refusal is a format error with a message; what it
 * accepts must then be judged by sk_dnssec_chain_check without a crash
 * (against no anchor, so never accepted).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <sk/dnssec.h>

#include "fuzz.h"


/* An anchor no chain can reach: a DS of the root with a digest of
 * zeros, made once per process. */
static sk_dnssec_anchors_t *
fuzz_anchors(void)
{
    static sk_dnssec_anchors_t  *a;
    char                         ds[128];
    sk_err_t                     err;

    if (a == NULL) {
        snprintf(ds, sizeof(ds), ". IN DS 1 15 2 %064d\n", 0);
        if (sk_dnssec_anchors_parse(&a, ds, strlen(ds), "fuzz.ds", &err)
            != 0)
        {
            abort();
        }
    }
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
