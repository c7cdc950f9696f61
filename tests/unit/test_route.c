/*
 * test_route.c -- alternate routes: the strict parser (what may reach a
 * socket or a SOCKS proxy) and the order a client tries them in.
 */
#include "testutil.h"

#include <sk/route.h>

/* A valid v3 address (of the key 0x42...42), made in setup. */
static char  onion[SK_ONION_ADDR_LEN + 1];


static int
setup(void **state)
{
    unsigned char  pub[32];

    (void) state;
    memset(pub, 0x42, sizeof(pub));
    sk_onion_address(onion, pub);
    return onion[0] != '\0' ? 0 : -1;
}


static void
parse_ok(sk_route_t *r, const char *s)
{
    sk_err_t  err;

    tu_assert_ok(sk_route_parse(r, s, strlen(s), &err), &err);
}


static void
parse_bad(const char *s, size_t len, const char *why)
{
    sk_route_t  r;
    sk_err_t    err;

    tu_assert_err(sk_route_parse(&r, s, len, &err), &err, SK_ERR_FORMAT,
        why);
    assert_int_equal(r.type, SK_ROUTE_INVALID);
    assert_string_equal(r.host, "");
    if (strstr(r.why, why) == NULL) {
        fail_msg("why \"%s\" lacks \"%s\"", r.why, why);
    }
}


static void
test_parse_addresses(void **state)
{
    sk_route_t  r;

    (void) state;
    parse_ok(&r, "192.0.2.7:8443");
    assert_int_equal(r.type, SK_ROUTE_ADDR);
    assert_string_equal(r.host, "192.0.2.7");
    assert_int_equal(r.port, 8443);
    assert_false(r.ipv6);
    assert_false(sk_route_via_tor(&r));

    parse_ok(&r, "[2001:db8::7]:443");
    assert_int_equal(r.type, SK_ROUTE_ADDR);
    assert_string_equal(r.host, "2001:db8::7");
    assert_int_equal(r.port, 443);
    assert_true(r.ipv6);

    parse_ok(&r, "127.0.0.1:65535");
    assert_int_equal(r.port, 65535);
    assert_string_equal(r.text, "127.0.0.1:65535");
}


static void
test_parse_tor(void **state)
{
    sk_route_t  r;
    char        s[128];

    (void) state;
    parse_ok(&r, onion);
    assert_int_equal(r.type, SK_ROUTE_ONION);
    assert_string_equal(r.host, onion);
    assert_int_equal(r.port, 0);
    assert_true(sk_route_via_tor(&r));

    snprintf(s, sizeof(s), "%s:8443", onion);
    parse_ok(&r, s);
    assert_int_equal(r.type, SK_ROUTE_ONION);
    assert_int_equal(r.port, 8443);

    parse_ok(&r, "www.example.com.relay.exit:443");
    assert_int_equal(r.type, SK_ROUTE_EXIT);
    assert_string_equal(r.host, "www.example.com.relay.exit");
    assert_int_equal(r.port, 443);
    assert_true(sk_route_via_tor(&r));
}


static void
test_parse_hostile(void **state)
{
    char  s[512], bad[128];

    (void) state;
    parse_bad("", 0, "empty");
    memset(s, '1', sizeof(s));
    parse_bad(s, 256, "256 characters, more than 255");
    parse_bad("1.2.3.4:80;5.6.7.8:80", 21, "character 11 (0x3b)");
    parse_bad("1.2.3.4:80,https", 16, "character 11 (0x2c)");
    parse_bad("1.2.3.4:80 ", 11, "character 11 (0x20)");
    parse_bad("1.2.3.4\n:80", 11, "character 8 (0x0a)");
    parse_bad("1.2.\x80.4:80", 11, "character 5 (0x80)");
    parse_bad("1.2.3\0.4:80", 11, "character 6 (0x00)");
    /* Names other than .onion and .exit would need a resolver, or reach
     * a SOCKS proxy meant for onions: never. */
    parse_bad("www.example.com:443", 19, "a DNS name is not a route");
    parse_bad("localhost:9050", 14, "a DNS name is not a route");
    parse_bad("example.onion.evil.com:443", 26, "a DNS name is not a route");
    parse_bad("1.2.3.4", 7, "needs \":PORT\"");
    parse_bad("1.2.3.4:0", 9, "not 1-65535");
    parse_bad("1.2.3.4:65536", 13, "not 1-65535");
    parse_bad("1.2.3.4:080", 11, "not 1-65535");
    parse_bad("1.2.3.4:", 8, "not 1-65535");
    parse_bad(":443", 4, "no host before the port");
    parse_bad("1.2.3.04:443", 12, "is not an IPv4 address");
    parse_bad("1.2.3:443", 9, "is not an IPv4 address");
    parse_bad("0.0.0.0:443", 11, "is not a destination");
    parse_bad("255.255.255.255:443", 19, "is not a destination");
    parse_bad("224.0.0.1:443", 13, "multicast");
    parse_bad("2001:db8::1:443", 15, "goes in brackets");
    parse_bad("[2001:db8::1]", 13, "needs \":PORT\"");
    parse_bad("[2001:db8::1]443", 16, "needs \":PORT\"");
    parse_bad("[2001:db8::1:443", 16, "'[' without ']'");
    parse_bad("[fe80::1%eth0]:443", 18, "zone");
    parse_bad("[::]:443", 8, "unspecified");
    parse_bad("[ff02::1]:443", 13, "multicast");
    parse_bad("[example.com]:443", 17, "is not an IPv6 address");
    parse_bad("[]:443", 6, "not an IPv6 address");
    /* Onions: v3 only, checksum and version checked, lowercase. */
    parse_bad("abcdefghijklmnop.onion", 22, "length 22");
    snprintf(bad, sizeof(bad), "%s", onion);
    bad[0] = bad[0] == 'a' ? 'b' : 'a';
    parse_bad(bad, strlen(bad), "checksum");
    bad[0] = (char) (onion[0] - 'a' + 'A');
    parse_bad(bad, strlen(bad), "not lowercase base32");
    snprintf(bad, sizeof(bad), "www.%s", onion);
    parse_bad(bad, strlen(bad), "length 66");
    snprintf(bad, sizeof(bad), "%s:0", onion);
    parse_bad(bad, strlen(bad), "not 1-65535");
    parse_bad("-bad.exit", 9, ".exit name");
    parse_bad("UPPER.exit", 10, ".exit name");
    parse_bad(".exit", 5, ".exit name");
}


static void
test_report_text(void **state)
{
    sk_route_t  r;
    char        s[400];
    sk_err_t    err;

    (void) state;
    /* What goes into reports is printable and bounded. */
    assert_int_equal(sk_route_parse(&r, "a\x1b[2Jb", 6, &err), -1);
    assert_string_equal(r.text, "a?[2Jb");
    memset(s, 'x', sizeof(s));
    assert_int_equal(sk_route_parse(&r, s, sizeof(s), &err), -1);
    assert_int_equal(strlen(r.text), SK_ROUTE_TEXT_MAX + 3);
    assert_string_equal(r.text + SK_ROUTE_TEXT_MAX, "...");
    assert_string_equal(sk_route_type_name(SK_ROUTE_ONION), "onion");
    assert_string_equal(sk_route_type_name(SK_ROUTE_INVALID), "invalid");
}


/* A bound record with services text and an SK of alg. */
static void
make_record(sk_record_t *rec, const char *services, sk_key_alg_t alg)
{
    sk_err_t  err;

    memset(rec, 0, sizeof(*rec));
    rec->state = SK_RECORD_BOUND;
    tu_assert_ok(sk_key_generate(&rec->key, alg, 2048, &err), &err);
    tu_assert_ok(sk_services_parse(&rec->services, services,
        strlen(services), &err), &err);
}


static void
test_order(void **state)
{
    sk_record_t  rec;
    sk_routes_t  rs;
    char         services[512], own[SK_ONION_ADDR_LEN + 1];
    sk_err_t     err;

    (void) state;
    /* Listed order, refused ones kept but marked, then the SK's onion. */
    make_record(&rec, "smtps;10.0.0.1:465,https;192.0.2.1:443;"
        "evil.example:443;[2001:db8::1]:8443;192.0.2.1:443;"
        "relay.exit,imaps", SK_KEY_ED25519);
    tu_assert_ok(sk_onion_address_from_key(own, rec.key, &err), &err);
    tu_assert_ok(sk_routes_for(&rs, &rec, "https", 443, &err), &err);
    assert_int_equal(rs.n, 6);
    assert_int_equal(rs.v[0].type, SK_ROUTE_ADDR);
    assert_string_equal(rs.v[0].host, "192.0.2.1");
    assert_int_equal(rs.v[1].type, SK_ROUTE_INVALID);
    assert_string_equal(rs.v[1].text, "evil.example:443");
    assert_non_null(strstr(rs.v[1].why, "a DNS name is not a route"));
    assert_int_equal(rs.v[2].type, SK_ROUTE_ADDR);
    assert_true(rs.v[2].ipv6);
    assert_int_equal(rs.v[3].type, SK_ROUTE_INVALID);
    assert_string_equal(rs.v[3].why, "repeats route 1");
    assert_int_equal(rs.v[4].type, SK_ROUTE_EXIT);
    assert_int_equal(rs.v[5].type, SK_ROUTE_ONION);
    assert_true(rs.v[5].derived);
    assert_string_equal(rs.v[5].host, own);
    sk_routes_free(&rs);
    assert_null(rs.v);

    /* Another service's routes are not this one's. */
    tu_assert_ok(sk_routes_for(&rs, &rec, "smtps", 0, &err), &err);
    assert_int_equal(rs.n, 2);
    assert_string_equal(rs.v[0].host, "10.0.0.1");
    assert_true(rs.v[1].derived);
    sk_routes_free(&rs);
    /* Covered without routes: only the SK's own onion. */
    tu_assert_ok(sk_routes_for(&rs, &rec, "imaps", 0, &err), &err);
    assert_int_equal(rs.n, 1);
    assert_true(rs.v[0].derived);
    sk_routes_free(&rs);
    /* Not covered: no route at all (ordinary TLS, no fallback). */
    tu_assert_ok(sk_routes_for(&rs, &rec, "smtp", 0, &err), &err);
    assert_int_equal(rs.n, 0);
    sk_record_free(&rec);

    /* A listed onion comes in its place, and no derived one follows. */
    snprintf(services, sizeof(services), "https;%s;192.0.2.1:443", onion);
    make_record(&rec, services, SK_KEY_ED25519);
    tu_assert_ok(sk_routes_for(&rs, &rec, "https", 443, &err), &err);
    assert_int_equal(rs.n, 2);
    assert_int_equal(rs.v[0].type, SK_ROUTE_ONION);
    assert_false(rs.v[0].derived);
    assert_int_equal(rs.v[1].type, SK_ROUTE_ADDR);
    sk_routes_free(&rs);
    sk_record_free(&rec);

    /* A port-specific element wins over the port-less one. */
    make_record(&rec, "https;192.0.2.1:443,https:8443;192.0.2.2:8443",
        SK_KEY_P256);
    tu_assert_ok(sk_routes_for(&rs, &rec, "https", 8443, &err), &err);
    assert_int_equal(rs.n, 1);              /* not Ed25519: no onion */
    assert_string_equal(rs.v[0].host, "192.0.2.2");
    sk_routes_free(&rs);
    tu_assert_ok(sk_routes_for(&rs, &rec, "https", 0, &err), &err);
    assert_int_equal(rs.n, 1);
    assert_string_equal(rs.v[0].host, "192.0.2.1");
    sk_routes_free(&rs);
    sk_record_free(&rec);
}


static void
test_not_bound(void **state)
{
    sk_record_t  rec;
    sk_routes_t  rs;
    sk_err_t     err;

    (void) state;
    make_record(&rec, "https;192.0.2.1:443", SK_KEY_ED25519);
    rec.state = SK_RECORD_UNBOUND;
    tu_assert_ok(sk_routes_for(&rs, &rec, "https", 443, &err), &err);
    assert_int_equal(rs.n, 0);
    sk_record_free(&rec);
    tu_assert_ok(sk_routes_for(&rs, NULL, "https", 443, &err), &err);
    assert_int_equal(rs.n, 0);
    sk_routes_free(NULL);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_addresses),
        cmocka_unit_test(test_parse_tor),
        cmocka_unit_test(test_parse_hostile),
        cmocka_unit_test(test_report_text),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_not_bound),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
