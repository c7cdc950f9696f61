/*
 * skm_ar.c -- the value of an Authentication-Results header field, RFC
 * 8601 section 2.2, parsed without I/O (unit-tested, fuzzed), so that a
 * forged result under our authserv-id is found in every form the grammar
 * allows, quoted, commented or folded:
 *
 *   authres-payload = [CFWS] authserv-id [ CFWS authres-version ]
 *                     ( no-result / 1*resinfo ) [CFWS]
 *   authserv-id     = value              ; RFC 2045: token / quoted-string
 *   authres-version = 1*DIGIT [CFWS]
 *   no-result       = [CFWS] ";" [CFWS] "none"
 *   resinfo         = [CFWS] ";" methodspec [ CFWS reasonspec ]
 *                     [ CFWS 1*propspec ]
 *   methodspec      = [CFWS] method [CFWS] "=" [CFWS] result
 *   method          = Keyword [ [CFWS] "/" [CFWS] method-version ]
 *   method-version  = 1*DIGIT [CFWS]
 *   reasonspec      = "reason" [CFWS] "=" [CFWS] value
 *   propspec        = ptype [CFWS] "." [CFWS] property [CFWS] "=" pvalue
 *   pvalue          = [CFWS] ( value / [ [ local-part ] "@" ] domain-name )
 *                     [CFWS]
 *
 * CFWS, comments (nested, with quoted-pairs), quoted strings and
 * local-part are RFC 5322's without the obsolete forms, with RFC 6532's
 * UTF-8 in comments and quoted strings; Keyword is RFC 5321's, domain-name
 * RFC 6376's.  A folded line breaks with CRLF or, as MTAs hand header
 * values to milters, with LF alone.  Keywords ("reason", "none", methods,
 * results, ptypes, properties) are case-insensitive.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "skm.h"

typedef struct {
    const unsigned char  *p;        /* the next byte */
    const unsigned char  *end;
    const char           *why;      /* the first error */
} skm_arc_t;

typedef struct {                    /* where a value's text goes */
    char    *buf;                   /* NULL: nowhere */
    size_t   cap;                   /* bytes buf holds, its NUL included */
    size_t   len;                   /* the whole text's length */
} skm_arout_t;


static int
skm_ar_fail(skm_arc_t *c, const char *why)
{
    if (c->why == NULL) {
        c->why = why;
    }
    return -1;
}


static void
skm_ar_put(skm_arout_t *o, const unsigned char *s, size_t n)
{
    size_t  room;

    if (o == NULL) {
        return;
    }
    if (o->buf != NULL && o->len + 1 < o->cap) {
        room = o->cap - 1 - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}


static int
skm_ar_alnum(unsigned ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
           || (ch >= '0' && ch <= '9');
}


static int
skm_ar_digit(unsigned ch)
{
    return ch >= '0' && ch <= '9';
}


/* RFC 2045: any CHAR except SPACE, CTLs, or tspecials. */
static int
skm_ar_tokenchar(unsigned ch)
{
    return ch > ' ' && ch < 127 && strchr("()<>@,;:\\\"/[]?=", (int) ch)
                                   == NULL;
}


/* RFC 5322 atext. */
static int
skm_ar_atext(unsigned ch)
{
    return skm_ar_alnum(ch) || (ch != 0 && strchr("!#$%&'*+-/=?^_`{|}~",
                                                  (int) ch) != NULL);
}


/* One UTF8-non-ascii character (RFC 3629), copied to o. */
static int
skm_ar_utf8(skm_arc_t *c, skm_arout_t *o)
{
    const unsigned char  *p;
    unsigned              lo, hi;
    size_t                n, i;

    p = c->p;
    lo = 0x80;
    hi = 0xbf;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 1;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 2;
        lo = p[0] == 0xe0 ? 0xa0 : 0x80;    /* no overlong forms */
        hi = p[0] == 0xed ? 0x9f : 0xbf;    /* no surrogates */
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 3;
        lo = p[0] == 0xf0 ? 0x90 : 0x80;
        hi = p[0] == 0xf4 ? 0x8f : 0xbf;    /* nothing past U+10FFFF */
    } else {
        return skm_ar_fail(c, "invalid UTF-8");
    }
    if ((size_t) (c->end - p) <= n) {
        return skm_ar_fail(c, "truncated UTF-8");
    }
    for (i = 1; i <= n; i++) {
        if (p[i] < lo || p[i] > hi) {
            return skm_ar_fail(c, "invalid UTF-8");
        }
        lo = 0x80;
        hi = 0xbf;
    }
    skm_ar_put(o, p, n + 1);
    c->p += n + 1;
    return 0;
}


/*
 * FWS: white space, and line breaks (CRLF or LF) each followed by white
 * space.  White space goes to o (unfolding drops the breaks).  1 if any
 * was skipped, 0 if none, -1 if a break is not followed by white space.
 */
static int
skm_ar_fws(skm_arc_t *c, skm_arout_t *o)
{
    const unsigned char  *start;
    size_t                n;

    start = c->p;
    for (;;) {
        if (c->p < c->end && (*c->p == ' ' || *c->p == '\t')) {
            skm_ar_put(o, c->p, 1);
            c->p++;
            continue;
        }
        n = c->p < c->end && *c->p == '\r' ? 1 : 0;
        if (c->p + n < c->end && c->p[n] == '\n') {
            n++;
            if (c->p + n < c->end && (c->p[n] == ' ' || c->p[n] == '\t')) {
                c->p += n;
                continue;
            }
            return skm_ar_fail(c, "line break not followed by white space");
        }
        if (n == 1) {
            return skm_ar_fail(c, "CR without LF");
        }
        return c->p != start;
    }
}


/* quoted-pair: "\" (VCHAR / WSP), the quoted character to o. */
static int
skm_ar_qpair(skm_arc_t *c, skm_arout_t *o)
{
    c->p++;
    if (c->p == c->end) {
        return skm_ar_fail(c, "\"\\\" at the end");
    }
    if (*c->p >= 0x80) {
        return skm_ar_utf8(c, o);
    }
    if (*c->p != ' ' && *c->p != '\t' && (*c->p <= ' ' || *c->p >= 127)) {
        return skm_ar_fail(c, "control character after \"\\\"");
    }
    skm_ar_put(o, c->p, 1);
    c->p++;
    return 0;
}


/* comment: "(" *([FWS] ccontent) [FWS] ")", nested; at "(". */
static int
skm_ar_comment(skm_arc_t *c)
{
    size_t  depth;

    depth = 0;
    do {
        if (skm_ar_fws(c, NULL) < 0) {
            return -1;
        }
        if (c->p == c->end) {
            return skm_ar_fail(c, "unterminated comment");
        }
        if (*c->p == '(') {
            depth++;
            c->p++;
        } else if (*c->p == ')') {
            depth--;
            c->p++;
        } else if (*c->p == '\\') {
            if (skm_ar_qpair(c, NULL) != 0) {
                return -1;
            }
        } else if (*c->p >= 0x80) {
            if (skm_ar_utf8(c, NULL) != 0) {
                return -1;
            }
        } else if (*c->p > ' ' && *c->p < 127) {
            c->p++;
        } else {
            return skm_ar_fail(c, "control character in a comment");
        }
    } while (depth > 0);
    return 0;
}


/* [CFWS]: 1 if any was skipped, 0 if none, -1 if malformed. */
static int
skm_ar_cfws(skm_arc_t *c)
{
    const unsigned char  *start;

    start = c->p;
    for (;;) {
        if (skm_ar_fws(c, NULL) < 0) {
            return -1;
        }
        if (c->p == c->end || *c->p != '(') {
            return c->p != start;
        }
        if (skm_ar_comment(c) != 0) {
            return -1;
        }
    }
}


/* quoted-string, its content (unfolded, quoted-pairs resolved) to o. */
static int
skm_ar_quoted(skm_arc_t *c, skm_arout_t *o)
{
    unsigned  ch;

    c->p++;
    for (;;) {
        if (skm_ar_fws(c, o) < 0) {
            return -1;
        }
        if (c->p == c->end) {
            return skm_ar_fail(c, "unterminated quoted-string");
        }
        ch = *c->p;
        if (ch == '"') {
            c->p++;
            return 0;
        }
        if (ch == '\\') {
            if (skm_ar_qpair(c, o) != 0) {
                return -1;
            }
        } else if (ch >= 0x80) {
            if (skm_ar_utf8(c, o) != 0) {
                return -1;
            }
        } else if (ch > ' ' && ch < 127) {
            skm_ar_put(o, c->p, 1);
            c->p++;
        } else {
            return skm_ar_fail(c, "control character in a quoted-string");
        }
    }
}


/* value (RFC 2045): token / quoted-string, its text to o. */
static int
skm_ar_value(skm_arc_t *c, skm_arout_t *o)
{
    const unsigned char  *start;

    if (c->p < c->end && *c->p == '"') {
        return skm_ar_quoted(c, o);
    }
    start = c->p;
    while (c->p < c->end && skm_ar_tokenchar(*c->p)) {
        c->p++;
    }
    if (c->p == start) {
        return skm_ar_fail(c, "expected a token or a quoted-string");
    }
    skm_ar_put(o, start, (size_t) (c->p - start));
    return 0;
}


/* Keyword (RFC 5321): Let-dig [Ldh-str]; *kw and *len give it. */
static int
skm_ar_keyword(skm_arc_t *c, const char **kw, size_t *len)
{
    const unsigned char  *start;

    start = c->p;
    if (c->p == c->end || !skm_ar_alnum(*c->p)) {
        return skm_ar_fail(c, "expected a keyword");
    }
    while (c->p < c->end && (skm_ar_alnum(*c->p) || *c->p == '-')) {
        c->p++;
    }
    if (c->p[-1] == '-') {
        return skm_ar_fail(c, "keyword ends with \"-\"");
    }
    *kw = (const char *) start;
    *len = (size_t) (c->p - start);
    return 0;
}


static int
skm_ar_is(const char *kw, size_t len, const char *word)
{
    return len == strlen(word) && strncasecmp(kw, word, len) == 0;
}


/* 1*DIGIT, its value in *n (saturating at 999999999). */
static int
skm_ar_number(skm_arc_t *c, long *n)
{
    if (c->p == c->end || !skm_ar_digit(*c->p)) {
        return skm_ar_fail(c, "expected a number");
    }
    *n = 0;
    while (c->p < c->end && skm_ar_digit(*c->p)) {
        *n = *n >= 99999999 ? 999999999 : *n * 10 + (*c->p - '0');
        c->p++;
    }
    return 0;
}


static int
skm_ar_expect(skm_arc_t *c, unsigned char ch, const char *why)
{
    if (c->p == c->end || *c->p != ch) {
        return skm_ar_fail(c, why);
    }
    c->p++;
    return 0;
}


/* domain-name (RFC 6376): sub-domain 1*("." sub-domain). */
static int
skm_ar_domain(skm_arc_t *c)
{
    const char  *kw;
    size_t       len, labels;

    for (labels = 0;; labels++) {
        if (skm_ar_keyword(c, &kw, &len) != 0) {
            return skm_ar_fail(c, "expected a domain name");
        }
        if (c->p == c->end || *c->p != '.') {
            break;
        }
        c->p++;
    }
    return labels > 0 ? 0 : skm_ar_fail(c, "a domain name needs a \".\"");
}


/*
 * pvalue = [CFWS] ( value / [ [ local-part ] "@" ] domain-name ) [CFWS].
 * A dot-atom local-part and a token share their first characters: the
 * "@" after them decides.
 */
static int
skm_ar_pvalue(skm_arc_t *c)
{
    const unsigned char  *start, *q;

    if (skm_ar_cfws(c) < 0) {
        return -1;
    }
    if (c->p < c->end && *c->p == '"') {
        if (skm_ar_quoted(c, NULL) != 0) {
            return -1;
        }
        if (c->p < c->end && *c->p == '@') {
            c->p++;
            if (skm_ar_domain(c) != 0) {
                return -1;
            }
        }
    } else if (c->p < c->end && *c->p == '@') {
        c->p++;
        if (skm_ar_domain(c) != 0) {
            return -1;
        }
    } else {
        start = c->p;
        while (c->p < c->end && (skm_ar_atext(*c->p) || *c->p == '.')) {
            c->p++;
        }
        if (c->p == start) {
            return skm_ar_fail(c, "expected a property value");
        }
        if (c->p < c->end && *c->p == '@') {
            for (q = start; q < c->p; q++) {        /* dot-atom-text */
                if (*q == '.' && (q == start || q + 1 == c->p || q[1] == '.'))
                {
                    c->p = q;
                    return skm_ar_fail(c, "misplaced \".\" in a local-part");
                }
            }
            c->p++;
            if (skm_ar_domain(c) != 0) {
                return -1;
            }
        } else {
            for (q = start; q < c->p; q++) {
                if (!skm_ar_tokenchar(*q)) {
                    c->p = q;
                    return skm_ar_fail(c, "property value is not a token");
                }
            }
        }
    }
    return skm_ar_cfws(c) < 0 ? -1 : 0;
}


/* The rest of a propspec, after its ptype and [CFWS]. */
static int
skm_ar_propspec(skm_arc_t *c)
{
    const char  *kw;
    size_t       len;

    if (skm_ar_expect(c, '.', "expected \".\" after a ptype") != 0
        || skm_ar_cfws(c) < 0 || skm_ar_keyword(c, &kw, &len) != 0
        || skm_ar_cfws(c) < 0
        || skm_ar_expect(c, '=', "expected \"=\" after a property") != 0)
    {
        return -1;
    }
    return skm_ar_pvalue(c);
}


/* A resinfo after its ";" and its method keyword (in kw, len). */
static int
skm_ar_resinfo_rest(skm_arc_t *c, skm_ar_t *ar)
{
    const char  *kw;
    size_t       len;
    long         n;
    int          sep, props, reason;

    if (skm_ar_cfws(c) < 0) {
        return -1;
    }
    if (c->p < c->end && *c->p == '/') {
        c->p++;
        if (skm_ar_cfws(c) < 0 || skm_ar_number(c, &n) != 0
            || skm_ar_cfws(c) < 0)
        {
            return -1;
        }
    }
    if (skm_ar_expect(c, '=', "expected \"=\" after a method") != 0
        || skm_ar_cfws(c) < 0 || skm_ar_keyword(c, &kw, &len) != 0)
    {
        return -1;
    }
    ar->nresults++;
    props = reason = 0;
    for (;;) {
        sep = skm_ar_cfws(c);
        if (sep < 0) {
            return -1;
        }
        if (c->p == c->end || *c->p == ';') {
            return 0;
        }
        if (!sep && !props) {
            return skm_ar_fail(c, "expected white space, a comment or "
                "\";\"");
        }
        if (skm_ar_keyword(c, &kw, &len) != 0 || skm_ar_cfws(c) < 0) {
            return -1;
        }
        if (!props && !reason && c->p < c->end && *c->p == '='
            && skm_ar_is(kw, len, "reason"))
        {
            c->p++;
            if (skm_ar_cfws(c) < 0 || skm_ar_value(c, NULL) != 0) {
                return -1;
            }
            reason = 1;
            continue;
        }
        if (skm_ar_propspec(c) != 0) {
            return -1;
        }
        props = 1;
    }
}


/* One "; ..." after the authserv-id: no-result or a resinfo. */
static int
skm_ar_resinfo(skm_arc_t *c, skm_ar_t *ar)
{
    const unsigned char  *after;
    const char           *kw;
    size_t                len;

    if (ar->none) {
        return skm_ar_fail(c, "\"none\" must be the only result");
    }
    c->p++;                                     /* ";" */
    if (skm_ar_cfws(c) < 0 || skm_ar_keyword(c, &kw, &len) != 0) {
        return -1;
    }
    if (skm_ar_is(kw, len, "none")) {
        after = c->p;
        if (skm_ar_cfws(c) < 0) {
            return -1;
        }
        if (c->p == c->end || *c->p == ';') {
            if (ar->nresults > 0) {
                return skm_ar_fail(c, "\"none\" must be the only result");
            }
            ar->none = 1;
            return 0;
        }
        c->p = after;                           /* a method named none */
    }
    return skm_ar_resinfo_rest(c, ar);
}


int
skm_ar_parse(skm_ar_t *ar, const char *value, size_t len, size_t *off,
    const char **why)
{
    skm_arc_t    c;
    skm_arout_t  id;
    long         n;
    int          sep;

    memset(ar, 0, sizeof(*ar));
    ar->version = -1;
    c.p = (const unsigned char *) value;
    c.end = c.p + len;
    c.why = NULL;
    id.buf = ar->id;
    id.cap = sizeof(ar->id);
    id.len = 0;

    if (skm_ar_cfws(&c) < 0) {
        goto bad;
    }
    if (c.p == c.end || (*c.p != '"' && !skm_ar_tokenchar(*c.p))) {
        skm_ar_fail(&c, "no authserv-id");
        goto bad;
    }
    if (skm_ar_value(&c, &id) != 0) {
        goto bad;
    }
    ar->hasid = 1;
    ar->idlen = id.len;
    ar->id[id.len < sizeof(ar->id) ? id.len : sizeof(ar->id) - 1] = '\0';

    sep = skm_ar_cfws(&c);
    if (sep < 0) {
        goto bad;
    }
    if (sep && c.p < c.end && skm_ar_digit(*c.p)) {
        if (skm_ar_number(&c, &n) != 0 || skm_ar_cfws(&c) < 0) {
            goto bad;
        }
        ar->version = n;
    }
    for (;;) {
        if (c.p == c.end) {
            if (ar->nresults == 0 && !ar->none) {
                skm_ar_fail(&c, "no result (\"; none\" or \"; "
                    "method=result\")");
                goto bad;
            }
            break;
        }
        if (*c.p != ';') {
            skm_ar_fail(&c, "expected \";\"");
            goto bad;
        }
        if (skm_ar_resinfo(&c, ar) != 0) {
            goto bad;
        }
    }
    *off = len;
    *why = NULL;
    return 0;

bad:
    *off = (size_t) (c.p - (const unsigned char *) value);
    *why = c.why;
    return -1;
}


/* "name" without one trailing "." and, inside quotes, surrounding space. */
static void
skm_ar_trim(const char **s, size_t *len)
{
    while (*len > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t')) {
        (*len)--;
    }
    if (*len > 1 && (*s)[*len - 1] == '.') {
        (*len)--;
    }
}


int
skm_ar_is_ours(const char *value, size_t len, const char *authservid)
{
    skm_ar_t     ar;
    const char  *why, *a, *b;
    size_t       off, alen, blen;

    (void) skm_ar_parse(&ar, value, len, &off, &why);
    if (!ar.hasid) {
        return 1;                   /* no authserv-id we could tell apart */
    }
    if (ar.idlen >= sizeof(ar.id)) {
        return 0;                   /* longer than any AuthservID */
    }
    a = ar.id;
    alen = ar.idlen;
    b = authservid;
    blen = strlen(authservid);
    skm_ar_trim(&a, &alen);
    skm_ar_trim(&b, &blen);
    return alen == blen && strncasecmp(a, b, alen) == 0;
}
