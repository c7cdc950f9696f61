/*
 * cli.h -- what the `sk` verbs share: the verb table entry, error and
 * usage reporting, JSON output.  Each verb lives in its own cmd_*.c.
 *
 * Exit codes: 0 success, 1 a check or operation failed, 2 usage error.
 * Errors go to stderr as one line, "sk: <reason>"; success prints one line
 * (or JSON with --json) on stdout.
 */
#ifndef SK_CLI_H
#define SK_CLI_H

#include <stdio.h>
#include <time.h>
#include <sk/sk.h>

#define SK_EXIT_OK    0
#define SK_EXIT_FAIL  1
#define SK_EXIT_USAGE 2

typedef struct {
    const char *name;                      /* "keygen" */
    int       (*run)(int argc, char **argv);  /* argv[0] is the verb */
    const char *synopsis;                  /* one line per form, '\n'-separated */
    const char *help;                      /* paragraphs for `sk help VERB` */
} sk_cmd_t;

extern const sk_cmd_t sk_cmd_keygen, sk_cmd_pubkey, sk_cmd_carrier,
    sk_cmd_chain, sk_cmd_verify_chain, sk_cmd_selfcert, sk_cmd_onion,
    sk_cmd_entry;
extern const sk_cmd_t sk_cmd_publish;
extern const sk_cmd_t sk_cmd_register;
extern const sk_cmd_t sk_cmd_revoke, sk_cmd_rebind, sk_cmd_services;
extern const sk_cmd_t sk_cmd_verify, sk_cmd_fetch, sk_cmd_staple;
extern const sk_cmd_t sk_cmd_proxy;
extern const sk_cmd_t sk_cmd_check;
extern const sk_cmd_t sk_cmd_dnssec;

/* "sk: <fmt>" on stderr; returns SK_EXIT_FAIL. */
int cli_fail(const char *fmt, ...) SK_PRINTF(1, 2);
/* "sk: <err->msg>" on stderr; returns SK_EXIT_FAIL. */
int cli_fail_err(const sk_err_t *err);
/* "sk VERB: <msg>" and the verb's synopsis on stderr; SK_EXIT_USAGE. */
int cli_usage(const sk_cmd_t *cmd, const char *fmt, ...) SK_PRINTF(2, 3);

/* Write s as a JSON string literal (quotes included) to f. */
void cli_json_str(FILE *f, const char *s);

/* t as ISO 8601 UTC, "2027-03-03T12:30:52Z". */
#define CLI_DATE_SIZE 32
void cli_date(char out[CLI_DATE_SIZE], time_t t);

/* Parse a positive decimal integer option value (e.g. days, ports). */
int cli_parse_uint(unsigned long *out, const char *s, unsigned long max);

#endif
