/*
 * fuzz.h -- what the libFuzzer targets share.  Header-only: each target
 * is one fuzz_*.c linked with libsk's fuzz objects (Makefile), so shared
 * code needs no object of its own.
 */
#ifndef SK_FUZZ_H
#define SK_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>
#include <sk/client.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* A heap copy of the input with nothing after it, not even a NUL, so
 * ASan catches a parser that reads past the end; NULL without memory. */
static inline char *
fuzz_copy(const uint8_t *data, size_t size)
{
    char  *buf;

    buf = malloc(size > 0 ? size : 1);
    if (buf != NULL) {
        memcpy(buf, data, size);
    }
    return buf;
}


/* A fresh Ed25519 key, made once per process (a key per input would
 * be most of the run).  It has signed nothing an input could carry. */
static inline sk_key_t *
fuzz_key(void)
{
    static sk_key_t  *key;

    if (key == NULL && sk_key_generate(&key, SK_KEY_ED25519, 0, NULL) != 0) {
        abort();
    }
    return key;
}


/* Trust in timelines 1..3, each under a fresh key: nothing an input
 * carries can verify, so every check runs to its refusal. */
static inline void
fuzz_trust_timelines(sk_client_trust_t *t)
{
    sk_key_t  *k;
    uint64_t   tid;

    sk_client_trust_init(t);
    for (tid = 1; tid <= 3; tid++) {
        if (sk_key_generate(&k, SK_KEY_ED25519, 0, NULL) != 0
            || sk_client_trust_add_timeline(t, tid, k, NULL, NULL) != 0)
        {
            abort();
        }
        sk_key_free(k);
    }
}

#endif
