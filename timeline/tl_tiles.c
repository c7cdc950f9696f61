/*
 * tl_tiles.c -- GET /tile/<L>/<N>[.p/<W>] and /tile/entries/<N>[.p/<W>]
 * (c2sp.org/tlog-tiles): the tree's hashes and the entries, 256 to a
 * file, for any client or HTTP cache.  Only what signed-head covers is
 * served (the durable size), so a tile never shows an entry before its
 * checkpoint could.  A full tile never changes: cached for a year; a
 * partial one is also fixed for its width, but a client asks for wider
 * ones as the log grows, so a short max-age keeps caches small.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>
#include <sk/httpd.h>

#include "tl.h"

#define TL_TILES_TYPE     "application/octet-stream"
#define TL_TILES_FULL     "public, max-age=31536000, immutable"
#define TL_TILES_PARTIAL  "public, max-age=5"


/* Entries first..first+width-1, each as a big-endian uint16 length and
 * its canonical text. */
static int
tl_tiles_bundle(tl_timeline_t *tl, char **out, size_t *outlen,
    uint64_t first, unsigned width, sk_err_t *err)
{
    char     *buf = NULL, *text, *p;
    size_t    len = 0, cap = 0, tlen;
    unsigned  k;

    for (k = 0; k < width; k++) {
        if (tl_store_read(tl, &text, &tlen, first + k, first + k, err) != 0) {
            free(buf);
            return -1;
        }
        if (tlen > SK_TILE_ENTRY_MAX) {
            free(text);
            free(buf);
            return sk_err_set(err, SK_ERR_FORMAT, "SN %" PRIu64 ": %zu "
                "bytes, more than an entry bundle holds", first + k, tlen);
        }
        if (len + 2 + tlen > cap) {
            cap = (len + 2 + tlen) * 2;
            p = realloc(buf, cap);
            if (p == NULL) {
                free(text);
                free(buf);
                return sk_err_set(err, SK_ERR_NOMEM, "entry bundle");
            }
            buf = p;
        }
        buf[len] = (char) (tlen >> 8);
        buf[len + 1] = (char) (tlen & 0xff);
        memcpy(buf + len + 2, text, tlen);
        len += 2 + tlen;
        free(text);
    }
    *out = buf;
    *outlen = len;
    return 0;
}


enum MHD_Result
tl_tiles_get(struct MHD_Connection *c, tl_timeline_t *tl, const char *path)
{
    sk_err_t   err;
    uint64_t   n, durable;
    unsigned   width;
    size_t     len = 0;
    char      *out = NULL, q[SK_HTTPD_QUOTE_SIZE];
    int        level, rc;

    if (sk_tile_path_parse(&level, &n, &width, path, &err) != 0) {
        /* err quotes the path raw: only a short, printable one. */
        if (strcmp(sk_httpd_quote(q, path), path) != 0) {
            return sk_httpd_text(c, MHD_HTTP_NOT_FOUND,
                "tile path \"%s\": not a tile path\n", q);
        }
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "%s\n", err.msg);
    }
    pthread_mutex_lock(&tl->lock);
    durable = tl->durable;
    if (level == SK_TILE_ENTRIES) {
        pthread_mutex_unlock(&tl->lock);
        if (n > durable / SK_TILE_WIDTH
            || n * SK_TILE_WIDTH + width > durable)
        {
            return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "tile/%s: beyond "
                "the %" PRIu64 " entries signed\n", path, durable);
        }
        rc = tl_tiles_bundle(tl, &out, &len, n * SK_TILE_WIDTH, width, &err);
    } else if (level >= SK_TILE_LEVELS) {
        pthread_mutex_unlock(&tl->lock);
        return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "tile/%s: beyond the "
            "tree's levels\n", path);
    } else {
        out = malloc(SK_TILE_BYTES);
        rc = out == NULL ? sk_err_set(&err, SK_ERR_NOMEM, "tile")
            : sk_merkle_tree_tile((unsigned char *) out, &len, tl->tree,
                  (unsigned) level, n, width, durable, &err);
        tl_tree_note(tl);
        pthread_mutex_unlock(&tl->lock);
        if (rc != 0 && err.code == SK_ERR_NOT_FOUND) {
            free(out);
            return sk_httpd_text(c, MHD_HTTP_NOT_FOUND, "tile/%s: %s\n",
                path, err.msg);
        }
    }
    if (rc != 0) {
        free(out);
        return sk_httpd_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "tile/%s: "
            "%s\n", path, err.msg);
    }
    return sk_httpd_reply_cached(c, MHD_HTTP_OK, out, len, TL_TILES_TYPE,
        width == SK_TILE_WIDTH ? TL_TILES_FULL : TL_TILES_PARTIAL);
}
