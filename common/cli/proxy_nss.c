/*
 * proxy_nss.c -- `sk proxy --install-ca` and `--remove-ca` (proxy.h):
 * the local CA into, or out of, the NSS certificate databases the user's
 * browsers read, with NSS's own certutil (Debian's libnss3-tools):
 *
 *   Chromium, Chrome   ~/.pki/nssdb (made if missing), and snap's
 *   Firefox            each profile of ~/.mozilla/firefox (and snap's,
 *                      flatpak's) that holds cert9.db or prefs.js
 *
 * The CA goes in as a trust anchor for web sites only ("C,,"), under its
 * certificate's common name, which holds the key's fingerprint: removing
 * it removes this CA and no other.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/x509.h>

#include "proxy.h"

#define CLI_NSS_PATH  4096

extern char **environ;


/* certutil ARGS..., its output to /dev/null unless loud: its exit status,
 * or -1 if it could not run. */
static int
cli_nss_run(char *const argv[], int loud)
{
    posix_spawn_file_actions_t  fa;
    pid_t                       pid;
    int                         st, rc;

    posix_spawn_file_actions_init(&fa);
    if (!loud) {
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    }
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}


/* One database: "sql:DIR". */
static int
cli_nss_one(const char *dir, const char *nick, const char *ca, int install,
    int create)
{
    char   db[CLI_NSS_PATH + 8];
    char  *add[] = { "certutil", "-d", db, "-A", "-t", "C,,", "-n",
                     (char *) nick, "-i", (char *) ca, NULL };
    char  *del[] = { "certutil", "-d", db, "-D", "-n", (char *) nick, NULL };
    char  *make[] = { "certutil", "-d", db, "-N", "--empty-password",
                      NULL };
    int    removed = 0;

    snprintf(db, sizeof(db), "sql:%s", dir);
    /* Every copy goes (an older one, too, before the new one goes in). */
    while (removed < 16 && cli_nss_run(del, 0) == 0) {
        removed++;
    }
    if (!install) {
        return removed > 0 ? 1 : 0;
    }
    if (create && cli_nss_run(make, 0) != 0) {
        cli_fail("%s: certutil cannot make the database", dir);
        return -1;
    }
    if (cli_nss_run(add, 1) != 0) {
        cli_fail("%s: certutil cannot add the CA", dir);
        return -1;
    }
    return 1;
}


static int
cli_nss_is(const char *dir, const char *file)
{
    char         path[CLI_NSS_PATH + 16];
    struct stat  st;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    return stat(path, &st) == 0;
}


/* Firefox's profiles under base (…/.mozilla/firefox). */
static void
cli_nss_firefox(const char *base, const char *nick, const char *ca,
    int install, int *n, int *bad)
{
    char            dir[CLI_NSS_PATH];
    struct dirent  *e;
    DIR            *d = opendir(base);
    int             rc;

    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(dir, sizeof(dir), "%s/%s", base, e->d_name);
        if (!cli_nss_is(dir, "cert9.db") && !cli_nss_is(dir, "prefs.js")) {
            continue;
        }
        if (!install && !cli_nss_is(dir, "cert9.db")) {
            continue;
        }
        rc = cli_nss_one(dir, nick, ca, install, !cli_nss_is(dir,
            "cert9.db"));
        if (rc > 0) {
            printf("%s %s (Firefox)\n", install ? "added to" : "removed "
                "from", dir);
            (*n)++;
        }
        *bad |= rc < 0;
    }
    closedir(d);
}


/* Chromium's database under dir (made if missing when installing and
 * made is set). */
static void
cli_nss_chromium(const char *dir, const char *nick, const char *ca,
    int install, int make, int *n, int *bad)
{
    char  parent[CLI_NSS_PATH];
    int   have = cli_nss_is(dir, "cert9.db"), rc;

    if (!have && (!install || !make)) {
        return;
    }
    if (!have) {
        snprintf(parent, sizeof(parent), "%s", dir);
        *strrchr(parent, '/') = '\0';
        if ((mkdir(parent, 0700) != 0 && errno != EEXIST)
            || (mkdir(dir, 0700) != 0 && errno != EEXIST))
        {
            cli_fail("%s: cannot create: %s", dir, strerror(errno));
            *bad = 1;
            return;
        }
    }
    rc = cli_nss_one(dir, nick, ca, install, !have);
    if (rc > 0) {
        printf("%s %s (Chromium)\n", install ? "added to" : "removed from",
            dir);
        (*n)++;
    }
    *bad |= rc < 0;
}


int
cli_proxy_nss(cli_proxy_t *px, int install)
{
    const char  *home = getenv("HOME");
    char         nick[128], dir[CLI_NSS_PATH];
    char        *version[] = { "certutil", "-H", NULL };
    int          n = 0, bad = 0;

    if (home == NULL || home[0] != '/') {
        return cli_fail("HOME is not set: cannot find the browsers' "
            "profiles");
    }
    if (cli_nss_run(version, 0) < 0) {
        return cli_fail("certutil: cannot run it (%s): install libnss3-tools",
            strerror(errno));
    }
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(sk_mint_get0_ca(
            px->mint)), NID_commonName, nick, sizeof(nick)) <= 0)
    {
        return cli_fail("%s: the CA has no common name",
            sk_mint_ca_file(px->mint));
    }
    snprintf(dir, sizeof(dir), "%s/.pki/nssdb", home);
    cli_nss_chromium(dir, nick, sk_mint_ca_file(px->mint), install, 1, &n,
        &bad);
    snprintf(dir, sizeof(dir), "%s/snap/chromium/current/.pki/nssdb", home);
    cli_nss_chromium(dir, nick, sk_mint_ca_file(px->mint), install, 0, &n,
        &bad);
    snprintf(dir, sizeof(dir), "%s/.mozilla/firefox", home);
    cli_nss_firefox(dir, nick, sk_mint_ca_file(px->mint), install, &n, &bad);
    snprintf(dir, sizeof(dir), "%s/snap/firefox/common/.mozilla/firefox",
        home);
    cli_nss_firefox(dir, nick, sk_mint_ca_file(px->mint), install, &n, &bad);
    snprintf(dir, sizeof(dir), "%s/.var/app/org.mozilla.firefox/.mozilla/"
        "firefox", home);
    cli_nss_firefox(dir, nick, sk_mint_ca_file(px->mint), install, &n, &bad);
    if (bad) {
        return SK_EXIT_FAIL;
    }
    if (install) {
        printf("the local CA \"%s\" (%s) is trusted by %d profile%s; "
            "restart the browsers\n", nick, sk_mint_ca_file(px->mint), n,
            n == 1 ? "" : "s");
        return SK_EXIT_OK;
    }
    printf("the local CA \"%s\" was in %d profile%s\n", nick, n, n == 1
        ? "" : "s");
    return SK_EXIT_OK;
}
