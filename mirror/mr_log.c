/*
 * mr_log.c -- sk-mirror's log lines: "sk-mirror: ..." on stderr (run it
 * under systemd or a supervisor, which keeps stderr).  In a file of its
 * own so that no part of the mirror imports its main.c.
 */
#include <stdarg.h>
#include <stdio.h>

#include "mr.h"


void
mr_log(const char *fmt, ...)
{
    va_list  ap;
    char     msg[1024];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", MR_PROG, msg);
}
