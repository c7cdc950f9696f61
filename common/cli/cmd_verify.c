/*
 * cmd_verify.c -- `sk verify URL`: what an SK-aware client does before it
 * sends data.  Connect (TLS, or SMTP STARTTLS), take the chain the server
 * presents, learn the name's SK from mirrors (design 4.b, libsk's
 * sk_client_lookup through libcurl), and decide (sk_client_decide).
 *
 * Exit: 0 accept, 1 reject, 2 usage, 3 none (no SK for this name and
 * service: ordinary authentication applies), 4 insecure (the SK covers
 * the service, offered without TLS), 5 undecided (the server or the
 * mirrors could not be reached well enough to decide: fail closed; also
 * a local failure: trust file, cache).  1 means reject and nothing else.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/x509.h>

#include <sk/client.h>

#include "cli.h"
#include "cli_fetch.h"
#include "cli_net.h"

#define SK_VF_EXIT_NONE       3
#define SK_VF_EXIT_INSECURE   4
#define SK_VF_EXIT_UNDECIDED  5
#define SK_VF_TRUST_DEFAULT   "/etc/sk/trust.conf"

typedef enum { SK_VF_PLAIN = 0, SK_VF_TLS, SK_VF_STARTTLS } sk_vf_mode_t;

typedef struct {
    const char    *url;
    char           name[CLI_NET_HOST_MAX];   /* lowercase, looked up */
    char           port[8];
    const char    *service;      /* what the SK must cover */
    unsigned       portnum;
    sk_vf_mode_t   mode;
} sk_vf_target_t;

typedef struct {
    sk_vf_target_t       tg;
    const char          *connect;      /* --connect HOST[:PORT] */
    int                  json;
    STACK_OF(X509)      *chain;        /* NULL: plaintext */
    char                 plain_why[128];
    sk_client_result_t   res;          /* of the name that decided */
    sk_record_t          rec;
    char                 record_name[CLI_NET_HOST_MAX];
    sk_decide_t          d;
    int                  undecided;
    char                 undecided_why[2 * SK_ERR_MSG_MAX + 256];
} sk_vf_t;

static const struct {
    const char    *scheme;
    const char    *port;
    const char    *service;
    sk_vf_mode_t   mode;
} sk_vf_schemes[] = {
    { "https", "443", "https", SK_VF_TLS },
    { "smtps", "465", "smtps", SK_VF_TLS },
    { "smtp",  "25",  "smtp",  SK_VF_STARTTLS },
    { "http",  "80",  "https", SK_VF_PLAIN },   /* insecure variant */
};


/* SCHEME://HOST[:PORT][/...] */
static int
sk_vf_target(sk_vf_target_t *tg, const char *url, sk_err_t *err)
{
    const char  *p, *host, *end, *colon;
    size_t       i, n, k;
    unsigned long port;

    memset(tg, 0, sizeof(*tg));
    tg->url = url;
    p = strstr(url, "://");
    for (i = 0; p != NULL && i < sizeof(sk_vf_schemes)
         / sizeof(sk_vf_schemes[0]); i++)
    {
        k = strlen(sk_vf_schemes[i].scheme);
        if ((size_t) (p - url) == k
            && strncmp(url, sk_vf_schemes[i].scheme, k) == 0)
        {
            break;
        }
    }
    if (p == NULL || i == sizeof(sk_vf_schemes) / sizeof(sk_vf_schemes[0])) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: want https://, smtps://, "
            "smtp:// or http://HOST[:PORT]", url);
    }
    tg->service = sk_vf_schemes[i].service;
    tg->mode = sk_vf_schemes[i].mode;
    host = p + 3;
    end = host + strcspn(host, "/?#");
    colon = memchr(host, ':', (size_t) (end - host));
    n = (size_t) ((colon != NULL ? colon : end) - host);
    if (n == 0 || n >= sizeof(tg->name)) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: no host name", url);
    }
    for (k = 0; k < n; k++) {
        tg->name[k] = (char) tolower((unsigned char) host[k]);
    }
    tg->name[n] = '\0';
    if (cli_net_is_address(tg->name)) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: the host must be a DNS "
            "name, not an address (use --connect for the address)", url);
    }
    if (sk_name_check(tg->name, n, err) != 0) {
        return sk_err_prefix(err, "%s: the host must be a DNS name (use "
            "--connect for an address)", url);
    }
    snprintf(tg->port, sizeof(tg->port), "%s", sk_vf_schemes[i].port);
    if (colon != NULL) {
        n = (size_t) (end - colon - 1);
        if (n == 0 || n >= sizeof(tg->port)) {
            return sk_err_set(err, SK_ERR_USAGE, "%s: bad port", url);
        }
        memcpy(tg->port, colon + 1, n);
        tg->port[n] = '\0';
    }
    if (cli_parse_uint(&port, tg->port, 65535) != 0) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: bad port", url);
    }
    /* The https SK of an http:// URL: its default port, unless given. */
    tg->portnum = tg->mode == SK_VF_PLAIN && colon == NULL ? 0
        : (unsigned) port;
    return 0;
}


/* Connect and take the chain; a server with no TLS on offer leaves
 * v->chain NULL with plain_why saying so. */
static int
sk_vf_connect(sk_vf_t *v, sk_err_t *err)
{
    char         host[CLI_NET_HOST_MAX];
    const char  *port = v->tg.port;
    int          fd, rc = 0;

    snprintf(host, sizeof(host), "%s", v->tg.name);
    if (v->connect != NULL
        && cli_net_split(host, sizeof(host), &port, v->connect) != 0)
    {
        snprintf(host, sizeof(host), "%s", v->connect);
        port = v->tg.port;
    }
    fd = cli_net_connect(host, port, err);
    if (fd < 0) {
        return -1;
    }
    if (v->tg.mode == SK_VF_PLAIN) {
        snprintf(v->plain_why, sizeof(v->plain_why), "http (no TLS) is "
            "offered");
    } else if (v->tg.mode == SK_VF_STARTTLS
               && cli_net_starttls(fd, err) != 0)
    {
        if (err->code == SK_ERR_NOT_FOUND) {
            snprintf(v->plain_why, sizeof(v->plain_why), "the server does "
                "not offer STARTTLS");
        } else {
            rc = -1;
        }
    } else {
        rc = cli_net_handshake(&v->chain, fd, v->tg.name, err);
    }
    close(fd);
    return rc;
}


/* The name and then each parent of two labels or more: the first whose
 * record is bound and covers the host decides (a parent only with
 * Includes-Subdomains).  The exact name's lookup is kept otherwise. */
static int
sk_vf_lookup(sk_vf_t *v, const sk_client_trust_t *t, sk_client_cache_t *c,
    cli_fetch_opts_t *fo, sk_err_t *err)
{
    sk_client_ctx_t     ctx = { t, c, cli_fetch_get, fo, time(NULL), 0 };
    sk_client_result_t  r;
    sk_record_t         rec;
    const char         *name = v->tg.name, *dot;
    int                 first = 1, used;

    for (;;) {
        if (sk_client_lookup(&r, name, t, c, cli_fetch_get, fo, ctx.now,
                err) != 0
            || sk_client_view_record(&rec, &r.view, sk_client_rebinder_key,
                   &ctx, err) != 0)
        {
            sk_client_result_free(&r);
            return -1;
        }
        used = rec.state != SK_RECORD_NONE
            && sk_name_covers(name, rec.include_subdomains, v->tg.name);
        if (first || used) {
            if (!first) {
                sk_record_free(&v->rec);
                sk_client_result_free(&v->res);
            }
            v->res = r;
            v->rec = rec;
            snprintf(v->record_name, sizeof(v->record_name), "%s", name);
        } else {
            sk_record_free(&rec);
            sk_client_result_free(&r);
        }
        if (used) {
            return 0;
        }
        first = 0;
        dot = strchr(name, '.');
        if (dot == NULL || strchr(dot + 1, '.') == NULL) {
            return 0;
        }
        name = dot + 1;
    }
}


static const char *
sk_vf_outcome(sk_fresh_outcome_t o)
{
    switch (o) {
    case SK_FRESH_CACHED: return "cached";
    case SK_FRESH_ANSWER: return "answer";
    case SK_FRESH_OPEN:   return "fail-open";
    case SK_FRESH_CLOSED: return "fail-closed";
    }
    return "?";
}


static void
sk_vf_json(const sk_vf_t *v, const char *decision, const char *check,
    const char *reason)
{
    size_t  i;

    printf("{\"decision\":\"%s\",\"check\":", decision);
    cli_json_str(stdout, check);
    printf(",\"reason\":");
    cli_json_str(stdout, reason);
    printf(",\"url\":");
    cli_json_str(stdout, v->tg.url);
    printf(",\"name\":");
    cli_json_str(stdout, v->tg.name);
    printf(",\"service\":\"%s\",\"port\":%u,\"tls\":%s", v->tg.service,
        v->tg.portnum, v->chain != NULL ? "true" : "false");
    if (v->chain != NULL) {
        printf(",\"chain_length\":%d", sk_X509_num(v->chain));
    }
    if (v->d.sk[0] != '\0') {
        printf(",\"sk\":\"%s\",\"record\":", v->d.sk);
        cli_json_str(stdout, v->record_name);
    }
    if (v->record_name[0] != '\0') {
        printf(",\"freshness\":\"%s\",\"source\":",
            sk_vf_outcome(v->res.outcome));
        cli_json_str(stdout, v->res.source);
        printf(",\"fresh\":%zu,\"timelines\":%zu,\"entries\":%zu,"
            "\"mirrors\":[", v->res.fresh.fresh, v->res.fresh.ntl,
            v->res.view.nitems);
        for (i = 0; i < v->res.ntries; i++) {
            printf("%s{\"url\":", i > 0 ? "," : "");
            cli_json_str(stdout, v->res.tries[i].url);
            printf(",\"result\":");
            cli_json_str(stdout, v->res.tries[i].what);
            printf("}");
        }
        printf("]");
    }
    printf("}\n");
}


static int
sk_vf_report(const sk_vf_t *v)
{
    static const int  codes[] = { SK_EXIT_OK, SK_EXIT_FAIL, SK_VF_EXIT_NONE,
                                  SK_VF_EXIT_INSECURE };
    const char       *decision, *check, *reason;
    char              buf[sizeof(v->d.reason) + 160];
    size_t            i;

    for (i = 0; i < v->res.ntries; i++) {
        fprintf(stderr, "sk: mirror %s: %s\n", v->res.tries[i].url,
            v->res.tries[i].what);
    }
    if (v->undecided) {
        decision = "undecided";
        check = "unavailable";
        reason = v->undecided_why;
    } else {
        decision = sk_decision_name(v->d.decision);
        check = v->d.check;
        reason = buf;
        snprintf(buf, sizeof(buf), "%s%s%s", v->d.reason,
            v->chain == NULL && v->plain_why[0] != '\0' ? "; " : "",
            v->chain == NULL ? v->plain_why : "");
    }
    if (v->json) {
        sk_vf_json(v, decision, check, reason);
    } else {
        printf("%s: %s: %s\n", decision, v->tg.url, reason);
        if (v->record_name[0] != '\0') {
            printf("  record of %s: %zu entries, %s (%s), %zu of %zu "
                "timelines fresh\n", v->record_name, v->res.view.nitems,
                sk_vf_outcome(v->res.outcome), v->res.source,
                v->res.fresh.fresh, v->res.fresh.ntl);
        }
    }
    return v->undecided ? SK_VF_EXIT_UNDECIDED : codes[v->d.decision];
}


static int
sk_vf_decide(sk_vf_t *v, const sk_client_trust_t *t, sk_client_cache_t *c,
    cli_fetch_opts_t *fo)
{
    sk_err_t  err;

    if (sk_vf_connect(v, &err) != 0) {
        v->undecided = 1;
        snprintf(v->undecided_why, sizeof(v->undecided_why), "cannot reach "
            "the server: %s", err.msg);
        return sk_vf_report(v);
    }
    if (sk_vf_lookup(v, t, c, fo, &err) != 0) {
        cli_fail("%s: %s", v->tg.name, err.msg);
        return SK_VF_EXIT_UNDECIDED;
    }
    /* Fail closed: stale information and no SK known from it. */
    if (v->res.outcome == SK_FRESH_CLOSED
        && v->rec.state != SK_RECORD_BOUND)
    {
        v->undecided = 1;
        snprintf(v->undecided_why, sizeof(v->undecided_why), "no mirror "
            "gave a fresh enough answer for %s (%zu of %zu timelines fresh)",
            v->tg.name, v->res.fresh.fresh, v->res.fresh.ntl);
        return sk_vf_report(v);
    }
    if (sk_client_decide(&v->d, &v->rec, v->tg.name, v->tg.service,
            v->tg.portnum, v->chain, time(NULL), &err) != 0)
    {
        cli_fail("%s: %s", v->tg.url, err.msg);
        return SK_VF_EXIT_UNDECIDED;
    }
    return sk_vf_report(v);
}


/* $XDG_CACHE_HOME/sk, else $HOME/.cache/sk (made if missing). */
static int
sk_vf_default_cache(char *out, size_t size)
{
    const char  *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

    if (xdg != NULL && xdg[0] == '/') {
        snprintf(out, size, "%s/sk", xdg);
        return 0;
    }
    if (home == NULL || home[0] != '/') {
        return -1;
    }
    snprintf(out, size, "%s/.cache", home);
    if (mkdir(out, 0700) != 0 && errno != EEXIST) {
        return -1;
    }
    snprintf(out, size, "%s/.cache/sk", home);
    return 0;
}


/* --mirror URL, each optionally followed by --mirror-key FILE. */
typedef struct {
    const char  *url[SK_CLIENT_MAX_MIRRORS];
    const char  *key[SK_CLIENT_MAX_MIRRORS];
    size_t       n;
} sk_vf_mirrors_t;


static int
sk_vf_set_mirrors(sk_client_trust_t *t, const sk_vf_mirrors_t *m,
    sk_err_t *err)
{
    sk_client_trust_t  old = *t;
    sk_key_t          *key;
    size_t             i, j, len;
    int                rc = 0;

    t->nmirrors = 0;
    for (i = 0; rc == 0 && i < m->n; i++) {
        key = NULL;
        if (m->key[i] != NULL) {
            if (sk_key_load_public(&key, m->key[i], err) != 0) {
                rc = -1;
                break;
            }
        } else {
            len = strlen(m->url[i]);
            while (len > 0 && m->url[i][len - 1] == '/') {
                len--;
            }
            for (j = 0; j < old.nmirrors; j++) {
                if (strlen(old.mirrors[j].url) == len
                    && strncmp(old.mirrors[j].url, m->url[i], len) == 0
                    && old.mirrors[j].key != NULL
                    && sk_key_from_pkey(&key, sk_key_get0_pkey(
                           old.mirrors[j].key), err) != 0)
                {
                    rc = -1;
                }
            }
        }
        if (rc == 0) {
            rc = sk_client_trust_add_mirror(t, m->url[i], key, err);
        }
        sk_key_free(key);
    }
    for (j = 0; j < old.nmirrors; j++) {
        sk_key_free(old.mirrors[j].key);
    }
    return rc;
}


static int
sk_verify_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "mirror",     required_argument, NULL, 'm' },
        { "mirror-key", required_argument, NULL, 'K' },
        { "trust",      required_argument, NULL, 't' },
        { "cache",      required_argument, NULL, 'c' },
        { "connect",    required_argument, NULL, 'C' },
        { "timeout",    required_argument, NULL, 'T' },
        { "json",       no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    sk_client_trust_t   trust;
    sk_client_cache_t  *cache = NULL;
    sk_vf_mirrors_t     mirrors;
    cli_fetch_opts_t    fo = { 10 };
    const char         *trustf = NULL, *cachedir = NULL;
    unsigned long       timeout;
    char                dflt[4096];
    sk_err_t            err;
    sk_vf_t             v;
    int                 c, rc;

    memset(&v, 0, sizeof(v));
    memset(&mirrors, 0, sizeof(mirrors));
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (mirrors.n == SK_CLIENT_MAX_MIRRORS) {
                return cli_usage(&sk_cmd_verify, "at most %d mirrors",
                    SK_CLIENT_MAX_MIRRORS);
            }
            mirrors.url[mirrors.n++] = optarg;
            break;
        case 'K':
            if (mirrors.n == 0 || mirrors.key[mirrors.n - 1] != NULL) {
                return cli_usage(&sk_cmd_verify, "--mirror-key FILE follows "
                    "the --mirror URL it belongs to");
            }
            mirrors.key[mirrors.n - 1] = optarg;
            break;
        case 't': trustf = optarg; break;
        case 'c': cachedir = optarg; break;
        case 'C': v.connect = optarg; break;
        case 'T':
            if (cli_parse_uint(&timeout, optarg, 3600) != 0) {
                return cli_usage(&sk_cmd_verify, "--timeout %s: want "
                    "seconds, 1..3600", optarg);
            }
            fo.timeout = (long) timeout;
            break;
        case 'j': v.json = 1; break;
        default: return cli_usage(&sk_cmd_verify, "unknown option");
        }
    }
    if (optind + 1 != argc) {
        return cli_usage(&sk_cmd_verify, optind == argc ? "missing URL"
            : "one URL only");
    }
    if (sk_vf_target(&v.tg, argv[optind], &err) != 0) {
        return cli_usage(&sk_cmd_verify, "%s", err.msg);
    }
    if (cachedir == NULL && sk_vf_default_cache(dflt, sizeof(dflt)) == 0) {
        cachedir = dflt;
    }

    sk_client_trust_init(&trust);
    if (sk_client_trust_load(&trust, trustf != NULL ? trustf
            : SK_VF_TRUST_DEFAULT, &err) != 0
        || (mirrors.n > 0 && sk_vf_set_mirrors(&trust, &mirrors, &err) != 0))
    {
        sk_client_trust_free(&trust);
        cli_fail_err(&err);
        return SK_VF_EXIT_UNDECIDED;
    }
    if (trust.nmirrors == 0) {
        sk_client_trust_free(&trust);
        return cli_usage(&sk_cmd_verify, "no mirror: give --mirror URL or "
            "list one in the trust file");
    }
    if (cachedir != NULL && sk_client_cache_open(&cache, cachedir, &err)
        != 0)
    {
        sk_client_trust_free(&trust);
        cli_fail_err(&err);
        return SK_VF_EXIT_UNDECIDED;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        cli_fail("curl: cannot initialise");
        rc = SK_VF_EXIT_UNDECIDED;
    } else {
        rc = sk_vf_decide(&v, &trust, cache, &fo);
        curl_global_cleanup();
    }
    sk_X509_pop_free(v.chain, X509_free);
    sk_record_free(&v.rec);
    sk_client_result_free(&v.res);
    sk_client_cache_close(cache);
    sk_client_trust_free(&trust);
    return rc;
}


const sk_cmd_t sk_cmd_verify = {
    "verify", sk_verify_run,
    "[--trust FILE] [--mirror URL [--mirror-key FILE]]... [--cache DIR]"
    " [--connect HOST[:PORT]] [--json] (https|smtps|smtp|http)://HOST[:PORT]",
    "Do what an SK-aware client does before it sends data.  Connect to\n"
    "HOST (or --connect HOST[:PORT]; SNI is HOST), with TLS (https, smtps)\n"
    "or SMTP STARTTLS (smtp), take the chain the server presents, ask the\n"
    "mirrors for HOST's entries (and its parents', for a wildcard SK),\n"
    "check them against the timelines of the trust file (default\n"
    "/etc/sk/trust.conf; --mirror replaces its mirrors), judge their\n"
    "freshness (design 4.b), keep them in the cache (default\n"
    "~/.cache/sk), combine the record and decide.  Prints the decision\n"
    "and why; --json prints one object.  Exit 0 accept (a carrier signed\n"
    "by the current SK certifies the server's key), 1 reject (the SK\n"
    "covers the service but the chain has no valid carrier: the reason\n"
    "says which check failed), 3 none (no SK covers this name and\n"
    "service), 4 insecure (the SK covers the service, offered without\n"
    "TLS: http://, or smtp without STARTTLS), 5 undecided (server or\n"
    "mirrors unreachable, no answer fresh enough, or a local failure:\n"
    "trust file, cache), 2 usage.\n"
};
