/*
 * mr_onion.c -- sk-mirror as an onion service (onion_dir), so that a
 * client whose direct path to the mirror is blocked (or who wants no
 * mirror to learn who asks) asks over Tor instead (docs/mirror.md).  The
 * HiddenServiceDir is libsk's, as nginx's sovereign_key_onion_dir and
 * sk-milter's OnionDir write it: made with a new onion key when it has
 * none, an existing key never overwritten; DIR.torrc has its
 * HiddenServiceDir and HiddenServicePort lines, for Tor to include.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <sk/addr.h>

#include "mr.h"


/* Where Tor reaches the mirror: the listen address, a wildcard one on
 * the loopback. */
static int
mr_onion_target(char *out, size_t size, const char *listen, sk_err_t *err)
{
    struct sockaddr_storage   ss;
    struct sockaddr_in       *a4 = (struct sockaddr_in *) &ss;
    struct sockaddr_in6      *a6 = (struct sockaddr_in6 *) &ss;
    char                      host[INET6_ADDRSTRLEN];

    if (sk_addr_parse(&ss, listen, err) != 0) {
        return sk_err_prefix(err, "listen");
    }
    if (ss.ss_family == AF_INET) {
        if (a4->sin_addr.s_addr == htonl(INADDR_ANY)) {
            a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        }
        inet_ntop(AF_INET, &a4->sin_addr, host, sizeof(host));
        snprintf(out, size, "%s:%u", host, ntohs(a4->sin_port));
    } else {
        if (IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr)) {
            a6->sin6_addr = in6addr_loopback;
        }
        inet_ntop(AF_INET6, &a6->sin6_addr, host, sizeof(host));
        snprintf(out, size, "[%s]:%u", host, ntohs(a6->sin6_port));
    }
    return 0;
}


int
mr_onion_setup(mr_mirror_t *m, sk_err_t *err)
{
    const char       *dir = m->conf.onion_dir;
    sk_onion_port_t   port;
    char              target[INET6_ADDRSTRLEN + 16], torrc[4096];
    char              as[SK_ONION_ADDR_LEN + 8];
    size_t            n;
    uid_t             uid;
    gid_t             gid;
    int               created;

    m->onion[0] = '\0';
    if (dir == NULL) {
        return 0;
    }
    n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') {
        n--;
    }
    snprintf(torrc, sizeof(torrc), "%.*s.torrc", (int) n, dir);
    if (sk_onion_owner(&uid, &gid, m->conf.onion_user, err) != 0) {
        return sk_err_prefix(err, "onion_user");
    }
    if (mr_onion_target(target, sizeof(target), m->conf.listen, err) != 0
        || sk_onion_ensure(m->onion, &created, dir, NULL, uid, gid, err)
           != 0)
    {
        return sk_err_prefix(err, "onion_dir %s", dir);
    }
    port.virtport = (unsigned) m->conf.onion_port;
    port.target = target;
    if (sk_onion_write_torrc(torrc, dir, &port, 1, err) != 0) {
        return sk_err_prefix(err, "onion_dir %s", dir);
    }
    snprintf(as, sizeof(as), port.virtport != 80 ? "%s:%u" : "%s",
        m->onion, port.virtport);
    mr_log("onion_dir %s: %sonion service %s (Tor includes %s); clients "
        "list it as: mirror = URL KEY onion=%s", dir, created ? "a new "
        : "", m->onion, torrc, as);
    return 0;
}
