/*
 * tl_log.c -- sk-timeline's log lines: "sk-timeline: ..." on stderr (run
 * it under systemd or a supervisor, which keeps stderr); the reports of
 * --check and --repair go to stdout in the same form.
 */
#include <stdarg.h>
#include <stdio.h>

#include "tl.h"


void
tl_vlog(FILE *f, const char *fmt, va_list ap)
{
    char  msg[1024];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    fprintf(f, "%s: %s\n", TL_PROG, msg);
}


void
tl_log(const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    tl_vlog(stderr, fmt, ap);
    va_end(ap);
}


void
tl_say(const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    tl_vlog(stdout, fmt, ap);
    va_end(ap);
}


void
tl_fail(tl_timeline_t *tl, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(tl->failed_msg, sizeof(tl->failed_msg), fmt, ap);
    va_end(ap);
    tl->failed = 1;
    tl_log("%s", tl->failed_msg);
    tl_wake_all(tl);
}


void
tl_wake_all(tl_timeline_t *tl)
{
    pthread_cond_broadcast(&tl->batch[0]);
    pthread_cond_broadcast(&tl->batch[1]);
    pthread_cond_broadcast(&tl->synced);
    pthread_cond_signal(&tl->park_wake);
}
