/*
 * addr.c -- "IPv4:PORT" / "[IPv6]:PORT" to a sockaddr.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sk/addr.h"


static int
sk_addr_port(unsigned *port, const char *s)
{
    char           *end;
    unsigned long   v;

    if (*s < '0' || *s > '9') {
        return -1;
    }
    v = strtoul(s, &end, 10);
    if (*end != '\0' || v == 0 || v > 65535) {
        return -1;
    }
    *port = (unsigned) v;
    return 0;
}


int
sk_addr_parse(struct sockaddr_storage *ss, const char *s, sk_err_t *err)
{
    struct sockaddr_in   *in4 = (struct sockaddr_in *) ss;
    struct sockaddr_in6  *in6 = (struct sockaddr_in6 *) ss;
    const char           *colon = strrchr(s, ':');
    char                  host[64];
    unsigned              port;
    size_t                hl;

    memset(ss, 0, sizeof(*ss));
    if (colon == NULL || sk_addr_port(&port, colon + 1) != 0
        || (size_t) (colon - s) >= sizeof(host))
    {
        return sk_err_set(err, SK_ERR_FORMAT,
            "listen \"%s\": want ADDRESS:PORT", s);
    }
    hl = (size_t) (colon - s);
    memcpy(host, s, hl);
    host[hl] = '\0';
    if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
        host[hl - 1] = '\0';
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t) port);
        if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) == 1) {
            return 0;
        }
    } else {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t) port);
        if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
            return 0;
        }
    }
    return sk_err_set(err, SK_ERR_FORMAT,
        "listen \"%s\": not a numeric address", s);
}
