/*
 * test_daemon.c -- sk_daemon_notify: the datagram systemd's Type=notify
 * waits for, on a path socket and on an abstract one.
 */
#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <sk/daemon.h>

#include "testutil.h"


/* A datagram socket bound to name (leading '@': abstract namespace). */
static int
tu_notify_listen(const char *name)
{
    struct sockaddr_un  sa;
    size_t              len = strlen(name);
    int                 fd;

    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, name, len);
    if (name[0] == '@') {
        sa.sun_path[0] = '\0';
    }
    assert_int_equal(bind(fd, (struct sockaddr *) &sa,
        (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len)), 0);
    return fd;
}


static void
tu_expect_datagram(int fd, const char *want)
{
    char     buf[64];
    ssize_t  n;

    n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    assert_true(n >= 0);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}


static void
test_notify_path(void **state)
{
    char  *dir = tu_tmpdir(), *p = tu_path(dir, "notify");
    int    fd;

    (void) state;
    fd = tu_notify_listen(p);
    assert_int_equal(setenv("NOTIFY_SOCKET", p, 1), 0);
    assert_int_equal(sk_daemon_notify("READY=1"), 1);
    tu_expect_datagram(fd, "READY=1");
    assert_int_equal(sk_daemon_notify("STOPPING=1"), 1);
    tu_expect_datagram(fd, "STOPPING=1");
    close(fd);

    /* Nobody listening any more: the caller learns, nothing crashes. */
    unlink(p);
    assert_int_equal(sk_daemon_notify("READY=1"), -1);
    free(p);
    tu_rmtree(dir);
}


static void
test_notify_abstract(void **state)
{
    char  name[64];
    int   fd;

    (void) state;
    snprintf(name, sizeof(name), "@sk-test-notify-%ld", (long) getpid());
    fd = tu_notify_listen(name);
    assert_int_equal(setenv("NOTIFY_SOCKET", name, 1), 0);
    assert_int_equal(sk_daemon_notify("READY=1"), 1);
    tu_expect_datagram(fd, "READY=1");
    close(fd);
}


static void
test_notify_unset_or_bad(void **state)
{
    (void) state;
    assert_int_equal(unsetenv("NOTIFY_SOCKET"), 0);
    assert_int_equal(sk_daemon_notify("READY=1"), 0);
    assert_int_equal(setenv("NOTIFY_SOCKET", "", 1), 0);
    assert_int_equal(sk_daemon_notify("READY=1"), 0);
    assert_int_equal(setenv("NOTIFY_SOCKET", "relative/path", 1), 0);
    assert_int_equal(sk_daemon_notify("READY=1"), -1);
    assert_int_equal(errno, EINVAL);
    unsetenv("NOTIFY_SOCKET");
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notify_path),
        cmocka_unit_test(test_notify_abstract),
        cmocka_unit_test(test_notify_unset_or_bad),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
