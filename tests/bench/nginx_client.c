/*
 * nginx_client.c -- a lean TLS handshake load client for bench_nginx.sh.
 *
 *   nginx_client IP PORT NAME CAFILE THREADS SECONDS RATE [staple]
 *
 * Each thread loops: connect, full TLS 1.3 handshake (no tickets, no
 * session cache, so never resumed) with normal CA verification of NAME,
 * close.
 * RATE > 0 offers that many handshakes per second in all (paced per
 * thread); 0 runs flat out.  Prints one line:
 *
 *   handshakes=N errors=E seconds=S cpu=C bytes_in=B
 *
 * cpu is this process's utime+stime in seconds; bytes_in what the server
 * sent.  Built twice: with OpenSSL (nginx_client) and, with -DSK_GNUTLS,
 * with GnuTLS (nginx_client_gnutls), so both libraries' client-side cost
 * of an extra certificate can be measured.  "staple" (OpenSSL only) asks
 * for the stapled SK proof, TLS extension 0xFF53, in every ClientHello,
 * as an SK-aware client does on first contact (bench_staple.pl).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef SK_GNUTLS
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#else
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

typedef struct {
    pthread_t           tid;
    unsigned long       handshakes;
    unsigned long       errors;
    unsigned long long  bytes_in;
} nc_thread_t;

static struct sockaddr_in  nc_addr;
static const char         *nc_host;
static double              nc_end;
static double              nc_interval;   /* per thread, 0: flat out */

#ifdef SK_GNUTLS
static gnutls_certificate_credentials_t  nc_cred;
static gnutls_priority_t                 nc_prio;
#else
static SSL_CTX                          *nc_ctx;
#endif


static double
nc_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}


static int
nc_connect(void)
{
    int fd, one = 1;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd == -1) {
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *) &nc_addr, sizeof(nc_addr)) == -1) {
        close(fd);
        return -1;
    }
    return fd;
}


#ifdef SK_GNUTLS

static int
nc_tls_init(const char *cafile, int staple)
{
    if (staple) {
        fprintf(stderr, "nginx_client: \"staple\" is for the OpenSSL "
            "build\n");
        return -1;
    }
    if (gnutls_global_init() < 0
        || gnutls_certificate_allocate_credentials(&nc_cred) < 0
        || gnutls_certificate_set_x509_trust_file(nc_cred, cafile,
               GNUTLS_X509_FMT_PEM) <= 0
        || gnutls_priority_init(&nc_prio,
               "NORMAL:-VERS-ALL:+VERS-TLS1.3", NULL) < 0)
    {
        fprintf(stderr, "nginx_client: %s: cannot set up GnuTLS\n", cafile);
        return -1;
    }
    return 0;
}


/* One full handshake on fd; bytes the server sent in *in. */
static int
nc_handshake(int fd, unsigned long long *in)
{
    gnutls_session_t  s;
    int               rc;

    (void) in;          /* GnuTLS has no byte counter; the OpenSSL build
                           reports the sizes */
    if (gnutls_init(&s, GNUTLS_CLIENT) < 0) {
        return -1;
    }
    gnutls_priority_set(s, nc_prio);
    gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, nc_cred);
    gnutls_server_name_set(s, GNUTLS_NAME_DNS, nc_host, strlen(nc_host));
    gnutls_session_set_verify_cert(s, nc_host, 0);
    gnutls_transport_set_int(s, fd);
    do {
        rc = gnutls_handshake(s);
    } while (rc < 0 && !gnutls_error_is_fatal(rc));
    gnutls_deinit(s);
    return rc < 0 ? -1 : 0;
}

#else

/* The stapled proof's request: an empty extension; the answer is only
 * counted in bytes_in. */
static int
nc_staple_add(SSL *ssl, unsigned int type, unsigned int context,
    const unsigned char **out, size_t *outlen, X509 *x, size_t chainidx,
    int *al, void *arg)
{
    (void) ssl;
    (void) type;
    (void) context;
    (void) x;
    (void) chainidx;
    (void) al;
    (void) arg;
    *out = NULL;
    *outlen = 0;
    return 1;
}


static int
nc_staple_parse(SSL *ssl, unsigned int type, unsigned int context,
    const unsigned char *in, size_t inlen, X509 *x, size_t chainidx,
    int *al, void *arg)
{
    (void) ssl;
    (void) type;
    (void) context;
    (void) in;
    (void) inlen;
    (void) x;
    (void) chainidx;
    (void) al;
    (void) arg;
    return 1;
}


static int
nc_tls_init(const char *cafile, int staple)
{
    nc_ctx = SSL_CTX_new(TLS_client_method());
    if (nc_ctx == NULL
        || SSL_CTX_set_min_proto_version(nc_ctx, TLS1_3_VERSION) != 1
        || SSL_CTX_load_verify_locations(nc_ctx, cafile, NULL) != 1)
    {
        fprintf(stderr, "nginx_client: %s: cannot set up OpenSSL\n", cafile);
        return -1;
    }
    SSL_CTX_set_verify(nc_ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_session_cache_mode(nc_ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(nc_ctx, SSL_OP_NO_TICKET);
    if (staple && SSL_CTX_add_custom_ext(nc_ctx, 0xFF53,
            SSL_EXT_CLIENT_HELLO | SSL_EXT_TLS1_2_SERVER_HELLO
            | SSL_EXT_TLS1_3_ENCRYPTED_EXTENSIONS, nc_staple_add, NULL,
            NULL, nc_staple_parse, NULL) != 1)
    {
        fprintf(stderr, "nginx_client: cannot add extension 0xFF53\n");
        return -1;
    }
    return 0;
}


static int
nc_handshake(int fd, unsigned long long *in)
{
    SSL  *ssl;
    int   rc;

    ssl = SSL_new(nc_ctx);
    if (ssl == NULL) {
        return -1;
    }
    SSL_set_tlsext_host_name(ssl, nc_host);
    SSL_set1_host(ssl, nc_host);
    SSL_set_fd(ssl, fd);
    rc = SSL_connect(ssl) == 1 ? 0 : -1;
    *in += BIO_number_read(SSL_get_rbio(ssl));
    SSL_free(ssl);
    ERR_clear_error();
    return rc;
}

#endif


static void *
nc_run(void *arg)
{
    nc_thread_t  *t = arg;
    double        next, now;
    int           fd;

    next = nc_now();
    while ((now = nc_now()) < nc_end) {
        if (nc_interval > 0) {
            if (now < next) {
                usleep((useconds_t) ((next - now) * 1e6));
                continue;
            }
            next += nc_interval;
        }
        fd = nc_connect();
        if (fd == -1 || nc_handshake(fd, &t->bytes_in) != 0) {
            t->errors++;
        } else {
            t->handshakes++;
        }
        if (fd != -1) {
            close(fd);
        }
    }
    return NULL;
}


int
main(int argc, char **argv)
{
    nc_thread_t        *ts;
    struct rusage       ru;
    unsigned long       hs = 0, errs = 0;
    unsigned long long  in = 0;
    double              start, secs, rate;
    int                 n, i;

    if (argc != 8 && (argc != 9 || strcmp(argv[8], "staple") != 0)) {
        fprintf(stderr, "usage: nginx_client IP PORT NAME CAFILE THREADS "
            "SECONDS RATE [staple]\n");
        return 2;
    }
    nc_host = argv[3];
    memset(&nc_addr, 0, sizeof(nc_addr));
    nc_addr.sin_family = AF_INET;
    nc_addr.sin_port = htons((unsigned short) atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &nc_addr.sin_addr) != 1) {
        fprintf(stderr, "nginx_client: %s: not an IPv4 address\n", argv[1]);
        return 2;
    }
    n = atoi(argv[5]);
    secs = atof(argv[6]);
    rate = atof(argv[7]);
    if (n < 1 || n > 256 || secs <= 0 || rate < 0) {
        fprintf(stderr, "nginx_client: bad THREADS, SECONDS or RATE\n");
        return 2;
    }
    if (nc_tls_init(argv[4], argc == 9) != 0) {
        return 1;
    }
    nc_interval = rate > 0 ? n / rate : 0;

    ts = calloc((size_t) n, sizeof(*ts));
    if (ts == NULL) {
        return 1;
    }
    start = nc_now();
    nc_end = start + secs;
    for (i = 0; i < n; i++) {
        if (pthread_create(&ts[i].tid, NULL, nc_run, &ts[i]) != 0) {
            fprintf(stderr, "nginx_client: pthread_create failed\n");
            return 1;
        }
    }
    for (i = 0; i < n; i++) {
        pthread_join(ts[i].tid, NULL);
        hs += ts[i].handshakes;
        errs += ts[i].errors;
        in += ts[i].bytes_in;
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("handshakes=%lu errors=%lu seconds=%.3f cpu=%.4f bytes_in=%llu\n",
        hs, errs, nc_now() - start,
        ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6
        + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, in);
    free(ts);
    return 0;
}
