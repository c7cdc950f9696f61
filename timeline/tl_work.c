/*
 * tl_work.c -- the append threads.  A POST /append blocks (an OCSP
 * question, a clock behind the newest stamp, the group commit), and
 * libmicrohttpd's polling threads serve thousands of connections each:
 * so a request whose body is in is suspended and queued here, and one of
 * up to conf.threads threads runs it and resumes the connection.  Idle
 * connections cost a socket, not a thread.  Threads start when a task
 * finds none idle, and stay until the timeline stops.
 */
#define _GNU_SOURCE     /* pthread_setname_np */
#include <pthread.h>

#include <microhttpd.h>

#include "tl.h"


void
tl_work_init(tl_timeline_t *tl)
{
    tl_work_t  *w = &tl->work;

    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->gone, NULL);
}


static void *
tl_work_thread(void *arg)
{
    tl_work_t  *w = arg;
    tl_task_t  *t;

    pthread_setname_np(pthread_self(), "tl-append");
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->head == NULL && !w->stopping) {
            w->idle++;
            pthread_cond_wait(&w->wake, &w->lock);
            w->idle--;
        }
        if (w->head == NULL) {
            break;              /* stopping, and every task done */
        }
        t = w->head;
        w->head = t->next;
        if (w->head == NULL) {
            w->tail = NULL;
        }
        w->queued--;
        pthread_mutex_unlock(&w->lock);
        t->run(t);
        pthread_mutex_lock(&w->lock);
    }
    w->threads--;
    pthread_cond_broadcast(&w->gone);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}


int
tl_work_submit(tl_timeline_t *tl, tl_task_t *t, struct MHD_Connection *c)
{
    tl_work_t       *w = &tl->work;
    pthread_attr_t   attr;
    pthread_t        th;
    int              rc;

    pthread_mutex_lock(&w->lock);
    if (w->stopping) {
        pthread_mutex_unlock(&w->lock);
        return -1;
    }
    if (w->queued >= w->idle && w->threads < tl->conf.threads) {
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&th, &attr, tl_work_thread, w);
        pthread_attr_destroy(&attr);
        if (rc == 0) {
            w->threads++;
        } else if (w->threads == 0) {
            pthread_mutex_unlock(&w->lock);
            return -1;          /* nothing would ever run it */
        }
    }
    /* Before the task can run: its thread resumes c. */
    MHD_suspend_connection(c);
    t->next = NULL;
    if (w->tail != NULL) {
        w->tail->next = t;
    } else {
        w->head = t;
    }
    w->tail = t;
    w->queued++;
    pthread_mutex_unlock(&w->lock);
    pthread_cond_signal(&w->wake);  /* out of the lock: the thread woken
                                       does not wait for it */
    return 0;
}


void
tl_work_stop(tl_timeline_t *tl)
{
    tl_work_t  *w = &tl->work;

    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_broadcast(&w->wake);
    while (w->threads > 0) {
        pthread_cond_wait(&w->gone, &w->lock);
    }
    pthread_mutex_unlock(&w->lock);
}
