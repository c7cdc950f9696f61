/*
 * skm_trust.c -- where sk-milter learns a sending domain's SK.
 *
 * TrustFile, one domain a line ("#" comments, blank lines skipped):
 *
 *     DOMAIN  SERVICES  [sha256:FINGERPRINT | /PATH/TO/SK.pub]
 *     example.com  smtp,smtps,submission  sha256:1f0c...
 *     example.net  smtp  /etc/sk/example.net.pub
 *
 * SERVICES is the SK record's Services field (sk/services.h); the third
 * field, optional, names the SK: its fingerprint, or its public key
 * (PEM), which outbound pinning needs to check carriers (without it the
 * key comes from the KeyCache record, and must match the fingerprint).
 *
 * KeyCache: "sk:record:DOMAIN" holds the name's stamped entries, one
 * after another in canonical form; they are combined (sk/record.h), so
 * signatures are checked and a poisoned cache is found, not trusted.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <pthread.h>
#include <syslog.h>

#include <sk/cache.h>
#include <sk/entry.h>
#include <sk/key.h>
#include <sk/name.h>
#include <sk/record.h>

#include "skm.h"

typedef struct {
    char           *domain;
    sk_services_t   services;
    char           *fpr;            /* NULL if not given */
    sk_key_t       *key;            /* NULL if not given */
    unsigned        line;           /* where the file lists it */
} skm_trust_entry_t;

struct skm_trust_s {
    skm_trust_entry_t  *v;
    size_t              n;
};

static int skm_trust_line(skm_trust_t *t, char *line, const char *path,
    unsigned lineno, sk_err_t *err);


int
skm_trust_load(skm_trust_t **out, const char *path, sk_err_t *err)
{
    FILE         *f;
    skm_trust_t  *t;
    char         *buf, *p;
    size_t        cap;
    unsigned      line;
    int           rc;

    *out = NULL;
    f = fopen(path, "r");
    if (f == NULL) {
        return sk_err_sys(err, "%s: cannot open", path);
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        fclose(f);
        return sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
    }
    buf = NULL;
    cap = 0;
    rc = 0;
    line = 0;
    while (rc == 0) {
        line++;
        rc = skm_conf_getline(f, &buf, &cap, path, line, err);
        if (rc != 1) {
            break;
        }
        p = strchr(buf, '#');
        if (p != NULL) {
            *p = '\0';
        }
        rc = skm_trust_line(t, buf, path, line, err);
    }
    free(buf);
    fclose(f);
    if (rc != 0) {
        skm_trust_free(t);
        return -1;
    }
    *out = t;
    return 0;
}


static int
skm_trust_line(skm_trust_t *t, char *line, const char *path,
    unsigned lineno, sk_err_t *err)
{
    char               *f[4], *save, *p;
    size_t              n, i;
    skm_trust_entry_t  *v, *en;
    sk_err_t            e;

    n = 0;
    for (p = strtok_r(line, " \t\r\n", &save); p != NULL;
         p = strtok_r(NULL, " \t\r\n", &save))
    {
        if (n == 3) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: too many "
                "fields (DOMAIN SERVICES [sha256:FINGERPRINT])", path,
                lineno);
        }
        f[n++] = p;
    }
    if (n == 0) {
        return 0;
    }
    if (n < 2) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: missing "
            "services (DOMAIN SERVICES [sha256:FINGERPRINT])", path, lineno);
    }
    for (p = f[0]; *p != '\0'; p++) {
        *p = (char) tolower((unsigned char) *p);
    }
    if (sk_name_check(f[0], strlen(f[0]), &e) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: domain: %s",
            path, lineno, e.msg);
    }
    /* A lookup takes the first: a second line for the domain would be
     * ignored, whatever it says. */
    for (i = 0; i < t->n; i++) {
        if (strcmp(t->v[i].domain, f[0]) == 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: domain "
                "\"%s\" listed twice (first at line %u)", path, lineno, f[0],
                t->v[i].line);
        }
    }
    if (n == 3 && f[2][0] != '/'
        && (strncmp(f[2], "sha256:", 7) != 0 || strlen(f[2]) != 71
            || strspn(f[2] + 7, "0123456789abcdef") != 64))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: \"%.80s\" is "
            "neither sha256:<64 lowercase hex digits> nor /PATH of the SK's "
            "public key", path, lineno, f[2]);
    }
    v = realloc(t->v, (t->n + 1) * sizeof(*v));
    if (v == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
    }
    t->v = v;
    en = &v[t->n];
    memset(en, 0, sizeof(*en));
    if (sk_services_parse(&en->services, f[1], strlen(f[1]), &e) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: services: %s",
            path, lineno, e.msg);
    }
    t->n++;
    en->line = lineno;
    en->domain = strdup(f[0]);
    if (en->domain == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
    }
    if (n == 3 && f[2][0] == '/') {
        if (sk_key_load_public(&en->key, f[2], &e) != 0) {
            return sk_err_set(err, e.code, "%s: line %u: %s", path, lineno,
                e.msg);
        }
        en->fpr = malloc(SK_FINGERPRINT_SIZE);
        if (en->fpr != NULL) {
            sk_key_fingerprint(en->fpr, en->key);
        }
    } else if (n == 3) {
        en->fpr = strdup(f[2]);
    }
    if (n == 3 && en->fpr == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
    }
    return 0;
}


void
skm_trust_free(skm_trust_t *t)
{
    size_t  i;

    if (t == NULL) {
        return;
    }
    for (i = 0; i < t->n; i++) {
        free(t->v[i].domain);
        free(t->v[i].fpr);
        sk_key_free(t->v[i].key);
        sk_services_free(&t->v[i].services);
    }
    free(t->v);
    free(t);
}


/* Copy a services set by formatting and parsing it again. */
static int
skm_services_copy(sk_services_t *dst, const sk_services_t *src,
    sk_err_t *err)
{
    char  *s;
    int    rc;

    if (sk_services_format(&s, src, err) != 0) {
        return -1;
    }
    rc = sk_services_parse(dst, s, strlen(s), err);
    free(s);
    return rc;
}


/* The record of domain from its stamped entries in the cache. */
int
skm_sk_from_cache(skm_sk_t *sk, sk_cache_t *cache, const char *domain,
    sk_err_t *err)
{
    char           key[SK_CACHE_KEY_MAX + 1];
    unsigned char *val;
    size_t         len, off, used, n, i;
    sk_entry_t   **ev, **tmp;
    sk_record_t    rec;
    int            rc;

    snprintf(key, sizeof(key), "sk:record:%s", domain);
    if (sk_cache_get(cache, key, &val, &len, err) != 0) {
        if (err != NULL && err->code == SK_ERR_NOT_FOUND) {
            return 0;
        }
        skm_metrics_cache_error();
        return -1;
    }
    ev = NULL;
    n = 0;
    rc = 0;
    for (off = 0; off < len && rc == 0; off += used) {
        tmp = realloc(ev, (n + 1) * sizeof(*ev));
        if (tmp == NULL) {
            rc = sk_err_set(err, SK_ERR_NOMEM, "out of memory");
            break;
        }
        ev = tmp;
        rc = sk_entry_parse_next(&ev[n], &used, (const char *) val + off,
            len - off, err);
        if (rc == 0) {
            n++;
        }
    }
    memset(&rec, 0, sizeof(rec));
    if (rc == 0) {
        rc = sk_record_combine(&rec, domain, (const sk_entry_t *const *) ev,
            n, NULL, NULL, err);
    }
    if (rc == 0 && rec.state == SK_RECORD_BOUND) {
        sk->state = SKM_SK_FOUND;
        strcpy(sk->source, "keycache");
        rc = skm_services_copy(&sk->services, &rec.services, err);
        sk->key = rec.key;
        rec.key = NULL;
    }
    if (rc != 0) {
        sk_err_prefix(err, "%s", key);
    }
    sk_record_free(&rec);
    for (i = 0; i < n; i++) {
        sk_entry_free(ev[i]);
    }
    free(ev);
    free(val);
    return rc;
}


int
skm_sk_lookup(skm_sk_t *sk, const skm_conf_t *conf, sk_cache_t *cache,
    const char *domain, sk_err_t *err)
{
    size_t  i;

    memset(sk, 0, sizeof(*sk));
    if (conf->trust != NULL) {
        for (i = 0; i < conf->trust->n; i++) {
            if (strcasecmp(conf->trust->v[i].domain, domain) == 0) {
                sk->state = SKM_SK_FOUND;
                strcpy(sk->source, "trustfile");
                sk->trustkey = conf->trust->v[i].key;
                sk->trustfpr = conf->trust->v[i].fpr;
                return skm_services_copy(&sk->services,
                    &conf->trust->v[i].services, err);
            }
        }
    }
    if (cache != NULL) {
        return skm_sk_from_cache(sk, cache, domain, err);
    }
    return 0;
}


const sk_key_t *
skm_sk_pubkey(const skm_sk_t *sk, skm_sk_t *rec, sk_cache_t *cache,
    const char *domain, const char *what)
{
    const sk_key_t  *key;
    char             kfpr[SK_FINGERPRINT_SIZE];
    sk_err_t         err;

    memset(rec, 0, sizeof(*rec));
    key = sk->trustkey != NULL ? sk->trustkey : sk->key;
    if (key == NULL && cache != NULL) {
        if (skm_sk_from_cache(rec, cache, domain, &err) != 0) {
            skm_log(LOG_WARNING, "%s: KeyCache record: %s", what, err.msg);
        }
        key = rec->key;
        if (key != NULL && sk->trustfpr != NULL) {
            sk_key_fingerprint(kfpr, key);
            if (strcmp(kfpr, sk->trustfpr) != 0) {
                skm_log(LOG_ERR, "%s: the KeyCache record's SK %s is not "
                    "the TrustFile's %s", what, kfpr, sk->trustfpr);
                key = NULL;
            }
        }
    }
    if (key == NULL) {
        skm_log(LOG_ERR, "%s: the public key of %s's sovereign key is not "
            "known (TrustFile key path or KeyCache record)", what, domain);
    }
    return key;
}


/*
 * One cache handle per connection thread (a handle is not thread-safe),
 * kept across messages so Redis lookups reuse the connection; reopened
 * when a reload changes KeyCache.
 */
typedef struct {
    sk_cache_t  *cache;
    char        *spec;
} skm_tcache_t;

static pthread_key_t   skm_tcache_key;
static pthread_once_t  skm_tcache_once = PTHREAD_ONCE_INIT;


static void
skm_tcache_free(void *p)
{
    skm_tcache_t  *t = p;

    sk_cache_close(t->cache);
    free(t->spec);
    free(t);
}


static void
skm_tcache_init(void)
{
    (void) pthread_key_create(&skm_tcache_key, skm_tcache_free);
}


int
skm_cache_get(sk_cache_t **cache, const skm_conf_t *conf, sk_err_t *err)
{
    skm_tcache_t  *t;

    *cache = NULL;
    if (conf->keycache == NULL) {
        return 0;
    }
    pthread_once(&skm_tcache_once, skm_tcache_init);
    t = pthread_getspecific(skm_tcache_key);
    if (t != NULL && strcmp(t->spec, conf->keycache) != 0) {
        skm_tcache_free(t);
        t = NULL;
        (void) pthread_setspecific(skm_tcache_key, NULL);
    }
    if (t == NULL) {
        t = calloc(1, sizeof(*t));
        if (t == NULL || (t->spec = strdup(conf->keycache)) == NULL) {
            free(t);
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        /* the handle comes back even when Redis is down: it reconnects */
        if (sk_cache_open(&t->cache, conf->keycache, (int) conf->lookupms,
                err) != 0 && t->cache == NULL)
        {
            skm_metrics_cache_error();
            free(t->spec);
            free(t);
            return -1;
        }
        (void) pthread_setspecific(skm_tcache_key, t);
    }
    *cache = t->cache;
    return 0;
}


int
skm_cache_carrier(sk_carrier_t **car, sk_cache_t *cache,
    const unsigned char *sha256, sk_err_t *err)
{
    if (sk_cache_get_carrier(car, cache, sha256, err) != 0) {
        if (err->code != SK_ERR_NOT_FOUND) {
            skm_metrics_cache_error();
        }
        return -1;
    }
    return 0;
}


void
skm_sk_free(skm_sk_t *sk)
{
    sk_services_free(&sk->services);
    sk_key_free(sk->key);
    memset(sk, 0, sizeof(*sk));
}
