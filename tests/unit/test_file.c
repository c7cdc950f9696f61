/*
 * test_file.c -- atomic and exclusive writes, bounded reads, key modes,
 * appends of whole records (cut back when they fail), exact preads.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"



static void
test_atomic_replace(void **state)
{
    char        *dir = tu_tmpdir(), *p = tu_path(dir, "chain.pem"), *buf;
    struct stat  st;
    size_t       len;
    sk_err_t     err;

    (void) state;
    tu_assert_ok(sk_file_write_atomic(p, "old", 3, 0640, &err), &err);
    tu_assert_ok(sk_file_write_atomic(p, "newer", 5, 0600, &err), &err);
    tu_assert_ok(sk_file_read(&buf, &len, p, 100, &err), &err);
    assert_int_equal(len, 5);
    assert_string_equal(buf, "newer");
    free(buf);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    /* No temporary file is left beside it. */
    assert_int_equal(tu_count_entries(dir), 1);

    tu_assert_err(sk_file_read(&buf, &len, p, 4, &err), &err, SK_ERR_FORMAT,
        "larger than 4 bytes");
    tu_assert_err(sk_file_read(&buf, &len, dir, 100, &err), &err,
        SK_ERR_FORMAT, "not a regular file");
    free(p);
    p = tu_path(dir, "missing/x");
    tu_assert_err(sk_file_write_atomic(p, "x", 1, 0600, &err), &err,
        SK_ERR_SYSTEM, "cannot create temporary file");
    free(p);
    tu_rmtree(dir);
}


static void
test_append(void **state)
{
    char   *dir = tu_tmpdir(), *p = tu_path(dir, "log"), buf[8], *all;
    off_t   end = 0;
    size_t  len;
    int     fd, ro, cut = 0;
    sk_err_t err;

    (void) state;
    fd = open(p, O_RDWR | O_CREAT | O_APPEND, 0644);
    assert_true(fd >= 0);
    assert_int_equal(sk_file_append(fd, &end, &cut, "ab", 2, 0), 0);
    assert_int_equal(sk_file_append(fd, &end, &cut, "cde", 3, 1), 0);
    assert_int_equal(end, 5);
    assert_int_equal(sk_file_pread_all(fd, buf, 3, 1), 0);
    assert_memory_equal(buf, "bcd", 3);
    /* Past the end: -1 with errno 0. */
    errno = EINVAL;
    assert_int_equal(sk_file_pread_all(fd, buf, 3, 4), -1);
    assert_int_equal(errno, 0);

    /* A failed append (a read-only descriptor) cannot be cut either: the
     * next append cuts first. */
    ro = open(p, O_RDONLY);
    assert_true(ro >= 0);
    assert_int_equal(sk_file_append(ro, &end, &cut, "x", 1, 1), -1);
    assert_int_equal(errno, EBADF);
    assert_int_equal(cut, 1);
    assert_int_equal(end, 5);
    close(ro);
    /* What it "left": bytes past the last whole record. */
    assert_int_equal(write(fd, "zz", 2), 2);
    assert_int_equal(sk_file_append(fd, &end, &cut, "f", 1, 1), 0);
    assert_int_equal(cut, 0);
    assert_int_equal(end, 6);
    close(fd);
    tu_assert_ok(sk_file_read(&all, &len, p, 100, &err), &err);
    assert_int_equal(len, 6);
    assert_string_equal(all, "abcdef");
    free(all);
    free(p);
    tu_rmtree(dir);
}


static void
test_write_new(void **state)
{
    char        *dir = tu_tmpdir(), *p = tu_path(dir, "k"),
                *l = tu_path(dir, "link");
    struct stat  st;
    sk_err_t     err;

    (void) state;
    tu_assert_ok(sk_file_write_new(p, "secret", 6, 0600, &err), &err);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    tu_assert_err(sk_file_write_new(p, "x", 1, 0600, &err), &err,
        SK_ERR_EXISTS, "refusing to overwrite");

    /* A symlink is never followed, even to a file that does not exist. */
    assert_int_equal(symlink("/tmp/sk-test-never-created", l), 0);
    tu_assert_err(sk_file_write_new(l, "x", 1, 0600, &err), &err,
        SK_ERR_EXISTS, "refusing");
    assert_int_equal(access("/tmp/sk-test-never-created", F_OK), -1);
    tu_assert_err(sk_file_check_private(l, &err), &err, SK_ERR_PERM,
        "not a regular file");

    tu_assert_ok(sk_file_check_private(p, &err), &err);
    assert_int_equal(chmod(p, 0604), 0);
    tu_assert_err(sk_file_check_private(p, &err), &err, SK_ERR_PERM,
        "permissions 0604 are too open");
    free(p);
    free(l);
    tu_rmtree(dir);
}


/* sk_file_read_private: the mode is checked on the descriptor it reads. */
static void
test_read_private(void **state)
{
    char        *dir = tu_tmpdir(), *p = tu_path(dir, "k"),
                *l = tu_path(dir, "link"), *f = tu_path(dir, "fifo"), *buf;
    size_t       len;
    sk_err_t     err;

    (void) state;
    tu_assert_ok(sk_file_write_new(p, "secret", 6, 0600, &err), &err);
    tu_assert_ok(sk_file_read_private(&buf, &len, p, 100, &err), &err);
    assert_int_equal(len, 6);
    assert_string_equal(buf, "secret");
    free(buf);
    assert_int_equal(chmod(p, 0400), 0);
    tu_assert_ok(sk_file_read_private(&buf, &len, p, 100, &err), &err);
    free(buf);
    tu_assert_err(sk_file_read_private(&buf, &len, p, 4, &err), &err,
        SK_ERR_FORMAT, "larger than 4 bytes");

    assert_int_equal(chmod(p, 0644), 0);
    tu_assert_err(sk_file_read_private(&buf, &len, p, 100, &err), &err,
        SK_ERR_PERM, "permissions 0644 are too open");
    assert_non_null(strstr(err.msg, p));
    assert_int_equal(chmod(p, 0640), 0);
    tu_assert_err(sk_file_read_private(&buf, &len, p, 100, &err), &err,
        SK_ERR_PERM, "permissions 0640 are too open");
    assert_int_equal(chmod(p, 0600), 0);

    /* Never followed, even to a private file; nor a FIFO opened (which
     * would block), nor a directory read. */
    assert_int_equal(symlink(p, l), 0);
    tu_assert_err(sk_file_read_private(&buf, &len, l, 100, &err), &err,
        SK_ERR_PERM, "not a regular file");
    assert_int_equal(mkfifo(f, 0600), 0);
    tu_assert_err(sk_file_read_private(&buf, &len, f, 100, &err), &err,
        SK_ERR_PERM, "not a regular file");
    tu_assert_err(sk_file_read_private(&buf, &len, dir, 100, &err), &err,
        SK_ERR_PERM, "not a regular file");

    /* Missing: a system error with ENOENT, which callers tell apart. */
    assert_int_equal(unlink(p), 0);
    tu_assert_err(sk_file_read_private(&buf, &len, p, 100, &err), &err,
        SK_ERR_SYSTEM, "cannot open");
    assert_int_equal(err.sys_errno, ENOENT);
    free(p);
    free(l);
    free(f);
    tu_rmtree(dir);
}


/*
 * A FIFO is refused at once, never opened for a writer to come (alarm:
 * before the fix sk_file_read slept in open(2) for good); a symbolic link
 * is followed by sk_file_read (operators' paths) and refused by
 * sk_file_read_nofollow (files in a directory another user can write).
 */
static void
test_read_fifo_link(void **state)
{
    char      *dir = tu_tmpdir(), *p = tu_path(dir, "staple"),
              *l = tu_path(dir, "link"), *f = tu_path(dir, "fifo"), *buf;
    size_t     len;
    sk_err_t   err;

    (void) state;
    alarm(10);
    assert_int_equal(mkfifo(f, 0644), 0);
    tu_assert_err(sk_file_read(&buf, &len, f, 100, &err), &err,
        SK_ERR_FORMAT, "fifo: not a regular file (a FIFO)");
    tu_assert_err(sk_file_read_nofollow(&buf, &len, f, 100, &err), &err,
        SK_ERR_PERM, "fifo: not a regular file (a FIFO)");
    tu_assert_err(sk_file_read(&buf, &len, dir, 100, &err), &err,
        SK_ERR_FORMAT, "not a regular file (a directory)");

    tu_assert_ok(sk_file_write_atomic(p, "bytes", 5, 0644, &err), &err);
    assert_int_equal(symlink(p, l), 0);
    tu_assert_ok(sk_file_read(&buf, &len, l, 100, &err), &err);
    assert_string_equal(buf, "bytes");
    free(buf);
    tu_assert_err(sk_file_read_nofollow(&buf, &len, l, 100, &err), &err,
        SK_ERR_PERM, "link: not a regular file (a symbolic link)");
    tu_assert_ok(sk_file_read_nofollow(&buf, &len, p, 100, &err), &err);
    assert_int_equal(len, 5);
    free(buf);
    tu_assert_err(sk_file_read_nofollow(&buf, &len, p, 4, &err), &err,
        SK_ERR_FORMAT, "larger than 4 bytes");
    assert_int_equal(unlink(p), 0);
    tu_assert_err(sk_file_read_nofollow(&buf, &len, p, 100, &err), &err,
        SK_ERR_SYSTEM, "cannot open");
    assert_int_equal(err.sys_errno, ENOENT);
    alarm(0);
    free(p);
    free(l);
    free(f);
    tu_rmtree(dir);
}


static void
test_err_helpers(void **state)
{
    sk_err_t err;

    (void) state;
    assert_int_equal(sk_err_set(&err, SK_ERR_FORMAT, "field \"%s\"", "SN"),
        -1);
    assert_int_equal(err.code, SK_ERR_FORMAT);
    assert_string_equal(err.msg, "field \"SN\"");
    sk_err_prefix(&err, "%s", "entry.txt");
    assert_string_equal(err.msg, "entry.txt: field \"SN\"");
    assert_int_equal(sk_err_set(NULL, SK_ERR_FORMAT, "ignored"), -1);
    assert_string_equal(sk_err_str(SK_ERR_WRONG_SK), "wrong sovereign key");
    assert_string_equal(sk_err_str((sk_err_code_t) 999), "unknown");
    sk_err_clear(&err);
    assert_int_equal(err.code, SK_OK);
    assert_string_equal(err.msg, "");
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_atomic_replace),
        cmocka_unit_test(test_write_new),
        cmocka_unit_test(test_read_private),
        cmocka_unit_test(test_read_fifo_link),
        cmocka_unit_test(test_append),
        cmocka_unit_test(test_err_helpers),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
