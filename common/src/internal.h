/*
 * internal.h -- helpers shared by several libsk source files; not part of
 * the public API.  One section per owner.
 */
#ifndef SK_INTERNAL_H
#define SK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <sk/err.h>
#include <sk/key.h>

/* entry.c: 1 if the comma-separated list s[0..len) has the element
 * name[0..nlen) (Rebinder-Names lookups), 0 otherwise. */
int sk_list_has(const char *s, size_t len, const char *name, size_t nlen);

/* key.c: a digest context ready to sign (sign=1) or verify with key, set
 * up as architecture.md fixes (Ed25519 pure, ECDSA and RSA-PSS with
 * SHA-256, digest-sized salt); NULL on failure, OpenSSL's queue says why.
 * Certificates are signed through it too, so the rules live in one place. */
EVP_MD_CTX *sk_key_md_ctx(const sk_key_t *key, int sign);

/* key.c: another handle on key's key, for a caller that frees its own
 * (the EVP_PKEY is shared, by reference). */
int sk_key_dup(sk_key_t **out, const sk_key_t *key, sk_err_t *err);

/* key.c: the contents of a memory BIO as a malloc()ed, NUL-terminated
 * string (PEM output). */
int sk_bio_to_str(char **out, size_t *len, BIO *bio, sk_err_t *err);

/* carrier.c: one DER header of the expected universal tag (and
 * constructed bit) at *p, definite length, within end; on success *p
 * points at the contents and *clen is their length.  Errors name field. */
int sk_der_next(const unsigned char **p, const unsigned char *end, int tag,
    int constructed, size_t *clen, const char *field, sk_err_t *err);

/* carrier.c: add to x a non-critical extension oid (dotted text) whose
 * value is der. */
int sk_cert_add_ext_der(X509 *x, const char *oid, const unsigned char *der,
    size_t len, sk_err_t *err);

/* carrier.c: certificate building, shared with the local CA (mint.c):
 * a random positive 16-byte serial; an extension from its OpenSSL
 * configuration text (x is its own issuer for the context); the subject
 * (nid NID_subject_key_identifier) or authority key identifier of key;
 * and the signature by key (sk_key_md_ctx's parameters). */
int sk_cert_set_serial(X509 *x, sk_err_t *err);
int sk_cert_add_conf(X509 *x, int nid, const char *value, sk_err_t *err);
int sk_cert_add_keyid(X509 *x, const sk_key_t *key, int nid, sk_err_t *err);
int sk_cert_sign(X509 *x, const sk_key_t *key, sk_err_t *err);

/* cache_io.c: Redis I/O with one deadline for a whole cache call. */
struct redisContext;
struct redisReply;
typedef struct {
    long long  at;              /* CLOCK_MONOTONIC ms the call ends */
    int        ms;              /* the call's budget, for messages */
} sk_cache_deadline_t;
void sk_cache_deadline(sk_cache_deadline_t *d, int ms);
/* A non-blocking connection to host:port, or to the unix socket path if
 * not NULL, made by d; NULL with err (no prefix: the caller names it). */
struct redisContext *sk_cache_io_connect(const char *host, int port,
    const char *path, const sk_cache_deadline_t *d, sk_err_t *err);
/* One command (hiredis format) and its reply, by d; a reply holding a
 * value over SK_CACHE_VALUE_MAX is refused while it is read.  NULL with
 * err ("what: ..."): then the connection must be dropped. */
struct redisReply *sk_cache_io_command(struct redisContext *ctx,
    const sk_cache_deadline_t *d, const char *what, sk_err_t *err,
    const char *fmt, ...);

/* cache_cluster.c: Redis Cluster for cache.c (redis-cluster://SEEDS). */
typedef struct sk_cache_cluster_s sk_cache_cluster_t;
/* Parse "HOST:PORT[,HOST:PORT...]" (spec: the whole, kept for messages,
 * must outlive the handle); no connection yet. */
int sk_cache_cluster_open(sk_cache_cluster_t **cl, const char *seeds,
    const char *spec, sk_err_t *err);
/* Read the slot map if none is held (SK_ERR_UNAVAILABLE if no node
 * gives one). */
int sk_cache_cluster_connect(sk_cache_cluster_t *cl,
    const sk_cache_deadline_t *d, sk_err_t *err);
/* cmd key [val] on the master of key's slot, following MOVED and ASK;
 * NULL with err on a transport failure, else the reply (an error reply
 * other than a redirection included) for the caller to free. */
struct redisReply *sk_cache_cluster_command(sk_cache_cluster_t *cl,
    const sk_cache_deadline_t *d, const char *cmd, const char *key,
    const unsigned char *val, size_t len, sk_err_t *err);
/* A "MOVED 3999 127.0.0.1:6381" / "ASK ..." error reply of len bytes:
 * the index of the node it names (*ask: which), added to the node table
 * if new (in place of a learnt node no slot names, never keep, when the
 * table is full); -1 if it is no redirection or names no usable node. */
int sk_cache_cluster_redirect(sk_cache_cluster_t *cl, const char *msg,
    size_t len, int *ask, int keep);
/* Node i of the table (its host; *port), NULL past the end. */
const char *sk_cache_cluster_node(const sk_cache_cluster_t *cl, int i,
    int *port);
/* The cluster slot of a key: CRC16 of it, or of its {hash tag}. */
unsigned sk_cache_cluster_slot(const char *key, size_t len);
void sk_cache_cluster_close(sk_cache_cluster_t *cl);

/* map_stage.c: a staged name map's rows (map_store.c), by kind
 * (SK_MAP_ROW_NODE: a map.node row, SK_MAP_ROW_LEAF: a map.leaf row,
 * SK_MAP_ROW_TIP: the key a one-key subtree holds, at its node key) and
 * key, each as its table stores it. */
#define SK_MAP_ROW_NODE  1
#define SK_MAP_ROW_LEAF  2
#define SK_MAP_ROW_TIP   3
typedef struct {
    uint32_t       hash;
    unsigned char  kind, klen, vlen;
    unsigned char  key[41];             /* space, depth, 32-byte prefix */
    unsigned char  val[193];            /* flags and three node rows */
} sk_map_row_t;
typedef struct sk_map_stage_s sk_map_stage_t;
int sk_map_stage_new(sk_map_stage_t **out, sk_err_t *err);
void sk_map_stage_free(sk_map_stage_t *s);                  /* NULL ok */
void sk_map_stage_clear(sk_map_stage_t *s);
size_t sk_map_stage_count(const sk_map_stage_t *s);
/* The row of (kind, key), NULL if none is staged. */
const sk_map_row_t *sk_map_stage_get(const sk_map_stage_t *s, unsigned kind,
    const unsigned char *key, size_t klen);
/* Add or replace a row. */
int sk_map_stage_put(sk_map_stage_t *s, unsigned kind,
    const unsigned char *key, size_t klen, const unsigned char *val,
    size_t vlen, sk_err_t *err);
/* fn on every row, by kind, then key in LMDB's order; stops at the first
 * that fails. */
int sk_map_stage_each(const sk_map_stage_t *s,
    int (*fn)(const sk_map_row_t *r, void *arg, sk_err_t *err), void *arg,
    sk_err_t *err);

/* httpd_stats.c: what sk_httpd counts (sk/httpd.h, sk_httpd_metrics_t);
 * NULL stats: nothing counted. */
typedef struct sk_httpd_stats_s  sk_httpd_stats_t;
struct sk_httpd_metrics_s;
int sk_httpd_stats_new(sk_httpd_stats_t **st, struct sk_httpd_metrics_s *mc,
    uint64_t connections, sk_err_t *err);
void sk_httpd_stats_free(sk_httpd_stats_t *st);
/* A connection opened (+1) or closed (-1); n closed by the reaper. */
void sk_httpd_stats_conn(sk_httpd_stats_t *st, int delta);
void sk_httpd_stats_reaped(sk_httpd_stats_t *st, uint64_t n);
/* A request begins: its endpoint's index, counted in flight. */
unsigned sk_httpd_stats_begin(sk_httpd_stats_t *st, const char *url,
    const char *method);
/* It ended after us microseconds, answered with status (0: none). */
void sk_httpd_stats_end(sk_httpd_stats_t *st, unsigned ep, unsigned status,
    uint64_t us);
/* The front refused a client (SK_HTTPD_R_*) before any work. */
enum {
    SK_HTTPD_R_RATE = 0,            /* 429 past rate_per_client */
    SK_HTTPD_R_CLIENT,              /* past connections_per_ip */
    SK_HTTPD_R_FULL,                /* all taken, none to make room from */
    SK_HTTPD_R_EVICTED,             /* closed to make room */
    SK_HTTPD_R_GONE,                /* its client left first */
    SK_HTTPD_REASONS
};
extern const char *const  sk_httpd_reasons[SK_HTTPD_REASONS];
void sk_httpd_stats_refused(sk_httpd_stats_t *st, unsigned reason);

/* httpd_client.c: the clients httpd.c shares out among (an IPv4 address
 * or an IPv6 /64, as a 64-bit key), their connections and their token
 * buckets of costly requests.  Not locked: httpd.c holds its lock. */
struct sockaddr;
typedef struct sk_httpd_client_s  sk_httpd_client_t;
struct sk_httpd_client_s {
    sk_httpd_client_t  *next;           /* hash chain */
    uint64_t            key;
    uint64_t            conns;          /* connections it holds now */
    double              tokens;         /* costly requests it may make */
    uint64_t            at;             /* ms tokens was refilled to */
};
typedef struct {
    sk_httpd_client_t **bucket;
    size_t              n;
    double              rate, burst;    /* tokens a second, at most */
} sk_httpd_clients_t;
/* The client of a socket address; -1 for neither IPv4 nor IPv6. */
int sk_httpd_client_key(uint64_t *key, const struct sockaddr *sa);
/* The same from a numeric address ("X-Real-IP"); -1 if it is none. */
int sk_httpd_client_parse(uint64_t *key, const char *s);
int sk_httpd_clients_init(sk_httpd_clients_t *t, double rate, double burst);
void sk_httpd_clients_free(sk_httpd_clients_t *t);
/* key's entry (made, its bucket full, if make), or NULL. */
sk_httpd_client_t *sk_httpd_clients_get(sk_httpd_clients_t *t, uint64_t key,
    uint64_t now_ms, int make);
/* Take a token: 0, or the seconds until one is there (Retry-After). */
uint64_t sk_httpd_client_take(const sk_httpd_clients_t *t,
    sk_httpd_client_t *c, uint64_t now_ms);
/* Drop the entries of clients with no connection and a full bucket. */
void sk_httpd_clients_sweep(sk_httpd_clients_t *t, uint64_t now_ms);

#endif
