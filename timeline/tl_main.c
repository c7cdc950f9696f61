/*
 * tl_main.c -- sk-timeline: flags, then serve, check or repair.
 *
 *   sk-timeline -c FILE                    serve until SIGTERM/SIGINT
 *   sk-timeline -n -c FILE                 check the configuration, exit
 *   sk-timeline --check -c FILE            check every file, offline
 *   sk-timeline --repair -c FILE [FROM...] restore what is lost, offline
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <sk/daemon.h>

#include "tl.h"


static int
tl_usage(void)
{
    fprintf(stderr, "usage: %s [-n] -c FILE\n"
        "       %s --check -c FILE\n"
        "       %s --repair -c FILE [FROM...]\n", TL_PROG, TL_PROG, TL_PROG);
    return EX_USAGE;
}


static int
tl_main_run(tl_timeline_t *tl)
{
    sk_httpd_t  *h;
    sk_err_t     err;
    sigset_t     set;

    /* Signals are taken by sigwait here, never by the HTTP threads. */
    sk_daemon_block(&set);

    if (tl_open(tl, &err) != 0 || tl_ocsp_init(tl, &err) != 0
        || tl_validate_init(tl, &err) != 0
        || tl_token_init(tl, &err) != 0)
    {
        tl_log("%s", err.msg);
        return EX_CONFIG;
    }
    if (tl_chunk_start(tl, &err) != 0 || tl_sign_start(tl, &err) != 0
        || tl_metrics_start(tl, &err) != 0
        || tl_http_start(tl, &h, &err) != 0)
    {
        tl_metrics_stop(tl);
        tl_log("%s", err.msg);
        return EX_UNAVAILABLE;
    }
    tl_log("timeline %llu (%s) listening on %s",
        (unsigned long long) tl->conf.tid, tl->conf.origin, tl->conf.listen);
    (void) sk_daemon_notify("READY=1");
    tl_log("signal %d: stopping", sk_daemon_wait(&set));
    (void) sk_daemon_notify("STOPPING=1");
    tl_http_stop(tl, h);
    tl_append_drain(tl);
    tl_metrics_stop(tl);
    return EX_OK;
}


int
main(int argc, char **argv)
{
    static const struct option  longs[] = {
        { "check", no_argument, NULL, 'C' },
        { "repair", no_argument, NULL, 'R' },
        { NULL, 0, NULL, 0 }
    };
    tl_timeline_t  tl;
    const char    *conf = NULL;
    sk_err_t       err;
    tl_mode_t      mode = TL_RUN;
    int            check = 0, c, rc;

    while ((c = getopt_long(argc, argv, "c:n", longs, NULL)) != -1) {
        switch (c) {
        case 'c':
            conf = optarg;
            break;
        case 'n':
            check = 1;
            break;
        case 'C':
        case 'R':
            if (mode != TL_RUN) {
                return tl_usage();
            }
            mode = c == 'C' ? TL_CHECK : TL_REPAIR;
            break;
        default:
            return tl_usage();
        }
    }
    if (conf == NULL || (check && mode != TL_RUN)
        || (optind != argc && mode != TL_REPAIR))
    {
        return tl_usage();
    }
    tl_init(&tl, mode);
    if (tl_conf_load(&tl.conf, conf, &err) != 0) {
        fprintf(stderr, "%s: configuration error: %s\n", TL_PROG, err.msg);
        return EX_CONFIG;
    }
    if (check) {
        printf("%s: %s: configuration ok\n", TL_PROG, conf);
        tl_conf_free(&tl.conf);
        return EX_OK;
    }
    rc = mode == TL_CHECK ? tl_check(&tl)
        : mode == TL_REPAIR ? tl_repair(&tl, argv + optind,
                                  (size_t) (argc - optind))
        : tl_main_run(&tl);
    tl_free(&tl);
    return rc;
}
