/*
 * fuzz_tl_conf.c -- sk-timeline's configuration parser on arbitrary
 * bytes.  What parses must hold the required keys and pass the checks
 * that combine them.
 */
#include <stdint.h>
#include <stdlib.h>

#include "tl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tl_conf_t  conf;
    sk_err_t   err;

    if (tl_conf_parse(&conf, (const char *) data, size, "fuzz.conf", &err)
        == 0)
    {
        if (conf.listen == NULL || conf.data_dir == NULL || conf.tid == 0
            || conf.key_file == NULL || conf.origin == NULL
            || conf.tokens == 0 || conf.chunk_fanout < 2)
        {
            abort();
        }
        tl_conf_free(&conf);
    }
    return 0;
}
