/*
 * mr_store.c -- each mirrored timeline's copy, in data_dir/tl-<tid>/:
 *
 *   entries      the canonical text of SN 0.. back to back (append, fsync)
 *   checkpoint   the newest verified checkpoint note (atomic replace)
 *   tfm          the TFM that closed the newest merged chunk (atomic)
 *   prefix       a checkpoint and a consistency proof to it from the
 *                size a sync through tiles has committed (mr_prefix.c)
 *   evidence     the contradicting signed statements (docs/protocol.md,
 *                "Renegation tracking"); present once the timeline reneged
 *
 * Entries are appended and synced before the signed head covering them
 * (checkpoint, TFM or prefix) is replaced, and indexed (mr_index.c) after it, so
 * at start the log may be longer than the heads (a crash in between):
 * the excess is cut and fetched again; and the index may be behind the
 * heads: the entries past it are read, checked (parse, TID, SN, timeline
 * signature, timestamps) and indexed.  Entries indexed already are not
 * read again.  The Merkle root at each head's size must be the signed
 * one.
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
    int64_t ts, unsigned flags, const unsigned char leaf[SK_SHA256_BYTES],
    sk_err_t *err)
{
    size_t    cap = b->cap ? b->cap * 2 : 64;
    size_t   *lens;
    int64_t  *tss;
    char    **names;
    unsigned *fl;
    unsigned char (*lf)[SK_SHA256_BYTES];

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
        fl = realloc(b->flags, cap * sizeof(*fl));
        if (fl != NULL) {
            b->flags = fl;
        }
        lf = realloc(b->leaf, cap * sizeof(*lf));
        if (lf != NULL) {
            b->leaf = lf;
        }
        if (lens == NULL || tss == NULL || names == NULL || fl == NULL
            || lf == NULL)
        {
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
    b->flags[b->n] = flags;
    memcpy(b->leaf[b->n], leaf, SK_SHA256_BYTES);
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
    free(b->flags);
    free(b->leaf);
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


static int
mr_store_path(char *out, size_t cap, const mr_tl_t *t, const char *file)
{
    return snprintf(out, cap, "%s/%s", t->dir, file) < (int) cap ? 0 : -1;
}


/* The stored heads, verified; absent ones leave size 0. */
static int
mr_store_load_heads(mr_tl_t *t, sk_tfm_t *tfm, mr_prefix_t *pf,
    sk_err_t *err)
{
    char    path[4096], *buf;
    size_t  len;
    int     rc;

    memset(tfm, 0, sizeof(*tfm));
    memset(pf, 0, sizeof(*pf));
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
        t->cp_ts = sk_checkpoint_timestamp(&t->cpv);
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
    snprintf(path, sizeof(path), "%s/prefix", t->dir);
    if (access(path, F_OK) == 0) {
        if (sk_file_read(&buf, &len, path, 2 * SK_CHECKPOINT_MAX, err) != 0) {
            return sk_err_prefix(err, "%s", path);
        }
        rc = mr_prefix_parse(pf, t, buf, len, err);
        free(buf);
        if (rc != 0) {
            return sk_err_prefix(err, "%s", path);
        }
        t->prefix_size = pf->size;
    }
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


/* The tree against every stored head. */
static int
mr_store_check_heads(const mr_tl_t *t, const sk_tfm_t *tfm,
    const mr_prefix_t *pf, sk_err_t *err)
{
    sk_merkle_hash_t  root;

    if (mr_store_check_root(t, t->cpv.size, t->cpv.root, "checkpoint", err)
        != 0
        || mr_store_check_root(t, tfm->tree_size, tfm->root, "tfm", err) != 0)
    {
        return -1;
    }
    if (pf->size == 0) {
        return 0;
    }
    if (sk_merkle_tree_root(root, t->tree, pf->size, err) != 0) {
        return -1;
    }
    if (mr_prefix_check(pf, root, err) != 0) {
        err->code = SK_ERR_FORMAT;
        return sk_err_prefix(err, "%s/prefix", t->dir);
    }
    return 0;
}


/* Index the rows gathered so far (the tree holds their leaves). */
static int
mr_store_flush(mr_mirror_t *m, mr_tl_t *t, mr_ixrow_t *rows, char **names,
    size_t *n, sk_err_t *err)
{
    sk_merkle_hash_t  root;
    size_t            i;
    int               rc;

    if (*n == 0) {
        return 0;
    }
    rc = sk_merkle_tree_root(root, t->tree, t->size + *n, err);
    if (rc == 0) {
        rc = mr_index_add(m, t, NULL, t->size, rows, *n, root, err);
    }
    if (rc == 0) {
        t->size += *n;
        t->end = (off_t) (rows[*n - 1].loc.off + rows[*n - 1].loc.len);
        t->last_ts = rows[*n - 1].loc.ts;
    }
    for (i = 0; i < *n; i++) {
        free(names[i]);
    }
    *n = 0;
    return rc;
}


#define MR_STORE_BATCH  4096

/* Check the entries the heads cover past the index (buf: the copy from
 * t->end on); index them, MR_STORE_BATCH to a transaction. */
static int
mr_store_replay(mr_mirror_t *m, mr_tl_t *t, const sk_tfm_t *tfm,
    const mr_prefix_t *pf, const char *buf, size_t len, sk_err_t *err)
{
    mr_ixrow_t        *rows;
    char             **names;
    sk_entry_t        *e;
    size_t             pos = 0, used, n = 0;
    int64_t            ts;
    uint64_t           sn, want;
    int                rc = 0;

    want = t->cpv.size > tfm->tree_size ? t->cpv.size : tfm->tree_size;
    want = pf->size > want ? pf->size : want;
    if (want < t->size) {
        m->ix_damaged = 1;
        return sk_err_set(err, SK_ERR_FORMAT, "index: %" PRIu64 " entries "
            "indexed, the signed heads cover %" PRIu64, t->size, want);
    }
    rows = calloc(MR_STORE_BATCH, sizeof(*rows));
    names = calloc(MR_STORE_BATCH, sizeof(*names));
    if (rows == NULL || names == NULL) {
        free(rows);
        free(names);
        return sk_err_set(err, SK_ERR_NOMEM, "entries");
    }
    for (sn = t->size; sn < want && rc == 0; sn++) {
        mr_ixrow_t  *r = &rows[n];

        used = mr_entry_len(buf + pos, len - pos);
        if (used == 0) {
            rc = sk_err_set(err, SK_ERR_FORMAT, "entries: offset %jd, SN %"
                PRIu64 ": no whole entry", (intmax_t) t->end + (intmax_t) pos,
                sn);
            break;
        }
        if (mr_store_check_entry(&e, t, buf + pos, used, sn, &ts, err) != 0)
        {
            rc = sk_err_prefix(err, "entries: offset %jd",
                (intmax_t) t->end + (intmax_t) pos);
            break;
        }
        if (ts < (n > 0 ? rows[n - 1].loc.ts : t->last_ts)) {
            sk_entry_free(e);
            rc = sk_err_set(err, SK_ERR_FORMAT, "entries: SN %" PRIu64
                ": timestamp before the previous one", sn);
            break;
        }
        memset(r, 0, sizeof(*r));
        if (sk_entry_name(e) != NULL) {
            names[n] = strdup(sk_entry_name(e));
            if (names[n] == NULL) {
                sk_entry_free(e);
                rc = sk_err_set(err, SK_ERR_NOMEM, "entries");
                break;
            }
        }
        r->name = names[n];
        r->loc.flags = sk_entry_type(e) == SK_ENTRY_ADD_ROOT_CA
            || sk_entry_type(e) == SK_ENTRY_REMOVE_ROOT_CA ? MR_IX_ROOT : 0;
        rc = mr_roots_note(t, e, sn, err);
        sk_entry_free(e);
        if (rc != 0) {
            sk_err_prefix(err, "entries: SN %" PRIu64, sn);
            n++;
            break;
        }
        if (sk_merkle_leaf_hash(r->loc.leaf, buf + pos, used, err) != 0
            || sk_merkle_tree_append(t->tree, r->loc.leaf, err) != 0)
        {
            rc = -1;
            n++;
            break;
        }
        r->loc.off = (uint64_t) t->end + pos;
        r->loc.len = (uint32_t) used;
        r->loc.ts = ts;
        pos += used;
        if (++n == MR_STORE_BATCH) {
            rc = mr_store_flush(m, t, rows, names, &n, err);
        }
    }
    if (rc == 0) {
        rc = mr_store_flush(m, t, rows, names, &n, err);
    }
    while (n > 0) {
        free(names[--n]);
    }
    free(rows);
    free(names);
    return rc != 0 ? -1 : 0;
}


/* The tree against the heads; one that disagrees is rebuilt from the
 * entries before the entries are blamed. */
static int
mr_store_heads_or_rebuild(mr_tl_t *t, const sk_tfm_t *tfm,
    const mr_prefix_t *pf, sk_err_t *err)
{
    if (mr_store_check_heads(t, tfm, pf, err) == 0) {
        return 0;
    }
    mr_log("%s: %s; rebuilding %s/tile from the entries to tell whether the "
        "tiles or the entries are damaged", t->dir, err->msg, t->dir);
    if (mr_tree_open(t, 1, err) != 0
        || mr_store_check_heads(t, tfm, pf, err) != 0)
    {
        return -1;
    }
    return 0;
}


/* What is past the index, read from the copy (not the indexed part). */
static int
mr_store_read_tail(mr_tl_t *t, const char *path, uint64_t fsize, char **buf,
    size_t *len, sk_err_t *err)
{
    if (fsize - (uint64_t) t->end > MR_LOG_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: too large", path);
    }
    *len = (size_t) (fsize - (uint64_t) t->end);
    *buf = malloc(*len + 1);
    if (*buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s", path);
    }
    if (sk_file_pread_all(t->fd, *buf, *len, t->end) != 0) {
        free(*buf);
        return errno != 0 ? sk_err_sys(err, "%s: read", path)
                          : sk_err_set(err, SK_ERR_FORMAT, "%s: shrank while "
                                "read", path);
    }
    (*buf)[*len] = '\0';
    return 0;
}


/* The tree over the indexed entries, from the tiles: its root must be the
 * index's; if not, the tiles are rebuilt from the index's leaves, and if
 * it still is not, the index is what is damaged. */
static int
mr_store_open_tree(mr_mirror_t *m, mr_tl_t *t, sk_err_t *err)
{
    sk_merkle_hash_t  root;
    int               rebuild;

    for (rebuild = 0; rebuild < 2; rebuild++) {
        if (mr_tree_open(t, rebuild, err) != 0) {
            return -1;
        }
        if (t->size == 0) {
            return 0;
        }
        if (sk_merkle_tree_root(root, t->tree, t->size, err) != 0) {
            return -1;
        }
        if (memcmp(root, t->ix_root, sizeof(root)) == 0) {
            return 0;
        }
        if (!rebuild) {
            mr_log("%s/tile: the root of %" PRIu64 " entries is not the "
                "index's; rebuilding the tiles from the index", t->dir,
                t->size);
        }
    }
    m->ix_damaged = 1;
    return sk_err_set(err, SK_ERR_FORMAT, "index %s/index, timeline %" PRIu64
        ": its leaves do not give its root", m->conf.data_dir, t->conf->tid);
}


/* The newest indexed entry must be in the copy as indexed (a copy
 * restored from an older backup, or replaced, is not); each entry read
 * later is checked against its leaf the same way. */
static int
mr_store_check_newest(mr_mirror_t *m, mr_tl_t *t, sk_err_t *err)
{
    mr_loc_t   loc;
    char      *text;

    if (t->size == 0) {
        return 0;
    }
    if (mr_index_entry(m, t, t->size - 1, &loc, err) != 0) {
        return -1;
    }
    if (mr_copy_pread(t, t->size - 1, &loc, &text, err) != 0) {
        return err->code == SK_ERR_SIGNATURE
            ? mr_state_damaged(m, err, "timeline %" PRIu64 ": it does not fit "
                  "the copy", t->conf->tid) : -1;
    }
    free(text);
    return 0;
}


static int
mr_store_open_log(mr_mirror_t *m, mr_tl_t *t, const sk_tfm_t *tfm,
    const mr_prefix_t *pf, sk_err_t *err)
{
    struct stat  st;
    char         path[4096], *buf = NULL;
    size_t       len = 0;
    uint64_t     loaded;

    if (mr_store_path(path, sizeof(path), t, "entries") != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: path too long", t->dir);
    }
    t->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (t->fd < 0) {
        return sk_err_sys(err, "%s: open", path);
    }
    if (fstat(t->fd, &st) != 0) {
        return sk_err_sys(err, "%s: fstat", path);
    }
    /* The tree from the tiles over what the index holds (leaves past the
     * last full tile read back through it); the replay appends the rest. */
    if (mr_index_load(m, t, (uint64_t) st.st_size, err) != 0
        || mr_store_check_newest(m, t, err) != 0
        || mr_store_open_tree(m, t, err) != 0)
    {
        return -1;
    }
    if (mr_store_read_tail(t, path, (uint64_t) st.st_size, &buf, &len, err)
        != 0)
    {
        return -1;
    }
    loaded = t->size;
    if (mr_store_replay(m, t, tfm, pf, buf, len, err) != 0
        || mr_store_heads_or_rebuild(t, tfm, pf, err) != 0)
    {
        free(buf);
        /* With entries from the index, the index may be what does not
         * fit: rebuilt, the copy is checked whole and says. */
        if (loaded > 0 && err->code == SK_ERR_FORMAT) {
            m->ix_damaged = 1;
        }
        return sk_err_prefix(err, "%s", path);
    }
    free(buf);
    if (t->end < st.st_size) {
        mr_log("%s: cutting %jd bytes no signed head covers", path,
            (intmax_t) (st.st_size - t->end));
        if (ftruncate(t->fd, t->end) != 0 || fsync(t->fd) != 0) {
            return sk_err_sys(err, "%s: truncate", path);
        }
    }
    return 0;
}


/* t's key, directory and signed heads. */
static int
mr_store_begin(mr_mirror_t *m, mr_tl_t *t, int create, sk_tfm_t *tfm,
    mr_prefix_t *pf, sk_err_t *err)
{
    char  path[4096];

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
    if (create && mkdir(t->dir, 0755) != 0 && errno != EEXIST) {
        return sk_err_sys(err, "%s: mkdir", t->dir);
    }
    return mr_store_load_heads(t, tfm, pf, err);
}


int
mr_store_scratch(mr_mirror_t *m, mr_tl_t *t, sk_err_t *err)
{
    struct stat  st;
    sk_tfm_t     tfm;
    mr_prefix_t  pf;
    char         path[4096], *buf;
    size_t       len;
    int          rc;

    if (mr_store_begin(m, t, 0, &tfm, &pf, err) != 0) {
        return -1;
    }
    if (mr_store_path(path, sizeof(path), t, "entries") != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: path too long", t->dir);
    }
    t->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (t->fd < 0 || fstat(t->fd, &st) != 0) {
        return sk_err_sys(err, "%s: open", path);
    }
    if (sk_merkle_tree_new(&t->tree, err) != 0
        || mr_store_read_tail(t, path, (uint64_t) st.st_size, &buf, &len,
               err) != 0)
    {
        return -1;
    }
    rc = mr_store_replay(m, t, &tfm, &pf, buf, len, err);
    free(buf);
    if (rc != 0 || mr_store_check_heads(t, &tfm, &pf, err) != 0) {
        return sk_err_prefix(err, "%s", path);
    }
    return 0;
}


int
mr_store_open(mr_mirror_t *m, mr_tl_t *t, sk_err_t *err)
{
    sk_tfm_t     tfm;
    mr_prefix_t  pf;
    char        *ev, *nl, *p;
    size_t       len;

    if (mr_store_begin(m, t, 1, &tfm, &pf, err) != 0
        || mr_store_open_log(m, t, &tfm, &pf, err) != 0)
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
    const mr_tlconf_t  *conf = t->conf;
    mr_mirror_t        *m = t->mirror;
    uint32_t            index = t->index;

    if (t->fd >= 0) {
        close(t->fd);
    }
    sk_merkle_tree_free(t->tree);
    sk_key_free(t->key);
    mr_roots_free(t);
    mr_map_unpublish(t);
    free(t->cp);
    free(t->dir);
    /* As before mr_store_open, which may be called again. */
    memset(t, 0, sizeof(*t));
    t->conf = conf;
    t->mirror = m;
    t->index = index;
    t->fd = -1;
}




/* Append the batch at t->end, synced (sk_file_append: a failed append is
 * cut back); what a failed earlier commit left past t->end (its append
 * went through, its head or index did not) is cut first. */
static int
mr_store_append(mr_tl_t *t, const mr_batch_t *b, sk_err_t *err)
{
    struct stat  st;
    off_t        end;
    int          cut = 0;

    if (fstat(t->fd, &st) != 0) {
        return sk_err_sys(err, "%s/entries: fstat", t->dir);
    }
    if (st.st_size < t->end) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s/entries: %jd bytes, %jd "
            "stored: the copy shrank", t->dir, (intmax_t) st.st_size,
            (intmax_t) t->end);
    }
    if (st.st_size > t->end) {
        mr_log("%s/entries: cutting %jd bytes a failed commit left",
            t->dir, (intmax_t) (st.st_size - t->end));
        if (ftruncate(t->fd, t->end) != 0) {
            return sk_err_sys(err, "%s/entries: truncate", t->dir);
        }
    }
    end = t->end;           /* moved when published (mr_store_commit) */
    if (sk_file_append(t->fd, &end, &cut, b->text.p, b->text.len, 1) != 0) {
        sk_err_sys(err, "%s/entries: write and sync", t->dir);
        if (cut) {
            mr_log("%s/entries: cannot cut a failed write back (%s); cut "
                "before the next one", t->dir, strerror(errno));
        }
        return -1;
    }
    return 0;
}


int
mr_store_text(mr_mirror_t *m, mr_tl_t *t, const mr_batch_t *b, uint64_t sn,
    char **out, size_t *len, sk_err_t *err)
{
    const char  *p;

    if (sn < t->size) {
        return mr_store_read(m, t, out, len, sn, err);
    }
    p = mr_batch_entry(b, (size_t) (sn - t->size), len);
    *out = malloc(*len + 1);
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "entry");
    }
    memcpy(*out, p, *len);
    (*out)[*len] = '\0';
    return 0;
}


/* t's map fed up to upto (a checkpoint's size) in *txn, begun here and
 * left open; a Map-Root entry that does not name the map sets
 * t->map_bad (SK_ERR_SIGNATURE). */
static int
mr_store_map(mr_mirror_t *m, mr_tl_t *t, const mr_batch_t *b, uint64_t upto,
    sk_db_txn_t **txn, sk_err_t *err)
{
    uint64_t   sn, from;
    size_t     len;
    char      *text;
    int        rc;

    t->map_bad = 0;
    if (sk_db_begin(m->db, 1, txn, err) != 0) {
        return -1;
    }
    rc = mr_map_size(m, t, *txn, &from, err);
    for (sn = from; sn < upto && rc == 0; sn++) {
        rc = mr_store_text(m, t, b, sn, &text, &len, err);
        if (rc == 0) {
            rc = mr_map_feed(m, t, *txn, sn, text, len, err);
            free(text);
        }
        if (rc == 1) {
            t->map_bad = sn + 1;
        }
    }
    if (rc == 0 && upto > from) {
        rc = mr_map_mark(m, t, *txn, upto, err);
    }
    if (rc != 0) {
        sk_db_abort(*txn);
        *txn = NULL;
        return -1;
    }
    return 0;
}


#define MR_STORE_MAP_STEP  65536

/* t's map fed the stored entries from..upto-1, a transaction every
 * MR_STORE_MAP_STEP entries (one would outgrow LMDB's dirty pages); say:
 * a line first, and one a step. */
static int
mr_store_map_steps(mr_mirror_t *m, mr_tl_t *t, uint64_t from, uint64_t upto,
    int say, sk_err_t *err)
{
    static const mr_batch_t  none;
    sk_db_txn_t             *txn;
    uint64_t                 to;

    if (say && from < upto) {
        mr_log("timeline %" PRIu64 ": map: feeding entries %" PRIu64 " to %"
            PRIu64 " from the copy", t->conf->tid, from, upto - 1);
    }
    while (from < upto) {
        to = upto - from > MR_STORE_MAP_STEP ? from + MR_STORE_MAP_STEP
                                             : upto;
        if (mr_store_map(m, t, &none, to, &txn, err) != 0
            || sk_db_commit(txn, err) != 0)
        {
            return sk_err_prefix(err, "map");
        }
        from = to;
        if (say && from < upto) {
            mr_log("timeline %" PRIu64 ": map: %" PRIu64 " of %" PRIu64
                " entries", t->conf->tid, from, upto);
        }
    }
    return 0;
}


/* Before a checkpoint of size upto is stored: the map fed the entries
 * already stored below it (a sync through tiles stores millions under
 * prefixes), in steps; the batch's go in the commit's transaction. */
static int
mr_store_map_stored(mr_mirror_t *m, mr_tl_t *t, uint64_t upto,
    sk_err_t *err)
{
    sk_db_txn_t  *txn;
    uint64_t      from;
    int           rc;

    t->map_bad = 0;
    if (sk_db_begin(m->db, 0, &txn, err) != 0) {
        return -1;
    }
    rc = mr_map_size(m, t, txn, &from, err);
    sk_db_abort(txn);
    if (rc != 0) {
        return -1;
    }
    upto = upto < t->size ? upto : t->size;
    return mr_store_map_steps(m, t, from, upto,
        upto > from && upto - from > MR_STORE_MAP_STEP, err);
}


/* At start: t's map fed up to the stored checkpoint from the copy (a
 * mirror from before maps builds them here, with progress lines; a map
 * past the checkpoint is damage: built anew), then published. */
int
mr_store_map_open(mr_mirror_t *m, mr_tl_t *t, sk_err_t *err)
{
    static const mr_batch_t  none;
    sk_db_txn_t             *txn;
    uint64_t                 from;
    size_t                   len;
    char                    *last;
    int                      rc;

    if (t->cp == NULL || t->cpv.size == 0 || t->state == MR_CORRUPT) {
        return 0;
    }
    if (sk_db_begin(m->db, 1, &txn, err) != 0) {
        return -1;
    }
    rc = mr_map_size(m, t, txn, &from, err);
    if (rc == 0 && from > t->cpv.size) {
        mr_log("timeline %" PRIu64 ": its map covers %" PRIu64 " entries, "
            "the checkpoint %" PRIu64 ": building it anew", t->conf->tid,
            from, t->cpv.size);
        rc = mr_map_clear(m, t, txn, err);
        from = 0;
    }
    if (rc != 0 || sk_db_commit(txn, err) != 0) {
        if (rc != 0) {
            sk_db_abort(txn);
        }
        return -1;
    }
    if (mr_store_map_steps(m, t, from, t->cpv.size, 1, err) != 0) {
        /* a row of the map that does not read: built anew */
        if (err->code == SK_ERR_FORMAT) {
            m->ix_damaged = 1;
        }
        return -1;
    }
    if (mr_store_text(m, t, &none, t->cpv.size - 1, &last, &len, err) != 0) {
        return -1;
    }
    mr_lock(m);
    rc = mr_map_publish(m, t, last, len, err);
    mr_unlock(m);
    return rc;
}


/* The index rows of b, in txn. */
static int
mr_store_index(mr_mirror_t *m, mr_tl_t *t, const mr_batch_t *b,
    sk_db_txn_t *txn, sk_err_t *err)
{
    sk_merkle_hash_t  root;
    mr_ixrow_t       *rows;
    size_t            i;
    uint64_t          off;
    int               rc;

    rows = calloc(b->n, sizeof(*rows));
    if (rows == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "commit");
    }
    for (i = 0, off = (uint64_t) t->end; i < b->n; i++) {
        rows[i].name = b->names[i];
        rows[i].loc.off = off;
        rows[i].loc.len = (uint32_t) b->lens[i];
        rows[i].loc.ts = b->ts[i];
        rows[i].loc.flags = b->flags[i];
        memcpy(rows[i].loc.leaf, b->leaf[i], SK_SHA256_BYTES);
        off += b->lens[i];
    }
    mr_lock(m);
    rc = sk_merkle_tree_root(root, t->tree, t->size + b->n, err);
    mr_unlock(m);
    if (rc == 0) {
        rc = mr_index_add(m, t, txn, t->size, rows, b->n, root, err);
    }
    free(rows);
    return rc;
}


int
mr_store_commit(mr_mirror_t *m, mr_tl_t *t, const mr_batch_t *b,
    const char *head, size_t headlen, mr_headkind_t kind, sk_err_t *err)
{
    static const char *const  files[] = {
        [MR_HEAD_CHECKPOINT] = "checkpoint", [MR_HEAD_TFM] = "tfm",
        [MR_HEAD_PREFIX] = "prefix"
    };
    sk_checkpoint_t   cpv;
    mr_prefix_t       pf;
    sk_db_txn_t      *txn = NULL;
    sk_tfm_t          tv;
    sk_err_t          why;
    char              path[4096], *copy = NULL, *last = NULL;
    size_t            i, lastlen = 0;
    int               rc;

    t->map_bad = 0;
    /* Parsed again here (it was verified): what is published is exactly
     * what is stored. */
    rc = kind == MR_HEAD_TFM ? sk_tfm_parse(&tv, NULL, head, headlen, err)
        : kind == MR_HEAD_PREFIX ? mr_prefix_parse(&pf, t, head, headlen, err)
        : sk_checkpoint_parse(&cpv, head, headlen, err);
    if (rc != 0) {
        return -1;
    }
    /* The map moves with checkpoints only, before anything is written:
     * a Map-Root entry that does not name it stores nothing. */
    if (kind == MR_HEAD_CHECKPOINT
        && (mr_store_map_stored(m, t, cpv.size, err) != 0
            || mr_store_map(m, t, b, cpv.size, &txn, err) != 0
            || (cpv.size > 0 && mr_store_text(m, t, b, cpv.size - 1, &last,
                                    &lastlen, err) != 0)))
    {
        goto fail;
    }
    if (b->n > 0 && mr_store_append(t, b, err) != 0) {
        goto fail;
    }
    if (mr_store_path(path, sizeof(path), t, files[kind]) != 0
        || sk_file_write_atomic(path, head, headlen, 0644, err) != 0)
    {
        sk_err_prefix(err, "%s", t->dir);
        goto fail;
    }
    if (kind == MR_HEAD_CHECKPOINT) {
        copy = malloc(headlen + 1);
        if (copy == NULL) {
            sk_err_set(err, SK_ERR_NOMEM, "commit");
            goto fail;
        }
        memcpy(copy, head, headlen);
        copy[headlen] = '\0';
        /* A checkpoint that covers the prefix's entries replaces it. */
        if (t->prefix_size > 0 && cpv.size >= t->prefix_size
            && mr_store_path(path, sizeof(path), t, "prefix") == 0
            && (unlink(path) == 0 || errno == ENOENT))
        {
            t->prefix_size = 0;
        }
    }
    /* Indexed once durable under the head: a crash before this commit
     * leaves the entries for the next start to index (and the map to
     * feed). */
    if (b->n > 0 && mr_store_index(m, t, b, txn, err) != 0) {
        goto fail;
    }
    rc = txn != NULL ? sk_db_commit(txn, err) : 0;
    txn = NULL;                 /* sk_db_commit freed it */
    if (rc != 0) {
        goto fail;
    }
    mr_lock(m);
    for (i = 0; i < b->n; i++) {
        /* A new entry for the name (an Unbind above all, or the first
         * Bind of a name answered as absent) voids its cached answer. */
        if (b->names[i] != NULL) {
            mr_lru_drop(&m->answers, b->names[i]);
            m->absent_gen++;    /* and any range answer covering it */
        }
    }
    if (b->n > 0) {
        t->size += b->n;
        t->end += (off_t) b->text.len;
        t->last_ts = b->ts[b->n - 1];
        mr_metrics_synced(m, t, b->n);
    }
    if (kind == MR_HEAD_TFM) {
        t->tfm_size = tv.tree_size;
    } else if (kind == MR_HEAD_PREFIX) {
        t->prefix_size = pf.size;
    } else {
        free(t->cp);
        t->cp = copy;
        t->cplen = headlen;
        t->cpv = cpv;
        t->cp_ts = sk_checkpoint_timestamp(&cpv);
        mr_map_unpublish(t);
        if (last != NULL && mr_map_publish(m, t, last, lastlen, &why) != 0) {
            mr_log("%s", why.msg);
        }
    }
    mr_unlock(m);
    return 0;
fail:
    if (txn != NULL) {
        sk_db_abort(txn);
    }
    free(last);
    free(copy);
    return -1;
}


int
mr_store_read(mr_mirror_t *m, mr_tl_t *t, char **out, size_t *len,
    uint64_t sn, sk_err_t *err)
{
    mr_loc_t  loc;
    uint64_t  size;

    mr_lock(m);
    size = t->size;
    mr_unlock(m);
    if (sn >= size) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "entry SN %" PRIu64, sn);
    }
    if (mr_index_entry(m, t, sn, &loc, err) != 0) {
        return -1;
    }
    *len = loc.len;
    return mr_copy_pread(t, sn, &loc, out, err);
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
    mr_lock(m);
    mr_state_set(m, t, MR_CORRUPT, reason);
    mr_unlock(m);
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
