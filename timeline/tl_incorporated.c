/*
 * tl_incorporated.c -- data_dir/incorporated.log: the copies of other
 * timelines' entries that this log's Incorporate entries refer to, and
 * the peers they come from ("peer = TID KEYFILE").
 *
 * The copy goes to data_dir/incorporated.log (synced) before the
 * Incorporate is written to the log, so a stamped Incorporate always has
 * its copy; a copy left without one by a crash, or by an append that
 * failed after it, is ignored.  The rules an Incorporate is held to are
 * tl_incorporate.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "tl.h"


/* "TID KEYFILE", as tl_conf.c checked it (again here: a conf may be
 * built without a file, as the fuzz harness does). */
static int
tl_inc_peer(tl_timeline_t *tl, const char *line, sk_err_t *err)
{
    uint64_t    tid;
    tl_peer_t  *p;
    size_t      i;
    char        path[TL_PATH_MAX];

    if (tl_conf_peer(line, &tid, path, sizeof(path), err) != 0) {
        return -1;
    }
    for (i = 0; i < tl->npeers; i++) {
        if (tl->peers[i].tid == tid) {
            return sk_err_set(err, SK_ERR_FORMAT, "peer %" PRIu64
                ": duplicate", tid);
        }
    }
    if (tid == tl->conf.tid) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "peer %" PRIu64 ": that is this timeline's own TID", tid);
    }
    p = realloc(tl->peers, (tl->npeers + 1) * sizeof(*p));
    if (p == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "peers");
    }
    tl->peers = p;
    p += tl->npeers;
    memset(p, 0, sizeof(*p));
    p->tid = tid;
    if (sk_key_load_public(&p->key, path, err) != 0) {
        return sk_err_prefix(err, "peer %" PRIu64, tid);
    }
    tl->npeers++;
    return 0;
}


tl_peer_t *
tl_inc_find_peer(tl_timeline_t *tl, uint64_t tid)
{
    size_t  i;

    for (i = 0; i < tl->npeers; i++) {
        if (tl->peers[i].tid == tid) {
            return &tl->peers[i];
        }
    }
    return NULL;
}


static int
tl_inc_index(tl_timeline_t *tl, const sk_entry_t *copy, off_t off,
    size_t len, sk_err_t *err)
{
    tl_copy_t  *c;
    size_t      cap;

    if (tl->ncopies == tl->copies_cap) {
        cap = tl->copies_cap != 0 ? tl->copies_cap * 2 : 64;
        c = realloc(tl->copies, cap * sizeof(*c));
        if (c == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "incorporated copies");
        }
        tl->copies = c;
        tl->copies_cap = cap;
    }
    c = &tl->copies[tl->ncopies];
    if (sk_entry_hash(c->hash, copy, err) != 0) {
        return -1;
    }
    c->off = off;
    c->len = len;
    tl->ncopies++;
    return 0;
}


/* Index incorporated.log from where the index ends.  A torn tail (a
 * crash while a copy was written, before its Incorporate could be) is
 * noted, and cut only once the log has been read back without it;
 * anything worse refuses (for --repair: is such a tail, to be
 * replaced). */
int
tl_inc_replay(tl_timeline_t *tl, sk_err_t *err)
{
    sk_entry_t   *e;
    size_t        pos = 0, used, len = 0;
    size_t        from = (size_t) tl_index_inc_from(tl);
    char         *buf = NULL;
    int           rc = 0;

    tl->inc.end = tl->inc.size;
    if (tl->inc.fd >= 0
        && tl_file_read(&tl->inc, (off_t) from, &buf, &len, err) != 0)
    {
        return -1;
    }
    while (pos < len && rc == 0) {
        if (sk_entry_parse_next(&e, &used, buf + pos, len - pos, err) != 0) {
            if (tl_file_entry_len(buf + pos, len - pos) == 0) {
                tl_file_torn(&tl->inc, (off_t) (from + pos), "truncating a "
                    "torn tail of %zu bytes at offset %zu", len - pos,
                    from + pos);
            } else if (tl->mode == TL_REPAIR) {
                sk_err_prefix(err, "%s: offset %zu", tl->inc.path,
                    from + pos);
                tl_file_torn(&tl->inc, (off_t) (from + pos), "%s", err->msg);
            } else {
                rc = sk_err_prefix(err, "%s: offset %zu", tl->inc.path,
                    from + pos);
            }
            break;
        }
        rc = tl_inc_index(tl, e, (off_t) (from + pos), used, err);
        sk_entry_free(e);
        pos += used;
    }
    free(buf);
    return rc;
}


int
tl_inc_open(tl_timeline_t *tl, sk_err_t *err)
{
    size_t  i;

    for (i = 0; i < tl->conf.peers.n; i++) {
        if (tl_inc_peer(tl, tl->conf.peers.v[i], err) != 0) {
            return -1;
        }
    }
    return tl_file_open(&tl->inc, tl, TL_INC_FILE, err);
}


void
tl_inc_close(tl_timeline_t *tl)
{
    size_t  i;

    for (i = 0; i < tl->npeers; i++) {
        sk_key_free(tl->peers[i].key);
    }
    free(tl->peers);
    free(tl->copies);
    tl_file_close(&tl->inc);
}


int
tl_inc_write(tl_timeline_t *tl, const sk_entry_t *ref, sk_err_t *err)
{
    size_t   len;
    off_t    at = tl->inc.end;
    char    *text;
    int      rc;

    if (sk_entry_format(&text, &len, ref, err) != 0) {
        return -1;
    }
    /* Synced, or cut back: never a part of a copy behind. */
    rc = tl_file_append(&tl->inc, text, len, 1, err) != 0 ? -1
        : tl_inc_index(tl, ref, at, len, err);
    free(text);
    return rc;
}


/* Under tl->lock: the copy whose hash is the Incorporate's
 * Incorporated-Hash, the newest first (those since the last flush), then
 * the index's; 1 if none. */
int
tl_inc_copy(tl_timeline_t *tl, const sk_entry_t *e, tl_copy_t *c,
    sk_err_t *err)
{
    unsigned char  *h;
    const char     *hb = sk_entry_get(e, "Incorporated-Hash");
    size_t          len, i;
    int             rc = 1;

    if (sk_b64_decode(&h, &len, hb, strlen(hb), NULL) != 0) {
        return 1;
    }
    for (i = tl->ncopies; len == SK_SHA256_BYTES && i > 0; i--) {
        if (memcmp(tl->copies[i - 1].hash, h, len) == 0) {
            *c = tl->copies[i - 1];
            rc = 0;
            break;
        }
    }
    if (rc == 1 && len == SK_SHA256_BYTES && tl->db != NULL) {
        rc = tl_index_copy_get(tl, h, c, err);
    }
    free(h);
    return rc;
}


/* The copy c names, which must hash to the Incorporated-Hash it is kept
 * under (the index's offset and length are checked, not trusted). */
int
tl_inc_load(tl_timeline_t *tl, const tl_copy_t *c, char **out, sk_err_t *err)
{
    unsigned char  h[SK_SHA256_BYTES];

    if (c->off < 0 || c->len > (size_t) tl->inc.end
        || c->off > tl->inc.end - (off_t) c->len)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: table copies: "
            "offset %jd, %zu bytes: past the end of %s", tl->db_dir,
            (intmax_t) c->off, c->len, tl->inc.path);
    }
    *out = malloc(c->len + 1);
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s", TL_INC_FILE);
    }
    if (pread(tl->inc.fd, *out, c->len, c->off) != (ssize_t) c->len) {
        free(*out);
        return sk_err_sys(err, "%s: read", TL_INC_FILE);
    }
    (*out)[c->len] = '\0';
    if (EVP_Digest(*out, c->len, h, NULL, EVP_sha256(), NULL) != 1
        || memcmp(h, c->hash, sizeof(h)) != 0)
    {
        free(*out);
        return sk_err_set(err, SK_ERR_FORMAT, "%s/data.mdb: table copies: "
            "offset %jd, %zu bytes of %s: not the copy of that hash",
            tl->db_dir, (intmax_t) c->off, c->len, tl->inc.path);
    }
    return 0;
}
