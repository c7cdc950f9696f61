/*
 * tl_open.c -- a timeline's data directory, opened to serve it, to check
 * it or to repair it: one user at a time, the key, then every file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sk/keyfile.h>

#include "tl.h"


void
tl_init(tl_timeline_t *tl, tl_mode_t mode)
{
    pthread_condattr_t  ca;

    memset(tl, 0, sizeof(*tl));
    tl->mode = mode;
    tl->dir_fd = tl->signed_fd = -1;
    tl->log.fd = tl->calog_file.fd = tl->inc.fd = -1;
    tl->log_io.read_leaf = tl_store_read_leaf;
    tl->log_io.read_tree = tl_store_read_tree;
    tl->log_io.write = tl_store_write;
    pthread_mutex_init(&tl->lock, NULL);
    /* Appends wait for a sync with a deadline on the monotonic clock. */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&tl->synced, &ca);
    pthread_cond_init(&tl->batch[0], &ca);
    pthread_cond_init(&tl->batch[1], &ca);
    pthread_cond_init(&tl->reply_wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&tl->park_wake, NULL);
    tl->reply_armed = UINT64_MAX;
    pthread_cond_init(&tl->jobs_done, NULL);
    pthread_mutex_init(&tl->chunk_lock, NULL);
    pthread_mutex_init(&tl->store_lock, NULL);
    pthread_rwlock_init(&tl->calog_lock, NULL);
    pthread_cond_init(&tl->chunk_wake, NULL);
    pthread_mutex_init(&tl->sign_lock, NULL);
    pthread_cond_init(&tl->sign_wake, NULL);
}


void
tl_free(tl_timeline_t *tl)
{
    tl_sign_stop(tl);
    tl_chunk_stop(tl);
    tl_ocsp_free(tl);
    tl_token_free(tl);
    tl_store_close(tl);
    tl_calog_close(tl);
    tl_inc_close(tl);
    tl_signed_close(tl);
    tl_state_free(tl);
    tl_validate_free(tl);
    sk_key_free(tl->key);
    sk_key_free(tl->operator_key);
    if (tl->dir_fd >= 0) {
        close(tl->dir_fd);
    }
    tl_conf_free(&tl->conf);
}


/* Two processes on one data_dir would write one log: the second fork of
 * all.  The lock goes with the process, even on kill -9. */
int
tl_open_lock(tl_timeline_t *tl, sk_err_t *err)
{
    tl->dir_fd = open(tl->conf.data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tl->dir_fd < 0) {
        return sk_err_sys(err, "%s: open", tl->conf.data_dir);
    }
    if (flock(tl->dir_fd, (tl->mode == TL_CHECK ? LOCK_SH : LOCK_EX)
            | LOCK_NB) != 0)
    {
        return errno == EWOULDBLOCK
            ? sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: in use by another "
                  "sk-timeline (serving, or --repair): stop it first",
                  tl->conf.data_dir)
            : sk_err_sys(err, "%s: flock", tl->conf.data_dir);
    }
    return 0;
}


/* Does data_dir hold no timeline yet?  Then, and only then, a missing key
 * is made: anywhere else a new key would be a second identity.  *what
 * names what was found. */
static int
tl_open_fresh(const tl_timeline_t *tl, const char **what)
{
    static const char *const  any[] = { TL_PUB_FILE, TL_SIGNED_FILE,
                                        "chunks/index" };
    static const char *const  nonempty[] = { TL_LOG_FILE, TL_CALOG_FILE,
                                             TL_INC_FILE };
    struct stat               st;
    char                      path[4096];
    size_t                    i;

    for (i = 0; i < sizeof(any) / sizeof(any[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", tl->conf.data_dir, any[i]);
        if (lstat(path, &st) == 0) {
            *what = any[i];
            return 0;
        }
    }
    for (i = 0; i < sizeof(nonempty) / sizeof(nonempty[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", tl->conf.data_dir,
            nonempty[i]);
        if (lstat(path, &st) == 0 && st.st_size > 0) {
            *what = nonempty[i];
            return 0;
        }
    }
    return 1;
}


/* The timeline key: loaded, or made (0600) in a new data_dir only. */
int
tl_open_key(tl_timeline_t *tl, sk_err_t *err)
{
    const char  *what = NULL;
    char         pub[4096], fp[SK_FINGERPRINT_SIZE];
    int          created, fresh;

    snprintf(pub, sizeof(pub), "%s/%s", tl->conf.data_dir, TL_PUB_FILE);
    fresh = tl->mode == TL_RUN && tl_open_fresh(tl, &what);
    if (sk_keyfile_open(&tl->key, &created, tl->conf.key_file, pub, fresh,
            err) != 0)
    {
        if (err->code == SK_ERR_NOT_FOUND && what != NULL) {
            return sk_err_set(err, SK_ERR_NOT_FOUND, "%s: missing, yet "
                "%s/%s shows a timeline lives here: restore its key from a "
                "backup (a new key would be a new identity)",
                tl->conf.key_file, tl->conf.data_dir, what);
        }
        return -1;
    }
    if (created) {
        sk_key_fingerprint(fp, tl->key);
        tl_log("%s: new timeline key %s", tl->conf.key_file, fp);
    }
    return 0;
}


/*
 * After tl_store_settle: append the Map-Root due, synced and signed.  A
 * Map-Root that cannot be written (a full disk) does not keep the
 * timeline from serving: it shows what signed-head holds, as before the
 * stop, and takes appends, whose batch's Map-Root seals these entries too
 * once there is space (tl_store_seal), as for a batch that failed while
 * serving.  A Map-Root written but not indexed only leaves the index
 * behind (retried, as any flush).
 */
static int
tl_open_map(tl_timeline_t *tl, sk_err_t *err)
{
    sk_merkle_hash_t  root;
    uint64_t          from = tl->size;

    if (!tl->map_seal) {
        return 0;
    }
    tl_log("%s: %" PRIu64 " entries and no Map-Root entry after them: the "
        "name map is built from the log, a Map-Root entry appended",
        tl->log.path, tl->size);
    if (tl_index_flush(tl, err) != 0) {
        if (tl->map_seal) {
            tl->logged = tl->durable = tl->signed_size;
            tl_log("%s (no Map-Root entry could be appended: serving the "
                "%" PRIu64 " entries signed-head holds; the first batch "
                "appended once there is space seals the %" PRIu64 " after "
                "them)", err->msg, tl->signed_size,
                tl->size - tl->signed_size);
            return 0;
        }
        tl_log("%s: flush: %s (the index lags; retried)", tl->db_dir,
            err->msg);
        if (fdatasync(tl->log.fd) != 0) {
            return sk_err_sys(err, "%s: fdatasync", tl->log.path);
        }
    }
    if (sk_merkle_tree_root(root, tl->tree, tl->size, err) != 0
        || tl_signed_write(tl, tl->size, root, err) != 0)
    {
        return -1;
    }
    tl->logged = tl->durable = tl->size;
    tl_log("%s: Map-Root entry at SN %" PRIu64 ": %" PRIu64 " names",
        tl->log.path, from, tl->map_names);
    return 0;
}


int
tl_open(tl_timeline_t *tl, sk_err_t *err)
{
    if (tl_open_lock(tl, err) != 0 || tl_open_key(tl, err) != 0
        || (tl->conf.operator_key != NULL
            && sk_key_load_public(&tl->operator_key, tl->conf.operator_key,
                   err) != 0)
        || tl_signed_open(tl, err) != 0
        || tl_inc_open(tl, err) != 0 || tl_calog_open(tl, err) != 0
        || tl_store_open(tl, err) != 0 || tl_chunk_open(tl, err) != 0)
    {
        return -1;
    }
    if (tl->mode != TL_RUN) {
        return 0;
    }
    /* Every check passed: only now cut torn tails, then bring the index
     * level with the log, so the next start reads nothing twice. */
    if (tl_store_settle(tl, err) != 0) {
        return -1;
    }
    tl->db_ready = 1;
    if (tl_open_map(tl, err) != 0) {
        return -1;
    }
    /* The log is the truth and is whole: an index that cannot be written
     * now (a full disk) only lags, and the next flush or start catches up
     * (with a Map-Root due, the first batch's seal). */
    if (!tl->map_seal && tl_index_flush(tl, err) != 0) {
        tl_log("%s: flush: %s (the index lags; retried)", tl->db_dir,
            err->msg);
    }
    return 0;
}
