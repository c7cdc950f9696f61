/*
 * sk/entry.h -- timeline entries in the draft's canonical text form.
 *
 *   <Type>: 1\n
 *   <Field>: <value>\n      every field of the type, sorted by name (bytes)
 *   \n
 *
 * 7-bit printable ASCII; no value contains ": " or "\n"; integers are
 * decimal without leading zeros; booleans 1/0; binary is URL-safe base64.
 * Every field of the type must be present, no other.  A field the entry
 * does not have yet (the timeline's stamp before it is stamped, a signature
 * before signing) holds the literal "N/A"; only stamp and signature fields
 * may.  docs/protocol.md lists the fields of each type and the exact bytes
 * each signature covers.
 */
#ifndef SK_ENTRY_H
#define SK_ENTRY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "err.h"
#include "key.h"

#define SK_ENTRY_VERSION  1
#define SK_NA             "N/A"
#define SK_ENTRY_MAX      (1024 * 1024)   /* bytes of canonical text */

typedef enum {
    SK_ENTRY_BIND = 0,
    SK_ENTRY_UNBIND,
    SK_ENTRY_REBIND,
    SK_ENTRY_CHANGE_SERVICES,
    SK_ENTRY_ADD_ROOT_CA,
    SK_ENTRY_REMOVE_ROOT_CA,
    SK_ENTRY_INCORPORATE,
    SK_ENTRY_MAP_ROOT,      /* the timeline's own: its name map's root */
    SK_ENTRY_NTYPES
} sk_entry_type_t;

/* Which signature field: each covers a different set of fields. */
typedef enum {
    SK_SIG_TIMELINE = 0,    /* "Signature": the whole entry */
    SK_SIG_SK,              /* "SK-Signature": the registrant's fields */
    SK_SIG_REBINDER,        /* "Rebinder-Signature": those + SK-Signature */
    SK_SIG_OPERATOR         /* "Operator-Signature": root-CA entries */
} sk_sig_field_t;

typedef struct sk_entry_s sk_entry_t;

/* A new entry of type with every field "N/A" (to be set). */
int sk_entry_new(sk_entry_t **e, sk_entry_type_t type, sk_err_t *err) SK_WUR;

/* Parse exactly one entry: buf[0..len) must be one whole canonical entry
 * ending in its blank line. */
int sk_entry_parse(sk_entry_t **e, const char *buf, size_t len,
    sk_err_t *err) SK_WUR;

/* Parse the first entry of a stream of entries; *used is its length. */
int sk_entry_parse_next(sk_entry_t **e, size_t *used, const char *buf,
    size_t len, sk_err_t *err) SK_WUR;

/* Canonical text, malloc()ed and NUL-terminated (*len without the NUL). */
int sk_entry_format(char **out, size_t *len, const sk_entry_t *e,
    sk_err_t *err) SK_WUR;

sk_entry_type_t sk_entry_type(const sk_entry_t *e);
const char *sk_entry_type_name(sk_entry_type_t type);   /* "Change-Services" */
/* "bind", "Change-Services", "change-services" ... -> type. */
int sk_entry_type_parse(sk_entry_type_t *type, const char *s, sk_err_t *err)
    SK_WUR;

/* Field value (borrowed), or NULL if this type has no such field or it is
 * an evidence field the entry does not carry (a Bind carries exactly one of
 * CA-Cert-Chain and DNSSEC-Chain). */
const char *sk_entry_get(const sk_entry_t *e, const char *field);
/* Set a field, checking the value as the parser would (SK_ERR_FORMAT
 * naming the field); "N/A" only where allowed. */
int sk_entry_set(sk_entry_t *e, const char *field, const char *value,
    sk_err_t *err) SK_WUR;

/* Typed reads of the stamp; -1 (SK_ERR_NOT_FOUND) while "N/A". */
int sk_entry_sn(const sk_entry_t *e, uint64_t *sn, sk_err_t *err) SK_WUR;
int sk_entry_tid(const sk_entry_t *e, uint64_t *tid, sk_err_t *err) SK_WUR;
int sk_entry_timestamp(const sk_entry_t *e, int64_t *t, sk_err_t *err)
    SK_WUR;

/* Name field, or NULL for types without one (root-CA, incorporation,
 * map root) and while it is not set. */
const char *sk_entry_name(const sk_entry_t *e);

/* The SK of a Bind or Rebind (its Key field). */
int sk_entry_key(sk_key_t **key, const sk_entry_t *e, sk_err_t *err) SK_WUR;

/* The bytes signature `which` covers: the canonical form with that field,
 * and every field it does not cover, set to "N/A".  malloc()ed. */
int sk_entry_signed_bytes(char **out, size_t *len, const sk_entry_t *e,
    sk_sig_field_t which, sk_err_t *err) SK_WUR;

/* Sign and fill field `which`; SK_ERR_USAGE if the type has no such
 * field, or if a signature field it covers is still "N/A" (SK-Signature
 * before Rebinder-Signature, those before the timeline's Signature).
 * Signing SK-Signature also fills Key and Key-Type of a Bind or Rebind
 * from key when they are "N/A" (SK_ERR_WRONG_SK if Key is another key). */
int sk_entry_sign(sk_entry_t *e, sk_sig_field_t which, const sk_key_t *key,
    sk_err_t *err) SK_WUR;
int sk_entry_verify(const sk_entry_t *e, sk_sig_field_t which,
    const sk_key_t *key, sk_err_t *err) SK_WUR;

/* The timeline's stamp: sets TID, SN, Timestamp and signs Signature. */
int sk_entry_stamp(sk_entry_t *e, uint64_t tid, uint64_t sn, int64_t ts,
    const sk_key_t *timeline_key, sk_err_t *err) SK_WUR;

/* SHA-256 of the canonical form (incorporation references, Merkle leaves). */
int sk_entry_hash(unsigned char out[SK_SHA256_BYTES], const sk_entry_t *e,
    sk_err_t *err) SK_WUR;

sk_entry_t *sk_entry_dup(const sk_entry_t *e);
void sk_entry_free(sk_entry_t *e);                 /* NULL ok */

#endif
