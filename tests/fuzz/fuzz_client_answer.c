/*
 * fuzz_client_answer.c -- the client's parsers of untrusted text: a
 * mirror's answer (sk_client_answer_verify, the mirror's signature
 * unchecked so the layout parser sees every input), renegation evidence
 * (sk_client_evidence_verify) and the cache's view text
 * (sk_client_view_parse).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static sk_client_trust_t  trust;


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_client_answer_info_t  info;
    sk_client_view_t         v;
    sk_err_t                 err;
    char                    *buf, *text;
    size_t                   len, i;

    if (trust.ntl == 0) {
        fuzz_trust_timelines(&trust);
    }
    if ((buf = fuzz_copy(data, size)) == NULL) {
        return 0;
    }
    if (sk_client_answer_verify(&v, &info, buf, size, "example.com", 0,
            NULL, &trust, 1800000000, &err) == 0)
    {
        if (v.ncps > info.ntl) {
            abort();
        }
        sk_client_view_free(&v);
    } else if (err.msg[0] == '\0' || v.items != NULL || v.cps != NULL) {
        abort();
    }
    /* Renegation evidence from a mirror: with keys no input was signed
     * by, nothing may prove a renegation, and every refusal says why. */
    if (sk_client_evidence_verify(&trust, 1, buf, size, &err) == 0
        || err.msg[0] == '\0')
    {
        abort();
    }
    if (sk_client_view_parse(&v, buf, size, &err) == 0) {
        /* What parses formats back to the same bytes. */
        if (sk_client_view_format(&text, &len, &v, &err) != 0
            || len != size || memcmp(text, buf, size) != 0)
        {
            abort();
        }
        free(text);
        for (i = 0; i < v.nitems; i++) {
            if (v.items[i].entry == NULL) {
                abort();
            }
        }
        (void) sk_client_view_verify(&v, &trust, 1800000000, &err);
        sk_client_view_free(&v);
    } else if (err.msg[0] == '\0') {
        abort();
    }
    free(buf);
    return 0;
}
