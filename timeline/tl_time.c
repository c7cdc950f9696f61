/*
 * tl_time.c -- the timeline's clocks: "now" for stamps (the wall clock,
 * or conf.clock_file in tests) and CLOCK_MONOTONIC for intervals.
 */
#include <stdlib.h>
#include <time.h>

#include "tl.h"


int64_t
tl_now(const tl_timeline_t *tl)
{
    char      *buf;
    size_t     len;
    long long  t;

    if (tl->conf.clock_file == NULL) {
        return (int64_t) time(NULL);
    }
    /* The test clock: one decimal number in a file. */
    if (sk_file_read(&buf, &len, tl->conf.clock_file, 64, NULL) != 0) {
        return 0;
    }
    t = strtoll(buf, NULL, 10);
    free(buf);
    return (int64_t) t;
}


uint64_t
tl_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


uint64_t
tl_us(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}
