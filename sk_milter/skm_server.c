/*
 * skm_server.c -- the daemon's listening sockets: the milter Socket
 * (skm_milter.c), PolicySocket (skm_policy.c) and ClientPolicySocket
 * (skm_ccert.c).  Each is opened before the privilege drop and served by
 * a listener thread that starts a thread per connection, up to a cap
 * (MaxConnections for the milter's, PolicyMaxConnections for each policy
 * socket): whoever reaches a socket must not make the daemon start
 * threads and take memory without end.  On stop, the listeners
 * end, then every connection is shut for reading (its thread sees EOF
 * and ends) and the caller learns whether they all ended in time: only
 * then may it free what they use.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "skm.h"

#define SKM_POLICY_IDLE     100     /* seconds a quiet policy client lives */
#define SKM_MILTER_IDLE     7210    /* and a milter one: libmilter's default,
                                       past Postfix's milter timeouts */

typedef struct {
    const char      *name;          /* config key, for log lines */
    size_t           spec;          /* offsetof(skm_conf_t, its value) */
    const char      *maxkey;        /* config key of its connection cap */
    size_t           max;           /* offsetof(skm_conf_t, the cap) */
    void           (*handler)(int fd);  /* serves one connection */
    int              milter;        /* the milter's: SocketMode, UserID's,
                                       longer idle */
    int              fd;
    int              conns;         /* open connections (atomic) */
    skm_loglimit_t   refused;       /* "closing a new one" lines */
} skm_server_t;

typedef struct skm_sconn_s {
    int                  fd;
    skm_server_t        *server;
    struct skm_sconn_s  *next;
} skm_sconn_t;

/* The threads running (listeners and connections) and the open
 * connections, for the stop. */
static pthread_mutex_t  skm_srv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t   skm_srv_cond = PTHREAD_COND_INITIALIZER;
static skm_sconn_t     *skm_sconns;
static int              skm_srv_threads;
static int              skm_srv_stopping;

/* Threads that counted themselves gone, to be joined: only then have
 * glibc (the resolver), OpenSSL and the KeyCache handle freed what they
 * keep per thread, and a stop that exited before would leave it held
 * (LeakSanitizer's reports). */
typedef struct skm_zombie_s {
    pthread_t             t;
    struct skm_zombie_s  *next;
} skm_zombie_t;
static skm_zombie_t    *skm_zombies;

static skm_server_t  skm_servers[] = {
    { .name = "Socket", .spec = offsetof(skm_conf_t, socket),
      .maxkey = "MaxConnections", .max = offsetof(skm_conf_t, maxconns),
      .handler = skm_milter_conn, .milter = 1, .fd = -1,
      .refused = SKM_LOGLIMIT_INIT("Socket") },
    { .name = "PolicySocket", .spec = offsetof(skm_conf_t, policysocket),
      .maxkey = "PolicyMaxConnections",
      .max = offsetof(skm_conf_t, policyconns),
      .handler = skm_sockmap_conn, .fd = -1,
      .refused = SKM_LOGLIMIT_INIT("PolicySocket") },
    { .name = "ClientPolicySocket", .spec = offsetof(skm_conf_t, ccertsocket),
      .maxkey = "PolicyMaxConnections",
      .max = offsetof(skm_conf_t, policyconns),
      .handler = skm_ccert_conn, .fd = -1,
      .refused = SKM_LOGLIMIT_INIT("ClientPolicySocket") }
};

#define SKM_NSERVERS (sizeof(skm_servers) / sizeof(skm_servers[0]))

static void *skm_server_listen(void *arg);
static void *skm_server_conn(void *arg);
static int skm_server_start(void *(*run)(void *), void *arg);
static void skm_server_done(skm_sconn_t *sc);


/*
 * Listen on spec: inet:PORT@HOST (IPv4), inet6:PORT@HOST or
 * local:/PATH (unix:/PATH), the last made mode and, unless uid is -1,
 * owned by uid and gid.  An old socket at PATH is replaced, anything
 * else there is refused.  The fd, or -1 (logged).
 */
static int
skm_listen(const char *key, const char *spec0, mode_t mode, uid_t uid,
    gid_t gid)
{
    struct addrinfo     hints, *ai;
    struct sockaddr_un  sun;
    struct stat         st;
    const char         *spec, *at;
    char                port[16];
    int                 fd, on;

    spec = spec0;
    fd = -1;
    if (strncmp(spec, "inet:", 5) == 0 || strncmp(spec, "inet6:", 6) == 0) {
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = spec[4] == '6' ? AF_INET6 : AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV;
        spec = strchr(spec, ':') + 1;
        at = strchr(spec, '@');
        if (at == NULL || (size_t) (at - spec) >= sizeof(port)) {
            goto bad;
        }
        memcpy(port, spec, (size_t) (at - spec));
        port[at - spec] = '\0';
        if (getaddrinfo(at + 1, port, &hints, &ai) != 0) {
            goto bad;
        }
        fd = socket(ai->ai_family, SOCK_STREAM, 0);
        on = 1;
        if (fd < 0
            || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on))
               != 0
            || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        {
            freeaddrinfo(ai);
            goto fail;
        }
        freeaddrinfo(ai);
    } else {
        spec = strchr(spec, ':') + 1;
        memset(&sun, 0, sizeof(sun));
        sun.sun_family = AF_UNIX;
        if (strlen(spec) >= sizeof(sun.sun_path)) {
            goto bad;
        }
        strcpy(sun.sun_path, spec);
        if (lstat(spec, &st) == 0) {
            if (!S_ISSOCK(st.st_mode)) {
                skm_log(LOG_ERR, "%s %s: exists and is not a socket", key,
                    spec0);
                return -1;
            }
            (void) unlink(spec);
        }
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sun, sizeof(sun)) != 0
            || chmod(spec, mode) != 0
            || (uid != (uid_t) -1 && chown(spec, uid, gid) != 0))
        {
            goto fail;
        }
    }
    if (listen(fd, 128) != 0) {
        goto fail;
    }
    return fd;

bad:
    skm_log(LOG_ERR, "%s %s: cannot parse", key, spec0);
    return -1;
fail:
    skm_log(LOG_ERR, "%s %s: %s", key, spec0, strerror(errno));
    if (fd >= 0) {
        close(fd);
    }
    return -1;
}


int
skm_servers_open(const skm_conf_t *conf)
{
    skm_server_t  *sv;
    const char    *spec;
    size_t         i;

    for (i = 0; i < SKM_NSERVERS; i++) {
        sv = &skm_servers[i];
        spec = *(char * const *) (const void *) ((const char *) conf
                                                 + sv->spec);
        if (spec == NULL) {
            continue;
        }
        sv->fd = sv->milter
            ? skm_listen(sv->name, spec, (mode_t) conf->socketmode, conf->uid,
                  conf->gid)
            : skm_listen(sv->name, spec, 0666, (uid_t) -1, (gid_t) -1);
        if (sv->fd < 0) {
            return -1;
        }
    }
    return 0;
}


int
skm_servers_start(void)
{
    size_t  i;
    int     rc;

    rc = 0;
    pthread_mutex_lock(&skm_srv_lock);
    for (i = 0; i < SKM_NSERVERS && rc == 0; i++) {
        if (skm_servers[i].fd >= 0
            && (rc = skm_server_start(skm_server_listen, &skm_servers[i]))
               != 0)
        {
            skm_log(LOG_ERR, "%s: cannot start a thread",
                skm_servers[i].name);
        }
    }
    pthread_mutex_unlock(&skm_srv_lock);
    return rc;
}


/* A thread, counted until it ends (skm_srv_lock held), then joined
 * (skm_server_reap); -1 if it cannot start. */
static int
skm_server_start(void *(*run)(void *), void *arg)
{
    pthread_t  t;

    if (pthread_create(&t, NULL, run, arg) != 0) {
        return -1;
    }
    skm_srv_threads++;
    return 0;
}


/* Join the threads that ended (skm_srv_lock not held). */
static void
skm_server_reap(void)
{
    skm_zombie_t  *z, *next;

    pthread_mutex_lock(&skm_srv_lock);
    z = skm_zombies;
    skm_zombies = NULL;
    pthread_mutex_unlock(&skm_srv_lock);
    for (; z != NULL; z = next) {
        next = z->next;
        (void) pthread_join(z->t, NULL);
        free(z);
    }
}


void
skm_servers_close(void)
{
    size_t  i;

    pthread_mutex_lock(&skm_srv_lock);
    __atomic_store_n(&skm_srv_stopping, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < SKM_NSERVERS; i++) {
        if (skm_servers[i].fd >= 0) {
            /* wakes the listener's accept(), which then fails */
            (void) shutdown(skm_servers[i].fd, SHUT_RDWR);
        }
    }
    pthread_mutex_unlock(&skm_srv_lock);
}


int
skm_servers_end(int secs)
{
    struct timespec  ts;
    skm_sconn_t     *sc;
    int              n;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += secs;
    pthread_mutex_lock(&skm_srv_lock);
    for (sc = skm_sconns; sc != NULL; sc = sc->next) {
        (void) shutdown(sc->fd, SHUT_RD);
    }
    while (skm_srv_threads > 0) {
        if (pthread_cond_timedwait(&skm_srv_cond, &skm_srv_lock, &ts)
            == ETIMEDOUT)
        {
            break;
        }
    }
    n = skm_srv_threads;
    pthread_mutex_unlock(&skm_srv_lock);
    if (n == 0) {
        skm_server_reap();
    }
    return n;
}


static void *
skm_server_listen(void *arg)
{
    skm_server_t  *sv = arg;
    skm_conf_t    *conf;
    skm_sconn_t   *sc;
    long           max;
    int            fd, on;

    for (;;) {
        fd = accept(sv->fd, NULL, NULL);
        skm_server_reap();
        if (fd < 0) {
            if (__atomic_load_n(&skm_srv_stopping, __ATOMIC_SEQ_CST)) {
                break;
            }
            if (errno != EINTR && errno != ECONNABORTED) {
                skm_log(LOG_ERR, "%s: accept: %s", sv->name,
                    strerror(errno));
                usleep(100000);
            }
            continue;
        }
        /* over the cap: refused at once, the open ones keep working */
        conf = skm_conf_acquire();
        max = *(const long *) (const void *) ((const char *) conf + sv->max);
        skm_conf_release(conf);
        if (__atomic_load_n(&sv->conns, __ATOMIC_SEQ_CST) >= max) {
            skm_metrics_refused((size_t) (sv - skm_servers));
            skm_log_limited(&sv->refused, LOG_WARNING, "%s: %ld connections "
                "open (%s): closing a new one", sv->name, max, sv->maxkey);
            close(fd);
            continue;
        }
        /* replies go out at once: no Nagle wait for the peer's ACK */
        on = 1;
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
        sc = malloc(sizeof(*sc));
        if (sc == NULL) {
            close(fd);
            continue;
        }
        sc->fd = fd;
        sc->server = sv;
        __atomic_add_fetch(&sv->conns, 1, __ATOMIC_SEQ_CST);
        skm_metrics_connections((size_t) (sv - skm_servers), 1);
        pthread_mutex_lock(&skm_srv_lock);
        if (skm_srv_stopping
            || skm_server_start(skm_server_conn, sc) != 0)
        {
            pthread_mutex_unlock(&skm_srv_lock);
            __atomic_sub_fetch(&sv->conns, 1, __ATOMIC_SEQ_CST);
            skm_metrics_connections((size_t) (sv - skm_servers), -1);
            if (!skm_srv_stopping) {
                skm_log(LOG_ERR, "%s: cannot start a thread", sv->name);
            }
            close(fd);
            free(sc);
            continue;
        }
        sc->next = skm_sconns;
        skm_sconns = sc;
        pthread_mutex_unlock(&skm_srv_lock);
    }
    skm_server_done(NULL);
    return NULL;
}


/* A thread ends: sc's connection (NULL for a listener) is closed. */
static void
skm_server_done(skm_sconn_t *sc)
{
    skm_sconn_t  **pp;
    skm_zombie_t  *z = malloc(sizeof(*z));

    if (z == NULL) {
        (void) pthread_detach(pthread_self());  /* nobody will join it */
    }
    pthread_mutex_lock(&skm_srv_lock);
    if (z != NULL) {
        z->t = pthread_self();
        z->next = skm_zombies;
        skm_zombies = z;
    }
    if (sc != NULL) {
        for (pp = &skm_sconns; *pp != NULL; pp = &(*pp)->next) {
            if (*pp == sc) {
                *pp = sc->next;
                break;
            }
        }
        close(sc->fd);
        __atomic_sub_fetch(&sc->server->conns, 1, __ATOMIC_SEQ_CST);
        skm_metrics_connections((size_t) (sc->server - skm_servers), -1);
        free(sc);
    }
    if (--skm_srv_threads == 0) {
        pthread_cond_broadcast(&skm_srv_cond);
    }
    pthread_mutex_unlock(&skm_srv_lock);
}


static void *
skm_server_conn(void *arg)
{
    skm_sconn_t     *sc = arg;
    struct timeval   tv;

    tv.tv_sec = sc->server->milter ? SKM_MILTER_IDLE : SKM_POLICY_IDLE;
    tv.tv_usec = 0;
    (void) setsockopt(sc->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void) setsockopt(sc->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sc->server->handler(sc->fd);
    skm_server_done(sc);
    return NULL;
}
