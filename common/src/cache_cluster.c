/*
 * cache_cluster.c -- Redis Cluster for the key-material cache
 * (redis-cluster://HOST:PORT[,HOST:PORT...]), on plain hiredis: Debian 12
 * packages no hiredis-cluster.  The seeds give the slot map (CLUSTER
 * SLOTS); each key goes to the master of its slot (CRC16 of the key or of
 * its {hash tag}, modulo 16384).  A MOVED reply re-reads the map and
 * follows it; an ASK reply (a slot being migrated) sends that one command
 * to the node named, after ASKING.  A node that fails its connection
 * drops it and re-reads the map, once per command.  All of one command,
 * redirections and map included, runs by one deadline (cache_io.c).
 * The node table is bounded: when it is full, a learnt node that no slot
 * names any more is forgotten for the new one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "internal.h"

#define SK_CL_SLOTS      16384
#define SK_CL_NODES_MAX  64
#define SK_CL_HOST_MAX   256
#define SK_CL_REDIRECTS  5

typedef struct {
    char           host[SK_CL_HOST_MAX];
    int            port;
    redisContext  *ctx;
} sk_cl_node_t;

struct sk_cache_cluster_s {
    const char     *spec;               /* the cache's, for messages */
    sk_cl_node_t    node[SK_CL_NODES_MAX];  /* seeds first, then learnt */
    size_t          nnodes, nseeds;
    int16_t         slot[SK_CL_SLOTS];  /* node index; -1: not known */
    int             have_map;
};


/* CRC16-CCITT (XMODEM), as Redis Cluster's key slots use it. */
static uint16_t
sk_cl_crc16(const char *p, size_t len)
{
    uint16_t  crc = 0;
    size_t    i;
    int       b;

    for (i = 0; i < len; i++) {
        crc ^= (uint16_t) ((unsigned char) p[i] << 8);
        for (b = 0; b < 8; b++) {
            crc = (crc & 0x8000) ? (uint16_t) ((crc << 1) ^ 0x1021)
                                 : (uint16_t) (crc << 1);
        }
    }
    return crc;
}


unsigned
sk_cache_cluster_slot(const char *key, size_t len)
{
    const char  *open = memchr(key, '{', len), *close;

    if (open != NULL) {
        close = memchr(open + 1, '}', len - (size_t) (open + 1 - key));
        if (close != NULL && close > open + 1) {
            return sk_cl_crc16(open + 1, (size_t) (close - open - 1))
                % SK_CL_SLOTS;
        }
    }
    return sk_cl_crc16(key, len) % SK_CL_SLOTS;
}


static void
sk_cl_drop(sk_cl_node_t *n)
{
    redisFree(n->ctx);
    n->ctx = NULL;
}


/* A learnt node (not a seed, not keep) that no slot names, or -1. */
static int
sk_cl_unused(sk_cache_cluster_t *cl, int keep)
{
    unsigned char  used[SK_CL_NODES_MAX] = { 0 };
    size_t         i;

    for (i = 0; i < SK_CL_SLOTS; i++) {
        if (cl->slot[i] >= 0) {
            used[cl->slot[i]] = 1;
        }
    }
    for (i = cl->nseeds; i < cl->nnodes; i++) {
        if (!used[i] && (int) i != keep) {
            return (int) i;
        }
    }
    return -1;
}


/* The node host:port, added if new (in place of an unused learnt one if
 * the table is full, never keep, the node in use); -1 if none is free. */
static int
sk_cl_node(sk_cache_cluster_t *cl, const char *host, size_t hlen, int port,
    int keep)
{
    size_t  i;
    int     k;

    if (hlen == 0 || hlen >= SK_CL_HOST_MAX || port <= 0 || port > 65535) {
        return -1;
    }
    for (i = 0; i < cl->nnodes; i++) {
        if (cl->node[i].port == port && strlen(cl->node[i].host) == hlen
            && memcmp(cl->node[i].host, host, hlen) == 0)
        {
            return (int) i;
        }
    }
    if (cl->nnodes < SK_CL_NODES_MAX) {
        k = (int) cl->nnodes++;
    } else if ((k = sk_cl_unused(cl, keep)) >= 0) {
        sk_cl_drop(&cl->node[k]);
    } else {
        return -1;
    }
    memcpy(cl->node[k].host, host, hlen);
    cl->node[k].host[hlen] = '\0';
    cl->node[k].port = port;
    cl->node[k].ctx = NULL;
    return k;
}


static int
sk_cl_connect(sk_cache_cluster_t *cl, sk_cl_node_t *n,
    const sk_cache_deadline_t *d, sk_err_t *err)
{
    if (n->ctx != NULL) {
        return 0;
    }
    n->ctx = sk_cache_io_connect(n->host, n->port, NULL, d, err);
    return n->ctx != NULL ? 0 : sk_err_prefix(err, "%s: node %s:%d",
        cl->spec, n->host, n->port);
}


/* cmd [key [val]] on node n, by d; NULL: the connection is dropped, err
 * says why. */
static redisReply *
sk_cl_command(sk_cache_cluster_t *cl, sk_cl_node_t *n,
    const sk_cache_deadline_t *d, const char *cmd, const char *key,
    const unsigned char *val, size_t len, sk_err_t *err)
{
    redisReply  *r;

    if (sk_cl_connect(cl, n, d, err) != 0) {
        return NULL;
    }
    if (key == NULL) {
        /* hiredis splits the format at spaces: "CLUSTER SLOTS" */
        r = sk_cache_io_command(n->ctx, d, cmd, err, cmd);
    } else if (val != NULL) {
        r = sk_cache_io_command(n->ctx, d, cmd, err, "%s %b %b", cmd, key,
            strlen(key), val, len);
    } else {
        r = sk_cache_io_command(n->ctx, d, cmd, err, "%s %b", cmd, key,
            strlen(key));
    }
    if (r == NULL) {
        sk_cl_drop(n);
        sk_err_prefix(err, "%s: node %s:%d", cl->spec, n->host, n->port);
    }
    return r;
}


/* CLUSTER SLOTS from node i into the map. */
static int
sk_cl_slots_from(sk_cache_cluster_t *cl, size_t i,
    const sk_cache_deadline_t *d, sk_err_t *err)
{
    sk_cl_node_t  *n = &cl->node[i];
    redisReply    *r, *e, *m;
    const char    *host;
    size_t         j, hlen;
    long long      a, b, s;
    int            k;

    r = sk_cl_command(cl, n, d, "CLUSTER SLOTS", NULL, NULL, 0, err);
    if (r == NULL) {
        return -1;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: node %s:%d: CLUSTER SLOTS: "
            "%.*s", cl->spec, n->host, n->port, r->type == REDIS_REPLY_ERROR
            ? (int) r->len : 14, r->type == REDIS_REPLY_ERROR ? r->str
            : "not an array");
        freeReplyObject(r);
        return -1;
    }
    for (s = 0; s < SK_CL_SLOTS; s++) {
        cl->slot[s] = -1;
    }
    for (j = 0; j < r->elements; j++) {
        e = r->element[j];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3
            || e->element[0]->type != REDIS_REPLY_INTEGER
            || e->element[1]->type != REDIS_REPLY_INTEGER
            || (m = e->element[2])->type != REDIS_REPLY_ARRAY
            || m->elements < 2 || m->element[0]->type != REDIS_REPLY_STRING
            || m->element[1]->type != REDIS_REPLY_INTEGER)
        {
            freeReplyObject(r);
            return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: node %s:%d: "
                "CLUSTER SLOTS: entry %zu malformed", cl->spec, n->host,
                n->port, j);
        }
        a = e->element[0]->integer;
        b = e->element[1]->integer;
        /* An empty host: the node that answered. */
        host = m->element[0]->len > 0 ? m->element[0]->str : n->host;
        hlen = m->element[0]->len > 0 ? m->element[0]->len : strlen(n->host);
        k = sk_cl_node(cl, host, hlen, (int) m->element[1]->integer,
            (int) i);
        if (a < 0 || b >= SK_CL_SLOTS || a > b || k < 0) {
            freeReplyObject(r);
            return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: node %s:%d: "
                "CLUSTER SLOTS: entry %zu: bad range or node", cl->spec,
                n->host, n->port, j);
        }
        for (s = a; s <= b; s++) {
            cl->slot[s] = (int16_t) k;
        }
    }
    freeReplyObject(r);
    cl->have_map = 1;
    return 0;
}


/* The slot map from the first node that gives one: the known masters
 * first (a seed may be gone), then the seeds. */
static int
sk_cl_refresh(sk_cache_cluster_t *cl, const sk_cache_deadline_t *d,
    sk_err_t *err)
{
    size_t  i;

    for (i = cl->nnodes; i > 0; i--) {
        if (sk_cl_slots_from(cl, i - 1, d, err) == 0) {
            return 0;
        }
        if (err->code == SK_ERR_NOMEM) {
            return -1;
        }
    }
    cl->have_map = 0;
    return sk_err_prefix(err, "no node gives the slot map, last");
}


/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": the node named. */
int
sk_cache_cluster_redirect(sk_cache_cluster_t *cl, const char *p, size_t len,
    int *ask, int keep)
{
    const char  *colon, *sp;
    size_t       word;
    char        *end;
    long         port;

    if (len > 6 && memcmp(p, "MOVED ", 6) == 0) {
        *ask = 0;
        word = 6;
    } else if (len > 4 && memcmp(p, "ASK ", 4) == 0) {
        *ask = 1;
        word = 4;
    } else {
        return -1;
    }
    /* The space after the slot number, not the word's own. */
    sp = memchr(p + word, ' ', len - word);
    if (sp == NULL) {
        return -1;
    }
    for (colon = p + len; colon > sp && colon[-1] != ':'; colon--) {
    }
    if (colon == sp) {
        return -1;
    }
    colon--;                    /* at the ':' (IPv6 hosts have more) */
    port = strtol(colon + 1, &end, 10);
    if (end != p + len) {
        return -1;
    }
    return sk_cl_node(cl, sp + 1, (size_t) (colon - sp - 1), (int) port,
        keep);
}


redisReply *
sk_cache_cluster_command(sk_cache_cluster_t *cl, const sk_cache_deadline_t *d,
    const char *cmd, const char *key, const unsigned char *val, size_t len,
    sk_err_t *err)
{
    unsigned      slot = sk_cache_cluster_slot(key, strlen(key));
    redisReply   *r, *a;
    sk_cl_node_t *n;
    int           i, k, ask = 0, refreshed = 0, redirects = 0;

    if (!cl->have_map && sk_cl_refresh(cl, d, err) != 0) {
        return NULL;
    }
    k = cl->slot[slot];
    for (;;) {
        if (k < 0) {
            sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: no node serves slot %u "
                "(key %.80s)", cl->spec, slot, key);
            return NULL;
        }
        n = &cl->node[k];
        if (ask) {
            a = sk_cl_command(cl, n, d, "ASKING", NULL, NULL, 0, err);
            if (a == NULL) {
                return NULL;
            }
            freeReplyObject(a);
        }
        r = sk_cl_command(cl, n, d, cmd, key, val, len, err);
        if (r == NULL) {
            /* A node gone (failover): the map once more, then give up. */
            if (refreshed++ > 0 || err->code != SK_ERR_UNAVAILABLE
                || sk_cl_refresh(cl, d, err) != 0)
            {
                return NULL;
            }
            k = cl->slot[slot];
            ask = 0;
            continue;
        }
        if (r->type != REDIS_REPLY_ERROR
            || (i = sk_cache_cluster_redirect(cl, r->str, r->len, &ask, k))
               < 0)
        {
            return r;           /* the caller judges errors and types */
        }
        freeReplyObject(r);
        if (++redirects > SK_CL_REDIRECTS) {
            sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: %s: more than %d "
                "redirections for slot %u", cl->spec, cmd, SK_CL_REDIRECTS,
                slot);
            return NULL;
        }
        if (!ask) {
            /* The slot moved for good: re-read the map so that its
             * neighbours follow too, and follow the map (the node named,
             * if the map cannot be read or lacks the slot). */
            cl->slot[slot] = (int16_t) i;
            if (sk_cl_refresh(cl, d, err) != 0 || cl->slot[slot] < 0) {
                cl->slot[slot] = (int16_t) i;
            }
            i = cl->slot[slot];
        }
        k = i;
    }
}


/* hlen bytes of h, each one of allowed. */
static int
sk_cl_host_ok(const char *h, size_t hlen, const char *allowed)
{
    size_t  i;

    for (i = 0; i < hlen; i++) {
        if (h[i] == '\0' || strchr(allowed, h[i]) == NULL) {
            return 0;
        }
    }
    return hlen > 0;
}


/* "HOST:PORT[,HOST:PORT...]" (HOST a name, an IPv4 or a bracketed
 * IPv6), with redis://'s host rules: no user@ (AUTH), no bare IPv6. */
int
sk_cache_cluster_open(sk_cache_cluster_t **out, const char *list,
    const char *spec, sk_err_t *err)
{
    sk_cache_cluster_t  *cl;
    const char          *p = list, *end, *colon, *h, *allowed;
    size_t               hlen;
    char                *e;
    long                 port;
    size_t               i;

    *out = NULL;
    cl = calloc(1, sizeof(*cl));
    if (cl == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    cl->spec = spec;
    for (i = 0; i < SK_CL_SLOTS; i++) {
        cl->slot[i] = -1;
    }
    while (*p != '\0') {
        end = p + strcspn(p, ",");
        colon = end;
        while (colon > p && colon[-1] != ':') {
            colon--;
        }
        port = colon > p ? strtol(colon, &e, 10) : 0;
        h = p;
        hlen = colon > p ? (size_t) (colon - 1 - p) : 0;
        allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789.-";
        if (hlen > 2 && h[0] == '[' && h[hlen - 1] == ']') {
            h++;
            hlen -= 2;
            allowed = "0123456789abcdefABCDEF:.";
        }
        if (colon == p || e != end || port <= 0 || port > 65535
            || !sk_cl_host_ok(h, hlen, allowed)
            || sk_cl_node(cl, h, hlen, (int) port, -1) < 0)
        {
            free(cl);
            return sk_err_set(err, SK_ERR_FORMAT, "cache \"%s\": seed "
                "\"%.*s\": want HOST:PORT (at most %d)", spec,
                (int) (end - p), p, SK_CL_NODES_MAX);
        }
        p = *end == ',' ? end + 1 : end;
    }
    if (cl->nnodes == 0) {
        free(cl);
        return sk_err_set(err, SK_ERR_FORMAT, "cache \"%s\": no seed node",
            spec);
    }
    cl->nseeds = cl->nnodes;
    *out = cl;
    return 0;
}


const char *
sk_cache_cluster_node(const sk_cache_cluster_t *cl, int i, int *port)
{
    if (i < 0 || (size_t) i >= cl->nnodes) {
        return NULL;
    }
    *port = cl->node[i].port;
    return cl->node[i].host;
}


int
sk_cache_cluster_connect(sk_cache_cluster_t *cl, const sk_cache_deadline_t *d,
    sk_err_t *err)
{
    return cl->have_map ? 0 : sk_cl_refresh(cl, d, err);
}


void
sk_cache_cluster_close(sk_cache_cluster_t *cl)
{
    size_t  i;

    if (cl == NULL) {
        return;
    }
    for (i = 0; i < cl->nnodes; i++) {
        sk_cl_drop(&cl->node[i]);
    }
    free(cl);
}
