/*
 * test_strtab.c -- string tables: add, find, growth past many slots,
 * slots carried over intact, the FNV-1a reference values.
 */
#include <stdio.h>

#include <sk/strtab.h>

#include "testutil.h"

typedef struct {
    char   *name;
    int     value;
} slot_t;


static void
test_hash(void **state)
{
    (void) state;
    /* FNV-1a 64 reference values. */
    assert_true(sk_strhash("") == 14695981039346656037ull);
    assert_true(sk_strhash("a") == 0xaf63dc4c8601ec8cull);
}


static void
test_grow(void **state)
{
    sk_strtab_t  t;
    slot_t      *s;
    sk_err_t     err;
    char         name[32];
    int          i, made, seen = 0;
    size_t       j;

    (void) state;
    sk_strtab_init(&t, sizeof(slot_t));
    assert_null(sk_strtab_find(&t, "nothing"));
    for (i = 0; i < 5000; i++) {
        snprintf(name, sizeof(name), "n%d.example", i);
        s = sk_strtab_add(&t, name, &made, "test", &err);
        assert_non_null(s);
        assert_int_equal(made, 1);
        assert_int_equal(s->value, 0);
        s->value = i + 1;
    }
    assert_int_equal(t.n, 5000);
    assert_true(t.nslots >= 10000);
    for (i = 0; i < 5000; i++) {
        snprintf(name, sizeof(name), "n%d.example", i);
        s = sk_strtab_find(&t, name);
        assert_non_null(s);
        assert_string_equal(s->name, name);
        assert_int_equal(s->value, i + 1);
        assert_ptr_equal(sk_strtab_add(&t, name, &made, "test", &err), s);
        assert_int_equal(made, 0);
    }
    assert_null(sk_strtab_find(&t, "n5000.example"));
    for (j = 0; j < t.nslots; j++) {
        seen += ((slot_t *) sk_strtab_at(&t, j))->name != NULL;
    }
    assert_int_equal(seen, 5000);
    sk_strtab_free(&t);
    assert_int_equal(t.n, 0);
    assert_null(sk_strtab_find(&t, "n1.example"));
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_grow),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
