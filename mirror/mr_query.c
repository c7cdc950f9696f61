/*
 * mr_query.c -- signed answers to name queries, and the mirror's status.
 * The answer's layout is specified in docs/protocol.md, "Mirror answers";
 * change both together.
 *
 * An answer is built under the mirror's view, read-locked (entry texts,
 * proofs and checkpoints of one moment; changes are made under it
 * write-locked, mr_lock), so that several are built at once, and signed
 * outside it; the answer cache and the counters are under the lock.  It is cached in
 * memory (mr_lru.c, at most query_cache_size bytes, the answers for
 * absent names too) for query_cache seconds; a new entry for the name
 * drops it at once (mr_store_commit), and so does any change in which
 * timelines are servable (mr_mirror_t.gen).  With answer_cache, answers for since=0 live in
 * Redis instead (mr_cache.c), shared by front-ends with the same key.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mr.h"

/* "*" "/256/" and 64 hex digits. */
#define MR_QUERY_RANGE_NAME  80

/* Proof: lines for leaf sn in the checkpoint's tree. */
static int
mr_query_proof(mr_buf_t *b, const mr_tl_t *t, uint64_t sn, sk_err_t *err)
{
    sk_merkle_proof_t  proof;
    size_t             plen;
    char              *ptext;

    if (sk_merkle_tree_inclusion(&proof, t->tree, sn, t->cpv.size, err) != 0
        || sk_merkle_proof_format(&ptext, &plen, &proof, err) != 0)
    {
        return -1;
    }
    mr_buf_printf(b, "Proof: %zu\n", proof.len);
    mr_buf_add(b, ptext, plen);
    free(ptext);
    return 0;
}


/* A range answer (docs/protocol.md, "Range answers"): for a name no
 * timeline has, when every timeline served is mapped, the answer is made
 * for the deepest of the name's absence proofs' subtrees, the same proofs
 * for every name whose key starts with those bits; signed and cached once
 * for all of them. */
typedef struct {
    int              on;
    char             name[MR_QUERY_RANGE_NAME];  /* "*" "/<depth>/<hex>" */
    sk_map_proof_t  *proof;         /* by timeline index, for those with a
                                       map proof; malloc()ed */
} mr_range_t;


/* The checkpoint's last entry with its proof and, when it is a Map-Root
 * entry, the name's map proof (*v: the name's value there; a range
 * answer's proof, r, made already). */
static int
mr_query_last(mr_mirror_t *m, mr_buf_t *b, const mr_tl_t *t,
    const char *name, const mr_range_t *r, sk_map_value_t *v, sk_err_t *err)
{
    size_t   plen;
    char    *ptext;
    int      rc;

    if (t->last == NULL) {
        return 0;
    }
    mr_buf_printf(b, "Last-Entry: %zu\n", t->lastlen);
    mr_buf_add(b, t->last, t->lastlen);
    if (mr_query_proof(b, t, t->cpv.size - 1, err) != 0) {
        return -1;
    }
    if (!t->mapped) {
        return 0;
    }
    if (r->on) {
        sk_map_value_init(v);
        rc = sk_map_proof_format(&ptext, &plen, &r->proof[t->index], err);
    } else {
        rc = mr_map_answer(m, t, name, v, &ptext, &plen, err);
    }
    if (rc != 0) {
        /* a stored map row that does not lead to the signed root */
        return err->code == SK_ERR_FORMAT
            ? mr_state_damaged(m, err, "%s", err->msg) : -1;
    }
    mr_buf_add(b, ptext, plen);
    free(ptext);
    return 0;
}


/* A mapped timeline: the name's indexed entries below the checkpoint
 * must give the value the map proves, else the index or the map is
 * damaged and nothing is answered from them. */
static int
mr_query_check(mr_mirror_t *m, const mr_tl_t *t, const mr_ref_t *refs,
    size_t nrefs, const char *name, const sk_map_value_t *want,
    sk_err_t *err)
{
    sk_map_value_t  v;

    if (mr_map_history(t, refs, nrefs, t->cpv.size, want, &v)) {
        return 0;
    }
    return mr_state_damaged(m, err, "map: timeline %" PRIu64 ": %s: the %"
        PRIu64 " indexed entries do not give the map's value (%" PRIu64
        " entries, the newest SN %" PRIu64 ")", t->conf->tid, name, v.count,
        want->count, want->newest_sn);
}


/* One timeline's block of the answer. */
/* A Stuck timeline is served from its last checked state (the draft:
 * never Stuck, "except cached answers up to 24 h"), its checkpoint's age
 * said; a Stuck timeline turns Defunct after defunct_after seconds and is
 * no longer served.  Clients judge the age by their freshness rules.
 * A mapped timeline's block lists every entry of the name below the
 * checkpoint, whatever since says: a history with a hole cannot be
 * checked against the map. */
static int
mr_query_served(const mr_tl_t *t)
{
    return (t->state == MR_IDLE || t->state == MR_SYNCING
            || t->state == MR_STUCK) && t->cp != NULL;
}


static int
mr_query_timeline(mr_mirror_t *m, mr_buf_t *b, mr_tl_t *t, const char *name,
    const mr_range_t *range, const mr_ref_t *refs, size_t nrefs,
    int64_t since, int64_t now, sk_err_t *err)
{
    sk_map_value_t     v;
    const mr_ref_t    *r;
    size_t             i, cnt = 0, elen;
    char              *text;
    int                serve = mr_query_served(t);

    mr_buf_printf(b, "Timeline: %" PRIu64 " %s\nCheckpoint: %zu\n",
        t->conf->tid, mr_state_name(t->state), serve ? t->cplen : 0);
    if (!serve) {
        mr_buf_add(b, "Entries: 0\n", 11);
        return 0;
    }
    mr_buf_add(b, t->cp, t->cplen);
    if (t->state == MR_STUCK) {
        mr_buf_printf(b, "Checkpoint-Age: %" PRId64 "\n",
            now > t->cp_ts ? now - t->cp_ts : 0);
    }
    if (mr_query_last(m, b, t, name, range, &v, err) != 0
        || (t->mapped && mr_query_check(m, t, refs, nrefs, name, &v, err)
                         != 0))
    {
        return -1;
    }
    if (t->mapped) {
        since = INT64_MIN;
    }
    for (i = 0; i < nrefs; i++) {
        cnt += refs[i].tl == t->index && refs[i].sn < t->cpv.size
            && refs[i].loc.ts >= since;
    }
    mr_buf_printf(b, "Entries: %zu\n", cnt);
    for (i = 0; i < nrefs; i++) {
        r = &refs[i];
        if (r->tl != t->index || r->sn >= t->cpv.size || r->loc.ts < since) {
            continue;
        }
        elen = r->loc.len;
        mr_buf_printf(b, "Entry: %" PRIu64 " %zu\n", r->sn, elen);
        if (mr_copy_pread(t, r->sn, &r->loc, &text, err) != 0) {
            return -1;
        }
        mr_buf_add(b, text, elen);
        free(text);
        if (mr_query_proof(b, t, r->sn, err) != 0) {
            return -1;
        }
    }
    return 0;
}


/* Under the lock or the view: how many of refs the copies hold (published: below
 * each timeline's size). */
static size_t
mr_query_held(const mr_mirror_t *m, const mr_ref_t *refs, size_t n)
{
    size_t  i, cnt = 0;

    for (i = 0; i < n; i++) {
        cnt += refs[i].sn < m->tl[refs[i].tl].size;
    }
    return cnt;
}


/* Under the view: whether name's answer can be a range answer (r->on),
 * its proofs made: no entry for it anywhere (nrefs 0), every timeline
 * served mapped (or empty) and its map proving the name absent. */
static int
mr_query_range(mr_mirror_t *m, const char *name, mr_range_t *r,
    sk_err_t *err)
{
    unsigned char    key[SK_MAP_KEY_BYTES];
    sk_map_value_t   v;
    const mr_tl_t   *t;
    unsigned         depth = 0, i, n;
    size_t           off;
    int              rc;

    r->on = 0;
    r->proof = malloc(m->ntl * sizeof(*r->proof));
    if (r->proof == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "answer");
    }
    if (sk_map_key(key, name, err) != 0) {
        return -1;
    }
    for (i = 0; i < m->ntl; i++) {
        t = &m->tl[i];
        if (!mr_query_served(t) || t->last == NULL) {
            continue;           /* no checkpoint, or an empty tree */
        }
        if (!t->mapped) {
            return 0;           /* its absence is the mirror's word */
        }
        rc = mr_map_prove(m, t, key, &v, &r->proof[i], err);
        if (rc != 1) {
            return rc < 0 ? -1 : 0;     /* present: the whole answer's
                                           checks will say what is wrong */
        }
        depth = r->proof[i].depth > depth ? r->proof[i].depth : depth;
    }
    off = (size_t) snprintf(r->name, sizeof(r->name), "*/%u/", depth);
    n = (depth + 7) / 8;
    if (n == 0) {
        r->name[off++] = '-';
    }
    for (i = 0; i < n; i++) {
        off += (size_t) snprintf(r->name + off, sizeof(r->name) - off,
            "%02x", key[i] & (i + 1 < n || depth % 8 == 0
                              ? 0xff : 0xff << (8 - depth % 8)));
    }
    r->name[off] = '\0';
    r->on = 1;
    return 0;
}


/* The unsigned body, under the view, of name's answer (or of its range
 * answer, r->on), refs its index rows. */
static int
mr_query_body(mr_mirror_t *m, mr_buf_t *b, const char *name,
    const mr_range_t *r, const mr_ref_t *refs, size_t nrefs, int64_t since,
    sk_err_t *err)
{
    size_t     i, hlen;
    int64_t    now = mr_now();
    char       hash[9], *list;

    if (mr_track_list(m, &list, &hlen, hash, err) != 0) {
        return -1;
    }
    free(list);
    mr_buf_printf(b, "SK-Mirror-Answer: 1\nName: %s\nSince: %" PRId64
        "\nTimestamp: %" PRId64 "\nReneged-Hash: %s\nTimelines: %zu\n",
        r->on ? r->name : name, since, now, hash, m->ntl);
    for (i = 0; i < m->ntl; i++) {
        if (mr_query_timeline(m, b, &m->tl[m->order[i]], name, r, refs,
                nrefs, since, now, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}


/* Under the lock or the view: how many entries for name the copies hold (published:
 * below each timeline's size), or (size_t) -1 if the index fails. */
static size_t
mr_query_count(mr_mirror_t *m, const char *name)
{
    mr_ref_t  *refs;
    size_t     n, cnt;
    sk_err_t   err;

    if (mr_index_refs(m, name, &refs, &n, &err) != 0) {
        return (size_t) -1;
    }
    cnt = mr_query_held(m, refs, n);
    free(refs);
    return cnt;
}


static int
mr_query_sign(mr_mirror_t *m, mr_buf_t *b, sk_err_t *err)
{
    unsigned char  *sig;
    size_t          siglen;
    char           *s;

    if (b->failed) {
        return sk_err_set(err, SK_ERR_NOMEM, "answer");
    }
    if (sk_key_sign(&sig, &siglen, m->key, (unsigned char *) b->p, b->len,
            err) != 0)
    {
        return -1;
    }
    s = sk_b64_encode_alloc(sig, siglen);
    free(sig);
    if (s == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "answer signature");
    }
    mr_buf_printf(b, "Signature: %s\n", s);
    free(s);
    return 0;
}


/* Under the lock or the view: the servable TIDs, "7,9" (ascending), a Stuck one
 * served from its last checked state with an "s" ("7,8s,9"). */
static void
mr_query_servable(const mr_mirror_t *m, char *out, size_t cap)
{
    const mr_tl_t  *t;
    size_t          i, n = 0;

    out[0] = '\0';
    for (i = 0; i < m->ntl; i++) {
        t = &m->tl[m->order[i]];
        if (t->state == MR_IDLE || t->state == MR_SYNCING
            || (t->state == MR_STUCK && t->cp != NULL))
        {
            n += (size_t) snprintf(out + n, cap - n, "%s%" PRIu64 "%s",
                n ? "," : "", t->conf->tid, t->state == MR_STUCK ? "s" : "");
        }
    }
}


/* A range answer's generation: servability and the names with entries,
 * as of the view. */
static uint64_t
mr_query_rgen(const mr_mirror_t *m)
{
    return m->gen << 32 ^ m->absent_gen;
}


/* A new answer for name: the body under the view only, so that answers
 * are built in parallel, then signed.  *gen, fp (the servable TIDs) and
 * *held (mr_query_count's figure) are those of the view it was built
 * under.  A name that can have a range answer gets the cached one if
 * there is (*cached 1), else a new one, r->name saying which to cache it
 * as. */
static int
mr_query_build(mr_mirror_t *m, char **out, size_t *len, const char *name,
    int64_t since, uint64_t *gen, char *fp, size_t fpcap, size_t *held,
    mr_range_t *r, int *cached, sk_err_t *err)
{
    mr_buf_t   b = { 0 };
    mr_ref_t  *refs = NULL;
    size_t     nrefs = 0;
    int        rc;

    *cached = 0;
    r->on = 0;
    r->proof = NULL;
    pthread_rwlock_rdlock(&m->view);
    *gen = m->gen;
    mr_query_servable(m, fp, fpcap);
    rc = mr_index_refs(m, name, &refs, &nrefs, err);
    if (rc == 0) {
        *held = mr_query_held(m, refs, nrefs);
    }
    if (rc == 0 && nrefs == 0 && m->conf.query_cache > 0) {
        rc = mr_query_range(m, name, r, err);
    }
    if (rc == 0 && r->on
        && mr_lru_get(&m->answers, r->name, since, mr_query_rgen(m),
               mr_now() - (int64_t) m->conf.query_cache + 1, out, len) == 0)
    {
        *cached = 1;
        *gen = mr_query_rgen(m);
        pthread_rwlock_unlock(&m->view);
        free(refs);
        return 0;
    }
    if (rc == 0) {
        rc = mr_query_body(m, &b, name, r, refs, nrefs, since, err);
    }
    if (r->on) {
        *gen = mr_query_rgen(m);
    }
    pthread_rwlock_unlock(&m->view);
    free(refs);
    if (rc != 0 || mr_query_sign(m, &b, err) != 0) {
        free(b.p);
        return -1;
    }
    return mr_buf_finish(&b, out, len, err);
}


int
mr_query_answer(mr_mirror_t *m, char **out, size_t *len, const char *name,
    int64_t since, sk_err_t *err)
{
    mr_range_t  r;
    uint64_t    gen;
    size_t      servable, nrefs;
    int64_t     now = mr_now();
    char        fp[MR_MAX_TIMELINES * 22 + 1];
    int         rc, shared, fresh, cached;

    if (sk_name_check(name, strlen(name), err) != 0) {
        err->code = SK_ERR_USAGE;   /* the client's: any other is ours */
        return -1;
    }
    shared = m->rcache != NULL && since == 0 && m->conf.query_cache > 0;
    pthread_mutex_lock(&m->lock);
    servable = mr_state_servable(m);
    if (servable < 2) {
        pthread_mutex_unlock(&m->lock);
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%zu of %zu timelines "
            "are servable (Idle or Syncing); answers need 2", servable,
            m->ntl);
    }
    if (m->rcache == NULL && m->conf.query_cache > 0
        && mr_lru_get(&m->answers, name, since, m->gen,
               now - (int64_t) m->conf.query_cache + 1, out, len) == 0)
    {
        m->cache_hits++;
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    mr_query_servable(m, fp, sizeof(fp));
    nrefs = shared ? mr_query_count(m, name) : 0;
    /* A shared answer's miss is known once Redis answered: counted below. */
    if (!shared) {
        m->cache_misses++;
    }
    pthread_mutex_unlock(&m->lock);
    if (shared && nrefs != (size_t) -1
        && mr_cache_get(m, name, fp, nrefs, out, len) == 0)
    {
        pthread_mutex_lock(&m->lock);
        m->cache_hits++;
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    rc = mr_query_build(m, out, len, name, since, &gen, fp, sizeof(fp),
        &nrefs, &r, &cached, err);
    free(r.proof);
    if (cached) {
        pthread_mutex_lock(&m->lock);
        m->cache_hits += 1;
        m->cache_misses -= !shared;
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    if (!r.on && !shared
        && (rc != 0 || m->conf.query_cache == 0 || m->rcache != NULL))
    {
        return rc;
    }
    pthread_mutex_lock(&m->lock);
    if (shared) {
        m->cache_misses++;
    }
    /* Not if an entry for the name (or a state change) came in meanwhile:
     * the sync thread drops the shared copy only after its commit.  A
     * range answer is cached for its range, in memory whatever
     * answer_cache says. */
    if (r.on) {
        fresh = rc == 0 && mr_query_rgen(m) == gen;
    } else {
        fresh = rc == 0 && nrefs != (size_t) -1
            && mr_query_count(m, name) == nrefs && m->gen == gen;
    }
    if (fresh && (r.on || !shared)) {
        mr_lru_put(&m->answers, r.on ? r.name : name, since, gen, now,
            r.on || nrefs == 0, *out, *len);
        shared = 0;
    }
    pthread_mutex_unlock(&m->lock);
    /* Redis outside the lock: a slow one must not hold up the mirror. */
    if (fresh && shared) {
        mr_cache_put(m, name, fp, nrefs, *out, *len);
    }
    return rc;
}


int
mr_query_status(mr_mirror_t *m, char **out, size_t *len, sk_err_t *err)
{
    mr_lru_stats_t  st;
    mr_buf_t   b = { 0 };
    mr_tl_t   *t;
    size_t     i, hlen;
    char       fp[SK_FINGERPRINT_SIZE], hash[9], *list;

    sk_key_fingerprint(fp, m->key);
    mr_lru_stats(&m->answers, &st);
    pthread_mutex_lock(&m->lock);
    if (mr_track_list(m, &list, &hlen, hash, err) != 0) {
        pthread_mutex_unlock(&m->lock);
        return -1;
    }
    free(list);
    mr_buf_printf(&b, "{\"mirror\":\"%s\",", fp);
    if (m->onion[0] != '\0') {
        mr_buf_printf(&b, "\"onion\":\"%s:%" PRIu64 "\",", m->onion,
            m->conf.onion_port);
    }
    mr_buf_printf(&b, "\"reneged_hash\":\"%s\","
        "\"servable\":%zu,\"serving\":%s,\"cache\":{\"hits\":%" PRIu64
        ",\"misses\":%" PRIu64 ",\"absent_hits\":%" PRIu64 ",\"answers\":%zu"
        ",\"bytes\":%" PRIu64 ",\"limit\":%" PRIu64 ",\"evictions\":%"
        PRIu64 "},\"timelines\":[", hash, mr_state_servable(m),
        mr_state_servable(m) >= 2 ? "true" : "false", m->cache_hits,
        m->cache_misses, st.absent_hits, st.n, st.bytes, st.max,
        st.evictions);
    for (i = 0; i < m->ntl; i++) {
        t = &m->tl[m->order[i]];
        mr_buf_printf(&b, "%s{\"tid\":%" PRIu64 ",\"url\":", i ? "," : "",
            t->conf->tid);
        mr_buf_json_str(&b, t->conf->url);
        mr_buf_printf(&b, ",\"state\":\"%s\",\"reason\":",
            mr_state_name(t->state));
        mr_buf_json_str(&b, t->reason);
        mr_buf_printf(&b, ",\"entries\":%" PRIu64 ",\"checkpoint_size\":%"
            PRIu64 ",\"checkpoint_timestamp\":%" PRId64 ",\"last_ok\":%"
            PRId64 ",\"failures\":%" PRIu64 ",\"rounds\":%" PRIu64 "}",
            t->size, t->cpv.size, t->cp_ts, t->last_ok, t->failures,
            t->rounds);
    }
    pthread_mutex_unlock(&m->lock);
    mr_buf_add(&b, "]}\n", 3);
    return mr_buf_finish(&b, out, len, err);
}
