/*
 * skm_policy.c -- outbound pinning: a socketmap server for Postfix's
 * smtp_tls_policy_maps.
 *
 *     smtp_tls_policy_maps = socketmap:inet:127.0.0.1:PORT:sk
 *     smtp_tls_fingerprint_digest = sha256
 *
 * Each lookup (skm_policy_lookup.c) decides for a next hop as an
 * SK-aware client does, and answers "fingerprint match=<SHA-256 of each
 * key its SK vouches for>" (Postfix then delivers to no other key), TEMP
 * (the mail is deferred and kept) or NOTFOUND (no SK for the domain: the
 * admin's own TLS policy applies).  Here: the connections, the answers
 * cached per next hop for PolicyTTL (never beyond the carrier's expiry;
 * TEMP is not cached; a reload empties the cache), and one lookup at a
 * time per next hop: Postfix's smtp processes asking for the same next
 * hop at once wait for the lookup already running instead of repeating
 * it, each within its own PolicyTimeout, and a lookup whose client hangs
 * up is taken over by one still waiting.
 *
 * One thread per Postfix connection (skm_server.c: Postfix keeps them
 * open, at most PolicyMaxConnections); a malformed netstring closes the
 * connection.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "skm.h"

#define SKM_POLICY_BUCKETS  4096
#define SKM_POLICY_ENTRIES  65536   /* cache size before it is emptied */
#define SKM_REPLY_MAX       2048

typedef struct skm_pentry_s {
    char                 *key;
    char                 *reply;
    time_t                expires;
    struct skm_pentry_s  *next;
} skm_pentry_t;

/* A lookup running for a next hop, and the clients waiting for it. */
typedef struct skm_flight_s {
    char                 *key;
    unsigned long         gen;              /* conf it runs under */
    unsigned              refs;             /* its runner and waiters */
    int                   done;             /* reply is the answer */
    int                   abandoned;        /* its client hung up */
    char                  reply[SKM_REPLY_MAX];
    struct skm_flight_s  *next;
} skm_flight_t;

static pthread_rwlock_t  skm_pcache_lock = PTHREAD_RWLOCK_INITIALIZER;
static skm_pentry_t     *skm_pcache[SKM_POLICY_BUCKETS];
static size_t            skm_pcache_n;
static unsigned long     skm_pcache_gen;           /* conf it was made for */

static pthread_mutex_t   skm_flight_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t    skm_flight_cond;
static pthread_once_t    skm_flight_once = PTHREAD_ONCE_INIT;
static skm_flight_t     *skm_flights;


/* One Postfix connection: netstring requests until EOF, idle or garbage. */
void
skm_sockmap_conn(int fd)
{
    skm_conf_t      *conf;
    char             buf[SKM_SOCKMAP_MAX + 16], name[64];
    char             key[SKM_SOCKMAP_MAX], reply[SKM_REPLY_MAX];
    char             out[SKM_REPLY_MAX + 16];
    const char      *data, *why;
    size_t           len, dlen, used;
    ssize_t          n;
    int              rc, outlen;

    len = 0;
    for (;;) {
        rc = skm_netstring_parse(buf, len, SKM_SOCKMAP_MAX, &data, &dlen,
            &used, &why);
        if (rc < 0) {
            skm_log(LOG_WARNING, "PolicySocket: malformed request (%s): "
                "closing the connection", why);
            return;
        }
        if (rc == 0) {
            n = read(fd, buf + len, sizeof(buf) - len);
            if (n <= 0) {
                return;         /* EOF, idle timeout or error: done */
            }
            len += (size_t) n;
            continue;
        }
        conf = skm_conf_acquire();
        rc = 0;
        if (skm_sockmap_request(data, dlen, name, sizeof(name), key,
                sizeof(key), &why) != 0)
        {
            skm_conf_release(conf);
            skm_log(LOG_WARNING, "PolicySocket: malformed request (%s): "
                "closing the connection", why);
            return;
        }
        if (strcmp(name, conf->policyname) != 0) {
            snprintf(reply, sizeof(reply), "PERM unknown map name \"%s\" "
                "(PolicyMapName is \"%s\")", name, conf->policyname);
            skm_metrics_policy(reply, 0);
        } else {
            rc = skm_policy_answer(reply, sizeof(reply), conf, key, fd);
        }
        skm_conf_release(conf);
        if (rc < 0) {
            return;             /* the client hung up: free its slot */
        }
        outlen = skm_netstring_format(out, sizeof(out), reply,
            strlen(reply));
        if (outlen < 0 || write(fd, out, (size_t) outlen) != outlen) {
            return;
        }
        memmove(buf, buf + used, len - used);
        len -= used;
    }
}


/* Empty the cache (write lock held). */
static void
skm_pcache_flush(void)
{
    skm_pentry_t  *e, *next;
    size_t         i;

    for (i = 0; i < SKM_POLICY_BUCKETS; i++) {
        for (e = skm_pcache[i]; e != NULL; e = next) {
            next = e->next;
            free(e->key);
            free(e->reply);
            free(e);
        }
        skm_pcache[i] = NULL;
    }
    skm_pcache_n = 0;
}


/* 1 with reply filled from a fresh entry for key. */
static int
skm_pcache_get(char *reply, size_t replylen, const skm_conf_t *conf,
    const char *key, time_t now)
{
    skm_pentry_t  *e;
    int            hit;

    hit = 0;
    pthread_rwlock_rdlock(&skm_pcache_lock);
    /* made for an older configuration: a miss; the next put empties it */
    e = skm_pcache_gen == conf->gen
        ? skm_pcache[skm_hash(key, SKM_POLICY_BUCKETS)] : NULL;
    for (; e != NULL; e = e->next) {
        if (strcmp(e->key, key) == 0 && e->expires > now) {
            snprintf(reply, replylen, "%s", e->reply);
            hit = 1;
            break;
        }
    }
    pthread_rwlock_unlock(&skm_pcache_lock);
    return hit;
}


static void
skm_pcache_put(const skm_conf_t *conf, const char *key, const char *reply,
    time_t expires)
{
    skm_pentry_t  **pp, *e;

    pthread_rwlock_wrlock(&skm_pcache_lock);
    if (conf->gen < skm_pcache_gen) {
        pthread_rwlock_unlock(&skm_pcache_lock);
        return;                 /* made under a configuration since replaced */
    }
    if (skm_pcache_gen != conf->gen || skm_pcache_n >= SKM_POLICY_ENTRIES) {
        skm_pcache_flush();
        skm_pcache_gen = conf->gen;
    }
    for (pp = &skm_pcache[skm_hash(key, SKM_POLICY_BUCKETS)]; *pp != NULL;
         pp = &(*pp)->next)
    {
        if (strcmp((*pp)->key, key) == 0) {
            break;
        }
    }
    e = *pp;
    if (e == NULL) {
        e = calloc(1, sizeof(*e));
        if (e == NULL || (e->key = strdup(key)) == NULL) {
            free(e);
            pthread_rwlock_unlock(&skm_pcache_lock);
            return;
        }
        *pp = e;
        skm_pcache_n++;
    }
    free(e->reply);
    e->reply = strdup(reply);
    e->expires = e->reply != NULL ? expires : 0;
    pthread_rwlock_unlock(&skm_pcache_lock);
}


/* An answer and its time since t0 in the metrics. */
static void
skm_policy_count(const char *reply, const struct timespec *t0)
{
    struct timespec  t1;

    (void) clock_gettime(CLOCK_MONOTONIC, &t1);
    skm_metrics_policy(reply, (double) (t1.tv_sec - t0->tv_sec)
        + (double) (t1.tv_nsec - t0->tv_nsec) / 1e9);
}


int
skm_policy_setup(const skm_conf_t *conf)
{
    static const char  *const sub[] = { "", "/names", "/mirrors",
                                        "/reneged" };
    sk_client_cache_t  *c;
    sk_err_t            err;
    char                path[4096];
    size_t              i;

    if (conf->policysocket == NULL || conf->stapletrust == NULL) {
        return 0;
    }
    if (sk_client_cache_open(&c, conf->policycache, &err) != 0) {
        skm_log(LOG_ERR, "PolicyCache %s: %s", conf->policycache, err.msg);
        return -1;
    }
    sk_client_cache_close(c);
    for (i = 0; conf->uid != (uid_t) -1 && i < 4; i++) {
        snprintf(path, sizeof(path), "%s%s", conf->policycache, sub[i]);
        if (chown(path, conf->uid, conf->gid) != 0) {
            skm_log(LOG_ERR, "PolicyCache: chown %s: %s", path,
                strerror(errno));
            return -1;
        }
    }
    return 0;
}


static void
skm_flight_init(void)
{
    pthread_condattr_t  a;

    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&skm_flight_cond, &a);
    pthread_condattr_destroy(&a);
}


/* Drop a reference (lock held); the last frees it. */
static void
skm_flight_put(skm_flight_t *f)
{
    if (--f->refs == 0) {
        free(f->key);
        free(f);
    }
}


/* Take out of the list (lock held): later requests start anew. */
static void
skm_flight_unlink(skm_flight_t *f)
{
    skm_flight_t  **pp;

    for (pp = &skm_flights; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == f) {
            *pp = f->next;
            return;
        }
    }
}


/*
 * Wait for the lookup f runs for another client (lock held): 1 with its
 * answer in reply, 0 if its client hung up first (the caller runs the
 * lookup itself), -1 when b is over first (this client hung up, or its
 * PolicyTimeout passed).
 */
static int
skm_flight_wait(skm_flight_t *f, char *reply, size_t replylen,
    skm_bound_t *b)
{
    struct timespec  ts;
    int              rc;

    f->refs++;
    for (;;) {
        if (f->done || f->abandoned) {
            rc = f->done;
            if (rc) {
                snprintf(reply, replylen, "%s", f->reply);
            }
            break;
        }
        /* a hang-up is seen within 100 ms, a deadline at once */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        if (ts.tv_sec > b->deadline.tv_sec
            || (ts.tv_sec == b->deadline.tv_sec
                && ts.tv_nsec > b->deadline.tv_nsec))
        {
            ts = b->deadline;
        }
        (void) pthread_cond_timedwait(&skm_flight_cond, &skm_flight_lock,
            &ts);
        if (!f->done && skm_bound_over(b)) {
            rc = -1;
            break;
        }
    }
    skm_flight_put(f);
    return rc;
}


/* Run the lookup of f (lock not held) and hand its answer out. */
static void
skm_flight_run(skm_flight_t *f, char *reply, size_t replylen,
    const skm_conf_t *conf, const char *key, skm_bound_t *b)
{
    time_t  ttl = 0, now = time(NULL);

    skm_metrics_policy_lookup(1);
    skm_policy_compute(reply, replylen, &ttl, conf, key, b);
    skm_metrics_policy_lookup(-1);
    if (ttl > 0) {
        skm_pcache_put(conf, key, reply, now + ttl);
    }
    pthread_mutex_lock(&skm_flight_lock);
    skm_flight_unlink(f);
    if (b->over == SKM_BOUND_GONE) {
        f->abandoned = 1;
    } else {
        f->done = 1;
        snprintf(f->reply, sizeof(f->reply), "%s", reply);
    }
    pthread_cond_broadcast(&skm_flight_cond);
    skm_flight_put(f);
    pthread_mutex_unlock(&skm_flight_lock);
}


int
skm_policy_answer(char *reply, size_t replylen, const skm_conf_t *conf,
    const char *key, int client)
{
    skm_flight_t    *f;
    skm_bound_t      b;
    struct timespec  t0;
    char             why[64];
    int              rc;

    (void) clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_once(&skm_flight_once, skm_flight_init);
    skm_bound_init(&b, conf->policytimeout, client);
    for (;;) {
        if (skm_pcache_get(reply, replylen, conf, key, time(NULL))) {
            break;
        }
        pthread_mutex_lock(&skm_flight_lock);
        for (f = skm_flights; f != NULL; f = f->next) {
            if (f->gen == conf->gen && strcmp(f->key, key) == 0) {
                break;
            }
        }
        if (f != NULL) {
            rc = skm_flight_wait(f, reply, replylen, &b);
            pthread_mutex_unlock(&skm_flight_lock);
            if (rc > 0) {
                break;
            }
            if (rc < 0) {
                if (b.over == SKM_BOUND_GONE) {
                    return -1;
                }
                snprintf(reply, replylen, "TEMP sk-milter: %s",
                    skm_bound_why(&b, why, sizeof(why)));
                break;
            }
            continue;           /* its client left: run it here */
        }
        f = calloc(1, sizeof(*f));
        if (f == NULL || (f->key = strdup(key)) == NULL) {
            pthread_mutex_unlock(&skm_flight_lock);
            free(f);
            snprintf(reply, replylen, "TEMP sk-milter: out of memory");
            break;
        }
        f->gen = conf->gen;
        f->refs = 1;
        f->next = skm_flights;
        skm_flights = f;
        pthread_mutex_unlock(&skm_flight_lock);
        skm_flight_run(f, reply, replylen, conf, key, &b);
        if (b.over == SKM_BOUND_GONE) {
            return -1;
        }
        break;
    }
    skm_policy_count(reply, &t0);
    return 0;
}
