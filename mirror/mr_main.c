/*
 * mr_main.c -- sk-mirror: flags, key, copies, sync threads, HTTP, signals.
 *
 *   sk-mirror -c FILE          run in the foreground until SIGTERM/SIGINT
 *   sk-mirror -n -c FILE       check the configuration and exit
 *   sk-mirror --check -c FILE  compare the index with one made from the
 *                              copies (mr_ixcheck.c), offline
 */
#define _GNU_SOURCE             /* pthread_rwlockattr_setkind_np */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>

#include <curl/curl.h>
#include <sk/daemon.h>
#include <sk/keyfile.h>

#include "mr.h"


static int
mr_usage(void)
{
    fprintf(stderr, "usage: %s [-n] -c FILE\n"
        "       %s --check -c FILE\n", MR_PROG, MR_PROG);
    return EX_USAGE;
}


static int
mr_main_key(mr_mirror_t *m, sk_err_t *err)
{
    char  pub[4096], fp[SK_FINGERPRINT_SIZE];
    int   created;

    snprintf(pub, sizeof(pub), "%s/%s", m->conf.data_dir, MR_PUB_FILE);
    if (sk_keyfile_open(&m->key, &created, m->conf.key_file, pub, 1, err)
        != 0)
    {
        return -1;
    }
    sk_key_fingerprint(fp, m->key);
    mr_log("%s: %s mirror key %s", m->conf.key_file, created ? "new" : "",
        fp);
    return 0;
}


/* Open every copy, with the index. */
static int
mr_main_open_copies(mr_mirror_t *m, sk_err_t *err)
{
    size_t  i;

    for (i = 0; i < m->ntl; i++) {
        if (mr_store_open(m, &m->tl[i], err) != 0
            || mr_inc_open(&m->tl[i], err) != 0)
        {
            return sk_err_prefix(err, "timeline %" PRIu64,
                m->conf.tl[i].tid);
        }
        if (mr_store_map_open(m, &m->tl[i], err) != 0) {
            if (m->tl[i].map_bad > 0) {
                mr_evidence_map(m, &m->tl[i], m->tl[i].map_bad - 1, NULL,
                    NULL, err->msg);
            } else {
                return sk_err_prefix(err, "timeline %" PRIu64,
                    m->conf.tl[i].tid);
            }
        }
        mr_log("timeline %" PRIu64 ": %" PRIu64 " entries, checkpoint of %"
            PRIu64 "%s", m->conf.tl[i].tid, m->tl[i].size,
            m->tl[i].cpv.size,
            m->tl[i].state == MR_CORRUPT ? ", reneged" : "");
    }
    return 0;
}


static void
mr_main_close_copies(mr_mirror_t *m)
{
    size_t  i;

    for (i = 0; i < m->ntl; i++) {
        mr_inc_close(&m->tl[i]);
        mr_store_close(&m->tl[i]);
    }
}


/* The timelines as configured, order[] by ascending TID; no copy open. */
void
mr_main_init(mr_mirror_t *m)
{
    size_t    i, j;
    uint32_t  x;

    m->ntl = m->conf.ntl;
    for (i = 0; i < m->ntl; i++) {
        m->tl[i].conf = &m->conf.tl[i];
        m->tl[i].index = (uint32_t) i;
        m->tl[i].mirror = m;
        m->tl[i].fd = -1;
        m->order[i] = (uint32_t) i;
    }
    for (i = 1; i < m->ntl; i++) {
        for (j = i; j > 0 && m->conf.tl[m->order[j - 1]].tid
                             > m->conf.tl[m->order[j]].tid; j--)
        {
            x = m->order[j];
            m->order[j] = m->order[j - 1];
            m->order[j - 1] = x;
        }
    }
}


/* Drop the index and make it anew from the copies, reopened. */
static int
mr_main_rebuild(mr_mirror_t *m, sk_err_t *err)
{
    mr_main_close_copies(m);
    mr_index_close(m);
    m->ix_damaged = 0;
    if (mr_index_open(m, 1, err) != 0 || mr_main_open_copies(m, err) != 0) {
        return -1;
    }
    return 0;
}


/* Open every copy.  An index that does not fit the copies is rebuilt
 * from them, once. */
static int
mr_main_open(mr_mirror_t *m, sk_err_t *err)
{
    if (mkdir(m->conf.data_dir, 0755) != 0 && errno != EEXIST) {
        return sk_err_sys(err, "%s: mkdir", m->conf.data_dir);
    }
    mr_main_init(m);
    if (mr_index_open(m, 0, err) != 0) {
        return -1;
    }
    if (mr_main_open_copies(m, err) != 0) {
        if (!m->ix_damaged) {
            return -1;
        }
        mr_log("%s; rebuilding the index from the copies", err->msg);
        return mr_main_rebuild(m, err);
    }
    return 0;
}


/* SIGUSR1 from a thread that found the index damaged while serving
 * (mr_state_damaged): requests get 503 meanwhile (mr_http.c).  Stop the
 * threads, wait for the requests under way, rebuild, start again. */
static int
mr_main_heal(mr_mirror_t *m, sk_err_t *err)
{
    mr_sync_stop(m);
    mr_track_stop(m);
    mr_lock(m);
    m->serving = 0;
    while (m->requests > 0) {
        (void) mr_wait(m, &m->idle, NULL);
    }
    mr_unlock(m);
    if (mr_main_rebuild(m, err) != 0) {
        return -1;
    }
    mr_lock(m);
    m->stopping = 0;
    atomic_store(&m->halt, 0);
    m->gen++;                   /* no answer cached before is served */
    m->serving = 1;
    mr_unlock(m);
    mr_log("index %s/index rebuilt from the copies", m->conf.data_dir);
    return mr_sync_start(m, err) != 0 || mr_track_start(m, err) != 0
        ? -1 : 0;
}


static int
mr_main_run(mr_mirror_t *m)
{
    sk_httpd_t  *h = NULL;
    sk_err_t     err;
    sigset_t     set;
    int          rc = EX_OK, sig;

    sk_daemon_block(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    if (mr_main_open(m, &err) != 0 || mr_main_key(m, &err) != 0
        || mr_onion_setup(m, &err) != 0 || mr_cache_open(m, &err) != 0)
    {
        mr_log("%s", err.msg);
        return EX_CONFIG;
    }
    m->serving = 1;
    if (mr_metrics_start(m, &err) != 0 || mr_http_start(m, &h, &err) != 0
        || mr_sync_start(m, &err) != 0 || mr_track_start(m, &err) != 0)
    {
        mr_log("%s", err.msg);
        rc = EX_UNAVAILABLE;
    } else {
        mr_log("mirroring %zu timelines, listening on %s", m->ntl,
            m->conf.listen);
        (void) sk_daemon_notify("READY=1");
        while ((sig = sk_daemon_wait(&set)) == SIGUSR1) {
            if (m->ix_damaged && mr_main_heal(m, &err) != 0) {
                mr_log("%s", err.msg);
                rc = EX_SOFTWARE;
                break;
            }
        }
        if (rc == EX_OK) {
            mr_log("signal %d: stopping", sig);
        }
        (void) sk_daemon_notify("STOPPING=1");
    }
    sk_httpd_stop(h);
    mr_sync_stop(m);
    mr_track_stop(m);
    mr_metrics_stop(m);
    return rc;
}


int
main(int argc, char **argv)
{
    static mr_mirror_t  m;
    static const struct option  opts[] = {
        { "check", no_argument, NULL, 'C' },
        { NULL, 0, NULL, 0 }
    };
    const char         *conf = NULL;
    pthread_rwlockattr_t  va;
    sk_err_t            err;
    int                 check = 0, ixcheck = 0, c, rc;

    while ((c = getopt_long(argc, argv, "c:nh", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            conf = optarg;
            break;
        case 'n':
            check = 1;
            break;
        case 'C':
            ixcheck = 1;
            break;
        default:
            return mr_usage();
        }
    }
    if (conf == NULL || optind != argc || (check && ixcheck)) {
        return mr_usage();
    }
    pthread_mutex_init(&m.lock, NULL);
    pthread_rwlockattr_init(&va);
    pthread_rwlockattr_setkind_np(&va,
        PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&m.view, &va);
    pthread_rwlockattr_destroy(&va);
    for (c = 0; c < MR_MAX_TIMELINES; c++) {
        pthread_mutex_init(&m.snap_lock[c], NULL);
    }
    pthread_mutex_init(&m.rlock, NULL);
    pthread_cond_init(&m.wake, NULL);
    pthread_cond_init(&m.idle, NULL);
    if (mr_conf_load(&m.conf, conf, &err) != 0) {
        fprintf(stderr, "%s: configuration error: %s\n", MR_PROG, err.msg);
        return EX_CONFIG;
    }
    if (check) {
        printf("%s: %s: configuration ok\n", MR_PROG, conf);
        mr_conf_free(&m.conf);
        return EX_OK;
    }
    /* Answers allocate and free their buffers by the thousand a second:
     * at glibc's default trim threshold a thread's arena gave the memory
     * back to the kernel and faulted it in again, zeroed (sysmalloc and
     * page faults in the profile of uncached answers). */
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mr_roots_anchors(&m);
    if (ixcheck) {
        mr_main_init(&m);
        rc = mr_ixcheck(&m);
        sk_dnssec_anchors_free(m.anchors);
        mr_conf_free(&m.conf);
        return rc;
    }
    if (m.conf.ntl < 2) {
        mr_log("%s: only %zu timeline configured: answers need two", conf,
            m.conf.ntl);
    }
    mr_lru_init(&m.answers, m.conf.query_cache_size);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = mr_main_run(&m);
    mr_main_close_copies(&m);
    mr_index_close(&m);
    mr_lru_free(&m.answers);
    mr_cache_close(&m);
    sk_key_free(m.key);
    sk_dnssec_anchors_free(m.anchors);
    mr_conf_free(&m.conf);
    curl_global_cleanup();
    return rc;
}
