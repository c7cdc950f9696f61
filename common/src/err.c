/*
 * err.c -- filling sk_err_t.  Never allocates: messages are truncated to
 * the fixed buffer, as hiredis does with its errstr.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>

#include <sk/err.h>


static const char *const sk_err_names[] = {
    [SK_OK]                = "ok",
    [SK_ERR_SYSTEM]        = "system",
    [SK_ERR_NOMEM]         = "out of memory",
    [SK_ERR_FORMAT]        = "format",
    [SK_ERR_CRYPTO]        = "crypto",
    [SK_ERR_SIGNATURE]     = "signature",
    [SK_ERR_EXPIRED]       = "expired",
    [SK_ERR_NOT_YET_VALID] = "not yet valid",
    [SK_ERR_KEY_MISMATCH]  = "key mismatch",
    [SK_ERR_WRONG_SK]      = "wrong sovereign key",
    [SK_ERR_NO_EXTENSION]  = "no extension",
    [SK_ERR_PERM]          = "permissions",
    [SK_ERR_NOT_FOUND]     = "not found",
    [SK_ERR_EXISTS]        = "exists",
    [SK_ERR_UNAVAILABLE]   = "unavailable",
    [SK_ERR_USAGE]         = "usage",
};


const char *
sk_err_str(sk_err_code_t code)
{
    if ((size_t) code >= sizeof(sk_err_names) / sizeof(sk_err_names[0])) {
        return "unknown";
    }
    return sk_err_names[code];
}


void
sk_err_clear(sk_err_t *err)
{
    if (err != NULL) {
        err->code = SK_OK;
        err->sys_errno = 0;
        err->msg[0] = '\0';
    }
}


static void
sk_err_vset(sk_err_t *err, sk_err_code_t code, const char *fmt, va_list ap)
{
    err->code = code;
    err->sys_errno = 0;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}


static void
sk_err_append(sk_err_t *err, const char *s)
{
    size_t used = strlen(err->msg);

    snprintf(err->msg + used, sizeof(err->msg) - used, "%s", s);
}


int
sk_err_set(sk_err_t *err, sk_err_code_t code, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL) {
        va_start(ap, fmt);
        sk_err_vset(err, code, fmt, ap);
        va_end(ap);
    }
    return -1;
}


int
sk_err_sys(sk_err_t *err, const char *fmt, ...)
{
    va_list ap;
    int     saved = errno;

    if (err != NULL) {
        va_start(ap, fmt);
        sk_err_vset(err, SK_ERR_SYSTEM, fmt, ap);
        va_end(ap);
        err->sys_errno = saved;
        sk_err_append(err, ": ");
        sk_err_append(err, strerror(saved));
    }
    errno = saved;
    return -1;
}


int
sk_err_crypto(sk_err_t *err, const char *fmt, ...)
{
    va_list        ap;
    unsigned long  e;
    char           buf[160];

    if (err != NULL) {
        va_start(ap, fmt);
        sk_err_vset(err, SK_ERR_CRYPTO, fmt, ap);
        va_end(ap);
        /* The earliest error is usually the cause; later ones are context. */
        e = ERR_peek_error();
        if (e != 0) {
            ERR_error_string_n(e, buf, sizeof(buf));
            sk_err_append(err, ": ");
            sk_err_append(err, buf);
        }
    }
    ERR_clear_error();
    return -1;
}


int
sk_err_prefix(sk_err_t *err, const char *fmt, ...)
{
    va_list ap;
    char    prefix[SK_ERR_MSG_MAX], old[SK_ERR_MSG_MAX];

    if (err != NULL) {
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof(old));
        memcpy(err->msg, prefix, sizeof(err->msg));
        sk_err_append(err, ": ");
        sk_err_append(err, old);
    }
    return -1;
}
