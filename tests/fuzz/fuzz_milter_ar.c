/*
 * fuzz_milter_ar.c -- sk-milter's Authentication-Results parser
 * (sk_milter/skm_ar.c) on arbitrary header values.
 *
 * The parse stays inside the value and reports where it stopped; an
 * authserv-id it reads is never longer than the value, quoted again it
 * parses back to itself, and a field carrying it counts as that id's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sk_milter/skm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    skm_ar_t     ar, again;
    const char  *why;
    char         quoted[2 * SKM_AR_ID_MAX + 16];
    size_t       off, i, n;
    int          rc;

    rc = skm_ar_parse(&ar, (const char *) data, size, &off, &why);
    if (rc == 0 ? (why != NULL || off != size || !ar.hasid)
                : (why == NULL || off > size))
    {
        abort();
    }
    if (!ar.hasid) {
        if (!skm_ar_is_ours((const char *) data, size, "x")) {
            abort();                /* unreadable: removed as forged */
        }
        return 0;
    }
    if (ar.idlen > size || strlen(ar.id) != (ar.idlen < sizeof(ar.id)
                                              ? ar.idlen : sizeof(ar.id) - 1))
    {
        abort();
    }
    if (ar.idlen >= sizeof(ar.id)) {
        return 0;
    }
    n = 0;
    quoted[n++] = '"';
    for (i = 0; i < ar.idlen; i++) {
        if (ar.id[i] == '"' || ar.id[i] == '\\') {
            quoted[n++] = '\\';
        }
        quoted[n++] = ar.id[i];
    }
    memcpy(quoted + n, "\"; none", 7);
    n += 7;
    if (skm_ar_parse(&again, quoted, n, &off, &why) != 0
        || again.idlen != ar.idlen || memcmp(again.id, ar.id, ar.idlen) != 0
        || !again.none)
    {
        abort();
    }
    if (ar.id[0] != '\0' && !skm_ar_is_ours((const char *) data, size, ar.id))
    {
        abort();
    }
    return 0;
}
