/*
 * test_milter_ar.c -- sk-milter's Authentication-Results parser
 * (sk_milter/skm_ar.c): every form RFC 8601 section 2.2 allows (quoted
 * authserv-id, comments nested and with quoted-pairs, versions, folding,
 * "none", reasons, properties, case), the malformed ones, and which fields
 * count as ours.
 */
#include "testutil.h"

#include "../../sk_milter/skm.h"

#define OURS "mx.example.org"


/* value parses; its authserv-id is id. */
static skm_ar_t
ok_id(const char *value, const char *id)
{
    skm_ar_t     ar;
    const char  *why;
    size_t       off;
    int          rc;

    rc = skm_ar_parse(&ar, value, strlen(value), &off, &why);
    if (rc != 0) {
        fail_msg("\"%s\": %s at byte %zu", value, why, off);
    }
    assert_null(why);
    assert_int_equal(off, strlen(value));
    assert_true(ar.hasid);
    assert_string_equal(ar.id, id);
    assert_int_equal(ar.idlen, strlen(id));
    return ar;
}


/* value is malformed with why at byte off; hasid as given. */
static void
bad(const char *value, const char *want, size_t wantoff, int hasid)
{
    skm_ar_t     ar;
    const char  *why;
    size_t       off;

    assert_int_equal(skm_ar_parse(&ar, value, strlen(value), &off, &why),
        -1);
    assert_non_null(why);
    if (strcmp(why, want) != 0 || off != wantoff) {
        fail_msg("\"%s\": got \"%s\" at %zu, wanted \"%s\" at %zu", value,
            why, off, want, wantoff);
    }
    assert_int_equal(ar.hasid, hasid);
}


static int
ours(const char *value)
{
    return skm_ar_is_ours(value, strlen(value), OURS);
}


static void
test_plain(void **state)
{
    skm_ar_t  ar;

    (void) state;
    ar = ok_id("mx.example.org; sk=pass", OURS);
    assert_int_equal(ar.nresults, 1);
    assert_int_equal(ar.version, -1);
    assert_false(ar.none);
    ar = ok_id("mx.example.org; none", OURS);
    assert_true(ar.none);
    assert_int_equal(ar.nresults, 0);
    ok_id("mx.example.org;sk=pass", OURS);
    ok_id("  mx.example.org  ;  sk  =  pass  ", OURS);
}


static void
test_version(void **state)
{
    skm_ar_t  ar;

    (void) state;
    ar = ok_id("mx.example.org 1; sk=pass", OURS);
    assert_int_equal(ar.version, 1);
    ar = ok_id("mx.example.org (c) 1 (c); none", OURS);
    assert_int_equal(ar.version, 1);
    assert_true(ar.none);
    ar = ok_id("\"mx.example.org\" 12; none", OURS);
    assert_int_equal(ar.version, 12);
    ar = ok_id("mx.example.org 99999999999999; none", OURS);
    assert_int_equal(ar.version, 999999999);
    /* a version needs CFWS before it */
    bad("\"mx.example.org\"1; none", "expected \";\"", 16, 1);
}


static void
test_quoted(void **state)
{
    (void) state;
    ok_id("\"mx.example.org\"; sk=pass", OURS);
    ok_id("\"mx\\.example\\.org\"; sk=pass", OURS);
    ok_id("\"a\\\"b\\\\c\"; none", "a\"b\\c");
    ok_id("\"with space\"; none", "with space");
    ok_id("\"\"; none", "");
    /* folding inside quotes: the break goes, the white space stays */
    ok_id("\"mx.example.org\r\n \"; none", "mx.example.org ");
    ok_id("\"mx.\n\texample.org\"; none", "mx.\texample.org");
    /* RFC 6532: UTF-8 in a quoted string */
    ok_id("\"mx.ex\xc3\xa4mple.org\"; none", "mx.ex\xc3\xa4mple.org");
    ok_id("\"\xe2\x82\xac\xf0\x9f\x93\xa7\"; none", "\xe2\x82\xac\xf0\x9f\x93\xa7");
    ok_id("\"@;()=\"; none", "@;()=");
}


static void
test_comments(void **state)
{
    (void) state;
    ok_id("(comment) mx.example.org; sk=pass", OURS);
    ok_id("(a)(b) (c)mx.example.org(d); sk=pass", OURS);
    ok_id("((nested (deeper)) and \\( \\) quoted-pairs) mx.example.org; none",
        OURS);
    ok_id("(\"quotes\" ; = . @ in a comment) mx.example.org; none", OURS);
    ok_id("(kommentar \xc3\xa4) mx.example.org; none", OURS);
    ok_id("(folded\r\n comment) mx.example.org; none", OURS);
    ok_id("mx.example.org; sk=pass (TLSv1.3 (with (nesting)) for smtp)",
        OURS);
    ok_id("mx.example.org (c) ; (c) none (c)", OURS);
}


static void
test_folding(void **state)
{
    (void) state;
    ok_id("mx.example.org;\r\n\tsk=pass", OURS);
    ok_id("mx.example.org;\n\tsk=pass", OURS);
    ok_id("\n mx.example.org\n ;\n sk\n =\n pass\n ", OURS);
    /* what sk-milter itself writes */
    ok_id("mx.example.org;\n\tsk=pass (TLSv1.3 for smtp service)\n"
        "\tsmtp.mailfrom=example.com\n\theader.from=example.com", OURS);
}


static void
test_resinfo(void **state)
{
    skm_ar_t  ar;

    (void) state;
    ar = ok_id("mx.example.org; dkim=pass reason=\"good sig\" "
        "header.d=example.com header.i=@example.com; spf=fail "
        "smtp.mailfrom=user@example.com; sk=pass (TLSv1.3) "
        "smtp.mailfrom=example.com header.from=example.com", OURS);
    assert_int_equal(ar.nresults, 3);
    ok_id("mx.example.org; dkim/1=pass header.d=example.com", OURS);
    ok_id("mx.example.org; dkim (c) / (c) 1 (c) = (c) pass", OURS);
    ok_id("mx.example.org; x-method=x-result", OURS);
    ok_id("mx.example.org; dkim=pass reason=token", OURS);
    ok_id("mx.example.org; dkim=pass reason = \"a b\" header.d=x.example",
        OURS);
    ok_id("mx.example.org; spf=pass smtp.mailfrom=\"quoted local\""
        "@example.com", OURS);
    ok_id("mx.example.org; spf=pass smtp . mailfrom = user.name+tag@"
        "sub.example.com", OURS);
    ok_id("mx.example.org; iprev=pass policy.iprev=192.0.2.200", OURS);
    ok_id("mx.example.org; sk=pass header.from=\"a\"x.y=z", OURS);
    /* a ptype may be called "reason"; a method may be called "none" */
    ok_id("mx.example.org; x=pass reason.x=y", OURS);
    ar = ok_id("mx.example.org; none=pass", OURS);
    assert_false(ar.none);
    assert_int_equal(ar.nresults, 1);
    /* keywords are case-insensitive */
    ar = ok_id("MX.Example.ORG; SK=PASS Reason=X HEADER.FROM=A.B; NONE=x",
        "MX.Example.ORG");
    assert_int_equal(ar.nresults, 2);
}


/* The examples of RFC 8601 appendix B, the field values. */
static void
test_rfc_examples(void **state)
{
    (void) state;
    ok_id("example.org 1; none", "example.org");
    ok_id("example.com; spf=pass smtp.mailfrom=example.net", "example.com");
    ok_id("example.com;\n          auth=pass (cram-md5) "
        "smtp.auth=sender@example.net;\n          spf=pass "
        "smtp.mailfrom=example.net", "example.com");
    ok_id("example.com; iprev=pass\n          policy.iprev=192.0.2.200",
        "example.com");
    ok_id("example.com;\n          dkim=pass (good signature) "
        "header.d=example.com", "example.com");
    ok_id("example.com;\n          sender-id=fail header.from=example.com;\n"
        "          dkim=pass (good signature) header.d=example.com",
        "example.com");
    ok_id("mail-router.example.net;\n          dkim=pass (good signature) "
        "header.d=newyork.example.com\n                header.b=oINEO8hg;\n"
        "          dkim=fail (bad signature) header.d=newyork.example.com\n"
        "                header.b=EToRSuvU", "mail-router.example.net");
}


static void
test_malformed(void **state)
{
    (void) state;
    bad("", "no authserv-id", 0, 0);
    bad("   ", "no authserv-id", 3, 0);
    bad("; sk=pass", "no authserv-id", 0, 0);
    bad("\"mx.example.org; sk=pass", "unterminated quoted-string", 24, 0);
    bad("(mx.example.org; sk=pass", "unterminated comment", 24, 0);
    bad("((a) mx.example.org; sk=pass", "unterminated comment", 28, 0);
    bad("\"\xff\"; none", "invalid UTF-8", 1, 0);
    bad("\"\xc3\"; none", "invalid UTF-8", 1, 0);
    bad("\"\xe0\x80\x80\"; none", "invalid UTF-8", 1, 0);     /* overlong */
    bad("\"\xed\xa0\x80\"; none", "invalid UTF-8", 1, 0);     /* surrogate */
    bad("\"\xf4\x90\x80\x80\"; none", "invalid UTF-8", 1, 0);
    bad("\"\xe2\x82", "truncated UTF-8", 1, 0);
    bad("\"a\x01\"; none", "control character in a quoted-string", 2, 0);
    bad("(a\x7f) x; none", "control character in a comment", 2, 0);
    bad("\"a\\", "\"\\\" at the end", 3, 0);
    bad("\"\\\x01\"", "control character after \"\\\"", 2, 0);
    bad("\r mx.example.org; none", "CR without LF", 0, 0);
    bad("\nmx.example.org; none", "line break not followed by white space",
        0, 0);
    bad("mx.example.org", "no result (\"; none\" or \"; method=result\")",
        14, 1);
    bad("mx.example.org junk; sk=pass", "expected \";\"", 15, 1);
    bad("mx.example.org; sk=", "expected a keyword", 19, 1);
    bad("mx.example.org; =pass", "expected a keyword", 16, 1);
    bad("mx.example.org; sk pass", "expected \"=\" after a method", 19, 1);
    bad("mx.example.org; sk=pass-", "keyword ends with \"-\"", 24, 1);
    bad("mx.example.org; sk=pass;", "expected a keyword", 24, 1);
    bad("mx.example.org;\nsk=pass", "line break not followed by white space",
        15, 1);
    bad("mx.example.org; none; sk=pass", "\"none\" must be the only result",
        20, 1);
    bad("mx.example.org; sk=pass; none", "\"none\" must be the only result",
        29, 1);
    bad("mx.example.org; sk=pass.x", "expected white space, a comment or "
        "\";\"", 23, 1);
    bad("mx.example.org; dkim=pass header.d", "expected \"=\" after a "
        "property", 34, 1);
    bad("mx.example.org; dkim=pass header", "expected \".\" after a ptype",
        32, 1);
    bad("mx.example.org; dkim=pass header.d x", "expected \"=\" after a "
        "property", 35, 1);
    bad("mx.example.org; dkim=pass header=x", "expected \".\" after a ptype",
        32, 1);
    bad("mx.example.org; spf=pass smtp.mailfrom=user@localhost",
        "a domain name needs a \".\"", 53, 1);
    bad("mx.example.org; spf=pass smtp.mailfrom=.u@example.com",
        "misplaced \".\" in a local-part", 39, 1);
    bad("mx.example.org; spf=pass smtp.mailfrom=u..v@example.com",
        "misplaced \".\" in a local-part", 40, 1);
    bad("mx.example.org; spf=pass smtp.mailfrom=a/b", "property value is "
        "not a token", 40, 1);
    bad("mx.example.org; spf=pass smtp.mailfrom=", "expected a property "
        "value", 39, 1);
    bad("mx.example.org; dkim/x=pass", "expected a number", 21, 1);
    bad("mx.example.org; x=y reason=", "expected a token or a quoted-string",
        27, 1);
    bad("mx.example.org; x=y a.b=c reason=d", "expected \".\" after a ptype",
        32, 1);
}


static void
test_is_ours(void **state)
{
    char  big[400];

    (void) state;
    assert_true(ours("mx.example.org; sk=pass"));
    assert_true(ours("MX.Example.ORG; sk=pass"));
    assert_true(ours("\"mx.example.org\"; sk=pass"));
    assert_true(ours("\"MX.EXAMPLE.ORG\" 1; sk=pass"));
    assert_true(ours("\"mx\\.example\\.org\"; sk=pass"));
    assert_true(ours("(comment) mx.example.org; sk=pass"));
    assert_true(ours("((a (b)) \\)) \"mx.example.org\" (c) 1 (d); none"));
    assert_true(ours("\n\tmx.example.org;\n\tsk=pass"));
    assert_true(ours("mx.example.org 1; sk=pass"));
    assert_true(ours("mx.example.org.; sk=pass"));
    assert_true(ours("\" mx.example.org \"; sk=pass"));
    assert_true(ours("\"mx.example.org\r\n \"; sk=pass"));
    /* malformed after our id: still claims to be ours */
    assert_true(ours("mx.example.org junk; sk=pass"));
    assert_true(ours("mx.example.org"));
    assert_true(ours("\"mx.example.org\"x; sk=pass"));
    /* no authserv-id anyone could tell apart: removed too */
    assert_true(ours(""));
    assert_true(ours("; sk=pass"));
    assert_true(ours("\"mx.example.org; sk=pass"));
    assert_true(ours("(mx.example.org; sk=pass"));
    assert_true(ours("\"mx.example.org\xff\"; sk=pass"));

    assert_false(ours("other.example; sk=pass"));
    assert_false(ours("mx.example.org.evil; sk=pass"));
    assert_false(ours("\"mx.example.org.evil\"; sk=pass"));
    assert_false(ours("mx.example.orgx; sk=pass"));
    assert_false(ours("xmx.example.org; sk=pass"));
    assert_false(ours("\"mx example.org\"; sk=pass"));
    assert_false(ours("\"mx.example.org..\"; sk=pass"));
    assert_false(ours("(mx.example.org) other.example; sk=pass"));
    assert_false(ours("other.example; sk=pass (mx.example.org)"));
    assert_false(ours("other.example; sk=pass header.from=mx.example.org"));
    assert_false(ours("\"\"; none"));
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, OURS, strlen(OURS));
    assert_false(ours(big));

    /* an AuthservID with a trailing dot is the same name */
    assert_true(skm_ar_is_ours("mx.example.org; none", 20, OURS "."));
    /* the length given, not the NUL, ends the value */
    assert_true(skm_ar_is_ours("mx.example.org.evil; none", 14, OURS));
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_quoted),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_folding),
        cmocka_unit_test(test_resinfo),
        cmocka_unit_test(test_rfc_examples),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_is_ours),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
