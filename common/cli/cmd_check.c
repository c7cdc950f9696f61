/*
 * cmd_check.c -- `sk check`: does a certificate's key have a good carrier,
 * and for how long?  For monitoring systems (a Nagios plugin's output
 * and exit codes: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN) and for the
 * certificate renewal hook (sk-renew-hook), which refuses to deploy a
 * renewed certificate whose key has none.
 *
 * The carrier comes from the chain itself (what a client gets), or, with
 * -a or --cache, from where the servers would take it: the one certifying
 * the leaf's key that verifies and is valid longest.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509.h>

#include <sk/cache.h>
#include <sk/client.h>

#include "cli.h"
#include "cli_net.h"

#define SK_CHECK_OK        0
#define SK_CHECK_WARNING   1
#define SK_CHECK_CRITICAL  2
#define SK_CHECK_UNKNOWN   3

#define SK_CHECK_MAX_FILES 64
#define SK_CHECK_MAX_DAYS  3650

typedef struct {
    const char      *source;        /* -i FILE or the --connect target */
    int              json;
    unsigned long    warn, crit;    /* days */
    char             key[SK_FINGERPRINT_SIZE];   /* the leaf's, or "" */
    char             sk[SK_FINGERPRINT_SIZE];
    sk_carrier_t    *carrier;       /* the good one, or NULL */
    long             days;          /* whole days it has left */
} sk_check_t;

static const char *const sk_check_status[] = {
    "OK", "WARNING", "CRITICAL", "UNKNOWN"
};


/* The status line (or JSON object) on stdout; returns status. */
static int
sk_check_report(const sk_check_t *k, int status, const char *check,
    const char *fmt, ...) SK_PRINTF(4, 5);

static int
sk_check_report(const sk_check_t *k, int status, const char *check,
    const char *fmt, ...)
{
    va_list  ap;
    char     reason[1024], date[CLI_DATE_SIZE], lower[16];
    size_t   i;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);

    if (!k->json) {
        printf("SK %s: %s", sk_check_status[status], reason);
        if (k->carrier != NULL) {
            printf(" | days_left=%ld;%lu;%lu", k->days, k->warn, k->crit);
        }
        printf("\n");
        return status;
    }

    for (i = 0; sk_check_status[status][i] != '\0'; i++) {
        lower[i] = (char) (sk_check_status[status][i] | 0x20);
    }
    lower[i] = '\0';
    printf("{\"status\":\"%s\",\"check\":\"%s\",\"source\":", lower, check);
    cli_json_str(stdout, k->source != NULL ? k->source : "");
    printf(",\"reason\":");
    cli_json_str(stdout, reason);
    if (k->key[0] != '\0') {
        printf(",\"key\":\"%s\"", k->key);
    }
    if (k->sk[0] != '\0') {
        printf(",\"sk\":\"%s\"", k->sk);
    }
    if (k->carrier != NULL) {
        cli_date(date, sk_carrier_not_after(k->carrier));
        printf(",\"name\":");
        cli_json_str(stdout, sk_carrier_name(k->carrier));
        printf(",\"services\":");
        cli_json_str(stdout, sk_carrier_services(k->carrier));
        printf(",\"not_after\":\"%s\",\"days_left\":%ld", date, k->days);
    }
    printf("}\n");
    return status;
}


/* Add the carriers of path that certify the key spki to cs[*n]. */
static int
sk_check_load(sk_carrier_t ***cs, size_t *n, const char *path,
    const unsigned char *spki, size_t spki_len, sk_err_t *err)
{
    sk_carrier_t        **all, **grown;
    const unsigned char  *s;
    size_t                nall, i, len;

    if (sk_carrier_load_pem(&all, &nall, path, err) != 0) {
        return -1;
    }
    grown = realloc(*cs, (*n + nall) * sizeof(*grown));
    if (grown == NULL) {
        for (i = 0; i < nall; i++) {
            sk_carrier_free(all[i]);
        }
        free(all);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    *cs = grown;
    for (i = 0; i < nall; i++) {
        s = sk_carrier_subject_spki(all[i], &len);
        if (len == spki_len && memcmp(s, spki, len) == 0) {
            grown[(*n)++] = all[i];
        } else {
            sk_carrier_free(all[i]);
        }
    }
    free(all);
    return 0;
}


/* The candidates' best: verifying and valid longest (kept in k), or the
 * failure of the one valid longest in err. */
static void
sk_check_pick(sk_check_t *k, sk_carrier_t **cs, size_t n,
    const sk_key_t *sk, const unsigned char *spki, size_t spki_len,
    time_t now, sk_err_t *err)
{
    sk_err_t  e;
    time_t    failed = 0;
    size_t    i;

    for (i = 0; i < n; i++) {
        if (sk_carrier_verify(cs[i], sk, spki, spki_len, now, &e) == 0) {
            if (k->carrier == NULL || sk_carrier_not_after(cs[i])
                                      > sk_carrier_not_after(k->carrier))
            {
                k->carrier = cs[i];
            }
        } else if (failed == 0 || sk_carrier_not_after(cs[i]) > failed) {
            failed = sk_carrier_not_after(cs[i]);
            *err = e;
        }
    }
}


/* Append ", what" (or "what" first) to the list in buf. */
static void
sk_check_where(char *buf, size_t size, const char *what)
{
    size_t  len = strlen(buf);

    if (what != NULL) {
        snprintf(buf + len, size - len, "%s%s", len > 0 ? ", " : "", what);
    }
}


/* cli_usage's message, but the exit code of a plugin: UNKNOWN. */
static int
sk_check_usage(const char *fmt, ...) SK_PRINTF(1, 2);

static int
sk_check_usage(const char *fmt, ...)
{
    va_list  ap;
    char     msg[512];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    (void) cli_usage(&sk_cmd_check, "%s", msg);
    return SK_CHECK_UNKNOWN;
}


static int
sk_check_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "pub",        required_argument, NULL, 'p' },
        { "in",         required_argument, NULL, 'i' },
        { "carriers",   required_argument, NULL, 'a' },
        { "cache",      required_argument, NULL, 'K' },
        { "connect",    required_argument, NULL, 'C' },
        { "starttls",   required_argument, NULL, 'S' },
        { "servername", required_argument, NULL, 'N' },
        { "warning",    required_argument, NULL, 'w' },
        { "critical",   required_argument, NULL, 'c' },
        { "json",       no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char          *pub = NULL, *in = NULL, *target = NULL;
    const char          *starttls = NULL, *servername = NULL, *spec = NULL;
    const char          *files[SK_CHECK_MAX_FILES];
    STACK_OF(X509)      *chain = NULL;
    sk_carrier_t       **cs = NULL, *found;
    sk_cache_t          *cache = NULL;
    sk_check_t           k;
    sk_key_t            *sk = NULL, *leaf = NULL;
    sk_err_t             err;
    const unsigned char *spki;
    unsigned char        sha[SK_SHA256_BYTES];
    char                 date[CLI_DATE_SIZE], where[1024];
    size_t               nfiles = 0, n = 0, i, spki_len;
    time_t               now;
    int                  c, rc;

    memset(&k, 0, sizeof(k));
    k.warn = 30;
    k.crit = 7;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:i:a:w:c:", opts, NULL)) != -1) {
        switch (c) {
        case 'p': pub = optarg; break;
        case 'i': in = optarg; break;
        case 'a':
            if (nfiles == SK_CHECK_MAX_FILES) {
                return sk_check_usage("too many -a (at most %d)", SK_CHECK_MAX_FILES);
            }
            files[nfiles++] = optarg;
            break;
        case 'K': spec = optarg; break;
        case 'C': target = optarg; break;
        case 'S': starttls = optarg; break;
        case 'N': servername = optarg; break;
        case 'w':
        case 'c':
            if (cli_parse_uint(c == 'w' ? &k.warn : &k.crit, optarg,
                    SK_CHECK_MAX_DAYS) != 0)
            {
                return sk_check_usage("bad number of days \"%s\"", optarg);
            }
            break;
        case 'j': k.json = 1; break;
        default: return sk_check_usage("unknown option");
        }
    }
    if (optind != argc) {
        return sk_check_usage("unexpected argument \"%s\"", argv[optind]);
    }
    if (pub == NULL) {
        return sk_check_usage("missing -p SK.pub");
    }
    if ((in == NULL) == (target == NULL)) {
        return sk_check_usage("need exactly one of -i CHAIN and --connect "
            "HOST:PORT");
    }
    if ((starttls != NULL || servername != NULL) && target == NULL) {
        return sk_check_usage("--starttls and --servername go with "
            "--connect");
    }
    if (starttls != NULL && strcmp(starttls, "smtp") != 0) {
        return sk_check_usage("--starttls \"%s\": only smtp is supported",
            starttls);
    }
    if (k.crit > k.warn) {
        return sk_check_usage("--critical days above -w days");
    }
    k.source = in != NULL ? in : target;

    if (sk_key_load_public(&sk, pub, &err) != 0) {
        return sk_check_report(&k, SK_CHECK_UNKNOWN, "sk-key", "%s",
            err.msg);
    }
    sk_key_fingerprint(k.sk, sk);
    if (in != NULL) {
        rc = sk_chain_load_pem(&chain, in, &err) == 0 ? SK_CHECK_OK
             : sk_check_report(&k, SK_CHECK_UNKNOWN, "chain", "%s", err.msg);
    } else if (cli_net_fetch_chain(&chain, target, starttls != NULL,
                   servername, NULL, &err) != 0)
    {
        rc = err.code == SK_ERR_USAGE ? sk_check_usage("%s", err.msg)
             : sk_check_report(&k, SK_CHECK_CRITICAL, "connect", "%s: %s",
                   target, err.msg);
    } else {
        rc = SK_CHECK_OK;
    }
    if (rc != SK_CHECK_OK) {
        goto done;
    }
    if (sk_key_from_pkey(&leaf, X509_get0_pubkey(sk_X509_value(chain, 0)),
            &err) != 0)
    {
        rc = sk_check_report(&k, SK_CHECK_UNKNOWN, "chain",
            "%s: the leaf's key: %s", k.source, err.msg);
        goto done;
    }
    sk_key_fingerprint(k.key, leaf);
    spki = sk_key_get0_spki(leaf, &spki_len);

    /* The candidates: the chain's carrier, or those of -a and --cache. */
    if (nfiles == 0 && spec == NULL) {
        if (sk_carrier_find(&found, chain, &err) == 0) {
            cs = malloc(sizeof(*cs));
            if (cs == NULL) {
                sk_carrier_free(found);
                rc = sk_check_report(&k, SK_CHECK_UNKNOWN, "nomem",
                    "out of memory");
                goto done;
            }
            cs[n++] = found;
        } else if (err.code != SK_ERR_NOT_FOUND) {
            rc = sk_check_report(&k, SK_CHECK_CRITICAL,
                sk_client_check_name(err.code), "%s: %s", k.source,
                err.msg);
            goto done;
        }
    }
    for (i = 0; i < nfiles; i++) {
        if (sk_check_load(&cs, &n, files[i], spki, spki_len, &err) != 0) {
            rc = sk_check_report(&k, SK_CHECK_UNKNOWN, "carriers", "%s",
                err.msg);
            goto done;
        }
    }
    if (spec != NULL) {
        sk_key_spki_sha256(sha, leaf);
        if (sk_cache_open(&cache, spec, 1000, &err) != 0
            || (sk_cache_get_carrier(&found, cache, sha, &err) != 0
                && err.code != SK_ERR_NOT_FOUND))
        {
            rc = sk_check_report(&k, SK_CHECK_UNKNOWN, "cache", "%s: %s",
                spec, err.msg);
            goto done;
        }
        if (err.code != SK_ERR_NOT_FOUND) {
            sk_carrier_t **grown = realloc(cs, (n + 1) * sizeof(*cs));

            if (grown == NULL) {
                sk_carrier_free(found);
                rc = sk_check_report(&k, SK_CHECK_UNKNOWN, "nomem",
                    "out of memory");
                goto done;
            }
            cs = grown;
            cs[n++] = found;
        }
    }
    if (n == 0) {
        where[0] = '\0';
        for (i = 0; i < nfiles; i++) {
            sk_check_where(where, sizeof(where), files[i]);
        }
        sk_check_where(where, sizeof(where),
            spec != NULL ? spec : nfiles == 0 ? "the chain" : NULL);
        rc = sk_check_report(&k, SK_CHECK_CRITICAL, "no-carrier",
            "%s: no carrier for the key %s in %s", k.source, k.key, where);
        goto done;
    }

    now = time(NULL);
    sk_check_pick(&k, cs, n, sk, spki, spki_len, now, &err);
    if (k.carrier == NULL) {
        rc = sk_check_report(&k, SK_CHECK_CRITICAL,
            sk_client_check_name(err.code), "%s: %s", k.source, err.msg);
        goto done;
    }
    k.days = (long) ((sk_carrier_not_after(k.carrier) - now) / 86400);
    cli_date(date, sk_carrier_not_after(k.carrier));
    if (k.days < (long) k.crit || k.days < (long) k.warn) {
        rc = sk_check_report(&k, k.days < (long) k.crit ? SK_CHECK_CRITICAL
            : SK_CHECK_WARNING, "expiring", "%s: the carrier for %s "
            "expires in %ld days (%s): make a new one with sk carrier",
            k.source, sk_carrier_name(k.carrier), k.days, date);
    } else {
        rc = sk_check_report(&k, SK_CHECK_OK, "carrier", "%s: carrier for "
            "%s (%s) by SK %s valid until %s, %ld days left", k.source,
            sk_carrier_name(k.carrier), sk_carrier_services(k.carrier),
            k.sk, date, k.days);
    }

done:
    for (i = 0; i < n; i++) {
        sk_carrier_free(cs[i]);
    }
    free(cs);
    sk_cache_close(cache);
    sk_X509_pop_free(chain, X509_free);
    sk_key_free(leaf);
    sk_key_free(sk);
    return rc;
}


const sk_cmd_t sk_cmd_check = {
    "check", sk_check_run,
    "-p SK.pub (-i CHAIN | --connect HOST:PORT [--starttls smtp]"
    " [--servername NAME]) [-a CARRIERS]... [--cache SPEC] [-w DAYS]"
    " [--critical DAYS] [--json]",
    "Monitor a certificate's carrier, as a Nagios plugin does: one status\n"
    "line on stdout (\"SK OK: ...\" with perfdata \"| days_left=N;W;C\")\n"
    "and exit 0 OK, 1 WARNING (the carrier expires within DAYS, default\n"
    "30), 2 CRITICAL (within --critical DAYS, default 7; or no carrier,\n"
    "made by another SK, tampered, for another key, expired, not yet\n"
    "valid; or the server cannot be reached), 3 UNKNOWN (usage, unreadable\n"
    "SK.pub, CHAIN, CARRIERS or cache).  The certificate is the first of\n"
    "CHAIN (a PEM file) or of the chain HOST:PORT presents.  Its carrier\n"
    "is the one in that chain; with -a (PEM files of carriers, as nginx's\n"
    "sovereign_key_carrier) or --cache (the key-material cache, as\n"
    "sk publish writes it), the good one certifying the leaf's key that is\n"
    "valid longest there.  --json prints {\"status\", \"check\", \"reason\",\n"
    "\"key\", \"sk\", \"name\", \"services\", \"not_after\", \"days_left\"}.\n"
};
