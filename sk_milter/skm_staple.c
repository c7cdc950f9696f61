/*
 * skm_staple.c -- StapleProof: the stapled SK proof in the chain files
 * Postfix serves.  Postfix has no hook for TLS extensions, so the staple
 * goes in its certificate form (sk_staple_wrap) after the carrier, where
 * clients that know nothing of it ignore it as they ignore the carrier.
 *
 * One staple per carrier name, kept here by the refresher thread alone
 * (no lock): libsk's staple set refreshes it from the KeyCache
 * (sk:proof:<name>, shared with other servers) or StapleTrust's mirrors,
 * keeps it while the mirrors are down until staple_max_age, and says what
 * it did, which is logged with the staple's age.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <openssl/pem.h>

#include <sk/staple_serve.h>

#include "skm.h"

#define SKM_STAPLE_NAMES  64

typedef struct {
    sk_staple_set_t   set;          /* one name */
    unsigned long     gen;          /* configuration it was refreshed by */
} skm_staple_t;

static skm_staple_t  skm_staples[SKM_STAPLE_NAMES];
static size_t        skm_nstaples;


/*
 * The staple for a carrier's name answers for that name and for each
 * parent of it of two labels or more (at most SK_STAPLE_MAX_ANSWERS):
 * what a client looks up for the host (a wildcard SK on a parent), and
 * the recipient domain whose SK cross-signs its own MX host
 * (mx.example.org's staple holds example.org's answer), which a sending
 * MTA's policy looks up (docs/protocol.md, "Mail: a domain's MX hosts").
 */
static skm_staple_t *
skm_staple_get(const char *name)
{
    skm_staple_t  *st;
    const char    *names[SK_STAPLE_MAX_ANSWERS], *p;
    size_t         i, n;
    sk_err_t       err;

    for (i = 0; i < skm_nstaples; i++) {
        if (strcmp(skm_staples[i].set.names[0].name, name) == 0) {
            return &skm_staples[i];
        }
    }
    if (skm_nstaples == SKM_STAPLE_NAMES) {
        skm_log(LOG_ERR, "staple %s: more than %d names", name,
            SKM_STAPLE_NAMES);
        return NULL;
    }
    st = &skm_staples[skm_nstaples];
    names[0] = name;
    n = 1;
    for (p = strchr(name, '.'); p != NULL && strchr(p + 1, '.') != NULL
         && n < SK_STAPLE_MAX_ANSWERS; p = strchr(p + 1, '.'))
    {
        names[n++] = p + 1;
    }
    if (sk_staple_set_init(&st->set, names, n, &err) != 0) {
        skm_log(LOG_ERR, "staple %s: %s", name, err.msg);
        return NULL;
    }
    skm_nstaples++;
    return st;
}


/* Refresh st if due (or if the configuration changed), and log it. */
static void
skm_staple_refresh(skm_staple_t *st, const skm_conf_t *conf, time_t now)
{
    sk_staple_name_t  *nm = &st->set.names[0];
    sk_client_curl_t   curl = { 0, 0, NULL };
    sk_cache_t        *cache = NULL;
    sk_err_t           err;
    size_t             i;

    if (st->gen == conf->gen && now < st->set.next) {
        return;
    }
    curl.timeout_ms = conf->lookupms * 10;
    curl.connect_timeout_ms = conf->lookupms;
    if (conf->keycache != NULL
        && sk_cache_open(&cache, conf->keycache, (int) conf->lookupms, &err)
           != 0 && err.code != SK_ERR_UNAVAILABLE)
    {
        cache = NULL;
    }
    if (sk_staple_set_refresh(&st->set, conf->stapletrust, cache,
            sk_client_fetch_curl, &curl, now, &err) < 0)
    {
        skm_metrics_staple_refreshed(-1);
        skm_log(LOG_ERR, "staple %s: %s", nm->name, err.msg);
    } else {
        for (i = 0; i < st->set.n; i++) {
            nm = &st->set.names[i];
            if (nm->tried != now) {
                continue;
            }
            skm_metrics_staple_refreshed((int) nm->cause);
            skm_log(nm->failed ? LOG_WARNING : LOG_INFO, "staple %s: %s%s",
                nm->name, nm->why, st->set.buf == NULL
                ? "; the chain files get no staple" : "");
        }
    }
    sk_cache_close(cache);
    st->gen = conf->gen;
}


int
skm_staple_pem(char **pem, size_t *len, long *age, const skm_conf_t *conf,
    const char *name, time_t now)
{
    skm_staple_t  *st;
    X509          *x;
    BIO           *bio;
    char          *data;
    long           n;
    sk_err_t       err;
    int            rc;

    *pem = NULL;
    *len = 0;
    st = skm_staple_get(name);
    if (st == NULL) {
        return -1;
    }
    skm_staple_refresh(st, conf, now);
    skm_metrics_staple(name, st->set.names[0].oldest,
        st->set.buf != NULL);
    if (st->set.buf == NULL) {
        return 0;
    }
    if (sk_staple_wrap(&x, st->set.buf, st->set.len, st->set.oldest,
            st->set.oldest + conf->stapletrust->staple_max_age, &err) != 0)
    {
        skm_log(LOG_ERR, "staple %s: %s", name, err.msg);
        return -1;
    }
    rc = -1;
    bio = BIO_new(BIO_s_mem());
    if (bio != NULL && PEM_write_bio_X509(bio, x) == 1
        && (n = BIO_get_mem_data(bio, &data)) > 0
        && (*pem = malloc((size_t) n)) != NULL)
    {
        memcpy(*pem, data, (size_t) n);
        *len = (size_t) n;
        *age = (long) (now - st->set.oldest);
        rc = 1;
    } else {
        skm_log(LOG_ERR, "staple %s: cannot encode its certificate", name);
    }
    BIO_free(bio);
    X509_free(x);
    return rc;
}


time_t
skm_staple_next(void)
{
    time_t  next = 0;
    size_t  i;

    for (i = 0; i < skm_nstaples; i++) {
        if (next == 0 || skm_staples[i].set.next < next) {
            next = skm_staples[i].set.next;
        }
    }
    return next;
}
