/*
 * sk/staple_serve.h -- a server's stapled proof: one mirror answer per
 * name it serves, fetched from the operator's mirrors, shared through the
 * key-material cache (sk:proof:<name>, so several servers share one
 * fetch) and refreshed well before clients would find it stale.
 *
 * sk_staple_set_refresh does the blocking part (cache reads and writes,
 * mirror queries through the fetch callback): run it off any event loop
 * (nginx: a thread pool task; sk-milter: its refresher thread; or `sk
 * staple fetch` from a timer), or at configuration time with fetch NULL
 * (the cache only, no network).  Everything it keeps is checked as a
 * client checks it (sk_client_staple_view): a poisoned cache or a bad
 * mirror answer is never served.
 */
#ifndef SK_STAPLE_SERVE_H
#define SK_STAPLE_SERVE_H

#include "cache.h"
#include "client.h"
#include "staple.h"

#define SK_STAPLE_WHY_MAX  (2 * SK_ERR_MSG_MAX)

/* What kept a name's last refresh from renewing its answer, for the
 * servers' counters (sk_staple_cause_name: their label values).  Among
 * several mirrors, the one that says most: an answer that came back
 * points past the mirrors, at the timelines or the trust file. */
typedef enum {
    SK_STAPLE_RENEWED = 0,      /* "ok": renewed, or young enough */
    SK_STAPLE_MIRROR_DOWN,      /* "mirror_down": no mirror answered
                                   (unreachable, an HTTP error such as the
                                   503 of a mirror with too few timelines) */
    SK_STAPLE_BAD_ANSWER,       /* "bad_answer": answers that do not verify
                                   (signature, key, form) */
    SK_STAPLE_TIMELINE_STALE,   /* "timeline_stale": answers verify, but a
                                   timeline's checkpoint in them is no
                                   younger (that timeline is down) */
    SK_STAPLE_TIMELINE_MISSING, /* "timeline_missing": answers lack a
                                   timeline the trust file names (Defunct,
                                   reneged, or not the mirror's) */
    SK_STAPLE_CAUSES
} sk_staple_cause_t;

const char *sk_staple_cause_name(sk_staple_cause_t cause);

typedef struct {
    char           name[SK_NAME_MAX + 1];
    sk_staple_t    s;            /* this name's answer (s.buf NULL: none) */
    int64_t        oldest;       /* its oldest trusted checkpoint */
    char           from[SK_CLIENT_URL_MAX];   /* the mirror that signed it */
    int            failed;       /* the last refresh could not renew it */
    sk_staple_cause_t  cause;    /* why not (SK_STAPLE_RENEWED if it did) */
    int64_t        tried;        /* when it was last refreshed */
    char           why[SK_STAPLE_WHY_MAX];    /* what that refresh did */
} sk_staple_name_t;

typedef struct {
    sk_staple_name_t  names[SK_STAPLE_MAX_ANSWERS];
    size_t            n;
    unsigned char    *buf;       /* what to serve: the names whose answer
                                    is younger than staple_max_age; NULL
                                    if none is */
    size_t            len;
    int64_t           oldest;    /* buf's oldest checkpoint: serve it until
                                    oldest + staple_max_age */
    int64_t           next;      /* when to refresh again */
} sk_staple_set_t;

/* names: distinct DNS names, 1 to SK_STAPLE_MAX_ANSWERS. */
int sk_staple_set_init(sk_staple_set_t *set, const char *const *names,
    size_t n, sk_err_t *err) SK_WUR;
void sk_staple_set_free(sk_staple_set_t *set);       /* NULL ok */

/*
 * Each name whose answer is missing or older than t->staple_refresh:
 * the cache's copy if it is younger; else the first of t's mirrors
 * listed with a key whose answer verifies and is younger than
 * staple_refresh (else the youngest that verified), stored back in the
 * cache; else the answer held is kept while younger than staple_max_age
 * (why says so), then dropped.  cache and fetch may be NULL (no cache; no
 * network).  Then buf, oldest and next are rebuilt.  1 if buf changed, 0
 * if not, -1 for a local failure only.
 */
int sk_staple_set_refresh(sk_staple_set_t *set, const sk_client_trust_t *t,
    sk_cache_t *cache, sk_client_fetch_fn fetch, void *arg, int64_t now,
    sk_err_t *err) SK_WUR;

/*
 * An answer the caller kept (say the last good staple of an earlier
 * configuration, for a cache that is down): each of buf's answers for a
 * name of set that checks as the cache's would and is younger than the
 * one held replaces it; then buf, oldest and next are rebuilt.  1 if buf
 * changed, 0 if not (nothing usable in buf included), -1 for a local
 * failure only.
 */
int sk_staple_set_offer(sk_staple_set_t *set, const unsigned char *buf,
    size_t len, const sk_client_trust_t *t, int64_t now, sk_err_t *err)
    SK_WUR;

/* "sk:proof:<name>" */
void sk_staple_cache_key(char out[SK_CACHE_KEY_MAX + 1], const char *name);

#endif
