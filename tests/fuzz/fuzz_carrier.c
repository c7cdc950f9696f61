/*
 * fuzz_carrier.c -- the carrier parser on arbitrary DER, and the PEM chain
 * parser plus carrier lookup on the same bytes as text.
 *
 * Whatever parses as a carrier must give back its own bytes, parse again
 * from them, and go through verification without crashing (it fails: the
 * fuzzer cannot forge the SK's signature).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz.h"


static void
fuzz_check_carrier(const sk_carrier_t *c)
{
    const unsigned char *der, *spki;
    sk_carrier_t        *again;
    size_t               len, slen;
    char                *pem;

    if (sk_carrier_verify(c, fuzz_key(), (const unsigned char *) "", 0, 0,
            NULL) == 0)
    {
        abort();
    }
    spki = sk_carrier_subject_spki(c, &slen);
    (void) sk_carrier_verify(c, fuzz_key(), spki, slen, time(NULL), NULL);
    if (strlen(sk_carrier_name(c)) == 0
        || sk_carrier_not_after(c) < sk_carrier_not_before(c))
    {
        abort();
    }
    der = sk_carrier_get0_der(c, &len);
    if (sk_carrier_from_der(&again, der, len, NULL) != 0) {
        abort();
    }
    sk_carrier_free(again);
    if (sk_carrier_to_pem(&pem, &len, c, NULL) != 0) {
        abort();
    }
    free(pem);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    STACK_OF(X509) *chain;
    sk_carrier_t   *c;
    sk_err_t        err;

    if (sk_carrier_from_der(&c, data, size, &err) == 0) {
        fuzz_check_carrier(c);
        sk_carrier_free(c);
    } else if (err.code != SK_ERR_FORMAT && err.code != SK_ERR_NO_EXTENSION)
    {
        abort();
    }

    if (sk_chain_parse_pem(&chain, (const char *) data, size, &err) == 0) {
        if (sk_carrier_find(&c, chain, NULL) == 0) {
            fuzz_check_carrier(c);
            sk_carrier_free(c);
        }
        (void) sk_carrier_verify_chain(chain, fuzz_key(), time(NULL), NULL);
        sk_X509_pop_free(chain, X509_free);
    } else if (err.code != SK_ERR_FORMAT) {
        abort();
    }
    return 0;
}
