/*
 * proxy_page.c -- what `sk proxy` answers itself (proxy.h): the pages
 * that say why a site is not shown, the redirect of plain http:// to
 * https://, errors, and its own two files (a PAC file, the CA).
 *
 * Every answer is a whole HTTP/1.1 response with "Connection: close",
 * "Cache-Control: no-store" (a refusal is about now, never to be kept)
 * and an "SK-Proxy-Decision" header that programs can read.  A block page
 * has no link or button that goes on to the site: there is no way past
 * it but the site proving itself.
 */
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <openssl/pem.h>

#include "proxy.h"


/* s, HTML-escaped. */
static void
cli_proxy_html(struct evbuffer *b, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '<':  evbuffer_add(b, "&lt;", 4); break;
        case '>':  evbuffer_add(b, "&gt;", 4); break;
        case '&':  evbuffer_add(b, "&amp;", 5); break;
        case '"':  evbuffer_add(b, "&quot;", 6); break;
        case '\'': evbuffer_add(b, "&#39;", 5); break;
        default:   evbuffer_add(b, s, 1); break;
        }
    }
}


static void
cli_proxy_response(struct evbuffer *out, int status, const char *reason,
    const char *decision, const char *type, const char *more,
    struct evbuffer *body)
{
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n"
        "Content-Type: %s\r\n"
        "Content-Length: %zu\r\n"
        "Cache-Control: no-store\r\n"
        "Connection: close\r\n"
        "SK-Proxy-Decision: %s\r\n"
        "%s\r\n", status, reason, type, evbuffer_get_length(body), decision,
        more);
    evbuffer_add_buffer(out, body);
}


/* The page's head: title as the tab shows it, and the first heading. */
static void
cli_proxy_html_head(struct evbuffer *b, const char *title,
    const char *name)
{
    evbuffer_add_printf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
        "<meta charset=\"utf-8\"><title>");
    evbuffer_add_printf(b, "%s", title);
    cli_proxy_html(b, name);
    evbuffer_add_printf(b, "</title><style>body{font-family:sans-serif;"
        "max-width:40em;margin:3em auto;line-height:1.5;padding:0 1em}"
        "h1{color:#a00}code{background:#eee}</style></head>\n<body>\n"
        "<h1>%s", title);
    cli_proxy_html(b, name);
    evbuffer_add_printf(b, "</h1>\n");
}


void
cli_proxy_page_block(struct evbuffer *out, cli_proxy_outcome_t o,
    const char *name, const char *why)
{
    struct evbuffer  *b = evbuffer_new();
    const char       *decision;
    int               status;

    if (b == NULL) {
        return;
    }
    if (o == CLI_PROXY_REJECT) {
        decision = "reject";
        status = 403;
        cli_proxy_html_head(b, "Blocked: this is not the real ", name);
        evbuffer_add_printf(b, "<p>The server that answered for <b>");
        cli_proxy_html(b, name);
        evbuffer_add_printf(b, "</b> could not prove that it is the "
            "site's: the site has a sovereign key, and this server did not "
            "show the key's signature over its certificate.</p>\n"
            "<p>Someone may be pretending to be the site, with a "
            "certificate a certificate authority issued by mistake or under "
            "pressure, or your network may be sending you elsewhere.</p>\n"
            "<p><b>Nothing of your request was sent to it</b>: no "
            "address, no cookies, no passwords, no form data.</p>\n"
            "<h2>What you can do</h2>\n<ul><li>Do not try to reach this site "
            "some other way from this network for now.</li>\n"
            "<li>Try again later, or from another network.</li>\n"
            "<li>If you run the site: check that every server serves the "
            "carrier of its key (<code>sk check</code>).</li></ul>\n"
            "<p>There is no button to go on: the site's sovereign key says "
            "that only its holder's servers may answer for it.</p>\n");
    } else {
        decision = o == CLI_PROXY_UNDECIDED ? "undecided" : "unreachable";
        status = 503;
        if (o == CLI_PROXY_UNDECIDED) {
            cli_proxy_html_head(b, "Cannot check ", name);
            evbuffer_add_printf(b, "<p>The proxy could not learn whether "
                "<b>");
            cli_proxy_html(b, name);
            evbuffer_add_printf(b, "</b> has a sovereign key, and so "
                "whether the server that answers is the real one: the "
                "mirrors that tell did not answer in time, and nothing "
                "fresh enough is known here.</p>\n");
        } else {
            cli_proxy_html_head(b, "Cannot reach ", name);
            evbuffer_add_printf(b, "<p><b>");
            cli_proxy_html(b, name);
            evbuffer_add_printf(b, "</b> has a sovereign key, but neither "
                "its own address nor any other route its record lists (an "
                "onion service through Tor, say) answered.</p>\n");
        }
        evbuffer_add_printf(b, "<p><b>Nothing of your request was sent"
            "</b>.</p>\n<h2>What you can do</h2>\n<ul><li>Check your "
            "network connection, then reload this page in a minute or "
            "two.</li>\n<li>If it persists, <code>sk verify https://");
        cli_proxy_html(b, name);
        evbuffer_add_printf(b, "/</code> tells more.</li></ul>\n");
    }
    evbuffer_add_printf(b, "<p>What the proxy found: <code>");
    cli_proxy_html(b, why);
    evbuffer_add_printf(b, "</code></p>\n<p><small>sk proxy %s</small></p>"
        "\n</body></html>\n", SK_VERSION);
    cli_proxy_response(out, status, status == 403 ? "Forbidden"
        : "Service Unavailable", decision, "text/html; charset=utf-8", "",
        b);
    evbuffer_free(b);
}


void
cli_proxy_page_redirect(struct evbuffer *out, const char *location)
{
    struct evbuffer  *b = evbuffer_new();
    char              more[CLI_NET_HOST_MAX + 64 + 16];

    if (b == NULL) {
        return;
    }
    evbuffer_add_printf(b, "This site has a sovereign key for https: "
        "plain http is not sent. Go to %s\n", location);
    snprintf(more, sizeof(more), "Location: %s\r\n", location);
    cli_proxy_response(out, 307, "Temporary Redirect", "insecure",
        "text/plain; charset=utf-8", more, b);
    evbuffer_free(b);
}


void
cli_proxy_page_error(struct evbuffer *out, int status, const char *what)
{
    struct evbuffer  *b = evbuffer_new();
    const char       *reason;

    if (b == NULL) {
        return;
    }
    switch (status) {
    case 400: reason = "Bad Request"; break;
    case 404: reason = "Not Found"; break;
    case 431: reason = "Request Header Fields Too Large"; break;
    case 502: reason = "Bad Gateway"; break;
    case 503: reason = "Service Unavailable"; break;
    default:  reason = "Error"; break;
    }
    evbuffer_add_printf(b, "sk proxy: %s\n", what);
    cli_proxy_response(out, status, reason, "error",
        "text/plain; charset=utf-8", "", b);
    evbuffer_free(b);
}


void
cli_proxy_page_local(struct evbuffer *out, cli_proxy_t *px, const char *path,
    size_t len)
{
    struct evbuffer  *b;
    BIO              *bio;
    char             *pem;
    long              n;

    if (len == 10 && memcmp(path, "/proxy.pac", 10) == 0) {
        b = evbuffer_new();
        if (b == NULL) {
            return;
        }
        /* Names without a dot and loopback go direct, as browsers do
         * without a proxy; everything else through sk proxy. */
        evbuffer_add_printf(b, "function FindProxyForURL(url, host) {\n"
            "    if (isPlainHostName(host) || host === \"localhost\"\n"
            "        || shExpMatch(host, \"127.*\") || host === \"[::1]\")\n"
            "        return \"DIRECT\";\n"
            "    return \"PROXY %s\";\n}\n", px->listen);
        cli_proxy_response(out, 200, "OK", "local",
            "application/x-ns-proxy-autoconfig", "", b);
        evbuffer_free(b);
        return;
    }
    if (len == 7 && memcmp(path, "/ca.pem", 7) == 0) {
        b = evbuffer_new();
        bio = BIO_new(BIO_s_mem());
        if (b != NULL && bio != NULL
            && PEM_write_bio_X509(bio, sk_mint_get0_ca(px->mint)) == 1
            && (n = BIO_get_mem_data(bio, &pem)) > 0)
        {
            evbuffer_add(b, pem, (size_t) n);
            cli_proxy_response(out, 200, "OK", "local",
                "application/x-x509-ca-cert", "", b);
        }
        BIO_free(bio);
        evbuffer_free(b);
        return;
    }
    cli_proxy_page_error(out, 404, "this is sk proxy: set it as your "
        "browser's proxy (its PAC file is /proxy.pac, its CA /ca.pem)");
}
