/*
 * mr_evidence.c -- renegation evidence: the contradicting signed
 * statements, in the text form docs/protocol.md ("Renegation tracking")
 * gives, and the check anyone (this mirror, a peer) runs before holding a
 * timeline as reneged:
 *
 *   Reason: <one line>\n
 *   Kind: <kind>\n
 *   \n
 *   Statement: <entry|checkpoint|tfm> <n>\n<n bytes> ...
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mr.h"

#define MR_EV_MAX_STATEMENTS  (1u << 24)

/* A signed head: a checkpoint note or a TFM. */
typedef struct {
    uint64_t          size;
    sk_merkle_hash_t  root;
    int64_t           ts;
} mr_head_t;

typedef struct {
    const char  *type;      /* points into the text, NUL-free */
    size_t       typelen;
    const char  *p;
    size_t       len;
} mr_stmt_t;


void
mr_evidence_begin(mr_evidence_t *ev, const char *kind, const char *reason)
{
    memset(ev, 0, sizeof(*ev));
    mr_buf_printf(&ev->buf, "Reason: %s\nKind: %s\n\n", reason, kind);
}


void
mr_evidence_add(mr_evidence_t *ev, const char *type, const char *p,
    size_t len)
{
    mr_buf_printf(&ev->buf, "Statement: %s %zu\n", type, len);
    mr_buf_add(&ev->buf, p, len);
}


static int
mr_ev_is(const mr_stmt_t *s, const char *type)
{
    return s->typelen == strlen(type) && memcmp(s->type, type, s->typelen)
        == 0;
}


static int
mr_ev_head(mr_head_t *h, const mr_tl_t *t, const mr_stmt_t *s,
    sk_err_t *err)
{
    sk_checkpoint_t  cp;
    sk_tfm_t         tfm;

    if (mr_ev_is(s, "checkpoint")) {
        if (sk_checkpoint_verify(&cp, s->p, s->len, t->conf->origin, t->key,
                err) != 0)
        {
            return -1;
        }
        h->size = cp.size;
        memcpy(h->root, cp.root, sizeof(h->root));
        h->ts = mr_store_cp_ts(&cp);
        return 0;
    }
    if (mr_ev_is(s, "tfm")) {
        if (sk_tfm_verify(&tfm, NULL, s->p, s->len, t->key, err) != 0) {
            return -1;
        }
        if (tfm.tid != t->conf->tid) {
            return sk_err_set(err, SK_ERR_FORMAT, "tfm of TID %" PRIu64,
                tfm.tid);
        }
        h->size = tfm.tree_size;
        memcpy(h->root, tfm.root, sizeof(h->root));
        h->ts = tfm.timestamp;
        return 0;
    }
    return sk_err_set(err, SK_ERR_FORMAT, "want a checkpoint or tfm "
        "statement");
}


/* An entry statement signed by t: its SN and timestamp. */
static int
mr_ev_entry(sk_entry_t **e, uint64_t *sn, int64_t *ts, const mr_tl_t *t,
    const mr_stmt_t *s, sk_err_t *err)
{
    if (!mr_ev_is(s, "entry")) {
        return sk_err_set(err, SK_ERR_FORMAT, "want an entry statement");
    }
    if (sk_entry_parse(e, s->p, s->len, err) != 0) {
        return -1;
    }
    if (sk_entry_sn(*e, sn, err) != 0) {
        sk_entry_free(*e);
        return -1;
    }
    sk_entry_free(*e);
    return mr_store_check_entry(e, t, s->p, s->len, *sn, ts, err);
}


static int
mr_ev_parse(mr_stmt_t **out, size_t *n, char *kind, size_t kindcap,
    const char *text, size_t len, sk_err_t *err)
{
    const char          *p = text, *end = text + len, *nl, *sp;
    mr_stmt_t           *s = NULL, *ns;
    char                *e;
    unsigned long long   v;
    size_t               cap = 0;

    *out = NULL;
    *n = 0;
    nl = memchr(p, '\n', len);
    if (len < 8 || memcmp(p, "Reason: ", 8) != 0 || nl == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "evidence: line 1: want "
            "\"Reason: \"");
    }
    p = nl + 1;
    nl = memchr(p, '\n', (size_t) (end - p));
    if (nl == NULL || end - p < 7 || memcmp(p, "Kind: ", 6) != 0
        || (size_t) (nl - p - 6) >= kindcap || nl + 1 >= end || nl[1] != '\n')
    {
        return sk_err_set(err, SK_ERR_FORMAT, "evidence: line 2: want "
            "\"Kind: \" and a blank line");
    }
    memcpy(kind, p + 6, (size_t) (nl - p - 6));
    kind[nl - p - 6] = '\0';
    p = nl + 2;
    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL || end - p < 11 || memcmp(p, "Statement: ", 11) != 0) {
            free(s);
            return sk_err_set(err, SK_ERR_FORMAT, "evidence: offset %zu: "
                "want \"Statement: TYPE N\"", (size_t) (p - text));
        }
        sp = memchr(p + 11, ' ', (size_t) (nl - p - 11));
        if (sp == NULL || sp + 1 >= nl || sp[1] < '0' || sp[1] > '9') {
            free(s);
            return sk_err_set(err, SK_ERR_FORMAT, "evidence: offset %zu: "
                "bad statement line", (size_t) (p - text));
        }
        v = strtoull(sp + 1, &e, 10);
        if (e != nl || v > (unsigned long long) (end - nl - 1)
            || *n >= MR_EV_MAX_STATEMENTS)
        {
            free(s);
            return sk_err_set(err, SK_ERR_FORMAT, "evidence: offset %zu: "
                "statement length past the end", (size_t) (p - text));
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 4;
            ns = realloc(s, cap * sizeof(*s));
            if (ns == NULL) {
                free(s);
                return sk_err_set(err, SK_ERR_NOMEM, "evidence");
            }
            s = ns;
        }
        s[*n].type = p + 11;
        s[*n].typelen = (size_t) (sp - p - 11);
        s[*n].p = nl + 1;
        s[*n].len = (size_t) v;
        (*n)++;
        p = nl + 1 + v;
    }
    *out = s;
    return 0;
}


static int
mr_ev_two_entries(const mr_tl_t *t, const mr_stmt_t *s, size_t n, int dup,
    sk_err_t *err)
{
    sk_entry_t  *a, *b;
    uint64_t     sna, snb;
    int64_t      tsa, tsb;

    if (n != 2) {
        return sk_err_set(err, SK_ERR_FORMAT, "want two statements");
    }
    if (mr_ev_entry(&a, &sna, &tsa, t, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    sk_entry_free(a);
    if (mr_ev_entry(&b, &snb, &tsb, t, &s[1], err) != 0) {
        return sk_err_prefix(err, "statement 2");
    }
    sk_entry_free(b);
    if (dup) {
        if (sna != snb || (s[0].len == s[1].len
                           && memcmp(s[0].p, s[1].p, s[0].len) == 0))
        {
            return sk_err_set(err, SK_ERR_FORMAT, "not two different "
                "entries with one SN");
        }
    } else if (!(sna < snb && tsa > tsb)) {
        return sk_err_set(err, SK_ERR_FORMAT, "no timestamp regression");
    }
    return 0;
}


static int
mr_ev_fork(const mr_tl_t *t, const mr_stmt_t *s, size_t n, sk_err_t *err)
{
    mr_head_t  a, b;

    if (n != 2) {
        return sk_err_set(err, SK_ERR_FORMAT, "want two statements");
    }
    if (mr_ev_head(&a, t, &s[0], err) != 0
        || mr_ev_head(&b, t, &s[1], err) != 0)
    {
        return sk_err_prefix(err, "forked heads");
    }
    if (a.size != b.size || memcmp(a.root, b.root, sizeof(a.root)) == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "heads do not fork");
    }
    return 0;
}


static int
mr_ev_before(const mr_tl_t *t, const mr_stmt_t *s, size_t n, sk_err_t *err)
{
    sk_entry_t  *e;
    mr_head_t    h;
    uint64_t     sn;
    int64_t      ts;

    if (n != 2 || mr_ev_head(&h, t, &s[0], err) != 0
        || mr_ev_entry(&e, &sn, &ts, t, &s[1], err) != 0)
    {
        return n != 2 ? sk_err_set(err, SK_ERR_FORMAT, "want two statements")
                      : -1;
    }
    sk_entry_free(e);
    if (!(sn < h.size && ts > h.ts)) {
        return sk_err_set(err, SK_ERR_FORMAT, "the entry is not covered by "
            "the head, or not younger");
    }
    return 0;
}


/* Unbacked by the timeline's own root history, as this mirror's copy
 * holds it (a peer could leave out an Add-Root-CA; the copy cannot). */
static int
mr_ev_bind(mr_mirror_t *m, mr_tl_t *t, const mr_stmt_t *s, size_t n,
    sk_err_t *err)
{
    sk_entry_t  *e;
    sk_err_t     why;
    uint64_t     sn;
    int64_t      ts;
    int          rc;

    if (n != 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "want one statement");
    }
    if (mr_ev_entry(&e, &sn, &ts, t, &s[0], err) != 0) {
        return -1;
    }
    if (sk_entry_type(e) != SK_ENTRY_BIND
        && sk_entry_type(e) != SK_ENTRY_REBIND)
    {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_FORMAT, "not a Bind or Rebind");
    }
    pthread_mutex_lock(&m->lock);
    rc = mr_roots_check_bind(t, e, sn, ts, &why);
    pthread_mutex_unlock(&m->lock);
    sk_entry_free(e);
    if (rc == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "the entry is backed");
    }
    if (why.code == SK_ERR_UNAVAILABLE) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", why.msg);
    }
    return 0;
}


/* An Unbind or Change-Services (binds: a Bind or Rebind) against the
 * names' state on the verifier's own copy (with p, the sync thread's
 * pending entries). */
static int
mr_ev_update(mr_mirror_t *m, mr_tl_t *t, const mr_stmt_t *s, size_t n,
    const mr_pending_t *p, int binds, sk_err_t *err)
{
    sk_entry_type_t  ty;
    sk_entry_t  *e;
    sk_err_t     why;
    uint64_t     sn, size;
    int64_t      ts;
    int          rc;

    if (n != 1) {
        return sk_err_set(err, SK_ERR_FORMAT, "want one statement");
    }
    if (mr_ev_entry(&e, &sn, &ts, t, &s[0], err) != 0) {
        return -1;
    }
    pthread_mutex_lock(&m->lock);
    size = t->size;
    pthread_mutex_unlock(&m->lock);
    if (p == NULL && size < sn) {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "the copy holds %" PRIu64
            " entries, not yet SN %" PRIu64, size, sn);
    }
    ty = sk_entry_type(e);
    if (binds ? ty != SK_ENTRY_BIND && ty != SK_ENTRY_REBIND
              : ty != SK_ENTRY_UNBIND && ty != SK_ENTRY_CHANGE_SERVICES)
    {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_FORMAT, "an entry of another type");
    }
    rc = mr_check_update(m, t, e, sn, p, &why);
    sk_entry_free(e);
    if (rc == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "the update is consistent");
    }
    if (why.code == SK_ERR_UNAVAILABLE || why.code == SK_ERR_NOMEM) {
        return sk_err_set(err, SK_ERR_UNAVAILABLE, "%s", why.msg);
    }
    return 0;
}


/* An Incorporate signed by t whose copy (the entry its Incorporated-Hash
 * names) breaks the incorporation rules, judged against the verifier's
 * own copies (with p, the sync thread's pending entries); a third
 * statement: the earlier Incorporate that took the peer's SN already. */
static int
mr_ev_incorporate(mr_mirror_t *m, mr_tl_t *t, const mr_stmt_t *s, size_t n,
    const mr_pending_t *p, sk_err_t *err)
{
    sk_entry_t  *e, *earlier = NULL, *copy;
    uint64_t     sn, esn, size;
    int64_t      ts;
    char         why[SK_ERR_MSG_MAX];
    int          rc;

    if (n != 2 && n != 3) {
        return sk_err_set(err, SK_ERR_FORMAT, "want two or three statements");
    }
    if (!mr_ev_is(&s[1], "copy")) {
        return sk_err_set(err, SK_ERR_FORMAT, "statement 2: want a copy");
    }
    if (mr_ev_entry(&e, &sn, &ts, t, &s[0], err) != 0) {
        return sk_err_prefix(err, "statement 1");
    }
    if (sk_entry_type(e) != SK_ENTRY_INCORPORATE) {
        sk_entry_free(e);
        return sk_err_set(err, SK_ERR_FORMAT, "statement 1: not an "
            "Incorporate");
    }
    if (n == 3 && mr_ev_entry(&earlier, &esn, &ts, t, &s[2], err) != 0) {
        sk_entry_free(e);
        return sk_err_prefix(err, "statement 3");
    }
    pthread_mutex_lock(&m->lock);
    size = t->size;
    pthread_mutex_unlock(&m->lock);
    if (p == NULL && size < sn) {
        rc = sk_err_set(err, SK_ERR_UNAVAILABLE, "the copy holds %" PRIu64
            " entries, not yet SN %" PRIu64, size, sn);
    } else {
        rc = mr_inc_judge(m, t, e, sn, s[1].p, s[1].len, earlier, p, &copy,
            &esn, why, sizeof(why), err);
        if (rc == 0) {
            sk_entry_free(copy);
            rc = sk_err_set(err, SK_ERR_FORMAT, "the incorporation is valid");
        } else if (rc > 0) {
            rc = n == 3 && esn == UINT64_MAX ? sk_err_set(err, SK_ERR_FORMAT,
                "statement 3 is not an earlier Incorporate of that SN") : 0;
        }
    }
    sk_entry_free(e);
    sk_entry_free(earlier);
    return rc;
}


/* Entries 0..size-1 whose root is not the head's. */
static int
mr_ev_root(const mr_tl_t *t, const mr_stmt_t *s, size_t n, sk_err_t *err)
{
    sk_merkle_tree_t  *tree;
    sk_merkle_hash_t   leaf, root;
    sk_entry_t        *e;
    mr_head_t          h;
    int64_t            ts;
    size_t             i;
    int                rc = -1;

    if (n < 1 || mr_ev_head(&h, t, &s[0], err) != 0) {
        return n < 1 ? sk_err_set(err, SK_ERR_FORMAT, "no statements") : -1;
    }
    if (h.size != n - 1 || h.size == 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "want the head and every entry "
            "it covers");
    }
    if (sk_merkle_tree_new(&tree, err) != 0) {
        return -1;
    }
    for (i = 1; i < n; i++) {
        if (!mr_ev_is(&s[i], "entry")
            || mr_store_check_entry(&e, t, s[i].p, s[i].len, i - 1, &ts, err)
               != 0)
        {
            sk_err_prefix(err, "statement %zu", i + 1);
            goto done;
        }
        sk_entry_free(e);
        if (sk_merkle_leaf_hash(leaf, s[i].p, s[i].len, err) != 0
            || sk_merkle_tree_append(tree, leaf, err) != 0)
        {
            goto done;
        }
    }
    if (sk_merkle_tree_root(root, tree, h.size, err) != 0) {
        goto done;
    }
    rc = memcmp(root, h.root, sizeof(root)) != 0 ? 0
        : sk_err_set(err, SK_ERR_FORMAT, "the root matches");
done:
    sk_merkle_tree_free(tree);
    return rc;
}


int
mr_evidence_verify(mr_mirror_t *m, mr_tl_t *t, const char *text, size_t len,
    const mr_pending_t *p, sk_err_t *err)
{
    mr_stmt_t  *s;
    size_t      n;
    char        kind[64];
    int         rc;

    if (mr_ev_parse(&s, &n, kind, sizeof(kind), text, len, err) != 0) {
        return -1;
    }
    if (strcmp(kind, "duplicate-sn") == 0) {
        rc = mr_ev_two_entries(t, s, n, 1, err);
    } else if (strcmp(kind, "timestamp-regression") == 0) {
        rc = mr_ev_two_entries(t, s, n, 0, err);
    } else if (strcmp(kind, "forked-checkpoint") == 0) {
        rc = mr_ev_fork(t, s, n, err);
    } else if (strcmp(kind, "checkpoint-before-entry") == 0) {
        rc = mr_ev_before(t, s, n, err);
    } else if (strcmp(kind, "unbacked-bind") == 0) {
        rc = mr_ev_bind(m, t, s, n, err);
    } else if (strcmp(kind, "unsigned-update") == 0) {
        rc = mr_ev_update(m, t, s, n, p, 0, err);
    } else if (strcmp(kind, "inconsistent-bind") == 0) {
        rc = mr_ev_update(m, t, s, n, p, 1, err);
    } else if (strcmp(kind, "bad-incorporation") == 0) {
        rc = mr_ev_incorporate(m, t, s, n, p, err);
    } else if (strcmp(kind, "checkpoint-root") == 0) {
        rc = mr_ev_root(t, s, n, err);
    } else {
        rc = sk_err_set(err, SK_ERR_FORMAT, "unknown kind \"%s\"", kind);
    }
    free(s);
    return rc == 0 ? 0 : sk_err_prefix(err, "evidence (%s)", kind);
}


void
mr_evidence_renege(mr_mirror_t *m, mr_tl_t *t, mr_evidence_t *ev,
    const mr_pending_t *p)
{
    sk_err_t  err;
    char     *text;
    size_t    len;

    if (mr_buf_finish(&ev->buf, &text, &len, &err) != 0) {
        mr_log("timeline %" PRIu64 ": evidence: %s", t->conf->tid, err.msg);
        return;
    }
    /* Only what anyone can check is held against a timeline. */
    if (mr_evidence_verify(m, t, text, len, p, &err) != 0) {
        mr_log("timeline %" PRIu64 ": not marked Corrupt, own %s",
            t->conf->tid, err.msg);
        pthread_mutex_lock(&m->lock);
        mr_sync_set_state(m, t, MR_STUCK, err.msg);
        pthread_mutex_unlock(&m->lock);
    } else if (mr_store_evidence(m, t, text, len, &err) != 0) {
        mr_log("timeline %" PRIu64 ": storing evidence: %s", t->conf->tid,
            err.msg);
    }
    free(text);
}
