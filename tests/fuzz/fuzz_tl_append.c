/*
 * fuzz_tl_append.c -- sk-timeline's POST /append path on arbitrary bytes:
 * the form's e= field up to the first NUL, the ref= field (an
 * Incorporate's copy) after it.  A real timeline in a temporary
 * directory, with a peer and an operator key, no OCSP and no HTTP: the
 * ASCII check, the entry parser, every static and state check, and the
 * incorporation checks run as in the daemon.  Anything stored must be a
 * stamped entry with the next SN.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tl_timeline_t  tl;
static char           dir[] = "/tmp/fuzz-tl-XXXXXX";


/* The temporary directory goes when the fuzzer exits. */
static void
fuzz_cleanup(void)
{
    static const char *const  files[] = { TL_LOG_FILE, TL_INC_FILE,
                                          TL_CALOG_FILE, TL_SIGNED_FILE,
                                          "peer.pub" };
    char                      path[128];
    size_t                    i;

    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    /* The index the store opened (data_dir/index/, LMDB). */
    snprintf(path, sizeof(path), "%s/%s/data.mdb", dir, TL_INDEX_DIR);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s/lock.mdb", dir, TL_INDEX_DIR);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s", dir, TL_INDEX_DIR);
    rmdir(path);
    rmdir(dir);
}


static void
fuzz_die(const sk_err_t *err)
{
    fprintf(stderr, "fuzz_tl_append: %s\n", err->msg);
    abort();
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static char   peer[64], *peers[1];
    char          path[128];
    sk_key_t     *k;
    sk_err_t      err;

    (void) argc;
    (void) argv;
    if (mkdtemp(dir) == NULL) {
        abort();
    }
    atexit(fuzz_cleanup);
    tl_init(&tl, TL_RUN);     /* as sk-timeline's main() */
    tl.conf.data_dir = dir;
    tl.conf.tid = 7;
    tl.conf.threads = 4;
    tl.conf.tokens = 16;
    tl.conf.max_chain = 8;
    tl.conf.max_chain_bytes = 24576;
    tl.conf.sk_budget = 5;
    tl.conf.sk_refill = 1209600;
    tl.conf.reply_ms = 1000000;     /* never hand off to a thread */
    tl.conf.ocsp = 0;
    tl.conf.index_batch = 4096;             /* as tl_conf.c's defaults */
    tl.conf.index_map_size = 1u << 30;
    snprintf(path, sizeof(path), "%s/peer.pub", dir);
    snprintf(peer, sizeof(peer), "8 %s", path);
    peers[0] = peer;
    tl.conf.peers.v = peers;
    tl.conf.peers.n = 1;
    if (sk_key_generate(&k, SK_KEY_ED25519, 0, &err) != 0
        || sk_key_save_public(k, path, &err) != 0
        || sk_key_generate(&tl.key, SK_KEY_ED25519, 0, &err) != 0
        || sk_key_generate(&tl.operator_key, SK_KEY_ED25519, 0, &err) != 0
        || tl_signed_open(&tl, &err) != 0
        || tl_inc_open(&tl, &err) != 0 || tl_calog_open(&tl, &err) != 0
        || tl_store_open(&tl, &err) != 0
        || tl_token_init(&tl, &err) != 0)
    {
        fuzz_die(&err);
    }
    sk_key_free(k);
    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char    *text = (const char *) data, *ref = NULL;
    const uint8_t *nul = memchr(data, 0, size);
    sk_entry_t    *e;
    sk_err_t       err;
    uint64_t       before = tl.size, sn;
    size_t         len = size, reflen = 0, outlen;
    char          *out = NULL;

    if (nul != NULL) {
        len = (size_t) (nul - data);
        ref = (const char *) nul + 1;
        reflen = size - len - 1;
        if (memchr(ref, 0, reflen) != NULL) {
            return 0;           /* the HTTP layer refuses NUL bytes */
        }
    }
    sk_err_clear(&err);
    if (tl_append(&tl, &out, &outlen, text, len, ref, reflen, NULL, &err)
        == TL_OK)
    {
        if (sk_entry_parse(&e, out, outlen, &err) != 0
            || sk_entry_sn(e, &sn, &err) != 0 || sn != before
            || tl.size != before + 1)
        {
            abort();
        }
        sk_entry_free(e);
        free(out);
    } else if (tl.size != before) {
        abort();                /* refused, yet stored */
    }
    return 0;
}
