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
 * and the rest wait in the queue.  With a thread per task, 32 appends
 * shared 2 CPUs and finished together, late, their threads queued on the
 * timeline's lock; a queue answers each sooner (issue 25: 12 % more
 * appends).  A task about to wait for something other than the CPU says
 * so (tl_work_block), and another starts.
 *
 * The queue is fair among clients (issue 40): each client (an address or
 * an IPv6 /64, sk/httpd.h) has its own, first come first served, and the
 * clients with tasks queued are served in turn, so one client's flood
 * delays another's append by one append, not by the flood.  No client
 * holds more than a quarter of the threads (OCSP waits included).  A
 * task whose client has gone is dropped when its turn comes.  With
 * rate_global, a task takes a place before it runs, in the same turn
 * order: places come at rate_global a second, a second's worth at most
 * saved up; a task that finds none within TL_WORK_RATE_WAIT_MS is
 * answered 503 without being checked, and a place whose entry was not
 * stored is given back.
 */
#define _GNU_SOURCE     /* pthread_setname_np, sched_getaffinity */
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <microhttpd.h>

#include "tl.h"

#define TL_WORK_RATE_WAIT_MS  1000     /* for a place of rate_global */
#define TL_WORK_RATE_POLL_MS  10       /* for the next place */

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


/* With w->lock held: the queue of the client with this key (made if
 * make). */
static tl_wclient_t *
tl_work_client(tl_work_t *w, uint64_t key, int make)
{
    tl_wclient_t  **p = &w->clients[(key ^ key >> 32 ^ key >> 48)
                                    % TL_WORK_BUCKETS];

    while (*p != NULL && (*p)->key != key) {
        p = &(*p)->hnext;
    }
    if (*p == NULL && make && (*p = calloc(1, sizeof(**p))) != NULL) {
        (*p)->key = key;
    }
    return *p;
}


/* With w->lock held: a queue neither queued nor held goes. */
static void
tl_work_client_done(tl_work_t *w, tl_wclient_t *c)
{
    tl_wclient_t  **p;

    if (c->queued > 0 || c->held > 0 || c->in_ring) {
        return;
    }
    p = &w->clients[(c->key ^ c->key >> 32 ^ c->key >> 48)
                    % TL_WORK_BUCKETS];
    while (*p != c) {
        p = &(*p)->hnext;
    }
    *p = c->hnext;
    free(c);
}


/* With w->lock held: the task to run next, taken off its client's queue,
 * or NULL.  Clients take turns; one holding its share of the threads is
 * passed over; a task that waited too long for a place of rate_global is
 * taken to be refused.  Once stopping, every task left runs. */
static tl_task_t *
tl_work_next(tl_timeline_t *tl, int *wait_rate)
{
    tl_work_t     *w = &tl->work;
    tl_wclient_t  *c, *prev = NULL;
    tl_task_t     *t;
    unsigned       share = tl->conf.threads / 4 > 0 ? tl->conf.threads / 4
                                                    : 1;
    uint64_t       now;
    double         rate;
    int            place;

    *wait_rate = 0;
    if (w->ring == NULL || (w->running >= w->cpus && !w->stopping)) {
        return NULL;
    }
    for (c = w->ring; c != NULL; prev = c, c = c->rnext) {
        if (c->held < share || w->stopping) {
            break;
        }
    }
    if (c == NULL) {
        return NULL;
    }
    t = c->head;
    t->token = 0;
    place = 1;
    if (tl->conf.rate_global != 0 && !w->stopping) {
        now = tl_ms();
        rate = (double) tl->conf.rate_global;
        w->places += rate * (double) (now - w->places_at) / 1000;
        w->places = w->places > rate ? rate : w->places;
        w->places_at = now;
        if (w->places >= 1) {
            w->places -= 1;
            t->token = 1;
        } else if (now - t->queued_ms >= TL_WORK_RATE_WAIT_MS) {
            t->refuse = TL_UNAVAILABLE;
        } else {
            place = 0;
        }
    }
    if (!place) {
        *wait_rate = 1;         /* its turn stays: the next place is its */
        return NULL;
    }
    c->head = t->next;
    if (c->head == NULL) {
        c->tail = NULL;
    }
    c->queued--;
    c->held++;
    w->queued--;
    /* Its turn is over: to the end of the ring, or out of it. */
    if (prev != NULL) {
        prev->rnext = c->rnext;
    } else {
        w->ring = c->rnext;
    }
    if (w->ring_tail == c) {
        w->ring_tail = prev;
    }
    c->rnext = NULL;
    c->in_ring = 0;
    if (c->queued > 0) {
        if (w->ring_tail != NULL) {
            w->ring_tail->rnext = c;
        } else {
            w->ring = c;
        }
        w->ring_tail = c;
        c->in_ring = 1;
    }
    return t;
}


/* With w->lock held: whether a thread may look for a task now. */
static int
tl_work_ready(const tl_work_t *w)
{
    return w->ring != NULL && (w->running < w->cpus || w->stopping);
}


static void *
tl_work_thread(void *arg)
{
    tl_timeline_t    *tl = arg;
    tl_work_t        *w = &tl->work;
    tl_task_t        *t;
    tl_wclient_t     *q;
    struct timespec   ts;
    int               wait_rate;

    pthread_setname_np(pthread_self(), "tl-append");
    tl_work_self = w;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        t = tl_work_next(tl, &wait_rate);
        if (t == NULL) {
            if (w->stopping && w->ring == NULL) {
                break;          /* stopping, and every task done */
            }
            w->idle++;
            if (wait_rate) {
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += TL_WORK_RATE_POLL_MS * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                (void) pthread_cond_timedwait(&w->wake, &w->lock, &ts);
            } else {
                pthread_cond_wait(&w->wake, &w->lock);
            }
            w->idle--;
            continue;
        }
        w->running++;
        if (tl_work_ready(w) && w->idle > 0) {
            pthread_cond_signal(&w->wake);
        }
        pthread_mutex_unlock(&w->lock);
        /* Its client may have given up while it waited: no work for a
         * connection nobody reads (its place goes back). */
        if (t->refuse == TL_OK && sk_httpd_gone(t->c)) {
            t->refuse = TL_GONE;
            tl_work_refund(tl, t);
        }
        q = t->client;          /* t is gone once it ran */
        t->run(t);
        pthread_mutex_lock(&w->lock);
        w->running--;
        q->held--;
        tl_work_client_done(w, q);
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
    rc = pthread_create(&th, &attr, tl_work_thread, tl);
    pthread_attr_destroy(&attr);
    if (rc == 0) {
        w->threads++;
        return 0;
    }
    return w->threads == 0 ? -1 : 0;    /* -1: nothing would ever run it */
}


int
tl_work_submit(tl_timeline_t *tl, tl_task_t *t, struct MHD_Connection *c,
    uint64_t client)
{
    tl_work_t     *w = &tl->work;
    tl_wclient_t  *q;

    pthread_mutex_lock(&w->lock);
    q = w->stopping ? NULL : tl_work_client(w, client, 1);
    if (q == NULL) {
        pthread_mutex_unlock(&w->lock);
        return -1;
    }
    if (q->queued >= TL_WORK_QUEUE_MAX) {
        pthread_mutex_unlock(&w->lock);
        return 1;
    }
    /* Counted first, so that a thread starts for it if none is idle. */
    w->queued++;
    if (tl_work_spawn(tl) != 0) {
        w->queued--;
        tl_work_client_done(w, q);
        pthread_mutex_unlock(&w->lock);
        return -1;
    }
    /* Before the task can run: its thread resumes c. */
    MHD_suspend_connection(c);
    t->next = NULL;
    t->c = c;
    t->client = q;
    t->queued_ms = tl_ms();
    t->refuse = TL_OK;
    t->token = 0;
    if (q->tail != NULL) {
        q->tail->next = t;
    } else {
        q->head = t;
    }
    q->tail = t;
    q->queued++;
    if (!q->in_ring) {
        if (w->ring_tail != NULL) {
            w->ring_tail->rnext = q;
        } else {
            w->ring = q;
        }
        w->ring_tail = q;
        q->in_ring = 1;
    }
    pthread_mutex_unlock(&w->lock);
    pthread_cond_signal(&w->wake);  /* out of the lock: the thread woken
                                       does not wait for it */
    return 0;
}


void
tl_work_refund(tl_timeline_t *tl, tl_task_t *t)
{
    tl_work_t  *w = &tl->work;

    pthread_mutex_lock(&w->lock);
    if (t->token) {
        w->places += 1;         /* may pass the burst: spent again soon */
    }
    t->token = 0;
    pthread_mutex_unlock(&w->lock);
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
