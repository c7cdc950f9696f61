/*
 * tl_main.c -- sk-timeline: flags, key, log, HTTP, signals.
 *
 *   sk-timeline -c FILE        run in the foreground until SIGTERM/SIGINT
 *   sk-timeline -n -c FILE     check the configuration and exit
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include <sk/daemon.h>
#include <sk/keyfile.h>

#include "tl.h"


static int
tl_usage(void)
{
    fprintf(stderr, "usage: %s [-n] -c FILE\n", TL_PROG);
    return EX_USAGE;
}


/* The timeline key: load it, or make one (0600) on first start. */
static int
tl_main_key(tl_timeline_t *tl, sk_err_t *err)
{
    char  pub[4096], fp[SK_FINGERPRINT_SIZE];
    int   created;

    snprintf(pub, sizeof(pub), "%s/%s", tl->conf.data_dir, TL_PUB_FILE);
    if (sk_keyfile_open(&tl->key, &created, tl->conf.key_file, pub, err)
        != 0)
    {
        return -1;
    }
    if (created) {
        sk_key_fingerprint(fp, tl->key);
        tl_log("%s: new timeline key %s", tl->conf.key_file, fp);
    }
    return 0;
}


static int
tl_main_run(tl_timeline_t *tl)
{
    sk_httpd_t  *h;
    sk_err_t     err;
    sigset_t     set;

    /* Signals are taken by sigwait here, never by the HTTP threads. */
    sk_daemon_block(&set);

    if (tl_main_key(tl, &err) != 0
        || (tl->conf.operator_key != NULL
            && sk_key_load_public(&tl->operator_key, tl->conf.operator_key,
                   &err) != 0)
        || tl_inc_open(tl, &err) != 0
        || tl_calog_open(tl, &err) != 0
        || tl_store_open(tl, &err) != 0 || tl_chunk_open(tl, &err) != 0
        || tl_ocsp_init(tl, &err) != 0 || tl_token_init(tl, &err) != 0)
    {
        tl_log("%s", err.msg);
        return EX_CONFIG;
    }
    if (tl_chunk_start(tl, &err) != 0 || tl_http_start(tl, &h, &err) != 0)
    {
        tl_log("%s", err.msg);
        return EX_UNAVAILABLE;
    }
    tl_log("timeline %llu (%s) listening on %s",
        (unsigned long long) tl->conf.tid, tl->conf.origin, tl->conf.listen);
    tl_log("signal %d: stopping", sk_daemon_wait(&set));
    tl_http_stop(tl, h);
    tl_append_drain(tl);
    return EX_OK;
}


int
main(int argc, char **argv)
{
    pthread_condattr_t  ca;
    tl_timeline_t       tl;
    const char         *conf = NULL;
    sk_err_t            err;
    int                 check, rc;

    if (sk_daemon_args(argc, argv, &conf, &check) != 0) {
        return tl_usage();
    }
    memset(&tl, 0, sizeof(tl));
    tl.fd = -1;
    tl.inc_fd = -1;
    pthread_mutex_init(&tl.lock, NULL);
    /* Appends wait for a sync with a deadline on the monotonic clock. */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&tl.synced, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&tl.jobs_done, NULL);
    pthread_mutex_init(&tl.chunk_lock, NULL);
    pthread_mutex_init(&tl.certs_lock, NULL);
    pthread_rwlock_init(&tl.calog_lock, NULL);
    tl.calog_fd = -1;
    pthread_cond_init(&tl.chunk_wake, NULL);
    if (tl_conf_load(&tl.conf, conf, &err) != 0) {
        fprintf(stderr, "%s: configuration error: %s\n", TL_PROG, err.msg);
        return EX_CONFIG;
    }
    if (check) {
        printf("%s: %s: configuration ok\n", TL_PROG, conf);
        tl_conf_free(&tl.conf);
        return EX_OK;
    }
    rc = tl_main_run(&tl);
    tl_chunk_stop(&tl);
    tl_ocsp_free(&tl);
    tl_token_free(&tl);
    tl_store_close(&tl);
    tl_calog_close(&tl);
    tl_inc_close(&tl);
    tl_state_free(&tl);
    tl_validate_free(&tl);
    sk_key_free(tl.key);
    sk_key_free(tl.operator_key);
    tl_conf_free(&tl.conf);
    return rc;
}
