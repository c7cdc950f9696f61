/*
 * test_dnssec.c -- DNSSEC evidence (sk/dnssec.h) on chains built from
 * zones signed at test time (tests/unit/dnssec_zones.sh: ldns-keygen,
 * ldns-signzone with fixed windows), no server: the good chain is
 * accepted, each broken one refused with a message naming the cause.
 */
#include "testutil.h"
#include "dnssec_fixture.h"

#include <getdns/getdns.h>
#include <getdns/getdns_extra.h>

/* 2027-01-01: inside the zones' window 2020..2037 (libldns compares
 * RRSIG times as signed 32-bit numbers: nothing past 2038). */
#define T_AT  1798761600

static char                 *dir;
static sk_key_t             *sk;
static sk_dnssec_anchors_t  *anchors;


static int
setup(void **state)
{
    char      fp[SK_FINGERPRINT_SIZE], cmd[512], *path;
    sk_err_t  err;

    (void) state;
    dir = tu_tmpdir();
    assert_int_equal(sk_key_generate(&sk, SK_KEY_ED25519, 0, &err), 0);
    sk_key_fingerprint(fp, sk);
    snprintf(cmd, sizeof(cmd), "tests/unit/dnssec_zones.sh %s %s >/dev/null",
        dir, fp + strlen("sha256:"));
    assert_int_equal(system(cmd), 0);
    path = tu_path(dir, "root.ds");
    assert_int_equal(sk_dnssec_anchors_load(&anchors, path, &err), 0);
    free(path);
    return 0;
}


static int
teardown(void **state)
{
    (void) state;
    sk_dnssec_anchors_free(anchors);
    sk_key_free(sk);
    tu_rmtree(dir);
    return 0;
}


/* The RRset of type at owner from the signed zone file, then its RRSIGs. */
static void
add(dx_chain_t *c, const char *file, const char *owner, ldns_rr_type type)
{
    if (dx_add(c, dir, file, owner, type) != 0) {
        fail_msg("%s: no %s RRset at %s with RRSIGs", file,
            ldns_rr_descript(type)->_name, owner);
    }
}


/* Every RRset of type in the signed zone file, each with its RRSIGs (for
 * NSEC3, whose owners are hashes). */
static void
add_all(dx_chain_t *c, const char *file, ldns_rr_type type)
{
    ldns_zone     *z;
    ldns_rr_list  *rrs;
    ldns_rr       *rr;
    char          *path = tu_path(dir, file), *owner;
    size_t         i, n = 0;
    FILE          *f;

    path = realloc(path, strlen(path) + sizeof(".signed"));
    assert_non_null(path);
    strcat(path, ".signed");
    f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(ldns_zone_new_frm_fp(&z, f, NULL, 3600,
        LDNS_RR_CLASS_IN), LDNS_STATUS_OK);
    fclose(f);
    free(path);
    rrs = ldns_zone_rrs(z);
    for (i = 0; i < ldns_rr_list_rr_count(rrs); i++) {
        rr = ldns_rr_list_rr(rrs, i);
        if (ldns_rr_get_type(rr) == type) {
            owner = ldns_rdf2str(ldns_rr_owner(rr));
            add(c, file, owner, type);
            free(owner);
            n++;
        }
    }
    ldns_zone_deep_free(z);
    if (n == 0) {
        fail_msg("%s: no %s RRset", file, ldns_rr_descript(type)->_name);
    }
}


static void
build(dx_chain_t *c, const char *rec, const char *exk, const char *tst,
    const char *root)
{
    assert_int_equal(dx_build(c, dir, rec, exk, tst, root), 0);
}


/* Each RR of the ldns list as a getdns RR dict, in a new list (getdns's
 * own zone-file reader, getdns_fp2rr_list, reads uninitialised memory in
 * 1.6: valgrind). */
static getdns_list *
getdns_from_ldns(const ldns_rr_list *rrs)
{
    getdns_list  *l = getdns_list_create();
    getdns_dict  *d;
    uint8_t      *w;
    size_t        i, n;

    for (i = 0; i < ldns_rr_list_rr_count(rrs); i++) {
        assert_int_equal(ldns_rr2wire(&w, ldns_rr_list_rr(rrs, i),
            LDNS_SECTION_ANSWER, &n), LDNS_STATUS_OK);
        assert_int_equal(getdns_wire2rr_dict(w, n, &d), GETDNS_RETURN_GOOD);
        assert_int_equal(getdns_list_set_dict(l, i, d), GETDNS_RETURN_GOOD);
        getdns_dict_destroy(d);
        free(w);
    }
    return l;
}


/* The second validator: getdns_validate_dnssec2 on the same bytes and
 * anchors, the record's RRs to validate and the rest in support. */
static int
getdns_secure(const dx_chain_t *c, int64_t at)
{
    ldns_rr_list     *v = ldns_rr_list_new(), *s = ldns_rr_list_new();
    getdns_list      *val, *sup, *ta;
    ldns_zone        *z;
    ldns_rr          *rr;
    char             *path = tu_path(dir, "root.ds");
    FILE             *f = fopen(path, "r");
    size_t            pos = 0;
    int               rec = 1;
    getdns_return_t   r;

    assert_non_null(f);
    assert_int_equal(ldns_zone_new_frm_fp(&z, f, NULL, 3600,
        LDNS_RR_CLASS_IN), LDNS_STATUS_OK);
    fclose(f);
    free(path);
    while (pos < c->len) {
        assert_int_equal(ldns_wire2rr(&rr, c->p, c->len, &pos,
            LDNS_SECTION_ANSWER), LDNS_STATUS_OK);
        rec = rec && ldns_rr_get_type(rr) != LDNS_RR_TYPE_DNSKEY;
        assert_true(ldns_rr_list_push_rr(rec ? v : s, rr));
    }
    val = getdns_from_ldns(v);
    sup = getdns_from_ldns(s);
    ta = getdns_from_ldns(ldns_zone_rrs(z));
    r = getdns_validate_dnssec2(val, sup, ta, (time_t) at, 0);
    getdns_list_destroy(val);
    getdns_list_destroy(sup);
    getdns_list_destroy(ta);
    ldns_rr_list_deep_free(v);
    ldns_rr_list_deep_free(s);
    ldns_zone_deep_free(z);
    return r == GETDNS_DNSSEC_SECURE;
}


/* A whole chain: getdns finds it secure exactly when our refusal, if any,
 * is not about signatures (a record's content, not its proof). */
static void
agree(const dx_chain_t *c, int64_t at, sk_err_code_t code)
{
    /* not judged (SK_ERR_UNAVAILABLE) is not secure either */
    int  bogus = code == SK_ERR_EXPIRED || code == SK_ERR_NOT_YET_VALID
                 || code == SK_ERR_SIGNATURE || code == SK_ERR_UNAVAILABLE;

    if (getdns_secure(c, at) == bogus) {
        fail_msg("getdns says %s, libsk %s", bogus ? "secure" : "bogus",
            code == SK_OK ? "accepted" : sk_err_str(code));
    }
}


static void
refused(const dx_chain_t *c, int64_t at, sk_err_code_t code, const char *msg)
{
    sk_err_t  err;

    assert_int_equal(sk_dnssec_check(c->p, c->len, "example.test", sk,
        anchors, at, &err), -1);
    if (strstr(err.msg, msg) == NULL || err.code != code) {
        fail_msg("want %s \"%s\", got %s \"%s\"", sk_err_str(code), msg,
            sk_err_str(err.code), err.msg);
    }
}


static void
test_accepted(void **state)
{
    static dx_chain_t  c;
    sk_err_t        err;

    (void) state;
    build(&c, "ex", "ex", "test", "root");
    if (sk_dnssec_check(c.p, c.len, "example.test", sk, anchors, T_AT, &err)
        != 0)
    {
        fail_msg("%s", err.msg);
    }
    agree(&c, T_AT, SK_OK);
    /* the same chain for another name is no evidence for it */
    assert_int_equal(sk_dnssec_check(c.p, c.len, "example.org", sk, anchors,
        T_AT, &err), -1);
    assert_non_null(strstr(err.msg, "want TXT _sovereign-key.example.org."));
}


static void
test_signatures(void **state)
{
    static dx_chain_t  c;

    (void) state;
    build(&c, "ex.old", "ex", "test", "root");
    refused(&c, T_AT, SK_ERR_EXPIRED, "RRSIG over TXT "
        "_sovereign-key.example.test.: ");
    agree(&c, T_AT, SK_ERR_EXPIRED);
    build(&c, "ex", "ex", "test", "root");
    refused(&c, 1546300800 /* 2019 */, SK_ERR_NOT_YET_VALID, "RRSIG over "
        "DNSKEY .: ");
    agree(&c, 1546300800, SK_ERR_NOT_YET_VALID);
    build(&c, "ex", "ex", "test.nods", "root");
    refused(&c, T_AT, SK_ERR_SIGNATURE, "broken DS link: no DNSKEY of zone "
        "example.test. matches its DS RRset");
    agree(&c, T_AT, SK_ERR_SIGNATURE);
    /* Another root's key, against anchors without validity windows: not
     * judged (a key the root used before a rollover looks the same). */
    build(&c, "ex", "ex", "test", "other.root");
    refused(&c, T_AT, SK_ERR_UNAVAILABLE, "trust anchor mismatch: the "
        "root's DNSKEY RRset is signed by no key an anchor names (keys ");
    refused(&c, T_AT, SK_ERR_UNAVAILABLE, "root.ds gives no validity "
        "windows, so a key the root used before a rollover cannot be told "
        "from a forgery");
    agree(&c, T_AT, SK_ERR_UNAVAILABLE);
}


/* path holds text. */
static void
spew(const char *path, const char *text)
{
    FILE  *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}


/* The KeyDigest of the DS in dir/ds, valid from from until until (NULL:
 * open), appended to xml. */
static void
key_digest(char *xml, size_t size, const char *ds, const char *id,
    const char *from, const char *until)
{
    char      *path = tu_path(dir, ds), hex[100], buf[512];
    unsigned   tag, alg, dt;
    FILE      *f = fopen(path, "r");

    assert_non_null(f);
    assert_int_equal(fscanf(f, ". IN DS %u %u %u %99s", &tag, &alg, &dt,
        hex), 4);
    fclose(f);
    free(path);
    snprintf(buf, sizeof(buf), "<KeyDigest id=\"%s\" validFrom=\"%s\"%s%s%s>\n"
        "<KeyTag>%u</KeyTag>\n<Algorithm>%u</Algorithm>\n"
        "<DigestType>%u</DigestType>\n<Digest>%s</Digest>\n</KeyDigest>\n",
        id, from, until ? " validUntil=\"" : "", until ? until : "",
        until ? "\"" : "", tag, alg, dt, hex);
    strncat(xml, buf, size - strlen(xml) - 1);
}


/* A checked chain (NULL msg: accepted) through anchors a at time at. */
static void
judged(const dx_chain_t *c, const sk_dnssec_anchors_t *a, int64_t at,
    sk_err_code_t code, const char *msg)
{
    sk_err_t  err;
    int       rc;

    rc = sk_dnssec_check(c->p, c->len, "example.test", sk, a, at, &err);
    if (msg == NULL && rc != 0) {
        fail_msg("want accepted, got %s \"%s\"", sk_err_str(err.code),
            err.msg);
    }
    if (msg != NULL && (rc == 0 || err.code != code
                        || strstr(err.msg, msg) == NULL))
    {
        fail_msg("want %s \"%s\", got %s \"%s\"", sk_err_str(code), msg,
            rc == 0 ? "accepted" : sk_err_str(err.code), rc == 0 ? ""
            : err.msg);
    }
}


#define Y2019  1559347200       /* 2019-06-01 */
#define Y2021  1622505600       /* 2021-06-01 */
#define Y2031  1938556800       /* 2031-06-07 */

/*
 * A root key rollover: "root" is signed with the old key (the new one
 * published beside it), "root.new" with the new key.  Each Bind is judged
 * at its own time against the anchors in force then: root-anchors.xml's
 * windows back the old key's chains in its window and the new key's in
 * its own; anchors without windows that lack the key a chain is signed
 * with cannot judge it (never a refusal that would prove a timeline
 * wrong).
 */
static void
test_rollover(void **state)
{
    static dx_chain_t     old, new;
    sk_dnssec_anchors_t  *a;
    sk_err_t              err;
    char                  xml[4096], *path, *ds_old, *ds_new;

    (void) state;
    build(&old, "ex", "ex", "test", "root");
    build(&new, "ex", "ex", "test", "root.new");

    snprintf(xml, sizeof(xml), "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<TrustAnchor id=\"T\" source=\"file:test\">\n<Zone>.</Zone>\n");
    key_digest(xml, sizeof(xml), "root.ds", "old",
        "2020-01-01T00:00:00+00:00", "2030-01-01T00:00:00Z");
    key_digest(xml, sizeof(xml), "root-new.ds", "new",
        "2025-01-01T00:00:00+00:00", NULL);
    strncat(xml, "</TrustAnchor>\n", sizeof(xml) - strlen(xml) - 1);
    path = tu_path(dir, "root-anchors.xml");
    spew(path, xml);
    tu_assert_ok(sk_dnssec_anchors_load(&a, path, &err), &err);
    free(path);
    judged(&old, a, Y2021, SK_OK, NULL);
    judged(&old, a, T_AT, SK_OK, NULL);
    judged(&new, a, T_AT, SK_OK, NULL);
    judged(&new, a, Y2031, SK_OK, NULL);
    judged(&new, a, Y2021, SK_ERR_SIGNATURE, "trust anchor mismatch: the "
        "root's DNSKEY RRset is signed by key ");
    judged(&new, a, Y2021, SK_ERR_SIGNATURE, "root-anchors.xml from "
        "2025-01-01T00:00:00Z until (open), not at 2021-06-01T00:00:00Z");
    judged(&old, a, Y2031, SK_ERR_SIGNATURE, "root-anchors.xml from "
        "2020-01-01T00:00:00Z until 2030-01-01T00:00:00Z, not at "
        "2031-06-07T00:00:00Z");
    /* before any window: the file says nothing of that time */
    judged(&old, a, Y2019, SK_ERR_UNAVAILABLE, "trust anchor mismatch");
    build(&old, "ex", "ex", "test", "other.root");
    judged(&old, a, T_AT, SK_ERR_SIGNATURE, "the root's DNSKEY RRset is "
        "signed by no key an anchor in force at 2027-01-01T00:00:00Z names "
        "(keys ");
    sk_dnssec_anchors_free(a);

    /* Only the new key, no windows: the old key's chains are not judged
     * (SK_ERR_UNAVAILABLE), although the new key is in their root set. */
    build(&old, "ex", "ex", "test", "root");
    path = tu_path(dir, "root-new.ds");
    tu_assert_ok(sk_dnssec_anchors_load(&a, path, &err), &err);
    free(path);
    judged(&new, a, T_AT, SK_OK, NULL);
    judged(&old, a, Y2021, SK_ERR_UNAVAILABLE, "gives no validity windows");
    judged(&old, a, T_AT, SK_ERR_UNAVAILABLE, "gives no validity windows");
    sk_dnssec_anchors_free(a);

    /* Both keys, no windows: both at any time. */
    ds_old = tu_path(dir, "root.ds");
    ds_new = tu_path(dir, "root-new.ds");
    path = tu_path(dir, "both.ds");
    snprintf(xml, sizeof(xml), "cat %s %s > %s", ds_old, ds_new, path);
    assert_int_equal(system(xml), 0);
    tu_assert_ok(sk_dnssec_anchors_load(&a, path, &err), &err);
    judged(&old, a, Y2021, SK_OK, NULL);
    judged(&new, a, Y2021, SK_OK, NULL);
    sk_dnssec_anchors_free(a);
    free(path);
    free(ds_old);
    free(ds_new);
}


/* The root's key and RRSIGs moved to algorithm 253 (private, unknown to
 * any validator), its DS re-made as the anchor: the link holds, the
 * signature cannot be checked. */
static void
test_algorithm(void **state)
{
    static dx_chain_t     c, d;
    sk_dnssec_anchors_t  *a;
    ldns_rr              *rr, *key = NULL, *ds;
    ldns_rdf             *root = ldns_dname_new_frm_str(".");
    sk_err_t              err;
    size_t                pos = 0;
    char                 *path, *text;
    FILE                 *f;

    (void) state;
    build(&c, "ex", "ex", "test", "root");
    d.len = 0;
    while (pos < c.len) {
        assert_int_equal(ldns_wire2rr(&rr, c.p, c.len, &pos,
            LDNS_SECTION_ANSWER), LDNS_STATUS_OK);
        if (ldns_dname_compare(ldns_rr_owner(rr), root) == 0
            && ldns_rr_get_type(rr) == LDNS_RR_TYPE_DNSKEY)
        {
            ldns_rdf_deep_free(ldns_rr_set_rdf(rr,
                ldns_native2rdf_int8(LDNS_RDF_TYPE_ALG, 253), 2));
            /* the root publishes its next key too: the last one signs */
            ldns_rr_free(key);
            key = ldns_rr_clone(rr);
        } else if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_RRSIG
                   && ldns_dname_compare(ldns_rr_rrsig_signame(rr), root)
                      == 0)
        {
            ldns_rdf_deep_free(ldns_rr_set_rdf(rr,
                ldns_native2rdf_int8(LDNS_RDF_TYPE_ALG, 253), 1));
            ldns_rdf_deep_free(ldns_rr_set_rdf(rr,
                ldns_native2rdf_int16(LDNS_RDF_TYPE_INT16,
                    ldns_calc_keytag(key)), 6));
        }
        assert_int_equal(dx_put(&d, rr), 0);
        ldns_rr_free(rr);
    }
    assert_non_null(key);
    ds = ldns_key_rr2ds(key, LDNS_SHA256);
    text = ldns_rr2str(ds);
    path = tu_path(dir, "alg.ds");
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(sk_dnssec_anchors_load(&a, path, &err), 0);
    assert_int_equal(sk_dnssec_check(d.p, d.len, "example.test", sk, a,
        T_AT, &err), -1);
    if (strstr(err.msg, "RRSIG over DNSKEY .: ") == NULL
        || strstr(err.msg, ldns_get_errorstr_by_id(
               LDNS_STATUS_CRYPTO_UNKNOWN_ALGO)) == NULL)
    {
        fail_msg("want an unknown algorithm over DNSKEY ., got \"%s\"",
            err.msg);
    }
    sk_dnssec_anchors_free(a);
    free(path);
    free(text);
    ldns_rr_free(ds);
    ldns_rr_free(key);
    ldns_rdf_deep_free(root);
}


/* c holds a signed proof that zone file has no record: with the DNSKEY
 * and DS RRsets up to the root it is still not evidence. */
static void
non_existence(dx_chain_t *c, const char *file)
{
    add(c, file, "example.test.", LDNS_RR_TYPE_DNSKEY);
    add(c, "test", "example.test.", LDNS_RR_TYPE_DS);
    add(c, "test", "test.", LDNS_RR_TYPE_DNSKEY);
    add(c, "root", "test.", LDNS_RR_TYPE_DS);
    add(c, "root", ".", LDNS_RR_TYPE_DNSKEY);
    refused(c, T_AT, SK_ERR_FORMAT, "an NSEC or NSEC3 proof of "
        "non-existence");
    agree(c, T_AT, SK_ERR_FORMAT);
}


static void
test_record(void **state)
{
    static dx_chain_t  c;
    sk_err_t        err;
    char           *line, fp[SK_FINGERPRINT_SIZE], want[256];

    (void) state;
    build(&c, "ex.wrong", "ex", "test", "root");
    refused(&c, T_AT, SK_ERR_WRONG_SK, "the TXT at "
        "_sovereign-key.example.test. holds 0000");
    agree(&c, T_AT, SK_ERR_WRONG_SK);
    build(&c, "ex.two", "ex", "test", "root");
    refused(&c, T_AT, SK_ERR_FORMAT, "2 TXT records at "
        "_sovereign-key.example.test., want exactly one");
    agree(&c, T_AT, SK_ERR_FORMAT);
    c.len = 0;
    add(&c, "ex.none", "example.test.", LDNS_RR_TYPE_NSEC);
    non_existence(&c, "ex.none");
    c.len = 0;
    add_all(&c, "ex.nsec3", LDNS_RR_TYPE_NSEC3);
    non_existence(&c, "ex.nsec3");

    assert_int_equal(sk_dnssec_record(&line, "example.test", sk, &err), 0);
    sk_key_fingerprint(fp, sk);
    snprintf(want, sizeof(want), "_sovereign-key.example.test. 3600 IN TXT "
        "\"v=sk1; spki-sha256=%s\"", fp + strlen("sha256:"));
    assert_string_equal(line, want);
    free(line);
}


static void
test_shape(void **state)
{
    static dx_chain_t  c, d;
    ldns_rr        *rr;
    size_t          cut = 0;

    (void) state;
    build(&c, "ex", "ex", "test", "root");
    c.len -= 5;
    refused(&c, T_AT, SK_ERR_FORMAT, "dnssec chain: RR ");
    /* whole RRs, but the root's DNSKEY RRset left off */
    d.len = 0;
    add(&d, "ex", "_sovereign-key.example.test.", LDNS_RR_TYPE_TXT);
    add(&d, "ex", "example.test.", LDNS_RR_TYPE_DNSKEY);
    add(&d, "test", "example.test.", LDNS_RR_TYPE_DS);
    add(&d, "test", "test.", LDNS_RR_TYPE_DNSKEY);
    add(&d, "root", "test.", LDNS_RR_TYPE_DS);
    refused(&d, T_AT, SK_ERR_FORMAT, "ends before DNSKEY . (truncated)");
    /* the DS of example.test. after test.'s DNSKEY, not before */
    d.len = 0;
    add(&d, "ex", "_sovereign-key.example.test.", LDNS_RR_TYPE_TXT);
    add(&d, "ex", "example.test.", LDNS_RR_TYPE_DNSKEY);
    add(&d, "test", "test.", LDNS_RR_TYPE_DNSKEY);
    add(&d, "test", "example.test.", LDNS_RR_TYPE_DS);
    add(&d, "root", "test.", LDNS_RR_TYPE_DS);
    add(&d, "root", ".", LDNS_RR_TYPE_DNSKEY);
    assert_int_equal(d.len, c.len + 5);
    refused(&d, T_AT, SK_ERR_FORMAT, "RRset 2 is DNSKEY test., want DS "
        "example.test.");
    /* the record's RRSIG without the record before it */
    c.len += 5;
    assert_int_equal(ldns_wire2rr(&rr, c.p, c.len, &cut, LDNS_SECTION_ANSWER),
        LDNS_STATUS_OK);
    ldns_rr_free(rr);
    memmove(d.p, c.p + cut, c.len - cut);
    d.len = c.len - cut;
    refused(&d, T_AT, SK_ERR_FORMAT, "RR 0 (offset 0): an RRSIG not after "
        "the RRset it covers");
    memset(d.p, 0, sizeof(d.p));
    d.len = SK_DNSSEC_CHAIN_MAX + 1;
    refused(&d, T_AT, SK_ERR_FORMAT, "16385 bytes, more than 16384");
}


/* IANA's root-anchors.xml as published in 2024 (public keys of KSK-2017
 * and KSK-2024 from Debian's root.key). */
#define IANA_XML  "tests/unit/root-anchors.xml"

static char *iana;


/* IANA's file with the first from changed to to, refused naming msg. */
static void
xml_refused(const char *from, const char *to, const char *msg)
{
    sk_dnssec_anchors_t  *a = NULL;
    sk_err_t              err;
    char                 *p, *x;
    size_t                len = strlen(iana);

    x = malloc(len + strlen(to) + 1);
    assert_non_null(x);
    p = strstr(iana, from);
    if (p == NULL) {
        fail_msg("no \"%s\" in %s", from, IANA_XML);
    }
    memcpy(x, iana, (size_t) (p - iana));
    strcpy(x + (p - iana), to);
    strcat(x, p + strlen(from));
    if (sk_dnssec_anchors_parse(&a, x, strlen(x), "root-anchors.xml", &err)
        == 0 || err.code != SK_ERR_FORMAT || strstr(err.msg, msg) == NULL)
    {
        fail_msg("%s -> %s: want \"%s\", got %s", from, to, msg,
            a != NULL ? "accepted" : err.msg);
    }
    assert_null(a);
    free(x);
}


/* root-anchors.xml held to its schema, every value checked. */
static void
test_anchors_xml(void **state)
{
    sk_dnssec_anchors_t  *a;
    sk_err_t              err;
    size_t                len;

    (void) state;
    tu_assert_ok(sk_file_read(&iana, &len, IANA_XML, 65536, &err), &err);
    tu_assert_ok(sk_dnssec_anchors_load(&a, IANA_XML, &err), &err);
    sk_dnssec_anchors_free(a);

    xml_refused("<Zone>.</Zone>", "<Zone>com.</Zone>",
        "root-anchors.xml: line 3: <Zone> is \"com.\", not \".\"");
    xml_refused("<Zone>.</Zone>", "",
        "line 4: <KeyDigest> not expected in <TrustAnchor>");
    xml_refused("<DigestType>2</DigestType>\n<Digest>49AAC11D7B6F6446702E54A"
        "1607371607A1A41855200FD2CE1CDDE32F24E8FB5</Digest>",
        "<Digest>49AAC11D7B6F6446702E54A1607371607A1A41855200FD2CE1CDDE32F2"
        "4E8FB5</Digest><DigestType>2</DigestType>",
        "KeyDigest \"Kjqmt7v\": <Digest> where <DigestType> must be");
    xml_refused("<KeyTag>19036</KeyTag>", "<KeyTag>19036</KeyTag><Foo/>",
        "unknown element <Foo>");
    xml_refused("<Flags>257</Flags>", "<Flags>257</Flags><Flags>257</Flags>",
        "KeyDigest \"Klajeyz\": <Flags> after <Flags>");
    xml_refused("<KeyTag>19036</KeyTag>", "<KeyTag>19036<Zone/></KeyTag>",
        "<Zone> not expected in <KeyTag>");
    xml_refused("validFrom=\"2010-07-15T00:00:00+00:00\"",
        "validFrom=\"2010-07-15\"", "KeyDigest \"Kjqmt7v\": validFrom "
        "\"2010-07-15\" is not a dateTime with a time zone");
    xml_refused("validFrom=\"2010-07-15T00:00:00+00:00\"",
        "validFrom=\"2010-07-15T00:00:00\"", "is not a dateTime with a "
        "time zone");
    xml_refused("validFrom=\"2010-07-15T00:00:00+00:00\"",
        "validFrom=\"2010-02-30T00:00:00Z\"", "is not a dateTime");
    xml_refused("validUntil=\"2019-01-11T00:00:00+00:00\"",
        "validUntil=\"2010-07-15T00:00:00Z\"",
        "validUntil is not after validFrom");
    xml_refused(" validFrom=\"2017-02-02T00:00:00+00:00\"", "",
        "KeyDigest: no validFrom attribute");
    xml_refused("id=\"Kmyv6jo\"", "id=\"Kmyv6jo\" foo=\"1\"",
        "KeyDigest: unknown attribute \"foo\"");
    xml_refused("<Zone>", "<Zone x=\"1\">", "Zone: unknown attribute \"x\"");
    xml_refused(" source=\"http://data.iana.org/root-anchors/"
        "root-anchors.xml\"", "", "TrustAnchor: no source attribute");
    xml_refused("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "<!DOCTYPE TrustAnchor [<!ENTITY a \"b\">]>\n",
        "a DOCTYPE is not allowed");
    xml_refused("<Zone>", "<?sk x?><Zone>",
        "a processing instruction is not allowed");
    xml_refused("<Zone>", "x<Zone>", "text where only elements may be");
    xml_refused("8FB5</Digest>", "8FB</Digest>",
        "<Digest> is not 64 hex digits");
    xml_refused("8FB5</Digest>", "8FBG</Digest>",
        "<Digest> is not 64 hex digits");
    xml_refused("<DigestType>2</DigestType>", "<DigestType>3</DigestType>",
        "<DigestType> 3 is not SHA-1 (1), SHA-256 (2) or SHA-384 (4)");
    xml_refused("<KeyTag>19036</KeyTag>", "<KeyTag>65536</KeyTag>",
        "<KeyTag> \"65536\" is not a number from 0 to 65535");
    xml_refused("<KeyTag>19036</KeyTag>", "<KeyTag>019036</KeyTag>",
        "is not a number");
    xml_refused("<Algorithm>8</Algorithm>", "<Algorithm>-8</Algorithm>",
        "<Algorithm> \"-8\" is not a number from 0 to 255");
    xml_refused("<Flags>257</Flags>\n</KeyDigest>\n<KeyDigest id=\"Kmyv",
        "<Flags>256</Flags>\n</KeyDigest>\n<KeyDigest id=\"Kmyv",
        "KeyDigest \"Klajeyz\": <PublicKey> and <Flags> are not the key its "
        "<KeyTag> and <Digest> name");
    xml_refused("<Flags>257</Flags>", "", "KeyDigest \"Klajeyz\": "
        "<PublicKey> and <Flags> come together or not at all");
    xml_refused("<PublicKey>AwEAAaz", "<PublicKey>!AwEAAaz",
        "<PublicKey> is not base64");
    xml_refused("</KeyDigest>\n</TrustAnchor>", "</KeyDigest>\n",
        "no element found");
    xml_refused("<KeyDigest id=\"Kjqmt7v\"", "</TrustAnchor><KeyDigest "
        "id=\"Kjqmt7v\"", "line 4: no <KeyDigest>");
    xml_refused("<TrustAnchor id", "<Zone id", "<Zone> where <TrustAnchor> "
        "must be");
    /* a NUL byte, which expat would take for the end */
    iana[10] = '\0';
    assert_int_equal(sk_dnssec_anchors_parse(&a, iana, len, "x.xml", &err),
        -1);
    assert_string_equal(err.msg, "x.xml: a NUL byte");
    free(iana);
}


static void
test_anchors(void **state)
{
    sk_dnssec_anchors_t  *a;
    sk_err_t              err;
    char                 *path;

    (void) state;
    path = tu_path(dir, "test.signed");
    assert_int_equal(sk_dnssec_anchors_load(&a, path, &err), -1);
    assert_non_null(strstr(err.msg, "want a DS or DNSKEY record of the root"));
    free(path);
    assert_int_equal(sk_dnssec_anchors_load(&a, "/nonexistent/root.ds",
        &err), -1);
    assert_int_equal(err.code, SK_ERR_SYSTEM);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_signatures),
        cmocka_unit_test(test_rollover),
        cmocka_unit_test(test_algorithm),
        cmocka_unit_test(test_record),
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_anchors),
        cmocka_unit_test(test_anchors_xml),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
