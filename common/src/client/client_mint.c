/*
 * client_mint.c -- the local certificate authority of sk/mint.h.
 *
 * The CA's files are checked the way ssh checks its keys: the directory
 * is the user's and closed to others, the key is 0600 and made with
 * O_EXCL (two first runs at once: one makes it, the other reads it).
 * Minted certificates come from a small per-name cache: a hash table of
 * chained entries, plus a list in order of use, so that the least
 * recently used one goes first when it is full.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <sk/file.h>
#include <sk/key.h>
#include <sk/mint.h>
#include <sk/name.h>

#include "../internal.h"

#define SK_MINT_BUCKETS   (2 * SK_MINT_CACHE_MAX)
#define SK_MINT_RENEW     3600      /* mint again with less than this left */
#define SK_MINT_BACKDATE  300       /* a little slack for clock steps */
#define SK_MINT_PEM_MAX   (64 * 1024)

typedef struct sk_mint_ent_s  sk_mint_ent_t;

struct sk_mint_ent_s {
    char            name[SK_NAME_MAX + 1];
    X509           *cert;
    time_t          not_after;
    sk_mint_ent_t  *next;           /* in its bucket */
    sk_mint_ent_t  *prev_use;       /* the list in order of use: */
    sk_mint_ent_t  *next_use;       /* most recent first */
};

struct sk_mint_s {
    sk_key_t        *ca_key;
    X509            *ca;
    char            *ca_file;
    sk_key_t        *key;           /* every minted certificate's */
    X509            *tmpl;          /* their extensions but the name's */
    sk_mint_ent_t   *buckets[SK_MINT_BUCKETS];
    sk_mint_ent_t   *first, *last;  /* most and least recently used */
    size_t           n;
    unsigned long    minted;
};


/* dir exists (made 0700 if missing), is a directory of this user's and
 * closed to group and others. */
static int
sk_mint_dir(const char *dir, sk_err_t *err)
{
    struct stat  st;
    int          fd;

    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        return sk_err_sys(err, "%s: cannot create", dir);
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return sk_err_sys(err, "%s: cannot open the directory", dir);
    }
    if (fstat(fd, &st) != 0) {
        close(fd);
        return sk_err_sys(err, "%s: cannot stat", dir);
    }
    close(fd);
    if (st.st_uid != geteuid()) {
        return sk_err_set(err, SK_ERR_PERM, "%s: owned by uid %u, not by "
            "this user (uid %u)", dir, (unsigned) st.st_uid,
            (unsigned) geteuid());
    }
    if (st.st_mode & 077) {
        return sk_err_set(err, SK_ERR_PERM, "%s: permissions %04o are too "
            "open: the CA's directory must be closed to others (chmod 700 "
            "%s)", dir, (unsigned) (st.st_mode & 07777), dir);
    }
    return 0;
}


/* The CA key at path: loaded (0600, P-256), or made with O_EXCL. */
static int
sk_mint_ca_key(sk_key_t **key, int *created, const char *path,
    sk_err_t *err)
{
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        if (sk_key_generate(key, SK_KEY_P256, 0, err) != 0) {
            return -1;
        }
        if (sk_key_save_private(*key, path, err) == 0) {
            *created = 1;
            return 0;
        }
        sk_key_free(*key);
        *key = NULL;
        if (err != NULL && err->code != SK_ERR_EXISTS) {
            return -1;
        }
        /* Another first run made it meanwhile: read that one. */
    }
    if (sk_key_load_private(key, path, err) != 0) {
        return -1;
    }
    if (sk_key_alg(*key) != SK_KEY_P256) {
        sk_key_free(*key);
        *key = NULL;
        return sk_err_set(err, SK_ERR_FORMAT, "%s: not an ECDSA P-256 key",
            path);
    }
    return 0;
}


/* A v3 certificate of subject's key named CN=cn (O=o unless NULL), its
 * serial and validity set, not yet signed. */
static X509 *
sk_mint_new(const sk_key_t *subject, const char *o, const char *cn,
    time_t from, time_t to, sk_err_t *err)
{
    X509_NAME  *dn = X509_NAME_new();
    X509       *x = X509_new();
    int         ok;

    ok = dn != NULL && x != NULL
        && (o == NULL || X509_NAME_add_entry_by_txt(dn, "O", MBSTRING_UTF8,
               (const unsigned char *) o, -1, -1, 0) == 1)
        && X509_NAME_add_entry_by_txt(dn, "CN", MBSTRING_UTF8,
               (const unsigned char *) cn, -1, -1, 0) == 1
        && X509_set_version(x, X509_VERSION_3) == 1
        && X509_set_subject_name(x, dn) == 1
        && ASN1_TIME_set(X509_getm_notBefore(x), from) != NULL
        && ASN1_TIME_set(X509_getm_notAfter(x), to) != NULL
        && X509_set_pubkey(x, sk_key_get0_pkey(subject)) == 1;
    X509_NAME_free(dn);
    if (!ok) {
        X509_free(x);
        sk_err_crypto(err, "cannot build a certificate for %s", cn);
        return NULL;
    }
    if (sk_cert_set_serial(x, err) != 0) {
        X509_free(x);
        return NULL;
    }
    return x;
}


/* The CA's self-signed certificate, written to path. */
static int
sk_mint_ca_make(sk_mint_t *m, const char *path, const char *owner,
    time_t now, sk_err_t *err)
{
    char    cn[65], fpr[SK_FINGERPRINT_SIZE], *pem = NULL;
    size_t  len = 0;
    BIO    *bio;
    int     rc;

    /* The key's fingerprint tells this CA from any other (for the
     * browsers' lists, and for --remove-ca). */
    sk_key_fingerprint(fpr, m->ca_key);
    snprintf(cn, sizeof(cn), "sk proxy CA %.8s for %s", fpr + 7, owner);
    m->ca = sk_mint_new(m->ca_key, "sk proxy (local, this user only)", cn,
        now - SK_MINT_BACKDATE, now + SK_MINT_CA_LIFETIME, err);
    if (m->ca == NULL
        || X509_set_issuer_name(m->ca, X509_get_subject_name(m->ca)) != 1
        || sk_cert_add_conf(m->ca, NID_basic_constraints,
               "critical,CA:TRUE,pathlen:0", err) != 0
        || sk_cert_add_conf(m->ca, NID_key_usage,
               "critical,keyCertSign,cRLSign", err) != 0
        || sk_cert_add_keyid(m->ca, m->ca_key, NID_subject_key_identifier,
               err) != 0
        || sk_cert_sign(m->ca, m->ca_key, err) != 0)
    {
        return -1;
    }
    bio = BIO_new(BIO_s_mem());
    if (bio == NULL || PEM_write_bio_X509(bio, m->ca) != 1
        || sk_bio_to_str(&pem, &len, bio, err) != 0)
    {
        BIO_free(bio);
        return pem == NULL ? sk_err_crypto(err, "%s: cannot encode", path)
            : -1;
    }
    BIO_free(bio);
    rc = sk_file_write_atomic(path, pem, len, 0644, err);
    free(pem);
    return rc;
}


/* ca.pem: read, and checked to be this key's CA certificate, valid at
 * now. */
static int
sk_mint_ca_load(sk_mint_t *m, const char *path, time_t now, sk_err_t *err)
{
    const unsigned char  *spki;
    unsigned char        *der = NULL;
    char                 *pem;
    size_t                len, slen;
    BIO                  *bio;
    int                   dlen, ok;

    if (sk_file_read(&pem, &len, path, SK_MINT_PEM_MAX, err) != 0) {
        return -1;
    }
    bio = BIO_new_mem_buf(pem, (int) len);
    m->ca = bio != NULL ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    free(pem);
    if (m->ca == NULL) {
        return sk_err_crypto(err, "%s: not a PEM certificate", path);
    }
    spki = sk_key_get0_spki(m->ca_key, &slen);
    dlen = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(m->ca), &der);
    ok = dlen > 0 && (size_t) dlen == slen && memcmp(der, spki, slen) == 0;
    OPENSSL_free(der);
    if (!ok) {
        return sk_err_set(err, SK_ERR_KEY_MISMATCH, "%s: not the "
            "certificate of %s", path, SK_MINT_KEY_FILE);
    }
    if (X509_check_ca(m->ca) != 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: not a CA certificate",
            path);
    }
    if (X509_cmp_time(X509_get0_notAfter(m->ca), &now) <= 0) {
        return sk_err_set(err, SK_ERR_EXPIRED, "%s: the local CA has "
            "expired: remove it from the browsers (--remove-ca), then the "
            "directory, and start again", path);
    }
    return 0;
}


/* The extensions every minted certificate has, made once: a server's,
 * issued by the CA. */
static int
sk_mint_template(sk_mint_t *m, sk_err_t *err)
{
    m->tmpl = X509_new();
    if (m->tmpl == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "mint: out of memory");
    }
    if (sk_cert_add_conf(m->tmpl, NID_basic_constraints, "critical,CA:FALSE",
            err) != 0
        || sk_cert_add_conf(m->tmpl, NID_key_usage,
               "critical,digitalSignature", err) != 0
        || sk_cert_add_conf(m->tmpl, NID_ext_key_usage, "serverAuth", err)
           != 0
        || sk_cert_add_keyid(m->tmpl, m->ca_key,
               NID_authority_key_identifier, err) != 0)
    {
        return -1;
    }
    return 0;
}


int
sk_mint_open(sk_mint_t **out, int *created, const char *dir,
    const char *owner, time_t now, sk_err_t *err)
{
    sk_mint_t  *m;
    char        path[4096];
    int         made = 0;

    *out = NULL;
    *created = 0;
    if (strlen(dir) > sizeof(path) - 16) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: name too long", dir);
    }
    if (sk_mint_dir(dir, err) != 0) {
        return -1;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "mint: out of memory");
    }
    snprintf(path, sizeof(path), "%s/%s", dir, SK_MINT_KEY_FILE);
    if (sk_mint_ca_key(&m->ca_key, &made, path, err) != 0) {
        sk_mint_free(m);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, SK_MINT_CERT_FILE);
    m->ca_file = strdup(path);
    if (m->ca_file == NULL) {
        sk_mint_free(m);
        return sk_err_set(err, SK_ERR_NOMEM, "mint: out of memory");
    }
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        if (sk_mint_ca_make(m, path, owner, now, err) != 0) {
            sk_mint_free(m);
            return -1;
        }
        made = 1;
    } else if (sk_mint_ca_load(m, path, now, err) != 0) {
        sk_mint_free(m);
        return -1;
    }
    if (sk_key_generate(&m->key, SK_KEY_P256, 0, err) != 0
        || sk_mint_template(m, err) != 0)
    {
        sk_mint_free(m);
        return -1;
    }
    *created = made;
    *out = m;
    return 0;
}


X509 *
sk_mint_get0_ca(const sk_mint_t *m)
{
    return m->ca;
}


const char *
sk_mint_ca_file(const sk_mint_t *m)
{
    return m->ca_file;
}


EVP_PKEY *
sk_mint_get0_key(const sk_mint_t *m)
{
    return sk_key_get0_pkey(m->key);
}


unsigned long
sk_mint_count(const sk_mint_t *m)
{
    return m->minted;
}


/* A certificate for name by the CA, good from now for SK_MINT_LIFETIME. */
static X509 *
sk_mint_leaf(sk_mint_t *m, const char *name, time_t now, sk_err_t *err)
{
    char   san[SK_NAME_MAX + 8];
    X509  *x;
    int    i, ok = 1;

    /* The CN holds at most 64 characters: a longer name is in the SAN
     * only, where browsers look. */
    x = sk_mint_new(m->key, NULL, strlen(name) <= 64 ? name
        : "sk proxy", now - SK_MINT_BACKDATE, now + SK_MINT_LIFETIME, err);
    if (x == NULL) {
        return NULL;
    }
    for (i = 0; ok && i < X509_get_ext_count(m->tmpl); i++) {
        ok = X509_add_ext(x, X509_get_ext(m->tmpl, i), -1) == 1;
    }
    snprintf(san, sizeof(san), "DNS:%s", name);
    if (!ok || X509_set_issuer_name(x, X509_get_subject_name(m->ca)) != 1) {
        X509_free(x);
        sk_err_crypto(err, "mint: cannot build the certificate for %s",
            name);
        return NULL;
    }
    if (sk_cert_add_conf(x, NID_subject_alt_name, san, err) != 0
        || sk_cert_sign(x, m->ca_key, err) != 0)
    {
        X509_free(x);
        return NULL;
    }
    m->minted++;
    return x;
}


static size_t
sk_mint_hash(const char *name)
{
    size_t  h = 5381;

    while (*name != '\0') {
        h = h * 33 + (unsigned char) *name++;
    }
    return h % SK_MINT_BUCKETS;
}


static void
sk_mint_unuse(sk_mint_t *m, sk_mint_ent_t *e)
{
    if (e->prev_use != NULL) {
        e->prev_use->next_use = e->next_use;
    } else {
        m->first = e->next_use;
    }
    if (e->next_use != NULL) {
        e->next_use->prev_use = e->prev_use;
    } else {
        m->last = e->prev_use;
    }
    e->prev_use = e->next_use = NULL;
}


static void
sk_mint_use(sk_mint_t *m, sk_mint_ent_t *e)
{
    e->next_use = m->first;
    if (m->first != NULL) {
        m->first->prev_use = e;
    }
    m->first = e;
    if (m->last == NULL) {
        m->last = e;
    }
}


static void
sk_mint_drop(sk_mint_t *m, sk_mint_ent_t *e)
{
    sk_mint_ent_t  **p = &m->buckets[sk_mint_hash(e->name)];

    while (*p != e) {
        p = &(*p)->next;
    }
    *p = e->next;
    sk_mint_unuse(m, e);
    X509_free(e->cert);
    free(e);
    m->n--;
}


int
sk_mint_cert(X509 **cert, sk_mint_t *m, const char *name, time_t now,
    sk_err_t *err)
{
    sk_mint_ent_t  *e;
    size_t          b;

    *cert = NULL;
    if (sk_name_check(name, strlen(name), err) != 0) {
        return sk_err_prefix(err, "mint");
    }
    b = sk_mint_hash(name);
    for (e = m->buckets[b]; e != NULL; e = e->next) {
        if (strcmp(e->name, name) == 0) {
            break;
        }
    }
    if (e != NULL && e->not_after - now > SK_MINT_RENEW) {
        sk_mint_unuse(m, e);
        sk_mint_use(m, e);
        *cert = e->cert;
        return 0;
    }
    if (e != NULL) {
        sk_mint_drop(m, e);
    }
    if (m->n == SK_MINT_CACHE_MAX) {
        sk_mint_drop(m, m->last);
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "mint: out of memory");
    }
    e->cert = sk_mint_leaf(m, name, now, err);
    if (e->cert == NULL) {
        free(e);
        return -1;
    }
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->not_after = now + SK_MINT_LIFETIME;
    e->next = m->buckets[b];
    m->buckets[b] = e;
    sk_mint_use(m, e);
    m->n++;
    *cert = e->cert;
    return 0;
}


void
sk_mint_free(sk_mint_t *m)
{
    if (m == NULL) {
        return;
    }
    while (m->first != NULL) {
        sk_mint_drop(m, m->first);
    }
    X509_free(m->ca);
    X509_free(m->tmpl);
    sk_key_free(m->ca_key);
    sk_key_free(m->key);
    free(m->ca_file);
    free(m);
}
