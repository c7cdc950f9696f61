/*
 * client_trust.c -- the client's trust set: timelines (TID, key,
 * checkpoint origin), mirrors (URL, key, onion), design 4.b's
 * thresholds, Tor; and the trust file that lists them.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/addr.h>
#include <sk/client.h>
#include <sk/dnssec.h>
#include <sk/file.h>
#include <sk/onion.h>

#include "../internal.h"

#define SK_TRUST_FILE_MAX  (64 * 1024)
#define SK_TRUST_LINE_MAX  2048


void
sk_client_trust_init(sk_client_trust_t *t)
{
    memset(t, 0, sizeof(*t));
    t->t1 = SK_CLIENT_T1;
    t->t2 = SK_CLIENT_T2;
    t->t3 = SK_CLIENT_T3;
    t->t4 = SK_CLIENT_T4;
    t->drop_slack = SK_CLIENT_DROP_SLACK;
    t->max_derelict = SK_CLIENT_MAX_DERELICT;
    t->n_retries = SK_CLIENT_N_RETRIES;
    t->fresh_percent = SK_CLIENT_FRESH_PERCENT;
    t->staple_max_age = SK_STAPLE_MAX_AGE;
    t->staple_refresh = SK_STAPLE_REFRESH;
    t->staple_retry = SK_STAPLE_RETRY;
    snprintf(t->tor, sizeof(t->tor), "%s", SK_CLIENT_TOR_DEFAULT);
    snprintf(t->dnssec_anchors, sizeof(t->dnssec_anchors), "%s",
        SK_DNSSEC_ANCHORS);
    t->mirror_tor = SK_MIRROR_TOR_FALLBACK;
    t->mirror_timeout = SK_CLIENT_MIRROR_TIMEOUT;
    t->tor_timeout = SK_CLIENT_TOR_TIMEOUT;
}


int
sk_client_trust_add_timeline(sk_client_trust_t *t, uint64_t tid,
    const sk_key_t *key, const char *origin, sk_err_t *err)
{
    sk_client_timeline_t  *tl;
    char                   dflt[64];

    if (sk_client_trust_find(t, tid) != NULL) {
        return sk_err_set(err, SK_ERR_EXISTS, "timeline %" PRIu64
            " listed twice", tid);
    }
    if (t->ntl == SK_CLIENT_MAX_TIMELINES) {
        return sk_err_set(err, SK_ERR_USAGE, "more than %d timelines",
            SK_CLIENT_MAX_TIMELINES);
    }
    if (origin == NULL) {
        snprintf(dflt, sizeof(dflt), "sk-timeline-%" PRIu64, tid);
        origin = dflt;
    }
    if (origin[0] == '\0' || strlen(origin) >= SK_CHECKPOINT_ORIGIN_MAX
        || strpbrk(origin, " +\n") != NULL)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "timeline %" PRIu64
            ": origin \"%.64s\" is not a valid key name", tid, origin);
    }
    tl = &t->tl[t->ntl];
    /* sk_key_dup copies the SPKI: encoding it again through OpenSSL
     * 3.0's encoder framework cost `sk fetch` 1.4 M instructions per
     * trusted timeline (docs/benchmarks.md, "Fetch"). */
    if (sk_key_dup(&tl->key, key, err) != 0) {
        return -1;
    }
    tl->tid = tid;
    snprintf(tl->origin, sizeof(tl->origin), "%s", origin);
    t->ntl++;
    return 0;
}


/* The length of url without its trailing '/'s: how mirrors compare. */
static size_t
sk_trust_url_len(const char *url)
{
    size_t  len = strlen(url);

    while (len > 0 && url[len - 1] == '/') {
        len--;
    }
    return len;
}


/* The index of the mirror url (len bytes, no trailing '/'), or -1. */
static long
sk_trust_mirror_find(const sk_client_trust_t *t, const char *url, size_t len)
{
    size_t  i;

    for (i = 0; i < t->nmirrors; i++) {
        if (strlen(t->mirrors[i].url) == len
            && memcmp(t->mirrors[i].url, url, len) == 0)
        {
            return (long) i;
        }
    }
    return -1;
}


/* 1 if a and b are the same public key. */
static int
sk_trust_key_same(const sk_key_t *a, const sk_key_t *b)
{
    char  fa[SK_FINGERPRINT_SIZE], fb[SK_FINGERPRINT_SIZE];

    sk_key_fingerprint(fa, a);
    sk_key_fingerprint(fb, b);
    return strcmp(fa, fb) == 0;
}


int
sk_client_trust_add_mirror(sk_client_trust_t *t, const char *url,
    const sk_key_t *key, sk_err_t *err)
{
    sk_client_mirror_t  *m;
    size_t               len = sk_trust_url_len(url);
    long                 i;

    if (len == 0 || len >= SK_CLIENT_URL_MAX
        || (strncmp(url, "http://", 7) != 0
            && strncmp(url, "https://", 8) != 0))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "mirror \"%.64s\": want an "
            "http:// or https:// URL", url);
    }
    if (key == NULL) {
        return sk_err_set(err, SK_ERR_USAGE, "mirror \"%.64s\": no key: "
            "its answers are believed only with its signature over the "
            "client's nonce (an old answer replayed on the path would "
            "otherwise pass for a fresh one)", url);
    }
    i = sk_trust_mirror_find(t, url, len);
    if (i >= 0) {
        /* The same mirror and key again: once is enough.  Another key
         * cannot be right too, and keeping either silently would check
         * its answers under a key nobody chose. */
        if (sk_trust_key_same(t->mirrors[i].key, key)) {
            return 0;
        }
        return sk_err_set(err, SK_ERR_EXISTS, "mirror \"%.64s\" listed "
            "twice with different keys", t->mirrors[i].url);
    }
    if (t->nmirrors == SK_CLIENT_MAX_MIRRORS) {
        return sk_err_set(err, SK_ERR_USAGE, "more than %d mirrors",
            SK_CLIENT_MAX_MIRRORS);
    }
    m = &t->mirrors[t->nmirrors];
    if (sk_key_dup(&m->key, key, err) != 0) {
        return -1;
    }
    memcpy(m->url, url, len);
    m->url[len] = '\0';
    m->onion[0] = '\0';
    t->nmirrors++;
    return 0;
}


int
sk_client_trust_set_onion(sk_client_trust_t *t, const char *url,
    const char *onion, sk_err_t *err)
{
    sk_client_mirror_t  *m;
    char                 base[SK_CLIENT_URL_MAX];
    const char          *colon = strchr(onion, ':');
    size_t               alen = colon != NULL ? (size_t) (colon - onion)
                                : strlen(onion);
    unsigned long        port = 80;
    char                *end;
    long                 i;

    i = sk_trust_mirror_find(t, url, sk_trust_url_len(url));
    if (i < 0) {
        return sk_err_set(err, SK_ERR_NOT_FOUND, "mirror \"%.64s\" is not "
            "listed", url);
    }
    m = &t->mirrors[i];
    if (colon != NULL) {
        errno = 0;
        port = strtoul(colon + 1, &end, 10);
        if (colon[1] < '1' || colon[1] > '9' || *end != '\0' || errno != 0
            || port > 65535)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "mirror \"%.64s\": onion "
                "\"%.80s\": bad port", m->url, onion);
        }
    }
    if (sk_onion_address_check(onion, alen, err) != 0) {
        return sk_err_prefix(err, "mirror \"%.64s\": onion", m->url);
    }
    snprintf(base, sizeof(base), "http://%.*s%s%.6s", (int) alen, onion,
        port != 80 ? ":" : "", port != 80 ? colon + 1 : "");
    if (m->onion[0] != '\0' && strcmp(m->onion, base) != 0) {
        return sk_err_set(err, SK_ERR_EXISTS, "mirror \"%.64s\": another "
            "onion than %s", m->url, m->onion);
    }
    snprintf(m->onion, sizeof(m->onion), "%s", base);
    return 0;
}


int
sk_client_trust_set_tor(sk_client_trust_t *t, const char *addr,
    sk_err_t *err)
{
    struct sockaddr_storage  ss;

    if (strlen(addr) >= sizeof(t->tor)
        || sk_addr_parse(&ss, addr, NULL) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "tor \"%.64s\": want a Tor "
            "SOCKS port as IPv4:PORT or [IPv6]:PORT", addr);
    }
    snprintf(t->tor, sizeof(t->tor), "%s", addr);
    return 0;
}


const sk_client_timeline_t *
sk_client_trust_find(const sk_client_trust_t *t, uint64_t tid)
{
    size_t  i;

    for (i = 0; i < t->ntl; i++) {
        if (t->tl[i].tid == tid) {
            return &t->tl[i];
        }
    }
    return NULL;
}


void
sk_client_trust_free(sk_client_trust_t *t)
{
    size_t  i;

    if (t == NULL) {
        return;
    }
    for (i = 0; i < t->ntl; i++) {
        sk_key_free(t->tl[i].key);
    }
    for (i = 0; i < t->nmirrors; i++) {
        sk_key_free(t->mirrors[i].key);
    }
    sk_client_trust_init(t);
}


/* The numeric parameters: name, int64_t seconds (else unsigned), field. */
static const struct {
    const char  *name;
    int          seconds;
    size_t       off;
} sk_trust_nums[] = {
    { "t1", 1, offsetof(sk_client_trust_t, t1) },
    { "t2", 1, offsetof(sk_client_trust_t, t2) },
    { "t3", 1, offsetof(sk_client_trust_t, t3) },
    { "t4", 1, offsetof(sk_client_trust_t, t4) },
    { "drop_slack", 1, offsetof(sk_client_trust_t, drop_slack) },
    { "staple_max_age", 1, offsetof(sk_client_trust_t, staple_max_age) },
    { "staple_refresh", 1, offsetof(sk_client_trust_t, staple_refresh) },
    { "staple_retry", 1, offsetof(sk_client_trust_t, staple_retry) },
    { "max_derelict", 0, offsetof(sk_client_trust_t, max_derelict) },
    { "retries", 0, offsetof(sk_client_trust_t, n_retries) },
    { "fresh_percent", 0, offsetof(sk_client_trust_t, fresh_percent) },
    { "mirror_timeout", 1, offsetof(sk_client_trust_t, mirror_timeout) },
    { "tor_timeout", 1, offsetof(sk_client_trust_t, tor_timeout) },
};

#define SK_TRUST_NNUMS  (sizeof(sk_trust_nums) / sizeof(sk_trust_nums[0]))


/*
 * One trust file being parsed: where it is, and the line each parameter,
 * timeline and mirror was first given on (0: not by this file), so that a
 * repeat is refused naming both lines instead of one silently winning.
 */
typedef struct {
    char      dir[4096];
    unsigned  lineno;
    unsigned  num_line[SK_TRUST_NNUMS];
    unsigned  tor_line;
    unsigned  fail_open_line;
    unsigned  anchors_line;
    unsigned  mirror_tor_line;
    unsigned  tl_line[SK_CLIENT_MAX_TIMELINES];
    unsigned  mirror_line[SK_CLIENT_MAX_MIRRORS];
} sk_trust_parse_t;


/* file, relative to the trust file's directory dir: path (cut short at
 * SK_CLIENT_PATH_MAX, so then not found). */
static void
sk_trust_path(char path[SK_CLIENT_PATH_MAX], const char *dir,
    const char *file)
{
    int  abs = file[0] == '/' || dir[0] == '\0';

    if (snprintf(path, SK_CLIENT_PATH_MAX, "%s%s%s", abs ? "" : dir,
            abs ? "" : "/", file) >= SK_CLIENT_PATH_MAX)
    {
        path[SK_CLIENT_PATH_MAX - 1] = '\0';
    }
}


/* A key path relative to the trust file's directory. */
static int
sk_trust_load_key(sk_key_t **key, const char *dir, const char *file,
    sk_err_t *err)
{
    char  path[SK_CLIENT_PATH_MAX];

    sk_trust_path(path, dir, file);
    return sk_key_load_public(key, path, err);
}


static int
sk_trust_u64(uint64_t *out, const char *v, uint64_t max)
{
    char  *end;

    errno = 0;
    if (*v < '0' || *v > '9' || (v[0] == '0' && v[1] != '\0')) {
        return -1;
    }
    *out = strtoull(v, &end, 10);
    return (*end != '\0' || errno != 0 || *out > max) ? -1 : 0;
}


static int
sk_trust_timeline(sk_client_trust_t *t, sk_trust_parse_t *st, char *v,
    sk_err_t *err)
{
    char      *tidv, *file, *origin, *extra, *save = NULL;
    uint64_t   tid;
    sk_key_t  *key;
    size_t     i;
    int        rc;

    tidv = strtok_r(v, " \t", &save);
    file = strtok_r(NULL, " \t", &save);
    origin = strtok_r(NULL, " \t", &save);
    extra = strtok_r(NULL, " \t", &save);
    if (tidv == NULL || file == NULL || extra != NULL
        || sk_trust_u64(&tid, tidv, UINT64_MAX) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"timeline\": want TID PUBKEY-FILE [ORIGIN]");
    }
    for (i = 0; i < t->ntl; i++) {
        if (t->tl[i].tid == tid && st->tl_line[i] != 0) {
            return sk_err_set(err, SK_ERR_EXISTS, "timeline %" PRIu64
                " listed twice (first at line %u)", tid, st->tl_line[i]);
        }
    }
    if (sk_trust_load_key(&key, st->dir, file, err) != 0) {
        return -1;
    }
    i = t->ntl;
    rc = sk_client_trust_add_timeline(t, tid, key, origin, err);
    if (rc == 0) {
        st->tl_line[i] = st->lineno;
    }
    sk_key_free(key);
    return rc;
}


static int
sk_trust_mirror(sk_client_trust_t *t, sk_trust_parse_t *st, char *v,
    sk_err_t *err)
{
    char      *url, *file, *onion, *extra, *save = NULL;
    sk_key_t  *key = NULL;
    size_t     n;
    long       i;
    int        rc;

    url = strtok_r(v, " \t", &save);
    file = strtok_r(NULL, " \t", &save);
    onion = strtok_r(NULL, " \t", &save);
    extra = strtok_r(NULL, " \t", &save);
    if (url == NULL || file == NULL || extra != NULL
        || (onion != NULL && strncmp(onion, "onion=", 6) != 0))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"mirror\": want URL "
            "PUBKEY-FILE [onion=ADDRESS[:PORT]]");
    }
    if (sk_trust_load_key(&key, st->dir, file, err) != 0) {
        return -1;
    }
    /* sk_client_trust_add_mirror refuses another key too; here the
     * message can say where the first one is. */
    i = sk_trust_mirror_find(t, url, sk_trust_url_len(url));
    if (i >= 0 && st->mirror_line[i] != 0
        && !sk_trust_key_same(t->mirrors[i].key, key))
    {
        rc = sk_err_set(err, SK_ERR_EXISTS, "mirror \"%.64s\" listed twice "
            "with different keys (first at line %u)", t->mirrors[i].url,
            st->mirror_line[i]);
    } else {
        n = t->nmirrors;
        rc = sk_client_trust_add_mirror(t, url, key, err);
        if (rc == 0 && t->nmirrors > n) {
            st->mirror_line[n] = st->lineno;
        }
        if (rc == 0 && onion != NULL) {
            rc = sk_client_trust_set_onion(t, url, onion + 6, err);
        }
    }
    sk_key_free(key);
    return rc;
}


static int
sk_trust_mirror_tor(sk_client_trust_t *t, sk_trust_parse_t *st,
    const char *v, sk_err_t *err)
{
    static const char *const  modes[] = { "fallback", "always", "never" };
    size_t                    i;

    if (st->mirror_tor_line != 0) {
        return sk_err_set(err, SK_ERR_EXISTS,
            "\"mirror_tor\" given twice (first at line %u)",
            st->mirror_tor_line);
    }
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(v, modes[i]) == 0) {
            t->mirror_tor = (sk_mirror_tor_t) i;
            st->mirror_tor_line = st->lineno;
            return 0;
        }
    }
    return sk_err_set(err, SK_ERR_FORMAT, "\"mirror_tor\": illegal value "
        "\"%.32s\" (fallback, always or never)", v);
}


static int
sk_trust_tor(sk_client_trust_t *t, sk_trust_parse_t *st, const char *v,
    sk_err_t *err)
{
    if (st->tor_line != 0) {
        return sk_err_set(err, SK_ERR_EXISTS,
            "\"tor\" given twice (first at line %u)", st->tor_line);
    }
    if (sk_client_trust_set_tor(t, v, err) != 0) {
        return -1;
    }
    st->tor_line = st->lineno;
    return 0;
}


static const char *const  sk_fail_open_names[] = {
    [SK_FAIL_OPEN_EVIDENCE] = "evidence",
    [SK_FAIL_OPEN_NEVER] = "never",
    [SK_FAIL_OPEN_UNSAFE_SILENCE] = "unsafe-on-silence"
};


const char *
sk_client_fail_open_name(sk_fail_open_t f)
{
    return (size_t) f < sizeof(sk_fail_open_names)
        / sizeof(sk_fail_open_names[0]) ? sk_fail_open_names[f] : "?";
}


static int
sk_trust_fail_open(sk_client_trust_t *t, sk_trust_parse_t *st,
    const char *v, sk_err_t *err)
{
    size_t  i;

    if (st->fail_open_line != 0) {
        return sk_err_set(err, SK_ERR_EXISTS,
            "\"fail_open\" given twice (first at line %u)",
            st->fail_open_line);
    }
    for (i = 0; i < sizeof(sk_fail_open_names) / sizeof(sk_fail_open_names[0]);
         i++)
    {
        if (strcmp(v, sk_fail_open_names[i]) == 0) {
            t->fail_open = (sk_fail_open_t) i;
            st->fail_open_line = st->lineno;
            return 0;
        }
    }
    return sk_err_set(err, SK_ERR_FORMAT, "\"fail_open\": illegal value "
        "\"%.32s\" (want evidence, never or unsafe-on-silence)", v);
}


/* The anchors' path only: they are read when a DNSSEC Bind is to be
 * judged (client_reneged.c), never at load. */
static int
sk_trust_anchors(sk_client_trust_t *t, sk_trust_parse_t *st, const char *v,
    sk_err_t *err)
{
    if (st->anchors_line != 0) {
        return sk_err_set(err, SK_ERR_EXISTS,
            "\"dnssec_anchors\" given twice (first at line %u)",
            st->anchors_line);
    }
    if (v[0] == '\0') {
        return sk_err_set(err, SK_ERR_FORMAT, "\"dnssec_anchors\": no file");
    }
    sk_trust_path(t->dnssec_anchors, st->dir, v);
    st->anchors_line = st->lineno;
    return 0;
}


static int
sk_trust_number(sk_client_trust_t *t, sk_trust_parse_t *st, const char *k,
    const char *v, sk_err_t *err)
{
    uint64_t  n;
    size_t    i;

    for (i = 0; i < SK_TRUST_NNUMS; i++) {
        if (strcmp(sk_trust_nums[i].name, k) != 0) {
            continue;
        }
        /* Two values: whichever won, the other was meant by someone. */
        if (st->num_line[i] != 0) {
            return sk_err_set(err, SK_ERR_EXISTS,
                "\"%s\" given twice (first at line %u)", k, st->num_line[i]);
        }
        if (sk_trust_u64(&n, v, sk_trust_nums[i].seconds ? INT64_MAX
                : 1000000) != 0
            || (strcmp(k, "fresh_percent") == 0 && n > 100)
            || (strstr(k, "_timeout") != NULL && (n == 0 || n > 86400)))
        {
            return sk_err_set(err, SK_ERR_FORMAT,
                "\"%s\": illegal value \"%.32s\"", k, v);
        }
        if (sk_trust_nums[i].seconds) {
            *(int64_t *) ((char *) t + sk_trust_nums[i].off) = (int64_t) n;
        } else {
            *(unsigned *) ((char *) t + sk_trust_nums[i].off) = (unsigned) n;
        }
        st->num_line[i] = st->lineno;
        return 0;
    }
    return sk_err_set(err, SK_ERR_FORMAT, "unrecognized parameter \"%.32s\"",
        k);
}


static int
sk_trust_line(sk_client_trust_t *t, sk_trust_parse_t *st, char *line,
    sk_err_t *err)
{
    char  *eq, *k, *v, *end;

    while (*line == ' ' || *line == '\t') {
        line++;
    }
    if (*line == '\0' || *line == '#') {
        return 0;
    }
    eq = strchr(line, '=');
    if (eq == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "want \"key = value\"");
    }
    for (end = eq; end > line && (end[-1] == ' ' || end[-1] == '\t'); end--)
    {
    }
    *end = '\0';
    k = line;
    for (v = eq + 1; *v == ' ' || *v == '\t'; v++) {
    }
    for (end = v + strlen(v); end > v && (end[-1] == ' ' || end[-1] == '\t');
         end--)
    {
    }
    *end = '\0';
    if (strcmp(k, "timeline") == 0) {
        return sk_trust_timeline(t, st, v, err);
    }
    if (strcmp(k, "mirror") == 0) {
        return sk_trust_mirror(t, st, v, err);
    }
    if (strcmp(k, "tor") == 0) {
        return sk_trust_tor(t, st, v, err);
    }
    if (strcmp(k, "fail_open") == 0) {
        return sk_trust_fail_open(t, st, v, err);
    }
    if (strcmp(k, "mirror_tor") == 0) {
        return sk_trust_mirror_tor(t, st, v, err);
    }
    if (strcmp(k, "dnssec_anchors") == 0) {
        return sk_trust_anchors(t, st, v, err);
    }
    return sk_trust_number(t, st, k, v, err);
}


/* Each line of buf (len bytes, NUL-terminated after them) in turn. */
static int
sk_trust_lines(sk_client_trust_t *t, sk_trust_parse_t *st, char *buf,
    size_t len, sk_err_t *err)
{
    char    *p, *nl;
    size_t   n;
    int      rc = 0;

    for (p = buf; rc == 0 && p < buf + len; p = nl + 1) {
        st->lineno++;
        nl = memchr(p, '\n', (size_t) (buf + len - p));
        if (nl == NULL) {
            nl = buf + len;
        }
        n = (size_t) (nl - p);
        *nl = '\0';
        /* A NUL would end the line early for the string functions below:
         * what follows it would be dropped unseen. */
        if (memchr(p, '\0', n) != NULL) {
            rc = sk_err_set(err, SK_ERR_FORMAT, "a NUL byte");
        } else if (n > SK_TRUST_LINE_MAX || memchr(p, '\r', n) != NULL) {
            rc = sk_err_set(err, SK_ERR_FORMAT, "line too long or has a CR");
        } else {
            rc = sk_trust_line(t, st, p, err);
        }
    }
    return rc;
}


int
sk_client_trust_parse(sk_client_trust_t *t, const char *data, size_t len,
    const char *path, sk_err_t *err)
{
    sk_trust_parse_t  *st;
    const char        *slash;
    char              *buf;
    int                rc;

    if (len > SK_TRUST_FILE_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: larger than %d bytes",
            path, SK_TRUST_FILE_MAX);
    }
    st = calloc(1, sizeof(*st));
    buf = malloc(len + 1);
    if (st == NULL || buf == NULL) {
        free(st);
        free(buf);
        return sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy(buf, data, len);
    buf[len] = '\0';
    slash = strrchr(path, '/');
    snprintf(st->dir, sizeof(st->dir), "%.*s", slash == NULL ? 0
        : (int) (slash - path), path);
    if (slash == path) {
        snprintf(st->dir, sizeof(st->dir), "/");
    }
    rc = sk_trust_lines(t, st, buf, len, err);
    if (rc != 0) {
        sk_err_prefix(err, "%s: line %u", path, st->lineno);
    } else if (t->ntl == 0) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "%s: no timeline listed", path);
    }
    free(buf);
    free(st);
    return rc;
}


int
sk_client_trust_load(sk_client_trust_t *t, const char *path, sk_err_t *err)
{
    char    *buf;
    size_t   len;
    int      rc;

    if (sk_file_read(&buf, &len, path, SK_TRUST_FILE_MAX, err) != 0) {
        return -1;
    }
    rc = sk_client_trust_parse(t, buf, len, path, err);
    free(buf);
    return rc;
}
