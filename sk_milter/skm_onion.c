/*
 * skm_onion.c -- the onion service for the mail ports.
 *
 * OnionDir is a Tor HiddenServiceDir.  Its key is OnionKey (an Ed25519
 * private key: the SK itself, so the address follows from the SK, or a
 * separate onion key), or, without OnionKey, the key already in the
 * directory, or else a new one made here (the SK stays offline; the
 * address is then an alternate route in the SK's Services field).
 * OnionTorrc gets HiddenServiceDir and one HiddenServicePort per
 * OnionPort ("25", "465:127.0.0.1:10465").  Existing keys are never
 * overwritten.
 */
#include <stdlib.h>
#include <syslog.h>

#include <sk/onion.h>

#include "skm.h"

#define SKM_ONION_PORTS_MAX 16


/* "VIRT[:TARGET]" into port (target borrowed from s). */
static int
skm_onion_port(sk_onion_port_t *port, const char *s, sk_err_t *err)
{
    char  *end;
    long   v;

    v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > 65535 || (*end != '\0' && *end != ':')) {
        return sk_err_set(err, SK_ERR_FORMAT, "OnionPort \"%.64s\": not "
            "VIRTPORT[:TARGET]", s);
    }
    port->virtport = (unsigned) v;
    port->target = *end == ':' ? end + 1 : NULL;
    return sk_onion_port_check(port, err);
}


int
skm_onion_setup(const skm_conf_t *conf)
{
    sk_onion_port_t   ports[SKM_ONION_PORTS_MAX];
    char              addr[SK_ONION_ADDR_LEN + 1];
    sk_err_t          err;
    size_t            i;
    int               created;

    if (conf->oniondir == NULL) {
        return 0;
    }
    if (conf->onionports.n > SKM_ONION_PORTS_MAX) {
        skm_log(LOG_ERR, "OnionPort: at most %d", SKM_ONION_PORTS_MAX);
        return -1;
    }
    for (i = 0; i < conf->onionports.n; i++) {
        if (skm_onion_port(&ports[i], conf->onionports.v[i], &err) != 0) {
            skm_log(LOG_ERR, "%s", err.msg);
            return -1;
        }
    }
    if (sk_onion_ensure(addr, &created, conf->oniondir, conf->onionkey,
            conf->onion_uid, conf->onion_gid, &err) != 0
        || (conf->oniontorrc != NULL
            && sk_onion_write_torrc(conf->oniontorrc, conf->oniondir, ports,
                   conf->onionports.n, &err) != 0))
    {
        skm_log(LOG_ERR, "OnionDir %s: %s", conf->oniondir, err.msg);
        return -1;
    }
    if (created) {
        skm_log(LOG_INFO, "OnionDir %s: wrote the onion service keys (%s)",
            conf->oniondir, conf->onionkey != NULL ? conf->onionkey
            : "a new onion key");
    }
    skm_log(LOG_INFO, "onion service %s; list it as an alternate route in "
        "the SK's Services (e.g. smtp;%s:25), with sk entry change-services",
        addr, addr);
    return 0;
}
