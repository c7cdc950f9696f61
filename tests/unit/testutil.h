/*
 * testutil.h -- shared helpers for the cmocka unit tests.
 */
#ifndef SK_TESTUTIL_H
#define SK_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <cmocka.h>

#include <sk/sk.h>

/* A fresh private directory for one test; remove with tu_rmtree. */
static inline char *
tu_tmpdir(void)
{
    char  tmpl[] = "/tmp/sk-test.XXXXXX";
    char *d = mkdtemp(tmpl);

    assert_non_null(d);
    return strdup(d);
}

static inline void
tu_rmtree(char *dir)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static inline char *
tu_path(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);

    assert_non_null(p);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

/* Hex string -> bytes; returns the byte count. */
static inline size_t
tu_unhex(unsigned char *out, const char *hex)
{
    size_t n = strlen(hex) / 2, i;

    for (i = 0; i < n; i++) {
        assert_int_equal(sscanf(hex + 2 * i, "%2hhx", &out[i]), 1);
    }
    return n;
}

/* Entries in dir other than "." and "..", hidden ones included (a
 * leftover temporary file counts). */
static inline int
tu_count_entries(const char *dir)
{
    DIR           *d = opendir(dir);
    struct dirent *e;
    int            n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    }
    closedir(d);
    return n;
}

/* The Ed25519 root CA of the docs/protocol.md examples, base64url DER. */
#define TU_DOC_CERT_ROOT \
    "MIIBWTCCAQugAwIBAgIUSZh9N9wGP5K69YostqVd7veXknAwBQYDK2VwMBoxGDAW" \
    "BgNVBAMMD0V4YW1wbGUgUm9vdCBDQTAeFw0yNjEyMDMxMjA0MzlaFw0zNjExMzAx" \
    "MjA0MzlaMBoxGDAWBgNVBAMMD0V4YW1wbGUgUm9vdCBDQTAqMAUGAytlcAMhADS0" \
    "2QQxVsttzwvrCilJt1WclA0ry22-jFOpswJ446dGo2MwYTAdBgNVHQ4EFgQUjT2s" \
    "8MoMm8Hub-UtNXBIzI9UZMUwHwYDVR0jBBgwFoAUjT2s8MoMm8Hub-UtNXBIzI9U" \
    "ZMUwDwYDVR0TAQH_BAUwAwEB_zAOBgNVHQ8BAf8EBAMCAgQwBQYDK2VwA0EA_6r9" \
    "Q4IG64H748XuuVhHcwRjR1BWsXekb_N3EGsiANXNSwyrjVCzi9EGdC7vtlP7WqLi" \
    "M813tA3syQ8QcKg_AA"

/* Assert a libsk call failed with code and a message containing want. */
#define tu_assert_err(call, errp, want_code, want_substr)                    \
    do {                                                                      \
        sk_err_clear(errp);                                                   \
        assert_int_equal((call), -1);                                         \
        if ((errp)->code != (want_code)                                       \
            || strstr((errp)->msg, (want_substr)) == NULL)                    \
        {                                                                     \
            fail_msg("want %s \"%s\", got %s \"%s\"", sk_err_str(want_code),  \
                (want_substr), sk_err_str((errp)->code), (errp)->msg);        \
        }                                                                     \
    } while (0)

#define tu_assert_ok(call, errp)                                              \
    do {                                                                      \
        sk_err_clear(errp);                                                   \
        if ((call) != 0) {                                                    \
            fail_msg("%s failed: %s: %s", #call, sk_err_str((errp)->code),    \
                (errp)->msg);                                                 \
        }                                                                     \
    } while (0)

#endif
