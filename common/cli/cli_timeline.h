/*
 * cli_timeline.h -- what the verbs that submit entries to timelines share
 * (`sk register`, `sk revoke`, `sk rebind`, `sk services`): the -t URL,
 * --timeout and --json options, POST /append, polling /status/<token>
 * after a 202, and one outcome line (or JSON object) per timeline.
 */
#ifndef SK_CLI_TIMELINE_H
#define SK_CLI_TIMELINE_H

#include <getopt.h>

#include "cli.h"
#include "cli_entry.h"

#define CLI_TL_MAX  64          /* -t URL options */

typedef struct {
    const char     *urls[CLI_TL_MAX];
    size_t          n;
    unsigned long   timeout;    /* seconds per timeline, polling included */
    int             json;
} cli_tl_opts_t;

/* The long options every submitting verb takes, for its option table. */
#define CLI_TL_LONGOPTS                                          \
    { "timeline", required_argument, NULL, 't' },                \
    { "timeout",  required_argument, NULL, 'T' },                \
    { "json",     no_argument,       NULL, 'j' }
#define CLI_TL_SHORTOPTS  "t:"

void cli_tl_init(cli_tl_opts_t *o);
/* Take getopt's option c if it is one of ours: 1 taken, 0 not ours,
 * SK_EXIT_USAGE (after the usage message) if its value is bad. */
int cli_tl_option(cli_tl_opts_t *o, const sk_cmd_t *cmd, int c,
    const char *arg);

/* Submit e to every timeline in o, print each outcome, and return the exit
 * code: 0 only if every timeline stored it.  label names the entry in the
 * summary line ("sk: LABEL: accepted by 1 of 2 timelines"). */
int cli_tl_submit(const cli_tl_opts_t *o, const sk_entry_t *e,
    const char *label);

/* A verb that builds an entry of type from its flags and submits it:
 * `sk revoke`, `sk rebind`, `sk services`.  flags lists the entry flags
 * cmd accepts, as getopt letters ('R' --rebinder, 'K' --rebinder-key). */
int cli_tl_verb(const sk_cmd_t *cmd, sk_entry_type_t type, const char *flags,
    int argc, char **argv);

#endif
