/*
 * test_b64.c -- base64url: RFC 4648 vectors, round trips, strictness.
 */
#include "testutil.h"


/* Decode in (NUL-terminated) and expect want[0..wantlen). */
static void
check_decode(const char *in, const void *want, size_t wantlen)
{
    unsigned char *out;
    size_t         outlen;
    sk_err_t       err;

    tu_assert_ok(sk_b64_decode(&out, &outlen, in, strlen(in), &err), &err);
    assert_non_null(out);
    assert_int_equal(outlen, wantlen);
    assert_memory_equal(out, want, wantlen);
    free(out);
}


static void
check_encode(const void *in, size_t n, const char *want)
{
    char  buf[64], *p;

    assert_int_equal(sk_b64_encoded_len(n), strlen(want));
    memset(buf, 'x', sizeof(buf));
    sk_b64_encode(buf, in, n);
    assert_string_equal(buf, want);
    p = sk_b64_encode_alloc(in, n);
    assert_non_null(p);
    assert_string_equal(p, want);
    free(p);
    check_decode(want, in, n);
}


static void
test_rfc4648_vectors(void **state)
{
    (void) state;
    /* RFC 4648 section 10, padding removed (identical in both alphabets). */
    check_encode("", 0, "");
    check_encode("f", 1, "Zg");
    check_encode("fo", 2, "Zm8");
    check_encode("foo", 3, "Zm9v");
    check_encode("foob", 4, "Zm9vYg");
    check_encode("fooba", 5, "Zm9vYmE");
    check_encode("foobar", 6, "Zm9vYmFy");

    /* Where the alphabets differ: standard "+/8=", "++++", "////". */
    check_encode("\xfb\xff", 2, "-_8");
    check_encode("\xfb\xef\xbe", 3, "----");
    check_encode("\xff\xff\xff", 3, "____");
    check_encode("\x00\x00\x00", 3, "AAAA");
    check_encode("\x00", 1, "AA");
}


static void
test_round_trip(void **state)
{
    unsigned char  in[300], *out;
    size_t         n, i, outlen;
    char          *enc;
    sk_err_t       err;

    (void) state;
    srand(4648);
    for (n = 0; n <= sizeof(in); n++) {
        for (i = 0; i < n; i++) {
            in[i] = (unsigned char) rand();
        }
        enc = sk_b64_encode_alloc(in, n);
        assert_non_null(enc);
        assert_int_equal(strlen(enc), sk_b64_encoded_len(n));
        assert_int_not_equal(strlen(enc) % 4, 1);
        assert_int_equal(strspn(enc, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
            "abcdefghijklmnopqrstuvwxyz0123456789-_"), strlen(enc));
        tu_assert_ok(sk_b64_decode(&out, &outlen, enc, strlen(enc), &err),
            &err);
        assert_int_equal(outlen, n);
        assert_memory_equal(out, in, n);
        free(out);
        free(enc);
    }
}


/* Every 2- and 3-character text decodes only if it is the encoding of
 * what it decodes to: one spelling per byte string. */
static void
test_canonical(void **state)
{
    static const char  a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "abcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char     *out;
    size_t             i, j, k, outlen, ok = 0;
    char               in[4], back[8];
    sk_err_t           err;

    (void) state;
    for (i = 0; i < 64; i++) {
        for (j = 0; j < 64; j++) {
            for (k = 0; k < 65; k++) {
                in[0] = a[i];
                in[1] = a[j];
                in[2] = k < 64 ? a[k] : '\0';
                in[3] = '\0';
                if (sk_b64_decode(&out, &outlen, in, strlen(in), &err)
                    != 0)
                {
                    assert_int_equal(err.code, SK_ERR_FORMAT);
                    assert_non_null(strstr(err.msg, "non-zero unused bits"));
                    assert_null(out);
                    continue;
                }
                sk_b64_encode(back, out, outlen);
                assert_string_equal(back, in);
                free(out);
                ok++;
            }
        }
    }
    /* 256 one-byte and 65536 two-byte strings, nothing else. */
    assert_int_equal(ok, 256 + 65536);
}


static void
check_reject(const char *in, size_t len, const char *want)
{
    unsigned char *out = (unsigned char *) "unchanged";
    size_t         outlen = 99;
    sk_err_t       err;

    tu_assert_err(sk_b64_decode(&out, &outlen, in, len, &err), &err,
        SK_ERR_FORMAT, want);
    assert_null(out);
    assert_int_equal(outlen, 0);
    assert_int_equal(sk_b64_decode(&out, &outlen, in, len, NULL), -1);
}


static void
test_reject(void **state)
{
    (void) state;
    check_reject("Zg==", 4, "character 3 is '=' padding");
    check_reject("Zm9v=", 5, "character 5 is '=' padding");
    check_reject("Zm9v\nYg", 7, "character 5 (0x0a) is whitespace");
    check_reject(" Zg", 3, "character 1 (0x20) is whitespace");
    check_reject("Zg\t", 3, "character 3 (0x09) is whitespace");
    check_reject("Zm9v\r\n", 6, "character 5 (0x0d) is whitespace");
    check_reject("+/8", 3, "character 1 is '+' from standard base64");
    check_reject("-/8", 3, "character 2 is '/' from standard base64");
    check_reject("Zm.v", 4, "character 3 (0x2e) is not in the base64url");
    check_reject("Zm\xc3\xa9", 4, "character 3 (0xc3) is not in");
    check_reject("Zm\0v", 4, "character 3 (0x00) is not in");
    check_reject("Z", 1, "length 1 is impossible");
    check_reject("Zm9vY", 5, "length 5 is impossible");
    /* 'h' and '9' leave 1 bits in the part of the byte that is cut off. */
    check_reject("Zh", 2, "character 2 has non-zero unused bits");
    check_reject("Zm9", 3, "character 3 has non-zero unused bits");
    check_reject("Zm9vYh", 6, "character 6 has non-zero unused bits");
}


/* Each of the 256 byte values, in the third place: decoded if and only if
 * it is one of the alphabet's 64 characters, to its own 6-bit value. */
static void
test_every_byte(void **state)
{
    static const char  a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "abcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char     *out;
    const char        *at;
    size_t             outlen;
    unsigned           c;
    char               in[4] = { 'A', 'A', 0, 'A' };
    sk_err_t           err;
    int                rc;

    (void) state;
    for (c = 0; c < 256; c++) {
        in[2] = (char) c;
        at = c != 0 ? memchr(a, (int) c, 64) : NULL;
        rc = sk_b64_decode(&out, &outlen, in, 4, &err);
        if (at == NULL) {
            assert_int_equal(rc, -1);
            assert_non_null(strstr(err.msg, "character 3"));
            continue;
        }
        tu_assert_ok(rc, &err);
        assert_int_equal(outlen, 3);
        assert_int_equal(out[1], (unsigned) (at - a) >> 2);
        assert_int_equal(out[2], ((unsigned) (at - a) & 3) << 6);
        free(out);
    }
}


static void
test_empty(void **state)
{
    unsigned char *out;
    size_t         outlen = 7;
    sk_err_t       err;

    (void) state;
    tu_assert_ok(sk_b64_decode(&out, &outlen, NULL, 0, &err), &err);
    assert_non_null(out);
    assert_int_equal(outlen, 0);
    free(out);
    assert_int_equal(sk_b64_encoded_len(0), 0);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_vectors),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_reject),
        cmocka_unit_test(test_every_byte),
        cmocka_unit_test(test_empty),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
