/*
 * fuzz_addr.c -- the listen address parser (common/src/addr.c: "IPv4:PORT"
 * or "[IPv6]:PORT", every daemon's listen and metrics_listen).  What
 * parses must be an AF_INET or AF_INET6 address with a port of 1..65535
 * that, written back, parses to the same sockaddr; what does not must
 * say why.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>

#include <sk/addr.h>

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sockaddr_storage   ss, again;
    struct sockaddr_in       *in4 = (struct sockaddr_in *) &ss;
    struct sockaddr_in6      *in6 = (struct sockaddr_in6 *) &ss;
    sk_err_t                  err;
    char                     *buf, host[INET6_ADDRSTRLEN], back[96];

    if (memchr(data, 0, size) != NULL || (buf = malloc(size + 1)) == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = '\0';
    memset(&err, 0, sizeof(err));
    if (sk_addr_parse(&ss, buf, &err) == 0) {
        if (ss.ss_family == AF_INET && ntohs(in4->sin_port) != 0
            && inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host)) != NULL)
        {
            snprintf(back, sizeof(back), "%s:%u", host,
                (unsigned) ntohs(in4->sin_port));
        } else if (ss.ss_family == AF_INET6 && ntohs(in6->sin6_port) != 0
                   && inet_ntop(AF_INET6, &in6->sin6_addr, host,
                          sizeof(host)) != NULL)
        {
            snprintf(back, sizeof(back), "[%s]:%u", host,
                (unsigned) ntohs(in6->sin6_port));
        } else {
            abort();
        }
        if (sk_addr_parse(&again, back, &err) != 0
            || memcmp(&ss, &again, sizeof(ss)) != 0)
        {
            abort();
        }
    } else if (err.msg[0] == '\0') {
        abort();
    }
    free(buf);
    return 0;
}
