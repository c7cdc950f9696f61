/*
 * sk/daemon.h -- what sk-timeline and sk-mirror share as foreground
 * daemons: "-c FILE [-n]" flags, and signals taken by one thread; and
 * what every daemon (sk-milter too) tells its service manager.
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

/*
 * Send state ("READY=1", "STOPPING=1") to the service manager named by
 * $NOTIFY_SOCKET (systemd's Type=notify; sd_notify(3) documents the
 * datagram as a stable interface): 1 sent, 0 no manager asked for it, -1
 * the send failed (errno).  A path starting with '@' is an abstract
 * socket.  The variable stays set, for the STOPPING=1 that follows.
 */
int sk_daemon_notify(const char *state);

#endif
