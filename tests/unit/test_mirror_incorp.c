/*
 * test_mirror_incorp.c -- sk-mirror's tl-<TID>/incorporated read back at
 * start (mr_inc_open): whole records past the stored entries and a torn
 * last record are cut; any other damage refuses, naming the file, offset
 * and field, and leaves the file byte for byte as it was (a cut there
 * would drop the valid copies behind the damage).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "testutil.h"
#include "mr.h"

/* docs/protocol.md's Change-Services, with the source SN and the name
 * made distinct per copy (sk_entry_parse checks form, not signatures). */
#define COPY_FMT \
    "Change-Services: 1\n" \
    "Name: example%u.com\n" \
    "SK-Signature: " \
    "1LsR5OJgYG9kJhu4n2Lhp6pkcclkIAbb5XWTGorrTYqS8B749he5gCOevooa4hVY" \
    "0-bFBMfJfuOmBwMzl7eZBw" "\n" \
    "SN: %u\n" \
    "Services: https;203.0.113.8:443,imaps,smtps\n" \
    "Signature: " \
    "B1bqF3pN3FMU8WIDfTiiO3Q8qPi2a_1I-4wP2bwjNNhmgF1DMjQU_UlZErqVYJhB" \
    "LcJxEA7mTmst9qphOa4yAg" "\n" \
    "TID: 1\n" \
    "Timestamp: 1700000600\n" \
    "\n"

/* The mirror's SNs of the three Incorporates; their copies are of source
 * SNs 40 + sn. */
static const unsigned  sns[3] = { 3, 5, 8 };

typedef struct {
    char         *dir;
    char         *path;
    mr_tlconf_t   conf;
    mr_tl_t       t;
    char          file[8192];       /* the three records */
    size_t        len;
    size_t        off[3];           /* where each record's header starts */
} fx_t;


static int
fx_setup(void **state)
{
    fx_t      *f = calloc(1, sizeof(*f));
    char       copy[1024];
    unsigned   i;
    int        n;

    assert_non_null(f);
    f->dir = tu_tmpdir();
    f->path = tu_path(f->dir, "incorporated");
    f->conf.tid = 8;
    f->t.conf = &f->conf;
    f->t.dir = f->dir;
    f->t.size = 100;
    for (i = 0; i < 3; i++) {
        n = snprintf(copy, sizeof(copy), COPY_FMT, sns[i], 40 + sns[i]);
        f->off[i] = f->len;
        f->len += (size_t) snprintf(f->file + f->len, sizeof(f->file) - f->len,
            "Incorporate: %u %d\n%s", sns[i], n, copy);
    }
    *state = f;
    return 0;
}


static int
fx_teardown(void **state)
{
    fx_t  *f = *state;

    mr_inc_close(&f->t);
    free(f->path);
    tu_rmtree(f->dir);
    free(f);
    return 0;
}


static void
fx_write(fx_t *f, const char *text, size_t len)
{
    FILE  *fp = fopen(f->path, "wb");

    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}


/* The file now, which must be len bytes long; malloc()ed. */
static char *
fx_read(fx_t *f, size_t len)
{
    struct stat   st;
    char         *buf = malloc(len + 1);
    FILE         *fp = fopen(f->path, "rb");

    assert_non_null(buf);
    assert_non_null(fp);
    assert_int_equal(fstat(fileno(fp), &st), 0);
    assert_int_equal((size_t) st.st_size, len);
    assert_int_equal(fread(buf, 1, len, fp), len);
    fclose(fp);
    return buf;
}


/* The file as text[0..len), changed at its record i's header to hdr:
 * mr_inc_open refuses with a message naming the file, the offset and
 * want (the field), and the file is left as it was. */
static void
fx_refused(fx_t *f, const char *text, size_t len, size_t at,
    const char *want)
{
    sk_err_t   err;
    char       off[64], *now;

    memset(&err, 0, sizeof(err));
    fx_write(f, text, len);
    assert_int_equal(mr_inc_open(&f->t, &err), -1);
    snprintf(off, sizeof(off), "%s: offset %zu:", f->path, at);
    if (strstr(err.msg, off) == NULL || strstr(err.msg, want) == NULL) {
        fail_msg("\"%s\": want \"%s\" and \"%s\"", err.msg, off, want);
    }
    mr_inc_close(&f->t);
    now = fx_read(f, len);
    assert_memory_equal(now, text, len);
    free(now);
}


/* The file with record i's header line replaced by hdr, into out. */
static size_t
fx_header(fx_t *f, size_t i, const char *hdr, char *out)
{
    const char  *nl = memchr(f->file + f->off[i], '\n', f->len - f->off[i]);
    size_t       n, tail;

    assert_non_null(nl);
    n = f->off[i];
    memcpy(out, f->file, n);
    n += (size_t) sprintf(out + n, "%s", hdr);
    tail = f->len - (size_t) (nl - f->file);
    memcpy(out + n, nl, tail);
    return n + tail;
}


static void
test_whole(void **state)
{
    fx_t      *f = *state;
    sk_err_t   err;
    char      *text, *now;
    size_t     len;

    fx_write(f, f->file, f->len);
    assert_int_equal(mr_inc_open(&f->t, &err), 0);
    assert_int_equal(mr_inc_read(&f->t, 5, &text, &len, &err), 0);
    assert_non_null(strstr(text, "Name: example5.com\n"));
    free(text);
    assert_int_equal(mr_inc_read(&f->t, 8, &text, &len, &err), 0);
    free(text);
    now = fx_read(f, f->len);
    assert_memory_equal(now, f->file, f->len);
    free(now);
}


/* The external review's case: the middle LENGTH raised by 9000 used to
 * be taken for a torn copy, and SN 5 and 8 were cut. */
static void
test_length_past_end(void **state)
{
    fx_t    *f = *state;
    char     out[8192], hdr[64];
    size_t   n, clen = f->off[2] - f->off[1] - 19;

    /* "Incorporate: 5 NNN\n" is 19 bytes for a 3-digit length. */
    assert_true(clen > 99 && clen < 1000);
    snprintf(hdr, sizeof(hdr), "Incorporate: 5 %zu", clen + 9000);
    n = fx_header(f, 1, hdr, out);
    fx_refused(f, out, n, f->off[1], "LENGTH");

    /* The last record's, with its whole copy there: not torn either. */
    snprintf(hdr, sizeof(hdr), "Incorporate: 8 %zu", clen + 1);
    n = fx_header(f, 2, hdr, out);
    fx_refused(f, out, n, f->off[2], "LENGTH");
}


static void
test_bad_numbers(void **state)
{
    /* The header: [0], the copy's length, [1]; [2] the message wanted. */
    static const char *const  bad[][3] = {
        { "Incorporate: -1 ", "", "\"SN\": illegal value \"-1\"" },
        { "Incorporate: +5 ", "", "\"SN\": illegal value \"+5\"" },
        { "Incorporate: 99999999999999999999999 ", "", "\"SN\": illegal" },
        { "Incorporate: 18446744073709551616 ", "", "\"SN\": illegal" },
        { "Incorporate:  5 ", "", "\"SN\": illegal value \"\"" },
        { "Incorporate: 5  ", "", "\"LENGTH\": illegal" },
        { "Incorporate: 5 -", "", "\"LENGTH\": illegal" },
        { "Incorporate: 5 ", " trailing", "\"LENGTH\": illegal" },
        { "Incorporate: 5 ", "0000000000000000000000",
          "\"LENGTH\": illegal" },
        { "Incorporate: 5", "", "want \"Incorporate: SN LENGTH\"" },
        { "incorporate: 5 ", "", "want \"Incorporate: SN LENGTH\"" },
    };
    fx_t    *f = *state;
    char     out[8192], hdr[128];
    size_t   i, n, clen = f->off[2] - f->off[1] - 19;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(hdr, sizeof(hdr), "%s%zu%s", bad[i][0], clen, bad[i][1]);
        n = fx_header(f, 1, hdr, out);
        fx_refused(f, out, n, f->off[1], bad[i][2]);
    }
    /* SNs out of order: 3, 9, 8. */
    snprintf(hdr, sizeof(hdr), "Incorporate: 9 %zu", clen);
    n = fx_header(f, 1, hdr, out);
    fx_refused(f, out, n, f->off[2], "SN 8 after SN 9");
}


/* A crash while the last record was written: cut, as before, when its
 * Incorporate is not stored; refused when it is (its copy was synced
 * whole before it, so a cut copy is damage, not a tear). */
static void
test_torn_last(void **state)
{
    fx_t      *f = *state;
    sk_err_t   err;
    char      *now, *text;
    size_t     cut, len;

    for (cut = 1; cut < f->len - f->off[2]; cut += 37) {
        f->t.size = 8;
        fx_write(f, f->file, f->len - cut);
        assert_int_equal(mr_inc_open(&f->t, &err), 0);
        assert_int_equal(mr_inc_read(&f->t, 5, &text, &len, &err), 0);
        free(text);
        assert_int_equal(mr_inc_read(&f->t, 8, &text, &len, &err), -1);
        mr_inc_close(&f->t);
        now = fx_read(f, f->off[2]);
        assert_memory_equal(now, f->file, f->off[2]);
        free(now);
    }
    /* Its header cut short: its SN not known, nothing to hold it to. */
    fx_write(f, f->file, f->off[2] + 16);
    f->t.size = 100;
    assert_int_equal(mr_inc_open(&f->t, &err), 0);
    mr_inc_close(&f->t);
    now = fx_read(f, f->off[2]);
    free(now);

    /* SN 8 stored (size 100): its copy cut short is damage. */
    fx_refused(f, f->file, f->len - 10, f->off[2], "the copy of SN 8");
}


/* Whole records past the stored entries (a round that failed): cut. */
static void
test_past_size(void **state)
{
    fx_t      *f = *state;
    sk_err_t   err;
    char      *now;

    f->t.size = 6;
    fx_write(f, f->file, f->len);
    assert_int_equal(mr_inc_open(&f->t, &err), 0);
    mr_inc_close(&f->t);
    now = fx_read(f, f->off[2]);
    assert_memory_equal(now, f->file, f->off[2]);
    free(now);

    /* A damaged record after them is still damage, not cut with them. */
    f->t.size = 4;
    memcpy(f->file + f->off[2], "Incorporate: +", 14);
    fx_refused(f, f->file, f->len, f->off[2], "\"SN\": illegal value");
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(test_whole, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_length_past_end, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_bad_numbers, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_torn_last, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_past_size, fx_setup,
            fx_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
