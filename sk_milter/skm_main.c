/*
 * skm_main.c -- sk-milter: options, daemon, signals, privilege drop.
 *
 * Threads: libmilter's (smfi_main runs in its own thread), a refresher
 * that rebuilds the chain files on a timer and reloads the configuration,
 * a listener per policy socket with a thread per Postfix connection
 * (skm_policy.c), and the main thread, which only waits for signals.
 * libmilter's own signal thread would stop the milter on SIGHUP; the
 * main thread is the process's first thread and waits in sigwaitinfo, so
 * Linux delivers process signals to it and SIGHUP means reload.
 */
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <libmilter/mfapi.h>
#include <sk/daemon.h>
#include <sk/file.h>

#include "skm.h"

#define SKM_DEFAULT_CONF "/etc/sk-milter.conf"

static int              skm_use_syslog;
static int              skm_use_stderr;

static pthread_mutex_t  skm_rf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t   skm_rf_cond = PTHREAD_COND_INITIALIZER;
static int              skm_rf_reload;
static int              skm_rf_stop;
static const char      *skm_conf_file;

static void skm_usage(void);
static int skm_privdrop(const skm_conf_t *conf);
static int skm_pidfile_write(const char *path);
static int skm_daemonize(void);
static void *skm_refresher(void *arg);
static void *skm_milter_thread(void *arg);
static void skm_refresh_once(void);
static void *skm_stopper(void *arg);
static void skm_socket_nodelay(void);


void
skm_log_init(int use_syslog, int use_stderr)
{
    skm_use_syslog = use_syslog;
    skm_use_stderr = use_stderr;
    if (use_syslog) {
        openlog(SKM_PROG, LOG_PID, LOG_MAIL);
    }
}


void
skm_log(int prio, const char *fmt, ...)
{
    va_list  ap;
    char     msg[1024];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (skm_use_syslog) {
        syslog(prio, "%s", msg);
    }
    if (skm_use_stderr) {
        fprintf(stderr, "%s: %s\n", SKM_PROG, msg);
    }
}


static void
skm_usage(void)
{
    fprintf(stderr, "usage: %s [-c FILE] [-f] [-n]\n"
        "  -c FILE  configuration (default " SKM_DEFAULT_CONF ")\n"
        "  -f       stay in the foreground, log to stderr too\n"
        "  -n       check the configuration and exit\n", SKM_PROG);
    exit(EX_USAGE);
}


int
main(int argc, char **argv)
{
    skm_conf_t  *conf;
    sk_err_t     err;
    sigset_t     set;
    siginfo_t    si;
    pthread_t    rf, mt, st;
    int          ch, check, fg, sig, rc, i;

    skm_conf_file = SKM_DEFAULT_CONF;
    check = 0;
    fg = 0;
    while ((ch = getopt(argc, argv, "c:fn")) != -1) {
        switch (ch) {
        case 'c':
            skm_conf_file = optarg;
            break;
        case 'f':
            fg = 1;
            break;
        case 'n':
            check = 1;
            break;
        default:
            skm_usage();
        }
    }
    if (optind != argc) {
        skm_usage();
    }

    if (skm_conf_load(&conf, skm_conf_file, &err) != 0) {
        fprintf(stderr, "%s: %s\n", SKM_PROG, err.msg);
        return EX_CONFIG;
    }
    if (check) {
        skm_conf_free(conf);
        return EX_OK;
    }

    signal(SIGPIPE, SIG_IGN);
    skm_log_init(conf->syslog, fg);

    if (smfi_setconn(conf->socket) != MI_SUCCESS
        || smfi_register(skm_filter) != MI_SUCCESS)
    {
        skm_log(LOG_ERR, "%s: cannot set up the milter", conf->socket);
        return EX_SOFTWARE;
    }
    if (!fg && skm_daemonize() != 0) {
        return EX_OSERR;
    }
    if (smfi_opensocket(1) != MI_SUCCESS) {
        skm_log(LOG_ERR, "%s: cannot open the milter socket", conf->socket);
        return EX_UNAVAILABLE;
    }
    skm_socket_nodelay();
    if (skm_policy_open(conf) != 0) {
        return EX_UNAVAILABLE;
    }
    if (conf->pidfile != NULL && skm_pidfile_write(conf->pidfile) != 0) {
        return EX_CANTCREAT;
    }
    if (skm_privdrop(conf) != 0) {
        return EX_NOPERM;
    }
    skm_conf_install(conf);

    /* Every thread made from here on inherits the blocked set. */
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    if (pthread_create(&rf, NULL, skm_refresher, NULL) != 0
        || pthread_create(&mt, NULL, skm_milter_thread, NULL) != 0)
    {
        skm_log(LOG_ERR, "cannot start threads");
        return EX_OSERR;
    }
    if (skm_policy_start() != 0) {
        return EX_OSERR;
    }
    skm_log(LOG_INFO, "started on %s (mode %s)", conf->socket,
        conf->mode == SKM_MODE_REJECT ? "reject" : "verify");
    (void) sk_daemon_notify("READY=1");

    for (;;) {
        sig = sigwaitinfo(&set, &si);
        if (sig == SIGHUP) {
            pthread_mutex_lock(&skm_rf_lock);
            skm_rf_reload = 1;
            pthread_cond_signal(&skm_rf_cond);
            pthread_mutex_unlock(&skm_rf_lock);
        } else if (sig == SIGTERM || sig == SIGINT) {
            break;
        }
    }

    skm_log(LOG_INFO, "stopping on signal %d", sig);
    (void) sk_daemon_notify("STOPPING=1");
    pthread_mutex_lock(&skm_rf_lock);
    skm_rf_stop = 1;
    pthread_cond_signal(&skm_rf_cond);
    pthread_mutex_unlock(&skm_rf_lock);
    /* smfi_stop() waits for libmilter's listener to leave its poll (up
     * to seconds): let a thread of its own wait, and here wait only for
     * the messages in progress. */
    if (pthread_create(&st, NULL, skm_stopper, NULL) == 0) {
        pthread_detach(st);
    }
    pthread_join(rf, NULL);
    for (i = 0; i < 100 && skm_filter_busy() > 0; i++) {
        usleep(100000);
    }
    if (skm_filter_busy() > 0) {
        skm_log(LOG_WARNING, "stopping with %d messages in progress",
            skm_filter_busy());
    }

    conf = skm_conf_acquire();
    if (conf->pidfile != NULL) {
        (void) unlink(conf->pidfile);
    }
    rc = EX_OK;
    skm_conf_release(conf);
    skm_conf_install(NULL);
    skm_log(LOG_INFO, "stopped");
    return rc;
}


static void *
skm_stopper(void *arg)
{
    (void) arg;
    (void) smfi_stop();
    return NULL;
}


static void *
skm_milter_thread(void *arg)
{
    (void) arg;
    if (smfi_main() != MI_SUCCESS) {
        skm_log(LOG_ERR, "milter loop failed");
        kill(getpid(), SIGTERM);
    }
    return NULL;
}


/* Chain files, onion: at start, every RefreshInterval and after SIGHUP
 * (whose new configuration it loads; a broken one keeps the old). */
static void *
skm_refresher(void *arg)
{
    skm_conf_t       *conf;
    sk_err_t          err;
    struct timespec   ts;
    int               reload;

    (void) arg;
    skm_refresh_once();
    pthread_mutex_lock(&skm_rf_lock);
    while (!skm_rf_stop) {
        conf = skm_conf_acquire();
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += conf->refresh;
        skm_conf_release(conf);
        while (!skm_rf_stop && !skm_rf_reload) {
            if (pthread_cond_timedwait(&skm_rf_cond, &skm_rf_lock, &ts)
                == ETIMEDOUT)
            {
                break;
            }
        }
        if (skm_rf_stop) {
            break;
        }
        reload = skm_rf_reload;
        skm_rf_reload = 0;
        pthread_mutex_unlock(&skm_rf_lock);

        if (reload) {
            if (skm_conf_load(&conf, skm_conf_file, &err) != 0) {
                skm_log(LOG_ERR, "reload failed, keeping the running "
                    "configuration: %s", err.msg);
            } else {
                skm_conf_install(conf);
                skm_log(LOG_INFO, "reloaded %s", skm_conf_file);
            }
        }
        skm_refresh_once();
        pthread_mutex_lock(&skm_rf_lock);
    }
    pthread_mutex_unlock(&skm_rf_lock);
    return NULL;
}


static void
skm_refresh_once(void)
{
    skm_conf_t  *conf;

    conf = skm_conf_acquire();
    (void) skm_onion_setup(conf);
    if (skm_chain_refresh(conf, time(NULL)) > 0) {
        (void) skm_chain_reload_postfix(conf);
    }
    skm_conf_release(conf);
}


/*
 * TCP_NODELAY on libmilter's listening socket, which accepted sockets
 * inherit (Linux, the BSDs).  libmilter sets only SO_KEEPALIVE, so its
 * replies go out under Nagle: at end of message the header edits and the
 * final reply are written back to back, and the second waited for the
 * MTA's delayed ACK, about 40 ms a message.  libmilter does not expose
 * its socket; at start-up it is our only listening one.
 */
static void
skm_socket_nodelay(void)
{
    int        fd, on, domain;
    socklen_t  len;

    for (fd = 0; fd < 1024; fd++) {
        len = sizeof(on);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0
            || !on)
        {
            continue;
        }
        len = sizeof(domain);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0
            || (domain != AF_INET && domain != AF_INET6))
        {
            continue;
        }
        on = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0)
        {
            skm_log(LOG_WARNING, "TCP_NODELAY on the milter socket: %s",
                strerror(errno));
        }
    }
}


/* initgroups, setgid, setuid: in that order, each checked. */
static int
skm_privdrop(const skm_conf_t *conf)
{
    struct passwd  *pw;

    if (conf->uid == (uid_t) -1) {
        return 0;
    }
    pw = getpwuid(conf->uid);
    if (pw == NULL) {
        skm_log(LOG_ERR, "UserID: no user with uid %ld", (long) conf->uid);
        return -1;
    }
    if (getuid() == 0 && initgroups(pw->pw_name, conf->gid) != 0) {
        skm_log(LOG_ERR, "initgroups(%s): %s", pw->pw_name, strerror(errno));
        return -1;
    }
    if (setgid(conf->gid) != 0) {
        skm_log(LOG_ERR, "setgid(%ld): %s", (long) conf->gid,
            strerror(errno));
        return -1;
    }
    if (setuid(conf->uid) != 0) {
        skm_log(LOG_ERR, "setuid(%ld): %s", (long) conf->uid,
            strerror(errno));
        return -1;
    }
    return 0;
}


static int
skm_pidfile_write(const char *path)
{
    char      buf[32];
    int       n;
    sk_err_t  err;

    n = snprintf(buf, sizeof(buf), "%ld\n", (long) getpid());
    if (sk_file_write_atomic(path, buf, (size_t) n, 0644, &err) != 0) {
        skm_log(LOG_ERR, "PidFile: %s", err.msg);
        return -1;
    }
    return 0;
}


static int
skm_daemonize(void)
{
    pid_t  pid;
    int    fd;

    pid = fork();
    if (pid < 0) {
        skm_log(LOG_ERR, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid > 0) {
        _exit(EX_OK);
    }
    (void) setsid();
    if (chdir("/") != 0) {
        return -1;
    }
    fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2) {
            close(fd);
        }
    }
    return 0;
}
