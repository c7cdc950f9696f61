/*
 * mr_cache.c -- the answer cache in Redis (config answer_cache), so that
 * several mirror front-ends with one key share answers.  An answer is
 * signed, so a poisoned cache is detected by clients, not trusted; it is
 * reused only if it was built for the same servable timelines, from as
 * many entries for the name as this front-end holds, and is younger than
 * query_cache.  The sync threads also delete a name's answer as soon as a
 * new entry for it is merged, but a delete can fail (Redis away, then
 * back with its data): the entry count is what keeps an old answer out.
 * Without answer_cache the answers stay in memory (mr_lru.c).
 *
 * A Redis that fails (down, or hung, or slow: each call has one deadline
 * of MR_CACHE_MS for all its I/O) is left alone for a pause of 1 s,
 * doubling up to MR_CACHE_PAUSE_MAX, and answers are built fresh
 * meanwhile: one call in a pause waits for the deadline, not every
 * query.  No lock is held across the network: a call takes one of
 * MR_CACHE_CONNS handles from the idle list and gives it back after; when
 * all are in use the query does without the cache.  The log says when it
 * fails and when it answers again.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/conf.h>

#include "mr.h"

#define MR_CACHE_HEAD       "SK-Mirror-Cache: "
#define MR_CACHE_PAUSE_MAX  30      /* seconds */
#define MR_CACHE_MS         1000    /* all of one call's I/O */


/* Give c back, with how its call went (err NULL: well).  A failure
 * starts or lengthens the pause, once for all the calls under way. */
static void
mr_cache_give(mr_mirror_t *m, sk_cache_t *c, const sk_err_t *err)
{
    pthread_mutex_lock(&m->rlock);
    if (c != NULL) {
        m->ridle[m->nidle++] = c;
    } else {
        m->ropen--;
    }
    if (err == NULL || err->code == SK_ERR_NOT_FOUND) {
        if (m->rpause != 0) {
            mr_log("answer_cache: Redis answers again");
            m->rpause = 0;
        }
    } else {
        mr_metrics_redis_error(m);
        if (mr_now() >= atomic_load(&m->rpause_until)) {
            m->rpause = m->rpause == 0 ? 1
                : m->rpause * 2 > MR_CACHE_PAUSE_MAX ? MR_CACHE_PAUSE_MAX
                : m->rpause * 2;
            atomic_store(&m->rpause_until, mr_now() + (int64_t) m->rpause);
            mr_log("answer_cache: %s; answers are built fresh, Redis is "
                "asked again in %" PRIu64 " s", err->msg, m->rpause);
        }
    }
    pthread_mutex_unlock(&m->rlock);
}


/* A handle to ask Redis with now, or NULL: none configured, in a pause,
 * or all in use.  m->rlock is held only to take it. */
static sk_cache_t *
mr_cache_take(mr_mirror_t *m)
{
    sk_cache_t  *c = NULL;
    sk_err_t     err;
    int          make = 0;

    if (m->rcache == NULL || mr_now() < atomic_load(&m->rpause_until)) {
        return NULL;
    }
    pthread_mutex_lock(&m->rlock);
    if (mr_now() >= atomic_load(&m->rpause_until)) {
        if (m->nidle > 0) {
            c = m->ridle[--m->nidle];
        } else if (m->ropen < MR_CACHE_CONNS) {
            m->ropen++;
            make = 1;
        }
    }
    pthread_mutex_unlock(&m->rlock);
    if (make && sk_cache_open(&c, m->rcache, MR_CACHE_MS, &err) != 0) {
        mr_cache_give(m, c, &err);
        return NULL;
    }
    return c;
}


int
mr_cache_open(mr_mirror_t *m, sk_err_t *err)
{
    unsigned char  fp[SK_SHA256_BYTES];
    sk_cache_t    *c;

    if (m->conf.answer_cache == NULL) {
        return 0;
    }
    sk_key_spki_sha256(fp, m->key);
    snprintf(m->rprefix, sizeof(m->rprefix), "sk:mirror-answer:"
        "%02x%02x%02x%02x%02x%02x%02x%02x:", fp[0], fp[1], fp[2], fp[3],
        fp[4], fp[5], fp[6], fp[7]);
    if (sk_cache_open(&c, m->conf.answer_cache, MR_CACHE_MS, err) != 0) {
        if (c == NULL) {
            return sk_err_prefix(err, "answer_cache");
        }
        mr_log("answer_cache %s: %s (retried on use)",
            m->conf.answer_cache, err->msg);
    }
    m->rcache = m->conf.answer_cache;
    m->ridle[0] = c;
    m->nidle = m->ropen = 1;
    return 0;
}


static int
mr_cache_key(char *out, size_t cap, const mr_mirror_t *m, const char *name)
{
    return snprintf(out, cap, "%s%s", m->rprefix, name) < (int) cap
        && strlen(out) <= SK_CACHE_KEY_MAX ? 0 : -1;
}


/* One decimal field of the head line, [p, e), into *out. */
static int
mr_cache_num(uint64_t *out, const char *field, const char *p, const char *e,
    sk_err_t *err)
{
    char  num[24];

    if (e - p <= 0 || (size_t) (e - p) >= sizeof(num)
        || memchr(p, '\0', (size_t) (e - p)) != NULL)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"%s\": illegal value "
            "\"%.*s\" (want a number)", field,
            (int) (e - p < 0 ? 0 : e - p < 40 ? e - p : 40), p);
    }
    memcpy(num, p, (size_t) (e - p));
    num[e - p] = '\0';
    return sk_conf_u64(out, field, num, err);
}


int
mr_cache_parse(const unsigned char *v, size_t vlen, const char *servable,
    int64_t *built, uint64_t *nrefs, size_t *off, sk_err_t *err)
{
    const char  *p = (const char *) v, *nl, *sp;
    size_t       hl = strlen(MR_CACHE_HEAD), sl = strlen(servable);
    uint64_t     b;

    nl = memchr(p, '\n', vlen);
    if (nl == NULL || (size_t) (nl - p) < hl
        || memcmp(p, MR_CACHE_HEAD, hl) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "no \"%.*s\" head line",
            (int) hl - 2, MR_CACHE_HEAD);
    }
    p += hl;
    if ((size_t) (nl - p) <= sl || memcmp(p, servable, sl) != 0
        || p[sl] != ' ')
    {
        /* Built when other timelines were servable: not this answer. */
        return sk_err_set(err, SK_ERR_NOT_FOUND, "built for other "
            "timelines");
    }
    p += sl + 1;
    sp = memchr(p, ' ', (size_t) (nl - p));
    if (sp == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "head line: 2 fields after "
            "the timelines wanted (\"<built> <entries>\")");
    }
    if (mr_cache_num(&b, "built", p, sp, err) != 0
        || mr_cache_num(nrefs, "entries", sp + 1, nl, err) != 0)
    {
        return sk_err_prefix(err, "head line");
    }
    if (b > INT64_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "head line: \"built\": %"
            PRIu64 " is too large", b);
    }
    *built = (int64_t) b;
    *off = (size_t) (nl + 1 - (const char *) v);
    return 0;
}


int
mr_cache_get(mr_mirror_t *m, const char *name, const char *servable,
    size_t nrefs, char **out, size_t *len)
{
    unsigned char  *v;
    sk_cache_t     *c;
    sk_err_t        err;
    size_t          vlen, off;
    char            key[SK_CACHE_KEY_MAX + 64];
    int64_t         built;
    uint64_t        n;
    int             rc;

    if (mr_cache_key(key, sizeof(key), m, name) != 0
        || (c = mr_cache_take(m)) == NULL)
    {
        return -1;
    }
    rc = sk_cache_get(c, key, &v, &vlen, &err);
    mr_cache_give(m, c, rc != 0 ? &err : NULL);
    if (rc != 0) {
        return -1;
    }
    rc = -1;
    if (mr_cache_parse(v, vlen, servable, &built, &n, &off, &err) != 0) {
        if (err.code == SK_ERR_FORMAT) {
            /* Not what mr_cache_put() writes; the fresh answer built
             * instead replaces it. */
            mr_log("answer_cache: %s: %s", key, err.msg);
        }
    } else if (n == nrefs
               && mr_now() - built < (int64_t) m->conf.query_cache
               && mr_now() >= built)
    {
        *len = vlen - off;
        *out = malloc(*len + 1);
        if (*out != NULL) {
            memcpy(*out, v + off, *len);
            (*out)[*len] = '\0';
            rc = 0;
        }
    }
    free(v);
    return rc;
}


void
mr_cache_put(mr_mirror_t *m, const char *name, const char *servable,
    size_t nrefs, const char *answer, size_t len)
{
    mr_buf_t    b = { 0 };
    sk_cache_t *c;
    sk_err_t    err;
    char        key[SK_CACHE_KEY_MAX + 64];
    int         rc;

    if (m->rcache == NULL || mr_cache_key(key, sizeof(key), m, name) != 0) {
        return;
    }
    mr_buf_printf(&b, MR_CACHE_HEAD "%s %" PRId64 " %zu\n", servable,
        mr_now(), nrefs);
    mr_buf_add(&b, answer, len);
    if (b.failed || (c = mr_cache_take(m)) == NULL) {
        free(b.p);
        return;
    }
    rc = sk_cache_put(c, key, (unsigned char *) b.p, b.len, &err);
    mr_cache_give(m, c, rc != 0 ? &err : NULL);
    free(b.p);
}


void
mr_cache_del(mr_mirror_t *m, const char *name)
{
    sk_cache_t *c;
    sk_err_t    err;
    char        key[SK_CACHE_KEY_MAX + 64];
    int         rc;

    if (mr_cache_key(key, sizeof(key), m, name) != 0
        || (c = mr_cache_take(m)) == NULL)
    {
        return;
    }
    rc = sk_cache_del(c, key, &err);
    mr_cache_give(m, c, rc != 0 ? &err : NULL);
}


void
mr_cache_close(mr_mirror_t *m)
{
    while (m->nidle > 0) {
        sk_cache_close(m->ridle[--m->nidle]);
    }
    m->ropen = 0;
    m->rcache = NULL;
}
