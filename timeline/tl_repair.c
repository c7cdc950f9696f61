/*
 * tl_repair.c -- sk-timeline --repair [FROM...]: bring a damaged data
 * directory back to one that holds every entry the timeline signed,
 * without a fork, offline.
 *
 * Where entries come from: the log up to its first damage (and whatever
 * still reads after it), every chunk file in chunks/, and each FROM: a
 * file of entries back to back (a mirror's copy, data_dir/tl-<tid>/entries;
 * GET /entry/<sn> answers one after the other; an entries.log whose
 * certificate references this certs.log resolves) or a chunk file
 * (bzip2).  An entry counts only if it carries this TID and its timeline
 * signature verifies with this timeline's key; other timelines' entries
 * serve as the copies Incorporates refer to.  Two different signed
 * entries for one SN are a fork that already happened: the repair stops,
 * naming both, and changes nothing.  So does a gap below signed-head's
 * size, or entries whose root is not the head's.
 *
 * Otherwise, in this order, each step synced:
 *   certs.log         written anew if it held bad lines, else its torn
 *                     tail cut
 *   incorporated.log  its damaged tail cut; missing copies appended
 *   entries.log       its damaged tail cut; the missing entries appended
 *                     (with the certificates they refer to)
 *   signed-head       written anew for the log as it now is
 *   chunks/index      rebuilt from the chunk files if it does not check
 * Whatever is cut or replaced is first copied to data_dir/repair-<time>/.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>
#include <sk/tfm.h>

#include "tl.h"

/* One entry of this timeline found in a source: canonical text. */
typedef struct {
    char          *text;        /* NULL: not found */
    size_t         len;
    const char    *src;
} tl_found_t;

/* Another timeline's entry: a copy an Incorporate may refer to. */
typedef struct {
    unsigned char  hash[SK_SHA256_BYTES];
    char          *text;
    size_t         len;
} tl_spare_t;

typedef struct {
    tl_found_t    *found;       /* by SN, SN >= the log's whole entries */
    uint64_t       nfound;
    tl_spare_t    *spares;
    size_t         nspares;
    tl_chunk_t    *files;       /* chunk files in chunks/ (sig NULL) */
    size_t         nfiles;
    char         **srcs;        /* names of sources, for messages */
    size_t         nsrcs;
    unsigned       skipped;     /* pieces that were none of ours */
    char           dir[4096];   /* data_dir/repair-<time>, once made */
} tl_repair_t;


static const char *
tl_repair_src(tl_repair_t *r, const char *name)
{
    char  **p = realloc(r->srcs, (r->nsrcs + 1) * sizeof(*p));

    if (p == NULL) {
        return NULL;
    }
    r->srcs = p;
    return (p[r->nsrcs] = strdup(name)) != NULL ? p[r->nsrcs++] : NULL;
}


/* Another timeline's entry, kept by its hash. */
static int
tl_repair_spare(tl_repair_t *r, const sk_entry_t *e, const char *text,
    size_t len, sk_err_t *err)
{
    tl_spare_t  *s = realloc(r->spares, (r->nspares + 1) * sizeof(*s));

    if (s == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "repair");
    }
    r->spares = s;
    s += r->nspares;
    if (sk_entry_hash(s->hash, e, err) != 0) {
        return -1;
    }
    s->text = malloc(len);
    if (s->text == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "repair");
    }
    memcpy(s->text, text, len);
    s->len = len;
    r->nspares++;
    return 0;
}


static int
tl_repair_fork(sk_err_t *err, uint64_t sn, const char *a, const char *b)
{
    return sk_err_set(err, SK_ERR_SIGNATURE, "SN %" PRIu64 ": %s and %s hold "
        "different entries, both signed by this timeline's key: it forked "
        "already; keep both as evidence", sn, a, b);
}


/* Keep one canonical entry of this timeline as SN sn, unless the log
 * holds it; a different one signed for the same SN is a fork. */
static int
tl_repair_keep(tl_repair_t *r, tl_timeline_t *tl, uint64_t sn,
    const char *text, size_t len, const char *src, sk_err_t *err)
{
    sk_merkle_hash_t   leaf, have;
    tl_found_t        *f;
    uint64_t           n;

    if (sn < tl->size) {
        if (sk_merkle_leaf_hash(leaf, text, len, err) != 0
            || sk_merkle_tree_leaf_get(have, tl->tree, sn, err) != 0)
        {
            return -1;
        }
        return memcmp(leaf, have, sizeof(leaf)) == 0 ? 0
            : tl_repair_fork(err, sn, src, tl->log.path);
    }
    if (sn >= r->nfound) {
        n = sn + 1 > 2 * r->nfound ? sn + 1 : 2 * r->nfound;
        f = realloc(r->found, n * sizeof(*f));
        if (f == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "repair");
        }
        memset(f + r->nfound, 0, (n - r->nfound) * sizeof(*f));
        r->found = f;
        r->nfound = n;
    }
    f = &r->found[sn];
    if (f->text != NULL) {
        return f->len == len && memcmp(f->text, text, len) == 0 ? 0
            : tl_repair_fork(err, sn, f->src, src);
    }
    f->text = malloc(len);
    if (f->text == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "repair");
    }
    memcpy(f->text, text, len);
    f->len = len;
    f->src = src;
    return 0;
}


/* One piece of a source: an entry of ours (signed), another timeline's
 * (a spare copy), or something else (skipped). */
static int
tl_repair_offer(tl_repair_t *r, tl_timeline_t *tl, const char *piece,
    size_t plen, const char *src, sk_err_t *err)
{
    sk_entry_t  *e = NULL;
    uint64_t     sn, tid;
    size_t       len, used;
    char        *text;
    int          rc = 0;

    if (tl_calog_unpack(tl, &text, &len, piece, plen, NULL) != 0) {
        r->skipped++;
        return 0;
    }
    if (sk_entry_parse_next(&e, &used, text, len, NULL) != 0 || used != len
        || sk_entry_tid(e, &tid, NULL) != 0 || sk_entry_sn(e, &sn, NULL) != 0)
    {
        r->skipped++;
    } else if (tid != tl->conf.tid) {
        rc = tl_repair_spare(r, e, text, len, err);
    } else if (sk_entry_verify(e, SK_SIG_TIMELINE, tl->key, NULL) != 0) {
        tl_say("%s: SN %" PRIu64 ": its timeline signature does not "
            "verify: skipped", src, sn);
        r->skipped++;
    } else {
        rc = tl_repair_keep(r, tl, sn, text, len, src, err);
    }
    sk_entry_free(e);
    free(text);
    return rc;
}


/* Entries back to back (stored or canonical), maybe ending in a TFM. */
static int
tl_repair_text(tl_repair_t *r, tl_timeline_t *tl, const char *buf,
    size_t len, const char *name, sk_err_t *err)
{
    const char  *src = tl_repair_src(r, name);
    size_t       pos = 0, n;

    if (src == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "repair");
    }
    while (pos < len && (n = tl_file_entry_len(buf + pos, len - pos)) != 0)
    {
        if (strncmp(buf + pos, SK_TFM_HEADER, sizeof(SK_TFM_HEADER) - 1) != 0
            && tl_repair_offer(r, tl, buf + pos, n, src, err) != 0)
        {
            return -1;
        }
        pos += n;
    }
    return 0;
}


static int
tl_repair_from(tl_repair_t *r, tl_timeline_t *tl, const char *path,
    sk_err_t *err)
{
    size_t  len, bzlen;
    char   *buf, *bz;
    int     rc;

    if (sk_file_read(&buf, &len, path, SIZE_MAX / 2, err) != 0) {
        return -1;
    }
    if (len >= 3 && memcmp(buf, "BZh", 3) == 0) {
        free(buf);
        if (tl_chunk_unpack(path, &bz, &bzlen, &buf, &len, err) != 0) {
            return -1;
        }
        free(bz);
    }
    rc = tl_repair_text(r, tl, buf, len, path, err);
    free(buf);
    return rc;
}


/* What an earlier repair cut, in data_dir/repair-<time>/: a repair
 * stopped half-way reads it back on the next run. */
static int
tl_repair_saved(tl_repair_t *r, tl_timeline_t *tl, sk_err_t *err)
{
    struct dirent  *de, *fe;
    char            dir[4096 + 256], path[4096 + 512];
    DIR            *d, *f;
    int             rc = 0;

    d = opendir(tl->conf.data_dir);
    if (d == NULL) {
        return sk_err_sys(err, "%s", tl->conf.data_dir);
    }
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "repair-", 7) != 0) {
            continue;
        }
        snprintf(dir, sizeof(dir), "%s/%s", tl->conf.data_dir, de->d_name);
        if ((f = opendir(dir)) == NULL) {
            continue;
        }
        while (rc == 0 && (fe = readdir(f)) != NULL) {
            if (strstr(fe->d_name, ".from-") != NULL) {
                snprintf(path, sizeof(path), "%s/%s", dir, fe->d_name);
                rc = tl_repair_from(r, tl, path, err);
            }
        }
        closedir(f);
    }
    closedir(d);
    return rc;
}


/* Every file of chunks/ named <first>-<last>.bz2. */
static int
tl_repair_scan(tl_repair_t *r, tl_timeline_t *tl, sk_err_t *err)
{
    unsigned long long   a, b;
    struct dirent       *de;
    tl_chunk_t          *c;
    size_t               bzlen, len;
    char                 dir[4096], name[64], *bz, *text;
    DIR                 *d;
    int                  rc = 0, used;

    snprintf(dir, sizeof(dir), "%s/chunks", tl->conf.data_dir);
    d = opendir(dir);
    if (d == NULL) {
        return errno == ENOENT ? 0 : sk_err_sys(err, "%s", dir);
    }
    while (rc == 0 && (de = readdir(d)) != NULL) {
        used = 0;
        if (sscanf(de->d_name, "%llu-%llu.bz2%n", &a, &b, &used) != 2
            || de->d_name[used] != '\0' || a > b
            || snprintf(name, sizeof(name), "%llu-%llu.bz2", a, b) < 0
            || strcmp(name, de->d_name) != 0)
        {
            continue;
        }
        c = realloc(r->files, (r->nfiles + 1) * sizeof(*c));
        if (c == NULL) {
            rc = sk_err_set(err, SK_ERR_NOMEM, "repair");
            break;
        }
        r->files = c;
        memset(&c[r->nfiles], 0, sizeof(*c));
        c[r->nfiles].first = a;
        c[r->nfiles++].last = b;
        snprintf(name, sizeof(name), "chunks/%llu-%llu.bz2", a, b);
        if (tl_chunk_read(tl, a, b, &bz, &bzlen, &text, &len, err) != 0) {
            tl_say("%s: skipped", err->msg);
            continue;
        }
        rc = tl_repair_text(r, tl, text, len, name, err);
        free(bz);
        free(text);
    }
    closedir(d);
    return rc;
}


/* Where cut or replaced bytes go first. */
static int
tl_repair_aside(tl_repair_t *r, tl_timeline_t *tl, const char *name,
    const char *buf, size_t len, sk_err_t *err)
{
    char  path[4096 + 64];

    if (r->dir[0] == '\0') {
        snprintf(r->dir, sizeof(r->dir), "%s/repair-%lld", tl->conf.data_dir,
            (long long) time(NULL));
        if (mkdir(r->dir, 0700) != 0 && errno != EEXIST) {
            return sk_err_sys(err, "%s", r->dir);
        }
    }
    snprintf(path, sizeof(path), "%s/%s", r->dir, name);
    if (sk_file_write_new(path, buf, len, 0600, err) != 0) {
        return -1;
    }
    tl_say("%s: %zu bytes kept there", path, len);
    return 0;
}


/* Copy a file's damaged tail aside, then cut it. */
static int
tl_repair_cut(tl_repair_t *r, tl_timeline_t *tl, tl_file_t *f, sk_err_t *err)
{
    size_t  len = (size_t) (f->size - f->end);
    char    name[256], *buf;
    int     rc;

    if (f->size == f->end) {
        return 0;
    }
    buf = malloc(len);
    if (buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "repair");
    }
    if (pread(f->fd, buf, len, f->end) != (ssize_t) len) {
        free(buf);
        return sk_err_sys(err, "%s: read", f->path);
    }
    snprintf(name, sizeof(name), "%s.from-%jd", f->name, (intmax_t) f->end);
    rc = tl_repair_aside(r, tl, name, buf, len, err);
    free(buf);
    return rc == 0 ? tl_file_trim(f, err) : -1;
}


/* certs.log with bad lines: all its good ones, written anew. */
static int
tl_repair_calog(tl_repair_t *r, tl_timeline_t *tl, sk_err_t *err)
{
    size_t  i, len = 0, n;
    char   *buf, *old;
    int     rc;

    if (tl->calog_bad == 0) {
        return tl_repair_cut(r, tl, &tl->calog_file, err);
    }
    for (i = 0; i < tl->calog_slots; i++) {
        len += tl->calog[i].text != NULL ? tl->calog[i].len + 1 : 0;
    }
    buf = malloc(len + 1);
    if (buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "repair");
    }
    for (i = 0, n = 0; i < tl->calog_slots; i++) {
        if (tl->calog[i].text != NULL) {
            memcpy(buf + n, tl->calog[i].text, tl->calog[i].len);
            n += tl->calog[i].len;
            buf[n++] = '\n';
        }
    }
    rc = tl_file_read(&tl->calog_file, 0, &old, &n, err);
    if (rc == 0) {
        rc = tl_repair_aside(r, tl, TL_CALOG_FILE, old, n, err);
        free(old);
    }
    if (rc == 0) {
        rc = sk_file_write_atomic(tl->calog_file.path, buf, len, 0644,
            err);
    }
    free(buf);
    if (rc != 0) {
        return -1;
    }
    tl_say("%s: written anew without its %zu bad lines",
        tl->calog_file.path, tl->calog_bad);
    tl_file_close(&tl->calog_file);
    return tl_file_open(&tl->calog_file, tl, TL_CALOG_FILE, err);
}


/* An Incorporate about to be restored: its copy, from a spare if the
 * copies lack it. */
static int
tl_repair_copy(tl_repair_t *r, tl_timeline_t *tl, const tl_found_t *f,
    sk_err_t *err)
{
    unsigned char  *h;
    sk_entry_t     *e, *ref;
    const char     *hb;
    size_t          i, len;
    char           *have;
    int             rc;

    if (sk_entry_parse(&e, f->text, f->len, err) != 0) {
        return -1;
    }
    if (sk_entry_type(e) != SK_ENTRY_INCORPORATE) {
        sk_entry_free(e);
        return 0;
    }
    if (tl_inc_read(tl, e, &have, &len, NULL) == 0) {
        free(have);
        sk_entry_free(e);
        return 0;
    }
    hb = sk_entry_get(e, "Incorporated-Hash");
    rc = sk_b64_decode(&h, &len, hb, strlen(hb), err);
    if (rc != 0) {
        sk_entry_free(e);
        return -1;
    }
    for (i = 0; i < r->nspares; i++) {
        if (len == SK_SHA256_BYTES && memcmp(r->spares[i].hash, h, len) == 0)
        {
            break;
        }
    }
    free(h);
    if (i == r->nspares) {
        rc = sk_err_set(err, SK_ERR_NOT_FOUND, "the copy an Incorporate "
            "refers to (%s) is in no source", hb);
        sk_entry_free(e);
        return rc;
    }
    sk_entry_free(e);
    if (sk_entry_parse(&ref, r->spares[i].text, r->spares[i].len, err) != 0)
    {
        return -1;
    }
    rc = tl_inc_write(tl, ref, err);
    sk_entry_free(ref);
    return rc;
}


/* With the entries found for SN size..target-1, is the root at the
 * head's size the head's?  If not, the log or a source holds entries the
 * head never covered: a fork, not a thing to repair. */
static int
tl_repair_root(tl_repair_t *r, tl_timeline_t *tl, uint64_t target,
    sk_err_t *err)
{
    sk_merkle_tree_t  *t = tl->tree;
    sk_merkle_hash_t   leaf, root;
    uint64_t           sn;
    int                rc = 0;

    if (!tl->signed_have) {
        return 0;
    }
    if (tl->signed_size > tl->size) {
        if (sk_merkle_tree_new(&t, err) != 0) {
            return -1;
        }
        for (sn = 0; rc == 0 && sn < tl->signed_size && sn < target; sn++) {
            rc = sn < tl->size
                ? (sk_merkle_tree_leaf_get(leaf, tl->tree, sn, err) != 0 ? -1
                   : sk_merkle_tree_append(t, leaf, err))
                : sk_merkle_leaf_hash(leaf, r->found[sn].text,
                      r->found[sn].len, err) != 0 ? -1
                : sk_merkle_tree_append(t, leaf, err);
        }
    }
    if (rc == 0 && sk_merkle_tree_root(root, t, tl->signed_size, err) == 0
        && memcmp(root, tl->signed_root, sizeof(root)) != 0)
    {
        rc = sk_err_set(err, SK_ERR_SIGNATURE, "the entries up to SN %" PRIu64
            " do not hash to the root %s holds: they are not those signed",
            tl->signed_size - 1, TL_SIGNED_FILE);
    }
    if (t != tl->tree) {
        sk_merkle_tree_free(t);
    }
    return rc;
}


static int
tl_repair_cmp(const void *a, const void *b)
{
    const tl_chunk_t  *x = a, *y = b;

    return x->first != y->first ? (x->first < y->first ? -1 : 1)
        : x->last != y->last ? (x->last > y->last ? -1 : 1) : 0;
}


/* chunks/index: kept if it loads and every chunk checks, else made anew
 * from the chunk files that check, the longest first at each SN.  Their
 * level is unknown: they are made final (chunk_levels), never merged. */
static int
tl_repair_index(tl_repair_t *r, tl_timeline_t *tl, sk_err_t *err)
{
    uint64_t   next = 0;
    sk_err_t   why;
    size_t     i, len;
    char      *old, path[4096];
    int        ok;

    ok = tl_chunk_open(tl, &why) == 0;
    for (i = 0; ok && i < tl->nchunks; i++) {
        ok = tl_check_chunk(tl, &tl->chunks[i], &why) == 0;
        if (!ok) {
            sk_err_prefix(&why, "chunk %" PRIu64 "-%" PRIu64,
                tl->chunks[i].first, tl->chunks[i].last);
        }
    }
    if (ok) {
        return 0;
    }
    tl_say("%s; making the index anew from the chunk files", why.msg);
    tl_chunk_stop(tl);
    tl->published = 0;
    qsort(r->files, r->nfiles, sizeof(*r->files), tl_repair_cmp);
    for (i = 0; i < r->nfiles; i++) {
        if (r->files[i].first != next || r->files[i].last >= tl->size) {
            continue;
        }
        if (tl_check_chunk(tl, &r->files[i], &why) != 0) {
            tl_say("chunk %" PRIu64 "-%" PRIu64 ": %s: left out",
                r->files[i].first, r->files[i].last, why.msg);
            continue;
        }
        r->files[i].level = (unsigned) tl->conf.chunk_levels;
        next = r->files[i].last + 1;
    }
    snprintf(path, sizeof(path), "%s/chunks/index", tl->conf.data_dir);
    if (sk_file_read(&old, &len, path, SIZE_MAX / 2, NULL) == 0) {
        ok = tl_repair_aside(r, tl, "chunks-index", old, len, err) == 0;
        free(old);
        if (!ok) {
            return -1;
        }
    }
    /* The chunks that made it, in order: those with a signature. */
    for (i = 0, len = 0; i < r->nfiles; i++) {
        if (r->files[i].sig != NULL && r->files[i].last < next) {
            r->files[len++] = r->files[i];
        } else {
            free(r->files[i].sig);
        }
    }
    r->nfiles = len;
    if (tl_chunk_save_index(tl, r->files, r->nfiles, NULL, err) != 0) {
        return -1;
    }
    tl_say("%s: %zu chunks, SN 0..%" PRId64, path, r->nfiles,
        (int64_t) next - 1);
    return 0;
}


static void
tl_repair_free(tl_repair_t *r)
{
    uint64_t  i;

    for (i = 0; i < r->nfound; i++) {
        free(r->found[i].text);
    }
    free(r->found);
    for (i = 0; i < r->nspares; i++) {
        free(r->spares[i].text);
    }
    free(r->spares);
    for (i = 0; i < r->nfiles; i++) {
        free(r->files[i].sig);
    }
    free(r->files);
    for (i = 0; i < r->nsrcs; i++) {
        free(r->srcs[i]);
    }
    free(r->srcs);
}


/* Read every source; 0 and *target, the log's size once repaired. */
static int
tl_repair_gather(tl_repair_t *r, tl_timeline_t *tl, char **from,
    size_t nfrom, uint64_t *target, sk_err_t *err)
{
    size_t  i, len;
    char   *tail;
    int     rc;

    /* What still reads after the log's first damage. */
    if (tl->log.size > tl->log.end) {
        len = (size_t) (tl->log.size - tl->log.end);
        tail = malloc(len);
        if (tail == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "repair");
        }
        rc = pread(tl->log.fd, tail, len, tl->log.end) == (ssize_t) len
            ? tl_repair_text(r, tl, tail, len, TL_LOG_FILE, err)
            : sk_err_sys(err, "%s: read", tl->log.path);
        free(tail);
        if (rc != 0) {
            return -1;
        }
    }
    if (tl_repair_scan(r, tl, err) != 0 || tl_repair_saved(r, tl, err) != 0)
    {
        return -1;
    }
    for (i = 0; i < nfrom; i++) {
        if (tl_repair_from(r, tl, from[i], err) != 0) {
            return -1;
        }
    }
    for (*target = tl->size;
         *target < r->nfound && r->found[*target].text != NULL;
         (*target)++)
    {
        /* the longest run on from the log's end */
    }
    if (tl->signed_have && *target < tl->signed_size) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "SN %" PRIu64 " is in no "
            "source, yet %s says entries up to SN %" PRIu64 " were signed: "
            "give a mirror's copy as FROM", *target, TL_SIGNED_FILE,
            tl->signed_size - 1);
    }
    return tl_repair_root(r, tl, *target, err);
}


/* Every step, in an order that a crash between two can be re-run. */
static int
tl_repair_apply(tl_repair_t *r, tl_timeline_t *tl, uint64_t target,
    sk_err_t *err)
{
    sk_merkle_hash_t  root;
    uint64_t          sn, had = tl->size;
    size_t            len;
    char              path[4096], *old;
    int               rc;

    snprintf(path, sizeof(path), "%s/%s", tl->conf.data_dir, TL_SIGNED_FILE);

    if (tl_repair_calog(r, tl, err) != 0 || tl_repair_cut(r, tl, &tl->inc,
            err) != 0 || tl_repair_cut(r, tl, &tl->log, err) != 0)
    {
        return -1;
    }
    for (sn = tl->size; sn < target; sn++) {
        if (tl_repair_copy(r, tl, &r->found[sn], err) != 0
            || tl_store_restore(tl, r->found[sn].text, r->found[sn].len, err)
               != 0)
        {
            return sk_err_prefix(err, "SN %" PRIu64 " (from %s)", sn,
                r->found[sn].src);
        }
    }
    if (fdatasync(tl->log.fd) != 0) {
        return sk_err_sys(err, "%s: sync", tl->log.path);
    }
    tl->logged = tl->durable = tl->size;
    if (target > had) {
        tl_say("%s: SN %" PRIu64 "..%" PRIu64 " restored", tl->log.path,
            had, target - 1);
    }
    if (!tl->signed_have
        && sk_file_read(&old, &len, path, SIZE_MAX / 2, NULL) == 0)
    {
        rc = tl_repair_aside(r, tl, TL_SIGNED_FILE, old, len, err);
        free(old);
        if (rc != 0) {
            return -1;
        }
    }
    if (sk_merkle_tree_root(root, tl->tree, tl->size, err) != 0
        || tl_signed_create(tl, tl->size, root, err) != 0)
    {
        return -1;
    }
    tl_say("%s/%s: tree size %" PRIu64, tl->conf.data_dir,
        TL_SIGNED_FILE, tl->size);
    return tl_repair_index(r, tl, err);
}


int
tl_repair(tl_timeline_t *tl, char **from, size_t nfrom)
{
    tl_repair_t  r;
    uint64_t     target = 0;
    sk_err_t     err;
    int          rc = 1;

    memset(&r, 0, sizeof(r));
    tl->conf.verify_on_start = 1;
    if (tl_open_lock(tl, &err) != 0) {
        fprintf(stderr, "%s: %s\n", TL_PROG, err.msg);
        return EX_TEMPFAIL;
    }
    if (tl_open_key(tl, &err) != 0
        || (tl->conf.operator_key != NULL
            && sk_key_load_public(&tl->operator_key, tl->conf.operator_key,
                   &err) != 0))
    {
        tl_say("%s", err.msg);
        return 1;
    }
    if (tl_signed_open(tl, &err) != 0) {
        tl_say("%s: writing it anew", err.msg);
    }
    if (tl_inc_open(tl, &err) != 0 || tl_calog_open(tl, &err) != 0
        || tl_store_open(tl, &err) != 0
        || tl_repair_gather(&r, tl, from, nfrom, &target, &err) != 0)
    {
        tl_say("%s; nothing changed", err.msg);
    } else if (tl_repair_apply(&r, tl, target, &err) != 0) {
        tl_say("%s; stopped (run it again once that is fixed)",
            err.msg);
    } else {
        tl->db_ready = 1;       /* tl_free writes the rebuilt index */
        tl_say("%s: repaired: %" PRIu64 " entries (%u pieces of the "
            "sources were not entries of this timeline)", tl->conf.data_dir,
            tl->size, r.skipped);
        rc = EX_OK;
    }
    tl_repair_free(&r);
    return rc;
}
