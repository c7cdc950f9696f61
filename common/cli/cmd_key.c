/*
 * cmd_key.c -- `sk keygen` and `sk pubkey`.
 *
 * keygen writes the private key and at least three backups before anything
 * else sees the key: the design demands redundant backups before an SK is
 * sent to any timeline, since a lost SK can only be replaced by a rebinder.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define SK_MIN_BACKUPS 3
#define SK_MAX_BACKUPS 16


static int
sk_print_key(const sk_key_t *key, const char *name, const char *keyfile,
    const char *pubfile, char *const *backups, size_t nbackups, int json)
{
    const unsigned char *spki;
    char                 fp[SK_FINGERPRINT_SIZE], *b64;
    size_t               len, i;

    sk_key_fingerprint(fp, key);
    spki = sk_key_get0_spki(key, &len);
    b64 = sk_b64_encode_alloc(spki, len);
    if (b64 == NULL) {
        return cli_fail("out of memory");
    }

    if (json) {
        printf("{\"name\":");
        cli_json_str(stdout, name ? name : "");
        printf(",\"algorithm\":\"%s\",\"key_type\":\"%s\",\"fingerprint\":"
            "\"%s\",\"key\":\"%s\"", sk_key_alg_name(sk_key_alg(key)),
            sk_key_type_name(key), fp, b64);
        if (keyfile != NULL) {
            printf(",\"private_key\":");
            cli_json_str(stdout, keyfile);
        }
        if (pubfile != NULL) {
            printf(",\"public_key\":");
            cli_json_str(stdout, pubfile);
        }
        if (nbackups > 0) {
            printf(",\"backups\":[");
            for (i = 0; i < nbackups; i++) {
                printf(i ? "," : "");
                cli_json_str(stdout, backups[i]);
            }
            printf("]");
        }
        printf("}\n");
    } else {
        printf("%s%s%s %s %s\n", name ? name : "", name ? ": " : "",
            sk_key_alg_name(sk_key_alg(key)), fp, b64);
    }
    free(b64);
    return SK_EXIT_OK;
}


/* Write one copy and read it back: a backup that cannot be loaded is no
 * backup. */
static int
sk_write_checked(const sk_key_t *key, const char *path, sk_err_t *err)
{
    unsigned char  want[SK_SHA256_BYTES], got[SK_SHA256_BYTES];
    sk_key_t      *back;

    if (sk_key_save_private(key, path, err) != 0) {
        return -1;
    }
    if (sk_key_load_private(&back, path, err) != 0) {
        unlink(path);
        return -1;
    }
    sk_key_spki_sha256(want, key);
    sk_key_spki_sha256(got, back);
    sk_key_free(back);
    if (memcmp(want, got, sizeof(want)) != 0) {
        unlink(path);
        return sk_err_set(err, SK_ERR_SYSTEM, "%s: read back differs", path);
    }
    return 0;
}


static int
sk_keygen(int argc, char **argv)
{
    static const struct option opts[] = {
        { "name",    required_argument, NULL, 'n' },
        { "out",     required_argument, NULL, 'o' },
        { "backup",  required_argument, NULL, 'b' },
        { "type",    required_argument, NULL, 't' },
        { "bits",    required_argument, NULL, 'B' },
        { "no-backups-i-accept-the-risk", no_argument, NULL, 'R' },
        { "json",    no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char    *name = NULL, *out = NULL;
    char          *backups[SK_MAX_BACKUPS], *pub = NULL, *written[SK_MAX_BACKUPS + 2];
    size_t         nbackups = 0, nwritten = 0, i, j;
    unsigned long  bits = 0;
    sk_key_alg_t   alg = SK_KEY_ED25519;
    sk_key_t      *key = NULL;
    sk_err_t       err;
    int            c, risk = 0, json = 0, rc = SK_EXIT_FAIL;

    optind = 1;
    while ((c = getopt_long(argc, argv, "n:o:b:t:", opts, NULL)) != -1) {
        switch (c) {
        case 'n': name = optarg; break;
        case 'o': out = optarg; break;
        case 'b':
            if (nbackups == SK_MAX_BACKUPS) {
                return cli_usage(&sk_cmd_keygen, "at most %d backups",
                    SK_MAX_BACKUPS);
            }
            backups[nbackups++] = optarg;
            break;
        case 't':
            if (sk_key_alg_parse(&alg, optarg, &err) != 0) {
                return cli_usage(&sk_cmd_keygen, "%s", err.msg);
            }
            break;
        case 'B':
            if (cli_parse_uint(&bits, optarg, 16384) != 0) {
                return cli_usage(&sk_cmd_keygen, "bad --bits \"%s\"", optarg);
            }
            break;
        case 'R': risk = 1; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_keygen, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_keygen, "unexpected argument \"%s\"",
            argv[optind]);
    }
    if (name == NULL || out == NULL) {
        return cli_usage(&sk_cmd_keygen, "missing %s",
            name == NULL ? "-n NAME" : "-o FILE");
    }
    if (sk_name_check(name, strlen(name), &err) != 0) {
        return cli_usage(&sk_cmd_keygen, "-n %s: %s", name, err.msg);
    }
    if (nbackups < SK_MIN_BACKUPS && !risk) {
        return cli_usage(&sk_cmd_keygen,
            "%zu backup%s given, at least %d are required (-b FILE each); "
            "a lost sovereign key cannot be replaced "
            "(--no-backups-i-accept-the-risk to override)",
            nbackups, nbackups == 1 ? "" : "s", SK_MIN_BACKUPS);
    }
    for (i = 0; i < nbackups; i++) {
        if (strcmp(backups[i], out) == 0) {
            return cli_usage(&sk_cmd_keygen, "backup %s is the key itself",
                backups[i]);
        }
        for (j = 0; j < i; j++) {
            if (strcmp(backups[i], backups[j]) == 0) {
                return cli_usage(&sk_cmd_keygen, "backup %s given twice",
                    backups[i]);
            }
        }
    }

    pub = malloc(strlen(out) + 5);
    if (pub == NULL) {
        return cli_fail("out of memory");
    }
    sprintf(pub, "%s.pub", out);

    if (sk_key_generate(&key, alg, (int) bits, &err) != 0) {
        rc = cli_fail_err(&err);
        goto done;
    }
    /* All or nothing: on any failure remove what was written. */
    if (sk_write_checked(key, out, &err) != 0) {
        rc = cli_fail_err(&err);
        goto done;
    }
    written[nwritten++] = (char *) out;
    for (i = 0; i < nbackups; i++) {
        if (sk_write_checked(key, backups[i], &err) != 0) {
            rc = cli_fail_err(&err);
            goto done;
        }
        written[nwritten++] = backups[i];
    }
    if (sk_key_save_public(key, pub, &err) != 0) {
        rc = cli_fail_err(&err);
        goto done;
    }
    nwritten = 0;
    rc = sk_print_key(key, name, out, pub, backups, nbackups, json);

done:
    for (i = 0; i < nwritten; i++) {
        unlink(written[i]);
    }
    sk_key_free(key);
    free(pub);
    return rc;
}


static int
sk_pubkey(int argc, char **argv)
{
    static const struct option opts[] = {
        { "key",  required_argument, NULL, 'k' },
        { "pub",  required_argument, NULL, 'p' },
        { "out",  required_argument, NULL, 'o' },
        { "json", no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char *in = NULL, *out = NULL;
    sk_key_t   *key;
    sk_err_t    err;
    int         c, json = 0, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "k:p:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
        case 'p': in = optarg; break;
        case 'o': out = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_pubkey, "unknown option");
        }
    }
    if (in == NULL || optind != argc) {
        return cli_usage(&sk_cmd_pubkey, "need exactly one -k or -p FILE");
    }
    if (sk_key_load_public(&key, in, &err) != 0) {
        return cli_fail_err(&err);
    }
    if (out != NULL && sk_key_save_public(key, out, &err) != 0) {
        sk_key_free(key);
        return cli_fail_err(&err);
    }
    rc = sk_print_key(key, NULL, NULL, out, NULL, 0, json);
    sk_key_free(key);
    return rc;
}


const sk_cmd_t sk_cmd_keygen = {
    "keygen", sk_keygen,
    "-n NAME -o KEY -b BACKUP -b BACKUP -b BACKUP [-t ed25519|p256|rsa]"
    " [--bits N] [--json]",
    "Make a new sovereign key for NAME.  The private key is written to KEY\n"
    "and to every BACKUP (each created new, mode 0600, read back and\n"
    "checked), the public key to KEY.pub.  At least three backups are\n"
    "required, on separate media; --no-backups-i-accept-the-risk lifts\n"
    "that.  If any file cannot be written, none is left behind.\n"
    "Prints NAME, the algorithm, the SHA-256 fingerprint of the public\n"
    "key and the key itself (base64url DER, the Bind entry's Key field).\n"
};

const sk_cmd_t sk_cmd_pubkey = {
    "pubkey", sk_pubkey,
    "(-k KEY | -p PUB) [-o PUB] [--json]",
    "Print the fingerprint and base64url public key of a key file (a\n"
    "private key, a PEM public key or a certificate); -o writes the public\n"
    "key as PEM.\n"
};
