/*
 * fuzz_client_trust.c -- the client's trust file parser on arbitrary
 * bytes.  Key paths resolve beside a trust file in a directory made once,
 * holding a.pub and b.pub (two Ed25519 public keys), so inputs can name
 * real keys, repeat them and swap them.
 *
 * What parses must list a timeline, no TID twice, no mirror URL twice,
 * every URL without a trailing '/', every mirror with its key and, with
 * an onion, a well-formed v3 address behind "http://".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"


static const char *
fuzz_trust_path(void)
{
    static char  path[64];
    char         dir[] = "/tmp/sk-fuzz-trust.XXXXXX", file[96];
    sk_key_t    *k;

    if (path[0] != '\0') {
        return path;
    }
    if (mkdtemp(dir) == NULL) {
        abort();
    }
    snprintf(file, sizeof(file), "%s/a.pub", dir);
    if (sk_key_save_public(fuzz_key(), file, NULL) != 0) {
        abort();
    }
    snprintf(file, sizeof(file), "%s/b.pub", dir);
    if (sk_key_generate(&k, SK_KEY_ED25519, 0, NULL) != 0
        || sk_key_save_public(k, file, NULL) != 0)
    {
        abort();
    }
    sk_key_free(k);
    snprintf(path, sizeof(path), "%s/trust.conf", dir);
    return path;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_client_trust_t  t;
    const char        *path = fuzz_trust_path();
    char              *buf;
    size_t             i, j, n;
    sk_err_t           err;

    buf = fuzz_copy(data, size);
    if (buf == NULL) {
        return 0;
    }
    sk_client_trust_init(&t);
    if (sk_client_trust_parse(&t, buf, size, path, &err) == 0) {
        if (t.ntl == 0) {
            abort();
        }
        for (i = 0; i < t.ntl; i++) {
            for (j = i + 1; j < t.ntl; j++) {
                if (t.tl[i].tid == t.tl[j].tid) {
                    abort();
                }
            }
        }
        for (i = 0; i < t.nmirrors; i++) {
            n = strlen(t.mirrors[i].url);
            if (n == 0 || t.mirrors[i].url[n - 1] == '/'
                || t.mirrors[i].key == NULL
                || (t.mirrors[i].onion[0] != '\0'
                    && (strncmp(t.mirrors[i].onion, "http://", 7) != 0
                        || sk_onion_address_check(t.mirrors[i].onion + 7,
                               SK_ONION_ADDR_LEN, NULL) != 0)))
            {
                abort();
            }
            for (j = i + 1; j < t.nmirrors; j++) {
                if (strcmp(t.mirrors[i].url, t.mirrors[j].url) == 0) {
                    abort();
                }
            }
        }
    } else if (strncmp(err.msg, path, strlen(path)) != 0) {
        abort();                /* every refusal names the file */
    }
    sk_client_trust_free(&t);
    free(buf);
    return 0;
}
