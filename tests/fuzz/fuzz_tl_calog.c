/*
 * fuzz_tl_calog.c -- sk-timeline's stored form of entries (CA certificates
 * kept once, in certs.log) on arbitrary bytes: the input up to the first
 * NUL is certs.log, the rest stored entries.  Whatever unpacks must pack
 * and unpack back to itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char  dir[] = "/tmp/fuzz-calog-XXXXXX";
static char  path[128];


static void
fuzz_cleanup(void)
{
    unlink(path);
    rmdir(dir);
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    if (mkdtemp(dir) == NULL) {
        abort();
    }
    snprintf(path, sizeof(path), "%s/certs.log", dir);
    atexit(fuzz_cleanup);
    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t  *nul = memchr(data, 0, size);
    tl_timeline_t   tl;
    sk_err_t        err;
    char           *text, *stored, *again;
    size_t          len, slen, alen, clen;
    FILE           *f;

    clen = nul != NULL ? (size_t) (nul - data) : size;
    f = fopen(path, "w");
    if (f == NULL || fwrite(data, 1, clen, f) != clen || fclose(f) != 0) {
        abort();
    }
    memset(&tl, 0, sizeof(tl));
    pthread_rwlock_init(&tl.calog_lock, NULL);
    tl.conf.data_dir = dir;
    tl.calog_file.fd = -1;
    if (tl_calog_open(&tl, &err) == 0 && nul != NULL) {
        if (tl_calog_unpack(&tl, &text, &len, (const char *) nul + 1,
                size - clen - 1, &err) == 0)
        {
            if (tl_calog_pack(&tl, &stored, &slen, text, len, &err) != 0) {
                abort();
            }
            if (tl_calog_unpack(&tl, &again, &alen, stored, slen, &err) != 0
                || alen != len || memcmp(again, text, len) != 0)
            {
                abort();
            }
            free(again);
            free(stored);
            free(text);
        }
    }
    tl_calog_close(&tl);
    pthread_rwlock_destroy(&tl.calog_lock);
    return 0;
}
