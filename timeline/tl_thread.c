/*
 * tl_thread.c -- the timeline's own long-lived threads (the sync thread,
 * the reply timer, the chunk publisher): started once, stopped by a flag
 * their loop reads under its lock.
 */
#include <pthread.h>

#include "tl.h"


int
tl_thread_start(tl_thread_t *t, void *(*run)(void *), void *arg,
    const char *what, sk_err_t *err)
{
    t->stop = 0;
    if (pthread_create(&t->th, NULL, run, arg) != 0) {
        return sk_err_set(err, SK_ERR_SYSTEM, "%s: cannot start a thread",
            what);
    }
    t->up = 1;
    return 0;
}


void
tl_thread_stop(tl_thread_t *t, pthread_mutex_t *lock, pthread_cond_t *wake)
{
    if (!t->up) {
        return;
    }
    pthread_mutex_lock(lock);
    t->stop = 1;
    pthread_cond_signal(wake);
    pthread_mutex_unlock(lock);
    pthread_join(t->th, NULL);
    t->up = 0;
}
