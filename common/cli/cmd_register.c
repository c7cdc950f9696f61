/*
 * cmd_register.c -- `sk register`: submit an entry (from `sk entry ... -o
 * FILE`) to one or more timelines, POST /append with form field e=, and
 * report each timeline's answer: 201 and the SN it gave, or the status and
 * the rule it names.  Exit 0 only if every timeline stored the entry.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli.h"

#define SK_REG_MAX_TIMELINES  64
#define SK_REG_REPLY_MAX      (2 * SK_ENTRY_MAX)

typedef struct {
    const char  *url;
    long         status;        /* HTTP status, 0 if none */
    char        *body;          /* the answer, NUL-terminated */
    size_t       len;
    int          overflow;
    char         fail[CURL_ERROR_SIZE];     /* transport error, or "" */
    uint64_t     sn;
    int          has_sn;
} sk_reg_result_t;


static size_t
sk_reg_write(char *p, size_t size, size_t n, void *arg)
{
    sk_reg_result_t  *r = arg;
    char             *q;

    n *= size;
    if (r->len + n > SK_REG_REPLY_MAX) {
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
sk_reg_reason(sk_reg_result_t *r)
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


static void
sk_reg_post(sk_reg_result_t *r, const char *form, long timeout)
{
    sk_entry_t  *e;
    CURLcode     rc;
    size_t       n = strlen(r->url);
    CURL        *c;
    char         url[2048];

    while (n > 0 && r->url[n - 1] == '/') {
        n--;
    }
    snprintf(url, sizeof(url), "%.*s/append", (int) n, r->url);
    c = curl_easy_init();
    if (c == NULL) {
        snprintf(r->fail, sizeof(r->fail), "curl: out of memory");
        return;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->fail);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sk_reg_write);
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
    /* 201: the body is the stamped entry; take its SN. */
    if (r->status == 201 && r->body != NULL
        && sk_entry_parse(&e, r->body, r->len, NULL) == 0)
    {
        r->has_sn = sk_entry_sn(e, &r->sn, NULL) == 0;
        sk_entry_free(e);
    }
}


static void
sk_reg_print(sk_reg_result_t *r, int json, int first)
{
    const char  *why;

    if (json) {
        printf("%s{\"timeline\":", first ? "" : ",");
        cli_json_str(stdout, r->url);
        printf(",\"status\":%ld,\"accepted\":%s", r->status,
            r->status == 201 && r->has_sn ? "true" : "false");
        if (r->has_sn) {
            printf(",\"sn\":%llu", (unsigned long long) r->sn);
        } else {
            printf(",\"reason\":");
            cli_json_str(stdout, r->fail[0] != '\0' ? r->fail
                                                    : sk_reg_reason(r));
        }
        printf("}");
        return;
    }
    if (r->fail[0] != '\0') {
        printf("%s: unreachable: %s\n", r->url, r->fail);
    } else if (r->status == 201 && r->has_sn) {
        printf("%s: 201 accepted, SN %llu\n", r->url,
            (unsigned long long) r->sn);
    } else {
        why = sk_reg_reason(r);
        printf("%s: %ld %s: %s\n", r->url, r->status,
            r->status == 403 ? "rejected" : "not stored", why);
    }
}


/* "e=<urlencoded entry>", malloc()ed. */
static char *
sk_reg_form(const char *text, size_t len)
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


static int
sk_reg_run(const char *in, const char **urls, size_t n, long timeout,
    int json)
{
    sk_reg_result_t   rs[SK_REG_MAX_TIMELINES];
    sk_entry_t       *e;
    sk_err_t          err;
    size_t            len, i, ok = 0;
    char             *text, *form;

    if (sk_file_read(&text, &len, in, SK_ENTRY_MAX, &err) != 0) {
        return cli_fail_err(&err);
    }
    /* Check it locally first: a typo should not cost a round trip. */
    if (sk_entry_parse(&e, text, len, &err) != 0) {
        free(text);
        return cli_fail("%s: %s", in, err.msg);
    }
    form = sk_reg_form(text, len);
    free(text);
    if (form == NULL || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(form);
        sk_entry_free(e);
        return cli_fail("%s: out of memory", in);
    }
    if (json) {
        printf("{\"type\":\"%s\",\"name\":",
            sk_entry_type_name(sk_entry_type(e)));
        cli_json_str(stdout, sk_entry_name(e) ? sk_entry_name(e) : "");
        printf(",\"timelines\":[");
    }
    memset(rs, 0, sizeof(rs));
    for (i = 0; i < n; i++) {
        rs[i].url = urls[i];
        sk_reg_post(&rs[i], form, timeout);
        sk_reg_print(&rs[i], json, i == 0);
        ok += rs[i].status == 201 && rs[i].has_sn;
        free(rs[i].body);
    }
    if (json) {
        printf("],\"accepted\":%zu,\"of\":%zu}\n", ok, n);
    }
    free(form);
    sk_entry_free(e);
    curl_global_cleanup();
    if (ok != n) {
        return cli_fail("%s: accepted by %zu of %zu timelines", in, ok, n);
    }
    return SK_EXIT_OK;
}


static int
sk_register_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "in",       required_argument, NULL, 'i' },
        { "timeline", required_argument, NULL, 't' },
        { "timeout",  required_argument, NULL, 'T' },
        { "json",     no_argument,       NULL, 'j' },
        { NULL, 0, NULL, 0 }
    };
    const char     *urls[SK_REG_MAX_TIMELINES], *in = NULL;
    unsigned long   timeout = 30;
    size_t          n = 0;
    int             c, json = 0;

    optind = 1;
    while ((c = getopt_long(argc, argv, "i:t:", opts, NULL)) != -1) {
        switch (c) {
        case 'i':
            in = optarg;
            break;
        case 't':
            if (n == SK_REG_MAX_TIMELINES) {
                return cli_usage(&sk_cmd_register, "at most %d timelines",
                    SK_REG_MAX_TIMELINES);
            }
            if (strncmp(optarg, "http://", 7) != 0
                && strncmp(optarg, "https://", 8) != 0)
            {
                return cli_usage(&sk_cmd_register,
                    "-t %s: want an http:// or https:// URL", optarg);
            }
            urls[n++] = optarg;
            break;
        case 'T':
            if (cli_parse_uint(&timeout, optarg, 3600) != 0) {
                return cli_usage(&sk_cmd_register,
                    "--timeout %s: want seconds, 1..3600", optarg);
            }
            break;
        case 'j':
            json = 1;
            break;
        default:
            return cli_usage(&sk_cmd_register, "unknown option");
        }
    }
    if (in == NULL || n == 0 || optind != argc) {
        return cli_usage(&sk_cmd_register, "need -i FILE and at least one -t URL");
    }
    return sk_reg_run(in, urls, n, (long) timeout, json);
}


const sk_cmd_t sk_cmd_register = {
    "register", sk_register_main,
    "-i FILE -t URL [-t URL ...] [--timeout SECONDS] [--json]",
    "Submit the entry in FILE (made by `sk entry bind|unbind|rebind|\n"
    "change-services -o FILE`) to each timeline URL: POST URL/append with\n"
    "form field e=.  FILE is parsed first, and nothing is sent if it is\n"
    "malformed.  For each timeline one line: \"201 accepted, SN n\", or the\n"
    "status and the timeline's reason (a 403 names the rule it broke, e.g.\n"
    "\"bind: ocsp: ... revoked\"; 408 and 503 are worth retrying), or\n"
    "\"unreachable\".  --timeout bounds each exchange (default 30 s).  Exit\n"
    "0 only if every timeline stored the entry.\n"
};
