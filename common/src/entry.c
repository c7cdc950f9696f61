/*
 * entry.c -- timeline entries in the draft's canonical text form.
 *
 * Every type is described by data, not code: a catalogue of fields (value
 * kind, whether "N/A" is allowed, which signatures cover it) and, per type,
 * the list of its fields in canonical (byte) order.  Parsing, formatting,
 * signing and checking all walk that list.  Values are kept as the exact
 * bytes that were parsed or set, so formatting a parsed entry gives back
 * its input byte for byte, and signatures are over text, never over a
 * re-encoding.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <sk/b64.h>
#include <sk/chain.h>
#include <sk/dnssec.h>
#include <sk/entry.h>
#include <sk/merkle.h>
#include <sk/name.h>
#include <sk/services.h>

#include "internal.h"

#define SK_ENTRY_FIELDS_MAX   15      /* Rebind has the most */
#define SK_ENTRY_REBINDERS_MAX 64     /* names in Rebinder-Names */
#define SK_ENTRY_QUOTE_MAX    40      /* of a bad field name, in messages */

typedef enum {
    SK_VAL_UINT = 0,        /* decimal, fits uint64 */
    SK_VAL_TIME,            /* decimal, fits int64 */
    SK_VAL_U16,             /* decimal, 0..65535 */
    SK_VAL_BOOL,            /* 0 or 1 */
    SK_VAL_SIG,             /* base64url, non-empty */
    SK_VAL_HASH,            /* base64url of 32 bytes */
    SK_VAL_KEY,             /* base64url DER SPKI of an accepted key */
    SK_VAL_KEY_TYPE,        /* ECC or RSA */
    SK_VAL_NAME,
    SK_VAL_NAMES,           /* "none" or names, comma-separated */
    SK_VAL_SERVICES,
    SK_VAL_CERT,            /* base64url DER certificate */
    SK_VAL_CERTS,           /* base64url DER certificates, comma-separated */
    SK_VAL_DNSSEC           /* base64url RFC 9102 chain (sk/dnssec.h) */
} sk_val_kind_t;

#define SK_COV(sig)  (1u << (sig))
#define SK_COV_TL    SK_COV(SK_SIG_TIMELINE)
#define SK_COV_ALL   (SK_COV(SK_SIG_TIMELINE) | SK_COV(SK_SIG_SK)              \
                      | SK_COV(SK_SIG_REBINDER) | SK_COV(SK_SIG_OPERATOR))

typedef struct {
    const char     *name;
    sk_val_kind_t   kind;
    int             na;         /* may hold "N/A" */
    int             sig;        /* the sk_sig_field_t it holds, or -1 */
    unsigned        covered;    /* SK_COV() of each signature covering it */
    int             evidence;   /* a Bind's evidence: exactly one is present,
                                   the others absent (no line at all) */
} sk_field_def_t;

/* Field ids, in byte order of their names. */
enum {
    SK_F_CA_CERT = 0,
    SK_F_CA_CERT_CHAIN,
    SK_F_CA_CERT_HASH,
    SK_F_CA_SERIAL,
    SK_F_DNSSEC_CHAIN,
    SK_F_INCLUDES_SUBDOMAINS,
    SK_F_INCORPORATED_HASH,
    SK_F_INCORPORATED_SN,
    SK_F_INCORPORATED_TID,
    SK_F_KEY,
    SK_F_KEY_TYPE,
    SK_F_LAST_SECURE_TIMESTAMP,
    SK_F_MAP_HASH,
    SK_F_MAP_NAMES,
    SK_F_NAME,
    SK_F_OPERATOR_SIGNATURE,
    SK_F_REBINDER_NAME,
    SK_F_REBINDER_NAMES,
    SK_F_REBINDER_SIGNATURE,
    SK_F_SK_SIGNATURE,
    SK_F_SN,
    SK_F_SERVICES,
    SK_F_SIGNATURE,
    SK_F_TID,
    SK_F_TIMESTAMP,
    SK_F_NFIELDS
};

/*
 * The timeline's Signature covers everything but itself.  The stamp (SN,
 * TID, Timestamp, Signature) is added after the registrant signs, so no
 * other signature covers it; SK-Signature is made before the inheritor's
 * Rebinder-Signature, which covers it.
 */
static const sk_field_def_t sk_fields[SK_F_NFIELDS] = {
    [SK_F_CA_CERT] =
        { "CA-Cert", SK_VAL_CERT, 0, -1, SK_COV_ALL },
    [SK_F_CA_CERT_CHAIN] =
        { "CA-Cert-Chain", SK_VAL_CERTS, 0, -1, SK_COV_ALL, 1 },
    [SK_F_CA_CERT_HASH] =
        { "CA-Cert-Hash", SK_VAL_HASH, 0, -1, SK_COV_ALL },
    [SK_F_CA_SERIAL] =
        { "CA-Serial", SK_VAL_U16, 0, -1, SK_COV_ALL },
    [SK_F_DNSSEC_CHAIN] =
        { "DNSSEC-Chain", SK_VAL_DNSSEC, 0, -1, SK_COV_ALL, 1 },
    [SK_F_INCLUDES_SUBDOMAINS] =
        { "Includes-Subdomains", SK_VAL_BOOL, 0, -1, SK_COV_ALL },
    [SK_F_INCORPORATED_HASH] =
        { "Incorporated-Hash", SK_VAL_HASH, 0, -1, SK_COV_ALL },
    [SK_F_INCORPORATED_SN] =
        { "Incorporated-SN", SK_VAL_UINT, 0, -1, SK_COV_ALL },
    [SK_F_INCORPORATED_TID] =
        { "Incorporated-TID", SK_VAL_UINT, 0, -1, SK_COV_ALL },
    [SK_F_KEY] =
        { "Key", SK_VAL_KEY, 0, -1, SK_COV_ALL },
    [SK_F_KEY_TYPE] =
        { "Key-Type", SK_VAL_KEY_TYPE, 0, -1, SK_COV_ALL },
    [SK_F_LAST_SECURE_TIMESTAMP] =
        { "Last-Secure-Timestamp", SK_VAL_TIME, 0, -1, SK_COV_ALL },
    [SK_F_MAP_HASH] =
        { "Map-Hash", SK_VAL_HASH, 0, -1, SK_COV_ALL },
    [SK_F_MAP_NAMES] =
        { "Map-Names", SK_VAL_UINT, 0, -1, SK_COV_ALL },
    [SK_F_NAME] =
        { "Name", SK_VAL_NAME, 0, -1, SK_COV_ALL },
    [SK_F_OPERATOR_SIGNATURE] =
        { "Operator-Signature", SK_VAL_SIG, 1, SK_SIG_OPERATOR, SK_COV_TL },
    [SK_F_REBINDER_NAME] =
        { "Rebinder-Name", SK_VAL_NAME, 0, -1, SK_COV_ALL },
    [SK_F_REBINDER_NAMES] =
        { "Rebinder-Names", SK_VAL_NAMES, 0, -1, SK_COV_ALL },
    [SK_F_REBINDER_SIGNATURE] =
        { "Rebinder-Signature", SK_VAL_SIG, 1, SK_SIG_REBINDER, SK_COV_TL },
    [SK_F_SK_SIGNATURE] =
        { "SK-Signature", SK_VAL_SIG, 1, SK_SIG_SK,
          SK_COV_TL | SK_COV(SK_SIG_REBINDER) },
    [SK_F_SN] =
        { "SN", SK_VAL_UINT, 1, -1, SK_COV_TL },
    [SK_F_SERVICES] =
        { "Services", SK_VAL_SERVICES, 0, -1, SK_COV_ALL },
    [SK_F_SIGNATURE] =
        { "Signature", SK_VAL_SIG, 1, SK_SIG_TIMELINE, 0 },
    [SK_F_TID] =
        { "TID", SK_VAL_UINT, 1, -1, SK_COV_TL },
    [SK_F_TIMESTAMP] =
        { "Timestamp", SK_VAL_TIME, 1, -1, SK_COV_TL },
};

typedef struct {
    const char     *name;
    size_t          nfields;
    unsigned char   fields[SK_ENTRY_FIELDS_MAX];   /* canonical order */
} sk_entry_schema_t;

static const sk_entry_schema_t sk_schemas[SK_ENTRY_NTYPES] = {
    [SK_ENTRY_BIND] = { "Bind", 13, {
        SK_F_CA_CERT_CHAIN, SK_F_DNSSEC_CHAIN, SK_F_INCLUDES_SUBDOMAINS,
        SK_F_KEY,
        SK_F_KEY_TYPE, SK_F_NAME, SK_F_REBINDER_NAMES, SK_F_SK_SIGNATURE,
        SK_F_SN, SK_F_SERVICES, SK_F_SIGNATURE, SK_F_TID, SK_F_TIMESTAMP } },
    [SK_ENTRY_UNBIND] = { "Unbind", 7, {
        SK_F_LAST_SECURE_TIMESTAMP, SK_F_NAME, SK_F_SK_SIGNATURE, SK_F_SN,
        SK_F_SIGNATURE, SK_F_TID, SK_F_TIMESTAMP } },
    [SK_ENTRY_REBIND] = { "Rebind", 15, {
        SK_F_CA_CERT_CHAIN, SK_F_DNSSEC_CHAIN, SK_F_INCLUDES_SUBDOMAINS,
        SK_F_KEY,
        SK_F_KEY_TYPE, SK_F_NAME, SK_F_REBINDER_NAME, SK_F_REBINDER_NAMES,
        SK_F_REBINDER_SIGNATURE, SK_F_SK_SIGNATURE, SK_F_SN, SK_F_SERVICES,
        SK_F_SIGNATURE, SK_F_TID, SK_F_TIMESTAMP } },
    [SK_ENTRY_CHANGE_SERVICES] = { "Change-Services", 7, {
        SK_F_NAME, SK_F_SK_SIGNATURE, SK_F_SN, SK_F_SERVICES,
        SK_F_SIGNATURE, SK_F_TID, SK_F_TIMESTAMP } },
    [SK_ENTRY_ADD_ROOT_CA] = { "Add-Root-CA", 7, {
        SK_F_CA_CERT, SK_F_CA_SERIAL, SK_F_OPERATOR_SIGNATURE, SK_F_SN,
        SK_F_SIGNATURE, SK_F_TID, SK_F_TIMESTAMP } },
    [SK_ENTRY_REMOVE_ROOT_CA] = { "Remove-Root-CA", 7, {
        SK_F_CA_CERT_HASH, SK_F_CA_SERIAL, SK_F_OPERATOR_SIGNATURE, SK_F_SN,
        SK_F_SIGNATURE, SK_F_TID, SK_F_TIMESTAMP } },
    [SK_ENTRY_INCORPORATE] = { "Incorporate", 7, {
        SK_F_INCORPORATED_HASH, SK_F_INCORPORATED_SN, SK_F_INCORPORATED_TID,
        SK_F_SN, SK_F_SIGNATURE, SK_F_TID, SK_F_TIMESTAMP } },
    [SK_ENTRY_MAP_ROOT] = { "Map-Root", 6, {
        SK_F_MAP_HASH, SK_F_MAP_NAMES, SK_F_SN, SK_F_SIGNATURE, SK_F_TID,
        SK_F_TIMESTAMP } },
};

struct sk_entry_s {
    sk_entry_type_t   type;
    char             *values[SK_ENTRY_FIELDS_MAX];  /* NULL: "N/A", or
                                                       an absent evidence
                                                       field */
    STACK_OF(X509)   *chain;    /* CA-Cert-Chain, as decoded */
    sk_key_t         *key;      /* Key, as decoded */
};

/* What checking a value decoded, kept with the entry so that no one
 * decodes it again: a chain's certificates, a Key.  defer: the parser's
 * call, which decodes a chain later (sk_entry_decode_chain). */
typedef struct {
    STACK_OF(X509)   *chain;
    sk_key_t         *key;
    int               defer;
} sk_entry_decoded_t;

/* Reading canonical text line by line. */
typedef struct {
    const char  *buf;
    size_t       len;
    size_t       off;
    size_t       line;          /* number of the line at off, from 1 */
} sk_entry_reader_t;


static const sk_field_def_t *
sk_entry_def(const sk_entry_t *e, size_t pos)
{
    return &sk_fields[sk_schemas[e->type].fields[pos]];
}


/* Position of field id in e's type, or -1. */
static int
sk_entry_pos(const sk_entry_t *e, int id)
{
    const sk_entry_schema_t *sc = &sk_schemas[e->type];
    size_t                   i;

    for (i = 0; i < sc->nfields; i++) {
        if (sc->fields[i] == id) {
            return (int) i;
        }
    }
    return -1;
}


/* Position of the field called name[0..len) in e's type, or -1. */
static int
sk_entry_pos_by_name(const sk_entry_t *e, const char *name, size_t len)
{
    const sk_entry_schema_t *sc = &sk_schemas[e->type];
    const char              *f;
    size_t                   i;

    for (i = 0; i < sc->nfields; i++) {
        f = sk_fields[sc->fields[i]].name;
        if (strlen(f) == len && memcmp(f, name, len) == 0) {
            return (int) i;
        }
    }
    return -1;
}


/* Position of the field holding signature which, or -1. */
static int
sk_entry_sig_pos(const sk_entry_t *e, sk_sig_field_t which)
{
    size_t  i;

    for (i = 0; i < sk_schemas[e->type].nfields; i++) {
        if (sk_entry_def(e, i)->sig == (int) which) {
            return (int) i;
        }
    }
    return -1;
}


/* Value of field id, NULL if "N/A" or absent from the type. */
static const char *
sk_entry_value(const sk_entry_t *e, int id)
{
    int  pos = sk_entry_pos(e, id);

    return pos < 0 ? NULL : e->values[pos];
}


/* Values and field names are printable ASCII; nothing else is ever said. */
static int
sk_entry_check_chars(const char *s, size_t len, sk_err_t *err)
{
    unsigned char  c;
    size_t         i;

    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];
        if (c == '\r') {
            return sk_err_set(err, SK_ERR_FORMAT, "character %zu is a CR "
                "(lines end in a bare \\n)", i + 1);
        }
        if (c >= 0x80) {
            return sk_err_set(err, SK_ERR_FORMAT, "character %zu (0x%02x) "
                "is not 7-bit ASCII", i + 1, c);
        }
        if (c < 0x20 || c == 0x7f) {
            return sk_err_set(err, SK_ERR_FORMAT, "character %zu (0x%02x) "
                "is a control character", i + 1, c);
        }
    }
    return 0;
}


/* Offset of the first ": " in s[0..len), or -1. */
static long
sk_entry_find_sep(const char *s, size_t len)
{
    size_t  i;

    for (i = 0; i + 1 < len; i++) {
        if (s[i] == ':' && s[i + 1] == ' ') {
            return (long) i;
        }
    }
    return -1;
}


static int
sk_entry_parse_uint(uint64_t *out, const char *s, size_t len, uint64_t max,
    sk_err_t *err)
{
    uint64_t  v = 0;
    size_t    i;
    unsigned  d;

    if (len == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "empty (want a number)");
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return sk_err_set(err, SK_ERR_FORMAT, "character %zu is not a "
                "decimal digit", i + 1);
        }
    }
    if (len > 1 && s[0] == '0') {
        return sk_err_set(err, SK_ERR_FORMAT, "leading zero");
    }
    for (i = 0; i < len; i++) {
        d = (unsigned) (s[i] - '0');
        if (v > (max - d) / 10) {
            return sk_err_set(err, SK_ERR_FORMAT, "larger than %llu",
                (unsigned long long) max);
        }
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}


/* Non-empty strict base64url; *out is malloc()ed. */
static int
sk_entry_b64(unsigned char **out, size_t *n, const char *s, size_t len,
    sk_err_t *err)
{
    if (len == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "empty (want base64url)");
    }
    return sk_b64_decode(out, n, s, len, err);
}


static int
sk_entry_check_sig(const char *s, size_t len, sk_err_t *err)
{
    unsigned char  *raw;
    size_t          n;

    if (sk_entry_b64(&raw, &n, s, len, err) != 0) {
        return -1;
    }
    free(raw);
    return 0;
}


static int
sk_entry_check_hash(const char *s, size_t len, sk_err_t *err)
{
    unsigned char  *raw;
    size_t          n;

    if (sk_entry_b64(&raw, &n, s, len, err) != 0) {
        return -1;
    }
    free(raw);
    if (n != SK_SHA256_BYTES) {
        return sk_err_set(err, SK_ERR_FORMAT, "%zu bytes, not the %d of a "
            "SHA-256", n, SK_SHA256_BYTES);
    }
    return 0;
}


/* DNSSEC-Chain: the chain's bytes within SK_DNSSEC_CHAIN_MAX; their
 * wire form is judged with the chain (sk_dnssec_check_entry). */
static int
sk_entry_check_dnssec(const char *s, size_t len, sk_err_t *err)
{
    unsigned char  *raw;
    size_t          n;

    if (sk_entry_b64(&raw, &n, s, len, err) != 0) {
        return -1;
    }
    free(raw);
    if (n > SK_DNSSEC_CHAIN_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "chain too big: %zu bytes, "
            "more than %d", n, SK_DNSSEC_CHAIN_MAX);
    }
    return 0;
}


/* OpenSSL failing to decode what we were given is bad input, not a
 * crypto failure: keep its reason, report SK_ERR_FORMAT. */
static int
sk_entry_bad_input(sk_err_t *err)
{
    if (err != NULL && err->code == SK_ERR_CRYPTO) {
        err->code = SK_ERR_FORMAT;
    }
    return -1;
}


static int
sk_entry_decode_key(sk_key_t **key, const char *s, size_t len,
    sk_err_t *err)
{
    unsigned char  *der;
    size_t          n;
    int             rc;

    if (sk_entry_b64(&der, &n, s, len, err) != 0) {
        return -1;
    }
    rc = sk_key_from_spki(key, der, n, err);
    free(der);
    return rc == 0 ? 0 : sk_entry_bad_input(err);
}


/* CA-Cert: one certificate (a root), decoded to be checked. */
static int
sk_entry_check_cert(const char *s, size_t len, sk_err_t *err)
{
    const unsigned char  *p;
    unsigned char        *der;
    size_t                n;
    X509                 *x;

    if (sk_entry_b64(&der, &n, s, len, err) != 0) {
        return -1;
    }
    if (n > (size_t) SK_ENTRY_MAX) {
        free(der);
        return sk_err_set(err, SK_ERR_FORMAT, "not a DER certificate");
    }
    p = der;
    x = d2i_X509(NULL, &p, (long) n);
    if (x == NULL) {
        free(der);
        sk_err_crypto(err, "not a DER certificate");
        return sk_entry_bad_input(err);
    }
    X509_free(x);
    if ((size_t) (p - der) != n) {
        free(der);
        return sk_err_set(err, SK_ERR_FORMAT,
            "trailing bytes after the certificate");
    }
    free(der);
    return 0;
}


/* Calls check on each comma-separated element of s[0..len). */
static int
sk_entry_check_list(const char *s, size_t len, const char *what,
    size_t from, size_t max, int (*check)(const char *, size_t, sk_err_t *),
    sk_err_t *err)
{
    const char  *comma;
    size_t       off, end, i;

    for (off = 0, i = from; ; off = end + 1, i++) {
        if (i > max) {
            return sk_err_set(err, SK_ERR_FORMAT, "more than %zu %ss",
                max, what);
        }
        comma = memchr(s + off, ',', len - off);
        end = comma == NULL ? len : (size_t) (comma - s);
        if (end == off) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s %zu is empty",
                what, i);
        }
        if (check(s + off, end - off, err) != 0) {
            return sk_err_prefix(err, "%s %zu", what, i);
        }
        if (comma == NULL) {
            return 0;
        }
    }
}


int
sk_list_has(const char *s, size_t len, const char *name, size_t nlen)
{
    const char  *comma;
    size_t       off, end;

    for (off = 0; off <= len; off = end + 1) {
        comma = memchr(s + off, ',', len - off);
        end = comma == NULL ? len : (size_t) (comma - s);
        if (end - off == nlen && memcmp(s + off, name, nlen) == 0) {
            return 1;
        }
    }
    return 0;
}


static int
sk_entry_check_names(const char *s, size_t len, sk_err_t *err)
{
    const char  *comma;
    size_t       off, end;

    if (len == 4 && memcmp(s, "none", 4) == 0) {
        return 0;
    }
    if (sk_entry_check_list(s, len, "name", 1, SK_ENTRY_REBINDERS_MAX,
            sk_name_check, err) != 0)
    {
        return -1;
    }
    /* Each name once: one list, one spelling. */
    for (off = 0; ; off = end + 1) {
        comma = memchr(s + off, ',', len - off);
        if (comma == NULL) {
            return 0;
        }
        end = (size_t) (comma - s);
        if (sk_list_has(comma + 1, len - end - 1, s + off, end - off)) {
            return sk_err_set(err, SK_ERR_FORMAT, "\"%.*s\" is listed "
                "twice", (int) (end - off), s + off);
        }
    }
}


static int
sk_entry_check_services(const char *s, size_t len, sk_err_t *err)
{
    sk_services_t  svcs;

    if (sk_services_parse(&svcs, s, len, err) != 0) {
        return -1;
    }
    sk_services_free(&svcs);
    return 0;
}


/* A chain: no certificate empty; decoded into *chain unless defer (the
 * parser decodes it once every other field has passed: the cheap checks
 * first). */
static int
sk_entry_check_chain(const char *s, size_t len, STACK_OF(X509) **chain,
    int defer, sk_err_t *err)
{
    const char  *comma;
    size_t       off, end, i;

    for (off = 0, i = 1; ; off = end + 1, i++) {
        comma = memchr(s + off, ',', len - off);
        end = comma == NULL ? len : (size_t) (comma - s);
        if (end == off) {
            return sk_err_set(err, SK_ERR_FORMAT, "certificate %zu is empty",
                i);
        }
        if (comma == NULL) {
            break;
        }
    }
    return defer ? 0 : sk_chain_decode(chain, s, len, err);
}


/* The value on its own, whatever the other fields hold; what it decodes
 * to, for a chain or a key, goes to *d. */
static int
sk_entry_check_kind(sk_val_kind_t kind, const char *s, size_t len,
    sk_entry_decoded_t *d, sk_err_t *err)
{
    uint64_t  v;

    switch (kind) {
    case SK_VAL_UINT:
        return sk_entry_parse_uint(&v, s, len, UINT64_MAX, err);
    case SK_VAL_TIME:
        return sk_entry_parse_uint(&v, s, len, INT64_MAX, err);
    case SK_VAL_U16:
        return sk_entry_parse_uint(&v, s, len, 65535, err);
    case SK_VAL_BOOL:
        if (len == 1 && (s[0] == '0' || s[0] == '1')) {
            return 0;
        }
        return sk_err_set(err, SK_ERR_FORMAT, "not 0 or 1");
    case SK_VAL_SIG:
        return sk_entry_check_sig(s, len, err);
    case SK_VAL_HASH:
        return sk_entry_check_hash(s, len, err);
    case SK_VAL_KEY:
        return sk_entry_decode_key(&d->key, s, len, err);
    case SK_VAL_KEY_TYPE:
        if ((len == 3 && memcmp(s, "ECC", 3) == 0)
            || (len == 3 && memcmp(s, "RSA", 3) == 0))
        {
            return 0;
        }
        return sk_err_set(err, SK_ERR_FORMAT, "not ECC or RSA");
    case SK_VAL_NAME:
        return sk_name_check(s, len, err);
    case SK_VAL_NAMES:
        return sk_entry_check_names(s, len, err);
    case SK_VAL_SERVICES:
        return sk_entry_check_services(s, len, err);
    case SK_VAL_CERT:
        return sk_entry_check_cert(s, len, err);
    case SK_VAL_CERTS:
        return sk_entry_check_chain(s, len, &d->chain, d->defer, err);
    case SK_VAL_DNSSEC:
        return sk_entry_check_dnssec(s, len, err);
    }
    return sk_err_set(err, SK_ERR_USAGE, "unknown value kind");
}


static int
sk_entry_pair_key_type(const sk_entry_t *e, const char *key,
    const char *type, sk_err_t *err)
{
    const char  *want;

    (void) key;                 /* decoded: e->key */
    want = sk_key_type_name(e->key);
    if (strcmp(want, type) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "Key-Type \"%s\" does not "
            "match the %s key in Key", type, want);
    }
    return 0;
}


/* A name cannot inherit from itself (validation rule of the draft). */
static int
sk_entry_pair_own_rebinder(const sk_entry_t *e, const char *name,
    const char *names, sk_err_t *err)
{
    (void) e;
    if (sk_list_has(names, strlen(names), name, strlen(name))) {
        return sk_err_set(err, SK_ERR_FORMAT, "Rebinder-Names lists the "
            "entry's own Name \"%s\"", name);
    }
    return 0;
}


/* Checks between two fields, made when either is set while both are. */
static const struct {
    int   a, b;
    int (*check)(const sk_entry_t *e, const char *a, const char *b,
                 sk_err_t *err);
} sk_entry_pairs[] = {
    { SK_F_KEY,  SK_F_KEY_TYPE,       sk_entry_pair_key_type },
    { SK_F_NAME, SK_F_REBINDER_NAMES, sk_entry_pair_own_rebinder },
};


static int
sk_entry_check_pairs(const sk_entry_t *e, int id, sk_err_t *err)
{
    const char  *a, *b;
    size_t       i;

    for (i = 0; i < sizeof(sk_entry_pairs) / sizeof(sk_entry_pairs[0]);
         i++)
    {
        if (sk_entry_pairs[i].a != id && sk_entry_pairs[i].b != id) {
            continue;
        }
        a = sk_entry_value(e, sk_entry_pairs[i].a);
        b = sk_entry_value(e, sk_entry_pairs[i].b);
        if (a != NULL && b != NULL
            && sk_entry_pairs[i].check(e, a, b, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}


/* Check and store field pos; on failure the entry is unchanged and err
 * (unprefixed) says what is wrong with the value.  defer: a chain is
 * decoded later (the parser's sk_entry_decode_chain). */
static int
sk_entry_set_at(sk_entry_t *e, size_t pos, const char *v, size_t len,
    int defer, sk_err_t *err)
{
    const sk_field_def_t *def = sk_entry_def(e, pos);
    char                 *copy, *old;
    sk_entry_decoded_t    d = { NULL, NULL, defer };
    sk_key_t             *old_key = e->key;

    if (sk_entry_check_chars(v, len, err) != 0) {
        return -1;
    }
    if (sk_entry_find_sep(v, len) >= 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "value contains \": \"");
    }
    if (len == 3 && memcmp(v, SK_NA, 3) == 0) {
        if (!def->na) {
            return sk_err_set(err, SK_ERR_FORMAT, "\"N/A\" is allowed only "
                "in stamp and signature fields");
        }
        free(e->values[pos]);
        e->values[pos] = NULL;
        return 0;
    }
    if (sk_entry_check_kind(def->kind, v, len, &d, err) != 0) {
        return -1;
    }
    copy = malloc(len + 1);
    if (copy == NULL) {
        sk_X509_pop_free(d.chain, X509_free);
        sk_key_free(d.key);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    memcpy(copy, v, len);
    copy[len] = '\0';
    old = e->values[pos];
    e->values[pos] = copy;
    if (def->kind == SK_VAL_KEY) {
        e->key = d.key;         /* the pair checks read it */
    }
    if (sk_entry_check_pairs(e, sk_schemas[e->type].fields[pos], err) != 0) {
        e->values[pos] = old;
        e->key = old_key;
        free(copy);
        sk_X509_pop_free(d.chain, X509_free);
        sk_key_free(d.key);
        return -1;
    }
    free(old);
    if (def->kind == SK_VAL_CERTS) {
        sk_X509_pop_free(e->chain, X509_free);
        e->chain = d.chain;
    }
    if (def->kind == SK_VAL_KEY) {
        sk_key_free(old_key);
    }
    return 0;
}


int
sk_entry_new(sk_entry_t **e, sk_entry_type_t type, sk_err_t *err)
{
    if ((unsigned) type >= SK_ENTRY_NTYPES) {
        return sk_err_set(err, SK_ERR_USAGE, "entry type %d does not exist",
            (int) type);
    }
    *e = calloc(1, sizeof(sk_entry_t));
    if (*e == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    (*e)->type = type;
    return 0;
}


void
sk_entry_free(sk_entry_t *e)
{
    size_t  i;

    if (e != NULL) {
        for (i = 0; i < SK_ENTRY_FIELDS_MAX; i++) {
            free(e->values[i]);
        }
        sk_X509_pop_free(e->chain, X509_free);
        sk_key_free(e->key);
        free(e);
    }
}


STACK_OF(X509) *
sk_entry_get0_chain(const sk_entry_t *e)
{
    return e->chain;
}


X509 *
sk_entry_get0_ee(const sk_entry_t *e)
{
    return e->chain != NULL ? sk_X509_value(e->chain, 0) : NULL;
}


sk_entry_t *
sk_entry_dup(const sk_entry_t *e)
{
    sk_entry_t  *d;
    size_t       i;

    d = calloc(1, sizeof(sk_entry_t));
    if (d == NULL) {
        return NULL;
    }
    d->type = e->type;
    if (e->chain != NULL && (d->chain = X509_chain_up_ref(e->chain)) == NULL)
    {
        sk_entry_free(d);
        return NULL;
    }
    if (e->key != NULL && sk_key_dup(&d->key, e->key, NULL) != 0) {
        sk_entry_free(d);
        return NULL;
    }
    for (i = 0; i < SK_ENTRY_FIELDS_MAX; i++) {
        if (e->values[i] != NULL
            && (d->values[i] = strdup(e->values[i])) == NULL)
        {
            sk_entry_free(d);
            return NULL;
        }
    }
    return d;
}


/* The next line, without its \n; -1 if no whole line is left. */
static int
sk_entry_read_line(sk_entry_reader_t *r, const char **s, size_t *n)
{
    const char  *nl;

    if (r->off >= r->len) {
        return -1;
    }
    nl = memchr(r->buf + r->off, '\n', r->len - r->off);
    if (nl == NULL) {
        return -1;
    }
    *s = r->buf + r->off;
    *n = (size_t) (nl - *s);
    r->off += *n + 1;
    r->line++;
    return 0;
}


/* Why no line could be read where `want` was expected. */
static int
sk_entry_eof(const sk_entry_reader_t *r, size_t total, const char *want,
    sk_err_t *err)
{
    if (r->len < total) {
        return sk_err_set(err, SK_ERR_FORMAT, "line %zu: entry longer "
            "than %d bytes (expected %s)", r->line + 1, SK_ENTRY_MAX, want);
    }
    if (r->off < r->len) {
        return sk_err_set(err, SK_ERR_FORMAT, "line %zu: no \\n at the "
            "end (entry truncated; expected %s)", r->line + 1, want);
    }
    return sk_err_set(err, SK_ERR_FORMAT, "line %zu: input ends "
        "(expected %s)", r->line + 1, want);
}


/* Split "Field: value"; the field name is checked to be printable. */
static int
sk_entry_split(const char *s, size_t n, size_t line, const char *want,
    size_t *name_len, sk_err_t *err)
{
    long  sep = sk_entry_find_sep(s, n);

    if (sk_entry_check_chars(s, sep < 0 ? n : (size_t) sep, err) != 0) {
        return sk_err_prefix(err, "line %zu: field name (expected %s)",
            line, want);
    }
    if (sep < 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "line %zu: not "
            "\"Field: value\" (expected %s)", line, want);
    }
    *name_len = (size_t) sep;
    return 0;
}


/* 1 if a later line of this entry, before its blank line, is field f. */
static int
sk_entry_later_has(const sk_entry_reader_t *r, const char *f)
{
    sk_entry_reader_t  ahead = *r;
    const char        *s;
    size_t             n;
    long               sep;

    while (sk_entry_read_line(&ahead, &s, &n) == 0 && n > 0) {
        sep = sk_entry_find_sep(s, n);
        if (sep >= 0 && (size_t) sep == strlen(f)
            && memcmp(s, f, (size_t) sep) == 0)
        {
            return 1;
        }
    }
    return 0;
}


/* A line naming field name[0..len) where field `want` belongs. */
static int
sk_entry_misplaced(const sk_entry_t *e, const sk_entry_reader_t *r,
    const char *name, size_t len, long want, sk_err_t *err)
{
    const char  *type = sk_schemas[e->type].name;
    const char  *wname;
    int          pos = sk_entry_pos_by_name(e, name, len);
    int          q = (int) (len > SK_ENTRY_QUOTE_MAX ? SK_ENTRY_QUOTE_MAX
                                                     : len);

    if (pos < 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "line %zu: field \"%.*s\": "
            "not a field of %s entries", r->line, q, name, type);
    }
    if (sk_entry_def(e, (size_t) pos)->evidence && e->values[pos] == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "line %zu: field \"%.*s\": "
            "out of order (it comes right after \"%s\")", r->line, q, name,
            pos > 0 ? sk_entry_def(e, (size_t) pos - 1)->name
                    : "the entry header");
    }
    if (want < 0 || pos < want) {
        return sk_err_set(err, SK_ERR_FORMAT, "line %zu: field \"%.*s\": "
            "duplicate", r->line, q, name);
    }
    wname = sk_entry_def(e, (size_t) want)->name;
    if (sk_entry_later_has(r, wname)) {
        return sk_err_set(err, SK_ERR_FORMAT, "line %zu: field \"%.*s\": "
            "out of order (\"%s\" comes first)", r->line, q, name, wname);
    }
    return sk_err_set(err, SK_ERR_FORMAT, "line %zu: field \"%s\": "
        "missing (found \"%.*s\")", r->line, wname, q, name);
}


static int
sk_entry_parse_header(sk_entry_t **e, sk_entry_reader_t *r, size_t total,
    sk_err_t *err)
{
    const char  *s;
    size_t       n, i, tlen;
    long         sep;

    if (sk_entry_read_line(r, &s, &n) != 0) {
        return sk_entry_eof(r, total, "an entry header", err);
    }
    if (sk_entry_check_chars(s, n, err) != 0) {
        return sk_err_prefix(err, "line 1: entry header");
    }
    sep = sk_entry_find_sep(s, n);
    if (sep < 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "line 1: entry header: not "
            "\"<Type>: %d\"", SK_ENTRY_VERSION);
    }
    tlen = (size_t) sep;
    for (i = 0; i < SK_ENTRY_NTYPES; i++) {
        if (strlen(sk_schemas[i].name) == tlen
            && memcmp(sk_schemas[i].name, s, tlen) == 0)
        {
            break;
        }
    }
    if (i == SK_ENTRY_NTYPES) {
        return sk_err_set(err, SK_ERR_FORMAT, "line 1: entry header: "
            "unknown entry type \"%.*s\"",
            (int) (tlen > SK_ENTRY_QUOTE_MAX ? SK_ENTRY_QUOTE_MAX : tlen), s);
    }
    if (n - tlen - 2 != 1 || s[tlen + 2] != '0' + SK_ENTRY_VERSION) {
        return sk_err_set(err, SK_ERR_FORMAT, "line 1: entry header: %s "
            "version \"%.*s\" (only %d is known)", sk_schemas[i].name,
            (int) (n - tlen - 2 > SK_ENTRY_QUOTE_MAX ? SK_ENTRY_QUOTE_MAX
                                                      : n - tlen - 2),
            s + tlen + 2, SK_ENTRY_VERSION);
    }
    return sk_entry_new(e, (sk_entry_type_t) i, err);
}


/* Exactly one evidence field of a Bind or Rebind is present. */
static int
sk_entry_check_evidence(const sk_entry_t *e, sk_err_t *err)
{
    const sk_entry_schema_t *sc = &sk_schemas[e->type];
    size_t                   i, n = 0, any = 0;

    for (i = 0; i < sc->nfields; i++) {
        if (sk_entry_def(e, i)->evidence) {
            any++;
            n += e->values[i] != NULL;
        }
    }
    if (any > 0 && n != 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: want exactly one of "
            "\"CA-Cert-Chain\" and \"DNSSEC-Chain\", found %zu", sc->name,
            n);
    }
    return 0;
}


/* The chain the parser left undecoded (on line, for messages). */
static int
sk_entry_decode_chain(sk_entry_t *e, size_t line, sk_err_t *err)
{
    const char  *v = e->values[sk_entry_pos(e, SK_F_CA_CERT_CHAIN)];

    if (v != NULL && sk_chain_decode(&e->chain, v, strlen(v), err) != 0) {
        return sk_err_prefix(err, "line %zu: field \"CA-Cert-Chain\"",
            line);
    }
    return 0;
}


static int
sk_entry_parse_fields(sk_entry_t *e, sk_entry_reader_t *r, size_t total,
    sk_err_t *err)
{
    const sk_field_def_t *def;
    sk_entry_reader_t     at;
    const char           *s;
    size_t                n, i, nlen, chain_line = 0;
    char                  want[64];

    for (i = 0; i < sk_schemas[e->type].nfields; i++) {
        def = sk_entry_def(e, i);
        snprintf(want, sizeof(want), "field \"%s\"", def->name);
        at = *r;
        if (sk_entry_read_line(r, &s, &n) != 0) {
            return sk_entry_eof(r, total, want, err);
        }
        if (def->evidence && (n < strlen(def->name) + 2
                              || memcmp(s, def->name, strlen(def->name)) != 0
                              || s[strlen(def->name)] != ':'))
        {
            *r = at;            /* absent: the line is the next field's */
            continue;
        }
        if (n == 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "line %zu: field \"%s\": "
                "missing (the entry ends)", r->line, def->name);
        }
        if (sk_entry_split(s, n, r->line, want, &nlen, err) != 0) {
            return -1;
        }
        if (nlen != strlen(def->name) || memcmp(s, def->name, nlen) != 0) {
            return sk_entry_misplaced(e, r, s, nlen, (long) i, err);
        }
        if (sk_entry_set_at(e, i, s + nlen + 2, n - nlen - 2, 1, err) != 0) {
            return sk_err_prefix(err, "line %zu: field \"%s\"", r->line,
                def->name);
        }
        if (def->kind == SK_VAL_CERTS) {
            chain_line = r->line;
        }
    }

    if (sk_entry_read_line(r, &s, &n) != 0) {
        return sk_entry_eof(r, total, "the blank line ending the entry",
            err);
    }
    if (n != 0) {
        if (sk_entry_split(s, n, r->line, "the blank line ending the entry",
                &nlen, err) != 0)
        {
            return -1;
        }
        return sk_entry_misplaced(e, r, s, nlen, -1, err);
    }
    if (sk_entry_check_evidence(e, err) != 0) {
        return -1;
    }
    return chain_line > 0 ? sk_entry_decode_chain(e, chain_line, err) : 0;
}


int
sk_entry_parse_next(sk_entry_t **e, size_t *used, const char *buf,
    size_t len, sk_err_t *err)
{
    sk_entry_reader_t  r;

    *e = NULL;
    r.buf = buf;
    r.len = len > SK_ENTRY_MAX ? SK_ENTRY_MAX : len;
    r.off = 0;
    r.line = 0;
    if (sk_entry_parse_header(e, &r, len, err) != 0) {
        return -1;
    }
    if (sk_entry_parse_fields(*e, &r, len, err) != 0) {
        sk_entry_free(*e);
        *e = NULL;
        return -1;
    }
    *used = r.off;
    return 0;
}


int
sk_entry_parse(sk_entry_t **e, const char *buf, size_t len, sk_err_t *err)
{
    size_t  used, i, line;

    if (sk_entry_parse_next(e, &used, buf, len, err) != 0) {
        return -1;
    }
    if (used != len) {
        for (i = 0, line = 1; i < used; i++) {
            line += buf[i] == '\n';
        }
        sk_entry_free(*e);
        *e = NULL;
        return sk_err_set(err, SK_ERR_FORMAT, "line %zu: bytes after the "
            "blank line ending the entry", line);
    }
    return 0;
}


/* Canonical text; with which >= 0, the fields signature which does not
 * cover read "N/A". */
static int
sk_entry_format_as(char **out, size_t *len, const sk_entry_t *e, int which,
    sk_err_t *err)
{
    const sk_entry_schema_t *sc = &sk_schemas[e->type];
    const sk_field_def_t    *def;
    const char              *v[SK_ENTRY_FIELDS_MAX];
    char                    *p;
    size_t                   i, size;
    int                      n;

    if (sk_entry_check_evidence(e, err) != 0) {
        return -1;
    }
    size = strlen(sc->name) + sizeof(": 1\n\n");
    for (i = 0; i < sc->nfields; i++) {
        def = sk_entry_def(e, i);
        v[i] = e->values[i];
        if (v[i] == NULL && def->evidence) {
            continue;
        }
        if (v[i] == NULL && !def->na) {
            return sk_err_set(err, SK_ERR_USAGE, "field \"%s\": not set",
                def->name);
        }
        if (v[i] == NULL
            || (which >= 0 && !(def->covered & SK_COV((unsigned) which))))
        {
            v[i] = SK_NA;
        }
        size += strlen(def->name) + 2 + strlen(v[i]) + 1;
    }
    if (size - 1 > SK_ENTRY_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "entry of %zu bytes is "
            "longer than %d", size - 1, SK_ENTRY_MAX);
    }
    *out = malloc(size);
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    p = *out;
    n = snprintf(p, size, "%s: %d\n", sc->name, SK_ENTRY_VERSION);
    p += n;
    for (i = 0; i < sc->nfields; i++) {
        if (v[i] == NULL) {
            continue;
        }
        n = snprintf(p, size - (size_t) (p - *out), "%s: %s\n",
            sk_entry_def(e, i)->name, v[i]);
        p += n;
    }
    *p++ = '\n';
    *p = '\0';
    *len = (size_t) (p - *out);
    return 0;
}


int
sk_entry_format(char **out, size_t *len, const sk_entry_t *e, sk_err_t *err)
{
    return sk_entry_format_as(out, len, e, -1, err);
}


sk_entry_type_t
sk_entry_type(const sk_entry_t *e)
{
    return e->type;
}


const char *
sk_entry_type_name(sk_entry_type_t type)
{
    return (unsigned) type < SK_ENTRY_NTYPES ? sk_schemas[type].name
                                             : "unknown";
}


static int
sk_entry_ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}


int
sk_entry_type_parse(sk_entry_type_t *type, const char *s, sk_err_t *err)
{
    const char  *t;
    size_t       i, j;

    for (i = 0; i < SK_ENTRY_NTYPES; i++) {
        t = sk_schemas[i].name;
        for (j = 0; t[j] != '\0' && s[j] != '\0'; j++) {
            if (sk_entry_ascii_lower((unsigned char) t[j])
                != sk_entry_ascii_lower((unsigned char) s[j]))
            {
                break;
            }
        }
        if (t[j] == '\0' && s[j] == '\0') {
            *type = (sk_entry_type_t) i;
            return 0;
        }
    }
    return sk_err_set(err, SK_ERR_FORMAT, "unknown entry type \"%.40s\" "
        "(bind, unbind, rebind, change-services, add-root-ca, "
        "remove-root-ca, incorporate, map-root)", s);
}


const char *
sk_entry_get(const sk_entry_t *e, const char *field)
{
    int  pos = sk_entry_pos_by_name(e, field, strlen(field));

    if (pos < 0 || (e->values[pos] == NULL && sk_entry_def(e, pos)->evidence))
    {
        return NULL;
    }
    return e->values[pos] == NULL ? SK_NA : e->values[pos];
}


int
sk_entry_set(sk_entry_t *e, const char *field, const char *value,
    sk_err_t *err)
{
    int  pos = sk_entry_pos_by_name(e, field, strlen(field));

    if (pos < 0) {
        return sk_err_set(err, SK_ERR_USAGE, "field \"%.40s\": not a field "
            "of %s entries", field, sk_schemas[e->type].name);
    }
    if (sk_entry_set_at(e, (size_t) pos, value, strlen(value), 0, err) != 0)
    {
        return sk_err_prefix(err, "field \"%s\"", sk_entry_def(e, pos)->name);
    }
    return 0;
}


static int
sk_entry_get_uint(uint64_t *v, const sk_entry_t *e, int id, uint64_t max,
    sk_err_t *err)
{
    const char  *s = sk_entry_value(e, id);

    if (s == NULL) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "field \"%s\": not "
            "stamped (N/A)", sk_fields[id].name);
    }
    if (sk_entry_parse_uint(v, s, strlen(s), max, err) != 0) {
        return sk_err_prefix(err, "field \"%s\"", sk_fields[id].name);
    }
    return 0;
}


int
sk_entry_sn(const sk_entry_t *e, uint64_t *sn, sk_err_t *err)
{
    return sk_entry_get_uint(sn, e, SK_F_SN, UINT64_MAX, err);
}


int
sk_entry_tid(const sk_entry_t *e, uint64_t *tid, sk_err_t *err)
{
    return sk_entry_get_uint(tid, e, SK_F_TID, UINT64_MAX, err);
}


int
sk_entry_timestamp(const sk_entry_t *e, int64_t *t, sk_err_t *err)
{
    uint64_t  v;

    if (sk_entry_get_uint(&v, e, SK_F_TIMESTAMP, INT64_MAX, err) != 0) {
        return -1;
    }
    *t = (int64_t) v;
    return 0;
}


const char *
sk_entry_name(const sk_entry_t *e)
{
    return sk_entry_value(e, SK_F_NAME);
}


int
sk_entry_key(sk_key_t **key, const sk_entry_t *e, sk_err_t *err)
{
    const char  *v;

    if (sk_entry_pos(e, SK_F_KEY) < 0) {
        return sk_err_set(err, SK_ERR_USAGE, "%s entries have no Key",
            sk_schemas[e->type].name);
    }
    v = sk_entry_value(e, SK_F_KEY);
    if (v == NULL) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "field \"Key\": not set");
    }
    /* Decoded when the field was set (sk_entry_set_at). */
    return sk_key_dup(key, e->key, err);
}


/* Position of signature which in e, or -1 with SK_ERR_USAGE. */
static int
sk_entry_sig_field(size_t *pos, const sk_entry_t *e, sk_sig_field_t which,
    sk_err_t *err)
{
    static const char *const names[] = {
        [SK_SIG_TIMELINE] = "Signature",
        [SK_SIG_SK] = "SK-Signature",
        [SK_SIG_REBINDER] = "Rebinder-Signature",
        [SK_SIG_OPERATOR] = "Operator-Signature",
    };
    int  p;

    if ((unsigned) which >= sizeof(names) / sizeof(names[0])) {
        return sk_err_set(err, SK_ERR_USAGE, "signature field %d does not "
            "exist", (int) which);
    }
    p = sk_entry_sig_pos(e, which);
    if (p < 0) {
        return sk_err_set(err, SK_ERR_USAGE, "%s entries have no %s",
            sk_schemas[e->type].name, names[which]);
    }
    *pos = (size_t) p;
    return 0;
}


int
sk_entry_signed_bytes(char **out, size_t *len, const sk_entry_t *e,
    sk_sig_field_t which, sk_err_t *err)
{
    size_t  pos;

    if (sk_entry_sig_field(&pos, e, which, err) != 0) {
        return -1;
    }
    return sk_entry_format_as(out, len, e, (int) which, err);
}


/* Before the registrant signs: Key and Key-Type are the signing key's. */
static int
sk_entry_fill_key(sk_entry_t *e, const sk_key_t *key, sk_err_t *err)
{
    const unsigned char  *spki;
    unsigned char        *der;
    char                 *b64;
    size_t                n, dn;
    int                   kpos = sk_entry_pos(e, SK_F_KEY), rc;

    spki = sk_key_get0_spki(key, &n);
    if (e->values[kpos] != NULL) {
        if (sk_entry_b64(&der, &dn, e->values[kpos],
                strlen(e->values[kpos]), err) != 0)
        {
            return sk_err_prefix(err, "field \"Key\"");
        }
        rc = dn == n && memcmp(der, spki, n) == 0;
        free(der);
        if (!rc) {
            return sk_err_set(err, SK_ERR_WRONG_SK, "field \"Key\": not the "
                "signing key");
        }
    } else {
        b64 = sk_b64_encode_alloc(spki, n);
        if (b64 == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        rc = sk_entry_set_at(e, (size_t) kpos, b64, strlen(b64), 0, err);
        free(b64);
        if (rc != 0) {
            return sk_err_prefix(err, "field \"Key\"");
        }
    }
    if (sk_entry_value(e, SK_F_KEY_TYPE) == NULL
        && sk_entry_set(e, "Key-Type", sk_key_type_name(key), err) != 0)
    {
        return -1;
    }
    return 0;
}


/* A signature over an unsigned signature field would break when that
 * field is filled: the signatures which covers must come first. */
static int
sk_entry_check_signed_first(const sk_entry_t *e, sk_sig_field_t which,
    sk_err_t *err)
{
    const sk_field_def_t *def;
    size_t                i;

    for (i = 0; i < sk_schemas[e->type].nfields; i++) {
        def = sk_entry_def(e, i);
        if (def->sig >= 0 && (def->covered & SK_COV(which))
            && e->values[i] == NULL)
        {
            return sk_err_set(err, SK_ERR_USAGE, "field \"%s\": not signed "
                "yet, and the signature being made covers it", def->name);
        }
    }
    return 0;
}


int
sk_entry_sign(sk_entry_t *e, sk_sig_field_t which, const sk_key_t *key,
    sk_err_t *err)
{
    unsigned char  *sig;
    char           *msg, *b64;
    size_t          pos, len, siglen;
    int             rc;

    if (sk_entry_sig_field(&pos, e, which, err) != 0
        || sk_entry_check_signed_first(e, which, err) != 0)
    {
        return -1;
    }
    if (which == SK_SIG_SK && sk_entry_pos(e, SK_F_KEY) >= 0
        && sk_entry_fill_key(e, key, err) != 0)
    {
        return -1;
    }
    if (sk_entry_format_as(&msg, &len, e, (int) which, err) != 0) {
        return -1;
    }
    rc = sk_key_sign(&sig, &siglen, key, (unsigned char *) msg, len, err);
    free(msg);
    if (rc != 0) {
        return sk_err_prefix(err, "field \"%s\"", sk_entry_def(e, pos)->name);
    }
    b64 = sk_b64_encode_alloc(sig, siglen);
    free(sig);
    if (b64 == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    rc = sk_entry_set_at(e, pos, b64, strlen(b64), 0, err);
    free(b64);
    if (rc != 0) {
        return sk_err_prefix(err, "field \"%s\"", sk_entry_def(e, pos)->name);
    }
    return 0;
}


int
sk_entry_verify(const sk_entry_t *e, sk_sig_field_t which,
    const sk_key_t *key, sk_err_t *err)
{
    const char     *fname;
    unsigned char  *sig;
    char           *msg;
    size_t          pos, len, siglen;
    int             rc;

    if (sk_entry_sig_field(&pos, e, which, err) != 0) {
        return -1;
    }
    fname = sk_entry_def(e, pos)->name;
    if (e->values[pos] == NULL) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "field \"%s\": not signed "
            "(N/A)", fname);
    }
    if (sk_entry_format_as(&msg, &len, e, (int) which, err) != 0) {
        return -1;
    }
    if (sk_entry_b64(&sig, &siglen, e->values[pos], strlen(e->values[pos]),
            err) != 0)
    {
        free(msg);
        return sk_err_prefix(err, "field \"%s\"", fname);
    }
    rc = sk_key_verify(key, sig, siglen, (unsigned char *) msg, len, err);
    free(sig);
    free(msg);
    if (rc != 0) {
        return sk_err_prefix(err, "field \"%s\"", fname);
    }
    return 0;
}


static int
sk_entry_set_uint(sk_entry_t *e, int id, uint64_t v, sk_err_t *err)
{
    char  buf[24];

    snprintf(buf, sizeof(buf), "%llu", (unsigned long long) v);
    if (sk_entry_set_at(e, (size_t) sk_entry_pos(e, id), buf, strlen(buf),
            0, err) != 0)
    {
        return sk_err_prefix(err, "field \"%s\"", sk_fields[id].name);
    }
    return 0;
}


int
sk_entry_stamp(sk_entry_t *e, uint64_t tid, uint64_t sn, int64_t ts,
    const sk_key_t *timeline_key, sk_err_t *err)
{
    if (ts < 0) {
        return sk_err_set(err, SK_ERR_USAGE, "field \"Timestamp\": %lld is "
            "before 1970", (long long) ts);
    }
    if (sk_entry_set_uint(e, SK_F_TID, tid, err) != 0
        || sk_entry_set_uint(e, SK_F_SN, sn, err) != 0
        || sk_entry_set_uint(e, SK_F_TIMESTAMP, (uint64_t) ts, err) != 0)
    {
        return -1;
    }
    return sk_entry_sign(e, SK_SIG_TIMELINE, timeline_key, err);
}


int
sk_entry_hash(unsigned char out[SK_SHA256_BYTES], const sk_entry_t *e,
    sk_err_t *err)
{
    char    *text;
    size_t   len;

    if (sk_entry_format(&text, &len, e, err) != 0) {
        return -1;
    }
    sk_merkle_digest(out, text, len);
    free(text);
    return 0;
}
