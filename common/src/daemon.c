/*
 * daemon.c -- flags and signals of the foreground daemons, and readiness
 * for the service manager (sk/daemon.h).
 *
 * sk_daemon_notify writes the one datagram of systemd's notify protocol
 * itself: linking libsystemd into every daemon for a sendto() is not
 * worth the dependency, and the protocol is documented as stable for
 * exactly such reimplementations.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "sk/daemon.h"


int
sk_daemon_args(int argc, char **argv, const char **path, int *check)
{
    int  c;

    *path = NULL;
    *check = 0;
    while ((c = getopt(argc, argv, "c:nh")) != -1) {
        switch (c) {
        case 'c':
            *path = optarg;
            break;
        case 'n':
            *check = 1;
            break;
        default:
            return -1;
        }
    }
    return *path == NULL || optind != argc ? -1 : 0;
}


void
sk_daemon_block(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}


int
sk_daemon_wait(const sigset_t *set)
{
    int  sig;

    do {
        if (sigwait(set, &sig) != 0) {
            sig = SIGTERM;
        }
    } while (sig == SIGHUP);
    return sig;
}


int
sk_daemon_notify(const char *state)
{
    struct sockaddr_un  sa;
    const char         *path;
    size_t              len;
    ssize_t             n;
    int                 fd, e;

    path = getenv("NOTIFY_SOCKET");
    if (path == NULL || path[0] == '\0') {
        return 0;
    }
    len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path)) {
        errno = EINVAL;
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@') {
        sa.sun_path[0] = '\0';
    }

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    n = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
        (struct sockaddr *) &sa,
        (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len));
    e = errno;
    close(fd);
    errno = e;
    return n < 0 ? -1 : 1;
}
