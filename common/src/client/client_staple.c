/*
 * client_staple.c -- the stapled proof's bytes (docs/protocol.md
 * "Stapled proof"): a strict parse, formatting and joining, and what a
 * client makes of one: the answer for a name, checked exactly as a
 * fetched answer, and fresh by the client's staple_max_age.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/client.h>
#include <sk/staple.h>

#include "client_int.h"

#define SK_STAPLE_MAGIC  "SK-Staple: 1\n"
#define SK_ANSWER_FIRST  "SK-Mirror-Answer: 1\nName: "


/* "sha256:" and 64 lowercase hex digits. */
static int
sk_staple_fpr_ok(const char *s)
{
    return strlen(s) == SK_FINGERPRINT_SIZE - 1
        && strncmp(s, "sha256:", 7) == 0
        && strspn(s + 7, "0123456789abcdef") == 2 * SK_SHA256_BYTES;
}


/* "Answer: <name> <fingerprint> <n>" into a (answer/len not yet set). */
static int
sk_staple_answer_line(sk_staple_answer_t *a, uint64_t *n, const char **p,
    const char *end, size_t i, sk_err_t *err)
{
    char   val[SK_NAME_MAX + SK_FINGERPRINT_SIZE + 32], *sp1, *sp2;

    if (sk_cl_line(p, end, "Answer: ", val, sizeof(val)) != 0
        || (sp1 = strchr(val, ' ')) == NULL
        || (sp2 = strchr(sp1 + 1, ' ')) == NULL)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "staple: answer %zu: want "
            "\"Answer: <name> <mirror> <length>\"", i + 1);
    }
    *sp1 = '\0';
    *sp2 = '\0';
    if (sk_name_check(val, strlen(val), err) != 0) {
        return sk_err_prefix(err, "staple: answer %zu", i + 1);
    }
    if (!sk_staple_fpr_ok(sp1 + 1)) {
        return sk_err_set(err, SK_ERR_FORMAT, "staple: answer %zu: mirror "
            "is not \"sha256:\" and 64 lowercase hex digits", i + 1);
    }
    if (sk_cl_nums(sp2 + 1, n, NULL) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "staple: answer %zu: bad "
            "length", i + 1);
    }
    snprintf(a->name, sizeof(a->name), "%s", val);
    snprintf(a->mirror, sizeof(a->mirror), "%s", sp1 + 1);
    return 0;
}


/* The answer's own first lines name the same name (the rest is checked
 * with its signature). */
static int
sk_staple_answer_head(const sk_staple_answer_t *a, size_t i, sk_err_t *err)
{
    size_t  fl = strlen(SK_ANSWER_FIRST), nl = strlen(a->name);

    if (a->len < fl + nl + 1 || memcmp(a->answer, SK_ANSWER_FIRST, fl) != 0
        || memcmp(a->answer + fl, a->name, nl) != 0
        || a->answer[fl + nl] != '\n')
    {
        return sk_err_set(err, SK_ERR_FORMAT, "staple: answer %zu: not an "
            "SK-Mirror-Answer for %s", i + 1, a->name);
    }
    return 0;
}


int
sk_staple_parse(sk_staple_t *s, const unsigned char *buf, size_t len,
    sk_err_t *err)
{
    const char  *p, *end;
    char         val[32];
    uint64_t     k, n;
    size_t       i, j;

    memset(s, 0, sizeof(*s));
    if (len > SK_STAPLE_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "staple: %zu bytes, at most "
            "%d", len, SK_STAPLE_MAX);
    }
    s->buf = malloc(len + 1);
    if (s->buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "staple: out of memory");
    }
    memcpy(s->buf, buf, len);
    s->buf[len] = '\0';
    s->len = len;
    p = s->buf;
    end = s->buf + len;
    if (len < strlen(SK_STAPLE_MAGIC)
        || memcmp(p, SK_STAPLE_MAGIC, strlen(SK_STAPLE_MAGIC)) != 0)
    {
        sk_err_set(err, SK_ERR_FORMAT, "staple: does not start with "
            "\"SK-Staple: 1\"");
        goto fail;
    }
    p += strlen(SK_STAPLE_MAGIC);
    if (sk_cl_line(&p, end, "Answers: ", val, sizeof(val)) != 0
        || sk_cl_nums(val, &k, NULL) != 0 || k == 0
        || k > SK_STAPLE_MAX_ANSWERS)
    {
        sk_err_set(err, SK_ERR_FORMAT, "staple: want \"Answers: <n>\", 1 to "
            "%d", SK_STAPLE_MAX_ANSWERS);
        goto fail;
    }
    for (i = 0; i < k; i++) {
        if (sk_staple_answer_line(&s->a[i], &n, &p, end, i, err) != 0) {
            goto fail;
        }
        if (n > (uint64_t) (end - p)) {
            sk_err_set(err, SK_ERR_FORMAT, "staple: answer %zu: %" PRIu64
                " bytes run past the end", i + 1, n);
            goto fail;
        }
        s->a[i].answer = p;
        s->a[i].len = (size_t) n;
        p += n;
        if (sk_staple_answer_head(&s->a[i], i, err) != 0) {
            goto fail;
        }
        for (j = 0; j < i; j++) {
            if (strcmp(s->a[j].name, s->a[i].name) == 0
                && strcmp(s->a[j].mirror, s->a[i].mirror) == 0)
            {
                sk_err_set(err, SK_ERR_FORMAT, "staple: answer %zu: a second "
                    "answer for %s from %s", i + 1, s->a[i].name,
                    s->a[i].mirror);
                goto fail;
            }
        }
        s->n++;
    }
    if (p != end) {
        sk_err_set(err, SK_ERR_FORMAT, "staple: %zu bytes after the last "
            "answer", (size_t) (end - p));
        goto fail;
    }
    return 0;

fail:
    sk_staple_free(s);
    return -1;
}


void
sk_staple_free(sk_staple_t *s)
{
    if (s != NULL) {
        free(s->buf);
        memset(s, 0, sizeof(*s));
    }
}


int
sk_staple_format(unsigned char **out, size_t *len,
    const sk_staple_answer_t *a, size_t n, sk_err_t *err)
{
    sk_cl_buf_t  b = { NULL, 0, 0, 0 };
    char         line[SK_NAME_MAX + SK_FINGERPRINT_SIZE + 64];
    size_t       i;
    int          m;

    *out = NULL;
    *len = 0;
    if (n == 0 || n > SK_STAPLE_MAX_ANSWERS) {
        return sk_err_set(err, SK_ERR_USAGE, "staple: %zu answers, want 1 "
            "to %d", n, SK_STAPLE_MAX_ANSWERS);
    }
    m = snprintf(line, sizeof(line), SK_STAPLE_MAGIC "Answers: %zu\n", n);
    sk_cl_buf_add(&b, line, (size_t) m);
    for (i = 0; i < n; i++) {
        m = snprintf(line, sizeof(line), "Answer: %s %s %zu\n", a[i].name,
            a[i].mirror, a[i].len);
        sk_cl_buf_add(&b, line, (size_t) m);
        sk_cl_buf_add(&b, a[i].answer, a[i].len);
    }
    if (b.failed) {
        free(b.p);
        return sk_err_set(err, SK_ERR_NOMEM, "staple: out of memory");
    }
    if (b.len > SK_STAPLE_MAX) {
        free(b.p);
        return sk_err_set(err, SK_ERR_FORMAT, "staple: %zu bytes, more than "
            "one TLS extension holds (%d)", b.len, SK_STAPLE_MAX);
    }
    *out = (unsigned char *) b.p;
    *len = b.len;
    return 0;
}


int
sk_staple_join(unsigned char **out, size_t *len,
    const sk_staple_t *const *parts, size_t n, sk_err_t *err)
{
    sk_staple_answer_t  a[SK_STAPLE_MAX_ANSWERS];
    size_t              i, j, k = 0;

    for (i = 0; i < n; i++) {
        for (j = 0; j < parts[i]->n; j++) {
            if (k == SK_STAPLE_MAX_ANSWERS) {
                return sk_err_set(err, SK_ERR_USAGE, "staple: more than %d "
                    "answers", SK_STAPLE_MAX_ANSWERS);
            }
            a[k++] = parts[i]->a[j];
        }
    }
    return sk_staple_format(out, len, a, k, err);
}


int
sk_client_view_oldest(int64_t *oldest, const sk_client_view_t *v,
    const sk_client_trust_t *t, sk_err_t *err)
{
    const sk_client_cp_t  *cp;
    size_t                 i;

    *oldest = INT64_MAX;
    for (i = 0; i < t->ntl; i++) {
        cp = sk_client_view_cp(v, t->tl[i].tid);
        if (cp == NULL) {
            return sk_err_set(err, SK_ERR_NOT_FOUND, "no checkpoint of "
                "timeline %" PRIu64, t->tl[i].tid);
        }
        if (cp->ts < *oldest) {
            *oldest = cp->ts;
        }
    }
    if (t->ntl == 0) {
        return sk_err_set(err, SK_ERR_USAGE, "no timeline trusted");
    }
    return 0;
}


/* One answer of the staple for a trusted mirror m: verified and fresh. */
static int
sk_staple_try(sk_client_view_t *v, const sk_staple_answer_t *a,
    const sk_client_mirror_t *m, const sk_client_trust_t *t, int64_t now,
    sk_err_t *err)
{
    int64_t  oldest;

    if (sk_client_answer_verify(v, NULL, a->answer, a->len, a->name, 0,
            m->key, t, now, err) != 0)
    {
        return -1;
    }
    if (sk_client_view_oldest(&oldest, v, t, err) != 0) {
        sk_client_view_free(v);
        return sk_err_prefix(err, "stale");
    }
    if (now - oldest >= t->staple_max_age) {
        sk_client_view_free(v);
        return sk_err_set(err, SK_ERR_EXPIRED, "stale: its oldest "
            "checkpoint is %" PRId64 " s old (staple_max_age %" PRId64 ")",
            now - oldest, t->staple_max_age);
    }
    return 0;
}


int
sk_client_staple_view(sk_client_view_t *v, const sk_client_mirror_t **mirror,
    const sk_staple_t *s, const char *name, const sk_client_trust_t *t,
    int64_t now, sk_err_t *err)
{
    char                 fpr[SK_FINGERPRINT_SIZE];
    const char          *untrusted = NULL;
    size_t               i, j;
    sk_err_t             first, e;
    int                  tried = 0;

    memset(v, 0, sizeof(*v));
    for (i = 0; i < s->n; i++) {
        if (strcmp(s->a[i].name, name) != 0) {
            continue;
        }
        for (j = 0; j < t->nmirrors; j++) {
            if (t->mirrors[j].key == NULL) {
                continue;
            }
            sk_key_fingerprint(fpr, t->mirrors[j].key);
            if (strcmp(fpr, s->a[i].mirror) == 0) {
                break;
            }
        }
        if (j == t->nmirrors) {
            untrusted = s->a[i].mirror;
            continue;
        }
        if (sk_staple_try(v, &s->a[i], &t->mirrors[j], t, now, &e) == 0) {
            if (mirror != NULL) {
                *mirror = &t->mirrors[j];
            }
            return 0;
        }
        if (!tried) {
            first = e;
            sk_err_prefix(&first, "answer of %s", t->mirrors[j].url);
            tried = 1;
        }
    }
    if (tried) {
        if (err != NULL) {
            *err = first;
        }
        return -1;
    }
    if (untrusted != NULL) {
        return sk_err_set(err, SK_ERR_SIGNATURE, "no answer for %s from a "
            "trusted mirror (one signed by %s, which is not listed with a "
            "key)", name, untrusted);
    }
    return sk_err_set(err, SK_ERR_NOT_FOUND, "no answer for %s", name);
}
