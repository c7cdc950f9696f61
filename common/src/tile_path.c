/*
 * tile_path.c -- the names of C2SP tlog-tiles (c2sp.org/tlog-tiles):
 * <L>/<N>[.p/<W>] below "tile/", N in 3-digit elements ("x001/x234/067").
 * The parser takes only the one canonical spelling, so a cache keyed by
 * URL never holds one tile under two names.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sk/merkle.h"


void
sk_tile_path(char out[SK_TILE_PATH_MAX], int level, uint64_t n,
    unsigned width)
{
    unsigned  group[8];
    size_t    ng = 0, pos;
    int       w;

    do {
        group[ng++] = (unsigned) (n % 1000);
        n /= 1000;
    } while (n != 0);
    w = level == SK_TILE_ENTRIES ? snprintf(out, SK_TILE_PATH_MAX, "entries/")
        : snprintf(out, SK_TILE_PATH_MAX, "%d/", level);
    pos = (size_t) w;
    while (ng > 1) {
        pos += (size_t) snprintf(out + pos, SK_TILE_PATH_MAX - pos, "x%03u/",
            group[--ng]);
    }
    pos += (size_t) snprintf(out + pos, SK_TILE_PATH_MAX - pos, "%03u",
        group[0]);
    if (width < SK_TILE_WIDTH) {
        snprintf(out + pos, SK_TILE_PATH_MAX - pos, ".p/%u", width);
    }
}


/* Exactly 3 digits at p. */
static int
sk_tile_digits3(const char *p, unsigned *v)
{
    int  i;

    *v = 0;
    for (i = 0; i < 3; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return -1;
        }
        *v = *v * 10 + (unsigned) (p[i] - '0');
    }
    return 0;
}


int
sk_tile_path_parse(int *level, uint64_t *n, unsigned *width,
    const char *path, sk_err_t *err)
{
    const char  *p = path;
    unsigned     v, w = 0;
    uint64_t     acc = 0;
    int          lv = 0, last = 0;

    if (strncmp(p, "entries/", 8) == 0) {
        lv = SK_TILE_ENTRIES;
        p += 8;
    } else {
        /* 0..63, no leading zero. */
        if (p[0] < '0' || p[0] > '9' || (p[0] == '0' && p[1] != '/')) {
            return sk_err_set(err, SK_ERR_FORMAT, "tile path \"%.64s\": bad "
                "level", path);
        }
        while (*p >= '0' && *p <= '9' && lv < 100) {
            lv = lv * 10 + (*p++ - '0');
        }
        if (lv > 63 || *p++ != '/') {
            return sk_err_set(err, SK_ERR_FORMAT, "tile path \"%.64s\": bad "
                "level", path);
        }
    }
    while (!last) {
        last = *p != 'x';
        if (!last) {
            p++;
        }
        if (sk_tile_digits3(p, &v) != 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "tile path \"%.64s\": an "
                "index element is not 3 digits", path);
        }
        /* The first element of a multi-element index is never 000, and
         * the whole index fits 64 bits. */
        if ((!last && acc == 0 && v == 0)
            || acc > (UINT64_MAX - v) / 1000)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "tile path \"%.64s\": "
                "non-canonical or too large index", path);
        }
        acc = acc * 1000 + v;
        p += 3;
        if (!last && *p++ != '/') {
            return sk_err_set(err, SK_ERR_FORMAT, "tile path \"%.64s\": "
                "missing \"/\" after an index element", path);
        }
    }
    if (*p == '\0') {
        w = SK_TILE_WIDTH;
    } else if (strncmp(p, ".p/", 3) == 0 && p[3] >= '1' && p[3] <= '9') {
        for (p += 3; *p >= '0' && *p <= '9' && w < SK_TILE_WIDTH; p++) {
            w = w * 10 + (unsigned) (*p - '0');
        }
        if (*p != '\0' || w >= SK_TILE_WIDTH) {
            return sk_err_set(err, SK_ERR_FORMAT, "tile path \"%.64s\": "
                "partial width not 1..255", path);
        }
    } else {
        return sk_err_set(err, SK_ERR_FORMAT, "tile path \"%.64s\": bytes "
            "after the index", path);
    }
    *level = lv;
    *n = acc;
    *width = w;
    return 0;
}
