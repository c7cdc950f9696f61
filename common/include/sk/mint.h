/*
 * sk/mint.h -- a local certificate authority for one user's own
 * programs (`sk proxy`): it lets a program on the user's machine show the
 * user's browsers a certificate for a name it has checked itself.
 *
 * The CA lives in a directory of the user's own (mode 0700, owned by the
 * user; refused otherwise): ca.key, an ECDSA P-256 PKCS#8 key of mode
 * 0600 (refused if group or others may read it), made on first use and
 * never sent anywhere, and ca.pem, its self-signed certificate (what a
 * browser is told to trust).  Minted certificates are short-lived
 * (SK_MINT_LIFETIME), name exactly one host (subjectAltName), are good
 * for TLS servers only, and share one P-256 key made in memory when the
 * CA is opened (never written); they are cached per name (at most
 * SK_MINT_CACHE_MAX, the least recently used dropped first) and minted
 * again when less than an hour is left.
 *
 * An sk_mint_t is for one thread at a time.
 */
#ifndef SK_MINT_H
#define SK_MINT_H

#include <time.h>
#include <openssl/x509.h>
#include "err.h"

#define SK_MINT_KEY_FILE    "ca.key"
#define SK_MINT_CERT_FILE   "ca.pem"
#define SK_MINT_LIFETIME    (24 * 3600)         /* a minted certificate */
#define SK_MINT_CA_LIFETIME (10 * 366 * 24 * 3600)
#define SK_MINT_CACHE_MAX   1024

typedef struct sk_mint_s sk_mint_t;

/*
 * Open the CA in dir, made (directory, key, certificate) if missing;
 * *created is then 1.  owner names the CA's user in its subject ("sk
 * proxy local CA for OWNER"); now is the clock.  SK_ERR_PERM for a
 * directory or key others may reach, naming it and its mode.
 */
int sk_mint_open(sk_mint_t **m, int *created, const char *dir,
    const char *owner, time_t now, sk_err_t *err) SK_WUR;

/* The CA's certificate (borrowed), and the path of ca.pem. */
X509 *sk_mint_get0_ca(const sk_mint_t *m);
const char *sk_mint_ca_file(const sk_mint_t *m);

/* The private key of every minted certificate (borrowed). */
EVP_PKEY *sk_mint_get0_key(const sk_mint_t *m);

/* A certificate for the DNS name, valid at now: cached, or minted and
 * cached.  Borrowed until the next sk_mint_cert (take a reference, as
 * SSL_use_certificate does, to keep it). */
int sk_mint_cert(X509 **cert, sk_mint_t *m, const char *name, time_t now,
    sk_err_t *err) SK_WUR;

/* How many certificates were minted (not served from the cache). */
unsigned long sk_mint_count(const sk_mint_t *m);

void sk_mint_free(sk_mint_t *m);        /* NULL ok */

#endif
