/*
 * test_name.c -- bound-name syntax and Includes-Subdomains matching.
 */
#include "testutil.h"


static void
check_ok(const char *name)
{
    sk_err_t  err;

    tu_assert_ok(sk_name_check(name, strlen(name), &err), &err);
}


static void
check_bad(const char *name, size_t len, const char *want)
{
    sk_err_t  err;

    tu_assert_err(sk_name_check(name, len, &err), &err, SK_ERR_FORMAT, want);
    assert_int_equal(sk_name_check(name, len, NULL), -1);
}


/* A string of labels joined by dots: n labels of sizes[i] letters. */
static char *
make_name(const size_t *sizes, size_t n)
{
    char   *s = malloc(512), *p = s;
    size_t  i;

    assert_non_null(s);
    for (i = 0; i < n; i++) {
        if (i > 0) {
            *p++ = '.';
        }
        memset(p, 'a' + (int) i, sizes[i]);
        p += sizes[i];
    }
    *p = '\0';
    return s;
}


static void
test_valid(void **state)
{
    static const size_t  max[] = { 63, 63, 63, 61 };
    char                *s;

    (void) state;
    check_ok("example.com");
    check_ok("a.b");
    check_ok("www.example.org");
    check_ok("xn--bcher-kva.example");
    check_ok("mail.xn--p1ai");
    check_ok("a-b.c0");
    check_ok("123.example.com");
    check_ok("a--b.example");

    /* 63-octet labels and a 253-octet name are the limits. */
    s = make_name(max, 4);
    assert_int_equal(strlen(s), 253);
    check_ok(s);
    /* Only len is read: what follows is not part of the name. */
    assert_int_equal(sk_name_check("example.com.", 11, NULL), 0);
    free(s);
}


static void
test_invalid(void **state)
{
    static const size_t  l64[] = { 64, 3 }, l254[] = { 63, 63, 63, 62 };
    char                *s;

    (void) state;
    check_bad("", 0, "name: empty");
    check_bad("example.com.", 12, "trailing dot");
    check_bad("localhost", 9, "single label \"localhost\" (at least two");
    check_bad("com", 3, "single label");
    check_bad(".example.com", 12, "label 1 is empty (character 1)");
    check_bad("a..b", 4, "label 2 is empty (character 3)");
    check_bad("Example.com", 11,
        "label 1, character 1 ('E'): uppercase (names are lowercase)");
    check_bad("example.COM", 11, "label 2, character 9 ('C'): uppercase");
    check_bad("*.example.com", 13, "label 1, character 1: '*' is not part "
        "of a name (the wildcard is the Includes-Subdomains flag)");
    check_bad("www.*.com", 9, "label 2, character 5: '*'");
    check_bad("b\xc3\xbc" "cher.de", 10, "label 1, character 2 (0xc3): not "
        "ASCII (write the xn-- A-label)");
    check_bad("_dmarc.example.com", 18,
        "label 1, character 1 (0x5f): not a letter, digit or '-'");
    check_bad("exa mple.com", 12, "character 4 (0x20): not a letter");
    check_bad("exa\0mple.com", 12, "character 4 (0x00): not a letter");
    check_bad("example.com\n", 12, "character 12 (0x0a): not a letter");
    check_bad("-a.com", 6, "label 1 \"-a\" starts with '-'");
    check_bad("www.a-.com", 10, "label 2 \"a-\" ends with '-'");
    check_bad("xn--.com", 8, "label 1 \"xn--\" ends with '-'");
    check_bad("-.com", 5, "label 1 \"-\" starts with '-'");

    s = make_name(l64, 2);
    check_bad(s, strlen(s), "label 1 is 64 octets, more than 63");
    free(s);
    s = make_name(l254, 4);
    assert_int_equal(strlen(s), 254);
    check_bad(s, strlen(s), "name: 254 octets, more than 253");
    free(s);
}


static void
test_covers(void **state)
{
    (void) state;
    /* Without the flag, only the name itself. */
    assert_true(sk_name_covers("example.com", 0, "example.com"));
    assert_true(sk_name_covers("example.com", 0, "EXAMPLE.Com"));
    assert_false(sk_name_covers("example.com", 0, "www.example.com"));

    /* With it, the name and every name below it. */
    assert_true(sk_name_covers("example.com", 1, "example.com"));
    assert_true(sk_name_covers("example.com", 1, "www.example.com"));
    assert_true(sk_name_covers("example.com", 1, "a.b.c.example.com"));
    assert_true(sk_name_covers("example.com", 1, "WWW.Example.COM"));

    /* A suffix is not a subdomain; neither is a parent or a sibling. */
    assert_false(sk_name_covers("example.com", 1, "exampleexample.com"));
    assert_false(sk_name_covers("example.com", 1, "wwwexample.com"));
    assert_false(sk_name_covers("example.com", 1, ".example.com"));
    assert_false(sk_name_covers("example.com", 1, "com"));
    assert_false(sk_name_covers("www.example.com", 1, "example.com"));
    assert_false(sk_name_covers("example.com", 1, "example.com.evil.org"));
    assert_false(sk_name_covers("example.com", 1, "example.org"));
    assert_false(sk_name_covers("example.com", 1, "xample.com"));
    assert_false(sk_name_covers("example.com", 1, ""));

    assert_false(sk_name_covers(NULL, 1, "example.com"));
    assert_false(sk_name_covers("example.com", 1, NULL));
    assert_false(sk_name_covers("", 1, ""));
    assert_false(sk_name_covers("", 1, "a."));
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_covers),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
