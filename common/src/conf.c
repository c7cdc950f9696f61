/*
 * conf.c -- table-driven "key = value" configuration files (sk/conf.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/addr.h"
#include "sk/conf.h"

#define SK_CONF_KEYS_MAX  128


int
sk_conf_u64(uint64_t *out, const char *field, const char *v, sk_err_t *err)
{
    char  *end;

    errno = 0;
    *out = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0' || errno != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "\"%s\": illegal value \"%s\" (want a number)", field, v);
    }
    return 0;
}


static int
sk_conf_value(void *conf, const sk_conf_def_t *d, sk_conf_set_fn set,
    char *v, sk_err_t *err)
{
    char  *p = (char *) conf + d->offset;

    if (*v == '\0') {
        return sk_err_set(err, SK_ERR_FORMAT, "\"%s\": empty value", d->name);
    }
    switch (d->type) {
    case SK_CONF_STR:
        free(*(char **) p);
        *(char **) p = strdup(v);
        return *(char **) p != NULL ? 0
            : sk_err_set(err, SK_ERR_NOMEM, "%s", d->name);
    case SK_CONF_UINT:
        return sk_conf_u64((uint64_t *) p, d->name, v, err);
    case SK_CONF_BOOL:
        if (strcmp(v, "yes") == 0 || strcmp(v, "1") == 0) {
            *(int *) p = 1;
        } else if (strcmp(v, "no") == 0 || strcmp(v, "0") == 0) {
            *(int *) p = 0;
        } else {
            return sk_err_set(err, SK_ERR_FORMAT,
                "\"%s\": illegal value \"%s\" (want yes or no)", d->name, v);
        }
        return 0;
    case SK_CONF_CUSTOM:
        if (set == NULL) {
            break;
        }
        return set(conf, d, v, err);
    }
    return sk_err_set(err, SK_ERR_USAGE, "\"%s\": bad type", d->name);
}


static char *
sk_conf_trim(char *s)
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
sk_conf_line(void *conf, const sk_conf_def_t *defs, sk_conf_set_fn set,
    char *line, unsigned char *seen, sk_err_t *err)
{
    const sk_conf_def_t  *d;
    char                 *eq, *k, *v;

    line = sk_conf_trim(line);
    if (*line == '\0' || *line == '#') {
        return 0;
    }
    eq = strchr(line, '=');
    if (eq == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "expected \"key = value\"");
    }
    *eq = '\0';
    k = sk_conf_trim(line);
    v = sk_conf_trim(eq + 1);
    for (d = defs; d->name != NULL; d++) {
        if (strcmp(d->name, k) == 0) {
            break;
        }
    }
    if (d->name == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "unrecognized parameter \"%s\"",
            k);
    }
    if (seen[d - defs] && !d->repeat) {
        return sk_err_set(err, SK_ERR_FORMAT, "\"%s\" is duplicate", k);
    }
    seen[d - defs] = 1;
    return sk_conf_value(conf, d, set, v, err);
}


int
sk_conf_load(void *conf, const sk_conf_def_t *defs, sk_conf_set_fn set,
    const char *text, size_t len, const char *path, sk_err_t *err)
{
    const sk_conf_def_t  *d;
    unsigned char         seen[SK_CONF_KEYS_MAX];
    char                 *buf, *line, *nl, dflt[256];
    unsigned              lineno = 0;

    memset(seen, 0, sizeof(seen));
    for (d = defs; d->name != NULL; d++) {
        if (d - defs >= SK_CONF_KEYS_MAX - 1) {
            return sk_err_set(err, SK_ERR_USAGE, "too many keys");
        }
    }
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
        if (sk_conf_line(conf, defs, set, line, seen, err) != 0) {
            free(buf);
            return sk_err_prefix(err, "%s: line %u", path, lineno);
        }
    }
    free(buf);
    for (d = defs; d->name != NULL; d++) {
        if (seen[d - defs]) {
            continue;
        }
        if (d->required) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "%s: required value \"%s\" missing", path, d->name);
        }
        if (d->dflt != NULL) {
            snprintf(dflt, sizeof(dflt), "%s", d->dflt);
            if (sk_conf_value(conf, d, set, dflt, err) != 0) {
                return sk_err_prefix(err, "%s", path);
            }
        }
    }
    return 0;
}


void
sk_conf_free_strings(void *conf, const sk_conf_def_t *defs)
{
    const sk_conf_def_t  *d;
    char                **p;

    for (d = defs; d->name != NULL; d++) {
        if (d->type == SK_CONF_STR) {
            p = (char **) ((char *) conf + d->offset);
            free(*p);
            *p = NULL;
        }
    }
}


int
sk_conf_listen_key(const char *listen, char **key_file, const char *data_dir,
    const char *dflt_name, sk_err_t *err)
{
    struct sockaddr_storage  ss;
    size_t                   n;

    if (sk_addr_parse(&ss, listen, err) != 0) {
        return -1;
    }
    if (*key_file == NULL) {
        n = strlen(data_dir) + strlen(dflt_name) + 2;
        *key_file = malloc(n);
        if (*key_file == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "key");
        }
        snprintf(*key_file, n, "%s/%s", data_dir, dflt_name);
    }
    return 0;
}
