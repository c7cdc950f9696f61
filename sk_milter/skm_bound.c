/*
 * skm_bound.c -- a bound on the whole of a network lookup: a deadline
 * and, for the policy socket, the client it answers.  A next hop that
 * drips its greeting a byte at a time under any per-read timeout still
 * meets the deadline; a client that hangs up ends its lookup at once, so
 * its connection slot is freed.  Every wait on the network goes through
 * skm_bound_wait, and the resolver's timeouts are cut to what is left.
 */
#define _GNU_SOURCE             /* POLLRDHUP */
#include <errno.h>
#include <poll.h>
#include <resolv.h>
#include <stdio.h>
#include <time.h>

#include "skm.h"


void
skm_bound_init(skm_bound_t *b, long secs, int client)
{
    clock_gettime(CLOCK_MONOTONIC, &b->deadline);
    b->deadline.tv_sec += secs;
    b->secs = secs;
    b->client = client;
    b->over = SKM_BOUND_OK;
}


/* Milliseconds left before the deadline, 0 once it passed. */
static int
skm_bound_ms(const skm_bound_t *b)
{
    struct timespec  now;
    long long        ms;

    clock_gettime(CLOCK_MONOTONIC, &now);
    ms = (long long) (b->deadline.tv_sec - now.tv_sec) * 1000
         + (b->deadline.tv_nsec - now.tv_nsec) / 1000000;
    return ms <= 0 ? 0 : ms > 3600000 ? 3600000 : (int) ms;
}


/* 1 (and b->over set) if the time is up or the client hung up. */
int
skm_bound_over(skm_bound_t *b)
{
    struct pollfd  p;

    if (b->over == SKM_BOUND_OK && skm_bound_ms(b) == 0) {
        b->over = SKM_BOUND_TIMEOUT;
    }
    if (b->over == SKM_BOUND_OK && b->client >= 0) {
        p.fd = b->client;
        p.events = POLLRDHUP;
        if (poll(&p, 1, 0) > 0) {
            b->over = SKM_BOUND_GONE;
        }
    }
    return b->over != SKM_BOUND_OK;
}


int
skm_bound_wait(skm_bound_t *b, int fd, short events)
{
    struct pollfd  p[2];
    int            ms, n;

    for (;;) {
        if (skm_bound_over(b)) {
            return -1;
        }
        ms = skm_bound_ms(b);
        p[0].fd = fd;
        p[0].events = events;
        p[0].revents = 0;
        p[1].fd = b->client;        /* ignored by poll when -1 */
        p[1].events = POLLRDHUP;
        p[1].revents = 0;
        n = poll(p, 2, ms);
        if (n < 0 && errno != EINTR) {
            return -1;
        }
        if (p[1].revents != 0) {
            b->over = SKM_BOUND_GONE;
            return -1;
        }
        if (p[0].revents != 0) {
            return 0;
        }
    }
}


void
skm_bound_resolver(skm_bound_t *b)
{
    int  secs, ns;

    if ((_res.options & RES_INIT) == 0) {
        (void) res_init();
    }
    /* each server is asked for retrans seconds on the first try */
    ns = _res.nscount > 0 ? _res.nscount : 1;
    secs = skm_bound_ms(b) / 1000 / ns;
    _res.retrans = secs > 0 ? secs : 1;
    _res.retry = 1;
}


const char *
skm_bound_why(const skm_bound_t *b, char *buf, size_t len)
{
    if (b->over == SKM_BOUND_GONE) {
        snprintf(buf, len, "the policy client hung up");
    } else {
        snprintf(buf, len, "no answer within PolicyTimeout (%ld s)",
            b->secs);
    }
    return buf;
}
