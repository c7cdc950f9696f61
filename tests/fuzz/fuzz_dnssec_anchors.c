/*
 * fuzz_dnssec_anchors.c -- the trust anchors parser
 * (sk_dnssec_anchors_parse: root-anchors.xml or zone-file DS/DNSKEY
 * records) on arbitrary bytes.  A refusal is a format error with a
 * message and no anchors; what it accepts is freed whole.
 */
#include <stdint.h>
#include <stdlib.h>

#include <sk/dnssec.h>

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_dnssec_anchors_t  *a;
    sk_err_t              err;
    char                 *buf = fuzz_copy(data, size);

    if (buf == NULL) {
        return 0;
    }
    if (sk_dnssec_anchors_parse(&a, buf, size, "fuzz.xml", &err) != 0) {
        if (a != NULL || (err.code != SK_ERR_FORMAT
                          && err.code != SK_ERR_NOMEM) || err.msg[0] == '\0')
        {
            abort();
        }
    }
    sk_dnssec_anchors_free(a);
    free(buf);
    return 0;
}
