/*
 * skm_server.c -- the daemon's listening sockets: the milter Socket
 * (skm_milter.c), PolicySocket (skm_policy.c) and ClientPolicySocket
 * (skm_ccert.c).  Each is opened before the privilege drop and served by
 * a listener thread that starts a thread per connection; the policy
 * sockets take at most PolicyMaxConnections each.
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
#include <unistd.h>

#include "skm.h"

#define SKM_POLICY_IDLE     100     /* seconds a quiet policy client lives */
#define SKM_MILTER_IDLE     7210    /* and a milter one: libmilter's default,
                                       past Postfix's milter timeouts */

typedef struct {
    const char  *name;              /* config key, for log lines */
    size_t       spec;              /* offsetof(skm_conf_t, its value) */
    void       (*handler)(int fd);  /* serves one connection */
    int          milter;            /* the milter's: no connection limit,
                                       SocketMode, UserID's, longer idle */
    int          fd;
    int          conns;             /* open connections (atomic) */
} skm_server_t;

typedef struct {
    int            fd;
    skm_server_t  *server;
} skm_sconn_t;

static skm_server_t  skm_servers[] = {
    { "Socket", offsetof(skm_conf_t, socket), skm_milter_conn, 1, -1, 0 },
    { "PolicySocket", offsetof(skm_conf_t, policysocket), skm_sockmap_conn,
      0, -1, 0 },
    { "ClientPolicySocket", offsetof(skm_conf_t, ccertsocket), skm_ccert_conn,
      0, -1, 0 }
};

#define SKM_NSERVERS (sizeof(skm_servers) / sizeof(skm_servers[0]))

static void *skm_server_listen(void *arg);
static void *skm_server_conn(void *arg);


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
    pthread_t  t;
    size_t     i;

    for (i = 0; i < SKM_NSERVERS; i++) {
        if (skm_servers[i].fd < 0) {
            continue;
        }
        if (pthread_create(&t, NULL, skm_server_listen, &skm_servers[i])
            != 0)
        {
            skm_log(LOG_ERR, "%s: cannot start a thread",
                skm_servers[i].name);
            return -1;
        }
        pthread_detach(t);
    }
    return 0;
}


static void *
skm_server_listen(void *arg)
{
    skm_server_t  *sv = arg;
    skm_conf_t    *conf;
    skm_sconn_t   *sc;
    pthread_t      t;
    long           max;
    int            fd, on;

    for (;;) {
        fd = accept(sv->fd, NULL, NULL);
        if (fd < 0) {
            if (errno != EINTR && errno != ECONNABORTED) {
                skm_log(LOG_ERR, "%s: accept: %s", sv->name,
                    strerror(errno));
                usleep(100000);
            }
            continue;
        }
        if (!sv->milter) {
            conf = skm_conf_acquire();
            max = conf->policyconns;
            skm_conf_release(conf);
            if (__atomic_load_n(&sv->conns, __ATOMIC_SEQ_CST) >= max) {
                skm_log(LOG_WARNING, "%s: %ld connections open "
                    "(PolicyMaxConnections): closing a new one", sv->name,
                    max);
                close(fd);
                continue;
            }
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
        if (pthread_create(&t, NULL, skm_server_conn, sc) != 0) {
            __atomic_sub_fetch(&sv->conns, 1, __ATOMIC_SEQ_CST);
            skm_log(LOG_ERR, "%s: cannot start a thread", sv->name);
            close(fd);
            free(sc);
            continue;
        }
        pthread_detach(t);
    }
    return NULL;
}


static void *
skm_server_conn(void *arg)
{
    skm_sconn_t     sc = *(skm_sconn_t *) arg;
    struct timeval  tv;

    free(arg);
    tv.tv_sec = sc.server->milter ? SKM_MILTER_IDLE : SKM_POLICY_IDLE;
    tv.tv_usec = 0;
    (void) setsockopt(sc.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void) setsockopt(sc.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sc.server->handler(sc.fd);
    close(sc.fd);
    __atomic_sub_fetch(&sc.server->conns, 1, __ATOMIC_SEQ_CST);
    return NULL;
}
