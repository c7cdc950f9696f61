/*
 * cmd_onion.c -- `sk onion`: a Tor v3 HiddenServiceDir and torrc snippet.
 *
 * Two modes.  --new makes a separate onion key, so the SK can stay offline;
 * its address then belongs in the SK's Services field as an alternate
 * route.  -k uses the SK itself as the onion key (the article's mode): the
 * address follows from the SK alone, but the SK must live on the Tor host.
 */
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define SK_ONION_MAX_PORTS 64

/* Well-known ports whose Services name a client would look up (TLS or
 * STARTTLS services only: an SK never covers plain http). */
static const struct {
    unsigned    port;
    const char *service;
} sk_onion_services[] = {
    { 443, "https" }, { 465, "smtps" }, { 993, "imaps" }, { 995, "pop3s" },
    { 25, "smtp" }, { 587, "submission" }, { 143, "imap" }
};


/* "PORT" or "PORT:TARGET"; the target is what Tor takes verbatim. */
static int
sk_onion_parse_port(sk_onion_port_t *port, char *arg)
{
    unsigned long  v;
    char          *colon = strchr(arg, ':');

    if (colon != NULL) {
        *colon = '\0';
    }
    if (cli_parse_uint(&v, arg, 65535) != 0) {
        return -1;
    }
    port->virtport = (unsigned) v;
    port->target = colon != NULL ? colon + 1 : NULL;
    return 0;
}


/* HSDIR as an absolute path without trailing slashes: tor reads the
 * snippet from its own working directory. */
static char *
sk_onion_abs_dir(const char *dir)
{
    char    cwd[PATH_MAX], *out;
    size_t  len = strlen(dir);

    while (len > 1 && dir[len - 1] == '/') {
        len--;
    }
    if (dir[0] == '/') {
        cwd[0] = '\0';
    } else if (getcwd(cwd, sizeof(cwd)) == NULL) {
        return NULL;
    }
    out = malloc(strlen(cwd) + len + 2);
    if (out != NULL) {
        sprintf(out, "%s%s%.*s", cwd, cwd[0] ? "/" : "", (int) len, dir);
    }
    return out;
}


/* The Services value to register for a separate onion key, e.g.
 * "https;x.onion,smtps;x.onion", from the well-known ports; NULL if none
 * is well known (the operator then names the service). */
static char *
sk_onion_services_hint(const sk_onion_port_t *ports, size_t nports,
    const char *addr)
{
    char   *out;
    size_t  i, j, n = 0, size = nports * (SK_ONION_ADDR_LEN + 16) + 1;

    out = malloc(size);
    if (out == NULL) {
        return NULL;
    }
    out[0] = '\0';
    for (i = 0; i < nports; i++) {
        for (j = 0; j < sizeof(sk_onion_services) / sizeof(sk_onion_services[0]);
             j++)
        {
            if (sk_onion_services[j].port == ports[i].virtport) {
                n += (size_t) snprintf(out + n, size - n, "%s%s;%s",
                    n ? "," : "", sk_onion_services[j].service, addr);
            }
        }
    }
    if (n == 0) {
        free(out);
        return NULL;
    }
    return out;
}


static void
sk_onion_print(const char *addr, const char *dir, const char *torrc,
    const char *keyfile, const char *services, int separate, int json)
{
    if (!json) {
        printf("%s\n", addr);
        if (separate) {
            fprintf(stderr, "sk: separate onion key: list %s as an alternate "
                "route in the SK's Services field, e.g. \"%s\"\n", addr,
                services != NULL ? services : "https;<address>");
        }
        return;
    }
    printf("{\"address\":\"%s\",\"dir\":", addr);
    cli_json_str(stdout, dir);
    printf(",\"torrc\":");
    cli_json_str(stdout, torrc);
    printf(",\"mode\":\"%s\"", separate ? "separate" : "sk");
    if (keyfile != NULL) {
        printf(",\"key\":");
        cli_json_str(stdout, keyfile);
    }
    if (services != NULL) {
        printf(",\"services\":");
        cli_json_str(stdout, services);
    }
    printf("}\n");
}


static int
sk_onion(int argc, char **argv)
{
    static const struct option opts[] = {
        { "key",       required_argument, NULL, 'k' },
        { "new",       no_argument,       NULL, 'N' },
        { "onion-key", required_argument, NULL, 'K' },
        { "port",      required_argument, NULL, 'P' },
        { "out",       required_argument, NULL, 'o' },
        { "torrc",     required_argument, NULL, 'T' },
        { "user",      required_argument, NULL, 'u' },
        { "json",      no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    sk_onion_port_t  ports[SK_ONION_MAX_PORTS];
    const char      *keyfile = NULL, *okeyfile = NULL, *out = NULL;
    const char      *torrc = NULL, *user = NULL;
    char             addr[SK_ONION_ADDR_LEN + 1];
    char            *dir = NULL, *deftorrc = NULL, *services = NULL;
    struct passwd   *pw;
    size_t           nports = 0;
    uid_t            uid = (uid_t) -1;
    gid_t            gid = (gid_t) -1;
    sk_key_t        *key = NULL;
    sk_err_t         err;
    int              c, fresh = 0, json = 0, saved = 0, rc = SK_EXIT_FAIL;

    optind = 1;
    while ((c = getopt_long(argc, argv, "k:K:P:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'k': keyfile = optarg; break;
        case 'N': fresh = 1; break;
        case 'K': okeyfile = optarg; break;
        case 'P':
            if (nports == SK_ONION_MAX_PORTS) {
                return cli_usage(&sk_cmd_onion, "at most %d -P ports",
                    SK_ONION_MAX_PORTS);
            }
            if (sk_onion_parse_port(&ports[nports], optarg) != 0) {
                return cli_usage(&sk_cmd_onion,
                    "-P %s: want PORT or PORT:TARGET, PORT 1-65535", optarg);
            }
            if (sk_onion_port_check(&ports[nports], &err) != 0) {
                return cli_usage(&sk_cmd_onion, "-P: %s", err.msg);
            }
            nports++;
            break;
        case 'o': out = optarg; break;
        case 'T': torrc = optarg; break;
        case 'u': user = optarg; break;
        case 'j': json = 1; break;
        default: return cli_usage(&sk_cmd_onion, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(&sk_cmd_onion, "unexpected argument \"%s\"",
            argv[optind]);
    }
    if ((keyfile != NULL) == fresh) {
        return cli_usage(&sk_cmd_onion, "need exactly one of -k KEY or --new");
    }
    if (okeyfile != NULL && !fresh) {
        return cli_usage(&sk_cmd_onion, "-K goes with --new");
    }
    if (nports == 0 || out == NULL) {
        return cli_usage(&sk_cmd_onion, "missing %s",
            nports == 0 ? "-P PORT" : "-o HSDIR");
    }
    if (user != NULL) {
        pw = getpwnam(user);
        if (pw == NULL) {
            return cli_fail("--user %s: no such user", user);
        }
        uid = pw->pw_uid;
        gid = pw->pw_gid;
    }

    dir = sk_onion_abs_dir(out);
    if (dir == NULL) {
        return cli_fail("%s: cannot make an absolute path", out);
    }
    if (torrc == NULL) {
        deftorrc = malloc(strlen(dir) + sizeof(".torrc"));
        if (deftorrc == NULL) {
            rc = cli_fail("out of memory");
            goto done;
        }
        sprintf(deftorrc, "%s.torrc", dir);
        torrc = deftorrc;
    }

    if (fresh) {
        if (sk_key_generate(&key, SK_KEY_ED25519, 0, &err) != 0
            || (okeyfile != NULL
                && sk_key_save_private(key, okeyfile, &err) != 0))
        {
            rc = cli_fail_err(&err);
            goto done;
        }
        saved = okeyfile != NULL;
    } else {
        if (sk_key_load_private(&key, keyfile, &err) != 0) {
            rc = cli_fail_err(&err);
            goto done;
        }
        if (sk_key_alg(key) != SK_KEY_ED25519) {
            rc = cli_fail("%s: the SK is %s; only an Ed25519 SK can be the "
                "onion key (use --new for a separate onion key)", keyfile,
                sk_key_alg_name(sk_key_alg(key)));
            goto done;
        }
    }

    if (sk_onion_address_from_key(addr, key, &err) != 0
        || sk_onion_write_dir(dir, key, uid, gid, &err) != 0)
    {
        rc = cli_fail_err(&err);
        goto done;
    }
    saved = 0;          /* the dir holds the key now: keep its backup */
    if (sk_onion_write_torrc(torrc, dir, ports, nports, &err) != 0) {
        rc = cli_fail_err(&err);
        goto done;
    }
    if (fresh) {
        services = sk_onion_services_hint(ports, nports, addr);
    }
    sk_onion_print(addr, dir, torrc, okeyfile, services, fresh, json);
    rc = SK_EXIT_OK;

done:
    if (saved) {
        /* No HiddenServiceDir was made: a backup of nothing is clutter. */
        unlink(okeyfile);
    }
    sk_key_free(key);
    free(services);
    free(deftorrc);
    free(dir);
    return rc;
}


const sk_cmd_t sk_cmd_onion = {
    "onion", sk_onion,
    "(-k KEY | --new [-K ONIONKEY]) -P PORT[:TARGET]... -o HSDIR"
    " [--torrc FILE] [--user USER] [--json]",
    "Write a Tor v3 onion service: the HiddenServiceDir HSDIR (made 0700,\n"
    "with hs_ed25519_secret_key, hs_ed25519_public_key and hostname, mode\n"
    "0600, in Tor's own formats; existing key files are never overwritten)\n"
    "and a torrc snippet (HiddenServiceDir, one HiddenServicePort per -P),\n"
    "by default HSDIR.torrc, for tor's %include.  Prints the address.\n"
    "\n"
    "--new makes a separate onion key, so the SK can stay offline; -K saves\n"
    "it also as a PKCS#8 file to back up.  List the address as an\n"
    "alternate route in the SK's Services field (e.g. \"https;ADDR\"): the\n"
    "suggestion goes to stderr, or to \"services\" with --json.\n"
    "-k uses the SK itself, which must be Ed25519: the address derives from\n"
    "the SK alone, but the SK must then live on the Tor host.\n"
    "\n"
    "-P PORT serves the onion's PORT from 127.0.0.1:PORT; PORT:TARGET from\n"
    "TARGET (\"8443\", \"127.0.0.1:8443\", \"unix:/run/x.sock\").  --user\n"
    "gives HSDIR and its files to USER (e.g. debian-tor), as tor requires\n"
    "of the user it runs as.  --json prints {\"address\", \"dir\", \"torrc\",\n"
    "\"mode\": \"separate\"|\"sk\", \"key\", \"services\"}.\n"
};
