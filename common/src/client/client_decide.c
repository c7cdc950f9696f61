/*
 * client_decide.c -- the client's decision for one connection: given the
 * name's record, the service and the chain the server presented.
 *
 *   none      no SK in force for the name, or it does not cover the
 *             service: ordinary authentication applies
 *   insecure  the SK covers the service, offered without TLS: refuse
 *   reject    the SK covers the service and the chain has no carrier
 *             that the SK signed for this server's key, now, for this
 *             name and service: refuse, whatever CA issued the chain
 *   accept    it has one: the SK vouches for the server's key
 *
 * Delegation: a carrier may certify the key of a CA certificate in the
 * chain instead of the leaf's; the chain from the leaf up to that
 * certificate must then hold (each signed by the next, a CA).
 *
 * Mail (sk_client_decide_mx): the name is the recipient domain, the host
 * one of its MX hosts; the domain's SK cross-signs the host, or the
 * domain's "mx=" patterns name it and the host's own SK does.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <sk/client.h>
#include <sk/carrier.h>
#include <sk/services.h>


const char *
sk_decision_name(sk_decision_t d)
{
    switch (d) {
    case SK_DECIDE_ACCEPT:   return "accept";
    case SK_DECIDE_REJECT:   return "reject";
    case SK_DECIDE_NONE:     return "none";
    case SK_DECIDE_INSECURE: return "insecure";
    }
    return "?";
}


const char *
sk_client_check_name(sk_err_code_t code)
{
    switch (code) {
    case SK_ERR_WRONG_SK:      return "wrong-sk";
    case SK_ERR_SIGNATURE:     return "signature";
    case SK_ERR_KEY_MISMATCH:  return "key-mismatch";
    case SK_ERR_EXPIRED:       return "expired";
    case SK_ERR_NOT_YET_VALID: return "not-yet-valid";
    case SK_ERR_NOT_FOUND:     return "no-carrier";
    case SK_ERR_FORMAT:        return "malformed-carrier";
    default:                   return sk_err_str(code);
    }
}


static void
sk_decide_set(sk_decide_t *d, sk_decision_t dec, const char *check,
    const char *fmt, ...) SK_PRINTF(4, 5);

static void
sk_decide_set(sk_decide_t *d, sk_decision_t dec, const char *check,
    const char *fmt, ...)
{
    va_list  ap;

    d->decision = dec;
    d->check = check;
    va_start(ap, fmt);
    vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
    va_end(ap);
}


/* DER SPKI of x, OPENSSL_malloc()ed. */
static int
sk_decide_spki(unsigned char **spki, size_t *len, X509 *x, sk_err_t *err)
{
    int  n;

    *spki = NULL;
    n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), spki);
    if (n <= 0) {
        return sk_err_crypto(err, "cannot encode a certificate's key");
    }
    *len = (size_t) n;
    return 0;
}


/* Certificate j of the chain (below a delegated CA) is valid at now. */
static int
sk_decide_in_time(X509 *x, int j, time_t now, sk_err_t *err)
{
    time_t  t = now;

    if (X509_cmp_time(X509_get0_notBefore(x), &t) >= 0) {
        return sk_err_set(err, SK_ERR_NOT_YET_VALID, "delegated chain: "
            "certificate %d is not valid yet", j);
    }
    if (X509_cmp_time(X509_get0_notAfter(x), &t) <= 0) {
        return sk_err_set(err, SK_ERR_EXPIRED, "delegated chain: "
            "certificate %d has expired", j);
    }
    return 0;
}


/* The carrier certifies chain[i] (i >= 1), a CA, and chain[0..i] holds,
 * each certificate below it valid now. */
static int
sk_decide_delegated(const sk_carrier_t *c, STACK_OF(X509) *chain,
    const sk_key_t *sk, time_t now, sk_err_t *err)
{
    const unsigned char  *want;
    unsigned char        *spki;
    size_t                wlen, len = 0;
    int                   i, j, n = sk_X509_num(chain), same;
    EVP_PKEY             *up;

    want = sk_carrier_subject_spki(c, &wlen);
    for (i = 1; i < n; i++) {
        if (X509_cmp(sk_X509_value(chain, i), sk_carrier_get0_x509(c)) == 0) {
            continue;           /* the carrier itself certifies its key */
        }
        if (sk_decide_spki(&spki, &len, sk_X509_value(chain, i), err) != 0) {
            return -1;
        }
        same = len == wlen && memcmp(spki, want, len) == 0;
        if (!same) {
            OPENSSL_free(spki);
            continue;
        }
        /* Carrier checks (signature, dates) against this key. */
        if (sk_carrier_verify(c, sk, spki, len, now, err) != 0) {
            OPENSSL_free(spki);
            return -1;
        }
        OPENSSL_free(spki);
        if (X509_check_ca(sk_X509_value(chain, i)) == 0) {
            return sk_err_set(err, SK_ERR_KEY_MISMATCH, "carrier for %s: "
                "certifies chain certificate %d, which is not a CA",
                sk_carrier_name(c), i);
        }
        for (j = 0; j < i; j++) {
            up = X509_get0_pubkey(sk_X509_value(chain, j + 1));
            if (up == NULL || X509_verify(sk_X509_value(chain, j), up) != 1) {
                return sk_err_set(err, SK_ERR_KEY_MISMATCH, "carrier for "
                    "%s: delegates to chain certificate %d, but certificate "
                    "%d is not signed by certificate %d", sk_carrier_name(c),
                    i, j, j + 1);
            }
            if (sk_decide_in_time(sk_X509_value(chain, j), j, now, err)
                != 0)
            {
                return -1;
            }
        }
        return 0;
    }
    return sk_err_set(err, SK_ERR_KEY_MISMATCH, "no certificate of the chain "
        "has the key the carrier certifies");
}


/* The carrier's own Services and name cover what is used. */
static int
sk_decide_scope(sk_decide_t *d, const sk_carrier_t *c,
    const sk_record_t *rec, const char *host, const char *service,
    unsigned port)
{
    sk_services_t  svcs;
    const char    *cs = sk_carrier_services(c);
    int            covers;

    if (!sk_name_covers(sk_carrier_name(c), rec->include_subdomains, host)) {
        sk_decide_set(d, SK_DECIDE_REJECT, "carrier-name", "carrier is for "
            "%s, not %s", sk_carrier_name(c), host);
        return -1;
    }
    if (sk_services_parse(&svcs, cs, strlen(cs), NULL) != 0) {
        sk_decide_set(d, SK_DECIDE_REJECT, "malformed-carrier", "carrier "
            "services \"%.64s\" do not parse", cs);
        return -1;
    }
    covers = sk_services_covers(&svcs, service, port);
    sk_services_free(&svcs);
    if (!covers) {
        sk_decide_set(d, SK_DECIDE_REJECT, "carrier-services", "carrier for "
            "%s covers \"%.64s\", not %s", sk_carrier_name(c), cs, service);
        return -1;
    }
    return 0;
}


/* The carrier checks (rows 5 to 10) for host's chain under rec, whose
 * SK owner holds ("OWNER has an SK ..." in reasons). */
static int
sk_decide_chain(sk_decide_t *d, const sk_record_t *rec, const char *owner,
    const char *host, const char *service, unsigned port,
    STACK_OF(X509) *chain, time_t now, sk_err_t *err)
{
    sk_carrier_t   *c;
    unsigned char  *spki;
    size_t          len = 0;
    sk_err_t        e;
    struct tm       tm;
    char            date[32];
    int             rc;

    if (sk_carrier_find(&c, chain, &e) != 0) {
        sk_decide_set(d, SK_DECIDE_REJECT, sk_client_check_name(e.code),
            "%s has an SK (%s) for %s, but %s", owner, d->sk, service,
            e.code == SK_ERR_NOT_FOUND ? "the server presented no carrier "
            "(no cross-signature in the chain)" : e.msg);
        return 0;
    }
    if (sk_decide_spki(&spki, &len, sk_X509_value(chain, 0), err) != 0) {
        sk_carrier_free(c);
        return -1;
    }
    rc = sk_carrier_verify(c, rec->key, spki, len, now, &e);
    OPENSSL_free(spki);
    if (rc != 0 && e.code == SK_ERR_KEY_MISMATCH) {
        sk_err_t  e2;

        if (sk_decide_delegated(c, chain, rec->key, now, &e2) == 0) {
            rc = 0;
        } else if (e2.code != SK_ERR_KEY_MISMATCH
                   || strstr(e2.msg, "no certificate") == NULL)
        {
            e = e2;
        }
    }
    if (rc != 0) {
        sk_decide_set(d, SK_DECIDE_REJECT, sk_client_check_name(e.code),
            "%s has an SK (%s) for %s: %s", owner, d->sk, service, e.msg);
    } else if (sk_decide_scope(d, c, rec, host, service, port) == 0) {
        d->not_after = sk_carrier_not_after(c);
        gmtime_r(&d->not_after, &tm);
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
        sk_decide_set(d, SK_DECIDE_ACCEPT, "carrier", "carrier for %s by "
            "the SK in force (%s) certifies the server's key for %s, valid "
            "until %s", sk_carrier_name(c), d->sk, service, date);
    }
    sk_carrier_free(c);
    return 0;
}


int
sk_client_decide(sk_decide_t *d, const sk_record_t *rec, const char *host,
    const char *service, unsigned port, STACK_OF(X509) *chain, time_t now,
    sk_err_t *err)
{
    const char  *bound;

    memset(d, 0, sizeof(*d));
    if (rec == NULL || rec->state == SK_RECORD_NONE) {
        sk_decide_set(d, SK_DECIDE_NONE, "no-sk", "no SK is known for %s",
            host);
        return 0;
    }
    bound = sk_entry_name(rec->entry);
    if (rec->state == SK_RECORD_UNBOUND) {
        sk_decide_set(d, SK_DECIDE_NONE, "unbound", "the SK of %s was "
            "revoked (Unbind) and not rebound", bound);
        return 0;
    }
    sk_key_fingerprint(d->sk, rec->key);
    if (bound == NULL || !sk_name_covers(bound, rec->include_subdomains,
            host))
    {
        sk_decide_set(d, SK_DECIDE_NONE, "not-covered", "the SK of %s does "
            "not cover %s", bound != NULL ? bound : "?", host);
        return 0;
    }
    if (!sk_services_covers(&rec->services, service, port)) {
        sk_decide_set(d, SK_DECIDE_NONE, "not-covered", "the SK of %s (%s) "
            "does not cover %s%s%.0u", bound, d->sk, service,
            port != 0 ? ":" : "", port);
        return 0;
    }
    if (chain == NULL) {
        sk_decide_set(d, SK_DECIDE_INSECURE, "plaintext", "%s has an SK "
            "(%s) for %s: the service must not be used without TLS", host,
            d->sk, service);
        return 0;
    }
    if (sk_X509_num(chain) == 0) {
        return sk_err_set(err, SK_ERR_USAGE, "empty chain");
    }
    return sk_decide_chain(d, rec, host, host, service, port, chain, now,
        err);
}


const char *
sk_client_mx_pattern(const sk_record_t *rec, const char *host,
    unsigned port)
{
    const sk_service_t  *sv;
    size_t               i;

    if (rec == NULL || rec->state != SK_RECORD_BOUND) {
        return NULL;
    }
    sv = sk_services_find(&rec->services, "smtp", port);
    for (i = 0; sv != NULL && i < sv->nmx; i++) {
        if (sk_services_mx_match(sv->mx[i], host)) {
            return sv->mx[i];
        }
    }
    return NULL;
}


/* host matches domain's pattern: its own SK must vouch for its key. */
static int
sk_decide_mx_host(sk_decide_t *d, const char *domain, const char *pattern,
    const char *host, unsigned port, const sk_record_t *hostrec,
    STACK_OF(X509) *chain, time_t now, sk_err_t *err)
{
    sk_decide_t  h;

    if (sk_client_decide(&h, hostrec, host, "smtp", port, chain, now, err)
        != 0)
    {
        return -1;
    }
    memcpy(d->sk, h.sk, sizeof(d->sk));
    if (h.decision == SK_DECIDE_NONE) {
        sk_decide_set(d, SK_DECIDE_REJECT, "mx-no-sk", "%s matches %s's "
            "mx=%s, but no SK vouches for its key: %s", host, domain,
            pattern, h.reason);
        return 0;
    }
    d->not_after = h.not_after;
    sk_decide_set(d, h.decision, h.check, "%s matches %s's mx=%s: %s",
        host, domain, pattern, h.reason);
    return 0;
}


int
sk_client_decide_mx(sk_decide_t *d, const sk_record_t *rec,
    const char *domain, const char *host, unsigned port,
    const sk_record_t *hostrec, STACK_OF(X509) *chain, time_t now,
    sk_err_t *err)
{
    const sk_service_t  *sv;
    const char          *bound, *pattern;
    char                 why[sizeof(d->reason)];

    if (rec == NULL || rec->state != SK_RECORD_BOUND) {
        return sk_client_decide(d, rec, domain, "smtp", port, chain, now,
            err);
    }
    memset(d, 0, sizeof(*d));
    sk_key_fingerprint(d->sk, rec->key);
    bound = rec->entry != NULL ? sk_entry_name(rec->entry) : NULL;
    if ((bound != NULL
         && !sk_name_covers(bound, rec->include_subdomains, domain))
        || !sk_services_covers(&rec->services, "smtp", port))
    {
        return sk_client_decide(d, rec, domain, "smtp", port, chain, now,
            err);
    }
    if (chain == NULL) {
        sk_decide_set(d, SK_DECIDE_INSECURE, "plaintext", "%s has an SK "
            "(%s) for smtp: %s must not receive its mail without TLS",
            domain, d->sk, host);
        return 0;
    }
    if (sk_X509_num(chain) == 0) {
        return sk_err_set(err, SK_ERR_USAGE, "empty chain");
    }
    /* The domain's own SK cross-signs its MX host. */
    if (sk_decide_chain(d, rec, domain, host, "smtp", port, chain, now, err)
        != 0)
    {
        return -1;
    }
    if (d->decision == SK_DECIDE_ACCEPT) {
        return 0;
    }
    pattern = sk_client_mx_pattern(rec, host, port);
    if (pattern != NULL) {
        return sk_decide_mx_host(d, domain, pattern, host, port, hostrec,
            chain, now, err);
    }
    sv = sk_services_find(&rec->services, "smtp", port);
    if (sv != NULL && sv->nmx > 0) {
        snprintf(why, sizeof(why), "%s", d->reason);
        snprintf(d->reason, sizeof(d->reason), "%.400s; and %s matches none "
            "of %s's mx= patterns", why, host, domain);
    }
    return 0;
}
