/*
 * fuzz_checkpoint.c -- the signed-note checkpoint and proof parsers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_key_t           *key = fuzz_key();
    sk_checkpoint_t     cp;
    sk_merkle_proof_t   proof;
    sk_err_t            err;
    char               *buf;

    if ((buf = fuzz_copy(data, size)) == NULL) {
        return 0;
    }
    if (sk_checkpoint_parse(&cp, buf, size, &err) == 0) {
        if (cp.origin[0] == '\0' || strlen(cp.ext) >= sizeof(cp.ext)) {
            abort();
        }
    } else if (err.msg[0] == '\0') {
        abort();
    }
    (void) sk_checkpoint_verify(&cp, buf, size, "sk-timeline-1", key, &err);
    if (sk_merkle_proof_parse(&proof, buf, size, &err) == 0
        && proof.len > SK_MERKLE_PROOF_MAX)
    {
        abort();
    }
    free(buf);
    return 0;
}
