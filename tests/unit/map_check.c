/*
 * map_check.c -- libsk's map checks for the integration tests
 * (t/mirror-map.t), on what a real sk-mirror served:
 *
 *   map_check proof NAME MAPHASH < PROOF      the Map-Proof lines of an
 *       answer against a Map-Hash (base64url): prints "present VALUE"
 *       (base64url) or "absent"; exit 1 if the proof does not verify
 *   map_check evidence TID PUBKEY < EVIDENCE  /reneged/<tid>'s text,
 *       checked by sk_evidence_check as a client checks it: exit 0 if it
 *       proves renegation, 1 (the reason on stderr) if not
 *   map_check drop DIR TIDS                   an sk-mirror index (DIR,
 *       the mirror stopped) made as a mirror from before maps left it:
 *       the map tables emptied, the records "map-<TID>" of the TIDs
 *       (comma-separated) removed
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/sk.h>
#include <sk/evidence.h>
#include <sk/map.h>


static char *
map_check_stdin(size_t *len)
{
    char    *p = NULL, *np;
    size_t   cap = 0, n;

    *len = 0;
    do {
        if (*len + 65536 > cap) {
            cap = (cap + 65536) * 2;
            np = realloc(p, cap);
            if (np == NULL) {
                free(p);
                return NULL;
            }
            p = np;
        }
        n = fread(p + *len, 1, cap - *len - 1, stdin);
        *len += n;
    } while (n > 0);
    p[*len] = '\0';
    return p;
}


static int
map_check_proof(const char *name, const char *hash, const char *text,
    size_t len, sk_err_t *err)
{
    static sk_map_proof_t  p;
    unsigned char          key[SK_MAP_KEY_BYTES], *raw;
    sk_merkle_hash_t       root, value;
    size_t                 used, rawlen;
    char                   out[64];
    int                    present;

    if (sk_b64_decode(&raw, &rawlen, hash, strlen(hash), err) != 0) {
        return -1;
    }
    if (rawlen != sizeof(root)) {
        free(raw);
        return sk_err_set(err, SK_ERR_FORMAT, "MAPHASH: not 32 bytes");
    }
    memcpy(root, raw, sizeof(root));
    free(raw);
    if (sk_map_key(key, name, err) != 0
        || sk_map_proof_parse(&p, &used, text, len, err) != 0
        || sk_map_proof_verify(&p, key, root, &present, value, err) != 0)
    {
        return -1;
    }
    if (used != len) {
        return sk_err_set(err, SK_ERR_FORMAT, "bytes after the proof");
    }
    if (present) {
        sk_b64_encode(out, value, sizeof(value));
        printf("present %s\n", out);
    } else {
        printf("absent\n");
    }
    return 0;
}


static int
map_check_evidence(const char *tid, const char *pub, const char *text,
    size_t len, sk_err_t *err)
{
    sk_evidence_tl_t  tl;
    sk_evidence_t     ev;
    sk_key_t         *key;
    char              origin[64];
    int               rc;

    if (sk_key_load_public(&key, pub, err) != 0) {
        return -1;
    }
    tl.tid = strtoull(tid, NULL, 10);
    snprintf(origin, sizeof(origin), "sk-timeline-%s", tid);
    tl.origin = origin;
    tl.key = key;
    rc = sk_evidence_parse(&ev, text, len, (size_t) 1 << 20, err);
    if (rc == 0) {
        rc = sk_evidence_check(&ev, &tl, err);
        if (rc == 1) {
            rc = sk_err_set(err, SK_ERR_FORMAT, "kind %s: not checked here",
                ev.kind);
        }
        sk_evidence_free(&ev);
    }
    sk_key_free(key);
    return rc;
}


static int
map_check_drop(const char *dir, const char *tids, sk_err_t *err)
{
    sk_db_table_t   leaf, node, meta;
    sk_db_txn_t    *txn;
    sk_db_t        *db;
    const char     *p;
    char            name[64];
    int             rc;

    if (sk_db_open(&db, dir, NULL, err) != 0) {
        return -1;
    }
    rc = sk_db_table(db, "map.leaf", 0, &leaf, err) != 0
        || sk_db_table(db, "map.node", 0, &node, err) != 0
        || sk_db_table(db, "meta", 0, &meta, err) != 0
        || sk_db_begin(db, 1, &txn, err) != 0 ? -1 : 0;
    if (rc == 0) {
        rc = sk_db_clear(txn, leaf, err) != 0
            || sk_db_clear(txn, node, err) != 0 ? -1 : 0;
        for (p = tids; rc == 0 && p != NULL; p = strchr(p, ',')) {
            p += *p == ',';
            snprintf(name, sizeof(name), "map-%.*s", (int) strcspn(p, ","),
                p);
            rc = sk_db_del(txn, meta, name, strlen(name), err) == -1 ? -1 : 0;
        }
        rc = rc == 0 ? sk_db_commit(txn, err) : (sk_db_abort(txn), -1);
    }
    sk_db_close(db);
    return rc;
}


int
main(int argc, char **argv)
{
    sk_err_t   err;
    size_t     len;
    char      *text;
    int        rc;

    if (argc != 4 || (strcmp(argv[1], "proof") != 0
                      && strcmp(argv[1], "evidence") != 0
                      && strcmp(argv[1], "drop") != 0))
    {
        fprintf(stderr, "usage: map_check proof NAME MAPHASH < PROOF\n"
            "       map_check evidence TID PUBKEY < EVIDENCE\n"
            "       map_check drop DIR TIDS\n");
        return 2;
    }
    if (strcmp(argv[1], "drop") == 0) {
        if (map_check_drop(argv[2], argv[3], &err) != 0) {
            fprintf(stderr, "map_check: %s\n", err.msg);
            return 1;
        }
        return 0;
    }
    text = map_check_stdin(&len);
    if (text == NULL) {
        fprintf(stderr, "map_check: out of memory\n");
        return 2;
    }
    rc = strcmp(argv[1], "proof") == 0
        ? map_check_proof(argv[2], argv[3], text, len, &err)
        : map_check_evidence(argv[2], argv[3], text, len, &err);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "map_check: %s\n", err.msg);
        return 1;
    }
    return 0;
}
