/*
 * fuzz_socketmap.c -- sk-milter's socketmap wire format on arbitrary
 * bytes: netstring framing, the "NAME KEY" request and the next-hop key
 * (sk_milter/skm_netstring.c), as the policy server reads a stream.
 *
 * A parsed netstring must lie inside the input and format back to the
 * very bytes it came from; a parsed request must rebuild its data.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sk_milter/skm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char     *buf, *d, *why;
    size_t          len, dlen, used;
    char            name[64], key[SKM_SOCKMAP_MAX], again[SKM_SOCKMAP_MAX + 16];
    skm_nexthop_t   nh;
    int             rc, n;

    buf = (const char *) data;
    len = size;
    for (;;) {
        rc = skm_netstring_parse(buf, len, SKM_SOCKMAP_MAX, &d, &dlen,
            &used, &why);
        if (rc < 0) {
            if (why == NULL) {
                abort();
            }
            return 0;
        }
        if (rc == 0) {
            return 0;
        }
        if (used > len || d < buf || d + dlen > buf + used
            || dlen > SKM_SOCKMAP_MAX)
        {
            abort();
        }
        n = skm_netstring_format(again, sizeof(again), d, dlen);
        if (n < 0 || (size_t) n != used || memcmp(again, buf, used) != 0) {
            abort();
        }
        if (skm_sockmap_request(d, dlen, name, sizeof(name), key,
                sizeof(key), &why) == 0)
        {
            if (strlen(name) + 1 + strlen(key) != dlen
                || memcmp(d, name, strlen(name)) != 0
                || d[strlen(name)] != ' '
                || memcmp(d + strlen(name) + 1, key, strlen(key)) != 0)
            {
                abort();
            }
            if (skm_nexthop_parse(&nh, key) == 0
                && (nh.host[0] == '\0' || nh.port < 1 || nh.port > 65535
                    || strlen(nh.host) > SKM_DOMAIN_MAX))
            {
                abort();
            }
        } else if (why == NULL) {
            abort();
        }
        buf += used;
        len -= used;
    }
}
