/*
 * cli_entry.h -- building and signing an entry from the verbs' flags, for
 * `sk entry` (which prints it) and the verbs that submit it to timelines.
 */
#ifndef SK_CLI_ENTRY_H
#define SK_CLI_ENTRY_H

#include <getopt.h>

#include "cli.h"

/* The fields a registrant's entry takes, as the verbs' flags give them. */
typedef struct {
    const char  *key;           /* -k: the SK, signs SK-Signature */
    const char  *name;          /* -n */
    const char  *services;      /* -s */
    const char  *chain;         /* -c: PEM chain file, leaf first */
    const char  *dnssec;        /* --dnssec-chain: RFC 9102 chain file */
    const char  *rebinders;     /* -r: Rebinder-Names (default none) */
    const char  *rebinder;      /* --rebinder: Rebinder-Name */
    const char  *rebinder_key;  /* --rebinder-key: signs Rebinder-Signature */
    const char  *last_secure;   /* -l: Last-Secure-Timestamp (default now) */
    const char  *ca;            /* -c for root-CA entries: the CA certificate */
    const char  *serial;        /* --serial: CA-Serial of root-CA entries */
    int          subdomains;    /* -w: Includes-Subdomains */
} cli_entry_opts_t;

/* --dnssec-chain has no short form. */
#define CLI_ENTRY_OPT_DNSSEC  0x100

/* The long options of those flags, for a verb's option table. */
#define CLI_ENTRY_LONGOPTS                                           \
    { "key",          required_argument, NULL, 'k' },                \
    { "name",         required_argument, NULL, 'n' },                \
    { "services",     required_argument, NULL, 's' },                \
    { "chain",        required_argument, NULL, 'c' },                \
    { "dnssec-chain", required_argument, NULL, CLI_ENTRY_OPT_DNSSEC }, \
    { "subdomains",   no_argument,       NULL, 'w' },                \
    { "rebinders",    required_argument, NULL, 'r' },                \
    { "rebinder",     required_argument, NULL, 'R' },                \
    { "rebinder-key", required_argument, NULL, 'K' },                \
    { "last-secure",  required_argument, NULL, 'l' }

/* Take option c with its argument into o: 1 if c is one of
 * CLI_ENTRY_LONGOPTS, else 0. */
int cli_entry_option(cli_entry_opts_t *o, int c, const char *arg);

/* Build an entry of type from o and sign it: a registrant's (Bind, Unbind,
 * Rebind, Change-Services) with the SK -k, a root-CA entry with the
 * operator key -k.  SK_ERR_USAGE names the flag that is missing. */
int cli_entry_build(sk_entry_t **e, sk_entry_type_t type,
    const cli_entry_opts_t *o, sk_err_t *err) SK_WUR;

#endif
