/*
 * mr_lru.c -- the answer cache in memory: signed answers by name, least
 * recently used first out once their bytes pass query_cache_size.  An
 * answer for a name the mirror holds no entry for (an absent name) is
 * cached the same way, so a flood of queries for names that do not exist
 * costs one lookup each, not an answer built and signed each time.
 *
 * An answer is reused only for the same since, the same mr_mirror_t.gen
 * (which timelines are servable) and while younger than query_cache; a
 * new entry for the name drops it (mr_lru_drop, called as entries are
 * merged), absent or not.  Each cached answer costs its bytes, its name
 * and this node, counted against the limit: memory stays bounded however
 * many distinct names are asked for.  Called with the mirror's lock held.
 */
#include <stdlib.h>
#include <string.h>

#include <sk/strtab.h>

#include "mr.h"

struct mr_ans_s {
    mr_ans_t   *hnext;          /* hash chain */
    mr_ans_t   *prev, *next;    /* use order, newest first */
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
}


static mr_ans_t **
mr_lru_chain(const mr_lru_t *c, const char *name, uint64_t h)
{
    mr_ans_t  **p = &c->bucket[h & (c->nbuckets - 1)];

    while (*p != NULL && ((*p)->hash != h || strcmp((*p)->name, name) != 0))
    {
        p = &(*p)->hnext;
    }
    return p;
}


static void
mr_lru_unlink(mr_lru_t *c, mr_ans_t *a)
{
    if (a->prev != NULL) {
        a->prev->next = a->next;
    } else {
        c->head = a->next;
    }
    if (a->next != NULL) {
        a->next->prev = a->prev;
    } else {
        c->tail = a->prev;
    }
    a->prev = a->next = NULL;
}


static void
mr_lru_front(mr_lru_t *c, mr_ans_t *a)
{
    a->next = c->head;
    a->prev = NULL;
    if (c->head != NULL) {
        c->head->prev = a;
    }
    c->head = a;
    if (c->tail == NULL) {
        c->tail = a;
    }
}


/* Take a out of the cache and free it. */
static void
mr_lru_remove(mr_lru_t *c, mr_ans_t *a)
{
    mr_ans_t  **p = mr_lru_chain(c, a->name, a->hash);

    *p = a->hnext;
    mr_lru_unlink(c, a);
    c->bytes -= a->cost;
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

    if (c->n == 0) {
        return -1;
    }
    a = *mr_lru_chain(c, name, sk_strhash(name));
    if (a == NULL || a->since != since) {
        return -1;
    }
    if (a->gen != gen || a->at < min_at) {
        mr_lru_remove(c, a);    /* stale for good: servability changed,
                                   or too old */
        return -1;
    }
    *out = malloc(a->len + 1);
    if (*out == NULL) {
        return -1;
    }
    memcpy(*out, a->ans, a->len);
    (*out)[a->len] = '\0';
    *len = a->len;
    mr_lru_unlink(c, a);
    mr_lru_front(c, a);
    c->hits++;
    c->absent_hits += (uint64_t) a->absent;
    return 0;
}


void
mr_lru_put(mr_lru_t *c, const char *name, int64_t since, uint64_t gen,
    int64_t at, int absent, const char *ans, size_t len)
{
    mr_ans_t  *a, **p;
    size_t     nlen = strlen(name), cost;
    uint64_t   h = sk_strhash(name);

    cost = sizeof(*a) + nlen + 1 + len + MR_LRU_OVERHEAD;
    if (c->max == 0 || cost > c->max) {
        return;
    }
    if (c->n + 1 > c->nbuckets) {
        mr_lru_rehash(c);
        if (c->nbuckets == 0) {
            return;
        }
    }
    p = mr_lru_chain(c, name, h);
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
    a->absent = absent;
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
    c->n++;
    while (c->bytes > c->max && c->tail != NULL) {
        mr_lru_remove(c, c->tail);
        c->evictions++;
    }
}


void
mr_lru_drop(mr_lru_t *c, const char *name)
{
    mr_ans_t  *a;

    if (c->n == 0) {
        return;
    }
    a = *mr_lru_chain(c, name, sk_strhash(name));
    if (a != NULL) {
        mr_lru_remove(c, a);
    }
}


void
mr_lru_free(mr_lru_t *c)
{
    mr_ans_t  *a, *next;

    for (a = c->head; a != NULL; a = next) {
        next = a->next;
        free(a);
    }
    free(c->bucket);
    memset(c, 0, sizeof(*c));
}
