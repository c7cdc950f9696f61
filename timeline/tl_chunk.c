/*
 * tl_chunk.c -- publication in chunks.
 *
 * A chunk is a contiguous run of durable entries [first, last] followed by
 * a TFM of the tree of size last + 1, all canonical text, compressed with
 * bzip2 and kept as data_dir/chunks/<first>-<last>.bz2; its signature is
 * the timeline key's Ed25519 signature over the exact .bz2 bytes, so a
 * mirror checks it before it decompresses anything.
 *
 * Schedule (a binary-counter merge, like an LSM tree): every
 * chunk_interval seconds the entries not yet in a chunk become one new
 * level-0 chunk (at most chunk_max_entries each).  Then, while the newest
 * chunk_fanout chunks all have the same level L < chunk_levels and hold at
 * most chunk_max_entries together, they are replaced by one chunk of level
 * L + 1 and their files removed; if they would hold more, they become
 * final (level chunk_levels) and never merge.  So the newest chunks cover
 * a tick or two and the list stays short: at most chunk_fanout - 1 chunks
 * per level below the top.
 *
 * data_dir/chunks/index lists the chunks, "first last level sig" a line,
 * replaced atomically after each new file is synced; the files removed by
 * a merge go only after the new index is on disk.  Only the publisher
 * thread changes the list; readers take chunk_lock.
 */
#define _GNU_SOURCE     /* SCHED_IDLE */
#include <bzlib.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tl.h"

#define TL_CHUNK_DIR    "chunks"
#define TL_CHUNK_INDEX  "index"
#define TL_CHUNK_LINE   256     /* bytes of one index line */


static void
tl_chunk_path(char *buf, size_t cap, const tl_timeline_t *tl,
    uint64_t first, uint64_t last)
{
    snprintf(buf, cap, "%s/%s/%" PRIu64 "-%" PRIu64 ".bz2", tl->conf.data_dir,
        TL_CHUNK_DIR, first, last);
}


int
tl_chunk_open_file(const tl_timeline_t *tl, uint64_t first, uint64_t last)
{
    char  path[4096];

    tl_chunk_path(path, sizeof(path), tl, first, last);
    return open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}


int
tl_chunk_unpack(const char *path, char **bz, size_t *bzlen, char **text,
    size_t *len, sk_err_t *err)
{
    unsigned  cap, n = 0;
    int       rc;

    *text = NULL;
    if (sk_file_read(bz, bzlen, path, UINT32_MAX / 64, err) != 0) {
        return -1;
    }
    /* Grow the buffer until the whole text fits (bzip2 says so). */
    for (cap = (unsigned) *bzlen * 8 + 4096;; cap *= 2) {
        *text = malloc(cap);
        if (*text == NULL) {
            rc = BZ_MEM_ERROR;
            break;
        }
        n = cap - 1;
        rc = BZ2_bzBuffToBuffDecompress(*text, &n, *bz, (unsigned) *bzlen,
            0, 0);
        if (rc != BZ_OUTBUFF_FULL || cap > UINT32_MAX / 4) {
            break;
        }
        free(*text);
    }
    if (rc != BZ_OK) {
        free(*text);
        free(*bz);
        *text = *bz = NULL;
        return sk_err_set(err, SK_ERR_FORMAT, "%s: not bzip2 data (%d)", path,
            rc);
    }
    (*text)[n] = '\0';
    *len = n;
    return 0;
}


int
tl_chunk_read(const tl_timeline_t *tl, uint64_t first, uint64_t last,
    char **bz, size_t *bzlen, char **text, size_t *len, sk_err_t *err)
{
    char  path[4096];

    tl_chunk_path(path, sizeof(path), tl, first, last);
    return tl_chunk_unpack(path, bz, bzlen, text, len, err);
}


/* One bzip2 -9 compression, and whether it runs in a thread of its own,
 * idle-class. */
typedef struct {
    char      *out;
    unsigned  *outlen;
    char      *in;
    unsigned   inlen;
    int        idle;
    int        rc;
} tl_bzip2_job_t;


static void *
tl_chunk_bzip2_run(void *arg)
{
    struct sched_param   none = { 0 };
    tl_bzip2_job_t      *j = arg;

    /* Inline (no thread of its own), the caller's name and class stay. */
    if (j->idle) {
        pthread_setname_np(pthread_self(), "tl-bzip2");
        if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) {
            tl_log("chunks: SCHED_IDLE: %s (compressing at chunk_nice)",
                strerror(errno));
        }
    }
    j->rc = BZ2_bzBuffToBuffCompress(j->out, j->outlen, j->in, j->inlen, 9,
        0, 0);
    return NULL;
}


/* Compress in a thread of its own under SCHED_IDLE: it runs only on CPU
 * time no other thread wants, so under load the appends' checks never
 * wait behind it (at nice 10 it still took 15-22 % of the daemon's CPU
 * while appends queued, docs/benchmarks.md).  Only this step, which
 * holds no lock: an idle-class thread holding tl->lock could be kept off
 * the CPU while appends wait for it, and an unprivileged thread cannot
 * leave that class again.  Where the thread cannot start, the caller
 * compresses at its own priority. */
static int
tl_chunk_bzip2(char *out, unsigned *outlen, char *in, unsigned inlen)
{
    tl_bzip2_job_t  j = { out, outlen, in, inlen, 1, BZ_CONFIG_ERROR };
    pthread_t       th;

    if (pthread_create(&th, NULL, tl_chunk_bzip2_run, &j) != 0) {
        j.idle = 0;
        tl_chunk_bzip2_run(&j);
        return j.rc;
    }
    pthread_join(th, NULL);
    return j.rc;
}


/* Entries [first, last] and their TFM, compressed. */
static int
tl_chunk_compress(tl_timeline_t *tl, char **bz, unsigned *bzlen,
    uint64_t first, uint64_t last, sk_err_t *err)
{
    char    *text, *tfm, *p;
    size_t   tlen, flen;
    int      rc;

    if (tl_store_read(tl, &text, &tlen, first, last, err) != 0) {
        return -1;
    }
    if (tl_publish_tfm_at(tl, &tfm, &flen, last + 1, last + 1, err) != 0) {
        free(text);
        return -1;
    }
    tl_metrics_signed(tl);
    p = realloc(text, tlen + flen);
    if (p == NULL || tlen + flen > UINT32_MAX / 2) {
        free(p != NULL ? p : text);
        free(tfm);
        return sk_err_set(err, SK_ERR_NOMEM, "chunk %" PRIu64 "-%" PRIu64,
            first, last);
    }
    memcpy(p + tlen, tfm, flen);
    free(tfm);
    tlen += flen;
    /* bzip2's documented worst case: 1% + 600 bytes. */
    *bzlen = (unsigned) (tlen + tlen / 100 + 600);
    *bz = malloc(*bzlen);
    if (*bz == NULL) {
        free(p);
        return sk_err_set(err, SK_ERR_NOMEM, "chunk compression");
    }
    rc = tl_chunk_bzip2(*bz, bzlen, p, (unsigned) tlen);
    free(p);
    if (rc != BZ_OK) {
        free(*bz);
        return sk_err_set(err, SK_ERR_SYSTEM, "chunk: bzip2 error %d", rc);
    }
    return 0;
}


/* Build, sign and sync the file of chunk c (first, last, level set). */
static int
tl_chunk_make(tl_timeline_t *tl, tl_chunk_t *c, sk_err_t *err)
{
    unsigned char  *sig;
    unsigned        bzlen;
    size_t          siglen;
    char           *bz = NULL, path[4096];
    int             rc;

    if (tl_chunk_compress(tl, &bz, &bzlen, c->first, c->last, err) != 0) {
        return -1;
    }
    rc = sk_key_sign(&sig, &siglen, tl->key, (unsigned char *) bz, bzlen,
        err);
    if (rc == 0) {
        c->sig = sk_b64_encode_alloc(sig, siglen);
        free(sig);
        if (c->sig == NULL) {
            rc = sk_err_set(err, SK_ERR_NOMEM, "chunk signature");
        }
    }
    if (rc == 0) {
        /* A file left by a crash before its index was written. */
        tl_chunk_path(path, sizeof(path), tl, c->first, c->last);
        (void) unlink(path);
        rc = sk_file_write_new(path, bz, bzlen, 0644, err);
    }
    free(bz);
    return rc;
}


/* The index holding cs[0..n) and then, if not NULL, c. */
int
tl_chunk_save_index(tl_timeline_t *tl, const tl_chunk_t *cs, size_t n,
    const tl_chunk_t *c, sk_err_t *err)
{
    char    path[4096], *buf, *p;
    size_t  i;
    int     rc;

    buf = malloc((n + 1) * TL_CHUNK_LINE + 1);
    if (buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "chunk index");
    }
    p = buf;
    for (i = 0; i <= n; i++) {
        if (i == n && c == NULL) {
            break;
        }
        p += snprintf(p, TL_CHUNK_LINE, "%" PRIu64 " %" PRIu64 " %u %s\n",
            i < n ? cs[i].first : c->first, i < n ? cs[i].last : c->last,
            i < n ? cs[i].level : c->level, i < n ? cs[i].sig : c->sig);
    }
    snprintf(path, sizeof(path), "%s/%s/%s", tl->conf.data_dir, TL_CHUNK_DIR,
        TL_CHUNK_INDEX);
    rc = sk_file_write_atomic(path, buf, (size_t) (p - buf), 0644, err);
    free(buf);
    return rc;
}


/* Make room for one more chunk (publisher thread only). */
static int
tl_chunk_reserve(tl_timeline_t *tl, sk_err_t *err)
{
    tl_chunk_t  *cs;

    pthread_mutex_lock(&tl->chunk_lock);
    cs = realloc(tl->chunks, (tl->nchunks + 1) * sizeof(*cs));
    if (cs != NULL) {
        tl->chunks = cs;
    }
    pthread_mutex_unlock(&tl->chunk_lock);
    return cs != NULL ? 0 : sk_err_set(err, SK_ERR_NOMEM, "chunk list");
}


/* Replace the newest `drop` chunks (0: none) by c, on disk then in
 * memory; the list has room for one more. */
static int
tl_chunk_commit(tl_timeline_t *tl, tl_chunk_t *c, size_t drop, sk_err_t *err)
{
    tl_chunk_t  old[TL_CHUNK_FANOUT_MAX];
    size_t      keep = tl->nchunks - drop, i;
    char        path[4096];

    if (tl_chunk_save_index(tl, tl->chunks, keep, c, err) != 0) {
        /* Unlisted, it would only wait for the retry to replace it. */
        tl_chunk_path(path, sizeof(path), tl, c->first, c->last);
        (void) unlink(path);
        return -1;
    }
    pthread_mutex_lock(&tl->chunk_lock);
    memcpy(old, tl->chunks + keep, drop * sizeof(*old));
    tl->chunks[keep] = *c;
    tl->nchunks = keep + 1;
    tl->published = c->last + 1;
    pthread_mutex_unlock(&tl->chunk_lock);
    for (i = 0; i < drop; i++) {
        tl_chunk_path(path, sizeof(path), tl, old[i].first, old[i].last);
        if (unlink(path) != 0 && errno != ENOENT) {
            tl_log("%s: unlink: %s", path, strerror(errno));
        }
        free(old[i].sig);
    }
    return 0;
}


/* Merge the newest chunks while the rule allows (publisher thread). */
static int
tl_chunk_merge(tl_timeline_t *tl, sk_err_t *err)
{
    uint64_t     fan = tl->conf.chunk_fanout, i;
    tl_chunk_t  *cs, c;
    size_t       n;

    for (;;) {
        n = tl->nchunks;
        cs = tl->chunks;
        if (fan < 2 || n < fan || cs[n - 1].level >= tl->conf.chunk_levels) {
            return 0;
        }
        for (i = 1; i < fan; i++) {
            if (cs[n - 1 - i].level != cs[n - 1].level) {
                return 0;
            }
        }
        memset(&c, 0, sizeof(c));
        c.first = cs[n - fan].first;
        c.last = cs[n - 1].last;
        if (c.last - c.first + 1 > tl->conf.chunk_max_entries) {
            /* Too big to merge: these stay as they are, for good. */
            for (i = n - fan; i < n; i++) {
                cs[i].level = (unsigned) tl->conf.chunk_levels;
            }
            return tl_chunk_save_index(tl, cs, n, NULL, err);
        }
        c.level = cs[n - 1].level + 1;
        if (tl_chunk_make(tl, &c, err) != 0
            || tl_chunk_commit(tl, &c, (size_t) fan, err) != 0)
        {
            free(c.sig);
            return -1;
        }
    }
}


int
tl_chunk_tick(tl_timeline_t *tl, sk_err_t *err)
{
    tl_chunk_t  c;
    uint64_t    durable, next;

    pthread_mutex_lock(&tl->lock);
    durable = tl->durable;
    pthread_mutex_unlock(&tl->lock);
    next = tl->published;
    while (next < durable) {
        memset(&c, 0, sizeof(c));
        c.first = next;
        c.last = durable - 1;
        if (c.last - c.first + 1 > tl->conf.chunk_max_entries) {
            c.last = c.first + tl->conf.chunk_max_entries - 1;
        }
        if (tl_chunk_reserve(tl, err) != 0 || tl_chunk_make(tl, &c, err) != 0
            || tl_chunk_commit(tl, &c, 0, err) != 0)
        {
            free(c.sig);
            return -1;
        }
        if (tl_chunk_merge(tl, err) != 0) {
            return -1;
        }
        next = c.last + 1;
    }
    tl_metrics_caught_up(tl);
    return 0;
}


/* One index line: "first last level sig". */
static int
tl_chunk_parse_line(tl_chunk_t *c, const char *line, uint64_t next,
    sk_err_t *err)
{
    unsigned long long  a, b;
    unsigned            lvl;
    char                sig[TL_CHUNK_LINE];
    int                 used = 0;

    if (sscanf(line, "%llu %llu %u %200s%n", &a, &b, &lvl, sig, &used) != 4
        || line[used] != '\0' || a > b)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "want \"first last level sig\"");
    }
    if (a != next) {
        return sk_err_set(err, SK_ERR_FORMAT, "chunk starts at %llu, not %"
            PRIu64, a, next);
    }
    c->first = a;
    c->last = b;
    c->level = lvl;
    c->sig = strdup(sig);
    return c->sig != NULL ? 0 : sk_err_set(err, SK_ERR_NOMEM, "chunk index");
}


int
tl_chunk_load(tl_timeline_t *tl, const char *path, char *buf, sk_err_t *err)
{
    char        *line, *nl;
    unsigned     lineno = 0;
    struct stat  st;
    char         file[4096];
    tl_chunk_t  *c;

    for (line = buf; *line != '\0'; line = nl + 1) {
        lineno++;
        nl = strchr(line, '\n');
        if (nl == NULL) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: no newline",
                path, lineno);
        }
        *nl = '\0';
        if (tl_chunk_reserve(tl, err) != 0) {
            return -1;
        }
        c = &tl->chunks[tl->nchunks];
        if (tl_chunk_parse_line(c, line, tl->published, err) != 0) {
            return sk_err_prefix(err, "%s: line %u", path, lineno);
        }
        tl->nchunks++;
        if (c->last >= tl->durable) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: chunk ends at "
                "SN %" PRIu64 ", past the log's %" PRIu64 " entries", path,
                lineno, c->last, tl->durable);
        }
        tl_chunk_path(file, sizeof(file), tl, c->first, c->last);
        if (stat(file, &st) != 0) {
            return sk_err_sys(err, "%s: line %u: %s", path, lineno, file);
        }
        tl->published = c->last + 1;
    }
    return 0;
}


int
tl_chunk_open(tl_timeline_t *tl, sk_err_t *err)
{
    char    dir[4096], path[4096 + 16], *buf;
    size_t  len;
    int     rc;

    snprintf(dir, sizeof(dir), "%s/%s", tl->conf.data_dir, TL_CHUNK_DIR);
    if (tl->mode != TL_CHECK && mkdir(dir, 0755) != 0 && errno != EEXIST) {
        return sk_err_sys(err, "%s: mkdir", dir);
    }
    snprintf(path, sizeof(path), "%s/%s", dir, TL_CHUNK_INDEX);
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        return 0;
    }
    if (sk_file_read(&buf, &len, path, SIZE_MAX / 2, err) != 0) {
        return -1;
    }
    rc = strlen(buf) == len ? tl_chunk_load(tl, path, buf, err)
        : sk_err_set(err, SK_ERR_FORMAT, "%s: contains a NUL byte", path);
    free(buf);
    if (rc == 0) {
        tl_log("%s: %zu chunks, %" PRIu64 " entries published", path,
            tl->nchunks, tl->published);
    }
    return rc;
}


static void *
tl_chunk_run(void *arg)
{
    tl_timeline_t    *tl = arg;
    struct timespec   ts;
    sk_err_t          err;

    /* Publication is background work: on a busy host it yields to the
     * appends, whose 201s wait on CPU (Linux keeps nice per thread). */
    if (setpriority(PRIO_PROCESS, (id_t) syscall(SYS_gettid),
            (int) tl->conf.chunk_nice) != 0)
    {
        tl_log("chunks: setpriority: %s", strerror(errno));
    }
    pthread_mutex_lock(&tl->chunk_lock);
    while (!tl->chunker.stop) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t) tl->conf.chunk_interval;
        pthread_cond_timedwait(&tl->chunk_wake, &tl->chunk_lock, &ts);
        if (tl->chunker.stop) {
            break;
        }
        pthread_mutex_unlock(&tl->chunk_lock);
        if (tl_chunk_tick(tl, &err) != 0) {
            tl_log("chunks: %s (retrying next tick)", err.msg);
        }
        pthread_mutex_lock(&tl->chunk_lock);
    }
    pthread_mutex_unlock(&tl->chunk_lock);
    return NULL;
}


int
tl_chunk_start(tl_timeline_t *tl, sk_err_t *err)
{
    return tl_thread_start(&tl->chunker, tl_chunk_run, tl, "chunks", err);
}


void
tl_chunk_stop(tl_timeline_t *tl)
{
    size_t  i;

    tl_thread_stop(&tl->chunker, &tl->chunk_lock, &tl->chunk_wake);
    for (i = 0; i < tl->nchunks; i++) {
        free(tl->chunks[i].sig);
    }
    free(tl->chunks);
    tl->chunks = NULL;
    tl->nchunks = 0;
}


/* Lines "<uri> <first> <last> <sig>" for chunks overlapping [a, b]. */
int
tl_chunk_list(tl_timeline_t *tl, char **out, size_t *len, uint64_t a,
    uint64_t b, sk_err_t *err)
{
    size_t  i, cap;
    char   *p;

    pthread_mutex_lock(&tl->chunk_lock);
    cap = tl->nchunks * TL_CHUNK_LINE + 1;
    *out = malloc(cap);
    if (*out == NULL) {
        pthread_mutex_unlock(&tl->chunk_lock);
        return sk_err_set(err, SK_ERR_NOMEM, "chunk list");
    }
    p = *out;
    for (i = 0; i < tl->nchunks; i++) {
        if (tl->chunks[i].last >= a && tl->chunks[i].first <= b) {
            p += snprintf(p, TL_CHUNK_LINE, "/chunks/%" PRIu64 "-%" PRIu64
                ".bz2 %" PRIu64 " %" PRIu64 " %s\n", tl->chunks[i].first,
                tl->chunks[i].last, tl->chunks[i].first, tl->chunks[i].last,
                tl->chunks[i].sig);
        }
    }
    pthread_mutex_unlock(&tl->chunk_lock);
    *len = (size_t) (p - *out);
    return 0;
}


/* Is [first, last] a chunk now? */
int
tl_chunk_exists(tl_timeline_t *tl, uint64_t first, uint64_t last)
{
    size_t  i;
    int     found = 0;

    pthread_mutex_lock(&tl->chunk_lock);
    for (i = 0; i < tl->nchunks && !found; i++) {
        found = tl->chunks[i].first == first && tl->chunks[i].last == last;
    }
    pthread_mutex_unlock(&tl->chunk_lock);
    return found;
}


uint64_t
tl_chunk_published(tl_timeline_t *tl)
{
    uint64_t  n;

    pthread_mutex_lock(&tl->chunk_lock);
    n = tl->published;
    pthread_mutex_unlock(&tl->chunk_lock);
    return n;
}
