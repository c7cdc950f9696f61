/*
 * fuzz_client_cache_state.c -- the client cache's parser of a mirror
 * state file (DIR/mirrors/<hex>, common/src/client/client_cache.c):
 * stored input a crash or another program may have mangled.  What parses
 * must list each TID once with a timestamp within int64_t, its file
 * ending in a newline; what does not must say why, on which line, and
 * leave a fresh state for the mirror.
 */
#include "fuzz.h"
#include "../../common/src/client/client_int.h"

#define URL  "http://m0.test"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_client_mstate_t  st;
    sk_err_t            err;
    size_t              i, j;
    char               *buf;

    if ((buf = fuzz_copy(data, size)) == NULL) {
        return 0;
    }
    memset(&err, 0, sizeof(err));
    if (sk_cl_mstate_parse(&st, URL, buf, size, &err) == 0) {
        if (size == 0 || data[size - 1] != '\n'
            || memchr(data, 0, size) != NULL
            || st.ntl > SK_CLIENT_MAX_TIMELINES || strcmp(st.url, URL) != 0
            || (st.reneged_hash[0] != '\0' && strlen(st.reneged_hash) != 8))
        {
            abort();
        }
        for (i = 0; i < st.ntl; i++) {
            if (st.ts[i] < 0) {
                abort();
            }
            for (j = 0; j < i; j++) {
                if (st.tid[i] == st.tid[j]) {
                    abort();
                }
            }
        }
    } else if (err.msg[0] == '\0' || st.ntl != 0 || st.dropped
               || strcmp(st.url, URL) != 0)
    {
        abort();
    }
    sk_client_mstate_free(&st);
    free(buf);
    return 0;
}
