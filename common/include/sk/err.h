/*
 * sk/err.h -- the error type every libsk call reports through.
 *
 * Calls return 0 on success and -1 on failure; on failure, when the caller
 * passed a non-NULL sk_err_t, it holds a category and a lowercase message
 * naming the field, file or check that failed.  The error lives on the
 * caller's stack and is never allocated.
 */
#ifndef SK_ERR_H
#define SK_ERR_H

#include <stddef.h>

#if defined(__GNUC__)
#define SK_WUR      __attribute__((warn_unused_result))
#define SK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SK_WUR
#define SK_PRINTF(a, b)
#endif

typedef enum {
    SK_OK = 0,
    SK_ERR_SYSTEM,          /* a system call failed; sys_errno says which */
    SK_ERR_NOMEM,
    SK_ERR_FORMAT,          /* malformed input: the message names the field */
    SK_ERR_CRYPTO,          /* OpenSSL failed; its error queue is in msg */
    SK_ERR_SIGNATURE,       /* a signature does not verify */
    SK_ERR_EXPIRED,
    SK_ERR_NOT_YET_VALID,
    SK_ERR_KEY_MISMATCH,    /* carrier's subject key is not the leaf's */
    SK_ERR_WRONG_SK,        /* made by another sovereign key */
    SK_ERR_NO_EXTENSION,    /* certificate lacks the sovereign-key extension */
    SK_ERR_PERM,            /* file permissions too open */
    SK_ERR_NOT_FOUND,
    SK_ERR_EXISTS,          /* refusing to overwrite */
    SK_ERR_UNAVAILABLE,     /* a backend (Redis, network peer) is down */
    SK_ERR_USAGE            /* the caller asked for something impossible */
} sk_err_code_t;

#define SK_ERR_MSG_MAX 256

typedef struct {
    sk_err_code_t code;
    int           sys_errno;            /* errno for SK_ERR_SYSTEM, else 0 */
    char          msg[SK_ERR_MSG_MAX];
} sk_err_t;

/* Short name of a code, e.g. "signature" for SK_ERR_SIGNATURE. */
const char *sk_err_str(sk_err_code_t code);

void sk_err_clear(sk_err_t *err);

/*
 * Fill err (if non-NULL) and return -1, so a failure path is one line:
 *     return sk_err_set(err, SK_ERR_FORMAT, "field \"%s\": not a number", f);
 */
int sk_err_set(sk_err_t *err, sk_err_code_t code, const char *fmt, ...)
    SK_PRINTF(3, 4);

/* As sk_err_set with SK_ERR_SYSTEM, appending strerror(errno). */
int sk_err_sys(sk_err_t *err, const char *fmt, ...) SK_PRINTF(2, 3);

/* As sk_err_set with SK_ERR_CRYPTO, appending and draining OpenSSL's queue. */
int sk_err_crypto(sk_err_t *err, const char *fmt, ...) SK_PRINTF(2, 3);

/* Prefix an existing message, e.g. with a file name: "f.pem: <msg>". */
int sk_err_prefix(sk_err_t *err, const char *fmt, ...) SK_PRINTF(2, 3);

#endif
