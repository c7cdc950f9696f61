/*
 * sk/evidence.h -- renegation evidence: the contradicting signed
 * statements about one timeline, in the text form docs/protocol.md
 * ("Renegation tracking") gives:
 *
 *   Reason: <one line>\n
 *   Kind: <kind>\n
 *   \n
 *   Statement: <entry|checkpoint|tfm|copy> <n>\n<n bytes> ...
 *
 * One parser and one check of the kinds the timeline's own signatures
 * prove, shared by sk-mirror (before it holds a timeline as reneged) and
 * the client (before it believes a mirror that does); the kinds judged
 * against a copy of the timeline's history stay with each.
 */
#ifndef SK_EVIDENCE_H
#define SK_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>
#include "entry.h"
#include "err.h"
#include "key.h"
#include "merkle.h"

#define SK_EVIDENCE_KIND_MAX  64

typedef struct {
    const char  *type;          /* points into the text, NUL-free */
    size_t       typelen;
    const char  *p;             /* the statement's bytes, in the text */
    size_t       len;
} sk_evidence_stmt_t;

typedef struct {
    char                 kind[SK_EVIDENCE_KIND_MAX];
    sk_evidence_stmt_t  *s;     /* malloc()ed; points into the text */
    size_t               n;
} sk_evidence_t;

/* The timeline the evidence is about, as the verifier knows it. */
typedef struct {
    uint64_t         tid;
    const char      *origin;    /* its checkpoint key name */
    const sk_key_t  *key;       /* its public key */
} sk_evidence_tl_t;

/* A signed head: a checkpoint note or a TFM. */
typedef struct {
    uint64_t          size;
    sk_merkle_hash_t  root;
    int64_t           ts;       /* a checkpoint's Timestamp line, or 0 */
} sk_evidence_head_t;

/*
 * Parse text (which must outlive ev) strictly: at most max statements,
 * each length within the text.  Errors name the line or the offset.
 * Free with sk_evidence_free.
 */
int sk_evidence_parse(sk_evidence_t *ev, const char *text, size_t len,
    size_t max, sk_err_t *err) SK_WUR;
void sk_evidence_free(sk_evidence_t *ev);

/* 1 if statement s is of type. */
int sk_evidence_is(const sk_evidence_stmt_t *s, const char *type);

/* An entry statement of timeline tl, signed by it: *e (free with
 * sk_entry_free), its SN and timestamp. */
int sk_evidence_entry(sk_entry_t **e, uint64_t *sn, int64_t *ts,
    const sk_evidence_tl_t *tl, const sk_evidence_stmt_t *s,
    sk_err_t *err) SK_WUR;

/* A checkpoint or tfm statement signed by timeline tl. */
int sk_evidence_head(sk_evidence_head_t *h, const sk_evidence_tl_t *tl,
    const sk_evidence_stmt_t *s, sk_err_t *err) SK_WUR;

/* The Map-Hash and Map-Names of a Map-Root entry (SK_ERR_FORMAT naming
 * the field, or if e is of another type). */
int sk_evidence_map_root(const sk_entry_t *e, sk_merkle_hash_t root,
    uint64_t *names, sk_err_t *err) SK_WUR;

/*
 * Check the kinds that tl's signatures alone prove: duplicate-sn,
 * timestamp-regression, forked-checkpoint, checkpoint-before-entry,
 * checkpoint-root and map-root (the map of the entries before a Map-Root
 * entry, built in memory, is not the one it names).  0: proven; -1: not (err says which statement and
 * why); 1: another kind, left to the caller (err untouched).
 */
int sk_evidence_check(const sk_evidence_t *ev, const sk_evidence_tl_t *tl,
    sk_err_t *err);

#endif
