/*
 * fuzz_mirror_tfm.c -- the Timeline Freshness Message parser the mirror
 * runs on every chunk's closing TFM (sk/tfm.h), and its signature check.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>
#include <sk/tfm.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sk_key_t  *key;
    sk_tfm_t          tfm;
    sk_err_t          err;
    size_t            used;
    char             *buf;

    if (key == NULL && sk_key_generate(&key, SK_KEY_ED25519, 0, NULL) != 0) {
        abort();
    }
    /* A copy without a NUL after it, so over-reads are caught. */
    buf = malloc(size + 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
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
