/*
 * tl_work.c -- the append threads.  A POST /append blocks (an OCSP
 * question, a clock behind the newest stamp), and libmicrohttpd's polling
 * threads serve thousands of connections each: so a request whose body
 * is in is suspended and queued here, and one of up to conf.threads
 * threads runs it and resumes the connection.  Idle connections cost a
 * socket, not a thread.  Threads start when a task finds none idle, and
 * stay until the timeline stops.
 *
 * An append's checks are CPU work: at most one task per CPU runs at once,
 * and the rest wait in the queue, first come first served.  With a
 * thread per task, 32 appends shared 2 CPUs and finished together, late,
 * their threads queued on the timeline's lock; FIFO answers each sooner
 * (issue 25: 12 % more appends).  A task about to wait for something
 * other than the CPU says so (tl_work_block), and another starts.
 */
#define _GNU_SOURCE     /* pthread_setname_np, sched_getaffinity */
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <microhttpd.h>

#include "tl.h"

/* The pool the calling thread serves, if it is an append thread. */
static _Thread_local tl_work_t  *tl_work_self;


/* The CPUs this process may run on (taskset, systemd's CPUAffinity). */
static unsigned
tl_work_cpus(void)
{
    cpu_set_t  set;
    long       n;

    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    {
        return (unsigned) CPU_COUNT(&set);
    }
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned) n : 1;
}


void
tl_work_init(tl_timeline_t *tl)
{
    tl_work_t  *w = &tl->work;

    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->gone, NULL);
    w->cpus = tl_work_cpus();
}


/* With w->lock held: whether a thread may take the next task now.  Once
 * stopping, every task left runs. */
static int
tl_work_ready(const tl_work_t *w)
{
    return w->head != NULL && (w->running < w->cpus || w->stopping);
}


static void *
tl_work_thread(void *arg)
{
    tl_work_t  *w = arg;
    tl_task_t  *t;

    pthread_setname_np(pthread_self(), "tl-append");
    tl_work_self = w;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!tl_work_ready(w) && !(w->stopping && w->head == NULL)) {
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
        w->running++;
        if (tl_work_ready(w) && w->idle > 0) {
            pthread_cond_signal(&w->wake);
        }
        pthread_mutex_unlock(&w->lock);
        t->run(t);
        pthread_mutex_lock(&w->lock);
        w->running--;
    }
    w->threads--;
    pthread_cond_broadcast(&w->gone);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}


/* With w->lock held: one more thread, when a queued task could run now
 * and no idle thread will take it.  0 if one runs or could start. */
static int
tl_work_spawn(tl_timeline_t *tl)
{
    tl_work_t       *w = &tl->work;
    pthread_attr_t   attr;
    pthread_t        th;
    int              rc;

    if (w->queued <= w->idle || w->running + w->idle >= w->cpus
        || w->threads >= tl->conf.threads)
    {
        return 0;
    }
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, tl_work_thread, w);
    pthread_attr_destroy(&attr);
    if (rc == 0) {
        w->threads++;
        return 0;
    }
    return w->threads == 0 ? -1 : 0;    /* -1: nothing would ever run it */
}


int
tl_work_submit(tl_timeline_t *tl, tl_task_t *t, struct MHD_Connection *c)
{
    tl_work_t  *w = &tl->work;

    pthread_mutex_lock(&w->lock);
    if (w->stopping) {
        pthread_mutex_unlock(&w->lock);
        return -1;
    }
    /* Counted first, so that a thread starts for it if none is idle. */
    w->queued++;
    if (tl_work_spawn(tl) != 0) {
        w->queued--;
        pthread_mutex_unlock(&w->lock);
        return -1;
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
    pthread_mutex_unlock(&w->lock);
    pthread_cond_signal(&w->wake);  /* out of the lock: the thread woken
                                       does not wait for it */
    return 0;
}


void
tl_work_block(tl_timeline_t *tl)
{
    tl_work_t  *w = &tl->work;

    if (tl_work_self != w) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    w->running--;
    if (tl_work_ready(w)) {
        if (w->idle > 0) {
            pthread_cond_signal(&w->wake);
        } else {
            (void) tl_work_spawn(tl);   /* else a running one takes it */
        }
    }
    pthread_mutex_unlock(&w->lock);
}


/* Back to the CPU at once, one over the count for a while: waiting here
 * for a turn would make a task that already waited wait again. */
void
tl_work_unblock(tl_timeline_t *tl)
{
    tl_work_t  *w = &tl->work;

    if (tl_work_self != w) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    w->running++;
    pthread_mutex_unlock(&w->lock);
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
