/*
 * fuzz_milter_session.c -- sk-milter's milter conversation on arbitrary
 * MTA bytes, without a socket: the packet parser (skm_mproto.c), the
 * session (skm_session.c) and the per-message logic it drives
 * (skm_filter.c: MAIL and its macros, headers, Authentication-Results,
 * the verdict), with hostile macro, header and body values.  A TrustFile
 * knows example.com (smtp) and web.example (https only).
 *
 * The first byte picks Mode reject (bit 0) and whether a standard option
 * negotiation is sent first (bit 1); the rest is the MTA's byte stream.
 * Checked, besides memory safety:
 *  - every reply is a whole packet of a kind the milter sends, and only
 *    option negotiation, a command the milter answers or end of message
 *    produce one;
 *  - at end of message: a 4xx/5xx reply of one line, or the A-R headers
 *    of that message claiming our authserv-id removed last first, then
 *    ours inserted (it parses by RFC 8601, with our authserv-id), then
 *    continue;
 *  - nothing is read after the session ends, and no message stays
 *    counted as in progress.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../../sk_milter/skm.h"

#define OURS    "mx.example.org"
#define AR      "Authentication-Results"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static skm_conf_t  *conf;


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char      dir[] = "/tmp/fuzz-milter.XXXXXX", path[64], trust[64];
    FILE     *f;
    sk_err_t  err;

    (void) argc;
    (void) argv;
    if (mkdtemp(dir) == NULL) {
        abort();
    }
    snprintf(trust, sizeof(trust), "%s/trust", dir);
    snprintf(path, sizeof(path), "%s/conf", dir);
    f = fopen(trust, "w");
    fputs("example.com smtp,smtps\nweb.example https\n", f);
    fclose(f);
    f = fopen(path, "w");
    fprintf(f, "Socket inet:1@127.0.0.1\nAuthservID " OURS "\nSyslog no\n"
        "TrustFile %s\n", trust);
    fclose(f);
    if (skm_conf_load(&conf, path, &err) != 0) {
        fprintf(stderr, "fuzz_milter_session: %s\n", err.msg);
        abort();
    }
    unlink(trust);
    unlink(path);
    rmdir(dir);
    skm_log_init(0, 0);
    skm_conf_install(conf);
    return 0;
}


/* The next reply packet at *p (within end): its command and data. */
static int
next_reply(const char **p, const char *end, const char **data, size_t *dlen)
{
    const char  *why;
    size_t       used;
    int          cmd;

    if (skm_mpkt_parse(*p, (size_t) (end - *p), &cmd, data, dlen, &used,
            &why) != 1)
    {
        abort();                        /* replies are whole packets */
    }
    *p += used;
    return cmd;
}


/* index(4) name NUL value NUL of a header edit; the value. */
static const char *
header_edit(const char *data, size_t dlen, uint32_t *idx)
{
    if (dlen < 4 + sizeof(AR) + 1 || data[dlen - 1] != '\0'
        || memcmp(data + 4, AR, sizeof(AR)) != 0
        || strlen(data + 4 + sizeof(AR)) != dlen - 5 - sizeof(AR))
    {
        abort();
    }
    memcpy(idx, data, 4);
    *idx = ntohl(*idx);
    return data + 4 + sizeof(AR);
}


/* End of message: a reply code, or the removals, ours, continue. */
static void
check_eom(const char *p, const char *end, const unsigned *ours, size_t n)
{
    const char  *data, *value, *why;
    size_t       dlen, off, i;
    uint32_t     idx;
    skm_ar_t     ar;
    int          cmd;

    cmd = next_reply(&p, end, &data, &dlen);
    if (cmd == 'y') {
        if (dlen < 5 || data[dlen - 1] != '\0' || strlen(data) != dlen - 1
            || (data[0] != '4' && data[0] != '5') || strpbrk(data, "\r\n")
            || p != end)
        {
            abort();
        }
        if (n > 1000 && strncmp(data, "550 5.7.1", 9) != 0) {
            abort();                    /* too many forgeries: refused */
        }
        return;
    }
    for (i = n; i > 0; i--) {
        if (cmd != 'm' || header_edit(data, dlen, &idx)[0] != '\0'
            || idx != ours[i - 1])
        {
            abort();
        }
        cmd = next_reply(&p, end, &data, &dlen);
    }
    if (cmd != 'i') {
        abort();
    }
    value = header_edit(data, dlen, &idx);
    if (idx != 1 || skm_ar_parse(&ar, value, strlen(value), &off, &why) != 0
        || strcmp(ar.id, OURS) != 0 || ar.nresults != 1)
    {
        abort();
    }
    if (next_reply(&p, end, &data, &dlen) != 'c' || dlen != 0 || p != end) {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    static const char  optneg[] = "\0\0\0\x0dO\0\0\0\x06\0\0\x01\xff"
                                  "\0\x1f\xff\xff";
    skm_session_t     *s;
    skm_obuf_t        *out;
    char              *buf;
    const char        *p, *end, *data, *why, *rdata;
    size_t             len, dlen, used, rlen, n;
    unsigned          *ours, nar;
    int                cmd, rc;

    if (size == 0) {
        return 0;
    }
    conf->mode = in[0] & 1 ? SKM_MODE_REJECT : SKM_MODE_VERIFY;
    len = (in[0] & 2 ? sizeof(optneg) - 1 : 0) + size - 1;
    buf = malloc(len + 1);
    ours = malloc(sizeof(*ours) * (size / 4 + 1));
    if (buf == NULL || ours == NULL) {
        abort();
    }
    memcpy(buf, optneg, in[0] & 2 ? sizeof(optneg) - 1 : 0);
    memcpy(buf + len - (size - 1), in + 1, size - 1);

    s = skm_session_new();
    out = skm_session_out(s);
    n = 0;
    nar = 0;
    for (p = buf, end = buf + len;; p += used) {
        rc = skm_mpkt_parse(p, (size_t) (end - p), &cmd, &data, &dlen, &used,
            &why);
        if (rc <= 0) {
            if (rc < 0 && why == NULL) {
                abort();
            }
            break;
        }
        rc = skm_session_input(s, cmd, data, dlen, &why);
        if (rc < 0) {
            if (why == NULL || (out->len > 0 && cmd != 'E')) {
                abort();                /* an error answers nothing */
            }
            break;
        }
        if (rc == 0 && cmd == 'M') {
            n = 0;
            nar = 0;
        } else if (rc == 0 && cmd == 'L'
                   && strcasecmp(data, AR) == 0)
        {
            nar++;
            if (skm_ar_is_ours(data + strlen(data) + 1,
                    strlen(data + strlen(data) + 1), OURS))
            {
                ours[n++] = nar;
            }
        }
        rdata = out->buf;
        rlen = out->len;
        if (cmd == 'E') {
            check_eom(rdata, rdata + rlen, ours, n);
        } else if (rlen > 0) {
            next_reply(&rdata, out->buf + rlen, &data, &dlen);
            if (rdata != out->buf + rlen
                || out->buf[4] != (cmd == 'O' ? 'O' : 'c')
                || cmd == 'D' || cmd == 'A' || cmd == 'K')
            {
                abort();                /* one reply, to what is answered */
            }
        }
        out->len = 0;
        if (rc > 0) {
            break;                      /* QUIT */
        }
    }
    skm_session_free(s);
    if (skm_filter_busy() != 0) {
        abort();
    }
    free(ours);
    free(buf);
    return 0;
}
