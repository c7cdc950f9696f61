/*
 * daemon.c -- flags and signals of the foreground daemons (sk/daemon.h).
 */
#include <pthread.h>
#include <unistd.h>

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
