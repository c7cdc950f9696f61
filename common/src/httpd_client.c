/*
 * httpd_client.c -- the clients the HTTP front shares out among
 * (internal.h): what one client is, its connections and its budget of
 * costly requests.
 *
 * A client is an IPv4 address or an IPv6 /64: one host gets a /64 as
 * readily as one address (SLAAC, privacy addresses), so counting exact
 * IPv6 addresses would give it 2^64 shares (Sunlight's per-source limit
 * takes the same unit).  An IPv4-mapped IPv6 address is its IPv4 one.
 * The key folds both into 64 bits: an IPv6 /64 as its first 8 bytes, an
 * IPv4 address after 0xffffffff, where no unicast IPv6 prefix lives
 * (ff00::/8 is multicast).
 *
 * Entries live while the client holds a connection or its bucket is
 * still filling; the reaper drops the others (sk_httpd_clients_sweep), so
 * memory follows the clients of the last few seconds.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SK_HTTPD_CLIENT_BUCKETS  4096       /* a power of two */
#define SK_HTTPD_V4_TAG          0xffffffff00000000ULL


static uint64_t
sk_httpd_be64(const unsigned char *p)
{
    uint64_t  v = 0;
    int       i;

    for (i = 0; i < 8; i++) {
        v = v << 8 | p[i];
    }
    return v;
}


int
sk_httpd_client_key(uint64_t *key, const struct sockaddr *sa)
{
    const struct sockaddr_in6  *s6;
    const unsigned char        *a;
    static const unsigned char  mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                               0xff, 0xff };

    if (sa == NULL) {
        return -1;
    }
    if (sa->sa_family == AF_INET) {
        *key = SK_HTTPD_V4_TAG
               | ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr);
        return 0;
    }
    if (sa->sa_family != AF_INET6) {
        return -1;
    }
    s6 = (const struct sockaddr_in6 *) sa;
    a = s6->sin6_addr.s6_addr;
    if (memcmp(a, mapped, sizeof(mapped)) == 0) {
        *key = SK_HTTPD_V4_TAG | (uint64_t) a[12] << 24 | (uint64_t) a[13] << 16
               | (uint64_t) a[14] << 8 | a[15];
        return 0;
    }
    *key = sk_httpd_be64(a);
    return 0;
}


int
sk_httpd_client_parse(uint64_t *key, const char *s)
{
    struct sockaddr_in6  s6;
    struct sockaddr_in   s4;

    if (s == NULL) {
        return -1;
    }
    memset(&s4, 0, sizeof(s4));
    memset(&s6, 0, sizeof(s6));
    if (inet_pton(AF_INET, s, &s4.sin_addr) == 1) {
        s4.sin_family = AF_INET;
        return sk_httpd_client_key(key, (struct sockaddr *) &s4);
    }
    if (inet_pton(AF_INET6, s, &s6.sin6_addr) == 1) {
        s6.sin6_family = AF_INET6;
        return sk_httpd_client_key(key, (struct sockaddr *) &s6);
    }
    return -1;
}


int
sk_httpd_clients_init(sk_httpd_clients_t *t, double rate, double burst)
{
    memset(t, 0, sizeof(*t));
    t->rate = rate;
    t->burst = burst;
    t->bucket = calloc(SK_HTTPD_CLIENT_BUCKETS, sizeof(*t->bucket));
    return t->bucket != NULL ? 0 : -1;
}


void
sk_httpd_clients_free(sk_httpd_clients_t *t)
{
    sk_httpd_client_t  *c, *next;
    size_t              i;

    for (i = 0; t->bucket != NULL && i < SK_HTTPD_CLIENT_BUCKETS; i++) {
        for (c = t->bucket[i]; c != NULL; c = next) {
            next = c->next;
            free(c);
        }
    }
    free(t->bucket);
    t->bucket = NULL;
}


static size_t
sk_httpd_clients_slot(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;       /* MurmurHash3's finaliser */
    key ^= key >> 33;
    return (size_t) (key & (SK_HTTPD_CLIENT_BUCKETS - 1));
}


sk_httpd_client_t *
sk_httpd_clients_get(sk_httpd_clients_t *t, uint64_t key, uint64_t now_ms,
    int make)
{
    sk_httpd_client_t  **p = &t->bucket[sk_httpd_clients_slot(key)];

    while (*p != NULL && (*p)->key != key) {
        p = &(*p)->next;
    }
    if (*p != NULL || !make) {
        return *p;
    }
    *p = calloc(1, sizeof(**p));
    if (*p != NULL) {
        (*p)->key = key;
        (*p)->tokens = t->burst;
        (*p)->at = now_ms;
        t->n++;
    }
    return *p;
}


/* The bucket refilled up to now. */
static void
sk_httpd_client_fill(const sk_httpd_clients_t *t, sk_httpd_client_t *c,
    uint64_t now_ms)
{
    if (now_ms > c->at) {
        c->tokens += t->rate * (double) (now_ms - c->at) / 1000;
        c->tokens = c->tokens > t->burst ? t->burst : c->tokens;
        c->at = now_ms;
    }
}


uint64_t
sk_httpd_client_take(const sk_httpd_clients_t *t, sk_httpd_client_t *c,
    uint64_t now_ms)
{
    double  wait;

    if (t->rate <= 0) {
        return 0;
    }
    sk_httpd_client_fill(t, c, now_ms);
    if (c->tokens >= 1) {
        c->tokens -= 1;
        return 0;
    }
    wait = (1 - c->tokens) / t->rate;           /* seconds to a token */
    return (uint64_t) wait + 1;
}


void
sk_httpd_clients_sweep(sk_httpd_clients_t *t, uint64_t now_ms)
{
    sk_httpd_client_t  **p, *c;
    size_t               i;

    for (i = 0; i < SK_HTTPD_CLIENT_BUCKETS; i++) {
        for (p = &t->bucket[i]; (c = *p) != NULL; ) {
            if (c->conns == 0) {
                sk_httpd_client_fill(t, c, now_ms);
            }
            if (c->conns == 0 && c->tokens >= t->burst) {
                *p = c->next;
                free(c);
                t->n--;
            } else {
                p = &c->next;
            }
        }
    }
}
