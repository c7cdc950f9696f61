/*
 * test_cache.c -- the key-material cache: spec parsing, the directory
 * backend, Redis (a private redis-server started here) and carriers,
 * including a poisoned entry.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <hiredis/hiredis.h>

#include "testutil.h"
#include "../../common/src/internal.h"

#define CARRIER_KEY \
    "sk:carrier:0123456789abcdef0123456789abcdef" \
    "0123456789abcdef0123456789abcdef"

/* Shared by all tests: made once in the group setup. */
static struct {
    sk_key_t     *sk, *op[2];
    sk_carrier_t *carrier[2];
    char         *dir;              /* redis-server's --dir */
    char          sock[108];        /* its unix socket */
    char          unix_spec[160], tcp_spec[64];
    int           port;
    pid_t         pid;              /* 0: not running */
    int           have_redis;
} g;

static const unsigned char binval[] = "bin\0ary \r\n$3\r\n\xff value";



static void
assert_cached(sk_cache_t *c, const char *key, const void *want, size_t wlen)
{
    unsigned char *val;
    size_t         len;
    sk_err_t       err;

    tu_assert_ok(sk_cache_get(c, key, &val, &len, &err), &err);
    assert_int_equal(len, wlen);
    assert_memory_equal(val, want, wlen);
    assert_int_equal(val[len], '\0');
    free(val);
}


static void
assert_missing(sk_cache_t *c, const char *key)
{
    unsigned char *val;
    size_t         len;
    sk_err_t       err;

    tu_assert_err(sk_cache_get(c, key, &val, &len, &err), &err,
        SK_ERR_NOT_FOUND, "not found");
    assert_non_null(strstr(err.msg, key));
}


/* "sk:record:aaa..." of len bytes. */
static void
long_key(char key[SK_CACHE_KEY_MAX + 2], size_t len)
{
    memset(key, 'a', len);
    memcpy(key, "sk:record:", 10);
    key[len] = '\0';
}


/* Milliseconds since an arbitrary point, for timing a timeout. */
static long
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* A TCP port on 127.0.0.1 that nobody listens on right now. */
static int
free_port(void)
{
    struct sockaddr_in sin;
    socklen_t          len = sizeof(sin);
    int                fd, port;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *) &sin, sizeof(sin)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *) &sin, &len), 0);
    port = ntohs(sin.sin_port);
    close(fd);
    return port;
}


static int
in_path(const char *prog)
{
    const char *path = getenv("PATH"), *p, *end;
    char        buf[4096];

    for (p = path ? path : "/usr/bin:/bin"; *p != '\0'; p = end + !!*end) {
        end = strchr(p, ':');
        if (end == NULL) {
            end = p + strlen(p);
        }
        snprintf(buf, sizeof(buf), "%.*s/%s", (int) (end - p), p, prog);
        if (access(buf, X_OK) == 0) {
            return 1;
        }
    }
    return 0;
}


static int
unix_connectable(const char *path)
{
    struct sockaddr_un sun;
    int                fd, ok;

    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    ok = connect(fd, (struct sockaddr *) &sun, sizeof(sun)) == 0;
    close(fd);
    return ok;
}


static void
redis_start(void)
{
    char  port[16], *log;
    pid_t pid, parent = getpid();
    int   i, status, fd;

    snprintf(port, sizeof(port), "%d", g.port);
    log = tu_path(g.dir, "redis.log");
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* If the test dies (crash, abort), the server goes with it. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) {
            _exit(1);
        }
        fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execlp("redis-server", "redis-server", "--port", port,
            "--bind", "127.0.0.1", "--unixsocket", g.sock,
            "--save", "", "--appendonly", "no", "--dir", g.dir,
            (char *) NULL);
        _exit(127);
    }
    free(log);
    g.pid = pid;
    for (i = 0; i < 200; i++) {
        if (unix_connectable(g.sock)) {
            return;
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            g.pid = 0;
            fail_msg("redis-server exited (see %s/redis.log)", g.dir);
        }
        usleep(25000);
    }
    fail_msg("redis-server did not come up on %s", g.sock);
}


static void
redis_stop(void)
{
    int status;

    if (g.pid > 0) {
        kill(g.pid, SIGTERM);
        waitpid(g.pid, &status, 0);
        g.pid = 0;
    }
}


static sk_carrier_t *
make_carrier(const sk_key_t *op, const char *name)
{
    sk_carrier_params_t  params;
    sk_carrier_t        *c;
    sk_err_t             err;
    time_t               now = time(NULL);

    params.name = name;
    params.services = "https";
    params.not_before = now - 60;
    params.not_after = now + 86400;
    tu_assert_ok(sk_carrier_create(&c, g.sk, op, &params, &err), &err);
    return c;
}


static int
group_setup(void **state)
{
    sk_err_t err;
    int      i;

    (void) state;
    /* A server that vanishes mid-write must give an error, not SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    umask(022);
    tu_assert_ok(sk_key_generate(&g.sk, SK_KEY_ED25519, 0, &err), &err);
    for (i = 0; i < 2; i++) {
        tu_assert_ok(sk_key_generate(&g.op[i], SK_KEY_P256, 0, &err), &err);
    }
    g.carrier[0] = make_carrier(g.op[0], "example.com");
    g.carrier[1] = make_carrier(g.op[1], "mail.example.com");

    g.have_redis = in_path("redis-server");
    if (!g.have_redis) {
        return 0;
    }
    g.dir = tu_tmpdir();
    snprintf(g.sock, sizeof(g.sock), "%s/redis.sock", g.dir);
    snprintf(g.unix_spec, sizeof(g.unix_spec), "unix:%s", g.sock);
    g.port = free_port();
    snprintf(g.tcp_spec, sizeof(g.tcp_spec), "redis://127.0.0.1:%d",
        g.port);
    redis_start();
    return 0;
}


static int
group_teardown(void **state)
{
    int i;

    (void) state;
    redis_stop();
    if (g.dir != NULL) {
        tu_rmtree(g.dir);
    }
    for (i = 0; i < 2; i++) {
        sk_carrier_free(g.carrier[i]);
        sk_key_free(g.op[i]);
    }
    sk_key_free(g.sk);
    return 0;
}


/* Every Redis test runs against a live server, restarted if one before
 * it failed half-way through a stop/start. */
static void
need_redis(void)
{
    if (!g.have_redis) {
        skip();
    }
    if (g.pid == 0) {
        redis_start();
    }
}


static void
test_spec_good(void **state)
{
    static const char *const specs[] = {
        "/var/lib/sk", "/tmp/", "/",
    };
    sk_cache_t *c;
    sk_err_t    err;
    size_t      i;

    (void) state;
    for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        tu_assert_ok(sk_cache_open(&c, specs[i], 0, &err), &err);
        assert_string_equal(sk_cache_spec(c), specs[i]);
        sk_cache_close(c);
    }
    sk_cache_close(NULL);
}


/* sk_cache_check parses every form and connects to nothing: port 1 on
 * loopback refuses, and sk_cache_open says so. */
static void
test_spec_check(void **state)
{
    static const char *const specs[] = {
        "/var/lib/sk", "redis://127.0.0.1:1", "redis://127.0.0.1:1/3",
        "redis://[::1]:1", "unix:/nonexistent/redis.sock?db=2",
        "redis-cluster://127.0.0.1:1",
        "redis-cluster://127.0.0.1:1,[::1]:2,localhost:3",
    };
    sk_cache_t *c;
    sk_err_t    err;
    size_t      i;

    (void) state;
    for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        tu_assert_ok(sk_cache_check(specs[i], &err), &err);
    }
    tu_assert_err(sk_cache_open(&c, "redis-cluster://127.0.0.1:1", 200, &err),
        &err, SK_ERR_UNAVAILABLE, "no node gives the slot map");
    sk_cache_close(c);
}


/* Redis Cluster's key slots: CRC16 (XMODEM) of the key, or of its
 * {hash tag}, modulo 16384 (values as CLUSTER KEYSLOT gives them). */
static void
test_cluster_slot(void **state)
{
    (void) state;
    assert_int_equal(sk_cache_cluster_slot("foo", 3), 12182);
    assert_int_equal(sk_cache_cluster_slot("123456789", 9), 0x31c3);
    assert_int_equal(sk_cache_cluster_slot("{user1000}.following", 20),
        sk_cache_cluster_slot("user1000", 8));
    assert_int_equal(sk_cache_cluster_slot("{}foo", 5),
        sk_cache_cluster_slot("{}foo", 5));
    assert_int_not_equal(sk_cache_cluster_slot("{}foo", 5),
        sk_cache_cluster_slot("foo", 3));
}


static int
redirect(sk_cache_cluster_t *cl, const char *msg, int *ask, int keep)
{
    return sk_cache_cluster_redirect(cl, msg, strlen(msg), ask, keep);
}


static void
assert_node(sk_cache_cluster_t *cl, int i, const char *host, int port)
{
    const char *h;
    int         p = 0;

    h = sk_cache_cluster_node(cl, i, &p);
    assert_non_null(h);
    assert_string_equal(h, host);
    assert_int_equal(p, port);
}


/*
 * MOVED and ASK name the node after the slot number (the space after
 * "MOVED" is not the one), and the node table never fills with nodes
 * that no slot names: 200 redirections to as many nodes all fit.
 */
static void
test_cluster_redirect(void **state)
{
    const char          *spec = "redis-cluster://127.0.0.1:7000";
    sk_cache_cluster_t  *cl;
    sk_err_t             err;
    char                 msg[64];
    int                  ask = -1, i, k, last = -1;

    (void) state;
    tu_assert_ok(sk_cache_cluster_open(&cl, spec + 16, spec, &err), &err);
    assert_int_equal(redirect(cl, "MOVED 5735 127.0.0.1:7001", &ask, -1),
        1);
    assert_int_equal(ask, 0);
    assert_node(cl, 1, "127.0.0.1", 7001);
    assert_int_equal(redirect(cl, "ASK 12 127.0.0.1:7002", &ask, -1), 2);
    assert_int_equal(ask, 1);
    assert_node(cl, 2, "127.0.0.1", 7002);
    assert_int_equal(redirect(cl, "MOVED 1 ::1:7003", &ask, -1), 3);
    assert_node(cl, 3, "::1", 7003);
    /* The same node again is the same entry. */
    assert_int_equal(redirect(cl, "MOVED 9 127.0.0.1:7001", &ask, -1), 1);
    assert_int_equal(redirect(cl, "MOVED 5735", &ask, -1), -1);
    assert_int_equal(redirect(cl, "MOVED 5735 127.0.0.1:x", &ask, -1), -1);
    assert_int_equal(redirect(cl, "ERR unknown command", &ask, -1), -1);
    assert_int_equal(redirect(cl, "CLUSTERDOWN 1 a:1", &ask, -1), -1);

    for (i = 0; i < 200; i++) {
        snprintf(msg, sizeof(msg), "MOVED %d 10.0.0.1:%d", i, 8000 + i);
        k = redirect(cl, msg, &ask, last);
        if (k <= 0 || k == last) {
            fail_msg("%s: node %d (the one in use: %d)", msg, k, last);
        }
        assert_node(cl, k, "10.0.0.1", 8000 + i);
        last = k;
    }
    assert_node(cl, 0, "127.0.0.1", 7000);      /* the seed stays */
    sk_cache_cluster_close(cl);
}


static void
test_spec_bad(void **state)
{
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        { "",                         "empty spec" },
        { "var/lib/sk",               "must be an absolute path" },
        { "./sk",                     "must be an absolute path" },
        { "rediss://h:6379",          "unknown scheme \"rediss\"" },
        { "memcached://h:11211",      "unknown scheme \"memcached\"" },
        { "redis:/h:6379",            "unknown scheme \"redis\"" },
        { "redis://h",                "missing port" },
        { "redis://h/0",              "missing port" },
        { "redis://:6379",            "bad host" },
        { "redis://h_x:6379",         "bad host" },
        { "redis://u:pw@h:6379",      "AUTH" },
        { "redis://[::1:6379",        "missing \"]\"" },
        { "redis://[::1]",            "missing port" },
        { "redis://[g::1]:6379",      "bad host" },
        { "redis://h:",               "bad port \"\"" },
        { "redis://h:0",              "bad port \"0\"" },
        { "redis://h:65536",          "bad port \"65536\"" },
        { "redis://h:06379",          "bad port \"06379\"" },
        { "redis://h:63x9",           "bad port \"63x9\"" },
        { "redis://h:-1",             "bad port \"-1\"" },
        { "redis://h:99999999999",    "bad port" },
        { "redis://h:6379/",          "bad database \"\"" },
        { "redis://h:6379/x",         "bad database \"x\"" },
        { "redis://h:6379/01",        "bad database \"01\"" },
        { "redis://h:6379/1/2",       "bad database \"1/2\"" },
        { "redis://h:6379/2147483648", "bad database" },
        { "unix:",                    "socket path must be absolute" },
        { "unix:run/redis.sock",      "socket path must be absolute" },
        { "unix:/r.sock?database=1",  "unknown parameter \"database=1\"" },
        { "unix:/r.sock?db=",         "bad database \"\"" },
        { "unix:/r.sock?db=1&x=2",    "bad database \"1&x=2\"" },
        { "redis-cluster://",         "no seed node" },
        { "redis-cluster://h",        "seed \"h\": want HOST:PORT" },
        { "redis-cluster://h:1,h",    "seed \"h\": want HOST:PORT" },
        { "redis-cluster://h:0",      "seed \"h:0\"" },
        { "redis-cluster://h:1x",     "seed \"h:1x\"" },
        { "redis-cluster://:1",       "seed \":1\"" },
        { "redis-cluster://h:1/0",    "seed \"h:1/0\"" },
        { "redis-cluster://h_x:1",    "seed \"h_x:1\"" },
        { "redis-cluster://u:pw@h:1", "seed \"u:pw@h:1\"" },
        { "redis-cluster://::1:6379", "seed \"::1:6379\"" },
        { "redis-cluster://[g::1]:1", "seed \"[g::1]:1\"" },
        { "redis-cluster://[]:1",     "seed \"[]:1\"" },
        { "redis-cluster://h:1,,h:2", "seed \"\"" },
    };
    char        longsock[200], longspec[1100];
    sk_cache_t *c = (sk_cache_t *) &c;
    sk_err_t    err;
    size_t      i;

    (void) state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tu_assert_err(sk_cache_open(&c, bad[i].spec, 0, &err), &err,
            SK_ERR_FORMAT, bad[i].msg);
        assert_null(c);
        /* the check that nginx runs on its directives: same verdict */
        tu_assert_err(sk_cache_check(bad[i].spec, &err), &err,
            SK_ERR_FORMAT, bad[i].msg);
    }
    memset(longsock, 'a', sizeof(longsock));
    memcpy(longsock, "unix:/", 6);
    longsock[sizeof(longsock) - 1] = '\0';
    tu_assert_err(sk_cache_open(&c, longsock, 0, &err), &err, SK_ERR_FORMAT,
        "socket path longer than 107 bytes");
    memset(longspec, 'a', sizeof(longspec));
    longspec[0] = '/';
    longspec[sizeof(longspec) - 1] = '\0';
    tu_assert_err(sk_cache_open(&c, longspec, 0, &err), &err, SK_ERR_FORMAT,
        "spec longer than 1024 bytes");
    tu_assert_err(sk_cache_open(&c, "/var/lib/sk", -1, &err), &err,
        SK_ERR_USAGE, "negative timeout");
}


static void
test_dir_put_get_del(void **state)
{
    char        *dir = tu_tmpdir(), *sub = tu_path(dir, "carrier"),
                *file = tu_path(sub, CARRIER_KEY + 11), *spec;
    struct stat  st;
    sk_cache_t  *c;
    sk_err_t     err;

    (void) state;
    spec = tu_path(dir, "");           /* trailing slash: still DIR */
    tu_assert_ok(sk_cache_open(&c, spec, 0, &err), &err);
    assert_missing(c, CARRIER_KEY);
    tu_assert_ok(sk_cache_put(c, CARRIER_KEY, binval, sizeof(binval), &err),
        &err);
    assert_cached(c, CARRIER_KEY, binval, sizeof(binval));

    /* The documented layout and modes: DIR/carrier/<hex>, 0644, 0755. */
    assert_int_equal(stat(file, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0644);
    assert_int_equal(st.st_size, sizeof(binval));
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);

    tu_assert_ok(sk_cache_put(c, "sk:record:example.com", (const unsigned
        char *) "Bind: 1\n", 8, &err), &err);
    assert_cached(c, "sk:record:example.com", "Bind: 1\n", 8);
    free(file);
    file = tu_path(dir, "record/example.com");
    assert_int_equal(access(file, R_OK), 0);

    /* An empty value is a value, not a missing key. */
    tu_assert_ok(sk_cache_put(c, "sk:proof:example.com", NULL, 0, &err),
        &err);
    assert_cached(c, "sk:proof:example.com", "", 0);

    tu_assert_ok(sk_cache_del(c, CARRIER_KEY, &err), &err);
    assert_missing(c, CARRIER_KEY);
    tu_assert_err(sk_cache_del(c, CARRIER_KEY, &err), &err,
        SK_ERR_NOT_FOUND, CARRIER_KEY);
    assert_int_equal(tu_count_entries(sub), 0);
    /* Reading never creates anything. */
    assert_missing(c, "sk:other:x");
    tu_assert_err(sk_cache_del(c, "sk:other:x", &err), &err,
        SK_ERR_NOT_FOUND, "not found");
    assert_int_equal(tu_count_entries(dir), 3);

    sk_cache_close(c);
    free(spec);
    free(file);
    free(sub);
    tu_rmtree(dir);
}


static void
test_dir_atomic_replace(void **state)
{
    char          *dir = tu_tmpdir(), *sub = tu_path(dir, "record");
    unsigned char *big, *val;
    size_t         len;
    sk_cache_t    *c;
    sk_err_t       err;

    (void) state;
    tu_assert_ok(sk_cache_open(&c, dir, 0, &err), &err);
    tu_assert_ok(sk_cache_put(c, "sk:record:a.example", (const unsigned char
        *) "old", 3, &err), &err);
    tu_assert_ok(sk_cache_put(c, "sk:record:a.example", (const unsigned char
        *) "newer", 5, &err), &err);
    assert_cached(c, "sk:record:a.example", "newer", 5);
    /* Replaced in place: no temporary file left beside it. */
    assert_int_equal(tu_count_entries(sub), 1);

    /* Bounded both ways: refuse to write, and to read, over the limit. */
    big = calloc(1, SK_CACHE_VALUE_MAX + 1);
    assert_non_null(big);
    tu_assert_err(sk_cache_put(c, "sk:record:big", big,
        SK_CACHE_VALUE_MAX + 1, &err), &err, SK_ERR_USAGE, "larger than");
    free(sub);
    sub = tu_path(dir, "record/big");
    tu_assert_ok(sk_file_write_atomic(sub, big, SK_CACHE_VALUE_MAX + 1, 0644,
        &err), &err);
    tu_assert_err(sk_cache_get(c, "sk:record:big", &val, &len, &err), &err,
        SK_ERR_FORMAT, "larger than");
    free(big);

    sk_cache_close(c);
    free(sub);
    tu_rmtree(dir);
}


static void
test_dir_bad_keys(void **state)
{
    static const struct {
        const char *key, *msg;
    } bad[] = {
        { "",                          "must start with \"sk:\"" },
        { "sk:",                       "want sk:AREA:NAME" },
        { "sk:carrier",                "want sk:AREA:NAME" },
        { "sk:carrier:",               "want sk:AREA:NAME" },
        { "sk::x",                     "want sk:AREA:NAME" },
        { "carrier:abc",               "must start with \"sk:\"" },
        { "xsk:carrier:abc",           "must start with \"sk:\"" },
        { "SK:carrier:abc",            "byte 0 (0x53)" },
        { "sk:Carrier:abc",            "byte 3 (0x43)" },
        { "sk:carrier:ABC",            "byte 11 (0x41)" },
        { "sk:carrier:a b",            "byte 12 (0x20)" },
        { "sk:carrier:a_b",            "byte 12 (0x5f)" },
        { "sk:carrier:a\tb",           "byte 12 (0x09)" },
        { "sk:carrier:\xc3\xa9",       "byte 11 (0xc3)" },
        { "sk:carrier:../../etc/passwd", "byte 13 (0x2f)" },
        { "sk:carrier:/etc/passwd",    "byte 11 (0x2f)" },
        { "sk:record:a/b",             "byte 11 (0x2f)" },
        { "sk:carrier:..",             "\"..\" is not allowed" },
        { "sk:carrier:a..b",           "\"..\" is not allowed" },
        { "sk:..:passwd",              "\"..\" is not allowed" },
        { "sk:carrier:.",              "not starting with \".\"" },
        { "sk:carrier:.hidden",        "not starting with \".\"" },
        { "sk:.:x",                    "want sk:AREA:NAME" },
        { "sk:a.b:x",                  "want sk:AREA:NAME" },
        { "sk:.carrier:x",             "want sk:AREA:NAME" },
    };
    char           *dir = tu_tmpdir(), *inner = tu_path(dir, "cache"),
                    key[SK_CACHE_KEY_MAX + 2];
    unsigned char  *val;
    size_t          len, i;
    sk_cache_t     *c;
    sk_err_t        err;

    (void) state;
    assert_int_equal(mkdir(inner, 0755), 0);
    tu_assert_ok(sk_cache_open(&c, inner, 0, &err), &err);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tu_assert_err(sk_cache_put(c, bad[i].key, (const unsigned char *)
            "x", 1, &err), &err, SK_ERR_FORMAT, bad[i].msg);
        tu_assert_err(sk_cache_get(c, bad[i].key, &val, &len, &err), &err,
            SK_ERR_FORMAT, bad[i].msg);
        tu_assert_err(sk_cache_del(c, bad[i].key, &err), &err,
            SK_ERR_FORMAT, bad[i].msg);
    }
    /* Nothing was written, inside the directory or beside it. */
    assert_int_equal(tu_count_entries(inner), 0);
    assert_int_equal(tu_count_entries(dir), 1);

    /* A file name holds 255 bytes, and the temporary name 11 more. */
    long_key(key, 10 + 244);
    tu_assert_ok(sk_cache_put(c, key, (const unsigned char *) "x", 1, &err),
        &err);
    assert_cached(c, key, "x", 1);
    long_key(key, 10 + 245);
    tu_assert_err(sk_cache_put(c, key, (const unsigned char *) "x", 1, &err),
        &err, SK_ERR_FORMAT, "longer than 244 bytes");
    tu_assert_err(sk_cache_get(c, key, &val, &len, &err), &err,
        SK_ERR_FORMAT, "too long for a file name");
    /* The area is a directory name, bound the same way (fuzzing found a
     * long one gave a system error, not a format error). */
    memset(key, 'a', 250);
    memcpy(key, "sk:", 3);
    memcpy(key + 250, ":name", 6);
    tu_assert_err(sk_cache_get(c, key, &val, &len, &err), &err,
        SK_ERR_FORMAT, "too long for a directory name");
    long_key(key, SK_CACHE_KEY_MAX + 1);
    tu_assert_err(sk_cache_put(c, key, (const unsigned char *) "x", 1, &err),
        &err, SK_ERR_FORMAT, "longer than 300 bytes");

    sk_cache_close(c);
    free(inner);
    tu_rmtree(dir);
}


static void
test_dir_errors(void **state)
{
    char          *dir = tu_tmpdir(), *gone = tu_path(dir, "gone"),
                  *file = tu_path(dir, "record");
    unsigned char *val;
    size_t         len;
    sk_cache_t    *c;
    sk_err_t       err;

    (void) state;
    /* A missing cache directory: reads find nothing, writes say why. */
    tu_assert_ok(sk_cache_open(&c, gone, 0, &err), &err);
    assert_missing(c, "sk:record:example.com");
    tu_assert_err(sk_cache_put(c, "sk:record:example.com",
        (const unsigned char *) "x", 1, &err), &err, SK_ERR_SYSTEM,
        "cannot create directory");
    sk_cache_close(c);

    /* DIR/record is a file, not a directory. */
    tu_assert_ok(sk_file_write_atomic(file, "x", 1, 0644, &err), &err);
    tu_assert_ok(sk_cache_open(&c, dir, 0, &err), &err);
    tu_assert_err(sk_cache_put(c, "sk:record:example.com",
        (const unsigned char *) "x", 1, &err), &err, SK_ERR_SYSTEM,
        "cannot create temporary file");
    tu_assert_err(sk_cache_get(c, "sk:record:example.com", &val, &len,
        &err), &err, SK_ERR_SYSTEM, "cannot open");
    sk_cache_close(c);

    free(gone);
    free(file);
    tu_rmtree(dir);
}


static void
check_backend(const char *spec)
{
    sk_cache_t *c;
    char        key[SK_CACHE_KEY_MAX + 2];
    sk_err_t    err;

    tu_assert_ok(sk_cache_open(&c, spec, 0, &err), &err);
    assert_string_equal(sk_cache_spec(c), spec);
    assert_missing(c, CARRIER_KEY);
    tu_assert_ok(sk_cache_put(c, CARRIER_KEY, binval, sizeof(binval), &err),
        &err);
    assert_cached(c, CARRIER_KEY, binval, sizeof(binval));
    tu_assert_ok(sk_cache_put(c, CARRIER_KEY, (const unsigned char *) "v2",
        2, &err), &err);
    assert_cached(c, CARRIER_KEY, "v2", 2);
    tu_assert_ok(sk_cache_put(c, "sk:proof:example.com", NULL, 0, &err),
        &err);
    assert_cached(c, "sk:proof:example.com", "", 0);
    tu_assert_ok(sk_cache_del(c, CARRIER_KEY, &err), &err);
    tu_assert_ok(sk_cache_del(c, "sk:proof:example.com", &err), &err);
    assert_missing(c, CARRIER_KEY);
    tu_assert_err(sk_cache_del(c, CARRIER_KEY, &err), &err,
        SK_ERR_NOT_FOUND, "not found");
    /* Keys up to SK_CACHE_KEY_MAX, with no file name limit. */
    long_key(key, SK_CACHE_KEY_MAX);
    tu_assert_ok(sk_cache_put(c, key, binval, 3, &err), &err);
    assert_cached(c, key, binval, 3);
    tu_assert_ok(sk_cache_del(c, key, &err), &err);
    long_key(key, SK_CACHE_KEY_MAX + 1);
    tu_assert_err(sk_cache_put(c, key, binval, 3, &err), &err,
        SK_ERR_FORMAT, "longer than 300 bytes");
    /* The key rules hold for Redis too: the same keys everywhere. */
    tu_assert_err(sk_cache_put(c, "sk:carrier:../x", binval, 1, &err), &err,
        SK_ERR_FORMAT, "byte 13 (0x2f)");
    sk_cache_close(c);
}


static void
test_redis_unix(void **state)
{
    (void) state;
    need_redis();
    check_backend(g.unix_spec);
}


static void
test_redis_tcp(void **state)
{
    (void) state;
    need_redis();
    check_backend(g.tcp_spec);
}


static void
test_redis_db(void **state)
{
    sk_cache_t *db0, *db3, *tcp3, *bad = NULL;
    char        spec[200];
    sk_err_t    err;

    (void) state;
    need_redis();
    snprintf(spec, sizeof(spec), "%s?db=3", g.unix_spec);
    tu_assert_ok(sk_cache_open(&db3, spec, 0, &err), &err);
    snprintf(spec, sizeof(spec), "%s?db=0", g.unix_spec);
    tu_assert_ok(sk_cache_open(&db0, spec, 0, &err), &err);
    snprintf(spec, sizeof(spec), "%s/3", g.tcp_spec);
    tu_assert_ok(sk_cache_open(&tcp3, spec, 0, &err), &err);

    tu_assert_ok(sk_cache_put(db3, "sk:record:db.example",
        (const unsigned char *) "three", 5, &err), &err);
    assert_missing(db0, "sk:record:db.example");
    assert_cached(tcp3, "sk:record:db.example", "three", 5);
    tu_assert_ok(sk_cache_del(tcp3, "sk:record:db.example", &err), &err);
    assert_missing(db3, "sk:record:db.example");

    /* The server has 16 databases: 99 is refused at open. */
    snprintf(spec, sizeof(spec), "%s/99", g.tcp_spec);
    tu_assert_err(sk_cache_open(&bad, spec, 0, &err), &err,
        SK_ERR_UNAVAILABLE, "SELECT: ERR DB index is out of range");
    assert_non_null(bad);
    sk_cache_close(bad);

    sk_cache_close(db0);
    sk_cache_close(db3);
    sk_cache_close(tcp3);
}


static void
test_redis_outage(void **state)
{
    sk_cache_t    *ux, *tcp, *late = NULL;
    unsigned char *val;
    size_t         len;
    sk_err_t       err;

    (void) state;
    need_redis();
    tu_assert_ok(sk_cache_open(&ux, g.unix_spec, 0, &err), &err);
    tu_assert_ok(sk_cache_open(&tcp, g.tcp_spec, 0, &err), &err);
    tu_assert_ok(sk_cache_put(ux, "sk:record:outage.example",
        (const unsigned char *) "before", 6, &err), &err);

    redis_stop();
    /* The open connections find the server gone ... */
    tu_assert_err(sk_cache_get(ux, "sk:record:outage.example", &val, &len,
        &err), &err, SK_ERR_UNAVAILABLE, g.unix_spec);
    tu_assert_err(sk_cache_put(tcp, "sk:record:outage.example",
        (const unsigned char *) "x", 1, &err), &err, SK_ERR_UNAVAILABLE,
        g.tcp_spec);
    /* ... then every call tries to reconnect, and says it cannot. */
    tu_assert_err(sk_cache_get(ux, "sk:record:outage.example", &val, &len,
        &err), &err, SK_ERR_UNAVAILABLE, "cannot connect");
    tu_assert_err(sk_cache_del(tcp, "sk:record:outage.example", &err), &err,
        SK_ERR_UNAVAILABLE, "cannot connect");
    /* Opening while the server is down still gives a handle. */
    tu_assert_err(sk_cache_open(&late, g.tcp_spec, 0, &err), &err,
        SK_ERR_UNAVAILABLE, "cannot connect");
    assert_non_null(late);

    redis_start();
    /* The same handles recover; the server kept nothing (--save ''). */
    assert_missing(ux, "sk:record:outage.example");
    tu_assert_ok(sk_cache_put(tcp, "sk:record:outage.example",
        (const unsigned char *) "after", 5, &err), &err);
    assert_cached(ux, "sk:record:outage.example", "after", 5);
    assert_cached(late, "sk:record:outage.example", "after", 5);
    tu_assert_ok(sk_cache_del(late, "sk:record:outage.example", &err), &err);

    sk_cache_close(ux);
    sk_cache_close(tcp);
    sk_cache_close(late);
}


/* A server that accepts (the kernel's backlog does) but never answers. */
static int
mute_listener(struct sockaddr *sa, socklen_t len)
{
    int fd;

    fd = socket(sa->sa_family, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, sa, len), 0);
    assert_int_equal(listen(fd, 8), 0);
    return fd;
}


static void
expect_timeout(const char *spec)
{
    sk_cache_t    *c = NULL;
    unsigned char *val;
    size_t         len;
    sk_err_t       err;
    long           t0, dt;

    t0 = now_ms();
    tu_assert_err(sk_cache_open(&c, spec, 200, &err), &err,
        SK_ERR_UNAVAILABLE, "timed out after 200 ms");
    dt = now_ms() - t0;
    assert_non_null(c);
    assert_true(dt >= 150 && dt < 2000);
    /* Still no answer on the next call, and still bounded. */
    t0 = now_ms();
    tu_assert_err(sk_cache_get(c, CARRIER_KEY, &val, &len, &err), &err,
        SK_ERR_UNAVAILABLE, "timed out");
    dt = now_ms() - t0;
    assert_true(dt >= 150 && dt < 2000);
    sk_cache_close(c);
}


static void
test_redis_timeout(void **state)
{
    struct sockaddr_un  sun;
    struct sockaddr_in  sin;
    socklen_t           slen = sizeof(sin);
    char               *dir = tu_tmpdir(), spec[200];
    int                 ufd, tfd;

    (void) state;
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/mute.sock", dir);
    ufd = mute_listener((struct sockaddr *) &sun, sizeof(sun));
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    tfd = mute_listener((struct sockaddr *) &sin, sizeof(sin));
    assert_int_equal(getsockname(tfd, (struct sockaddr *) &sin, &slen), 0);

    snprintf(spec, sizeof(spec), "unix:%s", sun.sun_path);
    expect_timeout(spec);
    snprintf(spec, sizeof(spec), "redis://127.0.0.1:%d/2",
        ntohs(sin.sin_port));
    expect_timeout(spec);

    close(ufd);
    close(tfd);
    tu_rmtree(dir);
}


/*
 * Many cluster nodes that accept and never answer: the whole call, every
 * node asked included, ends by one deadline (each node waiting its own
 * timeout made it 40 times as long).
 */
#define MUTE_NODES  40

static void
test_cluster_mute_nodes(void **state)
{
    struct sockaddr_in  sin;
    socklen_t           slen;
    sk_cache_t         *c = NULL;
    unsigned char      *val;
    size_t              len, n = 0;
    sk_err_t            err;
    char                spec[1024];
    long                t0, dt;
    int                 fd[MUTE_NODES], i;

    (void) state;
    n = (size_t) snprintf(spec, sizeof(spec), "redis-cluster://");
    for (i = 0; i < MUTE_NODES; i++) {
        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd[i] = mute_listener((struct sockaddr *) &sin, sizeof(sin));
        slen = sizeof(sin);
        assert_int_equal(getsockname(fd[i], (struct sockaddr *) &sin, &slen),
            0);
        n += (size_t) snprintf(spec + n, sizeof(spec) - n, "%s127.0.0.1:%d",
            i > 0 ? "," : "", ntohs(sin.sin_port));
        assert_true(n < sizeof(spec));
    }
    t0 = now_ms();
    tu_assert_err(sk_cache_open(&c, spec, 200, &err), &err,
        SK_ERR_UNAVAILABLE, "no node gives the slot map");
    dt = now_ms() - t0;
    assert_non_null(c);
    assert_true(dt >= 150 && dt < 1000);
    t0 = now_ms();
    tu_assert_err(sk_cache_get(c, CARRIER_KEY, &val, &len, &err), &err,
        SK_ERR_UNAVAILABLE, "no node gives the slot map");
    dt = now_ms() - t0;
    assert_true(dt >= 150 && dt < 1000);
    sk_cache_close(c);
    for (i = 0; i < MUTE_NODES; i++) {
        close(fd[i]);
    }
}


/* A /proc/self/status field, in kB. */
static long
proc_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char  line[256];
    long  v = -1;

    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, field, strlen(field)) == 0) {
            v = strtol(line + strlen(field), NULL, 10);
        }
    }
    fclose(f);
    return v;
}


/*
 * A value far over SK_CACHE_VALUE_MAX in Redis: refused while the reply
 * is read, not after reading it whole (the peak RSS shows which), and
 * the handle works again on the next call.
 */
static void
test_redis_huge_value(void **state)
{
    redisContext  *rc;
    redisReply    *r;
    sk_cache_t    *c;
    unsigned char *val;
    size_t         len;
    sk_err_t       err;
    long           base, peak;
    FILE          *f;
    int            ret;

    (void) state;
    need_redis();
    rc = redisConnectUnix(g.sock);
    assert_true(rc != NULL && rc->err == 0);
    /* 64 MiB of zeros, made by Redis itself. */
    r = redisCommand(rc, "SETRANGE %s %d x", CARRIER_KEY,
        64 * 1024 * 1024 - 1);
    assert_true(r != NULL && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);

    tu_assert_ok(sk_cache_open(&c, g.tcp_spec, 5000, &err), &err);
    /* "5": reset the peak RSS (VmHWM) to the current one. */
    f = fopen("/proc/self/clear_refs", "w");
    assert_non_null(f);
    fputs("5", f);
    fclose(f);
    base = proc_kb("VmRSS:");
    ret = sk_cache_get(c, CARRIER_KEY, &val, &len, &err);
    peak = proc_kb("VmHWM:");
    r = redisCommand(rc, "DEL %s", CARRIER_KEY);
    freeReplyObject(r);
    redisFree(rc);

    assert_int_equal(ret, -1);
    assert_int_equal(err.code, SK_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "larger than 4194304"));
    assert_true(base > 0 && peak > 0);
    if (peak - base > 16 * 1024) {
        fail_msg("reading the reply grew RSS by %ld kB", peak - base);
    }
    assert_missing(c, CARRIER_KEY);
    sk_cache_close(c);
}


static void
test_redis_nothing_listening(void **state)
{
    sk_cache_t *c = NULL;
    char        spec[64];
    sk_err_t    err;

    (void) state;
    tu_assert_err(sk_cache_open(&c, "unix:/nonexistent/redis.sock", 0,
        &err), &err, SK_ERR_UNAVAILABLE,
        "unix:/nonexistent/redis.sock: cannot connect");
    assert_non_null(c);
    assert_string_equal(sk_cache_spec(c), "unix:/nonexistent/redis.sock");
    sk_cache_close(c);
    snprintf(spec, sizeof(spec), "redis://127.0.0.1:%d", free_port());
    tu_assert_err(sk_cache_open(&c, spec, 0, &err), &err,
        SK_ERR_UNAVAILABLE, "cannot connect");
    sk_cache_close(c);
}


static void
check_carriers(sk_cache_t *c)
{
    const unsigned char *der, *got;
    unsigned char        md[SK_SHA256_BYTES];
    sk_carrier_t        *cr = (sk_carrier_t *) &cr;
    size_t               len, glen;
    char                 key[SK_CACHE_KEY_MAX + 1], want[SK_CACHE_KEY_MAX + 1];
    sk_err_t             err;

    sk_key_spki_sha256(md, g.op[0]);
    sk_cache_carrier_key(want, md);
    assert_int_equal(strlen(want), 11 + 64);
    assert_memory_equal(want, "sk:carrier:", 11);
    tu_assert_ok(sk_cache_carrier_key_of(key, g.carrier[0], &err), &err);
    assert_string_equal(key, want);

    tu_assert_err(sk_cache_get_carrier(&cr, c, md, &err), &err,
        SK_ERR_NOT_FOUND, key);
    assert_null(cr);
    tu_assert_ok(sk_cache_put_carrier(c, g.carrier[0], &err), &err);
    tu_assert_ok(sk_cache_put_carrier(c, g.carrier[1], &err), &err);
    tu_assert_ok(sk_cache_get_carrier(&cr, c, md, &err), &err);
    der = sk_carrier_get0_der(g.carrier[0], &len);
    got = sk_carrier_get0_der(cr, &glen);
    assert_int_equal(glen, len);
    assert_memory_equal(got, der, len);
    assert_string_equal(sk_carrier_name(cr), "example.com");
    sk_carrier_free(cr);

    /* Poisoned: carrier 1 stored under carrier 0's key is detected. */
    der = sk_carrier_get0_der(g.carrier[1], &len);
    tu_assert_ok(sk_cache_put(c, key, der, len, &err), &err);
    cr = (sk_carrier_t *) &cr;
    tu_assert_err(sk_cache_get_carrier(&cr, c, md, &err), &err,
        SK_ERR_FORMAT, "holds a carrier for another key");
    assert_non_null(strstr(err.msg, key));
    assert_null(cr);

    /* Garbage under the key: a parse error that names the key. */
    tu_assert_ok(sk_cache_put(c, key, (const unsigned char *) "junk", 4,
        &err), &err);
    tu_assert_err(sk_cache_get_carrier(&cr, c, md, &err), &err,
        SK_ERR_FORMAT, key);

    tu_assert_ok(sk_cache_del(c, key, &err), &err);
    tu_assert_ok(sk_cache_carrier_key_of(key, g.carrier[1], &err), &err);
    tu_assert_ok(sk_cache_del(c, key, &err), &err);
}


static void
test_carrier_dir(void **state)
{
    char       *dir = tu_tmpdir(), *sub = tu_path(dir, "carrier");
    sk_cache_t *c;
    sk_err_t    err;

    (void) state;
    tu_assert_ok(sk_cache_open(&c, dir, 0, &err), &err);
    check_carriers(c);
    assert_int_equal(tu_count_entries(sub), 0);
    sk_cache_close(c);
    free(sub);
    tu_rmtree(dir);
}


static void
test_carrier_redis(void **state)
{
    sk_cache_t *c;
    sk_err_t    err;

    (void) state;
    need_redis();
    tu_assert_ok(sk_cache_open(&c, g.unix_spec, 0, &err), &err);
    check_carriers(c);
    sk_cache_close(c);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_good),
        cmocka_unit_test(test_spec_bad),
        cmocka_unit_test(test_cluster_slot),
        cmocka_unit_test(test_cluster_redirect),
        cmocka_unit_test(test_spec_check),
        cmocka_unit_test(test_dir_put_get_del),
        cmocka_unit_test(test_dir_atomic_replace),
        cmocka_unit_test(test_dir_bad_keys),
        cmocka_unit_test(test_dir_errors),
        cmocka_unit_test(test_redis_nothing_listening),
        cmocka_unit_test(test_redis_timeout),
        cmocka_unit_test(test_cluster_mute_nodes),
        cmocka_unit_test(test_redis_huge_value),
        cmocka_unit_test(test_redis_unix),
        cmocka_unit_test(test_redis_tcp),
        cmocka_unit_test(test_redis_db),
        cmocka_unit_test(test_redis_outage),
        cmocka_unit_test(test_carrier_dir),
        cmocka_unit_test(test_carrier_redis),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
