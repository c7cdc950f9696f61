/*
 * fuzz_mirror_tfm.c -- the Timeline Freshness Message parser the mirror
 * runs on every chunk's closing TFM (sk/tfm.h), and its signature check.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sk/tfm.h>

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_key_t         *key = fuzz_key();
    sk_tfm_t          tfm;
    sk_err_t          err;
    size_t            used;
    char             *buf;

    if ((buf = fuzz_copy(data, size)) == NULL) {
        return 0;
    }
    if (sk_tfm_parse(&tfm, &used, buf, size, &err) == 0) {
        if (used > size || used > SK_TFM_MAX
            || tfm.sig_off + tfm.sig_len > used
            || (!tfm.has_published && tfm.max_published_sn != 0))
        {
            abort();
        }
    } else if (err.msg[0] == '\0') {
        abort();
    }
    if (sk_tfm_verify(&tfm, NULL, buf, size, key, &err) == 0) {
        abort();            /* nobody can sign with this fresh key */
    }
    free(buf);
    return 0;
}
