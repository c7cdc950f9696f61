/*
 * client_cache.c -- the client's local cache, a directory:
 *
 *   DIR/names/<name>        the name's verified view (client_view_text.c),
 *                           re-verified on every read
 *   DIR/mirrors/<hex>       what the client remembers of a mirror (hex:
 *                           first 16 bytes of SHA-256 of its URL):
 *       SK-Client-Mirror: 1\n
 *       URL: <url>\n
 *       [Dropped: <why>\n]
 *       [Reneged-Hash: <8 hex digits>\n]   whose evidence was gone through
 *       Timeline: <tid> <tree size> <checkpoint timestamp>\n ...
 *   DIR/reneged/<tid>       renegation evidence the client verified: that
 *                           timeline is distrusted for good
 *
 * Every write is atomic (temp, fsync, rename, fsync the directory).  A
 * mirror's state is merged with the stored one under a lock on mirrors/,
 * so lookups side by side (threads, processes) never undo a drop.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <sk/client.h>
#include <sk/conf.h>
#include <sk/file.h>

#include "client_int.h"

#define SK_CCACHE_VIEW_MAX    (64 * 1024 * 1024)
#define SK_CCACHE_MIRROR_MAX  (64 * 1024)
#define SK_CCACHE_MAGIC       "SK-Client-Mirror: 1\n"

struct sk_client_cache_s {
    char  *dir;
};


static int
sk_ccache_mkdir(const char *path, sk_err_t *err)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        return sk_err_sys(err, "%s: cannot create", path);
    }
    return 0;
}


int
sk_client_cache_open(sk_client_cache_t **c, const char *dir, sk_err_t *err)
{
    char  path[4096];

    *c = NULL;
    if (strlen(dir) > sizeof(path) - 64) {
        return sk_err_set(err, SK_ERR_USAGE, "cache directory name too "
            "long");
    }
    if (sk_ccache_mkdir(dir, err) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/names", dir);
    if (sk_ccache_mkdir(path, err) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/mirrors", dir);
    if (sk_ccache_mkdir(path, err) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/reneged", dir);
    if (sk_ccache_mkdir(path, err) != 0) {
        return -1;
    }
    *c = calloc(1, sizeof(**c));
    if (*c == NULL || ((*c)->dir = strdup(dir)) == NULL) {
        free(*c);
        *c = NULL;
        return sk_err_set(err, SK_ERR_NOMEM, "cache");
    }
    return 0;
}


void
sk_client_cache_close(sk_client_cache_t *c)
{
    if (c != NULL) {
        free(c->dir);
        free(c);
    }
}


static int
sk_ccache_name_path(char *path, size_t size, const sk_client_cache_t *c,
    const char *name, sk_err_t *err)
{
    if (sk_name_check(name, strlen(name), err) != 0) {
        return -1;
    }
    snprintf(path, size, "%s/names/%s", c->dir, name);
    return 0;
}


int
sk_client_cache_get(sk_client_cache_t *c, sk_client_view_t *v,
    const char *name, const sk_client_trust_t *t, int64_t now,
    sk_err_t *err)
{
    char    path[4096], *buf;
    size_t  len;
    int     rc;

    memset(v, 0, sizeof(*v));
    if (sk_ccache_name_path(path, sizeof(path), c, name, err) != 0) {
        return -1;
    }
    if (sk_file_read(&buf, &len, path, SK_CCACHE_VIEW_MAX, err) != 0) {
        if (err != NULL && err->code == SK_ERR_SYSTEM
            && err->sys_errno == ENOENT)
        {
            err->code = SK_ERR_NOT_FOUND;
        }
        return -1;
    }
    rc = sk_client_view_parse(v, buf, len, err);
    free(buf);
    if (rc == 0 && strcmp(v->name, name) != 0) {
        sk_client_view_free(v);
        rc = sk_err_set(err, SK_ERR_FORMAT, "holds %s", v->name);
    }
    if (rc == 0 && sk_client_view_verify(v, t, now, err) != 0) {
        sk_client_view_free(v);
        rc = -1;
    }
    return rc == 0 ? 0 : sk_err_prefix(err, "%s", path);
}


int
sk_client_cache_put(sk_client_cache_t *c, const sk_client_view_t *v,
    sk_err_t *err)
{
    char    path[4096], *buf;
    size_t  len;
    int     rc;

    if (sk_ccache_name_path(path, sizeof(path), c, v->name, err) != 0
        || sk_client_view_format(&buf, &len, v, err) != 0)
    {
        return -1;
    }
    rc = sk_file_write_atomic(path, buf, len, 0600, err);
    free(buf);
    return rc;
}


static int
sk_ccache_mirror_path(char *path, size_t size, const sk_client_cache_t *c,
    const char *url, sk_err_t *err)
{
    unsigned char  md[32];
    char           hex[33];
    size_t         i;

    if (EVP_Digest(url, strlen(url), md, NULL, EVP_sha256(), NULL) != 1) {
        return sk_err_crypto(err, "sha-256");
    }
    for (i = 0; i < 16; i++) {
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    }
    snprintf(path, size, "%s/mirrors/%s", c->dir, hex);
    return 0;
}


/* One number of a Timeline line at *p (decimal, no sign, no overflow),
 * then a space, or the end for the last; *p past both. */
static int
sk_ccache_num(uint64_t *out, const char *field, const char **p, int last,
    sk_err_t *err)
{
    char    num[24];
    size_t  n = strcspn(*p, " ");

    if (n == 0 || n >= sizeof(num)) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"%s\": illegal value "
            "\"%.*s\" (want a number)", field, (int) (n < 40 ? n : 40), *p);
    }
    memcpy(num, *p, n);
    num[n] = '\0';
    if (sk_conf_u64(out, field, num, err) != 0) {
        return -1;
    }
    *p += n;
    if (last ? **p != '\0' : *(*p)++ != ' ') {
        return sk_err_set(err, SK_ERR_FORMAT, "\"Timeline\": %s after "
            "\"%s\" (want \"Timeline: <tid> <tree size> <timestamp>\")",
            last ? "more" : "nothing", field);
    }
    return 0;
}


static int
sk_ccache_mirror_line(sk_client_mstate_t *st, const char *line,
    unsigned *seen, sk_err_t *err)
{
    const char  *p;
    uint64_t     tid, size, ts;
    size_t       i;

    if (strncmp(line, "Reneged-Hash: ", 14) == 0) {
        if (*seen & 1) {
            return sk_err_set(err, SK_ERR_FORMAT, "second Reneged-Hash line");
        }
        *seen |= 1;
        if (strlen(line + 14) != 8
            || strspn(line + 14, "0123456789abcdef") != 8)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "\"Reneged-Hash\": "
                "illegal value \"%.40s\" (want 8 hex digits)", line + 14);
        }
        memcpy(st->reneged_hash, line + 14, 9);
        return 0;
    }
    if (strncmp(line, "Dropped: ", 9) == 0) {
        if (st->dropped) {
            return sk_err_set(err, SK_ERR_FORMAT, "second Dropped line");
        }
        st->dropped = 1;
        snprintf(st->why, sizeof(st->why), "%s", line + 9);
        return 0;
    }
    if (strncmp(line, "Timeline: ", 10) == 0) {
        /* "Timeline: <tid> <tree size> <checkpoint timestamp>" */
        p = line + 10;
        if (sk_ccache_num(&tid, "Timeline TID", &p, 0, err) != 0
            || sk_ccache_num(&size, "Timeline tree size", &p, 0, err) != 0
            || sk_ccache_num(&ts, "Timeline timestamp", &p, 1, err) != 0)
        {
            return -1;
        }
        if (ts > INT64_MAX) {
            return sk_err_set(err, SK_ERR_FORMAT, "\"Timeline timestamp\": "
                "%" PRIu64 " is too large", ts);
        }
        for (i = 0; i < st->ntl; i++) {
            if (st->tid[i] == tid) {
                return sk_err_set(err, SK_ERR_FORMAT, "second Timeline "
                    "line of TID %" PRIu64, tid);
            }
        }
        if (st->ntl == SK_CLIENT_MAX_TIMELINES) {
            return sk_err_set(err, SK_ERR_FORMAT, "more than %d Timeline "
                "lines", SK_CLIENT_MAX_TIMELINES);
        }
        st->tid[st->ntl] = tid;
        st->size[st->ntl] = size;
        st->ts[st->ntl] = (int64_t) ts;
        st->ntl++;
        return 0;
    }
    return sk_err_set(err, SK_ERR_FORMAT, "unknown line \"%.40s\"", line);
}


int
sk_cl_mstate_parse(sk_client_mstate_t *st, const char *url, char *buf,
    size_t len, sk_err_t *err)
{
    char      *p, *nl;
    size_t     mlen = strlen(SK_CCACHE_MAGIC), lineno = 1;
    unsigned   seen = 0;
    int        rc = 0;

    memset(st, 0, sizeof(*st));
    snprintf(st->url, sizeof(st->url), "%s", url);
    if (len < mlen || memcmp(buf, SK_CCACHE_MAGIC, mlen) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "not a mirror state (no "
            "\"SK-Client-Mirror: 1\" line)");
    }
    if (memchr(buf, '\0', len) != NULL || buf[len - 1] != '\n') {
        return sk_err_set(err, SK_ERR_FORMAT, "not a mirror state (%s)",
            buf[len - 1] != '\n' ? "last line unterminated" : "a NUL byte");
    }
    for (p = buf + mlen; rc == 0 && p < buf + len; p = nl + 1) {
        lineno++;
        nl = strchr(p, '\n');
        *nl = '\0';
        if (strncmp(p, "URL: ", 5) == 0) {
            if (seen & 2) {
                rc = sk_err_set(err, SK_ERR_FORMAT, "second URL line");
            } else if (strcmp(p + 5, url) != 0) {
                rc = sk_err_set(err, SK_ERR_FORMAT, "state of %.64s",
                    p + 5);
            }
            seen |= 2;
        } else {
            rc = sk_ccache_mirror_line(st, p, &seen, err);
        }
    }
    if (rc == 0 && !(seen & 2)) {
        lineno = 0;
        rc = sk_err_set(err, SK_ERR_FORMAT, "no URL line");
    }
    if (rc != 0) {
        sk_client_mstate_free(st);
        snprintf(st->url, sizeof(st->url), "%s", url);
        return lineno > 0 ? sk_err_prefix(err, "line %zu", lineno) : -1;
    }
    return 0;
}


int
sk_client_cache_get_mirror(sk_client_cache_t *c, sk_client_mstate_t *st,
    const char *url, sk_err_t *err)
{
    char    path[4096], *buf;
    size_t  len;
    int     rc;

    memset(st, 0, sizeof(*st));
    snprintf(st->url, sizeof(st->url), "%s", url);
    if (sk_ccache_mirror_path(path, sizeof(path), c, url, err) != 0) {
        return -1;
    }
    if (sk_file_read(&buf, &len, path, SK_CCACHE_MIRROR_MAX, err) != 0) {
        return (err != NULL && err->code == SK_ERR_SYSTEM
                && err->sys_errno == ENOENT) ? 0 : -1;
    }
    rc = sk_cl_mstate_parse(st, url, buf, len, err);
    free(buf);
    return rc != 0 ? sk_err_prefix(err, "%s", path) : 0;
}


/*
 * What another lookup wrote since st was read stays: a drop is for good,
 * and each timeline keeps the freshest checkpoint either saw.  (Lookups
 * run side by side: sk-milter's threads, several `sk verify`.)
 */
static void
sk_ccache_mstate_merge(sk_client_mstate_t *st, const sk_client_mstate_t *old)
{
    size_t  i, j;

    if (old->dropped && !st->dropped) {
        st->dropped = 1;
        memcpy(st->why, old->why, sizeof(st->why));
    }
    if (st->reneged_hash[0] == '\0') {
        memcpy(st->reneged_hash, old->reneged_hash, sizeof(st->reneged_hash));
    }
    for (i = 0; i < old->ntl; i++) {
        for (j = 0; j < st->ntl && st->tid[j] != old->tid[i]; j++) {
        }
        if (j == st->ntl) {
            if (st->ntl == SK_CLIENT_MAX_TIMELINES) {
                continue;
            }
            st->tid[st->ntl++] = old->tid[i];
        } else if (st->ts[j] > old->ts[i]
                   || (st->ts[j] == old->ts[i] && st->size[j] >= old->size[i]))
        {
            continue;
        }
        st->size[j] = old->size[i];
        st->ts[j] = old->ts[i];
    }
}


int
sk_client_cache_put_mirror(sk_client_cache_t *c,
    const sk_client_mstate_t *in, sk_err_t *err)
{
    char                 path[4096], buf[SK_CCACHE_MIRROR_MAX];
    char                 why[SK_ERR_MSG_MAX];
    sk_client_mstate_t   merged, old, *st = &merged;
    size_t               len, i;
    char                *p;
    int                  dfd, rc;

    if (sk_ccache_mirror_path(path, sizeof(path), c, in->url, err) != 0) {
        return -1;
    }
    /* Read, merge and replace under the directory's lock. */
    p = strrchr(path, '/');
    *p = '\0';
    dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || flock(dfd, LOCK_EX) != 0) {
        rc = sk_err_sys(err, "%s: cannot lock", path);
        if (dfd >= 0) {
            close(dfd);
        }
        return rc;
    }
    *p = '/';
    merged = *in;
    if (sk_client_cache_get_mirror(c, &old, in->url, NULL) == 0) {
        sk_ccache_mstate_merge(&merged, &old);
    }
    len = (size_t) snprintf(buf, sizeof(buf), "%sURL: %s\n",
        SK_CCACHE_MAGIC, st->url);
    if (st->dropped) {
        snprintf(why, sizeof(why), "%s", st->why);
        for (p = why; *p != '\0'; p++) {
            if (*p == '\n' || *p == '\r') {
                *p = ' ';
            }
        }
        len += (size_t) snprintf(buf + len, sizeof(buf) - len,
            "Dropped: %s\n", why);
    }
    if (st->reneged_hash[0] != '\0') {
        len += (size_t) snprintf(buf + len, sizeof(buf) - len,
            "Reneged-Hash: %.8s\n", st->reneged_hash);
    }
    for (i = 0; i < st->ntl && len < sizeof(buf); i++) {
        len += (size_t) snprintf(buf + len, sizeof(buf) - len,
            "Timeline: %" PRIu64 " %" PRIu64 " %" PRId64 "\n", st->tid[i],
            st->size[i], st->ts[i]);
    }
    rc = len >= sizeof(buf)
        ? sk_err_set(err, SK_ERR_USAGE, "mirror state too large")
        : sk_file_write_atomic(path, buf, len, 0600, err);
    close(dfd);                 /* and its lock */
    return rc;
}


void
sk_client_mstate_free(sk_client_mstate_t *st)
{
    if (st != NULL) {
        memset(st, 0, sizeof(*st));
    }
}


int
sk_client_cache_put_reneged(sk_client_cache_t *c, uint64_t tid,
    const char *evidence, size_t len, sk_err_t *err)
{
    char  path[4096];

    snprintf(path, sizeof(path), "%s/reneged/%" PRIu64, c->dir, tid);
    return sk_file_write_atomic(path, evidence, len, 0600, err);
}


int
sk_client_cache_reneged(sk_client_cache_t *c, sk_client_trust_t *t,
    size_t *n, sk_err_t *err)
{
    char      path[4096], *buf;
    uint64_t  tid;
    size_t    i, len;
    sk_err_t  e;
    int       rc = 0;

    *n = 0;
    for (i = 0; i < t->ntl; ) {
        tid = t->tl[i].tid;
        snprintf(path, sizeof(path), "%s/reneged/%" PRIu64, c->dir, tid);
        if (sk_file_read(&buf, &len, path, SK_CCACHE_VIEW_MAX, &e) != 0) {
            if (e.code == SK_ERR_SYSTEM && e.sys_errno == ENOENT) {
                i++;
                continue;
            }
            *err = e;
            return sk_err_prefix(err, "%s", path);
        }
        /* Checked again: a damaged file is said, and still held against
         * the timeline (it was verified when written). */
        if (sk_client_evidence_verify(t, tid, buf, len, &e) != 0 && rc == 0)
        {
            *err = e;
            rc = sk_err_prefix(err, "%s", path);
        }
        free(buf);
        sk_client_trust_distrust(t, tid);
        (*n)++;
    }
    return rc;
}
