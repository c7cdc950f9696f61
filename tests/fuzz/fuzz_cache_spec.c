/*
 * fuzz_cache_spec.c -- the cache address parser (every backend's spec:
 * redis://, redis-cluster://, unix:, /DIR) on arbitrary bytes, through
 * sk_cache_check, which parses as sk_cache_open does and connects to
 * nothing (a fuzzed spec could name any host).  nginx runs the same check
 * on its sovereign_key_cache directives.
 *
 * A spec is accepted or refused as a bad address with a message; anything
 * else (another error code, an empty message) aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char      spec[1200];
    sk_err_t  err;

    if (size >= sizeof(spec)) {
        return 0;
    }
    memcpy(spec, data, size);
    spec[size] = '\0';
    if (sk_cache_check(spec, &err) == 0) {
        return 0;
    }
    if (err.code != SK_ERR_FORMAT || err.msg[0] == '\0') {
        fprintf(stderr, "unexpected %s: \"%s\"\n", sk_err_str(err.code),
            err.msg);
        abort();
    }
    return 0;
}
