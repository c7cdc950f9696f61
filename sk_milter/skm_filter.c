/*
 * skm_filter.c -- the per-message half: an Authentication-Results verdict
 * "sk=pass|fail|none|permerror" for the sending domains, forged results
 * under our authserv-id found (skm_ar.c) for removal, and in Mode reject
 * a 5.7.1 refusal.  A client certificate's key comes from
 * ClientPolicySocket's note for the queue id (skm_ccert.c): Postfix gives
 * milters no client key.
 *
 * No I/O but the SK lookups (TrustFile, KeyCache): the session
 * (skm_session.c) feeds it MAIL, headers and end of message and turns
 * what it decides into replies, so the fuzzer drives it without a socket.
 * Whatever the MTA sends lands only in fixed buffers, and what goes back
 * into a header or a reply is ours or checked (domains, the TLS version).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include <sk/name.h>

#include "skm.h"

#define SKM_AR          "Authentication-Results"
#define SKM_AR_MAX      1000        /* forged headers we will remove */

typedef enum {                      /* worst last: combining takes max */
    SKM_R_NONE = 0,
    SKM_R_PASS,
    SKM_R_PERMERROR,
    SKM_R_FAIL
} skm_result_t;

typedef struct {
    skm_result_t  result;
    char          reason[160];
} skm_verdict_t;

static int          skm_busy;      /* messages in progress (atomic) */

static const char  *skm_result_names[] = { "none", "pass", "permerror",
                                           "fail" };

static int skm_verdict_ccert(skm_verdict_t *vd, const skm_msg_t *m,
    skm_sk_t *sk, sk_cache_t *cache, const char *domain, sk_err_t *err);


/* The domain of an address ("<a@b>", "Name <a@b>", "a@b (c)"),
 * lowercased into out; "" if there is none or it is not a DNS name. */
static void
skm_addr_domain(char out[SKM_DOMAIN_MAX + 1], const char *addr)
{
    const char  *p, *end, *at;
    size_t       len, i;

    out[0] = '\0';
    p = strrchr(addr, '<');
    if (p != NULL) {
        p++;
        end = strchr(p, '>');
        if (end == NULL) {
            return;
        }
    } else {
        p = addr;
        end = p + strcspn(p, " \t\r\n(,;");
        while (*p == ' ' || *p == '\t') {
            p++;
            end = p + strcspn(p, " \t\r\n(,;");
        }
    }
    at = NULL;
    for (i = 0; p + i < end; i++) {
        if (p[i] == '@') {
            at = p + i;
        }
    }
    if (at == NULL) {
        return;
    }
    len = (size_t) (end - at - 1);
    if (len == 0 || len > SKM_DOMAIN_MAX) {
        return;
    }
    for (i = 0; i < len; i++) {
        out[i] = (char) tolower((unsigned char) at[1 + i]);
    }
    out[len] = '\0';
    if (len > 1 && out[len - 1] == '.') {
        out[len - 1] = '\0';
    }
    if (sk_name_check(out, strlen(out), NULL) != 0) {
        out[0] = '\0';
    }
}


int
skm_filter_busy(void)
{
    return __atomic_load_n(&skm_busy, __ATOMIC_SEQ_CST);
}


void
skm_msg_end(skm_msg_t *m)
{
    if (m->inmsg) {
        __atomic_sub_fetch(&skm_busy, 1, __ATOMIC_SEQ_CST);
    }
    free(m->forged);
    memset(m, 0, sizeof(*m));
}


/*
 * MAIL FROM: sender is its address, tls the {tls_version} macro (NULL if
 * not sent), macros whether the MTA sent any of ours.  A TLS version
 * goes into the header's comment: anything but letters, digits and
 * "._-" is named plainly "TLS".
 */
void
skm_msg_begin(skm_msg_t *m, const char *sender, const char *tls, int macros)
{
    size_t  n;

    skm_msg_end(m);
    m->inmsg = 1;
    __atomic_add_fetch(&skm_busy, 1, __ATOMIC_SEQ_CST);
    skm_addr_domain(m->mailfrom, sender);
    if (tls != NULL && tls[0] != '\0') {
        n = strspn(tls, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789._-");
        snprintf(m->tls, sizeof(m->tls), "%s",
            tls[n] == '\0' && n < sizeof(m->tls) ? tls : "TLS");
    }
    m->macros = macros;
}


void
skm_msg_header(skm_msg_t *m, const char *name, const char *value)
{
    skm_conf_t  *conf;
    unsigned    *v;

    if (strcasecmp(name, "From") == 0) {
        if (m->nfrom++ == 0) {
            skm_addr_domain(m->hdrfrom, value);
        }
    } else if (strcasecmp(name, SKM_AR) == 0) {
        m->nar++;
        conf = skm_conf_acquire();
        if (skm_ar_is_ours(value, strlen(value), conf->authservid)) {
            if (m->nforged >= SKM_AR_MAX) {
                m->toomany = 1;
            } else {
                v = realloc(m->forged, (m->nforged + 1) * sizeof(*v));
                if (v == NULL) {
                    m->toomany = 1;
                } else {
                    m->forged = v;
                    m->forged[m->nforged++] = m->nar;
                }
            }
        }
        skm_conf_release(conf);
    }
}


/* The verdict for one domain; -1 on a lookup failure (err set). */
static int
skm_verdict_domain(skm_verdict_t *vd, const skm_conf_t *conf,
    const skm_msg_t *c, const char *domain, sk_err_t *err)
{
    skm_sk_t     sk;
    sk_cache_t  *cache;

    if (skm_cache_get(&cache, conf, err) != 0
        || skm_sk_lookup(&sk, conf, cache, domain, err) != 0)
    {
        return -1;
    }
    if (sk.state == SKM_SK_NONE) {
        vd->result = SKM_R_NONE;
        snprintf(vd->reason, sizeof(vd->reason), "no sovereign key");
    } else if (!sk_services_covers(&sk.services, "smtp", 0)) {
        vd->result = SKM_R_NONE;
        snprintf(vd->reason, sizeof(vd->reason),
            "sovereign key does not cover smtp");
    } else if (!c->macros) {
        vd->result = SKM_R_PERMERROR;
        snprintf(vd->reason, sizeof(vd->reason),
            "the MTA sent no TLS macros");
    } else if (c->tls[0] == '\0') {
        vd->result = SKM_R_FAIL;
        snprintf(vd->reason, sizeof(vd->reason),
            "plaintext for smtp service");
    } else if (c->ccert.state == SKM_CCERT_BADDIGEST) {
        vd->result = SKM_R_PERMERROR;
        snprintf(vd->reason, sizeof(vd->reason), "client key fingerprint "
            "is not SHA-256 (smtpd_tls_fingerprint_digest)");
    } else if (c->ccert.state == SKM_CCERT_PRESENTED) {
        return skm_verdict_ccert(vd, c, &sk, cache, domain, err);
    } else {
        vd->result = SKM_R_PASS;
        snprintf(vd->reason, sizeof(vd->reason), "%s for smtp service",
            c->tls);
    }
    skm_sk_free(&sk);
    return 0;
}


/* TLS with a client certificate: its key must be one the SK cross-signs.
 * Frees sk. */
static int
skm_verdict_ccert(skm_verdict_t *vd, const skm_msg_t *c, skm_sk_t *sk,
    sk_cache_t *cache, const char *domain, sk_err_t *err)
{
    skm_sk_t         rec;
    const sk_key_t  *key;
    char             why[160];
    int              rc;

    key = skm_sk_pubkey(sk, &rec, cache, domain, "client certificate");
    if (key == NULL) {
        vd->result = SKM_R_PERMERROR;
        snprintf(vd->reason, sizeof(vd->reason), "client certificate: "
            "the sovereign key's public key is not known");
        rc = 0;
    } else {
        rc = skm_ccert_crosssigned(&c->ccert, key, cache, why, sizeof(why));
        if (rc == 1) {
            vd->result = SKM_R_PASS;
            snprintf(vd->reason, sizeof(vd->reason), "%s, client key "
                "cross-signed, for smtp service", c->tls);
            rc = 0;
        } else if (rc == 0) {
            vd->result = SKM_R_FAIL;
            snprintf(vd->reason, sizeof(vd->reason), "%s", why);
        } else {
            sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", why);
        }
    }
    skm_sk_free(&rec);
    skm_sk_free(sk);
    return rc;
}


/* Both domains, the worse result wins. */
static int
skm_verdict(skm_verdict_t *vd, const skm_conf_t *conf, const skm_msg_t *c,
    sk_err_t *err)
{
    skm_verdict_t  hv;

    vd->result = SKM_R_NONE;
    snprintf(vd->reason, sizeof(vd->reason), "no sender domain");
    if (c->nfrom > 1) {
        vd->result = SKM_R_PERMERROR;
        snprintf(vd->reason, sizeof(vd->reason), "%u From: headers",
            c->nfrom);
        return 0;
    }
    if (c->mailfrom[0] != '\0'
        && skm_verdict_domain(vd, conf, c, c->mailfrom, err) != 0)
    {
        return -1;
    }
    if (c->hdrfrom[0] != '\0' && strcmp(c->hdrfrom, c->mailfrom) != 0) {
        if (skm_verdict_domain(&hv, conf, c, c->hdrfrom, err) != 0) {
            return -1;
        }
        if (hv.result > vd->result || c->mailfrom[0] == '\0') {
            *vd = hv;
        }
    }
    return 0;
}


void
skm_msg_eom(skm_msg_t *m, const char *qid, skm_eom_t *e)
{
    skm_conf_t     *conf;
    skm_verdict_t   vd;
    sk_err_t        err;

    memset(e, 0, sizeof(*e));
    conf = skm_conf_acquire();
    if (m->toomany) {
        skm_log(LOG_NOTICE, "%s: more than %d forged %s headers",
            qid, SKM_AR_MAX, SKM_AR);
        e->action = SKM_EOM_REJECT;
        snprintf(e->reply, sizeof(e->reply), "550 5.7.1 sk-milter: too many "
            "forged " SKM_AR " headers");
        goto done;
    }
    if (conf->ccertsocket != NULL) {
        skm_ccert_take(&m->ccert, qid);
    }
    if (skm_verdict(&vd, conf, m, &err) != 0) {
        skm_log(LOG_WARNING, "%s: sovereign key lookup failed: %s", qid,
            err.msg);
        skm_metrics_message("temperror");
        e->action = SKM_EOM_TEMPFAIL;
        snprintf(e->reply, sizeof(e->reply), "451 4.7.0 sk-milter: "
            "sovereign key lookup failed, try again later");
        goto done;
    }
    skm_log(LOG_INFO, "%s: sk=%s (%s) smtp.mailfrom=%s header.from=%s", qid,
        skm_result_names[vd.result], vd.reason,
        m->mailfrom[0] ? m->mailfrom : "-", m->hdrfrom[0] ? m->hdrfrom : "-");
    skm_metrics_message(skm_result_names[vd.result]);

    if (conf->mode == SKM_MODE_REJECT && vd.result == SKM_R_FAIL) {
        e->action = SKM_EOM_REJECT;
        snprintf(e->reply, sizeof(e->reply), "550 5.7.1 sk-milter: "
            "sovereign key policy: %s", vd.reason);
        goto done;
    }
    if (conf->mode == SKM_MODE_REJECT && vd.result == SKM_R_PERMERROR) {
        e->action = SKM_EOM_TEMPFAIL;
        snprintf(e->reply, sizeof(e->reply), "451 4.7.0 sk-milter: cannot "
            "check: %s", vd.reason);
        goto done;
    }
    e->action = SKM_EOM_CONTINUE;
    e->remove = m->forged;
    e->nremove = m->nforged;
    snprintf(e->header, sizeof(e->header), "%s;\n\tsk=%s (%s)%s%s%s%s",
        conf->authservid, skm_result_names[vd.result], vd.reason,
        m->mailfrom[0] ? "\n\tsmtp.mailfrom=" : "", m->mailfrom,
        m->hdrfrom[0] ? "\n\theader.from=" : "", m->hdrfrom);

done:
    skm_conf_release(conf);
}
