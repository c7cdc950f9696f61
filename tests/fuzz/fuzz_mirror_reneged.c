/*
 * fuzz_mirror_reneged.c -- the mirror's parser of a peer's reneged list
 * (GET /reneged: "<tid>\n" lines, ascending; mirror/mr_track.c).  What
 * parses must be TIDs from 1, strictly ascending, one per line of the
 * input; what does not must say why and keep nothing.
 */
#include "fuzz.h"
#include "mr.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t  *tids = NULL;
    sk_err_t   err;
    size_t     n = 0, i, lines = 0;
    char      *buf;

    if ((buf = fuzz_copy(data, size)) == NULL) {
        return 0;
    }
    memset(&err, 0, sizeof(err));
    if (mr_track_parse(&tids, &n, buf, size, &err) == 0) {
        for (i = 0; i < size; i++) {
            lines += buf[i] == '\n';
        }
        if (n != lines || (size > 0 && buf[size - 1] != '\n')
            || (n > 0 && tids[0] == 0))
        {
            abort();
        }
        for (i = 1; i < n; i++) {
            if (tids[i] <= tids[i - 1]) {
                abort();
            }
        }
    } else if (err.msg[0] == '\0' || tids != NULL || n != 0) {
        abort();
    }
    free(tids);
    free(buf);
    return 0;
}
