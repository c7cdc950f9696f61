/*
 * cmd_services.c -- `sk services`: build a Change-Services for NAME, sign
 * it with the SK in force, and submit it to the timelines.
 */
#include "cli_timeline.h"


static int
sk_services_main(int argc, char **argv)
{
    return cli_tl_verb(&sk_cmd_services, SK_ENTRY_CHANGE_SERVICES, "kns",
        argc, argv);
}


const sk_cmd_t sk_cmd_services = {
    "services", sk_services_main,
    "-k KEY -n NAME -s SERVICES -t URL [-t URL ...] [--timeout SECONDS]"
    " [--json]",
    "Replace the services NAME's sovereign key covers: build a\n"
    "Change-Services entry with SERVICES (e.g. \"https,smtps\", or\n"
    "\"https:8443;203.0.113.7:8443;x.onion\" with alternate routes), sign it\n"
    "with KEY (the SK in force) and submit it to each timeline URL, as\n"
    "`sk register` does.  Timelines allow few Unbind and Change-Services\n"
    "entries per SK (503 when spent).  Exit 0 only if every timeline stored\n"
    "it.\n"
};
