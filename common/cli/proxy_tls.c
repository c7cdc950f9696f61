/*
 * proxy_tls.c -- the proxy's three TLS contexts (proxy.h):
 *
 *   up_ctx     to the sites: the system's roots (or --cacert/--capath),
 *              host name checked, no session resumption (each check needs
 *              the certificates), no renegotiation (the check is made
 *              once, in the worker's handshake), asking for the staple;
 *              libsk's hook goes on each SSL (sk_tls_attach);
 *   probe_ctx  reads a browser's ClientHello and stops there: OpenSSL is
 *              the parser, and what the browser offers (its ALPN list)
 *              is known before the site is asked;
 *   srv_ctx    to the browsers: a certificate of the local CA for the
 *              name, and the protocol the site chose.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/tls1.h>

#include "proxy.h"

typedef struct {
    unsigned char  *alpn;
    size_t         *alpn_len;
    int             seen;
} cli_proxy_probe_t;

static int  cli_proxy_probe_idx = -1, cli_proxy_proto_idx = -1;


/* What the browser offers, then stop the handshake: the probe is done. */
static int
cli_proxy_probe_cb(SSL *ssl, int *al, void *arg)
{
    cli_proxy_probe_t    *p = SSL_get_ex_data(ssl, cli_proxy_probe_idx);
    const unsigned char  *ext;
    size_t                len;

    (void) al;
    (void) arg;
    if (p == NULL) {
        return SSL_CLIENT_HELLO_ERROR;
    }
    p->seen = 1;
    *p->alpn_len = 0;
    /* The extension is a 2-byte length and the list in wire form. */
    if (SSL_client_hello_get0_ext(ssl,
            TLSEXT_TYPE_application_layer_protocol_negotiation, &ext, &len)
        == 1 && len > 2 && (size_t) ((ext[0] << 8) | ext[1]) == len - 2
        && len - 2 <= CLI_PROXY_ALPN_MAX)
    {
        memcpy(p->alpn, ext + 2, len - 2);
        *p->alpn_len = len - 2;
    }
    return SSL_CLIENT_HELLO_RETRY;
}


int
cli_proxy_hello(cli_proxy_t *px, const unsigned char *data, size_t len,
    unsigned char *alpn, size_t *alpn_len)
{
    cli_proxy_probe_t  p = { alpn, alpn_len, 0 };
    SSL               *ssl;
    BIO               *rb, *wb;
    int                r, e;

    ssl = SSL_new(px->probe_ctx);
    rb = BIO_new_mem_buf(data, (int) len);
    wb = BIO_new(BIO_s_mem());
    if (ssl == NULL || rb == NULL || wb == NULL) {
        SSL_free(ssl);
        BIO_free(rb);
        BIO_free(wb);
        return -1;
    }
    /* An empty read is "more to come", not the end. */
    BIO_set_mem_eof_return(rb, -1);
    SSL_set_bio(ssl, rb, wb);
    SSL_set_ex_data(ssl, cli_proxy_probe_idx, &p);
    SSL_set_accept_state(ssl);
    r = SSL_do_handshake(ssl);
    e = SSL_get_error(ssl, r);
    SSL_free(ssl);
    ERR_clear_error();
    if (p.seen) {
        return 1;
    }
    return e == SSL_ERROR_WANT_READ && len < CLI_PROXY_HELLO_MAX ? 0 : -1;
}


/* The protocol the site chose, if the browser offers it; none else. */
static int
cli_proxy_alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
    const char  *proto = SSL_get_ex_data(ssl, cli_proxy_proto_idx);
    size_t       n = proto != NULL ? strlen(proto) : 0;
    unsigned     i;

    (void) arg;
    for (i = 0; n > 0 && i < inlen; i += 1 + in[i]) {
        if (in[i] == n && i + 1 + n <= inlen
            && memcmp(in + i + 1, proto, n) == 0)
        {
            *out = in + i + 1;
            *outlen = (unsigned char) n;
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_NOACK;
}


SSL *
cli_proxy_tls_server(cli_proxy_t *px, const char *name, const char *proto,
    sk_err_t *err)
{
    X509  *cert;
    SSL   *ssl;

    if (sk_mint_cert(&cert, px->mint, name, time(NULL), err) != 0) {
        return NULL;
    }
    ssl = SSL_new(px->srv_ctx);
    if (ssl == NULL || SSL_use_certificate(ssl, cert) != 1
        || SSL_use_PrivateKey(ssl, sk_mint_get0_key(px->mint)) != 1
        || SSL_set_ex_data(ssl, cli_proxy_proto_idx, (void *) proto) != 1)
    {
        SSL_free(ssl);
        sk_err_crypto(err, "proxy: cannot set up the browser's TLS");
        return NULL;
    }
    return ssl;
}


static SSL_CTX *
cli_proxy_ctx(const SSL_METHOD *method, sk_err_t *err)
{
    SSL_CTX  *ctx = SSL_CTX_new(method);

    if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        != 1)
    {
        SSL_CTX_free(ctx);
        sk_err_crypto(err, "proxy: cannot make a TLS context");
        return NULL;
    }
    /* A peer that closes without close_notify has still closed. */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF
        | SSL_OP_NO_RENEGOTIATION);
    return ctx;
}


int
cli_proxy_tls_init(cli_proxy_t *px, sk_err_t *err)
{
    if (cli_proxy_probe_idx < 0) {
        cli_proxy_probe_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL,
            NULL);
        cli_proxy_proto_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL,
            NULL);
    }
    px->up_ctx = cli_proxy_ctx(TLS_client_method(), err);
    px->probe_ctx = cli_proxy_ctx(TLS_server_method(), err);
    px->srv_ctx = cli_proxy_ctx(TLS_server_method(), err);
    if (px->up_ctx == NULL || px->probe_ctx == NULL || px->srv_ctx == NULL
        || cli_proxy_probe_idx < 0 || cli_proxy_proto_idx < 0)
    {
        return -1;
    }
    SSL_CTX_set_session_cache_mode(px->up_ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(px->up_ctx, SSL_OP_NO_TICKET);
    if (((px->cacert != NULL || px->capath != NULL)
         ? SSL_CTX_load_verify_locations(px->up_ctx, px->cacert, px->capath)
         : SSL_CTX_set_default_verify_paths(px->up_ctx)) != 1)
    {
        return sk_err_crypto(err, "proxy: cannot load the CA certificates%s"
            "%s", px->cacert != NULL ? " of " : "", px->cacert != NULL
            ? px->cacert : "");
    }
    if (sk_staple_client_init(px->up_ctx, 0, err) != 0) {
        return -1;
    }
    SSL_CTX_set_client_hello_cb(px->probe_ctx, cli_proxy_probe_cb, NULL);
    SSL_CTX_set_alpn_select_cb(px->srv_ctx, cli_proxy_alpn_cb, NULL);
    return 0;
}


void
cli_proxy_tls_free(cli_proxy_t *px)
{
    SSL_CTX_free(px->up_ctx);
    SSL_CTX_free(px->probe_ctx);
    SSL_CTX_free(px->srv_ctx);
    px->up_ctx = px->probe_ctx = px->srv_ctx = NULL;
}
