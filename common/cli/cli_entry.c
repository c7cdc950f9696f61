/*
 * cli_entry.c -- an entry from the verbs' flags: the registrant's entries
 * signed with the SK, the timeline operator's root-CA entries signed with
 * the operator key.  The stamp (SN, TID, Timestamp, Signature) stays
 * "N/A": the timeline fills it in when it accepts the entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <sk/dnssec.h>

#include "cli_entry.h"


/* CA-Cert-Chain: each certificate of a PEM chain file as base64url DER,
 * comma-separated, leaf first. */
static int
cli_entry_chain(sk_entry_t *e, const char *path, sk_err_t *err)
{
    STACK_OF(X509)  *chain;
    unsigned char   *der;
    char            *field = NULL, *b64, *grown;
    size_t           used = 0;
    int              i, len, rc = -1;

    if (sk_chain_load_pem(&chain, path, err) != 0) {
        return -1;
    }
    for (i = 0; i < sk_X509_num(chain); i++) {
        der = NULL;
        len = i2d_X509(sk_X509_value(chain, i), &der);
        b64 = len > 0 ? sk_b64_encode_alloc(der, (size_t) len) : NULL;
        OPENSSL_free(der);
        grown = b64 != NULL ? realloc(field, used + strlen(b64) + 2) : NULL;
        if (grown == NULL) {
            free(b64);
            sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
        field = grown;
        used += (size_t) sprintf(field + used, "%s%s", i ? "," : "", b64);
        free(b64);
    }
    rc = sk_entry_set(e, "CA-Cert-Chain", field, err);
done:
    free(field);
    sk_X509_pop_free(chain, X509_free);
    return rc;
}


/* DNSSEC-Chain: the RFC 9102 chain's bytes, as `sk dnssec chain` or a
 * resolver wrote them, base64url. */
static int
cli_entry_dnssec(sk_entry_t *e, const char *path, sk_err_t *err)
{
    char    *buf, *b64;
    size_t   len;
    int      rc;

    if (sk_file_read(&buf, &len, path, SK_DNSSEC_CHAIN_MAX, err) != 0) {
        return -1;
    }
    b64 = sk_b64_encode_alloc((const unsigned char *) buf, len);
    free(buf);
    if (b64 == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
    }
    rc = sk_entry_set(e, "DNSSEC-Chain", b64, err);
    free(b64);
    return rc != 0 ? sk_err_prefix(err, "%s", path) : 0;
}


/* The Bind's evidence: exactly one of -c and --dnssec-chain. */
static int
cli_entry_evidence(sk_entry_t *e, const cli_entry_opts_t *o, sk_err_t *err)
{
    if ((o->chain == NULL) == (o->dnssec == NULL)) {
        return sk_err_set(err, SK_ERR_USAGE, "want one of -c CHAIN (CA "
            "evidence) and --dnssec-chain FILE (DNSSEC evidence)");
    }
    return o->chain != NULL ? cli_entry_chain(e, o->chain, err)
                            : cli_entry_dnssec(e, o->dnssec, err);
}


/* Add-Root-CA's CA-Cert (base64url DER) or Remove-Root-CA's CA-Cert-Hash
 * (base64url SHA-256 of the DER) from the first certificate of a PEM file. */
static int
cli_entry_root_ca(sk_entry_t *e, sk_entry_type_t type, const char *path,
    const char *serial, sk_err_t *err)
{
    STACK_OF(X509) *chain;
    unsigned char  *der = NULL, md[SK_SHA256_BYTES];
    char           *b64;
    int             len, rc;

    if (path == NULL || serial == NULL) {
        return sk_err_set(err, SK_ERR_USAGE, "missing %s",
            path == NULL ? "-c CA-CERT" : "--serial N");
    }
    if (sk_chain_load_pem(&chain, path, err) != 0) {
        return -1;
    }
    len = i2d_X509(sk_X509_value(chain, 0), &der);
    sk_X509_pop_free(chain, X509_free);
    if (len <= 0) {
        return sk_err_set(err, SK_ERR_CRYPTO, "%s: cannot encode", path);
    }
    if (type == SK_ENTRY_ADD_ROOT_CA) {
        b64 = sk_b64_encode_alloc(der, (size_t) len);
    } else {
        EVP_Digest(der, (size_t) len, md, NULL, EVP_sha256(), NULL);
        b64 = sk_b64_encode_alloc(md, sizeof(md));
    }
    OPENSSL_free(der);
    if (b64 == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    rc = sk_entry_set(e, type == SK_ENTRY_ADD_ROOT_CA ? "CA-Cert"
                         : "CA-Cert-Hash", b64, err);
    free(b64);
    return rc != 0 ? -1 : sk_entry_set(e, "CA-Serial", serial, err);
}


/* Set field to value, or say which flag is missing. */
static int
cli_entry_field(sk_entry_t *e, const char *field, const char *value,
    const char *flag, sk_err_t *err)
{
    if (value == NULL) {
        return sk_err_set(err, SK_ERR_USAGE, "missing %s", flag);
    }
    return sk_entry_set(e, field, value, err);
}


static int
cli_entry_sign(sk_entry_t *e, sk_sig_field_t which, const char *path,
    const char *flag, sk_err_t *err)
{
    sk_key_t  *key;
    int        rc;

    if (path == NULL) {
        return sk_err_set(err, SK_ERR_USAGE, "missing %s", flag);
    }
    if (sk_key_load_private(&key, path, err) != 0) {
        return -1;
    }
    rc = sk_entry_sign(e, which, key, err);
    sk_key_free(key);
    return rc;
}


static int
cli_entry_fill(sk_entry_t *e, sk_entry_type_t type, const cli_entry_opts_t *o,
    sk_err_t *err)
{
    char  now[32];

    switch (type) {
    case SK_ENTRY_ADD_ROOT_CA:
    case SK_ENTRY_REMOVE_ROOT_CA:
        return cli_entry_root_ca(e, type, o->ca, o->serial, err);
    case SK_ENTRY_UNBIND:
        snprintf(now, sizeof(now), "%lld", (long long) time(NULL));
        return sk_entry_set(e, "Last-Secure-Timestamp",
            o->last_secure != NULL ? o->last_secure : now, err);
    case SK_ENTRY_CHANGE_SERVICES:
        return cli_entry_field(e, "Services", o->services, "-s SERVICES",
            err);
    case SK_ENTRY_BIND:
    case SK_ENTRY_REBIND:
        if (cli_entry_evidence(e, o, err) != 0
            || cli_entry_field(e, "Services", o->services, "-s SERVICES",
                   err) != 0
            || sk_entry_set(e, "Includes-Subdomains",
                   o->subdomains ? "1" : "0", err) != 0
            || sk_entry_set(e, "Rebinder-Names",
                   o->rebinders != NULL ? o->rebinders : "none", err) != 0)
        {
            return -1;
        }
        return type == SK_ENTRY_BIND ? 0 : cli_entry_field(e,
            "Rebinder-Name", o->rebinder, "--rebinder NAME", err);
    default:
        return sk_err_set(err, SK_ERR_USAGE,
            "sk does not make %s entries (a timeline does)",
            sk_entry_type_name(type));
    }
}


int
cli_entry_option(cli_entry_opts_t *o, int c, const char *arg)
{
    switch (c) {
    case 'k': o->key = arg; return 1;
    case 'n': o->name = arg; return 1;
    case 's': o->services = arg; return 1;
    case 'c': o->chain = o->ca = arg; return 1;
    case CLI_ENTRY_OPT_DNSSEC: o->dnssec = arg; return 1;
    case 'w': o->subdomains = 1; return 1;
    case 'r': o->rebinders = arg; return 1;
    case 'R': o->rebinder = arg; return 1;
    case 'K': o->rebinder_key = arg; return 1;
    case 'l': o->last_secure = arg; return 1;
    }
    return 0;
}


int
cli_entry_build(sk_entry_t **e, sk_entry_type_t type,
    const cli_entry_opts_t *o, sk_err_t *err)
{
    int  root = type == SK_ENTRY_ADD_ROOT_CA
                || type == SK_ENTRY_REMOVE_ROOT_CA;

    if (sk_entry_new(e, type, err) != 0) {
        return -1;
    }
    if ((!root && cli_entry_field(*e, "Name", o->name, "-n NAME", err) != 0)
        || cli_entry_fill(*e, type, o, err) != 0
        || cli_entry_sign(*e, root ? SK_SIG_OPERATOR : SK_SIG_SK, o->key,
               "-k KEY", err) != 0
        || (type == SK_ENTRY_REBIND
            && cli_entry_sign(*e, SK_SIG_REBINDER, o->rebinder_key,
                   "--rebinder-key KEY", err) != 0))
    {
        sk_entry_free(*e);
        *e = NULL;
        return -1;
    }
    return 0;
}
