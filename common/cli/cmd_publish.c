/*
 * cmd_publish.c -- `sk publish`: put carriers into the key-material cache
 * (Redis or a directory) where nginx and the milter pick them up.
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

#include "cli.h"

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


static int
sk_publish(int argc, char **argv)
{
    static const struct option opts[] = {
        { "carrier", required_argument, NULL, 'a' },
        { "cache",   required_argument, NULL, 'C' },
        { "json",    no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char     *files[SK_PUBLISH_MAX_FILES], *spec = SK_CACHE_DEFAULT_DIR;
    sk_carrier_t  **cs = NULL;
    sk_cache_t     *cache = NULL;
    size_t          nfiles = 0, n = 0, i;
    time_t          now = time(NULL);
    char            key[SK_CACHE_KEY_MAX + 1];
    sk_err_t        err;
    int             c, json = 0, rc = SK_EXIT_FAIL;

    optind = 1;
    while ((c = getopt_long(argc, argv, "a:", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            if (nfiles == SK_PUBLISH_MAX_FILES) {
                return cli_usage(&sk_cmd_publish, "at most %d -a files",
                    SK_PUBLISH_MAX_FILES);
            }
            files[nfiles++] = optarg;
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
    if (nfiles == 0) {
        return cli_usage(&sk_cmd_publish, "missing -a CARRIER");
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

done:
    sk_cache_close(cache);
    sk_publish_free(cs, n);
    return rc;
}


const sk_cmd_t sk_cmd_publish = {
    "publish", sk_publish,
    "-a CARRIER [-a CARRIER ...] [--cache SPEC] [--json]",
    "Store every carrier certificate of each CARRIER file in the key-\n"
    "material cache, under sk:carrier:<hex SHA-256 of its subject key>.\n"
    "SPEC is redis://HOST:PORT[/DB], unix:/PATH[?db=DB] or an absolute\n"
    "directory (default " SK_CACHE_DEFAULT_DIR ").  All files are read\n"
    "and checked first; an expired carrier is refused.  Prints one line\n"
    "per carrier: its key, name and expiry (UTC); --json makes each line\n"
    "a JSON object {\"key\", \"name\", \"not_after\"}.\n"
};
