/*
 * skm.h -- sk-milter: what its source files share.
 *
 * skm_config.c  the configuration table, loader and checks
 * skm_trust.c   the TrustFile and KeyCache lookups of a domain's SK
 * skm_milter.c  an MTA's milter connection: packets in, replies out
 * skm_session.c the milter protocol's conversation, no I/O (fuzzed)
 * skm_mproto.c  the milter protocol's wire format, no I/O (fuzzed)
 * skm_filter.c  per message: Authentication-Results, the verdict
 * skm_server.c  the listening sockets, a thread per connection
 * skm_chain.c   the chain files Postfix serves, reload, self-probe
 * skm_staple.c  StapleProof: the stapled proof in the chain files
 * skm_policy.c  the smtp_tls_policy_maps socketmap server (outbound)
 * skm_policy_lookup.c  one outbound lookup: a next hop's answer
 * skm_bound.c   a deadline on a whole lookup, and its client's hang-up
 * skm_netstring.c  the socketmap wire format, no I/O (fuzzed)
 * skm_ar.c      Authentication-Results values, no I/O (fuzzed)
 * skm_ccert.c   inbound client certificates (policy delegation notes)
 * skm_log.c     logging to syslog and stderr
 * skm_metrics.c /metrics on MetricsListen
 * skm_main.c    options, daemon, signals, privilege drop
 */
#ifndef SKM_H
#define SKM_H

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>
#include <sk/client.h>
#include <sk/err.h>
#include <sk/services.h>

#define SKM_PROG          "sk-milter"
#define SKM_INCLUDE_MAX   5             /* nested Include depth */
#define SKM_LINE_MAX      4096
#define SKM_DOMAIN_MAX    253
#define SKM_SOCKMAP_MAX   1024          /* longest request we accept */

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
typedef struct sk_key_s    sk_key_t;

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
    long         socketmode;            /* SocketMode (local: sockets) */
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
    char        *policysocket;          /* PolicySocket inet:PORT@HOST|local: */
    char        *policyname;            /* PolicyMapName (socketmap NAME) */
    long         policyttl;             /* PolicyTTL, seconds */
    long         policyconns;           /* PolicyMaxConnections */
    long         policytimeout;         /* PolicyTimeout, seconds */
    char        *policycache;           /* PolicyCache: the client cache */
    char        *policyundecidedstr;    /* PolicyUndecided */
    int          policyundecided;       /* 1: "notfound", 0: "defer" */
    long         maxconns;              /* MaxConnections (milter Socket) */
    long         packettimeout;         /* PacketTimeout, seconds */
    char        *ccertsocket;           /* ClientPolicySocket */
    int          stapleproof;           /* StapleProof (boolean) */
    char        *stapletrustfile;       /* StapleTrust */
    char        *metricslisten;         /* MetricsListen HOST:PORT */

    /* derived by the checks */
    char        *file;                  /* the top config file */
    unsigned long gen;                  /* set by skm_conf_install: 1, 2... */
    uid_t        uid;                   /* (uid_t) -1: no UserID */
    gid_t        gid;
    uid_t        onion_uid;             /* OnionUser, else UserID */
    gid_t        onion_gid;
    skm_chain_t *chains;
    size_t       nchains;
    skm_probe_t *probev;
    size_t       nprobes;
    skm_trust_t *trust;                 /* NULL: no TrustFile */
    sk_client_trust_t *stapletrust;     /* StapleTrust, loaded; or NULL */
    skm_list_t   warnings;              /* "FILE: line N: warning: ..." */
} skm_conf_t;

/* Load and check FILE; on failure err holds "FILE: line N: ..." (or
 * "FILE: ..." when no line applies). */
int skm_conf_load(skm_conf_t **conf, const char *file, sk_err_t *err);
/* The next line of f into *buf (getline's buffer, *cap), without its
 * '\n', NUL-terminated: 1; 0 at the end; -1 with err naming path and
 * line for a NUL byte in it (the string functions would stop there and
 * drop the rest unseen), a line over SKM_LINE_MAX bytes, or a read
 * error. */
int skm_conf_getline(FILE *f, char **buf, size_t *cap, const char *path,
    unsigned line, sk_err_t *err);
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

/* A kind of line a peer can cause at will, logged at most SKM_LOG_LINES
 * a minute (skm_log_limited); the rest are counted, and the count is
 * logged as "WHAT: N more such lines in the last minute not shown". */
#define SKM_LOG_LINES  20

typedef struct {
    pthread_mutex_t  lock;
    const char      *what;              /* prefix of the count's line */
    long             minute;            /* CLOCK_MONOTONIC minute counted */
    unsigned         lines;             /* logged in it */
    unsigned long    hidden;            /* held back in it */
} skm_loglimit_t;

#define SKM_LOGLIMIT_INIT(what)  { PTHREAD_MUTEX_INITIALIZER, (what), -1, 0, 0 }

void skm_log_limited(skm_loglimit_t *l, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* TrustFile: "DOMAIN SERVICES [sha256:FPR | /PATH/SK.pub]" per line. */
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
    sk_key_t       *key;                /* the SK from the KeyCache record;
                                           owned, NULL if not known */
    const sk_key_t *trustkey;           /* the TrustFile's, borrowed from
                                           the configuration */
    const char     *trustfpr;           /* "sha256:..." or NULL, borrowed */
} skm_sk_t;

/* The SK of domain, from the TrustFile, then the KeyCache (cache may be
 * NULL).  -1 only on a lookup failure (backend down, bad record). */
int skm_sk_lookup(skm_sk_t *sk, const skm_conf_t *conf, sk_cache_t *cache,
    const char *domain, sk_err_t *err);
void skm_sk_free(skm_sk_t *sk);
/* Only the KeyCache record (sk zeroed first): for the SK's key when the
 * TrustFile does not give it. */
int skm_sk_from_cache(skm_sk_t *sk, sk_cache_t *cache, const char *domain,
    sk_err_t *err);
/* sk_cache_get_carrier, its failures (not a missing one) counted in
 * the metrics. */
struct sk_carrier_s;
int skm_cache_carrier(struct sk_carrier_s **car, sk_cache_t *cache,
    const unsigned char *sha256, sk_err_t *err);
/* This thread's KeyCache handle (NULL without KeyCache); -1 if the spec
 * cannot be opened at all. */
int skm_cache_get(sk_cache_t **cache, const skm_conf_t *conf, sk_err_t *err);

/* Chain files: build every output; 1 if one changed, 0 if none, -1 if
 * one failed (logged; the last good file stays). */
int skm_chain_refresh(const skm_conf_t *conf, time_t now);
/* StapleProof (skm_staple.c; the refresher thread only): the staple
 * for name as a PEM certificate (malloc()ed) and its age, refreshed when
 * due: 1, 0 if there is none to serve (logged), -1 on a failure. */
int skm_staple_pem(char **pem, size_t *len, long *age, const skm_conf_t *conf,
    const char *name, time_t now);
/* When a staple is next due for a refresh (0: none kept). */
time_t skm_staple_next(void);
/* Run PostfixCommand; then probe every Probe. */
int skm_chain_reload_postfix(const skm_conf_t *conf);
int skm_probe_all(const skm_conf_t *conf);

/* The bound on one whole lookup (skm_bound.c): a deadline, and the
 * client whose hang-up ends the lookup (-1: none). */
typedef enum {
    SKM_BOUND_OK = 0,
    SKM_BOUND_TIMEOUT,                  /* the deadline passed */
    SKM_BOUND_GONE                      /* the client hung up */
} skm_bound_state_t;

typedef struct {
    struct timespec    deadline;        /* CLOCK_MONOTONIC */
    long               secs;            /* for messages */
    int                client;          /* fd, or -1 */
    skm_bound_state_t  over;
} skm_bound_t;

void skm_bound_init(skm_bound_t *b, long secs, int client);
/* 1 once the deadline passed or the client hung up (b->over says which). */
int skm_bound_over(skm_bound_t *b);
/* Wait until fd has one of events (poll(2)): 0, or -1 if the bound is
 * over first (or poll fails). */
int skm_bound_wait(skm_bound_t *b, int fd, short events);
/* Cut this thread's resolver timeouts to the time left. */
void skm_bound_resolver(skm_bound_t *b);
/* Why the bound is over, in buf. */
const char *skm_bound_why(const skm_bound_t *b, char *buf, size_t len);

/* A TLS connection to host:port (SMTP STARTTLS first if starttls),
 * offering only sigalgs (OpenSSL list syntax) unless NULL; its peer
 * chain up-referenced in *chain; with staple not NULL, asking for the
 * stapled proof (extension 0xFF53), whose bytes come back in *staple
 * (malloc()ed; NULL if none came); every step within the bound b; -1
 * with res saying why, -2 when the server refused STARTTLS (it offers
 * SMTP without TLS). */
struct stack_st_X509;
int skm_tls_chain(struct stack_st_X509 **chain, const char *host,
    const char *port, int starttls, const char *sigalgs,
    unsigned char **staple, size_t *stlen, skm_bound_t *b, char *res,
    size_t reslen);

/* The socketmap wire format (skm_netstring.c).  parse: 1 with data/dlen
 * and used (bytes consumed) for a whole netstring, 0 if more bytes are
 * needed, -1 if malformed (why says how).  format: the length written
 * (NUL-terminated) or -1 if out is too small. */
int skm_netstring_parse(const char *buf, size_t len, size_t max,
    const char **data, size_t *dlen, size_t *used, const char **why);
int skm_netstring_format(char *out, size_t outlen, const char *data,
    size_t dlen);
/* "NAME KEY" into name and key (NUL-terminated); -1 with why. */
int skm_sockmap_request(const char *data, size_t dlen, char *name,
    size_t namelen, char *key, size_t keylen, const char **why);

typedef struct {                        /* a Postfix next-hop */
    char    host[SKM_DOMAIN_MAX + 1];   /* lowercase, no brackets/port */
    int     port;                       /* 25 unless given */
    int     bracketed;                  /* [host]: no MX lookup */
} skm_nexthop_t;
/* "domain", "domain:port", "[host]", "[host]:port"; -1 if malformed. */
int skm_nexthop_parse(skm_nexthop_t *nh, const char *key);

/* The listening sockets (skm_server.c): Socket, PolicySocket and
 * ClientPolicySocket opened before the privilege drop, then served, each
 * by a thread and a thread per connection running its handler. */
int skm_servers_open(const skm_conf_t *conf);
int skm_servers_start(void);
/* Stop: close stops accepting; end shuts every connection for reading
 * and waits up to secs for their threads: the number still running. */
void skm_servers_close(void);
int skm_servers_end(int secs);

/* Outbound (skm_policy.c): one socketmap connection from Postfix. */
void skm_sockmap_conn(int fd);
/* The reply (without netstring framing) to a lookup of key, within
 * PolicyTimeout; -1 (no reply) if client, the socket it came on, hung up
 * first. */
int skm_policy_answer(char *reply, size_t replylen, const skm_conf_t *conf,
    const char *key, int client);
/* Before the privilege drop: PolicyCache made, owned by UserID (with
 * PolicySocket and StapleTrust); -1 logged. */
int skm_policy_setup(const skm_conf_t *conf);
/* One lookup (skm_policy_lookup.c): the reply for key and how long it
 * may be cached (0: not), within the bound b; logged. */
void skm_policy_compute(char *reply, size_t replylen, time_t *ttl,
    const skm_conf_t *conf, const char *key, skm_bound_t *b);

/* The SK's public key for checking carriers: the TrustFile's, the
 * record's, or (TrustFile without a key) the KeyCache record's, which
 * must match the TrustFile fingerprint; rec holds what it loaded (free
 * it with skm_sk_free).  NULL if none is known (logged for what). */
const sk_key_t *skm_sk_pubkey(const skm_sk_t *sk, skm_sk_t *rec,
    sk_cache_t *cache, const char *domain, const char *what);

/* Inbound client certificates (skm_ccert.c). */
typedef enum {
    SKM_CCERT_UNKNOWN = 0,              /* no note: ClientPolicySocket unused */
    SKM_CCERT_NONE,                     /* the client presented none */
    SKM_CCERT_PRESENTED,                /* sha256 is its key's */
    SKM_CCERT_BADDIGEST                 /* a fingerprint, not SHA-256 */
} skm_ccert_state_t;

typedef struct {
    skm_ccert_state_t  state;
    unsigned char      sha256[32];      /* SHA-256 of the DER SPKI */
} skm_ccert_t;

void skm_ccert_conn(int fd);            /* serves one Postfix connection */
/* The note for queue id qid (removed); state UNKNOWN if none. */
void skm_ccert_take(skm_ccert_t *cc, const char *qid);
/* 1 if the SK sk cross-signs the presented key (a carrier for it in the
 * cache, verified), 0 if not, -1 if the cache failed; why says it. */
int skm_ccert_crosssigned(const skm_ccert_t *cc, const sk_key_t *sk,
    sk_cache_t *cache, char *why, size_t whylen);
/* A string's bucket in a table of buckets (djb2). */
size_t skm_hash(const char *s, size_t buckets);
/* "AB:CD:..." of 32 bytes into out; -1 otherwise. */
int skm_fpr_parse(unsigned char out[32], const char *s);

/*
 * The milter: skm_milter.c serves an MTA connection with the session of
 * skm_session.c, which reads packets (skm_mproto.c) and runs the
 * per-message logic (skm_filter.c); all but the first without I/O.
 */
#define SKM_MILTER_DATA_MAX (1024 * 1024)   /* longest packet we take */
#define SKM_EOM_HEADER_MAX  1024            /* our A-R value */

typedef struct {                        /* bytes to send */
    char    *buf;
    size_t   len;
    size_t   cap;
} skm_obuf_t;

/* One packet at buf: 1 with cmd, data, dlen and used (bytes it takes),
 * 0 if more bytes are needed, -1 if malformed (why). */
int skm_mpkt_parse(const char *buf, size_t len, int *cmd, const char **data,
    size_t *dlen, size_t *used, const char **why);
/* data as NUL-terminated strings: their number in n; -1 (why) if it is
 * empty or its last byte is not a NUL. */
int skm_mpkt_strings(const char *data, size_t dlen, size_t *n,
    const char **why);
/* Append a packet to out; -1 if out of memory. */
int skm_mpkt_format(skm_obuf_t *out, int cmd, const char *data, size_t dlen);

typedef struct {                        /* one message (skm_filter.c) */
    char         mailfrom[SKM_DOMAIN_MAX + 1];  /* "" if none */
    char         hdrfrom[SKM_DOMAIN_MAX + 1];
    unsigned     nfrom;                 /* From: headers seen */
    char         tls[32];               /* {tls_version}, "" for plaintext */
    int          macros;                /* the MTA sent any of ours */
    unsigned     nar;                   /* A-R headers seen */
    unsigned    *forged;                /* their indexes claiming to be ours */
    size_t       nforged;
    int          toomany;
    int          inmsg;                 /* counted in skm_filter_busy() */
    skm_ccert_t  ccert;                 /* from ClientPolicySocket, at EOM */
} skm_msg_t;

typedef enum {
    SKM_EOM_CONTINUE = 0,               /* edit the headers, deliver */
    SKM_EOM_REJECT,                     /* reply (5xx) */
    SKM_EOM_TEMPFAIL                    /* reply (4xx) */
} skm_eom_action_t;

typedef struct {                        /* what end of message does */
    skm_eom_action_t   action;
    char               reply[512];      /* "550 5.7.1 TEXT" */
    const unsigned    *remove;          /* CONTINUE: the A-R headers to
                                           remove (1-based, ascending; the
                                           message's, until skm_msg_end) */
    size_t             nremove;
    char               header[SKM_EOM_HEADER_MAX];  /* then this A-R value,
                                           inserted as the first header */
} skm_eom_t;

void skm_msg_begin(skm_msg_t *m, const char *sender, const char *tls,
    int macros);
void skm_msg_header(skm_msg_t *m, const char *name, const char *value);
void skm_msg_eom(skm_msg_t *m, const char *qid, skm_eom_t *e);
void skm_msg_end(skm_msg_t *m);         /* after EOM or an abort */
int skm_filter_busy(void);              /* messages in progress */

/* One MTA connection's conversation (skm_session.c). */
typedef struct skm_session_s skm_session_t;
skm_session_t *skm_session_new(void);
void skm_session_free(skm_session_t *s);        /* NULL ok */
/* One packet from the MTA, replies appended to skm_session_out(s): 0 to
 * go on, 1 when the MTA quit, -1 on a protocol error (why; the
 * connection must close). */
int skm_session_input(skm_session_t *s, int cmd, const char *data,
    size_t dlen, const char **why);
skm_obuf_t *skm_session_out(skm_session_t *s);

void skm_milter_conn(int fd);           /* serves one MTA connection */

/* Authentication-Results values (skm_ar.c, RFC 8601 section 2.2). */
#define SKM_AR_ID_MAX   255             /* longest authserv-id kept */

typedef struct {
    char      id[SKM_AR_ID_MAX + 1];    /* authserv-id, unquoted, cut at
                                           SKM_AR_ID_MAX */
    size_t    idlen;                    /* its whole length */
    int       hasid;                    /* 1 once the authserv-id was read */
    long      version;                  /* authres-version, -1 if absent */
    unsigned  nresults;                 /* method=result entries */
    int       none;                     /* "; none" */
} skm_ar_t;

/* 0 if value follows the grammar; -1 if not, with why and off (the byte
 * where it failed), ar filled as far as it got (hasid: the id was read). */
int skm_ar_parse(skm_ar_t *ar, const char *value, size_t len, size_t *off,
    const char **why);
/* 1 if the field claims to be ours: its authserv-id, unquoted, is
 * authservid (ASCII case-insensitively, a trailing "." and white space
 * inside quotes ignored), or it has no authserv-id one could read. */
int skm_ar_is_ours(const char *value, size_t len, const char *authservid);

/* /metrics on MetricsListen (skm_metrics.c), read at start only: 0
 * (nothing to do without it), -1 with err naming MetricsListen.  Every
 * other call does nothing while metrics are off. */
int skm_metrics_start(const skm_conf_t *conf, sk_err_t *err);
void skm_metrics_stop(void);
/* A message's verdict: "none", "pass", "permerror", "fail", "temperror". */
void skm_metrics_message(const char *verdict);
/* A Probe handshake: "carrier", "no_carrier", "other_key", "failed". */
void skm_metrics_handshake(const char *result);
/* A policy answer (its first word is the result) and its time. */
void skm_metrics_policy(const char *reply, double secs);
void skm_metrics_staple_asked(int received);    /* outbound handshake */
void skm_metrics_staple_sent(void);             /* a chain file with one */
/* A staple refresh: an sk_staple_cause_t, or -1 for a local failure. */
void skm_metrics_staple_refreshed(int cause);
void skm_metrics_cache_error(void);             /* a KeyCache lookup */
/* skm_server.c's sockets, by index (Socket, PolicySocket,
 * ClientPolicySocket): one refused at its cap; one opened or closed. */
void skm_metrics_refused(size_t socket);
void skm_metrics_connections(size_t socket, int delta);
void skm_metrics_postfix_command(int ok);       /* PostfixCommand ran */
void skm_metrics_policy_lookup(int delta);      /* +1 begins, -1 ends */
/* The refresher thread: the ChainFiles of the configuration it runs
 * (each pass, first), then what it wrote in ChainFile number chain (the
 * carrier's name and end), and a carrier name's staple (oldest: its
 * newest answer's oldest checkpoint, 0 if it never had one; served: in
 * the chain files now). */
void skm_metrics_chains(const skm_conf_t *conf);
void skm_metrics_carrier(size_t chain, const char *name, time_t not_after);
void skm_metrics_staple(const char *name, time_t oldest, int served);

/* Onion: the HiddenServiceDir and torrc, if OnionDir is set. */
int skm_onion_setup(const skm_conf_t *conf);

#endif
