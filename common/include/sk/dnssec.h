/*
 * sk/dnssec.h -- a Bind's DNSSEC evidence (docs/protocol.md, "DNSSEC
 * evidence"): one TXT record "v=sk1; spki-sha256=<hex>" at
 * _sovereign-key.<Name>, proven by an RFC 9102 AuthenticationChain (the
 * TXT RRset and RRSIGs, then each zone's DNSKEY and DS RRsets with their
 * RRSIGs up to the root's DNSKEY RRset, uncompressed wire form, in that
 * order), valid at one time against root trust anchors.  The timeline, the
 * mirror and the client all judge it with sk_dnssec_check.
 */
#ifndef SK_DNSSEC_H
#define SK_DNSSEC_H

#include <stddef.h>
#include <stdint.h>

#include "entry.h"
#include "err.h"
#include "key.h"

/* A chain's largest size in bytes: base64url in a Bind, 21,846
 * characters, well inside SK_TILE_ENTRY_MAX. */
#define SK_DNSSEC_CHAIN_MAX   16384
#define SK_DNSSEC_LABEL       "_sovereign-key"
#define SK_DNSSEC_VERSION     "v=sk1"
/* Debian's dns-root-data: the root zone's DS records. */
#define SK_DNSSEC_ANCHORS     "/usr/share/dns/root.ds"

typedef struct sk_dnssec_chain_s    sk_dnssec_chain_t;
typedef struct sk_dnssec_anchors_s  sk_dnssec_anchors_t;

/*
 * Parse a chain strictly: each RR whole and in uncompressed wire form,
 * class IN, grouped in RRsets each followed by its RRSIGs, the RRsets in
 * the order above.  Errors name the RR (its index and offset) or the
 * RRset.  Free with sk_dnssec_chain_free.
 */
int sk_dnssec_chain_parse(sk_dnssec_chain_t **c, const unsigned char *p,
    size_t len, sk_err_t *err) SK_WUR;
void sk_dnssec_chain_free(sk_dnssec_chain_t *c);

/*
 * Read the root's trust anchors and when each is in force
 * (docs/protocol.md, "Trust anchors and rollovers"): either DS or DNSKEY
 * records of the root in zone-file form (SK_DNSSEC_ANCHORS's, Debian's
 * root.ds and root.key), in force at any time; or IANA's root-anchors.xml
 * (RFC 7958, RFC 9718), each KeyDigest a DS in force from its validFrom
 * until its validUntil.  The XML is held to its schema (elements in
 * order, no other element or attribute, no DTD; PublicKey and Flags, if
 * given, must be the key the digest names).  Errors name the file, line
 * and element.  Free with sk_dnssec_anchors_free.
 */
int sk_dnssec_anchors_load(sk_dnssec_anchors_t **a, const char *path,
    sk_err_t *err) SK_WUR;
/* The same from len bytes of buf; path names it in messages. */
int sk_dnssec_anchors_parse(sk_dnssec_anchors_t **a, const char *buf,
    size_t len, const char *path, sk_err_t *err) SK_WUR;
void sk_dnssec_anchors_free(sk_dnssec_anchors_t *a);

/*
 * Check that c proves, at time at, exactly one record at
 * _sovereign-key.<name> holding sk's SPKI hash, through the anchors in
 * force at that time.  SK_ERR_FORMAT: not the record asked for (none,
 * two, another form, an NSEC proof); SK_ERR_EXPIRED /
 * SK_ERR_NOT_YET_VALID: a signature outside its window;
 * SK_ERR_SIGNATURE: a signature or DS link that does not hold, or a root
 * key that is none of the anchors a dated anchor (root-anchors.xml) shows
 * in force at that time; SK_ERR_UNAVAILABLE: a root key that matches no
 * anchor in force then, where no dated anchor is either (a file without
 * validity windows cannot tell a key the root used before a rollover from
 * a forgery: not judged, never evidence); SK_ERR_WRONG_SK: the record
 * names another key.  The message names the RRset, zone or root key.
 */
int sk_dnssec_chain_check(const sk_dnssec_chain_t *c, const char *name,
    const sk_key_t *sk, const sk_dnssec_anchors_t *a, int64_t at,
    sk_err_t *err) SK_WUR;

/* Parse then check, the whole of what a verifier does with the bytes. */
int sk_dnssec_check(const unsigned char *p, size_t len, const char *name,
    const sk_key_t *sk, const sk_dnssec_anchors_t *a, int64_t at,
    sk_err_t *err) SK_WUR;

/* A Bind's or Rebind's DNSSEC-Chain, for its Name and the SK sk (its
 * Key), at time at (the entry's Timestamp, or the moment a timeline
 * stamps it).  SK_ERR_FORMAT also when e carries no DNSSEC-Chain. */
int sk_dnssec_check_entry(const sk_entry_t *e, const sk_key_t *sk,
    const sk_dnssec_anchors_t *a, int64_t at, sk_err_t *err) SK_WUR;

/* Ask resolver ("IPv4:PORT", "[IPv6]:PORT"; NULL: the system's) for the
 * chain of _sovereign-key.<name>, RRset by RRset with the DO bit, TTLs set
 * to the RRSIGs' original TTL; *out is malloc()ed.  SK_ERR_NOT_FOUND: an
 * RRset or its RRSIG is missing (the message names it);
 * SK_ERR_UNAVAILABLE: no answer. */
int sk_dnssec_chain_fetch(unsigned char **out, size_t *len, const char *name,
    const char *resolver, sk_err_t *err) SK_WUR;

/* The zone-file line to publish for name and sk, without a newline
 * (malloc()ed). */
int sk_dnssec_record(char **line, const char *name, const sk_key_t *sk,
    sk_err_t *err) SK_WUR;

#endif
