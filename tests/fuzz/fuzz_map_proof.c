/*
 * fuzz_map_proof.c -- the map proof parser (sk_map_proof_parse): what it
 * takes formats back to the very bytes it took, and its check runs on
 * whatever it took.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const sk_merkle_hash_t  root;
    sk_map_proof_t     p;
    sk_merkle_hash_t   value;
    sk_err_t           err;
    size_t             used, len;
    char              *buf, *text;
    int                present;

    if ((buf = fuzz_copy(data, size)) == NULL) {
        return 0;
    }
    if (sk_map_proof_parse(&p, &used, buf, size, &err) != 0) {
        if (err.msg[0] == '\0' || err.code != SK_ERR_FORMAT) {
            abort();
        }
        free(buf);
        return 0;
    }
    if (used > size || p.depth > SK_MAP_DEPTH_MAX
        || sk_map_proof_format(&text, &len, &p, &err) != 0)
    {
        abort();
    }
    /* One text per proof: the parser took only the canonical form. */
    if (len != used || memcmp(text, buf, len) != 0) {
        abort();
    }
    free(text);
    if (sk_map_proof_verify(&p, p.leaf_key, root, &present, value, &err)
        == 0 && (p.end != SK_MAP_END_EMPTY || p.depth != 0))
    {
        abort();        /* only the empty map's proof leads to zeros */
    }
    free(buf);
    return 0;
}
