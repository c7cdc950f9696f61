/*
 * sk/conf.h -- the daemons' "key = value" configuration files, driven by
 * a table of known keys (OpenDKIM's configdef, nginx's offsetof slots):
 *
 *   # a comment line
 *   key = value
 *
 * Blanks around key and value are dropped; every key must be in the
 * table and, unless marked repeat, appear at most once; errors name the
 * file and line ("m.conf: line 4: unrecognized parameter \"x\"").  After
 * the last line each key not given gets its default (through the same
 * setter) or, if required, is an error.
 */
#ifndef SK_CONF_H
#define SK_CONF_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

typedef enum {
    SK_CONF_STR = 0,        /* char *, strdup()ed */
    SK_CONF_UINT,           /* uint64_t, decimal */
    SK_CONF_BOOL,           /* int: yes/1, no/0 */
    SK_CONF_CUSTOM          /* the caller's setter */
} sk_conf_type_t;

typedef struct {
    const char      *name;
    sk_conf_type_t   type;
    int              required;
    int              repeat;        /* may be given several times */
    size_t           offset;        /* in the caller's struct */
    const char      *dflt;          /* NULL: none */
} sk_conf_def_t;

/* Sets a SK_CONF_CUSTOM key; value may be modified. */
typedef int (*sk_conf_set_fn)(void *conf, const sk_conf_def_t *d,
    char *value, sk_err_t *err);

/* Fill conf from text[0..len) (a file's contents) by defs (ended by a
 * NULL name); path is for messages.  On failure conf may be half filled:
 * free it with sk_conf_free_strings and the caller's own cleanup. */
int sk_conf_load(void *conf, const sk_conf_def_t *defs, sk_conf_set_fn set,
    const char *text, size_t len, const char *path, sk_err_t *err) SK_WUR;

/* free() every SK_CONF_STR field and set it to NULL. */
void sk_conf_free_strings(void *conf, const sk_conf_def_t *defs);

/* The keys every daemon has, checked once the file is loaded: listen
 * must be a numeric address ("IPv4:PORT" or "[IPv6]:PORT", sk/addr.h;
 * here, not at bind time, so that -n catches it), and *key_file, if not
 * given, becomes data_dir/dflt_name. */
int sk_conf_listen_key(const char *listen, char **key_file,
    const char *data_dir, const char *dflt_name, sk_err_t *err) SK_WUR;

/* Strict decimal (no sign, no blanks) into *out. */
int sk_conf_u64(uint64_t *out, const char *field, const char *v,
    sk_err_t *err) SK_WUR;

#endif
