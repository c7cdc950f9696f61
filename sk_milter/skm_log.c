/*
 * skm_log.c -- logging: syslog (facility mail) when Syslog is on, and
 * stderr in the foreground.
 */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

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
