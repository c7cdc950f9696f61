/*
 * client_answer.c -- a mirror's signed answer to GET /query/<name>
 * (docs/protocol.md, "Mirror answers"): the mirror's signature, a strict
 * parse, then the view it carries is verified like any other.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sk/client.h>
#include <sk/b64.h>
#include <sk/map.h>

#include "client_int.h"

#define SK_ANSWER_MAGIC    "SK-Mirror-Answer: 1\n"
#define SK_ANSWER_SIG      "Signature: "
#define SK_ANSWER_SIG_B64  86          /* 64 bytes, base64url, no padding */
#define SK_ANSWER_MAX      (64 * 1024 * 1024)

typedef struct {
    const char               *p, *end;
    size_t                    block;        /* timeline block, from 1 */
    sk_client_view_t         *v;
    sk_client_answer_info_t  *info;
    uint64_t                  since;
    const sk_client_trust_t  *t;
    int                       range;        /* a range answer's */
} sk_answer_t;


/* The signature line: the document's last; *signed_len what it covers. */
static int
sk_answer_signature(const char *buf, size_t len, size_t *signed_len,
    const sk_key_t *key, sk_err_t *err)
{
    size_t          sl = strlen(SK_ANSWER_SIG), start;
    unsigned char  *sig;
    size_t          siglen;
    int             rc;

    if (len < sl + SK_ANSWER_SIG_B64 + 1 || buf[len - 1] != '\n') {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: does not end in a "
            "signature line");
    }
    start = len - 1 - SK_ANSWER_SIG_B64 - sl;
    if ((start > 0 && buf[start - 1] != '\n')
        || memcmp(buf + start, SK_ANSWER_SIG, sl) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: last line is not "
            "\"Signature: \" and 86 base64url characters");
    }
    if (sk_b64_decode(&sig, &siglen, buf + start + sl, SK_ANSWER_SIG_B64,
            err) != 0)
    {
        return sk_err_prefix(err, "answer: Signature");
    }
    rc = 0;
    if (siglen != 64) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "answer: Signature of %zu "
            "bytes", siglen);
    } else if (key != NULL && sk_key_verify(key, sig, siglen,
                   (const unsigned char *) buf, start, err) != 0)
    {
        rc = sk_err_set(err, SK_ERR_SIGNATURE, "answer: the mirror's "
            "signature does not verify");
    }
    free(sig);
    *signed_len = start;
    return rc;
}


static int
sk_answer_num(sk_answer_t *a, const char *prefix, uint64_t *n, uint64_t *m,
    const char *what, sk_err_t *err)
{
    char  val[64];

    if (sk_cl_line(&a->p, a->end, prefix, val, sizeof(val)) != 0
        || sk_cl_nums(val, n, m) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: %s%zu: want a "
            "\"%s\" line", what, a->block, prefix);
    }
    return 0;
}


/* The Name line of a range answer (docs/protocol.md, "Range answers"),
 * past its "*" and "/": "<depth>/<hex>", the first depth bits of every
 * name key it covers, in ceil(depth / 8) bytes of lowercase hex ("-" for
 * none), unused bits 0; name's key must be among them. */
static int
sk_answer_range(const char *s, const char *name, sk_err_t *err)
{
    unsigned char  key[SK_MAP_KEY_BYTES];
    const char    *hex;
    uint64_t       depth;
    unsigned       i, n, b, mask;
    char           num[8];
    size_t         len;

    hex = strchr(s, '/');
    len = hex != NULL ? (size_t) (hex - s) : 0;
    if (len == 0 || len >= sizeof(num)) {
        goto bad;
    }
    memcpy(num, s, len);
    num[len] = '\0';
    if (sk_cl_nums(num, &depth, NULL) != 0 || depth > SK_MAP_DEPTH_MAX) {
        goto bad;
    }
    hex++;
    n = (unsigned) (depth + 7) / 8;
    if ((n == 0 && strcmp(hex, "-") != 0)
        || (n > 0 && strlen(hex) != 2 * n))
    {
        goto bad;
    }
    if (sk_map_key(key, name, err) != 0) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (sscanf(hex + 2 * i, "%2x", &b) != 1
            || strspn(hex + 2 * i, "0123456789abcdef") < 2)
        {
            goto bad;
        }
        mask = i + 1 < n || depth % 8 == 0 ? 0xff
                                           : 0xff & (0xff << (8 - depth % 8));
        if ((b & ~mask) != 0) {
            goto bad;
        }
        if ((key[i] & mask) != b) {
            return sk_err_set(err, SK_ERR_FORMAT, "answer: Name: a range "
                "(*" "/%s) that %s is not in", s, name);
        }
    }
    return 0;
bad:
    return sk_err_set(err, SK_ERR_FORMAT, "answer: Name: \"*" "/%.40s\" "
        "is not a range \"*" "/<depth>/<hex>\"", s);
}


/* A range answer proves the name absent in every timeline it gives a
 * non-empty tree of, and lists no entry. */
static int
sk_answer_range_check(const sk_client_view_t *v, const char *name,
    sk_err_t *err)
{
    size_t  i;

    for (i = 0; i < v->ncps; i++) {
        if (v->cps[i].cp.size > 0 && v->cps[i].map != SK_CLIENT_MAP_ABSENT) {
            return sk_err_set(err, SK_ERR_FORMAT, "answer: a range answer, "
                "but timeline %" PRIu64 " does not prove %s absent",
                v->cps[i].tid, name);
        }
    }
    if (v->nitems > 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: a range answer "
            "with entries");
    }
    return 0;
}


static int
sk_answer_header(sk_answer_t *a, const char *name, sk_err_t *err)
{
    char      val[SK_NAME_MAX + 2];
    uint64_t  n;
    size_t    i;

    if ((size_t) (a->end - a->p) < strlen(SK_ANSWER_MAGIC)
        || memcmp(a->p, SK_ANSWER_MAGIC, strlen(SK_ANSWER_MAGIC)) != 0)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: not an "
            "SK-Mirror-Answer: 1");
    }
    a->p += strlen(SK_ANSWER_MAGIC);
    if (sk_cl_line(&a->p, a->end, "Name: ", val, sizeof(val)) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: Name is not %s",
            name);
    }
    if (strncmp(val, "*/", 2) == 0) {
        if (sk_answer_range(val + 2, name, err) != 0) {
            return -1;
        }
        a->range = 1;
    } else if (strcmp(val, name) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: Name is not %s",
            name);
    }
    if (sk_answer_num(a, "Since: ", &n, NULL, "header", err) != 0) {
        return -1;
    }
    if (n != a->since) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: Since %" PRIu64
            ", asked %" PRIu64, n, a->since);
    }
    if (sk_answer_num(a, "Timestamp: ", &n, NULL, "header", err) != 0) {
        return -1;
    }
    a->info->timestamp = (int64_t) n;
    if (sk_cl_line(&a->p, a->end, "Reneged-Hash: ", val, sizeof(val)) != 0
        || strlen(val) != 8 || strspn(val, "0123456789abcdef") != 8)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: want a "
            "\"Reneged-Hash: \" line of 8 lowercase hex digits");
    }
    memcpy(a->info->reneged_hash, val, 9);
    if (sk_answer_num(a, "Timelines: ", &n, NULL, "header", err) != 0) {
        return -1;
    }
    if (n > SK_CLIENT_MAX_TIMELINES) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: %" PRIu64
            " timelines", n);
    }
    a->info->ntl = (size_t) n;
    for (i = 0; i < SK_CLIENT_MAX_TIMELINES; i++) {
        a->info->state[i][0] = '\0';
        a->info->age[i] = -1;
    }
    return 0;
}


static int
sk_answer_state(const char *s)
{
    static const char *const states[] = { "New", "Idle", "Syncing", "Stuck",
        "Defunct", "Corrupt" };
    size_t  i;

    for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        if (strcmp(s, states[i]) == 0) {
            return (int) i;
        }
    }
    return -1;
}


/* Bytes of n at a->p (n checked against what is left). */
static int
sk_answer_take(sk_answer_t *a, uint64_t n, const char **data,
    const char *what, sk_err_t *err)
{
    if (n > (uint64_t) (a->end - a->p)) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline block %zu: "
            "%s of %" PRIu64 " bytes runs past the end", a->block, what, n);
    }
    *data = a->p;
    a->p += n;
    return 0;
}


static int
sk_answer_entry(sk_answer_t *a, uint64_t tid, uint64_t *prev_sn,
    int keep, int mapped, sk_err_t *err)
{
    sk_merkle_proof_t   proof;
    const sk_client_item_t *it;
    const char         *text = NULL, *lines = NULL;
    uint64_t            sn, n, p;
    int64_t             ts;

    if (sk_answer_num(a, "Entry: ", &sn, &n, "timeline block ", err) != 0
        || sk_answer_take(a, n, &text, "entry", err) != 0
        || sk_answer_num(a, "Proof: ", &p, NULL, "timeline block ", err)
           != 0)
    {
        return -1;
    }
    if (*prev_sn != UINT64_MAX && sn <= *prev_sn) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline %" PRIu64
            ": SN %" PRIu64 " out of order", tid, sn);
    }
    *prev_sn = sn;
    if (p > SK_MERKLE_PROOF_MAX
        || sk_answer_take(a, p * SK_CL_HASH_LINE, &lines, "proof", err) != 0
        || sk_merkle_proof_parse(&proof, lines, (size_t) p * SK_CL_HASH_LINE,
               err) != 0
        || proof.len != p)
    {
        return sk_err_prefix(err, "answer: timeline %" PRIu64 " SN %" PRIu64
            ": proof", tid, sn);
    }
    if (!keep) {
        return 0;
    }
    if (sk_client_view_add_item(a->v, text, (size_t) n, &proof, err) != 0) {
        return sk_err_prefix(err, "answer: timeline %" PRIu64 " SN %"
            PRIu64, tid, sn);
    }
    it = &a->v->items[a->v->nitems - 1];
    if (it->tid != tid || it->sn != sn) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline %" PRIu64
            " SN %" PRIu64 ": the entry is stamped TID %" PRIu64 " SN %"
            PRIu64, tid, sn, it->tid, it->sn);
    }
    /* A mapped timeline lists the name's whole history, whatever Since. */
    if (sk_entry_timestamp(it->entry, &ts, NULL) != 0
        || (!mapped && (uint64_t) ts < a->since))
    {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline %" PRIu64
            " SN %" PRIu64 ": older than Since", tid, sn);
    }
    return 0;
}


/* "Last-Entry: <n>", the entry, its "Proof: <p>" and, for a Map-Root, the
 * "Map-Proof: " (docs/protocol.md, "In a mirror answer"); kept in the view
 * if keep.  *mapped: a map proof came (every entry of the name follows,
 * whatever Since). */
static int
sk_answer_last(sk_answer_t *a, uint64_t tid, int keep, int *mapped,
    sk_err_t *err)
{
    static const char   mprefix[] = "Map-Proof: ";
    sk_merkle_proof_t   proof;
    sk_map_proof_t     *mp = NULL;
    const char         *text = NULL, *lines = NULL;
    uint64_t            n, p;
    size_t              used;
    int                 rc;

    *mapped = 0;
    if (sk_answer_num(a, "Last-Entry: ", &n, NULL, "timeline block ", err)
        != 0 || sk_answer_take(a, n, &text, "last entry", err) != 0
        || sk_answer_num(a, "Proof: ", &p, NULL, "timeline block ", err)
           != 0)
    {
        return -1;
    }
    if (p > SK_MERKLE_PROOF_MAX
        || sk_answer_take(a, p * SK_CL_HASH_LINE, &lines, "proof", err) != 0
        || sk_merkle_proof_parse(&proof, lines, (size_t) p * SK_CL_HASH_LINE,
               err) != 0
        || proof.len != p)
    {
        return sk_err_prefix(err, "answer: timeline %" PRIu64 ": last "
            "entry's proof", tid);
    }
    if ((size_t) (a->end - a->p) >= sizeof(mprefix) - 1
        && memcmp(a->p, mprefix, sizeof(mprefix) - 1) == 0)
    {
        mp = malloc(sizeof(*mp));
        if (mp == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "map proof");
        }
        if (sk_map_proof_parse(mp, &used, a->p, (size_t) (a->end - a->p),
                err) != 0)
        {
            free(mp);
            /* Its messages begin "map proof: ". */
            return sk_err_prefix(err, "answer: timeline %" PRIu64, tid);
        }
        a->p += used;
        *mapped = 1;
    }
    rc = 0;
    if (keep && sk_client_view_set_last(a->v, tid, text, (size_t) n, &proof,
            mp, err) != 0)
    {
        rc = sk_err_prefix(err, "answer");
    }
    free(mp);
    return rc;
}


static int
sk_answer_block(sk_answer_t *a, uint64_t *prev_tid, sk_err_t *err)
{
    char         val[64], *sp;
    const char  *note = NULL;
    uint64_t     tid, n, m, i, age, prev_sn = UINT64_MAX;
    int          st, served, keep, mapped = 0;

    if (sk_cl_line(&a->p, a->end, "Timeline: ", val, sizeof(val)) != 0
        || (sp = strchr(val, ' ')) == NULL)
    {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline block %zu: "
            "want \"Timeline: <tid> <state>\"", a->block);
    }
    *sp = '\0';
    st = sk_answer_state(sp + 1);
    if (sk_cl_nums(val, &tid, NULL) != 0 || st < 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline block %zu: "
            "bad TID or state", a->block);
    }
    if (*prev_tid != UINT64_MAX && tid <= *prev_tid) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline %" PRIu64
            " out of order", tid);
    }
    *prev_tid = tid;
    a->info->tid[a->block - 1] = tid;
    snprintf(a->info->state[a->block - 1], sizeof(a->info->state[0]), "%s",
        sp + 1);
    served = st == 1 || st == 2;
    if (sk_answer_num(a, "Checkpoint: ", &n, NULL, "timeline block ", err)
        != 0 || sk_answer_take(a, n, &note, "checkpoint", err) != 0)
    {
        return -1;
    }
    /* A Stuck timeline served from the mirror's last checked state. */
    if (st == 3 && n > 0) {
        if (sk_answer_num(a, "Checkpoint-Age: ", &age, NULL,
                "timeline block ", err) != 0)
        {
            return -1;
        }
        if (age > INT64_MAX / 2) {
            return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline %"
                PRIu64 ": Checkpoint-Age %" PRIu64, tid, age);
        }
        a->info->age[a->block - 1] = (int64_t) age;
        served = 1;
    }
    if (!served && n != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline %" PRIu64
            " is %s but has a checkpoint", tid, sp + 1);
    }
    keep = n > 0 && sk_client_trust_find(a->t, tid) != NULL;
    if (keep && sk_client_view_add_cp(a->v, tid, note, (size_t) n, err)
        != 0)
    {
        return sk_err_prefix(err, "answer");
    }
    if (keep) {
        snprintf(a->v->cps[a->v->ncps - 1].state,
            sizeof(a->v->cps[0].state), "%s", sp + 1);
    }
    /* An empty tree has no last entry: "Entries: " follows directly. */
    if (n > 0 && (size_t) (a->end - a->p) >= 12
        && memcmp(a->p, "Last-Entry: ", 12) == 0
        && sk_answer_last(a, tid, keep, &mapped, err) != 0)
    {
        return -1;
    }
    if (sk_answer_num(a, "Entries: ", &m, NULL, "timeline block ", err) != 0)
    {
        return -1;
    }
    if (!served && m != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline %" PRIu64
            " is %s but has entries", tid, sp + 1);
    }
    if (n == 0 && m != 0) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline %" PRIu64
            ": entries without a checkpoint", tid);
    }
    for (i = 0; i < m; i++) {
        if (sk_answer_entry(a, tid, &prev_sn, keep, mapped, err) != 0) {
            return -1;
        }
    }
    return 0;
}


/* A Checkpoint-Age must be the answer's Timestamp less the (verified)
 * checkpoint's: a mirror cannot make a stale timeline look fresher than
 * its signed checkpoint says, nor older. */
static int
sk_answer_ages(const sk_client_view_t *v, const sk_client_answer_info_t *info,
    sk_err_t *err)
{
    const sk_client_cp_t  *cp;
    int64_t                want;
    size_t                 i;

    for (i = 0; i < info->ntl; i++) {
        if (info->age[i] < 0
            || (cp = sk_client_view_cp(v, info->tid[i])) == NULL)
        {
            continue;
        }
        want = info->timestamp > cp->ts ? info->timestamp - cp->ts : 0;
        if (info->age[i] != want) {
            return sk_err_set(err, SK_ERR_FORMAT, "answer: timeline %" PRIu64
                ": Checkpoint-Age %" PRId64 ", but the checkpoint is %"
                PRId64 " seconds older than the answer", info->tid[i],
                info->age[i], want);
        }
    }
    return 0;
}


int
sk_client_answer_verify(sk_client_view_t *v, sk_client_answer_info_t *info,
    const char *buf, size_t len, const char *name, uint64_t since,
    const sk_key_t *key, const sk_client_trust_t *t, int64_t now,
    sk_err_t *err)
{
    sk_client_answer_info_t  dummy;
    sk_answer_t              a;
    uint64_t                 prev_tid = UINT64_MAX;
    size_t                   signed_len = 0;

    memset(v, 0, sizeof(*v));
    if (info == NULL) {
        info = &dummy;
    }
    memset(info, 0, sizeof(*info));
    if (sk_name_check(name, strlen(name), err) != 0) {
        return -1;
    }
    if (len > SK_ANSWER_MAX) {
        return sk_err_set(err, SK_ERR_FORMAT, "answer: %zu bytes", len);
    }
    if (sk_answer_signature(buf, len, &signed_len, key, err) != 0) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.p = buf;
    a.end = buf + signed_len;
    a.v = v;
    a.info = info;
    a.since = since;
    a.t = t;
    snprintf(v->name, sizeof(v->name), "%s", name);
    if (sk_answer_header(&a, name, err) != 0) {
        goto fail;
    }
    for (a.block = 1; a.block <= info->ntl; a.block++) {
        if (sk_answer_block(&a, &prev_tid, err) != 0) {
            goto fail;
        }
    }
    if (a.p != a.end) {
        sk_err_set(err, SK_ERR_FORMAT, "answer: %zu bytes after the last "
            "timeline block", (size_t) (a.end - a.p));
        goto fail;
    }
    if (sk_client_view_verify(v, t, now, err) != 0) {
        sk_err_prefix(err, "answer");
        goto fail;
    }
    if ((a.range && sk_answer_range_check(v, name, err) != 0)
        || sk_answer_ages(v, info, err) != 0)
    {
        goto fail;
    }
    return 0;

fail:
    sk_client_view_free(v);
    return -1;
}
