/*
 * fuzz_cache.c -- cache key validation on arbitrary bytes, through the
 * directory backend (never Redis: a fuzzed spec could name any host).
 *
 * Whatever key is given, a get must answer "not found" or "bad key" in an
 * empty cache directory: a key that reached another file (a traversal)
 * would read it, and fail this.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>

static sk_cache_t *cache;


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *val;
    char           key[SK_CACHE_KEY_MAX + 64], dir[] = "/tmp/sk-fuzz-cache.XXXXXX";
    size_t         len;
    sk_err_t       err;

    if (cache == NULL) {
        if (mkdtemp(dir) == NULL || sk_cache_open(&cache, dir, 0, &err) != 0) {
            abort();
        }
    }
    if (size >= sizeof(key)) {
        return 0;
    }
    memcpy(key, data, size);
    key[size] = '\0';
    if (sk_cache_get(cache, key, &val, &len, &err) == 0) {
        abort();        /* the directory is empty: nothing may be found */
    }
    if (err.code != SK_ERR_NOT_FOUND && err.code != SK_ERR_FORMAT
        && err.code != SK_ERR_USAGE)
    {
        fprintf(stderr, "unexpected %s: %s\n", sk_err_str(err.code), err.msg);
        abort();
    }
    return 0;
}
