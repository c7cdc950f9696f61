/*
 * client_find.c -- the record that decides for a host: its own, or a
 * wildcard SK's on a parent name (Includes-Subdomains), and whether what
 * the lookups learnt is enough to decide at all (design 4.b), and to
 * decide what (a view not fresh enough may only refuse).
 */
#include <stdio.h>
#include <string.h>

#include <sk/client.h>


int
sk_client_find(sk_client_found_t *f, const char *host,
    const sk_client_ctx_t *ctx, sk_err_t *err)
{
    sk_client_result_t  r;
    sk_record_t         rec;
    const char         *name = host, *dot;
    int                 first = 1, used, unknown;

    memset(f, 0, sizeof(*f));
    for (;;) {
        if (sk_client_lookup_ctx(&r, name, ctx, err) != 0) {
            sk_client_found_free(f);
            return -1;
        }
        if (sk_client_view_record(&rec, &r.view, sk_client_rebinder_key,
                (void *) ctx, err) != 0)
        {
            sk_client_result_free(&r);
            sk_client_found_free(f);
            return -1;
        }
        used = rec.state != SK_RECORD_NONE
            && sk_name_covers(name, rec.include_subdomains, host);
        /* A parent no mirror answered for well enough may hold a
         * wildcard SK (now, whatever an old view says): the host's own
         * "no SK" cannot decide then, that lookup does (it fails closed:
         * sk_client_found_usable, or sk_client_found_decision_ok). */
        unknown = !first && r.outcome == SK_FRESH_CLOSED && !used;
        if (first || used || unknown) {
            sk_client_found_free(f);
            f->res = r;
            f->rec = rec;
            snprintf(f->name, sizeof(f->name), "%s", name);
        } else {
            sk_record_free(&rec);
            sk_client_result_free(&r);
        }
        if (used || unknown) {
            return 0;
        }
        first = 0;
        dot = strchr(name, '.');
        if (dot == NULL || strchr(dot + 1, '.') == NULL) {
            return 0;
        }
        name = dot + 1;
    }
}


/* Why f's view is not fresh enough, after "no mirror gave a fresh enough
 * answer for NAME". */
static int
sk_found_stale(const sk_client_found_t *f, const char *what, sk_err_t *err)
{
    const sk_client_result_t  *r = &f->res;

    return sk_err_set(err, SK_ERR_UNAVAILABLE, "no mirror gave a fresh "
        "enough answer for %s (%zu of %zu timelines fresh%s)%s", f->name,
        r->fresh.fresh, r->fresh.ntl, r->view.ncps == 0 ? ": nothing "
        "answered, no staple, nothing cached" : "", what);
}


int
sk_client_found_usable(const sk_client_found_t *f, sk_err_t *err)
{
    if (f->res.outcome == SK_FRESH_CLOSED
        && f->rec.state != SK_RECORD_BOUND)
    {
        return sk_found_stale(f, "", err);
    }
    return 0;
}


int
sk_client_found_decision_ok(const sk_client_found_t *f, const sk_decide_t *d,
    sk_err_t *err)
{
    if (f->res.outcome == SK_FRESH_CLOSED
        && (d->decision == SK_DECIDE_ACCEPT
            || d->decision == SK_DECIDE_NONE))
    {
        return sk_found_stale(f, d->decision == SK_DECIDE_ACCEPT
            ? ": too old to show that the SK it shows is still in force, "
              "only to refuse a server without its carrier"
            : ": too old to show that no SK covers the name", err);
    }
    return 0;
}


void
sk_client_found_free(sk_client_found_t *f)
{
    if (f != NULL) {
        sk_record_free(&f->rec);
        sk_client_result_free(&f->res);
        memset(f, 0, sizeof(*f));
    }
}
