/*
 * skm_session.c -- one MTA connection's milter conversation, without I/O
 * (skm_milter.c reads and writes; the fuzzer feeds it bytes): option
 * negotiation, macros, MAIL, headers and end of message handed to the
 * per-message logic (skm_filter.c), its decisions turned into replies.
 *
 * Negotiation asks only for MAIL, headers and end of message, no replies
 * for MAIL and headers, and the macros it reads at MAIL (so the admin's
 * milter_*_macros defaults do not matter to Postfix >= 2.6): per message
 * one round trip, end of message (docs/benchmarks.md, "Milter").  DATA is
 * answered on purpose: Postfix sends the DATA macros even for a skipped
 * event, and over TCP the first header packet then waited under Nagle for
 * our delayed ACK of them, ~40 ms a message; the reply carries the ACK.
 *
 * Every packet is checked whole before it is used: a macro list is pairs
 * of NUL-terminated strings with a name each, a header exactly a name and
 * a value, MAIL and RCPT their arguments, each NUL-terminated; commands
 * of a message come after MAIL.  Anything else is a protocol error and
 * the connection closes (the MTA applies milter_default_action to that
 * message; Postfix never sends such packets).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skm.h"

/* Commands (Sendmail's mfdef.h SMFIC_*). */
#define SKM_MC_ABORT     'A'
#define SKM_MC_BODY      'B'
#define SKM_MC_CONNECT   'C'
#define SKM_MC_MACRO     'D'
#define SKM_MC_BODYEOB   'E'
#define SKM_MC_HELO      'H'
#define SKM_MC_QUIT_NC   'K'
#define SKM_MC_HEADER    'L'
#define SKM_MC_MAIL      'M'
#define SKM_MC_EOH       'N'
#define SKM_MC_OPTNEG    'O'
#define SKM_MC_QUIT      'Q'
#define SKM_MC_RCPT      'R'
#define SKM_MC_DATA      'T'
#define SKM_MC_UNKNOWN   'U'

/* Replies (SMFIR_*). */
#define SKM_MR_CHGHEADER 'm'
#define SKM_MR_CONTINUE  'c'
#define SKM_MR_INSHEADER 'i'
#define SKM_MR_REPLYCODE 'y'

/* Actions and protocol steps (mfapi.h SMFIF_*, SMFIP_*). */
#define SKM_MF_ADDHDRS   0x00000001UL
#define SKM_MF_CHGHDRS   0x00000010UL
#define SKM_MP_NOCONNECT 0x00000001UL
#define SKM_MP_NOHELO    0x00000002UL
#define SKM_MP_NORCPT    0x00000008UL
#define SKM_MP_NOBODY    0x00000010UL
#define SKM_MP_NOEOH     0x00000040UL
#define SKM_MP_NR_HDR    0x00000080UL
#define SKM_MP_NOUNKNOWN 0x00000100UL
#define SKM_MP_NR_MAIL   0x00004000UL

#define SKM_MILTER_VERSION  6           /* what we speak */
#define SKM_MAIL_MACROS "{tls_version} {cipher} {cert_subject} " \
    "{cert_issuer} {auth_authen} {client_name} {client_addr} {daemon_name}"
#define SKM_AR          "Authentication-Results"

/* Macro stages, in libmilter's order (the MACRO packet's first byte),
 * among all the commands. */
static const char  skm_stages[] = "CHMRTEN";
static const char  skm_commands[] = "ABCDEHKLMNOQRTU";
#define SKM_NSTAGES     7
#define SKM_STAGE_MAIL  2
#define SKM_STAGE_EOM   5

typedef enum {
    SKM_S_NEW = 0,                      /* before option negotiation */
    SKM_S_READY,                        /* between messages */
    SKM_S_MSG                           /* after MAIL */
} skm_state_t;

struct skm_session_s {
    skm_state_t    state;
    unsigned long  version;             /* negotiated */
    unsigned long  pflags;              /* protocol steps agreed */
    char          *mac[SKM_NSTAGES];    /* "name\0value\0..." per stage */
    size_t         maclen[SKM_NSTAGES];
    skm_msg_t      msg;
    skm_obuf_t     out;
    char           why[128];
};


skm_session_t *
skm_session_new(void)
{
    return calloc(1, sizeof(skm_session_t));
}


static void
skm_session_clear(skm_session_t *s, int from)
{
    int  i;

    for (i = from; i < SKM_NSTAGES; i++) {
        free(s->mac[i]);
        s->mac[i] = NULL;
        s->maclen[i] = 0;
    }
}


void
skm_session_free(skm_session_t *s)
{
    if (s == NULL) {
        return;
    }
    skm_msg_end(&s->msg);
    skm_session_clear(s, 0);
    free(s->out.buf);
    free(s);
}


skm_obuf_t *
skm_session_out(skm_session_t *s)
{
    return &s->out;
}


static int
skm_session_bad(skm_session_t *s, const char **why, const char *what,
    const char *detail)
{
    snprintf(s->why, sizeof(s->why), "%s: %s", what, detail);
    *why = s->why;
    return -1;
}


/* Packet data is exactly n NUL-terminated strings (n 0: any, at least 1). */
static int
skm_session_strings(skm_session_t *s, const char *data, size_t dlen,
    size_t n, const char *what, const char **why)
{
    size_t       got;
    const char  *e;

    if (skm_mpkt_strings(data, dlen, &got, &e) != 0) {
        return skm_session_bad(s, why, what, e);
    }
    if (n != 0 && got != n) {
        return skm_session_bad(s, why, what, n == 1 ? "more than one string"
            : "not a name and a value");
    }
    return 0;
}


static int
skm_session_reply(skm_session_t *s, int cmd, const char *data, size_t dlen,
    const char **why)
{
    if (skm_mpkt_format(&s->out, cmd, data, dlen) != 0) {
        return skm_session_bad(s, why, "reply", "out of memory");
    }
    return 0;
}


static int
skm_session_continue(skm_session_t *s, unsigned long noreply,
    const char **why)
{
    if (s->pflags & noreply) {
        return 0;
    }
    return skm_session_reply(s, SKM_MR_CONTINUE, NULL, 0, why);
}


/* MTA: version, actions, protocol steps.  We: the same, then the macros
 * wanted at MAIL and at end of message (version 6). */
static int
skm_session_optneg(skm_session_t *s, const char *data, size_t dlen,
    const char **why)
{
    static const char  want_eom[] = "i";
    uint32_t           v[3];
    unsigned long      want;
    char               out[12 + 2 * 4 + sizeof(SKM_MAIL_MACROS)
                           + sizeof(want_eom)];
    size_t             n;

    if (dlen < 12) {
        return skm_session_bad(s, why, "option negotiation",
            "shorter than 12 bytes");
    }
    memcpy(v, data, 12);
    s->version = ntohl(v[0]);
    if (s->version < 2) {
        return skm_session_bad(s, why, "option negotiation",
            "protocol version below 2");
    }
    if ((ntohl(v[1]) & (SKM_MF_ADDHDRS | SKM_MF_CHGHDRS))
        != (SKM_MF_ADDHDRS | SKM_MF_CHGHDRS))
    {
        return skm_session_bad(s, why, "option negotiation",
            "the MTA cannot add and change headers");
    }
    if (s->version > SKM_MILTER_VERSION) {
        s->version = SKM_MILTER_VERSION;
    }
    want = SKM_MP_NOCONNECT | SKM_MP_NOHELO | SKM_MP_NORCPT | SKM_MP_NOBODY
           | SKM_MP_NOEOH | SKM_MP_NOUNKNOWN | SKM_MP_NR_HDR
           | SKM_MP_NR_MAIL;
    s->pflags = want & ntohl(v[2]);
    v[0] = htonl((uint32_t) s->version);
    v[1] = htonl((uint32_t) (SKM_MF_ADDHDRS | SKM_MF_CHGHDRS));
    v[2] = htonl((uint32_t) s->pflags);
    memcpy(out, v, 12);
    n = 12;
    if (s->version >= 6) {
        v[0] = htonl(SKM_STAGE_MAIL);
        memcpy(out + n, v, 4);
        memcpy(out + n + 4, SKM_MAIL_MACROS, sizeof(SKM_MAIL_MACROS));
        n += 4 + sizeof(SKM_MAIL_MACROS);
        v[0] = htonl(SKM_STAGE_EOM);
        memcpy(out + n, v, 4);
        memcpy(out + n + 4, want_eom, sizeof(want_eom));
        n += 4 + sizeof(want_eom);
    }
    s->state = SKM_S_READY;
    return skm_session_reply(s, SKM_MC_OPTNEG, out, n, why);
}


/* A stage byte, then name/value pairs; kept until that stage's command
 * comes round again.  Postfix also sends (empty) lists for stages that
 * have no macros in libmilter, such as headers: checked, then dropped. */
static int
skm_session_macro(skm_session_t *s, const char *data, size_t dlen,
    const char **why)
{
    const char  *st, *p, *v, *end, *e;
    size_t       n, i;
    char        *copy;

    if (dlen == 0) {
        return skm_session_bad(s, why, "macro", "no stage");
    }
    if (data[0] == '\0' || strchr(skm_commands, data[0]) == NULL) {
        snprintf(s->why, sizeof(s->why), "macro: stage 0x%02x is no "
            "command", (unsigned char) data[0]);
        *why = s->why;
        return -1;
    }
    st = strchr(skm_stages, data[0]);
    data++;
    dlen--;
    if (dlen > 0) {                     /* an empty list empties the stage */
        if (skm_mpkt_strings(data, dlen, &n, &e) != 0) {
            return skm_session_bad(s, why, "macro", e);
        }
        if (n % 2 != 0) {
            return skm_session_bad(s, why, "macro",
                "a name without a value");
        }
        end = data + dlen;
        for (p = data; p < end; p = v + strlen(v) + 1) {
            if (*p == '\0') {
                return skm_session_bad(s, why, "macro", "an empty name");
            }
            v = p + strlen(p) + 1;
        }
    }
    if (st == NULL) {
        return 0;                       /* checked; none we read */
    }
    i = (size_t) (st - skm_stages);
    copy = NULL;
    if (dlen > 0 && (copy = malloc(dlen)) == NULL) {
        return skm_session_bad(s, why, "macro", "out of memory");
    }
    if (dlen > 0) {
        memcpy(copy, data, dlen);
    }
    free(s->mac[i]);
    s->mac[i] = copy;
    s->maclen[i] = dlen;
    return 0;
}


/* A macro's value, the latest stage first; "{x}" and "x" are one name for
 * a single letter x, as libmilter has it.  NULL if not sent. */
static const char *
skm_session_macro_get(const skm_session_t *s, const char *name)
{
    const char  *p, *end, *v;
    size_t       len;
    int          i;

    len = strlen(name);
    for (i = SKM_NSTAGES - 1; i >= 0; i--) {
        if (s->mac[i] == NULL) {
            continue;
        }
        end = s->mac[i] + s->maclen[i];
        for (p = s->mac[i]; p < end; p = v + strlen(v) + 1) {
            v = p + strlen(p) + 1;
            if (strcmp(p, name) == 0
                || (len == 1 && p[0] == '{' && p[1] == name[0]
                    && strcmp(p + 2, "}") == 0)
                || (len == 3 && name[0] == '{' && name[2] == '}'
                    && p[0] == name[1] && p[1] == '\0'))
            {
                return v;
            }
        }
    }
    return NULL;
}


/* hostname NUL family [port(2) address NUL]. */
static int
skm_session_connect(skm_session_t *s, const char *data, size_t dlen,
    const char **why)
{
    const char  *fam;

    fam = memchr(data, '\0', dlen);
    if (fam == NULL || ++fam == data + dlen) {
        return skm_session_bad(s, why, "connect", "no address family");
    }
    if (*fam == 'U') {
        if (fam + 1 != data + dlen) {
            return skm_session_bad(s, why, "connect",
                "bytes after family U");
        }
    } else if (*fam == '4' || *fam == '6' || *fam == 'L') {
        if (data + dlen - fam < 4
            || memchr(fam + 3, '\0', (size_t) (data + dlen - fam - 3))
               != data + dlen - 1)
        {
            return skm_session_bad(s, why, "connect",
                "address not one NUL-terminated string");
        }
    } else {
        return skm_session_bad(s, why, "connect", "unknown address family");
    }
    skm_session_clear(s, 1);
    return skm_session_continue(s, 0, why);
}


static int
skm_session_mail(skm_session_t *s, const char *data, size_t dlen,
    const char **why)
{
    const char  *tls;
    int          macros;

    if (skm_session_strings(s, data, dlen, 0, "MAIL", why) != 0) {
        return -1;
    }
    skm_session_clear(s, SKM_STAGE_MAIL + 1);
    tls = skm_session_macro_get(s, "{tls_version}");
    macros = tls != NULL || skm_session_macro_get(s, "{daemon_name}") != NULL
             || skm_session_macro_get(s, "{client_addr}") != NULL;
    skm_msg_begin(&s->msg, data, tls, macros);
    s->state = SKM_S_MSG;
    return skm_session_continue(s, SKM_MP_NR_MAIL, why);
}


/* index(4) name NUL value NUL: change (empty value: remove) or insert. */
static int
skm_session_header_edit(skm_session_t *s, int cmd, unsigned idx,
    const char *value, const char **why)
{
    char      buf[4 + sizeof(SKM_AR) + SKM_EOM_HEADER_MAX];
    uint32_t  n;
    size_t    vlen;

    vlen = strlen(value);
    n = htonl(idx);
    memcpy(buf, &n, 4);
    memcpy(buf + 4, SKM_AR, sizeof(SKM_AR));
    memcpy(buf + 4 + sizeof(SKM_AR), value, vlen + 1);
    return skm_session_reply(s, cmd, buf, 4 + sizeof(SKM_AR) + vlen + 1, why);
}


static int
skm_session_eom(skm_session_t *s, const char **why)
{
    skm_eom_t    e;
    const char  *qid;
    size_t       i;
    int          rc;

    qid = skm_session_macro_get(s, "i");
    skm_msg_eom(&s->msg, qid != NULL && qid[0] != '\0' ? qid : "NOQUEUE",
        &e);
    rc = 0;
    if (e.action != SKM_EOM_CONTINUE) {
        rc = skm_session_reply(s, SKM_MR_REPLYCODE, e.reply,
            strlen(e.reply) + 1, why);
    } else {
        /* last first, so the earlier indexes still hold */
        for (i = e.nremove; rc == 0 && i > 0; i--) {
            rc = skm_session_header_edit(s, SKM_MR_CHGHEADER,
                e.remove[i - 1], "", why);
        }
        if (rc == 0) {
            rc = skm_session_header_edit(s, SKM_MR_INSHEADER, 1, e.header,
                why);
        }
        if (rc == 0) {
            rc = skm_session_reply(s, SKM_MR_CONTINUE, NULL, 0, why);
        }
    }
    skm_msg_end(&s->msg);
    s->state = SKM_S_READY;
    return rc;
}


int
skm_session_input(skm_session_t *s, int cmd, const char *data, size_t dlen,
    const char **why)
{
    char    what[32];
    size_t  n;

    *why = NULL;
    if (s->state == SKM_S_NEW && cmd != SKM_MC_OPTNEG) {
        return skm_session_bad(s, why, "protocol",
            "a command before option negotiation");
    }
    switch (cmd) {
    case SKM_MC_OPTNEG:
        if (s->state != SKM_S_NEW) {
            return skm_session_bad(s, why, "protocol",
                "a second option negotiation");
        }
        return skm_session_optneg(s, data, dlen, why);
    case SKM_MC_MACRO:
        return skm_session_macro(s, data, dlen, why);
    case SKM_MC_CONNECT:
        return skm_session_connect(s, data, dlen, why);
    case SKM_MC_HELO:
        if (skm_session_strings(s, data, dlen, 1, "HELO", why) != 0) {
            return -1;
        }
        skm_session_clear(s, 2);
        return skm_session_continue(s, 0, why);
    case SKM_MC_UNKNOWN:
        if (skm_session_strings(s, data, dlen, 1, "unknown command", why)
            != 0)
        {
            return -1;
        }
        return skm_session_continue(s, 0, why);
    case SKM_MC_MAIL:
        return skm_session_mail(s, data, dlen, why);
    case SKM_MC_ABORT:
    case SKM_MC_QUIT:
    case SKM_MC_QUIT_NC:
        if (dlen != 0) {
            snprintf(what, sizeof(what), "command %c", cmd);
            return skm_session_bad(s, why, what, "carries data");
        }
        if (cmd == SKM_MC_QUIT) {
            return 1;
        }
        skm_msg_end(&s->msg);
        s->state = SKM_S_READY;
        if (cmd == SKM_MC_QUIT_NC) {
            skm_session_clear(s, 0);
        }
        return 0;
    default:
        break;
    }

    /* the commands of a message */
    switch (cmd) {
    case SKM_MC_RCPT:
    case SKM_MC_DATA:
    case SKM_MC_HEADER:
    case SKM_MC_EOH:
    case SKM_MC_BODY:
    case SKM_MC_BODYEOB:
        break;
    default:
        snprintf(what, sizeof(what), "command 0x%02x", (unsigned) cmd);
        return skm_session_bad(s, why, what, "unknown");
    }
    snprintf(what, sizeof(what), "command %c", cmd);
    if (s->state != SKM_S_MSG) {
        return skm_session_bad(s, why, what, "outside a message");
    }
    switch (cmd) {
    case SKM_MC_RCPT:
        if (skm_session_strings(s, data, dlen, 0, "RCPT", why) != 0) {
            return -1;
        }
        skm_session_clear(s, 4);
        return skm_session_continue(s, 0, why);
    case SKM_MC_DATA:
    case SKM_MC_EOH:
        if (dlen != 0) {
            return skm_session_bad(s, why, what, "carries data");
        }
        return skm_session_continue(s, 0, why);
    case SKM_MC_HEADER:
        if (skm_session_strings(s, data, dlen, 2, "header", why) != 0) {
            return -1;
        }
        n = strlen(data);
        skm_msg_header(&s->msg, data, data + n + 1);
        return skm_session_continue(s, SKM_MP_NR_HDR, why);
    case SKM_MC_BODY:
        return skm_session_continue(s, 0, why);
    default:                            /* SKM_MC_BODYEOB */
        return skm_session_eom(s, why);
    }
}
