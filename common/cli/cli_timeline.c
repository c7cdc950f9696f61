/*
 * cli_timeline.c -- submitting an entry to timelines (libcurl): POST
 * URL/append with form field e=, and after a 202 poll URL/status/<token>
 * until the outcome is known or the timeout passes.  One line per
 * timeline: "201 accepted, SN n", "403 rejected: <rule: reason>",
 * "<status> not stored: <reason>" or "unreachable: <error>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli_timeline.h"

#define CLI_TL_REPLY_MAX   (2 * SK_ENTRY_MAX)
#define CLI_TL_POLL_MIN_MS 100
#define CLI_TL_POLL_MAX_MS 1000

typedef struct {
    const char  *url;
    long         status;        /* HTTP status (of the outcome), 0 if none */
    char        *body;          /* the answer, NUL-terminated */
    size_t       len;
    int          overflow;
    char         fail[CURL_ERROR_SIZE];     /* transport error, or "" */
    char         token[80];     /* from a 202, or "" */
    uint64_t     sn;
    int          has_sn;
} cli_tl_result_t;


void
cli_tl_init(cli_tl_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->timeout = 30;
}


int
cli_tl_option(cli_tl_opts_t *o, const sk_cmd_t *cmd, int c, const char *arg)
{
    switch (c) {
    case 't':
        if (o->n == CLI_TL_MAX) {
            return cli_usage(cmd, "at most %d timelines", CLI_TL_MAX);
        }
        if (strncmp(arg, "http://", 7) != 0
            && strncmp(arg, "https://", 8) != 0)
        {
            return cli_usage(cmd, "-t %s: want an http:// or https:// URL",
                arg);
        }
        o->urls[o->n++] = arg;
        return 1;
    case 'T':
        if (cli_parse_uint(&o->timeout, arg, 3600) != 0) {
            return cli_usage(cmd, "--timeout %s: want seconds, 1..3600",
                arg);
        }
        return 1;
    case 'j':
        o->json = 1;
        return 1;
    default:
        return 0;
    }
}


static size_t
cli_tl_write(char *p, size_t size, size_t n, void *arg)
{
    cli_tl_result_t  *r = arg;
    char             *q;

    n *= size;
    if (r->len + n > CLI_TL_REPLY_MAX) {
        r->overflow = 1;
        return 0;
    }
    q = realloc(r->body, r->len + n + 1);
    if (q == NULL) {
        return 0;
    }
    memcpy(q + r->len, p, n);
    r->len += n;
    q[r->len] = '\0';
    r->body = q;
    return n;
}


/* The answer's first line (the rule and reason of a 4xx/5xx). */
static const char *
cli_tl_reason(cli_tl_result_t *r)
{
    char  *nl;

    if (r->body == NULL) {
        return "";
    }
    nl = strchr(r->body, '\n');
    if (nl != NULL) {
        *nl = '\0';
    }
    return r->body;
}


/* One exchange: POST form to base/path, or GET it if form is NULL. */
static void
cli_tl_fetch(cli_tl_result_t *r, const char *path, const char *form,
    long timeout)
{
    CURLcode     rc;
    size_t       n = strlen(r->url);
    CURL        *c;
    char         url[2048];

    while (n > 0 && r->url[n - 1] == '/') {
        n--;
    }
    snprintf(url, sizeof(url), "%.*s%s", (int) n, r->url, path);
    free(r->body);
    r->body = NULL;
    r->len = 0;
    r->status = 0;
    c = curl_easy_init();
    if (c == NULL) {
        snprintf(r->fail, sizeof(r->fail), "curl: out of memory");
        return;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout > 0 ? timeout : 1L);
    if (form != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
    }
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->fail);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, cli_tl_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
        if (r->fail[0] == '\0' || r->overflow) {
            snprintf(r->fail, sizeof(r->fail), "%s", r->overflow
                ? "answer too large" : curl_easy_strerror(rc));
        }
    } else {
        r->fail[0] = '\0';
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    }
    curl_easy_cleanup(c);
}


/* Monotonic milliseconds: a clock set back must not stretch a timeout. */
static long long
cli_tl_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* GET /status/<token> until its first line is no longer "202 ...": then
 * that line's status is the outcome and the rest the answer. */
static void
cli_tl_poll(cli_tl_result_t *r, long long deadline)
{
    char       path[sizeof(r->token) + 16], *rest;
    long long  wait = CLI_TL_POLL_MIN_MS, left;
    long       code;

    snprintf(path, sizeof(path), "/status/%s", r->token);
    while ((left = deadline - cli_tl_now_ms()) > 0) {
        /* Never sleep past the deadline: the last poll comes at it. */
        usleep((useconds_t) (wait < left ? wait : left) * 1000);
        wait = wait * 2 > CLI_TL_POLL_MAX_MS ? CLI_TL_POLL_MAX_MS : wait * 2;
        left = deadline - cli_tl_now_ms();
        cli_tl_fetch(r, path, NULL, (long) ((left + 999) / 1000));
        if (r->fail[0] != '\0' || r->status != 200) {
            return;             /* 410 and the like: say what it said */
        }
        code = r->body != NULL ? strtol(r->body, &rest, 10) : 0;
        if (code < 100 || code > 599 || *rest != ' ') {
            snprintf(r->fail, sizeof(r->fail),
                "/status/%s: not a status line", r->token);
            return;
        }
        if (code != 202) {
            rest = strchr(rest, '\n');
            rest = rest != NULL ? rest + 1 : r->body + r->len;
            r->len -= (size_t) (rest - r->body);
            memmove(r->body, rest, r->len + 1);
            r->status = code;
            return;
        }
    }
    r->status = 202;
    free(r->body);
    r->body = NULL;
    r->len = 0;
}


static void
cli_tl_post(cli_tl_result_t *r, const char *form, long timeout)
{
    long long    deadline = cli_tl_now_ms() + (long long) timeout * 1000;
    sk_entry_t  *e;

    cli_tl_fetch(r, "/append", form, timeout);
    if (r->status == 202 && r->body != NULL
        && sscanf(r->body, "Token: %64[0-9a-f]", r->token) == 1)
    {
        cli_tl_poll(r, deadline);
    }
    /* 201: the body is the stamped entry; take its SN. */
    if (r->status == 201 && r->body != NULL
        && sk_entry_parse(&e, r->body, r->len, NULL) == 0)
    {
        r->has_sn = sk_entry_sn(e, &r->sn, NULL) == 0;
        sk_entry_free(e);
    }
}


static void
cli_tl_print(cli_tl_result_t *r, int json, int first)
{
    const char  *why;

    if (json) {
        printf("%s{\"timeline\":", first ? "" : ",");
        cli_json_str(stdout, r->url);
        printf(",\"status\":%ld,\"accepted\":%s", r->status,
            r->status == 201 && r->has_sn ? "true" : "false");
        if (r->token[0] != '\0') {
            printf(",\"token\":");
            cli_json_str(stdout, r->token);
        }
        if (r->has_sn) {
            printf(",\"sn\":%llu", (unsigned long long) r->sn);
        } else {
            printf(",\"reason\":");
            cli_json_str(stdout, r->fail[0] != '\0' ? r->fail
                : r->status == 202 ? "still queued at the timeout"
                : cli_tl_reason(r));
        }
        printf("}");
        return;
    }
    if (r->fail[0] != '\0') {
        printf("%s: unreachable: %s\n", r->url, r->fail);
    } else if (r->status == 201 && r->has_sn) {
        printf("%s: 201 accepted, SN %llu%s\n", r->url,
            (unsigned long long) r->sn, r->token[0] ? " (after 202)" : "");
    } else if (r->status == 202) {
        printf("%s: 202 still queued at the timeout: token %s\n", r->url,
            r->token);
    } else {
        why = cli_tl_reason(r);
        printf("%s: %ld %s: %s%s\n", r->url, r->status,
            r->status == 403 ? "rejected" : "not stored", why,
            r->token[0] ? " (after 202)" : "");
    }
}


/* "e=<urlencoded entry>", malloc()ed. */
static char *
cli_tl_form(const char *text, size_t len)
{
    char  *esc, *form = NULL;
    CURL  *c = curl_easy_init();

    esc = c != NULL ? curl_easy_escape(c, text, (int) len) : NULL;
    if (esc != NULL) {
        form = malloc(strlen(esc) + 3);
        if (form != NULL) {
            sprintf(form, "e=%s", esc);
        }
    }
    curl_free(esc);
    curl_easy_cleanup(c);
    return form;
}


int
cli_tl_submit(const cli_tl_opts_t *o, const sk_entry_t *e, const char *label)
{
    cli_tl_result_t   r;
    sk_err_t          err;
    size_t            len, i, ok = 0;
    char             *text, *form;

    if (sk_entry_format(&text, &len, e, &err) != 0) {
        return cli_fail("%s: %s", label, err.msg);
    }
    form = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK
        ? cli_tl_form(text, len) : NULL;
    free(text);
    if (form == NULL) {
        return cli_fail("%s: out of memory", label);
    }
    if (o->json) {
        printf("{\"type\":\"%s\",\"name\":",
            sk_entry_type_name(sk_entry_type(e)));
        cli_json_str(stdout, sk_entry_name(e) ? sk_entry_name(e) : "");
        printf(",\"timelines\":[");
    }
    for (i = 0; i < o->n; i++) {
        memset(&r, 0, sizeof(r));
        r.url = o->urls[i];
        cli_tl_post(&r, form, (long) o->timeout);
        cli_tl_print(&r, o->json, i == 0);
        fflush(stdout);
        ok += r.status == 201 && r.has_sn;
        free(r.body);
    }
    if (o->json) {
        printf("],\"accepted\":%zu,\"of\":%zu}\n", ok, o->n);
    }
    free(form);
    curl_global_cleanup();
    if (ok != o->n) {
        return cli_fail("%s: accepted by %zu of %zu timelines", label, ok,
            o->n);
    }
    return SK_EXIT_OK;
}


int
cli_tl_verb(const sk_cmd_t *cmd, sk_entry_type_t type, const char *flags,
    int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_ENTRY_LONGOPTS,
        CLI_TL_LONGOPTS,
        { NULL, 0, NULL, 0 }
    };
    cli_entry_opts_t   eo;
    cli_tl_opts_t      o;
    sk_entry_t        *e;
    sk_err_t           err;
    int                c, rc;

    memset(&eo, 0, sizeof(eo));
    cli_tl_init(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "k:n:s:c:wr:l:" CLI_TL_SHORTOPTS,
                opts, NULL)) != -1)
    {
        if ((rc = cli_tl_option(&o, cmd, c, optarg)) != 0) {
            if (rc != 1) {
                return rc;
            }
            continue;
        }
        if (c == '?' || strchr(flags, c) == NULL
            || !cli_entry_option(&eo, c, optarg))
        {
            return cli_usage(cmd, "unknown option");
        }
    }
    if (optind != argc) {
        return cli_usage(cmd, "unexpected argument \"%s\"", argv[optind]);
    }
    if (o.n == 0) {
        return cli_usage(cmd, "need at least one -t URL");
    }
    if (cli_entry_build(&e, type, &eo, &err) != 0) {
        return err.code == SK_ERR_USAGE ? cli_usage(cmd, "%s", err.msg)
                                        : cli_fail_err(&err);
    }
    rc = cli_tl_submit(&o, e, eo.name);
    sk_entry_free(e);
    return rc;
}
