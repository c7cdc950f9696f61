/*
 * metrics_process.c -- the process series of sk/metrics.h, with the
 * names and meanings every Prometheus client library gives them, and a
 * daemon's <prefix>_build_info.
 *
 * Each is a family written at rendering (sk_metrics_family).  Families
 * render in the order they were registered, so the first one,
 * process_cpu_seconds_total, reads /proc/self/stat and /proc/self/fd
 * once for all six.  One process, one set of figures: the sample lives
 * in static storage, as the process it describes does.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sk/metrics.h"
#include "sk/sk.h"

typedef struct {
    double   cpu;               /* seconds, user + system */
    double   rss;               /* bytes */
    double   vsize;             /* bytes */
    double   fds;
    double   max_fds;
    double   start;             /* Unix time */
} sk_metrics_proc_t;

static sk_metrics_proc_t  sk_metrics_proc;
static double             sk_metrics_boot;      /* Unix time of the boot */
static char               sk_metrics_build_name[96];
static sk_metric_def_t    sk_metrics_build_def = {
    sk_metrics_build_name, "The sovereign-keys version of the daemon "
    "(always 1).", SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  sk_metrics_proc_defs[] = {
    { "process_cpu_seconds_total",
      "Total user and system CPU time spent in seconds.",
      SK_METRIC_COUNTER, NULL, 0 },
    { "process_resident_memory_bytes", "Resident memory size in bytes.",
      SK_METRIC_GAUGE, NULL, 0 },
    { "process_virtual_memory_bytes", "Virtual memory size in bytes.",
      SK_METRIC_GAUGE, NULL, 0 },
    { "process_open_fds", "Number of open file descriptors.",
      SK_METRIC_GAUGE, NULL, 0 },
    { "process_max_fds", "Maximum number of open file descriptors.",
      SK_METRIC_GAUGE, NULL, 0 },
    { "process_start_time_seconds",
      "Start time of the process since unix epoch in seconds.",
      SK_METRIC_GAUGE, NULL, 0 },
};

#define SK_METRICS_PROC_N \
    (sizeof(sk_metrics_proc_defs) / sizeof(sk_metrics_proc_defs[0]))


/* The boot time from /proc/stat's btime line; 0 if unreadable. */
static double
sk_metrics_btime(void)
{
    FILE               *f = fopen("/proc/stat", "re");
    char                line[256];
    unsigned long long  bt = 0;

    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "btime %llu", &bt) == 1) {
            break;
        }
    }
    fclose(f);
    return (double) bt;
}


/* /proc/self/stat: fields 14, 15 (utime, stime), 22 (starttime), 23
 * (vsize), 24 (rss), counted after the ")" that ends the command name,
 * which may hold spaces. */
static void
sk_metrics_proc_stat(sk_metrics_proc_t *p)
{
    FILE                *f = fopen("/proc/self/stat", "re");
    char                 buf[1024], *s;
    unsigned long long   ut, st, start, vsize;
    long long            rss;
    double               hz = (double) sysconf(_SC_CLK_TCK);
    size_t               n;

    if (f == NULL) {
        return;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    s = strrchr(buf, ')');
    if (s == NULL || hz <= 0
        || sscanf(s + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu "
               "%llu %*d %*d %*d %*d %*d %*d %llu %llu %lld", &ut, &st,
               &start, &vsize, &rss) != 5)
    {
        return;
    }
    p->cpu = (double) (ut + st) / hz;
    p->start = sk_metrics_boot + (double) start / hz;
    p->vsize = (double) vsize;
    p->rss = (double) rss * (double) sysconf(_SC_PAGESIZE);
}


static void
sk_metrics_proc_read(sk_metrics_proc_t *p)
{
    struct rlimit   rl;
    struct dirent  *de;
    DIR            *d;
    double          n = 0;

    sk_metrics_proc_stat(p);
    d = opendir("/proc/self/fd");
    if (d != NULL) {
        while ((de = readdir(d)) != NULL) {
            n += de->d_name[0] != '.';
        }
        closedir(d);
        p->fds = n - 1;         /* not the directory's own */
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        p->max_fds = rl.rlim_cur == RLIM_INFINITY ? -1 : (double) rl.rlim_cur;
    }
}


static void
sk_metrics_proc_emit(sk_metrics_emit_t *e, void *cls)
{
    const double  *v = cls;

    if (v == &sk_metrics_proc.cpu) {
        sk_metrics_proc_read(&sk_metrics_proc);     /* the first family */
    }
    sk_metrics_emit(e, NULL, *v);
}


static void
sk_metrics_build_emit(sk_metrics_emit_t *e, void *cls)
{
    static const char *const  version[] = { SK_VERSION };

    (void) cls;
    sk_metrics_emit(e, version, 1);
}


int
sk_metrics_process(sk_metrics_t *m, const char *prefix, sk_err_t *err)
{
    static const char *const  label[] = { "version" };
    double                   *v[SK_METRICS_PROC_N] = {
        &sk_metrics_proc.cpu, &sk_metrics_proc.rss, &sk_metrics_proc.vsize,
        &sk_metrics_proc.fds, &sk_metrics_proc.max_fds,
        &sk_metrics_proc.start };
    size_t                    i;

    if (sk_metrics_boot == 0) {
        sk_metrics_boot = sk_metrics_btime();
    }
    for (i = 0; i < SK_METRICS_PROC_N; i++) {
        if (sk_metrics_family(m, &sk_metrics_proc_defs[i], NULL, 0,
                sk_metrics_proc_emit, v[i], err) != 0)
        {
            return -1;
        }
    }
    snprintf(sk_metrics_build_name, sizeof(sk_metrics_build_name),
        "%s_build_info", prefix);
    return sk_metrics_family(m, &sk_metrics_build_def, label, 1,
        sk_metrics_build_emit, NULL, err);
}
