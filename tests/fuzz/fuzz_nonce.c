/*
 * fuzz_nonce.c -- the nonce trailer a client reads at the end of a
 * mirror's answer (sk_nonce_verify), and the nonce a mirror reads in a
 * query (sk_nonce_parse).  The trailer is checked for the seed's nonce,
 * without a key (so that the parser sees every input through to the
 * proof) and with one no input was signed by (so that nothing verifies).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define FUZZ_NONCE  "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char  raw[SK_NONCE_BYTES];
    sk_err_t       err;
    size_t         alen;
    char          *buf;

    if ((buf = fuzz_copy(data, size)) == NULL) {
        return 0;
    }
    if (sk_nonce_verify(&alen, buf, size, FUZZ_NONCE, NULL, &err) == 0) {
        /* What is left for the answer's parser ends before the trailer,
         * which starts with the nonce asked with. */
        if (alen == 0 || alen >= size || buf[alen - 1] != '\n'
            || memcmp(buf + alen, "Nonce: " FUZZ_NONCE "\n", 51) != 0)
        {
            abort();
        }
    } else if (err.msg[0] == '\0' || alen != 0) {
        abort();
    }
    if (sk_nonce_verify(&alen, buf, size, FUZZ_NONCE, fuzz_key(), &err) == 0
        || err.msg[0] == '\0')
    {
        abort();
    }
    if (sk_nonce_parse(raw, buf, size, &err) != 0 && err.msg[0] == '\0') {
        abort();
    }
    free(buf);
    return 0;
}
