/*
 * dnssec_fixture.h -- RFC 9102 chains for _sovereign-key.example.test.
 * built from the zones tests/unit/dnssec_zones.sh signs, no server: for
 * test_dnssec.c and the integration tests' dnssec_chain tool.
 */
#ifndef SK_DNSSEC_FIXTURE_H
#define SK_DNSSEC_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include <sk/dnssec.h>

typedef struct {
    unsigned char  p[SK_DNSSEC_CHAIN_MAX + 1];
    size_t         len;
} dx_chain_t;


static inline int
dx_put(dx_chain_t *c, const ldns_rr *rr)
{
    uint8_t  *w;
    size_t    n;

    if (ldns_rr2wire(&w, rr, LDNS_SECTION_ANSWER, &n) != LDNS_STATUS_OK) {
        return -1;
    }
    if (c->len + n > sizeof(c->p)) {
        free(w);
        return -1;
    }
    memcpy(c->p + c->len, w, n);
    c->len += n;
    free(w);
    return 0;
}


/* Append the RRset of type at owner from dir/file.signed, then the RRSIGs
 * over it: -1 if the zone holds fewer than the RRset and one RRSIG. */
static inline int
dx_add(dx_chain_t *c, const char *dir, const char *file, const char *owner,
    ldns_rr_type type)
{
    ldns_zone     *z;
    ldns_rr_list  *rrs;
    ldns_rdf      *o;
    ldns_rr       *rr;
    char           path[512];
    size_t         i, pass, n = 0;
    FILE          *f;
    int            hit;

    snprintf(path, sizeof(path), "%s/%s.signed", dir, file);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    if (ldns_zone_new_frm_fp(&z, f, NULL, 3600, LDNS_RR_CLASS_IN)
        != LDNS_STATUS_OK)
    {
        fclose(f);
        return -1;
    }
    fclose(f);
    o = ldns_dname_new_frm_str(owner);
    rrs = ldns_zone_rrs(z);
    /* the SOA is kept apart from the other RRs; chains never carry it */
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < ldns_rr_list_rr_count(rrs); i++) {
            rr = ldns_rr_list_rr(rrs, i);
            if (ldns_dname_compare(ldns_rr_owner(rr), o) != 0) {
                continue;
            }
            hit = pass == 0 ? ldns_rr_get_type(rr) == type
                : ldns_rr_get_type(rr) == LDNS_RR_TYPE_RRSIG
                  && ldns_rdf2rr_type(ldns_rr_rrsig_typecovered(rr)) == type;
            if (hit && dx_put(c, rr) == 0) {
                n++;
            }
        }
    }
    ldns_rdf_deep_free(o);
    ldns_zone_deep_free(z);
    return n >= 2 ? 0 : -1;
}


/* The record from zone rec, example.test.'s DNSKEY from exk, the DS of
 * example.test. and DNSKEY of test. from tst, the DS of test. and the
 * root's DNSKEY from root. */
static inline int
dx_build(dx_chain_t *c, const char *dir, const char *rec, const char *exk,
    const char *tst, const char *root)
{
    c->len = 0;
    return dx_add(c, dir, rec, "_sovereign-key.example.test.",
               LDNS_RR_TYPE_TXT)
        | dx_add(c, dir, exk, "example.test.", LDNS_RR_TYPE_DNSKEY)
        | dx_add(c, dir, tst, "example.test.", LDNS_RR_TYPE_DS)
        | dx_add(c, dir, tst, "test.", LDNS_RR_TYPE_DNSKEY)
        | dx_add(c, dir, root, "test.", LDNS_RR_TYPE_DS)
        | dx_add(c, dir, root, ".", LDNS_RR_TYPE_DNSKEY);
}

#endif
