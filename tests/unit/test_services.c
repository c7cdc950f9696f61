/*
 * test_services.c -- the Services field: grammar, canonical text, lookups.
 */
#include "testutil.h"


static void
parse_ok(sk_services_t *s, const char *text)
{
    sk_err_t  err;

    tu_assert_ok(sk_services_parse(s, text, strlen(text), &err), &err);
}


/* parse(text) succeeds, format gives text back, and it parses the same. */
static void
check_round_trip(const char *text)
{
    sk_services_t  a, b;
    char          *out;
    sk_err_t       err;

    parse_ok(&a, text);
    tu_assert_ok(sk_services_format(&out, &a, &err), &err);
    assert_string_equal(out, text);
    parse_ok(&b, out);
    assert_true(sk_services_equal(&a, &b));
    free(out);
    sk_services_free(&a);
    sk_services_free(&b);
}


static void
check_bad(const char *text, const char *want)
{
    sk_services_t  s = { (sk_service_t *) &s, 99 };
    sk_err_t       err;

    tu_assert_err(sk_services_parse(&s, text, strlen(text), &err), &err,
        SK_ERR_FORMAT, want);
    /* Left empty: freeing it again is harmless. */
    assert_null(s.v);
    assert_int_equal(s.n, 0);
    assert_int_equal(sk_services_parse(&s, text, strlen(text), NULL), -1);
}


static void
test_draft_example(void **state)
{
    static const char  ex[] = "https:8080;123.45.67.89:8080;xxxxx.onion,"
                              "smtps,imaps";
    sk_services_t      s;

    (void) state;
    parse_ok(&s, ex);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.v[0].name, "https");
    assert_int_equal(s.v[0].port, 8080);
    assert_int_equal(s.v[0].nroutes, 2);
    assert_string_equal(s.v[0].routes[0], "123.45.67.89:8080");
    assert_string_equal(s.v[0].routes[1], "xxxxx.onion");
    assert_null(s.v[0].routes[2]);
    assert_string_equal(s.v[1].name, "smtps");
    assert_int_equal(s.v[1].port, 0);
    assert_int_equal(s.v[1].nroutes, 0);
    assert_string_equal(s.v[2].name, "imaps");
    sk_services_free(&s);
    assert_null(s.v);
    assert_int_equal(s.n, 0);
    check_round_trip(ex);
}


static void
test_routes(void **state)
{
    sk_services_t  s;

    (void) state;
    /* Colons are fine inside a route: IPv6 with and without brackets. */
    parse_ok(&s, "https;[2001:db8::1]:443;2001:db8::1;x.exit");
    assert_int_equal(s.n, 1);
    assert_int_equal(s.v[0].port, 0);
    assert_int_equal(s.v[0].nroutes, 3);
    assert_string_equal(s.v[0].routes[0], "[2001:db8::1]:443");
    assert_string_equal(s.v[0].routes[1], "2001:db8::1");
    assert_string_equal(s.v[0].routes[2], "x.exit");
    sk_services_free(&s);

    check_round_trip("https;[2001:db8::1]:443;2001:db8::1;x.exit");
    check_round_trip("smtp:2525;abc.onion:25,submission;10.0.0.1:587");
    check_round_trip("https:443;!#$%&'()*+-./:<=>?@[\\]^_`{|}~AZ09");
    check_round_trip("https,https:8443;b.onion,http");
    check_round_trip("all");
    check_round_trip("all,https;x.onion");
    check_round_trip("x,a-b-,x1:1,x1:65535");
    check_round_trip("none");
    check_round_trip("abcdefghijklmnopqrstuvwxyzabcdef");
}


static void
test_none_and_all(void **state)
{
    sk_services_t  s;
    char          *out;
    sk_err_t       err;

    (void) state;
    parse_ok(&s, "none");
    assert_int_equal(s.n, 0);
    assert_null(s.v);
    assert_false(sk_services_covers(&s, "https", 0));
    assert_null(sk_services_find(&s, "https", 443));
    tu_assert_ok(sk_services_format(&out, &s, &err), &err);
    assert_string_equal(out, "none");
    free(out);

    check_bad("none,https", "services: element 1: \"none\" must be the "
        "whole field");
    check_bad("https,none", "element 2: \"none\" must be the whole field");
    check_bad("none;x.onion", "element 1: \"none\" must be the whole");
    check_bad("none:80", "element 1: \"none\" must be the whole");
    check_bad("NONE", "element 1: character 1 (0x4e) in the service name: "
        "uppercase");
    check_bad("all:443", "element 1: \"all\" takes no port");
    check_bad("https,all;x.onion", "element 2: \"all\" takes no routes");
    check_bad("all,all", "element 2: repeats element 1 (\"all\")");
}


static void
test_reject(void **state)
{
    (void) state;
    /* Empty things. */
    check_bad("", "services: empty (\"none\" is the empty set)");
    check_bad(",https", "element 1: empty (character 1)");
    check_bad("https,,smtps", "element 2: empty (character 7)");
    check_bad("https,", "element 2: empty (character 7)");
    check_bad(",", "element 1: empty");
    check_bad("https;", "element 1: route 1 is empty (character 7)");
    check_bad("https;a;;b", "element 1: route 2 is empty (character 9)");
    check_bad("https;a;", "element 1: route 2 is empty (character 9)");
    check_bad("smtps,https:8080;", "element 2: route 1 is empty");
    check_bad(":443", "element 1: missing service name (character 1)");
    check_bad(";x.onion", "element 1: missing service name");

    /* Ports. */
    check_bad("https:", "element 1: missing port after ':' (character 6)");
    check_bad("https:;x", "element 1: missing port after ':'");
    check_bad("https:0", "element 1: port 0 out of range 1-65535");
    check_bad("https:00", "element 1: port 00 out of range");
    check_bad("https:65536", "element 1: port 65536 out of range 1-65535");
    check_bad("https:99999999999999999999",
        "element 1: port 999999999999... out of range");
    check_bad("https:0443", "element 1: port 0443 has a leading zero");
    check_bad("https:44a", "element 1: character 9 (0x61) in the port: "
        "not a digit");
    check_bad("https:-1", "character 7 (0x2d) in the port: not a digit");
    check_bad("https:443:1", "character 10 (0x3a) in the port: not a digit");
    check_bad("https: 443", "character 7 (0x20) in the port: not a digit");

    /* Names. */
    check_bad("HTTPS", "element 1: character 1 (0x48) in the service name: "
        "uppercase (service names are lowercase)");
    check_bad("smtps,imapS", "element 2: character 11 (0x53) in the service "
        "name: uppercase");
    check_bad("3https", "element 1: character 1 ('3'): a service name "
        "starts with a lowercase letter");
    check_bad("-x", "character 1 ('-'): a service name starts with");
    check_bad("ht_tp", "character 3 (0x5f) in the service name: not "
        "allowed here");
    check_bad("abcdefghijklmnopqrstuvwxyzabcdefg", "element 1: service name "
        "of 33 characters, more than 32");

    /* Spaces, control characters, non-ASCII. */
    check_bad("https, smtps", "element 2: character 7 (0x20) in the service "
        "name: spaces are not allowed");
    check_bad("https ", "character 6 (0x20) in the service name: spaces");
    check_bad("https;a b", "element 1: character 8 (0x20) in route 1: "
        "spaces are not allowed");
    check_bad("https;a;b\tc", "character 10 (0x09) in route 2: a control "
        "character");
    check_bad("https;caf\xc3\xa9.onion", "character 10 (0xc3) in route 1: "
        "not ASCII");
    check_bad("h\xc3\xa9", "character 2 (0xc3) in the service name: not "
        "ASCII");
    check_bad("https;a\x7f", "character 8 (0x7f) in route 1: a control");
    check_bad("https\n", "character 6 (0x0a) in the service name: a control");

    /* Duplicates: the same name and port, not the same name. */
    check_bad("https,smtps,https", "element 3: repeats element 1 "
        "(\"https\")");
    check_bad("https:8443;a.onion,https:8443;b.onion", "element 2: repeats "
        "element 1 (\"https:8443\")");
}


static void
test_embedded_nul(void **state)
{
    sk_services_t  s;
    sk_err_t       err;

    (void) state;
    tu_assert_err(sk_services_parse(&s, "https\0", 6, &err), &err,
        SK_ERR_FORMAT, "character 6 (0x00) in the service name");
    tu_assert_err(sk_services_parse(&s, "https;a\0b", 9, &err), &err,
        SK_ERR_FORMAT, "character 8 (0x00) in route 1");
    /* Only len is read. */
    tu_assert_ok(sk_services_parse(&s, "https,smtps", 5, &err), &err);
    assert_int_equal(s.n, 1);
    sk_services_free(&s);
}


static void
test_covers(void **state)
{
    sk_services_t       s;
    const sk_service_t *sv;

    (void) state;
    /* A port-less element covers every port; a port-specific one only its
     * port, but wins over the port-less one wherever both apply. */
    parse_ok(&s, "https;r1,https:8443;r2,smtps:4650");
    sv = sk_services_find(&s, "https", 0);
    assert_ptr_equal(sv, &s.v[0]);
    assert_ptr_equal(sk_services_find(&s, "https", 443), &s.v[0]);
    assert_ptr_equal(sk_services_find(&s, "https", 9999), &s.v[0]);
    assert_ptr_equal(sk_services_find(&s, "https", 8443), &s.v[1]);
    assert_string_equal(sk_services_find(&s, "https", 8443)->routes[0], "r2");
    assert_true(sk_services_covers(&s, "smtps", 4650));
    assert_false(sk_services_covers(&s, "smtps", 465));
    /* Port 0 is the default port (465), which is not 4650. */
    assert_false(sk_services_covers(&s, "smtps", 0));
    assert_false(sk_services_covers(&s, "imaps", 0));
    assert_null(sk_services_find(&s, "imaps", 993));
    /* Names are matched exactly: the secure service does not cover the
     * insecure one, nor a prefix. */
    assert_false(sk_services_covers(&s, "http", 0));
    assert_false(sk_services_covers(&s, "http", 443));
    assert_false(sk_services_covers(&s, "HTTPS", 443));
    assert_false(sk_services_covers(&s, "httpsx", 443));
    sk_services_free(&s);

    /* "https:443" is https on its default port only. */
    parse_ok(&s, "https:443,imaps");
    assert_true(sk_services_covers(&s, "https", 0));
    assert_true(sk_services_covers(&s, "https", 443));
    assert_false(sk_services_covers(&s, "https", 8443));
    assert_true(sk_services_covers(&s, "imaps", 0));
    assert_true(sk_services_covers(&s, "imaps", 12345));
    assert_false(sk_services_covers(&s, "imap", 0));
    sk_services_free(&s);

    /* The default of each known service, through port 0. */
    parse_ok(&s, "https:443,http:80,smtp:25,smtps:465,submission:587,"
        "imaps:993,pop3s:995,imap:143");
    assert_ptr_equal(sk_services_find(&s, "https", 0), &s.v[0]);
    assert_ptr_equal(sk_services_find(&s, "http", 0), &s.v[1]);
    assert_ptr_equal(sk_services_find(&s, "smtp", 0), &s.v[2]);
    assert_ptr_equal(sk_services_find(&s, "smtps", 0), &s.v[3]);
    assert_ptr_equal(sk_services_find(&s, "submission", 0), &s.v[4]);
    assert_ptr_equal(sk_services_find(&s, "imaps", 0), &s.v[5]);
    assert_ptr_equal(sk_services_find(&s, "pop3s", 0), &s.v[6]);
    assert_ptr_equal(sk_services_find(&s, "imap", 0), &s.v[7]);
    assert_false(sk_services_covers(&s, "pop3", 0));
    assert_false(sk_services_covers(&s, "imap", 993));
    sk_services_free(&s);

    /* "all" covers anything, after any element naming the service. */
    parse_ok(&s, "smtp;x.onion,all,https:8443");
    assert_ptr_equal(sk_services_find(&s, "smtp", 25), &s.v[0]);
    assert_ptr_equal(sk_services_find(&s, "pop3s", 0), &s.v[1]);
    assert_ptr_equal(sk_services_find(&s, "https", 443), &s.v[1]);
    assert_ptr_equal(sk_services_find(&s, "https", 8443), &s.v[2]);
    assert_true(sk_services_covers(&s, "gopher", 70));
    sk_services_free(&s);

    /* No default port known: port 0 needs a port-less element. */
    parse_ok(&s, "foo:5000,bar");
    assert_false(sk_services_covers(&s, "foo", 0));
    assert_true(sk_services_covers(&s, "foo", 5000));
    assert_true(sk_services_covers(&s, "bar", 0));
    assert_true(sk_services_covers(&s, "bar", 1));
    sk_services_free(&s);

    assert_false(sk_services_covers(NULL, "https", 0));
    assert_null(sk_services_find(NULL, "https", 0));
}


static void
test_format_hand_built(void **state)
{
    char          *routes[] = { "a.onion", "10.0.0.1:443", NULL };
    sk_service_t   v[2] = {
        { "https", 8443, routes, 2, NULL, 0 },
        { "imaps", 0, NULL, 0, NULL, 0 },
    };
    sk_services_t  s = { v, 2 }, empty = { NULL, 0 };
    char          *out;
    sk_err_t       err;

    (void) state;
    tu_assert_ok(sk_services_format(&out, &s, &err), &err);
    assert_string_equal(out, "https:8443;a.onion;10.0.0.1:443,imaps");
    free(out);
    tu_assert_ok(sk_services_format(&out, &empty, &err), &err);
    assert_string_equal(out, "none");
    free(out);

    /* Sets no text spells are refused, not written ambiguously. */
    routes[1] = "a b";
    tu_assert_err(sk_services_format(&out, &s, &err), &err, SK_ERR_USAGE,
        "services: cannot format an invalid set (services: element 1: "
        "character 21 (0x20) in route 2: spaces are not allowed)");
    assert_null(out);
    /* "a,b" would read back as a route "a" and an element "b". */
    routes[1] = "a,b";
    tu_assert_err(sk_services_format(&out, &s, &err), &err, SK_ERR_USAGE,
        "does not survive a round trip");
    routes[1] = "10.0.0.1";
    v[0].port = 70000;
    tu_assert_err(sk_services_format(&out, &s, &err), &err, SK_ERR_USAGE,
        "port 70000 out of range");
    v[0].port = 443;
    strcpy(v[1].name, "IMAPS");
    tu_assert_err(sk_services_format(&out, &s, &err), &err, SK_ERR_USAGE,
        "uppercase");
    strcpy(v[1].name, "https");
    v[1].port = 443;
    tu_assert_err(sk_services_format(&out, &s, &err), &err, SK_ERR_USAGE,
        "repeats element 1");
    /* A name with a port inside reads back as something else. */
    strcpy(v[1].name, "imaps:1");
    v[1].port = 0;
    tu_assert_err(sk_services_format(&out, &s, &err), &err, SK_ERR_USAGE,
        "does not survive a round trip");
    strcpy(v[1].name, "none");
    tu_assert_err(sk_services_format(&out, &s, &err), &err, SK_ERR_USAGE,
        "\"none\" must be the whole field");
    assert_int_equal(sk_services_format(&out, &s, NULL), -1);
}


static void
test_equal_and_free(void **state)
{
    sk_services_t  a, b;

    (void) state;
    parse_ok(&a, "https;x,smtps");
    parse_ok(&b, "smtps,https;x");
    assert_false(sk_services_equal(&a, &b));
    sk_services_free(&b);
    parse_ok(&b, "https;y,smtps");
    assert_false(sk_services_equal(&a, &b));
    sk_services_free(&b);
    parse_ok(&b, "https;x;y,smtps");
    assert_false(sk_services_equal(&a, &b));
    sk_services_free(&b);
    parse_ok(&b, "https:443;x,smtps");
    assert_false(sk_services_equal(&a, &b));
    sk_services_free(&b);
    parse_ok(&b, "https;x,smtps");
    assert_true(sk_services_equal(&a, &b));
    assert_true(sk_services_equal(&a, &a));
    assert_false(sk_services_equal(&a, NULL));
    assert_true(sk_services_equal(NULL, NULL));
    sk_services_free(&a);
    sk_services_free(&b);
    sk_services_free(&b);
    sk_services_free(NULL);
}


/* "mx=" patterns: smtp only, after the routes, names or "*." names. */
static void
test_mx(void **state)
{
    static const struct {
        const char  *pattern, *host;
        int          want;
    } match[] = {
        { "mx.example.net", "mx.example.net", 1 },
        { "mx.example.net", "MX.Example.NET", 1 },
        { "mx.example.net", "a.mx.example.net", 0 },
        { "*.example.net", "mx.example.net", 1 },
        { "*.example.net", "MX1.EXAMPLE.NET", 1 },
        { "*.example.net", "example.net", 0 },
        { "*.example.net", "a.b.example.net", 0 },
        { "*.example.net", ".example.net", 0 },
        { "*.example.net", "mxexample.net", 0 },
        { "*.example.net", "mx.example.org", 0 },
        { "*.example.net", "*.example.net", 0 },
        { "*.example.net", "a_b.example.net", 0 },
    };
    sk_services_t        s;
    const sk_service_t  *sv;
    size_t               i;

    (void) state;
    parse_ok(&s, "https,smtp;10.0.0.1:25;mx=mx1.provider.example;"
        "mx=*.mail.provider.example");
    sv = sk_services_find(&s, "smtp", 25);
    assert_non_null(sv);
    assert_int_equal(sv->nroutes, 1);
    assert_string_equal(sv->routes[0], "10.0.0.1:25");
    assert_int_equal(sv->nmx, 2);
    assert_string_equal(sv->mx[0], "mx1.provider.example");
    assert_string_equal(sv->mx[1], "*.mail.provider.example");
    assert_int_equal(s.v[0].nmx, 0);
    sk_services_free(&s);

    check_round_trip("smtp;mx=mx.example.net");
    check_round_trip("smtp:2525;x.onion;mx=*.example.net;mx=example.org,"
        "https");
    check_round_trip("smtp;a=b;mx.x");      /* routes, not patterns */

    check_bad("https;mx=mx.example.net", "element 1: mx= patterns are for "
        "smtp, not https");
    check_bad("smtps;mx=mx.example.net", "for smtp, not smtps");
    check_bad("smtp;mx=a.example;10.0.0.1:25", "element 1: route 1 after "
        "an mx= pattern (routes come first)");
    check_bad("smtp;mx=a.example;mx=b.example;mx=a.example",
        "element 1: mx= pattern 3 repeats pattern 1 (\"a.example\")");
    check_bad("smtp;mx=", "element 1: mx= pattern 1: name: empty");
    check_bad("smtp;mx=*", "element 1: mx= pattern 1: name: label 1, "
        "character 1: '*'");
    check_bad("smtp;mx=*.com", "mx= pattern 1: name: ");
    check_bad("smtp;mx=a.*.example", "'*' is not part of a name");
    check_bad("smtp;mx=MX.example", "uppercase");
    check_bad("smtp;mx=mx.example.", "trailing dot");
    check_bad("all;mx=mx.example", "\"all\" takes no routes");

    /* MTA-STS's matching: one label under a wildcard, any case. */
    for (i = 0; i < sizeof(match) / sizeof(match[0]); i++) {
        if (sk_services_mx_match(match[i].pattern, match[i].host)
            != match[i].want)
        {
            fail_msg("mx=%s, host %s: want %d", match[i].pattern,
                match[i].host, match[i].want);
        }
    }
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draft_example),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_none_and_all),
        cmocka_unit_test(test_reject),
        cmocka_unit_test(test_embedded_nul),
        cmocka_unit_test(test_covers),
        cmocka_unit_test(test_format_hand_built),
        cmocka_unit_test(test_equal_and_free),
        cmocka_unit_test(test_mx),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
