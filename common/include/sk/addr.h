/*
 * sk/addr.h -- numeric listen addresses of the daemons: "IPv4:PORT" or
 * "[IPv6]:PORT" (no names: nothing to resolve at start).
 */
#ifndef SK_ADDR_H
#define SK_ADDR_H

#include <sys/socket.h>
#include "err.h"

int sk_addr_parse(struct sockaddr_storage *ss, const char *s, sk_err_t *err)
    SK_WUR;

#endif
