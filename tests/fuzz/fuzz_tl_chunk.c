/*
 * fuzz_tl_chunk.c -- sk-timeline's chunk index parser on arbitrary bytes
 * ("first last level sig" lines).  The timeline pretends to hold 1000
 * entries; what loads must be contiguous chunks from SN 0 within them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tl_timeline_t  tl;
    sk_err_t       err;
    uint64_t       next = 0;
    size_t         i;
    char          *buf;

    if (memchr(data, 0, size) != NULL || (buf = malloc(size + 1)) == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = '\0';
    memset(&tl, 0, sizeof(tl));
    pthread_mutex_init(&tl.chunk_lock, NULL);
    tl.conf.data_dir = "/nonexistent";
    tl.durable = tl.size = 1000;
    if (tl_chunk_load(&tl, "index", buf, &err) == 0) {
        for (i = 0; i < tl.nchunks; i++) {
            if (tl.chunks[i].first != next || tl.chunks[i].last < next
                || tl.chunks[i].last >= 1000)
            {
                abort();
            }
            next = tl.chunks[i].last + 1;
        }
        if (next != tl.published) {
            abort();
        }
    }
    for (i = 0; i < tl.nchunks; i++) {
        free(tl.chunks[i].sig);
    }
    free(tl.chunks);
    free(buf);
    pthread_mutex_destroy(&tl.chunk_lock);
    return 0;
}
