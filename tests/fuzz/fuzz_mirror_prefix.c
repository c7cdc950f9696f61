/*
 * fuzz_mirror_prefix.c -- the parser of sk-mirror's tl-<tid>/prefix head
 * (mirror/mr_prefix.c): the size line, the consistency proof, the
 * checkpoint.  Under a fresh key no checkpoint verifies, so a parse that
 * succeeds is a bug.
 */
#include "fuzz.h"
#include "mr.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mr_tlconf_t  conf = { .tid = 1, .origin = "sk-timeline-1" };
    mr_tl_t             t;
    mr_prefix_t         pf;
    sk_err_t            err;
    char               *buf;

    memset(&t, 0, sizeof(t));
    t.conf = &conf;
    t.key = fuzz_key();
    buf = fuzz_copy(data, size);
    if (buf == NULL) {
        return 0;
    }
    if (mr_prefix_parse(&pf, &t, buf, size, &err) == 0
        || err.msg[0] == '\0')
    {
        abort();
    }
    free(buf);
    return 0;
}
