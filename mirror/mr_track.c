/*
 * mr_track.c -- renegation tracking (docs/protocol.md): the reneged list,
 * its 32-bit hash, and a thread that compares lists with the configured
 * peers.  A peer's evidence is checked here, with the timeline's own key,
 * before the timeline is held as reneged; evidence that does not verify
 * is logged and ignored.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/sha.h>

#include <sk/conf.h>

#include "mr.h"

#define MR_RENEGED_MAX   (64 * 1024)
#define MR_EVIDENCE_GET  (16 * 1024 * 1024)


int
mr_track_list(mr_mirror_t *m, char **out, size_t *len, char hash[9],
    sk_err_t *err)
{
    unsigned char  md[SHA256_DIGEST_LENGTH];
    mr_buf_t       b = { 0 };
    uint64_t       prev = 0, best;
    size_t         i, pick;

    /* Ascending TID; the list is short. */
    for (;;) {
        best = UINT64_MAX;
        pick = m->ntl;
        for (i = 0; i < m->ntl; i++) {
            if (m->tl[i].state == MR_CORRUPT && m->tl[i].conf->tid > prev
                && m->tl[i].conf->tid <= best)
            {
                best = m->tl[i].conf->tid;
                pick = i;
            }
        }
        if (pick == m->ntl) {
            break;
        }
        mr_buf_printf(&b, "%" PRIu64 "\n", best);
        prev = best;
    }
    mr_buf_add(&b, "", 0);
    if (mr_buf_finish(&b, out, len, err) != 0) {
        return -1;
    }
    sk_merkle_digest(md, *out, *len);
    snprintf(hash, 9, "%02x%02x%02x%02x", md[0], md[1], md[2], md[3]);
    return 0;
}


int
mr_track_parse(uint64_t **tids, size_t *n, const char *body, size_t len,
    sk_err_t *err)
{
    const char  *p = body, *end = body + len, *nl;
    uint64_t     tid;
    size_t       lineno = 0;
    char         num[24];

    *tids = NULL;
    *n = 0;
    /* A line is 2 bytes at least. */
    if (len > 0 && (*tids = malloc(len / 2 * sizeof(**tids))) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "reneged list");
    }
    for (; p < end; p = nl + 1) {
        lineno++;
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            sk_err_set(err, SK_ERR_FORMAT, "line %zu unterminated", lineno);
            break;
        }
        if (nl == p || (size_t) (nl - p) >= sizeof(num)
            || memchr(p, '\0', (size_t) (nl - p)) != NULL)
        {
            sk_err_set(err, SK_ERR_FORMAT, "line %zu: \"tid\": illegal "
                "value \"%.*s\" (want a number)", lineno,
                (int) (nl - p < 40 ? nl - p : 40), p);
            break;
        }
        memcpy(num, p, (size_t) (nl - p));
        num[nl - p] = '\0';
        if (num[0] == '0') {
            sk_err_set(err, SK_ERR_FORMAT, "line %zu: \"tid\": illegal "
                "value \"%s\" (want a TID, no leading zero)", lineno, num);
            break;
        }
        if (sk_conf_u64(&tid, "tid", num, err) != 0) {
            sk_err_prefix(err, "line %zu", lineno);
            break;
        }
        if (*n > 0 && tid <= (*tids)[*n - 1]) {
            sk_err_set(err, SK_ERR_FORMAT, "line %zu: \"tid\" %" PRIu64
                " after %" PRIu64 " (want ascending TIDs, each once)",
                lineno, tid, (*tids)[*n - 1]);
            break;
        }
        (*tids)[(*n)++] = tid;
    }
    if (p < end) {
        free(*tids);
        *tids = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}


static mr_tl_t *
mr_track_find(mr_mirror_t *m, uint64_t tid)
{
    size_t  i;

    for (i = 0; i < m->ntl; i++) {
        if (m->tl[i].conf->tid == tid) {
            return &m->tl[i];
        }
    }
    return NULL;
}


/* Fetch, check and adopt one peer's evidence about t. */
static void
mr_track_learn(mr_mirror_t *m, CURL *curl, const char *peer, mr_tl_t *t)
{
    mr_resp_t  r;
    sk_err_t   err;
    char       url[4096];

    snprintf(url, sizeof(url), "%s/reneged/%" PRIu64, peer, t->conf->tid);
    if (mr_fetch(m, &r, curl, url, MR_EVIDENCE_GET, &err) != 0) {
        mr_log("peer %s: %s", peer, err.msg);
        return;
    }
    if (r.status != 200) {
        mr_log("peer %s: GET %s: HTTP %ld", peer, url, r.status);
    } else if (mr_evidence_verify(m, t, r.body, r.len, NULL, &err) != 0) {
        mr_log("peer %s: timeline %" PRIu64 ": ignoring %s", peer,
            t->conf->tid, err.msg);
    } else {
        mr_log("peer %s: timeline %" PRIu64 " reneged; its evidence "
            "verifies", peer, t->conf->tid);
        if (mr_store_evidence(m, t, r.body, r.len, &err) != 0) {
            mr_log("timeline %" PRIu64 ": storing evidence: %s",
                t->conf->tid, err.msg);
        }
    }
    free(r.body);
}


static void
mr_track_peer(mr_mirror_t *m, CURL *curl, const char *peer)
{
    unsigned char  md[SHA256_DIGEST_LENGTH];
    mr_resp_t      r;
    mr_tl_t       *t;
    sk_err_t       err;
    uint64_t      *tids;
    size_t         len, n, i;
    char           url[4096], mine[9], theirs[9], *own;
    int            learn;

    snprintf(url, sizeof(url), "%s/reneged", peer);
    if (mr_fetch(m, &r, curl, url, MR_RENEGED_MAX, &err) != 0
        || r.status != 200)
    {
        if (r.body != NULL || err.code == SK_ERR_UNAVAILABLE) {
            mr_log("peer %s: %s", peer, r.body != NULL ? "bad answer"
                                                       : err.msg);
        }
        free(r.body);
        return;
    }
    SHA256((unsigned char *) r.body, r.len, md);
    snprintf(theirs, sizeof(theirs), "%02x%02x%02x%02x", md[0], md[1], md[2],
        md[3]);
    mr_lock(m);
    if (mr_track_list(m, &own, &len, mine, &err) != 0) {
        mr_unlock(m);
        free(r.body);
        return;
    }
    mr_unlock(m);
    free(own);
    if (strcmp(mine, theirs) == 0) {
        free(r.body);
        return;
    }
    if (mr_track_parse(&tids, &n, r.body, r.len, &err) != 0) {
        mr_log("peer %s: /reneged: %s", peer, err.msg);
        free(r.body);
        return;
    }
    free(r.body);
    for (i = 0; i < n; i++) {
        t = mr_track_find(m, tids[i]);
        if (t == NULL) {
            continue;           /* not mirrored here: no key to check */
        }
        mr_lock(m);
        learn = t->state != MR_CORRUPT;
        mr_unlock(m);
        if (learn) {
            mr_track_learn(m, curl, peer, t);
        }
    }
    free(tids);
}


static void *
mr_track_thread(void *arg)
{
    mr_mirror_t      *m = arg;
    CURL             *curl = curl_easy_init();
    size_t            i;

    mr_lock(m);
    while (!m->stopping && curl != NULL) {
        mr_unlock(m);
        for (i = 0; i < m->conf.npeers; i++) {
            mr_track_peer(m, curl, m->conf.peer[i]);
        }
        mr_lock(m);
        mr_state_sleep(m, m->conf.poll_interval);
    }
    mr_unlock(m);
    curl_easy_cleanup(curl);
    return NULL;
}


int
mr_track_start(mr_mirror_t *m, sk_err_t *err)
{
    if (m->conf.npeers == 0) {
        return 0;
    }
    if (pthread_create(&m->tracker, NULL, mr_track_thread, m) != 0) {
        return sk_err_set(err, SK_ERR_SYSTEM, "tracking thread");
    }
    m->tracker_up = 1;
    return 0;
}


void
mr_track_stop(mr_mirror_t *m)
{
    if (m->tracker_up) {
        pthread_join(m->tracker, NULL);
        m->tracker_up = 0;
    }
}
