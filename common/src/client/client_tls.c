/*
 * client_tls.c -- SK enforcement inside an OpenSSL handshake (sk/tls.h).
 *
 * OpenSSL calls the verify callback once per certificate of the chain it
 * builds, with its own verdict (preverify).  The SK decision is made at
 * the first call of each verification, on the chain as the server sent
 * it (the carrier included), and kept in the X509_STORE_CTX's ex_data so
 * the later calls of that same verification reuse it: a reject fails
 * every call, so the handshake ends with an alert before any
 * application data.  The callback finds its sk_tls_t in the SSL's
 * ex_data (sk_tls_attach) or its SSL_CTX's (sk_tls_attach_ctx).
 *
 * After sk_tls_prepare, when the cache could not decide, the record is
 * learnt there too: the handshake asked for the server's staple, which
 * OpenSSL has parsed before the certificates (ServerHello or
 * EncryptedExtensions), or it is in the chain; the lookup takes it, or
 * asks the mirrors when it is missing or refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <sk/tls.h>

struct sk_tls_s {
    sk_client_trust_t        own;       /* loaded from conf->trust_file */
    const sk_client_trust_t *trust;     /* &own or the caller's */
    sk_client_cache_t       *cache;
    sk_client_fetch_fn       fetch;
    void                    *fetch_arg;
    sk_client_fetch_fn       fetch_tor;
    void                    *fetch_tor_arg;
    unsigned                 flags;

    char                     host[SK_NAME_MAX + 1];   /* "" before lookup */
    char                     service[SK_SERVICE_NAME_MAX + 1];
    unsigned                 port;
    sk_client_found_t        found;
    int                      usable;    /* found may decide: set only
                                           by sk_tls_found, never while
                                           pending */
    sk_err_t                 closed;    /* why not, when !usable */
    int                      pending;   /* found is learnt in the
                                           handshake (sk_tls_prepare) */
    unsigned char           *staple;    /* the extension's bytes */
    size_t                   staple_len;
    int                      staple_got;
    const char              *staple_form;   /* what the lookup had */

    sk_decide_t              d;
    int                      decided;
    int                      undecided; /* the last decision failed
                                           closed (why: closed) */
};

static CRYPTO_ONCE  sk_tls_once = CRYPTO_ONCE_STATIC_INIT;
static int          sk_tls_ssl_idx = -1, sk_tls_ctx_idx = -1,
                    sk_tls_xs_idx = -1;
/* X509_STORE_CTX marks: the SK decision of this verification. */
static char         sk_tls_pass, sk_tls_fail;


static void
sk_tls_init_once(void)
{
    sk_tls_ssl_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    sk_tls_ctx_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    sk_tls_xs_idx = X509_STORE_CTX_get_ex_new_index(0, NULL, NULL, NULL,
        NULL);
}


int
sk_tls_new(sk_tls_t **out, const sk_tls_conf_t *conf, sk_err_t *err)
{
    sk_tls_t  *t;

    *out = NULL;
    if (!CRYPTO_THREAD_run_once(&sk_tls_once, sk_tls_init_once)
        || sk_tls_ssl_idx < 0 || sk_tls_ctx_idx < 0 || sk_tls_xs_idx < 0)
    {
        return sk_err_crypto(err, "tls: cannot allocate ex_data indexes");
    }
    if (conf->fetch == NULL
        || (conf->trust_file == NULL) == (conf->trust == NULL))
    {
        return sk_err_set(err, SK_ERR_USAGE, "tls: want a fetch function "
            "and either a trust file or a trust set");
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "tls: out of memory");
    }
    sk_client_trust_init(&t->own);
    t->trust = conf->trust != NULL ? conf->trust : &t->own;
    t->fetch = conf->fetch;
    t->fetch_arg = conf->fetch_arg;
    t->fetch_tor = conf->fetch_tor;
    t->fetch_tor_arg = conf->fetch_tor_arg;
    t->flags = conf->flags;
    if ((conf->trust_file != NULL
         && sk_client_trust_load(&t->own, conf->trust_file, err) != 0)
        || (conf->cache_dir != NULL
            && sk_client_cache_open(&t->cache, conf->cache_dir, err) != 0))
    {
        sk_tls_free(t);
        return -1;
    }
    *out = t;
    return 0;
}


static int sk_tls_found(sk_tls_t *t, sk_err_t *err);


/* Forget the last lookup and handshake; aim at host. */
static int
sk_tls_reset(sk_tls_t *t, const char *host, const char *service,
    unsigned port, sk_err_t *err)
{
    size_t  hl = strlen(host);

    sk_client_found_free(&t->found);
    t->host[0] = '\0';
    t->usable = 0;
    t->pending = 0;
    t->decided = 0;
    t->staple_form = NULL;
    if (hl >= sizeof(t->host) || strlen(service) >= sizeof(t->service)) {
        return sk_err_set(err, SK_ERR_USAGE, "tls: host or service too "
            "long");
    }
    memcpy(t->host, host, hl + 1);
    snprintf(t->service, sizeof(t->service), "%s", service);
    t->port = port;
    return 0;
}


int
sk_tls_lookup(sk_tls_t *t, const char *host, const char *service,
    unsigned port, int64_t now, sk_err_t *err)
{
    sk_client_ctx_t  ctx = { t->trust, t->cache, t->fetch, t->fetch_arg,
                             now, 0, NULL, t->fetch_tor, t->fetch_tor_arg };

    if (sk_tls_reset(t, host, service, port, err) != 0) {
        return -1;
    }
    if (sk_client_find(&t->found, host, &ctx, err) != 0) {
        t->host[0] = '\0';
        return -1;
    }
    return sk_tls_found(t, err);
}


/* found is learnt: may it decide?  Whatever fails closed leaves usable
 * 0, so no decision is made on what was found. */
static int
sk_tls_found(sk_tls_t *t, sk_err_t *err)
{
    t->pending = 0;
    t->usable = 0;
    if (sk_client_found_usable(&t->found, &t->closed) != 0) {
        if (err != NULL) {
            *err = t->closed;
        }
        return -1;
    }
    t->usable = 1;
    return 0;
}


/* A fetch that asks nothing and notes that a mirror was wanted. */
static int
sk_tls_nofetch(char **body, size_t *len, int *status, const char *url,
    void *arg, sk_err_t *err)
{
    int  *wanted = arg;

    (void) body;
    (void) len;
    (void) status;
    (void) url;
    *wanted = 1;
    return sk_err_set(err, SK_ERR_UNAVAILABLE, "not asked before the "
        "handshake");
}


int
sk_tls_prepare(sk_tls_t *t, const char *host, const char *service,
    unsigned port, int64_t now, sk_err_t *err)
{
    sk_client_ctx_t  ctx = { t->trust, t->cache, sk_tls_nofetch, NULL, now,
                             0, NULL, NULL, NULL };
    int              wanted = 0;

    if (t->flags & SK_TLS_NO_STAPLE) {
        return sk_tls_lookup(t, host, service, port, now, err);
    }
    if (sk_tls_reset(t, host, service, port, err) != 0) {
        return -1;
    }
    ctx.arg = &wanted;
    if (sk_client_find(&t->found, host, &ctx, err) != 0) {
        t->host[0] = '\0';
        return -1;
    }
    /* The cache decided; else (a mirror was wanted, or there is none to
     * ask) the handshake's staple may. */
    if (!wanted && t->found.res.outcome == SK_FRESH_CACHED) {
        return sk_tls_found(t, err);
    }
    /* Undecided until the handshake learns the record: usable stays 0,
     * so a lookup there that fails closed fails the decision. */
    sk_client_found_free(&t->found);
    t->pending = 1;
    return 0;
}


const sk_client_found_t *
sk_tls_get0_found(const sk_tls_t *t)
{
    /* found.name is set by every lookup that found something. */
    return t->host[0] != '\0' && !t->pending && t->found.name[0] != '\0'
        ? &t->found : NULL;
}


const char *
sk_tls_staple_form(const sk_tls_t *t)
{
    return t->staple_form;
}


static void
sk_tls_drop_staple(sk_tls_t *t)
{
    free(t->staple);
    t->staple = NULL;
    t->staple_len = 0;
    t->staple_got = 0;
}


int
sk_tls_set_staple(sk_tls_t *t, const unsigned char *data, size_t len,
    sk_err_t *err)
{
    sk_tls_drop_staple(t);
    t->staple_got = data != NULL;
    if (data == NULL) {
        return 0;
    }
    t->staple = malloc(len > 0 ? len : 1);
    if (t->staple == NULL) {
        t->staple_got = 0;
        return sk_err_set(err, SK_ERR_NOMEM, "tls: out of memory");
    }
    memcpy(t->staple, data, len);
    t->staple_len = len;
    return 0;
}


/* "refused: why" about the staple, first in the lookup's log. */
static void
sk_tls_note(sk_tls_t *t, const char *why)
{
    sk_client_result_t  *r = &t->found.res;

    if (r->ntries == SK_CLIENT_LOG_MAX) {
        r->ntries--;
    }
    memmove(&r->tries[1], &r->tries[0], r->ntries * sizeof(r->tries[0]));
    r->ntries++;
    snprintf(r->tries[0].url, sizeof(r->tries[0].url), "staple");
    snprintf(r->tries[0].what, sizeof(r->tries[0].what), "refused: %s",
        why);
}


/* The pending lookup, with the staple the server sent: the extension's
 * bytes (sk_tls_set_staple), else the certificate form in chain. */
static int
sk_tls_learn_pending(sk_tls_t *t, STACK_OF(X509) *chain, int64_t now,
    sk_err_t *err)
{
    sk_client_ctx_t   ctx = { t->trust, t->cache, t->fetch, t->fetch_arg,
                              now, 0, NULL, t->fetch_tor,
                              t->fetch_tor_arg };
    sk_staple_t       s;
    unsigned char    *wrapped = NULL;
    size_t            wlen = 0;
    sk_err_t          e;
    char              why[SK_ERR_MSG_MAX] = "";
    int               rc;

    t->staple_form = NULL;
    if (t->staple_got) {
        if (sk_staple_parse(&s, t->staple, t->staple_len, &e) == 0) {
            t->staple_form = "extension";
        } else {
            snprintf(why, sizeof(why), "%s", e.msg);
        }
    }
    if (t->staple_form == NULL && chain != NULL) {
        if (sk_staple_find(&wrapped, &wlen, chain, &e) == 0) {
            if (sk_staple_parse(&s, wrapped, wlen, &e) == 0) {
                t->staple_form = "chain";
            }
            free(wrapped);
        } else if (e.code != SK_ERR_NOT_FOUND && why[0] == '\0') {
            snprintf(why, sizeof(why), "%s", e.msg);
        }
    }
    ctx.staple = t->staple_form != NULL ? &s : NULL;
    t->pending = 0;
    rc = sk_client_find(&t->found, t->host, &ctx, &e);
    if (t->staple_form != NULL) {
        sk_staple_free(&s);
    }
    sk_tls_drop_staple(t);
    if (rc != 0) {
        /* Not learnt: stay undecided, for this and any later call. */
        t->closed = e;
        if (err != NULL) {
            *err = e;
        }
        return -1;
    }
    if (why[0] != '\0') {
        sk_tls_note(t, why);
    }
    return sk_tls_found(t, err);
}


int
sk_tls_learn(sk_tls_t *t, STACK_OF(X509) *chain, int64_t now, sk_err_t *err)
{
    t->undecided = 0;
    if (t->pending && sk_tls_learn_pending(t, chain, now, err) != 0) {
        t->undecided = t->closed.code == SK_ERR_UNAVAILABLE;
        return -1;
    }
    if (!t->usable) {
        if (t->host[0] == '\0') {
            return sk_err_set(err, SK_ERR_USAGE, "tls: no lookup before "
                "the decision");
        }
        t->undecided = 1;
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", t->closed.msg);
    }
    return 0;
}


int
sk_tls_decide(sk_tls_t *t, STACK_OF(X509) *chain, time_t now, sk_err_t *err)
{
    t->decided = 0;
    if (sk_tls_learn(t, chain, now, err) != 0) {
        return -1;
    }
    if (sk_client_decide(&t->d, &t->found.rec, t->host, t->service, t->port,
            chain, now, err) != 0)
    {
        return -1;
    }
    /* A view not fresh enough only refuses. */
    if (sk_client_found_decision_ok(&t->found, &t->d, &t->closed) != 0) {
        t->undecided = 1;
        if (err != NULL) {
            *err = t->closed;
        }
        return -1;
    }
    t->decided = 1;
    return 0;
}


const char *
sk_tls_undecided(const sk_tls_t *t)
{
    return t->undecided ? t->closed.msg : NULL;
}


const sk_decide_t *
sk_tls_decision(const sk_tls_t *t)
{
    return t->decided ? &t->d : NULL;
}


/* The verification's clock: OpenSSL's check time if set, else now. */
static time_t
sk_tls_time(X509_STORE_CTX *xs)
{
    X509_VERIFY_PARAM  *vp = X509_STORE_CTX_get0_param(xs);

    if (X509_VERIFY_PARAM_get_flags(vp) & X509_V_FLAG_USE_CHECK_TIME) {
        return X509_VERIFY_PARAM_get_time(vp);
    }
    return time(NULL);
}


/* Decide on the chain the server sent: OpenSSL's untrusted set, which
 * starts with the leaf; put the leaf first if it ever does not. */
static int
sk_tls_decide_xs(sk_tls_t *t, X509_STORE_CTX *xs)
{
    STACK_OF(X509)  *sent = X509_STORE_CTX_get0_untrusted(xs), *chain;
    X509            *leaf = X509_STORE_CTX_get0_cert(xs);
    sk_err_t         err;
    int              rc;

    if (leaf == NULL) {
        return -1;
    }
    if (sent != NULL && sk_X509_num(sent) > 0
        && sk_X509_value(sent, 0) == leaf)
    {
        return sk_tls_decide(t, sent, sk_tls_time(xs), &err);
    }
    chain = sent != NULL ? sk_X509_dup(sent) : sk_X509_new_null();
    if (chain == NULL || !sk_X509_unshift(chain, leaf)) {
        sk_X509_free(chain);
        return -1;
    }
    rc = sk_tls_decide(t, chain, sk_tls_time(xs), &err);
    sk_X509_free(chain);
    return rc;
}


static int
sk_tls_verify_cb(int ok, X509_STORE_CTX *xs)
{
    SSL                  *ssl;
    sk_tls_t             *t = NULL;
    void                 *mark;
    const unsigned char  *ext;
    size_t                elen;

    ssl = X509_STORE_CTX_get_ex_data(xs,
        SSL_get_ex_data_X509_STORE_CTX_idx());
    if (ssl != NULL) {
        t = SSL_get_ex_data(ssl, sk_tls_ssl_idx);
        if (t == NULL) {
            t = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), sk_tls_ctx_idx);
        }
    }
    if (t == NULL) {
        X509_STORE_CTX_set_error(xs, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
    mark = X509_STORE_CTX_get_ex_data(xs, sk_tls_xs_idx);
    if (mark == NULL) {
        if (t->pending && sk_staple_client_get0(ssl, &ext, &elen)
            && sk_tls_set_staple(t, ext, elen, NULL) != 0)
        {
            X509_STORE_CTX_set_error(xs, X509_V_ERR_OUT_OF_MEM);
            return 0;
        }
        mark = sk_tls_decide_xs(t, xs) == 0
            && (t->d.decision == SK_DECIDE_ACCEPT
                || t->d.decision == SK_DECIDE_NONE)
            ? &sk_tls_pass : &sk_tls_fail;
        X509_STORE_CTX_set_ex_data(xs, sk_tls_xs_idx, mark);
    }
    if (mark == &sk_tls_fail) {
        X509_STORE_CTX_set_error(xs, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
    return (t->flags & SK_TLS_NO_CA_CHECK) ? 1 : ok;
}


static int
sk_tls_ready(sk_tls_t *t, sk_err_t *err)
{
    if (t->host[0] == '\0') {
        return sk_err_set(err, SK_ERR_USAGE, "tls: attach after "
            "sk_tls_lookup");
    }
    if (!t->usable && !t->pending) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", t->closed.msg);
    }
    t->decided = 0;
    t->undecided = 0;
    sk_tls_drop_staple(t);
    return 0;
}


int
sk_tls_attach(sk_tls_t *t, SSL *ssl, sk_err_t *err)
{
    if (sk_tls_ready(t, err) != 0) {
        return -1;
    }
    if (SSL_get_session(ssl) != NULL) {
        return sk_err_set(err, SK_ERR_USAGE, "tls: a resumed session "
            "carries no certificate: the SK check needs a full handshake");
    }
    if (!SSL_set_ex_data(ssl, sk_tls_ssl_idx, t)
        || !SSL_set_tlsext_host_name(ssl, t->host)
        || (!(t->flags & SK_TLS_NO_CA_CHECK) && !SSL_set1_host(ssl, t->host)))
    {
        return sk_err_crypto(err, "tls: cannot set up the connection");
    }
    SSL_set_verify(ssl, SSL_VERIFY_PEER, sk_tls_verify_cb);
    return t->pending ? sk_staple_client_ask(ssl, err) : 0;
}


int
sk_tls_attach_ctx(sk_tls_t *t, SSL_CTX *ctx, sk_err_t *err)
{
    if (sk_tls_ready(t, err) != 0) {
        return -1;
    }
    if (!SSL_CTX_set_ex_data(ctx, sk_tls_ctx_idx, t)
        || (!(t->flags & SK_TLS_NO_CA_CHECK)
            && !X509_VERIFY_PARAM_set1_host(SSL_CTX_get0_param(ctx), t->host,
                   0)))
    {
        return sk_err_crypto(err, "tls: cannot set up the context");
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, sk_tls_verify_cb);
    return t->pending ? sk_staple_client_init(ctx, 1, err) : 0;
}


void
sk_tls_free(sk_tls_t *t)
{
    if (t == NULL) {
        return;
    }
    sk_client_found_free(&t->found);
    sk_client_cache_close(t->cache);
    sk_client_trust_free(&t->own);
    sk_tls_drop_staple(t);
    free(t);
}
