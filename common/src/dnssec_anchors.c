/*
 * dnssec_anchors.c -- the root's DNSSEC trust anchors and the times they
 * are in force (sk/dnssec.h, docs/protocol.md "Trust anchors and
 * rollovers").  Two forms:
 *
 *   DS or DNSKEY records of ".", zone-file text (Debian's dns-root-data
 *   root.ds and root.key): in force at any time, read with libldns;
 *
 *   IANA's root-anchors.xml (RFC 7958, RFC 9718): each KeyDigest a DS in
 *   force from validFrom until validUntil, read with expat and held to
 *   the schema here: the elements in order, each once, no other element
 *   or attribute, no DTD, every value checked.
 *
 * A rollover is thus judged at each Bind's Timestamp: the old key backs
 * the Binds stamped in its window, the new one those stamped in its own.
 */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <expat.h>

#include "sk/file.h"
#include "dnssec_int.h"

#define SK_ANCHORS_FILE_MAX   (256 * 1024)
#define SK_ANCHORS_MAX        64        /* anchors in one file */
#define SK_ANCHORS_TEXT_MAX   2048      /* one element's text */
#define SK_ANCHORS_DEPTH_MAX  3         /* TrustAnchor, KeyDigest, leaf */

typedef struct {
    ldns_rr  *rr;           /* DS or DNSKEY of "." */
    int64_t   from, until;  /* [from, until); INT64_MIN, INT64_MAX: open */
    int       dated;        /* from root-anchors.xml */
} sk_dnssec_anchor_t;

struct sk_dnssec_anchors_s {
    sk_dnssec_anchor_t  *a;
    size_t               n;
    char                 path[256];     /* for messages */
};


void
sk_dnssec_anchors_free(sk_dnssec_anchors_t *a)
{
    size_t  i;

    if (a == NULL) {
        return;
    }
    for (i = 0; i < a->n; i++) {
        ldns_rr_free(a->a[i].rr);
    }
    free(a->a);
    free(a);
}


/* Take rr (freed on failure) as the next anchor. */
static int
sk_anchors_add(sk_dnssec_anchors_t *a, ldns_rr *rr, int64_t from,
    int64_t until, int dated, sk_err_t *err)
{
    sk_dnssec_anchor_t  *p;

    if (a->n == SK_ANCHORS_MAX) {
        ldns_rr_free(rr);
        return sk_err_set(err, SK_ERR_FORMAT, "%s: more than %d anchors",
            a->path, SK_ANCHORS_MAX);
    }
    p = realloc(a->a, (a->n + 1) * sizeof(*p));
    if (p == NULL) {
        ldns_rr_free(rr);
        return sk_err_set(err, SK_ERR_NOMEM, "%s", a->path);
    }
    a->a = p;
    p[a->n].rr = rr;
    p[a->n].from = from;
    p[a->n].until = until;
    p[a->n].dated = dated;
    a->n++;
    return 0;
}


/* "2024-07-18T00:00:00Z" */
static void
sk_anchors_time(char out[32], int64_t t)
{
    struct tm  tm;
    time_t     tt = (time_t) t;

    if (gmtime_r(&tt, &tm) == NULL
        || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    {
        snprintf(out, 32, "%" PRId64, t);
    }
}


/* The zone-file form: DS or DNSKEY records of ".", and only those, read
 * RR by RR (ldns's zone reader leaks the RRs read before an error). */
static int
sk_anchors_zone(sk_dnssec_anchors_t *a, const char *buf, size_t len,
    sk_err_t *err)
{
    ldns_rdf     *origin = NULL, *prev = NULL;
    ldns_rr      *rr;
    ldns_rr_type  t;
    ldns_status   st;
    uint32_t      ttl = 3600;
    FILE         *f;
    int           line = 0, rc = 0;

    f = fmemopen((void *) buf, len, "r");
    if (f == NULL) {
        return sk_err_sys(err, "%s", a->path);
    }
    while (rc == 0 && !feof(f)) {
        rr = NULL;
        st = ldns_rr_new_frm_fp_l(&rr, f, &ttl, &origin, &prev, &line);
        if (st == LDNS_STATUS_SYNTAX_EMPTY || st == LDNS_STATUS_SYNTAX_TTL
            || st == LDNS_STATUS_SYNTAX_ORIGIN)
        {
            continue;
        }
        if (st != LDNS_STATUS_OK) {
            rc = sk_err_set(err, SK_ERR_FORMAT, "%s: line %d: %s", a->path,
                line, ldns_get_errorstr_by_id(st));
            break;
        }
        t = ldns_rr_get_type(rr);
        if ((t != LDNS_RR_TYPE_DS && t != LDNS_RR_TYPE_DNSKEY)
            || ldns_dname_label_count(ldns_rr_owner(rr)) != 0
            || ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN)
        {
            ldns_rr_free(rr);
            rc = sk_err_set(err, SK_ERR_FORMAT, "%s: line %d: want a DS or "
                "DNSKEY record of the root, and only those", a->path, line);
            break;
        }
        rc = sk_anchors_add(a, rr, INT64_MIN, INT64_MAX, 0, err);
    }
    fclose(f);
    ldns_rdf_deep_free(origin);
    ldns_rdf_deep_free(prev);
    if (rc == 0 && a->n == 0) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "%s: no DS or DNSKEY record of "
            "the root", a->path);
    }
    return rc;
}


/* root-anchors.xml, element by element. */

typedef enum {
    SK_AX_TRUST_ANCHOR = 0,
    SK_AX_ZONE,
    SK_AX_KEY_DIGEST,
    SK_AX_KEY_TAG,          /* then a KeyDigest's leaves, in their order */
    SK_AX_ALGORITHM,
    SK_AX_DIGEST_TYPE,
    SK_AX_DIGEST,
    SK_AX_PUBLIC_KEY,
    SK_AX_FLAGS,
    SK_AX_N
} sk_ax_elem_t;

static const char *const  sk_ax_names[SK_AX_N] = {
    "TrustAnchor", "Zone", "KeyDigest", "KeyTag", "Algorithm", "DigestType",
    "Digest", "PublicKey", "Flags"
};

typedef struct {
    XML_Parser            p;
    sk_dnssec_anchors_t  *a;
    sk_err_t             *err;
    int                   failed;
    unsigned              depth;
    sk_ax_elem_t          open[SK_ANCHORS_DEPTH_MAX];
    int                   zone;         /* Zone seen */
    sk_ax_elem_t          next;         /* a KeyDigest's next leaf */
    char                  text[SK_ANCHORS_TEXT_MAX + 1];
    size_t                tlen;
    /* the KeyDigest being read */
    char                  id[64];
    int64_t               from, until;
    unsigned long         tag, alg, dtype, flags;
    char                  digest[SK_ANCHORS_TEXT_MAX + 1];
    char                  pubkey[SK_ANCHORS_TEXT_MAX + 1];
} sk_ax_t;


static void
sk_ax_fail(sk_ax_t *x, const char *fmt, ...) SK_PRINTF(2, 3);

/* Refuse the file, naming its line (the first failure stands). */
static void
sk_ax_fail(sk_ax_t *x, const char *fmt, ...)
{
    char     msg[SK_ERR_MSG_MAX];
    va_list  ap;

    if (x->failed) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sk_err_set(x->err, SK_ERR_FORMAT, "%s: line %lu: %s", x->a->path,
        (unsigned long) XML_GetCurrentLineNumber(x->p), msg);
    x->failed = 1;
    XML_StopParser(x->p, XML_FALSE);
}


/* A decimal from 0 to max, no sign, no leading zero. */
static int
sk_ax_number(unsigned long *out, const char *s, unsigned long max)
{
    unsigned long  v = 0;
    size_t         i;

    if (s[0] == '\0' || (s[0] == '0' && s[1] != '\0') || strlen(s) > 10) {
        return -1;
    }
    for (i = 0; s[i] != '\0'; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (unsigned long) (s[i] - '0');
    }
    if (v > max) {
        return -1;
    }
    *out = v;
    return 0;
}


/* n digits at s as a number. */
static int
sk_ax_digits(int *out, const char *s, int n)
{
    int  i, v = 0;

    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}


/*
 * An xsd:dateTime with a time zone, as RFC 7958 writes them:
 * YYYY-MM-DDThh:mm:ss[.fff](Z|+hh:mm|-hh:mm); a fraction is cut.
 */
static int
sk_ax_datetime(int64_t *out, const char *s)
{
    static const int  mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
                                  30, 31 };
    struct tm         tm;
    const char       *p;
    int               y, mo, d, h, mi, sec, zh = 0, zm = 0, sign = 1, leap;
    time_t            t;

    if (strlen(s) < 20 || sk_ax_digits(&y, s, 4) != 0 || s[4] != '-'
        || sk_ax_digits(&mo, s + 5, 2) != 0 || s[7] != '-'
        || sk_ax_digits(&d, s + 8, 2) != 0 || s[10] != 'T'
        || sk_ax_digits(&h, s + 11, 2) != 0 || s[13] != ':'
        || sk_ax_digits(&mi, s + 14, 2) != 0 || s[16] != ':'
        || sk_ax_digits(&sec, s + 17, 2) != 0)
    {
        return -1;
    }
    leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1]
        || (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || sec > 59)
    {
        return -1;
    }
    p = s + 19;
    if (*p == '.') {
        for (p++; isdigit((unsigned char) *p); p++) {
        }
        if (p == s + 20) {
            return -1;
        }
    }
    if (*p == 'Z') {
        p++;
    } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':'
               && sk_ax_digits(&zh, p + 1, 2) == 0
               && sk_ax_digits(&zm, p + 4, 2) == 0 && zh <= 14 && zm <= 59)
    {
        sign = *p == '-' ? -1 : 1;
        p += 6;
    } else {
        return -1;
    }
    if (*p != '\0') {
        return -1;
    }
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = timegm(&tm);
    *out = (int64_t) t - sign * (int64_t) (zh * 3600 + zm * 60);
    return 0;
}


/* Each attribute of attrs (expat's, each given once) is one of names
 * (NULL-ended), whose first nreq are required; the values go to vals, in
 * names' order (NULL: not given). */
static int
sk_ax_attrs(sk_ax_t *x, const char *elem, const XML_Char **attrs,
    const char *const *names, size_t nreq, const char **vals)
{
    size_t  i, j;

    for (j = 0; names[j] != NULL; j++) {
        vals[j] = NULL;
    }
    for (i = 0; attrs[i] != NULL; i += 2) {
        for (j = 0; names[j] != NULL && strcmp(names[j], attrs[i]) != 0;
             j++)
        {
        }
        if (names[j] == NULL) {
            sk_ax_fail(x, "%s: unknown attribute \"%.40s\"", elem, attrs[i]);
            return -1;
        }
        vals[j] = attrs[i + 1];
    }
    for (j = 0; j < nreq; j++) {
        if (vals[j] == NULL) {
            sk_ax_fail(x, "%s: no %s attribute", elem, names[j]);
            return -1;
        }
    }
    return 0;
}


static void
sk_ax_key_digest_start(sk_ax_t *x, const XML_Char **attrs)
{
    static const char *const  names[] = { "id", "validFrom", "validUntil",
                                          NULL };
    const char               *v[3];

    if (sk_ax_attrs(x, "KeyDigest", attrs, names, 2, v) != 0) {
        return;
    }
    snprintf(x->id, sizeof(x->id), "%.40s", v[0]);
    if (sk_ax_datetime(&x->from, v[1]) != 0) {
        sk_ax_fail(x, "KeyDigest \"%s\": validFrom \"%.40s\" is not a "
            "dateTime with a time zone", x->id, v[1]);
        return;
    }
    x->until = INT64_MAX;
    if (v[2] != NULL && sk_ax_datetime(&x->until, v[2]) != 0) {
        sk_ax_fail(x, "KeyDigest \"%s\": validUntil \"%.40s\" is not a "
            "dateTime with a time zone", x->id, v[2]);
        return;
    }
    if (x->until <= x->from) {
        sk_ax_fail(x, "KeyDigest \"%s\": validUntil is not after validFrom",
            x->id);
        return;
    }
    x->next = SK_AX_KEY_TAG;
    x->flags = ULONG_MAX;
    x->pubkey[0] = '\0';
}


static sk_ax_elem_t
sk_ax_elem(const char *name)
{
    sk_ax_elem_t  e;

    for (e = 0; e < SK_AX_N && strcmp(sk_ax_names[e], name) != 0; e++) {
    }
    return e;
}


static void XMLCALL
sk_ax_start(void *data, const XML_Char *name, const XML_Char **attrs)
{
    static const char *const  ta[] = { "id", "source", NULL };
    sk_ax_t                  *x = data;
    sk_ax_elem_t              e = sk_ax_elem(name), up;
    const char               *v[2];

    if (x->failed) {
        return;
    }
    if (e == SK_AX_N) {
        sk_ax_fail(x, "unknown element <%.40s>", name);
        return;
    }
    up = x->depth > 0 ? x->open[x->depth - 1] : SK_AX_N;
    if (x->depth == 0 ? e != SK_AX_TRUST_ANCHOR
        : up == SK_AX_TRUST_ANCHOR ? e != (x->zone ? SK_AX_KEY_DIGEST
                                                   : SK_AX_ZONE)
        : up != SK_AX_KEY_DIGEST || e < SK_AX_KEY_TAG)
    {
        sk_ax_fail(x, "<%s> %s%s%s", name, x->depth == 0 ? "where "
            "<TrustAnchor> must be" : "not expected in <",
            x->depth == 0 ? "" : sk_ax_names[up], x->depth == 0 ? "" : ">");
        return;
    }
    if (up == SK_AX_KEY_DIGEST) {
        /* KeyTag, Algorithm, DigestType, Digest, [PublicKey], [Flags] */
        if (x->next == SK_AX_N) {
            sk_ax_fail(x, "KeyDigest \"%s\": <%s> after <Flags>", x->id,
                name);
            return;
        }
        if (e < x->next || (e != x->next && x->next <= SK_AX_DIGEST)) {
            sk_ax_fail(x, "KeyDigest \"%s\": <%s> where <%s> must be",
                x->id, name, sk_ax_names[x->next]);
            return;
        }
        x->next = e + 1;
    }
    if (e != SK_AX_TRUST_ANCHOR && e != SK_AX_KEY_DIGEST && attrs[0] != NULL)
    {
        sk_ax_fail(x, "%s: unknown attribute \"%.40s\"", name, attrs[0]);
        return;
    }
    if (e == SK_AX_TRUST_ANCHOR
        && sk_ax_attrs(x, "TrustAnchor", attrs, ta, 2, v) != 0)
    {
        return;
    }
    if (e == SK_AX_KEY_DIGEST) {
        sk_ax_key_digest_start(x, attrs);
    }
    x->open[x->depth++] = e;
    x->tlen = 0;
}


/* The hex digits of s, the length digest type dtype gives: 0. */
static int
sk_ax_hex(const char *s, unsigned long dtype)
{
    size_t  want = dtype == 1 ? 40 : dtype == 2 ? 64 : 96, i;

    if (strlen(s) != want) {
        return -1;
    }
    for (i = 0; i < want; i++) {
        if (!isxdigit((unsigned char) s[i])) {
            return -1;
        }
    }
    return 0;
}


/* A KeyDigest read whole: its DS, checked against PublicKey and Flags
 * when given. */
static void
sk_ax_key_digest_end(sk_ax_t *x)
{
    ldns_rr  *ds = NULL, *key = NULL;
    char      line[SK_ANCHORS_TEXT_MAX * 2 + 64];
    int       ok;

    if (x->next <= SK_AX_DIGEST) {
        sk_ax_fail(x, "KeyDigest \"%s\": no <%s>", x->id,
            sk_ax_names[x->next]);
        return;
    }
    if ((x->pubkey[0] != '\0') != (x->flags != ULONG_MAX)) {
        sk_ax_fail(x, "KeyDigest \"%s\": <PublicKey> and <Flags> come "
            "together or not at all", x->id);
        return;
    }
    snprintf(line, sizeof(line), ". IN DS %lu %lu %lu %s", x->tag, x->alg,
        x->dtype, x->digest);
    if (ldns_rr_new_frm_str(&ds, line, 3600, NULL, NULL) != LDNS_STATUS_OK)
    {
        sk_ax_fail(x, "KeyDigest \"%s\": not a DS record", x->id);
        return;
    }
    if (x->pubkey[0] != '\0') {
        snprintf(line, sizeof(line), ". IN DNSKEY %lu 3 %lu %s", x->flags,
            x->alg, x->pubkey);
        ok = ldns_rr_new_frm_str(&key, line, 3600, NULL, NULL)
                 == LDNS_STATUS_OK
             && ldns_calc_keytag(key) == x->tag
             && ldns_rr_compare_ds(ds, key);
        ldns_rr_free(key);
        if (!ok) {
            ldns_rr_free(ds);
            sk_ax_fail(x, "KeyDigest \"%s\": <PublicKey> and <Flags> are not "
                "the key its <KeyTag> and <Digest> name", x->id);
            return;
        }
    }
    if (sk_anchors_add(x->a, ds, x->from, x->until, 1, x->err) != 0) {
        x->failed = 1;
        XML_StopParser(x->p, XML_FALSE);
    }
}


/* A leaf's text, surrounding white space cut, into the KeyDigest. */
static void
sk_ax_leaf(sk_ax_t *x, sk_ax_elem_t e)
{
    static const unsigned long  max[] = { 65535, 255, 255 };
    unsigned long              *num[] = { &x->tag, &x->alg, &x->dtype };
    char                       *s = x->text, *end = x->text + x->tlen;

    while (s < end && isspace((unsigned char) *s)) {
        s++;
    }
    while (end > s && isspace((unsigned char) end[-1])) {
        end--;
    }
    *end = '\0';
    switch (e) {
    case SK_AX_ZONE:
        if (strcmp(s, ".") != 0) {
            sk_ax_fail(x, "<Zone> is \"%.40s\", not \".\"", s);
        }
        x->zone = 1;
        return;
    case SK_AX_KEY_TAG:
    case SK_AX_ALGORITHM:
    case SK_AX_DIGEST_TYPE:
        if (sk_ax_number(num[e - SK_AX_KEY_TAG], s, max[e - SK_AX_KEY_TAG])
            != 0)
        {
            sk_ax_fail(x, "KeyDigest \"%s\": <%s> \"%.40s\" is not a number "
                "from 0 to %lu", x->id, sk_ax_names[e], s,
                max[e - SK_AX_KEY_TAG]);
        } else if (e == SK_AX_DIGEST_TYPE && x->dtype != 1 && x->dtype != 2
                   && x->dtype != 4)
        {
            sk_ax_fail(x, "KeyDigest \"%s\": <DigestType> %lu is not SHA-1 "
                "(1), SHA-256 (2) or SHA-384 (4)", x->id, x->dtype);
        }
        return;
    case SK_AX_DIGEST:
        if (sk_ax_hex(s, x->dtype) != 0) {
            sk_ax_fail(x, "KeyDigest \"%s\": <Digest> is not %d hex digits",
                x->id, x->dtype == 1 ? 40 : x->dtype == 2 ? 64 : 96);
        }
        snprintf(x->digest, sizeof(x->digest), "%s", s);
        return;
    case SK_AX_PUBLIC_KEY:
        if (s[0] == '\0' || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijkl"
                "mnopqrstuvwxyz0123456789+/=") != strlen(s))
        {
            sk_ax_fail(x, "KeyDigest \"%s\": <PublicKey> is not base64",
                x->id);
        }
        snprintf(x->pubkey, sizeof(x->pubkey), "%s", s);
        return;
    case SK_AX_FLAGS:
        if (sk_ax_number(&x->flags, s, 65535) != 0) {
            sk_ax_fail(x, "KeyDigest \"%s\": <Flags> \"%.40s\" is not a "
                "number from 0 to 65535", x->id, s);
        }
        return;
    default:
        return;
    }
}


static void XMLCALL
sk_ax_end(void *data, const XML_Char *name)
{
    sk_ax_t       *x = data;
    sk_ax_elem_t   e;

    (void) name;
    if (x->failed) {
        return;
    }
    e = x->open[--x->depth];
    if (e == SK_AX_KEY_DIGEST) {
        sk_ax_key_digest_end(x);
    } else if (e == SK_AX_TRUST_ANCHOR) {
        if (!x->zone) {
            sk_ax_fail(x, "no <Zone>");
        } else if (x->a->n == 0) {
            sk_ax_fail(x, "no <KeyDigest>");
        }
    } else {
        sk_ax_leaf(x, e);
    }
    x->tlen = 0;
}


/* Text: in a leaf, kept; elsewhere white space only. */
static void XMLCALL
sk_ax_text(void *data, const XML_Char *s, int len)
{
    sk_ax_t       *x = data;
    sk_ax_elem_t   e;
    int            i;

    if (x->failed) {
        return;
    }
    e = x->depth > 0 ? x->open[x->depth - 1] : SK_AX_N;
    if (e == SK_AX_ZONE || e >= SK_AX_KEY_TAG) {
        if (x->tlen + (size_t) len > SK_ANCHORS_TEXT_MAX) {
            sk_ax_fail(x, "<%s>: more than %d bytes", sk_ax_names[e],
                SK_ANCHORS_TEXT_MAX);
            return;
        }
        memcpy(x->text + x->tlen, s, (size_t) len);
        x->tlen += (size_t) len;
        return;
    }
    for (i = 0; i < len; i++) {
        if (!isspace((unsigned char) s[i])) {
            sk_ax_fail(x, "text where only elements may be");
            return;
        }
    }
}


static void XMLCALL
sk_ax_doctype(void *data, const XML_Char *name, const XML_Char *sysid,
    const XML_Char *pubid, int internal)
{
    (void) name;
    (void) sysid;
    (void) pubid;
    (void) internal;
    sk_ax_fail(data, "a DOCTYPE is not allowed");
}


static void XMLCALL
sk_ax_pi(void *data, const XML_Char *target, const XML_Char *pi)
{
    (void) target;
    (void) pi;
    sk_ax_fail(data, "a processing instruction is not allowed");
}


static int
sk_anchors_xml(sk_dnssec_anchors_t *a, const char *buf, size_t len,
    sk_err_t *err)
{
    sk_ax_t  *x;
    int       rc = 0;

    x = calloc(1, sizeof(*x));
    if (x == NULL || (x->p = XML_ParserCreate("UTF-8")) == NULL) {
        free(x);
        return sk_err_set(err, SK_ERR_NOMEM, "%s", a->path);
    }
    x->a = a;
    x->err = err;
    XML_SetUserData(x->p, x);
    XML_SetElementHandler(x->p, sk_ax_start, sk_ax_end);
    XML_SetCharacterDataHandler(x->p, sk_ax_text);
    XML_SetStartDoctypeDeclHandler(x->p, sk_ax_doctype);
    XML_SetProcessingInstructionHandler(x->p, sk_ax_pi);
    if (XML_Parse(x->p, buf, (int) len, XML_TRUE) != XML_STATUS_OK
        && !x->failed)
    {
        rc = sk_err_set(err, SK_ERR_FORMAT, "%s: line %lu: %s", a->path,
            (unsigned long) XML_GetCurrentLineNumber(x->p),
            XML_ErrorString(XML_GetErrorCode(x->p)));
    }
    if (x->failed) {
        rc = -1;
    }
    XML_ParserFree(x->p);
    free(x);
    return rc;
}


int
sk_dnssec_anchors_parse(sk_dnssec_anchors_t **a, const char *buf,
    size_t len, const char *path, sk_err_t *err)
{
    size_t  i;
    int     rc;

    *a = calloc(1, sizeof(**a));
    if (*a == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s", path);
    }
    snprintf((*a)->path, sizeof((*a)->path), "%s", path);
    if (memchr(buf, '\0', len) != NULL) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "%s: a NUL byte", path);
    } else {
        for (i = 0; i < len && isspace((unsigned char) buf[i]); i++) {
        }
        rc = i < len && buf[i] == '<' ? sk_anchors_xml(*a, buf, len, err)
                                      : sk_anchors_zone(*a, buf, len, err);
    }
    if (rc != 0) {
        sk_dnssec_anchors_free(*a);
        *a = NULL;
    }
    return rc;
}


int
sk_dnssec_anchors_load(sk_dnssec_anchors_t **a, const char *path,
    sk_err_t *err)
{
    char    *buf;
    size_t   len;
    int      rc;

    *a = NULL;
    if (sk_file_read(&buf, &len, path, SK_ANCHORS_FILE_MAX, err) != 0) {
        return -1;
    }
    rc = sk_dnssec_anchors_parse(a, buf, len, path, err);
    free(buf);
    return rc;
}


int
sk_dnssec_anchors_at(ldns_rr_list **out, int *dated,
    const sk_dnssec_anchors_t *a, int64_t at, sk_err_t *err)
{
    size_t  i;

    *dated = 0;
    *out = ldns_rr_list_new();
    if (*out == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "dnssec anchors");
    }
    for (i = 0; i < a->n; i++) {
        if (a->a[i].from <= at && at < a->a[i].until) {
            if (!ldns_rr_list_push_rr(*out, a->a[i].rr)) {
                return sk_err_set(err, SK_ERR_NOMEM, "dnssec anchors");
            }
            *dated |= a->a[i].dated;
        }
    }
    return 0;
}


int
sk_dnssec_anchors_mismatch(const ldns_rr_list *keys,
    const sk_dnssec_anchors_t *a, int64_t at, int dated, sk_err_t *err)
{
    const sk_dnssec_anchor_t  *an;
    const ldns_rr             *key;
    sk_err_code_t              code = dated ? SK_ERR_SIGNATURE
                                            : SK_ERR_UNAVAILABLE;
    char                       when[32], from[32], until[32], tags[64];
    size_t                     i, j, n = 0;

    sk_anchors_time(when, at);
    tags[0] = '\0';
    for (i = 0; i < ldns_rr_list_rr_count(keys); i++) {
        key = ldns_rr_list_rr(keys, i);
        if (n < sizeof(tags) - 8) {
            n += (size_t) snprintf(tags + n, sizeof(tags) - n, "%s%u",
                i > 0 ? ", " : "", (unsigned) ldns_calc_keytag(key));
        }
        for (j = 0; j < a->n; j++) {
            an = &a->a[j];
            if (!ldns_rr_compare_ds(an->rr, key)) {
                continue;
            }
            /* Only a dated anchor is out of force at some time. */
            sk_anchors_time(from, an->from);
            if (an->until == INT64_MAX) {
                snprintf(until, sizeof(until), "(open)");
            } else {
                sk_anchors_time(until, an->until);
            }
            return sk_err_set(err, code, "dnssec chain: trust anchor "
                "mismatch: the root's DNSKEY RRset is signed by key %u, an "
                "anchor of %s from %s until %s, not at %s",
                (unsigned) ldns_calc_keytag(key), a->path, from, until,
                when);
        }
    }
    if (dated) {
        return sk_err_set(err, code, "dnssec chain: trust anchor mismatch: "
            "the root's DNSKEY RRset is signed by no key an anchor in force "
            "at %s names (keys %s; %s)", when, n > 0 ? tags : "none",
            a->path);
    }
    return sk_err_set(err, code, "dnssec chain: trust anchor mismatch: the "
        "root's DNSKEY RRset is signed by no key an anchor names (keys %s); "
        "%s gives no validity windows, so a key the root used before a "
        "rollover cannot be told from a forgery", n > 0 ? tags : "none",
        a->path);
}
