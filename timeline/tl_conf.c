/*
 * tl_conf.c -- sk-timeline's configuration file.
 *
 *   # comment
 *   listen   = 127.0.0.1:8080
 *   data_dir = /var/lib/sk-timeline
 *   tid      = 7
 *
 * One "key = value" per line, every key known, none repeated; errors name
 * the file's line.  docs/timeline.md documents each key.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl.h"

#define TL_CONF_MAX  (64 * 1024)

typedef enum { TL_STR, TL_UINT, TL_BOOL, TL_LIST } tl_conf_type_t;

typedef struct {
    const char      *name;
    tl_conf_type_t   type;
    int              required;
    size_t           offset;
    const char      *dflt;
} tl_confdef_t;

static const tl_confdef_t  tl_confdefs[] = {
    /* name              type      req  offset                      default */
    { "listen",          TL_STR,   1, offsetof(tl_conf_t, listen),       NULL },
    { "data_dir",        TL_STR,   1, offsetof(tl_conf_t, data_dir),     NULL },
    { "tid",             TL_UINT,  1, offsetof(tl_conf_t, tid),          NULL },
    { "key",             TL_STR,   0, offsetof(tl_conf_t, key_file),     NULL },
    { "operator_key",    TL_STR,   0, offsetof(tl_conf_t, operator_key), NULL },
    { "origin",          TL_STR,   0, offsetof(tl_conf_t, origin),       NULL },
    { "clock_file",      TL_STR,   0, offsetof(tl_conf_t, clock_file),   NULL },
    { "max_body",        TL_UINT,  0, offsetof(tl_conf_t, max_body),  "65536" },
    { "threads",         TL_UINT,  0, offsetof(tl_conf_t, threads),     "256" },
    { "rate_global",     TL_UINT,  0, offsetof(tl_conf_t, rate_global),   "0" },
    { "sk_budget",       TL_UINT,  0, offsetof(tl_conf_t, sk_budget),     "5" },
    { "sk_refill",       TL_UINT,  0, offsetof(tl_conf_t, sk_refill),
      "1209600" },
    { "clock_wait_ms",   TL_UINT,  0, offsetof(tl_conf_t, clock_wait_ms),
      "2000" },
    { "max_clock_ahead", TL_UINT,  0, offsetof(tl_conf_t, max_clock_ahead),
      "0" },
    { "verify_on_start", TL_BOOL,  0, offsetof(tl_conf_t, verify_on_start),
      "no" },
    { "chunk_interval",  TL_UINT,  0, offsetof(tl_conf_t, chunk_interval),
      "60" },
    { "chunk_fanout",    TL_UINT,  0, offsetof(tl_conf_t, chunk_fanout),  "4" },
    { "chunk_levels",    TL_UINT,  0, offsetof(tl_conf_t, chunk_levels),  "6" },
    { "chunk_max_entries", TL_UINT, 0,
      offsetof(tl_conf_t, chunk_max_entries), "50000" },
    { "ocsp",            TL_BOOL,  0, offsetof(tl_conf_t, ocsp),        "yes" },
    { "ocsp_require",    TL_BOOL,  0, offsetof(tl_conf_t, ocsp_require), "no" },
    { "ocsp_timeout_ms", TL_UINT,  0, offsetof(tl_conf_t, ocsp_timeout_ms),
      "5000" },
    { "ocsp_cache",      TL_UINT,  0, offsetof(tl_conf_t, ocsp_cache),
      "3600" },
    { "reply_ms",        TL_UINT,  0, offsetof(tl_conf_t, reply_ms), "1000" },
    { "tokens",          TL_UINT,  0, offsetof(tl_conf_t, tokens),   "4096" },
    { "sync_delay_ms",   TL_UINT,  0, offsetof(tl_conf_t, sync_delay_ms),
      "0" },
    { "peer",            TL_LIST,  0, offsetof(tl_conf_t, peers),        NULL },
    { NULL, TL_STR, 0, 0, NULL }
};


static int
tl_conf_list_add(tl_conf_list_t *l, const char *v, const char *name,
    sk_err_t *err)
{
    char  **p;

    if (*v == '\0') {
        return sk_err_set(err, SK_ERR_FORMAT, "\"%s\": empty value", name);
    }
    p = realloc(l->v, (l->n + 1) * sizeof(*p));
    if (p == NULL || (p[l->n] = strdup(v)) == NULL) {
        if (p != NULL) {
            l->v = p;
        }
        return sk_err_set(err, SK_ERR_NOMEM, "%s", name);
    }
    l->v = p;
    l->n++;
    return 0;
}


static int
tl_conf_value(tl_conf_t *conf, const tl_confdef_t *d, const char *v,
    sk_err_t *err)
{
    char               *p = (char *) conf + d->offset, *end;
    unsigned long long  n;

    switch (d->type) {
    case TL_STR:
        if (*v == '\0') {
            return sk_err_set(err, SK_ERR_FORMAT, "\"%s\": empty value",
                d->name);
        }
        *(char **) p = strdup(v);
        return *(char **) p != NULL ? 0 : sk_err_set(err, SK_ERR_NOMEM, "%s",
            d->name);
    case TL_UINT:
        errno = 0;
        n = strtoull(v, &end, 10);
        if (*v < '0' || *v > '9' || *end != '\0' || errno != 0) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "\"%s\": illegal value \"%s\" (want a number)", d->name, v);
        }
        *(uint64_t *) p = n;
        return 0;
    case TL_BOOL:
        if (strcmp(v, "yes") == 0 || strcmp(v, "1") == 0) {
            *(int *) p = 1;
        } else if (strcmp(v, "no") == 0 || strcmp(v, "0") == 0) {
            *(int *) p = 0;
        } else {
            return sk_err_set(err, SK_ERR_FORMAT,
                "\"%s\": illegal value \"%s\" (want yes or no)", d->name, v);
        }
        return 0;
    case TL_LIST:
        return tl_conf_list_add((tl_conf_list_t *) p, v, d->name, err);
    }
    return sk_err_set(err, SK_ERR_USAGE, "\"%s\": bad type", d->name);
}


static char *
tl_conf_trim(char *s)
{
    char  *e;

    while (*s == ' ' || *s == '\t') {
        s++;
    }
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) {
        *--e = '\0';
    }
    return s;
}


static int
tl_conf_line(tl_conf_t *conf, char *line, unsigned char *seen, sk_err_t *err)
{
    const tl_confdef_t  *d;
    char                *eq, *k, *v;

    line = tl_conf_trim(line);
    if (*line == '\0' || *line == '#') {
        return 0;
    }
    eq = strchr(line, '=');
    if (eq == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "expected \"key = value\"");
    }
    *eq = '\0';
    k = tl_conf_trim(line);
    v = tl_conf_trim(eq + 1);
    for (d = tl_confdefs; d->name != NULL; d++) {
        if (strcmp(d->name, k) == 0) {
            break;
        }
    }
    if (d->name == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "unrecognized parameter \"%s\"",
            k);
    }
    if (seen[d - tl_confdefs]++ && d->type != TL_LIST) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"%s\" is duplicate", k);
    }
    return tl_conf_value(conf, d, v, err);
}


/* Defaults, requirements and the checks that combine keys. */
static int
tl_conf_finish(tl_conf_t *conf, const unsigned char *seen, sk_err_t *err)
{
    const tl_confdef_t  *d;
    char                 buf[64];

    for (d = tl_confdefs; d->name != NULL; d++) {
        if (seen[d - tl_confdefs]) {
            continue;
        }
        if (d->required) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "required value \"%s\" missing", d->name);
        }
        if (d->dflt != NULL && tl_conf_value(conf, d, d->dflt, err) != 0) {
            return -1;
        }
    }
    if (conf->tid == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"tid\": must be above 0");
    }
    if (conf->threads == 0 || conf->max_body == 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"threads\" and \"max_body\" must be above 0");
    }
    if (conf->tokens == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"tokens\" must be above 0");
    }
    if (conf->ocsp_timeout_ms == 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"ocsp_timeout_ms\" must be above 0");
    }
    if (conf->chunk_interval == 0 || conf->chunk_max_entries == 0
        || conf->chunk_fanout < 2 || conf->chunk_fanout > TL_CHUNK_FANOUT_MAX)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "\"chunk_interval\" and "
            "\"chunk_max_entries\" must be above 0, \"chunk_fanout\" "
            "within 2..%d", TL_CHUNK_FANOUT_MAX);
    }
    if (conf->key_file == NULL) {
        conf->key_file = malloc(strlen(conf->data_dir) + sizeof(TL_KEY_FILE)
                                + 1);
        if (conf->key_file == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "key");
        }
        sprintf(conf->key_file, "%s/%s", conf->data_dir, TL_KEY_FILE);
    }
    if (conf->origin == NULL) {
        snprintf(buf, sizeof(buf), "sk-timeline-%llu",
            (unsigned long long) conf->tid);
        conf->origin = strdup(buf);
        if (conf->origin == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "origin");
        }
    }
    if (strchr(conf->origin, ' ') != NULL || strchr(conf->origin, '+')) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"origin\": no spaces or '+' (it is also the key name)");
    }
    return 0;
}


int
tl_conf_parse(tl_conf_t *conf, const char *text, size_t len,
    const char *path, sk_err_t *err)
{
    unsigned char  seen[sizeof(tl_confdefs) / sizeof(tl_confdefs[0])];
    char          *buf, *line, *nl;
    unsigned       lineno = 0;

    memset(conf, 0, sizeof(*conf));
    memset(seen, 0, sizeof(seen));
    if (memchr(text, '\0', len) != NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: contains a NUL byte",
            path);
    }
    buf = malloc(len + 1);
    if (buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s", path);
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    for (line = buf; *line != '\0'; line = nl + 1) {
        lineno++;
        nl = strchr(line, '\n');
        if (nl == NULL) {
            nl = line + strlen(line) - 1;
        } else {
            *nl = '\0';
        }
        if (tl_conf_line(conf, line, seen, err) != 0) {
            free(buf);
            tl_conf_free(conf);
            return sk_err_prefix(err, "%s: line %u", path, lineno);
        }
    }
    free(buf);
    if (tl_conf_finish(conf, seen, err) != 0) {
        tl_conf_free(conf);
        return sk_err_prefix(err, "%s", path);
    }
    return 0;
}


int
tl_conf_load(tl_conf_t *conf, const char *path, sk_err_t *err)
{
    size_t  len;
    char   *buf;
    int     rc;

    memset(conf, 0, sizeof(*conf));
    if (sk_file_read(&buf, &len, path, TL_CONF_MAX, err) != 0) {
        return -1;
    }
    rc = tl_conf_parse(conf, buf, len, path, err);
    free(buf);
    return rc;
}


void
tl_conf_free(tl_conf_t *conf)
{
    const tl_confdef_t  *d;
    tl_conf_list_t      *l;
    size_t               i;

    for (d = tl_confdefs; d->name != NULL; d++) {
        if (d->type == TL_STR) {
            free(*(char **) ((char *) conf + d->offset));
        } else if (d->type == TL_LIST) {
            l = (tl_conf_list_t *) ((char *) conf + d->offset);
            for (i = 0; i < l->n; i++) {
                free(l->v[i]);
            }
            free(l->v);
        }
    }
}
