/*
 * client_staple_x509.c -- the stapled proof in OpenSSL's terms: the
 * certificate-wrapped form (docs/protocol.md "Stapled proof"), and the
 * client's side of TLS extension 0xFF53: an empty extension in the
 * ClientHello, the server's bytes kept with the SSL.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509v3.h>

#include <sk/staple.h>

#include "../internal.h"

#define SK_STAPLE_CERT_VERSION  1
#define SK_STAPLE_CERT_O        "Sovereign Key Staple"

/* What one SSL asked for and got (SSL ex_data). */
typedef struct {
    int             ask;
    int             got;
    unsigned char  *data;
    size_t          len;
} sk_staple_rx_t;

static CRYPTO_ONCE  sk_staple_once = CRYPTO_ONCE_STATIC_INIT;
static int          sk_staple_idx = -1, sk_staple_ctx_idx = -1;
static char         sk_staple_ask_all;      /* SSL_CTX ex_data mark */


/* SovereignKeyStaple ::= SEQUENCE { version INTEGER (1),
 *                                   staple OCTET STRING } */
static int
sk_staple_ext_encode(unsigned char **out, size_t *outlen,
    const unsigned char *staple, size_t len, sk_err_t *err)
{
    unsigned char  *buf, *p;
    int             inner, total;

    inner = 3 + ASN1_object_size(0, (int) len, V_ASN1_OCTET_STRING);
    total = ASN1_object_size(1, inner, V_ASN1_SEQUENCE);
    buf = OPENSSL_malloc((size_t) total);
    if (buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "staple: out of memory");
    }
    p = buf;
    ASN1_put_object(&p, 1, inner, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
    ASN1_put_object(&p, 0, 1, V_ASN1_INTEGER, V_ASN1_UNIVERSAL);
    *p++ = SK_STAPLE_CERT_VERSION;
    ASN1_put_object(&p, 0, (int) len, V_ASN1_OCTET_STRING, V_ASN1_UNIVERSAL);
    memcpy(p, staple, len);
    *out = buf;
    *outlen = (size_t) total;
    return 0;
}


static int
sk_staple_ext_decode(const unsigned char **staple, size_t *len,
    const unsigned char *der, size_t dlen, sk_err_t *err)
{
    const unsigned char  *p = der, *end = der + dlen;
    unsigned char        *canon;
    size_t                clen, canon_len;
    int                   same;

    if (sk_der_next(&p, end, V_ASN1_SEQUENCE, 1, &clen, "staple extension",
            err) != 0
        || sk_der_next(&p, end, V_ASN1_INTEGER, 0, &clen,
               "staple extension version", err) != 0)
    {
        return -1;
    }
    if (clen != 1 || p[0] != SK_STAPLE_CERT_VERSION) {
        return sk_err_set(err, SK_ERR_FORMAT, "staple extension version: "
            "must be %d", SK_STAPLE_CERT_VERSION);
    }
    p++;
    if (sk_der_next(&p, end, V_ASN1_OCTET_STRING, 0, &clen,
            "staple extension staple", err) != 0)
    {
        return -1;
    }
    if (clen != (size_t) (end - p)) {
        return sk_err_set(err, SK_ERR_FORMAT, "staple extension: trailing "
            "bytes");
    }
    if (clen > SK_STAPLE_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "staple extension: %zu bytes, "
            "at most %d", clen, SK_STAPLE_MAX);
    }
    /* Lengths above may have been non-minimal: one encoding only. */
    if (sk_staple_ext_encode(&canon, &canon_len, p, clen, err) != 0) {
        return -1;
    }
    same = canon_len == dlen && memcmp(canon, der, dlen) == 0;
    OPENSSL_free(canon);
    if (!same) {
        return sk_err_set(err, SK_ERR_FORMAT, "staple extension: not in "
            "canonical DER");
    }
    *staple = p;
    *len = clen;
    return 0;
}


/* SHA-256 of a label and the staple: the wrapping key's seed, the
 * serial number. */
static int
sk_staple_hash(unsigned char out[SK_SHA256_BYTES], const char *label,
    const unsigned char *staple, size_t len)
{
    EVP_MD_CTX  *md = EVP_MD_CTX_new();
    int          ok;

    ok = md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1
        && EVP_DigestUpdate(md, label, strlen(label) + 1) == 1
        && EVP_DigestUpdate(md, staple, len) == 1
        && EVP_DigestFinal_ex(md, out, NULL) == 1;
    EVP_MD_CTX_free(md);
    return ok ? 0 : -1;
}


static X509_NAME *
sk_staple_dn(const char *name)
{
    X509_NAME  *dn = X509_NAME_new();

    if (dn == NULL
        || X509_NAME_add_entry_by_txt(dn, "O", MBSTRING_ASC,
               (const unsigned char *) SK_STAPLE_CERT_O, -1, -1, 0) != 1
        || (strlen(name) <= 64 && X509_NAME_add_entry_by_txt(dn, "CN",
                MBSTRING_ASC, (const unsigned char *) name, -1, -1, 0) != 1))
    {
        X509_NAME_free(dn);
        return NULL;
    }
    return dn;
}


int
sk_staple_wrap(X509 **out, const unsigned char *staple, size_t len,
    time_t not_before, time_t not_after, sk_err_t *err)
{
    unsigned char   seed[SK_SHA256_BYTES], serial[SK_SHA256_BYTES], *der;
    size_t          dlen;
    sk_staple_t     s;
    X509_NAME      *dn = NULL;
    EVP_PKEY       *pkey = NULL;
    BIGNUM         *bn = NULL;
    X509           *x = NULL;
    int             ok, rc;

    *out = NULL;
    if (sk_staple_parse(&s, staple, len, err) != 0) {
        return -1;
    }
    if (not_after < not_before) {
        sk_staple_free(&s);
        return sk_err_set(err, SK_ERR_USAGE, "staple: not_after before "
            "not_before");
    }
    if (sk_staple_hash(seed, "sk staple key", staple, len) != 0
        || sk_staple_hash(serial, "sk staple serial", staple, len) != 0)
    {
        sk_staple_free(&s);
        return sk_err_crypto(err, "staple: cannot hash it");
    }
    /* Positive and exactly 16 bytes, as the carrier's. */
    serial[0] = (serial[0] & 0x7f) | 0x40;
    pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed,
        sizeof(seed));
    OPENSSL_cleanse(seed, sizeof(seed));
    x = X509_new();
    dn = sk_staple_dn(s.a[0].name);
    bn = BN_bin2bn(serial, 16, NULL);
    ok = pkey != NULL && x != NULL && dn != NULL && bn != NULL
        && X509_set_version(x, X509_VERSION_3) == 1
        && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL
        && X509_set_issuer_name(x, dn) == 1
        && X509_set_subject_name(x, dn) == 1
        && ASN1_TIME_set(X509_getm_notBefore(x), not_before) != NULL
        && ASN1_TIME_set(X509_getm_notAfter(x), not_after) != NULL
        && X509_set_pubkey(x, pkey) == 1;
    BN_free(bn);
    X509_NAME_free(dn);
    sk_staple_free(&s);
    if (!ok) {
        sk_err_crypto(err, "staple: cannot build the certificate");
        goto fail;
    }
    if (sk_staple_ext_encode(&der, &dlen, staple, len, err) != 0) {
        goto fail;
    }
    rc = sk_cert_add_ext_der(x, SK_STAPLE_CERT_OID, der, dlen, err);
    OPENSSL_free(der);
    if (rc != 0) {
        goto fail;
    }
    if (X509_sign(x, pkey, NULL) <= 0) {
        sk_err_crypto(err, "staple: cannot sign the certificate");
        goto fail;
    }
    EVP_PKEY_free(pkey);
    *out = x;
    return 0;

fail:
    EVP_PKEY_free(pkey);
    X509_free(x);
    return -1;
}


int
sk_staple_unwrap(unsigned char **staple, size_t *len, X509 *x,
    sk_err_t *err)
{
    const unsigned char  *p = NULL;
    X509_EXTENSION       *ext;
    ASN1_OBJECT          *oid;
    ASN1_OCTET_STRING    *val;
    sk_staple_t           s;
    size_t                n = 0;
    int                   i, again;

    *staple = NULL;
    *len = 0;
    oid = OBJ_txt2obj(SK_STAPLE_CERT_OID, 1);
    if (oid == NULL) {
        return sk_err_crypto(err, "staple: cannot make the extension OID");
    }
    i = X509_get_ext_by_OBJ(x, oid, -1);
    again = i < 0 ? -1 : X509_get_ext_by_OBJ(x, oid, i);
    ASN1_OBJECT_free(oid);
    if (i < 0) {
        return sk_err_set(err, SK_ERR_NO_EXTENSION, "certificate has no "
            "staple extension (%s)", SK_STAPLE_CERT_OID);
    }
    if (again >= 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "staple extension: present "
            "more than once");
    }
    ext = X509_get_ext(x, i);
    if (X509_EXTENSION_get_critical(ext)) {
        return sk_err_set(err, SK_ERR_FORMAT, "staple extension: marked "
            "critical (must be non-critical, so that other clients ignore "
            "it)");
    }
    val = X509_EXTENSION_get_data(ext);
    if (sk_staple_ext_decode(&p, &n, ASN1_STRING_get0_data(val),
            (size_t) ASN1_STRING_length(val), err) != 0
        || sk_staple_parse(&s, p, n, err) != 0)
    {
        return -1;
    }
    *staple = (unsigned char *) s.buf;      /* s's copy, NUL after it */
    *len = s.len;
    return 0;
}


int
sk_staple_find(unsigned char **staple, size_t *len, STACK_OF(X509) *chain,
    sk_err_t *err)
{
    sk_err_t  e;
    int       i, n = chain != NULL ? sk_X509_num(chain) : 0;

    for (i = 0; i < n; i++) {
        if (sk_staple_unwrap(staple, len, sk_X509_value(chain, i), &e) == 0) {
            return 0;
        }
        if (e.code != SK_ERR_NO_EXTENSION) {
            if (err != NULL) {
                *err = e;
            }
            return sk_err_prefix(err, "chain certificate %d", i + 1);
        }
    }
    return sk_err_set(err, SK_ERR_NOT_FOUND, "no staple certificate in the "
        "chain");
}


/* The client's side of the extension. */

static void
sk_staple_rx_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
    sk_staple_rx_t  *rx = ptr;

    (void) parent;
    (void) ad;
    (void) idx;
    (void) argl;
    (void) argp;
    if (rx != NULL) {
        free(rx->data);
        free(rx);
    }
}


static void
sk_staple_init_once(void)
{
    sk_staple_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL,
        sk_staple_rx_free);
    sk_staple_ctx_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}


static int
sk_staple_indexes(void)
{
    if (!CRYPTO_THREAD_run_once(&sk_staple_once, sk_staple_init_once)
        || sk_staple_idx < 0 || sk_staple_ctx_idx < 0)
    {
        return -1;
    }
    return 0;
}


static sk_staple_rx_t *
sk_staple_rx(const SSL *ssl)
{
    return sk_staple_indexes() == 0 ? SSL_get_ex_data(ssl, sk_staple_idx)
        : NULL;
}


/* The SSL's record, made for one whose context asks for all. */
static sk_staple_rx_t *
sk_staple_rx_make(SSL *ssl)
{
    sk_staple_rx_t  *rx = sk_staple_rx(ssl);

    if (rx != NULL || sk_staple_idx < 0) {
        return rx;
    }
    rx = calloc(1, sizeof(*rx));
    if (rx != NULL && !SSL_set_ex_data(ssl, sk_staple_idx, rx)) {
        free(rx);
        rx = NULL;
    }
    return rx;
}


/* The ClientHello: an empty extension, from an SSL that asks. */
static int
sk_staple_cli_add(SSL *ssl, unsigned int type, unsigned int context,
    const unsigned char **out, size_t *outlen, X509 *x, size_t chainidx,
    int *al, void *arg)
{
    sk_staple_rx_t  *rx = sk_staple_rx(ssl);

    (void) type;
    (void) context;
    (void) x;
    (void) chainidx;
    (void) al;
    (void) arg;
    if (rx == NULL && SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl),
            sk_staple_ctx_idx) == &sk_staple_ask_all)
    {
        rx = sk_staple_rx_make(ssl);
        if (rx != NULL) {
            rx->ask = 1;
        }
    }
    if (rx == NULL || !rx->ask) {
        return 0;
    }
    free(rx->data);             /* from an earlier handshake */
    rx->data = NULL;
    rx->len = 0;
    rx->got = 0;
    *out = NULL;
    *outlen = 0;
    return 1;
}


/* The server's answer: kept as it came; a bad one is judged with the
 * rest of the staple, so it never fails the handshake itself. */
static int
sk_staple_cli_parse(SSL *ssl, unsigned int type, unsigned int context,
    const unsigned char *in, size_t inlen, X509 *x, size_t chainidx,
    int *al, void *arg)
{
    sk_staple_rx_t  *rx = sk_staple_rx(ssl);

    (void) type;
    (void) context;
    (void) x;
    (void) chainidx;
    (void) arg;
    if (rx == NULL) {
        *al = SSL_AD_UNSUPPORTED_EXTENSION;
        return 0;
    }
    free(rx->data);
    rx->data = malloc(inlen > 0 ? inlen : 1);
    if (rx->data == NULL) {
        *al = SSL_AD_INTERNAL_ERROR;
        return 0;
    }
    memcpy(rx->data, in, inlen);
    rx->len = inlen;
    rx->got = 1;
    return 1;
}


int
sk_staple_client_init(SSL_CTX *ctx, int ask_all, sk_err_t *err)
{
    if (sk_staple_indexes() != 0) {
        return sk_err_crypto(err, "staple: cannot allocate ex_data indexes");
    }
    if (ask_all && !SSL_CTX_set_ex_data(ctx, sk_staple_ctx_idx,
            &sk_staple_ask_all))
    {
        return sk_err_crypto(err, "staple: cannot set ex_data");
    }
    if (SSL_CTX_has_client_custom_ext(ctx, SK_STAPLE_EXT_TYPE)) {
        return 0;
    }
    if (SSL_CTX_add_custom_ext(ctx, SK_STAPLE_EXT_TYPE,
            SSL_EXT_CLIENT_HELLO | SSL_EXT_TLS1_2_SERVER_HELLO
            | SSL_EXT_TLS1_3_ENCRYPTED_EXTENSIONS, sk_staple_cli_add, NULL,
            NULL, sk_staple_cli_parse, NULL) != 1)
    {
        return sk_err_crypto(err, "staple: cannot add TLS extension 0x%04x",
            SK_STAPLE_EXT_TYPE);
    }
    return 0;
}


int
sk_staple_client_ask(SSL *ssl, sk_err_t *err)
{
    sk_staple_rx_t  *rx;

    if (sk_staple_indexes() != 0) {
        return sk_err_crypto(err, "staple: cannot allocate ex_data indexes");
    }
    rx = sk_staple_rx_make(ssl);
    if (rx == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "staple: out of memory");
    }
    rx->ask = 1;
    return 0;
}


int
sk_staple_client_get0(const SSL *ssl, const unsigned char **data,
    size_t *len)
{
    sk_staple_rx_t  *rx = sk_staple_rx(ssl);

    if (rx == NULL || !rx->got) {
        *data = NULL;
        *len = 0;
        return 0;
    }
    *data = rx->data;
    *len = rx->len;
    return 1;
}
