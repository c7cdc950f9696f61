/*
 * skm_policy_lookup.c -- one outbound policy lookup: the answer for a
 * Postfix next hop, decided as an SK-aware client decides
 * (docs/postfix.md, "Outbound"; docs/protocol.md, "Mail: a domain's MX
 * hosts").
 *
 *   1. The domain's record: its TrustFile line (without StapleTrust, or
 *      its KeyCache record: the admin's own entries), else libsk's lookup
 *      with StapleTrust, the code `sk verify` runs (sk/tls.h): the client
 *      cache (PolicyCache) while it is fresh, else the staple the first
 *      MX host that answers serves, else the mirrors (over Tor too, as
 *      StapleTrust's mirror_tor says).  Undecided (nothing
 *      fresh enough known, no mirror answered): TEMP, or NOTFOUND with
 *      PolicyUndecided notfound.
 *   2. No SK covering smtp for the domain: NOTFOUND.
 *   3. Else each MX host (at most 5, by preference; a bracketed next hop:
 *      that host), asked with the default signature offer and then
 *      offering only the other key type, has each key it shows pinned if
 *      sk_client_decide_mx accepts it: a carrier by the domain's SK for
 *      the host, or a host the domain's "mx=" patterns name with a
 *      carrier by its own SK.  None: TEMP.  MX records are not trusted
 *      for anything: they only say where to look.
 *
 * Every answer is logged once, when computed, saying what decided it.
 * The whole lookup is bound by PolicyTimeout and its client's hang-up
 * (skm_bound.c), mirror queries included.
 */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <sk/cache.h>
#include <sk/carrier.h>
#include <sk/key.h>
#include <sk/name.h>
#include <sk/services.h>
#include <sk/tls.h>

#include "skm.h"

#define SKM_POLICY_MX_MAX   5       /* MX hosts checked per next hop */
#define SKM_MATCH_MAX       1024

typedef struct {
    char             name[SKM_DOMAIN_MAX + 1];
    int              pref;
    /* its default handshake (asking for the staple) */
    int              tried;
    int              rc;            /* skm_tls_chain's */
    STACK_OF(X509)  *chain;
    unsigned char   *staple;
    size_t           stlen;
    char             why[128];
    /* its own record, for "mx=" (looked up once, when a pattern names
     * it) */
    sk_tls_t        *tls;
    int              looked;
    char             hwhy[SK_ERR_MSG_MAX];
} skm_host_t;

typedef struct {
    const skm_conf_t  *conf;
    const char        *key;         /* the next hop, as Postfix asked */
    skm_nexthop_t      nh;
    skm_bound_t       *b;
    sk_cache_t        *kc;          /* KeyCache: carriers not served */
    skm_host_t         h[SKM_POLICY_MX_MAX];
    size_t             nh_;         /* hosts */
    int                mxdone;
    char               port[8];
    sk_tls_t          *tls;         /* the domain's lookup */
    char               from[SK_CLIENT_URL_MAX + SKM_DOMAIN_MAX + 80];
    char               match[SKM_MATCH_MAX];
    time_t             first;       /* earliest carrier expiry pinned */
    const sk_client_found_t *found; /* the domain's lookup; NULL: the
                                       TrustFile's */
    int                undecided;   /* a key not pinned for want of a
                                       fresh enough view */
    int                rejected;    /* a key refused */
    char               uwhy[SK_ERR_MSG_MAX];   /* the first undecided */
    char               why[1024];   /* the first refusal */
} skm_lk_t;


/* Mirror queries within what is left of the bound: directly (each also
 * within 10 x LookupTimeout, its connect LookupTimeout), or through
 * StapleTrust's Tor (its onions: within tor_timeout). */
static int
skm_lk_query(char **body, size_t *len, int *status, const char *url,
    skm_lk_t *lk, int viator, sk_err_t *err)
{
    sk_client_curl_t   curl, tor;
    struct timespec    now;
    long               left, cap, conn;
    char               why[64];

    if (skm_bound_over(lk->b)) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s",
            skm_bound_why(lk->b, why, sizeof(why)));
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    left = (long) (lk->b->deadline.tv_sec - now.tv_sec) * 1000
           + (lk->b->deadline.tv_nsec - now.tv_nsec) / 1000000;
    sk_client_curl_init(&curl, &tor, lk->conf->stapletrust);
    if (viator) {
        curl = tor;
        cap = conn = tor.timeout_ms;
    } else {
        cap = 10 * lk->conf->lookupms;
        conn = lk->conf->lookupms;
    }
    curl.timeout_ms = left < cap ? left : cap;
    curl.connect_timeout_ms = left < conn ? left : conn;
    if (curl.timeout_ms < 1) {
        curl.timeout_ms = 1;
        curl.connect_timeout_ms = 1;
    }
    return sk_client_fetch_curl(body, len, status, url, &curl, err);
}


static int
skm_lk_fetch(char **body, size_t *len, int *status, const char *url,
    void *arg, sk_err_t *err)
{
    return skm_lk_query(body, len, status, url, arg, 0, err);
}


static int
skm_lk_fetch_tor(char **body, size_t *len, int *status, const char *url,
    void *arg, sk_err_t *err)
{
    return skm_lk_query(body, len, status, url, arg, 1, err);
}


/* The hosts to ask: the MX hosts of the next hop, best first (at most
 * SKM_POLICY_MX_MAX), else (none, a DNS failure, a bracketed next hop)
 * the next hop itself. */
static void
skm_lk_hosts(skm_lk_t *lk)
{
    unsigned char  ans[4096];
    ns_msg         msg;
    ns_rr          rr;
    skm_host_t     t, *h = lk->h;
    int            len, i, count;
    size_t         n = 0, j;

    if (lk->mxdone) {
        return;
    }
    lk->mxdone = 1;
    if (!lk->nh.bracketed) {
        skm_bound_resolver(lk->b);
        len = res_query(lk->nh.host, ns_c_in, ns_t_mx, ans, sizeof(ans));
        count = len < 0 || ns_initparse(ans, len, &msg) != 0 ? 0
            : ns_msg_count(msg, ns_s_an);
        for (i = 0; i < count && n < SKM_POLICY_MX_MAX; i++) {
            if (ns_parserr(&msg, ns_s_an, i, &rr) != 0
                || ns_rr_type(rr) != ns_t_mx || ns_rr_rdlen(rr) < 3)
            {
                continue;
            }
            h[n].pref = (ns_rr_rdata(rr)[0] << 8) | ns_rr_rdata(rr)[1];
            if (dn_expand(ns_msg_base(msg), ns_msg_end(msg),
                    ns_rr_rdata(rr) + 2, h[n].name, sizeof(h[n].name)) < 0
                || h[n].name[0] == '\0'
                || sk_name_check(h[n].name, strlen(h[n].name), NULL) != 0)
            {
                continue;
            }
            for (j = n; j > 0 && h[j - 1].pref > h[j].pref; j--) {
                t = h[j - 1];
                h[j - 1] = h[j];
                h[j] = t;
            }
            n++;
        }
    }
    if (n == 0) {
        snprintf(h[0].name, sizeof(h[0].name), "%s", lk->nh.host);
        n = 1;
    }
    lk->nh_ = n;
}


/* 1 if chain carries a staple (the certificate form). */
static int
skm_lk_has_staple(STACK_OF(X509) *chain)
{
    unsigned char  *w = NULL;
    size_t          wlen;
    int             got;

    got = sk_staple_find(&w, &wlen, chain, NULL) == 0;
    free(w);
    return got;
}


/* Host i's default handshake, asking for its staple (once). */
static skm_host_t *
skm_lk_hello(skm_lk_t *lk, size_t i)
{
    skm_host_t  *h = &lk->h[i];

    if (!h->tried) {
        h->tried = 1;
        h->rc = skm_tls_chain(&h->chain, h->name, lk->port,
            lk->nh.port != 465, NULL, &h->staple, &h->stlen, lk->b, h->why,
            sizeof(h->why));
        if (h->rc == 0) {
            skm_metrics_staple_asked(h->staple != NULL
                || skm_lk_has_staple(h->chain));
        }
    }
    return h;
}


/* libsk's lookup of name (StapleTrust, PolicyCache), as far as the
 * cache goes: 0, or -2 for a local failure (why). */
static int
skm_lk_prepare(skm_lk_t *lk, sk_tls_t **t, const char *name, char *why,
    size_t whylen)
{
    sk_tls_conf_t  tc;
    sk_err_t       err;

    memset(&tc, 0, sizeof(tc));
    tc.trust = lk->conf->stapletrust;
    tc.cache_dir = lk->conf->policycache;
    tc.fetch = skm_lk_fetch;
    tc.fetch_arg = lk;
    tc.fetch_tor = skm_lk_fetch_tor;
    tc.fetch_tor_arg = lk;
    if (sk_tls_new(t, &tc, &err) != 0
        || sk_tls_prepare(*t, name, "smtp", (unsigned) lk->nh.port,
               time(NULL), &err) != 0)
    {
        snprintf(why, whylen, "%s", err.msg);
        return -2;
    }
    return 0;
}


/* The rest of it, with the staple of host h (NULL: none): 0, -1 when it
 * fails closed (why), -2 for a local failure (why). */
static int
skm_lk_finish(sk_tls_t *t, const skm_host_t *h, char *why, size_t whylen)
{
    sk_err_t  err;

    if ((h != NULL && sk_tls_set_staple(t, h->staple, h->stlen, &err) != 0)
        || sk_tls_learn(t, h != NULL ? h->chain : NULL, time(NULL), &err)
           != 0)
    {
        snprintf(why, whylen, "%s", err.msg);
        return err.code == SK_ERR_UNAVAILABLE ? -1 : -2;
    }
    return 0;
}


/* "mirror URL", "the cache", "HOST's staple (answer of URL)". */
static void
skm_lk_source(char *out, size_t len, const sk_client_found_t *f,
    const char *host)
{
    switch (f->res.outcome) {
    case SK_FRESH_CACHED:
        snprintf(out, len, "the cache");
        break;
    case SK_FRESH_ANSWER:
        snprintf(out, len, "mirror %s", f->res.source);
        break;
    case SK_FRESH_STAPLE:
        snprintf(out, len, "%s's staple (answer of %s)", host,
            f->res.source);
        break;
    case SK_FRESH_OPEN:
        snprintf(out, len, "%s, failing open (every timeline very stale)",
            strcmp(f->res.source, "cache") == 0 ? "the cache"
            : f->res.source[0] != '\0' ? f->res.source : "nothing known");
        break;
    case SK_FRESH_CLOSED:
        snprintf(out, len, "nothing fresh enough");
        break;
    }
}


/* What the lookup heard, for an undecided answer: "mirror URL:
 * unreachable: ...; staple: ..." */
static void
skm_lk_tries(char *out, size_t len, const sk_client_found_t *f)
{
    size_t  i, off = 0;

    out[0] = '\0';
    for (i = 0; f != NULL && i < f->res.ntries && off + 1 < len; i++) {
        off += (size_t) snprintf(out + off, len - off, "%s%s%s: %s",
            i > 0 ? "; " : "", strcmp(f->res.tries[i].url, "staple") == 0
            || strcmp(f->res.tries[i].url, "cache") == 0 ? "" : "mirror ",
            f->res.tries[i].url, f->res.tries[i].what);
    }
}


/* chain, or a copy with the KeyCache's carrier for the leaf's key when
 * the host serves none (*copy: the chain's certificates borrowed, the
 * last, the carrier, owned). */
static STACK_OF(X509) *
skm_lk_kc_carrier(skm_lk_t *lk, STACK_OF(X509) *chain,
    STACK_OF(X509) **copy, const unsigned char h[SK_SHA256_BYTES])
{
    sk_carrier_t  *car;
    sk_err_t       err;
    X509          *x;

    *copy = NULL;
    if (lk->kc == NULL) {
        return chain;
    }
    if (sk_carrier_find(&car, chain, &err) == 0) {
        sk_carrier_free(car);
        return chain;
    }
    if (err.code != SK_ERR_NOT_FOUND
        || skm_cache_carrier(&car, lk->kc, h, &err) != 0)
    {
        return chain;           /* a broken one served, or none kept */
    }
    x = sk_carrier_get0_x509(car);
    *copy = sk_X509_dup(chain);
    if (*copy == NULL || !X509_up_ref(x) || !sk_X509_push(*copy, x)) {
        sk_X509_free(*copy);
        *copy = NULL;
        sk_carrier_free(car);
        return chain;
    }
    sk_carrier_free(car);
    return *copy;
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
 * One chain host i presented: pin its key if the domain's record rec
 * vouches for it (sk_client_decide_mx; for a host an "mx=" pattern
 * names, its own record is learnt first).  Logged when it does not.
 */
static void
skm_lk_chain(skm_lk_t *lk, const sk_record_t *rec, size_t i,
    STACK_OF(X509) *chain)
{
    skm_host_t               *h = &lk->h[i];
    const sk_client_found_t  *hf = NULL;
    STACK_OF(X509)           *copy, *use;
    unsigned char            *spki = NULL, fp[SK_SHA256_BYTES];
    char                      fpr[3 * SK_SHA256_BYTES], line[sizeof(lk->why)];
    char                      dfp[SK_FINGERPRINT_SIZE];
    sk_decide_t               d;
    sk_err_t                  err;
    size_t                    off;
    int                       n, rc;

    n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(sk_X509_value(chain, 0)),
        &spki);
    if (n <= 0) {
        OPENSSL_free(spki);
        return;
    }
    EVP_Digest(spki, (size_t) n, fp, NULL, EVP_sha256(), NULL);
    OPENSSL_free(spki);
    if (sk_client_mx_pattern(rec, h->name, (unsigned) lk->nh.port) != NULL
        && !h->looked)
    {
        h->looked = 1;
        rc = skm_lk_prepare(lk, &h->tls, h->name, h->hwhy, sizeof(h->hwhy));
        if (rc == 0) {
            rc = skm_lk_finish(h->tls, h, h->hwhy, sizeof(h->hwhy));
        }
        if (rc != 0) {
            skm_log(LOG_WARNING, "policy %s: %s:%s: its own SK: %s%s",
                lk->key, h->name, lk->port, rc == -1 ? "undecided: " : "",
                h->hwhy);
        }
        if (rc == -1 && !lk->undecided) {
            lk->undecided = 1;
            snprintf(lk->uwhy, sizeof(lk->uwhy), "%s", h->hwhy);
        }
    }
    if (h->looked && h->hwhy[0] == '\0') {
        hf = sk_tls_get0_found(h->tls);
    }
    use = skm_lk_kc_carrier(lk, chain, &copy, fp);
    rc = sk_client_decide_mx(&d, rec, lk->nh.host, h->name,
        (unsigned) lk->nh.port, hf != NULL ? &hf->rec : NULL, use,
        time(NULL), &err);
    if (copy != NULL) {
        X509_free(sk_X509_pop(copy));       /* the carrier's reference */
        sk_X509_free(copy);                 /* the rest are chain's */
    }
    /* An old view only refuses: the domain's, or (the host's own SK
     * vouching) the host's. */
    sk_key_fingerprint(dfp, rec->key);
    if (rc == 0 && d.decision == SK_DECIDE_ACCEPT
        && ((lk->found != NULL
             && sk_client_found_decision_ok(lk->found, &d, &err) != 0)
            || (hf != NULL && strcmp(d.sk, dfp) != 0
                && sk_client_found_decision_ok(hf, &d, &err) != 0)))
    {
        skm_log(LOG_WARNING, "policy %s: %s:%s: not pinned: %s", lk->key,
            h->name, lk->port, err.msg);
        if (!lk->undecided) {
            lk->undecided = 1;
            snprintf(lk->uwhy, sizeof(lk->uwhy), "%s", err.msg);
        }
        return;
    }
    if (rc != 0) {
        snprintf(line, sizeof(line), "%s:%s: %s", h->name, lk->port,
            err.msg);
    } else if (d.decision != SK_DECIDE_ACCEPT) {
        snprintf(line, sizeof(line), "%s:%s: %.900s%s", h->name, lk->port,
            d.reason, use != chain ? " (the KeyCache's carrier)" : "");
    } else {
        skm_fpr_colon(fpr, fp);
        off = strlen(lk->match);
        if (strstr(lk->match, fpr) == NULL
            && off + 7 + sizeof(fpr) < sizeof(lk->match))
        {
            snprintf(lk->match + off, sizeof(lk->match) - off, " match=%s",
                fpr);
        }
        if (lk->first == 0 || d.not_after < lk->first) {
            lk->first = d.not_after;
        }
        skm_log(LOG_INFO, "policy %s: %s:%s: %s%s", lk->key, h->name,
            lk->port, d.reason, use != chain ? " (the KeyCache's carrier)"
            : "");
        return;
    }
    skm_log(LOG_WARNING, "policy %s: %s", lk->key, line);
    lk->rejected = 1;
    if (lk->why[0] == '\0') {
        snprintf(lk->why, sizeof(lk->why), "%s", line);
    }
}


/* The other key type than the default offer showed (both when it showed
 * neither): RSA and ECDSA keys side by side are each pinned. */
static const char  skm_rsa_only[] =
    "rsa_pss_rsae_sha256:rsa_pss_rsae_sha384:rsa_pss_rsae_sha512:"
    "RSA+SHA256:RSA+SHA384:RSA+SHA512";
static const char  skm_ec_only[] = "ECDSA+SHA256:ECDSA+SHA384:ECDSA+SHA512";


/* Every key host i shows, decided.  -1 once the bound is over. */
static int
skm_lk_host(skm_lk_t *lk, const sk_record_t *rec, size_t i)
{
    skm_host_t      *h = skm_lk_hello(lk, i);
    STACK_OF(X509)  *chain;
    const char      *offer[2];
    char             why[sizeof(lk->why)];
    size_t           k, n = 0;
    int              type;

    if (skm_bound_over(lk->b)) {
        return -1;
    }
    if (h->rc != 0) {
        snprintf(why, sizeof(why), "%s:%s: %s", h->name, lk->port, h->why);
        if (h->rc == -2) {
            snprintf(why, sizeof(why), "%s:%s: offers no STARTTLS: %s's SK "
                "covers smtp, so its mail goes over TLS only", h->name,
                lk->port, lk->nh.host);
            lk->rejected = 1;
        }
        skm_log(LOG_WARNING, "policy %s: %s", lk->key, why);
        if (lk->why[0] == '\0') {
            snprintf(lk->why, sizeof(lk->why), "%s", why);
        }
        return 0;
    }
    skm_lk_chain(lk, rec, i, h->chain);
    type = EVP_PKEY_get_base_id(X509_get0_pubkey(sk_X509_value(h->chain,
        0)));
    if (type != EVP_PKEY_RSA && type != EVP_PKEY_RSA_PSS) {
        offer[n++] = skm_rsa_only;
    }
    if (type != EVP_PKEY_EC) {
        offer[n++] = skm_ec_only;
    }
    for (k = 0; k < n; k++) {
        /* a host with no key of that type refuses the handshake */
        if (skm_tls_chain(&chain, h->name, lk->port, lk->nh.port != 465,
                offer[k], NULL, NULL, lk->b, why, sizeof(why)) == 0)
        {
            skm_lk_chain(lk, rec, i, chain);
            sk_X509_pop_free(chain, X509_free);
        }
        if (skm_bound_over(lk->b)) {
            return -1;
        }
    }
    return 0;
}


/* Undecided (why; f: what the lookup heard, or NULL): TEMP, or NOTFOUND
 * with PolicyUndecided notfound, never cached.  1. */
static int
skm_lk_undecided(skm_lk_t *lk, const char *why, const sk_client_found_t *f,
    char *reply, size_t replylen)
{
    char  tries[1024];

    skm_lk_tries(tries, sizeof(tries), f);
    if (lk->conf->policyundecided) {
        skm_log(LOG_WARNING, "policy %s: NOTFOUND (PolicyUndecided "
            "notfound): undecided: %s%s%s", lk->key, why,
            tries[0] != '\0' ? "; " : "", tries);
        snprintf(reply, replylen, "NOTFOUND ");
        return 1;
    }
    skm_log(LOG_WARNING, "policy %s: deferring: undecided: %s%s%s", lk->key,
        why, tries[0] != '\0' ? "; " : "", tries);
    snprintf(reply, replylen, "TEMP sk-milter: undecided for %s: no mirror "
        "gave a fresh enough answer", lk->nh.host);
    return 1;
}


/* The domain's record from libsk: 0 with *rec and lk->from; 1 when the
 * answer is already in reply (NOTFOUND, TEMP). */
static int
skm_lk_domain(skm_lk_t *lk, const sk_record_t **rec, char *reply,
    size_t replylen, time_t *ttl)
{
    const sk_client_found_t  *f;
    skm_host_t               *h = NULL;
    sk_decide_t               d;
    sk_err_t                  err;
    char                      why[SK_ERR_MSG_MAX];
    char                      src[sizeof(lk->from) - 8];
    size_t                    i;
    int                       rc;

    /* The staple of the first host that answers, if the cache does not
     * decide: sk_tls_prepare asks nothing of the network. */
    rc = skm_lk_prepare(lk, &lk->tls, lk->nh.host, why, sizeof(why));
    if (rc == 0 && sk_tls_get0_found(lk->tls) == NULL) {
        skm_lk_hosts(lk);
        for (i = 0; i < lk->nh_ && !skm_bound_over(lk->b); i++) {
            h = skm_lk_hello(lk, i);
            if (h->rc == 0) {
                break;
            }
        }
        if (h != NULL && h->rc != 0) {
            h = NULL;
        }
        rc = skm_lk_finish(lk->tls, h, why, sizeof(why));
    }
    if (skm_bound_over(lk->b)) {
        return -1;
    }
    f = sk_tls_get0_found(lk->tls);
    if (rc == -2) {
        skm_log(LOG_ERR, "policy %s: deferring: the lookup of %s failed: "
            "%s", lk->key, lk->nh.host, why);
        snprintf(reply, replylen, "TEMP sk-milter: the sovereign key lookup "
            "of %s failed", lk->nh.host);
        return 1;
    }
    if (rc == -1) {
        return skm_lk_undecided(lk, why, f, reply, replylen);
    }
    skm_lk_source(src, sizeof(src), f, h != NULL ? h->name : lk->nh.host);
    snprintf(lk->from, sizeof(lk->from), "from %s", src);
    *rec = &f->rec;
    lk->found = f;
    if (f->rec.state == SK_RECORD_BOUND
        && sk_name_covers(f->name, f->rec.include_subdomains, lk->nh.host)
        && sk_services_covers(&f->rec.services, "smtp",
               (unsigned) lk->nh.port))
    {
        return 0;
    }
    /* No SK for smtp, said by a view too old to say so: undecided. */
    memset(&d, 0, sizeof(d));
    d.decision = SK_DECIDE_NONE;
    if (sk_client_found_decision_ok(f, &d, &err) != 0) {
        return skm_lk_undecided(lk, err.msg, f, reply, replylen);
    }
    skm_log(LOG_INFO, "policy %s: NOTFOUND: %s (%s)", lk->key,
        f->rec.state == SK_RECORD_NONE ? "no SK"
        : f->rec.state == SK_RECORD_UNBOUND ? "its SK was revoked (Unbind)"
        : "its SK does not cover smtp", lk->from);
    snprintf(reply, replylen, "NOTFOUND ");
    *ttl = lk->conf->policyttl;
    return 1;
}


/* Where the admin's own entry for a domain came from. */
static const char *
skm_lk_admin(const skm_sk_t *sk)
{
    return strcmp(sk->source, "keycache") == 0 ? "the KeyCache record"
        : "the TrustFile";
}


/* The TrustFile's SK as a record (keys and services borrowed from sk). */
static const sk_record_t *
skm_lk_trusted(skm_lk_t *lk, sk_record_t *tr, const skm_sk_t *sk,
    skm_sk_t *rec)
{
    const sk_key_t  *key;

    key = skm_sk_pubkey(sk, rec, lk->kc, lk->nh.host, lk->key);
    if (key == NULL) {
        return NULL;
    }
    memset(tr, 0, sizeof(*tr));
    tr->state = SK_RECORD_BOUND;
    tr->key = (sk_key_t *) key;
    tr->services = sk->services;
    snprintf(lk->from, sizeof(lk->from), "from %s",
        skm_lk_admin(sk));
    return tr;
}


void
skm_policy_compute(char *reply, size_t replylen, time_t *ttl,
    const skm_conf_t *conf, const char *key, skm_bound_t *b)
{
    skm_lk_t            lk;
    skm_sk_t            sk, krec;
    sk_record_t         tr;
    const sk_record_t  *rec = NULL;
    struct in_addr      addr;
    sk_err_t            err, kcerr;
    char                why[128];
    size_t              i;
    time_t              now;
    int                 rc, kcfail;

    *ttl = 0;
    memset(&lk, 0, sizeof(lk));
    memset(&sk, 0, sizeof(sk));
    memset(&krec, 0, sizeof(krec));
    lk.conf = conf;
    lk.key = key;
    lk.b = b;
    if (skm_nexthop_parse(&lk.nh, key) != 0
        || sk_name_check(lk.nh.host, strlen(lk.nh.host), NULL) != 0
        || inet_pton(AF_INET, lk.nh.host, &addr) == 1)
    {
        /* Postfix asks ".parent" after a NOTFOUND for a domain (its
         * parent domain matching): said already, for the domain. */
        if (key[0] != '.') {
            skm_log(LOG_INFO, "policy %s: NOTFOUND: not a name a sovereign "
                "key can bind (an address)", key);
        }
        snprintf(reply, replylen, "NOTFOUND ");
        *ttl = conf->policyttl;
        return;
    }
    snprintf(lk.port, sizeof(lk.port), "%d", lk.nh.port);
    kcfail = skm_cache_get(&lk.kc, conf, &kcerr) != 0;
    if (kcfail) {
        lk.kc = NULL;           /* carriers from the KeyCache: none */
        skm_log(LOG_WARNING, "policy %s: KeyCache: %s", key, kcerr.msg);
    }
    /* The admin's own entries: the TrustFile, and without StapleTrust
     * (no mirror to ask) the KeyCache records sk publish -r writes. */
    rc = skm_sk_lookup(&sk, conf, conf->stapletrust == NULL ? lk.kc : NULL,
        lk.nh.host, &err);
    if (rc == 0 && kcfail && sk.state != SKM_SK_FOUND
        && conf->stapletrust == NULL)
    {
        rc = -1;                /* its record may be there */
        err = kcerr;
    }
    if (rc != 0) {
        skm_log(LOG_ERR, "policy %s: deferring: the lookup of %s failed: "
            "%s", key, lk.nh.host, err.msg);
        snprintf(reply, replylen, "TEMP sk-milter: the sovereign key lookup "
            "of %s failed", lk.nh.host);
        goto done;
    }
    if (sk.state == SKM_SK_FOUND) {
        if (!sk_services_covers(&sk.services, "smtp",
                (unsigned) lk.nh.port))
        {
            skm_log(LOG_INFO, "policy %s: NOTFOUND: its SK does not cover "
                "smtp (from %s)", key, skm_lk_admin(&sk));
            snprintf(reply, replylen, "NOTFOUND ");
            *ttl = conf->policyttl;
            goto done;
        }
        rec = skm_lk_trusted(&lk, &tr, &sk, &krec);
        if (rec == NULL) {
            snprintf(reply, replylen, "TEMP sk-milter: %s has a sovereign "
                "key but its public key is not known here", lk.nh.host);
            goto done;
        }
    } else if (conf->stapletrust == NULL) {
        skm_log(LOG_INFO, "policy %s: NOTFOUND: not in the TrustFile%s, "
            "and no StapleTrust to look it up with", key,
            lk.kc != NULL ? " nor the KeyCache" : "");
        snprintf(reply, replylen, "NOTFOUND ");
        *ttl = conf->policyttl;
        goto done;
    } else {
        rc = skm_lk_domain(&lk, &rec, reply, replylen, ttl);
        if (rc < 0) {
            goto over;
        }
        if (rc > 0) {
            goto done;
        }
    }

    skm_lk_hosts(&lk);
    for (i = 0; i < lk.nh_; i++) {
        if (skm_lk_host(&lk, rec, i) != 0) {
            goto over;
        }
    }
    if (lk.match[0] == '\0' && lk.undecided && !lk.rejected) {
        /* keys an old view would have let through, and none refused */
        skm_lk_undecided(&lk, lk.uwhy, lk.found, reply, replylen);
        goto done;
    }
    if (lk.match[0] == '\0') {
        skm_log(LOG_WARNING, "policy %s: deferring: %s's SK covers smtp "
            "(%s), and no MX host presents a key it vouches for%s", key,
            lk.nh.host, lk.from, lk.undecided ? " (some undecided)" : "");
        snprintf(reply, replylen, "TEMP sk-milter: no MX host of %s "
            "presents a key its sovereign key vouches for (%.200s)",
            lk.nh.host, lk.why);
        goto done;
    }
    snprintf(reply, replylen, "OK fingerprint%s", lk.match);
    skm_log(LOG_INFO, "policy %s: pinned%s (%s's SK %s)", key, lk.match,
        lk.nh.host, lk.from);
    now = time(NULL);
    *ttl = conf->policyttl;
    if (lk.first - now < *ttl) {
        *ttl = lk.first - now;
    }
    goto done;

over:
    skm_log(LOG_WARNING, "policy %s: deferring: %s", key,
        skm_bound_why(b, why, sizeof(why)));
    snprintf(reply, replylen, "TEMP sk-milter: %s for %s", why, lk.nh.host);

done:
    for (i = 0; i < SKM_POLICY_MX_MAX; i++) {
        sk_X509_pop_free(lk.h[i].chain, X509_free);
        free(lk.h[i].staple);
        sk_tls_free(lk.h[i].tls);
    }
    sk_tls_free(lk.tls);
    skm_sk_free(&krec);
    skm_sk_free(&sk);
}
