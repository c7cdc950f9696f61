/*
 * carrier.c -- the cross-signature as a carrier certificate.
 *
 * Clients verify carriers on every handshake, so parsing does all the
 * work once: it keeps the DER, the location of the signed TBS bytes and of
 * the signature inside it, the subject SPKI, the extension's fields and
 * the validity as time_t.  Verification is then two memcmp()s and one
 * signature check over the cached TBS bytes; X509_verify() would re-encode
 * and re-fetch on each call.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <sk/carrier.h>
#include <sk/file.h>
#include <sk/name.h>
#include <sk/services.h>

#include "internal.h"

#define SK_CARRIER_VERSION   1
#define SK_CARRIER_MAX       (64 * 1024)      /* bytes of one DER carrier */
#define SK_CHAIN_MAX         (1024 * 1024)    /* bytes of a PEM chain */
#define SK_SERIAL_BYTES      16

struct sk_carrier_s {
    X509                *x509;
    unsigned char       *der;             /* OPENSSL_malloc()ed */
    size_t               der_len;
    const unsigned char *tbs;             /* inside der */
    size_t               tbs_len;
    const unsigned char *sig;             /* signature bits, inside der */
    size_t               sig_len;
    sk_key_alg_t         sig_alg;         /* the SK algorithm that signed */
    unsigned char       *spki;            /* subject SPKI, OPENSSL_malloc() */
    size_t               spki_len;
    unsigned char        sk_hash[SK_SHA256_BYTES];
    char                *name;
    char                *services;
    time_t               not_before;
    time_t               not_after;
};

/*
 * The signature AlgorithmIdentifier each SK algorithm produces, in DER:
 * one spelling each, so a byte comparison is the whole check.  RSA-PSS
 * names SHA-256, MGF1 with SHA-256 and a 32-byte salt, as key.c signs.
 */
static const unsigned char sk_alg_ed25519[] = {
    0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70
};
static const unsigned char sk_alg_p256[] = {
    0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02
};
static const unsigned char sk_alg_rsa_pss[] = {
    0x30, 0x41, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01,
    0x0a, 0x30, 0x34, 0xa0, 0x0f, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48,
    0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0xa1, 0x1c, 0x30, 0x1a,
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08, 0x30,
    0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01,
    0x05, 0x00, 0xa2, 0x03, 0x02, 0x01, 0x20
};

static const struct {
    sk_key_alg_t         alg;
    const unsigned char *der;
    size_t               len;
} sk_sig_algs[] = {
    { SK_KEY_ED25519, sk_alg_ed25519, sizeof(sk_alg_ed25519) },
    { SK_KEY_P256,    sk_alg_p256,    sizeof(sk_alg_p256) },
    { SK_KEY_RSA,     sk_alg_rsa_pss, sizeof(sk_alg_rsa_pss) },
};


/* sk_der_next: see internal.h. */
int
sk_der_next(const unsigned char **p, const unsigned char *end, int tag,
    int constructed, size_t *clen, const char *field, sk_err_t *err)
{
    const unsigned char *q = *p;
    long                 len;
    int                  t, cls, r;

    if (q >= end) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: missing", field);
    }
    r = ASN1_get_object(&q, &len, &t, &cls, (long) (end - q));
    if (r & 0x80) {
        ERR_clear_error();
        return sk_err_set(err, SK_ERR_FORMAT,
            "%s: bad DER tag or length", field);
    }
    if (r & 0x01) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "%s: indefinite length is not DER", field);
    }
    if (cls != V_ASN1_UNIVERSAL || t != tag
        || ((r & V_ASN1_CONSTRUCTED) != 0) != (constructed != 0))
    {
        return sk_err_set(err, SK_ERR_FORMAT,
            "%s: expected %s, found tag %d", field, ASN1_tag2str(tag), t);
    }
    *p = q;
    *clen = (size_t) len;
    return 0;
}


/* Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm,
 * signatureValue BIT STRING }: where each lies in c->der. */
static int
sk_carrier_locate(sk_carrier_t *c, sk_err_t *err)
{
    const unsigned char *p = c->der, *end = c->der + c->der_len, *start;
    size_t               len;
    size_t               i;

    if (sk_der_next(&p, end, V_ASN1_SEQUENCE, 1, &len, "certificate", err)
        != 0)
    {
        return -1;
    }
    if (len != (size_t) (end - p)) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "certificate: trailing bytes after the certificate");
    }

    start = p;
    if (sk_der_next(&p, end, V_ASN1_SEQUENCE, 1, &len, "tbsCertificate",
            err) != 0)
    {
        return -1;
    }
    c->tbs = start;
    c->tbs_len = (size_t) (p - start) + len;
    p += len;

    start = p;
    if (sk_der_next(&p, end, V_ASN1_SEQUENCE, 1, &len, "signatureAlgorithm",
            err) != 0)
    {
        return -1;
    }
    p += len;
    for (i = 0; i < sizeof(sk_sig_algs) / sizeof(sk_sig_algs[0]); i++) {
        if ((size_t) (p - start) == sk_sig_algs[i].len
            && memcmp(start, sk_sig_algs[i].der, sk_sig_algs[i].len) == 0)
        {
            break;
        }
    }
    if (i == sizeof(sk_sig_algs) / sizeof(sk_sig_algs[0])) {
        return sk_err_set(err, SK_ERR_FORMAT, "signatureAlgorithm: not "
            "Ed25519, ECDSA with SHA-256 or RSA-PSS with SHA-256");
    }
    c->sig_alg = sk_sig_algs[i].alg;

    if (sk_der_next(&p, end, V_ASN1_BIT_STRING, 0, &len, "signatureValue",
            err) != 0)
    {
        return -1;
    }
    if (len < 2 || p[0] != 0 || p + len != end) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "signatureValue: not a whole-byte signature ending the "
            "certificate");
    }
    c->sig = p + 1;
    c->sig_len = len - 1;
    return 0;
}


/* The extension's DER, as sk_carrier_create writes it and as the parser
 * demands it byte for byte. */
static int
sk_carrier_ext_encode(unsigned char **out, size_t *outlen,
    const unsigned char hash[SK_SHA256_BYTES], const char *services,
    sk_err_t *err)
{
    unsigned char *buf, *p;
    size_t         slen = strlen(services);
    int            inner, total;

    if (slen > SK_CARRIER_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "services: too long");
    }
    inner = 3 + ASN1_object_size(0, SK_SHA256_BYTES, V_ASN1_OCTET_STRING)
            + ASN1_object_size(0, (int) slen, V_ASN1_IA5STRING);
    total = ASN1_object_size(1, inner, V_ASN1_SEQUENCE);
    buf = OPENSSL_malloc((size_t) total);
    if (buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    p = buf;
    ASN1_put_object(&p, 1, inner, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
    ASN1_put_object(&p, 0, 1, V_ASN1_INTEGER, V_ASN1_UNIVERSAL);
    *p++ = SK_CARRIER_VERSION;
    ASN1_put_object(&p, 0, SK_SHA256_BYTES, V_ASN1_OCTET_STRING,
        V_ASN1_UNIVERSAL);
    memcpy(p, hash, SK_SHA256_BYTES);
    p += SK_SHA256_BYTES;
    ASN1_put_object(&p, 0, (int) slen, V_ASN1_IA5STRING, V_ASN1_UNIVERSAL);
    memcpy(p, services, slen);
    *out = buf;
    *outlen = (size_t) total;
    return 0;
}


static int
sk_carrier_check_services(const char *s, size_t len, sk_err_t *err)
{
    sk_services_t svcs;

    if (sk_services_parse(&svcs, s, len, err) != 0) {
        return sk_err_prefix(err, "services");
    }
    sk_services_free(&svcs);
    return 0;
}


static int
sk_carrier_ext_decode(sk_carrier_t *c, const unsigned char *der, size_t len,
    sk_err_t *err)
{
    const unsigned char *p = der, *end = der + len, *hash, *svc;
    unsigned char       *canon;
    size_t               clen, slen, canon_len;
    int                  same;

    if (sk_der_next(&p, end, V_ASN1_SEQUENCE, 1, &clen, "extension", err)
        != 0)
    {
        return -1;
    }
    if (clen != (size_t) (end - p)) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "extension: trailing bytes after the SEQUENCE");
    }
    if (sk_der_next(&p, end, V_ASN1_INTEGER, 0, &clen, "extension version",
            err) != 0)
    {
        return -1;
    }
    if (clen != 1 || p[0] != SK_CARRIER_VERSION) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "extension version: must be %d", SK_CARRIER_VERSION);
    }
    p += clen;
    if (sk_der_next(&p, end, V_ASN1_OCTET_STRING, 0, &clen,
            "extension skSpkiHash", err) != 0)
    {
        return -1;
    }
    if (clen != SK_SHA256_BYTES) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "extension skSpkiHash: %zu bytes, must be %d", clen,
            SK_SHA256_BYTES);
    }
    hash = p;
    p += clen;
    if (sk_der_next(&p, end, V_ASN1_IA5STRING, 0, &slen,
            "extension services", err) != 0)
    {
        return -1;
    }
    svc = p;
    p += slen;
    if (p != end) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "extension: trailing bytes after services");
    }
    if (sk_carrier_check_services((const char *) svc, slen, err) != 0) {
        return sk_err_prefix(err, "extension");
    }
    c->services = strndup((const char *) svc, slen);
    if (c->services == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    memcpy(c->sk_hash, hash, SK_SHA256_BYTES);

    /* Lengths above may have been non-minimal: one encoding only. */
    if (sk_carrier_ext_encode(&canon, &canon_len, c->sk_hash, c->services,
            err) != 0)
    {
        return -1;
    }
    same = canon_len == len && memcmp(canon, der, len) == 0;
    OPENSSL_free(canon);
    if (!same) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "extension: not in canonical DER");
    }
    return 0;
}


static int
sk_carrier_find_ext(sk_carrier_t *c, sk_err_t *err)
{
    X509_EXTENSION     *ext;
    ASN1_OBJECT        *oid;
    ASN1_OCTET_STRING  *val;
    int                 i, again;

    oid = OBJ_txt2obj(SK_CARRIER_EXT_OID, 1);
    if (oid == NULL) {
        return sk_err_crypto(err, "cannot make the extension OID");
    }
    i = X509_get_ext_by_OBJ(c->x509, oid, -1);
    again = i < 0 ? -1 : X509_get_ext_by_OBJ(c->x509, oid, i);
    ASN1_OBJECT_free(oid);
    if (i < 0) {
        return sk_err_set(err, SK_ERR_NO_EXTENSION, "certificate has no "
            "sovereign-key extension (%s)", SK_CARRIER_EXT_OID);
    }
    if (again >= 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "extension: present more than once");
    }
    ext = X509_get_ext(c->x509, i);
    if (X509_EXTENSION_get_critical(ext)) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "extension: marked critical (must be non-critical, so that "
            "clients without sovereign keys ignore it)");
    }
    val = X509_EXTENSION_get_data(ext);
    return sk_carrier_ext_decode(c, ASN1_STRING_get0_data(val),
        (size_t) ASN1_STRING_length(val), err);
}


static int
sk_carrier_time(time_t *out, const ASN1_TIME *t, const char *field,
    sk_err_t *err)
{
    struct tm tm;

    if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1) {
        ERR_clear_error();
        return sk_err_set(err, SK_ERR_FORMAT, "%s: not a valid time", field);
    }
    *out = timegm(&tm);
    return 0;
}


/* The first dNSName of the subjectAltName: the name the carrier is for. */
static int
sk_carrier_get_name(sk_carrier_t *c, sk_err_t *err)
{
    GENERAL_NAMES       *gens;
    GENERAL_NAME        *g;
    const unsigned char *s = NULL;
    int                  i, len = 0, crit;

    gens = X509_get_ext_d2i(c->x509, NID_subject_alt_name, &crit, NULL);
    for (i = 0; gens != NULL && i < sk_GENERAL_NAME_num(gens); i++) {
        g = sk_GENERAL_NAME_value(gens, i);
        if (g->type == GEN_DNS) {
            s = ASN1_STRING_get0_data(g->d.dNSName);
            len = ASN1_STRING_length(g->d.dNSName);
            break;
        }
    }
    if (s == NULL) {
        GENERAL_NAMES_free(gens);
        ERR_clear_error();
        return sk_err_set(err, SK_ERR_FORMAT,
            "subjectAltName: no dNSName (%s)",
            crit == -2 ? "extension repeated" : "the carrier names none");
    }
    if (sk_name_check((const char *) s, (size_t) len, err) != 0) {
        GENERAL_NAMES_free(gens);
        return sk_err_prefix(err, "subjectAltName dNSName");
    }
    c->name = strndup((const char *) s, (size_t) len);
    GENERAL_NAMES_free(gens);
    if (c->name == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    return 0;
}


/* Everything verification needs, computed once.  Takes ownership of x
 * and der (freed on failure). */
static int
sk_carrier_init(sk_carrier_t **out, X509 *x, unsigned char *der,
    size_t len, sk_err_t *err)
{
    const X509_ALGOR *alg;
    sk_carrier_t     *c;
    int               n;

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        X509_free(x);
        OPENSSL_free(der);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    c->x509 = x;
    c->der = der;
    c->der_len = len;

    if (sk_carrier_find_ext(c, err) != 0) {
        goto fail;
    }
    if (X509_get_version(x) != X509_VERSION_3) {
        sk_err_set(err, SK_ERR_FORMAT, "version: not an X.509 v3 "
            "certificate");
        goto fail;
    }
    if (sk_carrier_locate(c, err) != 0) {
        goto fail;
    }
    /* X509_verify insists on this too: the signed copy of the algorithm
     * must be the outer one. */
    X509_get0_signature(NULL, &alg, x);
    if (X509_ALGOR_cmp(alg, X509_get0_tbs_sigalg(x)) != 0) {
        sk_err_set(err, SK_ERR_FORMAT, "signature: tbsCertificate names "
            "another algorithm than signatureAlgorithm");
        goto fail;
    }
    n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &c->spki);
    if (n <= 0) {
        ERR_clear_error();
        sk_err_set(err, SK_ERR_FORMAT, "subjectPublicKeyInfo: unreadable");
        goto fail;
    }
    c->spki_len = (size_t) n;
    if (sk_carrier_get_name(c, err) != 0
        || sk_carrier_time(&c->not_before, X509_get0_notBefore(x),
               "notBefore", err) != 0
        || sk_carrier_time(&c->not_after, X509_get0_notAfter(x),
               "notAfter", err) != 0)
    {
        goto fail;
    }
    if (c->not_after < c->not_before) {
        sk_err_set(err, SK_ERR_FORMAT, "validity: notAfter before "
            "notBefore");
        goto fail;
    }
    *out = c;
    return 0;

fail:
    sk_carrier_free(c);
    return -1;
}


int
sk_carrier_from_der(sk_carrier_t **c, const unsigned char *der, size_t len,
    sk_err_t *err)
{
    const unsigned char *p = der;
    unsigned char       *copy;
    X509                *x;

    if (len == 0 || len > SK_CARRIER_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "certificate: %zu bytes (1 to %d)", len, SK_CARRIER_MAX);
    }
    x = d2i_X509(NULL, &p, (long) len);
    if (x == NULL) {
        ERR_clear_error();
        return sk_err_set(err, SK_ERR_FORMAT,
            "certificate: not a DER X.509 certificate");
    }
    if ((size_t) (p - der) != len) {
        X509_free(x);
        return sk_err_set(err, SK_ERR_FORMAT,
            "certificate: trailing bytes after the certificate");
    }
    copy = OPENSSL_memdup(der, len);
    if (copy == NULL) {
        X509_free(x);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    return sk_carrier_init(c, x, copy, len, err);
}


int
sk_carrier_from_x509(sk_carrier_t **c, X509 *x, sk_err_t *err)
{
    unsigned char *der = NULL;
    int            len;

    len = i2d_X509(x, &der);
    if (len <= 0) {
        return sk_err_crypto(err, "certificate: cannot encode");
    }
    if (len > SK_CARRIER_MAX) {
        OPENSSL_free(der);
        return sk_err_set(err, SK_ERR_FORMAT,
            "certificate: %d bytes (1 to %d)", len, SK_CARRIER_MAX);
    }
    if (X509_up_ref(x) != 1) {
        OPENSSL_free(der);
        return sk_err_crypto(err, "certificate: cannot reference");
    }
    return sk_carrier_init(c, x, der, (size_t) len, err);
}


/* Key identifier, RFC 5280's method 1: SHA-1 of the subjectPublicKey
 * bits, as `openssl x509 ... subjectKeyIdentifier=hash` computes it, so
 * the selfcert's SKID and the carriers' AKID match. */
static ASN1_OCTET_STRING *
sk_keyid(const sk_key_t *key, sk_err_t *err)
{
    const unsigned char *spki, *bits;
    X509_PUBKEY         *pub;
    ASN1_OCTET_STRING   *id;
    unsigned char        md[EVP_MAX_MD_SIZE];
    unsigned int         mdlen;
    size_t               len;
    int                  blen;

    spki = sk_key_get0_spki(key, &len);
    pub = d2i_X509_PUBKEY(NULL, &spki, (long) len);
    if (pub == NULL
        || X509_PUBKEY_get0_param(NULL, &bits, &blen, NULL, pub) != 1
        || EVP_Digest(bits, (size_t) blen, md, &mdlen, EVP_sha1(), NULL)
           != 1)
    {
        X509_PUBKEY_free(pub);
        sk_err_crypto(err, "cannot compute the key identifier");
        return NULL;
    }
    X509_PUBKEY_free(pub);
    id = ASN1_OCTET_STRING_new();
    if (id == NULL || ASN1_OCTET_STRING_set(id, md, (int) mdlen) != 1) {
        ASN1_OCTET_STRING_free(id);
        sk_err_crypto(err, "cannot compute the key identifier");
        return NULL;
    }
    return id;
}


/* The carriers' issuer DN (and the selfcert's subject): O + CN=name.  CN
 * holds at most 64 characters; a longer name is in the SAN only. */
static X509_NAME *
sk_cert_dn(const char *name, int with_o)
{
    X509_NAME *dn = X509_NAME_new();

    if (dn == NULL
        || (with_o && X509_NAME_add_entry_by_txt(dn, "O", MBSTRING_ASC,
                (const unsigned char *) SK_CARRIER_ISSUER_O, -1, -1, 0)
            != 1)
        || (strlen(name) <= 64 && X509_NAME_add_entry_by_txt(dn, "CN",
                MBSTRING_ASC, (const unsigned char *) name, -1, -1, 0)
            != 1))
    {
        X509_NAME_free(dn);
        return NULL;
    }
    return dn;
}


int
sk_cert_add_conf(X509 *x, int nid, const char *value, sk_err_t *err)
{
    X509V3_CTX       ctx;
    X509_EXTENSION  *ext;
    int              ok;

    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    ok = ext != NULL && X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    if (!ok) {
        return sk_err_crypto(err, "cannot add extension %s",
            OBJ_nid2sn(nid));
    }
    return 0;
}


int
sk_cert_set_serial(X509 *x, sk_err_t *err)
{
    unsigned char  serial[SK_SERIAL_BYTES];
    BIGNUM        *bn;
    int            ok;

    /* Positive and exactly 16 bytes: top bit clear, next bit set. */
    if (RAND_bytes(serial, sizeof(serial)) != 1) {
        return sk_err_crypto(err, "cannot make a serial number");
    }
    serial[0] = (serial[0] & 0x7f) | 0x40;
    bn = BN_bin2bn(serial, sizeof(serial), NULL);
    ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))
        != NULL;
    BN_free(bn);
    if (!ok) {
        return sk_err_crypto(err, "cannot set the serial number");
    }
    return 0;
}


/* A v3 certificate of subject's key issued by the SK's DN for name, not
 * yet signed. */
static X509 *
sk_cert_new(const sk_key_t *subject, const char *name, int self,
    time_t not_before, time_t not_after, sk_err_t *err)
{
    X509_NAME     *issuer = NULL, *subj = NULL;
    X509          *x;
    int            ok;

    if (sk_name_check(name, strlen(name), err) != 0) {
        sk_err_prefix(err, "name");
        return NULL;
    }
    if (not_after < not_before) {
        sk_err_set(err, SK_ERR_USAGE, "validity: not_after before "
            "not_before");
        return NULL;
    }
    x = X509_new();
    if (x == NULL || sk_cert_set_serial(x, err) != 0) {
        X509_free(x);
        return NULL;
    }
    issuer = sk_cert_dn(name, 1);
    subj = self ? issuer : sk_cert_dn(name, 0);
    ok = issuer != NULL && subj != NULL
        && X509_set_version(x, X509_VERSION_3) == 1
        && X509_set_issuer_name(x, issuer) == 1
        && X509_set_subject_name(x, subj) == 1
        && ASN1_TIME_set(X509_getm_notBefore(x), not_before) != NULL
        && ASN1_TIME_set(X509_getm_notAfter(x), not_after) != NULL
        && X509_set_pubkey(x, sk_key_get0_pkey(subject)) == 1;
    if (subj != issuer) {
        X509_NAME_free(subj);
    }
    X509_NAME_free(issuer);
    if (!ok) {
        X509_free(x);
        sk_err_crypto(err, "cannot build the certificate");
        return NULL;
    }
    return x;
}


/* Sign with the parameters architecture.md fixes: Ed25519 pure, ECDSA
 * with SHA-256, RSA-PSS with SHA-256 and a digest-sized salt. */
int
sk_cert_sign(X509 *x, const sk_key_t *sk, sk_err_t *err)
{
    EVP_MD_CTX *ctx;
    int         ok;

    if (!sk_key_has_private(sk)) {
        return sk_err_set(err, SK_ERR_USAGE,
            "signing needs the SK's private key");
    }
    ctx = sk_key_md_ctx(sk, 1);
    ok = ctx != NULL && X509_sign_ctx(x, ctx) > 0;
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        return sk_err_crypto(err, "cannot sign the certificate");
    }
    return 0;
}


int
sk_cert_add_keyid(X509 *x, const sk_key_t *key, int nid, sk_err_t *err)
{
    ASN1_OCTET_STRING *id;
    AUTHORITY_KEYID   *akid = NULL;
    int                ok;

    id = sk_keyid(key, err);
    if (id == NULL) {
        return -1;
    }
    if (nid == NID_subject_key_identifier) {
        ok = X509_add1_ext_i2d(x, nid, id, 0, X509V3_ADD_APPEND) == 1;
        ASN1_OCTET_STRING_free(id);
    } else {
        akid = AUTHORITY_KEYID_new();
        if (akid == NULL) {
            ASN1_OCTET_STRING_free(id);
            return sk_err_crypto(err, "out of memory");
        }
        akid->keyid = id;
        ok = X509_add1_ext_i2d(x, nid, akid, 0, X509V3_ADD_APPEND) == 1;
        AUTHORITY_KEYID_free(akid);
    }
    if (!ok) {
        return sk_err_crypto(err, "cannot add extension %s",
            OBJ_nid2sn(nid));
    }
    return 0;
}


static int
sk_cert_add_sk_ext(X509 *x, const sk_key_t *sk, const char *services,
    sk_err_t *err)
{
    unsigned char      hash[SK_SHA256_BYTES], *der;
    size_t             len;
    int                rc;

    if (sk_carrier_check_services(services, strlen(services), err) != 0) {
        return -1;
    }
    sk_key_spki_sha256(hash, sk);
    if (sk_carrier_ext_encode(&der, &len, hash, services, err) != 0) {
        return -1;
    }
    rc = sk_cert_add_ext_der(x, SK_CARRIER_EXT_OID, der, len, err);
    OPENSSL_free(der);
    return rc;
}


/* sk_cert_add_ext_der: see internal.h. */
int
sk_cert_add_ext_der(X509 *x, const char *oidtxt, const unsigned char *der,
    size_t len, sk_err_t *err)
{
    ASN1_OBJECT        *oid;
    ASN1_OCTET_STRING  *val;
    X509_EXTENSION     *ext = NULL;
    int                 ok;

    oid = OBJ_txt2obj(oidtxt, 1);
    val = ASN1_OCTET_STRING_new();
    ok = oid != NULL && val != NULL
        && ASN1_OCTET_STRING_set(val, der, (int) len) == 1
        && (ext = X509_EXTENSION_create_by_OBJ(NULL, oid, 0, val)) != NULL
        && X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    ASN1_OCTET_STRING_free(val);
    ASN1_OBJECT_free(oid);
    if (!ok) {
        return sk_err_crypto(err, "cannot add extension %s", oidtxt);
    }
    return 0;
}


int
sk_carrier_create(sk_carrier_t **c, const sk_key_t *sk,
    const sk_key_t *operational, const sk_carrier_params_t *params,
    sk_err_t *err)
{
    unsigned char *der = NULL;
    char          *san;
    X509          *x;
    int            len, rc = -1;

    x = sk_cert_new(operational, params->name, 0, params->not_before,
        params->not_after, err);
    if (x == NULL) {
        return -1;
    }
    san = malloc(strlen(params->name) + 5);
    if (san == NULL) {
        X509_free(x);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    sprintf(san, "DNS:%s", params->name);
    if (sk_cert_add_conf(x, NID_subject_alt_name, san, err) == 0
        && sk_cert_add_keyid(x, sk, NID_authority_key_identifier, err) == 0
        && sk_cert_add_sk_ext(x, sk, params->services, err) == 0
        && sk_cert_sign(x, sk, err) == 0)
    {
        /* Parse what a client will parse, not the object we built. */
        len = i2d_X509(x, &der);
        if (len <= 0) {
            sk_err_crypto(err, "cannot encode the carrier");
        } else {
            rc = sk_carrier_from_der(c, der, (size_t) len, err);
        }
    }
    OPENSSL_free(der);
    free(san);
    X509_free(x);
    return rc;
}


int
sk_carrier_sk_selfcert(X509 **cert, const sk_key_t *sk, const char *name,
    time_t not_before, time_t not_after, sk_err_t *err)
{
    X509 *x;

    x = sk_cert_new(sk, name, 1, not_before, not_after, err);
    if (x == NULL) {
        return -1;
    }
    if (sk_cert_add_conf(x, NID_basic_constraints, "critical,CA:TRUE", err)
            != 0
        || sk_cert_add_conf(x, NID_key_usage, "critical,keyCertSign", err)
            != 0
        || sk_cert_add_keyid(x, sk, NID_subject_key_identifier, err) != 0
        || sk_cert_sign(x, sk, err) != 0)
    {
        X509_free(x);
        return -1;
    }
    *cert = x;
    return 0;
}


int
sk_chain_parse_pem(STACK_OF(X509) **chain, const char *buf, size_t len,
    sk_err_t *err)
{
    STACK_OF(X509) *st;
    unsigned long   e;
    BIO            *bio;
    X509           *x;
    int             eof;

    if (len > SK_CHAIN_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "chain: more than %d bytes",
            SK_CHAIN_MAX);
    }
    bio = BIO_new_mem_buf(buf, (int) len);
    st = sk_X509_new_null();
    if (bio == NULL || st == NULL) {
        BIO_free(bio);
        sk_X509_free(st);
        return sk_err_crypto(err, "out of memory");
    }
    ERR_clear_error();
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        if (sk_X509_push(st, x) <= 0) {
            X509_free(x);
            BIO_free(bio);
            sk_X509_pop_free(st, X509_free);
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
    }
    BIO_free(bio);
    /* PEM_read_bio_X509 ends every read with "no start line": at the end
     * of the input that is success, anything else is a broken block. */
    e = ERR_peek_last_error();
    eof = ERR_GET_LIB(e) == ERR_LIB_PEM
        && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
    ERR_clear_error();
    if (eof && sk_X509_num(st) > 0) {
        *chain = st;
        return 0;
    }
    if (eof) {
        sk_err_set(err, SK_ERR_FORMAT, "no PEM certificate");
    } else {
        sk_err_set(err, SK_ERR_FORMAT, "certificate %d: malformed PEM or "
            "DER", sk_X509_num(st) + 1);
    }
    sk_X509_pop_free(st, X509_free);
    return -1;
}


int
sk_chain_load_pem(STACK_OF(X509) **chain, const char *path, sk_err_t *err)
{
    char   *buf;
    size_t  len;
    int     rc;

    if (sk_file_read(&buf, &len, path, SK_CHAIN_MAX, err) != 0) {
        return -1;
    }
    rc = sk_chain_parse_pem(chain, buf, len, err);
    free(buf);
    if (rc != 0) {
        return sk_err_prefix(err, "%s", path);
    }
    return 0;
}


int
sk_carrier_load_pem(sk_carrier_t ***cs, size_t *n, const char *path,
    sk_err_t *err)
{
    STACK_OF(X509)  *st;
    sk_carrier_t   **v;
    sk_err_t         e;
    size_t           k = 0;
    int              i, num;

    if (sk_chain_load_pem(&st, path, err) != 0) {
        return -1;
    }
    num = sk_X509_num(st);
    v = calloc((size_t) num, sizeof(*v));
    if (v == NULL) {
        sk_X509_pop_free(st, X509_free);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    for (i = 0; i < num; i++) {
        if (sk_carrier_from_x509(&v[k], sk_X509_value(st, i), &e) == 0) {
            k++;
        } else if (e.code != SK_ERR_NO_EXTENSION) {
            if (err != NULL) {
                *err = e;
            }
            sk_err_prefix(err, "%s: certificate %d", path, i + 1);
            goto fail;
        }
    }
    if (k == 0) {
        sk_err_set(err, SK_ERR_NOT_FOUND, "%s: no carrier certificate "
            "(%d without the sovereign-key extension)", path, num);
        goto fail;
    }
    sk_X509_pop_free(st, X509_free);
    *cs = v;
    *n = k;
    return 0;

fail:
    while (k > 0) {
        sk_carrier_free(v[--k]);
    }
    free(v);
    sk_X509_pop_free(st, X509_free);
    return -1;
}


int
sk_carrier_to_pem(char **pem, size_t *len, const sk_carrier_t *c,
    sk_err_t *err)
{
    BIO *bio;
    int  rc;

    bio = BIO_new(BIO_s_mem());
    if (bio == NULL || PEM_write_bio_X509(bio, c->x509) != 1) {
        BIO_free(bio);
        return sk_err_crypto(err, "cannot encode the carrier as PEM");
    }
    rc = sk_bio_to_str(pem, len, bio, err);
    BIO_free(bio);
    return rc;
}


const unsigned char *
sk_carrier_get0_der(const sk_carrier_t *c, size_t *len)
{
    *len = c->der_len;
    return c->der;
}


X509 *
sk_carrier_get0_x509(const sk_carrier_t *c)
{
    return c->x509;
}


const char *
sk_carrier_name(const sk_carrier_t *c)
{
    return c->name;
}


const char *
sk_carrier_services(const sk_carrier_t *c)
{
    return c->services;
}


const unsigned char *
sk_carrier_sk_hash(const sk_carrier_t *c)
{
    return c->sk_hash;
}


const unsigned char *
sk_carrier_subject_spki(const sk_carrier_t *c, size_t *len)
{
    *len = c->spki_len;
    return c->spki;
}


time_t
sk_carrier_not_before(const sk_carrier_t *c)
{
    return c->not_before;
}


time_t
sk_carrier_not_after(const sk_carrier_t *c)
{
    return c->not_after;
}


static void
sk_carrier_date(char out[32], time_t t)
{
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL
        || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    {
        snprintf(out, 32, "%lld", (long long) t);
    }
}


static void
sk_spki_fingerprint(char out[SK_FINGERPRINT_SIZE], const unsigned char *der,
    size_t len)
{
    unsigned char md[SK_SHA256_BYTES];

    if (EVP_Digest(der, len, md, NULL, EVP_sha256(), NULL) != 1) {
        ERR_clear_error();
        memset(md, 0, sizeof(md));
    }
    sk_fingerprint_format(out, md);
}


/* The order makes each code mean one thing: a carrier for another SK is
 * reported as such before its signature is tried, and only a carrier whose
 * signature holds can speak for which key it certifies and when. */
int
sk_carrier_verify(const sk_carrier_t *c, const sk_key_t *sk,
    const unsigned char *leaf_spki, size_t leaf_spki_len, time_t now,
    sk_err_t *err)
{
    unsigned char  hash[SK_SHA256_BYTES];
    char           want[SK_FINGERPRINT_SIZE], got[SK_FINGERPRINT_SIZE];
    char           date[32];
    sk_err_t       e;

    sk_key_spki_sha256(hash, sk);
    if (memcmp(hash, c->sk_hash, SK_SHA256_BYTES) != 0) {
        sk_fingerprint_format(got, c->sk_hash);
        sk_key_fingerprint(want, sk);
        return sk_err_set(err, SK_ERR_WRONG_SK, "carrier for %s: made for "
            "SK %s, not %s", c->name, got, want);
    }
    if (c->sig_alg != sk_key_alg(sk)) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "carrier for %s: signed "
            "with %s, but the SK is %s", c->name,
            sk_key_alg_name(c->sig_alg), sk_key_alg_name(sk_key_alg(sk)));
    }
    if (sk_key_verify(sk, c->sig, c->sig_len, c->tbs, c->tbs_len, &e) != 0)
    {
        if (e.code != SK_ERR_SIGNATURE) {
            if (err != NULL) {
                *err = e;
            }
            return -1;
        }
        sk_key_fingerprint(want, sk);
        return sk_err_set(err, SK_ERR_SIGNATURE, "carrier for %s: signature "
            "does not verify with SK %s (tampered)", c->name, want);
    }
    if (leaf_spki_len != c->spki_len
        || memcmp(leaf_spki, c->spki, leaf_spki_len) != 0)
    {
        sk_spki_fingerprint(got, c->spki, c->spki_len);
        sk_spki_fingerprint(want, leaf_spki, leaf_spki_len);
        return sk_err_set(err, SK_ERR_KEY_MISMATCH, "carrier for %s: "
            "certifies key %s, not the leaf's %s", c->name, got, want);
    }
    if (now < c->not_before) {
        sk_carrier_date(date, c->not_before);
        return sk_err_set(err, SK_ERR_NOT_YET_VALID,
            "carrier for %s: not valid before %s", c->name, date);
    }
    if (now > c->not_after) {
        sk_carrier_date(date, c->not_after);
        return sk_err_set(err, SK_ERR_EXPIRED,
            "carrier for %s: expired at %s", c->name, date);
    }
    return 0;
}


int
sk_carrier_find(sk_carrier_t **c, STACK_OF(X509) *chain, sk_err_t *err)
{
    sk_err_t e;
    int      i, n = chain != NULL ? sk_X509_num(chain) : 0;

    for (i = 0; i < n; i++) {
        if (sk_carrier_from_x509(c, sk_X509_value(chain, i), &e) == 0) {
            return 0;
        }
        if (e.code != SK_ERR_NO_EXTENSION) {
            if (err != NULL) {
                *err = e;
            }
            return sk_err_prefix(err, "chain certificate %d", i + 1);
        }
    }
    return sk_err_set(err, SK_ERR_NOT_FOUND, "no carrier certificate in "
        "the chain (%d certificate%s without the sovereign-key extension)",
        n, n == 1 ? "" : "s");
}


int
sk_carrier_verify_chain(STACK_OF(X509) *chain, const sk_key_t *sk,
    time_t now, sk_err_t *err)
{
    sk_carrier_t  *c;
    unsigned char *spki = NULL;
    int            len, rc;

    if (chain == NULL || sk_X509_num(chain) == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "empty certificate chain");
    }
    if (sk_carrier_find(&c, chain, err) != 0) {
        return -1;
    }
    len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(sk_X509_value(chain, 0)),
        &spki);
    if (len <= 0) {
        sk_carrier_free(c);
        return sk_err_crypto(err, "leaf certificate: cannot encode its "
            "public key");
    }
    rc = sk_carrier_verify(c, sk, spki, (size_t) len, now, err);
    OPENSSL_free(spki);
    sk_carrier_free(c);
    return rc;
}


void
sk_carrier_free(sk_carrier_t *c)
{
    if (c != NULL) {
        X509_free(c->x509);
        OPENSSL_free(c->der);
        OPENSSL_free(c->spki);
        free(c->name);
        free(c->services);
        free(c);
    }
}
