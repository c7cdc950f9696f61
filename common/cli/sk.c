/*
 * sk.c -- the operator's command: `sk VERB ...`, `sk help [VERB]`.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const sk_cmd_t *const sk_cmds[] = {
    &sk_cmd_keygen, &sk_cmd_pubkey, &sk_cmd_carrier, &sk_cmd_chain,
    &sk_cmd_verify_chain, &sk_cmd_selfcert, &sk_cmd_onion, &sk_cmd_entry,
    &sk_cmd_publish, &sk_cmd_register,
    &sk_cmd_revoke, &sk_cmd_rebind, &sk_cmd_services,
    &sk_cmd_verify, &sk_cmd_fetch, &sk_cmd_staple, &sk_cmd_proxy,
    &sk_cmd_check, &sk_cmd_dnssec,
    NULL
};


static const sk_cmd_t *
sk_find_cmd(const char *name)
{
    size_t i;

    for (i = 0; sk_cmds[i] != NULL; i++) {
        if (strcmp(sk_cmds[i]->name, name) == 0) {
            return sk_cmds[i];
        }
    }
    return NULL;
}


static void
sk_print_synopsis(FILE *f, const sk_cmd_t *cmd)
{
    const char *p = cmd->synopsis, *nl;

    while (*p != '\0') {
        nl = strchr(p, '\n');
        if (nl == NULL) {
            nl = p + strlen(p);
        }
        fprintf(f, "  sk %s %.*s\n", cmd->name, (int) (nl - p), p);
        p = (*nl == '\n') ? nl + 1 : nl;
    }
}


static int
sk_help(FILE *f, const char *verb)
{
    const sk_cmd_t *cmd;
    size_t          i;

    if (verb != NULL) {
        cmd = sk_find_cmd(verb);
        if (cmd == NULL) {
            fprintf(stderr, "sk: unknown verb \"%s\"\n", verb);
            return SK_EXIT_USAGE;
        }
        fprintf(f, "usage:\n");
        sk_print_synopsis(f, cmd);
        fprintf(f, "\n%s", cmd->help);
        return SK_EXIT_OK;
    }

    fprintf(f, "sk %s -- sovereign keys for TLS servers\nusage:\n",
        SK_VERSION);
    for (i = 0; sk_cmds[i] != NULL; i++) {
        sk_print_synopsis(f, sk_cmds[i]);
    }
    fprintf(f, "  sk help [VERB]\n");
    return SK_EXIT_OK;
}


int
main(int argc, char **argv)
{
    const sk_cmd_t *cmd;

    if (argc < 2) {
        sk_help(stderr, NULL);
        return SK_EXIT_USAGE;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0
        || strcmp(argv[1], "-h") == 0)
    {
        return sk_help(stdout, argc > 2 ? argv[2] : NULL);
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("sk %s\n", SK_VERSION);
        return SK_EXIT_OK;
    }

    cmd = sk_find_cmd(argv[1]);
    if (cmd == NULL) {
        fprintf(stderr, "sk: unknown verb \"%s\"; try \"sk help\"\n",
            argv[1]);
        return SK_EXIT_USAGE;
    }
    return cmd->run(argc - 1, argv + 1);
}


int
cli_fail(const char *fmt, ...)
{
    va_list ap;

    fputs("sk: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return SK_EXIT_FAIL;
}


int
cli_fail_err(const sk_err_t *err)
{
    return cli_fail("%s", err->msg[0] ? err->msg : sk_err_str(err->code));
}


int
cli_usage(const sk_cmd_t *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "sk %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nusage:\n", stderr);
    sk_print_synopsis(stderr, cmd);
    return SK_EXIT_USAGE;
}


void
cli_json_str(FILE *f, const char *s)
{
    const unsigned char *p;

    fputc('"', f);
    for (p = (const unsigned char *) s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}


int
cli_parse_uint(unsigned long *out, const char *s, unsigned long max)
{
    char          *end;
    unsigned long  v;

    if (s[0] < '0' || s[0] > '9' || (s[0] == '0' && s[1] != '\0')) {
        return -1;
    }
    v = strtoul(s, &end, 10);
    if (*end != '\0' || v == 0 || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}


void
cli_date(char out[CLI_DATE_SIZE], time_t t)
{
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(out, CLI_DATE_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
