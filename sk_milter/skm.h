/*
 * skm.h -- sk-milter: what its source files share.
 *
 * skm_config.c  the configuration table, loader and checks
 * skm_trust.c   the TrustFile and KeyCache lookups of a domain's SK
 * skm_filter.c  the milter callbacks (per-message Authentication-Results)
 * skm_chain.c   the chain files Postfix serves, reload, self-probe
 * skm_main.c    options, daemon, signals, privilege drop
 */
#ifndef SKM_H
#define SKM_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include <sk/err.h>
#include <sk/services.h>

#define SKM_PROG          "sk-milter"
#define SKM_INCLUDE_MAX   5             /* nested Include depth */
#define SKM_LINE_MAX      4096
#define SKM_DOMAIN_MAX    253

typedef enum {
    SKM_MODE_VERIFY = 0,                /* add the A-R header only */
    SKM_MODE_REJECT                     /* refuse sk=fail mail */
} skm_mode_t;

typedef struct {                        /* a NULL-terminated string list */
    char   **v;
    size_t   n;
} skm_list_t;

typedef struct skm_trust_s skm_trust_t;
typedef struct sk_cache_s  sk_cache_t;

typedef struct {                        /* ChainFile SOURCE OUTPUT */
    char   *source;                     /* key and chain as issued */
    char   *output;                     /* what Postfix reads */
} skm_chain_t;

typedef struct {                        /* Probe starttls|tls HOST:PORT */
    int     starttls;
    char   *host;
    char   *port;
} skm_probe_t;

typedef struct {
    /* filled from the table (skm_confdefs) */
    char        *socket;                /* Socket */
    char        *userid;                /* UserID user[:group] */
    char        *pidfile;               /* PidFile */
    int          syslog;                /* Syslog (boolean) */
    char        *keycache;              /* KeyCache spec */
    skm_list_t   names;                 /* Name (list) */
    char        *authservid;            /* AuthservID */
    int          mode;                  /* Mode (skm_mode_t) */
    char        *trustfile;             /* TrustFile */
    skm_list_t   chainfiles;            /* ChainFile SOURCE OUTPUT (list) */
    skm_list_t   carrierfiles;          /* CarrierFile (list) */
    char        *postfixcmd;            /* PostfixCommand */
    skm_list_t   probes;                /* Probe (list) */
    long         refresh;               /* RefreshInterval, seconds */
    long         expirywarn;            /* ExpiryWarning, days */
    long         lookupms;              /* LookupTimeout, ms */
    char        *oniondir;              /* OnionDir */
    char        *onionkey;              /* OnionKey (private key) */
    skm_list_t   onionports;            /* OnionPort VIRT[:TARGET] (list) */
    char        *oniontorrc;            /* OnionTorrc */
    char        *onionuser;             /* OnionUser: owner of OnionDir */

    /* derived by the checks */
    char        *file;                  /* the top config file */
    uid_t        uid;                   /* (uid_t) -1: no UserID */
    gid_t        gid;
    uid_t        onion_uid;             /* OnionUser, else UserID */
    gid_t        onion_gid;
    skm_chain_t *chains;
    size_t       nchains;
    skm_probe_t *probev;
    size_t       nprobes;
    skm_trust_t *trust;                 /* NULL: no TrustFile */
} skm_conf_t;

/* Load and check FILE; on failure err holds "FILE: line N: ..." (or
 * "FILE: ..." when no line applies). */
int skm_conf_load(skm_conf_t **conf, const char *file, sk_err_t *err);
void skm_conf_free(skm_conf_t *conf);                 /* NULL ok */

/* The current configuration, held until skm_conf_release: SIGHUP
 * swaps in a new one while messages use the old. */
skm_conf_t *skm_conf_acquire(void);
void skm_conf_release(skm_conf_t *conf);
void skm_conf_install(skm_conf_t *conf);              /* takes it */

/* Logging: syslog when Syslog is on, stderr in the foreground. */
void skm_log_init(int use_syslog, int use_stderr);
void skm_log(int prio, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* TrustFile: "DOMAIN SERVICES [sha256:FPR]" per line. */
int skm_trust_load(skm_trust_t **t, const char *path, sk_err_t *err);
void skm_trust_free(skm_trust_t *t);                  /* NULL ok */

typedef enum {
    SKM_SK_NONE = 0,                    /* no SK known for the domain */
    SKM_SK_FOUND                        /* an SK; services filled */
} skm_sk_state_t;

typedef struct {
    skm_sk_state_t  state;
    sk_services_t   services;
    char            source[16];         /* "trustfile", "keycache" */
} skm_sk_t;

/* The SK of domain, from the TrustFile, then the KeyCache (cache may be
 * NULL).  -1 only on a lookup failure (backend down, bad record). */
int skm_sk_lookup(skm_sk_t *sk, const skm_conf_t *conf, sk_cache_t *cache,
    const char *domain, sk_err_t *err);
void skm_sk_free(skm_sk_t *sk);
/* This thread's KeyCache handle (NULL without KeyCache); -1 if the spec
 * cannot be opened at all. */
int skm_cache_get(sk_cache_t **cache, const skm_conf_t *conf, sk_err_t *err);

/* The filter's smfiDesc, for main. */
struct smfiDesc;
extern struct smfiDesc skm_filter;
int skm_filter_busy(void);              /* messages in progress */

/* Chain files: build every output; 1 if one changed, 0 if none, -1 if
 * one failed (logged; the last good file stays). */
int skm_chain_refresh(const skm_conf_t *conf, time_t now);
/* Run PostfixCommand; then probe every Probe. */
int skm_chain_reload_postfix(const skm_conf_t *conf);
int skm_probe_all(const skm_conf_t *conf);

/* Onion: the HiddenServiceDir and torrc, if OnionDir is set. */
int skm_onion_setup(const skm_conf_t *conf);

#endif
