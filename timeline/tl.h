/*
 * tl.h -- sk-timeline internals: configuration, the durable log, the
 * timeline's state (names, roots, budgets) and the HTTP front.
 *
 * Threads: libmicrohttpd's polling threads answer reads; an append runs
 * in an append thread (tl_work.c).  Stateless checks (parsing,
 * signatures, the CA chain) run there without locks;
 * tl_timeline_t.lock covers the state, the stamp and the write, and group
 * commit shares one fdatasync among all writers waiting at that moment.
 *
 * Layers: calls run top down, never back up (a lower file that needs the
 * log gets it through tl->log_io, which tl_init fills):
 *   tl_main -> tl_repair, tl_check -> tl_open (the data directory)
 *   -> tl_http -> tl_sign -> tl_chunk -> tl_publish; tl_append
 *      -> tl_incorporate
 *      (an Incorporate's rules) -> tl_validate (the rules) -> tl_ocsp
 *   -> tl_store (entries.log: replay, write, group commit, reads)
 *   -> tl_state (entries applied to names, budgets, roots)
 *   -> tl_incorporated (incorporated.log, peers), tl_index_check
 *   -> tl_index (LMDB)
 *   -> tl_map, tl_tree, tl_signed, tl_calog, tl_index_boot
 *   -> tl_names, tl_roots, tl_file, tl_metrics, tl_time, tl_log, tl_conf.
 */
#ifndef SK_TL_H
#define SK_TL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/x509.h>
#include <sk/dnssec.h>
#include <sk/httpd.h>
#include <sk/metrics.h>
#include <sk/map.h>
#include <sk/sk.h>

#define TL_PROG        "sk-timeline"
#define TL_LOG_FILE    "entries.log"
#define TL_KEY_FILE    "timeline.key"
#define TL_PUB_FILE    "timeline.pub"
#define TL_INC_FILE    "incorporated.log"
#define TL_CALOG_FILE  "certs.log"
#define TL_SIGNED_FILE "signed-head"
#define TL_TILE_DIR    "tile"
#define TL_INDEX_DIR   "index"

/* A key that may repeat ("peer = ..." lines), in file order. */
typedef struct {
    char     **v;
    size_t     n;
} tl_conf_list_t;

/* Configuration (tl_conf.c): "key = value" lines, '#' comments. */
typedef struct {
    char      *listen;          /* ADDR:PORT, required */
    char      *data_dir;        /* log and key, required */
    char      *key_file;        /* default data_dir/timeline.key */
    char      *operator_key;    /* public key signing root-CA entries */
    char      *origin;          /* checkpoint origin and key name */
    char      *clock_file;      /* tests only: read "now" from this file */
    char      *metrics_listen;  /* ADDR:PORT of /metrics; NULL: off */
    uint64_t   tid;             /* required, > 0 */
    uint64_t   max_body;        /* bytes of a POST body, else 413 */
    uint64_t   threads;         /* appends at once, a thread each */
    uint64_t   http_threads;    /* HTTP polling threads */
    sk_httpd_limits_t  http;    /* connections, timeouts */
    uint64_t   rate_global;     /* new entries per second, 0 = unlimited */
    uint64_t   max_chain;       /* certificates in a CA-Cert-Chain */
    uint64_t   max_chain_bytes; /* bytes of a CA-Cert-Chain value */
    uint64_t   sk_budget;       /* Unbind/Change-Services per SK */
    uint64_t   sk_refill;       /* seconds per budget token */
    uint64_t   clock_wait_ms;   /* wait this long for a lagging clock */
    uint64_t   max_clock_ahead; /* seconds past the newest stamp; 0 = off */
    int        verify_on_start; /* check every timeline signature at start */
    uint64_t   checkpoint_interval; /* seconds: the checkpoint and TFM
                                       are signed at least this often */
    uint64_t   chunk_interval;  /* seconds between publications */
    uint64_t   chunk_fanout;    /* this many chunks of a level merge */
    uint64_t   chunk_levels;    /* chunks of this level never merge */
    uint64_t   chunk_nice;      /* the publisher thread's nice value */
    uint64_t   chunk_max_entries;   /* no chunk holds more */
    char      *evidence;        /* "ca", "dnssec" or both, comma-separated */
    int        evidence_ca;     /* a Bind may carry CA-Cert-Chain */
    int        evidence_dnssec; /* a Bind may carry DNSSEC-Chain */
    char      *dnssec_anchors;  /* root DS/DNSKEY file for DNSSEC-Chain */
    int        ocsp;            /* ask the end-entity's OCSP responder */
    int        ocsp_require;    /* refuse certificates naming none */
    uint64_t   ocsp_timeout_ms; /* then 408 */
    uint64_t   ocsp_cache;      /* seconds to keep an answer, at most */
    uint64_t   reply_ms;        /* then answer 202 and a token */
    uint64_t   tokens;          /* outcomes kept for GET /status/<token> */
    uint64_t   sync_delay_ms;   /* tests only: sleep before each sync */
    uint64_t   commit_delay_us; /* a batch's sync waits this long for
                                   appends still being checked */
    uint64_t   index_batch;     /* entries held in memory between index
                                   flushes */
    uint64_t   index_map_size;  /* bytes of address space for the index */
    int        name_map;        /* keep the name map, a Map-Root entry per
                                   batch; "no" for measurement only */
    int        map_lie;         /* tests only: every Map-Root written says
                                   a wrong Map-Hash (a lying timeline) */
    tl_conf_list_t peers;       /* "TID PUBKEY": timelines to incorporate */
} tl_conf_t;

#define TL_CHUNK_FANOUT_MAX  64
#define TL_CHECKPOINT_INTERVAL_MAX  3600     /* seconds */
#define TL_COMMIT_DELAY_MAX  100000     /* us: 0.1 s */

int tl_conf_load(tl_conf_t *conf, const char *path, sk_err_t *err) SK_WUR;
/* The same on the file's bytes; path names it in errors. */
int tl_conf_parse(tl_conf_t *conf, const char *text, size_t len,
    const char *path, sk_err_t *err) SK_WUR;
void tl_conf_free(tl_conf_t *conf);
#define TL_PATH_MAX  4096          /* a peer's KEYFILE, with its NUL */

/* A "peer" value, "TID KEYFILE": the TID, the KEYFILE into path[0..size);
 * errors say what is wrong with it (the caller names file and line). */
int tl_conf_peer(const char *v, uint64_t *tid, char *path, size_t size,
    sk_err_t *err) SK_WUR;

/* What the timeline knows about one name (tl_state.c): a row of the
 * index's "names" table, held in tl->names while in use (the working set,
 * emptied at each index flush). */
typedef struct tl_name_s  tl_name_t;

struct tl_name_s {
    char             *name;
    int               absent;       /* looked up and in neither the index
                                       nor the map: kept so that the append
                                       that binds it looks it up once */
    int               dirty;        /* changed since the index has it */
    char             *key;          /* the current SK: its Key field */
    char             *rebinders;    /* Rebinder-Names of the record */
    sk_entry_type_t   last;         /* newest entry's type */
    double            tokens;       /* Unbind/Change-Services budget */
    int64_t           tokens_at;    /* when tokens was last refilled */
    unsigned char   (*seen)[SK_SHA256_BYTES];   /* SHA-256 of the
                                       SK-Signature of each Change-Services
                                       taken since the last flush (older
                                       ones: the index's "seen" table): a
                                       replay is refused */
    size_t            nseen;
    sk_map_value_t    mval;         /* its value in the name map */
    int               mdirty;       /* mval changed since the map has it */
    int               mstaged;      /* staged in the map, not yet written */
    tl_name_t        *mnext;        /* the next with mdirty (tl->mdirty) */
};

/* An entry written since the last index flush (tl_index.c). */
typedef struct {
    off_t             off;          /* where it starts in entries.log */
    int64_t           ts;
    sk_merkle_hash_t  leaf;
} tl_pending_t;

typedef struct {
    X509             *cert;
    unsigned char     hash[SK_SHA256_BYTES];
} tl_root_t;

/* One published chunk: entries [first, last] (tl_chunk.c). */
typedef struct {
    uint64_t          first, last;
    unsigned          level;
    char             *sig;          /* base64url, over the .bz2 bytes */
} tl_chunk_t;

typedef struct tl_ocsp_s tl_ocsp_t;

/* A 403's rule, a 503's reason: what tl_validate reports besides err. */
typedef enum {
    TL_OK = 0,              /* 201 */
    TL_BAD_REQUEST,         /* 400 */
    TL_FORBIDDEN,           /* 403: err names the rule */
    TL_UNAVAILABLE,         /* 503 */
    TL_TIMEOUT,             /* 408 */
    TL_FAULT,               /* 500 */
    TL_TOO_LARGE,           /* 413: longer than an entry bundle carries */
    TL_RETRY,               /* 503 and Retry-After: the index was found
                               damaged and rebuilt from the log */
    TL_LIMITED,             /* 503: the client's own limit, its SK's
                               Unbind/Change-Services budget spent */
    TL_QUEUED,              /* 202: the outcome comes with a token; the
                               final verdicts are those before it */
    TL_PARKED,              /* written, its answer left to the batch's
                               sync (tl_park_t) */
    TL_GONE                 /* the client left before its turn: no
                               answer, the connection closed */
} tl_verdict_t;

/* An append written and parked until its batch is durable: no thread
 * waits for it.  The store's sync thread settles it (tl_store_park), or
 * the reply timer hands it to a job at reply_at (tl_append.c); done is
 * called once, under tl->lock, with the stamped entry's verdict, or
 * TL_QUEUED and the token in hex (out, the callee's), or the error. */
typedef struct tl_park_s  tl_park_t;

struct tl_park_s {
    tl_park_t        *next;
    uint64_t          sn;
    uint64_t          fails;        /* tl->seal_fails when parked */
    uint64_t          reply_at;     /* tl_ms(): then 202 and a token */
    uint64_t          start_us;     /* tl_us() at the start (metrics) */
    void            (*done)(tl_park_t *p, tl_verdict_t v, char *out,
                        const sk_err_t *err);
};

/* A timeline whose entries this one incorporates ("peer = TID KEYFILE"). */
typedef struct {
    uint64_t          tid;
    sk_key_t         *key;          /* signs its entries' Signature */
    uint64_t          next_sn;      /* incorporations go up in SN */
} tl_peer_t;

/* Where incorporated.log keeps the copy of an incorporated entry. */
typedef struct {
    unsigned char     hash[SK_SHA256_BYTES];
    off_t             off;
    size_t            len;
} tl_copy_t;

/* The outcome of an append answered 202, for GET /status/<token>. */
#define TL_TOKEN_BYTES  16
#define TL_TOKEN_HEX    (2 * TL_TOKEN_BYTES + 1)

typedef struct {
    unsigned char     id[TL_TOKEN_BYTES];
    int               used;
    int               pending;      /* still waiting for clock or sync */
    tl_verdict_t      v;            /* once done */
    uint64_t          sn;           /* TL_OK: the stamped entry's SN */
    char              msg[SK_ERR_MSG_MAX];  /* otherwise: the reason */
} tl_token_t;

/* Work for an append thread (tl_work.c), first in its owner's struct. */
/* A thread of the timeline's own, run until told to stop (tl_thread.c):
 * stop is read by the thread under the lock its wake goes with. */
typedef struct {
    pthread_t         th;
    int               up;
    int               stop;
} tl_thread_t;

/* A signed note /checkpoint or /status serves (tl_sign.c). */
typedef struct {
    char             *buf;          /* NULL: none yet */
    size_t            len;
    uint64_t          size;         /* the durable tree when signed */
    uint64_t          published;    /* TFM: entries in chunks then */
    int64_t           ts;           /* tl_now when signed */
} tl_note_t;

typedef struct tl_task_s     tl_task_t;
typedef struct tl_wclient_s  tl_wclient_t;

struct tl_task_s {
    tl_task_t        *next;
    void            (*run)(tl_task_t *t);
    struct MHD_Connection *c;       /* whose request it is */
    tl_wclient_t     *client;       /* its client's queue (tl_work.c) */
    uint64_t          queued_ms;    /* tl_ms() when queued */
    tl_verdict_t      refuse;       /* TL_OK: run it; else answer this at
                                       once, no work done (TL_GONE: nobody
                                       to answer; TL_UNAVAILABLE: no
                                       rate_global place in time) */
    int               token;        /* it holds a place of rate_global */
};

/* One client's appends, queued (tl_work.c). */
struct tl_wclient_s {
    tl_wclient_t     *hnext;        /* hash chain */
    tl_wclient_t     *rnext;        /* the next client with tasks queued */
    uint64_t          key;          /* sk_httpd_client */
    tl_task_t        *head, *tail;
    size_t            queued;
    unsigned          held;         /* its tasks in threads */
    int               in_ring;
};

#define TL_WORK_BUCKETS  256

typedef struct {
    pthread_mutex_t   lock;         /* the fields below */
    pthread_cond_t    wake;         /* a task came, or stopping */
    pthread_cond_t    gone;         /* a thread ended */
    tl_wclient_t     *ring, *ring_tail;     /* clients with tasks queued,
                                       served in turn */
    tl_wclient_t     *clients[TL_WORK_BUCKETS];
    size_t            queued;
    unsigned          threads;      /* started, not yet ended */
    unsigned          idle;         /* of them, waiting for a task */
    unsigned          running;      /* of them, in a task and not blocked */
    unsigned          cpus;         /* the most running at once */
    int               stopping;
    double            places;       /* of rate_global, to give now */
    uint64_t          places_at;    /* tl_ms() they were counted at */
} tl_work_t;

/* A CA certificate the log stores once (tl_calog.c). */
typedef struct {
    unsigned char     hash[SK_SHA256_BYTES];    /* of its base64url text */
    char             *text;         /* NULL: a free slot */
    size_t            len;
} tl_calog_ent_t;

/* What the process is for: serving, or the offline --check / --repair. */
typedef enum {
    TL_RUN = 0,
    TL_CHECK,               /* read only, every signature checked */
    TL_REPAIR               /* stop at damage instead of refusing */
} tl_mode_t;

typedef struct tl_timeline_s tl_timeline_t;

/* The log as the files under tl_store.c use it: tl_tree.c hashes entries
 * again, tl_map.c reads a name's newest entry and appends a batch's
 * Map-Root.  tl_store.c's read_leaf, read_tree and write, set by tl_init,
 * so that no call runs back up to the store. */
typedef struct {
    int  (*read_leaf)(tl_timeline_t *tl, char **out, size_t *len,
             uint64_t sn, sk_err_t *err);
    int  (*read_tree)(tl_timeline_t *tl, char **out, size_t *len,
             uint64_t sn, sk_err_t *err);
    int  (*write)(tl_timeline_t *tl, const char *buf, size_t len,
             int64_t ts, sk_err_t *err);
} tl_log_io_t;

/* An append-only file of whole records (tl_file.c). */
typedef struct {
    int               fd;
    off_t             end;          /* its whole records end here */
    off_t             size;         /* bytes at start: end + a torn tail */
    int               cut;          /* a failed append is still to be cut */
    const char       *name;         /* e.g. "certs.log" */
    char              path[4096];
    char              note[200];    /* what tl_file_trim will cut, and why */
} tl_file_t;

int tl_file_open(tl_file_t *f, const tl_timeline_t *tl, const char *name,
    sk_err_t *err) SK_WUR;
void tl_file_close(tl_file_t *f);
/* The bytes the file had at start (size) from offset from on,
 * malloc()ed and NUL-ended. */
int tl_file_read(tl_file_t *f, off_t from, char **buf, size_t *len,
    sk_err_t *err) SK_WUR;
/* Whole records end at end; the rest is cut by tl_file_trim, which logs
 * the note (printf-style). */
void tl_file_torn(tl_file_t *f, off_t end, const char *fmt, ...)
    SK_PRINTF(3, 4);
int tl_file_trim(tl_file_t *f, sk_err_t *err) SK_WUR;
/* Append one record (and fdatasync it if sync); on failure the file is
 * cut back to its last whole record. */
int tl_file_append(tl_file_t *f, const void *buf, size_t len, int sync,
    sk_err_t *err) SK_WUR;
/* The length of the stored entry at p, up to and with its blank line;
 * 0 if no whole entry is left (a write cut short). */
size_t tl_file_entry_len(const char *p, size_t len);

/* tl_metrics.c: the series /metrics shows; all NULL (no-ops) while
 * metrics_listen is off. */
typedef enum {
    TL_OCSP_GOOD = 0, TL_OCSP_REVOKED, TL_OCSP_UNKNOWN, TL_OCSP_FAILED,
    TL_OCSP_RESULTS
} tl_ocsp_result_t;

/* Refusals of appends by the fair queue (tl_work.c), in the HTTP front's
 * sk_timeline_refused_total beside its own (sk/httpd.h). */
enum {
    TL_METRICS_CLIENT_QUEUE = 0,    /* 429: its client's queue is full */
    TL_METRICS_RATE_GLOBAL,         /* 503: no place of rate_global */
    TL_METRICS_REFUSALS
};

typedef struct {
    sk_metrics_t     *reg;
    sk_httpd_t       *h;
    sk_httpd_metrics_t  http;       /* the public front's requests */
    sk_metric_t      *appends[TL_QUEUED];   /* by final verdict */
    sk_metric_t      *append_seconds;
    sk_metric_t      *fsync_seconds;
    sk_metric_t      *ocsp[TL_OCSP_RESULTS];
    sk_metric_t      *ocsp_seconds;
    sk_metric_t      *tree_size;
    sk_metric_t      *published;
    sk_metric_t      *publish_lag;
    sk_metric_t      *queue;        /* appends waiting for a thread */
    sk_metric_t      *pending;      /* answered 202, not yet settled */
    sk_metric_t      *refused;
    sk_metric_t      *checkpoint_age;
    sk_metric_t      *queue_refused[TL_METRICS_REFUSALS];  /* by tl_work.c */
    sk_metric_t      *checkpoint_interval;
    /* set by the publisher thread, also while stopping (last: kept by
     * tl_metrics_stop) */
    _Atomic uint64_t  caught_ms;    /* tl_ms() it last published every
                                       durable entry */
    _Atomic uint64_t  signed_ms;    /* tl_ms() of the newest checkpoint or
                                       TFM it signed on its own */
} tl_metrics_t;

struct tl_timeline_s {
    tl_conf_t         conf;
    tl_mode_t         mode;
    int               dir_fd;       /* data_dir, flock()ed: one user */
    tl_ocsp_t        *ocsp;         /* the answer cache, own lock */
    tl_log_io_t       log_io;       /* the log, for tl_tree.c, tl_map.c */
    sk_key_t         *key;          /* the timeline's Ed25519 key */
    sk_key_t         *operator_key; /* NULL: no root-CA entries accepted */
    sk_dnssec_anchors_t *anchors;   /* conf.dnssec_anchors; NULL unless
                                       evidence has dnssec */

    pthread_mutex_t   lock;         /* everything below */
    pthread_cond_t    synced;       /* a sync ended or failed (its clock,
                                       as batch's, is CLOCK_MONOTONIC) */
    pthread_cond_t    batch[2];     /* appends waiting for their batch:
                                       batch[sync_gen & 1] those the log
                                       sync under way covers, the other
                                       the next batch's (tl_store_wait) */
    uint64_t          sync_gen;     /* log syncs led so far */
    uint64_t          sync_end;     /* the one under way covers the SNs
                                       below this (UINT64_MAX until its
                                       batch is sealed) */
    tl_file_t         log;          /* entries.log */
    uint64_t          size;         /* entries written */
    uint64_t          logged;       /* entries fdatasync()ed */
    uint64_t          durable;      /* entries signed-head covers: all
                                       that may be shown */
    int               log_syncing;  /* a writer is in the log's fdatasync
                                       (and the index's after it) */
    int               index_syncing; /* the writer is in the index's
                                       sync, out of the lock: tl->db stays */
    uint64_t          index_synced; /* tl->size at the index's last
                                       sealed commit synced */
    int               head_syncing; /* a writer is writing signed-head */
    int               failed;       /* the log's sync failed: refuse
                                       appends until a restart */
    char              failed_msg[SK_ERR_MSG_MAX];   /* why */
    _Atomic unsigned  appending;    /* appends being checked, not yet
                                       written: the next batch's */
    tl_park_t        *park_head;    /* parked appends, in SN order */
    tl_park_t        *park_tail;
    pthread_cond_t    park_wake;    /* the sync thread: a park, a sync
                                       ended or failed, stopping */
    tl_thread_t       syncer;
    uint64_t          reply_armed;  /* the reply timer sleeps until this
                                       (tl_ms; UINT64_MAX: no deadline) */
    pthread_cond_t    reply_wake;
    tl_thread_t       replier;      /* the reply timer (tl_append.c) */

    int               signed_fd;    /* signed-head (tl_signed.c) */
    unsigned          signed_slot;  /* the slot written next */
    uint64_t          signed_size;  /* what it holds: the largest tree */
    sk_merkle_hash_t  signed_root;  /* anything was signed about */
    int               signed_have;  /* 0: no file (a new data_dir) */
    off_t             end_off;      /* where SN size starts in the log */

    /* The index (tl_index.c): data_dir/index/, LMDB, derived from the
     * logs.  SN < indexed are in it; [indexed, size) are in pend. */
    sk_db_t          *db;
    sk_db_table_t     t_entries, t_names, t_seen, t_roots, t_copies,
                      t_state, t_logstat, t_sums;
    char              db_dir[4096];
    int               db_scratch;   /* --check: a temporary one, removed */
    int               db_marked;    /* index/boot written: commits may
                                       skip LMDB's syncs (tl_index_boot.c) */
    int               db_ready;     /* opened and caught up: flush on close */
    uint64_t          indexed;
    uint64_t          index_loaded; /* entries taken from it at open */
    off_t             inc_indexed;  /* incorporated.log's copies before
                                       this offset are in it */
    tl_pending_t     *pend;
    size_t            npend, pend_cap;
    int               roots_dirty;  /* roots or ca_next changed */
    int               stat_stale;   /* the logs changed other than by
                                       entries (a torn tail cut): the next
                                       flush writes logstat anew */
    uint64_t          flushes;      /* commits so far (tests, logs) */
    int               index_bad;    /* a row read did not check: rebuild
                                       the index before the next append */
    int               reindexing;   /* tl_store_reindex is under way */
    uint64_t          reindexed;    /* times it ran (a reader that found
                                       damage rebuilds only once) */
    uint64_t          reindexed_ms; /* when it last ran (tl_ms) */
    /* The name map (tl_map.c), in the index's environment: NULL with
     * name_map off.  map_root is its root as of the last flush, the one
     * the last Map-Root entry signed; names are read through it. */
    sk_map_t         *map;
    sk_merkle_hash_t  map_root;
    uint64_t          map_names;
    tl_name_t        *mdirty;       /* the names whose mdirty is set */
    int               map_seal;     /* the next flush appends a Map-Root */
    uint64_t          seal_fails;   /* batches whose Map-Root could not be
                                       written: their waiters get 500 and
                                       the next batch's Map-Root covers
                                       them */
    char              seal_msg[SK_ERR_MSG_MAX];     /* the last one's why */
    sk_merkle_tree_t *tree;
    unsigned long     tiles_noted;  /* tree's rebuilt/unwritten tiles logged */
    int64_t           last_ts;      /* newest stamp */

    tl_name_t       **names;        /* the working set: open addressing,
                                       nslots a power of 2 (pointers: a
                                       lookup may grow it while an earlier
                                       one's result is still used) */
    size_t            nnames, nslots;
    tl_root_t        *roots;
    size_t            nroots;
    X509_STORE       *store;        /* the roots, rebuilt when they change;
                                       chains verify with a reference
                                       (the pointer: store_lock too) */
    uint32_t          ca_next;      /* a root change needs a CA-Serial at
                                       least this: the newest one's + 1 */


    tl_peer_t        *peers;        /* next_sn under lock */
    size_t            npeers;
    tl_file_t         inc;          /* incorporated.log */
    tl_copy_t        *copies;       /* its copies since the last flush, in
                                       file order (older: the index) */
    size_t            ncopies, copies_cap;

    pthread_rwlock_t  calog_lock;   /* calog; added to under lock too */
    tl_file_t         calog_file;   /* certs.log */
    size_t            calog_bad;    /* --repair: lines skipped as bad */
    tl_calog_ent_t   *calog;        /* open addressing by hash */
    size_t            ncalog, calog_slots;

    pthread_mutex_t   store_lock;   /* store, the pointer: taken under
                                       lock, or alone to read it */

    tl_token_t       *tokens;       /* ring of conf.tokens outcomes */
    uint64_t          tokens_made;  /* the next goes to made % conf.tokens */
    unsigned          jobs;         /* appends finishing after a 202 */
    pthread_cond_t    jobs_done;    /* jobs went down */

    tl_work_t         work;         /* the append threads */

    pthread_mutex_t   chunk_lock;   /* the fields below; changed only by
                                       the publisher thread */
    pthread_cond_t    chunk_wake;
    tl_chunk_t       *chunks;       /* oldest first, contiguous from SN 0 */
    size_t            nchunks;
    uint64_t          published;    /* entries in chunks */
    tl_thread_t       chunker;

    pthread_mutex_t   sign_lock;    /* the notes (tl_sign.c); taken
                                       before lock and chunk_lock */
    pthread_cond_t    sign_wake;
    tl_note_t         cp_note, tfm_note;
    tl_thread_t       signer;

    tl_metrics_t      metrics;
};

/* tl_calog.c: CA certificates stored once, in data_dir/certs.log. */
int tl_calog_open(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_calog_close(tl_timeline_t *tl);
/* With tl->lock held: the stored form of one canonical entry (a new CA
 * certificate is synced to certs.log first). */
int tl_calog_pack(tl_timeline_t *tl, char **out, size_t *outlen,
    const char *text, size_t len, sk_err_t *err) SK_WUR;
/* The canonical text of stored entries. */
int tl_calog_unpack(tl_timeline_t *tl, char **out, size_t *outlen,
    const char *stored, size_t len, sk_err_t *err) SK_WUR;

/* tl_signed.c: data_dir/signed-head, what the timeline has signed. */
/* Read it (tl->signed_*); a new data_dir gets one, of the empty tree. */
int tl_signed_open(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* After the log's replay: it holds every entry the head covers, with
 * the head's root; the error names the file, offset and SN. */
int tl_signed_verify(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* Record (size, root), synced, in the slot not holding the current head. */
int tl_signed_write(tl_timeline_t *tl, uint64_t size,
    const sk_merkle_hash_t root, sk_err_t *err) SK_WUR;
/* Write the whole file anew (both slots), atomically. */
int tl_signed_create(tl_timeline_t *tl, uint64_t size,
    const sk_merkle_hash_t root, sk_err_t *err) SK_WUR;
void tl_signed_close(tl_timeline_t *tl);

/* tl_store.c: open and check the log, append durably, read back. */
int tl_store_open(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* Under tl->lock: entry sn checked against the tree's leaf hash, nothing
 * rebuilt on damage (the caller marks the index damaged). */
int tl_store_read_tree(tl_timeline_t *tl, char **out, size_t *len,
    uint64_t sn, sk_err_t *err) SK_WUR;
/* tl_tree.c: tl->tree over the log's tl->size entries (after the replay):
 * data_dir/tile/ opened (built if absent, rebuilt by --repair), in memory
 * for --check; for a run, a root that is not signed-head's rebuilds the
 * tiles from the log once before tl_signed_verify has the last word. */
int tl_tree_open(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* tl_tiles.c: GET /tile/<path> (c2sp.org/tlog-tiles) up to the durable
 * size; path is what follows "/tile/". */
struct MHD_Connection;
enum MHD_Result tl_tiles_get(struct MHD_Connection *c, tl_timeline_t *tl,
    const char *path);
/* tl_tree.c: with tl->lock held, log a tile the tree rebuilt or could
 * not write since the last call. */
void tl_tree_note(tl_timeline_t *tl);
/* tl_tree.c: --check: every full tile equals what the log gives. */
int tl_tree_check(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_store_close(tl_timeline_t *tl);
/* After every start check: cut the logs' torn tails, sync the logs, and
 * make signed-head cover every entry on disk (but entries past the last
 * Map-Root entry: tl_open signs them with the Map-Root it appends). */
int tl_store_settle(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* --repair: check the canonical entry (its signature too) as SN
 * tl->size, then write it. */
int tl_store_restore(tl_timeline_t *tl, const char *text, size_t len,
    sk_err_t *err) SK_WUR;
/* Under tl->lock: write one stamped entry as SN tl->size. */
int tl_store_write(tl_timeline_t *tl, const char *buf, size_t len,
    int64_t ts, sk_err_t *err) SK_WUR;
/* Under tl->lock: wait until entry sn is on disk (group commit).  0 once
 * it is, -1 if a sync failed, 1 if the monotonic clock passed until_ms
 * while another writer's sync was under way (UINT64_MAX: no bound). */
int tl_store_wait(tl_timeline_t *tl, uint64_t sn, uint64_t until_ms,
    sk_err_t *err) SK_WUR;
/* Under tl->lock: park p (p->sn just written) instead of waiting: the
 * sync thread syncs its batch and calls p->done.  Threads: started and
 * stopped around the HTTP front; stop settles every parked append. */
void tl_store_park(tl_timeline_t *tl, tl_park_t *p);
/* After parking, with tl->lock released (so that the sync thread, woken,
 * does not wait for it): wake the sync thread if it sleeps. */
void tl_store_kick(tl_timeline_t *tl);
/* Under tl->lock: take p off the parked ones, count its outcome and hand
 * it over (p->done; out, if any, is the callee's). */
void tl_store_answer(tl_timeline_t *tl, tl_park_t *p, tl_verdict_t v,
    char *out, const sk_err_t *err);
int tl_store_start(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_store_stop(tl_timeline_t *tl);
/* Durable entries [first, last] as text, malloc()ed; takes tl->lock
 * briefly, so call it without.  The index's offsets are checked: the
 * bytes read must be the entries whose leaf hashes the tree holds; if
 * not, the damage is logged, the index rebuilt from the log
 * (tl_store_reindex) and the entries read again. */
int tl_store_read(tl_timeline_t *tl, char **out, size_t *len, uint64_t first,
    uint64_t last, sk_err_t *err) SK_WUR;
/* Under tl->lock, serving: the index was found damaged (index_bad):
 * build it again from the logs, the tree kept; logged.  -1 (and appends
 * refused until a restart) if the logs do not give what they gave; -1
 * (SK_ERR_UNAVAILABLE) within a minute of the last rebuild. */
int tl_store_reindex(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* A read the index misled (err a format error: its rows, or the bytes
 * they name) is damage: logged and the index rebuilt, unless that was
 * done since the read's rows were taken (gen: tl->reindexed then);
 * locked: tl->lock is held.  0: read again. */
int tl_store_mend(tl_timeline_t *tl, uint64_t gen, int locked, sk_err_t *err)
    SK_WUR;
/* The same as tl_store_read for one entry, with tl->lock held. */
int tl_store_read_locked(tl_timeline_t *tl, char **out, size_t *len,
    uint64_t sn, sk_err_t *err) SK_WUR;
/* The same, checked against the index's own leaf hash instead of the
 * tree's, nothing rebuilt: for the tree, which asks for a leaf it lacks. */
int tl_store_read_leaf(tl_timeline_t *tl, char **out, size_t *len,
    uint64_t sn, sk_err_t *err) SK_WUR;

/* tl_names.c: the working set of names (tl->names). */
/* The slot of name in the table: its entry, or the free slot. */
tl_name_t **tl_names_slot(tl_name_t **slots, size_t nslots,
    const char *name);
/* Put n (its own allocation) into the working set. */
int tl_names_insert(tl_timeline_t *tl, tl_name_t *n, sk_err_t *err) SK_WUR;
/* Empty the working set (after a flush, or before a rebuild). */
void tl_names_forget(tl_timeline_t *tl);
void tl_name_free(tl_name_t *n);                    /* NULL ok */

/* tl_roots.c: the trusted roots (tl->roots) and their X509_STORE. */
/* Add a root (DER): 0 once added, 1 if trusted already, -1 on error. */
int tl_roots_add(tl_timeline_t *tl, const unsigned char *der, size_t len,
    sk_err_t *err);
/* Make tl->store anew from the roots (after they change). */
int tl_roots_store(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* A reference to tl->store (an empty store before any root), or NULL
 * out of memory.  It takes store_lock, not lock, so that chains are
 * checked while a batch is sealed under lock. */
X509_STORE *tl_roots_get(tl_timeline_t *tl);
/* Forget every root, and the store. */
void tl_roots_clear(tl_timeline_t *tl);

/* tl_state.c: what the entries so far imply. */
/* Apply an accepted (or replayed) entry to names and roots. */
int tl_state_apply(tl_timeline_t *tl, const sk_entry_t *e, int64_t ts,
    sk_err_t *err) SK_WUR;
/* Apply an Incorporate: its copy (ref; NULL: the one kept, as at replay)
 * as an entry of its own. */
int tl_state_incorporate(tl_timeline_t *tl, const sk_entry_t *e,
    const sk_entry_t *ref, int64_t ts, sk_err_t *err) SK_WUR;
tl_name_t *tl_state_name(tl_timeline_t *tl, const char *name);
/* Refill, then spend one of n's tokens (only check if dry); -1 if none. */
int tl_state_spend(tl_timeline_t *tl, tl_name_t *n, int64_t now, int dry);
/* Whether n took a Change-Services with this SK-Signature already. */
int tl_state_seen(tl_timeline_t *tl, const tl_name_t *n, const char *sig);
/* 0 if root-CA entry e's CA-Serial is above every root change's taken
 * (docs/protocol.md, "Operator entries"); else -1 and err says so. */
int tl_state_root_serial(const tl_timeline_t *tl, const sk_entry_t *e,
    sk_err_t *err);
/* Index of the root with this base64url SHA-256, or -1. */
int tl_state_root_find(tl_timeline_t *tl, const char *hash_b64);
void tl_state_free(tl_timeline_t *tl);

#define TL_INDEX_SCHEMA  2       /* the rows' layout (tl_index.c) */
#define TL_META_LOG      "log"   /* its meta record of entries.log */

/* tl_index.c: the index in data_dir/index/ (LMDB, sk/db.h).  The logs
 * stay the truth: the index is checked against them at open and built
 * anew from them when missing, damaged or not theirs. */
/* Open (serving: data_dir/index/; --check: a temporary one; --repair:
 * data_dir/index/ emptied), check it against the logs and load what the
 * process keeps in memory (roots, peers, the tree's leaves); after it the
 * log and incorporated.log are read only from where the index ends.
 * Needs certs.log open (to read the last indexed entry back). */
int tl_index_open(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* The log replayed on top of the index does not match signed-head:
 * forget everything and rebuild from SN 0; 1 if the index was empty
 * already (nothing to retry). */
int tl_index_rebuild(tl_timeline_t *tl, const char *why, sk_err_t *err)
    SK_WUR;
/* Under tl->lock, after an entry's state is applied: flush if the batch
 * is full (force: whatever is pending).  A failed flush is logged and
 * retried later (the index only lags). */
void tl_index_maybe_flush(tl_timeline_t *tl, int force);
/* Sync the logs, commit everything pending, sync the index. */
int tl_index_flush(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* A batch's seal, under tl->lock: with the map, its names staged and
 * its Map-Root entry appended; then, once index_batch entries are held
 * (as tl_index_maybe_flush), everything pending committed with no sync
 * (0; 1 if nothing was written); the caller then, out of the lock and in
 * this order, tl_index_sync_logs() and, if it wrote and
 * tl_index_sync_due(), tl_index_sync(). */
int tl_index_seal(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
int tl_index_sync_logs(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
int tl_index_sync_due(const tl_timeline_t *tl);
int tl_index_sync(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* Flush (if db_ready) and close; removes a scratch index. */
void tl_index_close(tl_timeline_t *tl);
/* Under tl->lock: record SN tl->size (its offset is tl->end_off). */
int tl_index_add(tl_timeline_t *tl, int64_t ts, const sk_merkle_hash_t leaf,
    sk_err_t *err) SK_WUR;
/* Under tl->lock: where SN sn starts (sn == size: the log's end). */
int tl_index_off(tl_timeline_t *tl, uint64_t sn, off_t *off, sk_err_t *err)
    SK_WUR;
/* Under tl->lock: the leaf hash entry sn must have: the tree's if tree
 * (and it has sn), else the index's (its row, or pending). */
int tl_index_leaf(tl_timeline_t *tl, uint64_t sn, int tree,
    sk_merkle_hash_t leaf, sk_err_t *err) SK_WUR;
/* Under tl->lock: a row read did not check against the log (fmt says
 * which): log it and mark the index for tl_store_reindex. */
void tl_index_damaged(tl_timeline_t *tl, const char *fmt, ...)
    SK_PRINTF(2, 3);
/* Under tl->lock: empty the index and forget what it gave, for a
 * replay of the logs from SN 0 (the tree is the caller's). */
int tl_index_reset(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* Under tl->lock: a name's row into *n (1 if none), after its bucket's
 * rows were checked against their sum (absence is as checked as a row). */
int tl_index_name_get(tl_timeline_t *tl, const char *name, tl_name_t *n,
    sk_err_t *err) SK_WUR;
/* Under tl->lock: whether the index has this name's seen hash. */
int tl_index_seen(tl_timeline_t *tl, const char *name,
    const unsigned char h[SK_SHA256_BYTES]);
/* Under tl->lock: the indexed copy of this hash (1 if none). */
int tl_index_copy_get(tl_timeline_t *tl, const unsigned char *h,
    tl_copy_t *c, sk_err_t *err) SK_WUR;
/* Where incorporated.log's unindexed copies start. */
off_t tl_index_inc_from(const tl_timeline_t *tl);
/* tl_map.c: the name map, in the index's environment (space 0). */
/* Open its tables (with the index's; nothing with name_map off). */
int tl_map_open(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_map_close(tl_timeline_t *tl);
/* Index open: the stored map's root must be the Map-Hash of last, the
 * last entry indexed (NULL: none); sets tl->map_root. */
int tl_map_agrees(tl_timeline_t *tl, sk_db_txn_t *t, const sk_entry_t *last,
    sk_err_t *err) SK_WUR;
/* In the flush's write transaction t: put each changed name's value into
 * the map, *root its root; serving with tl->map_seal, append the Map-Root
 * entry of that root. */
int tl_map_flush(tl_timeline_t *tl, sk_db_txn_t *t, sk_merkle_hash_t root,
    sk_err_t *err) SK_WUR;
/* Name's value into n->mval, read through the map against tl->map_root,
 * its newest entry checked against the log; indexed: the names table has
 * a row for it.  0 present, 1 absent, -1 (SK_ERR_FORMAT: damage). */
int tl_map_name(tl_timeline_t *tl, const char *name, tl_name_t *n,
    int indexed, sk_err_t *err) SK_WUR;
/* One more entry (SN sn, leaf hash leaf) of this timeline's of n's: its
 * value moves on (the caller, above the index, has the leaf hash). */
void tl_map_note(tl_timeline_t *tl, tl_name_t *n, uint64_t sn,
    const sk_merkle_hash_t leaf);
/* After the replay: a last entry that is a Map-Root must give the map's
 * root (else -1 naming the log); otherwise a Map-Root is due at start. */
int tl_map_check_end(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* After a rebuild while serving: the map's root must be the Map-Hash of
 * the log's last entry when that is a Map-Root entry (else -1 naming the
 * index and the log: nothing is served from that map). */
int tl_map_rebuilt(tl_timeline_t *tl, sk_err_t *err) SK_WUR;

/* tl_index_boot.c: index/boot names the boot the index was opened in
 * (written durably before any commit); *crashed if one from another boot
 * was left behind, when the index must be rebuilt from the log; *marked
 * 0 if it could not be written (a full disk), when every commit must
 * sync itself.  A clean close, after its last sync, removes it. */
void tl_index_boot_begin(const char *dir, int *crashed, int *marked);
void tl_index_boot_end(const char *dir);

/* tl_index_check.c, --check: data_dir/index/ against the log just
 * replayed into the scratch index, a line each (tl_say); the number of
 * problems. */
unsigned tl_index_check(tl_timeline_t *tl);

/* tl_validate.c */
/* Checks that need no state: run without the lock.  now is the claim
 * time; own: a submission to this timeline, whose CA-Cert-Chain must be
 * exactly the path it verifies by and gets the OCSP question (0: an
 * incorporated copy, stamped elsewhere, whose claim time is past: an
 * answer today says nothing about it). */
tl_verdict_t tl_validate_static(tl_timeline_t *tl, const sk_entry_t *e,
    int64_t now, int own, sk_err_t *err);
/* Loads the DNSSEC trust anchors when conf.evidence has dnssec. */
int tl_validate_init(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* The anchors. */
void tl_validate_free(tl_timeline_t *tl);
/* With tl->lock held: the checks against the state that need no
 * signature (a Bind for a bound name, an Unbind for an unbound one), run
 * before tl_validate_static so that a replayed entry costs a lookup, not
 * a chain check; tl_validate_state makes them again. */
tl_verdict_t tl_validate_early(tl_timeline_t *tl, const sk_entry_t *e,
    sk_err_t *err);
/* Checks against the state; called with tl->lock held. */
tl_verdict_t tl_validate_state(tl_timeline_t *tl, const sk_entry_t *e,
    int64_t now, sk_err_t *err);

/* tl_incorporated.c: incorporated.log, the copies of other timelines'
 * entries, and the peers. */
/* Load the peers' keys and open incorporated.log (before tl_store_open). */
int tl_inc_open(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* Index its copies from where the index ends (tl_store_open). */
int tl_inc_replay(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_inc_close(tl_timeline_t *tl);
/* The configured peer of this TID, or NULL. */
tl_peer_t *tl_inc_find_peer(tl_timeline_t *tl, uint64_t tid);
/* Under tl->lock: keep the copy durably (before the Incorporate is
 * written). */
int tl_inc_write(tl_timeline_t *tl, const sk_entry_t *ref, sk_err_t *err)
    SK_WUR;
/* Under tl->lock: where the copy e's Incorporated-Hash names is kept; 1
 * if nowhere. */
int tl_inc_copy(tl_timeline_t *tl, const sk_entry_t *e, tl_copy_t *c,
    sk_err_t *err) SK_WUR;
/* The copy c names, read and checked against its hash. */
int tl_inc_load(tl_timeline_t *tl, const tl_copy_t *c, char **out,
    sk_err_t *err) SK_WUR;

/* tl_incorporate.c: the rules an Incorporate and its copy are held to. */
/* The checks on an Incorporate and its copy ref (the peer's stamped
 * entry, as text) that need no state; *ref is the parsed copy. */
tl_verdict_t tl_inc_validate_static(tl_timeline_t *tl, const sk_entry_t *e,
    const char *ref_text, size_t ref_len, sk_entry_t **ref, sk_err_t *err);
/* Under tl->lock: the copy's own rules against this timeline's state. */
tl_verdict_t tl_inc_validate_state(tl_timeline_t *tl, const sk_entry_t *ref,
    int64_t now, sk_err_t *err);
/* The copy an Incorporate refers to, as text; SK_ERR_NOT_FOUND if none. */
int tl_inc_read(tl_timeline_t *tl, const sk_entry_t *e, char **out,
    size_t *len, sk_err_t *err) SK_WUR;

/* tl_ocsp.c: chain[0] is the end-entity, chain the verified chain. */
int tl_ocsp_init(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_ocsp_free(tl_timeline_t *tl);
tl_verdict_t tl_ocsp_check(tl_timeline_t *tl, STACK_OF(X509) *chain,
    X509_STORE *st, sk_err_t *err);

/* tl_append.c: the whole POST /append path.  *out is the stamped entry
 * (TL_OK) or the token in hex (TL_QUEUED: the append goes on in its own
 * thread after conf.reply_ms and its outcome goes to the token).  ref is
 * the copy an Incorporate refers to (NULL for other entries). */
tl_verdict_t tl_append(tl_timeline_t *tl, char **out, size_t *outlen,
    const char *text, size_t len, const char *ref, size_t ref_len,
    tl_park_t *park, sk_err_t *err);
/* With park: once written, the append is parked (TL_PARKED, *out the
 * stamped entry, kept by the caller) and park->done gives its outcome;
 * nothing of park, *out or err may be touched by the caller until then.
 * The reply timer: a parked append past reply_at gets its 202. */
int tl_append_start(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_append_stop(tl_timeline_t *tl);
/* Wait for the appends still finishing after a 202 (at shutdown). */
void tl_append_drain(tl_timeline_t *tl);

/* tl_token.c: the ring of 202 outcomes; all but init/free under tl->lock.
 * A token lives until conf.tokens newer ones have been issued. */
int tl_token_init(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_token_free(tl_timeline_t *tl);
/* A new pending token; hex gets its text. */
tl_token_t *tl_token_new(tl_timeline_t *tl, char hex[TL_TOKEN_HEX])
    SK_WUR;
/* The token with this id or text, or NULL (never issued, or recycled). */
tl_token_t *tl_token_find(tl_timeline_t *tl,
    const unsigned char id[TL_TOKEN_BYTES]);
tl_token_t *tl_token_find_hex(tl_timeline_t *tl, const char *hex);

/* tl_publish.c: TFM and checkpoint of the durable tree; published is
 * tl_chunk_published's count. */
int tl_publish_tfm(tl_timeline_t *tl, char **out, size_t *len,
    uint64_t published, sk_err_t *err) SK_WUR;
/* A TFM of the tree of the first size entries, published entries so far
 * (size <= durable). */
int tl_publish_tfm_at(tl_timeline_t *tl, char **out, size_t *len,
    uint64_t size, uint64_t published, sk_err_t *err) SK_WUR;
int tl_publish_checkpoint(tl_timeline_t *tl, char **out, size_t *len,
    sk_err_t *err) SK_WUR;

/* tl_sign.c: /checkpoint (tfm 0) and /status (tfm 1) as last signed,
 * signed anew if older than checkpoint_interval or covering less than is
 * durable (published); *out malloc()ed.  The thread signs both every
 * checkpoint_interval seconds. */
int tl_sign_get(tl_timeline_t *tl, int tfm, char **out, size_t *len,
    sk_err_t *err) SK_WUR;
int tl_sign_start(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_sign_stop(tl_timeline_t *tl);

/* tl_chunk.c: publication in chunks. */
/* Load data_dir/chunks/index (after tl_store_open). */
int tl_chunk_open(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* The index's text (NUL-terminated, changed in place), path in errors. */
int tl_chunk_load(tl_timeline_t *tl, const char *path, char *buf,
    sk_err_t *err) SK_WUR;
/* Replace data_dir/chunks/index by cs[0..n) and, if not NULL, c. */
int tl_chunk_save_index(tl_timeline_t *tl, const tl_chunk_t *cs, size_t n,
    const tl_chunk_t *c, sk_err_t *err) SK_WUR;
int tl_chunk_start(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* Stop the publisher thread and free the list. */
void tl_chunk_stop(tl_timeline_t *tl);
/* Publish what is durable and merge, as the schedule says (one thread). */
int tl_chunk_tick(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* Listing lines of the chunks overlapping [a, b]; malloc()ed. */
int tl_chunk_list(tl_timeline_t *tl, char **out, size_t *len, uint64_t a,
    uint64_t b, sk_err_t *err) SK_WUR;
int tl_chunk_exists(tl_timeline_t *tl, uint64_t first, uint64_t last);
/* The chunk file, opened read-only, or -1. */
int tl_chunk_open_file(const tl_timeline_t *tl, uint64_t first,
    uint64_t last);
uint64_t tl_chunk_published(tl_timeline_t *tl);
/* A chunk file: its bytes, and its text (entries, then the TFM)
 * unpacked, both malloc()ed; nothing checked. */
int tl_chunk_unpack(const char *path, char **bz, size_t *bzlen, char **text,
    size_t *len, sk_err_t *err) SK_WUR;
/* The same for chunk [first, last] of this timeline. */
int tl_chunk_read(const tl_timeline_t *tl, uint64_t first, uint64_t last,
    char **bz, size_t *bzlen, char **text, size_t *len, sk_err_t *err)
    SK_WUR;

/* tl_open.c: the data directory, for serving, --check or --repair. */
void tl_init(tl_timeline_t *tl, tl_mode_t mode);
void tl_free(tl_timeline_t *tl);
/* Take data_dir for this process alone (shared for --check). */
int tl_open_lock(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* The timeline key; made only when serving a data_dir holding nothing. */
int tl_open_key(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
/* Lock, key, every file, its start checks; serving: cut torn tails and
 * bring signed-head up to the log (tl_store_settle). */
int tl_open(tl_timeline_t *tl, sk_err_t *err) SK_WUR;

/* tl_check.c, tl_repair.c: the offline commands; exit codes. */
int tl_check(tl_timeline_t *tl);
/* Chunk file c against the log: its entries the log's, its TFM signed
 * over the log's root; and the index's signature over it, or with
 * c->sig NULL the signature made (malloc()ed into c->sig). */
int tl_check_chunk(tl_timeline_t *tl, tl_chunk_t *c, sk_err_t *err) SK_WUR;
int tl_repair(tl_timeline_t *tl, char **from, size_t nfrom);

/* tl_thread.c: start t running run(arg) (what names it in the error);
 * stop it: t->stop set under lock, wake signalled, the thread joined
 * (nothing if it never started). */
int tl_thread_start(tl_thread_t *t, void *(*run)(void *), void *arg,
    const char *what, sk_err_t *err) SK_WUR;
void tl_thread_stop(tl_thread_t *t, pthread_mutex_t *lock,
    pthread_cond_t *wake);

/* tl_work.c: the append threads, up to conf.threads, started as tasks
 * wait for them.  libmicrohttpd's polling threads never block: an append
 * (OCSP, the clock, group commit) is handed to one of these.  At most one
 * per CPU runs a task at once; one that blocks says so (tl_work_block),
 * and another task may start meanwhile.  Tasks are queued per client and
 * taken from each client in turn; each takes a place of rate_global
 * first. */
void tl_work_init(tl_timeline_t *tl);
/* Around a wait that uses no CPU (an OCSP responder, a lagging clock):
 * from an append thread, its CPU goes to the next task; from any other
 * thread, nothing. */
void tl_work_block(tl_timeline_t *tl);
void tl_work_unblock(tl_timeline_t *tl);
/* Suspend c and queue t as client's; -1 (c untouched) once stopping, or
 * if no thread runs and none can start; 1 if client has TL_WORK_QUEUE_MAX
 * queued already. */
#define TL_WORK_QUEUE_MAX  32
int tl_work_submit(tl_timeline_t *tl, tl_task_t *t, struct MHD_Connection *c,
    uint64_t client) SK_WUR;
/* The rate_global place of a task whose entry was not stored goes back. */
void tl_work_refund(tl_timeline_t *tl, tl_task_t *t);
/* Run every task queued, then end the threads. */
void tl_work_stop(tl_timeline_t *tl);

/* tl_http.c */
int tl_http_start(tl_timeline_t *tl, sk_httpd_t **h, sk_err_t *err) SK_WUR;
/* Finish the appends under way (each answered), then close everything. */
void tl_http_stop(tl_timeline_t *tl, sk_httpd_t *h);

/* tl_metrics.c: /metrics on conf.metrics_listen (when set). */
int tl_metrics_start(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_metrics_stop(tl_timeline_t *tl);
/* An append's final verdict after us microseconds (TL_QUEUED: not
 * final, not counted). */
void tl_metrics_append(tl_timeline_t *tl, tl_verdict_t v, uint64_t us);
/* The queue's refusal series, once the HTTP front made its family
 * (after sk_httpd_start); an append refused by the queue (TL_METRICS_*). */
int tl_metrics_refusals_start(tl_timeline_t *tl, sk_err_t *err) SK_WUR;
void tl_metrics_queue_refused(tl_timeline_t *tl, int reason);
/* One fdatasync of the log took us microseconds. */
void tl_metrics_fsync(tl_timeline_t *tl, uint64_t us);
/* The timeline just signed a TFM or checkpoint on its own (a chunk's, a
 * periodic one), not at a reader's request. */
void tl_metrics_signed(tl_timeline_t *tl);
/* The publisher has put every entry durable at the start of its round
 * into chunks. */
void tl_metrics_caught_up(tl_timeline_t *tl);
/* One OCSP responder asked: its answer and time. */
void tl_metrics_ocsp(tl_timeline_t *tl, tl_ocsp_result_t r, uint64_t us);
/* The public front's request metrics (hc.metrics), or NULL. */
sk_httpd_metrics_t *tl_metrics_http(tl_timeline_t *tl);

/* tl_time.c: "now" from the clock (or conf.clock_file). */
int64_t tl_now(const tl_timeline_t *tl);
/* Milliseconds, microseconds of CLOCK_MONOTONIC. */
uint64_t tl_ms(void);
uint64_t tl_us(void);

/* tl_log.c: "sk-timeline: ..." lines; tl_say to stdout (--check,
 * --repair). */
void tl_log(const char *fmt, ...) SK_PRINTF(1, 2);
void tl_say(const char *fmt, ...) SK_PRINTF(1, 2);
void tl_vlog(FILE *f, const char *fmt, va_list ap);
/* Under tl->lock: refuse appends from now on, saying why (logged); every
 * append waiting for a sync is woken to see it. */
void tl_fail(tl_timeline_t *tl, const char *fmt, ...) SK_PRINTF(2, 3);
/* Under tl->lock: wake every waiter of group commit, whatever it waits
 * for (after a failure, or a head written out of a batch's order). */
void tl_wake_all(tl_timeline_t *tl);

#endif
