/*
 * cli_client.c -- what `sk verify` and `sk fetch` share (cli_client.h).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli_client.h"

static const struct {
    const char  *scheme;
    const char  *port;
    const char  *service;
    cli_mode_t   mode;
} cli_schemes[] = {
    { "https", "443", "https", CLI_MODE_TLS },
    { "smtps", "465", "smtps", CLI_MODE_TLS },
    { "smtp",  "25",  "smtp",  CLI_MODE_STARTTLS },
    { "http",  "80",  "https", CLI_MODE_PLAIN },    /* insecure variant */
};


/* 1 if scheme is one of the comma-separated list. */
static int
cli_scheme_allowed(const char *list, const char *scheme)
{
    size_t  n = strlen(scheme);

    while (*list != '\0') {
        if (strncmp(list, scheme, n) == 0
            && (list[n] == ',' || list[n] == '\0'))
        {
            return 1;
        }
        list += strcspn(list, ",");
        list += *list == ',';
    }
    return 0;
}


/* "want https:// or http://HOST[:PORT]" for the allowed schemes. */
static int
cli_target_want(const char *url, const char *schemes, sk_err_t *err)
{
    char        want[128] = "";
    const char *p;
    size_t      n, len = 0;

    for (p = schemes; *p != '\0'; p += n + (p[n] == ',')) {
        n = strcspn(p, ",");
        len += (size_t) snprintf(want + len, sizeof(want) - len, "%s%.*s://",
            len == 0 ? "" : p[n] == '\0' ? " or " : ", ", (int) n, p);
        if (len >= sizeof(want)) {
            break;
        }
    }
    return sk_err_set(err, SK_ERR_USAGE, "%s: want %sHOST[:PORT]", url,
        want);
}


int
cli_target_parse(cli_target_t *tg, const char *url, const char *schemes,
    sk_err_t *err)
{
    const char     *p, *host, *end, *colon;
    size_t          i, n, k;
    unsigned long   port;

    memset(tg, 0, sizeof(*tg));
    tg->url = url;
    p = strstr(url, "://");
    for (i = 0; p != NULL && i < sizeof(cli_schemes) / sizeof(cli_schemes[0]);
         i++)
    {
        k = strlen(cli_schemes[i].scheme);
        if ((size_t) (p - url) == k
            && strncmp(url, cli_schemes[i].scheme, k) == 0
            && cli_scheme_allowed(schemes, cli_schemes[i].scheme))
        {
            break;
        }
    }
    if (p == NULL || i == sizeof(cli_schemes) / sizeof(cli_schemes[0])) {
        return cli_target_want(url, schemes, err);
    }
    tg->scheme = cli_schemes[i].scheme;
    tg->service = cli_schemes[i].service;
    tg->mode = cli_schemes[i].mode;
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
    snprintf(tg->port, sizeof(tg->port), "%s", cli_schemes[i].port);
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
    tg->portnum = tg->mode == CLI_MODE_PLAIN && colon == NULL ? 0
        : (unsigned) port;
    return 0;
}


/* Take option c: 0 if it was a shared option, 1 if not one, -1 for a
 * usage error (in err). */
static int
cli_client_opt(cli_client_opts_t *o, int c, const char *arg, sk_err_t *err)
{
    switch (c) {
    case CLI_OPT_TRUST:
        o->trust_file = arg;
        return 0;
    case CLI_OPT_CACHE:
        o->cache_dir = arg;
        return 0;
    case CLI_OPT_MIRROR:
        if (o->nmirrors == SK_CLIENT_MAX_MIRRORS) {
            return sk_err_set(err, SK_ERR_USAGE, "at most %d mirrors",
                SK_CLIENT_MAX_MIRRORS);
        }
        o->mirror_url[o->nmirrors++] = arg;
        return 0;
    case CLI_OPT_MIRROR_KEY:
        if (o->nmirrors == 0 || o->mirror_key[o->nmirrors - 1] != NULL) {
            return sk_err_set(err, SK_ERR_USAGE, "--mirror-key FILE follows "
                "the --mirror URL it belongs to");
        }
        o->mirror_key[o->nmirrors - 1] = arg;
        return 0;
    case CLI_OPT_TOR:
        o->tor = arg;
        return 0;
    case CLI_OPT_NO_STAPLE:
        o->no_staple = 1;
        return 0;
    }
    return 1;
}


int
cli_client_getopt(cli_client_opts_t *o, int argc, char **argv,
    const char *shortopts, const struct option *opts, const sk_cmd_t *cmd)
{
    sk_err_t  err;
    int       c, rc;

    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        rc = cli_client_opt(o, c, optarg, &err);
        if (rc < 0) {
            cli_usage(cmd, "%s", err.msg);
            return CLI_OPT_USAGE;
        }
        if (rc > 0) {
            return c;
        }
    }
    return -1;
}


/* $XDG_CACHE_HOME/sk, else $HOME/.cache/sk (made if missing). */
static int
cli_client_default_cache(char *out, size_t size)
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


const char *
cli_client_cache_dir(char *buf, size_t size, const cli_client_opts_t *o)
{
    if (o->cache_dir != NULL) {
        return o->cache_dir;
    }
    return cli_client_default_cache(buf, size) == 0 ? buf : NULL;
}


/* --mirror replaces the trust file's mirrors; one without --mirror-key
 * keeps the key (and onion) the trust file gives the same URL. */
static int
cli_client_set_mirrors(sk_client_trust_t *t, const cli_client_opts_t *o,
    sk_err_t *err)
{
    sk_client_trust_t  old = *t;
    sk_key_t          *key;
    const char        *onion;
    size_t             i, j, len;
    int                rc = 0;

    t->nmirrors = 0;
    for (i = 0; rc == 0 && i < o->nmirrors; i++) {
        key = NULL;
        onion = NULL;
        if (o->mirror_key[i] != NULL) {
            if (sk_key_load_public(&key, o->mirror_key[i], err) != 0) {
                rc = -1;
                break;
            }
        } else {
            len = strlen(o->mirror_url[i]);
            while (len > 0 && o->mirror_url[i][len - 1] == '/') {
                len--;
            }
            for (j = 0; j < old.nmirrors; j++) {
                if (strlen(old.mirrors[j].url) != len
                    || strncmp(old.mirrors[j].url, o->mirror_url[i], len)
                       != 0)
                {
                    continue;
                }
                onion = old.mirrors[j].onion;
                if (sk_key_from_pkey(&key, sk_key_get0_pkey(
                        old.mirrors[j].key), err) != 0)
                {
                    rc = -1;
                }
            }
        }
        if (rc == 0 && key == NULL) {
            rc = sk_err_set(err, SK_ERR_USAGE, "--mirror %.64s: give its key "
                "(--mirror-key FILE): a mirror's answer is believed only "
                "with its signature over the client's nonce",
                o->mirror_url[i]);
        }
        if (rc == 0) {
            rc = sk_client_trust_add_mirror(t, o->mirror_url[i], key, err);
        }
        if (rc == 0 && onion != NULL && onion[0] != '\0') {
            /* "http://" and the address[:port] the trust file gave */
            rc = sk_client_trust_set_onion(t, o->mirror_url[i], onion + 7,
                err);
        }
        sk_key_free(key);
    }
    for (j = 0; j < old.nmirrors; j++) {
        sk_key_free(old.mirrors[j].key);
    }
    return rc;
}


int
cli_client_trust(sk_client_trust_t *t, const cli_client_opts_t *o,
    const sk_cmd_t *cmd)
{
    sk_err_t  err;

    sk_client_trust_init(t);
    if (sk_client_trust_load(t, o->trust_file != NULL ? o->trust_file
            : CLI_TRUST_DEFAULT, &err) != 0
        || (o->nmirrors > 0 && cli_client_set_mirrors(t, o, &err) != 0))
    {
        sk_client_trust_free(t);
        cli_fail_err(&err);
        return CLI_EXIT_UNDECIDED;
    }
    if (o->tor != NULL && sk_client_trust_set_tor(t, o->tor, &err) != 0) {
        sk_client_trust_free(t);
        return cli_usage(cmd, "--%s", err.msg);
    }
    if (t->nmirrors == 0) {
        sk_client_trust_free(t);
        return cli_usage(cmd, "no mirror: give --mirror URL or list one in "
            "the trust file");
    }
    return 0;
}


int
cli_client_open(cli_client_t *cl, const cli_client_opts_t *o,
    const sk_cmd_t *cmd)
{
    sk_tls_conf_t  conf;
    char           dflt[4096];
    sk_err_t       err;
    int            rc;

    memset(cl, 0, sizeof(*cl));
    memset(&conf, 0, sizeof(conf));
    rc = cli_client_trust(&cl->trust, o, cmd);
    if (rc != 0) {
        return rc;
    }
    sk_client_curl_init(&cl->curl, &cl->curl_tor, &cl->trust);
    conf.trust = &cl->trust;
    conf.cache_dir = cli_client_cache_dir(dflt, sizeof(dflt), o);
    conf.fetch = sk_client_fetch_curl;
    conf.fetch_arg = &cl->curl;
    conf.fetch_tor = sk_client_fetch_curl;
    conf.fetch_tor_arg = &cl->curl_tor;
    conf.flags = o->no_staple ? SK_TLS_NO_STAPLE : 0;
    if (sk_tls_new(&cl->tls, &conf, &err) != 0) {
        cli_client_close(cl);
        cli_fail_err(&err);
        return CLI_EXIT_UNDECIDED;
    }
    return 0;
}


void
cli_client_close(cli_client_t *cl)
{
    sk_tls_free(cl->tls);
    cl->tls = NULL;
    sk_client_trust_free(&cl->trust);
}


int
cli_client_lookup(cli_client_t *cl, const cli_target_t *tg,
    const sk_client_found_t **found, char *why, size_t size)
{
    sk_err_t  err;

    if (sk_tls_lookup(cl->tls, tg->name, tg->service, tg->portnum,
            time(NULL), &err) == 0)
    {
        *found = sk_tls_get0_found(cl->tls);
        return 0;
    }
    *found = sk_tls_get0_found(cl->tls);
    if (*found == NULL) {
        cli_fail("%s: %s", tg->name, err.msg);
        return CLI_EXIT_UNDECIDED;
    }
    snprintf(why, size, "%s", err.msg);
    return 1;
}


int
cli_client_prepare(cli_client_t *cl, const cli_target_t *tg)
{
    sk_err_t  err;

    if (sk_tls_prepare(cl->tls, tg->name, tg->service, tg->portnum,
            time(NULL), &err) != 0
        && sk_tls_get0_found(cl->tls) == NULL)
    {
        cli_fail("%s: %s", tg->name, err.msg);
        return CLI_EXIT_UNDECIDED;
    }
    return 0;
}


const char *
cli_client_outcome(sk_fresh_outcome_t o)
{
    switch (o) {
    case SK_FRESH_CACHED: return "cached";
    case SK_FRESH_ANSWER: return "answer";
    case SK_FRESH_OPEN:   return "fail-open";
    case SK_FRESH_CLOSED: return "fail-closed";
    case SK_FRESH_STAPLE: return "staple";
    }
    return "?";
}


void
cli_client_log_mirrors(FILE *f, const sk_client_found_t *found)
{
    const sk_client_try_t  *tr;
    size_t                  i;

    for (i = 0; i < found->res.ntries; i++) {
        tr = &found->res.tries[i];
        fprintf(f, "sk: %s%s: %s\n", strstr(tr->url, "://") != NULL
            ? "mirror " : "", tr->url, tr->what);
    }
}


/* What decided: "staple", "cache", "mirror", or "none" (nothing heard). */
static const char *
cli_client_from(const sk_client_result_t *r)
{
    switch (r->outcome) {
    case SK_FRESH_STAPLE: return "staple";
    case SK_FRESH_CACHED: return "cache";
    case SK_FRESH_ANSWER: return "mirror";
    default:
        break;
    }
    return strcmp(r->source, "cache") == 0 ? "cache"
        : r->source[0] != '\0' ? "mirror" : "none";
}


void
cli_client_json_found(FILE *f, const cli_client_t *cl,
    const sk_client_found_t *found, const sk_decide_t *d)
{
    const sk_client_result_t  *r = &found->res;
    const sk_client_cp_t      *cp;
    const char                *form = sk_tls_staple_form(cl->tls);
    int64_t                    now = (int64_t) time(NULL);
    size_t                     i;

    if (d != NULL && d->sk[0] != '\0') {
        fprintf(f, ",\"sk\":\"%s\"", d->sk);
    }
    fprintf(f, ",\"record\":");
    cli_json_str(f, found->name);
    fprintf(f, ",\"freshness\":\"%s\",\"from\":\"%s\",\"staple\":\"%s\","
        "\"source\":", cli_client_outcome(r->outcome), cli_client_from(r),
        form != NULL ? form : "none");
    cli_json_str(f, r->source);
    fprintf(f, ",\"fresh\":%zu,\"timelines\":%zu,\"entries\":%zu,"
        "\"checkpoints\":[", r->fresh.fresh, r->fresh.ntl, r->view.nitems);
    /* What the freshness rules judged: each checkpoint's age, and the
     * mirror's state of the timeline (Stuck: its last checked state);
     * and what its map proved of the name. */
    for (i = 0; i < r->view.ncps; i++) {
        cp = &r->view.cps[i];
        fprintf(f, "%s{\"tid\":%" PRIu64 ",\"size\":%" PRIu64 ",\"age\":%"
            PRId64 ",\"state\":\"%s\",\"map\":\"%s\"}", i > 0 ? "," : "",
            cp->tid, cp->cp.size, now > cp->ts ? now - cp->ts : 0,
            cp->state[0] != '\0' ? cp->state : "cached",
            sk_client_map_name(cp->map));
    }
    fprintf(f, "],\"mirrors\":[");
    for (i = 0; i < r->ntries; i++) {
        fprintf(f, "%s{\"url\":", i > 0 ? "," : "");
        cli_json_str(f, r->tries[i].url);
        fprintf(f, ",\"result\":");
        cli_json_str(f, r->tries[i].what);
        fprintf(f, "}");
    }
    fprintf(f, "]");
}


void
cli_client_print_found(FILE *f, const char *prefix,
    const sk_client_found_t *found)
{
    const sk_client_view_t  *v = &found->res.view;
    size_t                   i, proven = 0;

    fprintf(f, "%s  record of %s: %zu entries, %s (%s), %zu of %zu "
        "timelines fresh\n", prefix, found->name, v->nitems,
        cli_client_outcome(found->res.outcome), found->res.source,
        found->res.fresh.fresh, found->res.fresh.ntl);
    for (i = 0; i < v->ncps; i++) {
        if (v->cps[i].map == SK_CLIENT_MAP_UNMAPPED) {
            fprintf(f, "%s  timeline %" PRIu64 ": unmapped (no Map-Root "
                "entry): what it lacks of the name is believed, not "
                "proven\n", prefix, v->cps[i].tid);
        } else {
            proven++;
        }
    }
    fprintf(f, "%s  map: %zu of %zu timelines prove the name's whole "
        "history\n", prefix, proven, v->ncps);
}


void
cli_client_route_addr(char *out, size_t size, const sk_route_t *route,
    const cli_target_t *tg)
{
    if (route == NULL) {
        snprintf(out, size, "%s:%s", tg->name, tg->port);
    } else if (route->type == SK_ROUTE_INVALID) {
        snprintf(out, size, "%s", route->text);
    } else if (route->port == 0) {
        snprintf(out, size, "%s:%s", route->host, tg->port);
    } else {
        snprintf(out, size, route->ipv6 ? "[%s]:%u" : "%s:%u", route->host,
            route->port);
    }
}


/* How a route is reached: "the URL's host", "address", ... */
static void
cli_client_route_via(char *out, size_t size, const sk_route_t *route,
    const char *tor)
{
    if (route == NULL) {
        snprintf(out, size, "the URL's host");
    } else if (route->type == SK_ROUTE_INVALID) {
        snprintf(out, size, "refused: %s", route->why);
    } else if (sk_route_via_tor(route)) {
        snprintf(out, size, "%s, through Tor at %s", route->derived
            ? "the SK's own onion" : sk_route_type_name(route->type), tor);
    } else {
        snprintf(out, size, "%s", sk_route_type_name(route->type));
    }
}


void
cli_client_route_text(char *out, size_t size, const sk_route_t *route,
    const cli_target_t *tg, const char *tor)
{
    char  addr[SK_ROUTE_TEXT_MAX + 16], via[SK_ERR_MSG_MAX + 64];

    cli_client_route_addr(addr, sizeof(addr), route, tg);
    cli_client_route_via(via, sizeof(via), route, tor);
    snprintf(out, size, "%s (%s)", addr, via);
}


void
cli_client_json_route(FILE *f, const sk_route_t *route,
    const cli_target_t *tg, const char *tor)
{
    char  addr[SK_ROUTE_TEXT_MAX + 16];

    cli_client_route_addr(addr, sizeof(addr), route, tg);
    fprintf(f, "\"route\":");
    cli_json_str(f, addr);
    fprintf(f, ",\"kind\":\"%s\",\"via\":", route == NULL ? "primary"
        : route->derived ? "sk-onion" : sk_route_type_name(route->type));
    if (route != NULL && sk_route_via_tor(route)) {
        cli_json_str(f, tor);
    } else {
        cli_json_str(f, route != NULL && route->type == SK_ROUTE_INVALID
            ? "none" : "direct");
    }
    if (route != NULL && route->type == SK_ROUTE_INVALID) {
        fprintf(f, ",\"why\":");
        cli_json_str(f, route->why);
    }
}
