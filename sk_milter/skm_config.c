/*
 * skm_config.c -- sk-milter.conf: a table of known keys (OpenDKIM's
 * shape) whose offsets (nginx's) let one pass fill skm_conf_t, then the
 * checks that give the values meaning.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sk/addr.h>

#include "skm.h"

typedef enum {
    SKM_STRING,
    SKM_INTEGER,
    SKM_BOOLEAN,
    SKM_MODE,
    SKM_OCTAL,                  /* file mode bits, 0 to 0777 */
    SKM_LIST,                   /* repeatable; each line appends */
    SKM_INCLUDE
} skm_type_t;

typedef struct {
    const char  *name;
    skm_type_t   type;
    int          required;
    size_t       offset;
    const char  *dflt;          /* applied when the key is absent */
} skm_confdef_t;

static const skm_confdef_t  skm_confdefs[] = {
    /* name              type          req offset                         default */
    { "Socket",          SKM_STRING,   1, offsetof(skm_conf_t, socket),     NULL },
    { "SocketMode",      SKM_OCTAL,    0, offsetof(skm_conf_t, socketmode), "0660" },
    { "MaxConnections",  SKM_INTEGER,  0, offsetof(skm_conf_t, maxconns),   "512" },
    { "PacketTimeout",   SKM_INTEGER,  0, offsetof(skm_conf_t, packettimeout), "60" },
    { "UserID",          SKM_STRING,   0, offsetof(skm_conf_t, userid),     NULL },
    { "PidFile",         SKM_STRING,   0, offsetof(skm_conf_t, pidfile),    NULL },
    { "Syslog",          SKM_BOOLEAN,  0, offsetof(skm_conf_t, syslog),     "yes" },
    { "KeyCache",        SKM_STRING,   0, offsetof(skm_conf_t, keycache),   NULL },
    { "Name",            SKM_LIST,     0, offsetof(skm_conf_t, names),      NULL },
    { "AuthservID",      SKM_STRING,   0, offsetof(skm_conf_t, authservid), NULL },
    { "Mode",            SKM_MODE,     0, offsetof(skm_conf_t, mode),       "verify" },
    { "TrustFile",       SKM_STRING,   0, offsetof(skm_conf_t, trustfile),  NULL },
    { "ChainFile",       SKM_LIST,     0, offsetof(skm_conf_t, chainfiles), NULL },
    { "CarrierFile",     SKM_LIST,     0, offsetof(skm_conf_t, carrierfiles), NULL },
    { "PostfixCommand",  SKM_STRING,   0, offsetof(skm_conf_t, postfixcmd), "postfix reload" },
    { "Probe",           SKM_LIST,     0, offsetof(skm_conf_t, probes),     NULL },
    { "RefreshInterval", SKM_INTEGER,  0, offsetof(skm_conf_t, refresh),    "300" },
    { "ExpiryWarning",   SKM_INTEGER,  0, offsetof(skm_conf_t, expirywarn), "14" },
    { "LookupTimeout",   SKM_INTEGER,  0, offsetof(skm_conf_t, lookupms),   "1000" },
    { "OnionDir",        SKM_STRING,   0, offsetof(skm_conf_t, oniondir),   NULL },
    { "OnionKey",        SKM_STRING,   0, offsetof(skm_conf_t, onionkey),   NULL },
    { "OnionPort",       SKM_LIST,     0, offsetof(skm_conf_t, onionports), NULL },
    { "OnionTorrc",      SKM_STRING,   0, offsetof(skm_conf_t, oniontorrc), NULL },
    { "OnionUser",       SKM_STRING,   0, offsetof(skm_conf_t, onionuser),  NULL },
    { "PolicySocket",    SKM_STRING,   0, offsetof(skm_conf_t, policysocket), NULL },
    { "PolicyMapName",   SKM_STRING,   0, offsetof(skm_conf_t, policyname), "sk" },
    { "PolicyTTL",       SKM_INTEGER,  0, offsetof(skm_conf_t, policyttl),  "300" },
    { "PolicyMaxConnections", SKM_INTEGER, 0, offsetof(skm_conf_t, policyconns), "256" },
    { "PolicyTimeout",   SKM_INTEGER,  0, offsetof(skm_conf_t, policytimeout), "20" },
    { "PolicyCache",     SKM_STRING,   0, offsetof(skm_conf_t, policycache), "/var/cache/sk-milter" },
    { "PolicyUndecided", SKM_STRING,   0, offsetof(skm_conf_t, policyundecidedstr), "defer" },
    { "ClientPolicySocket", SKM_STRING, 0, offsetof(skm_conf_t, ccertsocket), NULL },
    { "StapleProof",     SKM_BOOLEAN,  0, offsetof(skm_conf_t, stapleproof), "no" },
    { "StapleTrust",     SKM_STRING,   0, offsetof(skm_conf_t, stapletrustfile), NULL },
    { "MetricsListen",   SKM_STRING,   0, offsetof(skm_conf_t, metricslisten), NULL },
    { "Include",         SKM_INCLUDE,  0, 0,                                NULL },
    { NULL,              SKM_STRING,   0, 0,                                NULL }
};

#define SKM_NDEFS (sizeof(skm_confdefs) / sizeof(skm_confdefs[0]) - 1)

typedef struct {                /* loader state */
    skm_conf_t  *conf;
    unsigned     line[SKM_NDEFS];   /* where each key was set (0: not) */
    const char  *file[SKM_NDEFS];
    char        *files[SKM_INCLUDE_MAX + 1];    /* names, for messages */
    size_t       nfiles;
} skm_loader_t;

static int skm_conf_read(skm_loader_t *ld, const char *path, int depth,
    sk_err_t *err);
static int skm_conf_set(skm_loader_t *ld, const skm_confdef_t *d,
    const char *val, const char *path, unsigned line, int depth,
    sk_err_t *err);
static int skm_conf_check(skm_loader_t *ld, sk_err_t *err);
static int skm_conf_where(skm_loader_t *ld, const char *key, sk_err_t *err,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int skm_conf_warn(skm_loader_t *ld, const char *key,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int skm_socket_reach(skm_loader_t *ld, const char *key,
    const char *spec, long mode);
static int skm_list_add(skm_list_t *l, const char *s);
static void skm_list_free(skm_list_t *l);
static int skm_split2(char **a, char **b, const char *s);
static int skm_socket_ok(const char *s);
static int skm_socket_same(const char *a, const char *b);

static pthread_mutex_t  skm_conf_lock = PTHREAD_MUTEX_INITIALIZER;
static skm_conf_t      *skm_conf_cur;
static unsigned         skm_conf_refs_cur;
static unsigned long    skm_conf_gen;


int
skm_conf_load(skm_conf_t **conf, const char *file, sk_err_t *err)
{
    skm_loader_t          ld;
    const skm_confdef_t  *d;
    size_t                i;
    int                   rc;

    *conf = NULL;
    memset(&ld, 0, sizeof(ld));
    ld.conf = calloc(1, sizeof(skm_conf_t));
    if (ld.conf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", file);
    }
    ld.conf->uid = (uid_t) -1;
    ld.conf->gid = (gid_t) -1;
    ld.conf->file = strdup(file);

    rc = ld.conf->file == NULL ? -1 : skm_conf_read(&ld, file, 0, err);

    for (i = 0; rc == 0 && i < SKM_NDEFS; i++) {
        d = &skm_confdefs[i];
        if (ld.line[i] != 0) {
            continue;
        }
        if (d->required) {
            rc = sk_err_set(err, SK_ERR_FORMAT,
                "%s: required parameter \"%s\" missing", file, d->name);
        } else if (d->dflt != NULL) {
            rc = skm_conf_set(&ld, d, d->dflt, file, 0, 0, err);
        }
    }
    if (rc == 0) {
        rc = skm_conf_check(&ld, err);
    }
    for (i = 0; i < ld.nfiles; i++) {
        free(ld.files[i]);
    }
    if (rc != 0) {
        skm_conf_free(ld.conf);
        return -1;
    }
    *conf = ld.conf;
    return 0;
}


int
skm_conf_getline(FILE *f, char **buf, size_t *cap, const char *path,
    unsigned line, sk_err_t *err)
{
    ssize_t  n;
    size_t   len;

    errno = 0;
    n = getline(buf, cap, f);
    if (n == -1) {
        if (ferror(f) || errno == ENOMEM) {
            return sk_err_sys(err, "%s: line %u: read error", path, line);
        }
        return 0;
    }
    len = (size_t) n;
    if (len > 0 && (*buf)[len - 1] == '\n') {
        (*buf)[--len] = '\0';
    }
    if (memchr(*buf, '\0', len) != NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: a NUL byte",
            path, line);
    }
    if (len > SKM_LINE_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: line too long "
            "(more than %d bytes)", path, line, SKM_LINE_MAX);
    }
    return 1;
}


/* One file: "Key value" lines, "#" starts a comment, blank lines skip. */
static int
skm_conf_read(skm_loader_t *ld, const char *path, int depth, sk_err_t *err)
{
    FILE                 *f;
    char                 *buf, *p, *key, *val, *e;
    const skm_confdef_t  *d;
    unsigned              line;
    size_t                cap;
    int                   rc;

    f = fopen(path, "r");
    if (f == NULL) {
        return sk_err_sys(err, "%s: cannot open", path);
    }
    buf = NULL;
    cap = 0;
    rc = 0;
    line = 0;
    while (rc == 0) {
        line++;
        rc = skm_conf_getline(f, &buf, &cap, path, line, err);
        if (rc != 1) {
            break;
        }
        rc = 0;
        p = strchr(buf, '#');
        if (p != NULL) {
            *p = '\0';
        }
        for (e = buf + strlen(buf); e > buf && isspace((unsigned char) e[-1]);
             e--)
        {
            e[-1] = '\0';
        }
        for (key = buf; isspace((unsigned char) *key); key++) { }
        if (*key == '\0') {
            continue;
        }
        for (val = key; *val != '\0' && !isspace((unsigned char) *val); val++)
        { }
        if (*val != '\0') {
            *val++ = '\0';
        }
        while (isspace((unsigned char) *val)) {
            val++;
        }
        for (d = skm_confdefs; d->name != NULL; d++) {
            if (strcasecmp(d->name, key) == 0) {
                break;
            }
        }
        if (d->name == NULL) {
            rc = sk_err_set(err, SK_ERR_FORMAT,
                "%s: line %u: unrecognized parameter \"%.64s\"",
                path, line, key);
        } else if (*val == '\0') {
            rc = sk_err_set(err, SK_ERR_FORMAT,
                "%s: line %u: parameter \"%s\" needs a value",
                path, line, d->name);
        } else {
            rc = skm_conf_set(ld, d, val, path, line, depth, err);
        }
    }
    free(buf);
    fclose(f);
    return rc;
}


static int
skm_conf_set(skm_loader_t *ld, const skm_confdef_t *d, const char *val,
    const char *path, unsigned line, int depth, sk_err_t *err)
{
    size_t   i;
    char    *base, *end, **sp;
    long     n;

    i = (size_t) (d - skm_confdefs);
    base = (char *) ld->conf + d->offset;

    if (d->type == SKM_INCLUDE) {
        if (depth >= SKM_INCLUDE_MAX) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: Include "
                "nested more than %d deep", path, line, SKM_INCLUDE_MAX);
        }
        return skm_conf_read(ld, val, depth + 1, err);
    }
    if (d->type != SKM_LIST && ld->line[i] != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: duplicate "
            "parameter \"%s\" (first set at line %u)", path, line, d->name,
            ld->line[i]);
    }

    switch (d->type) {
    case SKM_STRING:
        sp = (char **) (void *) base;
        *sp = strdup(val);
        if (*sp == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
        }
        break;
    case SKM_INTEGER:
        errno = 0;
        n = strtol(val, &end, 10);
        if (errno != 0 || *end != '\0' || end == val || n < 0
            || n > 100000000)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: illegal "
                "value \"%.64s\" for \"%s\" (a number 0..100000000)",
                path, line, val, d->name);
        }
        *(long *) (void *) base = n;
        break;
    case SKM_BOOLEAN:
        /* The whole word: "Syslog nonsense" is a typo to report, not a
         * "no" to act on. */
        if (strcasecmp(val, "yes") == 0 || strcasecmp(val, "true") == 0
            || strcmp(val, "1") == 0)
        {
            *(int *) (void *) base = 1;
        } else if (strcasecmp(val, "no") == 0
                   || strcasecmp(val, "false") == 0 || strcmp(val, "0") == 0)
        {
            *(int *) (void *) base = 0;
        } else {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: illegal "
                "value \"%.64s\" for \"%s\" (yes or no)", path, line, val,
                d->name);
        }
        break;
    case SKM_MODE:
        if (strcasecmp(val, "verify") == 0) {
            *(int *) (void *) base = SKM_MODE_VERIFY;
        } else if (strcasecmp(val, "reject") == 0) {
            *(int *) (void *) base = SKM_MODE_REJECT;
        } else {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: illegal "
                "value \"%.64s\" for \"%s\" (verify or reject)", path, line,
                val, d->name);
        }
        break;
    case SKM_OCTAL:
        errno = 0;
        n = strtol(val, &end, 8);
        if (errno != 0 || *end != '\0' || end == val || val[0] == '-'
            || val[0] == '+' || n > 0777)
        {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: illegal "
                "value \"%.64s\" for \"%s\" (octal mode bits, 0 to 0777)",
                path, line, val, d->name);
        }
        *(long *) (void *) base = n;
        break;
    case SKM_LIST:
        if (skm_list_add((skm_list_t *) (void *) base, val) != 0) {
            return sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
        }
        break;
    case SKM_INCLUDE:
        break;
    }

    if (ld->line[i] == 0) {
        ld->line[i] = line;
        ld->file[i] = path;
        /* keep path alive for later messages: the top file is conf->file,
         * included ones are copied here */
        if (depth > 0 && ld->nfiles <= SKM_INCLUDE_MAX) {
            ld->files[ld->nfiles] = strdup(path);
            if (ld->files[ld->nfiles] != NULL) {
                ld->file[i] = ld->files[ld->nfiles++];
            }
        } else if (depth == 0) {
            ld->file[i] = ld->conf->file;
        }
    }
    return 0;
}


/* Meaning: socket syntax, user, files, list entries. */
static int
skm_conf_check(skm_loader_t *ld, sk_err_t *err)
{
    skm_conf_t     *c;
    struct passwd  *pw;
    struct group   *gr;
    char           *user, *group, *a, *b, *colon, host[256];
    size_t          i;
    sk_err_t        e;
    struct sockaddr_storage  ss;

    c = ld->conf;

    if (!skm_socket_ok(c->socket)) {
        return skm_conf_where(ld, "Socket", err, "illegal value \"%.64s\" "
            "for \"Socket\" (inet:PORT@HOST, inet6:PORT@HOST or "
            "local:/PATH)", c->socket);
    }
    if (c->policysocket != NULL && (!skm_socket_ok(c->policysocket)
        || strncmp(c->policysocket, "inet6:", 6) == 0))
    {
        return skm_conf_where(ld, "PolicySocket", err, "illegal value "
            "\"%.64s\" for \"PolicySocket\" (inet:PORT@HOST or "
            "local:/PATH)", c->policysocket);
    }
    if (c->ccertsocket != NULL && (!skm_socket_ok(c->ccertsocket)
        || strncmp(c->ccertsocket, "inet6:", 6) == 0))
    {
        return skm_conf_where(ld, "ClientPolicySocket", err, "illegal value "
            "\"%.64s\" for \"ClientPolicySocket\" (inet:PORT@HOST or "
            "local:/PATH)", c->ccertsocket);
    }
    if (skm_socket_same(c->socket, c->policysocket)
        || skm_socket_same(c->socket, c->ccertsocket))
    {
        return skm_conf_where(ld, skm_socket_same(c->socket,
            c->policysocket) ? "PolicySocket" : "ClientPolicySocket", err,
            "%s is the milter's Socket", skm_socket_same(c->socket,
            c->policysocket) ? "PolicySocket" : "ClientPolicySocket");
    }
    if (skm_socket_same(c->policysocket, c->ccertsocket)) {
        return skm_conf_where(ld, "ClientPolicySocket", err,
            "ClientPolicySocket is the PolicySocket");
    }
    if (skm_socket_reach(ld, "Socket", c->socket, c->socketmode) != 0
        || skm_socket_reach(ld, "PolicySocket", c->policysocket, 0) != 0
        || skm_socket_reach(ld, "ClientPolicySocket", c->ccertsocket, 0)
           != 0)
    {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    for (a = c->policyname; *a != '\0'; a++) {
        if (!isalnum((unsigned char) *a) && *a != '-' && *a != '_') {
            return skm_conf_where(ld, "PolicyMapName", err, "illegal value "
                "\"%.64s\" for \"PolicyMapName\" (letters, digits, "
                "\"-\", \"_\")", c->policyname);
        }
    }
    if (c->maxconns < 1) {
        return skm_conf_where(ld, "MaxConnections", err, "illegal value "
            "\"%ld\" for \"MaxConnections\" (at least 1)", c->maxconns);
    }
    if (c->packettimeout < 1 || c->packettimeout > 3600) {
        return skm_conf_where(ld, "PacketTimeout", err, "illegal value "
            "\"%ld\" for \"PacketTimeout\" (1 to 3600 seconds)",
            c->packettimeout);
    }
    if (c->policyconns < 1) {
        return skm_conf_where(ld, "PolicyMaxConnections", err, "illegal "
            "value \"%ld\" for \"PolicyMaxConnections\" (at least 1)",
            c->policyconns);
    }
    if (c->policytimeout < 1 || c->policytimeout > 3600) {
        return skm_conf_where(ld, "PolicyTimeout", err, "illegal value "
            "\"%ld\" for \"PolicyTimeout\" (1 to 3600 seconds)",
            c->policytimeout);
    }
    if (strcmp(c->policyundecidedstr, "defer") != 0
        && strcmp(c->policyundecidedstr, "notfound") != 0)
    {
        return skm_conf_where(ld, "PolicyUndecided", err, "illegal value "
            "\"%.64s\" for \"PolicyUndecided\" (defer or notfound)",
            c->policyundecidedstr);
    }
    c->policyundecided = c->policyundecidedstr[0] == 'n';
    if (c->policycache[0] != '/') {
        return skm_conf_where(ld, "PolicyCache", err, "illegal value "
            "\"%.64s\" for \"PolicyCache\" (an absolute path)",
            c->policycache);
    }
    if (c->metricslisten != NULL && sk_addr_parse(&ss, c->metricslisten, &e)
        != 0)
    {
        return skm_conf_where(ld, "MetricsListen", err, "illegal value "
            "\"%.64s\" for \"MetricsListen\" (HOST:PORT): %s",
            c->metricslisten, e.msg);
    }

    if (c->userid != NULL) {
        if (skm_split2(&user, &group, c->userid) != 0) {
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        colon = strchr(user, ':');
        if (colon != NULL) {
            *colon = '\0';
            free(group);
            group = strdup(colon + 1);
        }
        pw = getpwnam(user);
        if (pw == NULL) {
            skm_conf_where(ld, "UserID", err, "no such user \"%.64s\"",
                user);
            free(user);
            free(group);
            return -1;
        }
        c->uid = pw->pw_uid;
        c->gid = pw->pw_gid;
        if (group != NULL && group[0] != '\0') {
            gr = getgrnam(group);
            if (gr == NULL) {
                skm_conf_where(ld, "UserID", err, "no such group \"%.64s\"",
                    group);
                free(user);
                free(group);
                return -1;
            }
            c->gid = gr->gr_gid;
        }
        free(user);
        free(group);
    }

    if (c->authservid == NULL) {
        /* As OpenDKIM: else this host's name, so that the packaged
         * configuration starts as it is. */
        host[sizeof(host) - 1] = '\0';
        if (c->names.n == 0
            && (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0'))
        {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: required parameter "
                "\"AuthservID\" missing (give a Name; the host has no "
                "name)", c->file);
        }
        c->authservid = strdup(c->names.n > 0 ? c->names.v[0] : host);
        if (c->authservid == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
    }
    /* RFC 2045 token, as RFC 8601 writes it unquoted */
    for (a = c->authservid; *a != '\0'; a++) {
        if (!isgraph((unsigned char) *a)
            || strchr("()<>@,;:\\\"/[]?=", *a) != NULL)
        {
            break;
        }
    }
    if (*a != '\0' || a == c->authservid || a - c->authservid > SKM_AR_ID_MAX)
    {
        return skm_conf_where(ld, "AuthservID", err, "illegal value "
            "\"%.64s\" for \"AuthservID\" (a token of at most %d "
            "characters: no space or ()<>@,;:\\\"/[]?=)", c->authservid,
            SKM_AR_ID_MAX);
    }

    if (c->refresh < 1) {
        return skm_conf_where(ld, "RefreshInterval", err, "illegal value "
            "\"%ld\" for \"RefreshInterval\" (at least 1)", c->refresh);
    }
    if (c->lookupms < 1) {
        return skm_conf_where(ld, "LookupTimeout", err, "illegal value "
            "\"%ld\" for \"LookupTimeout\" (at least 1)", c->lookupms);
    }

    c->chains = calloc(c->chainfiles.n + 1, sizeof(skm_chain_t));
    c->probev = calloc(c->probes.n + 1, sizeof(skm_probe_t));
    if (c->chains == NULL || c->probev == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    for (i = 0; i < c->chainfiles.n; i++) {
        if (skm_split2(&a, &b, c->chainfiles.v[i]) != 0) {
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        c->chains[c->nchains].source = a;
        c->chains[c->nchains++].output = b;
        if (b == NULL || strchr(b, ' ') != NULL || a[0] != '/'
            || b[0] != '/')
        {
            return skm_conf_where(ld, "ChainFile", err, "illegal value "
                "\"%.64s\" for \"ChainFile\" (/SOURCE /OUTPUT)",
                c->chainfiles.v[i]);
        }
    }
    for (i = 0; i < c->probes.n; i++) {
        if (skm_split2(&a, &b, c->probes.v[i]) != 0) {
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        colon = b == NULL ? NULL : strrchr(b, ':');
        if ((strcmp(a, "starttls") != 0 && strcmp(a, "tls") != 0)
            || colon == NULL || colon == b || colon[1] == '\0')
        {
            free(a);
            free(b);
            return skm_conf_where(ld, "Probe", err, "illegal value "
                "\"%.64s\" for \"Probe\" (starttls|tls HOST:PORT)",
                c->probes.v[i]);
        }
        *colon = '\0';
        c->probev[c->nprobes].starttls = a[0] == 's';
        c->probev[c->nprobes].host = b;
        c->probev[c->nprobes++].port = strdup(colon + 1);
        free(a);
    }

    if (c->trustfile != NULL && skm_trust_load(&c->trust, c->trustfile, &e)
        != 0)
    {
        return skm_conf_where(ld, "TrustFile", err, "TrustFile: %s", e.msg);
    }
    if (c->stapleproof && c->stapletrustfile == NULL) {
        return skm_conf_where(ld, "StapleProof", err, "StapleProof needs "
            "StapleTrust (the trust file of the timelines and mirrors)");
    }
    if (c->stapleproof && c->nchains == 0) {
        return skm_conf_where(ld, "StapleProof", err, "StapleProof needs a "
            "ChainFile to staple to");
    }
    if (c->stapletrustfile != NULL) {
        c->stapletrust = calloc(1, sizeof(*c->stapletrust));
        if (c->stapletrust == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        }
        sk_client_trust_init(c->stapletrust);
        if (sk_client_trust_load(c->stapletrust, c->stapletrustfile, &e)
            != 0)
        {
            return skm_conf_where(ld, "StapleTrust", err, "StapleTrust: %s",
                e.msg);
        }
    }
    c->onion_uid = c->uid;
    c->onion_gid = c->gid;
    if (c->onionuser != NULL) {
        pw = getpwnam(c->onionuser);
        if (pw == NULL) {
            return skm_conf_where(ld, "OnionUser", err, "no such user "
                "\"%.64s\"", c->onionuser);
        }
        c->onion_uid = pw->pw_uid;
        c->onion_gid = pw->pw_gid;
    }
    if (c->oniondir != NULL && c->onionports.n == 0) {
        return skm_conf_where(ld, "OnionDir", err, "OnionDir needs at "
            "least one OnionPort");
    }
    return 0;
}


/* inet:PORT@HOST, inet6:PORT@HOST, local:/PATH or unix:/PATH. */
static int
skm_socket_ok(const char *s)
{
    if (strncmp(s, "inet:", 5) == 0 || strncmp(s, "inet6:", 6) == 0) {
        return strchr(s, '@') != NULL;
    }
    if (strncmp(s, "local:", 6) == 0 || strncmp(s, "unix:", 5) == 0) {
        return strchr(s, '/') != NULL;
    }
    return 0;
}


/*
 * Warn when spec (NULL: not set) can be reached by more than the MTA: an
 * inet socket on an address that is not loopback (127.0.0.0/8, ::1), a
 * local one made with mode (non-zero: the milter Socket's SocketMode)
 * writable by everyone.  A peer on the milter socket decides the verdicts
 * of the mail it sends there; on the policy sockets it can make the
 * milter probe hosts or note client keys.  -1 if out of memory.
 */
static int
skm_socket_reach(skm_loader_t *ld, const char *key, const char *spec,
    long mode)
{
    struct addrinfo   hints, *res, *ai;
    const char       *host;
    unsigned char    *a;
    int               wide;

    if (spec == NULL) {
        return 0;
    }
    if (strncmp(spec, "inet", 4) != 0) {
        if (mode & 0002) {
            return skm_conf_warn(ld, key, "%s %s with SocketMode %04lo: "
                "any local user can connect to the milter and pass or fail "
                "the mail it sends there; make it 0660 and give Postfix the "
                "group, or keep it in a directory only Postfix can enter",
                key, spec, mode);
        }
        return 0;
    }
    host = strchr(spec, '@') + 1;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = spec[4] == '6' ? AF_INET6 : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0) {
        return skm_conf_warn(ld, key, "%s %s: cannot resolve \"%s\": it "
            "will not open", key, spec, host);
    }
    wide = 0;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            a = (unsigned char *) &((struct sockaddr_in *) (void *)
                                    ai->ai_addr)->sin_addr;
            wide |= a[0] != 127;
        } else {
            wide |= !IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *) (void *)
                                            ai->ai_addr)->sin6_addr);
        }
    }
    freeaddrinfo(res);
    if (wide) {
        return skm_conf_warn(ld, key, "%s %s listens beyond loopback: "
            "other hosts can connect to it%s; bind it to 127.0.0.1 (or use "
            "local:) unless a firewall keeps them out", key, spec,
            strcmp(key, "Socket") == 0 ? " and pass or fail the mail they "
            "send there" : "");
    }
    return 0;
}


/* A warning "FILE: line N: warning: MSG" for the line that set key. */
static int
skm_conf_warn(skm_loader_t *ld, const char *key, const char *fmt, ...)
{
    char     msg[SK_ERR_MSG_MAX], line[SK_ERR_MSG_MAX + 64];
    va_list  ap;
    size_t   i;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(line, sizeof(line), "%s: warning: %s", ld->conf->file, msg);
    for (i = 0; i < SKM_NDEFS; i++) {
        if (strcmp(skm_confdefs[i].name, key) == 0 && ld->line[i] != 0) {
            snprintf(line, sizeof(line), "%s: line %u: warning: %s",
                ld->file[i], ld->line[i], msg);
        }
    }
    return skm_list_add(&ld->conf->warnings, line);
}


/* 1 if a and b (either may be NULL) name the same socket. */
static int
skm_socket_same(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return 0;
    }
    if ((a[0] == 'i') != (b[0] == 'i')) {
        return 0;
    }
    return strcmp(a + strcspn(a, ":"), b + strcspn(b, ":")) == 0;
}


/* "FILE: line N: MSG" for the line that set key. */
static int
skm_conf_where(skm_loader_t *ld, const char *key, sk_err_t *err,
    const char *fmt, ...)
{
    char     msg[SK_ERR_MSG_MAX];
    va_list  ap;
    size_t   i;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (i = 0; i < SKM_NDEFS; i++) {
        if (strcmp(skm_confdefs[i].name, key) == 0 && ld->line[i] != 0) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: line %u: %s",
                ld->file[i], ld->line[i], msg);
        }
    }
    return sk_err_set(err, SK_ERR_FORMAT, "%s: %s", ld->conf->file, msg);
}


/* "A B" into two strings (B NULL if there is no second word). */
static int
skm_split2(char **a, char **b, const char *s)
{
    const char  *sp;

    *b = NULL;
    sp = strchr(s, ' ');
    if (sp == NULL) {
        sp = strchr(s, '\t');
    }
    if (sp == NULL) {
        *a = strdup(s);
        return *a == NULL ? -1 : 0;
    }
    *a = strndup(s, (size_t) (sp - s));
    while (*sp == ' ' || *sp == '\t') {
        sp++;
    }
    *b = strdup(sp);
    if (*a == NULL || *b == NULL) {
        free(*a);
        free(*b);
        return -1;
    }
    return 0;
}


static int
skm_list_add(skm_list_t *l, const char *s)
{
    char  **v;

    v = realloc(l->v, (l->n + 2) * sizeof(char *));
    if (v == NULL) {
        return -1;
    }
    l->v = v;
    v[l->n] = strdup(s);
    if (v[l->n] == NULL) {
        return -1;
    }
    v[++l->n] = NULL;
    return 0;
}


static void
skm_list_free(skm_list_t *l)
{
    size_t  i;

    for (i = 0; i < l->n; i++) {
        free(l->v[i]);
    }
    free(l->v);
}


void
skm_conf_free(skm_conf_t *c)
{
    const skm_confdef_t  *d;
    size_t                i;
    char                 *base;

    if (c == NULL) {
        return;
    }
    for (d = skm_confdefs; d->name != NULL; d++) {
        base = (char *) c + d->offset;
        if (d->type == SKM_STRING) {
            free(*(char **) (void *) base);
        } else if (d->type == SKM_LIST) {
            skm_list_free((skm_list_t *) (void *) base);
        }
    }
    skm_list_free(&c->warnings);
    for (i = 0; i < c->nchains; i++) {
        free(c->chains[i].source);
        free(c->chains[i].output);
    }
    for (i = 0; i < c->nprobes; i++) {
        free(c->probev[i].host);
        free(c->probev[i].port);
    }
    free(c->chains);
    free(c->probev);
    skm_trust_free(c->trust);
    sk_client_trust_free(c->stapletrust);
    free(c->stapletrust);
    free(c->file);
    free(c);
}


/*
 * The live configuration is reference-counted: a message holds the one it
 * started with; a reload installs a new one and the old is freed when its
 * last user lets go.
 */
typedef struct skm_ref_s {
    skm_conf_t        *conf;
    unsigned           refs;
    struct skm_ref_s  *next;
} skm_ref_t;

static skm_ref_t  *skm_old_confs;


skm_conf_t *
skm_conf_acquire(void)
{
    skm_conf_t  *c;

    pthread_mutex_lock(&skm_conf_lock);
    c = skm_conf_cur;
    skm_conf_refs_cur++;
    pthread_mutex_unlock(&skm_conf_lock);
    return c;
}


void
skm_conf_release(skm_conf_t *c)
{
    skm_ref_t  **pp, *r;

    pthread_mutex_lock(&skm_conf_lock);
    if (c == skm_conf_cur) {
        skm_conf_refs_cur--;
    } else {
        for (pp = &skm_old_confs; *pp != NULL; pp = &(*pp)->next) {
            r = *pp;
            if (r->conf == c && --r->refs == 0) {
                *pp = r->next;
                skm_conf_free(r->conf);
                free(r);
                break;
            }
        }
    }
    pthread_mutex_unlock(&skm_conf_lock);
}


void
skm_conf_install(skm_conf_t *c)
{
    skm_ref_t  *r;

    pthread_mutex_lock(&skm_conf_lock);
    if (skm_conf_cur != NULL) {
        if (skm_conf_refs_cur == 0) {
            skm_conf_free(skm_conf_cur);
        } else {
            r = malloc(sizeof(*r));
            if (r != NULL) {
                r->conf = skm_conf_cur;
                r->refs = skm_conf_refs_cur;
                r->next = skm_old_confs;
                skm_old_confs = r;
            }
            /* out of memory: leak the old configuration, never free it
             * under a message still using it */
        }
    }
    skm_conf_cur = c;
    skm_conf_refs_cur = 0;
    if (c != NULL) {
        c->gen = ++skm_conf_gen;
    }
    pthread_mutex_unlock(&skm_conf_lock);
}
