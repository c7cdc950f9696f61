/*
 * sk/onion.h -- Tor v3 onion services from Ed25519 keys.
 *
 * address = base32(PUBKEY | CHECKSUM | VERSION) + ".onion", where
 * CHECKSUM = SHA3-256(".onion checksum" | PUBKEY | VERSION)[:2] and
 * VERSION = 0x03 (Tor rend-spec-v3).  A HiddenServiceDir holds Tor's own
 * files: hs_ed25519_secret_key ("== ed25519v1-secret: type0 ==" padded to
 * 32 bytes, then the 64-byte expanded secret key), hs_ed25519_public_key
 * ("== ed25519v1-public: type0 ==" padded to 32, then the 32-byte key) and
 * hostname (address + "\n").
 */
#ifndef SK_ONION_H
#define SK_ONION_H

#include <stddef.h>
#include <sys/types.h>
#include "err.h"
#include "key.h"

#define SK_ONION_ADDR_LEN 62            /* 56 base32 chars + ".onion" */

/* Address of an Ed25519 public key; out gets a NUL too.  out is "" only
 * if OpenSSL cannot compute SHA3-256 (out of memory). */
void sk_onion_address(char out[SK_ONION_ADDR_LEN + 1],
    const unsigned char pubkey[32]);
int sk_onion_address_from_key(char out[SK_ONION_ADDR_LEN + 1],
    const sk_key_t *key, sk_err_t *err) SK_WUR;

/* 0 if s is a well-formed v3 address (checksum and version checked). */
int sk_onion_address_check(const char *s, size_t len, sk_err_t *err) SK_WUR;

typedef struct {
    unsigned    virtport;       /* the port clients use on the onion */
    const char *target;         /* "127.0.0.1:8443", "unix:/path"; NULL:
                                   127.0.0.1:virtport */
} sk_onion_port_t;

/* 0 if port can go into a torrc: virtport 1..65535, target NULL or
 * printable with no space, '"', '#' or backslash (SK_ERR_USAGE otherwise).
 * sk_onion_write_torrc checks each port with it before writing. */
int sk_onion_port_check(const sk_onion_port_t *port, sk_err_t *err) SK_WUR;

/*
 * Write a HiddenServiceDir for key (with its private half): the dir is
 * created 0700 (or must be empty of Tor's key files if it exists: existing
 * keys are never overwritten, SK_ERR_EXISTS), files 0600, owned by
 * uid/gid when they are not (uid_t)-1.
 */
int sk_onion_write_dir(const char *dir, const sk_key_t *key, uid_t uid,
    gid_t gid, sk_err_t *err) SK_WUR;

/* A torrc snippet: HiddenServiceDir dir, HiddenServicePort per port,
 * written atomically to path. */
int sk_onion_write_torrc(const char *path, const char *dir,
    const sk_onion_port_t *ports, size_t nports, sk_err_t *err) SK_WUR;

/* The address in dir/hostname, checked. */
int sk_onion_read_hostname(char out[SK_ONION_ADDR_LEN + 1], const char *dir,
    sk_err_t *err) SK_WUR;

/* The owner for a HiddenServiceDir: user's (SK_ERR_NOT_FOUND if there is
 * none), or with user NULL debian-tor's when running as root and there is
 * such a user, else (uid_t) -1 and (gid_t) -1: the files stay ours. */
int sk_onion_owner(uid_t *uid, gid_t *gid, const char *user, sk_err_t *err)
    SK_WUR;

/*
 * A HiddenServiceDir to serve from, and its address: the key already in
 * dir (never overwritten), else dir written with the Ed25519 private key
 * in keyfile, or a new key when keyfile is NULL (*created 1; owner as for
 * sk_onion_write_dir).
 */
int sk_onion_ensure(char out[SK_ONION_ADDR_LEN + 1], int *created,
    const char *dir, const char *keyfile, uid_t uid, gid_t gid,
    sk_err_t *err) SK_WUR;

/* Load the key of an existing HiddenServiceDir (hs_ed25519_secret_key) as
 * an address source: the public half is derived from the expanded key.  If
 * hs_ed25519_public_key is there too it must hold the same key
 * (SK_ERR_KEY_MISMATCH); if it is absent, Tor rewrites it. */
int sk_onion_read_public(unsigned char pubkey[32], const char *dir,
    sk_err_t *err) SK_WUR;

#endif
