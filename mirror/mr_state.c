/*
 * mr_state.c -- the timelines' states and the mirror's clock: the bottom
 * layer every other file of the mirror may call (it calls only mr_log),
 * with the note of damage found in the index.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "mr.h"


void
mr_lock(mr_mirror_t *m)
{
    pthread_mutex_lock(&m->lock);
    pthread_rwlock_wrlock(&m->view);
}


void
mr_unlock(mr_mirror_t *m)
{
    pthread_rwlock_unlock(&m->view);
    pthread_mutex_unlock(&m->lock);
}


int
mr_wait(mr_mirror_t *m, pthread_cond_t *c, const struct timespec *until)
{
    int  rc = 0;

    pthread_rwlock_unlock(&m->view);
    if (until != NULL) {
        rc = pthread_cond_timedwait(c, &m->lock, until);
    } else {
        pthread_cond_wait(c, &m->lock);
    }
    pthread_rwlock_wrlock(&m->view);
    return rc;
}


int64_t
mr_now(void)
{
    return (int64_t) time(NULL);
}


const char *
mr_state_name(mr_state_t s)
{
    static const char  *names[] = { "New", "Idle", "Syncing", "Stuck",
        "Defunct", "Corrupt" };

    return (unsigned) s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}


static int
mr_servable(mr_state_t s)
{
    return s == MR_IDLE || s == MR_SYNCING;
}


size_t
mr_state_servable(const mr_mirror_t *m)
{
    size_t  i, n = 0;

    for (i = 0; i < m->ntl; i++) {
        n += mr_servable(m->tl[i].state);
    }
    return n;
}


void
mr_state_set(mr_mirror_t *m, mr_tl_t *t, mr_state_t s,
    const char *reason)
{
    if (t->state == MR_CORRUPT) {
        return;
    }
    if (s != t->state) {
        mr_log("timeline %" PRIu64 ": %s -> %s%s%s", t->conf->tid,
            mr_state_name(t->state), mr_state_name(s),
            reason != NULL && reason[0] ? ": " : "",
            reason != NULL ? reason : "");
        /* Cached answers go when what they would show changes: a Stuck
         * timeline is shown from its last checked state, a Defunct one
         * not at all. */
        if (mr_servable(s) != mr_servable(t->state) || s == MR_STUCK
            || t->state == MR_STUCK)
        {
            m->gen++;
        }
        t->state = s;
    }
    if (reason != t->reason) {
        snprintf(t->reason, sizeof(t->reason), "%s", reason != NULL ? reason
                                                                    : "");
    }
}


void
mr_state_sleep(mr_mirror_t *m, uint64_t seconds)
{
    struct timespec  until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t) seconds;
    while (!m->stopping
           && mr_wait(m, &m->wake, &until) == 0)
    {
        /* woken early but not stopping: keep waiting */
    }
}


/* Damage in the index, found while it is read: SK_ERR_FORMAT before the
 * mirror serves (the start rebuilds it), else logged once, the main
 * thread told to rebuild it (SIGUSR1), and SK_ERR_UNAVAILABLE: the
 * mirror's problem, not the client's. */
int
mr_state_damaged(mr_mirror_t *m, sk_err_t *err, const char *fmt, ...)
{
    char     what[SK_ERR_MSG_MAX];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (!m->serving) {
        m->ix_damaged = 1;
        return sk_err_set(err, SK_ERR_FORMAT, "index %s/index/data.mdb: %s",
            m->conf.data_dir, what);
    }
    if (atomic_exchange(&m->ix_damaged, 1) == 0) {
        mr_log("index %s/index/data.mdb: %s; rebuilding the index from the "
            "copies", m->conf.data_dir, what);
        (void) kill(getpid(), SIGUSR1);
    }
    return sk_err_set(err, SK_ERR_UNAVAILABLE, "index %s/index/data.mdb: %s; "
        "the index is being rebuilt from the copies", m->conf.data_dir, what);
}
