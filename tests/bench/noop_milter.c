/*
 * noop_milter.c -- the benchmark's reference: a libmilter milter that
 * negotiates every callback and accepts everything.
 */
#include <stdio.h>
#include <string.h>

#include <libmilter/mfapi.h>

static sfsistat
noop_ok(SMFICTX *ctx)
{
    (void) ctx;
    return SMFIS_CONTINUE;
}


static sfsistat
noop_connect(SMFICTX *ctx, char *host, _SOCK_ADDR *sa)
{
    (void) host;
    (void) sa;
    return noop_ok(ctx);
}


static sfsistat
noop_argv(SMFICTX *ctx, char **argv)
{
    (void) argv;
    return noop_ok(ctx);
}


static sfsistat
noop_header(SMFICTX *ctx, char *n, char *v)
{
    (void) n;
    (void) v;
    return noop_ok(ctx);
}


static sfsistat
noop_body(SMFICTX *ctx, unsigned char *b, size_t len)
{
    (void) b;
    (void) len;
    return noop_ok(ctx);
}


static sfsistat
noop_str(SMFICTX *ctx, char *s)
{
    (void) s;
    return noop_ok(ctx);
}


static sfsistat
noop_unknown(SMFICTX *ctx, const char *s)
{
    (void) s;
    return noop_ok(ctx);
}


static struct smfiDesc  noop_desc = {
    "noop", SMFI_VERSION, 0, noop_connect, noop_str, noop_argv, noop_argv,
    noop_header, noop_ok, noop_body, noop_ok, noop_ok, noop_ok,
    noop_unknown, noop_ok, NULL
};


int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: noop_milter SOCKET\n");
        return 64;
    }
    if (smfi_setconn(argv[1]) != MI_SUCCESS
        || smfi_register(noop_desc) != MI_SUCCESS
        || smfi_opensocket(1) != MI_SUCCESS)
    {
        fprintf(stderr, "noop_milter: cannot listen on %s\n", argv[1]);
        return 1;
    }
    return smfi_main() == MI_SUCCESS ? 0 : 1;
}
