/*
 * cmd_proxy.c -- `sk proxy`: a local HTTP proxy that makes the user's
 * browsers SK-aware (proxy.h), and `--install-ca` / `--remove-ca`, which
 * put its local CA into (out of) their certificate databases.
 *
 * Exit: 0 after SIGINT/SIGTERM (or the CA installed, removed), 1 when it
 * cannot start or certutil fails, 2 usage.
 *
 * libevent runs the loop, with its OpenSSL bufferevents on the TLS
 * sessions: a small, well-kept event library that already speaks
 * OpenSSL, where hand-written non-blocking TLS would be the riskiest code
 * here; libcurl (already sk fetch's) makes the connections to the sites.
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/thread.h>

#include "proxy.h"

#define SK_PX_CONNECT_MS       10000
#define SK_PX_TOR_CONNECT_MS   60000


/* Seconds, 1..86400, into milliseconds. */
static int
sk_px_seconds(long *ms, const char *arg)
{
    unsigned long  s;

    if (cli_parse_uint(&s, arg, 86400) != 0) {
        return -1;
    }
    *ms = (long) s * 1000;
    return 0;
}


static int
sk_px_options(cli_proxy_t *px, int *nss, int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_CLIENT_LONGOPTS,
        { "listen",          required_argument, NULL, 'l' },
        { "cacert",          required_argument, NULL, 'A' },
        { "capath",          required_argument, NULL, 'P' },
        { "resolve",         required_argument, NULL, 'R' },
        { "ca-dir",          required_argument, NULL, 'D' },
        { "connect-timeout", required_argument, NULL, 'c' },
        { "idle-timeout",    required_argument, NULL, 'i' },
        { "install-ca",      no_argument,       NULL, 'I' },
        { "remove-ca",       no_argument,       NULL, 'X' },
        { NULL, 0, NULL, 0 }
    };
    struct curl_slist  *l;
    int                 c, tor_given = 0;

    optind = 1;
    while ((c = cli_client_getopt(&px->co, argc, argv, "", opts,
            &sk_cmd_proxy)) != -1)
    {
        switch (c) {
        case CLI_OPT_USAGE: return SK_EXIT_USAGE;
        case 'l': px->listen = optarg; break;
        case 'A': px->cacert = optarg; break;
        case 'P': px->capath = optarg; break;
        case 'D': px->ca_dir = optarg; break;
        case 'I': *nss = 1; break;
        case 'X': *nss = -1; break;
        case 'R':
            if (strpbrk(optarg, "\r\n") != NULL) {
                return cli_usage(&sk_cmd_proxy, "--resolve: no line "
                    "breaks");
            }
            l = curl_slist_append(px->resolve, optarg);
            if (l == NULL) {
                return cli_fail("out of memory");
            }
            px->resolve = l;
            break;
        case 'c':
            if (sk_px_seconds(&px->connect_ms, optarg) != 0) {
                return cli_usage(&sk_cmd_proxy, "--connect-timeout %s: "
                    "want seconds, 1..86400", optarg);
            }
            tor_given = 1;
            break;
        case 'i':
            if (sk_px_seconds(&px->idle_ms, optarg) != 0) {
                return cli_usage(&sk_cmd_proxy, "--idle-timeout %s: want "
                    "seconds, 1..86400", optarg);
            }
            break;
        default: return cli_usage(&sk_cmd_proxy, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_proxy, "no arguments besides options");
    }
    if (tor_given) {
        px->tor_connect_ms = px->connect_ms;
    }
    px->head_ms = px->idle_ms < CLI_PROXY_HEAD_MS ? px->idle_ms
        : CLI_PROXY_HEAD_MS;
    return 0;
}


/* The local CA's directory: --ca-dir, else $XDG_DATA_HOME/sk/proxy or
 * ~/.local/share/sk/proxy, the parents made (0700) if missing. */
static int
sk_px_ca_dir(char *out, size_t size, const char *given)
{
    const char  *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    size_t       i, n;

    if (given != NULL) {
        snprintf(out, size, "%s", given);
        return 0;
    }
    if (xdg != NULL && xdg[0] == '/') {
        n = (size_t) snprintf(out, size, "%s/sk/proxy", xdg);
    } else if (home != NULL && home[0] == '/') {
        n = (size_t) snprintf(out, size, "%s/.local/share/sk/proxy", home);
    } else {
        return cli_fail("neither XDG_DATA_HOME nor HOME is set: give "
            "--ca-dir DIR");
    }
    if (n >= size) {
        return cli_fail("the CA's directory name is too long");
    }
    for (i = 1; i < n; i++) {
        if (out[i] == '/') {
            out[i] = '\0';
            if (mkdir(out, 0700) != 0 && errno != EEXIST) {
                cli_fail("%s: cannot create: %s", out, strerror(errno));
                out[i] = '/';
                return SK_EXIT_FAIL;
            }
            out[i] = '/';
        }
    }
    return 0;
}


/* "user@host", for the CA's name. */
static void
sk_px_owner(char *out, size_t size)
{
    struct passwd  *pw = getpwuid(geteuid());
    char            host[256] = "localhost";

    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    snprintf(out, size, "%s@%s", pw != NULL ? pw->pw_name : "user", host);
}


static int
sk_px_mint(cli_proxy_t *px, char *dir, size_t size)
{
    sk_err_t  err;
    char      owner[320];
    int       created, rc;

    rc = sk_px_ca_dir(dir, size, px->ca_dir);
    if (rc != 0) {
        return rc;
    }
    sk_px_owner(owner, sizeof(owner));
    if (sk_mint_open(&px->mint, &created, dir, owner, time(NULL), &err)
        != 0)
    {
        return cli_fail_err(&err);
    }
    if (created) {
        cli_proxy_log("made the local CA in %s: its key %s never leaves "
            "this directory; `sk proxy --install-ca` makes the browsers "
            "trust it", dir, SK_MINT_KEY_FILE);
    }
    return 0;
}


/* The proxy's own queries (mirrors, sites) never go through a proxy of
 * the environment: set to this very proxy, they would loop. */
static void
sk_px_environment(void)
{
    static const char  *vars[] = { "http_proxy", "HTTP_PROXY", "https_proxy",
                                   "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                                   NULL };
    struct rlimit       rl;
    size_t              i;

    for (i = 0; vars[i] != NULL; i++) {
        unsetenv(vars[i]);
    }
    /* A tunnel holds six descriptors: as many as the system allows. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stderr, NULL, _IOLBF, 0);
}


static int
sk_px_run(cli_proxy_t *px)
{
    char      dflt[4096];
    sk_err_t  err;
    int       rc;

    rc = cli_client_trust(&px->trust, &px->co, &sk_cmd_proxy);
    if (rc != 0) {
        return rc;
    }
    if (cli_client_cache_dir(dflt, sizeof(dflt), &px->co) != NULL) {
        snprintf(px->cache_dir, sizeof(px->cache_dir), "%s",
            cli_client_cache_dir(dflt, sizeof(dflt), &px->co));
    }
    sk_client_curl_init(&px->curl, &px->curl_tor, &px->trust);
    px->curl.connect_timeout_ms = px->connect_ms;
    px->curl_tor.connect_timeout_ms = px->tor_connect_ms;
    if (evthread_use_pthreads() != 0
        || (px->base = event_base_new()) == NULL)
    {
        rc = cli_fail("proxy: cannot start the event loop");
    } else if (cli_proxy_tls_init(px, &err) != 0) {
        rc = cli_fail_err(&err);
    } else if (cli_proxy_serve(px) != 0) {
        rc = SK_EXIT_FAIL;
    }
    cli_proxy_tls_free(px);
    if (px->base != NULL) {
        event_base_free(px->base);
    }
    sk_client_trust_free(&px->trust);
    return rc;
}


static int
sk_proxy_main(int argc, char **argv)
{
    cli_proxy_t  px;
    char         dir[4096];
    int          rc, nss = 0;

    memset(&px, 0, sizeof(px));
    px.listen = CLI_PROXY_LISTEN;
    px.connect_ms = SK_PX_CONNECT_MS;
    px.tor_connect_ms = SK_PX_TOR_CONNECT_MS;
    px.idle_ms = CLI_PROXY_IDLE_MS;
    pthread_mutex_init(&px.lock, NULL);
    pthread_cond_init(&px.wake, NULL);
    rc = sk_px_options(&px, &nss, argc, argv);
    if (rc == 0) {
        sk_px_environment();
        rc = sk_px_mint(&px, dir, sizeof(dir));
    }
    if (rc == 0 && nss != 0) {
        rc = cli_proxy_nss(&px, nss > 0);
    } else if (rc == 0) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            rc = cli_fail("curl: cannot initialise");
        } else {
            rc = sk_px_run(&px);
            curl_global_cleanup();
        }
    }
    sk_mint_free(px.mint);
    curl_slist_free_all(px.resolve);
    pthread_mutex_destroy(&px.lock);
    pthread_cond_destroy(&px.wake);
    return rc;
}


const sk_cmd_t sk_cmd_proxy = {
    "proxy", sk_proxy_main,
    "[--listen ADDRESS:PORT] [--trust FILE] [--mirror URL [--mirror-key"
    " FILE]]... [--cache DIR] [--no-staple] [--tor ADDRESS:PORT] [--cacert"
    " FILE] [--capath DIR] [--resolve NAME:PORT:ADDRESS]... [--ca-dir DIR]"
    " [--connect-timeout SECS] [--idle-timeout SECS]\n"
    "--install-ca [--ca-dir DIR]\n"
    "--remove-ca [--ca-dir DIR]",
    "Run a local HTTP proxy (default 127.0.0.1:8118) that makes any\n"
    "browser SK-aware: set it as the browser's proxy for http and https\n"
    "(or its PAC file, http://ADDRESS:PORT/proxy.pac).  For each CONNECT\n"
    "the proxy learns the name's SK as `sk fetch` does (--trust, --mirror,\n"
    "--cache, --no-staple, --tor alike; the server's stapled proof asked\n"
    "for, else the mirrors), before a byte of the browser's request is\n"
    "read:\n"
    "  - a name with no SK for https is tunnelled blind: the proxy never\n"
    "    reads the traffic, and the browser checks the certificate itself;\n"
    "  - a name whose SK covers https: the proxy connects to the site,\n"
    "    checks the CA chain and host name (the system's roots, or\n"
    "    --cacert/--capath) and the SK's carrier, trying the record's\n"
    "    routes (addresses, then onions through Tor, the site's name kept\n"
    "    for TLS) when the host fails; on accept it completes the\n"
    "    browser's handshake with a certificate of the local CA and\n"
    "    splices the two sessions, with the protocol the site chose\n"
    "    (HTTP/2, HTTP/1.1, WebSocket upgrades);\n"
    "  - reject, undecided (nothing fresh enough known) or unreachable:\n"
    "    a page saying so in plain words, over TLS, with no way past it;\n"
    "    nothing of the request reaches the server;\n"
    "  - http:// for such a name: a redirect to https://, nothing sent.\n"
    "One log line on stderr per decision.  --resolve pins a name to an\n"
    "address (as curl's); --connect-timeout bounds each connection\n"
    "(default 10 s, 60 s through Tor), --idle-timeout a quiet one\n"
    "(default 300 s).\n"
    "\n"
    "The local CA is made on first run in --ca-dir (default\n"
    "$XDG_DATA_HOME/sk/proxy or ~/.local/share/sk/proxy, mode 0700; its\n"
    "key ca.key is 0600 and refused if others may read it).  It mints a\n"
    "certificate only for a name whose SK the proxy checks, valid one\n"
    "day.  --install-ca adds ca.pem to the NSS databases of the user's\n"
    "Chromium (~/.pki/nssdb) and Firefox profiles with certutil\n"
    "(libnss3-tools); --remove-ca takes it out again.\n"
};
