/*
 * mr_sync.c -- one thread per mirrored timeline: poll its checkpoint,
 * fetch the new chunks, check every entry, store each chunk all or none,
 * and move the timeline through the draft's states:
 *
 *   New --ok--> Idle <--ok-- Syncing      (Syncing while entries arrive)
 *   any but Corrupt --no answer / bad answer--> Stuck, retried after
 *       retry_min seconds, doubling up to retry_max
 *   Stuck for defunct_after seconds --> Defunct (still retried)
 *   Stuck / Defunct --ok--> Idle
 *   contradicting signed statements --> Corrupt, for good
 *
 * A round: GET /checkpoint, verified with the timeline's key and origin.
 * If it covers more than the copy and the timeline serves tlog-tiles
 * (probed with the first bundle a round needs; probed again after a
 * failed round): GET /tile/entries/<N>[.p/<W>] from the copy's next SN up
 * to the checkpoint's size, each bundle's framing checked strictly, each
 * entry checked as below; all of them are committed with the checkpoint
 * once its root is the root of the copy so extended (bundles have no
 * TFM).  Otherwise: GET /chunks (first time) or
 * /chunks/since/<newest SN>; each new chunk's signature is checked over
 * the .bz2 bytes before it is unpacked (bad: Stuck); its entries must
 * carry this TID, the next SNs, valid timeline signatures and
 * non-decreasing timestamps, a Bind or Rebind a valid SK-Signature; its
 * closing TFM must be signed, of size last + 1, with the root of all
 * entries so far.  Entries the copy already holds must be byte for byte
 * the stored ones.  Then the chunk is stored (fsync) and published.
 * Entries durable on the timeline but not yet in a chunk (at most
 * tail_max) come from /entry/<sn>.  Last, the checkpoint's root must be
 * the root of the copy at its size; it is stored and becomes what answers
 * carry.  Every contradiction between signed statements is renegation:
 * the statements are kept as evidence and the timeline is Corrupt.
 */
#include <bzlib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include <sk/conf.h>

#include "mr.h"

#define MR_LISTING_MAX  (4 * 1024 * 1024)

/* What a round ended in. */
typedef enum {
    MR_ROUND_OK = 0,
    MR_ROUND_PARTIAL,       /* progress, not caught up: again soon */
    MR_ROUND_FAIL,          /* no or bad answer: Stuck */
    MR_ROUND_RENEGED        /* evidence handed to mr_evidence_renege */
} mr_round_t;

/* One round's working state. */
typedef struct {
    mr_mirror_t  *m;
    mr_tl_t      *t;
    CURL         *curl;
    sk_err_t     *err;
    mr_batch_t    b;            /* checked, not stored */
    mr_pending_t  pend;         /* what this round's entries did to names */
    uint64_t      next;         /* SN expected next = t->size + b.n */
    int64_t       last_ts;      /* timestamp of SN next - 1 */
    char          tiles_why[SK_ERR_MSG_MAX];   /* why the round left the
                                                  tiles for the chunks */
} mr_sync_t;


/* GET the timeline's url + path. */
static int
mr_sync_get(mr_sync_t *s, mr_resp_t *r, const char *path, size_t max)
{
    char  url[4096];

    snprintf(url, sizeof(url), "%s%s", s->t->conf->url, path);
    return mr_fetch(s->m, r, s->curl, url, max, s->err);
}


static int
mr_sync_get200(mr_sync_t *s, mr_resp_t *r, const char *path, size_t max)
{
    if (mr_sync_get(s, r, path, max) != 0) {
        return -1;
    }
    if (r->status != 200) {
        free(r->body);
        r->body = NULL;
        return sk_err_set(s->err, SK_ERR_UNAVAILABLE, "GET %s: HTTP %ld",
            path, r->status);
    }
    return 0;
}


static void
mr_sync_ev_entry(mr_sync_t *s, mr_evidence_t *ev, uint64_t sn)
{
    char    *p;
    size_t   len;

    if (mr_store_text(s->m, s->t, &s->b, sn, &p, &len, s->err) == 0) {
        mr_evidence_add(ev, "entry", p, len);
        free(p);
    } else {
        ev->buf.failed = 1;
    }
}


static mr_round_t
mr_sync_renege(mr_sync_t *s, mr_evidence_t *ev)
{
    mr_evidence_renege(s->m, s->t, ev, &s->pend);
    return MR_ROUND_RENEGED;
}


/* A signed head whose root is not that of the signed entries below it. */
static mr_round_t
mr_sync_bad_root(mr_sync_t *s, const char *type, const char *head,
    size_t len, uint64_t size)
{
    mr_evidence_t  ev;
    uint64_t       sn;
    char           reason[128];

    snprintf(reason, sizeof(reason), "the %s of size %" PRIu64 " does not "
        "have the root of the timeline's signed entries", type, size);
    mr_evidence_begin(&ev, "checkpoint-root", reason);
    mr_evidence_add(&ev, type, head, len);
    for (sn = 0; sn < size && !ev.buf.failed; sn++) {
        mr_sync_ev_entry(s, &ev, sn);
    }
    return mr_sync_renege(s, &ev);
}


/* Root of the first size leaves of the copy (with the batch). */
static int
mr_sync_root(mr_sync_t *s, sk_merkle_hash_t root, uint64_t size)
{
    int  rc;

    if (size == 0) {
        sk_merkle_empty_root(root);
        return 0;
    }
    mr_lock(s->m);
    rc = sk_merkle_tree_root(root, s->t->tree, size, s->err);
    mr_unlock(s->m);
    return rc;
}


/* A head's root and timestamp against the entries it covers. */
static mr_round_t
mr_sync_check_head(mr_sync_t *s, const char *type, const char *head,
    size_t len, uint64_t size, const sk_merkle_hash_t want, int64_t ts)
{
    sk_merkle_hash_t  root;
    mr_evidence_t     ev;
    mr_loc_t          loc;
    int64_t           newest;
    char              reason[160];

    if (mr_sync_root(s, root, size) != 0) {
        return MR_ROUND_FAIL;
    }
    if (memcmp(root, want, sizeof(root)) != 0) {
        return mr_sync_bad_root(s, type, head, len, size);
    }
    if (size == 0) {
        return MR_ROUND_OK;
    }
    if (size == s->t->size) {
        newest = s->t->last_ts;
    } else if (size > s->t->size) {
        newest = s->b.ts[size - 1 - s->t->size];
    } else if (mr_index_entry(s->m, s->t, size - 1, &loc, s->err) == 0) {
        newest = loc.ts;
    } else {
        return MR_ROUND_FAIL;
    }
    if (ts < newest) {
        snprintf(reason, sizeof(reason), "the %s signed at %" PRId64
            " covers SN %" PRIu64 " stamped %" PRId64, type, ts, size - 1,
            newest);
        mr_evidence_begin(&ev, "checkpoint-before-entry", reason);
        mr_evidence_add(&ev, type, head, len);
        mr_sync_ev_entry(s, &ev, size - 1);
        return mr_sync_renege(s, &ev);
    }
    return MR_ROUND_OK;
}


/* Back to the stored size after a round left leaves past it. */
static void
mr_sync_rewind(mr_sync_t *s)
{
    mr_tl_t           *t = s->t;
    sk_err_t           err;

    /* The tiles past the stored size are ignored, then written anew. */
    mr_lock(s->m);
    if (sk_merkle_tree_size(t->tree) != t->size
        && mr_tree_open(t, 0, &err) != 0)
    {
        mr_log("timeline %" PRIu64 ": rewind: %s", t->conf->tid, err.msg);
    }
    mr_roots_rewind(t, t->size);
    mr_unlock(s->m);
    mr_batch_free(&s->b);
    mr_pending_free(&s->pend);
    s->next = t->size;
    s->last_ts = t->last_ts;
}


/* The source's own copy holds the incorporated SN: it must be the same
 * signed entry, else the source signed two entries with one SN. */
static void
mr_sync_inc_source(mr_sync_t *s, const sk_entry_t *copy, const char *text,
    size_t len)
{
    mr_evidence_t  ev;
    mr_tl_t       *src;
    uint64_t       tid = 0, sn = 0, size;
    size_t         olen;
    char          *old, reason[128];

    if (sk_entry_tid(copy, &tid, s->err) != 0
        || sk_entry_sn(copy, &sn, s->err) != 0
        || (src = mr_inc_source(s->m, tid)) == NULL)
    {
        return;
    }
    mr_lock(s->m);
    size = src->state == MR_CORRUPT ? 0 : src->size;
    mr_unlock(s->m);
    if (sn >= size || mr_store_read(s->m, src, &old, &olen, sn, s->err) != 0)
    {
        return;
    }
    if (olen != len || memcmp(old, text, len) != 0) {
        snprintf(reason, sizeof(reason), "two different signed entries "
            "with SN %" PRIu64 " (one incorporated by timeline %" PRIu64 ")",
            sn, s->t->conf->tid);
        mr_evidence_begin(&ev, "duplicate-sn", reason);
        mr_evidence_add(&ev, "entry", old, olen);
        mr_evidence_add(&ev, "entry", text, len);
        mr_evidence_renege(s->m, src, &ev, NULL);
    }
    free(old);
}


/* An Incorporate (SN s->next): fetch the copy it refers to and judge it
 * by its own rules; keep it (synced) for the names' rules. */
static mr_round_t
mr_sync_incorporate(mr_sync_t *s, const sk_entry_t *e, const char *text,
    size_t len, sk_entry_t **copy)
{
    mr_evidence_t  ev;
    mr_resp_t      r;
    uint64_t       earlier;
    size_t         clen;
    char           path[64], why[SK_ERR_MSG_MAX + 128], *ctext;
    int            rc;

    snprintf(path, sizeof(path), "/incorporated/%" PRIu64, s->next);
    if (mr_sync_get200(s, &r, path, s->m->conf.chunk_text_max) != 0) {
        return MR_ROUND_FAIL;
    }
    rc = mr_check_incorporate(s->m, s->t, e, s->next, r.body, r.len, NULL, &s->pend,
        copy, &earlier, why, sizeof(why), s->err);
    if (rc > 0) {
        mr_evidence_begin(&ev, "bad-incorporation", why);
        mr_evidence_add(&ev, "entry", text, len);
        mr_evidence_add(&ev, "copy", r.body, r.len);
        if (earlier != UINT64_MAX) {
            mr_sync_ev_entry(s, &ev, earlier);
        }
        free(r.body);
        return mr_sync_renege(s, &ev);
    }
    free(r.body);
    if (rc < 0) {
        sk_err_prefix(s->err, "GET %s", path);
        return MR_ROUND_FAIL;
    }
    if (sk_entry_format(&ctext, &clen, *copy, s->err) != 0) {
        return MR_ROUND_FAIL;
    }
    mr_sync_inc_source(s, *copy, ctext, clen);
    rc = mr_inc_put(s->t, s->next, ctext, clen, s->err);
    free(ctext);
    return rc == 0 ? MR_ROUND_OK : MR_ROUND_FAIL;
}


/* A new entry (SN s->next), its stamp checked: the per-entry rules,
 * then into the batch and the tree. */
static mr_round_t
mr_sync_accept(mr_sync_t *s, const sk_entry_t *e, const char *text,
    size_t len, int64_t ts)
{
    sk_merkle_hash_t  leaf;
    mr_evidence_t     ev;
    sk_entry_t       *copy = NULL;
    mr_round_t        r;
    sk_err_t          why;
    char              reason[SK_ERR_MSG_MAX + 64];
    unsigned          flags;
    int               rc;

    if (s->next > 0 && ts < s->last_ts) {
        snprintf(reason, sizeof(reason), "SN %" PRIu64 " is stamped %"
            PRId64 ", before SN %" PRIu64 " (%" PRId64 ")", s->next, ts,
            s->next - 1, s->last_ts);
        mr_evidence_begin(&ev, "timestamp-regression", reason);
        mr_sync_ev_entry(s, &ev, s->next - 1);
        mr_evidence_add(&ev, "entry", text, len);
        return mr_sync_renege(s, &ev);
    }
    if (sk_entry_type(e) == SK_ENTRY_BIND
        || sk_entry_type(e) == SK_ENTRY_REBIND)
    {
        rc = mr_roots_check_bind(s->m, s->t, e, s->next, ts, &why);
        if (rc != 0 && why.code == SK_ERR_UNAVAILABLE) {
            sk_err_set(s->err, SK_ERR_UNAVAILABLE, "SN %" PRIu64 ": %s",
                s->next, why.msg);
            return MR_ROUND_FAIL;
        }
        if (rc != 0) {
            snprintf(reason, sizeof(reason), "SN %" PRIu64 ": a %s for %s "
                "not validly backed: %s", s->next,
                sk_entry_type_name(sk_entry_type(e)), sk_entry_name(e),
                why.msg);
            mr_evidence_begin(&ev, "unbacked-bind", reason);
            mr_evidence_add(&ev, "entry", text, len);
            return mr_sync_renege(s, &ev);
        }
    }
    if (sk_entry_type(e) == SK_ENTRY_INCORPORATE) {
        r = mr_sync_incorporate(s, e, text, len, &copy);
        if (r != MR_ROUND_OK) {
            return r;
        }
        /* From here on the copy counts on this timeline. */
        rc = mr_pending_note(&s->pend, copy, s->err);
        sk_entry_free(copy);
        if (rc != 0) {
            return MR_ROUND_FAIL;
        }
    }
    rc = mr_check_update(s->m, s->t, e, s->next, &s->pend, &why);
    if (rc != 0 && why.code != SK_ERR_UNAVAILABLE && why.code != SK_ERR_NOMEM)
    {
        snprintf(reason, sizeof(reason), "SN %" PRIu64 ": a %s for %s "
            "against the name's state: %s", s->next,
            sk_entry_type_name(sk_entry_type(e)), sk_entry_name(e), why.msg);
        mr_evidence_begin(&ev, sk_entry_type(e) == SK_ENTRY_BIND
            || sk_entry_type(e) == SK_ENTRY_REBIND ? "inconsistent-bind"
                                                   : "unsigned-update",
            reason);
        mr_evidence_add(&ev, "entry", text, len);
        return mr_sync_renege(s, &ev);
    }
    if (rc != 0) {
        *s->err = why;
        return MR_ROUND_FAIL;
    }
    flags = sk_entry_type(e) == SK_ENTRY_ADD_ROOT_CA
        || sk_entry_type(e) == SK_ENTRY_REMOVE_ROOT_CA ? MR_IX_ROOT : 0;
    if (mr_pending_note(&s->pend, e, s->err) != 0
        || sk_merkle_leaf_hash(leaf, text, len, s->err) != 0
        || mr_batch_add(&s->b, text, len, sk_entry_name(e), ts, flags, leaf,
               s->err) != 0)
    {
        return MR_ROUND_FAIL;
    }
    mr_lock(s->m);
    rc = sk_merkle_tree_append(s->t->tree, leaf, s->err);
    if (rc == 0) {
        rc = mr_roots_note(s->t, e, s->next, s->err);
    }
    mr_unlock(s->m);
    if (rc != 0) {
        return MR_ROUND_FAIL;
    }
    s->next++;
    s->last_ts = ts;
    return MR_ROUND_OK;
}


/* One fetched entry claimed to be SN sn. */
static mr_round_t
mr_sync_entry(mr_sync_t *s, const char *text, size_t len, uint64_t sn)
{
    mr_evidence_t  ev;
    sk_entry_t    *e;
    mr_round_t     r;
    int64_t        ts;
    size_t         olen;
    char          *old, reason[128];

    if (mr_store_check_entry(&e, s->t, text, len, sn, &ts, s->err) != 0) {
        return MR_ROUND_FAIL;
    }
    if (sn < s->next) {
        /* Already held: it must be the very same signed entry. */
        sk_entry_free(e);
        if (mr_store_text(s->m, s->t, &s->b, sn, &old, &olen, s->err) != 0) {
            return MR_ROUND_FAIL;
        }
        if (olen == len && memcmp(old, text, len) == 0) {
            free(old);
            return MR_ROUND_OK;
        }
        snprintf(reason, sizeof(reason), "two different signed entries "
            "with SN %" PRIu64, sn);
        mr_evidence_begin(&ev, "duplicate-sn", reason);
        mr_evidence_add(&ev, "entry", old, olen);
        mr_evidence_add(&ev, "entry", text, len);
        free(old);
        return mr_sync_renege(s, &ev);
    }
    if (sn != s->next) {
        sk_entry_free(e);
        sk_err_set(s->err, SK_ERR_FORMAT, "entry SN %" PRIu64 " where SN %"
            PRIu64 " was due", sn, s->next);
        return MR_ROUND_FAIL;
    }
    r = mr_sync_accept(s, e, text, len, ts);
    sk_entry_free(e);
    return r;
}


/* 0, -1, or 1: a Map-Root entry did not name the map, the timeline
 * reneged (evidence handed over). */
static int
mr_sync_commit(mr_sync_t *s, const char *head, size_t len, mr_headkind_t kind)
{
    size_t  i;

    if (mr_store_commit(s->m, s->t, &s->b, head, len, kind, s->err) != 0) {
        if (s->t->map_bad > 0) {
            mr_evidence_map(s->m, s->t, s->t->map_bad - 1, &s->b, &s->pend,
                s->err->msg);
            return 1;
        }
        return -1;
    }
    /* After the commit, so no answer built before it is stored again. */
    for (i = 0; s->m->rcache != NULL && i < s->b.n; i++) {
        if (s->b.names[i] != NULL) {
            mr_cache_del(s->m, s->b.names[i]);
        }
    }
    mr_batch_free(&s->b);
    /* Stored now: the names' state comes from the index again, and what
     * a round holds stays bounded by a commit's entries. */
    mr_pending_free(&s->pend);
    return 0;
}


/* bzip2 into a buffer of at most max bytes. */
static int
mr_sync_bunzip(char **out, size_t *outlen, const char *in, size_t len,
    uint64_t max, sk_err_t *err)
{
    bz_stream  bz;
    mr_buf_t   b = { 0 };
    char       chunk[65536];
    int        rc;

    memset(&bz, 0, sizeof(bz));
    if (BZ2_bzDecompressInit(&bz, 0, 0) != BZ_OK) {
        return sk_err_set(err, SK_ERR_NOMEM, "bzip2");
    }
    bz.next_in = (char *) in;
    bz.avail_in = (unsigned) len;
    do {
        bz.next_out = chunk;
        bz.avail_out = sizeof(chunk);
        rc = BZ2_bzDecompress(&bz);
        if (rc != BZ_OK && rc != BZ_STREAM_END) {
            break;
        }
        mr_buf_add(&b, chunk, sizeof(chunk) - bz.avail_out);
        if (b.len > max) {
            BZ2_bzDecompressEnd(&bz);
            free(b.p);
            return sk_err_set(err, SK_ERR_FORMAT, "chunk: more than %" PRIu64
                " bytes unpacked", max);
        }
        if (rc == BZ_OK && bz.avail_in == 0 && bz.avail_out != 0) {
            rc = BZ_UNEXPECTED_EOF;
            break;
        }
    } while (rc != BZ_STREAM_END);
    BZ2_bzDecompressEnd(&bz);
    if (rc != BZ_STREAM_END || bz.avail_in != 0) {
        free(b.p);
        return sk_err_set(err, SK_ERR_FORMAT, "chunk: bad bzip2 data (%d)",
            rc);
    }
    return mr_buf_finish(&b, out, outlen, err);
}


/* One chunk [first, last] at uri with signature sig. */
static mr_round_t
mr_sync_chunk(mr_sync_t *s, const char *uri, uint64_t first, uint64_t last,
    const char *sig)
{
    sk_merkle_hash_t  root;
    unsigned char    *raw;
    mr_resp_t         r;
    mr_round_t        res;
    sk_tfm_t          tfm;
    uint64_t          sn;
    size_t            rawlen, tlen, pos = 0, used;
    char             *text;
    int               rc;

    if (mr_sync_get(s, &r, uri, s->m->conf.chunk_max) != 0) {
        return MR_ROUND_FAIL;
    }
    if (r.status != 200) {
        free(r.body);
        if (r.status == 404) {
            /* Merged away since the listing: list again soon. */
            return MR_ROUND_PARTIAL;
        }
        sk_err_set(s->err, SK_ERR_UNAVAILABLE, "GET %s: HTTP %ld", uri,
            r.status);
        return MR_ROUND_FAIL;
    }
    if (sk_b64_decode(&raw, &rawlen, sig, strlen(sig), s->err) != 0) {
        free(r.body);
        sk_err_prefix(s->err, "chunk %s: signature", uri);
        return MR_ROUND_FAIL;
    }
    rc = sk_key_verify(s->t->key, raw, rawlen, (unsigned char *) r.body,
        r.len, s->err);
    free(raw);
    if (rc != 0) {
        free(r.body);
        sk_err_set(s->err, SK_ERR_SIGNATURE, "chunk %s: bad signature", uri);
        return MR_ROUND_FAIL;
    }
    rc = mr_sync_bunzip(&text, &tlen, r.body, r.len,
        s->m->conf.chunk_text_max, s->err);
    free(r.body);
    if (rc != 0) {
        sk_err_prefix(s->err, "%s", uri);
        return MR_ROUND_FAIL;
    }
    res = MR_ROUND_OK;
    for (sn = first; sn <= last && res == MR_ROUND_OK; sn++) {
        used = mr_entry_len(text + pos, tlen - pos);
        if (used == 0) {
            sk_err_set(s->err, SK_ERR_FORMAT, "chunk %s: SN %" PRIu64
                ": no whole entry", uri, sn);
            res = MR_ROUND_FAIL;
            break;
        }
        res = mr_sync_entry(s, text + pos, used, sn);
        pos += used;
    }
    if (res == MR_ROUND_OK) {
        if (sk_tfm_verify(&tfm, NULL, text + pos, tlen - pos, s->t->key,
                s->err) != 0)
        {
            sk_err_prefix(s->err, "chunk %s", uri);
            res = MR_ROUND_FAIL;
        } else if (tfm.tid != s->t->conf->tid || tfm.tree_size != last + 1)
        {
            sk_err_set(s->err, SK_ERR_FORMAT, "chunk %s: TFM of TID %" PRIu64
                " and size %" PRIu64, uri, tfm.tid, tfm.tree_size);
            res = MR_ROUND_FAIL;
        } else if (s->next == last + 1) {
            res = mr_sync_check_head(s, "tfm", text + pos, tlen - pos,
                last + 1, tfm.root, tfm.timestamp);
            if (res == MR_ROUND_OK
                && mr_sync_commit(s, text + pos, tlen - pos, MR_HEAD_TFM) != 0)
            {
                res = MR_ROUND_FAIL;
            }
        } else if (mr_sync_root(s, root, last + 1) != 0
                   || memcmp(root, tfm.root, sizeof(root)) != 0)
        {
            /* A chunk of entries held already: its TFM must agree. */
            res = mr_sync_bad_root(s, "tfm", text + pos, tlen - pos,
                last + 1);
        }
    }
    free(text);
    return res;
}


int
mr_sync_listing_line(char *line, char **uri, uint64_t *first,
    uint64_t *last, char **sig, sk_err_t *err)
{
    static const char  *name[4] = { "uri", "first-sn", "last-sn",
                                    "signature" };
    char               *w[4], *p = line, *sp;
    size_t              n;

    for (n = 0; n < 4; n++) {
        w[n] = p;
        sp = strchr(p, ' ');
        if (sp == p || (sp == NULL && *p == '\0')) {
            return sk_err_set(err, SK_ERR_FORMAT, "\"%s\": empty (want "
                "\"<uri> <first-sn> <last-sn> <signature>\")", name[n]);
        }
        if (sp == NULL) {
            break;
        }
        if (n == 3) {
            return sk_err_set(err, SK_ERR_FORMAT, "more than 4 fields (want "
                "\"<uri> <first-sn> <last-sn> <signature>\")");
        }
        *sp = '\0';
        p = sp + 1;
    }
    if (n < 3) {
        return sk_err_set(err, SK_ERR_FORMAT, "%zu fields (want "
            "\"<uri> <first-sn> <last-sn> <signature>\")", n + 1);
    }
    /* A path on the timeline's server, without "..", printable. */
    for (p = w[0]; *p > ' ' && *p < 0x7f; p++) {
    }
    if (w[0][0] != '/' || strstr(w[0], "..") != NULL || *p != '\0') {
        return sk_err_set(err, SK_ERR_FORMAT, "\"uri\": illegal value "
            "\"%.60s\" (want a path on the timeline's server)", w[0]);
    }
    if (sk_conf_u64(first, name[1], w[1], err) != 0
        || sk_conf_u64(last, name[2], w[2], err) != 0)
    {
        return -1;
    }
    if (*last < *first) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"last-sn\" %" PRIu64
            " before \"first-sn\" %" PRIu64, *last, *first);
    }
    if (*last == UINT64_MAX) {
        /* last + 1 is the tree size the chunk's TFM must carry. */
        return sk_err_set(err, SK_ERR_FORMAT, "\"last-sn\": %" PRIu64
            " is too large", *last);
    }
    if (strspn(w[3], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
            "0123456789-_") != strlen(w[3]))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"signature\": illegal "
            "value \"%.60s\" (want base64url)", w[3]);
    }
    *uri = w[0];
    *sig = w[3];
    return 0;
}


static mr_round_t
mr_sync_chunks(mr_sync_t *s)
{
    mr_resp_t   r;
    mr_round_t  res = MR_ROUND_OK;
    uint64_t    first, last;
    size_t      lineno = 0;
    char        path[64], *line, *nl, *uri, *sig;

    if (s->next == 0) {
        snprintf(path, sizeof(path), "/chunks");
    } else {
        snprintf(path, sizeof(path), "/chunks/since/%" PRIu64, s->next - 1);
    }
    if (mr_sync_get(s, &r, path, MR_LISTING_MAX) != 0) {
        return MR_ROUND_FAIL;
    }
    if (r.status == 304) {
        free(r.body);
        return MR_ROUND_OK;
    }
    if (r.status != 200 || strlen(r.body) != r.len) {
        free(r.body);
        sk_err_set(s->err, SK_ERR_UNAVAILABLE, "GET %s: HTTP %ld", path,
            r.status);
        return MR_ROUND_FAIL;
    }
    for (line = r.body; res == MR_ROUND_OK && *line != '\0'; line = nl + 1) {
        lineno++;
        nl = strchr(line, '\n');
        if (nl == NULL) {
            sk_err_set(s->err, SK_ERR_FORMAT, "%s: line %zu unterminated",
                path, lineno);
            res = MR_ROUND_FAIL;
            break;
        }
        *nl = '\0';
        if (mr_sync_listing_line(line, &uri, &first, &last, &sig, s->err)
            != 0)
        {
            sk_err_prefix(s->err, "%s: line %zu", path, lineno);
            res = MR_ROUND_FAIL;
        } else if (last < s->next) {
            continue;
        } else if (first > s->next) {
            sk_err_set(s->err, SK_ERR_FORMAT, "%s: chunk %" PRIu64 "-%"
                PRIu64 " leaves a gap after SN %" PRIu64, path, first, last,
                s->next);
            res = MR_ROUND_FAIL;
        } else {
            res = mr_sync_chunk(s, uri, first, last, sig);
        }
    }
    free(r.body);
    return res;
}


/* Entries past the newest chunk, one by one, up to size. */
static mr_round_t
mr_sync_tail(mr_sync_t *s, uint64_t size)
{
    mr_resp_t   r;
    mr_round_t  res = MR_ROUND_OK;
    char        path[64];

    while (s->next < size && res == MR_ROUND_OK) {
        snprintf(path, sizeof(path), "/entry/%" PRIu64, s->next);
        if (mr_sync_get200(s, &r, path, SK_ENTRY_MAX) != 0) {
            return MR_ROUND_FAIL;
        }
        res = mr_sync_entry(s, r.body, r.len, s->next);
        free(r.body);
    }
    return res;
}


/* The most an entry bundle can hold: 256 entries of at most 64 KiB. */
#define MR_BUNDLE_MAX  ((size_t) SK_TILE_WIDTH * (2 + SK_TILE_ENTRY_MAX))

static void
mr_sync_source(mr_sync_t *s, int tiles, const char *why)
{
    if (s->t->tiles_logged != tiles) {
        mr_log("timeline %" PRIu64 ": source %s%s%s", s->t->conf->tid,
            tiles > 0 ? "tiles" : "chunks", why[0] ? ": " : "", why);
        s->t->tiles_logged = tiles;
    }
}


/* The tiles failed (why in s->err): a bundle the timeline cannot serve
 * (an entry longer than a bundle carries, stored before timelines
 * refused them) or a bad one, or a batch the checkpoint does not prove.
 * The tiles are only a faster path: the chunks, whose TFMs are signed,
 * are used instead (t->tiles = -1, the batch dropped); that path tells
 * renegation from a bad answer.  If it fails too, the reason keeps why
 * the tiles did. */
static mr_round_t
mr_sync_to_chunks(mr_sync_t *s)
{
    mr_sync_source(s, -1, s->err->msg);
    snprintf(s->tiles_why, sizeof(s->tiles_why), "%s", s->err->msg);
    s->t->tiles = -1;
    mr_sync_rewind(s);
    return MR_ROUND_OK;
}


/* Entry bundle n of width entries, fetched from url: its framing checked
 * in full first (a short bundle, an entry length past its end, trailing
 * bytes: a bad answer), then each entry through the same checks as a
 * chunk's. */
static mr_round_t
mr_sync_bundle(mr_sync_t *s, const char *url, uint64_t n, unsigned width,
    const unsigned char *body, size_t len)
{
    mr_round_t  res = MR_ROUND_OK;
    size_t      pos, elen;
    uint64_t    sn;
    unsigned    k;

    for (k = 0, pos = 0; k < width; k++, pos += 2 + elen) {
        if (len - pos < 2) {
            sk_err_set(s->err, SK_ERR_FORMAT, "%s: short bundle: entry %u "
                "of %u at offset %zu, %zu bytes", url, k, width, pos, len);
            return MR_ROUND_FAIL;
        }
        elen = (size_t) body[pos] << 8 | body[pos + 1];
        if (elen == 0 || elen > len - pos - 2) {
            sk_err_set(s->err, SK_ERR_FORMAT, "%s: entry %u at offset %zu "
                "of length %zu, beyond the bundle's %zu bytes", url, k, pos,
                elen, len);
            return MR_ROUND_FAIL;
        }
    }
    if (pos != len) {
        sk_err_set(s->err, SK_ERR_FORMAT, "%s: %zu trailing bytes at offset "
            "%zu after %u entries", url, len - pos, pos, width);
        return MR_ROUND_FAIL;
    }
    sn = n * SK_TILE_WIDTH;
    for (k = 0, pos = 0; k < width && res == MR_ROUND_OK; k++, sn++) {
        elen = (size_t) body[pos] << 8 | body[pos + 1];
        res = mr_sync_entry(s, (const char *) body + pos + 2, elen, sn);
        if (res == MR_ROUND_FAIL) {
            sk_err_prefix(s->err, "%s: entry at offset %zu", url, pos);
        }
        pos += 2 + elen;
    }
    return res;
}


/* Commit the entries checked so far (SN < s->next) as a prefix of the
 * checkpoint cp (mr_prefix.c): the timeline's consistency proof from
 * s->next to cp's size must lead from the copy's root to cp's.  A proof
 * that does not: the tiles do not agree with the signed checkpoint, and
 * the chunks are used instead (mr_sync_to_chunks). */
static mr_round_t
mr_sync_prefix(mr_sync_t *s, const char *cp, size_t cplen,
    const sk_checkpoint_t *cpv)
{
    sk_merkle_hash_t  root;
    mr_prefix_t       pf;
    mr_resp_t         r;
    size_t            len;
    char              path[96], *text;
    int               rc;

    pf.size = s->next;
    pf.cpv = *cpv;
    snprintf(path, sizeof(path), "/proof/consistency?from=%" PRIu64 "&to=%"
        PRIu64, pf.size, cpv->size);
    if (mr_sync_root(s, root, pf.size) != 0
        || mr_sync_get200(s, &r, path, 4096) != 0)
    {
        return MR_ROUND_FAIL;
    }
    rc = sk_merkle_proof_parse(&pf.proof, r.body, r.len, s->err);
    free(r.body);
    if (rc != 0) {
        sk_err_prefix(s->err, "%s%s", s->t->conf->url, path);
        return MR_ROUND_FAIL;
    }
    if (mr_prefix_check(&pf, root, s->err) != 0) {
        return mr_sync_to_chunks(s);
    }
    if (mr_prefix_format(&text, &len, pf.size, &pf.proof, cp, cplen, s->err)
        != 0)
    {
        return MR_ROUND_FAIL;
    }
    rc = mr_sync_commit(s, text, len, MR_HEAD_PREFIX);
    free(text);
    return rc == 0 ? MR_ROUND_OK : MR_ROUND_FAIL;
}


/* Entries up to the checkpoint's size from the timeline's tlog-tiles
 * entry bundles, the full ones, then the partial last one.  The first
 * fetch is the probe: a 404 while not known means no tiles (t->tiles =
 * -1; the caller goes to chunks).  Any other answer but 200, or a bundle
 * that does not check, sends the round to the chunks too
 * (mr_sync_to_chunks).  Every tiles_commit entries the batch
 * is committed as a proven prefix of the checkpoint (mr_sync_prefix);
 * the rest, with the checkpoint once the root of the copy so extended
 * is the checkpoint's (by the round). */
static mr_round_t
mr_sync_tiles(mr_sync_t *s, const char *cp, size_t cplen,
    const sk_checkpoint_t *cpv)
{
    mr_resp_t   r;
    mr_round_t  res = MR_ROUND_OK;
    uint64_t    n, size = cpv->size;
    unsigned    width;
    char        tp[SK_TILE_PATH_MAX], path[SK_TILE_PATH_MAX + 8],
                url[4096 + sizeof(path)];

    while (s->next < size && res == MR_ROUND_OK && s->t->tiles >= 0) {
        n = s->next / SK_TILE_WIDTH;
        width = size - n * SK_TILE_WIDTH >= SK_TILE_WIDTH ? SK_TILE_WIDTH
            : (unsigned) (size - n * SK_TILE_WIDTH);
        sk_tile_path(tp, SK_TILE_ENTRIES, n, width);
        snprintf(path, sizeof(path), "/tile/%s", tp);
        snprintf(url, sizeof(url), "%s%s", s->t->conf->url, path);
        if (mr_sync_get(s, &r, path, MR_BUNDLE_MAX) != 0) {
            return MR_ROUND_FAIL;
        }
        if (r.status == 404 && s->t->tiles == 0) {
            free(r.body);
            s->t->tiles = -1;
            mr_sync_source(s, -1, "GET /tile/entries: HTTP 404");
            return MR_ROUND_OK;
        }
        if (r.status != 200) {
            free(r.body);
            sk_err_set(s->err, SK_ERR_UNAVAILABLE, "GET %s: HTTP %ld", url,
                r.status);
            return mr_sync_to_chunks(s);
        }
        if (s->t->tiles == 0) {
            s->t->tiles = 1;
            mr_sync_source(s, 1, "");
        }
        res = mr_sync_bundle(s, url, n, width, (unsigned char *) r.body,
            r.len);
        free(r.body);
        if (res == MR_ROUND_FAIL) {
            return mr_sync_to_chunks(s);
        }
        if (res == MR_ROUND_OK && s->b.n >= s->m->conf.tiles_commit
            && s->next < size)
        {
            res = mr_sync_prefix(s, cp, cplen, cpv);
        }
    }
    return res;
}


/* Two signed heads of one size with different roots. */
static mr_round_t
mr_sync_fork(mr_sync_t *s, const char *cp, size_t len)
{
    mr_evidence_t  ev;
    char           reason[128];

    snprintf(reason, sizeof(reason), "two checkpoints of size %" PRIu64
        " with different roots", s->t->cpv.size);
    mr_evidence_begin(&ev, "forked-checkpoint", reason);
    mr_evidence_add(&ev, "checkpoint", s->t->cp, s->t->cplen);
    mr_evidence_add(&ev, "checkpoint", cp, len);
    return mr_sync_renege(s, &ev);
}


static mr_round_t
mr_sync_round(mr_sync_t *s)
{
    sk_checkpoint_t   cpv;
    mr_tl_t          *t = s->t;
    mr_resp_t         r;
    mr_round_t        res = MR_ROUND_OK;
    int64_t           cp_ts;
    int               rc;

    s->next = t->size;
    s->last_ts = t->last_ts;
    if (mr_sync_get200(s, &r, "/checkpoint", SK_CHECKPOINT_MAX) != 0) {
        return MR_ROUND_FAIL;
    }
    if (sk_checkpoint_verify(&cpv, r.body, r.len, t->conf->origin, t->key,
            s->err) != 0)
    {
        free(r.body);
        sk_err_prefix(s->err, "checkpoint");
        return MR_ROUND_FAIL;
    }
    cp_ts = sk_checkpoint_timestamp(&cpv);
    atomic_store(&t->seen_size, cpv.size);
    if (t->cp != NULL && cpv.size == t->cpv.size
        && memcmp(cpv.root, t->cpv.root, sizeof(cpv.root)) != 0)
    {
        res = mr_sync_fork(s, r.body, r.len);
        free(r.body);
        return res;
    }
    if (cpv.size < t->cpv.size) {
        free(r.body);
        sk_err_set(s->err, SK_ERR_FORMAT, "checkpoint of size %" PRIu64
            " after one of size %" PRIu64, cpv.size, t->cpv.size);
        return MR_ROUND_FAIL;
    }
    if (cpv.size > t->size) {
        /* New, Stuck and Defunct stay so until a round succeeds. */
        mr_lock(s->m);
        if (t->state == MR_IDLE) {
            mr_state_set(s->m, t, MR_SYNCING, NULL);
        }
        mr_unlock(s->m);
        if (t->tiles >= 0) {
            res = mr_sync_tiles(s, r.body, r.len, &cpv);
        }
        if (t->tiles < 0) {
            res = mr_sync_chunks(s);
            if (res == MR_ROUND_OK && s->next < cpv.size) {
                if (cpv.size - s->next > s->m->conf.tail_max) {
                    res = MR_ROUND_PARTIAL;
                } else {
                    res = mr_sync_tail(s, cpv.size);
                }
            }
            if (res == MR_ROUND_FAIL && s->tiles_why[0] != '\0') {
                sk_err_prefix(s->err, "%s; then from chunks", s->tiles_why);
            }
        }
    }
    if (res == MR_ROUND_OK) {
        res = mr_sync_check_head(s, "checkpoint", r.body, r.len, cpv.size,
            cpv.root, cp_ts);
    }
    if (res == MR_ROUND_OK
        && (cpv.size > t->cpv.size || t->cp == NULL || cp_ts > t->cp_ts))
    {
        rc = mr_sync_commit(s, r.body, r.len, MR_HEAD_CHECKPOINT);
        res = rc == 0 ? MR_ROUND_OK : rc > 0 ? MR_ROUND_RENEGED
            : MR_ROUND_FAIL;
    }
    free(r.body);
    if (res == MR_ROUND_FAIL) {
        /* Probe again next round: a timeline may gain or lose tiles. */
        t->tiles = 0;
    }
    if (res != MR_ROUND_OK) {
        mr_sync_rewind(s);
    }
    return res;
}


/* After a round, under the lock: the state machine; how long to wait. */
static uint64_t
mr_sync_after(mr_mirror_t *m, mr_tl_t *t, mr_round_t r, const sk_err_t *err)
{
    int64_t  now = mr_now();

    t->rounds++;
    if (t->state == MR_CORRUPT) {
        return m->conf.retry_max;
    }
    if (r == MR_ROUND_OK || r == MR_ROUND_PARTIAL) {
        /* Progress but not caught up: servable once it has a checkpoint
         * to answer with. */
        if (r == MR_ROUND_OK || t->cp != NULL) {
            mr_state_set(m, t, r == MR_ROUND_OK ? MR_IDLE : MR_SYNCING,
                NULL);
        }
        t->failures = 0;
        t->backoff = 0;
        t->last_ok = now;
        return r == MR_ROUND_OK ? m->conf.poll_interval : m->conf.retry_min;
    }
    t->failures++;
    if (t->backoff == 0) {
        /* The first failure (or evidence that did not verify, which set
         * Stuck already). */
        t->stuck_since = now;
        t->backoff = m->conf.retry_min;
        mr_state_set(m, t, MR_STUCK, err->msg[0] ? err->msg : t->reason);
    } else {
        t->backoff = t->backoff * 2 > m->conf.retry_max
            ? m->conf.retry_max : t->backoff * 2;
        mr_state_set(m, t, t->state, err->msg);
    }
    if (t->state == MR_STUCK
        && now - t->stuck_since >= (int64_t) m->conf.defunct_after)
    {
        mr_state_set(m, t, MR_DEFUNCT, err->msg);
    }
    return t->backoff;
}


static void *
mr_sync_thread(void *arg)
{
    mr_tl_t          *t = arg;
    mr_mirror_t      *m = (mr_mirror_t *) ((char *) (t - t->index)
                              - offsetof(mr_mirror_t, tl));
    mr_round_t        r;
    mr_sync_t         s;
    sk_err_t          err;
    uint64_t          wait;
    struct timespec   t0, t1;
    CURL             *curl = curl_easy_init();

    mr_lock(m);
    while (!m->stopping) {
        if (t->state == MR_CORRUPT || curl == NULL) {
            (void) mr_wait(m, &m->wake, NULL);
            continue;
        }
        mr_unlock(m);
        sk_err_clear(&err);
        memset(&s, 0, sizeof(s));
        s.m = m;
        s.t = t;
        s.curl = curl;
        s.err = &err;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        r = mr_sync_round(&s);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        mr_batch_free(&s.b);
        mr_pending_free(&s.pend);
        mr_lock(m);
        if (m->stopping) {
            break;              /* a round cut short by the stop */
        }
        wait = mr_sync_after(m, t, r, &err);
        mr_metrics_round(m, t, r == MR_ROUND_OK || r == MR_ROUND_PARTIAL,
            (double) (t1.tv_sec - t0.tv_sec)
            + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9);
        mr_state_sleep(m, wait);
    }
    mr_unlock(m);
    curl_easy_cleanup(curl);
    return NULL;
}


int
mr_sync_start(mr_mirror_t *m, sk_err_t *err)
{
    size_t  i;

    for (i = 0; i < m->ntl; i++) {
        if (pthread_create(&m->tl[i].thread, NULL, mr_sync_thread, &m->tl[i])
            != 0)
        {
            return sk_err_set(err, SK_ERR_SYSTEM, "sync thread %zu", i);
        }
        m->tl[i].thread_up = 1;
    }
    return 0;
}


void
mr_sync_stop(mr_mirror_t *m)
{
    size_t  i;

    mr_lock(m);
    m->stopping = 1;
    atomic_store(&m->halt, 1);
    pthread_cond_broadcast(&m->wake);
    mr_unlock(m);
    for (i = 0; i < m->ntl; i++) {
        if (m->tl[i].thread_up) {
            pthread_join(m->tl[i].thread, NULL);
            m->tl[i].thread_up = 0;
        }
    }
}
