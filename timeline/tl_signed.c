/*
 * tl_signed.c -- data_dir/signed-head: the largest tree this timeline may
 * have shown a signature over, and its root.
 *
 * Every signed thing that leaves the process (a 201's stamped entry,
 * /entry, /status, /checkpoint, proofs, chunks, a token's outcome) covers
 * only entries this record already holds: tl_store_wait writes it, synced,
 * after the log's own sync and before it moves tl->durable.  So at start
 * the log must hold at least that many entries, with that root; if not,
 * something acknowledged was lost or changed, and the timeline refuses to
 * start rather than sign a second tree of the same size with another root
 * (a fork).  Bytes past the record's size were never shown to anyone,
 * which is what makes cutting a torn tail at start safe.
 *
 * The file is two slots of TL_SIGNED_SLOT bytes written in turn, each one
 * line "signed-head 1 <tid> <size> <root, base64url> <check>" padded with
 * spaces, check being the first 8 bytes of the SHA-256 of the text before
 * it, in hex.  A write cut short spoils only the slot being written; the
 * other still holds the head before it.  A slot is rewritten in place, so
 * once the file exists its writes need no new disk space.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tl.h"

#define TL_SIGNED_SLOT   128
#define TL_SIGNED_CHECK  8      /* bytes of SHA-256 in a slot's check */


static void
tl_signed_path(char *buf, size_t cap, const tl_timeline_t *tl)
{
    snprintf(buf, cap, "%s/%s", tl->conf.data_dir, TL_SIGNED_FILE);
}


/* The slot for (size, root): its line, spaces, a newline. */
static void
tl_signed_format(char slot[TL_SIGNED_SLOT], uint64_t tid, uint64_t size,
    const sk_merkle_hash_t root)
{
    unsigned char  h[SK_SHA256_BYTES];
    char           rootb[64];
    int            n, i;

    sk_b64_encode(rootb, root, SK_MERKLE_HASH_BYTES);
    memset(slot, ' ', TL_SIGNED_SLOT);
    n = snprintf(slot, TL_SIGNED_SLOT, "signed-head 1 %" PRIu64 " %" PRIu64
        " %s", tid, size, rootb);
    sk_merkle_digest(h, slot, (size_t) n);
    slot[n++] = ' ';
    for (i = 0; i < TL_SIGNED_CHECK; i++) {
        n += snprintf(slot + n, 3, "%02x", h[i]);
    }
    slot[n] = ' ';
    slot[TL_SIGNED_SLOT - 1] = '\n';
}


/* One slot back: 0 and its tid, size and root, or -1 if it is not one
 * this code wrote whole. */
static int
tl_signed_parse(const char *slot, uint64_t *tid, uint64_t *size,
    sk_merkle_hash_t root)
{
    char                 text[TL_SIGNED_SLOT], again[TL_SIGNED_SLOT];
    char                 rootb[64], check[2 * TL_SIGNED_CHECK + 1];
    unsigned char       *raw;
    unsigned long long   t, s;
    size_t               len = TL_SIGNED_SLOT - 1, rawlen;
    int                  used = 0;

    if (slot[len] != '\n' || memchr(slot, '\n', len) != NULL
        || memchr(slot, '\0', len) != NULL)
    {
        return -1;
    }
    memcpy(text, slot, len);
    while (len > 0 && text[len - 1] == ' ') {
        len--;
    }
    text[len] = '\0';
    if (sscanf(text, "signed-head 1 %llu %llu %63s %16s%n", &t, &s, rootb,
            check, &used) != 4 || (size_t) used != len
        || sk_b64_decode(&raw, &rawlen, rootb, strlen(rootb), NULL) != 0)
    {
        return -1;
    }
    if (rawlen == SK_MERKLE_HASH_BYTES) {
        memcpy(root, raw, rawlen);
    }
    free(raw);
    if (rawlen != SK_MERKLE_HASH_BYTES) {
        return -1;
    }
    tl_signed_format(again, t, s, root);
    if (memcmp(again, slot, TL_SIGNED_SLOT) != 0) {
        return -1;          /* the check (or the spelling) is not ours */
    }
    *tid = t;
    *size = s;
    return 0;
}


/* Write the whole file anew, both slots (size, root): a new data_dir, or
 * a repair.  Atomic, so no half-made file is ever seen. */
int
tl_signed_create(tl_timeline_t *tl, uint64_t size,
    const sk_merkle_hash_t root, sk_err_t *err)
{
    char  buf[2 * TL_SIGNED_SLOT], path[4096];

    tl_signed_path(path, sizeof(path), tl);
    tl_signed_format(buf, tl->conf.tid, size, root);
    memcpy(buf + TL_SIGNED_SLOT, buf, TL_SIGNED_SLOT);
    if (sk_file_write_atomic(path, buf, sizeof(buf), 0644, err) != 0) {
        return -1;
    }
    if (tl->signed_fd >= 0) {
        close(tl->signed_fd);
    }
    tl->signed_fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (tl->signed_fd < 0) {
        return sk_err_sys(err, "%s: open", path);
    }
    tl->signed_have = 1;
    tl->signed_slot = 0;
    tl->signed_size = size;
    memcpy(tl->signed_root, root, SK_MERKLE_HASH_BYTES);
    return 0;
}


/* No file: a new data_dir gets one (size 0), a used one is damaged. */
static int
tl_signed_missing(tl_timeline_t *tl, const char *path, sk_err_t *err)
{
    sk_merkle_hash_t  empty;
    struct stat       st;
    char              log[4096];

    snprintf(log, sizeof(log), "%s/%s", tl->conf.data_dir, TL_LOG_FILE);
    if (stat(log, &st) == 0 && st.st_size > 0 && tl->mode != TL_REPAIR) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "%s: missing, yet %s "
            "holds %jd bytes of entries: what this timeline signed is "
            "unknown (sk-timeline --repair writes it after checking every "
            "file)", path, TL_LOG_FILE, (intmax_t) st.st_size);
    }
    if (tl->mode != TL_RUN) {
        return 0;
    }
    sk_merkle_empty_root(empty);
    return tl_signed_create(tl, 0, empty, err);
}


int
tl_signed_open(tl_timeline_t *tl, sk_err_t *err)
{
    char              path[4096], buf[2 * TL_SIGNED_SLOT + 1];
    uint64_t          tid[2] = { 0, 0 }, size[2] = { 0, 0 };
    sk_merkle_hash_t  root[2];
    struct stat       st;
    ssize_t           n;
    unsigned          best;
    int               ok[2];

    tl_signed_path(path, sizeof(path), tl);
    tl->signed_have = 0;
    tl->signed_size = 0;
    sk_merkle_empty_root(tl->signed_root);
    tl->signed_fd = open(path, (tl->mode == TL_CHECK ? O_RDONLY : O_RDWR)
        | O_CLOEXEC | O_NOFOLLOW);
    if (tl->signed_fd < 0) {
        return errno == ENOENT ? tl_signed_missing(tl, path, err)
                               : sk_err_sys(err, "%s: open", path);
    }
    if (fstat(tl->signed_fd, &st) != 0) {
        return sk_err_sys(err, "%s: fstat", path);
    }
    n = pread(tl->signed_fd, buf, sizeof(buf), 0);
    if (n < 0) {
        return sk_err_sys(err, "%s: read", path);
    }
    if (n != 2 * TL_SIGNED_SLOT) {
        ok[0] = ok[1] = 0;
    } else {
        ok[0] = tl_signed_parse(buf, &tid[0], &size[0], root[0]) == 0;
        ok[1] = tl_signed_parse(buf + TL_SIGNED_SLOT, &tid[1], &size[1],
            root[1]) == 0;
    }
    if (!ok[0] && !ok[1]) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: damaged (%zd bytes, "
            "neither slot holds a signed head)", path, n);
    }
    best = !ok[0] || (ok[1] && size[1] > size[0]);
    if (tid[best] != tl->conf.tid) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: the head of timeline %"
            PRIu64 ", not of this one (%" PRIu64 ")", path, tid[best],
            tl->conf.tid);
    }
    if (ok[0] && ok[1] && size[0] == size[1]
        && memcmp(root[0], root[1], SK_MERKLE_HASH_BYTES) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: two roots for tree size %"
            PRIu64, path, size[0]);
    }
    if (!ok[best ^ 1]) {
        /* A write cut short by a crash; the next write goes there. */
        tl_log("%s: slot %u unreadable, using slot %u (tree size %" PRIu64
            ")", path, best ^ 1, best, size[best]);
    }
    tl->signed_have = 1;
    tl->signed_slot = best ^ 1;
    tl->signed_size = size[best];
    memcpy(tl->signed_root, root[best], SK_MERKLE_HASH_BYTES);
    return 0;
}


int
tl_signed_verify(tl_timeline_t *tl, sk_err_t *err)
{
    sk_merkle_hash_t  root;
    char              b[64];

    if (!tl->signed_have) {
        return 0;
    }
    if (tl->size < tl->signed_size) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: offset %jd (SN %" PRIu64
            "): the log ends here, yet %s says SN 0..%" PRIu64 " were signed "
            "and shown; nothing was changed (sk-timeline --repair)",
            tl->log.path, (intmax_t) tl->end_off, tl->size,
            TL_SIGNED_FILE, tl->signed_size - 1);
    }
    if (sk_merkle_tree_root(root, tl->tree, tl->signed_size, err) != 0) {
        return -1;
    }
    if (memcmp(root, tl->signed_root, sizeof(root)) != 0) {
        sk_b64_encode(b, tl->signed_root, sizeof(root));
        return sk_err_set(err, SK_ERR_FORMAT, "%s: its first %" PRIu64
            " entries are not those signed (%s holds root %s): an entry "
            "before SN %" PRIu64 " was changed", tl->log.path,
            tl->signed_size, TL_SIGNED_FILE, b, tl->signed_size);
    }
    return 0;
}


int
tl_signed_write(tl_timeline_t *tl, uint64_t size, const sk_merkle_hash_t root,
    sk_err_t *err)
{
    char   slot[TL_SIGNED_SLOT];
    off_t  at = (off_t) tl->signed_slot * TL_SIGNED_SLOT;

    tl_signed_format(slot, tl->conf.tid, size, root);
    if (pwrite(tl->signed_fd, slot, sizeof(slot), at) != (ssize_t) sizeof(slot)
        || fdatasync(tl->signed_fd) != 0)
    {
        /* The other slot still holds the head; this one is retried. */
        return sk_err_sys(err, "%s/%s: write", tl->conf.data_dir,
            TL_SIGNED_FILE);
    }
    tl->signed_slot ^= 1;
    tl->signed_size = size;
    memcpy(tl->signed_root, root, SK_MERKLE_HASH_BYTES);
    return 0;
}


void
tl_signed_close(tl_timeline_t *tl)
{
    if (tl->signed_fd >= 0) {
        close(tl->signed_fd);
    }
    tl->signed_fd = -1;
}
