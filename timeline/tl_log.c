/*
 * tl_log.c -- sk-timeline's log lines: "sk-timeline: ..." on stderr (run
 * it under systemd or a supervisor, which keeps stderr).
 */
#include <stdarg.h>
#include <stdio.h>

#include "tl.h"


void
tl_log(const char *fmt, ...)
{
    va_list  ap;
    char     msg[1024];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", TL_PROG, msg);
}
