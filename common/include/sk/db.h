/*
 * sk/db.h -- a thin wrapper over LMDB for the daemons' on-disk indexes.
 *
 * An index is derived data: the logs stay the source of truth, and a
 * daemon rebuilds its index from them when it is missing or damaged.
 * LMDB is a B+tree in one memory-mapped file, written copy-on-write: a
 * commit is all or nothing and needs no recovery step after kill -9;
 * reads go through the map, so the RAM an index costs is the OS page
 * cache's to bound; one writer and many readers, as the daemons run.
 *
 * Calls return 0 on success and -1 on failure with err naming the
 * environment's directory and LMDB's message (mdb_strerror).  Lookups
 * return 1 for "no such key" instead of failing.  Data a lookup returns
 * points into the map: valid until its transaction ends, never written.
 *
 * Threads: a read transaction may be used by any one thread at a time
 * (the environment is opened with MDB_NOTLS); a write transaction stays
 * in the thread that began it, and one exists at a time (a second
 * begin waits).
 *
 * This API is shared by sk-timeline and sk-mirror: keep it stable.
 */
#ifndef SK_DB_H
#define SK_DB_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

/* Default map size: 1 TiB of address space, sparse (the file grows only
 * as pages are used), room for 200 million names and their rows. */
#define SK_DB_MAP_DEFAULT  (UINT64_C(1) << 40)
#define SK_DB_TABLES_DEFAULT  16

typedef struct sk_db_s      sk_db_t;
typedef struct sk_db_txn_s  sk_db_txn_t;
typedef struct sk_db_iter_s sk_db_iter_t;

/* A named sub-database of an environment; valid as long as the env. */
typedef unsigned int sk_db_table_t;

typedef struct {
    uint64_t    map_size;   /* bytes of map; 0: SK_DB_MAP_DEFAULT */
    unsigned    max_tables; /* named tables; 0: SK_DB_TABLES_DEFAULT */
    int         read_only;  /* open an existing environment read-only */
    int         lazy_sync;  /* commits skip the meta page's fsync: a
                               system crash may undo the last commits,
                               never break the file (MDB_NOMETASYNC);
                               for indexes that catch up from a log */
    int         no_sync;    /* commits write their pages and never
                               fsync: durable only at sk_db_sync(), and a
                               system crash before it may undo or tear
                               the commits since (MDB_NOSYNC); for an
                               index checked against a log at each start,
                               whose syncs its caller orders with the
                               log's */
} sk_db_opts_t;

/* Open (creating it, mode 0700, unless read_only) the environment in dir;
 * opts NULL: defaults.  Refuses a data.mdb shorter than the pages its
 * meta page names (a truncated file would fault on read). */
int sk_db_open(sk_db_t **db, const char *dir, const sk_db_opts_t *opts,
    sk_err_t *err) SK_WUR;
/* Every transaction must have ended; NULL is accepted. */
void sk_db_close(sk_db_t *db);
const char *sk_db_dir(const sk_db_t *db);

/* The table of this name; create: make it if absent, else
 * SK_ERR_NOT_FOUND if absent.  Open every table before the transactions
 * that use it begin (LMDB: a transaction sees the handles opened before
 * it), and not while another transaction is open in this thread. */
int sk_db_table(sk_db_t *db, const char *name, int create, sk_db_table_t *t,
    sk_err_t *err) SK_WUR;

int sk_db_begin(sk_db_t *db, int write, sk_db_txn_t **txn, sk_err_t *err)
    SK_WUR;
/* Commit (durable when this returns, unless lazy_sync or no_sync) and
 * free txn;
 * on failure txn is aborted and freed all the same. */
int sk_db_commit(sk_db_txn_t *txn, sk_err_t *err) SK_WUR;
/* Drop every change and free txn; NULL is accepted. */
void sk_db_abort(sk_db_txn_t *txn);
/* Flush every commit to disk (fdatasync of data.mdb): with no_sync, what
 * makes them durable.  Safe while other threads read. */
int sk_db_sync(sk_db_t *db, sk_err_t *err) SK_WUR;

/* 0 and the value, 1 if no such key, -1 on error. */
int sk_db_get(sk_db_txn_t *txn, sk_db_table_t t, const void *key,
    size_t klen, const void **val, size_t *vlen, sk_err_t *err) SK_WUR;
/* Insert or replace.  Keys are 1 to 511 bytes (LMDB's limit). */
int sk_db_put(sk_db_txn_t *txn, sk_db_table_t t, const void *key,
    size_t klen, const void *val, size_t vlen, sk_err_t *err) SK_WUR;
/* 0 deleted, 1 if no such key, -1 on error. */
int sk_db_del(sk_db_txn_t *txn, sk_db_table_t t, const void *key,
    size_t klen, sk_err_t *err) SK_WUR;
/* Remove every row of table t (it stays, empty). */
int sk_db_clear(sk_db_txn_t *txn, sk_db_table_t t, sk_err_t *err) SK_WUR;
/* Rows in table t. */
int sk_db_count(sk_db_txn_t *txn, sk_db_table_t t, uint64_t *n,
    sk_err_t *err) SK_WUR;

/* The rows whose key starts with prefix (plen 0: all), in key order
 * (bytewise).  next: 0 and a row, 1 once past the last, -1 on error.
 * Close the iterator before its transaction ends. */
int sk_db_iter_open(sk_db_txn_t *txn, sk_db_table_t t, const void *prefix,
    size_t plen, sk_db_iter_t **it, sk_err_t *err) SK_WUR;
int sk_db_iter_next(sk_db_iter_t *it, const void **key, size_t *klen,
    const void **val, size_t *vlen, sk_err_t *err) SK_WUR;
void sk_db_iter_close(sk_db_iter_t *it);
/* The row with the greatest key: 0, 1 if the table is empty, -1. */
int sk_db_last(sk_db_txn_t *txn, sk_db_table_t t, const void **key,
    size_t *klen, const void **val, size_t *vlen, sk_err_t *err) SK_WUR;
/* The first row whose key is at or after from (bytewise), whatever it
 * starts with: 0, 1 if there is none, -1.  For lookups a prefix does not
 * express (sk_map: the one key under a bit prefix). */
int sk_db_seek(sk_db_txn_t *txn, sk_db_table_t t, const void *from,
    size_t fromlen, const void **key, size_t *klen, const void **val,
    size_t *vlen, sk_err_t *err) SK_WUR;

/*
 * How far an index has got in the log it derives from, committed in the
 * same transaction as the rows it covers, so that whatever moment a
 * process dies at, the rows and this record agree.  Kept under its name
 * (e.g. "timeline", or one per mirrored timeline) in the table "meta".
 */
#define SK_DB_TAG_BYTES  32
typedef struct {
    uint32_t        schema;     /* the user's row layout version */
    uint64_t        next_sn;    /* entries [0, next_sn) are indexed */
    uint64_t        log_end;    /* the log offset entry next_sn starts at */
    unsigned char   tag[SK_DB_TAG_BYTES];   /* the user's check value,
                                   e.g. the Merkle root at next_sn */
} sk_db_meta_t;

/* 0, 1 if no record of this name, -1 (SK_ERR_FORMAT if it is damaged). */
int sk_db_meta_get(sk_db_txn_t *txn, const char *name, sk_db_meta_t *m,
    sk_err_t *err) SK_WUR;
int sk_db_meta_put(sk_db_txn_t *txn, const char *name,
    const sk_db_meta_t *m, sk_err_t *err) SK_WUR;

/* Big-endian keys sort as numbers do. */
void sk_db_u64_put(unsigned char out[8], uint64_t v);
uint64_t sk_db_u64_get(const unsigned char in[8]);

#endif
