/*
 * fuzz_mirror_listing.c -- the mirror's parser of a timeline's chunk
 * listing (GET /chunks: "<uri> <first-sn> <last-sn> <signature>" lines,
 * mirror/mr_sync.c), line by line as the sync thread reads it.  What
 * parses must be a path without "..", first <= last < UINT64_MAX (the
 * tree size last + 1 must not wrap) and a base64url signature; what does
 * not must say why.
 */
#include "fuzz.h"
#include "mr.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t   first, last;
    sk_err_t   err;
    char      *buf, *line, *nl, *end, *uri, *sig;

    if (memchr(data, 0, size) != NULL || (buf = malloc(size + 1)) == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = '\0';
    end = buf + size;
    for (line = buf; line < end; line = nl + 1) {
        if ((nl = strchr(line, '\n')) == NULL) {
            break;          /* the caller refuses an unterminated line */
        }
        *nl = '\0';
        memset(&err, 0, sizeof(err));
        if (mr_sync_listing_line(line, &uri, &first, &last, &sig, &err)
            != 0)
        {
            if (err.msg[0] == '\0') {
                abort();
            }
            continue;
        }
        if (uri < line || uri >= nl || sig < line || sig >= nl
            || uri[0] != '/' || strstr(uri, "..") != NULL
            || strchr(uri, ' ') != NULL || sig[0] == '\0'
            || strspn(sig, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(sig)
            || first > last || last == UINT64_MAX)
        {
            abort();
        }
    }
    free(buf);
    return 0;
}
