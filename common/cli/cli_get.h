/*
 * cli_get.h -- `sk fetch`'s one request over one route, with libcurl and
 * libsk's handshake hook (sk/tls.h installed through
 * CURLOPT_SSL_CTX_FUNCTION): the SK check happens on the chain the server
 * sends, before the request line, a header or a body leaves.
 *
 * A route only changes where the connection goes (CURLOPT_CONNECT_TO, and
 * Tor's SOCKS port with the name resolved by Tor for .onion and .exit);
 * the URL keeps the site's name, so SNI, the certificate name check and
 * the SK decision are the site's on every route.  Proxies from the
 * environment are ignored: a route is direct or through Tor.
 */
#ifndef SK_CLI_GET_H
#define SK_CLI_GET_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "cli_client.h"

typedef enum {
    CLI_GET_OK = 0,         /* the response came (whatever its status) */
    CLI_GET_REFUSED,        /* the server's certificate was refused: the
                               SK check, or the CA chain or name; nothing
                               was sent */
    CLI_GET_FAILED,         /* no response and nothing sent: network, TLS,
                               proxy; the next route may do */
    CLI_GET_BROKEN,         /* failed after the request went out, or the
                               output cannot be written: final */
    CLI_GET_SKIPPED         /* not tried: a refused route, no time left */
} cli_get_result_t;

/* The body's destination: returns n, or anything else to stop. */
typedef size_t (*cli_get_sink_fn)(const void *data, size_t n, void *arg);

typedef struct {
    const char          *url;
    const cli_target_t  *tg;
    sk_tls_t            *tls;           /* NULL: plain http:// (no SK) */
    struct curl_slist   *headers;       /* -H */
    const char          *data;          /* -d: a POST body, or NULL */
    struct curl_slist   *resolve;       /* --resolve: the URL's host only */
    const char          *cacert;
    const char          *capath;
    const char          *tor;           /* Tor's SOCKS ADDRESS:PORT */
    long                 connect_ms;    /* connect + SOCKS + TLS, per route */
    long                 tor_connect_ms;
    int64_t              deadline;      /* cli_get_now() ms: the whole run */
    cli_get_sink_fn      sink;
    void                *sink_arg;
} cli_get_t;

typedef struct {
    cli_get_result_t  result;
    char              why[2 * SK_ERR_MSG_MAX + 64];
    sk_decide_t       d;                /* the SK decision on this route */
    int               decided;
    long              status;           /* HTTP status, for CLI_GET_OK */
    size_t            bytes;            /* of the body, passed to sink */
} cli_get_out_t;

/* Milliseconds on the monotonic clock. */
int64_t cli_get_now(void);

/* One request over route (NULL: the URL's own host). */
void cli_get(const cli_get_t *g, const sk_route_t *route,
    cli_get_out_t *out);

const char *cli_get_result_name(cli_get_result_t r);   /* "ok", ... */

#endif
