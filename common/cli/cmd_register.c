/*
 * cmd_register.c -- `sk register`: submit an entry (from `sk entry ... -o
 * FILE`) to one or more timelines, POST /append with form field e=, and
 * report each timeline's answer: 201 and the SN it gave, or the status and
 * the rule it names (after a 202, the outcome /status/<token> gives).
 * Exit 0 only if every timeline stored the entry.
 */
#include <stdlib.h>

#include "cli_timeline.h"


static int
sk_register_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "in",       required_argument, NULL, 'i' },
        CLI_TL_LONGOPTS,
        { NULL, 0, NULL, 0 }
    };
    cli_tl_opts_t   o;
    const char     *in = NULL;
    sk_entry_t     *e;
    sk_err_t        err;
    size_t          len;
    char           *text;
    int             c, rc;

    cli_tl_init(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "i:" CLI_TL_SHORTOPTS, opts, NULL))
           != -1)
    {
        if (c == 'i') {
            in = optarg;
        } else if ((rc = cli_tl_option(&o, &sk_cmd_register, c, optarg))
                   != 1)
        {
            return rc != 0 ? rc : cli_usage(&sk_cmd_register,
                "unknown option");
        }
    }
    if (in == NULL || o.n == 0 || optind != argc) {
        return cli_usage(&sk_cmd_register,
            "need -i FILE and at least one -t URL");
    }
    if (sk_file_read(&text, &len, in, SK_ENTRY_MAX, &err) != 0) {
        return cli_fail_err(&err);
    }
    /* Check it locally first: a typo should not cost a round trip. */
    rc = sk_entry_parse(&e, text, len, &err);
    free(text);
    if (rc != 0) {
        return cli_fail("%s: %s", in, err.msg);
    }
    rc = cli_tl_submit(&o, e, in);
    sk_entry_free(e);
    return rc;
}


const sk_cmd_t sk_cmd_register = {
    "register", sk_register_main,
    "-i FILE -t URL [-t URL ...] [--timeout SECONDS] [--json]",
    "Submit the entry in FILE (made by `sk entry bind|unbind|rebind|\n"
    "change-services -o FILE`) to each timeline URL: POST URL/append with\n"
    "form field e=.  FILE is parsed first, and nothing is sent if it is\n"
    "malformed.  For each timeline one line: \"201 accepted, SN n\", or the\n"
    "status and the timeline's reason (a 403 names the rule it broke, e.g.\n"
    "\"bind: ocsp: ... revoked\"; 408 and 503 are worth retrying), or\n"
    "\"unreachable\".  A timeline that answers 202 (queued) is polled at\n"
    "URL/status/<token> until the outcome is known.  --timeout bounds each\n"
    "timeline's exchanges, polling included (default 30 s).  Exit 0 only if\n"
    "every timeline stored the entry.\n"
};
