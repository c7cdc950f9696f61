/*
 * test_client_answer.c -- mirror answers and the views they carry: a good
 * answer verifies, every forgery or deviation from the layout is refused
 * with the reason, the view survives its cache text form, and the trust
 * file is read as documented.
 */
#include "test_client_fixture.h"

#define NAME "example.com"



static int
setup(void **state)
{
    (void) state;
    fx_init(&tw, 3);
    sk1 = fx_key();
    fx_append(&tw, 0, fx_bind("other.org", sk1, "https", 0), FX_NOW - 900);
    fx_append(&tw, 0, fx_bind(NAME, sk1, "https,smtp", 0), FX_NOW - 800);
    fx_append(&tw, 1, fx_bind(NAME, sk1, "https,smtp", 0), FX_NOW - 700);
    fx_append(&tw, 1, fx_bind("other.org", sk1, "https", 0), FX_NOW - 600);
    fx_append(&tw, 1, fx_bind("third.net", sk1, "https", 0), FX_NOW - 500);
    return 0;
}


static void
test_good(void **state)
{
    sk_client_answer_info_t  info;
    sk_client_view_t         v;
    sk_record_t              rec;
    sk_err_t                 err;
    size_t                   len;
    char                    *a = fx_answer(&tw, NAME, &len);

    (void) state;
    tu_assert_ok(sk_client_answer_verify(&v, &info, a, len, NAME, 0,
        tw.mirror, &tw.trust, FX_NOW, &err), &err);
    assert_int_equal(v.ncps, 3);
    assert_int_equal(v.nitems, 2);
    assert_non_null(sk_client_view_item(&v, 1, 1));
    assert_non_null(sk_client_view_item(&v, 2, 0));
    assert_null(sk_client_view_item(&v, 1, 0));
    assert_int_equal(sk_client_view_cp(&v, 2)->cp.size, 3);
    assert_int_equal(sk_client_view_cp(&v, 3)->cp.size, 0);
    assert_int_equal(sk_client_view_cp(&v, 1)->ts, FX_NOW);
    assert_int_equal(info.ntl, 3);
    assert_string_equal(info.state[2], "Idle");
    assert_string_equal(info.reneged_hash, "e3b0c442");
    tu_assert_ok(sk_client_view_record(&rec, &v, NULL, NULL, &err), &err);
    assert_int_equal(rec.state, SK_RECORD_BOUND);
    assert_int_equal(sk_services_covers(&rec.services, "smtp", 25), 1);
    sk_record_free(&rec);
    sk_client_view_free(&v);

    /* Without the mirror's key the rest is still checked. */
    tu_assert_ok(sk_client_answer_verify(&v, NULL, a, len, NAME, 0, NULL,
        &tw.trust, FX_NOW, &err), &err);
    assert_int_equal(v.nitems, 2);
    sk_client_view_free(&v);
    free(a);

    /* An unknown name: a signed "no entries" answer. */
    a = fx_answer(&tw, "unknown.example", &len);
    tu_assert_ok(sk_client_answer_verify(&v, NULL, a, len, "unknown.example",
        0, tw.mirror, &tw.trust, FX_NOW, &err), &err);
    assert_int_equal(v.nitems, 0);
    assert_int_equal(v.ncps, 3);
    tu_assert_ok(sk_client_view_record(&rec, &v, NULL, NULL, &err), &err);
    assert_int_equal(rec.state, SK_RECORD_NONE);
    sk_record_free(&rec);
    sk_client_view_free(&v);
    free(a);
}


/* Answer a (len bytes) signed again by the mirror: its last
 * "Signature: " line is the mirror's (entries have one each too). */
static char *
resign_answer(char *a, size_t *len)
{
    char  *p;

    for (p = a + *len - 2; p > a && *p != '\n'; p--) {
    }
    assert_memory_equal(p, "\nSignature: ", 12);
    *len = (size_t) (p - a) + 1;
    return fx_sign(&tw, a, len);
}


/* Replace the first occurrence of from in answer a with to, re-signing
 * with the mirror's key if resign. */
static char *
edit(const char *from, const char *to, int resign, size_t *len)
{
    char    *a = fx_answer(&tw, NAME, len), *p, *out = NULL;
    size_t   olen = 0;

    p = strstr(a, from);
    assert_non_null(p);
    fx_add(&out, &olen, a, (size_t) (p - a));
    fx_add(&out, &olen, to, strlen(to));
    fx_add(&out, &olen, p + strlen(from), *len - (size_t) (p - a)
        - strlen(from));
    free(a);
    *len = olen;
    return resign ? resign_answer(out, len) : out;
}


/* The answer with timeline 2 Stuck, its block carrying
 * "Checkpoint-Age: <age>", signed again by the mirror. */
static char *
stuck(const char *age, size_t *len)
{
    unsigned char  *sig;
    sk_err_t        err;
    char           *a = edit("Timeline: 2 Idle\n", "Timeline: 2 Stuck\n", 0,
                          len);
    char           *p, *q, *out = NULL, *b64;
    size_t          olen = 0, siglen;

    p = strstr(strstr(a, "Timeline: 2 Stuck\n"), "\nLast-Entry: ");
    assert_non_null(p);
    p++;
    /* The mirror's is the last "Signature: " line (entries have one
     * each too). */
    for (q = a + *len - 2; q > a && *q != '\n'; q--) {
    }
    assert_memory_equal(q, "\nSignature: ", 12);
    fx_add(&out, &olen, a, (size_t) (p - a));
    fx_addf(&out, &olen, "Checkpoint-Age: %s\n", age);
    fx_add(&out, &olen, p, (size_t) (q + 1 - p));
    free(a);
    tu_assert_ok(sk_key_sign(&sig, &siglen, tw.mirror, (unsigned char *) out,
        olen, &err), &err);
    b64 = sk_b64_encode_alloc(sig, siglen);
    free(sig);
    fx_addf(&out, &olen, "Signature: %s\n", b64);
    free(b64);
    *len = olen;
    return out;
}


static void
refused(char *a, size_t len, const char *name, sk_err_code_t code,
    const char *why)
{
    sk_client_view_t  v;
    sk_err_t          err;

    tu_assert_err(sk_client_answer_verify(&v, NULL, a, len, name, 0,
        tw.mirror, &tw.trust, FX_NOW, &err), &err, code, why);
    assert_int_equal(v.nitems, 0);
    assert_null(v.cps);
    free(a);
}


static void
test_forgeries(void **state)
{
    sk_key_t  *other = fx_key();
    sk_client_view_t v;
    sk_err_t   err;
    size_t     len;
    char      *a, *p;

    (void) state;
    /* The mirror's signature. */
    a = edit("Timestamp: 1800000000\nReneged", "Timestamp: 1800000001\n"
        "Reneged", 0, &len);
    refused(a, len, NAME, SK_ERR_SIGNATURE, "mirror's signature");
    a = fx_answer(&tw, NAME, &len);
    tu_assert_err(sk_client_answer_verify(&v, NULL, a, len, NAME, 0, other,
        &tw.trust, FX_NOW, &err), &err, SK_ERR_SIGNATURE, "mirror's");
    free(a);
    sk_key_free(other);

    /* Signed by the mirror, but the timeline's part is forged: an entry
     * changed after the timeline signed it.  Timeline 1's Bind of the name
     * is also its tree's last entry: with both copies changed the entry
     * is found first, with the first (the last entry's) the last entry. */
    a = edit("Services: https,smtp\nSignature", "Services: https,smtq\n"
        "Signature", 0, &len);
    p = strstr(a, "Services: https,smtp\nSignature");
    assert_non_null(p);
    p[19] = 'q';
    refused(resign_answer(a, &len), len, NAME, SK_ERR_SIGNATURE, "timeline 1 SN 1");
    a = edit("Services: https,smtp\nSignature", "Services: https,smtq\n"
        "Signature", 1, &len);
    refused(a, len, NAME, SK_ERR_SIGNATURE, "timeline 1: last entry: field "
        "\"Signature\"");

    /* An altered proof hash. */
    a = fx_answer(&tw, NAME, &len);
    {
        char  from[64], to[64];

        p = strstr(a, "Proof: ");
        assert_non_null(p);
        p = strchr(p, '\n') + 1;
        snprintf(from, sizeof(from), "%.44s", p);
        snprintf(to, sizeof(to), "%.44s", p);
        to[0] = to[0] == 'A' ? 'B' : 'A';
        free(a);
        a = edit(from, to, 1, &len);
    }
    refused(a, len, NAME, SK_ERR_SIGNATURE, "inclusion");

    /* A checkpoint origin the trust set does not use. */
    a = edit("\nsk-timeline-2\n", "\nsk-timeline-9\n", 1, &len);
    refused(a, len, NAME, SK_ERR_SIGNATURE, "timeline 2: checkpoint");
}


static void
test_layout(void **state)
{
    size_t  len;
    char   *a;

    (void) state;
    a = fx_answer(&tw, NAME, &len);
    refused(a, len, "example.org", SK_ERR_FORMAT, "Name is not example.org");
    a = edit("Since: 0\n", "Since: 5\n", 1, &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "Since 5, asked 0");
    a = edit("Timeline: 2 Idle\n", "Timeline: 1 Idle\n", 1, &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "out of order");
    /* A Stuck timeline is served with its checkpoint's age; another
     * state not at all. */
    a = edit("Timeline: 2 Idle\n", "Timeline: 2 Stuck\n", 1, &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "want a \"Checkpoint-Age: \" line");
    a = edit("Timeline: 2 Idle\n", "Timeline: 2 Defunct\n", 1, &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "is Defunct but has a checkpoint");
    /* The fixture's checkpoints are as old as the answer: age 0. */
    a = stuck("0", &len);
    {
        sk_client_answer_info_t  info;
        sk_client_view_t         v;
        sk_err_t                 err;

        tu_assert_ok(sk_client_answer_verify(&v, &info, a, len, NAME, 0,
            tw.mirror, &tw.trust, FX_NOW, &err), &err);
        assert_string_equal(info.state[1], "Stuck");
        assert_int_equal(info.age[1], 0);
        assert_int_equal(info.age[0], -1);
        assert_non_null(sk_client_view_cp(&v, 2));
        assert_string_equal(sk_client_view_cp(&v, 2)->state, "Stuck");
        sk_client_view_free(&v);
        free(a);
    }
    a = stuck("3600", &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "Checkpoint-Age 3600, but the "
        "checkpoint is 0 seconds older");
    a = stuck("x", &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "Checkpoint-Age");
    a = edit("Timeline: 2 Idle\n", "Timeline: 2 Sleepy\n", 1, &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "bad TID or state");
    a = edit("Timelines: 3\n", "Timelines: 2\n", 1, &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "after the last timeline block");
    a = edit("Timelines: 3\n", "Timelines: 4\n", 1, &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "timeline block 4");
    a = edit("Reneged-Hash: e3b0c442\n", "Reneged-Hash: E3B0C442\n", 1,
        &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "Reneged-Hash");
    a = edit("Checkpoint: ", "Checkpoint: 9", 1, &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "runs past the end");
    a = edit("Entry: 1 ", "Entry: 2 ", 1, &len);
    refused(a, len, NAME, SK_ERR_FORMAT, "stamped TID 1 SN 1");

    /* Truncated anywhere: never accepted. */
    a = fx_answer(&tw, NAME, &len);
    {
        sk_client_view_t  v;
        size_t            cut;

        for (cut = 0; cut < len; cut += 97) {
            assert_int_equal(sk_client_answer_verify(&v, NULL, a, cut, NAME,
                0, tw.mirror, &tw.trust, FX_NOW, NULL), -1);
        }
    }
    free(a);
}


static void
test_untrusted_and_future(void **state)
{
    sk_client_trust_t  t2;
    sk_client_view_t   v;
    sk_err_t           err;
    size_t             len;
    char              *a;

    (void) state;
    /* A timeline the client does not trust is skipped, not an error. */
    sk_client_trust_init(&t2);
    tu_assert_ok(sk_client_trust_add_timeline(&t2, 2, tw.tl[1].key, NULL,
        &err), &err);
    a = fx_answer(&tw, NAME, &len);
    tu_assert_ok(sk_client_answer_verify(&v, NULL, a, len, NAME, 0,
        tw.mirror, &t2, FX_NOW, &err), &err);
    assert_int_equal(v.ncps, 1);
    assert_int_equal(v.nitems, 1);
    assert_int_equal(v.items[0].tid, 2);
    sk_client_view_free(&v);
    sk_client_trust_free(&t2);

    /* A checkpoint dated two hours ahead of the client's clock. */
    tu_assert_err(sk_client_answer_verify(&v, NULL, a, len, NAME, 0,
        tw.mirror, &tw.trust, FX_NOW - 7200, &err), &err, SK_ERR_NOT_YET_VALID,
        "in the future");
    free(a);
}


static void
test_view_text(void **state)
{
    sk_client_view_t  v, back;
    sk_err_t          err;
    char             *text, *text2;
    size_t            len, len2;

    (void) state;
    fx_view(&tw, &v, NAME);
    tu_assert_ok(sk_client_view_format(&text, &len, &v, &err), &err);
    assert_memory_equal(text, "SK-Client-View: 1\nName: example.com\n", 36);
    tu_assert_ok(sk_client_view_parse(&back, text, len, &err), &err);
    tu_assert_ok(sk_client_view_verify(&back, &tw.trust, FX_NOW, &err), &err);
    assert_int_equal(back.nitems, 2);
    assert_int_equal(back.ncps, 3);
    tu_assert_ok(sk_client_view_format(&text2, &len2, &back, &err), &err);
    assert_int_equal(len, len2);
    assert_memory_equal(text, text2, len);
    free(text2);
    sk_client_view_free(&back);

    /* Every truncation fails to parse; "End" must close it. */
    for (len2 = 0; len2 < len; len2 += 13) {
        assert_int_equal(sk_client_view_parse(&back, text, len2, NULL), -1);
    }
    tu_assert_err(sk_client_view_parse(&back, text + 1, len - 1, &err), &err,
        SK_ERR_FORMAT, "not a client view");
    /* Two checkpoints of one timeline (the first would be lost). */
    {
        char *p = strstr(text, "Checkpoint: 2 ");

        assert_non_null(p);
        p[12] = '1';
        tu_assert_err(sk_client_view_parse(&back, text, len, &err), &err,
            SK_ERR_FORMAT, "a second checkpoint of timeline 1");
    }
    free(text);
    sk_client_view_free(&v);
}


static void
test_trust_file(void **state)
{
    sk_client_trust_t  t;
    sk_err_t           err;
    char              *dir = tu_tmpdir(), *conf, *pub, buf[512];
    char               onion[SK_ONION_ADDR_LEN + 1];
    FILE              *f;

    (void) state;
    pub = tu_path(dir, "tl7.pub");
    tu_assert_ok(sk_key_save_public(tw.tl[0].key, pub, &err), &err);
    tu_assert_ok(sk_onion_address_from_key(onion, tw.mirror, &err), &err);
    conf = tu_path(dir, "trust.conf");
    f = fopen(conf, "w");
    assert_non_null(f);
    fprintf(f, "# the client's trust\ntimeline = 7 tl7.pub\n"
        "timeline = 9 %s tl-nine\n mirror = http://127.0.0.1:8480/ tl7.pub\n"
        "mirror = https://m2.example %s onion=%s\nt1 = 0\nretries = 3\n",
        pub, pub, onion);
    fclose(f);
    sk_client_trust_init(&t);
    tu_assert_ok(sk_client_trust_load(&t, conf, &err), &err);
    assert_int_equal(t.ntl, 2);
    assert_string_equal(t.tl[0].origin, "sk-timeline-7");
    assert_string_equal(t.tl[1].origin, "tl-nine");
    assert_int_equal(t.nmirrors, 2);
    assert_string_equal(t.mirrors[0].url, "http://127.0.0.1:8480");
    assert_non_null(t.mirrors[0].key);
    assert_string_equal(t.mirrors[0].onion, "");
    assert_non_null(t.mirrors[1].key);
    snprintf(buf, sizeof(buf), "http://%s", onion);
    assert_string_equal(t.mirrors[1].onion, buf);
    assert_int_equal(t.t1, 0);
    assert_int_equal(t.t2, SK_CLIENT_T2);
    assert_int_equal(t.n_retries, 3);
    /* Tor's defaults: the onion when the direct query brings nothing. */
    assert_int_equal(t.mirror_tor, SK_MIRROR_TOR_FALLBACK);
    assert_int_equal(t.mirror_timeout, SK_CLIENT_MIRROR_TIMEOUT);
    assert_int_equal(t.tor_timeout, SK_CLIENT_TOR_TIMEOUT);
    /* The same onion again is kept once; another is refused. */
    tu_assert_ok(sk_client_trust_set_onion(&t, "https://m2.example/", onion,
        &err), &err);
    tu_assert_ok(sk_onion_address_from_key(onion, tw.tl[0].key, &err), &err);
    tu_assert_err(sk_client_trust_set_onion(&t, "https://m2.example", onion,
        &err), &err, SK_ERR_EXISTS, "another onion than http://");
    tu_assert_err(sk_client_trust_set_onion(&t, "https://m3.example", onion,
        &err), &err, SK_ERR_NOT_FOUND, "mirror \"https://m3.example\" is not "
        "listed");
    sk_client_trust_free(&t);

    f = fopen(conf, "w");
    fprintf(f, "timeline = 7 tl7.pub\nmirror = http://m.test tl7.pub "
        "onion=%s:8480\nmirror_tor = always\nmirror_timeout = 3\n"
        "tor_timeout = 30\n", onion);
    fclose(f);
    sk_client_trust_init(&t);
    tu_assert_ok(sk_client_trust_load(&t, conf, &err), &err);
    snprintf(buf, sizeof(buf), "http://%s:8480", onion);
    assert_string_equal(t.mirrors[0].onion, buf);
    assert_int_equal(t.mirror_tor, SK_MIRROR_TOR_ALWAYS);
    assert_int_equal(t.mirror_timeout, 3);
    assert_int_equal(t.tor_timeout, 30);
    sk_client_trust_free(&t);

    f = fopen(conf, "w");
    fprintf(f, "timeline = 7 tl7.pub\ntimeline = 7 tl7.pub\n");
    fclose(f);
    sk_client_trust_init(&t);
    snprintf(buf, sizeof(buf), "%s: line 2: timeline 7 listed twice", conf);
    tu_assert_err(sk_client_trust_load(&t, conf, &err), &err, SK_ERR_EXISTS,
        buf);
    sk_client_trust_free(&t);

    f = fopen(conf, "w");
    fprintf(f, "timeline = 7 tl7.pub\nt5 = 3\n");
    fclose(f);
    sk_client_trust_init(&t);
    tu_assert_err(sk_client_trust_load(&t, conf, &err), &err, SK_ERR_FORMAT,
        "line 2: unrecognized parameter \"t5\"");
    sk_client_trust_free(&t);

    f = fopen(conf, "w");
    fprintf(f, "mirror = ftp://x.example tl7.pub\n");
    fclose(f);
    sk_client_trust_init(&t);
    tu_assert_err(sk_client_trust_load(&t, conf, &err), &err, SK_ERR_FORMAT,
        "want an http:// or https:// URL");
    sk_client_trust_free(&t);

    free(conf);
    free(pub);
    tu_rmtree(dir);
}


/* Write len bytes of text (NULs and all) to path. */
static void
trust_write(const char *path, const char *text, size_t len)
{
    FILE  *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}


/* Refused, naming the file, the line and the reason. */
static void
trust_refused(const char *conf, const char *text, size_t len,
    sk_err_code_t code, const char *why)
{
    sk_client_trust_t  t;
    sk_err_t           err;
    char               want[512];

    trust_write(conf, text, len);
    sk_client_trust_init(&t);
    snprintf(want, sizeof(want), "%s: %s", conf, why);
    tu_assert_err(sk_client_trust_load(&t, conf, &err), &err, code, want);
    sk_client_trust_free(&t);
}

#define TRUST_REFUSED(conf, lit, code, why) \
    trust_refused(conf, lit, sizeof(lit) - 1, code, why)


/* A repeat is refused, naming both lines, instead of one silently
 * winning; a NUL is refused instead of cutting its line short. */
static void
test_trust_file_repeats(void **state)
{
    sk_client_trust_t  t;
    sk_err_t           err;
    char              *dir = tu_tmpdir(), *conf, *pub, *other;
    const char        *text;

    (void) state;
    pub = tu_path(dir, "tl7.pub");
    other = tu_path(dir, "other.pub");
    tu_assert_ok(sk_key_save_public(tw.tl[0].key, pub, &err), &err);
    tu_assert_ok(sk_key_save_public(tw.mirror, other, &err), &err);
    conf = tu_path(dir, "trust.conf");

    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\nt1 = 5\n\nt1 = 6\n",
        SK_ERR_EXISTS, "line 4: \"t1\" given twice (first at line 2)");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\nfresh_percent = 80\n"
        "fresh_percent = 80\n", SK_ERR_EXISTS,
        "line 3: \"fresh_percent\" given twice (first at line 2)");
    TRUST_REFUSED(conf, "tor = 127.0.0.1:9050\ntimeline = 7 tl7.pub\n"
        "tor = 127.0.0.1:9150\n", SK_ERR_EXISTS,
        "line 3: \"tor\" given twice (first at line 1)");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\n# x\ntimeline = 7 other.pub\n",
        SK_ERR_EXISTS, "line 3: timeline 7 listed twice (first at line 1)");

    /* fail_open: evidence (the default), never, or the explicit,
     * unsafe unsafe-on-silence; nothing else, and once. */
    sk_client_trust_init(&t);
    assert_int_equal(t.fail_open, SK_FAIL_OPEN_EVIDENCE);
    assert_string_equal(sk_client_fail_open_name(t.fail_open), "evidence");
    text = "timeline = 7 tl7.pub\nfail_open = unsafe-on-silence\n";
    trust_write(conf, text, strlen(text));
    tu_assert_ok(sk_client_trust_load(&t, conf, &err), &err);
    assert_int_equal(t.fail_open, SK_FAIL_OPEN_UNSAFE_SILENCE);
    sk_client_trust_free(&t);
    text = "fail_open = never\ntimeline = 7 tl7.pub\n";
    trust_write(conf, text, strlen(text));
    tu_assert_ok(sk_client_trust_load(&t, conf, &err), &err);
    assert_int_equal(t.fail_open, SK_FAIL_OPEN_NEVER);
    sk_client_trust_free(&t);
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\nfail_open = yes\n",
        SK_ERR_FORMAT, "line 2: \"fail_open\": illegal value \"yes\" (want "
        "evidence, never or unsafe-on-silence)");
    TRUST_REFUSED(conf, "fail_open = never\ntimeline = 7 tl7.pub\n"
        "fail_open = evidence\n", SK_ERR_EXISTS,
        "line 3: \"fail_open\" given twice (first at line 1)");

    /* A NUL anywhere: in a value, a comment, at the very end. */
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\nt1 = 5\0t1 = 6\n",
        SK_ERR_FORMAT, "line 2: a NUL byte");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\n# \0\n", SK_ERR_FORMAT,
        "line 2: a NUL byte");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\n\0", SK_ERR_FORMAT,
        "line 2: a NUL byte");

    /* A mirror again with another key; one without a key at all (its
     * answers could not be told from replays). */
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\n"
        "mirror = https://m.example tl7.pub\n"
        "mirror = https://m.example/ other.pub\n", SK_ERR_EXISTS,
        "line 3: mirror \"https://m.example\" listed twice with different "
        "keys (first at line 2)");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\nmirror = https://m.example\n",
        SK_ERR_FORMAT, "line 2: \"mirror\": want URL PUBKEY-FILE "
        "[onion=ADDRESS[:PORT]]");
    tu_assert_err(sk_client_trust_add_mirror(&t, "https://m.example", NULL,
        &err), &err, SK_ERR_USAGE, "mirror \"https://m.example\": no key: "
        "its answers are believed only with its signature over the "
        "client's nonce");

    /* An onion: v3, checksummed, a port from 1; given once. */
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\n"
        "mirror = https://m.example tl7.pub tor=x\n", SK_ERR_FORMAT,
        "line 2: \"mirror\": want URL PUBKEY-FILE [onion=ADDRESS[:PORT]]");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\n"
        "mirror = https://m.example tl7.pub onion=example.onion\n",
        SK_ERR_FORMAT, "line 2: mirror \"https://m.example\": onion: onion "
        "address: length 13");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\nmirror = https://m.example "
        "tl7.pub onion=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        ".onion\n", SK_ERR_FORMAT, "line 2: mirror \"https://m.example\": "
        "onion: onion address: version 0, want 3");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\nmirror_tor = sometimes\n",
        SK_ERR_FORMAT, "line 2: \"mirror_tor\": illegal value "
        "\"sometimes\" (fallback, always or never)");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\nmirror_tor = never\n"
        "mirror_tor = always\n", SK_ERR_EXISTS,
        "line 3: \"mirror_tor\" given twice (first at line 2)");
    TRUST_REFUSED(conf, "timeline = 7 tl7.pub\nmirror_timeout = 0\n",
        SK_ERR_FORMAT, "line 2: \"mirror_timeout\": illegal value \"0\"");

    /* The same mirror and key again is harmless: kept once. */
    text = "timeline = 7 tl7.pub\nmirror = https://m.example tl7.pub\n"
        "mirror = https://m.example/ tl7.pub\n";
    trust_write(conf, text, strlen(text));
    sk_client_trust_init(&t);
    tu_assert_ok(sk_client_trust_load(&t, conf, &err), &err);
    assert_int_equal(t.nmirrors, 1);

    /* The API refuses another key for a mirror too. */
    tu_assert_err(sk_client_trust_add_mirror(&t, "https://m.example",
        tw.mirror, &err), &err, SK_ERR_EXISTS,
        "mirror \"https://m.example\" listed twice with different keys");
    tu_assert_ok(sk_client_trust_add_mirror(&t, "https://m.example//",
        tw.tl[0].key, &err), &err);
    assert_int_equal(t.nmirrors, 1);
    sk_client_trust_free(&t);

    /* From memory: not NUL-terminated, key paths beside the name given. */
    sk_client_trust_init(&t);
    tu_assert_ok(sk_client_trust_parse(&t, "timeline = 7 tl7.pub", 20, conf,
        &err), &err);
    assert_int_equal(t.ntl, 1);
    sk_client_trust_free(&t);

    free(conf);
    free(pub);
    free(other);
    tu_rmtree(dir);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_forgeries),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_untrusted_and_future),
        cmocka_unit_test(test_view_text),
        cmocka_unit_test(test_trust_file),
        cmocka_unit_test(test_trust_file_repeats),
    };

    return cmocka_run_group_tests(tests, setup, fx_teardown);
}
