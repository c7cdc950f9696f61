/*
 * test_client_map.c -- the client rule (docs/protocol.md, "The name
 * map"): answers whose timelines end in Map-Root entries prove the name's
 * whole history or its absence; every lie a mirror can tell about them
 * (an entry left out, "absent", another timeline's proof, a changed byte
 * in the last entry, its proof or the map proof) is refused, naming the
 * timeline; timelines from before maps are "unmapped".
 */
#include "test_client_fixture.h"

#define NAME "example.com"

static sk_key_t  *sk2;
static uint64_t   unbind_sn, newest_sn;


/* Timeline 1: Bind, Unbind, Bind again of NAME among another name's
 * entries; timeline 2: a Bind of NAME; timeline 3: none of NAME; each
 * closed by a Map-Root entry. */
static int
setup(void **state)
{
    const char *ufv[] = { "Last-Secure-Timestamp", "0", NULL };

    (void) state;
    fx_init(&tw, 3);
    sk1 = fx_key();
    sk2 = fx_key();
    fx_append(&tw, 0, fx_bind("other.org", sk1, "https", 0), FX_NOW - 900);
    fx_append(&tw, 0, fx_bind(NAME, sk1, "https,smtp", 0), FX_NOW - 800);
    fx_map_root(&tw, 0, FX_NOW - 800);
    unbind_sn = tw.tl[0].n;
    fx_append(&tw, 0, fx_entry(SK_ENTRY_UNBIND, NAME, sk1, ufv),
        FX_NOW - 700);
    fx_append(&tw, 0, fx_bind("third.net", sk1, "https", 0), FX_NOW - 650);
    newest_sn = tw.tl[0].n;
    fx_append(&tw, 0, fx_bind(NAME, sk2, "https", 0), FX_NOW - 600);
    fx_map_root(&tw, 0, FX_NOW - 600);
    fx_append(&tw, 1, fx_bind(NAME, sk1, "https,smtp", 0), FX_NOW - 700);
    fx_map_root(&tw, 1, FX_NOW - 700);
    fx_append(&tw, 2, fx_bind("other.org", sk1, "https", 0), FX_NOW - 500);
    fx_map_root(&tw, 2, FX_NOW - 500);
    return 0;
}


static int
teardown(void **state)
{
    sk_key_free(sk2);
    return fx_teardown(state);
}


static void
refused(char *body, size_t len, sk_err_code_t code, const char *why)
{
    sk_client_view_t  v;
    sk_err_t          err;

    body = fx_sign(&tw, body, &len);
    tu_assert_err(sk_client_answer_verify(&v, NULL, body, len, NAME, 0,
        tw.mirror, &tw.trust, FX_NOW, &err), &err, code, why);
    free(body);
}


/* body with the first occurrence of from, after the start of the block
 * of timeline tid (0: of the answer), replaced by to. */
static char *
splice(char *body, size_t *len, uint64_t tid, const char *from,
    const char *to)
{
    char   head[32], *b, *p, *out = NULL;
    size_t olen = 0;

    snprintf(head, sizeof(head), "Timeline: %" PRIu64 " ", tid);
    b = tid == 0 ? body : strstr(body, head);
    assert_non_null(b);
    p = strstr(b, from);
    assert_non_null(p);
    fx_add(&out, &olen, body, (size_t) (p - body));
    fx_add(&out, &olen, to, strlen(to));
    fx_add(&out, &olen, p + strlen(from), *len - (size_t) (p - body)
        - strlen(from));
    free(body);
    *len = olen;
    return out;
}


/* Timeline tid's block from "from" up to (not including) "until". */
static char *
block_part(const char *body, uint64_t tid, const char *from,
    const char *until)
{
    char        head[32], *out;
    const char *b, *p, *q;

    snprintf(head, sizeof(head), "Timeline: %" PRIu64 " ", tid);
    b = strstr(body, head);
    assert_non_null(b);
    p = strstr(b, from);
    assert_non_null(p);
    q = until != NULL ? strstr(p, until) : p + strlen(p);
    assert_non_null(q);
    out = strndup(p, (size_t) (q - p));
    assert_non_null(out);
    return out;
}


static void
test_proven(void **state)
{
    sk_client_view_t  v;
    sk_err_t          err;
    size_t            len;
    char             *a = fx_answer(&tw, NAME, &len), since[32];

    (void) state;
    tu_assert_ok(sk_client_answer_verify(&v, NULL, a, len, NAME, 0,
        tw.mirror, &tw.trust, FX_NOW, &err), &err);
    assert_int_equal(sk_client_view_cp(&v, 1)->map, SK_CLIENT_MAP_PRESENT);
    assert_int_equal(sk_client_view_cp(&v, 2)->map, SK_CLIENT_MAP_PRESENT);
    assert_int_equal(sk_client_view_cp(&v, 3)->map, SK_CLIENT_MAP_ABSENT);
    assert_string_equal(sk_client_map_name(SK_CLIENT_MAP_ABSENT), "absent");
    assert_int_equal(v.nitems, 4);
    sk_client_view_free(&v);
    free(a);

    /* Since is ignored for a mapped timeline: all entries come, and the
     * older ones are not held against the answer. */
    snprintf(since, sizeof(since), "Since: %d\n", FX_NOW - 650);
    a = fx_answer_body(&tw, NAME, 0, 0, &len);
    a = splice(a, &len, 0, "Since: 0\n", since);
    a = fx_sign(&tw, a, &len);
    tu_assert_ok(sk_client_answer_verify(&v, NULL, a, len, NAME,
        FX_NOW - 650, tw.mirror, &tw.trust, FX_NOW, &err), &err);
    assert_int_equal(v.nitems, 4);
    sk_client_view_free(&v);
    free(a);

    /* A name in no map: absent everywhere, no entries. */
    a = fx_answer(&tw, "nowhere.example", &len);
    tu_assert_ok(sk_client_answer_verify(&v, NULL, a, len, "nowhere.example",
        0, tw.mirror, &tw.trust, FX_NOW, &err), &err);
    assert_int_equal(sk_client_view_cp(&v, 1)->map, SK_CLIENT_MAP_ABSENT);
    assert_int_equal(sk_client_view_cp(&v, 2)->map, SK_CLIENT_MAP_ABSENT);
    assert_int_equal(v.nitems, 0);
    sk_client_view_free(&v);
    free(a);
}


/* The lies of issue 23's lying mirror, each re-signed by the mirror. */
static void
test_lies(void **state)
{
    unsigned char    keys[FX_MAX_ENTRIES][SK_MAP_KEY_BYTES], key[32];
    sk_map_value_t   vals[FX_MAX_ENTRIES];
    sk_map_proof_t   p;
    sk_err_t         err;
    size_t           len, n, j, plen;
    char            *a, *entries, *mp1, *mp2, *fake;

    (void) state;
    /* The newest entry left out. */
    a = fx_answer_body(&tw, NAME, 1, newest_sn, &len);
    refused(a, len, SK_ERR_SIGNATURE, "answer: timeline 1: map proof: the 2 "
        "entries given (newest SN 3) are not the name's history");

    /* The Unbind left out of the middle of the history. */
    a = fx_answer_body(&tw, NAME, 1, unbind_sn, &len);
    refused(a, len, SK_ERR_SIGNATURE, "answer: timeline 1: map proof: the 2 "
        "entries given (newest SN 5) are not the name's history");

    /* "Absent": no entries, with the real map proof. */
    a = fx_answer_body(&tw, NAME, 0, 0, &len);
    entries = block_part(a, 1, "Entries: 3\n", "Timeline: 2 ");
    a = splice(a, &len, 1, entries, "Entries: 0\n");
    refused(a, len, SK_ERR_SIGNATURE, "answer: timeline 1: map proof: the "
        "name is in the map of 7, but no entries are given");

    /* ... and with a proof of absence made up from the map without the
     * name: it does not lead to the Map-Root's hash. */
    fx_map(&tw, 0, keys, vals, &n);
    tu_assert_ok(sk_map_key(key, NAME, &err), &err);
    for (j = 0; memcmp(keys[j], key, sizeof(key)) != 0; j++) {
    }
    memmove(keys[j], keys[j + 1], (n - j - 1) * sizeof(keys[0]));
    memmove(&vals[j], &vals[j + 1], (n - j - 1) * sizeof(vals[0]));
    fx_map_prove(&p, keys, vals, n - 1, key);
    tu_assert_ok(sk_map_proof_format(&fake, &plen, &p, &err), &err);
    a = fx_answer_body(&tw, NAME, 0, 0, &len);
    mp1 = block_part(a, 1, "Map-Proof: ", "Entries: ");
    a = splice(a, &len, 1, entries, "Entries: 0\n");
    a = splice(a, &len, 1, mp1, fake);
    refused(a, len, SK_ERR_SIGNATURE, "answer: timeline 1: map proof: does "
        "not lead to the map root");
    free(entries);
    free(fake);

    /* Another timeline's map proof for the name. */
    a = fx_answer_body(&tw, NAME, 0, 0, &len);
    mp2 = block_part(a, 2, "Map-Proof: ", "Entries: ");
    a = splice(a, &len, 1, mp1, mp2);
    refused(a, len, SK_ERR_SIGNATURE, "answer: timeline 1: map proof: ");
    free(mp2);

    /* A map proof that does not parse: said once, with the timeline. */
    a = fx_answer_body(&tw, NAME, 0, 0, &len);
    a = splice(a, &len, 1, "Map-Proof: ", "Map-Proof: 9999");
    refused(a, len, SK_ERR_FORMAT, "answer: timeline 1: map proof: depth: "
        "not a number");

    /* No map proof after a Map-Root. */
    a = fx_answer_body(&tw, NAME, 0, 0, &len);
    a = splice(a, &len, 1, mp1, "");
    refused(a, len, SK_ERR_SIGNATURE, "answer: timeline 1: map proof: none, "
        "but the last entry is a Map-Root");
    free(mp1);

    /* No last entry at all. */
    a = fx_answer_body(&tw, NAME, 0, 0, &len);
    entries = block_part(a, 2, "Last-Entry: ", "Entries: ");
    a = splice(a, &len, 2, entries, "");
    refused(a, len, SK_ERR_FORMAT, "answer: timeline 2: no last entry");
    free(entries);
}


/* An older Map-Root (timeline 1's first) as the last entry, with its own
 * proof: not the checkpoint's last leaf. */
static void
test_old_root(void **state)
{
    sk_merkle_proof_t  proof;
    sk_err_t           err;
    fx_tl_t           *tl = &tw.tl[0];
    char              *a, *last, *ptext, *old = NULL;
    size_t             len, plen, olen = 0;
    uint64_t           sn = unbind_sn - 1;

    (void) state;
    tu_assert_ok(sk_merkle_tree_inclusion(&proof, tl->tree, sn, tl->n, &err),
        &err);
    tu_assert_ok(sk_merkle_proof_format(&ptext, &plen, &proof, &err), &err);
    fx_addf(&old, &olen, "Last-Entry: %zu\n", tl->len[sn]);
    fx_add(&old, &olen, tl->text[sn], tl->len[sn]);
    fx_addf(&old, &olen, "Proof: %zu\n", proof.len);
    fx_add(&old, &olen, ptext, plen);
    free(ptext);
    a = fx_answer_body(&tw, NAME, 0, 0, &len);
    last = block_part(a, 1, "Last-Entry: ", "Map-Proof: ");
    a = splice(a, &len, 1, last, old);
    refused(a, len, SK_ERR_SIGNATURE, "answer: timeline 1: last entry: not "
        "stamped TID 1 SN 6");
    free(last);
    free(old);
}


/* Every byte of timeline 1's Last-Entry, its Proof and the Map-Proof,
 * changed, refuses the answer (re-signed by the mirror each time). */
static void
test_each_byte(void **state)
{
    sk_client_view_t  v;
    char             *a, *body, *at;
    size_t            len, blen, from, to, i;

    (void) state;
    body = fx_answer_body(&tw, NAME, 0, 0, &blen);
    at = strstr(strstr(body, "Timeline: 1 "), "Last-Entry: ");
    from = (size_t) (at - body);
    to = (size_t) (strstr(at, "Entries: ") - body);
    for (i = from; i < to; i++) {
        a = malloc(blen + 1);
        assert_non_null(a);
        memcpy(a, body, blen + 1);
        a[i] ^= (a[i] == '\n') ? 0x02 : 0x01;
        len = blen;
        a = fx_sign(&tw, a, &len);
        if (sk_client_answer_verify(&v, NULL, a, len, NAME, 0, tw.mirror,
                &tw.trust, FX_NOW, NULL) == 0)
        {
            fail_msg("byte %zu ('%c') of timeline 1's last entry and proofs "
                "changed, and the answer verified", i - from, body[i]);
        }
        free(a);
    }
    free(body);
}


/* Timelines from before maps: believed, and said to be unmapped; a map
 * proof for one is refused. */
static void
test_unmapped(void **state)
{
    fx_world_t        w;
    sk_client_view_t  v;
    sk_err_t          err;
    size_t            len, plen;
    char             *a, *mp;

    (void) state;
    fx_init(&w, 2);
    fx_append(&w, 0, fx_bind(NAME, sk1, "https", 0), FX_NOW - 100);
    a = fx_answer(&w, NAME, &len);
    tu_assert_ok(sk_client_answer_verify(&v, NULL, a, len, NAME, 0,
        w.mirror, &w.trust, FX_NOW, &err), &err);
    assert_int_equal(sk_client_view_cp(&v, 1)->map, SK_CLIENT_MAP_UNMAPPED);
    assert_int_equal(sk_client_view_cp(&v, 2)->map, SK_CLIENT_MAP_ABSENT);
    assert_string_equal(sk_client_map_name(SK_CLIENT_MAP_UNMAPPED),
        "unmapped");
    sk_client_view_free(&v);
    free(a);

    a = fx_answer_body(&w, NAME, 0, 0, &len);
    mp = fx_map_proof(&w, 0, NAME, &plen);
    fx_add(&mp, &plen, "Entries: ", 9);
    a = splice(a, &len, 1, "Entries: ", mp);
    free(mp);
    a = fx_sign(&w, a, &len);
    tu_assert_err(sk_client_answer_verify(&v, NULL, a, len, NAME, 0,
        w.mirror, &w.trust, FX_NOW, &err), &err, SK_ERR_FORMAT,
        "answer: timeline 1: map proof: given, but the last entry is a Bind");
    free(a);
    fx_free(&w);
}


/* The cache's text form keeps what was proven, and is checked again. */
static void
test_view_text(void **state)
{
    sk_client_view_t  v, back;
    sk_err_t          err;
    char             *text, *p, *q;
    size_t            len, elen, plines;

    (void) state;
    fx_view(&tw, &v, NAME);
    tu_assert_ok(sk_client_view_format(&text, &len, &v, &err), &err);
    tu_assert_ok(sk_client_view_parse(&back, text, len, &err), &err);
    tu_assert_ok(sk_client_view_verify(&back, &tw.trust, FX_NOW, &err), &err);
    assert_int_equal(sk_client_view_cp(&back, 1)->map, SK_CLIENT_MAP_PRESENT);
    assert_int_equal(sk_client_view_cp(&back, 3)->map, SK_CLIENT_MAP_ABSENT);
    sk_client_view_free(&back);

    /* A cached view that lost an entry of a mapped timeline (the first,
     * timeline 1's Bind): it parses, and does not verify. */
    p = strstr(text, "\nEntry: ") + 1;
    q = strchr(p + 7, ' ');
    elen = strtoull(p + 7, NULL, 10);
    plines = strtoull(q + 1, NULL, 10);
    q = strchr(p, '\n') + 1 + elen + plines * 45;
    memmove(p, q, len - (size_t) (q - text));
    len -= (size_t) (q - p);
    tu_assert_ok(sk_client_view_parse(&back, text, len, &err), &err);
    tu_assert_err(sk_client_view_verify(&back, &tw.trust, FX_NOW, &err), &err,
        SK_ERR_SIGNATURE, "timeline 1: map proof: the 2 entries given");
    sk_client_view_free(&back);
    sk_client_view_free(&v);
    free(text);
}


/* A staple is mirror answers: one that leaves the newest entry out is
 * refused by the same rule, the honest one taken. */
static void
test_staple(void **state)
{
    sk_client_trust_t          t = tw.trust;
    const sk_client_mirror_t  *m;
    sk_staple_answer_t         a;
    sk_client_view_t           v;
    unsigned char             *buf;
    sk_staple_t                s;
    sk_err_t                   err;
    size_t                     len;
    char                      *ans;
    int                        lie;

    (void) state;
    tu_assert_ok(sk_client_trust_add_mirror(&t, "http://m0.test", tw.mirror,
        &err), &err);
    for (lie = 1; lie >= 0; lie--) {
        snprintf(a.name, sizeof(a.name), "%s", NAME);
        sk_key_fingerprint(a.mirror, tw.mirror);
        ans = fx_answer_omit(&tw, NAME, lie ? 1 : 0, newest_sn, &a.len);
        a.answer = ans;
        tu_assert_ok(sk_staple_format(&buf, &len, &a, 1, &err), &err);
        free(ans);
        tu_assert_ok(sk_staple_parse(&s, buf, len, &err), &err);
        if (lie) {
            tu_assert_err(sk_client_staple_view(&v, &m, &s, NAME, &t, FX_NOW,
                &err), &err, SK_ERR_SIGNATURE, "answer: timeline 1: map "
                "proof: the 2 entries given");
        } else {
            tu_assert_ok(sk_client_staple_view(&v, &m, &s, NAME, &t, FX_NOW,
                &err), &err);
            assert_int_equal(sk_client_view_cp(&v, 1)->map,
                SK_CLIENT_MAP_PRESENT);
            sk_client_view_free(&v);
        }
        sk_staple_free(&s);
        free(buf);
    }
    sk_key_free(t.mirrors[t.nmirrors - 1].key);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proven),
        cmocka_unit_test(test_lies),
        cmocka_unit_test(test_old_root),
        cmocka_unit_test(test_each_byte),
        cmocka_unit_test(test_unmapped),
        cmocka_unit_test(test_view_text),
        cmocka_unit_test(test_staple),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
