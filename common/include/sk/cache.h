/*
 * sk/cache.h -- the key-material cache shared by sk, nginx and the milter.
 *
 * Public, self-verifying material only (carrier certificates, SK records,
 * timeline proofs): never a private key.  Backends, chosen by the spec:
 *
 *   redis://HOST:PORT[/DB]    Redis over TCP (hiredis)
 *   unix:/PATH[?db=DB]        Redis over a unix socket
 *   redis-cluster://HOST:PORT[,HOST:PORT...]
 *                             Redis Cluster by its seed nodes (db 0)
 *   /ABSOLUTE/DIR             a local directory (the default, /var/lib/sk):
 *                             key "sk:carrier:<hex>" is file DIR/carrier/<hex>,
 *                             written atomically (temp, fsync, rename)
 *
 * Keys: sk:carrier:<hex sha256 of operational SPKI> -> DER carrier;
 *       sk:record:<name> -> SK record;  sk:proof:<name> -> timeline proof.
 * Key syntax: "sk:AREA:NAME", lowercase: AREA [a-z0-9-]+, NAME [a-z0-9.:-]+
 * not starting with ".", no "..", at most 300 bytes in all.  Values read
 * back are malloc()ed with a NUL after the last byte.
 *
 * Calls block, on the Redis backend for at most timeout_ms (default
 * 1000 ms) each, all of a call's I/O included (connect, every node and
 * redirection of a cluster): use them at configuration time or off the
 * event loop.  A Redis outage or a call over its deadline is
 * SK_ERR_UNAVAILABLE; a missing key is SK_ERR_NOT_FOUND; a value over
 * SK_CACHE_VALUE_MAX is SK_ERR_FORMAT, refused before it is read whole.
 * After SK_ERR_UNAVAILABLE the next call reconnects.
 */
#ifndef SK_CACHE_H
#define SK_CACHE_H

#include <stddef.h>
#include "err.h"
#include "key.h"
#include "carrier.h"

#define SK_CACHE_DEFAULT_DIR  "/var/lib/sk"
#define SK_CACHE_KEY_MAX      300
#define SK_CACHE_VALUE_MAX    (4 * 1024 * 1024)

typedef struct sk_cache_s sk_cache_t;

/* Parses spec and, for Redis, connects within timeout_ms (0: the
 * default) in all (SK_ERR_UNAVAILABLE if it cannot; the handle is still
 * returned in *c so a caller may retry later). */
int sk_cache_open(sk_cache_t **c, const char *spec, int timeout_ms,
    sk_err_t *err) SK_WUR;

/* Parses spec as sk_cache_open does, with its messages (SK_ERR_FORMAT),
 * and connects to nothing: for configuration checks that must not touch
 * the network (a directive read by nginx, before the master opens it). */
int sk_cache_check(const char *spec, sk_err_t *err) SK_WUR;

/* The spec as given, for log lines. */
const char *sk_cache_spec(const sk_cache_t *c);

int sk_cache_get(sk_cache_t *c, const char *key, unsigned char **val,
    size_t *len, sk_err_t *err) SK_WUR;          /* free(*val) */
int sk_cache_put(sk_cache_t *c, const char *key, const unsigned char *val,
    size_t len, sk_err_t *err) SK_WUR;
int sk_cache_del(sk_cache_t *c, const char *key, sk_err_t *err) SK_WUR;

/* "sk:carrier:<hex>" for an operational key's SPKI SHA-256. */
void sk_cache_carrier_key(char out[SK_CACHE_KEY_MAX + 1],
    const unsigned char spki_sha256[SK_SHA256_BYTES]);

/* The key sk_cache_put_carrier stores carrier under. */
int sk_cache_carrier_key_of(char out[SK_CACHE_KEY_MAX + 1],
    const sk_carrier_t *carrier, sk_err_t *err) SK_WUR;

/* Fetch and parse the carrier for an operational key; it must certify
 * that key (a value stored under the wrong key is SK_ERR_FORMAT). */
int sk_cache_get_carrier(sk_carrier_t **carrier, sk_cache_t *c,
    const unsigned char spki_sha256[SK_SHA256_BYTES], sk_err_t *err) SK_WUR;
int sk_cache_put_carrier(sk_cache_t *c, const sk_carrier_t *carrier,
    sk_err_t *err) SK_WUR;

void sk_cache_close(sk_cache_t *c);              /* NULL ok */

#endif
