/*
 * test_evidence.c -- the renegation-evidence parser sk-mirror and the
 * client share (sk/evidence.h): its layout, its limits, and errors that
 * name the line or offset.  The signed kinds are covered end to end by
 * t/client-reneged.t and t/mirror-renege.t.
 */
#include "testutil.h"


static void
parse_bad(const char *text, size_t max, const char *want)
{
    sk_evidence_t  ev;
    sk_err_t       err;

    tu_assert_err(sk_evidence_parse(&ev, text, strlen(text), max, &err),
        &err, SK_ERR_FORMAT, want);
    assert_null(ev.s);
    assert_int_equal(ev.n, 0);
}


static void
test_parse(void **state)
{
    static const char  text[] = "Reason: two SNs\nKind: duplicate-sn\n\n"
                                "Statement: entry 3\nabc"
                                "Statement: copy 0\n"
                                "Statement: tfm 2\nx\n";
    sk_evidence_t      ev;
    sk_err_t           err;

    (void) state;
    tu_assert_ok(sk_evidence_parse(&ev, text, sizeof(text) - 1, 8, &err),
        &err);
    assert_string_equal(ev.kind, "duplicate-sn");
    assert_int_equal(ev.n, 3);
    assert_true(sk_evidence_is(&ev.s[0], "entry"));
    assert_false(sk_evidence_is(&ev.s[0], "entr"));
    assert_int_equal(ev.s[0].len, 3);
    assert_memory_equal(ev.s[0].p, "abc", 3);
    assert_true(sk_evidence_is(&ev.s[1], "copy"));
    assert_int_equal(ev.s[1].len, 0);
    assert_true(sk_evidence_is(&ev.s[2], "tfm"));
    assert_memory_equal(ev.s[2].p, "x\n", 2);
    sk_evidence_free(&ev);
    assert_null(ev.s);
}


static void
test_parse_bad(void **state)
{
    (void) state;
    parse_bad("", 8, "line 1");
    parse_bad("Reason: no newline", 8, "line 1");
    parse_bad("Reason: x\nKind: a\nStatement: entry 0\n", 8, "line 2");
    parse_bad("Reason: x\nKind: a\n", 8, "line 2");
    parse_bad("Reason: x\nKind: "
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "\n\n", 8, "line 2");
    parse_bad("Reason: x\nKind: a\n\nStatment: entry 0\n", 8,
        "offset 19: want \"Statement: TYPE N\"");
    parse_bad("Reason: x\nKind: a\n\nStatement: entry\n", 8,
        "offset 19: bad statement line");
    parse_bad("Reason: x\nKind: a\n\nStatement: entry -1\n", 8,
        "offset 19: bad statement line");
    parse_bad("Reason: x\nKind: a\n\nStatement: entry 4\nabc", 8,
        "offset 19: statement length past the end");
    parse_bad("Reason: x\nKind: a\n\nStatement: entry 1x\na", 8,
        "offset 19: statement length past the end");
    /* A statement past max is refused, not left out. */
    parse_bad("Reason: x\nKind: a\n\nStatement: copy 0\nStatement: copy 0\n",
        1, "offset 37: more than 1 statements");
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_bad),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
