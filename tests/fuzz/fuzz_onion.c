/*
 * fuzz_onion.c -- the v3 onion address checker on arbitrary bytes.
 *
 * Whatever it accepts must be exactly the address of the public key it
 * encodes: decode the 32 key bytes back out and re-derive.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>


static int
base32_value(char c)
{
    if (c >= 'a' && c <= 'z') {
        return c - 'a';
    }
    if (c >= '2' && c <= '7') {
        return c - '2' + 26;
    }
    return -1;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char  raw[35], pub[32];
    char           again[SK_ONION_ADDR_LEN + 1];
    unsigned int   acc = 0, bits = 0;
    size_t         i, n = 0;
    sk_err_t       err;

    if (sk_onion_address_check((const char *) data, size, &err) != 0) {
        if (err.code != SK_ERR_FORMAT || err.msg[0] == '\0') {
            abort();
        }
        return 0;
    }
    if (size != SK_ONION_ADDR_LEN) {
        abort();
    }
    for (i = 0; i < 56; i++) {
        int v = base32_value((char) data[i]);

        if (v < 0) {
            abort();
        }
        acc = (acc << 5) | (unsigned) v;
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            raw[n++] = (unsigned char) (acc >> bits);
        }
    }
    memcpy(pub, raw, 32);
    sk_onion_address(again, pub);
    if (memcmp(again, data, SK_ONION_ADDR_LEN) != 0) {
        abort();
    }
    return 0;
}
