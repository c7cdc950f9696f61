/*
 * cmd_publish.c -- `sk publish`: put carriers into the key-material cache
 * (Redis or a directory) where nginx and the milter pick them up, and a
 * domain's record (sk:record:<name>, what sk-milter checks its mail
 * against), learnt from the mirrors as `sk verify` learns it.
 *
 * Every file is loaded and checked before anything is stored, so a typo in
 * the last -a does not leave a half-published set behind.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "cli_client.h"

#define SK_PUBLISH_MAX_FILES 64


static void
sk_publish_free(sk_carrier_t **cs, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        sk_carrier_free(cs[i]);
    }
    free(cs);
}


/* Append every carrier of path to *all; refuses expired ones, which no
 * client would accept. */
static int
sk_publish_load(sk_carrier_t ***all, size_t *nall, const char *path,
    time_t now, sk_err_t *err)
{
    sk_carrier_t **cs, **grown;
    size_t         n, i;

    if (sk_carrier_load_pem(&cs, &n, path, err) != 0) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (sk_carrier_not_after(cs[i]) < now) {
            sk_err_set(err, SK_ERR_EXPIRED, "%s: carrier for %s has expired",
                path, sk_carrier_name(cs[i]));
            sk_publish_free(cs, n);
            return -1;
        }
    }
    grown = realloc(*all, (*nall + n) * sizeof(*grown));
    if (grown == NULL) {
        sk_publish_free(cs, n);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    memcpy(grown + *nall, cs, n * sizeof(*cs));
    free(cs);
    *all = grown;
    *nall += n;
    return 0;
}


static void
sk_publish_print(const sk_carrier_t *cr, const char *key, int json)
{
    time_t     t = sk_carrier_not_after(cr);
    char       date[CLI_DATE_SIZE];

    cli_date(date, t);
    if (json) {
        printf("{\"key\":\"%s\",\"name\":", key);
        cli_json_str(stdout, sk_carrier_name(cr));
        printf(",\"not_after\":\"%s\"}\n", date);
    } else {
        printf("%s %s valid until %s\n", key, sk_carrier_name(cr), date);
    }
}


/*
 * sk:record:<name> from a fresh mirror answer (no cache: what is stored
 * is what the timelines say now): the name's stamped entries, one after
 * another, when it has an SK; removed when it has none (or it was
 * revoked).  0, or the exit status after the message.
 */
static int
sk_publish_record(sk_cache_t *cache, const char *name,
    const sk_client_trust_t *t, int json)
{
    sk_client_curl_t    curl, tor;
    sk_client_ctx_t     ctx = { t, NULL, sk_client_fetch_curl, &curl,
                                (int64_t) time(NULL), 0, NULL,
                                sk_client_fetch_curl, &tor };
    sk_client_found_t   f;
    char                key[SK_CACHE_KEY_MAX + 1], fp[SK_FINGERPRINT_SIZE];
    char               *svc = NULL, *val = NULL;
    size_t              i, len = 0;
    sk_err_t            err;
    int                 rc = SK_EXIT_FAIL;

    memset(&f, 0, sizeof(f));
    snprintf(f.name, sizeof(f.name), "%s", name);
    snprintf(key, sizeof(key), "sk:record:%s", name);
    sk_client_curl_init(&curl, &tor, t);       /* mirror onions too */
    if (sk_client_lookup_ctx(&f.res, name, &ctx, &err) != 0
        || sk_client_view_record(&f.rec, &f.res.view, sk_client_rebinder_key,
               &ctx, &err) != 0)
    {
        rc = cli_fail("%s: %s", name, err.msg);
        goto done;
    }
    if (f.res.outcome != SK_FRESH_ANSWER) {
        cli_client_log_mirrors(stderr, &f);
        cli_fail("%s: no mirror gave a fresh enough answer: %s left as it "
            "was", name, key);
        rc = CLI_EXIT_UNDECIDED;
        goto done;
    }
    if (f.rec.state != SK_RECORD_BOUND) {
        if (sk_cache_del(cache, key, &err) != 0
            && err.code != SK_ERR_NOT_FOUND)
        {
            rc = cli_fail_err(&err);
            goto done;
        }
        if (json) {
            printf("{\"key\":\"%s\",\"name\":\"%s\",\"sk\":null}\n",
                key, name);
        } else {
            printf("%s removed: %s\n", key, f.rec.state == SK_RECORD_NONE
                ? "no SK" : "its SK was revoked");
        }
        rc = SK_EXIT_OK;
        goto done;
    }
    for (i = 0; i < f.res.view.nitems; i++) {
        len += f.res.view.items[i].len;
    }
    val = malloc(len + 1);
    if (val == NULL || sk_services_format(&svc, &f.rec.services, &err) != 0)
    {
        rc = cli_fail("%s: out of memory", name);
        goto done;
    }
    for (len = 0, i = 0; i < f.res.view.nitems; i++) {
        memcpy(val + len, f.res.view.items[i].text, f.res.view.items[i].len);
        len += f.res.view.items[i].len;
    }
    if (sk_cache_put(cache, key, (const unsigned char *) val, len, &err)
        != 0)
    {
        rc = cli_fail_err(&err);
        goto done;
    }
    sk_key_fingerprint(fp, f.rec.key);
    if (json) {
        printf("{\"key\":\"%s\",\"name\":\"%s\",\"sk\":\"%s\","
            "\"services\":", key, name, fp);
        cli_json_str(stdout, svc);
        printf(",\"entries\":%zu}\n", f.res.view.nitems);
    } else {
        printf("%s %s services %s (%zu entries, from mirror %s)\n", key, fp,
            svc, f.res.view.nitems, f.res.source);
    }
    rc = SK_EXIT_OK;

done:
    free(svc);
    free(val);
    sk_client_found_free(&f);
    return rc;
}


static int
sk_publish(int argc, char **argv)
{
    static const struct option opts[] = {
        { "carrier",    required_argument, NULL, 'a' },
        { "record",     required_argument, NULL, 'r' },
        { "cache",      required_argument, NULL, 'C' },
        { "json",       no_argument,       NULL, 'j' },
        { "trust",      required_argument, NULL, CLI_OPT_TRUST },
        { "mirror",     required_argument, NULL, CLI_OPT_MIRROR },
        { "mirror-key", required_argument, NULL, CLI_OPT_MIRROR_KEY },
        { NULL, 0, NULL, 0 }
    };
    const char         *files[SK_PUBLISH_MAX_FILES];
    const char         *names[SK_PUBLISH_MAX_FILES];
    const char         *spec = SK_CACHE_DEFAULT_DIR;
    cli_client_opts_t   co;
    sk_client_trust_t   t;
    sk_carrier_t      **cs = NULL;
    sk_cache_t         *cache = NULL;
    size_t              nfiles = 0, nnames = 0, n = 0, i;
    time_t              now = time(NULL);
    char                key[SK_CACHE_KEY_MAX + 1];
    sk_err_t            err;
    int                 c, json = 0, rc = SK_EXIT_FAIL;

    memset(&co, 0, sizeof(co));
    memset(&t, 0, sizeof(t));
    optind = 1;
    while ((c = cli_client_getopt(&co, argc, argv, "a:r:", opts,
            &sk_cmd_publish)) != -1)
    {
        switch (c) {
        case CLI_OPT_USAGE: return SK_EXIT_USAGE;
        case 'a':
            if (nfiles == SK_PUBLISH_MAX_FILES) {
                return cli_usage(&sk_cmd_publish, "at most %d -a files",
                    SK_PUBLISH_MAX_FILES);
            }
            files[nfiles++] = optarg;
            break;
        case 'r':
            if (nnames == SK_PUBLISH_MAX_FILES) {
                return cli_usage(&sk_cmd_publish, "at most %d -r names",
                    SK_PUBLISH_MAX_FILES);
            }
            if (sk_name_check(optarg, strlen(optarg), &err) != 0) {
                return cli_usage(&sk_cmd_publish, "-r %s: %s", optarg,
                    err.msg);
            }
            names[nnames++] = optarg;
            break;
        case 'C': spec = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_publish, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_publish, "unexpected argument \"%s\"",
            argv[optind]);
    }
    if (nfiles == 0 && nnames == 0) {
        return cli_usage(&sk_cmd_publish, "missing -a CARRIER or -r NAME");
    }
    if (nnames == 0 && (co.trust_file != NULL || co.nmirrors > 0)) {
        return cli_usage(&sk_cmd_publish, "--trust and --mirror are for -r");
    }
    if (nnames > 0) {
        rc = cli_client_trust(&t, &co, &sk_cmd_publish);
        if (rc != 0) {
            return rc;
        }
        rc = SK_EXIT_FAIL;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            sk_client_trust_free(&t);
            return cli_fail("curl: cannot initialise");
        }
    }

    /* A Redis server that goes away mid-write must be an error, not a
     * silent death by SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    if (sk_cache_open(&cache, spec, 0, &err) != 0) {
        rc = err.code == SK_ERR_FORMAT
            ? cli_usage(&sk_cmd_publish, "--cache: %s", err.msg)
            : cli_fail_err(&err);
        goto done;
    }
    for (i = 0; i < nfiles; i++) {
        if (sk_publish_load(&cs, &n, files[i], now, &err) != 0) {
            rc = cli_fail_err(&err);
            goto done;
        }
    }
    /* Printed as stored: after a failure, what was done is on stdout. */
    for (i = 0; i < n; i++) {
        if (sk_cache_carrier_key_of(key, cs[i], &err) != 0
            || sk_cache_put_carrier(cache, cs[i], &err) != 0)
        {
            rc = cli_fail_err(&err);
            goto done;
        }
        sk_publish_print(cs[i], key, json);
    }
    rc = SK_EXIT_OK;
    for (i = 0; i < nnames && rc == SK_EXIT_OK; i++) {
        rc = sk_publish_record(cache, names[i], &t, json);
    }

done:
    sk_cache_close(cache);
    sk_publish_free(cs, n);
    if (nnames > 0) {
        sk_client_trust_free(&t);
        curl_global_cleanup();
    }
    return rc;
}


const sk_cmd_t sk_cmd_publish = {
    "publish", sk_publish,
    "(-a CARRIER | -r NAME)... [--trust FILE] [--mirror URL [--mirror-key"
    " FILE]]... [--cache SPEC] [--json]",
    "Store every carrier certificate of each CARRIER file in the key-\n"
    "material cache, under sk:carrier:<hex SHA-256 of its subject key>.\n"
    "SPEC is redis://HOST:PORT[/DB], unix:/PATH[?db=DB] or an absolute\n"
    "directory (default " SK_CACHE_DEFAULT_DIR ").  All files are read\n"
    "and checked first; an expired carrier is refused.  Prints one line\n"
    "per carrier: its key, name and expiry (UTC); --json makes each line\n"
    "a JSON object {\"key\", \"name\", \"not_after\"}.\n"
    "With -r, NAME's record as the mirrors of the trust file (default\n"
    "/etc/sk/trust.conf; --mirror replaces them) show it now, checked as\n"
    "`sk verify` checks it: its stamped entries go to sk:record:NAME,\n"
    "which sk-milter checks NAME's mail against; a name with no SK (or a\n"
    "revoked one) has sk:record:NAME removed.  Run it again to follow\n"
    "changes (a timer).  Prints \"sk:record:NAME SK services SERVICES\"\n"
    "(--json: {\"key\", \"name\", \"sk\", \"services\", \"entries\"}).\n"
    "Exit 5 when no mirror gave a fresh enough answer (nothing changed).\n"
};
