/*
 * skm_log.c -- logging: syslog (facility mail) when Syslog is on, and
 * stderr in the foreground; lines a peer can cause at will (a malformed
 * packet, a refused connection) at most SKM_LOG_LINES a minute each.
 */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "skm.h"

static int  skm_use_syslog;
static int  skm_use_stderr;


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


/*
 * At most SKM_LOG_LINES a minute through l, as the HTTP front does for
 * libmicrohttpd (common/src/httpd.c): a flood of bad peers must not
 * flood the log.  The count of the lines held back is logged with the
 * first line of a later minute.
 */
void
skm_log_limited(skm_loglimit_t *l, int prio, const char *fmt, ...)
{
    struct timespec  now;
    va_list          ap;
    char             msg[1024];
    long             min;
    unsigned long    hidden;
    int              show;

    clock_gettime(CLOCK_MONOTONIC, &now);
    min = (long) (now.tv_sec / 60);
    hidden = 0;
    pthread_mutex_lock(&l->lock);
    if (min != l->minute) {
        hidden = l->hidden;
        l->minute = min;
        l->lines = 0;
        l->hidden = 0;
    }
    show = l->lines < SKM_LOG_LINES;
    if (show) {
        l->lines++;
    } else {
        l->hidden++;
    }
    pthread_mutex_unlock(&l->lock);

    if (hidden > 0) {
        skm_log(prio, "%s: %lu more such lines in the last minute not "
            "shown", l->what, hidden);
    }
    if (show) {
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        skm_log(prio, "%s", msg);
    }
}
