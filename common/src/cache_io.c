/*
 * cache_io.c -- Redis I/O for the key-material cache with one deadline
 * for a whole call.  hiredis's own timeout (SO_RCVTIMEO) applies to each
 * read, so a server that drips its reply a byte at a time under it holds
 * a blocking caller for ever; here the socket is non-blocking and every
 * wait is a poll() for what is left of the call's budget.
 *
 * A reply is bounded while it is read: a bulk string longer than
 * SK_CACHE_VALUE_MAX is refused as soon as its length is read, and no
 * reply may hold more than SK_CACHE_REPLY_MAX bytes in the reader, so a
 * huge value is never read whole.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include <sk/cache.h>

#include "internal.h"

/* A value and the framing around it ("$4194304\r\n", "\r\n"). */
#define SK_CACHE_REPLY_MAX  (SK_CACHE_VALUE_MAX + 1024)


static long long
sk_cache_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


void
sk_cache_deadline(sk_cache_deadline_t *d, int ms)
{
    d->ms = ms;
    d->at = sk_cache_now_ms() + ms;
}


/* Wait until fd is ready for events or d passes (-1, err set). */
static int
sk_cache_wait(int fd, short events, const sk_cache_deadline_t *d,
    const char *what, sk_err_t *err)
{
    struct pollfd  p = { .fd = fd, .events = events };
    long long      left;
    int            n;

    for (;;) {
        left = d->at - sk_cache_now_ms();
        if (left <= 0) {
            return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: timed out "
                "after %d ms", what, d->ms);
        }
        n = poll(&p, 1, (int) left);
        if (n > 0) {
            return 0;
        }
        if (n < 0 && errno != EINTR) {
            return sk_err_sys(err, "%s: poll", what);
        }
    }
}


redisContext *
sk_cache_io_connect(const char *host, int port, const char *path,
    const sk_cache_deadline_t *d, sk_err_t *err)
{
    redisContext  *ctx;
    socklen_t      sl = sizeof(int);
    int            e = 0;

    ctx = path != NULL ? redisConnectUnixNonBlock(path)
                       : redisConnectNonBlock(host, port);
    if (ctx == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (ctx->err == 0
        && sk_cache_wait(ctx->fd, POLLOUT, d, "connect", err) != 0)
    {
        redisFree(ctx);
        return NULL;
    }
    if (ctx->err == 0
        && getsockopt(ctx->fd, SOL_SOCKET, SO_ERROR, &e, &sl) == -1)
    {
        e = errno;
    }
    if (ctx->err != 0 || e != 0) {
        sk_err_set(err, SK_ERR_UNAVAILABLE, "cannot connect: %s",
            ctx->err != 0 ? ctx->errstr : strerror(e));
        redisFree(ctx);
        return NULL;
    }
    return ctx;
}


/*
 * Whether the reader holds more than a value may: a bulk string whose
 * announced length is over SK_CACHE_VALUE_MAX (refused before its bytes
 * come), or more bytes than any reply we take.
 */
static int
sk_cache_too_big(const redisReader *rd, const char *what, sk_err_t *err)
{
    const char  *p = rd->buf + rd->pos, *nl;
    size_t       n = rd->len - rd->pos;
    long long    v;
    char        *end;

    /* The reader takes the type byte off before the rest has come. */
    if (rd->pos > 0 && p[-1] == '$') {
        p--;
        n++;
    }
    if (n > 0 && p[0] == '$' && (nl = memchr(p, '\r', n)) != NULL) {
        v = strtoll(p + 1, &end, 10);
        if (end == nl && v > SK_CACHE_VALUE_MAX) {
            return sk_err_set(err, SK_ERR_FORMAT, "%s: value of %lld bytes "
                "is larger than %d", what, v, SK_CACHE_VALUE_MAX);
        }
    }
    if (n > SK_CACHE_REPLY_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: reply larger than %d "
            "bytes", what, SK_CACHE_REPLY_MAX);
    }
    return 0;
}


static redisReply *
sk_cache_io_error(redisContext *ctx, const char *what, sk_err_t *err)
{
    sk_err_set(err, SK_ERR_UNAVAILABLE, "%s: %s", what,
        ctx->errstr[0] != '\0' ? ctx->errstr : "protocol error");
    return NULL;
}


redisReply *
sk_cache_io_command(redisContext *ctx, const sk_cache_deadline_t *d,
    const char *what, sk_err_t *err, const char *fmt, ...)
{
    va_list  ap;
    void    *reply = NULL;
    int      rc, done = 0;

    va_start(ap, fmt);
    rc = redisvAppendCommand(ctx, fmt, ap);
    va_end(ap);
    if (rc != REDIS_OK) {
        return sk_cache_io_error(ctx, what, err);
    }
    while (!done) {
        if (sk_cache_wait(ctx->fd, POLLOUT, d, what, err) != 0) {
            return NULL;
        }
        if (redisBufferWrite(ctx, &done) != REDIS_OK) {
            return sk_cache_io_error(ctx, what, err);
        }
    }
    for (;;) {
        if (redisGetReplyFromReader(ctx, &reply) != REDIS_OK) {
            return sk_cache_io_error(ctx, what, err);
        }
        if (reply != NULL) {
            return reply;
        }
        if (sk_cache_too_big(ctx->reader, what, err) != 0
            || sk_cache_wait(ctx->fd, POLLIN, d, what, err) != 0)
        {
            return NULL;
        }
        if (redisBufferRead(ctx) != REDIS_OK) {
            return sk_cache_io_error(ctx, what, err);
        }
    }
}
