/*
 * fuzz_httpd_client.c -- the client an HTTP request is counted against
 * (common/src/httpd_client.c): a numeric address from a trusted proxy's
 * "X-Real-IP".  What parses is an IPv4 address or an IPv6 address, the
 * same key every time, the key of an IPv6 address its first 64 bits (any
 * address of its /64 gives it); what does not parse is refused, never
 * half read.
 */
#include <arpa/inet.h>

#include "../../common/src/internal.h"
#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct in6_addr  a6;
    uint64_t         key, again;
    char            *buf, text[INET6_ADDRSTRLEN];

    if (memchr(data, 0, size) != NULL || (buf = malloc(size + 1)) == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = '\0';
    if (sk_httpd_client_parse(&key, buf) == 0) {
        if (sk_httpd_client_parse(&again, buf) != 0 || again != key) {
            abort();
        }
        /* Another address of the same /64 is the same client. */
        if (inet_pton(AF_INET6, buf, &a6) == 1
            && !IN6_IS_ADDR_V4MAPPED(&a6))
        {
            memset(a6.s6_addr + 8, 0x5a, 8);
            if (inet_ntop(AF_INET6, &a6, text, sizeof(text)) == NULL
                || sk_httpd_client_parse(&again, text) != 0 || again != key)
            {
                abort();
            }
        }
    }
    free(buf);
    return 0;
}
