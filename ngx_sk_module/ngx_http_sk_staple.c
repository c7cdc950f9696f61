
/*
 * ngx_http_sk_staple.c -- the stapled SK proof (sovereign_key_staple):
 * the mirror answers for a server's names, served in TLS extension 0xFF53
 * (TLS 1.2 ServerHello, TLS 1.3 EncryptedExtensions) to clients that ask
 * for it, or as a certificate after the chain.
 *
 * Modelled on nginx's OCSP stapling: per-server state, served from memory,
 * refreshed in the background, never blocking a worker.  Unlike it, the
 * master reads the last good staple from the key-material cache at
 * configuration time (no network), so the first handshake after a start
 * or reload already carries it.  Each worker refreshes it in a thread of
 * nginx's default thread pool (cache, then mirrors, through libsk's
 * blocking calls), on a cancelable timer, and swaps the result in on its
 * event loop; the cache (sk:proof:<name>) lets workers and servers share
 * one fetch.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include <curl/curl.h>

#include "ngx_http_sk.h"


/* Last good answers, kept across reloads (the .so stays mapped) for a
 * cache that is down at reload. */
#define NGX_HTTP_SK_STAPLE_LAST_GOOD_MAX  256

#define NGX_HTTP_SK_STAPLE_CONTEXT                                           \
    (SSL_EXT_CLIENT_HELLO | SSL_EXT_TLS1_2_SERVER_HELLO                      \
     | SSL_EXT_TLS1_3_ENCRYPTED_EXTENSIONS)


typedef struct {
    ngx_str_t                 path;
    sk_client_trust_t         trust;
} ngx_http_sk_trust_t;


/* What the status shows of a name: copied on the event loop. */
typedef struct {
    char                      name[SK_NAME_MAX + 1];
    time_t                    oldest;         /* 0: no answer held */
    time_t                    last;           /* the newest answer's, also
                                                 once dropped; 0: never */
    char                      from[SK_CLIENT_URL_MAX];
    char                      why[SK_STAPLE_WHY_MAX];
} ngx_http_sk_staple_info_t;


struct ngx_http_sk_staple_s {
    ngx_http_sk_main_conf_t  *mcf;            /* its thread pool */
    ngx_http_sk_srv_conf_t   *skcf;           /* its server's (label) */
    ngx_uint_t                mode;
    SSL_CTX                  *ctx;
    const sk_client_trust_t  *trust;
    char                     *cache;          /* spec */
    u_char                   *file;           /* where it was configured */
    ngx_uint_t                line;

    sk_staple_set_t           set;            /* the refresh's own: only
                                                 the task touches it while
                                                 loading */

    u_char                   *ext;            /* served: malloc()ed */
    size_t                    ext_len;
    time_t                    valid;          /* served while now < valid */
    X509                     *cert;           /* chain mode: in the chains */
    ngx_http_sk_staple_info_t info[SK_STAPLE_MAX_ANSWERS];

    unsigned                  loading:1;
    ngx_event_t               timer;
#if (NGX_THREADS)
    ngx_thread_task_t        *task;
#endif
    int                       rc;             /* the task's results */
    sk_err_t                  err;
    X509                     *newcert;
    time_t                    ran;            /* its clock */
};


typedef struct {
    char                      name[SK_NAME_MAX + 1];
    u_char                   *buf;            /* malloc()ed */
    size_t                    len;
} ngx_http_sk_staple_last_t;


static void ngx_http_sk_staple_cleanup(void *data);
static ngx_int_t ngx_http_sk_staple_serve(ngx_http_sk_staple_t *st,
    X509 *x, ngx_log_t *log);
static ngx_uint_t ngx_http_sk_staple_log(ngx_http_sk_staple_t *st,
    ngx_log_t *log, int64_t now);
static int ngx_http_sk_staple_add(SSL *ssl, unsigned int type,
    unsigned int context, const unsigned char **out, size_t *outlen, X509 *x,
    size_t chainidx, int *al, void *arg);


static ngx_http_sk_staple_last_t
    ngx_http_sk_staple_last[NGX_HTTP_SK_STAPLE_LAST_GOOD_MAX];
static ngx_uint_t  ngx_http_sk_staple_nlast;


static ngx_conf_enum_t  ngx_http_sk_staple_modes[] = {
    { ngx_string("off"), NGX_HTTP_SK_STAPLE_OFF },
    { ngx_string("extension"), NGX_HTTP_SK_STAPLE_EXTENSION },
    { ngx_string("chain"), NGX_HTTP_SK_STAPLE_CHAIN },
    { ngx_null_string, 0 }
};


/* sovereign_key_staple off|extension|chain; */
char *
ngx_http_sk_staple_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_sk_srv_conf_t *skcf = conf;

    ngx_str_t   *value;
    ngx_uint_t   i;

    if (skcf->staple_mode != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (i = 0; ngx_http_sk_staple_modes[i].name.len; i++) {
        if (value[1].len == ngx_http_sk_staple_modes[i].name.len
            && ngx_strcmp(value[1].data, ngx_http_sk_staple_modes[i].name.data)
               == 0)
        {
            skcf->staple_mode = ngx_http_sk_staple_modes[i].value;
            skcf->staple_file = cf->conf_file->file.name.data;
            skcf->staple_line = cf->conf_file->line;
            return NGX_CONF_OK;
        }
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid value \"%V\", expected \"extension\", "
                       "\"chain\" or \"off\"", &value[1]);
    return NGX_CONF_ERROR;
}


static void
ngx_http_sk_trust_cleanup(void *data)
{
    ngx_http_sk_trust_t *t = data;

    sk_client_trust_free(&t->trust);
}


/* A trust file, loaded once however many servers name it. */
static const sk_client_trust_t *
ngx_http_sk_trust_get(ngx_conf_t *cf, ngx_http_sk_main_conf_t *mcf,
    ngx_str_t *path, u_char *file, ngx_uint_t line)
{
    sk_err_t                  err;
    ngx_uint_t                i;
    ngx_pool_cleanup_t       *cln;
    ngx_http_sk_trust_t     **tp, *t;

    if (mcf->trusts.elts == NULL
        && ngx_array_init(&mcf->trusts, cf->pool, 2,
                          sizeof(ngx_http_sk_trust_t *))
           != NGX_OK)
    {
        return NULL;
    }

    tp = mcf->trusts.elts;
    for (i = 0; i < mcf->trusts.nelts; i++) {
        if (tp[i]->path.len == path->len
            && ngx_strncmp(tp[i]->path.data, path->data, path->len) == 0)
        {
            return &tp[i]->trust;
        }
    }

    t = ngx_pcalloc(cf->pool, sizeof(ngx_http_sk_trust_t));
    cln = ngx_pool_cleanup_add(cf->pool, 0);
    tp = ngx_array_push(&mcf->trusts);
    if (t == NULL || cln == NULL || tp == NULL) {
        return NULL;
    }

    t->path = *path;
    sk_client_trust_init(&t->trust);
    cln->handler = ngx_http_sk_trust_cleanup;
    cln->data = t;
    *tp = t;

    if (sk_client_trust_load(&t->trust, (char *) path->data, &err) != 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign_key_trust: %s in %s:%ui", err.msg, file,
                      line);
        return NULL;
    }

    return &t->trust;
}


static ngx_http_sk_staple_last_t *
ngx_http_sk_staple_last_find(const char *name, ngx_uint_t add)
{
    ngx_uint_t                  i;
    ngx_http_sk_staple_last_t  *l;

    for (i = 0; i < ngx_http_sk_staple_nlast; i++) {
        if (ngx_strcmp(ngx_http_sk_staple_last[i].name, name) == 0) {
            return &ngx_http_sk_staple_last[i];
        }
    }

    if (!add || ngx_http_sk_staple_nlast == NGX_HTTP_SK_STAPLE_LAST_GOOD_MAX) {
        return NULL;
    }

    l = &ngx_http_sk_staple_last[ngx_http_sk_staple_nlast++];
    ngx_cpystrn((u_char *) l->name, (u_char *) name, sizeof(l->name));
    l->buf = NULL;
    l->len = 0;

    return l;
}


/*
 * What an earlier cycle served makes up for a cache that is down now
 * (checked and taken only if younger than what the cache gave); then
 * what this cycle holds is remembered for the next.
 */
static ngx_int_t
ngx_http_sk_staple_last_good(ngx_http_sk_staple_t *st, ngx_log_t *log)
{
    u_char                     *buf;
    sk_err_t                    err;
    ngx_uint_t                  i;
    sk_staple_name_t           *nm;
    ngx_http_sk_staple_last_t  *l;

    for (i = 0; i < st->set.n; i++) {
        l = ngx_http_sk_staple_last_find(st->set.names[i].name, 0);

        if (l != NULL && l->buf != NULL
            && sk_staple_set_offer(&st->set, l->buf, l->len, st->trust,
                                   ngx_time(), &err)
               < 0)
        {
            ngx_log_error(NGX_LOG_EMERG, log, 0,
                          "sovereign_key_staple: %s in %s:%ui", err.msg,
                          st->file, st->line);
            return NGX_ERROR;
        }
    }

    for (i = 0; i < st->set.n; i++) {
        nm = &st->set.names[i];

        if (nm->s.buf == NULL) {
            continue;
        }

        l = ngx_http_sk_staple_last_find(nm->name, 1);
        buf = l != NULL ? malloc(nm->s.len) : NULL;

        if (buf == NULL) {
            continue;
        }

        ngx_memcpy(buf, nm->s.buf, nm->s.len);
        free(l->buf);
        l->buf = buf;
        l->len = nm->s.len;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_sk_staple_init(ngx_conf_t *cf, ngx_http_sk_main_conf_t *mcf,
    ngx_http_core_srv_conf_t *cscf, ngx_http_sk_srv_conf_t *skcf,
    SSL_CTX *ctx, const char **names, ngx_uint_t n)
{
    X509                     *x;
    sk_err_t                  err;
    ngx_str_t                *spec;
    ngx_uint_t                i;
    sk_cache_t               *cache;
    ngx_pool_cleanup_t       *cln;
    ngx_http_sk_staple_t     *st, **stp;

#if !(NGX_THREADS)

    ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                  "\"sovereign_key_staple\" ignored, nginx was built without "
                  "threads, in %s:%ui", skcf->staple_file, skcf->staple_line);
    return NGX_OK;

#endif

    if (skcf->trust.len == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"sovereign_key_staple\" needs \"sovereign_key_trust\" "
                      "(the mirrors and timelines) in %s:%ui",
                      skcf->staple_file, skcf->staple_line);
        return NGX_ERROR;
    }

    st = ngx_pcalloc(cf->pool, sizeof(ngx_http_sk_staple_t));
    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (st == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    st->mcf = mcf;
    st->skcf = skcf;
    cln->handler = ngx_http_sk_staple_cleanup;
    cln->data = st;

    st->mode = skcf->staple_mode;
    st->ctx = ctx;
    st->file = skcf->staple_file;
    st->line = skcf->staple_line;

    st->trust = ngx_http_sk_trust_get(cf, mcf, &skcf->trust, st->file, st->line);
    if (st->trust == NULL) {
        return NGX_ERROR;
    }

    /* sovereign_key_staple_cache, else the carriers' cache, else the
     * default directory */
    spec = skcf->staple_cache.len ? &skcf->staple_cache
           : skcf->cache.len ? &skcf->cache : NULL;

    st->cache = (char *) (spec ? spec->data : (u_char *) SK_CACHE_DEFAULT_DIR);

    if (sk_staple_set_init(&st->set, names, n, &err) != 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign_key_staple: %s for the server in %s:%ui",
                      err.msg, cscf->file_name, cscf->line);
        return NGX_ERROR;
    }

    /* the cache only: no network at configuration time */
    cache = NULL;
    if (sk_cache_open(&cache, st->cache, 1000, &err) != 0
        && err.code != SK_ERR_UNAVAILABLE)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign_key_staple_cache: %s in %s:%ui", err.msg,
                      st->file, st->line);
        return NGX_ERROR;
    }

    if (sk_staple_set_refresh(&st->set, st->trust, cache, NULL, NULL,
                              ngx_time(), &err)
        < 0)
    {
        sk_cache_close(cache);
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign_key_staple: %s in %s:%ui", err.msg,
                      st->file, st->line);
        return NGX_ERROR;
    }

    sk_cache_close(cache);

    /* what the cache could not give, said before an earlier cycle's
     * staple may make up for it (a worker asks the mirrors soon) */
    for (i = 0; i < st->set.n; i++) {
        if (st->set.names[i].failed) {
            ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                          "sovereign_key_staple %s: %s",
                          st->set.names[i].name, st->set.names[i].why);
        }
    }

    if (ngx_http_sk_staple_last_good(st, cf->log) != NGX_OK) {
        return NGX_ERROR;
    }

    x = NULL;
    if (st->mode == NGX_HTTP_SK_STAPLE_CHAIN && st->set.buf != NULL
        && sk_staple_wrap(&x, st->set.buf, st->set.len, st->set.oldest,
                          st->set.oldest + st->trust->staple_max_age, &err)
           != 0)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "sovereign_key_staple: %s in %s:%ui", err.msg,
                      st->file, st->line);
        return NGX_ERROR;
    }

    if (ngx_http_sk_staple_serve(st, x, cf->log) != NGX_OK) {
        return NGX_ERROR;
    }

    stp = ngx_array_push(&mcf->staples);
    if (stp == NULL) {
        return NGX_ERROR;
    }

    *stp = st;
    skcf->staple = st;

#if (NGX_THREADS)

    if (mcf->thread_pool == NULL) {
        mcf->thread_pool = ngx_thread_pool_add(cf, NULL);
        if (mcf->thread_pool == NULL) {
            return NGX_ERROR;
        }
    }

#endif

    return NGX_OK;
}


static void
ngx_http_sk_staple_cleanup(void *data)
{
    ngx_http_sk_staple_t *st = data;

    sk_staple_set_free(&st->set);
    free(st->ext);
    X509_free(st->cert);
    X509_free(st->newcert);
}


/* Put x (NULL: none) in place of the staple certificate after each
 * certificate's chain; takes x. */
static ngx_int_t
ngx_http_sk_staple_chain(ngx_http_sk_staple_t *st, X509 *x, ngx_log_t *log)
{
    int              more, i;
    X509            *first;
    STACK_OF(X509)  *chain;

    first = NULL;

    for (more = SSL_CTX_set_current_cert(st->ctx, SSL_CERT_SET_FIRST);
         more == 1;
         more = SSL_CTX_set_current_cert(st->ctx, SSL_CERT_SET_NEXT))
    {
        if (SSL_CTX_get0_certificate(st->ctx) == NULL) {
            continue;
        }

        if (first == NULL) {
            first = SSL_CTX_get0_certificate(st->ctx);
        }

        chain = NULL;
        SSL_CTX_get0_chain_certs(st->ctx, &chain);

        for (i = 0; st->cert != NULL && chain != NULL
                    && i < sk_X509_num(chain); i++)
        {
            if (sk_X509_value(chain, i) == st->cert) {
                X509_free(sk_X509_delete(chain, i));
                break;
            }
        }

        if (x != NULL && SSL_CTX_add1_chain_cert(st->ctx, x) != 1) {
            ngx_ssl_error(NGX_LOG_ALERT, log, 0,
                          "SSL_CTX_add1_chain_cert() failed");
            X509_free(x);
            x = NULL;
        }
    }

    if (first != NULL) {
        SSL_CTX_select_current_cert(st->ctx, first);
    }

    ERR_clear_error();

    X509_free(st->cert);
    st->cert = x;

    return NGX_OK;
}


/* What the set holds becomes what is served (x: its certificate form). */
static ngx_int_t
ngx_http_sk_staple_serve(ngx_http_sk_staple_t *st, X509 *x, ngx_log_t *log)
{
    u_char             *ext;
    ngx_uint_t          i;
    sk_staple_name_t   *nm;

    ext = NULL;

    if (st->set.buf != NULL) {
        ext = malloc(st->set.len);
        if (ext == NULL) {
            X509_free(x);
            ngx_log_error(NGX_LOG_ALERT, log, 0,
                          "sovereign_key_staple: out of memory");
            return NGX_ERROR;
        }

        ngx_memcpy(ext, st->set.buf, st->set.len);
    }

    free(st->ext);
    st->ext = ext;
    st->ext_len = ext ? st->set.len : 0;
    st->valid = ext ? st->set.oldest + st->trust->staple_max_age : 0;

    for (i = 0; i < st->set.n; i++) {
        nm = &st->set.names[i];
        ngx_cpystrn((u_char *) st->info[i].name, (u_char *) nm->name,
                    sizeof(st->info[i].name));
        ngx_cpystrn((u_char *) st->info[i].from, (u_char *) nm->from,
                    sizeof(st->info[i].from));
        ngx_cpystrn((u_char *) st->info[i].why, (u_char *) nm->why,
                    sizeof(st->info[i].why));
        st->info[i].oldest = nm->s.buf ? nm->oldest : 0;
        st->info[i].last = nm->oldest;
    }

    if (st->mode == NGX_HTTP_SK_STAPLE_CHAIN) {
        return ngx_http_sk_staple_chain(st, x, log);
    }

    return NGX_OK;
}


/* Each name refreshed at now: its age and where it came from, or why
 * there is none.  What kept the names from renewing (the cause that says
 * most), or SK_STAPLE_RENEWED. */
static ngx_uint_t
ngx_http_sk_staple_log(ngx_http_sk_staple_t *st, ngx_log_t *log, int64_t now)
{
    ngx_uint_t         i, level, cause;
    sk_staple_name_t  *nm;

    cause = SK_STAPLE_RENEWED;

    for (i = 0; i < st->set.n; i++) {
        nm = &st->set.names[i];

        if (nm->tried != now) {
            continue;
        }

        level = nm->failed ? NGX_LOG_WARN : NGX_LOG_NOTICE;

        if (nm->failed && (ngx_uint_t) nm->cause > cause) {
            cause = nm->cause;
        }

        ngx_log_error(level, log, 0, "sovereign_key_staple %s: %s%s",
                      nm->name, nm->why,
                      st->ext == NULL ? "; sending no staple" : "");
    }

    return cause;
}


ngx_int_t
ngx_http_sk_staple_register(ngx_conf_t *cf, ngx_uint_t ctx_index)
{
    ngx_uint_t                  s;
    ngx_http_sk_srv_conf_t     *skcf;
    ngx_http_ssl_srv_conf_t    *sscf;
    ngx_http_core_srv_conf_t  **cscfp;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    cscfp = cmcf->servers.elts;

    /* every server's, so the extension a client sent survives the SNI
     * switch (OpenSSL copies the "received" mark between contexts that
     * both know the type) */
    for (s = 0; s < cmcf->servers.nelts; s++) {
        skcf = cscfp[s]->ctx->srv_conf[ctx_index];
        sscf = cscfp[s]->ctx->srv_conf[ngx_http_ssl_module.ctx_index];

        if (sscf->ssl.ctx == NULL) {
            continue;
        }

        if (SSL_CTX_add_custom_ext(sscf->ssl.ctx, SK_STAPLE_EXT_TYPE,
                                   NGX_HTTP_SK_STAPLE_CONTEXT,
                                   ngx_http_sk_staple_add, NULL, skcf,
                                   NULL, NULL)
            != 1)
        {
            ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0,
                          "SSL_CTX_add_custom_ext(0x%xi) failed for the "
                          "server in %s:%ui", (ngx_uint_t) SK_STAPLE_EXT_TYPE,
                          cscfp[s]->file_name, cscfp[s]->line);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* The ServerHello or EncryptedExtensions, for a client that asked (OpenSSL
 * calls it only then, with the context SNI chose: the request counts for
 * that server): the staple if there is one fit to serve; a resumed
 * session needs none.  The request carries nothing to read. */
static int
ngx_http_sk_staple_add(SSL *ssl, unsigned int type, unsigned int context,
    const unsigned char **out, size_t *outlen, X509 *x, size_t chainidx,
    int *al, void *arg)
{
    ngx_http_sk_srv_conf_t *skcf = arg;

    ngx_http_sk_staple_t  *st;

    ngx_http_sk_count(skcf->label, NGX_HTTP_SK_M_REQUESTED);

    st = skcf->staple;

    if (st == NULL || st->mode != NGX_HTTP_SK_STAPLE_EXTENSION
        || st->ext == NULL || ngx_time() >= st->valid
        || SSL_session_reused(ssl))
    {
        return 0;
    }

    *out = st->ext;
    *outlen = st->ext_len;

    ngx_http_sk_count(skcf->label, NGX_HTTP_SK_M_SENT);

    return 1;
}


#if (NGX_THREADS)

static void ngx_http_sk_staple_timer(ngx_event_t *ev);
static void ngx_http_sk_staple_task(void *data, ngx_log_t *log);
static void ngx_http_sk_staple_done(ngx_event_t *ev);


static void
ngx_http_sk_staple_schedule(ngx_http_sk_staple_t *st, time_t delay)
{
    ngx_add_timer(&st->timer, delay > 0 ? (ngx_msec_t) delay * 1000 : 1);
}


ngx_int_t
ngx_http_sk_staple_init_process(ngx_cycle_t *cycle,
    ngx_http_sk_main_conf_t *mcf)
{
    time_t                    now, delay;
    ngx_uint_t                i, k;
    ngx_http_sk_staple_t    **stp, *st;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    if (mcf == NULL || mcf->staples.nelts == 0) {
        return NGX_OK;
    }

    /* before any thread asks a mirror */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                      "sovereign_key_staple: curl_global_init() failed");
        return NGX_ERROR;
    }

    now = ngx_time();
    stp = mcf->staples.elts;

    for (i = 0; i < mcf->staples.nelts; i++) {
        st = stp[i];

        st->task = ngx_thread_task_alloc(cycle->pool, 0);
        if (st->task == NULL) {
            return NGX_ERROR;
        }

        st->task->ctx = st;
        st->task->handler = ngx_http_sk_staple_task;
        st->task->event.handler = ngx_http_sk_staple_done;
        st->task->event.data = st;
        st->task->event.log = cycle->log;

        st->timer.handler = ngx_http_sk_staple_timer;
        st->timer.data = st;
        st->timer.log = cycle->log;
        st->timer.cancelable = 1;

        /* at once for what configuration time could not find (it asks
         * no mirror), and workers a second apart: the first to refresh
         * puts the answer in the cache, where the others find it */
        delay = st->set.next - now;

        for (k = 0; k < st->set.n; k++) {
            if (st->set.names[k].failed) {
                delay = 0;
            }
        }

        ngx_http_sk_staple_schedule(st, delay + (time_t) ngx_worker);
    }

    return NGX_OK;
}


static void
ngx_http_sk_staple_timer(ngx_event_t *ev)
{
    ngx_http_sk_staple_t *st = ev->data;

    if (st->loading) {
        return;
    }

    st->loading = 1;

    if (ngx_thread_task_post(st->mcf->thread_pool, st->task) != NGX_OK) {
        st->loading = 0;
        ngx_http_sk_staple_schedule(st, st->trust->staple_retry);
    }
}


/* In a thread: the cache, then the mirrors, as libsk does it. */
static void
ngx_http_sk_staple_task(void *data, ngx_log_t *log)
{
    ngx_http_sk_staple_t *st = data;

    time_t             now;
    sk_err_t           err;
    sk_cache_t        *cache;
    sk_client_curl_t   curl = { 10000, 5000, NULL };

    (void) log;

    cache = NULL;
    if (sk_cache_open(&cache, st->cache, 1000, &err) != 0) {
        ngx_http_sk_count(st->skcf->label, NGX_HTTP_SK_M_CACHE_ERRORS);
        cache = NULL;
    }

    now = time(NULL);
    st->ran = now;
    st->rc = sk_staple_set_refresh(&st->set, st->trust, cache,
                                   sk_client_fetch_curl, &curl, now,
                                   &st->err);
    sk_cache_close(cache);

    st->newcert = NULL;

    if (st->rc > 0 && st->mode == NGX_HTTP_SK_STAPLE_CHAIN
        && st->set.buf != NULL
        && sk_staple_wrap(&st->newcert, st->set.buf, st->set.len,
                          st->set.oldest,
                          st->set.oldest + st->trust->staple_max_age,
                          &st->err)
           != 0)
    {
        st->rc = -1;
    }
}


/* Back on the event loop: swap the new staple in, log, come again. */
static void
ngx_http_sk_staple_done(ngx_event_t *ev)
{
    ngx_http_sk_staple_t *st = ev->data;

    X509        *x;
    ngx_uint_t   cause;

    st->loading = 0;

    if (st->rc < 0) {
        ngx_log_error(NGX_LOG_ERR, ev->log, 0,
                      "sovereign_key_staple: %s", st->err.msg);

    } else {
        x = st->newcert;
        st->newcert = NULL;

        if (st->rc > 0) {
            (void) ngx_http_sk_staple_serve(st, x, ev->log);

        } else {
            X509_free(x);
        }
    }

    cause = ngx_http_sk_staple_log(st, ev->log, st->ran);

    ngx_http_sk_count(st->skcf->label, NGX_HTTP_SK_M_REFRESH
                      + (st->rc < 0 ? SK_STAPLE_CAUSES : cause));

    ngx_http_sk_staple_schedule(st, st->rc < 0 ? st->trust->staple_retry
                                               : st->set.next - ngx_time());
}

#else

ngx_int_t
ngx_http_sk_staple_init_process(ngx_cycle_t *cycle,
    ngx_http_sk_main_conf_t *mcf)
{
    return NGX_OK;
}

#endif


size_t
ngx_http_sk_staple_status_size(ngx_http_sk_staple_t *st)
{
    if (st == NULL) {
        return 0;
    }

    return 256 + st->set.n * (2 * SK_NAME_MAX + 2 * SK_CLIENT_URL_MAX
                              + 6 * SK_STAPLE_WHY_MAX + 96);
}


/*
 * ,"staple":{"mode":M,"served":B,"bytes":N,"age":S|null,"valid_until":T|
 * null,"names":[{"name":N,"age":S|null,"from":U|null,"log":L}...]}
 */
u_char *
ngx_http_sk_staple_status(u_char *p, u_char *last, ngx_http_sk_staple_t *st)
{
    time_t                      now;
    ngx_uint_t                  i, served;
    ngx_http_sk_staple_info_t  *in;

    if (st == NULL) {
        return p;
    }

    now = ngx_time();
    served = st->ext != NULL && now < st->valid;

    p = ngx_slprintf(p, last, ",\"staple\":{\"mode\":\"%s\",\"served\":%s,",
                     st->mode == NGX_HTTP_SK_STAPLE_CHAIN ? "chain"
                                                          : "extension",
                     served ? "true" : "false");

    if (served) {
        p = ngx_slprintf(p, last,
                         "\"bytes\":%uz,\"age\":%T,\"valid_until\":%T,",
                         st->ext_len,
                         now - (st->valid - st->trust->staple_max_age),
                         st->valid);

    } else {
        p = ngx_slprintf(p, last,
                         "\"bytes\":0,\"age\":null,\"valid_until\":null,");
    }

    p = ngx_slprintf(p, last, "\"names\":[");

    for (i = 0; i < st->set.n; i++) {
        in = &st->info[i];

        p = ngx_slprintf(p, last, "%s{\"name\":", i ? "," : "");
        p = ngx_http_sk_json_str(p, last, in->name);

        if (in->oldest) {
            p = ngx_slprintf(p, last, ",\"age\":%T,\"from\":",
                             now - in->oldest);
            p = ngx_http_sk_json_str(p, last, in->from);

        } else {
            p = ngx_slprintf(p, last, ",\"age\":null,\"from\":null");
        }

        p = ngx_slprintf(p, last, ",\"log\":");
        p = ngx_http_sk_json_str(p, last, in->why);
        p = ngx_slprintf(p, last, "}");
    }

    return ngx_slprintf(p, last, "]}");
}


ngx_uint_t
ngx_http_sk_staple_nnames(ngx_http_sk_staple_t *st)
{
    return st->set.n;
}


const char *
ngx_http_sk_staple_name(ngx_http_sk_staple_t *st, ngx_uint_t k, time_t now,
    time_t *last, ngx_uint_t *served)
{
    ngx_http_sk_staple_info_t  *in;

    in = &st->info[k];

    if (last != NULL) {
        *last = in->last;
        *served = in->oldest != 0 && st->ext != NULL && now < st->valid
                  && now - in->oldest < st->trust->staple_max_age;
    }

    return st->set.names[k].name;
}


ngx_uint_t
ngx_http_sk_staple_in_chain(ngx_http_sk_staple_t *st)
{
    return st != NULL && st->mode == NGX_HTTP_SK_STAPLE_CHAIN
           && st->cert != NULL;
}


u_char *
ngx_http_sk_json_str(u_char *p, u_char *last, const char *s)
{
    if (s == NULL) {
        return ngx_slprintf(p, last, "null");
    }

    p = ngx_slprintf(p, last, "\"");

    for ( /* void */ ; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') {
            p = ngx_slprintf(p, last, "\\%c", *s);

        } else if ((u_char) *s < 0x20) {
            p = ngx_slprintf(p, last, "\\u%04xd", (ngx_uint_t) *s);

        } else {
            p = ngx_slprintf(p, last, "%c", *s);
        }
    }

    return ngx_slprintf(p, last, "\"");
}
