/*
 * mr_cache.c -- the answer cache in Redis (config answer_cache), so that
 * several mirror front-ends with one key share answers.  An answer is
 * signed, so a poisoned cache is detected by clients, not trusted; it is
 * reused only if it was built for the same servable timelines and is
 * younger than query_cache, and the sync threads delete a name's answer
 * as soon as a new entry for it is merged.  Without answer_cache the
 * answers stay in memory (mr_names.c).  A Redis outage is logged and
 * answers are built fresh.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mr.h"

#define MR_CACHE_HEAD  "SK-Mirror-Cache: "


int
mr_cache_open(mr_mirror_t *m, sk_err_t *err)
{
    unsigned char  fp[SK_SHA256_BYTES];

    if (m->conf.answer_cache == NULL) {
        return 0;
    }
    sk_key_spki_sha256(fp, m->key);
    snprintf(m->rprefix, sizeof(m->rprefix), "sk:mirror-answer:"
        "%02x%02x%02x%02x%02x%02x%02x%02x:", fp[0], fp[1], fp[2], fp[3],
        fp[4], fp[5], fp[6], fp[7]);
    if (sk_cache_open(&m->rcache, m->conf.answer_cache, 1000, err) != 0) {
        if (m->rcache == NULL) {
            return sk_err_prefix(err, "answer_cache");
        }
        mr_log("answer_cache %s: %s (retried on use)",
            m->conf.answer_cache, err->msg);
    }
    return 0;
}


static int
mr_cache_key(char *out, size_t cap, const mr_mirror_t *m, const char *name)
{
    return snprintf(out, cap, "%s%s", m->rprefix, name) < (int) cap
        && strlen(out) <= SK_CACHE_KEY_MAX ? 0 : -1;
}


int
mr_cache_get(mr_mirror_t *m, const char *name, const char *servable,
    char **out, size_t *len)
{
    unsigned char  *v;
    sk_err_t        err;
    size_t          vlen, hl = strlen(MR_CACHE_HEAD), sl = strlen(servable);
    char            key[SK_CACHE_KEY_MAX + 64], *nl, *end;
    long long       built;
    int             rc;

    if (m->rcache == NULL || mr_cache_key(key, sizeof(key), m, name) != 0) {
        return -1;
    }
    pthread_mutex_lock(&m->rlock);
    rc = sk_cache_get(m->rcache, key, &v, &vlen, &err);
    pthread_mutex_unlock(&m->rlock);
    if (rc != 0) {
        if (err.code != SK_ERR_NOT_FOUND) {
            mr_log("answer_cache: %s", err.msg);
        }
        return -1;
    }
    nl = memchr(v, '\n', vlen);
    rc = -1;
    if (nl != NULL && vlen > hl + sl + 1
        && memcmp(v, MR_CACHE_HEAD, hl) == 0
        && memcmp(v + hl, servable, sl) == 0 && v[hl + sl] == ' ')
    {
        built = strtoll((char *) v + hl + sl + 1, &end, 10);
        if (end == nl && mr_now() - built < (int64_t) m->conf.query_cache
            && mr_now() >= built)
        {
            *len = vlen - (size_t) (nl + 1 - (char *) v);
            *out = malloc(*len + 1);
            if (*out != NULL) {
                memcpy(*out, nl + 1, *len);
                (*out)[*len] = '\0';
                rc = 0;
            }
        }
    }
    free(v);
    return rc;
}


void
mr_cache_put(mr_mirror_t *m, const char *name, const char *servable,
    const char *answer, size_t len)
{
    mr_buf_t  b = { 0 };
    sk_err_t  err;
    char      key[SK_CACHE_KEY_MAX + 64];
    int       rc;

    if (m->rcache == NULL || mr_cache_key(key, sizeof(key), m, name) != 0) {
        return;
    }
    mr_buf_printf(&b, MR_CACHE_HEAD "%s %" PRId64 "\n", servable, mr_now());
    mr_buf_add(&b, answer, len);
    if (b.failed) {
        free(b.p);
        return;
    }
    pthread_mutex_lock(&m->rlock);
    rc = sk_cache_put(m->rcache, key, (unsigned char *) b.p, b.len, &err);
    pthread_mutex_unlock(&m->rlock);
    if (rc != 0) {
        mr_log("answer_cache: %s", err.msg);
    }
    free(b.p);
}


void
mr_cache_del(mr_mirror_t *m, const char *name)
{
    sk_err_t  err;
    char      key[SK_CACHE_KEY_MAX + 64];
    int       rc;

    if (m->rcache == NULL || mr_cache_key(key, sizeof(key), m, name) != 0) {
        return;
    }
    pthread_mutex_lock(&m->rlock);
    rc = sk_cache_del(m->rcache, key, &err);
    pthread_mutex_unlock(&m->rlock);
    if (rc != 0 && err.code != SK_ERR_NOT_FOUND) {
        mr_log("answer_cache: %s", err.msg);
    }
}


void
mr_cache_close(mr_mirror_t *m)
{
    sk_cache_close(m->rcache);
    m->rcache = NULL;
}
