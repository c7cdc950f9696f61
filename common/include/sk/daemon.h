/*
 * sk/daemon.h -- what sk-timeline and sk-mirror share as foreground
 * daemons: "-c FILE [-n]" flags, and signals taken by one thread.
 */
#ifndef SK_DAEMON_H
#define SK_DAEMON_H

#include <signal.h>

/* "[-n] -c FILE": 0 and *path (and *check = 1 for -n); -1 on bad flags. */
int sk_daemon_args(int argc, char **argv, const char **path, int *check);

/* Block SIGTERM, SIGINT and SIGHUP in this thread (call before starting
 * threads, so they inherit it) and ignore SIGPIPE. */
void sk_daemon_block(sigset_t *set);

/* Wait for SIGTERM or SIGINT (SIGHUP is ignored); returns the signal. */
int sk_daemon_wait(const sigset_t *set);

#endif
