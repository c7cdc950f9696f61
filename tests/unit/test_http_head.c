/*
 * test_http_head.c -- the request-head parser `sk proxy` reads browsers
 * with (sk/http_head.h): what it takes, what it refuses and why, and the
 * two target forms a proxy receives.
 */
#include "testutil.h"

#include <sk/http_head.h>


static void
head_ok(sk_http_head_t *h, const char *s)
{
    sk_err_t  err;

    tu_assert_ok(sk_http_head_parse(h, s, strlen(s), &err), &err);
}


static void
head_bad(const char *s, size_t len, sk_err_code_t code, const char *why)
{
    sk_http_head_t  h;
    sk_err_t        err;

    tu_assert_err(sk_http_head_parse(&h, s, len, &err), &err, code, why);
}


static void
test_connect(void **state)
{
    sk_http_head_t          h;
    const sk_http_field_t  *f;
    const char             *s = "CONNECT www.example.com:443 HTTP/1.1\r\n"
                                "Host: www.example.com:443\r\n"
                                "Proxy-Connection:  keep-alive \r\n\r\n"
                                "\x16\x03\x01";

    (void) state;
    head_ok(&h, s);
    assert_true(sk_http_head_is(&h, "CONNECT"));
    assert_false(sk_http_head_is(&h, "CONNEC"));
    assert_int_equal(h.target_len, 19);
    assert_memory_equal(h.target, "www.example.com:443", 19);
    assert_int_equal(h.minor, 1);
    assert_int_equal(h.nfields, 2);
    assert_int_equal(h.len, strlen(s) - 3);     /* the TLS bytes follow */
    f = sk_http_head_field(&h, "proxy-connection");
    assert_non_null(f);
    assert_int_equal(f->value_len, 10);         /* white space trimmed */
    assert_memory_equal(f->value, "keep-alive", 10);
    assert_null(sk_http_head_field(&h, "Cookie"));
}


static void
test_field_lists(void **state)
{
    sk_http_head_t          h;
    const sk_http_field_t  *f;

    (void) state;
    head_ok(&h, "GET http://a.example/ HTTP/1.0\r\n"
        "Connection: keep-alive, Upgrade ,x-foo\r\nEmpty:\r\n\r\n");
    assert_int_equal(h.minor, 0);
    f = sk_http_head_field(&h, "Connection");
    assert_true(sk_http_field_has(f, "upgrade"));
    assert_true(sk_http_field_has(f, "X-Foo"));
    assert_true(sk_http_field_has(f, "keep-alive"));
    assert_false(sk_http_field_has(f, "keep"));
    f = sk_http_head_field(&h, "empty");
    assert_int_equal(f->value_len, 0);
}


static void
test_incomplete(void **state)
{
    const char  *s = "GET http://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n";
    size_t       i;

    (void) state;
    /* Every proper prefix is "not yet", never an error. */
    for (i = 0; i < strlen(s); i++) {
        head_bad(s, i, SK_ERR_NOT_FOUND, "incomplete");
    }
}


static void
test_refused(void **state)
{
    char    big[200];
    size_t  i, n;
    char   *many;

    (void) state;
    head_bad("\r\nGET / HTTP/1.1\r\n\r\n", 20, SK_ERR_FORMAT, "line 1: "
        "empty");
    head_bad("GET / HTTP/1.1\n\n", 16, SK_ERR_FORMAT, "bare LF");
    head_bad("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 25, SK_ERR_FORMAT,
        "line 2: a bare CR");
    head_bad("G(T / HTTP/1.1\r\n\r\n", 18, SK_ERR_FORMAT, "the method a "
        "token");
    head_bad("GET  / HTTP/1.1\r\n\r\n", 19, SK_ERR_FORMAT, "target is "
        "missing");
    head_bad("GET /\x01 HTTP/1.1\r\n\r\n", 19, SK_ERR_FORMAT, "outside "
        "visible ASCII");
    head_bad("GET / HTTP/2.0\r\n\r\n", 18, SK_ERR_FORMAT, "HTTP/1.0 or "
        "HTTP/1.1");
    head_bad("GET / HTTP/1.1 \r\n\r\n", 19, SK_ERR_FORMAT, "HTTP/1.0 or "
        "HTTP/1.1");
    head_bad("GET / HTTP/1.1\r\nA : b\r\n\r\n", 25, SK_ERR_FORMAT,
        "line 2: want NAME: VALUE");
    head_bad("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 28, SK_ERR_FORMAT,
        "line 3: a folded line");
    head_bad("GET / HTTP/1.1\r\nA: b\x7f\r\n\r\n", 24, SK_ERR_FORMAT,
        "control byte in the value of A");
    head_bad("GET / HTTP/1.1\r\nA: \0\r\n\r\n", 23, SK_ERR_FORMAT,
        "control byte");
    /* A malformed line is refused before the head ends (a colon in a
     * value is no fault). */
    head_bad("GET / HTTP/1.1\r\nA:: b\r\nB: ", 26, SK_ERR_NOT_FOUND,
        "incomplete");
    head_bad("GET / HTTP/1.1\r\n:b\r\nB: ", 23, SK_ERR_FORMAT, "line 2");
    memset(big, 'M', sizeof(big));
    memcpy(big + 40, " / HTTP/1.1\r\n\r\n", 15);
    head_bad(big, 55, SK_ERR_FORMAT, "at most 32 bytes");
    /* SK_HTTP_FIELDS_MAX fields, then one more. */
    many = malloc(32 + 8 * (SK_HTTP_FIELDS_MAX + 2));
    assert_non_null(many);
    n = (size_t) sprintf(many, "GET / HTTP/1.1\r\n");
    for (i = 0; i <= SK_HTTP_FIELDS_MAX; i++) {
        n += (size_t) sprintf(many + n, "A: b\r\n");
    }
    n += (size_t) sprintf(many + n, "\r\n");
    head_bad(many, n, SK_ERR_FORMAT, "more than 100 header fields");
    free(many);
}


static void
authority_ok(sk_http_authority_t *a, const char *t)
{
    sk_err_t  err;

    tu_assert_ok(sk_http_target_authority(a, t, strlen(t), &err), &err);
}


static void
authority_bad(const char *t, const char *why)
{
    sk_http_authority_t  a;
    sk_err_t             err;

    tu_assert_err(sk_http_target_authority(&a, t, strlen(t), &err), &err,
        SK_ERR_FORMAT, why);
}


static void
test_authority(void **state)
{
    sk_http_authority_t  a;

    (void) state;
    authority_ok(&a, "WWW.Example.COM:8443");
    assert_string_equal(a.host, "www.example.com");
    assert_int_equal(a.port, 8443);
    assert_int_equal(a.literal, 0);
    /* The trailing dot names the same host: it cannot dodge a check. */
    authority_ok(&a, "www.example.com.:443");
    assert_string_equal(a.host, "www.example.com");
    authority_ok(&a, "192.0.2.1:443");
    assert_int_equal(a.literal, 4);
    authority_ok(&a, "[2001:db8::1]:443");
    assert_string_equal(a.host, "2001:db8::1");
    assert_int_equal(a.literal, 6);
    authority_ok(&a, "intranet:80");
    assert_string_equal(a.host, "intranet");
    authority_bad("www.example.com", "want HOST:PORT");
    authority_bad("www.example.com:", "want HOST:PORT");
    authority_bad("www.example.com:0", "1 to 65535");
    authority_bad("www.example.com:65536", "1 to 65535");
    authority_bad("www.example.com:443x", "1 to 65535");
    authority_bad("www.example.com:000443", "1 to 65535");
    authority_bad(":443", "empty");
    authority_bad("a..b:443", "empty label");
    authority_bad("a b:443", "0x20");
    authority_bad("user@host:443", "0x40");
    authority_bad("[2001:db8::1:443", "without its ']'");
    authority_bad("[2001:db8::1]x:443", "want ':'");
    authority_bad("[nonsense]:443", "not an IPv6 address");
}


static void
test_absolute(void **state)
{
    sk_http_authority_t  a;
    sk_err_t             err;
    size_t               path;
    const char          *t;

    (void) state;
    t = "http://Example.COM:8080/a/b?c=d";
    tu_assert_ok(sk_http_target_absolute(&a, &path, t, strlen(t), &err),
        &err);
    assert_string_equal(a.host, "example.com");
    assert_int_equal(a.port, 8080);
    assert_string_equal(t + path, "/a/b?c=d");
    t = "HTTP://example.com";
    tu_assert_ok(sk_http_target_absolute(&a, &path, t, strlen(t), &err),
        &err);
    assert_int_equal(a.port, 0);
    assert_string_equal(t + path, "");
    t = "http://example.com?q";
    tu_assert_ok(sk_http_target_absolute(&a, &path, t, strlen(t), &err),
        &err);
    assert_string_equal(t + path, "?q");
    t = "https://example.com/";
    tu_assert_err(sk_http_target_absolute(&a, &path, t, strlen(t), &err),
        &err, SK_ERR_FORMAT, "want an http:// URL");
    t = "http://user:pw@example.com/";
    tu_assert_err(sk_http_target_absolute(&a, &path, t, strlen(t), &err),
        &err, SK_ERR_FORMAT, "user information");
    t = "http://example.com/#frag";
    tu_assert_err(sk_http_target_absolute(&a, &path, t, strlen(t), &err),
        &err, SK_ERR_FORMAT, "fragment");
    t = "/origin/form";
    tu_assert_err(sk_http_target_absolute(&a, &path, t, strlen(t), &err),
        &err, SK_ERR_FORMAT, "want an http:// URL");
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect),
        cmocka_unit_test(test_field_lists),
        cmocka_unit_test(test_incomplete),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_authority),
        cmocka_unit_test(test_absolute),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
