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

#include <sk/sk.h>
#include <sk/client.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sk_client_trust_t  trust;


static void
fuzz_init(void)
{
    sk_key_t  *k;
    uint64_t   tid;

    sk_client_trust_init(&trust);
    for (tid = 1; tid <= 3; tid++) {
        if (sk_key_generate(&k, SK_KEY_ED25519, 0, NULL) != 0
            || sk_client_trust_add_timeline(&trust, tid, k, NULL, NULL) != 0)
        {
            abort();
        }
        sk_key_free(k);
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_client_answer_info_t  info;
    sk_client_view_t         v;
    sk_err_t                 err;
    char                    *buf, *text;
    size_t                   len, i;

    if (trust.ntl == 0) {
        fuzz_init();
    }
    /* A copy without a NUL after it, so over-reads are caught. */
    buf = malloc(size > 0 ? size : 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
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
