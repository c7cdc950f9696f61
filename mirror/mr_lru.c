/*
 * mr_lru.c -- the answer cache in memory: signed answers by what they
 * depend on -- the name (or the range of absent names a range answer
 * covers, mr_query.c) and since -- least recently used first out once
 * their bytes pass query_cache_size.  Answers for different since values
 * of one name are kept side by side: one does not push out the other.
 *
 * An answer is reused only for the same name and since, the same
 * generation (mr_mirror_t.gen: which timelines are servable; for a range
 * answer also absent_gen, which moves with every name that gets an
 * entry) and while younger than query_cache; a new entry for the name
 * drops its answers (mr_lru_drop, called as entries are merged), absent
 * or not.  Answers of absent names (range answers among them) may take a
 * quarter of the bytes at most, the least recently used of them going
 * first: a flood of names that do not exist cannot push out the answers
 * of names that do.  Each cached answer costs its bytes, its name and
 * this node, counted against the limit: memory stays bounded however
 * many distinct names are asked for.  Thread-safe: a lock of its own,
 * taken last (under the mirror's lock or its view alike).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sk/strtab.h>

#include "mr.h"

struct mr_ans_s {
    mr_ans_t   *hnext;          /* hash chain (by name) */
    mr_ans_t   *prev, *next;    /* use order in its class, newest first */
    uint64_t    hash;
    uint64_t    gen;
    int64_t     since, at;
    int         absent;         /* built for a name with no entries */
    size_t      len, cost;
    char       *ans;            /* in the same allocation, after name */
    char        name[];
};

/* What an allocation costs beyond its bytes (malloc's header, the
 * bucket pointer). */
#define MR_LRU_OVERHEAD  (2 * sizeof(void *) + 16)


void
mr_lru_init(mr_lru_t *c, uint64_t max)
{
    memset(c, 0, sizeof(*c));
    c->max = max;
    pthread_mutex_init(&c->lock, NULL);
}


/* The link to the answer for (name, since) in its chain, or to the
 * chain's end. */
static mr_ans_t **
mr_lru_chain(const mr_lru_t *c, const char *name, int64_t since, uint64_t h)
{
    mr_ans_t  **p = &c->bucket[h & (c->nbuckets - 1)];

    while (*p != NULL && ((*p)->hash != h || (*p)->since != since
                          || strcmp((*p)->name, name) != 0))
    {
        p = &(*p)->hnext;
    }
    return p;
}


static void
mr_lru_unlink(mr_lru_t *c, mr_ans_t *a)
{
    int  k = a->absent;

    if (a->prev != NULL) {
        a->prev->next = a->next;
    } else {
        c->head[k] = a->next;
    }
    if (a->next != NULL) {
        a->next->prev = a->prev;
    } else {
        c->tail[k] = a->prev;
    }
    a->prev = a->next = NULL;
}


static void
mr_lru_front(mr_lru_t *c, mr_ans_t *a)
{
    int  k = a->absent;

    a->next = c->head[k];
    a->prev = NULL;
    if (c->head[k] != NULL) {
        c->head[k]->prev = a;
    }
    c->head[k] = a;
    if (c->tail[k] == NULL) {
        c->tail[k] = a;
    }
}


/* Take a out of the cache and free it. */
static void
mr_lru_remove(mr_lru_t *c, mr_ans_t *a)
{
    mr_ans_t  **p = mr_lru_chain(c, a->name, a->since, a->hash);

    *p = a->hnext;
    mr_lru_unlink(c, a);
    c->bytes -= a->cost;
    c->absent_bytes -= a->absent ? a->cost : 0;
    c->n--;
    free(a);
}


/* Twice the buckets once there are more answers than buckets. */
static void
mr_lru_rehash(mr_lru_t *c)
{
    mr_ans_t  **b, *a, *next;
    size_t      n = c->nbuckets ? c->nbuckets * 2 : 1024, i;

    b = calloc(n, sizeof(*b));
    if (b == NULL) {
        return;                 /* longer chains, still correct */
    }
    for (i = 0; i < c->nbuckets; i++) {
        for (a = c->bucket[i]; a != NULL; a = next) {
            next = a->hnext;
            a->hnext = b[a->hash & (n - 1)];
            b[a->hash & (n - 1)] = a;
        }
    }
    free(c->bucket);
    c->bucket = b;
    c->nbuckets = n;
}


int
mr_lru_get(mr_lru_t *c, const char *name, int64_t since, uint64_t gen,
    int64_t min_at, char **out, size_t *len)
{
    mr_ans_t  *a;
    int        rc = -1;

    pthread_mutex_lock(&c->lock);
    a = c->n > 0 ? *mr_lru_chain(c, name, since, sk_strhash(name)) : NULL;
    if (a != NULL && (a->gen != gen || a->at < min_at)) {
        mr_lru_remove(c, a);    /* stale for good: servability changed,
                                   or too old */
    } else if (a != NULL && (*out = malloc(a->len + 1)) != NULL) {
        memcpy(*out, a->ans, a->len);
        (*out)[a->len] = '\0';
        *len = a->len;
        mr_lru_unlink(c, a);
        mr_lru_front(c, a);
        c->hits++;
        c->absent_hits += (uint64_t) a->absent;
        rc = 0;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}


/* Under the lock: the least recently used go while the cost passes the
 * limit, an absent name's first while those pass their quarter. */
static void
mr_lru_trim(mr_lru_t *c)
{
    while (c->absent_bytes > c->max / 4 && c->tail[1] != NULL) {
        mr_lru_remove(c, c->tail[1]);
        c->evictions++;
    }
    while (c->bytes > c->max && (c->tail[0] != NULL || c->tail[1] != NULL)) {
        mr_lru_remove(c, c->tail[1] != NULL ? c->tail[1] : c->tail[0]);
        c->evictions++;
    }
}


static void
mr_lru_put_locked(mr_lru_t *c, const char *name, int64_t since,
    uint64_t gen, int64_t at, int absent, const char *ans, size_t len)
{
    mr_ans_t  *a, **p;
    size_t     nlen = strlen(name), cost;
    uint64_t   h = sk_strhash(name);

    cost = sizeof(*a) + nlen + 1 + len + MR_LRU_OVERHEAD;
    if (c->max == 0 || cost > (absent ? c->max / 4 : c->max)) {
        return;
    }
    if (c->n + 1 > c->nbuckets) {
        mr_lru_rehash(c);
        if (c->nbuckets == 0) {
            return;
        }
    }
    p = mr_lru_chain(c, name, since, h);
    if (*p != NULL) {
        mr_lru_remove(c, *p);
    }
    a = malloc(sizeof(*a) + nlen + 1 + len);
    if (a == NULL) {
        return;
    }
    a->hash = h;
    a->gen = gen;
    a->since = since;
    a->at = at;
    a->absent = absent != 0;
    a->len = len;
    a->cost = cost;
    memcpy(a->name, name, nlen + 1);
    a->ans = a->name + nlen + 1;
    memcpy(a->ans, ans, len);
    p = &c->bucket[h & (c->nbuckets - 1)];
    a->hnext = *p;
    *p = a;
    mr_lru_front(c, a);
    c->bytes += cost;
    c->absent_bytes += a->absent ? cost : 0;
    c->n++;
    mr_lru_trim(c);
}


void
mr_lru_put(mr_lru_t *c, const char *name, int64_t since, uint64_t gen,
    int64_t at, int absent, const char *ans, size_t len)
{
    pthread_mutex_lock(&c->lock);
    mr_lru_put_locked(c, name, since, gen, at, absent, ans, len);
    pthread_mutex_unlock(&c->lock);
}


void
mr_lru_drop(mr_lru_t *c, const char *name)
{
    mr_ans_t  **p, *a;
    uint64_t    h = sk_strhash(name);

    pthread_mutex_lock(&c->lock);
    for (p = c->n > 0 ? &c->bucket[h & (c->nbuckets - 1)] : NULL;
         p != NULL && (a = *p) != NULL; )
    {
        if (a->hash == h && strcmp(a->name, name) == 0) {
            mr_lru_remove(c, a);        /* *p is the next now */
        } else {
            p = &a->hnext;
        }
    }
    pthread_mutex_unlock(&c->lock);
}


void
mr_lru_stats(mr_lru_t *c, mr_lru_stats_t *st)
{
    pthread_mutex_lock(&c->lock);
    st->n = c->n;
    st->bytes = c->bytes;
    st->max = c->max;
    st->hits = c->hits;
    st->absent_hits = c->absent_hits;
    st->evictions = c->evictions;
    pthread_mutex_unlock(&c->lock);
}


void
mr_lru_free(mr_lru_t *c)
{
    mr_ans_t  *a, *next;
    int        k;

    for (k = 0; k < 2; k++) {
        for (a = c->head[k]; a != NULL; a = next) {
            next = a->next;
            free(a);
        }
    }
    free(c->bucket);
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof(*c));
}
