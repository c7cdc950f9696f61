/*
 * mr_store.c -- each mirrored timeline's copy, in data_dir/tl-<tid>/:
 *
 *   entries      the canonical text of SN 0.. back to back (append, fsync)
 *   checkpoint   the newest verified checkpoint note (atomic replace)
 *   tfm          the TFM that closed the newest merged chunk (atomic)
 *   evidence     the contradicting signed statements (docs/protocol.md,
 *                "Renegation tracking"); present once the timeline reneged
 *
 * Entries are appended and synced before the signed head covering them
 * (checkpoint or TFM) is replaced, so at start the log may be longer than
 * both heads (a crash in between): the excess is cut and fetched again.
 * At start every entry is checked again (parse, TID, SN, timeline
 * signature, timestamps) and the Merkle root at each head's size must be
 * the signed one.  The name index lives in memory, rebuilt at start.
 */
#define _GNU_SOURCE             /* memmem */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mr.h"

#define MR_LOG_MAX       ((size_t) 1 << 40)
#define MR_EVIDENCE_MAX  (16 * 1024 * 1024)


int
mr_batch_add(mr_batch_t *b, const char *text, size_t len, const char *name,
    int64_t ts, sk_err_t *err)
{
    size_t    cap = b->cap ? b->cap * 2 : 64;
    size_t   *lens;
    int64_t  *tss;
    char    **names;

    if (b->n == b->cap) {
        lens = realloc(b->lens, cap * sizeof(*lens));
        if (lens != NULL) {
            b->lens = lens;
        }
        tss = realloc(b->ts, cap * sizeof(*tss));
        if (tss != NULL) {
            b->ts = tss;
        }
        names = realloc(b->names, cap * sizeof(*names));
        if (names != NULL) {
            b->names = names;
        }
        if (lens == NULL || tss == NULL || names == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "batch");
        }
        b->cap = cap;
    }
    b->names[b->n] = name != NULL ? strdup(name) : NULL;
    if (name != NULL && b->names[b->n] == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "batch");
    }
    mr_buf_add(&b->text, text, len);
    if (b->text.failed) {
        free(b->names[b->n]);
        return sk_err_set(err, SK_ERR_NOMEM, "batch");
    }
    b->lens[b->n] = len;
    b->ts[b->n++] = ts;
    return 0;
}


const char *
mr_batch_entry(const mr_batch_t *b, size_t i, size_t *len)
{
    size_t  off = 0, j;

    for (j = 0; j < i; j++) {
        off += b->lens[j];
    }
    *len = b->lens[i];
    return b->text.p + off;
}


void
mr_batch_free(mr_batch_t *b)
{
    size_t  i;

    for (i = 0; i < b->n; i++) {
        free(b->names[i]);
    }
    free(b->names);
    free(b->lens);
    free(b->ts);
    free(b->text.p);
    memset(b, 0, sizeof(*b));
}


size_t
mr_entry_len(const char *p, size_t len)
{
    const char  *end;

    if (len > SK_ENTRY_MAX) {
        len = SK_ENTRY_MAX;
    }
    end = memmem(p, len, "\n\n", 2);
    return end != NULL ? (size_t) (end - p) + 2 : 0;
}


int
mr_store_check_entry(sk_entry_t **e, const mr_tl_t *t, const char *buf,
    size_t len, uint64_t sn, int64_t *ts, sk_err_t *err)
{
    uint64_t  tid, esn;

    *e = NULL;
    if (sk_entry_parse(e, buf, len, err) != 0) {
        return -1;
    }
    if (sk_entry_tid(*e, &tid, err) != 0 || sk_entry_sn(*e, &esn, err) != 0
        || sk_entry_timestamp(*e, ts, err) != 0)
    {
        goto fail;
    }
    if (tid != t->conf->tid || esn != sn) {
        sk_err_set(err, SK_ERR_FORMAT, "entry: TID %" PRIu64 " SN %" PRIu64
            ", want TID %" PRIu64 " SN %" PRIu64, tid, esn, t->conf->tid, sn);
        goto fail;
    }
    if (sk_entry_verify(*e, SK_SIG_TIMELINE, t->key, err) != 0) {
        sk_err_prefix(err, "entry SN %" PRIu64 ": timeline signature", sn);
        goto fail;
    }
    return 0;
fail:
    sk_entry_free(*e);
    *e = NULL;
    return -1;
}


int64_t
mr_store_cp_ts(const sk_checkpoint_t *cp)
{
    const char  *p = cp->ext;

    while (p != NULL && *p != '\0') {
        if (strncmp(p, "Timestamp ", 10) == 0) {
            return strtoll(p + 10, NULL, 10);
        }
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return 0;
}


static int
mr_store_path(char *out, size_t cap, const mr_tl_t *t, const char *file)
{
    return snprintf(out, cap, "%s/%s", t->dir, file) < (int) cap ? 0 : -1;
}


/* The stored heads, verified; absent ones leave size 0. */
static int
mr_store_load_heads(mr_tl_t *t, sk_tfm_t *tfm, sk_err_t *err)
{
    char    path[4096], *buf;
    size_t  len;

    memset(tfm, 0, sizeof(*tfm));
    if (mr_store_path(path, sizeof(path), t, "checkpoint") != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: path too long", t->dir);
    }
    if (access(path, F_OK) == 0) {
        if (sk_file_read(&t->cp, &t->cplen, path, SK_CHECKPOINT_MAX, err)
            != 0
            || sk_checkpoint_verify(&t->cpv, t->cp, t->cplen,
                   t->conf->origin, t->key, err) != 0)
        {
            return sk_err_prefix(err, "%s", path);
        }
        t->cp_ts = mr_store_cp_ts(&t->cpv);
    }
    snprintf(path, sizeof(path), "%s/tfm", t->dir);
    if (access(path, F_OK) == 0) {
        if (sk_file_read(&buf, &len, path, SK_TFM_MAX, err) != 0) {
            return sk_err_prefix(err, "%s", path);
        }
        if (sk_tfm_verify(tfm, NULL, buf, len, t->key, err) != 0) {
            free(buf);
            return sk_err_prefix(err, "%s", path);
        }
        free(buf);
        t->tfm_size = tfm->tree_size;
    }
    return 0;
}


static int
mr_store_grow(mr_tl_t *t, uint64_t need)
{
    off_t     *off;
    int64_t   *ts;
    uint64_t   cap = t->cap ? t->cap : 1024;

    while (cap < need + 1) {
        cap *= 2;
    }
    if (cap == t->cap) {
        return 0;
    }
    off = realloc(t->off, cap * sizeof(*off));
    if (off != NULL) {
        t->off = off;
    }
    ts = realloc(t->ts, cap * sizeof(*ts));
    if (ts != NULL) {
        t->ts = ts;
    }
    if (off == NULL || ts == NULL) {
        return -1;
    }
    t->cap = cap;
    return 0;
}


static int
mr_store_check_root(const mr_tl_t *t, uint64_t size,
    const sk_merkle_hash_t want, const char *what, sk_err_t *err)
{
    sk_merkle_hash_t  root;

    if (size == 0) {
        return 0;
    }
    if (sk_merkle_tree_root(root, t->tree, size, err) != 0) {
        return -1;
    }
    if (memcmp(root, want, sizeof(root)) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "entries: the root of %" PRIu64
            " entries is not the stored %s's", size, what);
    }
    return 0;
}


/* Check the entries the heads cover; index them. */
static int
mr_store_replay(mr_mirror_t *m, mr_tl_t *t, const sk_tfm_t *tfm,
    const char *buf, size_t len, sk_err_t *err)
{
    sk_entry_t        *e;
    size_t             pos = 0, used;
    int64_t            ts, last = 0;
    uint64_t           sn, want;
    int                rc;

    want = t->cpv.size > tfm->tree_size ? t->cpv.size : tfm->tree_size;
    if (mr_store_grow(t, want) != 0) {
        return sk_err_set(err, SK_ERR_NOMEM, "entries");
    }
    t->off[0] = 0;
    for (sn = 0; sn < want; sn++) {
        used = mr_entry_len(buf + pos, len - pos);
        if (used == 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "entries: offset %zu, SN %"
                PRIu64 ": no whole entry", pos, sn);
        }
        if (mr_store_check_entry(&e, t, buf + pos, used, sn, &ts, err) != 0)
        {
            return sk_err_prefix(err, "entries: offset %zu", pos);
        }
        if (ts < last) {
            sk_entry_free(e);
            return sk_err_set(err, SK_ERR_FORMAT, "entries: SN %" PRIu64
                ": timestamp before the previous one", sn);
        }
        rc = 0;
        if (sk_entry_name(e) != NULL) {
            rc = mr_names_add(m, sk_entry_name(e), t->index, sn);
        }
        if (rc != 0) {
            sk_entry_free(e);
            return sk_err_set(err, SK_ERR_NOMEM, "name index");
        }
        rc = mr_roots_note(t, e, sn, err);
        sk_entry_free(e);
        if (rc != 0) {
            return sk_err_prefix(err, "entries: SN %" PRIu64, sn);
        }
        last = ts;
        t->ts[sn] = ts;
        pos += used;
        t->off[sn + 1] = (off_t) pos;
    }
    t->size = want;
    /* The tree from the tiles; one that disagrees with the heads is
     * rebuilt from the entries before the entries are blamed. */
    if (mr_tree_open(t, 0, err) != 0) {
        return -1;
    }
    if (mr_store_check_root(t, t->cpv.size, t->cpv.root, "checkpoint", err)
        == 0
        && mr_store_check_root(t, tfm->tree_size, tfm->root, "tfm", err) == 0)
    {
        return 0;
    }
    mr_log("%s: %s; rebuilding %s/tile from the entries to tell whether the "
        "tiles or the entries are damaged", t->dir, err->msg, t->dir);
    if (mr_tree_open(t, 1, err) != 0
        || mr_store_check_root(t, t->cpv.size, t->cpv.root, "checkpoint", err)
           != 0
        || mr_store_check_root(t, tfm->tree_size, tfm->root, "tfm", err) != 0)
    {
        return -1;
    }
    return 0;
}


static int
mr_store_open_log(mr_mirror_t *m, mr_tl_t *t, const sk_tfm_t *tfm,
    sk_err_t *err)
{
    char    path[4096], *buf;
    size_t  len;

    if (mr_store_path(path, sizeof(path), t, "entries") != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: path too long", t->dir);
    }
    t->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (t->fd < 0) {
        return sk_err_sys(err, "%s: open", path);
    }
    if (sk_file_read(&buf, &len, path, MR_LOG_MAX, err) != 0) {
        return -1;
    }
    if (mr_store_replay(m, t, tfm, buf, len, err) != 0) {
        free(buf);
        return sk_err_prefix(err, "%s", path);
    }
    free(buf);
    if ((size_t) t->off[t->size] < len) {
        mr_log("%s: cutting %zu bytes no signed head covers", path,
            len - (size_t) t->off[t->size]);
        if (ftruncate(t->fd, t->off[t->size]) != 0 || fsync(t->fd) != 0) {
            return sk_err_sys(err, "%s: truncate", path);
        }
    }
    return 0;
}


int
mr_store_open(mr_mirror_t *m, mr_tl_t *t, sk_err_t *err)
{
    sk_tfm_t  tfm;
    char      path[4096], *ev, *nl, *p;
    size_t    len;

    t->fd = -1;
    if (sk_key_load_public(&t->key, t->conf->pub_file, err) != 0) {
        return -1;
    }
    if (sk_key_alg(t->key) != SK_KEY_ED25519) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: not an ed25519 key",
            t->conf->pub_file);
    }
    snprintf(path, sizeof(path), "%s/tl-%" PRIu64, m->conf.data_dir,
        t->conf->tid);
    t->dir = strdup(path);
    if (t->dir == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "dir");
    }
    if (mkdir(t->dir, 0755) != 0 && errno != EEXIST) {
        return sk_err_sys(err, "%s: mkdir", t->dir);
    }
    if (mr_store_load_heads(t, &tfm, err) != 0
        || mr_store_open_log(m, t, &tfm, err) != 0)
    {
        return -1;
    }
    t->state = MR_NEW;
    if (mr_store_read_evidence(t, &ev, &len, err) == 0) {
        p = strncmp(ev, "Reason: ", 8) == 0 ? ev + 8 : ev;
        nl = strchr(p, '\n');
        snprintf(t->reason, sizeof(t->reason), "%.*s",
            (int) (nl != NULL ? nl - p : 0), p);
        free(ev);
        t->state = MR_CORRUPT;
    } else if (err != NULL && err->code != SK_ERR_NOT_FOUND) {
        return -1;
    }
    return 0;
}


void
mr_store_close(mr_tl_t *t)
{
    if (t->fd >= 0) {
        close(t->fd);
    }
    sk_merkle_tree_free(t->tree);
    sk_key_free(t->key);
    mr_roots_free(t);
    free(t->off);
    free(t->ts);
    free(t->cp);
    free(t->dir);
}




int
mr_store_commit(mr_mirror_t *m, mr_tl_t *t, const mr_batch_t *b,
    const char *head, size_t headlen, int tfm, sk_err_t *err)
{
    sk_checkpoint_t  cpv;
    sk_tfm_t         tv;
    char             path[4096], *copy = NULL;
    size_t           i;
    uint64_t         sn;
    int              rc = 0;

    /* Parsed again here (it was verified): what is published is exactly
     * what is stored. */
    if (tfm ? sk_tfm_parse(&tv, NULL, head, headlen, err)
            : sk_checkpoint_parse(&cpv, head, headlen, err))
    {
        return -1;
    }
    if (b->n > 0 && (sk_file_write_all(t->fd, b->text.p, b->text.len) != 0
                     || fdatasync(t->fd) != 0))
    {
        return sk_err_sys(err, "%s/entries: write", t->dir);
    }
    if (mr_store_path(path, sizeof(path), t, tfm ? "tfm" : "checkpoint") != 0
        || sk_file_write_atomic(path, head, headlen, 0644, err) != 0)
    {
        return sk_err_prefix(err, "%s", t->dir);
    }
    if (!tfm) {
        copy = malloc(headlen + 1);
        if (copy == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "commit");
        }
        memcpy(copy, head, headlen);
        copy[headlen] = '\0';
    }
    pthread_mutex_lock(&m->lock);
    if (mr_store_grow(t, t->size + b->n) != 0) {
        pthread_mutex_unlock(&m->lock);
        free(copy);
        return sk_err_set(err, SK_ERR_NOMEM, "commit");
    }
    for (i = 0, sn = t->size; i < b->n; i++, sn++) {
        t->off[sn + 1] = t->off[sn] + (off_t) b->lens[i];
        t->ts[sn] = b->ts[i];
        if (b->names[i] != NULL && rc == 0) {
            rc = mr_names_add(m, b->names[i], t->index, sn);
        }
    }
    t->size = sn;
    if (tfm) {
        t->tfm_size = tv.tree_size;
    } else {
        free(t->cp);
        t->cp = copy;
        t->cplen = headlen;
        t->cpv = cpv;
        t->cp_ts = mr_store_cp_ts(&cpv);
    }
    pthread_mutex_unlock(&m->lock);
    return rc == 0 ? 0 : sk_err_set(err, SK_ERR_NOMEM, "name index");
}


int
mr_store_read(mr_mirror_t *m, mr_tl_t *t, char **out, size_t *len,
    uint64_t sn, sk_err_t *err)
{
    off_t    a, b;
    ssize_t  n;

    pthread_mutex_lock(&m->lock);
    if (sn >= t->size) {
        pthread_mutex_unlock(&m->lock);
        return sk_err_set(err, SK_ERR_NOT_FOUND, "entry SN %" PRIu64, sn);
    }
    a = t->off[sn];
    b = t->off[sn + 1];
    pthread_mutex_unlock(&m->lock);
    *len = (size_t) (b - a);
    *out = malloc(*len + 1);
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "entry");
    }
    n = pread(t->fd, *out, *len, a);
    if (n < 0 || (size_t) n != *len) {
        free(*out);
        return sk_err_sys(err, "%s/entries: read SN %" PRIu64, t->dir, sn);
    }
    (*out)[*len] = '\0';
    return 0;
}


int
mr_store_evidence(mr_mirror_t *m, mr_tl_t *t, const char *evidence,
    size_t len, sk_err_t *err)
{
    const char  *p, *nl;
    char         path[4096], reason[SK_ERR_MSG_MAX];
    int          rc;

    p = len > 8 && strncmp(evidence, "Reason: ", 8) == 0 ? evidence + 8
                                                         : evidence;
    nl = memchr(p, '\n', len - (size_t) (p - evidence));
    snprintf(reason, sizeof(reason), "%.*s",
        (int) (nl != NULL ? nl - p : 0), p);
    rc = mr_store_path(path, sizeof(path), t, "evidence");
    if (rc == 0) {
        rc = sk_file_write_new(path, evidence, len, 0644, err);
        if (rc != 0 && err != NULL && err->code == SK_ERR_EXISTS) {
            rc = 0;     /* the first evidence stays */
        }
    }
    pthread_mutex_lock(&m->lock);
    mr_sync_set_state(m, t, MR_CORRUPT, reason);
    pthread_mutex_unlock(&m->lock);
    return rc;
}


int
mr_store_read_evidence(const mr_tl_t *t, char **out, size_t *len,
    sk_err_t *err)
{
    char  path[4096];

    if (mr_store_path(path, sizeof(path), t, "evidence") != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: path too long", t->dir);
    }
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "timeline %" PRIu64
            ": no evidence", t->conf->tid);
    }
    return sk_file_read(out, len, path, MR_EVIDENCE_MAX, err);
}
