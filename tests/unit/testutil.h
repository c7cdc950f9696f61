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
