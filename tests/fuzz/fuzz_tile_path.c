/*
 * fuzz_tile_path.c -- sk_tile_path_parse on arbitrary bytes (the part of a
 * GET /tile/ URL after "tile/").
 *
 * Only one spelling of each tile is accepted, so whatever parses must be
 * written back by sk_tile_path byte for byte, with a level, index and
 * width in range; an HTTP cache keyed by URL then never holds one tile
 * under two names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char      in[SK_TILE_PATH_MAX + 16], out[SK_TILE_PATH_MAX];
    sk_err_t  err;
    uint64_t  n;
    unsigned  width;
    int       level;

    if (size >= sizeof(in)) {
        return 0;
    }
    memcpy(in, data, size);
    in[size] = '\0';
    if (sk_tile_path_parse(&level, &n, &width, in, &err) != 0) {
        if (err.code != SK_ERR_FORMAT) {
            abort();
        }
        return 0;
    }
    if (level < SK_TILE_ENTRIES || level > 63 || width == 0
        || width > SK_TILE_WIDTH)
    {
        abort();
    }
    sk_tile_path(out, level, n, width);
    if (strcmp(out, in) != 0) {
        abort();        /* a second spelling was accepted */
    }
    return 0;
}
