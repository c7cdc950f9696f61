/*
 * tl_token.c -- tokens for appends answered 202 Accepted.
 *
 * A fixed ring of conf.tokens outcomes: each 202 takes the next slot, so
 * a token is answered by GET /status/<token> until conf.tokens newer ones
 * have been issued, then 410.  Tokens are 16 random bytes in hex: nobody
 * learns another registrant's outcome by guessing.  Under tl->lock, like
 * the appends that fill them in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "tl.h"


int
tl_token_init(tl_timeline_t *tl, sk_err_t *err)
{
    tl->tokens = calloc((size_t) tl->conf.tokens, sizeof(*tl->tokens));
    if (tl->tokens == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "tokens: %llu slots",
            (unsigned long long) tl->conf.tokens);
    }
    return 0;
}


void
tl_token_free(tl_timeline_t *tl)
{
    free(tl->tokens);
    tl->tokens = NULL;
}


tl_token_t *
tl_token_new(tl_timeline_t *tl, char hex[TL_TOKEN_HEX])
{
    tl_token_t  *t = &tl->tokens[tl->tokens_made % tl->conf.tokens];
    size_t       i;

    if (RAND_bytes(t->id, TL_TOKEN_BYTES) != 1) {
        return NULL;
    }
    tl->tokens_made++;
    t->used = 1;
    t->pending = 1;
    t->v = TL_QUEUED;
    t->sn = 0;
    t->msg[0] = '\0';
    for (i = 0; i < TL_TOKEN_BYTES; i++) {
        snprintf(hex + 2 * i, 3, "%02x", t->id[i]);
    }
    return t;
}


tl_token_t *
tl_token_find(tl_timeline_t *tl, const unsigned char id[TL_TOKEN_BYTES])
{
    uint64_t  i, n = tl->tokens_made < tl->conf.tokens ? tl->tokens_made
                                                       : tl->conf.tokens;

    for (i = 0; i < n; i++) {
        if (tl->tokens[i].used
            && memcmp(tl->tokens[i].id, id, TL_TOKEN_BYTES) == 0)
        {
            return &tl->tokens[i];
        }
    }
    return NULL;
}


tl_token_t *
tl_token_find_hex(tl_timeline_t *tl, const char *hex)
{
    unsigned char  id[TL_TOKEN_BYTES];
    unsigned       b;
    size_t         i;

    if (strlen(hex) != 2 * TL_TOKEN_BYTES) {
        return NULL;
    }
    for (i = 0; i < TL_TOKEN_BYTES; i++) {
        if (strchr("0123456789abcdef", hex[2 * i]) == NULL
            || strchr("0123456789abcdef", hex[2 * i + 1]) == NULL
            || sscanf(hex + 2 * i, "%2x", &b) != 1)
        {
            return NULL;
        }
        id[i] = (unsigned char) b;
    }
    return tl_token_find(tl, id);
}
