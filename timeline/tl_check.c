/*
 * tl_check.c -- sk-timeline --check: every file of the data directory
 * read back and checked offline, as a start would and more, changing
 * nothing.  Each problem is one line on stdout; exit 0 if there is none.
 *
 *   timeline.key, timeline.pub   the key loads (0600), the public half is its
 *   signed-head                  a slot holds a head of this TID
 *   certs.log, incorporated.log  whole lines and copies
 *   entries.log                  every entry: SN, TID, time order, every
 *                                timeline signature, the state rules, and
 *                                the head's size and root
 *   index/                       as the log implies: every entry row up to
 *                                where it ends; every name, budget, root
 *                                and copy if it is level with the log
 *   chunks/index, the .bz2s      contiguous, within the log; each file's
 *                                signature, its entries byte for byte the
 *                                log's, its TFM signed with the log's root
 *
 * A torn tail past everything signed-head covers is a note, not a problem:
 * a crash left it, and a start cuts it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <sk/tfm.h>

#include "tl.h"


static unsigned  tl_check_problems;


static void
tl_check_say(const char *fmt, ...) SK_PRINTF(1, 2);

static void
tl_check_say(const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    tl_vlog(stdout, fmt, ap);
    va_end(ap);
    tl_check_problems++;
}


/* A key to check signatures with: the private one, else the public. */
static int
tl_check_key(tl_timeline_t *tl)
{
    sk_err_t  err;
    char      pub[4096];

    if (tl_open_key(tl, &err) == 0) {
        return 0;
    }
    tl_check_say("%s", err.msg);
    snprintf(pub, sizeof(pub), "%s/%s", tl->conf.data_dir, TL_PUB_FILE);
    if (sk_key_load_public(&tl->key, pub, &err) != 0) {
        tl_check_say("%s; no key to check signatures with", err.msg);
        return -1;
    }
    return 0;
}


/* What a crash left past the signed head: cut at start, not a problem. */
static void
tl_check_torn(const tl_file_t *f)
{
    if (f->fd >= 0 && f->size != f->end) {
        tl_say("%s: note: %s at start (a write never acknowledged)",
            f->path, f->note);
    }
}


/* The TFM closing chunk c: signed, and over the log's first last + 1. */
static int
tl_check_tfm(tl_timeline_t *tl, const tl_chunk_t *c, const char *p,
    size_t len, sk_err_t *err)
{
    sk_merkle_hash_t  root;
    sk_tfm_t          tfm;
    size_t            used;

    if (sk_tfm_verify(&tfm, &used, p, len, tl->key, err) != 0) {
        return -1;
    }
    if (used != len || tfm.tid != tl->conf.tid
        || tfm.tree_size != c->last + 1)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "its TFM is not the last "
            "thing in it, or not of TID %" PRIu64 " and size %" PRIu64,
            tl->conf.tid, c->last + 1);
    }
    if (c->last < tl->size
        && (sk_merkle_tree_root(root, tl->tree, c->last + 1, err) != 0
            || memcmp(root, tfm.root, sizeof(root)) != 0))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "its TFM's root is not the "
            "log's at size %" PRIu64, c->last + 1);
    }
    return 0;
}


/* The bytes of chunk c against its signature, or c->sig made. */
static int
tl_check_chunk_sig(tl_timeline_t *tl, tl_chunk_t *c, const char *bz,
    size_t bzlen, sk_err_t *err)
{
    unsigned char  *sig;
    size_t          siglen;
    int             rc;

    if (c->sig == NULL) {
        if (sk_key_sign(&sig, &siglen, tl->key, (const unsigned char *) bz,
                bzlen, err) != 0)
        {
            return -1;
        }
        c->sig = sk_b64_encode_alloc(sig, siglen);
        free(sig);
        return c->sig != NULL ? 0
            : sk_err_set(err, SK_ERR_NOMEM, "chunk signature");
    }
    if (sk_b64_decode(&sig, &siglen, c->sig, strlen(c->sig), err) != 0) {
        return -1;
    }
    rc = sk_key_verify(tl->key, sig, siglen, (const unsigned char *) bz,
        bzlen, err) == 0 ? 0
        : sk_err_set(err, SK_ERR_SIGNATURE, "the index's signature does not "
            "verify over the file");
    free(sig);
    return rc;
}


int
tl_check_chunk(tl_timeline_t *tl, tl_chunk_t *c, sk_err_t *err)
{
    uint64_t  sn;
    size_t    bzlen, len, pos = 0, n, elen;
    char     *bz, *text, *entry;
    int       rc = 0;

    if (tl_chunk_read(tl, c->first, c->last, &bz, &bzlen, &text, &len, err)
        != 0)
    {
        return -1;
    }
    for (sn = c->first; rc == 0 && sn <= c->last; sn++, pos += n) {
        n = tl_file_entry_len(text + pos, len - pos);
        if (n == 0) {
            rc = sk_err_set(err, SK_ERR_FORMAT, "SN %" PRIu64 ": no whole "
                "entry", sn);
        } else if (sn >= tl->size) {
            rc = sk_err_set(err, SK_ERR_FORMAT, "holds SN %" PRIu64 ", past "
                "the log's end (--repair can take entries from it)", sn);
        } else if (tl_store_read(tl, &entry, &elen, sn, sn, err) == 0) {
            if (elen != n || memcmp(entry, text + pos, n) != 0) {
                rc = sk_err_set(err, SK_ERR_FORMAT, "SN %" PRIu64 " differs "
                    "from the log's", sn);
            }
            free(entry);
        } else {
            rc = -1;
        }
    }
    if (rc == 0) {
        rc = tl_check_tfm(tl, c, text + pos, len - pos, err);
    }
    if (rc == 0) {
        rc = tl_check_chunk_sig(tl, c, bz, bzlen, err);
    }
    free(bz);
    free(text);
    return rc;
}


int
tl_check(tl_timeline_t *tl)
{
    sk_err_t  err;
    size_t    i;

    tl->conf.verify_on_start = 1;
    tl_check_problems = 0;
    if (tl_open_lock(tl, &err) != 0) {
        fprintf(stderr, "%s: %s\n", TL_PROG, err.msg);
        return EX_TEMPFAIL;
    }
    if (tl_check_key(tl) != 0) {
        return 1;
    }
    if (tl->conf.operator_key != NULL
        && sk_key_load_public(&tl->operator_key, tl->conf.operator_key, &err)
           != 0)
    {
        tl_check_say("%s", err.msg);
    }
    /* Each file as far as it reads; one problem need not hide the next. */
    if (tl_signed_open(tl, &err) != 0) {
        tl_check_say("%s", err.msg);
    }
    if (tl_inc_open(tl, &err) != 0) {
        tl_check_say("%s", err.msg);
    }
    if (tl_calog_open(tl, &err) != 0) {
        tl_check_say("%s", err.msg);
    }
    if (tl_store_open(tl, &err) != 0) {
        tl_check_say("%s", err.msg);
    } else {
        tl_check_torn(&tl->log);
        tl_check_torn(&tl->calog_file);
        tl_check_torn(&tl->inc);
        if (tl_tree_check(tl, &err) != 0) {
            tl_check_say("%s (sk-timeline --repair rebuilds the tiles)",
                err.msg);
        }
        tl_check_problems += tl_index_check(tl);
    }
    if (tl_chunk_open(tl, &err) != 0) {
        tl_check_say("%s", err.msg);
    }
    for (i = 0; i < tl->nchunks; i++) {
        if (tl_check_chunk(tl, &tl->chunks[i], &err) != 0) {
            tl_check_say("%s/chunks/%" PRIu64 "-%" PRIu64 ".bz2: %s",
                tl->conf.data_dir, tl->chunks[i].first, tl->chunks[i].last,
                err.msg);
        }
    }
    if (tl_check_problems > 0) {
        tl_say("%s: %u problem%s", tl->conf.data_dir, tl_check_problems,
            tl_check_problems == 1 ? "" : "s");
        return 1;
    }
    tl_say("%s: ok: %" PRIu64 " entries, signed head %" PRIu64 ", %" PRIu64
        " entries in %zu chunks", tl->conf.data_dir, tl->size,
        tl->signed_size, tl->published, tl->nchunks);
    return EX_OK;
}
