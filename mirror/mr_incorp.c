/*
 * mr_incorp.c -- Incorporate entries: a timeline's copy of another
 * timeline's registrant entry (docs/protocol.md, "Operator entries and
 * replays").  sk-timeline takes one only if the copy is the entry the
 * reference names, signed by that peer, a Bind, Rebind, Unbind or
 * Change-Services, later in the peer's log than the last one taken from
 * it, and valid on the incorporating timeline by the names' rules; from
 * then on the copy counts there as if it had been submitted there.
 *
 * The mirror fetches each copy from the timeline (GET /incorporated/<sn>),
 * judges it by the same rules (mr_check_incorporate), and keeps it in
 * tl-<TID>/incorporated so that the names' rules on that timeline see it
 * (mr_check.c reads it back).  Records, in SN order:
 *
 *   Incorporate: <SN> <length>\n<the copy's canonical form>
 *
 * A record is written (fsynced) when its Incorporate is accepted, before
 * the round stores the entries; whole records at or past the stored size
 * (a round that failed, a crash) are cut at start and before the next
 * write.  Only the last record may be torn (a crash while it was written):
 * cut short, it runs to the end of the file and holds no whole copy, and
 * its SN, if its header got out, is not stored yet.  Any other damage (a
 * header that is not two plain numbers, a LENGTH past the end with a whole
 * copy behind it, a copy that does not parse, SNs out of order, a stored
 * Incorporate whose copy is cut short) refuses to start, naming the file,
 * the offset and the field, and changes nothing: cutting there would
 * drop the copies behind it, which the names' rules need.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sk/b64.h>
#include <sk/conf.h>

#include "mr.h"

#define MR_INC_BUCKETS  1024
#define MR_INC_TAG      "Incorporate: "
/* The longest header: the tag, two 20-digit numbers, a blank, a '\n'. */
#define MR_INC_HDR_MAX  (sizeof(MR_INC_TAG) + 2 * 20 + 1)

typedef struct {
    uint64_t   sn;          /* the Incorporate's SN on this timeline */
    uint64_t   src_tid;     /* the copy's TID and SN */
    uint64_t   src_sn;
    off_t      off;         /* the copy's text in the file */
    size_t     len;
    char      *name;
    size_t     next;        /* next record of the same bucket, or SIZE_MAX */
} mr_inc_rec_t;

struct mr_inc_s {
    pthread_mutex_t   lock;
    int               fd;
    char             *path;
    off_t             end;
    int               dirty;    /* bytes past end a failed cut left */
    mr_inc_rec_t     *r;
    size_t            n, cap;
    size_t            head[MR_INC_BUCKETS];     /* newest record first */
};


static size_t
mr_inc_bucket(const char *name)
{
    uint64_t  h = 1469598103934665603ULL;

    while (*name != '\0') {
        h = (h ^ (unsigned char) *name++) * 1099511628211ULL;
    }
    return (size_t) (h % MR_INC_BUCKETS);
}


/* Index one copy (text at off in the file) as Incorporate SN sn. */
static int
mr_inc_index(mr_inc_t *c, uint64_t sn, const char *text, size_t len,
    off_t off, sk_err_t *err)
{
    mr_inc_rec_t  *r;
    sk_entry_t    *e;
    size_t         cap, b;

    if (c->n == c->cap) {
        cap = c->cap != 0 ? c->cap * 2 : 16;
        r = realloc(c->r, cap * sizeof(*r));
        if (r == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "incorporated copies");
        }
        c->r = r;
        c->cap = cap;
    }
    if (sk_entry_parse(&e, text, len, err) != 0) {
        return -1;
    }
    r = &c->r[c->n];
    memset(r, 0, sizeof(*r));
    r->sn = sn;
    r->off = off;
    r->len = len;
    if (sk_entry_tid(e, &r->src_tid, err) != 0
        || sk_entry_sn(e, &r->src_sn, err) != 0)
    {
        sk_entry_free(e);
        return -1;
    }
    if (sk_entry_name(e) == NULL) {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_FORMAT, "a copy without a Name");
    }
    r->name = strdup(sk_entry_name(e));
    sk_entry_free(e);
    if (r->name == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "incorporated copies");
    }
    if (c->n > 0 && c->r[c->n - 1].sn >= sn) {
        free(r->name);
        return sk_err_set(err, SK_ERR_FORMAT, "Incorporate SN %" PRIu64
            " after SN %" PRIu64, sn, c->r[c->n - 1].sn);
    }
    b = mr_inc_bucket(r->name);
    r->next = c->head[b];
    c->head[b] = c->n++;
    return 0;
}


/* Forget records from SN sn on, and cut the file after the last one kept
 * (also whatever a torn write or a failed cut left past c->end). */
static int
mr_inc_cut(mr_inc_t *c, uint64_t sn, sk_err_t *err)
{
    size_t  b;
    off_t   end;

    while (c->n > 0 && c->r[c->n - 1].sn >= sn) {
        c->n--;
        b = mr_inc_bucket(c->r[c->n].name);
        c->head[b] = c->r[c->n].next;       /* it was the bucket's newest */
        free(c->r[c->n].name);
    }
    /* A record's header is before its copy: the end is the copy's. */
    end = c->n > 0 ? c->r[c->n - 1].off + (off_t) c->r[c->n - 1].len : 0;
    if (end == c->end && !c->dirty) {
        return 0;
    }
    if (ftruncate(c->fd, end) != 0 || fsync(c->fd) != 0) {
        c->dirty = 1;
        return sk_err_sys(err, "%s: cut at %lld", c->path, (long long) end);
    }
    c->end = end;
    c->dirty = 0;
    return 0;
}


/* The header line p[0..n) (without its '\n'): "Incorporate: SN LENGTH",
 * each a plain decimal (sk_conf_u64: no sign, no blanks, no overflow),
 * which is all mr_inc_put writes. */
static int
mr_inc_header(const char *p, size_t n, uint64_t *sn, uint64_t *len,
    sk_err_t *err)
{
    char    hdr[MR_INC_HDR_MAX + 1], *num, *sp;
    size_t  tag = sizeof(MR_INC_TAG) - 1;

    if (n < tag || n > MR_INC_HDR_MAX || memcmp(p, MR_INC_TAG, tag) != 0
        || memchr(p, '\0', n) != NULL)
    {
        return sk_err_set(err, SK_ERR_FORMAT,
            "want \"Incorporate: SN LENGTH\"");
    }
    memcpy(hdr, p, n);
    hdr[n] = '\0';
    num = hdr + tag;
    sp = strchr(num, ' ');
    if (sp == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "want \"Incorporate: SN LENGTH\", not \"%s\"", hdr);
    }
    *sp = '\0';
    if (sk_conf_u64(sn, "SN", num, err) != 0
        || sk_conf_u64(len, "LENGTH", sp + 1, err) != 0)
    {
        return -1;
    }
    return 0;
}


/* Whether p[0..n) holds a whole copy: a canonical entry ends in its blank
 * line, and has no other (as tl_file_entry_len tells a torn tail). */
static int
mr_inc_whole(const char *p, size_t n)
{
    size_t  i;

    for (i = 1; i < n; i++) {
        if (p[i] == '\n' && p[i - 1] == '\n') {
            return 1;
        }
    }
    return 0;
}


/* Index the records of buf[0..len) (the file); *torn is where a torn last
 * record starts, or len.  Whole records past the stored size are indexed
 * too: they are checked as the others before mr_inc_cut drops them. */
static int
mr_inc_load(mr_tl_t *t, mr_inc_t *c, const char *buf, size_t len,
    size_t *torn, sk_err_t *err)
{
    const char  *nl;
    uint64_t     sn, n;
    size_t       pos, at, left;

    for (pos = 0; pos < len; pos = at + (size_t) n) {
        nl = memchr(buf + pos, '\n', len - pos);
        if (nl == NULL) {
            if (len - pos > MR_INC_HDR_MAX) {
                return sk_err_set(err, SK_ERR_FORMAT, "%s: offset %zu: want "
                    "\"Incorporate: SN LENGTH\" (%zu bytes without a line "
                    "end)", c->path, pos, len - pos);
            }
            *torn = pos;                    /* a header cut short */
            return 0;
        }
        if (mr_inc_header(buf + pos, (size_t) (nl - (buf + pos)), &sn, &n,
                err) != 0)
        {
            return sk_err_prefix(err, "%s: offset %zu", c->path, pos);
        }
        at = (size_t) (nl + 1 - buf);
        left = len - at;
        if (n >= left && !mr_inc_whole(nl + 1, left)) {
            /* Runs to the end of the file, no whole copy in it: torn,
             * unless its Incorporate is stored, which it is only after
             * this copy was synced whole. */
            if (sn < t->size) {
                return sk_err_set(err, SK_ERR_FORMAT, "%s: offset %zu: "
                    "LENGTH %" PRIu64 ": the copy of SN %" PRIu64 ", an "
                    "Incorporate stored (%" PRIu64 " entries), has only "
                    "%zu bytes", c->path, pos, n, sn, t->size, left);
            }
            *torn = pos;
            return 0;
        }
        if (n > left) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: offset %zu: LENGTH %"
                PRIu64 " runs past the end of the file (%zu bytes left), "
                "and a whole copy follows: not a torn last record",
                c->path, pos, n, left);
        }
        if (mr_inc_index(c, sn, nl + 1, (size_t) n, (off_t) at, err) != 0) {
            return sk_err_prefix(err, "%s: offset %zu: SN %" PRIu64,
                c->path, pos, sn);
        }
    }
    *torn = len;
    return 0;
}


int
mr_inc_open(mr_tl_t *t, sk_err_t *err)
{
    mr_inc_t     *c;
    char         *buf = NULL;
    size_t        len, i, torn = 0, nrec;
    struct stat   st;
    int           rc;

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "incorporated copies");
    }
    for (i = 0; i < MR_INC_BUCKETS; i++) {
        c->head[i] = SIZE_MAX;
    }
    pthread_mutex_init(&c->lock, NULL);
    t->inc = c;
    len = strlen(t->dir) + sizeof("/incorporated");
    if ((c->path = malloc(len)) == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "incorporated copies");
    }
    snprintf(c->path, len, "%s/incorporated", t->dir);
    len = 0;
    c->fd = open(c->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (c->fd < 0 || fstat(c->fd, &st) != 0) {
        return sk_err_sys(err, "%s: open", c->path);
    }
    if (st.st_size > 0
        && sk_file_read(&buf, &len, c->path, (size_t) st.st_size, err) != 0)
    {
        return -1;
    }
    /* All of it is read and checked before anything is cut. */
    rc = mr_inc_load(t, c, buf, len, &torn, err);
    free(buf);
    if (rc != 0) {
        return -1;
    }
    c->end = (off_t) len;
    nrec = c->n;
    if (mr_inc_cut(c, t->size, err) != 0) {
        return -1;
    }
    if (c->end < (off_t) len) {
        mr_log("timeline %" PRIu64 ": %s: cut at offset %lld: %zu whole "
            "record(s) of SN %" PRIu64 " on (not stored)%s", t->conf->tid,
            c->path, (long long) c->end, nrec - c->n, t->size,
            torn < len ? ", a torn last record" : "");
    }
    return 0;
}


void
mr_inc_close(mr_tl_t *t)
{
    mr_inc_t  *c = t->inc;
    size_t     i;

    if (c == NULL) {
        return;
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    for (i = 0; i < c->n; i++) {
        free(c->r[i].name);
    }
    free(c->r);
    free(c->path);
    pthread_mutex_destroy(&c->lock);
    free(c);
    t->inc = NULL;
}


int
mr_inc_put(mr_tl_t *t, uint64_t sn, const char *text, size_t len,
    sk_err_t *err)
{
    mr_inc_t  *c = t->inc;
    char       hdr[64];
    int        hlen, rc = -1;

    hlen = snprintf(hdr, sizeof(hdr), "Incorporate: %" PRIu64 " %zu\n", sn,
        len);
    pthread_mutex_lock(&c->lock);
    if (mr_inc_cut(c, sn, err) != 0) {
        goto done;
    }
    if (pwrite(c->fd, hdr, (size_t) hlen, c->end) != hlen
        || pwrite(c->fd, text, len, c->end + hlen) != (ssize_t) len
        || fdatasync(c->fd) != 0)
    {
        sk_err_sys(err, "%s: write", c->path);
        /* Else a shorter next record would leave bytes of this one behind
         * it, which the next start would take for damage. */
        if (ftruncate(c->fd, c->end) != 0) {
            c->dirty = 1;
            mr_log("%s: cut after a failed write: %s (again before the "
                "next one)", c->path, strerror(errno));
        }
        goto done;
    }
    if (mr_inc_index(c, sn, text, len, c->end + hlen, err) != 0) {
        goto done;
    }
    c->end += hlen + (off_t) len;
    rc = 0;
done:
    pthread_mutex_unlock(&c->lock);
    return rc;
}


int
mr_inc_read(mr_tl_t *t, uint64_t sn, char **out, size_t *len, sk_err_t *err)
{
    mr_inc_t  *c = t->inc;
    size_t     lo = 0, hi, mid;
    off_t      off = -1;
    ssize_t    n;

    pthread_mutex_lock(&c->lock);
    hi = c->n;
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (c->r[mid].sn < sn) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < c->n && c->r[lo].sn == sn) {
        off = c->r[lo].off;
        *len = c->r[lo].len;
    }
    pthread_mutex_unlock(&c->lock);
    if (off < 0) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "%s: no copy for "
            "Incorporate SN %" PRIu64, c->path, sn);
    }
    *out = malloc(*len + 1);
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "incorporated copy");
    }
    n = pread(c->fd, *out, *len, off);
    if (n < 0 || (size_t) n != *len) {
        free(*out);
        return sk_err_sys(err, "%s: read SN %" PRIu64, c->path, sn);
    }
    (*out)[*len] = '\0';
    return 0;
}


size_t
mr_inc_for_name(mr_tl_t *t, const char *name, uint64_t before,
    uint64_t **sns)
{
    mr_inc_t  *c = t->inc;
    size_t     i, n = 0, cnt = 0;

    *sns = NULL;
    pthread_mutex_lock(&c->lock);
    for (i = c->head[mr_inc_bucket(name)]; i != SIZE_MAX; i = c->r[i].next) {
        if (c->r[i].sn < before && strcmp(c->r[i].name, name) == 0) {
            cnt++;
        }
    }
    if (cnt > 0 && (*sns = malloc(cnt * sizeof(**sns))) != NULL) {
        /* The chain is newest first: fill from the back. */
        n = cnt;
        for (i = c->head[mr_inc_bucket(name)]; i != SIZE_MAX;
             i = c->r[i].next)
        {
            if (c->r[i].sn < before && strcmp(c->r[i].name, name) == 0) {
                (*sns)[--n] = c->r[i].sn;
            }
        }
        n = cnt;
    }
    pthread_mutex_unlock(&c->lock);
    return n;
}


int
mr_inc_last_from(mr_tl_t *t, uint64_t src_tid, uint64_t before,
    uint64_t *at, uint64_t *src_sn)
{
    mr_inc_t  *c = t->inc;
    size_t     i;
    int        found = 0;

    pthread_mutex_lock(&c->lock);
    for (i = c->n; i > 0 && !found; i--) {
        if (c->r[i - 1].sn < before && c->r[i - 1].src_tid == src_tid) {
            *at = c->r[i - 1].sn;
            *src_sn = c->r[i - 1].src_sn;
            found = 1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}


mr_tl_t *
mr_inc_source(mr_mirror_t *m, uint64_t tid)
{
    size_t  i;

    for (i = 0; i < m->ntl; i++) {
        if (m->tl[i].conf->tid == tid) {
            return &m->tl[i];
        }
    }
    return NULL;
}
