/*
 * skm_policy.c -- outbound pinning: a socketmap server for Postfix's
 * smtp_tls_policy_maps.
 *
 *     smtp_tls_policy_maps = socketmap:inet:127.0.0.1:PORT:sk
 *     smtp_tls_fingerprint_digest = sha256
 *
 * For a next hop (the recipient domain, or a transport's "[host]:port")
 * whose sovereign key covers smtp, it connects to the MX hosts (or the
 * bracketed host), checks over STARTTLS that each presents a key the SK
 * cross-signs (the carrier in the served chain, or in the KeyCache), and
 * answers "fingerprint match=<SHA-256 of that public key>..." so Postfix
 * delivers to no other key.  A next hop neither the TrustFile nor the
 * KeyCache knows is learnt, with StapleTrust, from the stapled proof its
 * host serves, as an SK-aware client would (no mirror asked).  When the SK is known but no host passes, or
 * a lookup fails, it answers TEMP: Postfix defers the mail and keeps it.
 * A next hop with no SK (or an SK without smtp, an IP literal) is
 * NOTFOUND and the admin's defaults apply.  Answers are cached per next
 * hop for PolicyTTL (never beyond the carrier's expiry; TEMP is not
 * cached); a reload empties the cache.  A whole lookup (DNS, connects,
 * greetings, STARTTLS, handshakes) takes at most PolicyTimeout, else it
 * is TEMP; a client that hangs up ends its lookup (skm_bound.c).
 *
 * One thread per Postfix connection (skm_server.c: Postfix keeps them
 * open, at most PolicyMaxConnections); a malformed netstring closes the
 * connection.
 */
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <resolv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <sk/cache.h>
#include <sk/carrier.h>
#include <sk/key.h>
#include <sk/name.h>
#include <sk/services.h>
#include <sk/staple.h>

#include "skm.h"

#define SKM_POLICY_MX_MAX   5       /* MX hosts checked per next hop */
#define SKM_POLICY_BUCKETS  4096
#define SKM_POLICY_ENTRIES  65536   /* cache size before it is emptied */
#define SKM_REPLY_MAX       2048

typedef struct skm_pentry_s {
    char                 *key;
    char                 *reply;
    time_t                expires;
    struct skm_pentry_s  *next;
} skm_pentry_t;

typedef struct {
    char    name[SKM_DOMAIN_MAX + 1];
    int     pref;
} skm_mx_t;

static pthread_rwlock_t  skm_pcache_lock = PTHREAD_RWLOCK_INITIALIZER;
static skm_pentry_t     *skm_pcache[SKM_POLICY_BUCKETS];
static size_t            skm_pcache_n;
static unsigned long     skm_pcache_gen;           /* conf it was made for */

static void skm_policy_compute(char *reply, size_t replylen, time_t *ttl,
    const skm_conf_t *conf, const char *key, skm_bound_t *b);


/* One Postfix connection: netstring requests until EOF, idle or garbage. */
void
skm_sockmap_conn(int fd)
{
    skm_conf_t      *conf;
    char             buf[SKM_SOCKMAP_MAX + 16], name[64];
    char             key[SKM_SOCKMAP_MAX], reply[SKM_REPLY_MAX];
    char             out[SKM_REPLY_MAX + 16];
    const char      *data, *why;
    size_t           len, dlen, used;
    ssize_t          n;
    int              rc, outlen;

    len = 0;
    for (;;) {
        rc = skm_netstring_parse(buf, len, SKM_SOCKMAP_MAX, &data, &dlen,
            &used, &why);
        if (rc < 0) {
            skm_log(LOG_WARNING, "PolicySocket: malformed request (%s): "
                "closing the connection", why);
            return;
        }
        if (rc == 0) {
            n = read(fd, buf + len, sizeof(buf) - len);
            if (n <= 0) {
                return;         /* EOF, idle timeout or error: done */
            }
            len += (size_t) n;
            continue;
        }
        conf = skm_conf_acquire();
        rc = 0;
        if (skm_sockmap_request(data, dlen, name, sizeof(name), key,
                sizeof(key), &why) != 0)
        {
            skm_conf_release(conf);
            skm_log(LOG_WARNING, "PolicySocket: malformed request (%s): "
                "closing the connection", why);
            return;
        }
        if (strcmp(name, conf->policyname) != 0) {
            snprintf(reply, sizeof(reply), "PERM unknown map name \"%s\" "
                "(PolicyMapName is \"%s\")", name, conf->policyname);
            skm_metrics_policy(reply, 0);
        } else {
            rc = skm_policy_answer(reply, sizeof(reply), conf, key, fd);
        }
        skm_conf_release(conf);
        if (rc < 0) {
            return;             /* the client hung up: free its slot */
        }
        outlen = skm_netstring_format(out, sizeof(out), reply,
            strlen(reply));
        if (outlen < 0 || write(fd, out, (size_t) outlen) != outlen) {
            return;
        }
        memmove(buf, buf + used, len - used);
        len -= used;
    }
}


/* Empty the cache (write lock held). */
static void
skm_pcache_flush(void)
{
    skm_pentry_t  *e, *next;
    size_t         i;

    for (i = 0; i < SKM_POLICY_BUCKETS; i++) {
        for (e = skm_pcache[i]; e != NULL; e = next) {
            next = e->next;
            free(e->key);
            free(e->reply);
            free(e);
        }
        skm_pcache[i] = NULL;
    }
    skm_pcache_n = 0;
}


/* 1 with reply filled from a fresh entry for key. */
static int
skm_pcache_get(char *reply, size_t replylen, const skm_conf_t *conf,
    const char *key, time_t now)
{
    skm_pentry_t  *e;
    int            hit;

    hit = 0;
    pthread_rwlock_rdlock(&skm_pcache_lock);
    /* made for an older configuration: a miss; the next put empties it */
    e = skm_pcache_gen == conf->gen
        ? skm_pcache[skm_hash(key, SKM_POLICY_BUCKETS)] : NULL;
    for (; e != NULL; e = e->next) {
        if (strcmp(e->key, key) == 0 && e->expires > now) {
            snprintf(reply, replylen, "%s", e->reply);
            hit = 1;
            break;
        }
    }
    pthread_rwlock_unlock(&skm_pcache_lock);
    return hit;
}


static void
skm_pcache_put(const skm_conf_t *conf, const char *key, const char *reply,
    time_t expires)
{
    skm_pentry_t  **pp, *e;

    pthread_rwlock_wrlock(&skm_pcache_lock);
    if (conf->gen < skm_pcache_gen) {
        pthread_rwlock_unlock(&skm_pcache_lock);
        return;                 /* made under a configuration since replaced */
    }
    if (skm_pcache_gen != conf->gen || skm_pcache_n >= SKM_POLICY_ENTRIES) {
        skm_pcache_flush();
        skm_pcache_gen = conf->gen;
    }
    for (pp = &skm_pcache[skm_hash(key, SKM_POLICY_BUCKETS)]; *pp != NULL;
         pp = &(*pp)->next)
    {
        if (strcmp((*pp)->key, key) == 0) {
            break;
        }
    }
    e = *pp;
    if (e == NULL) {
        e = calloc(1, sizeof(*e));
        if (e == NULL || (e->key = strdup(key)) == NULL) {
            free(e);
            pthread_rwlock_unlock(&skm_pcache_lock);
            return;
        }
        *pp = e;
        skm_pcache_n++;
    }
    free(e->reply);
    e->reply = strdup(reply);
    e->expires = e->reply != NULL ? expires : 0;
    pthread_rwlock_unlock(&skm_pcache_lock);
}


/* An answer and its time since t0 in the metrics. */
static void
skm_policy_count(const char *reply, const struct timespec *t0)
{
    struct timespec  t1;

    (void) clock_gettime(CLOCK_MONOTONIC, &t1);
    skm_metrics_policy(reply, (double) (t1.tv_sec - t0->tv_sec)
        + (double) (t1.tv_nsec - t0->tv_nsec) / 1e9);
}


int
skm_policy_answer(char *reply, size_t replylen, const skm_conf_t *conf,
    const char *key, int client)
{
    skm_bound_t      b;
    time_t           now, ttl;
    struct timespec  t0;

    (void) clock_gettime(CLOCK_MONOTONIC, &t0);
    now = time(NULL);
    if (skm_pcache_get(reply, replylen, conf, key, now)) {
        skm_policy_count(reply, &t0);
        return 0;
    }
    skm_bound_init(&b, conf->policytimeout, client);
    ttl = 0;
    skm_metrics_policy_lookup(1);
    skm_policy_compute(reply, replylen, &ttl, conf, key, &b);
    skm_metrics_policy_lookup(-1);
    if (ttl > 0) {
        skm_pcache_put(conf, key, reply, now + ttl);
    }
    if (b.over == SKM_BOUND_GONE) {
        return -1;
    }
    skm_policy_count(reply, &t0);
    return 0;
}


/* The MX hosts of domain, best first; 0 if it has none (or DNS fails:
 * then the domain itself is tried, as for a missing MX). */
static size_t
skm_mx_lookup(skm_mx_t *mx, size_t max, const char *domain, skm_bound_t *b)
{
    unsigned char  ans[4096];
    ns_msg         msg;
    ns_rr          rr;
    skm_mx_t       t;
    int            len, i, count;
    size_t         n, j;

    skm_bound_resolver(b);
    len = res_query(domain, ns_c_in, ns_t_mx, ans, sizeof(ans));
    if (len < 0 || ns_initparse(ans, len, &msg) != 0) {
        return 0;
    }
    count = ns_msg_count(msg, ns_s_an);
    n = 0;
    for (i = 0; i < count && n < max; i++) {
        if (ns_parserr(&msg, ns_s_an, i, &rr) != 0
            || ns_rr_type(rr) != ns_t_mx || ns_rr_rdlen(rr) < 3)
        {
            continue;
        }
        mx[n].pref = (ns_rr_rdata(rr)[0] << 8) | ns_rr_rdata(rr)[1];
        if (dn_expand(ns_msg_base(msg), ns_msg_end(msg),
                ns_rr_rdata(rr) + 2, mx[n].name, sizeof(mx[n].name)) < 0
            || mx[n].name[0] == '\0')
        {
            continue;
        }
        for (j = n; j > 0 && mx[j - 1].pref > mx[j].pref; j--) {
            t = mx[j - 1];
            mx[j - 1] = mx[j];
            mx[j] = t;
        }
        n++;
    }
    return n;
}


/* "ab:cd:..." of a SHA-256. */
static void
skm_fpr_colon(char out[3 * SK_SHA256_BYTES],
    const unsigned char h[SK_SHA256_BYTES])
{
    static const char  hex[] = "0123456789abcdef";
    size_t             i;

    for (i = 0; i < SK_SHA256_BYTES; i++) {
        out[3 * i] = hex[h[i] >> 4];
        out[3 * i + 1] = hex[h[i] & 15];
        out[3 * i + 2] = i + 1 < SK_SHA256_BYTES ? ':' : '\0';
    }
}


/*
 * Each host is asked with the default offer, then offering only RSA and
 * only ECDSA signatures: a server with both keys side by side shows each,
 * and every key that passes is pinned, whichever Postfix negotiates.
 */
static const char *const  skm_sigalgs[] = {
    NULL,
    "rsa_pss_rsae_sha256:rsa_pss_rsae_sha384:rsa_pss_rsae_sha512:"
        "RSA+SHA256:RSA+SHA384:RSA+SHA512",
    "ECDSA+SHA256:ECDSA+SHA384:ECDSA+SHA512"
};


/*
 * One handshake: 0 with the SHA-256 of the key the host presents and the
 * carrier's expiry if that key is cross-signed by sk (the carrier from
 * the served chain, else from the cache); -1 with why if it is not, -2 if
 * there was no handshake.
 */
static int
skm_policy_host(unsigned char h[SK_SHA256_BYTES], time_t *not_after,
    const char *host, int port, const char *sigalgs, const sk_key_t *sk,
    sk_cache_t *cache, skm_bound_t *b, char *why, size_t whylen)
{
    STACK_OF(X509)  *chain;
    sk_carrier_t    *car;
    sk_services_t    svc;
    unsigned char   *spki;
    const char      *from;
    char             portstr[8], res[128];
    sk_err_t         err;
    int              n, rc;

    car = NULL;
    spki = NULL;
    rc = -1;
    snprintf(portstr, sizeof(portstr), "%d", port);
    if (skm_tls_chain(&chain, host, portstr, port != 465, sigalgs, NULL,
            NULL, b, res, sizeof(res)) != 0)
    {
        snprintf(why, whylen, "%.100s:%d: %s", host, port, res);
        return -2;
    }
    n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(sk_X509_value(chain, 0)),
        &spki);
    if (n <= 0) {
        snprintf(why, whylen, "%.100s:%d: cannot encode its key", host, port);
        goto done;
    }
    EVP_Digest(spki, (size_t) n, h, NULL, EVP_sha256(), NULL);
    from = "served chain";
    if (sk_carrier_find(&car, chain, &err) != 0) {
        from = "KeyCache";
        if (cache == NULL
            || skm_cache_carrier(&car, cache, h, &err) != 0)
        {
            snprintf(why, whylen, "%.100s:%d: no carrier for its key (none "
                "served%s)", host, port, cache == NULL ? ", no KeyCache"
                : err.code == SK_ERR_NOT_FOUND ? ", none in the KeyCache"
                : ", KeyCache failed");
            car = NULL;
            goto done;
        }
    }
    if (sk_carrier_verify(car, sk, spki, (size_t) n, time(NULL), &err)
        != 0)
    {
        snprintf(why, whylen, "%.100s:%d: carrier (%s): %.100s", host, port,
            from, err.msg);
        goto done;
    }
    /* As an SK-aware client checks the host it connects to (decision
     * table, carrier-name): a carrier certifies a key for its name only. */
    if (!sk_name_covers(sk_carrier_name(car), 0, host)) {
        snprintf(why, whylen, "%.100s:%d: carrier (%s) is for %.100s, not "
            "this host", host, port, from, sk_carrier_name(car));
        goto done;
    }
    memset(&svc, 0, sizeof(svc));
    if (sk_services_parse(&svc, sk_carrier_services(car),
            strlen(sk_carrier_services(car)), &err) != 0
        || !sk_services_covers(&svc, "smtp", 0))
    {
        sk_services_free(&svc);
        snprintf(why, whylen, "%.100s:%d: carrier (%s) does not cover smtp",
            host, port, from);
        goto done;
    }
    sk_services_free(&svc);
    *not_after = sk_carrier_not_after(car);
    rc = 0;

done:
    OPENSSL_free(spki);
    sk_carrier_free(car);
    sk_X509_pop_free(chain, X509_free);
    return rc;
}


/* A fetch that asks no mirror: the policy learns from staples only. */
static int
skm_policy_nofetch(char **body, size_t *len, int *status, const char *url,
    void *arg, sk_err_t *err)
{
    (void) body;
    (void) len;
    (void) status;
    (void) url;
    (void) arg;
    return sk_err_set(err, SK_ERR_UNAVAILABLE, "no mirror is asked");
}


/*
 * StapleTrust: the SK of domain from the stapled proof its first host
 * that answers serves (extension 0xFF53, else the certificate form), as
 * an SK-aware client learns it; no mirror is asked.  1 with *key (the SK,
 * owned) when the staple is fresh and valid and binds an SK covering
 * smtp; 0 otherwise (logged when a staple was refused).
 */
static int
skm_policy_staple(sk_key_t **key, const skm_conf_t *conf,
    const char *nexthop, const char *domain, const skm_mx_t *mx, size_t nmx,
    int port, skm_bound_t *b)
{
    STACK_OF(X509)     *chain;
    sk_client_ctx_t     ctx;
    sk_client_found_t   found;
    sk_staple_t         s;
    unsigned char      *ext, *wrapped;
    size_t              i, extlen, wlen;
    char                portstr[8], res[128];
    sk_err_t            err;
    int                 rc, parsed;

    *key = NULL;
    snprintf(portstr, sizeof(portstr), "%d", port);
    for (i = 0; i < nmx; i++) {
        if (skm_tls_chain(&chain, mx[i].name, portstr, port != 465, NULL,
                &ext, &extlen, b, res, sizeof(res)) == 0)
        {
            break;
        }
        if (skm_bound_over(b)) {
            return 0;           /* the caller answers TEMP */
        }
    }
    if (i == nmx) {
        return 0;
    }
    wrapped = NULL;
    if (ext == NULL && sk_staple_find(&wrapped, &wlen, chain, &err) != 0) {
        wrapped = NULL;         /* err says why: none, or a bad one */
    }
    /* asked in the ClientHello; came in the extension or the chain */
    skm_metrics_staple_asked(ext != NULL || wrapped != NULL);
    if (ext != NULL) {
        parsed = sk_staple_parse(&s, ext, extlen, &err) == 0;
        free(ext);
    } else if (wrapped != NULL) {
        parsed = sk_staple_parse(&s, wrapped, wlen, &err) == 0;
        free(wrapped);
    } else {
        parsed = 0;
    }
    sk_X509_pop_free(chain, X509_free);
    if (!parsed) {
        if (err.code != SK_ERR_NOT_FOUND) {
            skm_log(LOG_WARNING, "policy %s: %s's staple: %s", nexthop,
                mx[i].name, err.msg);
        }
        return 0;
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.trust = conf->stapletrust;
    ctx.fetch = skm_policy_nofetch;
    ctx.now = time(NULL);
    ctx.staple = &s;
    rc = 0;
    if (sk_client_find(&found, domain, &ctx, &err) != 0) {
        skm_log(LOG_WARNING, "policy %s: %s", nexthop, err.msg);
    } else if (found.res.outcome != SK_FRESH_STAPLE) {
        skm_log(LOG_WARNING, "policy %s: %s's staple: %s", nexthop,
            mx[i].name, found.res.ntries > 0 ? found.res.tries[0].what
            : "not used");
    } else if (found.rec.state == SK_RECORD_BOUND
               && sk_services_covers(&found.rec.services, "smtp", 0)
               && sk_key_from_pkey(key, sk_key_get0_pkey(found.rec.key),
                      &err) == 0)
    {
        skm_log(LOG_INFO, "policy %s: the SK of %s from %s's staple "
            "(answer of %s)", nexthop, domain, mx[i].name, found.res.source);
        rc = 1;
    }
    sk_client_found_free(&found);
    sk_staple_free(&s);
    return rc;
}


static void
skm_policy_compute(char *reply, size_t replylen, time_t *ttl,
    const skm_conf_t *conf, const char *key, skm_bound_t *b)
{
    skm_nexthop_t   nh;
    skm_sk_t        sk, rec;
    skm_mx_t        mx[SKM_POLICY_MX_MAX];
    sk_cache_t     *cache;
    sk_key_t       *stapled = NULL;
    const sk_key_t *skkey;
    sk_err_t        err;
    unsigned char   h[SK_SHA256_BYTES];
    char            fpr[3 * SK_SHA256_BYTES];
    char            why[256], why2[256], match[SKM_REPLY_MAX];
    size_t          nmx, i, off;
    int             rc;
    time_t          na, first, now;

    *ttl = 0;
    memset(&rec, 0, sizeof(rec));
    memset(&sk, 0, sizeof(sk));
    if (skm_nexthop_parse(&nh, key) != 0
        || sk_name_check(nh.host, strlen(nh.host), NULL) != 0)
    {
        /* an IP literal or a name an SK cannot bind: no SK */
        snprintf(reply, replylen, "NOTFOUND ");
        *ttl = conf->policyttl;
        return;
    }
    if (skm_cache_get(&cache, conf, &err) != 0
        || skm_sk_lookup(&sk, conf, cache, nh.host, &err) != 0)
    {
        skm_log(LOG_WARNING, "policy %s: sovereign key lookup failed: %s",
            key, err.msg);
        snprintf(reply, replylen, "TEMP sk-milter: sovereign key lookup "
            "for %s failed", nh.host);
        goto done;
    }
    if (sk.state != SKM_SK_NONE
        && !sk_services_covers(&sk.services, "smtp", 0))
    {
        snprintf(reply, replylen, "NOTFOUND ");
        *ttl = conf->policyttl;
        goto done;
    }
    if (sk.state == SKM_SK_NONE && conf->stapletrust == NULL) {
        snprintf(reply, replylen, "NOTFOUND ");
        *ttl = conf->policyttl;
        goto done;
    }
    nmx = nh.bracketed ? 0
        : skm_mx_lookup(mx, SKM_POLICY_MX_MAX, nh.host, b);
    if (nmx == 0) {
        snprintf(mx[0].name, sizeof(mx[0].name), "%s", nh.host);
        nmx = 1;
    }
    if (sk.state == SKM_SK_NONE) {
        if (!skm_policy_staple(&stapled, conf, key, nh.host, mx, nmx,
                nh.port, b))
        {
            if (skm_bound_over(b)) {
                goto over;      /* undecided: not "no SK" */
            }
            snprintf(reply, replylen, "NOTFOUND ");
            *ttl = conf->policyttl;
            goto done;
        }
        skkey = stapled;
    } else {
        skkey = skm_sk_pubkey(&sk, &rec, cache, nh.host, key);
    }
    if (skkey == NULL) {
        snprintf(reply, replylen, "TEMP sk-milter: %s has a sovereign key "
            "but its public key is not known here", nh.host);
        goto done;
    }

    now = time(NULL);
    first = 0;
    off = 0;
    match[0] = '\0';
    why[0] = '\0';
    for (i = 0; i < nmx * 3; i++) {
        rc = skm_policy_host(h, &na, mx[i / 3].name, nh.port,
            skm_sigalgs[i % 3], skkey, cache, b, i % 3 == 0 ? why : why2,
            sizeof(why));
        if (skm_bound_over(b)) {
            goto over;          /* hosts left unchecked: undecided */
        }
        if (rc == -2 && i % 3 == 0) {
            skm_log(LOG_WARNING, "policy %s: %s", key, why);
            i += 2;                 /* no handshake: next host */
            continue;
        }
        if (rc != 0) {
            if (rc == -1) {
                skm_log(LOG_WARNING, "policy %s: %s", key,
                    i % 3 == 0 ? why : why2);
            }
            continue;
        }
        skm_fpr_colon(fpr, h);
        if (strstr(match, fpr) == NULL
            && off + 7 + sizeof(fpr) < sizeof(match))
        {
            off += (size_t) snprintf(match + off, sizeof(match) - off,
                " match=%s", fpr);
        }
        if (first == 0 || na < first) {
            first = na;
        }
    }
    if (off == 0) {
        skm_log(LOG_WARNING, "policy %s: deferring: no host presents a key "
            "%s's sovereign key cross-signs", key, nh.host);
        snprintf(reply, replylen, "TEMP sk-milter: no host of %s presents "
            "a key its sovereign key cross-signs (%s)", nh.host, why);
        goto done;
    }
    snprintf(reply, replylen, "OK fingerprint%s", match);
    skm_log(LOG_INFO, "policy %s: pinned%s", key, match);
    *ttl = conf->policyttl;
    if (first - now < *ttl) {
        *ttl = first - now;
    }
    goto done;

over:
    skm_log(LOG_WARNING, "policy %s: deferring: %s", key,
        skm_bound_why(b, why, sizeof(why)));
    snprintf(reply, replylen, "TEMP sk-milter: %s for %s", why, nh.host);

done:
    sk_key_free(stapled);
    skm_sk_free(&rec);
    skm_sk_free(&sk);
}
