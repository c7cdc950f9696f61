/*
 * sk/client.h -- what an SK-aware client does: learn a name's entries
 * from mirrors, check them, judge their freshness (design 4.b), keep them
 * in a local cache, combine them into the name's record (draft 1.4), and
 * decide about the certificate chain a server presents.
 *
 * libsk does no network I/O here: mirror queries go through the fetch
 * callback the caller supplies (libcurl in `sk verify`), so the logic
 * links into nginx or a milter and is tested without sockets.
 *
 * Pieces, one file each, in common/src/client/:
 *   client_trust.c   the trusted timelines and mirrors, thresholds
 *   client_view.c    a name's evidence: checkpoints, entries, proofs
 *   client_answer.c  a mirror's signed answer (docs/protocol.md)
 *   client_cache.c   the local cache directory
 *   client_fresh.c   freshness of a view, mirror distrust
 *   client_lookup.c  the query loop over mirrors
 *   client_find.c    the record that covers a host (itself or a parent)
 *   client_decide.c  accept / reject / none / insecure
 *   client_staple*.c the stapled proof (sk/staple.h): a client's check,
 *                    a server's fetching
 */
#ifndef SK_CLIENT_H
#define SK_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <openssl/x509.h>
#include "err.h"
#include "key.h"
#include "entry.h"
#include "merkle.h"
#include "map.h"
#include "name.h"
#include "record.h"
#include "staple.h"

/* Design 4.b's constants (seconds, counts), shortened so that an Unbind
 * reaches every client that checks within an hour (docs/protocol.md,
 * "Freshness": timelines sign a checkpoint every second, mirrors poll
 * every minute): a view not showing it is older than T2 after 45 min. */
#define SK_CLIENT_T1              (30 * 60)        /* no query needed */
#define SK_CLIENT_T2              (45 * 60)        /* fresh enough */
#define SK_CLIENT_T3              (6 * 3600)       /* stale */
#define SK_CLIENT_T4              (24 * 3600)      /* very stale: a mirror
                                                      calls it Defunct */
#define SK_CLIENT_MAX_DERELICT    2
#define SK_CLIENT_N_RETRIES       5
#define SK_CLIENT_FRESH_PERCENT   80
/* A mirror may answer from its own cache (about 30 minutes), so an answer
 * less fresh than an earlier one by up to this much is not held against
 * it. */
#define SK_CLIENT_DROP_SLACK      3600

#define SK_CLIENT_MAX_TIMELINES   64
#define SK_CLIENT_MAX_MIRRORS     32
#define SK_CLIENT_MAX_ITEMS       4096      /* entries in one view */
#define SK_CLIENT_URL_MAX         512
#define SK_CLIENT_TOR_MAX         64        /* "[IPv6]:PORT" and NUL */
#define SK_CLIENT_TOR_DEFAULT     "127.0.0.1:9050"
#define SK_CLIENT_PATH_MAX        4096
#define SK_CLIENT_MIRROR_TIMEOUT  10        /* seconds, a direct query */
#define SK_CLIENT_TOR_TIMEOUT     60        /* seconds, a query over Tor */

/* When a mirror is asked over Tor (the trust file's mirror_tor). */
typedef enum {
    SK_MIRROR_TOR_FALLBACK = 0, /* its onion, when the direct query gave
                                   no answer signed for the nonce */
    SK_MIRROR_TOR_ALWAYS,       /* only over Tor: its onion, else its URL
                                   through Tor (no mirror sees the
                                   client's address) */
    SK_MIRROR_TOR_NEVER         /* only directly */
} sk_mirror_tor_t;

/* The trust set */

/*
 * When a lookup with no fresh enough answer may fail open (design 4.b's
 * "the system itself looks broken"), trust file "fail_open":
 *   evidence           (default) only when more than max_derelict trusted
 *                      timelines are shown stopped: a current answer
 *                      signed by a mirror listed with a key gives their
 *                      checkpoint older than T4, or lists them Defunct,
 *                      and nothing the client holds is younger.  Silence
 *                      (no answer, no staple, nothing cached) never is.
 *   never              never: no fresh enough view, no decision.
 *   unsafe-on-silence  the design's first reading, kept for operators who
 *                      want it: a timeline with no checkpoint at hand
 *                      counts as very stale, so an attacker who blocks
 *                      every mirror makes the client fail open.  Unsafe.
 */
typedef enum {
    SK_FAIL_OPEN_EVIDENCE = 0,
    SK_FAIL_OPEN_NEVER,
    SK_FAIL_OPEN_UNSAFE_SILENCE
} sk_fail_open_t;

typedef struct {
    uint64_t   tid;
    sk_key_t  *key;                               /* owned */
    char       origin[SK_CHECKPOINT_ORIGIN_MAX];  /* checkpoint key name */
} sk_client_timeline_t;

typedef struct {
    char       url[SK_CLIENT_URL_MAX];            /* no trailing '/' */
    sk_key_t  *key;                  /* its answer-signing key */
    char       onion[SK_CLIENT_URL_MAX];  /* "http://<v3>.onion[:PORT]",
                                             the same mirror over Tor;
                                             "" if none */
} sk_client_mirror_t;

typedef struct {
    sk_client_timeline_t  tl[SK_CLIENT_MAX_TIMELINES];
    size_t                ntl;
    sk_client_mirror_t    mirrors[SK_CLIENT_MAX_MIRRORS];
    size_t                nmirrors;
    int64_t               t1, t2, t3, t4;
    int64_t               drop_slack;
    unsigned              max_derelict, n_retries, fresh_percent;
    int64_t               staple_max_age;   /* a staple older: refused */
    int64_t               staple_refresh;   /* servers: fetch a new one
                                               once theirs is this old */
    int64_t               staple_retry;     /* servers: after a failure */
    char                  tor[SK_CLIENT_TOR_MAX];   /* SOCKS port for
                                                       .onion/.exit routes
                                                       and mirror queries
                                                       over Tor */
    sk_fail_open_t        fail_open;        /* when no fresh enough
                                               answer may fail open */
    char                  dnssec_anchors[SK_CLIENT_PATH_MAX];  /* the
                             root's trust anchors a DNSSEC Bind reported
                             unbacked is judged against (sk/dnssec.h),
                             read only then */
    sk_mirror_tor_t       mirror_tor;
    int64_t               mirror_timeout;   /* seconds: for the caller's
                                               fetch of a direct query */
    int64_t               tor_timeout;      /* and of one over Tor */
} sk_client_trust_t;

/* Empty set with design 4.b's thresholds. */
void sk_client_trust_init(sk_client_trust_t *t);

/*
 * The trust file, "key = value" lines, '#' comments:
 *
 *   timeline = TID PUBKEY-FILE [ORIGIN]    (origin: sk-timeline-<TID>)
 *   mirror   = URL PUBKEY-FILE [onion=ADDRESS[:PORT]]
 *   t1 = 1800   t2 = ...  t3 = ...  t4 = ...   (seconds)
 *   max_derelict = 2   retries = 5   fresh_percent = 80   drop_slack = 3600
 *   staple_max_age = 2700   staple_refresh = 600   staple_retry = 60
 *   tor = 127.0.0.1:9050    (Tor's SOCKS port, for .onion/.exit routes
 *                            and mirror queries over Tor)
 *   fail_open = evidence | never | unsafe-on-silence
 *   dnssec_anchors = /usr/share/dns/root.ds   (or IANA's root-anchors.xml)
 *   mirror_tor = fallback | always | never
 *   mirror_timeout = 10   tor_timeout = 60       (seconds)
 *
 * Relative key paths are relative to the file's directory.  Errors name
 * the file and line.  Adds to t (call sk_client_trust_init first).
 * Refused: a NUL byte, a parameter (t1, tor, ...) or timeline given twice,
 * a mirror without a key or given twice with different keys or onions;
 * each names the line of the first.
 */
int sk_client_trust_load(sk_client_trust_t *t, const char *path,
    sk_err_t *err) SK_WUR;
/* The same for the file's len bytes in data (need not be NUL-terminated);
 * path names it in errors and locates relative key paths. */
int sk_client_trust_parse(sk_client_trust_t *t, const char *data,
    size_t len, const char *path, sk_err_t *err) SK_WUR;
/* Takes a new reference to key. */
int sk_client_trust_add_timeline(sk_client_trust_t *t, uint64_t tid,
    const sk_key_t *key, const char *origin, sk_err_t *err) SK_WUR;
/* A mirror needs its key: a direct query is believed only with the
 * mirror's signature over the client's nonce (sk/nonce.h), since an
 * answer replayed on the path is otherwise a genuine one (SK_ERR_USAGE
 * for NULL).  A URL already there (trailing '/'s aside) with the same key
 * is a no-op; with another key, SK_ERR_EXISTS. */
int sk_client_trust_add_mirror(sk_client_trust_t *t, const char *url,
    const sk_key_t *key, sk_err_t *err) SK_WUR;
/* The onion of the mirror at url (added first): "ADDRESS[:PORT]", a v3
 * onion address, port 80 by default.  The same again is a no-op; another,
 * SK_ERR_EXISTS; SK_ERR_NOT_FOUND for a URL not listed. */
int sk_client_trust_set_onion(sk_client_trust_t *t, const char *url,
    const char *onion, sk_err_t *err) SK_WUR;
/* Tor's SOCKS port: "IPv4:PORT" or "[IPv6]:PORT", numeric. */
int sk_client_trust_set_tor(sk_client_trust_t *t, const char *addr,
    sk_err_t *err) SK_WUR;
const sk_client_timeline_t *sk_client_trust_find(const sk_client_trust_t *t,
    uint64_t tid);
/* "evidence", "never", "unsafe-on-silence". */
const char *sk_client_fail_open_name(sk_fail_open_t f);
void sk_client_trust_free(sk_client_trust_t *t);

/* A name's evidence: per timeline its checkpoint, and each entry for the
 * name with its inclusion proof in that checkpoint's tree. */

/* What a timeline's checkpoint proves about the name (docs/protocol.md,
 * "The client rule"). */
typedef enum {
    SK_CLIENT_MAP_UNMAPPED = 0,     /* its last entry is no Map-Root: the
                                       name's absence is believed as before
                                       maps */
    SK_CLIENT_MAP_ABSENT,           /* the map proves the name absent */
    SK_CLIENT_MAP_PRESENT           /* ... present, with exactly the
                                       entries the view holds */
} sk_client_map_t;

typedef struct {
    uint64_t          tid;
    char             *note;         /* the signed checkpoint note; owned */
    size_t            notelen;
    sk_checkpoint_t   cp;
    int64_t           ts;           /* its "Timestamp" extension line */
    char              state[12];    /* the mirror's state of the timeline
                                       in the answer it came from ("Stuck":
                                       its last checked state); "" if from
                                       the cache */
    char             *last;         /* the tree's last entry (SN size - 1),
                                       canonical; owned; NULL: not given */
    size_t            lastlen;
    sk_merkle_proof_t last_proof;   /* its inclusion in the tree */
    sk_map_proof_t   *mproof;       /* owned; the name's map proof when
                                       last is a Map-Root entry */
    sk_client_map_t   map;          /* set by sk_client_view_verify */
} sk_client_cp_t;

typedef struct {
    sk_entry_t        *entry;       /* owned */
    char              *text;        /* canonical bytes; owned */
    size_t             len;
    uint64_t           tid, sn;
    sk_merkle_proof_t  proof;       /* leaf sn in the tree of cp.size */
} sk_client_item_t;

typedef struct {
    char               name[SK_NAME_MAX + 1];
    sk_client_cp_t    *cps;
    size_t             ncps;
    sk_client_item_t  *items;
    size_t             nitems;
} sk_client_view_t;

/* Add pieces (copies); checks come with sk_client_view_verify.  A second
 * checkpoint for a TID replaces the first. */
int sk_client_view_add_cp(sk_client_view_t *v, uint64_t tid,
    const char *note, size_t len, sk_err_t *err) SK_WUR;
int sk_client_view_add_item(sk_client_view_t *v, const char *text,
    size_t len, const sk_merkle_proof_t *proof, sk_err_t *err) SK_WUR;
/* The last entry of tid's checkpoint tree, its inclusion proof and, when
 * it is a Map-Root entry, the name's map proof (mp, else NULL): copies,
 * checked by sk_client_view_verify.  The checkpoint must be added first. */
int sk_client_view_set_last(sk_client_view_t *v, uint64_t tid,
    const char *text, size_t len, const sk_merkle_proof_t *proof,
    const sk_map_proof_t *mp, sk_err_t *err) SK_WUR;

/*
 * Every checkpoint is signed by its trusted timeline under its origin
 * (checkpoints of untrusted TIDs are an error), and carries a Timestamp
 * extension no later than now + 1 h; every entry is for v->name, stamped
 * by a trusted timeline that has a checkpoint here, signed by it, below
 * the checkpoint's size, and included in its tree by the proof; no
 * (TID, SN) twice.  The first failure is the error, naming the TID/SN.
 *
 * And the client rule (docs/protocol.md, "The name map"): each
 * checkpoint comes with its tree's last entry, signed by the timeline,
 * SN = size - 1, included by its proof.  If that is a Map-Root entry, the
 * map proof for the name's key must verify against its Map-Hash, and the
 * view's entries of that timeline must be exactly what it proves: none
 * for an absent name; for a present one, in ascending SN, their count,
 * newest SN and chain of leaf hashes give the proven value.  Each cp->map
 * says what was proven.  A failure is SK_ERR_SIGNATURE ("timeline 7: map
 * proof: ...").
 */
int sk_client_view_verify(sk_client_view_t *v, const sk_client_trust_t *t,
    int64_t now, sk_err_t *err) SK_WUR;

const sk_client_cp_t *sk_client_view_cp(const sk_client_view_t *v,
    uint64_t tid);
/* "present", "absent", "unmapped". */
const char *sk_client_map_name(sk_client_map_t m);
const sk_client_item_t *sk_client_view_item(const sk_client_view_t *v,
    uint64_t tid, uint64_t sn);

/* The name's record from the view's entries (rebinders through lookup,
 * as sk_record_combine).  rec borrows from v: keep v until rec is freed. */
int sk_client_view_record(sk_record_t *rec, const sk_client_view_t *v,
    sk_rebinder_key_fn lookup, void *arg, sk_err_t *err) SK_WUR;

/* Text form (the cache file): see docs/protocol.md "Client cache". */
int sk_client_view_format(char **out, size_t *len,
    const sk_client_view_t *v, sk_err_t *err) SK_WUR;
int sk_client_view_parse(sk_client_view_t *v, const char *buf, size_t len,
    sk_err_t *err) SK_WUR;

void sk_client_view_free(sk_client_view_t *v);   /* zeroes it; NULL ok */

/* Freshness (design 4.b) */

typedef struct {
    size_t   ntl;           /* trusted timelines */
    size_t   within_t1;     /* checkpoint age <= T1 */
    size_t   fresh;         /* age <= T2 */
    size_t   stale;         /* age > T3, or no checkpoint */
    size_t   very_stale;    /* age > T4, or no checkpoint (what
                               fail_open = unsafe-on-silence counts) */
    size_t   stopped;       /* shown stopped by evidence (set by the
                               lookup, not by sk_client_fresh_eval): what
                               fail_open = evidence counts */
} sk_client_fresh_t;

/* Count the trusted timelines of v by the age of their checkpoints
 * (stopped: 0). */
void sk_client_fresh_eval(sk_client_fresh_t *f, const sk_client_trust_t *t,
    const sk_client_view_t *v, int64_t now);
/* 1 if no query is needed: every trusted timeline within T1. */
int sk_client_fresh_cached_ok(const sk_client_fresh_t *f);
/* 1 if an answer is fresh enough: at least fresh_percent of the timelines
 * within T2 and at most max_derelict beyond T3. */
int sk_client_fresh_ok(const sk_client_fresh_t *f, const sk_client_trust_t *t);
/* 1 if, with no fresh enough answer, the client may fail open (the system
 * itself looks broken, not one name), by t->fail_open: more than
 * max_derelict timelines stopped (evidence), or very stale
 * (unsafe-on-silence); never (never). */
int sk_client_fresh_fail_open(const sk_client_fresh_t *f,
    const sk_client_trust_t *t);

/* What the client remembers of a mirror (in the cache, "mirrors/"). */
typedef struct {
    char      url[SK_CLIENT_URL_MAX];
    int       dropped;              /* distrusted for good */
    char      why[SK_ERR_MSG_MAX];  /* why dropped */
    uint64_t  tid[SK_CLIENT_MAX_TIMELINES];
    uint64_t  size[SK_CLIENT_MAX_TIMELINES];  /* freshest checkpoint seen */
    int64_t   ts[SK_CLIENT_MAX_TIMELINES];
    size_t    ntl;
    char      reneged_hash[9];      /* its Reneged-Hash whose evidence the
                                       client went through; "" none */
} sk_client_mstate_t;

/*
 * 0 if answer may be believed given what the mirror said before (st) and
 * what the client holds for the name (cached, or NULL); -1 with
 * SK_ERR_SIGNATURE and the reason if the mirror must be dropped:
 *   - a timeline's checkpoint older than one this mirror gave before
 *     (timestamp earlier by more than drop_slack, or a smaller tree by
 *     more than that slack's worth of time),
 *   - an entry the client holds (for a timeline the answer covers, below
 *     its checkpoint's size) missing or different.
 */
int sk_client_fresh_check_mirror(const sk_client_mstate_t *st,
    const sk_client_view_t *answer, const sk_client_view_t *cached,
    const sk_client_trust_t *t, sk_err_t *err) SK_WUR;
/* Remember answer's checkpoints as the freshest seen from the mirror. */
void sk_client_mstate_update(sk_client_mstate_t *st,
    const sk_client_view_t *answer);

/*
 * Renegation evidence (docs/protocol.md, "Renegation tracking") about
 * trusted timeline tid, checked with the trust set alone: 0 if it proves
 * the timeline reneged; SK_ERR_UNAVAILABLE if its kind needs the
 * timeline's history (root changes, a name's earlier entries), which a
 * client does not hold; another code if it is not evidence.
 */
int sk_client_evidence_verify(const sk_client_trust_t *t, uint64_t tid,
    const char *text, size_t len, sk_err_t *err) SK_WUR;
/* Take tid out of the trust set (its key stays with the caller, who
 * owns it); 1 if it was there. */
int sk_client_trust_distrust(sk_client_trust_t *t, uint64_t tid);

/* The local cache: a directory of verified views and mirror states. */

typedef struct sk_client_cache_s sk_client_cache_t;

/* Creates dir (0700) if missing. */
int sk_client_cache_open(sk_client_cache_t **c, const char *dir,
    sk_err_t *err) SK_WUR;
/* The view stored for name, re-verified against t; SK_ERR_NOT_FOUND if
 * none.  A stored view that no longer verifies is an error, not used. */
int sk_client_cache_get(sk_client_cache_t *c, sk_client_view_t *v,
    const char *name, const sk_client_trust_t *t, int64_t now,
    sk_err_t *err) SK_WUR;
/* Atomic replace (temp, fsync, rename). */
int sk_client_cache_put(sk_client_cache_t *c, const sk_client_view_t *v,
    sk_err_t *err) SK_WUR;
/* A mirror's state; a fresh one (not an error) if none is stored. */
int sk_client_cache_get_mirror(sk_client_cache_t *c, sk_client_mstate_t *st,
    const char *url, sk_err_t *err) SK_WUR;
int sk_client_cache_put_mirror(sk_client_cache_t *c,
    const sk_client_mstate_t *st, sk_err_t *err) SK_WUR;
void sk_client_mstate_free(sk_client_mstate_t *st);
/* Keep verified renegation evidence about tid (DIR/reneged/<tid>). */
int sk_client_cache_put_reneged(sk_client_cache_t *c, uint64_t tid,
    const char *evidence, size_t len, sk_err_t *err) SK_WUR;
/* Take out of t every timeline the cache holds evidence against, after
 * checking that evidence again; *n how many.  Evidence that no longer
 * verifies fails, naming the file (the timeline stays out of t). */
int sk_client_cache_reneged(sk_client_cache_t *c, sk_client_trust_t *t,
    size_t *n, sk_err_t *err) SK_WUR;
void sk_client_cache_close(sk_client_cache_t *c);        /* NULL ok */

/* Mirror answers (format: docs/protocol.md "Mirror answers") */

typedef struct {
    int64_t   timestamp;                /* the mirror's clock */
    char      reneged_hash[9];          /* 8 hex digits */
    size_t    ntl;                      /* timelines listed */
    uint64_t  tid[SK_CLIENT_MAX_TIMELINES];
    char      state[SK_CLIENT_MAX_TIMELINES][12];   /* "Idle", ... */
    int64_t   age[SK_CLIENT_MAX_TIMELINES];     /* Checkpoint-Age of a Stuck
                                                   timeline served from its
                                                   last checked state; -1 */
} sk_client_answer_info_t;

/*
 * Parse the answer to GET /query/<name>?since=<since> and verify it: the
 * mirror's Ed25519 signature (unless key is NULL), the strict layout, and
 * for each trusted timeline with a checkpoint the note and every entry
 * (sk_client_view_verify; each entry's TID, SN and Timestamp >= since
 * against its block).  Timelines the trust set does not list are parsed
 * and skipped.  A signed "no entries" answer gives checkpoints and no
 * items.  info may be NULL.
 */
int sk_client_answer_verify(sk_client_view_t *v,
    sk_client_answer_info_t *info, const char *buf, size_t len,
    const char *name, uint64_t since, const sk_key_t *key,
    const sk_client_trust_t *t, int64_t now, sk_err_t *err) SK_WUR;

/* The query loop */

/* GET url; *body malloc()ed (NUL after it), *status the HTTP status.
 * -1 only when no HTTP answer came (SK_ERR_UNAVAILABLE). */
typedef int (*sk_client_fetch_fn)(char **body, size_t *len, int *status,
    const char *url, void *arg, sk_err_t *err);

/* A ready fetch on libcurl (client_curl.c; link -lcurl, and call
 * curl_global_init first).  arg: an sk_client_curl_t, or NULL for a 10 s
 * bound.  No redirects, http and https only, at most SK_CLIENT_ANSWER_MAX
 * bytes. */
#define SK_CLIENT_ANSWER_MAX  (64 * 1024 * 1024)

typedef struct {
    long         timeout_ms;            /* the whole exchange; 0: 10 s */
    long         connect_timeout_ms;    /* 0: libcurl's default */
    const char  *socks;                 /* "ADDR:PORT" of Tor's SOCKS
                                           port, names resolved by Tor;
                                           NULL: direct */
} sk_client_curl_t;

/* The options of sk_client_fetch_curl for a client's two paths to a
 * mirror, from the trust set: direct (mirror_timeout) and through Tor's
 * SOCKS port t->tor (tor_timeout; socks borrows t->tor). */
void sk_client_curl_init(sk_client_curl_t *direct, sk_client_curl_t *tor,
    const sk_client_trust_t *t);

int sk_client_fetch_curl(char **body, size_t *len, int *status,
    const char *url, void *arg, sk_err_t *err);

typedef enum {
    SK_FRESH_CACHED = 0,    /* the cache was fresh enough: no query */
    SK_FRESH_ANSWER,        /* a mirror gave a fresh enough answer */
    SK_FRESH_OPEN,          /* none did; the system looks broken: the best
                               information at hand decides (fail open) */
    SK_FRESH_CLOSED,        /* none did; do not connect (fail closed) */
    SK_FRESH_STAPLE         /* the server's staple was fresh: no query */
} sk_fresh_outcome_t;

#define SK_CLIENT_LOG_MAX  (SK_CLIENT_MAX_MIRRORS + 1)

typedef struct {
    char      url[SK_CLIENT_URL_MAX];
    char      what[SK_ERR_MSG_MAX];    /* "fresh: ..", "dropped: ..." */
} sk_client_try_t;

typedef struct {
    sk_fresh_outcome_t  outcome;
    sk_client_view_t    view;         /* what the decision rests on */
    sk_client_fresh_t   fresh;        /* of view */
    char                source[SK_CLIENT_URL_MAX];  /* mirror URL/"cache" */
    sk_client_try_t     tries[SK_CLIENT_LOG_MAX];
    size_t              ntries;
} sk_client_result_t;

/*
 * Design 4.b for one name: the cached view if every timeline is within T1;
 * else ask mirrors in order (skipping dropped ones, at most n_retries),
 * each query with a new nonce: an answer without the mirror's signature
 * over that nonce is refused (a replay: the mirror is not dropped for
 * it), one that has it is verified, and the mirror is dropped if it signs
 * garbage, answers less fresh than before or omits cached entries; stop
 * at the first fresh enough answer, which (with cached timelines the
 * answer lacks) is cached.  With none: fail open or closed (the best view
 * is still returned).  cache may be NULL.  No Tor (sk_client_lookup_ctx
 * has it).  -1 only for local failures (memory, cache directory).
 */
int sk_client_lookup(sk_client_result_t *res, const char *name,
    const sk_client_trust_t *t, sk_client_cache_t *cache,
    sk_client_fetch_fn fetch, void *arg, int64_t now, sk_err_t *err) SK_WUR;
void sk_client_result_free(sk_client_result_t *res);

/* What a lookup needs (and a rebinder lookup, to run one itself). */
typedef struct {
    const sk_client_trust_t  *trust;
    sk_client_cache_t        *cache;        /* may be NULL */
    sk_client_fetch_fn        fetch;
    void                     *arg;
    int64_t                   now;
    unsigned                  depth;        /* 0 at the top */
    const sk_staple_t        *staple;       /* the server's; may be NULL */
    sk_client_fetch_fn        fetch_tor;    /* through Tor, for mirror
                                               onions and mirror_tor =
                                               always; NULL: none */
    void                     *tor_arg;
} sk_client_ctx_t;

/*
 * sk_client_lookup with a staple: between the cache (within T1) and the
 * mirrors, the staple's answer for name (sk_client_staple_view).  If it
 * verifies, is fresh (staple_max_age) and holds every entry the cache
 * holds for the timelines it covers, it decides (SK_FRESH_STAPLE, source
 * the mirror that signed it) and is cached; else the reason is logged
 * (url "staple") and the mirrors are asked as without one.  And with
 * Tor: each mirror is asked as the trust set's mirror_tor says, through
 * fetch_tor (to its onion, or with mirror_tor = always to its URL), with
 * the same nonce rules; source is then the URL the answer came from.
 */
int sk_client_lookup_ctx(sk_client_result_t *res, const char *name,
    const sk_client_ctx_t *ctx, sk_err_t *err) SK_WUR;

/* The oldest checkpoint Timestamp among t's timelines in v; -1
 * (SK_ERR_EXPIRED) naming a trusted timeline v has no checkpoint of. */
int sk_client_view_oldest(int64_t *oldest, const sk_client_view_t *v,
    const sk_client_trust_t *t, sk_err_t *err) SK_WUR;

/*
 * The view of name a staple carries: its first answer for name from a
 * mirror of t listed with a key (*mirror, if not NULL), verified as a
 * fetched answer (sk_client_answer_verify, since 0), with every trusted
 * timeline's checkpoint younger than t->staple_max_age.  -1 with the
 * reason: SK_ERR_NOT_FOUND (no answer for name), SK_ERR_SIGNATURE (none
 * from a trusted mirror, or a bad signature), SK_ERR_EXPIRED (stale),
 * or what the answer's check found.
 */
int sk_client_staple_view(sk_client_view_t *v,
    const sk_client_mirror_t **mirror, const sk_staple_t *s,
    const char *name, const sk_client_trust_t *t, int64_t now,
    sk_err_t *err) SK_WUR;

/*
 * An sk_rebinder_key_fn (record.h) for sk_client_view_record: the SK in
 * force for the rebinder name, learnt with sk_client_lookup (arg is an
 * sk_client_ctx_t).  SK_ERR_NOT_FOUND when the rebinder has no bound
 * record, or rebinders nest more than SK_CLIENT_REBIND_DEPTH deep.
 */
#define SK_CLIENT_REBIND_DEPTH  4
int sk_client_rebinder_key(sk_key_t **key, const char *rebinder, void *arg,
    sk_err_t *err);

/* The record that decides for a host */

typedef struct {
    char                name[SK_NAME_MAX + 1];  /* whose record: the host
                                                   or a parent of it */
    sk_client_result_t  res;                    /* its lookup */
    sk_record_t         rec;                    /* borrows from res.view */
} sk_client_found_t;

/*
 * The record in force for host: host's own, else the first parent (of
 * two labels or more) whose record is bound with Includes-Subdomains and
 * covers host; when none is, host's own lookup (whatever it says).  Each
 * name through sk_client_lookup, combined with sk_client_view_record and
 * rebinders through sk_client_rebinder_key (ctx).  -1 only as
 * sk_client_lookup.
 */
int sk_client_find(sk_client_found_t *f, const char *host,
    const sk_client_ctx_t *ctx, sk_err_t *err) SK_WUR;

/*
 * 0 if f may decide; -1 with SK_ERR_UNAVAILABLE when it must not (fail
 * closed, design 4.b): no mirror gave a fresh enough answer and what is
 * at hand binds no SK.  A client then connects nowhere.  When it binds
 * one, the decision may still only refuse: sk_client_found_decision_ok.
 */
int sk_client_found_usable(const sk_client_found_t *f, sk_err_t *err)
    SK_WUR;

void sk_client_found_free(sk_client_found_t *f);    /* NULL ok */

/* The decision */

typedef enum {
    SK_DECIDE_ACCEPT = 0,   /* carrier verified against the current SK */
    SK_DECIDE_REJECT,       /* SK covers the service; no valid carrier */
    SK_DECIDE_NONE,         /* no SK for this name and service */
    SK_DECIDE_INSECURE      /* SK covers the service, offered without TLS */
} sk_decision_t;

typedef struct {
    sk_decision_t  decision;
    /* accept: "carrier"; reject: "no-carrier", "malformed-carrier",
     * "wrong-sk", "signature", "key-mismatch", "expired",
     * "not-yet-valid", "carrier-name", "carrier-services", "mx-no-sk"
     * (sk_client_decide_mx); none:
     * "no-sk", "unbound", "not-covered"; insecure: "plaintext". */
    const char    *check;
    char           reason[2 * SK_ERR_MSG_MAX];
    char           sk[SK_FINGERPRINT_SIZE];   /* SK in force, or "" */
    time_t         not_after;                 /* accept: carrier's */
} sk_decide_t;

const char *sk_decision_name(sk_decision_t d);  /* "accept", ... */
/* The check a carrier failure names: "wrong-sk" for SK_ERR_WRONG_SK,
 * "signature", "key-mismatch", "expired", "not-yet-valid", "no-carrier"
 * (SK_ERR_NOT_FOUND), "malformed-carrier" (SK_ERR_FORMAT); else the
 * code's sk_err_str. */
const char *sk_client_check_name(sk_err_code_t code);

/*
 * Decide for host (the name connected to), service/port (port 0: the
 * service's default) and the chain the server presented (leaf first;
 * NULL when the service is offered without TLS).  rec is the record of
 * the name whose SK covers host (host itself, or a parent with
 * Includes-Subdomains).  Returns -1 only for memory/crypto failures.
 */
int sk_client_decide(sk_decide_t *d, const sk_record_t *rec,
    const char *host, const char *service, unsigned port,
    STACK_OF(X509) *chain, time_t now, sk_err_t *err) SK_WUR;

/*
 * 0 if decision d, made on what f found, may stand; -1 with
 * SK_ERR_UNAVAILABLE (fail closed: no decision) when f's view is not
 * fresh enough (no mirror, staple or cache gave one: SK_FRESH_CLOSED) and
 * d would let the connection through (accept, none).  An old view can
 * show an SK to enforce (reject, insecure stand), never that the SK is
 * still in force, nor that the name has none: a replayed answer from
 * before an Unbind must not make the revoked SK's carrier accepted.
 * Every entry point checks this after sk_client_decide (sk_tls_decide).
 */
int sk_client_found_decision_ok(const sk_client_found_t *f,
    const sk_decide_t *d, sk_err_t *err) SK_WUR;

/*
 * Mail (docs/protocol.md, "Mail: a domain's MX hosts"): the decision for
 * mail to domain handed to host, one of domain's MX hosts (or domain
 * itself when it has none), on port (0: 25), with the chain host
 * presented after STARTTLS (NULL: it offered no TLS).  rec is domain's
 * record (sk_client_find of domain).
 *   none      rec binds no SK covering domain and smtp:port
 *   insecure  it does, and host offered no TLS
 *   accept    host's chain has a carrier by domain's SK that covers host
 *             (its name, with rec's Includes-Subdomains) and smtp, valid
 *             now for host's key; or host matches an "mx=" pattern of
 *             domain's smtp element (sk_client_mx_pattern) and host's own
 *             record, hostrec (sk_client_find of host; NULL: none),
 *             accepts the chain for smtp (sk_client_decide)
 *   reject    otherwise ("mx-no-sk": host matches a pattern but no SK
 *             covers smtp at host): the MX records, which anyone on the
 *             path can change, never pick a host domain's record does not
 *             vouch for.
 * -1 only for memory/crypto failures.
 */
int sk_client_decide_mx(sk_decide_t *d, const sk_record_t *rec,
    const char *domain, const char *host, unsigned port,
    const sk_record_t *hostrec, STACK_OF(X509) *chain, time_t now,
    sk_err_t *err) SK_WUR;
/* The first "mx=" pattern of rec's element covering smtp:port that host
 * matches (borrowed from rec); NULL if none does. */
const char *sk_client_mx_pattern(const sk_record_t *rec, const char *host,
    unsigned port);

#endif
