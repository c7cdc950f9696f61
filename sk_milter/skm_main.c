/*
 * skm_main.c -- sk-milter: options, daemon, signals, privilege drop.
 *
 * Threads: a listener per socket (milter, policy) with a thread per
 * connection (skm_server.c), libmicrohttpd's for MetricsListen
 * (skm_metrics.c), a refresher that rebuilds the chain files on
 * a timer and reloads the configuration, and the main thread, which only
 * waits for signals: it blocks them before any other thread exists, so
 * every thread inherits the mask and sigwaitinfo here takes them all.
 */
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sk/daemon.h>
#include <sk/file.h>

#include "skm.h"

#define SKM_DEFAULT_CONF "/etc/sk-milter.conf"
#define SKM_STOP_MSGS    10     /* seconds messages in progress may take */
#define SKM_STOP_CONNS   5      /* and then their connections to end */

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
static void skm_refresh_once(void);
static void skm_log_warnings(const skm_conf_t *conf);


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
    pthread_t    rf;
    int          ch, check, fg, sig, left, i;

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
        for (i = 0; i < (int) conf->warnings.n; i++) {
            fprintf(stderr, "%s: %s\n", SKM_PROG, conf->warnings.v[i]);
        }
        skm_conf_free(conf);
        return EX_OK;
    }

    signal(SIGPIPE, SIG_IGN);
    skm_log_init(conf->syslog, fg);

    skm_log_warnings(conf);
    if (!fg && skm_daemonize() != 0) {
        return EX_OSERR;
    }
    if (skm_servers_open(conf) != 0) {
        return EX_UNAVAILABLE;
    }
    if (conf->pidfile != NULL && skm_pidfile_write(conf->pidfile) != 0) {
        return EX_CANTCREAT;
    }
    if (skm_policy_setup(conf) != 0) {
        return EX_CANTCREAT;
    }
    if (skm_privdrop(conf) != 0) {
        return EX_NOPERM;
    }
    /* Before any thread: StapleProof asks mirrors with libcurl. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        skm_log(LOG_ERR, "cannot initialise libcurl");
        return EX_OSERR;
    }
    skm_conf_install(conf);

    /* Every thread made from here on inherits the blocked set. */
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    if (skm_metrics_start(conf, &err) != 0) {
        skm_log(LOG_ERR, "%s", err.msg);
        if (conf->pidfile != NULL) {
            (void) unlink(conf->pidfile);
        }
        return EX_UNAVAILABLE;
    }
    if (pthread_create(&rf, NULL, skm_refresher, NULL) != 0) {
        skm_log(LOG_ERR, "cannot start threads");
        return EX_OSERR;
    }
    if (skm_servers_start() != 0) {
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
    /* No new connection; the messages in progress may finish; then
     * every connection ends, and only once their threads are gone is
     * the configuration they read freed. */
    skm_servers_close();
    pthread_join(rf, NULL);
    for (i = 0; i < SKM_STOP_MSGS * 10 && skm_filter_busy() > 0; i++) {
        usleep(100000);
    }
    if (skm_filter_busy() > 0) {
        skm_log(LOG_WARNING, "stopping with %d messages in progress",
            skm_filter_busy());
    }
    left = skm_servers_end(SKM_STOP_CONNS);

    conf = skm_conf_acquire();
    if (conf->pidfile != NULL) {
        (void) unlink(conf->pidfile);
    }
    skm_conf_release(conf);
    if (left > 0) {
        /* their threads still read the configuration and use OpenSSL:
         * free nothing, run no exit handler under them */
        skm_log(LOG_WARNING, "stopped with %d connection threads still "
            "running", left);
        _exit(EX_OK);
    }
    skm_metrics_stop();
    skm_conf_install(NULL);
    skm_log(LOG_INFO, "stopped");
    return EX_OK;
}


/* Chain files, onion: at start, every RefreshInterval (sooner when a
 * staple is due) and after SIGHUP (whose new configuration it loads; a
 * broken one keeps the old). */
static void *
skm_refresher(void *arg)
{
    skm_conf_t       *conf;
    sk_err_t          err;
    struct timespec   ts;
    time_t            next, wait;
    int               reload;

    (void) arg;
    skm_refresh_once();
    pthread_mutex_lock(&skm_rf_lock);
    while (!skm_rf_stop) {
        conf = skm_conf_acquire();
        clock_gettime(CLOCK_REALTIME, &ts);
        next = skm_staple_next();
        wait = conf->refresh;
        if (next != 0 && next - ts.tv_sec < wait) {
            wait = next > ts.tv_sec ? next - ts.tv_sec : 1;
        }
        ts.tv_sec += wait;
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
                skm_log_warnings(conf);
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


/* What the checks found worth a warning (sockets others can reach). */
static void
skm_log_warnings(const skm_conf_t *conf)
{
    size_t  i;

    for (i = 0; i < conf->warnings.n; i++) {
        skm_log(LOG_WARNING, "%s", conf->warnings.v[i]);
    }
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
