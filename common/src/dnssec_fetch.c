/*
 * dnssec_fetch.c -- sk_dnssec_chain_fetch (sk/dnssec.h): the RFC 9102
 * chain for _sovereign-key.<name> asked of a resolver with the DO bit,
 * RRset by RRset: the record, then each signer's DNSKEY and DS up to the
 * root.  TTLs are set back to each RRSIG's original TTL and each RRset
 * (and its RRSIGs) is put in canonical order (RFC 4034 6.3), so the chain
 * is the same bytes whichever cache answered: a resolver counts TTLs down,
 * and one with rrset-roundrobin rotates the order of every answer.
 * The bytes are parsed back before they are returned; whether they prove
 * anything is sk_dnssec_check's to say.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "sk/addr.h"
#include "sk/dnssec.h"

#define SK_DNSSEC_FETCH_TIMEOUT  5      /* seconds per query */


typedef struct {
    unsigned char  p[SK_DNSSEC_CHAIN_MAX];
    size_t         len;
} sk_dnssec_buf_t;


/* The resolver: addr ("IPv4:PORT" or "[IPv6]:PORT", sk/addr.h), or the
 * system's (/etc/resolv.conf) when NULL. */
static int
sk_dnssec_resolver(ldns_resolver **res, const char *addr, sk_err_t *err)
{
    struct timeval            tv = { SK_DNSSEC_FETCH_TIMEOUT, 0 };
    struct sockaddr_storage   ss;
    const void               *in;
    ldns_rdf                 *ns;
    ldns_status               st;
    uint16_t                  port;
    char                      ip[INET6_ADDRSTRLEN];
    int                       v6;

    *res = NULL;
    if (addr == NULL) {
        st = ldns_resolver_new_frm_file(res, NULL);
        if (st != LDNS_STATUS_OK) {
            return sk_err_set(err, SK_ERR_UNAVAILABLE, "dnssec: the system "
                "resolver: %s", ldns_get_errorstr_by_id(st));
        }
    } else {
        if (sk_addr_parse(&ss, addr, err) != 0) {
            return sk_err_prefix(err, "dnssec: resolver");
        }
        v6 = ss.ss_family == AF_INET6;
        in = v6 ? (const void *) &((struct sockaddr_in6 *) &ss)->sin6_addr
                : (const void *) &((struct sockaddr_in *) &ss)->sin_addr;
        port = ntohs(v6 ? ((struct sockaddr_in6 *) &ss)->sin6_port
                        : ((struct sockaddr_in *) &ss)->sin_port);
        inet_ntop(ss.ss_family, in, ip, sizeof(ip));
        ns = ldns_rdf_new_frm_str(v6 ? LDNS_RDF_TYPE_AAAA : LDNS_RDF_TYPE_A,
            ip);
        *res = ldns_resolver_new();
        if (ns == NULL || *res == NULL
            || ldns_resolver_push_nameserver(*res, ns) != LDNS_STATUS_OK)
        {
            ldns_rdf_deep_free(ns);
            ldns_resolver_deep_free(*res);
            *res = NULL;
            return sk_err_set(err, SK_ERR_NOMEM, "dnssec: resolver");
        }
        ldns_rdf_deep_free(ns);
        ldns_resolver_set_port(*res, port);
    }
    ldns_resolver_set_recursive(*res, true);
    ldns_resolver_set_dnssec(*res, true);
    ldns_resolver_set_edns_udp_size(*res, 4096);
    ldns_resolver_set_fallback(*res, true);
    ldns_resolver_set_timeout(*res, tv);
    ldns_resolver_set_retry(*res, 2);
    return 0;
}


/* Append rr to b with its TTL set to ttl. */
static int
sk_dnssec_put(sk_dnssec_buf_t *b, ldns_rr *rr, uint32_t ttl, sk_err_t *err)
{
    uint8_t  *w = NULL;
    size_t    n = 0;

    ldns_rr_set_ttl(rr, ttl);
    if (ldns_rr2wire(&w, rr, LDNS_SECTION_ANSWER, &n) != LDNS_STATUS_OK) {
        return sk_err_set(err, SK_ERR_NOMEM, "dnssec: chain");
    }
    if (b->len + n > sizeof(b->p)) {
        free(w);
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec: chain too big: more "
            "than %d bytes", SK_DNSSEC_CHAIN_MAX);
    }
    memcpy(b->p + b->len, w, n);
    b->len += n;
    free(w);
    return 0;
}


/* The RRSIGs of all that cover type, in a new list of borrowed RRs. */
static ldns_rr_list *
sk_dnssec_covering(const ldns_rr_list *all, ldns_rr_type type)
{
    ldns_rr_list  *sigs = ldns_rr_list_new();
    ldns_rr       *sig;
    size_t         i;

    for (i = 0; sigs != NULL && all != NULL
                && i < ldns_rr_list_rr_count(all); i++)
    {
        sig = ldns_rr_list_rr(all, i);
        if (ldns_rdf2rr_type(ldns_rr_rrsig_typecovered(sig)) == type
            && !ldns_rr_list_push_rr(sigs, sig))
        {
            ldns_rr_list_free(sigs);
            return NULL;
        }
    }
    return sigs;
}


/* Ask for the RRset of type at owner; append it and its RRSIGs to b, each
 * in canonical order, and hand back the RRSIGs' signer (a new rdf). */
static int
sk_dnssec_ask(sk_dnssec_buf_t *b, ldns_rdf **signer, ldns_resolver *res,
    const ldns_rdf *owner, ldns_rr_type type, sk_err_t *err)
{
    ldns_rr_list  *rrs = NULL, *all = NULL, *sigs = NULL;
    ldns_pkt      *pkt;
    uint32_t       ttl;
    size_t         i;
    char          *o = ldns_rdf2str(owner), *t = ldns_rr_type2str(type);
    int            rc = -1;

    *signer = NULL;
    pkt = ldns_resolver_query(res, owner, type, LDNS_RR_CLASS_IN, LDNS_RD);
    if (pkt == NULL) {
        sk_err_set(err, SK_ERR_UNAVAILABLE, "dnssec: %s %s: no answer from "
            "the resolver", t, o);
        goto done;
    }
    rrs = ldns_pkt_rr_list_by_name_and_type(pkt, owner, type,
        LDNS_SECTION_ANSWER);
    all = ldns_pkt_rr_list_by_name_and_type(pkt, owner, LDNS_RR_TYPE_RRSIG,
        LDNS_SECTION_ANSWER);
    sigs = sk_dnssec_covering(all, type);
    if (sigs == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "dnssec");
        goto done;
    }
    if (rrs == NULL || ldns_rr_list_rr_count(sigs) == 0) {
        sk_err_set(err, SK_ERR_NOT_FOUND, "dnssec: %s %s: %s (rcode %d)", t,
            o, rrs == NULL ? "no such RRset" : "no RRSIG over it",
            (int) ldns_pkt_get_rcode(pkt));
        goto done;
    }
    ldns_rr_list_sort(rrs);
    ldns_rr_list_sort(sigs);
    ttl = ldns_rdf2native_int32(
        ldns_rr_rrsig_origttl(ldns_rr_list_rr(sigs, 0)));
    for (i = 0; i < ldns_rr_list_rr_count(rrs); i++) {
        if (sk_dnssec_put(b, ldns_rr_list_rr(rrs, i), ttl, err) != 0) {
            goto done;
        }
    }
    for (i = 0; i < ldns_rr_list_rr_count(sigs); i++) {
        if (sk_dnssec_put(b, ldns_rr_list_rr(sigs, i), ttl, err) != 0) {
            goto done;
        }
    }
    *signer = ldns_rdf_clone(ldns_rr_rrsig_signame(ldns_rr_list_rr(sigs,
        0)));
    rc = *signer != NULL ? 0 : sk_err_set(err, SK_ERR_NOMEM, "dnssec");
done:
    ldns_rr_list_deep_free(rrs);
    ldns_rr_list_free(sigs);
    ldns_rr_list_deep_free(all);
    ldns_pkt_free(pkt);
    free(o);
    free(t);
    return rc;
}


/* From zone up: its DNSKEY, then (below the root) its DS, whose signer
 * must be a parent zone (so the walk ends). */
static int
sk_dnssec_walk(sk_dnssec_buf_t *b, ldns_resolver *res, ldns_rdf *zone,
    sk_err_t *err)
{
    ldns_rdf  *next = NULL;
    char      *z;
    int        rc;

    for (;;) {
        rc = sk_dnssec_ask(b, &next, res, zone, LDNS_RR_TYPE_DNSKEY, err);
        ldns_rdf_deep_free(next);
        next = NULL;
        if (rc != 0 || ldns_dname_label_count(zone) == 0) {
            break;
        }
        rc = sk_dnssec_ask(b, &next, res, zone, LDNS_RR_TYPE_DS, err);
        if (rc == 0 && !ldns_dname_is_subdomain(zone, next)) {
            z = ldns_rdf2str(zone);
            rc = sk_err_set(err, SK_ERR_FORMAT, "dnssec: DS %s not signed "
                "by a parent zone", z ? z : "?");
            free(z);
        }
        if (rc != 0) {
            break;
        }
        ldns_rdf_deep_free(zone);
        zone = next;
        next = NULL;
    }
    ldns_rdf_deep_free(next);
    ldns_rdf_deep_free(zone);
    return rc;
}


int
sk_dnssec_chain_fetch(unsigned char **out, size_t *len, const char *name,
    const char *resolver, sk_err_t *err)
{
    sk_dnssec_buf_t         *b;
    sk_dnssec_chain_t       *c;
    ldns_resolver           *res;
    ldns_rdf                *owner, *zone;
    char                     o[300];
    int                      rc;

    *out = NULL;
    snprintf(o, sizeof(o), SK_DNSSEC_LABEL ".%s.", name);
    owner = ldns_dname_new_frm_str(o);
    if (owner == NULL) {
        return sk_err_set(err, SK_ERR_FORMAT, "dnssec: %s: not a DNS name",
            o);
    }
    b = calloc(1, sizeof(*b));
    if (b == NULL || sk_dnssec_resolver(&res, resolver, err) != 0) {
        ldns_rdf_deep_free(owner);
        free(b);
        return b == NULL ? sk_err_set(err, SK_ERR_NOMEM, "dnssec") : -1;
    }
    rc = sk_dnssec_ask(b, &zone, res, owner, LDNS_RR_TYPE_TXT, err);
    if (rc == 0) {
        rc = sk_dnssec_walk(b, res, zone, err);
    }
    ldns_resolver_deep_free(res);
    ldns_rdf_deep_free(owner);
    if (rc == 0 && sk_dnssec_chain_parse(&c, b->p, b->len, err) == 0) {
        sk_dnssec_chain_free(c);
        *out = malloc(b->len);
        *len = b->len;
        rc = *out != NULL ? 0 : sk_err_set(err, SK_ERR_NOMEM, "dnssec");
        if (rc == 0) {
            memcpy(*out, b->p, b->len);
        }
    } else {
        rc = -1;
    }
    free(b);
    return rc;
}
