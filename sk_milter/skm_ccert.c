/*
 * skm_ccert.c -- inbound client certificates.
 *
 * Postfix gives a milter the client certificate's subject and issuer CN
 * only (and only for a CA-verified certificate), never its key.  Its
 * SMTPD policy delegation protocol does give the key's fingerprint
 * (ccert_pubkey_fingerprint), so ClientPolicySocket is such a policy
 * server, asked at DATA:
 *
 *     smtpd_tls_ask_ccert = yes
 *     smtpd_tls_fingerprint_digest = sha256
 *     smtpd_data_restrictions = check_policy_service inet:127.0.0.1:PORT
 *
 * It always answers DUNNO, and notes per queue id the fingerprint the
 * client presented (or that it presented none); at end of message the
 * milter, in the same process, takes the note for macro "i" and fails a
 * domain whose SK covers smtp when the presented key is not one its SK
 * cross-signs (a carrier for that key in the KeyCache, signed by the SK).
 *
 * Requests are "name=value" lines ended by an empty line, at most
 * SKM_CCERT_REQ_MAX bytes; anything else closes the connection.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <sk/cache.h>
#include <sk/carrier.h>
#include <sk/key.h>

#include "skm.h"

#define SKM_CCERT_REQ_MAX   16384
#define SKM_CCERT_SLOTS     4096    /* notes kept (messages in flight) */
#define SKM_CCERT_AGE       3600    /* a note older than this is stale */

typedef struct {
    char            qid[32];        /* "" if the slot is free */
    time_t          when;
    skm_ccert_t     cc;
} skm_ccert_note_t;

static pthread_mutex_t   skm_ccert_lock = PTHREAD_MUTEX_INITIALIZER;
static skm_ccert_note_t  skm_ccert_notes[SKM_CCERT_SLOTS];


size_t
skm_hash(const char *s, size_t buckets)
{
    size_t  h;

    for (h = 5381; *s != '\0'; s++) {
        h = h * 33 + (unsigned char) *s;
    }
    return h % buckets;
}


/* "AB:CD:..." (32 bytes) into out; -1 if it is not a SHA-256. */
int
skm_fpr_parse(unsigned char out[SK_SHA256_BYTES], const char *s)
{
    size_t  i;
    int     hi, lo;

    for (i = 0; i < SK_SHA256_BYTES; i++) {
        if (!isxdigit((unsigned char) s[0]) || !isxdigit((unsigned char) s[1])
            || s[2] != (i + 1 < SK_SHA256_BYTES ? ':' : '\0'))
        {
            return -1;
        }
        hi = isdigit((unsigned char) s[0]) ? s[0] - '0'
             : tolower((unsigned char) s[0]) - 'a' + 10;
        lo = isdigit((unsigned char) s[1]) ? s[1] - '0'
             : tolower((unsigned char) s[1]) - 'a' + 10;
        out[i] = (unsigned char) (hi << 4 | lo);
        s += 3;
    }
    return 0;
}


static void
skm_ccert_note(const char *qid, const char *fpr)
{
    skm_ccert_note_t  *n;

    if (qid[0] == '\0' || strlen(qid) >= sizeof(n->qid)) {
        return;
    }
    pthread_mutex_lock(&skm_ccert_lock);
    n = &skm_ccert_notes[skm_hash(qid, SKM_CCERT_SLOTS)];
    memset(n, 0, sizeof(*n));
    strcpy(n->qid, qid);
    n->when = time(NULL);
    if (fpr == NULL || fpr[0] == '\0') {
        n->cc.state = SKM_CCERT_NONE;
    } else if (skm_fpr_parse(n->cc.sha256, fpr) != 0) {
        n->cc.state = SKM_CCERT_BADDIGEST;
    } else {
        n->cc.state = SKM_CCERT_PRESENTED;
    }
    pthread_mutex_unlock(&skm_ccert_lock);
}


void
skm_ccert_take(skm_ccert_t *cc, const char *qid)
{
    skm_ccert_note_t  *n;

    memset(cc, 0, sizeof(*cc));
    cc->state = SKM_CCERT_UNKNOWN;
    pthread_mutex_lock(&skm_ccert_lock);
    n = &skm_ccert_notes[skm_hash(qid, SKM_CCERT_SLOTS)];
    if (n->qid[0] != '\0' && strcmp(n->qid, qid) == 0
        && time(NULL) - n->when < SKM_CCERT_AGE)
    {
        *cc = n->cc;
        n->qid[0] = '\0';
    }
    pthread_mutex_unlock(&skm_ccert_lock);
}


/* One Postfix connection: policy requests until EOF, idle or garbage. */
void
skm_ccert_conn(int fd)
{
    char         *buf, *p, *nl, *end, *eq;
    const char   *qid, *fpr, *why;
    size_t        len;
    ssize_t       n;
    static const char  dunno[] = "action=DUNNO\n\n";

    buf = malloc(SKM_CCERT_REQ_MAX + 1);
    if (buf == NULL) {
        return;
    }
    len = 0;
    for (;;) {
        buf[len] = '\0';
        end = strstr(buf, "\n\n");
        if (end == NULL) {
            if (len == SKM_CCERT_REQ_MAX) {
                why = "request too long";
                goto garbage;
            }
            n = read(fd, buf + len, SKM_CCERT_REQ_MAX - len);
            if (n <= 0) {
                break;
            }
            if (memchr(buf + len, '\0', (size_t) n) != NULL) {
                why = "NUL byte";
                goto garbage;
            }
            len += (size_t) n;
            continue;
        }
        qid = "";
        fpr = NULL;
        for (p = buf; p <= end; p = nl + 1) {
            nl = strchr(p, '\n');
            *nl = '\0';
            eq = strchr(p, '=');
            if (eq == NULL || eq == p) {
                why = "a line is not name=value";
                goto garbage;
            }
            *eq = '\0';
            if (strcmp(p, "queue_id") == 0) {
                qid = eq + 1;
            } else if (strcmp(p, "ccert_pubkey_fingerprint") == 0) {
                fpr = eq + 1;
            }
        }
        skm_ccert_note(qid, fpr);
        if (write(fd, dunno, sizeof(dunno) - 1) != sizeof(dunno) - 1) {
            break;
        }
        len -= (size_t) (end + 2 - buf);
        memmove(buf, end + 2, len);
    }
    free(buf);
    return;

garbage:
    skm_log(LOG_WARNING, "ClientPolicySocket: malformed request (%s): "
        "closing the connection", why);
    free(buf);
}


int
skm_ccert_crosssigned(const skm_ccert_t *cc, const sk_key_t *sk,
    sk_cache_t *cache, char *why, size_t whylen)
{
    sk_carrier_t         *car;
    const unsigned char  *spki;
    size_t                len;
    sk_err_t              err;
    int                   rc;

    if (cache == NULL) {
        snprintf(why, whylen, "client key not known to be cross-signed "
            "(no KeyCache)");
        return 0;
    }
    if (skm_cache_carrier(&car, cache, cc->sha256, &err) != 0) {
        snprintf(why, whylen, err.code == SK_ERR_NOT_FOUND
            ? "client key not cross-signed by the sovereign key"
            : "client key carrier lookup failed");
        return err.code == SK_ERR_NOT_FOUND ? 0 : -1;
    }
    /* the cache checked that the carrier certifies this very key */
    spki = sk_carrier_subject_spki(car, &len);
    rc = sk_carrier_verify(car, sk, spki, len, time(NULL), &err) == 0;
    if (!rc) {
        snprintf(why, whylen, "client key carrier: %.120s", err.msg);
    }
    sk_carrier_free(car);
    return rc;
}
