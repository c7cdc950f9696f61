/*
 * client_lookup.c -- design 4.b's query loop for one name.
 *
 *   1. The cached view, if every trusted timeline's checkpoint in it is
 *      within T1: no query.
 *   1b. The server's staple (sk_client_lookup_ctx), if its answer for the
 *      name verifies, is within staple_max_age and omits nothing the
 *      client holds: no query either.
 *   2. Else mirrors in order (dropped ones skipped), at most n_retries
 *      asked: GET <mirror>/query/<name>?nonce=<new nonce>, directly
 *      and, when that brings nothing signed for the nonce (no answer, an
 *      HTTP error, a replay), over Tor to the mirror's onion; or only
 *      over Tor, or only directly (mirror_tor).  An answer signed for the
 *      nonce that does not verify, is less fresh than what the mirror
 *      said before, or omits or alters an entry the client holds gets the
 *      mirror dropped (remembered in the cache).  The first answer fresh
 *      enough wins; it is merged with the cached timelines it lacks and
 *      cached.
 *   3. None: the cached view if it is fresh enough itself (T2), else
 *      fail open if more than max_derelict timelines were shown stopped
 *      (sk_cl_stops_t: evidence, never silence; or by trust->fail_open),
 *      else fail closed: the best view at hand comes back, which may
 *      only make the decision stricter (sk_client_found_decision_ok).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/client.h>
#include <sk/nonce.h>

#include "client_int.h"

typedef struct {
    sk_client_trust_t        *t;    /* the caller's, less the timelines
                                       the client holds as reneged */
    sk_client_cache_t        *cache;
    sk_client_fetch_fn        fetch;
    void                     *arg;
    sk_client_fetch_fn        fetch_tor;    /* NULL: no Tor */
    void                     *tor_arg;
    int64_t                   now;
    const char               *name;
    const sk_staple_t        *staple;       /* NULL: none */
    sk_client_view_t          cached;       /* empty if none */
    int                       have_cached;
    sk_cl_stops_t             stops;        /* timelines shown stopped */
} sk_lookup_t;


static void
sk_lookup_log(sk_client_result_t *res, const char *url, const char *fmt,
    ...) SK_PRINTF(3, 4);

static void
sk_lookup_log(sk_client_result_t *res, const char *url, const char *fmt,
    ...)
{
    sk_client_try_t  *tr;
    va_list           ap;

    if (res->ntries == SK_CLIENT_LOG_MAX) {
        return;
    }
    tr = &res->tries[res->ntries++];
    snprintf(tr->url, sizeof(tr->url), "%s", url);
    va_start(ap, fmt);
    vsnprintf(tr->what, sizeof(tr->what), fmt, ap);
    va_end(ap);
}


/* Add src's trusted timelines that dst lacks (checkpoint and entries). */
static int
sk_lookup_merge(sk_client_view_t *dst, const sk_client_view_t *src,
    const sk_client_trust_t *t, sk_err_t *err)
{
    const sk_client_cp_t  *cp;
    sk_client_cp_t        *ncp;
    size_t                 i, j;

    for (i = 0; i < src->ncps; i++) {
        cp = &src->cps[i];
        if (sk_client_view_cp(dst, cp->tid) != NULL
            || sk_client_trust_find(t, cp->tid) == NULL)
        {
            continue;
        }
        if (sk_client_view_add_cp(dst, cp->tid, cp->note, cp->notelen, err)
            != 0)
        {
            return -1;
        }
        if (cp->last != NULL
            && sk_client_view_set_last(dst, cp->tid, cp->last, cp->lastlen,
                   &cp->last_proof, cp->mproof, err) != 0)
        {
            return -1;
        }
        ncp = &dst->cps[dst->ncps - 1];
        ncp->cp = cp->cp;
        ncp->ts = cp->ts;
        ncp->map = cp->map;
        memcpy(ncp->state, cp->state, sizeof(ncp->state));
        for (j = 0; j < src->nitems; j++) {
            if (src->items[j].tid == cp->tid
                && sk_client_view_add_item(dst, src->items[j].text,
                       src->items[j].len, &src->items[j].proof, err) != 0)
            {
                return -1;
            }
        }
    }
    return 0;
}


/* One way to a mirror: the URL queries go to, and the fetch there. */
typedef struct {
    const char          *base;      /* its URL, or its onion's */
    sk_client_fetch_fn   fetch;
    void                *arg;
} sk_path_t;

/* What asking a mirror on one path gave. */
enum {
    SK_ASK_FAIL = -1,       /* a local failure */
    SK_ASK_NONE = 0,        /* the mirror answered, nothing usable */
    SK_ASK_OK = 1,          /* a verified answer */
    SK_ASK_PATH = 2         /* nothing signed for the nonce: another
                               path may do better */
};


static void
sk_lookup_drop(sk_lookup_t *l, sk_client_result_t *res,
    sk_client_mstate_t *st, const sk_err_t *why)
{
    st->dropped = 1;
    snprintf(st->why, sizeof(st->why), "%s", why->msg);
    sk_lookup_log(res, st->url, "dropped: %s", why->msg);
    if (l->cache != NULL && sk_client_cache_put_mirror(l->cache, st, NULL)
        != 0)
    {
        sk_lookup_log(res, st->url, "could not remember the drop in the "
            "cache");
    }
}


/* The mirror's Reneged-Hash is not the one whose list the client went
 * through: fetch its /reneged list and, for each timeline still trusted,
 * its evidence; evidence the client verifies itself takes the timeline
 * out of its trust, for good (kept in the cache).  How many it took out;
 * -1 on a local failure. */
static int
sk_lookup_reneged(sk_lookup_t *l, sk_client_result_t *res,
    const sk_path_t *p, sk_client_mstate_t *st, const char *hash)
{
    char       url[SK_CLIENT_URL_MAX + 48], *list, *ev, *q, *nl, *reason;
    size_t     len, evlen;
    uint64_t   tid;
    int        status, done = 1, n = 0;
    sk_err_t   e;

    if (strcmp(hash, "e3b0c442") == 0) {        /* an empty list */
        memcpy(st->reneged_hash, hash, 9);
        return 0;
    }
    snprintf(url, sizeof(url), "%s/reneged", p->base);
    if (p->fetch(&list, &len, &status, url, p->arg, &e) != 0) {
        sk_lookup_log(res, p->base, "Reneged-Hash %s: GET /reneged: %s", hash,
            e.msg);
        return 0;
    }
    if (status != 200) {
        sk_lookup_log(res, p->base, "Reneged-Hash %s: GET /reneged: HTTP %d",
            hash, status);
        free(list);
        return 0;
    }
    for (q = list; q < list + len && (nl = memchr(q, '\n',
             (size_t) (list + len - q))) != NULL; q = nl + 1)
    {
        *nl = '\0';
        if (sk_cl_nums(q, &tid, NULL) != 0
            || sk_client_trust_find(l->t, tid) == NULL)
        {
            continue;       /* not a timeline the client (still) trusts */
        }
        snprintf(url, sizeof(url), "%s/reneged/%" PRIu64, p->base, tid);
        if (p->fetch(&ev, &evlen, &status, url, p->arg, &e) != 0) {
            done = 0;
            continue;
        }
        if (status != 200 || evlen < 9 || memchr(ev, '\n', evlen) == NULL) {
            free(ev);
            done = 0;
            continue;
        }
        if (sk_client_evidence_verify(l->t, tid, ev, evlen, &e) != 0) {
            sk_lookup_log(res, p->base, "reports timeline %" PRIu64 " as "
                "reneged; %s: %s", tid, e.code == SK_ERR_UNAVAILABLE
                ? "not checkable by a client, still trusted"
                : "the evidence does not verify, still trusted", e.msg);
        } else if (l->cache != NULL
                   && sk_client_cache_put_reneged(l->cache, tid, ev, evlen,
                          &e) != 0)
        {
            free(ev);
            free(list);
            return -1;
        } else {
            reason = ev + 8;                    /* "Reason: " */
            *strchr(reason, '\n') = '\0';
            sk_lookup_log(res, p->base, "timeline %" PRIu64 " reneged (the "
                "client checked the evidence: %.160s): no longer trusted",
                tid, reason);
            sk_client_trust_distrust(l->t, tid);
            n++;
        }
        free(ev);
    }
    free(list);
    if (done) {
        memcpy(st->reneged_hash, hash, 9);
    }
    return n;
}


/* An answer (a staple's or a mirror's) may add to what the client holds,
 * never take from it: a timeline's tree smaller than the cached one is an
 * older answer, replayed (its map proof holds for its own, older
 * checkpoint). */
static int
sk_lookup_older(const sk_client_view_t *v,
    const sk_client_view_t *cached, sk_err_t *err)
{
    const sk_client_cp_t  *cp;
    size_t                 i;

    for (i = 0; i < cached->ncps; i++) {
        cp = sk_client_view_cp(v, cached->cps[i].tid);
        if (cp != NULL && cp->cp.size < cached->cps[i].cp.size) {
            return sk_err_set(err, SK_ERR_SIGNATURE, "is older than what "
                "the client holds: timeline %" PRIu64 " tree of %" PRIu64
                " entries, the cache has %" PRIu64, cp->tid, cp->cp.size,
                cached->cps[i].cp.size);
        }
    }
    return 0;
}


/* Ask mirror m on path p, with a new nonce (SK_ASK_*, *v the answer when
 * SK_ASK_OK; logged).  Only an answer the mirror signed for this nonce
 * (docs/protocol.md, "Nonces") is read: anything else may come from the
 * path (a replay, a forged error), so it neither drops the mirror nor
 * ends the lookup's use of it (SK_ASK_PATH: another path may reach it). */
static int
sk_lookup_ask(sk_lookup_t *l, sk_client_result_t *res,
    const sk_client_mirror_t *m, const sk_path_t *p,
    sk_client_mstate_t *st, sk_client_view_t *v, sk_err_t *err)
{
    sk_client_answer_info_t  info;
    char                     url[SK_CLIENT_URL_MAX + SK_NAME_MAX + 64];
    char                     nonce[SK_NONCE_TEXT + 1], *body;
    size_t                   len, alen, i;
    int                      status, rc, r;
    sk_err_t                 e;

    if (sk_nonce_new(nonce, err) != 0) {
        return SK_ASK_FAIL;
    }
    snprintf(url, sizeof(url), "%s/query/%s?nonce=%s", p->base, l->name,
        nonce);
    if (p->fetch(&body, &len, &status, url, p->arg, &e) != 0) {
        sk_lookup_log(res, p->base, "unreachable: %s", e.msg);
        return SK_ASK_PATH;
    }
    if (status != 200) {
        sk_lookup_log(res, p->base, "HTTP %d: %.120s", status,
            body != NULL ? body : "");
        free(body);
        return SK_ASK_PATH;
    }
    if (sk_nonce_verify(&alen, body, len, nonce, m->key, &e) != 0) {
        free(body);
        sk_lookup_log(res, p->base, "refused: not an answer to this query "
            "(%s)", e.msg);
        return SK_ASK_PATH;
    }
    /* The Nonce-Signature covers these bytes, its own Signature line
     * included: checking that one too would add nothing. */
    rc = sk_client_answer_verify(v, &info, body, alen, l->name, 0, NULL,
        l->t, l->now, &e);
    if (rc == 0 && strcmp(info.reneged_hash, st->reneged_hash) != 0) {
        r = sk_lookup_reneged(l, res, p, st, info.reneged_hash);
        if (r < 0) {
            sk_client_view_free(v);
            free(body);
            return sk_err_set(err, SK_ERR_SYSTEM, "cache: renegation "
                "evidence not written");
        }
        if (r > 0) {
            /* Again without the timelines just distrusted. */
            sk_client_view_free(v);
            rc = sk_client_answer_verify(v, &info, body, alen, l->name, 0,
                NULL, l->t, l->now, &e);
        }
    }
    free(body);
    if (rc != 0) {
        if (e.code == SK_ERR_NOMEM) {
            *err = e;
            return SK_ASK_FAIL;
        }
        sk_lookup_drop(l, res, st, &e);
        return SK_ASK_NONE;
    }
    for (i = 0; i < info.ntl; i++) {
        if (strcmp(info.state[i], "Corrupt") == 0
            && sk_client_trust_find(l->t, info.tid[i]) != NULL)
        {
            sk_lookup_log(res, p->base, "reports timeline %" PRIu64
                " as reneged (Corrupt)", info.tid[i]);
        }
    }
    if (sk_client_fresh_check_mirror(st, v, l->have_cached ? &l->cached
            : NULL, l->t, &e) != 0)
    {
        sk_client_view_free(v);
        sk_lookup_drop(l, res, st, &e);
        return SK_ASK_NONE;
    }
    /* Not held against the mirror (it may lag behind the one the cache
     * came from), but not believed either. */
    if (l->have_cached && sk_lookup_older(v, &l->cached, &e) != 0) {
        sk_client_view_free(v);
        sk_lookup_log(res, p->base, "refused: the answer %s", e.msg);
        return SK_ASK_NONE;
    }
    sk_cl_stops_answer(&l->stops, v, &info, m, l->t, l->now);
    sk_client_mstate_update(st, v);
    if (l->cache != NULL
        && sk_client_cache_put_mirror(l->cache, st, err) != 0)
    {
        sk_client_view_free(v);
        return SK_ASK_FAIL;
    }
    if (l->have_cached && sk_lookup_merge(v, &l->cached, l->t, err) != 0) {
        sk_client_view_free(v);
        return SK_ASK_FAIL;
    }
    return SK_ASK_OK;
}


/* Ask mirror m on its paths in turn (mirror_tor), while one brings
 * nothing signed for its nonce; *via: the URL of the path that answered. */
static int
sk_lookup_mirror(sk_lookup_t *l, sk_client_result_t *res,
    const sk_client_mirror_t *m, sk_client_mstate_t *st,
    sk_client_view_t *v, const char **via, sk_err_t *err)
{
    sk_path_t  paths[2];
    size_t     i, n = 0;
    int        r = SK_ASK_NONE;

    if (l->t->mirror_tor != SK_MIRROR_TOR_ALWAYS) {
        paths[n++] = (sk_path_t) { m->url, l->fetch, l->arg };
    }
    if (l->t->mirror_tor == SK_MIRROR_TOR_ALWAYS
        || (l->t->mirror_tor == SK_MIRROR_TOR_FALLBACK && m->onion[0] != '\0'))
    {
        paths[n++] = (sk_path_t) { m->onion[0] != '\0' ? m->onion : m->url,
            l->fetch_tor, l->tor_arg };
    }
    for (i = 0; i < n; i++) {
        if (paths[i].fetch == NULL) {
            sk_lookup_log(res, paths[i].base, "not asked: no way to Tor "
                "here (the caller gave no Tor fetch)");
            break;
        }
        *via = paths[i].base;
        r = sk_lookup_ask(l, res, m, &paths[i], st, v, err);
        if (r != SK_ASK_PATH) {
            break;
        }
    }
    return r == SK_ASK_PATH ? SK_ASK_NONE : r;
}


/* The staple's answer for the name.  1: res holds the decision; 0: not
 * used (logged); -1: a local failure. */
static int
sk_lookup_staple(sk_lookup_t *l, sk_client_result_t *res, sk_err_t *err)
{
    const sk_client_mirror_t  *m;
    sk_client_view_t           v;
    int64_t                    oldest;
    sk_err_t                   e;

    if (sk_client_staple_view(&v, &m, l->staple, l->name, l->t, l->now, &e)
        != 0)
    {
        if (e.code == SK_ERR_NOMEM) {
            *err = e;
            return -1;
        }
        sk_lookup_log(res, "staple", "%s: %s", e.code == SK_ERR_NOT_FOUND
            ? "not used" : "refused", e.msg);
        return 0;
    }
    /* A replayed answer from before what the client holds. */
    if (l->have_cached
        && (sk_lookup_older(&v, &l->cached, &e) != 0
            || sk_client_fresh_check_mirror(NULL, &v, &l->cached, l->t, &e)
               != 0))
    {
        sk_client_view_free(&v);
        sk_lookup_log(res, "staple", "refused: answer of %s %s", m->url,
            e.msg);
        return 0;
    }
    if (sk_client_view_oldest(&oldest, &v, l->t, err) != 0) {
        sk_client_view_free(&v);
        return -1;              /* sk_client_staple_view checked it */
    }
    sk_lookup_log(res, "staple", "fresh: answer of %s, oldest checkpoint "
        "%" PRId64 " s old", m->url, l->now - oldest);
    if (l->cache != NULL && sk_client_cache_put(l->cache, &v, &e) != 0) {
        sk_lookup_log(res, "cache", "not written: %s", e.msg);
    }
    res->outcome = SK_FRESH_STAPLE;
    res->view = v;
    sk_client_fresh_eval(&res->fresh, l->t, &v, l->now);
    snprintf(res->source, sizeof(res->source), "%s", m->url);
    return 1;
}


/* 1 if a (of view av) is better information than b (of bv): fresher,
 * or as fresh and holding more checkpoints (an old answer still shows
 * an SK to enforce; nothing shows nothing). */
static int
sk_lookup_better(const sk_client_fresh_t *a, const sk_client_view_t *av,
    const sk_client_fresh_t *b, const sk_client_view_t *bv)
{
    if (a->fresh != b->fresh) {
        return a->fresh > b->fresh;
    }
    if (a->very_stale != b->very_stale) {
        return a->very_stale < b->very_stale;
    }
    return av->ncps > bv->ncps;
}


static int
sk_lookup_mirrors(sk_lookup_t *l, sk_client_result_t *res,
    sk_client_view_t *best, sk_client_fresh_t *bestf, sk_err_t *err)
{
    const sk_client_mirror_t  *m;
    sk_client_mstate_t         st;
    sk_client_view_t           v;
    sk_client_fresh_t          f;
    const char                *via = NULL;
    size_t                     i, asked = 0;
    int                        r;

    for (i = 0; i < l->t->nmirrors && asked < l->t->n_retries; i++) {
        m = &l->t->mirrors[i];
        if (l->cache != NULL) {
            if (sk_client_cache_get_mirror(l->cache, &st, m->url, err) != 0) {
                return -1;
            }
        } else {
            memset(&st, 0, sizeof(st));
            snprintf(st.url, sizeof(st.url), "%s", m->url);
        }
        sk_cl_stops_mstate(&l->stops, &st, l->t, l->now);
        if (st.dropped) {
            sk_lookup_log(res, m->url, "skipped: dropped earlier: %s",
                st.why);
            sk_client_mstate_free(&st);
            continue;
        }
        asked++;
        r = sk_lookup_mirror(l, res, m, &st, &v, &via, err);
        sk_client_mstate_free(&st);
        if (r <= 0) {
            if (r < 0) {
                return -1;
            }
            continue;
        }
        sk_client_fresh_eval(&f, l->t, &v, l->now);
        if (sk_client_fresh_ok(&f, l->t)) {
            sk_lookup_log(res, via, "fresh: %zu of %zu timelines within "
                "T2", f.fresh, f.ntl);
            sk_client_view_free(best);
            *best = v;
            *bestf = f;
            snprintf(res->source, sizeof(res->source), "%s", via);
            return 1;
        }
        sk_lookup_log(res, via, "stale: %zu of %zu timelines within T2, "
            "%zu beyond T3", f.fresh, f.ntl, f.stale);
        if (sk_lookup_better(&f, &v, bestf, best)) {
            sk_client_view_free(best);
            *best = v;
            *bestf = f;
            snprintf(res->source, sizeof(res->source), "%s", via);
        } else {
            sk_client_view_free(&v);
        }
    }
    return 0;
}


static int
sk_lookup_run(sk_client_result_t *res, const char *name,
    const sk_client_ctx_t *ctx, sk_err_t *err)
{
    const sk_client_trust_t  *t = ctx->trust;
    sk_client_cache_t        *cache = ctx->cache;
    const sk_staple_t        *staple = ctx->staple;
    int64_t                   now = ctx->now;
    sk_lookup_t        l;
    sk_client_view_t   best, kept;
    sk_client_fresh_t  bestf;
    sk_err_t           e;
    size_t             nrg, ntl0;
    int                r;

    memset(res, 0, sizeof(*res));
    memset(&l, 0, sizeof(l));
    memset(&best, 0, sizeof(best));
    if (sk_name_check(name, strlen(name), err) != 0) {
        return -1;
    }
    /* A copy (sharing the keys) the timelines found reneged leave. */
    l.t = malloc(sizeof(*l.t));
    if (l.t == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "trust");
    }
    *l.t = *t;
    t = l.t;
    if (cache != NULL && sk_client_cache_reneged(cache, l.t, &nrg, &e) != 0)
    {
        sk_lookup_log(res, "cache", "%s", e.msg);
    }
    l.cache = cache;
    l.fetch = ctx->fetch;
    l.arg = ctx->arg;
    l.fetch_tor = ctx->fetch_tor;
    l.tor_arg = ctx->tor_arg;
    l.now = now;
    l.name = name;
    l.staple = staple;
    if (cache != NULL) {
        if (sk_client_cache_get(cache, &l.cached, name, t, now, &e) == 0) {
            l.have_cached = 1;
            sk_cl_stops_view(&l.stops, &l.cached, t, now);
        } else if (e.code != SK_ERR_NOT_FOUND) {
            sk_lookup_log(res, "cache", "not used: %s", e.msg);
        }
    }
    sk_client_fresh_eval(&bestf, t, l.have_cached ? &l.cached : NULL, now);
    if (l.have_cached && sk_client_fresh_cached_ok(&bestf)) {
        res->outcome = SK_FRESH_CACHED;
        res->view = l.cached;
        res->fresh = bestf;
        snprintf(res->source, sizeof(res->source), "cache");
        free(l.t);
        return 0;
    }
    if (staple != NULL) {
        r = sk_lookup_staple(&l, res, err);
        if (r != 0) {
            sk_client_view_free(&l.cached);
            free(l.t);
            return r > 0 ? 0 : -1;
        }
    }
    if (l.have_cached) {
        if (sk_lookup_merge(&best, &l.cached, l.t, err) != 0) {
            goto fail;
        }
        snprintf(best.name, sizeof(best.name), "%s", name);
        snprintf(res->source, sizeof(res->source), "cache");
    } else {
        snprintf(best.name, sizeof(best.name), "%s", name);
    }
    ntl0 = l.t->ntl;
    r = sk_lookup_mirrors(&l, res, &best, &bestf, err);
    if (r < 0) {
        goto fail;
    }
    if (l.t->ntl != ntl0) {
        /* Timelines found reneged meanwhile leave what was gathered. */
        memset(&kept, 0, sizeof(kept));
        snprintf(kept.name, sizeof(kept.name), "%s", name);
        if (sk_lookup_merge(&kept, &best, l.t, err) != 0) {
            sk_client_view_free(&kept);
            goto fail;
        }
        sk_client_view_free(&best);
        best = kept;
        sk_client_fresh_eval(&bestf, t, &best, now);
    }
    if (r > 0) {
        res->outcome = SK_FRESH_ANSWER;
        if (cache != NULL && sk_client_cache_put(cache, &best, &e) != 0) {
            sk_lookup_log(res, "cache", "not written: %s", e.msg);
        }
    } else if (l.have_cached && sk_client_fresh_ok(&bestf, t)) {
        /* No mirror did better, and the cache is within T2 itself. */
        res->outcome = SK_FRESH_CACHED;
    } else {
        bestf.stopped = sk_cl_stops_count(&l.stops, t);
        res->outcome = sk_client_fresh_fail_open(&bestf, t) ? SK_FRESH_OPEN
            : SK_FRESH_CLOSED;
    }
    res->view = best;
    res->fresh = bestf;
    sk_client_view_free(&l.cached);
    free(l.t);
    return 0;

fail:
    sk_client_view_free(&best);
    sk_client_view_free(&l.cached);
    free(l.t);
    return -1;
}


int
sk_client_lookup(sk_client_result_t *res, const char *name,
    const sk_client_trust_t *t, sk_client_cache_t *cache,
    sk_client_fetch_fn fetch, void *arg, int64_t now, sk_err_t *err)
{
    sk_client_ctx_t  ctx;

    memset(&ctx, 0, sizeof(ctx));
    ctx.trust = t;
    ctx.cache = cache;
    ctx.fetch = fetch;
    ctx.arg = arg;
    ctx.now = now;
    return sk_lookup_run(res, name, &ctx, err);
}


int
sk_client_lookup_ctx(sk_client_result_t *res, const char *name,
    const sk_client_ctx_t *ctx, sk_err_t *err)
{
    return sk_lookup_run(res, name, ctx, err);
}


void
sk_client_result_free(sk_client_result_t *res)
{
    if (res != NULL) {
        sk_client_view_free(&res->view);
        memset(res, 0, sizeof(*res));
    }
}
