/*
 * skm_metrics.c -- sk-milter's /metrics (sk/metrics.h) on MetricsListen.
 * Counts are added where things happen: verdicts (skm_filter.c), policy
 * answers and lookups (skm_policy.c), Probe handshakes, PostfixCommand
 * and staples (skm_chain.c, skm_staple.c), KeyCache failures
 * (skm_trust.c), connections (skm_server.c).  What belongs to a ChainFile
 * or a carrier's name (the carrier's end, the staple's age) is kept here
 * under a lock, as the refresher thread last saw it, and written at each
 * scrape for the ChainFiles of the running configuration only: a SIGHUP
 * that drops a ChainFile drops its series, and ages and times left are
 * counted at the scrape, so they move on while the KeyCache or the
 * mirrors are down.  Without MetricsListen every series stays NULL, the
 * state is not kept and each call here does nothing.
 * docs/operations.md, "Monitoring", describes each series.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <sk/httpd.h>
#include <sk/metrics.h>
#include <sk/staple_serve.h>

#include "skm.h"

static const sk_metric_def_t  skm_metrics_messages = {
    "sk_milter_messages_total",
    "Messages by the sk= verdict stamped in Authentication-Results "
    "(temperror: the lookup failed, the message was tempfailed).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_handshakes = {
    "sk_milter_handshakes_total",
    "Probe handshakes (SMTP STARTTLS or TLS) with the MTA serving the "
    "chain files, by what it served.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_requested = {
    "sk_milter_staples_requested_total",
    "Outbound handshakes (policy lookups) that asked for a stapled proof.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_received = {
    "sk_milter_staples_received_total",
    "Of those, the handshakes a stapled proof came back in (the "
    "extension or the chain).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_sent = {
    "sk_milter_staples_sent_total",
    "Chain files written with a staple (StapleProof): the MTA sends it "
    "in every handshake from then on.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_refreshes = {
    "sk_milter_staple_refreshes_total",
    "Staple refreshes by result: ok, or what kept the staple from being "
    "renewed (mirror_down, bad_answer, timeline_stale, timeline_missing; "
    "error: a local failure).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_age = {
    "sk_milter_staple_age_seconds",
    "Age of the newest answer the staple of the carrier name held (also "
    "once dropped at staple_max_age).",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  skm_metrics_st_served = {
    "sk_milter_staple_served",
    "1 while the chain files carry a staple for the carrier name, else 0.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  skm_metrics_expiry = {
    "sk_milter_carrier_expiry_seconds",
    "Seconds until the carrier written in each ChainFile expires.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  skm_metrics_conns = {
    "sk_milter_connections",
    "Connections open on each socket (Socket: the MTA's milter "
    "connections).",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  skm_metrics_refused_def = {
    "sk_milter_connections_refused_total",
    "Connections closed at once on each socket, its cap (MaxConnections, "
    "PolicyMaxConnections) reached.",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_postfix = {
    "sk_milter_postfix_command_total",
    "PostfixCommand runs after a chain file changed, by result (ok, "
    "failed).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_inflight = {
    "sk_milter_policy_lookups_in_flight",
    "Policy lookups being computed now (DNS, the next hop's handshake, "
    "the KeyCache); cached answers are not counted.",
    SK_METRIC_GAUGE, NULL, 0
};

static const sk_metric_def_t  skm_metrics_cache_errors = {
    "sk_milter_key_cache_errors_total",
    "KeyCache lookups that failed (backend down, bad record).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_answers = {
    "sk_milter_policy_answers_total",
    "smtp_tls_policy_maps answers by result (ok: fingerprints to match, "
    "notfound, temp, perm).",
    SK_METRIC_COUNTER, NULL, 0
};

static const sk_metric_def_t  skm_metrics_lookup = {
    "sk_milter_policy_lookup_duration_seconds",
    "Time to answer a policy lookup (cached answers included).",
    SK_METRIC_HISTOGRAM, sk_metrics_latency_buckets,
    SK_METRICS_LATENCY_BUCKETS
};

/* Label values of the fixed series, in the order of their arrays. */
static const char *const  skm_metrics_verdicts[] = {
    "none", "pass", "permerror", "fail", "temperror", NULL };
static const char *const  skm_metrics_hsresults[] = {
    "carrier", "no_carrier", "other_key", "failed", NULL };
static const char *const  skm_metrics_presults[] = {
    "ok", "notfound", "temp", "perm", NULL };
static const char *const  skm_metrics_pwords[] = {
    "OK", "NOTFOUND", "TEMP", "PERM", NULL };
static const char *const  skm_metrics_sockets[] = {
    "Socket", "PolicySocket", "ClientPolicySocket", NULL };
static const char *const  skm_metrics_presults2[] = { "ok", "failed", NULL };
/* sk_staple_cause_t's names, then a local failure. */
static const char *const  skm_metrics_stresults[] = {
    "ok", "mirror_down", "bad_answer", "timeline_stale", "timeline_missing",
    "error", NULL };

#define SKM_METRICS_LABELS  SKM_METRICS_STRESULTS
#define SKM_METRICS_STRESULTS  (SK_STAPLE_CAUSES + 1)
#define SKM_METRICS_STAPLES  64     /* skm_staple.c's names at most */

/* What the refresher thread last saw of a ChainFile. */
typedef struct {
    char          *source;          /* its SOURCE */
    time_t         not_after;       /* its carrier's; 0: none written */
    char           name[SK_NAME_MAX + 1];   /* that carrier's name */
} skm_metrics_chain_t;

/* And of a carrier name's staple. */
typedef struct {
    char           name[SK_NAME_MAX + 1];
    time_t         oldest;          /* its newest answer's oldest
                                       checkpoint; 0: never one */
    int            served;          /* in the chain files */
} skm_metrics_staple_t;

typedef struct {
    sk_metrics_t  *reg;
    sk_httpd_t    *h;
    sk_metric_t   *messages[SKM_METRICS_LABELS];
    sk_metric_t   *handshakes[SKM_METRICS_LABELS];
    sk_metric_t   *answers[SKM_METRICS_LABELS];
    sk_metric_t   *conns[SKM_METRICS_LABELS];
    sk_metric_t   *refused[SKM_METRICS_LABELS];
    sk_metric_t   *postfix[SKM_METRICS_LABELS];
    sk_metric_t   *st_refreshes[SKM_METRICS_LABELS];
    sk_metric_t   *lookup;
    sk_metric_t   *inflight;
    sk_metric_t   *st_requested;
    sk_metric_t   *st_received;
    sk_metric_t   *st_sent;
    sk_metric_t   *cache_errors;

    pthread_mutex_t        lock;    /* the fields below */
    skm_metrics_chain_t   *chains;
    size_t                 nchains;
    skm_metrics_staple_t   staples[SKM_METRICS_STAPLES];
    size_t                 nstaples;
} skm_metrics_t;

static skm_metrics_t  skm_metrics = { .lock = PTHREAD_MUTEX_INITIALIZER };


/* One series of def per label value in values (NULL-terminated). */
static int
skm_metrics_labelled(sk_metric_t **out, const sk_metric_def_t *def,
    const char *label, const char *const *values, sk_err_t *err)
{
    size_t  i;

    for (i = 0; values[i] != NULL; i++) {
        out[i] = sk_metrics_series(skm_metrics.reg, def, &label, &values[i],
            1, err);
        if (out[i] == NULL) {
            return -1;
        }
    }
    return 0;
}


static sk_metric_t *
skm_metrics_plain(const sk_metric_def_t *def, sk_err_t *err)
{
    return sk_metrics_series(skm_metrics.reg, def, NULL, NULL, 0, err);
}


/* Whether a ChainFile of the running configuration has a carrier of
 * this name (under the lock). */
static int
skm_metrics_named(const char *name)
{
    size_t  i;

    for (i = 0; i < skm_metrics.nchains; i++) {
        if (strcmp(skm_metrics.chains[i].name, name) == 0) {
            return 1;
        }
    }
    return 0;
}


static void
skm_metrics_emit_expiry(sk_metrics_emit_t *e, void *cls)
{
    skm_metrics_chain_t  *ch;
    time_t                now = time(NULL);
    size_t                i;

    (void) cls;
    pthread_mutex_lock(&skm_metrics.lock);
    for (i = 0; i < skm_metrics.nchains; i++) {
        ch = &skm_metrics.chains[i];
        if (ch->not_after != 0) {
            sk_metrics_emit(e, (const char *const *) &ch->source,
                (double) (ch->not_after - now));
        }
    }
    pthread_mutex_unlock(&skm_metrics.lock);
}


/* The staple of each carrier name in use: cls non-NULL for its age, NULL
 * for whether it is served. */
static void
skm_metrics_emit_staple(sk_metrics_emit_t *e, void *cls)
{
    skm_metrics_staple_t  *st;
    const char            *v[1];
    time_t                 now = time(NULL);
    size_t                 i;

    pthread_mutex_lock(&skm_metrics.lock);
    for (i = 0; i < skm_metrics.nstaples; i++) {
        st = &skm_metrics.staples[i];
        v[0] = st->name;
        if (!skm_metrics_named(st->name)) {
            continue;
        }
        if (cls == NULL) {
            sk_metrics_emit(e, v, st->served);
        } else if (st->oldest != 0) {
            sk_metrics_emit(e, v, (double) (now - st->oldest));
        }
    }
    pthread_mutex_unlock(&skm_metrics.lock);
}


static int
skm_metrics_series(sk_err_t *err)
{
    static const char *const  chainfile[] = { "chainfile" };
    static const char *const  name[] = { "name" };
    skm_metrics_t            *mt = &skm_metrics;

    if (sk_metrics_process(mt->reg, "sk_milter", err) != 0
        || skm_metrics_labelled(mt->messages, &skm_metrics_messages,
               "verdict", skm_metrics_verdicts, err) != 0
        || skm_metrics_labelled(mt->handshakes, &skm_metrics_handshakes,
               "result", skm_metrics_hsresults, err) != 0
        || skm_metrics_labelled(mt->answers, &skm_metrics_answers, "result",
               skm_metrics_presults, err) != 0
        || skm_metrics_labelled(mt->conns, &skm_metrics_conns, "socket",
               skm_metrics_sockets, err) != 0
        || skm_metrics_labelled(mt->refused, &skm_metrics_refused_def, "socket",
               skm_metrics_sockets, err) != 0
        || skm_metrics_labelled(mt->postfix, &skm_metrics_postfix, "result",
               skm_metrics_presults2, err) != 0
        || skm_metrics_labelled(mt->st_refreshes, &skm_metrics_st_refreshes,
               "result", skm_metrics_stresults, err) != 0
        || sk_metrics_family(mt->reg, &skm_metrics_st_age, name, 1,
               skm_metrics_emit_staple, mt, err) != 0
        || sk_metrics_family(mt->reg, &skm_metrics_st_served, name, 1,
               skm_metrics_emit_staple, NULL, err) != 0
        || sk_metrics_family(mt->reg, &skm_metrics_expiry, chainfile, 1,
               skm_metrics_emit_expiry, NULL, err) != 0)
    {
        return -1;
    }
    mt->lookup = skm_metrics_plain(&skm_metrics_lookup, err);
    mt->inflight = skm_metrics_plain(&skm_metrics_inflight, err);
    mt->st_requested = skm_metrics_plain(&skm_metrics_st_requested, err);
    mt->st_received = skm_metrics_plain(&skm_metrics_st_received, err);
    mt->st_sent = skm_metrics_plain(&skm_metrics_st_sent, err);
    mt->cache_errors = skm_metrics_plain(&skm_metrics_cache_errors, err);
    return mt->lookup == NULL || mt->inflight == NULL
        || mt->st_requested == NULL || mt->st_received == NULL
        || mt->st_sent == NULL || mt->cache_errors == NULL ? -1 : 0;
}


int
skm_metrics_start(const skm_conf_t *conf, sk_err_t *err)
{
    if (conf->metricslisten == NULL) {
        return 0;
    }
    skm_metrics.reg = sk_metrics_new(NULL, NULL, err);
    if (skm_metrics.reg == NULL || skm_metrics_series(err) != 0
        || sk_httpd_metrics_start(&skm_metrics.h, SKM_PROG,
               conf->metricslisten, skm_metrics.reg, err) != 0)
    {
        skm_metrics_stop();
        return sk_err_prefix(err, "MetricsListen %s", conf->metricslisten);
    }
    skm_log(LOG_INFO, "metrics on http://%s/metrics", conf->metricslisten);
    return 0;
}


void
skm_metrics_stop(void)
{
    size_t  i;

    sk_httpd_stop(skm_metrics.h);
    sk_metrics_free(skm_metrics.reg);
    for (i = 0; i < skm_metrics.nchains; i++) {
        free(skm_metrics.chains[i].source);
    }
    free(skm_metrics.chains);
    memset(&skm_metrics, 0, offsetof(skm_metrics_t, lock));
    skm_metrics.chains = NULL;
    skm_metrics.nchains = 0;
    skm_metrics.nstaples = 0;
}


/* The series in v whose label is word in words (NULL-terminated). */
static sk_metric_t *
skm_metrics_pick(sk_metric_t **v, const char *const *words, const char *word,
    size_t len)
{
    size_t  i;

    for (i = 0; words[i] != NULL; i++) {
        if (strlen(words[i]) == len && strncmp(words[i], word, len) == 0) {
            return v[i];
        }
    }
    return NULL;
}


void
skm_metrics_message(const char *verdict)
{
    sk_metric_inc(skm_metrics_pick(skm_metrics.messages, skm_metrics_verdicts,
        verdict, strlen(verdict)), 1);
}


void
skm_metrics_handshake(const char *result)
{
    sk_metric_inc(skm_metrics_pick(skm_metrics.handshakes,
        skm_metrics_hsresults, result, strlen(result)), 1);
}


void
skm_metrics_policy(const char *reply, double secs)
{
    sk_metric_inc(skm_metrics_pick(skm_metrics.answers, skm_metrics_pwords,
        reply, strcspn(reply, " ")), 1);
    sk_metric_observe(skm_metrics.lookup, secs);
}


void
skm_metrics_staple_asked(int received)
{
    sk_metric_inc(skm_metrics.st_requested, 1);
    if (received) {
        sk_metric_inc(skm_metrics.st_received, 1);
    }
}


void
skm_metrics_staple_sent(void)
{
    sk_metric_inc(skm_metrics.st_sent, 1);
}


void
skm_metrics_staple_refreshed(int cause)
{
    sk_metric_inc(skm_metrics.st_refreshes[cause >= 0 && cause
        < SK_STAPLE_CAUSES ? cause : SK_STAPLE_CAUSES], 1);
}


void
skm_metrics_refused(size_t socket)
{
    sk_metric_inc(skm_metrics.refused[socket], 1);
}


void
skm_metrics_connections(size_t socket, int delta)
{
    sk_metric_add(skm_metrics.conns[socket], delta);
}


void
skm_metrics_postfix_command(int ok)
{
    sk_metric_inc(skm_metrics.postfix[ok ? 0 : 1], 1);
}


void
skm_metrics_policy_lookup(int delta)
{
    sk_metric_add(skm_metrics.inflight, delta);
}


void
skm_metrics_cache_error(void)
{
    sk_metric_inc(skm_metrics.cache_errors, 1);
}


void
skm_metrics_chains(const skm_conf_t *conf)
{
    skm_metrics_chain_t  *chs, *old;
    size_t                i, j;

    if (skm_metrics.reg == NULL) {
        return;
    }
    chs = calloc(conf->nchains + 1, sizeof(*chs));
    for (i = 0; chs != NULL && i < conf->nchains; i++) {
        chs[i].source = strdup(conf->chains[i].source);
        if (chs[i].source == NULL) {
            break;
        }
    }
    pthread_mutex_lock(&skm_metrics.lock);
    old = skm_metrics.chains;
    if (chs != NULL && i == conf->nchains) {
        /* what is known of a ChainFile the new configuration keeps */
        for (i = 0; i < conf->nchains; i++) {
            for (j = 0; j < skm_metrics.nchains; j++) {
                if (strcmp(old[j].source, chs[i].source) == 0) {
                    chs[i].not_after = old[j].not_after;
                    memcpy(chs[i].name, old[j].name, sizeof(chs[i].name));
                    break;
                }
            }
        }
        skm_metrics.chains = chs;
        j = skm_metrics.nchains;
        skm_metrics.nchains = conf->nchains;
        chs = old;
    } else {
        skm_log(LOG_ERR, "metrics: out of memory");
        j = i;
    }
    pthread_mutex_unlock(&skm_metrics.lock);
    for (i = 0; chs != NULL && i < j; i++) {
        free(chs[i].source);
    }
    free(chs);
}


void
skm_metrics_carrier(size_t chain, const char *name, time_t not_after)
{
    skm_metrics_chain_t  *ch;

    pthread_mutex_lock(&skm_metrics.lock);
    if (chain < skm_metrics.nchains) {
        ch = &skm_metrics.chains[chain];
        ch->not_after = not_after;
        snprintf(ch->name, sizeof(ch->name), "%s", name);
    }
    pthread_mutex_unlock(&skm_metrics.lock);
}


void
skm_metrics_staple(const char *name, time_t oldest, int served)
{
    skm_metrics_staple_t  *st;
    size_t                 i;

    if (skm_metrics.reg == NULL) {
        return;
    }
    pthread_mutex_lock(&skm_metrics.lock);
    for (i = 0; i < skm_metrics.nstaples; i++) {
        if (strcmp(skm_metrics.staples[i].name, name) == 0) {
            break;
        }
    }
    if (i < SKM_METRICS_STAPLES) {
        st = &skm_metrics.staples[i];
        if (i == skm_metrics.nstaples) {
            snprintf(st->name, sizeof(st->name), "%s", name);
            skm_metrics.nstaples++;
        }
        st->oldest = oldest;
        st->served = served;
    }
    pthread_mutex_unlock(&skm_metrics.lock);
}
