/*
 * mr.h -- sk-mirror internals: configuration, the per-timeline copies and
 * their state machine, the name index and answer cache, renegation
 * evidence, the HTTP front.
 *
 * Threads: one sync thread per mirrored timeline (it alone writes that
 * timeline's files), one tracking thread when peers are configured, and
 * libmicrohttpd's threads for queries.  mr_mirror_t.lock covers every
 * field marked "lock" below; sync threads drop it while they talk to the
 * network, verify signatures or write files.
 */
#ifndef SK_MR_H
#define SK_MR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <sk/db.h>
#include <sk/dnssec.h>
#include <sk/httpd.h>
#include <sk/map.h>
#include <sk/metrics.h>
#include <sk/sk.h>
#include <sk/strtab.h>
#include <sk/tfm.h>

#define MR_PROG           "sk-mirror"
#define MR_KEY_FILE       "mirror.key"
#define MR_PUB_FILE       "mirror.pub"
#define MR_MAX_TIMELINES  64
#define MR_MAX_PEERS      16
#define MR_CACHE_CONNS    4     /* Redis handles for answer_cache */

/* One "timeline = TID URL PUBKEY [ORIGIN]" line. */
typedef struct {
    uint64_t   tid;
    char      *url;             /* no trailing '/' */
    char      *pub_file;
    char      *origin;          /* checkpoint key name; sk-timeline-<tid> */
} mr_tlconf_t;

/* Configuration (mr_conf.c): "key = value" lines, '#' comments. */
typedef struct {
    char        *listen;
    char        *data_dir;
    char        *key_file;          /* default data_dir/mirror.key */
    uint64_t     poll_interval;     /* seconds between polls when healthy */
    uint64_t     retry_min;         /* first retry of a Stuck timeline */
    uint64_t     retry_max;         /* backoff doubles up to this */
    uint64_t     defunct_after;     /* seconds Stuck before Defunct */
    uint64_t     fetch_timeout_ms;  /* one HTTP request to a timeline */
    uint64_t     chunk_max;         /* bytes of one .bz2 chunk */
    uint64_t     chunk_text_max;    /* bytes of a chunk once unpacked */
    uint64_t     tail_max;          /* unpublished entries fetched one by one */
    uint64_t     tiles_commit;      /* entries a sync through tiles commits
                                       at a time (mr_prefix.c) */
    uint64_t     query_cache;       /* seconds an answer is reused; 0 off */
    uint64_t     query_cache_size;  /* bytes of answers kept in memory */
    uint64_t     threads;           /* HTTP polling threads */
    sk_httpd_limits_t  http;        /* connections, timeouts */
    char        *answer_cache;      /* redis://...|unix:...; NULL: memory */
    char        *metrics_listen;    /* ADDR:PORT of /metrics; NULL: off */
    char        *dnssec_anchors;    /* root DS/DNSKEY file for DNSSEC-Chain */
    char        *onion_dir;         /* its HiddenServiceDir; NULL: none */
    char        *onion_user;        /* owner of onion_dir; NULL: as Tor's */
    uint64_t     onion_port;        /* the port clients use on the onion */
    char        *peer[MR_MAX_PEERS];    /* other mirrors, for tracking */
    size_t       npeers;
    mr_tlconf_t  tl[MR_MAX_TIMELINES];
    size_t       ntl;
} mr_conf_t;

int mr_conf_load(mr_conf_t *conf, const char *path, sk_err_t *err) SK_WUR;
void mr_conf_free(mr_conf_t *conf);

typedef enum {
    MR_NEW = 0,         /* never synced */
    MR_IDLE,            /* caught up with its newest checkpoint */
    MR_SYNCING,         /* fetching entries */
    MR_STUCK,           /* unreachable or bad answers: retried */
    MR_DEFUNCT,         /* stuck too long: still retried, slowly */
    MR_CORRUPT          /* reneged: evidence stored, never served again */
} mr_state_t;

const char *mr_state_name(mr_state_t s);

/* A change to the roots a timeline trusts: an Add-Root-CA (cert) or a
 * Remove-Root-CA (cert NULL), at SN sn, with its CA-Serial. */
typedef struct {
    uint64_t       sn;
    struct x509_st *cert;       /* X509 */
    unsigned char  hash[SK_SHA256_BYTES];
    unsigned long  serial;
} mr_root_t;

typedef struct mr_mirror_s mr_mirror_t;

/* One mirrored timeline. */
typedef struct {
    const mr_tlconf_t  *conf;
    mr_mirror_t        *mirror;     /* whose index the tree's leaves are
                                       read through */
    uint32_t            index;      /* in mr_mirror_t.tl */
    sk_key_t           *key;        /* the timeline's public key */
    char               *dir;        /* data_dir/tl-<tid> */
    int                 fd;         /* entries, O_APPEND */

    /* lock */
    sk_merkle_tree_t   *tree;       /* may run ahead of size in a sync */
    mr_state_t          state;
    char                reason[SK_ERR_MSG_MAX];   /* why Stuck/Corrupt */
    uint64_t            size;       /* entries stored and indexed */
    off_t               end;        /* where SN size starts in entries */
    int64_t             last_ts;    /* timestamp of SN size - 1 */
    char               *cp;         /* newest verified checkpoint note */
    size_t              cplen;
    sk_checkpoint_t     cpv;        /* cp, parsed; size 0 if none */
    int64_t             cp_ts;      /* its Timestamp extension */
    uint64_t            tfm_size;   /* Tree-Size of the newest chunk TFM */
    int64_t             last_ok;    /* last successful round */
    int64_t             stuck_since;
    uint64_t            backoff;    /* seconds until the next retry */
    uint64_t            failures;   /* consecutive failed rounds */
    uint64_t            rounds;     /* rounds done (tests wait on it) */
    mr_root_t          *roots;      /* root changes, by SN */
    size_t              nroots, rootcap;
    uint64_t            roots_upto; /* entries 0..roots_upto-1 noted */
    uint64_t            prefix_size; /* entries the stored prefix covers */
    unsigned char       ix_root[SK_SHA256_BYTES];  /* the index's tag: the
                                       Merkle root of its entries */
    struct x509_store_st *store;    /* the first store_k root changes */
    size_t              store_k;

    struct mr_inc_s    *inc;        /* incorporated copies (mr_incorp.c) */

    /* lock: what answers prove from, published with cp (mr_map.c) */
    char               *last;       /* entry cpv.size - 1, or NULL */
    size_t              lastlen;
    int                 mapped;     /* last is a Map-Root entry ... */
    sk_merkle_hash_t    map_hash;   /* ... naming this map root */
    sk_db_txn_t        *snap;       /* read txn: the map at cpv.size */
    uint64_t            map_bad;    /* sync thread: SN + 1 of a Map-Root
                                       that does not name the map */

    pthread_t           thread;
    int                 thread_up;
    /* sync thread only: does the timeline serve tlog-tiles entry bundles
     * (0 not known: probe; 1 yes; -1 no, sync from chunks); the source
     * last logged */
    int                 tiles;
    int                 tiles_logged;
    _Atomic uint64_t    seen_size;  /* of the newest checkpoint fetched */
} mr_tl_t;

/* An indexed entry: where it is in its copy, its stamp, its leaf. */
#define MR_IX_ROOT  1           /* flags: an Add- or Remove-Root-CA */
typedef struct {
    uint64_t       off;
    uint32_t       len;
    int64_t        ts;
    unsigned char  leaf[SK_SHA256_BYTES];
    unsigned       flags;
} mr_loc_t;

/* Where a name's entry lives: timeline index, SN, and the entry. */
typedef struct {
    uint32_t   tl;
    uint64_t   sn;
    mr_loc_t   loc;
} mr_ref_t;

/* mr_lru.c: answers in memory, least recently used out first. */
typedef struct mr_ans_s mr_ans_t;
typedef struct {
    pthread_mutex_t  lock;      /* everything here; taken last */
    mr_ans_t  **bucket;
    size_t      nbuckets;
    mr_ans_t   *head[2], *tail[2];  /* by class (1: an absent name's),
                                   newest use first */
    size_t      n;              /* answers held */
    uint64_t    bytes, max;     /* their cost; query_cache_size */
    uint64_t    absent_bytes;   /* of class 1: at most max / 4 */
    uint64_t    hits, absent_hits, evictions;
} mr_lru_t;

typedef struct {
    size_t      n;
    uint64_t    bytes, max, hits, absent_hits, evictions;
} mr_lru_stats_t;

void mr_lru_init(mr_lru_t *c, uint64_t max);
/* 0 and a copy of the answer for (name, since) built at gen no earlier
 * than min_at; -1 if none (a stale one is dropped). */
int mr_lru_get(mr_lru_t *c, const char *name, int64_t since, uint64_t gen,
    int64_t min_at, char **out, size_t *len);
/* Keep an answer (absent: the name had no entries, or name is a range of
 * absent names); the least recently used go while the cost passes the
 * limit, absent names' while theirs passes a quarter of it. */
void mr_lru_put(mr_lru_t *c, const char *name, int64_t since, uint64_t gen,
    int64_t at, int absent, const char *ans, size_t len);
/* A new entry for name: its answers go, absent or not, whatever since. */
void mr_lru_drop(mr_lru_t *c, const char *name);
void mr_lru_stats(mr_lru_t *c, mr_lru_stats_t *st);
void mr_lru_free(mr_lru_t *c);

/* mr_metrics.c: the series /metrics shows, by timeline index; all NULL
 * (no-ops) while metrics_listen is off. */
#define MR_STATES  6            /* mr_state_t's values */
typedef enum {
    MR_ANSWER_OK = 0,           /* 200: a signed answer */
    MR_ANSWER_BAD,              /* 400: bad name or since */
    MR_ANSWER_UNAVAILABLE,      /* 503: fewer than two servable */
    MR_ANSWER_ERROR,            /* 500 */
    MR_ANSWER_KINDS
} mr_answer_t;

typedef struct {
    sk_metrics_t      *reg;
    sk_httpd_t        *h;
    sk_httpd_metrics_t http;        /* the public front's requests */
    sk_metric_t       *synced[MR_MAX_TIMELINES];
    sk_metric_t       *entries[MR_MAX_TIMELINES];
    sk_metric_t       *lag[MR_MAX_TIMELINES];
    sk_metric_t       *age[MR_MAX_TIMELINES];
    sk_metric_t       *state[MR_MAX_TIMELINES][MR_STATES];
    sk_metric_t       *rounds[MR_MAX_TIMELINES][2];     /* ok, failed */
    sk_metric_t       *round_seconds[MR_MAX_TIMELINES];
    sk_metric_t       *last_ok[MR_MAX_TIMELINES];
    sk_metric_t       *answers[MR_ANSWER_KINDS];
    sk_metric_t       *cache[2];    /* hits, misses */
    sk_metric_t       *cache_bytes, *cache_answers, *cache_evictions;
    sk_metric_t       *redis_errors;
    sk_metric_t       *servable;
} mr_metrics_t;

struct mr_mirror_s {
    mr_conf_t          conf;
    sk_key_t          *key;         /* the mirror's Ed25519 key */
    sk_dnssec_anchors_t *anchors;   /* conf.dnssec_anchors, or NULL: then
                                       a DNSSEC Bind cannot be judged and
                                       its timeline's sync waits */
    char               anchors_err[SK_ERR_MSG_MAX];   /* why NULL */
    mr_tl_t            tl[MR_MAX_TIMELINES];
    size_t             ntl;
    uint32_t           order[MR_MAX_TIMELINES];     /* by ascending TID */

    pthread_mutex_t    lock;        /* the "lock" fields, names, stopping */
    /* What an answer reads (states, checkpoints, trees, the index as the
     * copies stand): changed only by holders of the lock, which also
     * hold this for writing (mr_lock), read by answers under it for
     * reading without the lock, so that answers are built in parallel
     * (mr_query.c).  Writers first: a sync never waits behind a stream
     * of queries. */
    pthread_rwlock_t   view;
    /* Per timeline (by index): answers read its map snapshot (t->snap)
     * one at a time under it, since LMDB lets a read transaction be used
     * by several threads only if its uses are serialized. */
    pthread_mutex_t    snap_lock[MR_MAX_TIMELINES];
    pthread_cond_t     wake;        /* stopping */
    int                stopping;
    atomic_int         halt;        /* stopping, read by fetches under way
                                       (without the lock): they give up */
    uint64_t           gen;         /* bumped when servability changes */
    uint64_t           absent_gen;  /* bumped when a name gets an entry:
                                       range answers older are stale */
    sk_db_t           *db;          /* the index (mr_index.c) */
    sk_db_table_t      ix_entries, ix_names, ix_buckets, ix_roots;
    sk_map_t          *map;         /* the timelines' maps (mr_map.c) */
    atomic_int         ix_damaged;  /* the index does not fit the copies
                                       or a row does not check: rebuilt
                                       (at start, or by the main thread
                                       while requests get 503) */
    atomic_int         serving;     /* threads run: damage is rebuilt
                                       by the main thread (SIGUSR1) */
    size_t             requests;    /* under the lock: HTTP requests
                                       under way, which a rebuild awaits */
    pthread_cond_t     idle;        /* requests fell to 0 */
    uint64_t           cache_hits, cache_misses;
    mr_lru_t           answers;     /* without answer_cache */
    const char        *rcache;      /* shared answer cache's spec, or NULL */
    pthread_mutex_t    rlock;       /* ridle, nidle, ropen, rpause */
    sk_cache_t        *ridle[MR_CACHE_CONNS];   /* handles not in use */
    unsigned           nidle, ropen;    /* handles idle, made */
    uint64_t           rpause;      /* seconds Redis is left alone after
                                       its last failure; 0: it answers */
    atomic_llong       rpause_until;    /* mr_now() it is asked again */
    char               rprefix[64]; /* its keys: sk:mirror-answer:<id>: */
    pthread_t          tracker;
    int                tracker_up;
    mr_metrics_t       metrics;
    char               onion[SK_ONION_ADDR_LEN + 1];    /* "" if none */
};

/* mr_buf.c: a growing text buffer. */
typedef struct {
    char    *p;
    size_t   len, cap;
    int      failed;        /* an allocation failed */
} mr_buf_t;

void mr_buf_add(mr_buf_t *b, const void *data, size_t len);
void mr_buf_printf(mr_buf_t *b, const char *fmt, ...) SK_PRINTF(2, 3);
void mr_buf_json_str(mr_buf_t *b, const char *s);
/* Hand the text over (*out, *len) or fail with SK_ERR_NOMEM. */
int mr_buf_finish(mr_buf_t *b, char **out, size_t *len, sk_err_t *err)
    SK_WUR;

/* mr_index.c: the index under data_dir/index (LMDB).  Lookups take no
 * lock of the mirror's; callers hold it where sizes must not move. */
typedef struct {
    const char  *name;          /* the entry's Name, or NULL */
    mr_loc_t     loc;
} mr_ixrow_t;

/* Remove an index directory (data.mdb, lock.mdb, the directory). */
int mr_index_remove(const char *dir, sk_err_t *err) SK_WUR;
/* Open (fresh: remove first) data_dir/index; an index LMDB refuses is
 * removed and made anew, with a log line. */
int mr_index_open(mr_mirror_t *m, int fresh, sk_err_t *err) SK_WUR;
void mr_index_close(mr_mirror_t *m);
/* t's indexed entries into t->tree, its root changes, size, end and
 * last_ts, checked against the meta record and the copy's size; damage
 * sets m->ix_damaged (SK_ERR_FORMAT). */
int mr_index_load(mr_mirror_t *m, mr_tl_t *t, uint64_t file_size,
    sk_err_t *err) SK_WUR;
/* Rows for SNs first.. of t and the meta record (root: the tree's root
 * at first + n), in one transaction: txn (the caller commits or aborts
 * it), or NULL for one of their own. */
int mr_index_add(mr_mirror_t *m, mr_tl_t *t, sk_db_txn_t *txn, uint64_t first,
    const mr_ixrow_t *rows, size_t n, const sk_merkle_hash_t root,
    sk_err_t *err) SK_WUR;
/* The row of indexed entry sn.  Every row read is checked (its own
 * check value; a name's rows against their bucket's count and digest):
 * one that does not check, or is missing, is damage: m->ix_damaged set,
 * SK_ERR_FORMAT at start, else logged, a rebuild asked for and
 * SK_ERR_UNAVAILABLE. */
int mr_index_entry(mr_mirror_t *m, const mr_tl_t *t, uint64_t sn,
    mr_loc_t *loc, sk_err_t *err) SK_WUR;
/* The entries for name on mirrored timelines, by TID and SN
 * (malloc()ed, NULL if none); damage as for mr_index_entry. */
int mr_index_refs(mr_mirror_t *m, const char *name, mr_ref_t **refs,
    size_t *n, sk_err_t *err) SK_WUR;

/* mr_map.c: each timeline's name map at its stored checkpoint's size,
 * in the index's environment; called by the index, the store and
 * answers, it calls nothing of the mirror's. */
int mr_map_open(mr_mirror_t *m, sk_err_t *err) SK_WUR;    /* after the
                                   index's tables, before any txn */
void mr_map_close(mr_mirror_t *m);
/* The entries t's map covers ([0, *size)). */
int mr_map_size(mr_mirror_t *m, const mr_tl_t *t, sk_db_txn_t *txn,
    uint64_t *size, sk_err_t *err) SK_WUR;
int mr_map_mark(mr_mirror_t *m, const mr_tl_t *t, sk_db_txn_t *txn,
    uint64_t size, sk_err_t *err) SK_WUR;
int mr_map_clear(mr_mirror_t *m, const mr_tl_t *t, sk_db_txn_t *txn,
    sk_err_t *err) SK_WUR;
/* Entry sn (its text) into t's map (write txn): a named entry's value
 * grows, a Map-Root entry is checked against the map of the entries
 * before it: 1 and why (SK_ERR_SIGNATURE) if it does not name it. */
int mr_map_feed(mr_mirror_t *m, const mr_tl_t *t, sk_db_txn_t *txn,
    uint64_t sn, const char *text, size_t len, sk_err_t *err) SK_WUR;
/* Under the lock, with a new checkpoint: last (malloc()ed, taken) is
 * its tree's last entry; a Map-Root one gets a snapshot of the map,
 * which must be at the checkpoint's size. */
int mr_map_publish(mr_mirror_t *m, mr_tl_t *t, char *last, size_t len,
    sk_err_t *err) SK_WUR;
void mr_map_unpublish(mr_tl_t *t);
/* Under the lock (or the view), t->mapped: the name key's value through
 * the snapshot, hash-linked to t->map_hash, and its proof: 0 present, 1
 * absent (count 0), -1 (damage: SK_ERR_FORMAT). */
int mr_map_prove(mr_mirror_t *m, const mr_tl_t *t,
    const unsigned char key[SK_MAP_KEY_BYTES], sk_map_value_t *v,
    sk_map_proof_t *p, sk_err_t *err) SK_WUR;
/* Under the lock, t->mapped: name's value through the snapshot,
 * hash-linked to t->map_hash (count 0 if absent; damage: -1 with
 * SK_ERR_FORMAT), and its map proof as text (malloc()ed). */
int mr_map_answer(mr_mirror_t *m, const mr_tl_t *t, const char *name,
    sk_map_value_t *v, char **proof, size_t *plen, sk_err_t *err) SK_WUR;
/* Whether the refs of t's entries below SN below (refs: a name's, one
 * timeline's in SN order, as mr_index_refs gives them) chain to want,
 * the value the map proves for the name; *got: what they give. */
int mr_map_history(const mr_tl_t *t, const mr_ref_t *refs, size_t nrefs,
    uint64_t below, const sk_map_value_t *want, sk_map_value_t *got);

/* mr_tree.c: t->tree over the t->size stored entries, from tl-<tid>/tile/
 * (built from the copy if absent, or if rebuild), replacing the old one:
 * at start, and to rewind a sync that ran ahead. */
int mr_tree_open(mr_tl_t *t, int rebuild, sk_err_t *err) SK_WUR;

/* mr_store.c: each timeline's copy under data_dir/tl-<tid>/. */
/* Open (creating) the copy: its indexed part from the index, the rest
 * checked entry by entry and indexed; the log is cut back to what a
 * stored signed head covers. */
int mr_store_open(mr_mirror_t *m, mr_tl_t *t, sk_err_t *err) SK_WUR;
/* --check: t's copy (what its signed heads cover) checked and indexed
 * into m's index (a scratch one) as a start without an index would, the
 * tree in memory; no file of the copy changes.  Close with
 * mr_store_close. */
int mr_store_scratch(mr_mirror_t *m, mr_tl_t *t, sk_err_t *err) SK_WUR;
void mr_store_close(mr_tl_t *t);
/* After mr_store_open: t's map fed from the copy up to the stored
 * checkpoint and published; -1 with t->map_bad set (SK_ERR_SIGNATURE)
 * if a Map-Root entry in it does not name the map of the entries before
 * it. */
int mr_store_map_open(mr_mirror_t *m, mr_tl_t *t, sk_err_t *err) SK_WUR;
/* Entries fetched and checked, not yet stored: text back to back. */
typedef struct {
    mr_buf_t    text;
    size_t     *lens;
    int64_t    *ts;
    char      **names;          /* each entry's Name, or NULL */
    unsigned   *flags;          /* MR_IX_ROOT */
    unsigned char (*leaf)[SK_SHA256_BYTES];
    size_t      n, cap;
} mr_batch_t;

int mr_batch_add(mr_batch_t *b, const char *text, size_t len,
    const char *name, int64_t ts, unsigned flags,
    const unsigned char leaf[SK_SHA256_BYTES], sk_err_t *err) SK_WUR;
void mr_batch_free(mr_batch_t *b);
/* The text of batch entry i (borrowed). */
const char *mr_batch_entry(const mr_batch_t *b, size_t i, size_t *len);
/* The kinds of signed head a commit stores. */
typedef enum {
    MR_HEAD_CHECKPOINT,         /* the checkpoint note answers carry */
    MR_HEAD_TFM,                /* the TFM closing a chunk */
    MR_HEAD_PREFIX              /* a checkpoint and a consistency proof
                                   from the copy's size to it (mr_prefix.c) */
} mr_headkind_t;

/* Durably append the batch, then store the signed head of that kind that
 * covers it; then publish both (and the names) under the lock. */
int mr_store_commit(mr_mirror_t *m, mr_tl_t *t, const mr_batch_t *b,
    const char *head, size_t headlen, mr_headkind_t kind, sk_err_t *err) SK_WUR;

/* mr_prefix.c: a checkpoint of size N and a consistency proof from size
 * to N, which commits the first size entries of a sync through tiles. */
typedef struct {
    uint64_t            size;
    sk_merkle_proof_t   proof;
    sk_checkpoint_t     cpv;
} mr_prefix_t;

int mr_prefix_format(char **out, size_t *len, uint64_t size,
    const sk_merkle_proof_t *proof, const char *cp, size_t cplen,
    sk_err_t *err) SK_WUR;
/* Strict parse; the checkpoint verified with t's key and origin. */
int mr_prefix_parse(mr_prefix_t *pf, const mr_tl_t *t, const char *text,
    size_t len, sk_err_t *err) SK_WUR;
/* 0 if root (of the copy's first pf->size entries) and the proof lead
 * to the checkpoint's root; SK_ERR_SIGNATURE if not. */
int mr_prefix_check(const mr_prefix_t *pf, const sk_merkle_hash_t root,
    sk_err_t *err) SK_WUR;
/* Stored entry sn as text (malloc()ed); call without the lock. */
int mr_store_read(mr_mirror_t *m, mr_tl_t *t, char **out, size_t *len,
    uint64_t sn, sk_err_t *err) SK_WUR;
/* Text of SN sn (malloc()ed): stored, or in b (a batch of entries from
 * t->size on, not yet stored); call without the lock. */
int mr_store_text(mr_mirror_t *m, mr_tl_t *t, const mr_batch_t *b,
    uint64_t sn, char **out, size_t *len, sk_err_t *err) SK_WUR;
/* Checked stamp of one fetched or stored entry: parse, TID, SN, timeline
 * signature. */
int mr_store_check_entry(sk_entry_t **e, const mr_tl_t *t, const char *buf,
    size_t len, uint64_t sn, int64_t *ts, sk_err_t *err) SK_WUR;
/* Length of the entry at p (up to its blank line), 0 if none whole. */
size_t mr_entry_len(const char *p, size_t len);
/* Record renegation: evidence file (the first stays), Corrupt state. */
int mr_store_evidence(mr_mirror_t *m, mr_tl_t *t, const char *evidence,
    size_t len, sk_err_t *err) SK_WUR;
/* The stored evidence (malloc()ed), SK_ERR_NOT_FOUND if none. */
int mr_store_read_evidence(const mr_tl_t *t, char **out, size_t *len,
    sk_err_t *err) SK_WUR;

/* mr_roots.c, under the lock: the timeline's own root-CA history, so a
 * Bind's evidence is checked against the roots trusted at its SN.  A
 * root change whose CA-Serial is not above the newest noted one changes
 * nothing, as in sk-timeline (docs/protocol.md, "Operator entries"). */
int mr_roots_note(mr_tl_t *t, const sk_entry_t *e, uint64_t sn,
    sk_err_t *err) SK_WUR;
void mr_roots_rewind(mr_tl_t *t, uint64_t size);
void mr_roots_free(mr_tl_t *t);
/* Load conf.dnssec_anchors into m->anchors; failing that, log why and
 * leave it NULL (DNSSEC Binds then wait, never reneging a timeline). */
void mr_roots_anchors(mr_mirror_t *m);
/* 0 if the Bind or Rebind e at SN sn is backed (SK-Signature by its Key,
 * and a CA chain valid at its Timestamp to a root trusted before sn, or a
 * DNSSEC-Chain valid then to m's anchors); -1 with the reason,
 * SK_ERR_UNAVAILABLE if the history does not reach sn or there are no
 * anchors.  Call
 * without the lock: it takes m's only to pick the roots. */
int mr_roots_check_bind(mr_mirror_t *m, mr_tl_t *t, const sk_entry_t *e,
    uint64_t sn, int64_t ts, sk_err_t *err) SK_WUR;

/* mr_check.c: per-name consistency of Unbind and Change-Services. */
typedef struct {
    char      *name;
    char      *key;             /* Key of the newest Bind/Rebind, or NULL */
    char      *rebinders;       /* its Rebinder-Names, or NULL */
    int        bound;           /* no Unbind after it */
} mr_pstate_t;

/* Names touched by entries accepted this round, not yet stored. */
typedef struct {
    sk_strtab_t   t;            /* of mr_pstate_t */
} mr_pending_t;

int mr_pending_note(mr_pending_t *p, const sk_entry_t *e, sk_err_t *err)
    SK_WUR;
void mr_pending_free(mr_pending_t *p);
/* The draft's per-type rules against the names' state on t before SN
 * sn: a Bind needs no earlier Bind or Rebind of its name; an Unbind or a
 * Change-Services the name bound and an SK-Signature by its SK in force;
 * a Rebind the name unbound after a record that lists the Rebinder-Name,
 * that rebinder bound, and a Rebinder-Signature by its SK.  0 if e keeps
 * them (or is of another type); SK_ERR_UNAVAILABLE or SK_ERR_NOMEM if
 * the copy could not be read; any other code: e breaks them.  The state
 * is p's (may be NULL), else the stored copy's.  Call without the lock. */
int mr_check_update(mr_mirror_t *m, mr_tl_t *t, const sk_entry_t *e,
    uint64_t sn, const mr_pending_t *p, sk_err_t *err) SK_WUR;

/* mr_check.c, Incorporate entries: */
/* Judge the Incorporate inc (SN sn on t) with text, the copy it refers
 * to: 0 and the parsed copy if it keeps the rules; 1 and why (text any
 * verifier can check: the copy is the one Incorporated-Hash names) if
 * not, *earlier_sn set when an earlier Incorporate (earlier, if given,
 * else the stored ones) already took that peer's SN or a later one; -1
 * if it could not be judged (not the copy named, a source timeline not
 * mirrored here, the copy's state not readable).  p: this round's
 * pending names (may be NULL).  Call without the lock. */
int mr_check_incorporate(mr_mirror_t *m, mr_tl_t *t, const sk_entry_t *inc,
    uint64_t sn, const char *text, size_t len, const sk_entry_t *earlier,
    const mr_pending_t *p, sk_entry_t **copy, uint64_t *earlier_sn,
    char *why, size_t whylen, sk_err_t *err) SK_WUR;

/* mr_incorp.c: Incorporate entries, their copies judged by their own
 * rules and kept in tl-<TID>/incorporated for the names' rules. */
typedef struct mr_inc_s mr_inc_t;

/* After mr_store_open: load the copies, cut those past the stored size. */
int mr_inc_open(mr_tl_t *t, sk_err_t *err) SK_WUR;
void mr_inc_close(mr_tl_t *t);
/* Durably keep the copy (canonical text) of Incorporate SN sn; records
 * at or past sn (left by a failed round) go first. */
int mr_inc_put(mr_tl_t *t, uint64_t sn, const char *text, size_t len,
    sk_err_t *err) SK_WUR;
/* The copy of Incorporate SN sn (malloc()ed), SK_ERR_NOT_FOUND if none. */
int mr_inc_read(mr_tl_t *t, uint64_t sn, char **out, size_t *len,
    sk_err_t *err) SK_WUR;
/* SNs (ascending, malloc()ed) of the Incorporates before SN before whose
 * copy is for name; 0 if none (or out of memory: *sns NULL). */
size_t mr_inc_for_name(mr_tl_t *t, const char *name, uint64_t before,
    uint64_t **sns);
/* The mirrored timeline with this TID, or NULL. */
mr_tl_t *mr_inc_source(mr_mirror_t *m, uint64_t tid);
/* The newest Incorporate before SN before of an entry from src_tid: 1
 * and its SN (*at) and the copy's (*src_sn), or 0. */
int mr_inc_last_from(mr_tl_t *t, uint64_t src_tid, uint64_t before,
    uint64_t *at, uint64_t *src_sn);

/* mr_evidence.c: the contradicting signed statements (docs/protocol.md,
 * "Renegation tracking"). */
typedef struct {
    mr_buf_t    buf;
} mr_evidence_t;

void mr_evidence_begin(mr_evidence_t *ev, const char *kind,
    const char *reason);
void mr_evidence_add(mr_evidence_t *ev, const char *type, const char *p,
    size_t len);
/* Check evidence about timeline t: its statements must verify with t's
 * key and contradict each other as its kind says (an unbacked Bind
 * against this copy's root history: SK_ERR_UNAVAILABLE while the copy
 * does not reach its SN).  Takes the lock. */
int mr_evidence_verify(mr_mirror_t *m, mr_tl_t *t, const char *text,
    size_t len, const mr_pending_t *p, sk_err_t *err) SK_WUR;
/* Verify ev (with p: the sync thread's entries not yet stored), store
 * it, mark t Corrupt; frees ev's buffer. */
void mr_evidence_renege(mr_mirror_t *m, mr_tl_t *t, mr_evidence_t *ev,
    const mr_pending_t *p);

/* map-root evidence from t's copy (b: entries not yet stored, may be
 * NULL): the Map-Root entry SN sn and every entry before it; then as
 * mr_evidence_renege. */
void mr_evidence_map(mr_mirror_t *m, mr_tl_t *t, uint64_t sn,
    const mr_batch_t *b, const mr_pending_t *p, const char *reason);

/* mr_fetch.c: libcurl GETs. */
typedef struct {
    char    *body;
    size_t   len;
    long     status;            /* HTTP status; 0: no answer */
} mr_resp_t;

/* GET url within fetch_timeout_ms; at most max bytes of body; -1
 * (SK_ERR_UNAVAILABLE) when there is no complete answer, also at once
 * when the mirror stops; any HTTP status is an answer. */
int mr_fetch(mr_mirror_t *m, mr_resp_t *r, void *curl, const char *url,
    size_t max, sk_err_t *err) SK_WUR;

/* mr_sync.c: the sync threads. */
/* One line of a timeline's chunk listing (GET /chunks, docs/timeline.md):
 * "<uri> <first-sn> <last-sn> <signature>", single spaces, the SNs
 * decimal with first <= last < UINT64_MAX, the URI an absolute path
 * without "..", the signature base64url.  line is cut into the fields;
 * -1 with a message naming the field if it is anything else. */
int mr_sync_listing_line(char *line, char **uri, uint64_t *first,
    uint64_t *last, char **sig, sk_err_t *err) SK_WUR;
int mr_sync_start(mr_mirror_t *m, sk_err_t *err) SK_WUR;
void mr_sync_stop(mr_mirror_t *m);

/* mr_state.c: states and the clock, below every other file. */
/* Take and leave the lock and, for writing, the view: every change to
 * what answers read is made under both. */
void mr_lock(mr_mirror_t *m);
void mr_unlock(mr_mirror_t *m);
/* Under mr_lock: wait on c (until a time, if not NULL), letting answers
 * read meanwhile; pthread_cond_timedwait's result. */
int mr_wait(mr_mirror_t *m, pthread_cond_t *c, const struct timespec *until);
/* Under mr_lock: wait seconds, or until the mirror stops. */
void mr_state_sleep(mr_mirror_t *m, uint64_t seconds);
/* Under the lock: timelines in Idle or Syncing. */
size_t mr_state_servable(const mr_mirror_t *m);
/* Under the lock: change a timeline's state (logged, gen bumped). */
void mr_state_set(mr_mirror_t *m, mr_tl_t *t, mr_state_t s,
    const char *reason);
int64_t mr_now(void);
/* Damage found in the index (fmt: what and where): SK_ERR_FORMAT before
 * the mirror serves (the start rebuilds it), else logged once, the main
 * thread told to rebuild it (SIGUSR1), and SK_ERR_UNAVAILABLE. */
int mr_state_damaged(mr_mirror_t *m, sk_err_t *err, const char *fmt, ...)
    SK_PRINTF(3, 4);

/* mr_copy.c: the indexed entry sn at loc, read from t's copy
 * (malloc()ed): its bytes must hash to the indexed leaf, else the copy
 * is damaged (SK_ERR_SIGNATURE, logged), or the index if the tiles' leaf
 * is not the indexed one either (mr_state_damaged). */
int mr_copy_pread(const mr_tl_t *t, uint64_t sn, const mr_loc_t *loc,
    char **out, sk_err_t *err) SK_WUR;

/* mr_track.c: renegation tracking with peers. */
/* Under the lock: the /reneged body and its hash (8 hex digits + NUL). */
int mr_track_list(mr_mirror_t *m, char **out, size_t *len, char hash[9],
    sk_err_t *err) SK_WUR;
/* A peer's reneged list (GET /reneged): len bytes of "<tid>\n" lines,
 * decimal without a leading zero, strictly ascending; *tids (malloc()ed,
 * NULL if none) and *n what it lists.  -1 with a message naming the line
 * if it is anything else (nothing of it kept). */
int mr_track_parse(uint64_t **tids, size_t *n, const char *body, size_t len,
    sk_err_t *err) SK_WUR;
int mr_track_start(mr_mirror_t *m, sk_err_t *err) SK_WUR;
void mr_track_stop(mr_mirror_t *m);

/* mr_cache.c: answers shared through Redis (answer_cache); values are
 * "SK-Mirror-Cache: <servable TIDs> <built> <entries for the name>\n" +
 * the signed answer.  A failing Redis is left alone for a while (and
 * every call is a miss meanwhile). */
int mr_cache_open(mr_mirror_t *m, sk_err_t *err) SK_WUR;
/* 0 and a copy of the answer if one built for these servable timelines
 * from nrefs entries for the name is younger than query_cache; -1
 * otherwise. */
int mr_cache_get(mr_mirror_t *m, const char *name, const char *servable,
    size_t nrefs, char **out, size_t *len);
/* A value of the cache: "SK-Mirror-Cache: <servable> <built> <entries>\n"
 * then the answer, from *off.  SK_ERR_NOT_FOUND if it was built for
 * other servable timelines, SK_ERR_FORMAT (naming the field) if it is not
 * such a value: no sign, no overflow, nothing else on the head line. */
int mr_cache_parse(const unsigned char *v, size_t vlen, const char *servable,
    int64_t *built, uint64_t *nrefs, size_t *off, sk_err_t *err) SK_WUR;
void mr_cache_put(mr_mirror_t *m, const char *name, const char *servable,
    size_t nrefs, const char *answer, size_t len);
void mr_cache_del(mr_mirror_t *m, const char *name);
void mr_cache_close(mr_mirror_t *m);

/* mr_query.c: answers. */
/* 0 and a signed answer; -1 with SK_ERR_USAGE (a bad name: the only
 * fault of the client's), SK_ERR_UNAVAILABLE (fewer than two servable
 * timelines, or the index being rebuilt) or another code (the
 * mirror's: its copy or tiles). */
int mr_query_answer(mr_mirror_t *m, char **out, size_t *len,
    const char *name, int64_t since, sk_err_t *err) SK_WUR;
int mr_query_status(mr_mirror_t *m, char **out, size_t *len, sk_err_t *err)
    SK_WUR;

/* mr_main.c: the timelines as configured, no copy open. */
void mr_main_init(mr_mirror_t *m);

/* mr_ixcheck.c: sk-mirror --check: the index against one made from the
 * copies in a scratch directory; the exit code (0: the same). */
int mr_ixcheck(mr_mirror_t *m);

/* mr_http.c */
int mr_http_start(mr_mirror_t *m, sk_httpd_t **h, sk_err_t *err) SK_WUR;

/* mr_onion.c: onion_dir's HiddenServiceDir (made if it has no key) and
 * DIR.torrc; m->onion its address.  Nothing without onion_dir. */
int mr_onion_setup(mr_mirror_t *m, sk_err_t *err) SK_WUR;

/* mr_nonce.c: the answer *out (malloc()ed, *len bytes) gets its nonce
 * trailer for nonce; on failure it is freed (*out NULL). */
int mr_nonce_answer(mr_mirror_t *m, char **out, size_t *len,
    const unsigned char nonce[SK_NONCE_BYTES], sk_err_t *err) SK_WUR;

/* mr_metrics.c: /metrics on conf.metrics_listen (when set), after the
 * copies are open. */
int mr_metrics_start(mr_mirror_t *m, sk_err_t *err) SK_WUR;
void mr_metrics_stop(mr_mirror_t *m);
/* One answer to GET /query/<name>. */
void mr_metrics_answer(mr_mirror_t *m, mr_answer_t kind);
/* A sync round of t ended, ok (progress) or not, after secs seconds. */
void mr_metrics_round(mr_mirror_t *m, const mr_tl_t *t, int ok,
    double secs);
/* A call to the answer cache's Redis failed. */
void mr_metrics_redis_error(mr_mirror_t *m);
/* The public front's request metrics (hc.metrics), or NULL. */
sk_httpd_metrics_t *mr_metrics_http(mr_mirror_t *m);
/* n entries of t stored. */
void mr_metrics_synced(mr_mirror_t *m, const mr_tl_t *t, uint64_t n);

void mr_log(const char *fmt, ...) SK_PRINTF(1, 2);

#endif
