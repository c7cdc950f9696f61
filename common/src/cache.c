/*
 * cache.c -- the key-material cache: Redis (hiredis, with one deadline
 * for each call: cache_io.c) or a local directory holding the same keys
 * as files.
 *
 * Everything stored here is public and self-verifying, so the cache is
 * not trusted: sk_cache_get_carrier checks that what comes back certifies
 * the key it was asked for.  The directory backend still validates keys
 * strictly, because a key becomes a path and must never leave DIR.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include <sk/cache.h>
#include <sk/file.h>

#include "internal.h"

#define SK_CACHE_TIMEOUT_DEFAULT  1000      /* ms */
#define SK_CACHE_SPEC_MAX         1024
#define SK_CACHE_CARRIER_PREFIX   "sk:carrier:"
/* NAME_MAX less the ".tmp.XXXXXX" of sk_file_write_atomic's temp file. */
#define SK_CACHE_DIR_NAME_MAX     (255 - 11)

/* Keys in messages are cut short so the reason after them survives the
 * 256-byte message. */
#define SK_CACHE_KEY_SHOWN        80

typedef enum {
    SK_CACHE_DIR = 0,
    SK_CACHE_TCP,
    SK_CACHE_UNIX,
    SK_CACHE_CLUSTER            /* cache_cluster.c */
} sk_cache_type_t;

struct sk_cache_s {
    sk_cache_type_t  type;
    char            *spec;      /* as given, for messages */
    char            *path;      /* DIR: the directory; UNIX: the socket */
    char            *host;      /* TCP only */
    int              port;      /* TCP only */
    unsigned long    db;        /* Redis: SELECTed on every connect */
    int              timeout_ms;    /* Redis: all of one call's I/O */
    redisContext    *redis;     /* NULL until connected and after an error */
    sk_cache_cluster_t *cluster;    /* CLUSTER only */
};


/* For "%.*s": at most SK_CACHE_KEY_SHOWN bytes of key. */
static int
sk_cache_key_width(const char *key)
{
    size_t n = strlen(key);

    return n > SK_CACHE_KEY_SHOWN ? SK_CACHE_KEY_SHOWN : (int) n;
}


/* Decimal, no sign, no leading zero, within [min, max]. */
static int
sk_cache_parse_num(unsigned long *out, const char *s, size_t len,
    unsigned long min, unsigned long max)
{
    unsigned long v = 0, d;
    size_t        i;

    if (len == 0 || (s[0] == '0' && len > 1)) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        d = (unsigned long) (s[i] - '0');
        if (v > (max - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    if (v < min) {
        return -1;
    }
    *out = v;
    return 0;
}


static int
sk_cache_parse_db(sk_cache_t *c, const char *s, sk_err_t *err)
{
    if (sk_cache_parse_num(&c->db, s, strlen(s), 0, INT_MAX) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache \"%s\": bad database \"%s\" (want 0-%d)", c->spec, s,
            INT_MAX);
    }
    return 0;
}


/* redis://HOST:PORT[/DB], HOST a name, an IPv4 or a bracketed IPv6. */
static int
sk_cache_parse_tcp(sk_cache_t *c, const char *s, sk_err_t *err)
{
    const char    *allowed = "abcdefghijklmnopqrstuvwxyz"
                             "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-";
    const char    *host = s, *end, *port;
    unsigned long  v;
    size_t         hlen, plen;

    if (strchr(s, '@') != NULL) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache \"%s\": AUTH (user@) is not supported", c->spec);
    }
    if (s[0] == '[') {
        host = s + 1;
        end = strchr(host, ']');
        allowed = "0123456789abcdefABCDEF:.";
        if (end == NULL) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "cache \"%s\": missing \"]\" after IPv6 address", c->spec);
        }
        hlen = (size_t) (end - host);
        port = end + 1;
    } else {
        hlen = strcspn(host, ":/");
        port = host + hlen;
    }
    if (hlen == 0 || strspn(host, allowed) < hlen) {
        return sk_err_set(err, SK_ERR_FORMAT, "cache \"%s\": bad host",
            c->spec);
    }
    if (*port != ':') {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache \"%s\": missing port (want redis://HOST:PORT[/DB])",
            c->spec);
    }
    port++;
    plen = strcspn(port, "/");
    if (sk_cache_parse_num(&v, port, plen, 1, 65535) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache \"%s\": bad port \"%.*s\" (want 1-65535)", c->spec,
            (int) plen, port);
    }
    c->port = (int) v;
    c->host = strndup(host, hlen);
    if (c->host == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    c->type = SK_CACHE_TCP;
    return port[plen] == '/' ? sk_cache_parse_db(c, port + plen + 1, err) : 0;
}


/* unix:/PATH[?db=DB] */
static int
sk_cache_parse_unix(sk_cache_t *c, const char *s, sk_err_t *err)
{
    size_t len = strcspn(s, "?");

    if (s[0] != '/') {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache \"%s\": socket path must be absolute", c->spec);
    }
    if (len >= sizeof(((struct sockaddr_un *) 0)->sun_path)) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache \"%s\": socket path longer than %zu bytes", c->spec,
            sizeof(((struct sockaddr_un *) 0)->sun_path) - 1);
    }
    if (s[len] == '?' && strncmp(s + len, "?db=", 4) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache \"%s\": unknown parameter \"%s\" (want ?db=N)", c->spec,
            s + len + 1);
    }
    c->path = strndup(s, len);
    if (c->path == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    c->type = SK_CACHE_UNIX;
    return s[len] == '?' ? sk_cache_parse_db(c, s + len + 4, err) : 0;
}


static int
sk_cache_parse(sk_cache_t *c, const char *spec, sk_err_t *err)
{
    size_t len;

    if (spec[0] == '\0') {
        return sk_err_set(err, SK_ERR_FORMAT, "cache: empty spec");
    }
    if (strlen(spec) > SK_CACHE_SPEC_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache: spec longer than %d bytes", SK_CACHE_SPEC_MAX);
    }
    if (strncmp(spec, "redis://", 8) == 0) {
        return sk_cache_parse_tcp(c, spec + 8, err);
    }
    if (strncmp(spec, "redis-cluster://", 16) == 0) {
        c->type = SK_CACHE_CLUSTER;
        return sk_cache_cluster_open(&c->cluster, spec + 16, c->spec, err);
    }
    if (strncmp(spec, "unix:", 5) == 0) {
        return sk_cache_parse_unix(c, spec + 5, err);
    }
    if (spec[0] == '/') {
        /* Trailing slashes would only double up in the paths we build. */
        len = strlen(spec);
        while (len > 1 && spec[len - 1] == '/') {
            len--;
        }
        c->path = strndup(spec, len);
        if (c->path == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        c->type = SK_CACHE_DIR;
        return 0;
    }
    len = strcspn(spec, ":/");
    if (spec[len] == ':' && len > 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache \"%s\": unknown scheme \"%.*s\" (want redis://, "
            "redis-cluster://, unix: or an absolute directory)", spec,
            (int) len, spec);
    }
    return sk_err_set(err, SK_ERR_FORMAT,
        "cache \"%s\": a directory must be an absolute path", spec);
}


/*
 * "sk:AREA:NAME": AREA is [a-z0-9-]+, NAME is [a-z0-9.:-]+ not starting
 * with "." and nowhere "..".  As a file, DIR/AREA/NAME: no "/", no ".",
 * no "..", no hidden file, so no key names a path outside DIR/AREA.
 */
static int
sk_cache_key_check(const char *key, size_t *area_len, sk_err_t *err)
{
    const char *area;
    size_t      len, i;
    int         w;

    len = strlen(key);
    if (len > SK_CACHE_KEY_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache key: longer than %d bytes", SK_CACHE_KEY_MAX);
    }
    for (i = 0; i < len; i++) {
        if (strchr("abcdefghijklmnopqrstuvwxyz0123456789.:-", key[i])
            == NULL)
        {
            return sk_err_set(err, SK_ERR_FORMAT,
                "cache key: byte %zu (0x%02x) is not in [a-z0-9.:-]", i,
                (unsigned char) key[i]);
        }
    }
    w = sk_cache_key_width(key);
    if (strncmp(key, "sk:", 3) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache key \"%.*s\": must start with \"sk:\"", w, key);
    }
    if (strstr(key, "..") != NULL) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache key \"%.*s\": \"..\" is not allowed", w, key);
    }
    area = key + 3;
    *area_len = strcspn(area, ":.");
    if (*area_len == 0 || area[*area_len] != ':'
        || area[*area_len + 1] == '\0' || area[*area_len + 1] == '.')
    {
        return sk_err_set(err, SK_ERR_FORMAT,
            "cache key \"%.*s\": want sk:AREA:NAME, AREA in [a-z0-9-], "
            "NAME not starting with \".\"", w, key);
    }
    return 0;
}


/* DIR/AREA/NAME, malloc()ed. */
static char *
sk_cache_dir_path(const sk_cache_t *c, const char *key, size_t area_len,
    sk_err_t *err)
{
    const char *name = key + 3 + area_len + 1;
    size_t      n = strlen(c->path) + strlen(key) + 3;
    char       *p;

    /* Both path components must fit a file name (found by fuzzing: a
     * long area gave ENAMETOOLONG, a system error, for a bad key). */
    if (area_len > SK_CACHE_DIR_NAME_MAX) {
        sk_err_set(err, SK_ERR_FORMAT, "cache key: area of %zu bytes is "
            "longer than %d bytes, too long for a directory name in %s",
            area_len, SK_CACHE_DIR_NAME_MAX, c->path);
        return NULL;
    }
    if (strlen(name) > SK_CACHE_DIR_NAME_MAX) {
        sk_err_set(err, SK_ERR_FORMAT, "cache key: name of %zu bytes is "
            "longer than %d bytes, too long for a file name in %s",
            strlen(name), SK_CACHE_DIR_NAME_MAX, c->path);
        return NULL;
    }
    p = malloc(n);
    if (p == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(p, n, "%s/%.*s/%s", c->path, (int) area_len, key + 3, name);
    return p;
}


static int
sk_cache_not_found(const sk_cache_t *c, const char *key, sk_err_t *err)
{
    return sk_err_set(err, SK_ERR_NOT_FOUND, "%s: key %.*s not found",
        c->spec, sk_cache_key_width(key), key);
}


static int
sk_cache_dir_get(sk_cache_t *c, const char *key, size_t area_len,
    unsigned char **val, size_t *len, sk_err_t *err)
{
    sk_err_t  e;
    char     *path, *buf;
    int       rc;

    path = sk_cache_dir_path(c, key, area_len, err);
    if (path == NULL) {
        return -1;
    }
    rc = sk_file_read_nofollow(&buf, len, path, SK_CACHE_VALUE_MAX, &e);
    free(path);
    if (rc == 0) {
        *val = (unsigned char *) buf;
        return 0;
    }
    if (e.code == SK_ERR_SYSTEM && e.sys_errno == ENOENT) {
        return sk_cache_not_found(c, key, err);
    }
    if (err != NULL) {
        *err = e;
    }
    return -1;
}


static int
sk_cache_dir_put(sk_cache_t *c, const char *key, size_t area_len,
    const unsigned char *val, size_t len, sk_err_t *err)
{
    char *path, *slash;
    int   rc;

    path = sk_cache_dir_path(c, key, area_len, err);
    if (path == NULL) {
        return -1;
    }
    /* NAME has no "/": the last one ends DIR/AREA. */
    slash = strrchr(path, '/');
    *slash = '\0';
    if (mkdir(path, 0755) == -1 && errno != EEXIST) {
        rc = sk_err_sys(err, "%s: cannot create directory", path);
    } else {
        *slash = '/';
        rc = sk_file_write_atomic(path, val, len, 0644, err);
    }
    free(path);
    return rc;
}


static int
sk_cache_dir_del(sk_cache_t *c, const char *key, size_t area_len,
    sk_err_t *err)
{
    char *path;
    int   rc = 0;

    path = sk_cache_dir_path(c, key, area_len, err);
    if (path == NULL) {
        return -1;
    }
    if (unlink(path) == -1) {
        rc = errno == ENOENT ? sk_cache_not_found(c, key, err)
                             : sk_err_sys(err, "%s: cannot remove", path);
    }
    free(path);
    return rc;
}


static void
sk_cache_disconnect(sk_cache_t *c)
{
    redisFree(c->redis);
    c->redis = NULL;
}


/* A reply to what; NULL (err set by cache_io.c) means the connection
 * is unusable: drop it and let the next call reconnect. */
static int
sk_cache_reply(sk_cache_t *c, redisReply *r, const char *what,
    sk_err_t *err)
{
    if (r == NULL) {
        sk_cache_disconnect(c);
        return sk_err_prefix(err, "%s", c->spec);
    }
    if (r->type == REDIS_REPLY_ERROR) {
        sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: %s: %.*s", c->spec, what,
            (int) r->len, r->str);
        freeReplyObject(r);
        return -1;
    }
    return 0;
}


static int
sk_cache_connect(sk_cache_t *c, const sk_cache_deadline_t *d,
    sk_err_t *err)
{
    redisReply *r;

    if (c->redis != NULL) {
        return 0;
    }
    c->redis = sk_cache_io_connect(c->host, c->port,
        c->type == SK_CACHE_UNIX ? c->path : NULL, d, err);
    if (c->redis == NULL) {
        return sk_err_prefix(err, "%s", c->spec);
    }
    /* Always, even db 0: one round trip proves the server answers. */
    r = sk_cache_io_command(c->redis, d, "SELECT", err, "SELECT %lu", c->db);
    if (sk_cache_reply(c, r, "SELECT", err) != 0) {
        sk_cache_disconnect(c);
        return -1;
    }
    freeReplyObject(r);
    return 0;
}


/* One command on key (and val for SET), all of it by one deadline; the
 * reply is checked for transport and server errors, its type is the
 * caller's business. */
static redisReply *
sk_cache_redis(sk_cache_t *c, const char *cmd, const char *key,
    const unsigned char *val, size_t len, sk_err_t *err)
{
    sk_cache_deadline_t  d;
    redisReply          *r;

    sk_cache_deadline(&d, c->timeout_ms);
    if (c->type == SK_CACHE_CLUSTER) {
        r = sk_cache_cluster_command(c->cluster, &d, cmd, key, val, len,
            err);
        if (r != NULL && r->type == REDIS_REPLY_ERROR) {
            sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: %s: %.*s", c->spec, cmd,
                (int) r->len, r->str);
            freeReplyObject(r);
            r = NULL;
        }
        return r;
    }
    if (sk_cache_connect(c, &d, err) != 0) {
        return NULL;
    }
    if (val != NULL) {
        r = sk_cache_io_command(c->redis, &d, cmd, err, "%s %b %b", cmd, key,
            strlen(key), val, len);
    } else {
        r = sk_cache_io_command(c->redis, &d, cmd, err, "%s %b", cmd, key,
            strlen(key));
    }
    return sk_cache_reply(c, r, cmd, err) == 0 ? r : NULL;
}


static int
sk_cache_unexpected(sk_cache_t *c, redisReply *r, const char *cmd,
    sk_err_t *err)
{
    sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: %s: unexpected reply type %d",
        c->spec, cmd, r->type);
    freeReplyObject(r);
    return -1;
}


static int
sk_cache_redis_get(sk_cache_t *c, const char *key, unsigned char **val,
    size_t *len, sk_err_t *err)
{
    redisReply *r;

    r = sk_cache_redis(c, "GET", key, NULL, 0, err);
    if (r == NULL) {
        return -1;
    }
    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return sk_cache_not_found(c, key, err);
    }
    if (r->type != REDIS_REPLY_STRING) {
        return sk_cache_unexpected(c, r, "GET", err);
    }
    /* NUL-terminated like sk_file_read's, so text values are strings. */
    *val = malloc(r->len + 1);
    if (*val == NULL) {
        freeReplyObject(r);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    memcpy(*val, r->str, r->len);
    (*val)[r->len] = '\0';
    *len = r->len;
    freeReplyObject(r);
    return 0;
}


static int
sk_cache_redis_put(sk_cache_t *c, const char *key, const unsigned char *val,
    size_t len, sk_err_t *err)
{
    redisReply *r;

    /* %b takes a pointer even for an empty value. */
    r = sk_cache_redis(c, "SET", key,
        val != NULL ? val : (const unsigned char *) "", len, err);
    if (r == NULL) {
        return -1;
    }
    if (r->type != REDIS_REPLY_STATUS) {
        return sk_cache_unexpected(c, r, "SET", err);
    }
    freeReplyObject(r);
    return 0;
}


static int
sk_cache_redis_del(sk_cache_t *c, const char *key, sk_err_t *err)
{
    redisReply *r;
    long long   n;

    r = sk_cache_redis(c, "DEL", key, NULL, 0, err);
    if (r == NULL) {
        return -1;
    }
    if (r->type != REDIS_REPLY_INTEGER) {
        return sk_cache_unexpected(c, r, "DEL", err);
    }
    n = r->integer;
    freeReplyObject(r);
    return n == 0 ? sk_cache_not_found(c, key, err) : 0;
}


/* A handle for spec, parsed and not connected. */
static int
sk_cache_new(sk_cache_t **out, const char *spec, int timeout_ms,
    sk_err_t *err)
{
    sk_cache_t *c;

    *out = NULL;
    if (timeout_ms < 0) {
        return sk_err_set(err, SK_ERR_USAGE, "cache: negative timeout %d",
            timeout_ms);
    }
    if (timeout_ms == 0) {
        timeout_ms = SK_CACHE_TIMEOUT_DEFAULT;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    c->timeout_ms = timeout_ms;
    c->spec = strdup(spec);
    if (c->spec == NULL) {
        sk_cache_close(c);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    if (sk_cache_parse(c, spec, err) != 0) {
        sk_cache_close(c);
        return -1;
    }
    *out = c;
    return 0;
}


int
sk_cache_open(sk_cache_t **out, const char *spec, int timeout_ms,
    sk_err_t *err)
{
    sk_cache_deadline_t  d;
    sk_cache_t          *c;

    if (sk_cache_new(out, spec, timeout_ms, err) != 0) {
        return -1;
    }
    c = *out;
    sk_cache_deadline(&d, c->timeout_ms);
    if (c->type == SK_CACHE_CLUSTER) {
        return sk_cache_cluster_connect(c->cluster, &d, err);
    }
    return c->type == SK_CACHE_DIR ? 0 : sk_cache_connect(c, &d, err);
}


int
sk_cache_check(const char *spec, sk_err_t *err)
{
    sk_cache_t *c;

    if (sk_cache_new(&c, spec, 0, err) != 0) {
        return -1;
    }
    sk_cache_close(c);
    return 0;
}


const char *
sk_cache_spec(const sk_cache_t *c)
{
    return c->spec;
}


int
sk_cache_get(sk_cache_t *c, const char *key, unsigned char **val,
    size_t *len, sk_err_t *err)
{
    size_t area_len;

    if (sk_cache_key_check(key, &area_len, err) != 0) {
        return -1;
    }
    if (c->type == SK_CACHE_DIR) {
        return sk_cache_dir_get(c, key, area_len, val, len, err);
    }
    return sk_cache_redis_get(c, key, val, len, err);
}


int
sk_cache_put(sk_cache_t *c, const char *key, const unsigned char *val,
    size_t len, sk_err_t *err)
{
    size_t area_len;

    if (sk_cache_key_check(key, &area_len, err) != 0) {
        return -1;
    }
    if (len > SK_CACHE_VALUE_MAX) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: key %.*s: value of %zu "
            "bytes is larger than %d", c->spec, sk_cache_key_width(key), key,
            len, SK_CACHE_VALUE_MAX);
    }
    if (c->type == SK_CACHE_DIR) {
        return sk_cache_dir_put(c, key, area_len, val, len, err);
    }
    return sk_cache_redis_put(c, key, val, len, err);
}


int
sk_cache_del(sk_cache_t *c, const char *key, sk_err_t *err)
{
    size_t area_len;

    if (sk_cache_key_check(key, &area_len, err) != 0) {
        return -1;
    }
    if (c->type == SK_CACHE_DIR) {
        return sk_cache_dir_del(c, key, area_len, err);
    }
    return sk_cache_redis_del(c, key, err);
}


void
sk_cache_carrier_key(char out[SK_CACHE_KEY_MAX + 1],
    const unsigned char spki_sha256[SK_SHA256_BYTES])
{
    char fp[SK_FINGERPRINT_SIZE];

    /* "sha256:<hex>" -> "sk:carrier:<hex>" */
    sk_fingerprint_format(fp, spki_sha256);
    snprintf(out, SK_CACHE_KEY_MAX + 1, SK_CACHE_CARRIER_PREFIX "%s",
        fp + 7);
}


static int
sk_cache_carrier_hash(unsigned char out[SK_SHA256_BYTES],
    const sk_carrier_t *carrier, sk_err_t *err)
{
    const unsigned char *spki;
    size_t               len;

    spki = sk_carrier_subject_spki(carrier, &len);
    if (spki == NULL
        || EVP_Digest(spki, len, out, NULL, EVP_sha256(), NULL) != 1)
    {
        return sk_err_crypto(err, "carrier: cannot hash subject key");
    }
    return 0;
}


int
sk_cache_carrier_key_of(char out[SK_CACHE_KEY_MAX + 1],
    const sk_carrier_t *carrier, sk_err_t *err)
{
    unsigned char md[SK_SHA256_BYTES];

    if (sk_cache_carrier_hash(md, carrier, err) != 0) {
        return -1;
    }
    sk_cache_carrier_key(out, md);
    return 0;
}


int
sk_cache_get_carrier(sk_carrier_t **carrier, sk_cache_t *c,
    const unsigned char spki_sha256[SK_SHA256_BYTES], sk_err_t *err)
{
    unsigned char  *der, got[SK_SHA256_BYTES];
    sk_carrier_t   *cr;
    size_t          len;
    char            key[SK_CACHE_KEY_MAX + 1], fp[SK_FINGERPRINT_SIZE];
    int             rc;

    *carrier = NULL;
    sk_cache_carrier_key(key, spki_sha256);
    if (sk_cache_get(c, key, &der, &len, err) != 0) {
        return -1;
    }
    rc = sk_carrier_from_der(&cr, der, len, err);
    free(der);
    if (rc != 0) {
        return sk_err_prefix(err, "%s: key %s", c->spec, key);
    }
    if (sk_cache_carrier_hash(got, cr, err) != 0) {
        sk_carrier_free(cr);
        return -1;
    }
    if (memcmp(got, spki_sha256, SK_SHA256_BYTES) != 0) {
        sk_carrier_free(cr);
        sk_fingerprint_format(fp, got);
        return sk_err_set(err, SK_ERR_FORMAT, "%s: key %s holds a carrier "
            "for another key (%s): poisoned cache", c->spec, key, fp);
    }
    *carrier = cr;
    return 0;
}


int
sk_cache_put_carrier(sk_cache_t *c, const sk_carrier_t *carrier,
    sk_err_t *err)
{
    const unsigned char *der;
    size_t               len;
    char                 key[SK_CACHE_KEY_MAX + 1];

    if (sk_cache_carrier_key_of(key, carrier, err) != 0) {
        return -1;
    }
    der = sk_carrier_get0_der(carrier, &len);
    return sk_cache_put(c, key, der, len, err);
}


void
sk_cache_close(sk_cache_t *c)
{
    if (c == NULL) {
        return;
    }
    redisFree(c->redis);
    sk_cache_cluster_close(c->cluster);
    free(c->spec);
    free(c->path);
    free(c->host);
    free(c);
}
