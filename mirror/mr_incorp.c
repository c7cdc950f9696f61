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
 * the round stores the entries; records at or past the stored size (a
 * round that failed, a crash) are cut at start and before the next write.
 * A torn last record is such a record; any other damage refuses to start.
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

#include "mr.h"

#define MR_INC_BUCKETS  1024

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


/* Forget records from SN sn on (and cut them from the file). */
static int
mr_inc_cut(mr_inc_t *c, uint64_t sn, sk_err_t *err)
{
    size_t  i, b;
    off_t   end;

    if (c->n == 0 || c->r[c->n - 1].sn < sn) {
        return 0;
    }
    while (c->n > 0 && c->r[c->n - 1].sn >= sn) {
        c->n--;
        b = mr_inc_bucket(c->r[c->n].name);
        c->head[b] = c->r[c->n].next;       /* it was the bucket's newest */
        free(c->r[c->n].name);
    }
    /* The cut record's header starts before its copy: find it again. */
    end = 0;
    for (i = 0; i < c->n; i++) {
        end = c->r[i].off + (off_t) c->r[i].len;
    }
    if (ftruncate(c->fd, end) != 0 || fsync(c->fd) != 0) {
        return sk_err_sys(err, "%s: cut at %lld", c->path, (long long) end);
    }
    c->end = end;
    return 0;
}


int
mr_inc_open(mr_tl_t *t, sk_err_t *err)
{
    mr_inc_t            *c;
    char                *buf = NULL, *e, *nl;
    size_t               len = 0, pos = 0, i;
    unsigned long long   sn, n;
    struct stat          st;
    off_t                good = 0;

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
    while (pos < len) {
        nl = memchr(buf + pos, '\n', len - pos);
        if (nl == NULL) {
            break;                          /* torn header */
        }
        if (sscanf(buf + pos, "Incorporate: %llu %llu", &sn, &n) != 2
            || (e = strchr(buf + pos, ' ')) == NULL || e > nl)
        {
            free(buf);
            return sk_err_set(err, SK_ERR_FORMAT, "%s: offset %zu: want "
                "\"Incorporate: SN LENGTH\"", c->path, pos);
        }
        if (n > len - (size_t) (nl + 1 - buf)) {
            break;                          /* torn copy */
        }
        if (sn >= t->size) {
            break;                          /* its Incorporate not stored */
        }
        if (mr_inc_index(c, sn, nl + 1, (size_t) n, nl + 1 - buf, err) != 0)
        {
            free(buf);
            return sk_err_prefix(err, "%s: offset %zu", c->path, pos);
        }
        pos = (size_t) (nl + 1 - buf) + (size_t) n;
        good = (off_t) pos;
    }
    free(buf);
    if (good < st.st_size) {
        mr_log("timeline %" PRIu64 ": %s: %lld bytes past the stored entries"
            " cut", t->conf->tid, c->path, (long long) (st.st_size - good));
        if (ftruncate(c->fd, good) != 0 || fsync(c->fd) != 0) {
            return sk_err_sys(err, "%s: cut", c->path);
        }
    }
    c->end = good;
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
        if (ftruncate(c->fd, c->end) != 0) {
            mr_log("%s: cut after a failed write: %s", c->path,
                strerror(errno));
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
