/*
 * skm_chain.c -- the half a milter cannot do in-protocol: keep the chain
 * files Postfix serves carrying the carrier certificate of their key.
 *
 * For each "ChainFile SOURCE OUTPUT": SOURCE is the key (optional) and
 * chain as issued, leaf first; OUTPUT is SOURCE plus the carrier that
 * certifies the leaf's key, found in the CarrierFiles or the KeyCache.
 * OUTPUT is replaced atomically and only when its content changes; a
 * carrier for another key, or an expired one, is never written: the last
 * good OUTPUT stays.  With StapleProof, the certificate carrying the
 * stapled proof for the carrier's name follows it (skm_staple.c).  After
 * a change, PostfixCommand runs and every Probe checks, over TLS, that
 * the served chain now carries the carrier.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <sk/cache.h>
#include <sk/carrier.h>
#include <sk/file.h>
#include <sk/key.h>
#include <sk/staple.h>

#include "skm.h"

#define SKM_CHAIN_MAX   (1024 * 1024)
#define SKM_PROBE_TRIES 20          /* 0.25 s apart: Postfix restarts smtpd */
#define SKM_PROBE_TIME  10          /* seconds for one probe, all steps */

static int skm_chain_one(const skm_conf_t *conf, const skm_chain_t *ch,
    sk_cache_t *cache, time_t now);
static int skm_leaf_spki(unsigned char **der, size_t *len, X509 *leaf);
static sk_carrier_t *skm_carrier_find(const skm_conf_t *conf,
    sk_cache_t *cache, const unsigned char *spki, size_t spki_len,
    time_t now, char *why, size_t whylen);
static int skm_probe_one(const skm_probe_t *p, char *res, size_t reslen);


int
skm_chain_refresh(const skm_conf_t *conf, time_t now)
{
    sk_cache_t  *cache;
    sk_err_t     err;
    size_t       i;
    int          changed, rc;

    skm_metrics_chains(conf);
    if (conf->nchains == 0) {
        return 0;
    }
    cache = NULL;
    if (conf->keycache != NULL
        && sk_cache_open(&cache, conf->keycache, (int) conf->lookupms, &err)
           != 0)
    {
        skm_log(LOG_WARNING, "KeyCache: %s", err.msg);   /* names it */
    }
    changed = 0;
    for (i = 0; i < conf->nchains; i++) {
        rc = skm_chain_one(conf, &conf->chains[i], cache, now);
        if (rc < 0) {
            changed = changed > 0 ? changed : -1;
        } else if (rc > 0) {
            changed = 1;
        }
    }
    sk_cache_close(cache);
    return changed;
}


/* 1 if OUTPUT was rewritten, 0 if it is current, -1 on failure. */
static int
skm_chain_one(const skm_conf_t *conf, const skm_chain_t *ch,
    sk_cache_t *cache, time_t now)
{
    char             *src, *old, *out, *pem, *spem, why[256];
    size_t            srclen, oldlen, outlen, pemlen, spkilen, spemlen;
    long              age;
    unsigned char    *spki;
    STACK_OF(X509)   *chain;
    sk_carrier_t     *car;
    sk_err_t          err;
    struct stat       st;
    int               rc, have_old;
    mode_t            mode;

    src = old = out = pem = spem = NULL;
    spemlen = 0;
    spki = NULL;
    chain = NULL;
    car = NULL;
    rc = -1;

    if (sk_file_read(&src, &srclen, ch->source, SKM_CHAIN_MAX, &err) != 0
        || sk_chain_parse_pem(&chain, src, srclen, &err) != 0)
    {
        skm_log(LOG_ERR, "ChainFile %s: %s", ch->source, err.msg);
        goto done;
    }
    if (skm_leaf_spki(&spki, &spkilen, sk_X509_value(chain, 0)) != 0) {
        skm_log(LOG_ERR, "ChainFile %s: cannot encode the leaf's key",
            ch->source);
        goto done;
    }
    have_old = stat(ch->output, &st) == 0;

    car = skm_carrier_find(conf, cache, spki, spkilen, now, why,
        sizeof(why));
    if (car != NULL && conf->stapleproof
        && skm_staple_pem(&spem, &spemlen, &age, conf, sk_carrier_name(car),
               now) < 0)
    {
        goto done;              /* the last good file stays */
    }
    if (car == NULL) {
        if (have_old) {
            skm_log(LOG_ERR, "ChainFile %s: %s; keeping %s", ch->source,
                why, ch->output);
            goto done;
        }
        skm_log(LOG_WARNING, "ChainFile %s: %s; writing %s without a "
            "carrier", ch->source, why, ch->output);
    } else {
        if (sk_carrier_not_after(car) - now < conf->expirywarn * 86400) {
            skm_log(LOG_WARNING, "ChainFile %s: the carrier expires in %ld "
                "days: publish a new one", ch->source,
                (long) ((sk_carrier_not_after(car) - now) / 86400));
        }
        if (sk_carrier_to_pem(&pem, &pemlen, car, &err) != 0) {
            skm_log(LOG_ERR, "ChainFile %s: %s", ch->source, err.msg);
            goto done;
        }
    }

    outlen = srclen + 1 + (pem != NULL ? pemlen : 0) + spemlen;
    out = malloc(outlen + 1);
    if (out == NULL) {
        goto done;
    }
    memcpy(out, src, srclen);
    outlen = srclen;
    if (outlen > 0 && out[outlen - 1] != '\n') {
        out[outlen++] = '\n';
    }
    if (pem != NULL) {
        memcpy(out + outlen, pem, pemlen);
        outlen += pemlen;
    }
    if (spem != NULL) {
        memcpy(out + outlen, spem, spemlen);
        outlen += spemlen;
    }

    if (have_old
        && sk_file_read(&old, &oldlen, ch->output, SKM_CHAIN_MAX, NULL) == 0
        && oldlen == outlen && memcmp(old, out, outlen) == 0)
    {
        rc = 0;
        goto done;
    }
    /* A private key inside: Postfix (root) reads it, nobody else may. */
    mode = strstr(src, "PRIVATE KEY-----") != NULL ? 0600 : 0644;
    if (sk_file_write_atomic(ch->output, out, outlen, mode, &err) != 0) {
        skm_log(LOG_ERR, "ChainFile %s: %s", ch->output, err.msg);
        goto done;
    }
    if (have_old && (st.st_uid != geteuid() || st.st_gid != getegid())
        && chown(ch->output, st.st_uid, st.st_gid) != 0)
    {
        skm_log(LOG_WARNING, "ChainFile %s: cannot keep its owner: %s",
            ch->output, strerror(errno));
    }
    if (spem != NULL) {
        skm_metrics_staple_sent();
        skm_log(LOG_INFO, "ChainFile %s: wrote %s with its carrier and a "
            "staple %ld s old", ch->source, ch->output, age);
    } else {
        skm_log(LOG_INFO, "ChainFile %s: wrote %s %s", ch->source,
            ch->output, car != NULL ? "with its carrier" : "without a "
            "carrier");
    }
    rc = 1;

done:
    if (rc >= 0 && car != NULL) {       /* what OUTPUT now carries */
        skm_metrics_carrier((size_t) (ch - conf->chains),
            sk_carrier_name(car), sk_carrier_not_after(car));
    }
    free(src);
    free(old);
    free(out);
    free(pem);
    free(spem);
    OPENSSL_free(spki);
    sk_carrier_free(car);
    sk_X509_pop_free(chain, X509_free);
    return rc;
}


static int
skm_leaf_spki(unsigned char **der, size_t *len, X509 *leaf)
{
    int  n;

    *der = NULL;
    n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(leaf), der);
    if (n <= 0) {
        return -1;
    }
    *len = (size_t) n;
    return 0;
}


/* 1 if c certifies spki and is valid at now; else why says what is not. */
static int
skm_carrier_fits(const sk_carrier_t *c, const unsigned char *spki,
    size_t spki_len, time_t now, char *why, size_t whylen, const char *from)
{
    const unsigned char  *s;
    size_t                slen;

    s = sk_carrier_subject_spki(c, &slen);
    if (s == NULL || slen != spki_len || memcmp(s, spki, slen) != 0) {
        snprintf(why, whylen, "refused the carrier in %s: it certifies "
            "another key", from);
        return 0;
    }
    if (sk_carrier_not_after(c) < now) {
        snprintf(why, whylen, "refused the carrier in %s: expired", from);
        return 0;
    }
    if (sk_carrier_not_before(c) > now) {
        snprintf(why, whylen, "refused the carrier in %s: not yet valid",
            from);
        return 0;
    }
    return 1;
}


/* The fitting carrier valid longest: CarrierFiles, then the KeyCache. */
static sk_carrier_t *
skm_carrier_find(const skm_conf_t *conf, sk_cache_t *cache,
    const unsigned char *spki, size_t spki_len, time_t now, char *why,
    size_t whylen)
{
    sk_carrier_t   **cs, *best, *c;
    unsigned char    h[SK_SHA256_BYTES];
    size_t           i, j, n;
    sk_err_t         err;

    best = NULL;
    snprintf(why, whylen, "no carrier for its key");
    for (i = 0; i < conf->carrierfiles.n; i++) {
        if (sk_carrier_load_pem(&cs, &n, conf->carrierfiles.v[i], &err)
            != 0)
        {
            snprintf(why, whylen, "CarrierFile %.200s", err.msg);
            continue;
        }
        for (j = 0; j < n; j++) {
            if (skm_carrier_fits(cs[j], spki, spki_len, now, why, whylen,
                    conf->carrierfiles.v[i])
                && (best == NULL
                    || sk_carrier_not_after(cs[j])
                       > sk_carrier_not_after(best)))
            {
                sk_carrier_free(best);
                best = cs[j];
            } else {
                sk_carrier_free(cs[j]);
            }
        }
        free(cs);
    }
    if (cache != NULL) {
        EVP_Digest(spki, spki_len, h, NULL, EVP_sha256(), NULL);
        if (skm_cache_carrier(&c, cache, h, &err) != 0) {
            if (err.code != SK_ERR_NOT_FOUND && best == NULL) {
                snprintf(why, whylen, "KeyCache: %.200s", err.msg);
            }
        } else if (skm_carrier_fits(c, spki, spki_len, now, why, whylen,
                       "the KeyCache")
                   && (best == NULL
                       || sk_carrier_not_after(c) > sk_carrier_not_after(best)))
        {
            sk_carrier_free(best);
            best = c;
        } else {
            sk_carrier_free(c);
        }
    }
    return best;
}


int
skm_chain_reload_postfix(const skm_conf_t *conf)
{
    pid_t  pid;
    int    status;

    pid = fork();
    if (pid < 0) {
        skm_log(LOG_ERR, "PostfixCommand: fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", conf->postfixcmd, (char *) NULL);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) { }
    skm_metrics_postfix_command(WIFEXITED(status)
        && WEXITSTATUS(status) == 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        skm_log(LOG_ERR, "PostfixCommand \"%s\" failed (status %d)",
            conf->postfixcmd, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    skm_log(LOG_INFO, "ran \"%s\"", conf->postfixcmd);
    return skm_probe_all(conf);
}


int
skm_probe_all(const skm_conf_t *conf)
{
    size_t  i;
    int     t, rc, bad;
    char    res[256];

    bad = 0;
    for (i = 0; i < conf->nprobes; i++) {
        rc = -1;
        for (t = 0; t < SKM_PROBE_TRIES && rc != 0; t++) {
            if (t > 0) {
                usleep(250000);
            }
            rc = skm_probe_one(&conf->probev[i], res, sizeof(res));
        }
        skm_log(rc == 0 ? LOG_INFO : LOG_ERR, "probe %s %s:%s: %s",
            conf->probev[i].starttls ? "starttls" : "tls",
            conf->probev[i].host, conf->probev[i].port, res);
        bad |= rc != 0;
    }
    return bad ? -1 : 0;
}


/* Read one SMTP reply (all its lines) within b; 0 if its code is code. */
static int
skm_smtp_reply(int fd, const char *code, skm_bound_t *b)
{
    char     buf[4096];
    size_t   len;
    ssize_t  n;
    char    *line, *nl;

    len = 0;
    for (;;) {
        if (skm_bound_wait(b, fd, POLLIN) != 0) {
            return -1;
        }
        n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        len += (size_t) n;
        buf[len] = '\0';
        /* complete when the last full line is "CODE " */
        for (line = buf; (nl = strstr(line, "\r\n")) != NULL; line = nl + 2) {
            if (nl - line >= 4 && line[3] == ' ') {
                return strncmp(line, code, 3) == 0 ? 0 : -1;
            }
        }
        if (len == sizeof(buf) - 1) {
            return -1;
        }
    }
}


/* Send a command within b. */
static int
skm_smtp_send(int fd, const char *cmd, skm_bound_t *b)
{
    size_t   len;
    ssize_t  n;

    len = strlen(cmd);
    while (len > 0) {
        if (skm_bound_wait(b, fd, POLLOUT) != 0) {
            return -1;
        }
        n = write(fd, cmd, len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        cmd += n;
        len -= (size_t) n;
    }
    return 0;
}


/* A non-blocking socket connected to host:port within b, or -1. */
static int
skm_tcp_connect(const char *host, const char *port, skm_bound_t *b)
{
    struct addrinfo   hints, *ai, *a;
    socklen_t         sl;
    int               fd, e;

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    skm_bound_resolver(b);
    if (getaddrinfo(host, port, &hints, &ai) != 0) {
        return -1;
    }
    fd = -1;
    for (a = ai; a != NULL && !skm_bound_over(b); a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK,
            a->ai_protocol);
        if (fd < 0) {
            continue;
        }
        e = 0;
        sl = sizeof(e);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0
            || (errno == EINPROGRESS
                && skm_bound_wait(b, fd, POLLOUT) == 0
                && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) == 0
                && e == 0))
        {
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}


/* SSL_connect on a non-blocking socket, within b. */
static int
skm_tls_connect(SSL *ssl, int fd, skm_bound_t *b)
{
    int  rc;

    for (;;) {
        rc = SSL_connect(ssl);
        if (rc == 1) {
            return 0;
        }
        switch (SSL_get_error(ssl, rc)) {
        case SSL_ERROR_WANT_READ:
            rc = skm_bound_wait(b, fd, POLLIN);
            break;
        case SSL_ERROR_WANT_WRITE:
            rc = skm_bound_wait(b, fd, POLLOUT);
            break;
        default:
            return -1;
        }
        if (rc != 0) {
            return -1;
        }
    }
}


int
skm_tls_chain(STACK_OF(X509) **out, const char *host, const char *port,
    int starttls, const char *sigalgs, unsigned char **staple, size_t *stlen,
    skm_bound_t *b, char *res, size_t reslen)
{
    const unsigned char  *data;
    SSL_CTX           *ctx;
    SSL               *ssl;
    STACK_OF(X509)    *chain;
    int                fd, i, plain;

    *out = NULL;
    ctx = NULL;
    ssl = NULL;
    plain = 0;
    fd = skm_tcp_connect(host, port, b);
    if (fd < 0) {
        snprintf(res, reslen, "cannot connect");
        goto done;
    }
    if (starttls
        && (skm_smtp_reply(fd, "220", b) != 0
            || skm_smtp_send(fd, "EHLO sk-milter.probe\r\n", b) != 0
            || skm_smtp_reply(fd, "250", b) != 0
            || skm_smtp_send(fd, "STARTTLS\r\n", b) != 0))
    {
        snprintf(res, reslen, "no SMTP greeting");
        goto done;
    }
    if (starttls && skm_smtp_reply(fd, "220", b) != 0) {
        snprintf(res, reslen, "STARTTLS refused");
        plain = !skm_bound_over(b);
        goto done;
    }
    ctx = SSL_CTX_new(TLS_client_method());
    if (ctx != NULL && sigalgs != NULL
        && SSL_CTX_set1_sigalgs_list(ctx, sigalgs) != 1)
    {
        snprintf(res, reslen, "bad signature algorithms \"%s\"", sigalgs);
        goto done;
    }
    if (staple != NULL) {
        *staple = NULL;
        *stlen = 0;
        if (ctx == NULL || sk_staple_client_init(ctx, 1, NULL) != 0) {
            snprintf(res, reslen, "cannot ask for the stapled proof");
            goto done;
        }
    }
    ssl = ctx != NULL ? SSL_new(ctx) : NULL;
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1
        || SSL_set_tlsext_host_name(ssl, host) != 1
        || skm_tls_connect(ssl, fd, b) != 0)
    {
        snprintf(res, reslen, "TLS handshake failed");
        goto done;
    }
    chain = SSL_get_peer_cert_chain(ssl);
    if (chain == NULL || sk_X509_num(chain) < 1) {
        snprintf(res, reslen, "no certificate");
        goto done;
    }
    *out = sk_X509_new_null();
    for (i = 0; *out != NULL && i < sk_X509_num(chain); i++) {
        if (!sk_X509_push(*out, sk_X509_value(chain, i))) {
            sk_X509_free(*out);
            *out = NULL;
            break;
        }
        X509_up_ref(sk_X509_value(chain, i));
    }
    if (*out == NULL) {
        snprintf(res, reslen, "out of memory");
        goto done;
    }
    if (staple != NULL && sk_staple_client_get0(ssl, &data, stlen)
        && (*staple = malloc(*stlen > 0 ? *stlen : 1)) != NULL)
    {
        memcpy(*staple, data, *stlen);
    }

done:
    if (skm_bound_over(b)) {
        (void) skm_bound_why(b, res, reslen);
    }
    if (ssl != NULL) {
        (void) SSL_shutdown(ssl);       /* non-blocking: no wait */
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    if (fd >= 0) {
        close(fd);
    }
    return *out != NULL ? 0 : plain ? -2 : -1;
}


static int
skm_probe_one(const skm_probe_t *p, char *res, size_t reslen)
{
    STACK_OF(X509)       *chain;
    sk_carrier_t         *car;
    unsigned char        *spki;
    const unsigned char  *cs;
    size_t                spkilen, cslen;
    skm_bound_t           b;
    sk_err_t              err;
    int                   rc;

    car = NULL;
    spki = NULL;
    rc = -1;
    skm_bound_init(&b, SKM_PROBE_TIME, -1);
    if (skm_tls_chain(&chain, p->host, p->port, p->starttls, NULL, NULL,
            NULL, &b, res, reslen)
        != 0)
    {
        skm_metrics_handshake("failed");
        return -1;
    }
    if (sk_carrier_find(&car, chain, &err) != 0) {
        skm_metrics_handshake("no_carrier");
        snprintf(res, reslen, "no carrier in the served chain");
        goto done;
    }
    cs = sk_carrier_subject_spki(car, &cslen);
    if (skm_leaf_spki(&spki, &spkilen, sk_X509_value(chain, 0)) != 0
        || cs == NULL || cslen != spkilen || memcmp(cs, spki, cslen) != 0)
    {
        skm_metrics_handshake("other_key");
        snprintf(res, reslen, "the served carrier certifies another key");
        goto done;
    }
    skm_metrics_handshake("carrier");
    snprintf(res, reslen, "carrier served for %s", sk_carrier_name(car));
    rc = 0;

done:
    OPENSSL_free(spki);
    sk_carrier_free(car);
    sk_X509_pop_free(chain, X509_free);
    return rc;
}
