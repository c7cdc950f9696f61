/*
 * fuzz_mirror_cache.c -- the mirror's parser of an answer cache value read
 * back from Redis ("SK-Mirror-Cache: <servable> <built> <entries>\n" and
 * the answer; mirror/mr_cache.c).  Redis is shared, so a value may be
 * anything.  What parses must have been built for the servable timelines
 * asked, at a time that fits int64_t, its answer within the value.
 */
#include "fuzz.h"
#include "mr.h"

#define HEAD  "SK-Mirror-Cache: 1,2 "


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char  *buf;
    uint64_t        nrefs;
    int64_t         built;
    sk_err_t        err;
    size_t          off;

    if ((buf = (unsigned char *) fuzz_copy(data, size)) == NULL) {
        return 0;
    }
    memset(&err, 0, sizeof(err));
    if (mr_cache_parse(buf, size, "1,2", &built, &nrefs, &off, &err) == 0) {
        if (off > size || off <= strlen(HEAD) + 3 || buf[off - 1] != '\n'
            || memcmp(buf, HEAD, strlen(HEAD)) != 0 || built < 0
            || memchr(buf, '\n', off - 1) != NULL)
        {
            abort();
        }
    } else if (err.msg[0] == '\0'
               || (err.code != SK_ERR_FORMAT && err.code != SK_ERR_NOT_FOUND))
    {
        abort();
    }
    free(buf);
    return 0;
}
