/*
 * cmd_revoke.c -- `sk revoke`: build an Unbind for NAME, sign it with the
 * SK in force, and submit it to the timelines (cli_timeline.c).
 */
#include "cli_timeline.h"


static int
sk_revoke_main(int argc, char **argv)
{
    return cli_tl_verb(&sk_cmd_revoke, SK_ENTRY_UNBIND, "knl", argc, argv);
}


const sk_cmd_t sk_cmd_revoke = {
    "revoke", sk_revoke_main,
    "-k KEY -n NAME [-l LAST-SECURE-TIME] -t URL [-t URL ...]"
    " [--timeout SECONDS] [--json]",
    "Revoke the sovereign key KEY for NAME: build an Unbind entry, sign its\n"
    "SK-Signature with KEY (the SK in force for NAME) and submit it to each\n"
    "timeline URL, as `sk register` does (one outcome line per timeline, a\n"
    "202 polled at URL/status/<token>).  -l is the last time (POSIX seconds,\n"
    "default now) the SK is vouched for.  After an Unbind only a Rebind by\n"
    "one of the record's rebinders (`sk rebind`) can claim NAME again on\n"
    "that timeline.  Timelines allow few Unbind and Change-Services entries\n"
    "per SK (503 when spent).  Exit 0 only if every timeline stored it.\n"
};
