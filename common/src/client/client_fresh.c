/*
 * client_fresh.c -- design 4.b: how fresh a view is, when it is fresh
 * enough, when the client may fail open (only on evidence that timelines
 * stopped, never on silence), and when a mirror has shown it cannot be
 * trusted (less fresh than before, or omitting entries the client holds).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sk/client.h>

#include "client_int.h"


void
sk_client_fresh_eval(sk_client_fresh_t *f, const sk_client_trust_t *t,
    const sk_client_view_t *v, int64_t now)
{
    const sk_client_cp_t  *cp;
    int64_t                age;
    size_t                 i;

    memset(f, 0, sizeof(*f));
    f->ntl = t->ntl;
    for (i = 0; i < t->ntl; i++) {
        cp = v != NULL ? sk_client_view_cp(v, t->tl[i].tid) : NULL;
        if (cp == NULL) {
            f->stale++;
            f->very_stale++;
            continue;
        }
        age = now > cp->ts ? now - cp->ts : 0;
        /* Strictly younger, so that t1 = 0 always asks, even in the
         * second a checkpoint was made. */
        f->within_t1 += age < t->t1;
        f->fresh += age <= t->t2;
        f->stale += age > t->t3;
        f->very_stale += age > t->t4;
    }
}


int
sk_client_fresh_cached_ok(const sk_client_fresh_t *f)
{
    return f->ntl > 0 && f->within_t1 == f->ntl;
}


int
sk_client_fresh_ok(const sk_client_fresh_t *f, const sk_client_trust_t *t)
{
    return f->ntl > 0
        && f->fresh * 100 >= (size_t) t->fresh_percent * f->ntl
        && f->stale <= t->max_derelict;
}


int
sk_client_fresh_fail_open(const sk_client_fresh_t *f,
    const sk_client_trust_t *t)
{
    switch (t->fail_open) {
    case SK_FAIL_OPEN_EVIDENCE:
        return f->stopped > t->max_derelict;
    case SK_FAIL_OPEN_UNSAFE_SILENCE:
        return f->very_stale > t->max_derelict;
    case SK_FAIL_OPEN_NEVER:
        break;
    }
    return 0;
}


static int
sk_stops_has(const uint64_t *tids, size_t n, uint64_t tid)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (tids[i] == tid) {
            return 1;
        }
    }
    return 0;
}


static void
sk_stops_add(uint64_t *tids, size_t *n, uint64_t tid)
{
    if (*n < SK_CLIENT_MAX_TIMELINES && !sk_stops_has(tids, *n, tid)) {
        tids[(*n)++] = tid;
    }
}


/* A checkpoint of tid at ts: the timeline was alive then. */
static void
sk_stops_seen(sk_cl_stops_t *s, uint64_t tid, int64_t ts,
    const sk_client_trust_t *t, int64_t now)
{
    if (now - ts <= t->t4) {
        sk_stops_add(s->alive, &s->nalive, tid);
    }
}


void
sk_cl_stops_view(sk_cl_stops_t *s, const sk_client_view_t *v,
    const sk_client_trust_t *t, int64_t now)
{
    size_t  i;

    for (i = 0; i < v->ncps; i++) {
        sk_stops_seen(s, v->cps[i].tid, v->cps[i].ts, t, now);
    }
}


void
sk_cl_stops_mstate(sk_cl_stops_t *s, const sk_client_mstate_t *st,
    const sk_client_trust_t *t, int64_t now)
{
    size_t  i;

    for (i = 0; i < st->ntl; i++) {
        sk_stops_seen(s, st->tid[i], st->ts[i], t, now);
    }
}


/*
 * Only a mirror listed with a key signs what it says about a timeline's
 * state and which checkpoint is its newest, and only an answer it made
 * within T2 says it about now (an older one, replayed, is history).
 */
void
sk_cl_stops_answer(sk_cl_stops_t *s, const sk_client_view_t *v,
    const sk_client_answer_info_t *info, const sk_client_mirror_t *m,
    const sk_client_trust_t *t, int64_t now)
{
    const sk_client_cp_t  *cp;
    size_t                 i, j;

    sk_cl_stops_view(s, v, t, now);
    if (m->key == NULL || now - info->timestamp > t->t2) {
        return;
    }
    for (i = 0; i < t->ntl; i++) {
        cp = sk_client_view_cp(v, t->tl[i].tid);
        if (cp != NULL) {
            if (now - cp->ts > t->t4) {
                sk_stops_add(s->stop, &s->nstop, cp->tid);
            }
            continue;
        }
        for (j = 0; j < info->ntl; j++) {
            if (info->tid[j] == t->tl[i].tid
                && strcmp(info->state[j], "Defunct") == 0)
            {
                sk_stops_add(s->stop, &s->nstop, info->tid[j]);
            }
        }
    }
}


size_t
sk_cl_stops_count(const sk_cl_stops_t *s, const sk_client_trust_t *t)
{
    size_t  i, n = 0;

    for (i = 0; i < t->ntl; i++) {
        n += sk_stops_has(s->stop, s->nstop, t->tl[i].tid)
            && !sk_stops_has(s->alive, s->nalive, t->tl[i].tid);
    }
    return n;
}


static int
sk_fresh_older(const sk_client_mstate_t *st, const sk_client_cp_t *cp,
    const sk_client_trust_t *t, sk_err_t *err)
{
    size_t  i;

    for (i = 0; i < st->ntl; i++) {
        if (st->tid[i] != cp->tid) {
            continue;
        }
        if (cp->ts + t->drop_slack < st->ts[i]) {
            return sk_err_set(err, SK_ERR_SIGNATURE, "less fresh than "
                "before: timeline %" PRIu64 " checkpoint of %" PRId64
                ", it gave one of %" PRId64 " earlier", cp->tid, cp->ts,
                st->ts[i]);
        }
        /* A smaller tree with a timestamp within the slack is an old
         * answer from its cache only if that timestamp is older too. */
        if (cp->cp.size < st->size[i] && cp->ts >= st->ts[i]) {
            return sk_err_set(err, SK_ERR_SIGNATURE, "less fresh than "
                "before: timeline %" PRIu64 " tree of %" PRIu64 " entries, "
                "it showed %" PRIu64 " earlier", cp->tid, cp->cp.size,
                st->size[i]);
        }
    }
    return 0;
}


int
sk_client_fresh_check_mirror(const sk_client_mstate_t *st,
    const sk_client_view_t *answer, const sk_client_view_t *cached,
    const sk_client_trust_t *t, sk_err_t *err)
{
    const sk_client_item_t  *mine, *theirs;
    const sk_client_cp_t    *cp;
    size_t                   i;

    for (i = 0; st != NULL && i < answer->ncps; i++) {
        if (sk_fresh_older(st, &answer->cps[i], t, err) != 0) {
            return -1;
        }
    }
    for (i = 0; cached != NULL && i < cached->nitems; i++) {
        mine = &cached->items[i];
        cp = sk_client_view_cp(answer, mine->tid);
        if (cp == NULL || mine->sn >= cp->cp.size) {
            continue;       /* not covered by this answer */
        }
        theirs = sk_client_view_item(answer, mine->tid, mine->sn);
        if (theirs == NULL) {
            return sk_err_set(err, SK_ERR_SIGNATURE, "omits timeline %"
                PRIu64 " SN %" PRIu64 " for %s, which the client holds",
                mine->tid, mine->sn, cached->name);
        }
        if (theirs->len != mine->len
            || memcmp(theirs->text, mine->text, mine->len) != 0)
        {
            return sk_err_set(err, SK_ERR_SIGNATURE, "timeline %" PRIu64
                " SN %" PRIu64 " differs from the one the client holds "
                "(renegation evidence)", mine->tid, mine->sn);
        }
    }
    return 0;
}


void
sk_client_mstate_update(sk_client_mstate_t *st,
    const sk_client_view_t *answer)
{
    const sk_client_cp_t  *cp;
    size_t                 i, j;

    for (i = 0; i < answer->ncps; i++) {
        cp = &answer->cps[i];
        for (j = 0; j < st->ntl && st->tid[j] != cp->tid; j++) {
        }
        if (j == st->ntl) {
            if (st->ntl == SK_CLIENT_MAX_TIMELINES) {
                continue;
            }
            st->ntl++;
            st->tid[j] = cp->tid;
            st->size[j] = 0;
            st->ts[j] = 0;
        }
        if (cp->ts > st->ts[j]) {
            st->ts[j] = cp->ts;
        }
        if (cp->cp.size > st->size[j]) {
            st->size[j] = cp->cp.size;
        }
    }
}
