/*
 * map_replay.c -- t/timeline-map.t's independent check of a timeline's
 * name map: read a canonical log (entries back to back, SN 0 first) on
 * stdin, keep every name's value in memory (sk_map_value_add, no store),
 * and at each Map-Root entry compare its Map-Hash and Map-Names with the
 * root of the names so far, computed whole by sk_map_root_sorted.
 *
 * Prints one line per Map-Root entry, "maproot SN ok|bad NAMES", then
 * "entries N maproots M names K".  Exit 0 if every Map-Root agrees, 1 if
 * one does not, 2 on a log that does not parse.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>

typedef struct {
    unsigned char   key[SK_MAP_KEY_BYTES];
    sk_map_value_t  v;
} name_t;

static name_t  *names;
static size_t   nnames;


static int
by_key(const void *a, const void *b)
{
    return memcmp(((const name_t *) a)->key, ((const name_t *) b)->key,
        SK_MAP_KEY_BYTES);
}


/* The name with this key, added (empty) if new; names stay sorted. */
static name_t *
name_get(const unsigned char key[SK_MAP_KEY_BYTES])
{
    name_t  probe, *n;
    size_t  i;

    memcpy(probe.key, key, SK_MAP_KEY_BYTES);
    n = nnames > 0 ? bsearch(&probe, names, nnames, sizeof(*names), by_key)
                   : NULL;
    if (n != NULL) {
        return n;
    }
    n = realloc(names, (nnames + 1) * sizeof(*names));
    if (n == NULL) {
        exit(2);
    }
    names = n;
    for (i = nnames; i > 0 && by_key(&names[i - 1], &probe) > 0; i--) {
        names[i] = names[i - 1];
    }
    names[i] = probe;
    sk_map_value_init(&names[i].v);
    nnames++;
    return &names[i];
}


/* The root of every name so far, base64url. */
static int
root_now(char out[64], sk_err_t *err)
{
    unsigned char     (*keys)[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  *values, root;
    size_t             i;
    int                rc;

    keys = malloc((nnames + 1) * sizeof(*keys));
    values = malloc((nnames + 1) * sizeof(*values));
    if (keys == NULL || values == NULL) {
        exit(2);
    }
    for (i = 0; i < nnames; i++) {
        memcpy(keys[i], names[i].key, SK_MAP_KEY_BYTES);
        sk_map_value_hash(values[i], &names[i].v);
    }
    rc = sk_map_root_sorted(root, (const unsigned char (*)[SK_MAP_KEY_BYTES])
        keys, values, nnames, err);
    free(keys);
    free(values);
    if (rc == 0) {
        sk_b64_encode(out, root, sizeof(root));
    }
    return rc;
}


/* One entry, SN sn, text[0..len). */
static int
replay(const sk_entry_t *e, uint64_t sn, const char *text, size_t len,
    int *bad, sk_err_t *err)
{
    unsigned char     key[SK_MAP_KEY_BYTES];
    sk_merkle_hash_t  leaf;
    const char       *hash, *count;
    char              root[64], n[24];

    if (sk_entry_type(e) == SK_ENTRY_MAP_ROOT) {
        if (root_now(root, err) != 0) {
            return -1;
        }
        hash = sk_entry_get(e, "Map-Hash");
        count = sk_entry_get(e, "Map-Names");
        snprintf(n, sizeof(n), "%zu", nnames);
        if (hash == NULL || count == NULL || strcmp(hash, root) != 0
            || strcmp(count, n) != 0)
        {
            *bad = 1;
        }
        printf("maproot %" PRIu64 " %s %zu\n", sn, *bad ? "bad" : "ok",
            nnames);
        return 0;
    }
    if (sk_entry_name(e) == NULL) {
        return 0;
    }
    if (sk_map_key(key, sk_entry_name(e), err) != 0
        || sk_merkle_leaf_hash(leaf, text, len, err) != 0)
    {
        return -1;
    }
    sk_map_value_add(&name_get(key)->v, sn, leaf);
    return 0;
}


int
main(void)
{
    sk_entry_t  *e;
    sk_err_t     err;
    uint64_t     sn = 0, maproots = 0;
    size_t       len = 0, cap = 1 << 20, used, pos = 0;
    char        *buf = malloc(cap);
    int          bad = 0, one;

    while (buf != NULL && !feof(stdin)) {
        if (len == cap && (buf = realloc(buf, cap *= 2)) == NULL) {
            break;
        }
        len += fread(buf + len, 1, cap - len, stdin);
    }
    if (buf == NULL) {
        return 2;
    }
    sk_err_clear(&err);
    while (pos < len) {
        if (sk_entry_parse_next(&e, &used, buf + pos, len - pos, &err) != 0) {
            fprintf(stderr, "map_replay: SN %" PRIu64 ": %s\n", sn, err.msg);
            return 2;
        }
        one = 0;
        if (replay(e, sn, buf + pos, used, &one, &err) != 0) {
            fprintf(stderr, "map_replay: SN %" PRIu64 ": %s\n", sn, err.msg);
            return 2;
        }
        maproots += sk_entry_type(e) == SK_ENTRY_MAP_ROOT;
        bad |= one;
        sk_entry_free(e);
        pos += used;
        sn++;
    }
    printf("entries %" PRIu64 " maproots %" PRIu64 " names %zu\n", sn,
        maproots, nnames);
    free(buf);
    free(names);
    return bad;
}
