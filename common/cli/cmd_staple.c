/*
 * cmd_staple.c -- `sk staple`: a server's stapled proof by hand.
 *
 *   fetch  the answers for names from the mirrors into the key-material
 *          cache (sk:proof:<name>), as nginx and sk-milter refresh them;
 *          what a timer runs where several servers share a cache
 *   show   a staple from a file or from a server's handshake (asking for
 *          extension 0xFF53, else the certificate form in the chain), and,
 *          with a trust file, each answer checked as a client checks it
 *   wrap   the certificate form of a staple, for a hand-kept chain file
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/pem.h>

#include <sk/staple_serve.h>

#include "cli_client.h"

#define SK_STAPLE_FILE_MAX  (1024 * 1024)


static int
sk_staple_fetch_cmd(int argc, char **argv)
{
    static const struct option opts[] = {
        { "trust",      required_argument, NULL, CLI_OPT_TRUST },
        { "mirror",     required_argument, NULL, CLI_OPT_MIRROR },
        { "mirror-key", required_argument, NULL, CLI_OPT_MIRROR_KEY },
        { "cache",      required_argument, NULL, 'C' },
        { "out",        required_argument, NULL, 'o' },
        { "json",       no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    cli_client_opts_t   co;
    sk_client_trust_t   t;
    sk_client_curl_t    curl = { 10000, 0, NULL };
    sk_staple_set_t     set;
    sk_staple_name_t   *nm;
    sk_cache_t         *cache = NULL;
    const char         *spec = SK_CACHE_DEFAULT_DIR, *out = NULL;
    char                key[SK_CACHE_KEY_MAX + 1];
    int64_t             now = time(NULL);
    sk_err_t            err;
    size_t              i;
    int                 c, rc, json = 0, served = 0;

    memset(&co, 0, sizeof(co));
    optind = 1;
    while ((c = cli_client_getopt(&co, argc, argv, "o:", opts,
            &sk_cmd_staple)) != -1)
    {
        switch (c) {
        case CLI_OPT_USAGE: return SK_EXIT_USAGE;
        case 'C': spec = optarg; break;
        case 'o': out = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_staple, "unknown option");
        }
    }
    if (optind == argc) {
        return cli_usage(&sk_cmd_staple, "fetch: missing NAME");
    }
    if (sk_staple_set_init(&set, (const char *const *) argv + optind,
            (size_t) (argc - optind), &err) != 0)
    {
        return cli_usage(&sk_cmd_staple, "fetch: %s", err.msg);
    }
    rc = cli_client_trust(&t, &co, &sk_cmd_staple);
    if (rc != 0) {
        return rc;
    }
    signal(SIGPIPE, SIG_IGN);
    rc = SK_EXIT_FAIL;
    if (sk_cache_open(&cache, spec, 0, &err) != 0) {
        rc = err.code == SK_ERR_FORMAT
            ? cli_usage(&sk_cmd_staple, "--cache: %s", err.msg)
            : cli_fail_err(&err);
        goto done;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        cli_fail("curl: cannot initialise");
        goto done;
    }
    if (sk_staple_set_refresh(&set, &t, cache, sk_client_fetch_curl, &curl,
            now, &err) < 0)
    {
        cli_fail_err(&err);
        goto cleanup;
    }
    for (i = 0; i < set.n; i++) {
        nm = &set.names[i];
        sk_staple_cache_key(key, nm->name);
        served += nm->s.buf != NULL;
        if (json) {
            printf("{\"key\":");
            cli_json_str(stdout, key);
            printf(",\"name\":");
            cli_json_str(stdout, nm->name);
            printf(",\"served\":%s", nm->s.buf != NULL ? "true" : "false");
            if (nm->s.buf != NULL) {
                printf(",\"age\":%" PRId64 ",\"bytes\":%zu,\"from\":",
                    now - nm->oldest, nm->s.len);
                cli_json_str(stdout, nm->from);
            }
            printf(",\"log\":");
            cli_json_str(stdout, nm->why);
            printf("}\n");
        } else {
            printf("%s: %s\n", key, nm->why);
        }
    }
    if (out != NULL && set.buf != NULL
        && sk_file_write_atomic(out, (const char *) set.buf, set.len, 0644,
               &err) != 0)
    {
        cli_fail_err(&err);
        goto cleanup;
    }
    rc = (size_t) served == set.n ? SK_EXIT_OK : SK_EXIT_FAIL;

cleanup:
    curl_global_cleanup();
done:
    sk_cache_close(cache);
    sk_staple_set_free(&set);
    sk_client_trust_free(&t);
    return rc;
}


/* What `show` looks at. */
typedef struct {
    const char     *form;           /* "extension", "chain", "file" */
    unsigned char  *buf;
    size_t          len;
    int             version;        /* TLS, 0 for a file */
} sk_staple_got_t;


/* From a file: the raw bytes, or a PEM chain with a staple certificate. */
static int
sk_staple_from_file(sk_staple_got_t *g, const char *path, sk_err_t *err)
{
    STACK_OF(X509)  *chain;
    char            *text;
    size_t           len;
    int              rc;

    if (sk_file_read(&text, &len, path, SK_STAPLE_FILE_MAX, err) != 0) {
        return -1;
    }
    if (len < 11 || memcmp(text, "-----BEGIN ", 11) != 0) {
        g->form = "file";
        g->buf = (unsigned char *) text;
        g->len = len;
        return 0;
    }
    rc = sk_chain_parse_pem(&chain, text, len, err);
    free(text);
    if (rc != 0) {
        return sk_err_prefix(err, "%s", path);
    }
    g->form = "chain";
    rc = sk_staple_find(&g->buf, &g->len, chain, err);
    sk_X509_pop_free(chain, X509_free);
    return rc != 0 ? sk_err_prefix(err, "%s", path) : 0;
}


/* From a server: the extension asked for, else the chain's. */
static int
sk_staple_from_server(sk_staple_got_t *g, const char *target, int starttls,
    const char *sni, int version, sk_err_t *err)
{
    STACK_OF(X509)  *chain = NULL;
    cli_net_tls_t    opt;
    int              rc;

    memset(&opt, 0, sizeof(opt));
    opt.ask_staple = 1;
    opt.version = version;
    if (cli_net_fetch_chain(&chain, target, starttls, sni, &opt, err) != 0) {
        return -1;
    }
    g->version = opt.version_used;
    if (opt.staple != NULL) {
        g->form = "extension";
        g->buf = opt.staple;
        g->len = opt.staple_len;
        rc = 0;
    } else {
        g->form = "chain";
        rc = sk_staple_find(&g->buf, &g->len, chain, err);
        if (rc != 0 && err != NULL && err->code == SK_ERR_NOT_FOUND) {
            sk_err_set(err, SK_ERR_NOT_FOUND, "%s stapled nothing (no "
                "extension 0x%04x, no staple certificate in its chain)",
                target, SK_STAPLE_EXT_TYPE);
        }
    }
    sk_X509_pop_free(chain, X509_free);
    return rc;
}


/* One answer, checked as a client would if t is given; 0 if good. */
static int
sk_staple_show_answer(const sk_staple_t *s, size_t i,
    const sk_client_trust_t *t, int json, int64_t now)
{
    const sk_client_mirror_t  *m = NULL;
    sk_client_view_t           v;
    sk_staple_t                one = *s;
    sk_err_t                   err;
    int64_t                    oldest = 0;
    int                        rc = 0;

    one.a[0] = s->a[i];
    one.n = 1;
    if (t != NULL) {
        rc = sk_client_staple_view(&v, &m, &one, s->a[i].name, t, now, &err);
        if (rc == 0 && sk_client_view_oldest(&oldest, &v, t, &err) != 0) {
            sk_client_view_free(&v);
            rc = -1;                /* sk_client_staple_view checked it */
        }
    }
    if (json) {
        printf("%s{\"name\":", i > 0 ? "," : "");
        cli_json_str(stdout, s->a[i].name);
        printf(",\"mirror\":\"%s\",\"bytes\":%zu", s->a[i].mirror,
            s->a[i].len);
        if (t != NULL && rc == 0) {
            printf(",\"valid\":true,\"from\":");
            cli_json_str(stdout, m->url);
            printf(",\"entries\":%zu,\"age\":%" PRId64, v.nitems,
                now - oldest);
        } else if (t != NULL) {
            printf(",\"valid\":false,\"reason\":");
            cli_json_str(stdout, err.msg);
        }
        printf("}");
    } else if (t != NULL && rc == 0) {
        printf("  %s from %s: valid: answer of %s, %zu entries, oldest "
            "checkpoint %" PRId64 " s old\n", s->a[i].name, s->a[i].mirror,
            m->url, v.nitems, now - oldest);
    } else if (t != NULL) {
        printf("  %s from %s: refused: %s\n", s->a[i].name, s->a[i].mirror,
            err.msg);
    } else {
        printf("  %s from %s: %zu bytes\n", s->a[i].name, s->a[i].mirror,
            s->a[i].len);
    }
    if (t != NULL && rc == 0) {
        sk_client_view_free(&v);
    }
    return rc;
}


static const char *
sk_staple_version(int v)
{
    return v == TLS1_3_VERSION ? "TLSv1.3" : v == TLS1_2_VERSION ? "TLSv1.2"
        : v == 0 ? "none" : "other";
}


static int
sk_staple_show_cmd(int argc, char **argv)
{
    static const struct option opts[] = {
        { "trust",      required_argument, NULL, CLI_OPT_TRUST },
        { "mirror",     required_argument, NULL, CLI_OPT_MIRROR },
        { "mirror-key", required_argument, NULL, CLI_OPT_MIRROR_KEY },
        { "in",         required_argument, NULL, 'i' },
        { "connect",    required_argument, NULL, 'c' },
        { "servername", required_argument, NULL, 'n' },
        { "starttls",   required_argument, NULL, 's' },
        { "tls1.2",     no_argument,       NULL, '2' },
        { "tls1.3",     no_argument,       NULL, '3' },
        { "json",       no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    cli_client_opts_t   co;
    sk_client_trust_t   t;
    sk_staple_got_t     g;
    sk_staple_t         s;
    const char         *in = NULL, *target = NULL, *sni = NULL;
    int64_t             now = time(NULL);
    sk_err_t            err;
    size_t              i;
    int                 c, rc, json = 0, starttls = 0, version = 0, bad = 0;
    int                 have_trust = 0;

    memset(&co, 0, sizeof(co));
    memset(&g, 0, sizeof(g));
    optind = 1;
    while ((c = cli_client_getopt(&co, argc, argv, "i:", opts,
            &sk_cmd_staple)) != -1)
    {
        switch (c) {
        case CLI_OPT_USAGE: return SK_EXIT_USAGE;
        case 'i': in = optarg; break;
        case 'c': target = optarg; break;
        case 'n': sni = optarg; break;
        case 's':
            if (strcmp(optarg, "smtp") != 0) {
                return cli_usage(&sk_cmd_staple, "--starttls: only smtp");
            }
            starttls = 1;
            break;
        case '2': version = TLS1_2_VERSION; break;
        case '3': version = TLS1_3_VERSION; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_staple, "unknown option");
        }
    }
    if (optind != argc || (in == NULL) == (target == NULL)) {
        return cli_usage(&sk_cmd_staple, "show: want -i FILE or --connect "
            "HOST:PORT");
    }
    if (co.trust_file != NULL || co.nmirrors > 0) {
        rc = cli_client_trust(&t, &co, &sk_cmd_staple);
        if (rc != 0) {
            return rc;
        }
        have_trust = 1;
    }
    rc = in != NULL ? sk_staple_from_file(&g, in, &err)
        : sk_staple_from_server(&g, target, starttls, sni, version, &err);
    if (rc == 0) {
        rc = sk_staple_parse(&s, g.buf, g.len, &err);
    }
    if (rc != 0) {
        rc = err.code == SK_ERR_USAGE
            ? cli_usage(&sk_cmd_staple, "%s", err.msg) : cli_fail_err(&err);
        goto done;
    }
    if (json) {
        printf("{\"form\":\"%s\",\"bytes\":%zu,\"tls\":\"%s\",\"answers\":[",
            g.form, g.len, sk_staple_version(g.version));
    } else {
        printf("staple: %s, %zu bytes, %zu answer%s%s%s\n", g.form, g.len,
            s.n, s.n == 1 ? "" : "s", g.version != 0 ? ", " : "",
            g.version != 0 ? sk_staple_version(g.version) : "");
    }
    for (i = 0; i < s.n; i++) {
        bad |= sk_staple_show_answer(&s, i, have_trust ? &t : NULL, json,
            now) != 0;
    }
    if (json) {
        printf("]}\n");
    }
    sk_staple_free(&s);
    rc = bad ? SK_EXIT_FAIL : SK_EXIT_OK;

done:
    free(g.buf);
    if (have_trust) {
        sk_client_trust_free(&t);
    }
    return rc;
}


static int
sk_staple_wrap_cmd(int argc, char **argv)
{
    unsigned char  *buf = NULL;
    unsigned long   days = 1;
    const char     *in = NULL, *out = NULL;
    char           *pem;
    size_t          len;
    long            plen;
    time_t          now = time(NULL);
    sk_err_t        err;
    X509           *x = NULL;
    BIO            *bio = NULL;
    int             c, rc = SK_EXIT_FAIL;

    optind = 1;
    while ((c = getopt(argc, argv, "i:o:d:")) != -1) {
        switch (c) {
        case 'i': in = optarg; break;
        case 'o': out = optarg; break;
        case 'd':
            if (cli_parse_uint(&days, optarg, 3650) != 0) {
                return cli_usage(&sk_cmd_staple, "-d %s: want days, 1..3650",
                    optarg);
            }
            break;
        default: return cli_usage(&sk_cmd_staple, "unknown option");
        }
    }
    if (optind != argc || in == NULL || out == NULL) {
        return cli_usage(&sk_cmd_staple, "wrap: want -i STAPLE -o CERT");
    }
    if (sk_file_read((char **) &buf, &len, in, SK_STAPLE_FILE_MAX, &err) != 0
        || sk_staple_wrap(&x, buf, len, now - 3600,
               now + (time_t) days * 86400, &err) != 0)
    {
        rc = cli_fail_err(&err);
        goto done;
    }
    bio = BIO_new(BIO_s_mem());
    if (bio == NULL || PEM_write_bio_X509(bio, x) != 1) {
        rc = cli_fail("%s: cannot encode the certificate", out);
        goto done;
    }
    plen = BIO_get_mem_data(bio, &pem);
    if (sk_file_write_atomic(out, pem, (size_t) plen, 0644, &err) != 0) {
        rc = cli_fail_err(&err);
        goto done;
    }
    printf("staple certificate written to %s\n", out);
    rc = SK_EXIT_OK;

done:
    BIO_free(bio);
    X509_free(x);
    free(buf);
    return rc;
}


static int
sk_staple_main(int argc, char **argv)
{
    if (argc < 2) {
        return cli_usage(&sk_cmd_staple, "missing fetch, show or wrap");
    }
    if (strcmp(argv[1], "fetch") == 0) {
        return sk_staple_fetch_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "show") == 0) {
        return sk_staple_show_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "wrap") == 0) {
        return sk_staple_wrap_cmd(argc - 1, argv + 1);
    }
    return cli_usage(&sk_cmd_staple, "unknown \"%s\": want fetch, show or "
        "wrap", argv[1]);
}


const sk_cmd_t sk_cmd_staple = {
    "staple", sk_staple_main,
    "fetch [--trust FILE] [--mirror URL [--mirror-key FILE]]..."
    " [--cache SPEC] [-o FILE] [--json] NAME...\n"
    "show (-i FILE | --connect HOST:PORT [--servername NAME]"
    " [--starttls smtp] [--tls1.2 | --tls1.3]) [--trust FILE"
    " [--mirror URL [--mirror-key FILE]]...] [--json]\n"
    "wrap -i STAPLE [-d DAYS] -o CERT",
    "The stapled SK proof a server hands its clients in the TLS handshake\n"
    "(docs/protocol.md, \"Stapled proof\"): each NAME's answer from a\n"
    "mirror, signed, so a client needs no mirror query of its own.\n"
    "\n"
    "fetch refreshes each NAME's answer as nginx and sk-milter do: the\n"
    "cache's copy (sk:proof:NAME in SPEC: redis://HOST:PORT[/DB],\n"
    "unix:/PATH or a directory, default " SK_CACHE_DEFAULT_DIR ") while it\n"
    "is younger than the trust file's staple_refresh, else the first\n"
    "mirror of the trust file listed with a key that answers, stored back\n"
    "in the cache; every answer is checked as a client checks it.  One\n"
    "line per name says what it did; -o writes the staple of all the\n"
    "names.  Exit 0 if every name has an answer to serve.\n"
    "\n"
    "show reads a staple from FILE (its bytes, or a PEM chain with the\n"
    "staple certificate) or from a server's handshake (asking for TLS\n"
    "extension 0xFF53, else looking for the certificate form in the\n"
    "chain; --tls1.2 or --tls1.3 pins the version) and lists its answers;\n"
    "with --trust (or --mirror), each is checked as a client would: a\n"
    "mirror listed with a key, signatures, proofs, staple_max_age.  Exit\n"
    "0 if a staple came and every answer checked is valid.\n"
    "\n"
    "wrap writes the certificate form of STAPLE (PEM, valid DAYS, default\n"
    "1) to append to a served chain.\n"
};
