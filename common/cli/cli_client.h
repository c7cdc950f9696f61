/*
 * cli_client.h -- what the client verbs (`sk verify`, `sk fetch`) share:
 * the URL's target, the options that say whom to trust (--trust,
 * --cache, --mirror, --mirror-key, --tor), the SK lookup through libsk's
 * sk_tls_t, and the report of what the lookup found and which routes a
 * client would try.
 */
#ifndef SK_CLI_CLIENT_H
#define SK_CLI_CLIENT_H

#include <getopt.h>
#include <stdio.h>
#include <sk/sk.h>

#include "cli.h"
#include "cli_net.h"

/* Exit codes beyond cli.h's, shared by verify and fetch. */
#define CLI_EXIT_NONE       3   /* verify: no SK for this name+service */
#define CLI_EXIT_INSECURE   4   /* the SK's service offered without TLS */
#define CLI_EXIT_UNDECIDED  5   /* mirrors, server or routes unreachable,
                                   or a local failure */

#define CLI_TRUST_DEFAULT   "/etc/sk/trust.conf"

typedef enum {
    CLI_MODE_PLAIN = 0,         /* http:// (the insecure variant) */
    CLI_MODE_TLS,
    CLI_MODE_STARTTLS
} cli_mode_t;

typedef struct {
    const char  *url;
    const char  *scheme;
    char         name[CLI_NET_HOST_MAX];   /* lowercase DNS name */
    char         port[8];                  /* the URL's, else the scheme's */
    unsigned     portnum;                  /* what the SK must cover: 0
                                              (the service's default) for
                                              http:// without a port */
    const char  *service;                  /* what the SK must cover */
    cli_mode_t   mode;
} cli_target_t;

/* SCHEME://HOST[:PORT][/...] for one of the comma-separated schemes
 * (of https, smtps, smtp, http); HOST a DNS name.  SK_ERR_USAGE. */
int cli_target_parse(cli_target_t *tg, const char *url, const char *schemes,
    sk_err_t *err);

/* getopt_long values of the shared options; each verb lists them. */
enum {
    CLI_OPT_TRUST = 256,        /* --trust FILE */
    CLI_OPT_CACHE,              /* --cache DIR */
    CLI_OPT_MIRROR,             /* --mirror URL */
    CLI_OPT_MIRROR_KEY,         /* --mirror-key FILE (after its --mirror) */
    CLI_OPT_TOR,                /* --tor ADDRESS:PORT */
    CLI_OPT_NO_STAPLE           /* --no-staple */
};

/* The struct option rows of all the shared options, for a verb's table. */
#define CLI_CLIENT_LONGOPTS                                                   \
    { "trust",      required_argument, NULL, CLI_OPT_TRUST },                 \
    { "cache",      required_argument, NULL, CLI_OPT_CACHE },                 \
    { "mirror",     required_argument, NULL, CLI_OPT_MIRROR },                \
    { "mirror-key", required_argument, NULL, CLI_OPT_MIRROR_KEY },            \
    { "tor",        required_argument, NULL, CLI_OPT_TOR },                   \
    { "no-staple",  no_argument,       NULL, CLI_OPT_NO_STAPLE }

/* cli_client_getopt: a bad shared option, its usage message printed. */
#define CLI_OPT_USAGE  (-2)

typedef struct {
    const char  *trust_file;
    const char  *cache_dir;
    const char  *mirror_url[SK_CLIENT_MAX_MIRRORS];
    const char  *mirror_key[SK_CLIENT_MAX_MIRRORS];
    size_t       nmirrors;
    const char  *tor;
    int          no_staple;
} cli_client_opts_t;

/*
 * getopt_long(argc, argv, shortopts, opts) (set optind = 1 before the
 * first call), taking the shared options among opts into o on the way:
 * the next of the verb's own options, -1 after the last, or CLI_OPT_USAGE
 * after cmd's usage message for a bad shared option (exit SK_EXIT_USAGE).
 */
int cli_client_getopt(cli_client_opts_t *o, int argc, char **argv,
    const char *shortopts, const struct option *opts, const sk_cmd_t *cmd);

/* The cache directory: --cache, else $XDG_CACHE_HOME/sk or ~/.cache/sk
 * (in buf, made if missing); NULL when there is none. */
const char *cli_client_cache_dir(char *buf, size_t size,
    const cli_client_opts_t *o);

typedef struct {
    sk_client_trust_t   trust;
    sk_client_curl_t    curl;       /* mirror queries */
    sk_client_curl_t    curl_tor;   /* and over Tor */
    sk_tls_t           *tls;
} cli_client_t;

/* The trust file (default CLI_TRUST_DEFAULT) with --mirror and --tor
 * applied, at least one mirror: 0, or the exit status after the message
 * (t is then empty). */
int cli_client_trust(sk_client_trust_t *t, const cli_client_opts_t *o,
    const sk_cmd_t *cmd);

/*
 * cli_client_trust, the cache (default $XDG_CACHE_HOME/sk or ~/.cache/sk), and an
 * sk_tls_t over them asking mirrors with libcurl (call
 * curl_global_init first).  0, or the exit status after the message:
 * CLI_EXIT_UNDECIDED for a local failure, SK_EXIT_USAGE.
 */
int cli_client_open(cli_client_t *cl, const cli_client_opts_t *o,
    const sk_cmd_t *cmd);
void cli_client_close(cli_client_t *cl);

/* Learn tg's record (sk_tls_lookup).  0: *found may decide; 1: fail
 * closed, *found says what was learnt and why[] why (connect nowhere);
 * else the exit status after the message (a local failure). */
int cli_client_lookup(cli_client_t *cl, const cli_target_t *tg,
    const sk_client_found_t **found, char *why, size_t size);

/* The same as far as the cache goes: the rest is learnt in the
 * handshake, from the server's staple or the mirrors (sk_tls_prepare).
 * 0, or the exit status after the message (a local failure). */
int cli_client_prepare(cli_client_t *cl, const cli_target_t *tg);

/* "cached", "answer", "fail-open", "fail-closed", "staple". */
const char *cli_client_outcome(sk_fresh_outcome_t o);

/* One "sk: mirror URL: what" line per mirror asked ("sk: staple: what"
 * about the server's staple), to f. */
void cli_client_log_mirrors(FILE *f, const sk_client_found_t *found);

/* The lookup's JSON members: ,"record":..,"freshness":..,"from":..,
 * "staple":..,"mirrors":[..] (and "sk" when one is in force).  "from" is
 * what decided: "staple", "cache", "mirror" or "none"; "staple" the
 * staple the lookup had: "extension", "chain" or "none". */
void cli_client_json_found(FILE *f, const cli_client_t *cl,
    const sk_client_found_t *found, const sk_decide_t *d);

/* "<prefix>  record of NAME: N entries, OUTCOME (SOURCE), A of B
 * timelines fresh" on f. */
void cli_client_print_found(FILE *f, const char *prefix,
    const sk_client_found_t *found);

/* Where a route connects, "HOST:PORT" ("[IPv6]:PORT"; an onion or exit
 * route without a port takes the URL's); route NULL: the URL's host.  An
 * invalid route gives its text. */
void cli_client_route_addr(char *out, size_t size, const sk_route_t *route,
    const cli_target_t *tg);

/* The same with how it is reached, for reports: "127.0.0.1:8443
 * (address)", "x.onion:443 (the SK's own onion, through Tor at
 * 127.0.0.1:9050)", "example.com:443 (the URL's host)". */
void cli_client_route_text(char *out, size_t size, const sk_route_t *route,
    const cli_target_t *tg, const char *tor);

/* A route's JSON members: "route":..,"kind":..,"via":.. (and "why" for
 * a refused one). */
void cli_client_json_route(FILE *f, const sk_route_t *route,
    const cli_target_t *tg, const char *tor);

#endif
