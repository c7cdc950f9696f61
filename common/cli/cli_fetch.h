/*
 * cli_fetch.h -- HTTP GET through libcurl, shaped as libsk's
 * sk_client_fetch_fn so `sk verify` can hand it to sk_client_lookup.
 */
#ifndef SK_CLI_FETCH_H
#define SK_CLI_FETCH_H

#include <sk/sk.h>
#include <sk/client.h>

#define CLI_FETCH_MAX  (64 * 1024 * 1024)   /* bytes of one answer */

typedef struct {
    long  timeout;          /* seconds for the whole exchange */
} cli_fetch_opts_t;

/* arg is a cli_fetch_opts_t *.  No redirects; http and https only. */
int cli_fetch_get(char **body, size_t *len, int *status, const char *url,
    void *arg, sk_err_t *err);

#endif
