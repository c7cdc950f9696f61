/*
 * cmd_verify.c -- `sk verify URL`: what an SK-aware client does before it
 * sends data.  Learn the name's SK from mirrors (design 4.b, libsk's
 * sk_tls_lookup through libcurl), connect (TLS, or SMTP STARTTLS), take
 * the chain the server presents and decide (sk_tls_decide).
 *
 * Exit: 0 accept, 1 reject, 2 usage, 3 none (no SK for this name and
 * service: ordinary authentication applies), 4 insecure (the SK covers
 * the service, offered without TLS), 5 undecided (the server or the
 * mirrors could not be reached well enough to decide: fail closed; also
 * a local failure: trust file, cache).  1 means reject and nothing else.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/x509.h>

#include "cli_client.h"

typedef struct {
    cli_target_t             tg;
    const char              *connect;      /* --connect HOST[:PORT] */
    int                      json;
    int                      routes;       /* --routes */
    cli_client_t             cl;
    const sk_client_found_t *found;        /* NULL: no lookup ran */
    STACK_OF(X509)          *chain;        /* NULL: plaintext */
    cli_net_tls_t            tls;          /* the staple the server sent */
    char                     plain_why[128];
    const sk_decide_t       *d;            /* NULL: undecided */
    char                     undecided_why[2 * SK_ERR_MSG_MAX + 256];
} sk_vf_t;


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
    if (v->tg.mode == CLI_MODE_PLAIN) {
        snprintf(v->plain_why, sizeof(v->plain_why), "http (no TLS) is "
            "offered");
    } else if (v->tg.mode == CLI_MODE_STARTTLS
               && cli_net_starttls(fd, err) != 0)
    {
        if (err->code == SK_ERR_NOT_FOUND) {
            snprintf(v->plain_why, sizeof(v->plain_why), "the server does "
                "not offer STARTTLS");
        } else {
            rc = -1;
        }
    } else {
        /* No record yet: ask for the server's staple. */
        v->tls.ask_staple = v->found == NULL;
        rc = cli_net_handshake(&v->chain, fd, v->tg.name, &v->tls, err);
    }
    close(fd);
    return rc;
}


/* The routes a client would try for the target, as text or JSON. */
static int
sk_vf_routes(const sk_vf_t *v)
{
    sk_routes_t  rs;
    char         line[2 * SK_ROUTE_TEXT_MAX + 2 * SK_ERR_MSG_MAX];
    size_t       i;
    sk_err_t     err;

    if (sk_routes_for(&rs, &v->found->rec, v->tg.service, v->tg.portnum,
            &err) != 0)
    {
        return cli_fail_err(&err);
    }
    if (v->json) {
        printf(",\"routes\":[{");
        cli_client_json_route(stdout, NULL, &v->tg, v->cl.trust.tor);
        for (i = 0; i < rs.n; i++) {
            printf("},{");
            cli_client_json_route(stdout, &rs.v[i], &v->tg,
                v->cl.trust.tor);
        }
        printf("}]");
    } else {
        cli_client_route_text(line, sizeof(line), NULL, &v->tg,
            v->cl.trust.tor);
        printf("  routes, in order: %s\n", line);
        for (i = 0; i < rs.n; i++) {
            cli_client_route_text(line, sizeof(line), &rs.v[i], &v->tg,
                v->cl.trust.tor);
            printf("    then %s\n", line);
        }
    }
    sk_routes_free(&rs);
    return 0;
}


static int
sk_vf_report(sk_vf_t *v)
{
    static const int  codes[] = { SK_EXIT_OK, SK_EXIT_FAIL, CLI_EXIT_NONE,
                                  CLI_EXIT_INSECURE };
    const char       *decision, *check, *reason;
    char              buf[sizeof(v->d->reason) + 160];
    int               rc = 0;

    if (v->found != NULL) {
        cli_client_log_mirrors(stderr, v->found);
    }
    if (v->d == NULL) {
        decision = "undecided";
        check = "unavailable";
        reason = v->undecided_why;
    } else {
        decision = sk_decision_name(v->d->decision);
        check = v->d->check;
        reason = buf;
        snprintf(buf, sizeof(buf), "%s%s%s", v->d->reason,
            v->chain == NULL && v->plain_why[0] != '\0' ? "; " : "",
            v->chain == NULL ? v->plain_why : "");
    }
    if (v->json) {
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
        if (v->found != NULL) {
            cli_client_json_found(stdout, &v->cl, v->found, v->d);
        }
    } else {
        printf("%s: %s: %s\n", decision, v->tg.url, reason);
        if (v->found != NULL) {
            cli_client_print_found(stdout, "", v->found);
        }
    }
    if (v->routes && v->found != NULL) {
        rc = sk_vf_routes(v);
    }
    if (v->json) {
        printf("}\n");
    }
    if (rc != 0) {
        return CLI_EXIT_UNDECIDED;
    }
    return v->d == NULL ? CLI_EXIT_UNDECIDED : codes[v->d->decision];
}


/*
 * The cache first; without a fresh enough copy, the server's staple
 * (asked for in the handshake) or else the mirrors decide after it.  An
 * unreachable server gets the mirrors asked all the same, for the
 * report.
 */
static int
sk_vf_decide(sk_vf_t *v)
{
    char      why[SK_ERR_MSG_MAX];
    sk_err_t  err;
    int       rc;

    rc = cli_client_prepare(&v->cl, &v->tg);
    if (rc != 0) {
        return rc;
    }
    v->found = sk_tls_get0_found(v->cl.tls);
    if (sk_vf_connect(v, &err) != 0) {
        snprintf(v->undecided_why, sizeof(v->undecided_why), "cannot reach "
            "the server: %s", err.msg);
        if (v->found == NULL) {
            rc = cli_client_lookup(&v->cl, &v->tg, &v->found, why,
                sizeof(why));
            if (rc > 1) {
                return rc;
            }
        }
        return sk_vf_report(v);
    }
    if (sk_tls_set_staple(v->cl.tls, v->tls.staple, v->tls.staple_len,
            &err) != 0)
    {
        return cli_fail_err(&err);
    }
    rc = sk_tls_decide(v->cl.tls, v->chain, time(NULL), &err);
    v->found = sk_tls_get0_found(v->cl.tls);
    if (rc != 0) {
        if (err.code != SK_ERR_UNAVAILABLE || v->found == NULL) {
            cli_fail("%s: %s", v->tg.url, err.msg);
            return CLI_EXIT_UNDECIDED;
        }
        /* Fail closed: stale information and no SK known from it. */
        snprintf(v->undecided_why, sizeof(v->undecided_why), "%s",
            err.msg);
        return sk_vf_report(v);
    }
    v->d = sk_tls_decision(v->cl.tls);
    return sk_vf_report(v);
}


static int
sk_verify_run(int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_CLIENT_LONGOPTS,
        { "connect",    required_argument, NULL, 'C' },
        { "timeout",    required_argument, NULL, 'T' },
        { "routes",     no_argument,       NULL, 'r' },
        { "json",       no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    cli_client_opts_t   co;
    unsigned long       timeout = 10;
    sk_err_t            err;
    sk_vf_t             v;
    int                 c, rc;

    memset(&v, 0, sizeof(v));
    memset(&co, 0, sizeof(co));
    optind = 1;
    while ((c = cli_client_getopt(&co, argc, argv, "", opts,
            &sk_cmd_verify)) != -1)
    {
        switch (c) {
        case CLI_OPT_USAGE: return SK_EXIT_USAGE;
        case 'C': v.connect = optarg; break;
        case 'T':
            if (cli_parse_uint(&timeout, optarg, 3600) != 0) {
                return cli_usage(&sk_cmd_verify, "--timeout %s: want "
                    "seconds, 1..3600", optarg);
            }
            break;
        case 'r': v.routes = 1; break;
        case 'j': v.json = 1; break;
        default: return cli_usage(&sk_cmd_verify, "unknown option");
        }
    }
    if (optind + 1 != argc) {
        return cli_usage(&sk_cmd_verify, optind == argc ? "missing URL"
            : "one URL only");
    }
    if (cli_target_parse(&v.tg, argv[optind], "https,smtps,smtp,http", &err)
        != 0)
    {
        return cli_usage(&sk_cmd_verify, "%s", err.msg);
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        cli_fail("curl: cannot initialise");
        return CLI_EXIT_UNDECIDED;
    }
    rc = cli_client_open(&v.cl, &co, &sk_cmd_verify);
    if (rc == 0) {
        v.cl.curl.timeout_ms = (long) timeout * 1000;
        rc = sk_vf_decide(&v);
        cli_client_close(&v.cl);
    }
    sk_X509_pop_free(v.chain, X509_free);
    free(v.tls.staple);
    curl_global_cleanup();
    return rc;
}


const sk_cmd_t sk_cmd_verify = {
    "verify", sk_verify_run,
    "[--trust FILE] [--mirror URL [--mirror-key FILE]]... [--cache DIR]"
    " [--no-staple] [--connect HOST[:PORT]] [--routes [--tor ADDRESS:PORT]]"
    " [--json]"
    " (https|smtps|smtp|http)://HOST[:PORT]",
    "Do what an SK-aware client does before it sends data.  Learn\n"
    "HOST's entries (and its parents', for a wildcard SK) from the cache\n"
    "(default ~/.cache/sk) if it is fresh, else from the server's\n"
    "stapled proof, asked for in the handshake (not with --no-staple),\n"
    "else from the mirrors; check them against the timelines of the\n"
    "trust file (default /etc/sk/trust.conf; --mirror replaces its\n"
    "mirrors), judge their freshness (design 4.b), keep them in the\n"
    "cache and combine the record.  Connect to HOST (or --connect\n"
    "HOST[:PORT]; SNI is HOST), with TLS (https, smtps) or SMTP\n"
    "STARTTLS (smtp), take the chain the server presents and decide.\n"
    "Prints the decision and why; --routes adds the routes `sk fetch`\n"
    "would try, in order (the URL's host, then the SK record's alternate\n"
    "routes for the service, then the SK's own onion; .onion and .exit\n"
    "through Tor at --tor ADDRESS:PORT, the trust file's \"tor\", or\n"
    "127.0.0.1:9050); --json prints one object.  Exit 0 accept (a carrier\n"
    "signed by the current SK certifies the server's key), 1 reject (the\n"
    "SK covers the service but the chain has no valid carrier: the reason\n"
    "says which check failed), 3 none (no SK covers this name and\n"
    "service), 4 insecure (the SK covers the service, offered without\n"
    "TLS: http://, or smtp without STARTTLS), 5 undecided (server or\n"
    "mirrors unreachable, no answer fresh enough, or a local failure:\n"
    "trust file, cache), 2 usage.\n"
};
