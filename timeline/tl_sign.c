/*
 * tl_sign.c -- the checkpoint and the Timeline Freshness Message that
 * /checkpoint and /status serve: signed at least every
 * checkpoint_interval seconds, by a thread of their own, even when no
 * entry comes (so a client can tell a live timeline from a stopped one
 * within minutes, docs/protocol.md "Freshness"), and again when the
 * durable tree or what chunks publish has grown since (so they always
 * cover every entry a 201 acknowledged).  Between those they are served
 * from memory: a reader costs no signature, however many ask, and an
 * append never waits for one.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tl.h"


/* Sign n anew if it is missing, older than the interval (or from a later
 * clock: a test's clock_file went back), or covers less than is durable
 * (and, for the TFM, published).  Under tl->sign_lock. */
static int
tl_sign_note(tl_timeline_t *tl, tl_note_t *n, int tfm, sk_err_t *err)
{
    uint64_t  size, published = 0;
    int64_t   now = tl_now(tl);
    char     *buf;
    size_t    len;
    int       rc;

    pthread_mutex_lock(&tl->lock);
    size = tl->durable;
    pthread_mutex_unlock(&tl->lock);
    if (tfm) {
        published = tl_chunk_published(tl);
    }
    if (n->buf != NULL && n->size == size && n->published == published
        && now >= n->ts && now - n->ts < (int64_t) tl->conf.checkpoint_interval)
    {
        return 0;
    }
    rc = tfm ? tl_publish_tfm(tl, &buf, &len, published, err)
        : tl_publish_checkpoint(tl, &buf, &len, err);
    if (rc != 0) {
        return -1;
    }
    free(n->buf);
    n->buf = buf;
    n->len = len;
    n->size = size;
    n->published = published;
    n->ts = now;
    return 0;
}


int
tl_sign_get(tl_timeline_t *tl, int tfm, char **out, size_t *len,
    sk_err_t *err)
{
    tl_note_t  *n = tfm ? &tl->tfm_note : &tl->cp_note;
    int         rc;

    pthread_mutex_lock(&tl->sign_lock);
    rc = tl_sign_note(tl, n, tfm, err);
    if (rc == 0) {
        *out = malloc(n->len);
        if (*out == NULL) {
            rc = sk_err_set(err, SK_ERR_NOMEM, "%s",
                tfm ? "status" : "checkpoint");
        } else {
            memcpy(*out, n->buf, n->len);
            *len = n->len;
        }
    }
    pthread_mutex_unlock(&tl->sign_lock);
    return rc;
}


static void *
tl_sign_run(void *arg)
{
    tl_timeline_t    *tl = arg;
    struct timespec   ts;
    sk_err_t          err;

    pthread_mutex_lock(&tl->sign_lock);
    while (!tl->signer.stop) {
        if (tl_sign_note(tl, &tl->cp_note, 0, &err) != 0
            || tl_sign_note(tl, &tl->tfm_note, 1, &err) != 0)
        {
            tl_log("checkpoint: %s (retrying in %llu s)", err.msg,
                (unsigned long long) tl->conf.checkpoint_interval);
        } else {
            /* Signed, or a reader's signature of a grown tree is younger
             * than the interval: either way the timeline signs. */
            tl_metrics_signed(tl);
        }
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t) tl->conf.checkpoint_interval;
        pthread_cond_timedwait(&tl->sign_wake, &tl->sign_lock, &ts);
    }
    pthread_mutex_unlock(&tl->sign_lock);
    return NULL;
}


int
tl_sign_start(tl_timeline_t *tl, sk_err_t *err)
{
    return tl_thread_start(&tl->signer, tl_sign_run, tl, "checkpoint", err);
}


void
tl_sign_stop(tl_timeline_t *tl)
{
    tl_thread_stop(&tl->signer, &tl->sign_lock, &tl->sign_wake);
    free(tl->cp_note.buf);
    free(tl->tfm_note.buf);
    memset(&tl->cp_note, 0, sizeof(tl->cp_note));
    memset(&tl->tfm_note, 0, sizeof(tl->tfm_note));
}
