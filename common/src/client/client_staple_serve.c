/*
 * client_staple_serve.c -- a server's staple (sk/staple_serve.h): for
 * each name, the cache's answer or a mirror's, checked as a client checks
 * it, refreshed once older than staple_refresh, kept while a mirror is
 * down until staple_max_age, and joined into what the server sends.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/staple_serve.h>


const char *
sk_staple_cause_name(sk_staple_cause_t cause)
{
    static const char *const  names[SK_STAPLE_CAUSES] = {
        "ok", "mirror_down", "bad_answer", "timeline_stale",
        "timeline_missing" };

    return (unsigned) cause < SK_STAPLE_CAUSES ? names[cause] : "?";
}


/* The cause an answer that did not check points at: a trusted timeline
 * missing from it, or too old in it; anything else is the answer's. */
static sk_staple_cause_t
sk_staple_cause(const sk_err_t *e)
{
    return e->code == SK_ERR_NOT_FOUND ? SK_STAPLE_TIMELINE_MISSING
        : e->code == SK_ERR_EXPIRED ? SK_STAPLE_TIMELINE_STALE
        : SK_STAPLE_BAD_ANSWER;
}


void
sk_staple_cache_key(char out[SK_CACHE_KEY_MAX + 1], const char *name)
{
    snprintf(out, SK_CACHE_KEY_MAX + 1, "sk:proof:%s", name);
}


int
sk_staple_set_init(sk_staple_set_t *set, const char *const *names, size_t n,
    sk_err_t *err)
{
    size_t  i, j;

    memset(set, 0, sizeof(*set));
    if (n == 0 || n > SK_STAPLE_MAX_ANSWERS) {
        return sk_err_set(err, SK_ERR_USAGE, "staple: %zu names, want 1 to "
            "%d", n, SK_STAPLE_MAX_ANSWERS);
    }
    for (i = 0; i < n; i++) {
        if (sk_name_check(names[i], strlen(names[i]), err) != 0) {
            return sk_err_prefix(err, "staple");
        }
        for (j = 0; j < i; j++) {
            if (strcmp(names[i], names[j]) == 0) {
                return sk_err_set(err, SK_ERR_USAGE, "staple: %s listed "
                    "twice", names[i]);
            }
        }
        snprintf(set->names[i].name, sizeof(set->names[i].name), "%s",
            names[i]);
    }
    set->n = n;
    return 0;
}


void
sk_staple_set_free(sk_staple_set_t *set)
{
    size_t  i;

    if (set == NULL) {
        return;
    }
    for (i = 0; i < set->n; i++) {
        sk_staple_free(&set->names[i].s);
    }
    free(set->buf);
    memset(set, 0, sizeof(*set));
}


static void
sk_staple_why(sk_staple_name_t *nm, const char *fmt, ...) SK_PRINTF(2, 3);

static void
sk_staple_why(sk_staple_name_t *nm, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(nm->why, sizeof(nm->why), fmt, ap);
    va_end(ap);
}


/* buf as name's staple of one answer, checked as a client would: *s and
 * its oldest checkpoint, from (the mirror's URL). */
static int
sk_staple_check_one(sk_staple_t *s, int64_t *oldest, char *from,
    size_t fromlen, const unsigned char *buf, size_t len, const char *name,
    const sk_client_trust_t *t, int64_t now, sk_err_t *err)
{
    const sk_client_mirror_t  *m;
    sk_client_view_t           v;
    int                        rc;

    if (sk_staple_parse(s, buf, len, err) != 0) {
        return -1;
    }
    if (s->n != 1 || strcmp(s->a[0].name, name) != 0) {
        sk_staple_free(s);
        return sk_err_set(err, SK_ERR_FORMAT, "not one answer for %s",
            name);
    }
    if (sk_client_staple_view(&v, &m, s, name, t, now, err) != 0) {
        sk_staple_free(s);
        return -1;
    }
    rc = sk_client_view_oldest(oldest, &v, t, err);
    sk_client_view_free(&v);
    if (rc != 0) {
        sk_staple_free(s);
        return -1;
    }
    snprintf(from, fromlen, "%s", m->url);
    return 0;
}


static void
sk_staple_adopt(sk_staple_name_t *nm, sk_staple_t *s, int64_t oldest,
    const char *from)
{
    sk_staple_free(&nm->s);
    nm->s = *s;
    nm->oldest = oldest;
    snprintf(nm->from, sizeof(nm->from), "%s", from);
}


/* The cache's copy, if younger than what nm holds.  1 adopted, 0 not (a
 * reason in why). */
static int
sk_staple_from_cache(sk_staple_name_t *nm, sk_cache_t *cache,
    const sk_client_trust_t *t, int64_t now, char *why, size_t whylen)
{
    char            key[SK_CACHE_KEY_MAX + 1], from[SK_CLIENT_URL_MAX];
    unsigned char  *val;
    size_t          len;
    int64_t         oldest;
    sk_staple_t     s;
    sk_err_t        e;
    int             rc;

    sk_staple_cache_key(key, nm->name);
    if (sk_cache_get(cache, key, &val, &len, &e) != 0) {
        if (e.code != SK_ERR_NOT_FOUND) {
            snprintf(why, whylen, "cache: %s", e.msg);
        }
        return 0;
    }
    rc = sk_staple_check_one(&s, &oldest, from, sizeof(from), val, len,
        nm->name, t, now, &e);
    free(val);
    if (rc != 0) {
        snprintf(why, whylen, "cache: %s", e.msg);
        return 0;
    }
    if (nm->s.buf != NULL && oldest <= nm->oldest) {
        sk_staple_free(&s);
        return 0;
    }
    sk_staple_adopt(nm, &s, oldest, from);
    return 1;
}


/* One mirror's answer for name as a staple of one answer, checked; if
 * not, *cause says why. */
static int
sk_staple_ask(sk_staple_t *s, int64_t *oldest, sk_staple_cause_t *cause,
    const sk_client_mirror_t *m, const char *name,
    const sk_client_trust_t *t, sk_client_fetch_fn fetch, void *arg,
    int64_t now, sk_err_t *err)
{
    sk_staple_answer_t   a;
    char                 url[SK_CLIENT_URL_MAX + SK_NAME_MAX + 16];
    char                 from[SK_CLIENT_URL_MAX];
    char                *body = NULL;
    unsigned char       *buf;
    size_t               len, blen;
    int                  status, rc;

    snprintf(url, sizeof(url), "%s/query/%s", m->url, name);
    *cause = SK_STAPLE_MIRROR_DOWN;
    if (fetch(&body, &len, &status, url, arg, err) != 0) {
        return sk_err_prefix(err, "unreachable");
    }
    if (status != 200) {
        rc = sk_err_set(err, SK_ERR_UNAVAILABLE, "HTTP %d: %.120s", status,
            body != NULL ? body : "");
        free(body);
        return rc;
    }
    snprintf(a.name, sizeof(a.name), "%s", name);
    sk_key_fingerprint(a.mirror, m->key);
    a.answer = body;
    a.len = len;
    rc = sk_staple_format(&buf, &blen, &a, 1, err);
    free(body);
    *cause = SK_STAPLE_BAD_ANSWER;
    if (rc != 0) {
        return -1;
    }
    rc = sk_staple_check_one(s, oldest, from, sizeof(from), buf, blen, name,
        t, now, err);
    free(buf);
    if (rc != 0) {
        *cause = sk_staple_cause(err);
    }
    return rc;
}


/* The mirrors (those listed with a key), in order, until one answers
 * younger than staple_refresh; else the youngest.  1 adopted, 0 none (the
 * last reason in why, the cause that says most in nm->cause). */
static int
sk_staple_from_mirrors(sk_staple_name_t *nm, const sk_client_trust_t *t,
    sk_client_fetch_fn fetch, void *arg, int64_t now, char *why,
    size_t whylen)
{
    const sk_client_mirror_t  *m, *best_m = NULL;
    sk_staple_t                s, best;
    sk_staple_cause_t          cause;
    int64_t                    oldest, best_oldest = INT64_MIN;
    sk_err_t                   e;
    size_t                     i;

    memset(&best, 0, sizeof(best));
    snprintf(why, whylen, "no mirror listed with a key");
    nm->cause = SK_STAPLE_MIRROR_DOWN;
    for (i = 0; i < t->nmirrors; i++) {
        m = &t->mirrors[i];
        if (m->key == NULL) {
            continue;
        }
        if (sk_staple_ask(&s, &oldest, &cause, m, nm->name, t, fetch, arg,
                now, &e) != 0)
        {
            snprintf(why, whylen, "mirror %.200s: %s", m->url, e.msg);
            nm->cause = cause > nm->cause ? cause : nm->cause;
            continue;
        }
        if (oldest <= best_oldest) {
            sk_staple_free(&s);
            continue;
        }
        sk_staple_free(&best);
        best = s;
        best_oldest = oldest;
        best_m = m;
        if (now - oldest < t->staple_refresh) {
            break;
        }
    }
    if (best_m == NULL) {
        return 0;
    }
    if (nm->s.buf != NULL && best_oldest <= nm->oldest) {
        sk_staple_free(&best);
        snprintf(why, whylen, "mirror %.200s: no younger than the answer "
            "held", best_m->url);
        nm->cause = SK_STAPLE_TIMELINE_STALE > nm->cause
            ? SK_STAPLE_TIMELINE_STALE : nm->cause;
        return 0;
    }
    sk_staple_adopt(nm, &best, best_oldest, best_m->url);
    return 1;
}


static void
sk_staple_store(sk_staple_name_t *nm, sk_cache_t *cache)
{
    char      key[SK_CACHE_KEY_MAX + 1];
    sk_err_t  e;
    size_t    n = strlen(nm->why);

    sk_staple_cache_key(key, nm->name);
    if (sk_cache_put(cache, key, (const unsigned char *) nm->s.buf,
            nm->s.len, &e) != 0)
    {
        snprintf(nm->why + n, sizeof(nm->why) - n, "; not stored in the "
            "cache: %s", e.msg);
    }
}


/* One name due for a refresh. */
static void
sk_staple_refresh_one(sk_staple_name_t *nm, const sk_client_trust_t *t,
    sk_cache_t *cache, sk_client_fetch_fn fetch, void *arg, int64_t now)
{
    char  why[SK_STAPLE_WHY_MAX] = "";

    nm->failed = 0;
    nm->cause = SK_STAPLE_RENEWED;
    nm->tried = now;
    if (cache != NULL
        && sk_staple_from_cache(nm, cache, t, now, why, sizeof(why))
        && now - nm->oldest < t->staple_refresh)
    {
        sk_staple_why(nm, "from the cache: answer of %s, %" PRId64 " s old",
            nm->from, now - nm->oldest);
        return;
    }
    if (fetch != NULL
        && sk_staple_from_mirrors(nm, t, fetch, arg, now, why, sizeof(why)))
    {
        nm->cause = SK_STAPLE_RENEWED;
        sk_staple_why(nm, "from mirror %s: %" PRId64 " s old", nm->from,
            now - nm->oldest);
        if (cache != NULL) {
            sk_staple_store(nm, cache);
        }
        return;
    }
    if (fetch == NULL) {
        nm->cause = SK_STAPLE_MIRROR_DOWN;      /* none asked */
        if (why[0] == '\0') {
            snprintf(why, sizeof(why), "%s", cache != NULL
                ? "none in the cache" : "no cache");
        }
    }
    nm->failed = 1;
    if (nm->s.buf == NULL) {
        sk_staple_why(nm, "none: %s", why);
    } else if (now - nm->oldest < t->staple_max_age) {
        sk_staple_why(nm, "kept the answer of %s, %" PRId64 " s old, "
            "%" PRId64 " s before staple_max_age: %s", nm->from,
            now - nm->oldest, nm->oldest + t->staple_max_age - now, why);
    } else {
        sk_staple_why(nm, "dropped the answer of %s: %" PRId64 " s old, "
            "beyond staple_max_age (%" PRId64 " s): %s", nm->from,
            now - nm->oldest, t->staple_max_age, why);
        sk_staple_free(&nm->s);
    }
}


/* buf, oldest and next from the names' answers; 1 if buf changed. */
static int
sk_staple_rebuild(sk_staple_set_t *set, const sk_client_trust_t *t,
    int64_t now, sk_err_t *err)
{
    const sk_staple_t   *parts[SK_STAPLE_MAX_ANSWERS];
    sk_staple_name_t    *nm;
    unsigned char       *buf = NULL;
    size_t               i, k = 0, len = 0;
    int64_t              oldest = INT64_MAX, next = INT64_MAX, due;
    int                  changed;

    for (i = 0; i < set->n; i++) {
        nm = &set->names[i];
        due = now + t->staple_retry;
        if (nm->s.buf != NULL && now - nm->oldest < t->staple_max_age) {
            parts[k++] = &nm->s;
            oldest = nm->oldest < oldest ? nm->oldest : oldest;
            if (!nm->failed) {
                due = nm->oldest + t->staple_refresh;
            }
            if (nm->oldest + t->staple_max_age < due) {
                due = nm->oldest + t->staple_max_age;   /* to drop it */
            }
        }
        next = due < next ? due : next;
    }
    if (k > 0 && sk_staple_join(&buf, &len, parts, k, err) != 0) {
        return -1;
    }
    changed = len != set->len
        || (len > 0 && memcmp(buf, set->buf, len) != 0);
    free(set->buf);
    set->buf = buf;
    set->len = len;
    set->oldest = k > 0 ? oldest : 0;
    set->next = next > now ? next : now + 1;
    return changed;
}


int
sk_staple_set_refresh(sk_staple_set_t *set, const sk_client_trust_t *t,
    sk_cache_t *cache, sk_client_fetch_fn fetch, void *arg, int64_t now,
    sk_err_t *err)
{
    sk_staple_name_t  *nm;
    int64_t            due;
    size_t             i;

    due = t->staple_refresh < t->staple_max_age ? t->staple_refresh
        : t->staple_max_age;
    for (i = 0; i < set->n; i++) {
        nm = &set->names[i];
        if (nm->s.buf == NULL || nm->failed || now - nm->oldest >= due) {
            sk_staple_refresh_one(nm, t, cache, fetch, arg, now);
        }
    }
    return sk_staple_rebuild(set, t, now, err);
}


int
sk_staple_set_offer(sk_staple_set_t *set, const unsigned char *buf,
    size_t len, const sk_client_trust_t *t, int64_t now, sk_err_t *err)
{
    sk_staple_name_t  *nm;
    sk_staple_t        all, one;
    unsigned char     *b;
    size_t             i, j, blen;
    int64_t            oldest;
    char               from[SK_CLIENT_URL_MAX];

    if (sk_staple_parse(&all, buf, len, NULL) != 0) {
        return sk_staple_rebuild(set, t, now, err);
    }
    for (i = 0; i < all.n; i++) {
        for (j = 0; j < set->n; j++) {
            nm = &set->names[j];
            if (strcmp(nm->name, all.a[i].name) != 0
                || sk_staple_format(&b, &blen, &all.a[i], 1, NULL) != 0)
            {
                continue;
            }
            if (sk_staple_check_one(&one, &oldest, from, sizeof(from), b,
                    blen, nm->name, t, now, NULL) == 0)
            {
                if (nm->s.buf == NULL || oldest > nm->oldest) {
                    sk_staple_adopt(nm, &one, oldest, from);
                    sk_staple_why(nm, "kept from before: answer of %s, "
                        "%" PRId64 " s old", nm->from, now - nm->oldest);
                } else {
                    sk_staple_free(&one);
                }
            }
            free(b);
        }
    }
    sk_staple_free(&all);
    return sk_staple_rebuild(set, t, now, err);
}
