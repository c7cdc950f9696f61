/*
 * skm_filter.c -- the per-message half: an Authentication-Results verdict
 * "sk=pass|fail|none|permerror" for the sending domains, forged results
 * under our authserv-id removed, and in Mode reject a 5.7.1 refusal.
 * A client certificate's key comes from ClientPolicySocket's note for
 * the queue id (skm_ccert.c): Postfix gives milters no client key.
 *
 * Negotiation asks only for MAIL, headers and end of message, no replies
 * for MAIL and headers, and the macros it reads at MAIL (so the admin's
 * milter_*_macros defaults do not matter to Postfix >= 2.6): per message
 * one round trip, end of message (docs/benchmarks.md, "Milter").
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include <libmilter/mfapi.h>
#include <sk/name.h>

#include "skm.h"

#define SKM_MAIL_MACROS "{tls_version} {cipher} {cert_subject} " \
    "{cert_issuer} {auth_authen} {client_name} {client_addr} {daemon_name}"
#define SKM_AR          "Authentication-Results"
#define SKM_AR_MAX      1000        /* forged headers we will remove */

typedef enum {                      /* worst last: combining takes max */
    SKM_R_NONE = 0,
    SKM_R_PASS,
    SKM_R_PERMERROR,
    SKM_R_FAIL
} skm_result_t;

static int          skm_busy;      /* messages in progress (atomic) */

static const char  *skm_result_names[] = { "none", "pass", "permerror",
                                           "fail" };

typedef struct {
    int        nr_hdr;              /* MTA takes no reply to headers */
    int        nr_mail;
    /* the message */
    char       mailfrom[SKM_DOMAIN_MAX + 1];    /* "" if none */
    char       hdrfrom[SKM_DOMAIN_MAX + 1];
    unsigned   nfrom;               /* From: headers seen */
    char       tls[64];             /* {tls_version}, "" for plaintext */
    int        macros;              /* the MTA sent any of ours */
    unsigned   nar;                 /* A-R headers seen */
    unsigned  *forged;              /* their indexes with our authserv-id */
    size_t     nforged;
    int        toomany;
    int        inmsg;               /* counted in skm_busy */
    skm_ccert_t ccert;              /* from ClientPolicySocket, at EOM */
} skm_ctx_t;

typedef struct {
    skm_result_t  result;
    char          reason[160];
} skm_verdict_t;

static sfsistat skm_negotiate(SMFICTX *ctx, unsigned long f0,
    unsigned long f1, unsigned long f2, unsigned long f3,
    unsigned long *pf0, unsigned long *pf1, unsigned long *pf2,
    unsigned long *pf3);
static sfsistat skm_envfrom(SMFICTX *ctx, char **argv);
static sfsistat skm_data(SMFICTX *ctx);
static sfsistat skm_header(SMFICTX *ctx, char *name, char *value);
static sfsistat skm_eom(SMFICTX *ctx);
static sfsistat skm_abort(SMFICTX *ctx);
static sfsistat skm_close(SMFICTX *ctx);
static int skm_verdict_ccert(skm_verdict_t *vd, const skm_ctx_t *c,
    skm_sk_t *sk, sk_cache_t *cache, const char *domain, sk_err_t *err);

struct smfiDesc  skm_filter = {
    SKM_PROG,                       /* filter name */
    SMFI_VERSION,
    SMFIF_ADDHDRS | SMFIF_CHGHDRS,  /* we add ours, remove forged ones */
    NULL,                           /* connect */
    NULL,                           /* helo */
    skm_envfrom,
    NULL,                           /* envrcpt */
    skm_header,
    NULL,                           /* eoh */
    NULL,                           /* body */
    skm_eom,
    skm_abort,
    skm_close,
    NULL,                           /* unknown */
    skm_data,
    skm_negotiate
};


static sfsistat
skm_negotiate(SMFICTX *ctx, unsigned long f0, unsigned long f1,
    unsigned long f2, unsigned long f3, unsigned long *pf0,
    unsigned long *pf1, unsigned long *pf2, unsigned long *pf3)
{
    skm_ctx_t      *c;
    unsigned long   want;

    (void) f2;
    (void) f3;
    if ((f0 & (SMFIF_ADDHDRS | SMFIF_CHGHDRS))
        != (SMFIF_ADDHDRS | SMFIF_CHGHDRS))
    {
        skm_log(LOG_ERR, "MTA cannot add and change headers: refusing");
        return SMFIS_REJECT;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return SMFIS_TEMPFAIL;
    }
    want = SMFIP_NOCONNECT | SMFIP_NOHELO | SMFIP_NORCPT | SMFIP_NOBODY
           | SMFIP_NOEOH | SMFIP_NOUNKNOWN | SMFIP_NR_HDR
           | SMFIP_NR_MAIL;
    *pf0 = SMFIF_ADDHDRS | SMFIF_CHGHDRS;
    *pf1 = want & f1;
    *pf2 = 0;
    *pf3 = 0;
    c->nr_hdr = (*pf1 & SMFIP_NR_HDR) != 0;
    c->nr_mail = (*pf1 & SMFIP_NR_MAIL) != 0;
    smfi_setpriv(ctx, c);
    (void) smfi_setsymlist(ctx, SMFIM_ENVFROM, SKM_MAIL_MACROS);
    (void) smfi_setsymlist(ctx, SMFIM_EOM, "i");
    return SMFIS_CONTINUE;
}


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


static void
skm_ctx_reset(skm_ctx_t *c)
{
    if (c->inmsg) {
        __atomic_sub_fetch(&skm_busy, 1, __ATOMIC_SEQ_CST);
        c->inmsg = 0;
    }
    free(c->forged);
    c->forged = NULL;
    c->nforged = 0;
    c->toomany = 0;
    c->nar = 0;
    c->nfrom = 0;
    c->mailfrom[0] = '\0';
    c->hdrfrom[0] = '\0';
    c->tls[0] = '\0';
    c->macros = 0;
    memset(&c->ccert, 0, sizeof(c->ccert));
}


/*
 * DATA has nothing to decide, but it is answered on purpose: Postfix sends
 * the DATA macros even for a skipped event, and over TCP the first header
 * packet then waited under Nagle for our delayed ACK of them, ~40 ms a
 * message (docs/benchmarks.md, "Milter").  The reply carries the ACK.
 */
static sfsistat
skm_data(SMFICTX *ctx)
{
    (void) ctx;
    return SMFIS_CONTINUE;
}


static sfsistat
skm_envfrom(SMFICTX *ctx, char **argv)
{
    skm_ctx_t   *c;
    const char  *v;

    c = smfi_getpriv(ctx);
    if (c == NULL) {
        return SMFIS_TEMPFAIL;
    }
    skm_ctx_reset(c);
    c->inmsg = 1;
    __atomic_add_fetch(&skm_busy, 1, __ATOMIC_SEQ_CST);
    if (argv[0] != NULL) {
        skm_addr_domain(c->mailfrom, argv[0]);
    }
    v = smfi_getsymval(ctx, "{tls_version}");
    if (v != NULL && v[0] != '\0') {
        snprintf(c->tls, sizeof(c->tls), "%s", v);
    }
    c->macros = v != NULL || smfi_getsymval(ctx, "{daemon_name}") != NULL
                || smfi_getsymval(ctx, "{client_addr}") != NULL;
    return c->nr_mail ? SMFIS_NOREPLY : SMFIS_CONTINUE;
}


static sfsistat
skm_header(SMFICTX *ctx, char *name, char *value)
{
    skm_ctx_t   *c;
    skm_conf_t  *conf;
    unsigned    *v;

    c = smfi_getpriv(ctx);
    if (c == NULL) {
        return SMFIS_TEMPFAIL;
    }
    if (strcasecmp(name, "From") == 0) {
        if (c->nfrom++ == 0) {
            skm_addr_domain(c->hdrfrom, value);
        }
    } else if (strcasecmp(name, SKM_AR) == 0) {
        c->nar++;
        conf = skm_conf_acquire();
        if (skm_ar_is_ours(value, strlen(value), conf->authservid)) {
            if (c->nforged >= SKM_AR_MAX) {
                c->toomany = 1;
            } else {
                v = realloc(c->forged, (c->nforged + 1) * sizeof(*v));
                if (v == NULL) {
                    c->toomany = 1;
                } else {
                    c->forged = v;
                    c->forged[c->nforged++] = c->nar;
                }
            }
        }
        skm_conf_release(conf);
    }
    return c->nr_hdr ? SMFIS_NOREPLY : SMFIS_CONTINUE;
}


/* The verdict for one domain; -1 on a lookup failure (err set). */
static int
skm_verdict_domain(skm_verdict_t *vd, const skm_conf_t *conf,
    const skm_ctx_t *c, const char *domain, sk_err_t *err)
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
skm_verdict_ccert(skm_verdict_t *vd, const skm_ctx_t *c, skm_sk_t *sk,
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
skm_verdict(skm_verdict_t *vd, const skm_conf_t *conf, const skm_ctx_t *c,
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


static sfsistat
skm_eom(SMFICTX *ctx)
{
    skm_ctx_t      *c;
    skm_conf_t     *conf;
    skm_verdict_t   vd;
    sk_err_t        err;
    const char     *qid;
    char            hdr[1024];
    size_t          i;
    sfsistat        rc;

    c = smfi_getpriv(ctx);
    if (c == NULL) {
        return SMFIS_TEMPFAIL;
    }
    qid = smfi_getsymval(ctx, "i");
    if (qid == NULL) {
        qid = "NOQUEUE";
    }
    conf = skm_conf_acquire();
    rc = SMFIS_CONTINUE;

    if (c->toomany) {
        skm_log(LOG_NOTICE, "%s: more than %d forged %s headers",
            qid, SKM_AR_MAX, SKM_AR);
        smfi_setreply(ctx, "550", "5.7.1", "sk-milter: too many forged "
            SKM_AR " headers");
        rc = SMFIS_REJECT;
        goto done;
    }
    if (conf->ccertsocket != NULL) {
        skm_ccert_take(&c->ccert, qid);
    }
    if (skm_verdict(&vd, conf, c, &err) != 0) {
        skm_log(LOG_WARNING, "%s: sovereign key lookup failed: %s", qid,
            err.msg);
        smfi_setreply(ctx, "451", "4.7.0", "sk-milter: sovereign key "
            "lookup failed, try again later");
        rc = SMFIS_TEMPFAIL;
        goto done;
    }
    skm_log(LOG_INFO, "%s: sk=%s (%s) smtp.mailfrom=%s header.from=%s", qid,
        skm_result_names[vd.result], vd.reason,
        c->mailfrom[0] ? c->mailfrom : "-", c->hdrfrom[0] ? c->hdrfrom : "-");

    if (conf->mode == SKM_MODE_REJECT && vd.result == SKM_R_FAIL) {
        snprintf(hdr, sizeof(hdr), "sk-milter: sovereign key policy: %s",
            vd.reason);
        smfi_setreply(ctx, "550", "5.7.1", hdr);
        rc = SMFIS_REJECT;
        goto done;
    }
    if (conf->mode == SKM_MODE_REJECT && vd.result == SKM_R_PERMERROR) {
        snprintf(hdr, sizeof(hdr), "sk-milter: cannot check: %s", vd.reason);
        smfi_setreply(ctx, "451", "4.7.0", hdr);
        rc = SMFIS_TEMPFAIL;
        goto done;
    }

    /* Remove forged results last first, so earlier indexes still hold. */
    for (i = c->nforged; i > 0; i--) {
        if (smfi_chgheader(ctx, SKM_AR, (int) c->forged[i - 1], NULL)
            != MI_SUCCESS)
        {
            skm_log(LOG_ERR, "%s: cannot remove a forged %s header", qid,
                SKM_AR);
            rc = SMFIS_TEMPFAIL;
            goto done;
        }
    }
    snprintf(hdr, sizeof(hdr), "%s;\n\tsk=%s (%s)%s%s%s%s",
        conf->authservid, skm_result_names[vd.result], vd.reason,
        c->mailfrom[0] ? "\n\tsmtp.mailfrom=" : "", c->mailfrom,
        c->hdrfrom[0] ? "\n\theader.from=" : "", c->hdrfrom);
    if (smfi_insheader(ctx, 1, SKM_AR, hdr) != MI_SUCCESS) {
        skm_log(LOG_ERR, "%s: cannot add the %s header", qid, SKM_AR);
        rc = SMFIS_TEMPFAIL;
    }

done:
    skm_conf_release(conf);
    skm_ctx_reset(c);
    return rc;
}


static sfsistat
skm_abort(SMFICTX *ctx)
{
    skm_ctx_t  *c;

    c = smfi_getpriv(ctx);
    if (c != NULL) {
        skm_ctx_reset(c);
    }
    return SMFIS_CONTINUE;
}


static sfsistat
skm_close(SMFICTX *ctx)
{
    skm_ctx_t  *c;

    c = smfi_getpriv(ctx);
    if (c != NULL) {
        skm_ctx_reset(c);
        free(c);
        smfi_setpriv(ctx, NULL);
    }
    return SMFIS_CONTINUE;
}
