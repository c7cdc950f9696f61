/*
 * cmd_fetch.c -- `sk fetch URL`: a curl-like request made the way an
 * SK-aware client makes it.
 *
 * The name's record is learnt as `sk verify` does: from a fresh cache
 * before connecting, else in the first handshake, from the server's
 * stapled proof or the mirrors.  First the URL's own host, and when it
 * fails the SK check or the network, the
 * alternate routes of the record (sk_routes_for), one after the other;
 * on each, the SK check runs inside the TLS handshake (sk/tls.h), so a
 * server that fails it gets no request.  A route fails over only while
 * nothing was sent on it.  A name without an SK gets ordinary verified
 * HTTPS and no fallback; http:// is refused for a name whose SK covers
 * https, and fetched as is (unchecked, -v says so) for one without.
 *
 * Exit: 0 fetched, 1 refused (a route's server failed the SK check or
 * the certificate checks, and no route gave the page), 2 usage,
 * 4 insecure (http:// for an SK that covers https; nothing sent),
 * 5 undecided (no fresh enough answer and no SK known, no route
 * reachable, or a local failure), 6 broken (the transfer failed after
 * the request was sent, or the output could not be written).
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli_get.h"

#define SK_FT_EXIT_BROKEN      6
#define SK_FT_CONNECT_MS       10000    /* per route, direct */
#define SK_FT_TOR_CONNECT_MS   60000    /* through Tor: circuits take time */
#define SK_FT_MAX_MS           300000   /* the whole run */

typedef struct {
    const sk_route_t  *route;       /* NULL: the URL's host */
    cli_get_out_t      o;
} sk_ft_try_t;

typedef struct {
    cli_target_t              tg;
    cli_client_t              cl;
    const sk_client_found_t  *found;
    cli_get_t                 g;
    int                       verbose, json;
    const char               *output;       /* -o FILE */
    sk_file_tmp_t             tmp;          /* -o FILE, a regular file */
    int                       device;       /* -o FILE, not one: its fd */
    sk_routes_t               routes;
    int                       have_routes;
    sk_ft_try_t              *tries;
    size_t                    ntries;
    const sk_ft_try_t        *used;         /* the route that answered */
    const sk_decide_t        *plain;        /* http://: the decision */
    int                       closed;       /* the lookup failed closed */
    char                      why[2 * SK_ERR_MSG_MAX + 64];
} sk_ft_t;


static size_t
sk_ft_sink_stdout(const void *data, size_t n, void *arg)
{
    (void) arg;
    return fwrite(data, 1, n, stdout);
}


static size_t
sk_ft_sink_fd(const void *data, size_t n, void *arg)
{
    const int  *fd = arg;

    return sk_file_write_all(*fd, data, n) == 0 ? n : 0;
}


static const char *
sk_ft_route_name(const sk_ft_t *f, const sk_route_t *route, char *buf,
    size_t size)
{
    cli_client_route_text(buf, size, route, &f->tg, f->cl.trust.tor);
    return buf;
}


/* One route (NULL: the URL's host), i of n (0: not known yet), logged
 * with -v; 1 if it settles the run (answered, or broke after sending). */
static int
sk_ft_try(sk_ft_t *f, const sk_route_t *route, size_t i, size_t n)
{
    sk_ft_try_t  *t = &f->tries[f->ntries++];
    char          name[2 * SK_ROUTE_TEXT_MAX + 2 * SK_ERR_MSG_MAX];

    t->route = route;
    if (f->verbose && n > 0) {
        fprintf(stderr, "sk: route %zu of %zu: %s\n", i + 1, n,
            sk_ft_route_name(f, t->route, name, sizeof(name)));
    } else if (f->verbose) {
        fprintf(stderr, "sk: route 1: %s\n", sk_ft_route_name(f, t->route,
            name, sizeof(name)));
    }
    cli_get(&f->g, t->route, &t->o);
    if (f->verbose && t->o.decided) {
        fprintf(stderr, "sk:   %s: %s\n",
            sk_decision_name(t->o.d.decision), t->o.d.reason);
    }
    if (f->verbose && t->o.result != CLI_GET_OK
        && !(t->o.decided && t->o.result == CLI_GET_REFUSED))
    {
        fprintf(stderr, "sk:   %s: %s\n",
            cli_get_result_name(t->o.result), t->o.why);
    }
    if (t->o.result == CLI_GET_OK) {
        f->used = t;
        if (f->verbose) {
            fprintf(stderr, "sk:   HTTP %ld, %zu bytes\n", t->o.status,
                t->o.bytes);
        }
        return 1;
    }
    return t->o.result == CLI_GET_BROKEN;
}


/* The record's routes, once. */
static int
sk_ft_routes(sk_ft_t *f)
{
    sk_err_t  err;

    if (f->have_routes) {
        return 0;
    }
    if (sk_routes_for(&f->routes, &f->found->rec, f->tg.service,
            f->tg.portnum, &err) != 0)
    {
        return cli_fail_err(&err);
    }
    f->have_routes = 1;
    return 0;
}


/* The record's routes after the URL's host (tries[0]), until one
 * answers or fails after sending. */
static int
sk_ft_try_routes(sk_ft_t *f)
{
    sk_ft_try_t  *tries;
    size_t        i;

    if (sk_ft_routes(f) != 0) {
        return CLI_EXIT_UNDECIDED;
    }
    tries = realloc(f->tries, (f->routes.n + 1) * sizeof(sk_ft_try_t));
    if (tries == NULL) {
        cli_fail("out of memory");
        return CLI_EXIT_UNDECIDED;
    }
    f->tries = tries;
    f->used = NULL;
    for (i = 0; i < f->routes.n; i++) {
        if (sk_ft_try(f, &f->routes.v[i], i + 1, f->routes.n + 1)) {
            break;
        }
    }
    return 0;
}


static int
sk_ft_exit(const sk_ft_t *f)
{
    size_t  i;
    int     refused = 0;

    if (f->plain != NULL && f->plain->decision == SK_DECIDE_INSECURE) {
        return CLI_EXIT_INSECURE;
    }
    if (f->used != NULL) {
        return SK_EXIT_OK;
    }
    if (f->closed) {
        /* Undecided, whatever the handshake it failed reported. */
        return CLI_EXIT_UNDECIDED;
    }
    for (i = 0; i < f->ntries; i++) {
        if (f->tries[i].o.result == CLI_GET_BROKEN) {
            return SK_FT_EXIT_BROKEN;
        }
        refused |= f->tries[i].o.result == CLI_GET_REFUSED;
    }
    return refused ? SK_EXIT_FAIL : CLI_EXIT_UNDECIDED;
}


/* The decision the report leads with: the answering route's, else the
 * first route's that decided, else the http:// one. */
static const sk_decide_t *
sk_ft_decision(const sk_ft_t *f)
{
    size_t  i;

    if (f->used != NULL) {
        return f->used->o.decided ? &f->used->o.d : f->plain;
    }
    for (i = 0; i < f->ntries; i++) {
        if (f->tries[i].o.decided) {
            return &f->tries[i].o.d;
        }
    }
    return f->plain;
}


static void
sk_ft_json(const sk_ft_t *f, int rc)
{
    const sk_decide_t  *d = sk_ft_decision(f);
    const char         *decision = "none", *check = "no-sk";
    char                addr[SK_ROUTE_TEXT_MAX + 16];
    size_t              i;

    if (rc == CLI_EXIT_UNDECIDED) {
        decision = "undecided";
        check = "unavailable";
    } else if (rc == SK_EXIT_FAIL
               && (d == NULL || d->decision != SK_DECIDE_REJECT))
    {
        decision = "reject";            /* refused on the CA checks */
        check = "certificate";
    } else if (d != NULL) {
        decision = sk_decision_name(d->decision);
        check = d->check;
    }
    printf("{\"decision\":\"%s\",\"check\":\"%s\",\"reason\":", decision,
        check);
    cli_json_str(stdout, f->why[0] != '\0' ? f->why : d != NULL ? d->reason
        : "");
    printf(",\"url\":");
    cli_json_str(stdout, f->tg.url);
    printf(",\"name\":");
    cli_json_str(stdout, f->tg.name);
    printf(",\"service\":\"%s\",\"port\":%u,\"route\":", f->tg.service,
        f->tg.portnum);
    if (f->used != NULL) {
        cli_client_route_addr(addr, sizeof(addr), f->used->route, &f->tg);
        cli_json_str(stdout, addr);
        printf(",\"status\":%ld,\"bytes\":%zu", f->used->o.status,
            f->used->o.bytes);
    } else {
        printf("null");
    }
    if (f->found != NULL) {
        cli_client_json_found(stdout, &f->cl, f->found, d);
    }
    printf(",\"routes\":[");
    for (i = 0; i < f->ntries; i++) {
        printf("%s{", i > 0 ? "," : "");
        cli_client_json_route(stdout, f->tries[i].route, &f->tg,
            f->cl.trust.tor);
        printf(",\"result\":\"%s\"",
            cli_get_result_name(f->tries[i].o.result));
        if (f->tries[i].o.result != CLI_GET_OK) {
            printf(",\"error\":");
            cli_json_str(stdout, f->tries[i].o.why);
        }
        printf("}");
    }
    printf("],\"exit\":%d}\n", rc);
}


/* What went wrong, on stderr: every route and why. */
static void
sk_ft_failure(const sk_ft_t *f)
{
    char    name[2 * SK_ROUTE_TEXT_MAX + 2 * SK_ERR_MSG_MAX];
    size_t  i;

    if (f->why[0] != '\0') {
        cli_fail("%s: %s", f->tg.url, f->why);
        return;
    }
    cli_fail("%s: no route gave the page; tried, in order:", f->tg.url);
    for (i = 0; i < f->ntries; i++) {
        fprintf(stderr, "sk:   %s: %s: %s\n", sk_ft_route_name(f,
            f->tries[i].route, name, sizeof(name)),
            cli_get_result_name(f->tries[i].o.result), f->tries[i].o.why);
    }
}


static int
sk_ft_report(sk_ft_t *f)
{
    sk_err_t  err;
    int       rc = sk_ft_exit(f);

    if (rc == SK_EXIT_OK && f->tmp.tmp != NULL
        && sk_file_tmp_commit(&f->tmp, &err) != 0)
    {
        snprintf(f->why, sizeof(f->why), "%s", err.msg);
        rc = SK_FT_EXIT_BROKEN;
    }
    if (rc != SK_EXIT_OK) {
        sk_ft_failure(f);
        if (f->why[0] == '\0') {
            snprintf(f->why, sizeof(f->why), "no route gave the page");
        }
    }
    if (f->json) {
        sk_ft_json(f, rc);
    }
    return rc;
}


/* http://: refused for a name whose SK covers https, else fetched as is
 * over the URL's host. */
static int
sk_ft_plain(sk_ft_t *f)
{
    sk_err_t  err;

    if (sk_tls_decide(f->cl.tls, NULL, time(NULL), &err) != 0) {
        cli_fail_err(&err);
        return CLI_EXIT_UNDECIDED;
    }
    f->plain = sk_tls_decision(f->cl.tls);
    if (f->plain->decision == SK_DECIDE_INSECURE) {
        snprintf(f->why, sizeof(f->why), "refused, nothing sent: %s; use "
            "https://", f->plain->reason);
        return sk_ft_report(f);
    }
    if (f->verbose) {
        fprintf(stderr, "sk: %s: plain HTTP, unchecked (%s)\n", f->tg.url,
            f->plain->reason);
    }
    f->g.tls = NULL;
    f->tries = calloc(1, sizeof(sk_ft_try_t));
    if (f->tries == NULL) {
        return cli_fail("out of memory");
    }
    f->ntries = 1;
    cli_get(&f->g, NULL, &f->tries[0].o);
    if (f->tries[0].o.result == CLI_GET_OK) {
        f->used = &f->tries[0];
    }
    return sk_ft_report(f);
}


/* The record, from the mirrors now: 0, 1 when it fails closed (the
 * report is made), else the exit status. */
static int
sk_ft_lookup(sk_ft_t *f)
{
    char  why[SK_ERR_MSG_MAX];
    int   rc;

    rc = cli_client_lookup(&f->cl, &f->tg, &f->found, why, sizeof(why));
    if (rc == 1) {
        if (f->verbose) {
            cli_client_log_mirrors(stderr, f->found);
        }
        snprintf(f->why, sizeof(f->why), "undecided, nothing sent: %s",
            why);
        return sk_ft_report(f);
    }
    return rc;
}


/*
 * The cache, if fresh, decides before connecting; else the URL's host is
 * tried first and its handshake learns the record (its staple, else the
 * mirrors).  The record's routes follow when the host fails; an
 * unreachable host leaves the mirrors to learn it from.
 */
static int
sk_ft_run(sk_ft_t *f)
{
    sk_err_t  err;
    size_t    n = 0;
    int       rc, done;

    rc = cli_client_prepare(&f->cl, &f->tg);
    if (rc != 0) {
        return rc;
    }
    f->found = sk_tls_get0_found(f->cl.tls);
    if (f->found == NULL && f->tg.mode == CLI_MODE_PLAIN
        && (rc = sk_ft_lookup(f)) != 0)
    {
        return rc;
    }
    if (f->found != NULL && f->verbose) {
        cli_client_log_mirrors(stderr, f->found);
        cli_client_print_found(stderr, "sk: ", f->found);
    }
    if (f->tg.mode == CLI_MODE_PLAIN) {
        return sk_ft_plain(f);
    }
    f->tries = calloc(1, sizeof(sk_ft_try_t));
    if (f->tries == NULL) {
        cli_fail("out of memory");
        return CLI_EXIT_UNDECIDED;
    }
    f->g.tls = f->cl.tls;
    if (f->found != NULL) {
        if (sk_ft_routes(f) != 0) {
            return CLI_EXIT_UNDECIDED;
        }
        n = f->routes.n + 1;
    }
    done = sk_ft_try(f, NULL, 0, n);
    if (f->found == NULL) {         /* learnt in the handshake, or now */
        f->found = sk_tls_get0_found(f->cl.tls);
        if (f->found == NULL && !done && (rc = sk_ft_lookup(f)) != 0) {
            return rc;
        }
        if (f->found != NULL && f->verbose) {
            cli_client_log_mirrors(stderr, f->found);
            cli_client_print_found(stderr, "sk: ", f->found);
        }
        if (!done && sk_client_found_usable(f->found, &err) != 0) {
            f->closed = 1;
            snprintf(f->why, sizeof(f->why), "undecided, nothing sent: %s",
                err.msg);
            return sk_ft_report(f);
        }
    }
    if (done) {
        return sk_ft_report(f);
    }
    rc = sk_ft_try_routes(f);
    return rc != 0 ? rc : sk_ft_report(f);
}


/* Seconds, 1..86400, into milliseconds. */
static int
sk_ft_seconds(long *ms, const char *arg)
{
    unsigned long  s;

    if (cli_parse_uint(&s, arg, 86400) != 0) {
        return -1;
    }
    *ms = (long) s * 1000;
    return 0;
}


/* One more -H or --resolve line (no line breaks: no header injection). */
static int
sk_ft_append(struct curl_slist **list, const char *opt, const char *arg)
{
    struct curl_slist  *l;

    if (strpbrk(arg, "\r\n") != NULL) {
        return cli_usage(&sk_cmd_fetch, "%s: no line breaks", opt);
    }
    l = curl_slist_append(*list, arg);
    if (l == NULL) {
        return cli_fail("out of memory");
    }
    *list = l;
    return 0;
}


static int
sk_ft_options(sk_ft_t *f, cli_client_opts_t *co, long *max_ms, int argc,
    char **argv)
{
    static const struct option opts[] = {
        CLI_CLIENT_LONGOPTS,
        { "output",          required_argument, NULL, 'o' },
        { "header",          required_argument, NULL, 'H' },
        { "data",            required_argument, NULL, 'd' },
        { "verbose",         no_argument,       NULL, 'v' },
        { "json",            no_argument,       NULL, 'j' },
        { "cacert",          required_argument, NULL, 'A' },
        { "capath",          required_argument, NULL, 'P' },
        { "resolve",         required_argument, NULL, 'R' },
        { "connect-timeout", required_argument, NULL, 'c' },
        { "max-time",        required_argument, NULL, 'm' },
        { NULL, 0, NULL, 0 }
    };
    sk_err_t            err;
    int                 c, rc, tor_given = 0;

    optind = 1;
    while ((c = cli_client_getopt(co, argc, argv, "o:H:d:v", opts,
            &sk_cmd_fetch)) != -1)
    {
        switch (c) {
        case CLI_OPT_USAGE: return SK_EXIT_USAGE;
        case 'o': f->output = optarg; break;
        case 'd': f->g.data = optarg; break;
        case 'v': f->verbose = 1; break;
        case 'j': f->json = 1; break;
        case 'A': f->g.cacert = optarg; break;
        case 'P': f->g.capath = optarg; break;
        case 'H':
            rc = sk_ft_append(&f->g.headers, "-H", optarg);
            if (rc != 0) {
                return rc;
            }
            break;
        case 'R':
            rc = sk_ft_append(&f->g.resolve, "--resolve", optarg);
            if (rc != 0) {
                return rc;
            }
            break;
        case 'c':
            if (sk_ft_seconds(&f->g.connect_ms, optarg) != 0) {
                return cli_usage(&sk_cmd_fetch, "--connect-timeout %s: "
                    "want seconds, 1..86400", optarg);
            }
            tor_given = 1;
            break;
        case 'm':
            if (sk_ft_seconds(max_ms, optarg) != 0) {
                return cli_usage(&sk_cmd_fetch, "--max-time %s: want "
                    "seconds, 1..86400", optarg);
            }
            break;
        default: return cli_usage(&sk_cmd_fetch, "unknown option");
        }
    }
    if (tor_given) {
        f->g.tor_connect_ms = f->g.connect_ms;
    }
    if (optind + 1 != argc) {
        return cli_usage(&sk_cmd_fetch, optind == argc ? "missing URL"
            : "one URL only");
    }
    if (f->json && f->output == NULL) {
        return cli_usage(&sk_cmd_fetch, "--json prints the report on "
            "stdout: give -o FILE for the body");
    }
    if (cli_target_parse(&f->tg, argv[optind], "https,http", &err) != 0) {
        return cli_usage(&sk_cmd_fetch, "%s", err.msg);
    }
    f->g.url = argv[optind];
    f->g.tg = &f->tg;
    return 0;
}


/* -o FILE: a temp file beside it, renamed in on success, mode as curl's
 * (0666 less the umask); "-" is stdout, and an existing FILE that is not
 * a regular file (/dev/null, a pipe) is written as the body comes: a
 * rename would replace the device. */
static int
sk_ft_output(sk_ft_t *f)
{
    struct stat  st;
    mode_t       mask;
    sk_err_t     err;

    if (f->output == NULL || strcmp(f->output, "-") == 0) {
        f->g.sink = sk_ft_sink_stdout;
        return 0;
    }
    f->g.sink = sk_ft_sink_fd;
    if (stat(f->output, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) {
            cli_fail("%s: is a directory", f->output);
            return CLI_EXIT_UNDECIDED;
        }
        f->device = open(f->output, O_WRONLY | O_CLOEXEC);
        if (f->device < 0) {
            sk_err_sys(&err, "%s: cannot open", f->output);
            cli_fail_err(&err);
            return CLI_EXIT_UNDECIDED;
        }
        f->g.sink_arg = &f->device;
        return 0;
    }
    mask = umask(0);
    umask(mask);
    if (sk_file_tmp_open(&f->tmp, f->output, 0666 & ~mask, &err) != 0) {
        cli_fail_err(&err);
        return CLI_EXIT_UNDECIDED;
    }
    f->g.sink_arg = &f->tmp.fd;
    return 0;
}


static int
sk_fetch_run(int argc, char **argv)
{
    cli_client_opts_t   co;
    long                max_ms = SK_FT_MAX_MS;
    sk_ft_t             f;
    int                 rc;

    memset(&f, 0, sizeof(f));
    memset(&co, 0, sizeof(co));
    f.tmp.fd = -1;
    f.device = -1;
    f.g.connect_ms = SK_FT_CONNECT_MS;
    f.g.tor_connect_ms = SK_FT_TOR_CONNECT_MS;
    rc = sk_ft_options(&f, &co, &max_ms, argc, argv);
    if (rc == 0 && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        cli_fail("curl: cannot initialise");
        rc = CLI_EXIT_UNDECIDED;
    } else if (rc == 0) {
        f.g.deadline = cli_get_now() + max_ms;
        rc = cli_client_open(&f.cl, &co, &sk_cmd_fetch);
        if (rc == 0) {
            f.g.tor = f.cl.trust.tor;
            if (f.cl.curl.timeout_ms > max_ms) {
                f.cl.curl.timeout_ms = max_ms;
            }
            if (f.cl.curl_tor.timeout_ms > max_ms) {
                f.cl.curl_tor.timeout_ms = max_ms;
            }
            f.cl.curl.connect_timeout_ms = f.g.connect_ms;
            f.cl.curl_tor.connect_timeout_ms = f.g.tor_connect_ms;
            rc = sk_ft_output(&f);
            if (rc == 0) {
                rc = sk_ft_run(&f);
            }
            cli_client_close(&f.cl);
        }
        curl_global_cleanup();
    }
    sk_file_tmp_discard(&f.tmp);
    if (f.device >= 0) {
        close(f.device);
    }
    sk_routes_free(&f.routes);
    free(f.tries);
    curl_slist_free_all(f.g.headers);
    curl_slist_free_all(f.g.resolve);
    return rc;
}


const sk_cmd_t sk_cmd_fetch = {
    "fetch", sk_fetch_run,
    "[--trust FILE] [--mirror URL [--mirror-key FILE]]... [--cache DIR]"
    " [--no-staple] [--tor ADDRESS:PORT] [--cacert FILE] [--capath DIR]"
    " [--resolve NAME:PORT:ADDRESS]... [-H HEADER]... [-d DATA]"
    " [--connect-timeout SECS] [--max-time SECS] [-o FILE] [-v] [--json]"
    " (https|http)://HOST[:PORT][/PATH]",
    "Fetch URL as an SK-aware client does: learn HOST's SK as `sk verify`\n"
    "does (--trust, --mirror, --cache, --no-staple alike: without a fresh\n"
    "cache, from the server's stapled proof in the first handshake, else\n"
    "the mirrors), with the SK check inside the TLS handshake, so a\n"
    "server that fails it receives no request, header or body.  When the\n"
    "URL's host fails the check (no carrier, another SK's, a revoked key)\n"
    "or the network (refused, reset, timeout, TLS alert), try the\n"
    "alternate routes of the SK record for the service in order, then\n"
    "the SK's own onion (Ed25519, when the record lists none); each\n"
    "route keeps the site's name for SNI and the certificate, and is\n"
    "checked again.  .onion and .exit routes go through Tor's SOCKS\n"
    "port, the name resolved by Tor\n"
    "(--tor, the trust file's \"tor\", or 127.0.0.1:9050).  A route fails\n"
    "over only while nothing was sent on it.  A name without an SK gets\n"
    "ordinary verified HTTPS (--cacert, --capath), no fallback.  http://\n"
    "is refused for a name whose SK covers https, fetched as is for one\n"
    "without (-v says so).  Redirects are not followed; proxies from the\n"
    "environment are not used.\n"
    "\n"
    "The body goes to stdout, or to -o FILE (written to a temporary file\n"
    "and renamed in only when complete).  -H adds a header, -d DATA sends\n"
    "a POST body, --resolve pins the URL's host to an address (as curl's).\n"
    "--connect-timeout bounds each route's connection, SOCKS and TLS\n"
    "(default 10 s, 60 s through Tor), --max-time the whole run (default\n"
    "300 s).  -v reports each step on stderr; --json prints a report on\n"
    "stdout (then give -o): decision, check, reason, the route used, and\n"
    "each route tried with its result.  Exit 0 fetched, 1 refused (a\n"
    "server failed the SK or certificate check and no route gave the\n"
    "page), 2 usage, 4 insecure (http:// for an SK covering https), 5\n"
    "undecided (no fresh enough answer and no SK known, no route\n"
    "reachable, or a local failure), 6 broken (failed after the request\n"
    "was sent, or the output cannot be written).\n"
};
