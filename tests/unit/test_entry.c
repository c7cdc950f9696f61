/*
 * test_entry.c -- timeline entries: the examples of docs/protocol.md byte
 * for byte, round trips of every type, each rejection of the strict
 * parser, and which fields each signature covers, with every key type.
 */
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <sk/chain.h>
#include <sk/dnssec.h>

#include "testutil.h"

/* Ed25519 certificates of docs/protocol.md: a root, and leaves for
 * example.com with the first and second SK (seeds 0x11, 0x22). */

#define CERT_ROOT TU_DOC_CERT_ROOT

#define CERT_LEAF1 \
    "MIIBOTCB7KADAgECAgIQATAFBgMrZXAwGjEYMBYGA1UEAwwPRXhhbXBsZSBSb290" \
    "IENBMB4XDTI2MTIwMzEyMDQzOVoXDTI4MDEwNTEyMDQzOVowFjEUMBIGA1UEAwwL" \
    "ZXhhbXBsZS5jb20wKjAFBgMrZXADIQDQSrIydCu0qzoTaL1GFeTm0CJKtxoBa6-F" \
    "IKMyyXeHN6NaMFgwFgYDVR0RBA8wDYILZXhhbXBsZS5jb20wHQYDVR0OBBYEFNWO" \
    "rfxc81sYwO_d7YKtIO5aZIWkMB8GA1UdIwQYMBaAFI09rPDKDJvB7m_lLTVwSMyP" \
    "VGTFMAUGAytlcANBAITYF7MuPdTjTtn8lqJaiRnVzyFPZsdR6P1KQqWVjhDMrcOz" \
    "J6NvW5ohleaUD6N2HTvN-lvWztPOiP6CdNLY6AY"

#define CERT_LEAF2 \
    "MIIBOTCB7KADAgECAgIQAjAFBgMrZXAwGjEYMBYGA1UEAwwPRXhhbXBsZSBSb290" \
    "IENBMB4XDTI2MTIwMzEyMDQzOVoXDTI4MDEwNTEyMDQzOVowFjEUMBIGA1UEAwwL" \
    "ZXhhbXBsZS5jb20wKjAFBgMrZXADIQCgmqX0emdZgC_5VfjcLSoUpcmdI76X-GQS" \
    "f_k4NFWk8KNaMFgwFgYDVR0RBA8wDYILZXhhbXBsZS5jb20wHQYDVR0OBBYEFAj-" \
    "BHo_JI-W-hqCHTkfvbTIih1OMB8GA1UdIwQYMBaAFI09rPDKDJvB7m_lLTVwSMyP" \
    "VGTFMAUGAytlcANBALfrOZ0iGkrZQZUJ2SvvyWfMadEGHUeihpUCyNdiPpbVi3g_" \
    "FkQp6JMHE5rlHe3Nc86G2Lv_suQQueX-pWeUaQI"

#define DOC_BIND \
    "Bind: 1\n" \
    "CA-Cert-Chain: " CERT_LEAF1 "," CERT_ROOT "\n" \
    "Includes-Subdomains: 0\n" \
    "Key: MCowBQYDK2VwAyEA0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzc\n" \
    "Key-Type: ECC\n" \
    "Name: example.com\n" \
    "Rebinder-Names: example.net,example.org\n" \
    "SK-Signature: " \
    "tP7Yhs5rbocwkGSr-m7zNeVnxNsX1EHEzZzsUnNu2gcue2M56juJKGml844QjFLO" \
    "ZJpVCWqdkDyDReQhbh7JBQ" "\n" \
    "SN: 41\n" \
    "Services: https;203.0.113.7:443,smtps\n" \
    "Signature: " \
    "Q1WILMV33X86jDaerHAPm26w8Mh25lSLRf0o3MYuqQkiasIHIwVKNL3Xuotab41e" \
    "Jwr9jZQ6P-57dGsmIZlRBg" "\n" \
    "TID: 1\n" \
    "Timestamp: 1700000000\n" \
    "\n"

#define DOC_BIND_SK_BYTES \
    "Bind: 1\n" \
    "CA-Cert-Chain: " CERT_LEAF1 "," CERT_ROOT "\n" \
    "Includes-Subdomains: 0\n" \
    "Key: MCowBQYDK2VwAyEA0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzc\n" \
    "Key-Type: ECC\n" \
    "Name: example.com\n" \
    "Rebinder-Names: example.net,example.org\n" \
    "SK-Signature: N/A\n" \
    "SN: N/A\n" \
    "Services: https;203.0.113.7:443,smtps\n" \
    "Signature: N/A\n" \
    "TID: N/A\n" \
    "Timestamp: N/A\n" \
    "\n"

#define DOC_CHANGE_SERVICES \
    "Change-Services: 1\n" \
    "Name: example.com\n" \
    "SK-Signature: " \
    "1LsR5OJgYG9kJhu4n2Lhp6pkcclkIAbb5XWTGorrTYqS8B749he5gCOevooa4hVY" \
    "0-bFBMfJfuOmBwMzl7eZBw" "\n" \
    "SN: 42\n" \
    "Services: https;203.0.113.8:443,imaps,smtps\n" \
    "Signature: " \
    "B1bqF3pN3FMU8WIDfTiiO3Q8qPi2a_1I-4wP2bwjNNhmgF1DMjQU_UlZErqVYJhB" \
    "LcJxEA7mTmst9qphOa4yAg" "\n" \
    "TID: 1\n" \
    "Timestamp: 1700000600\n" \
    "\n"

#define DOC_UNBIND \
    "Unbind: 1\n" \
    "Last-Secure-Timestamp: 1700080000\n" \
    "Name: example.com\n" \
    "SK-Signature: " \
    "t5hjsJpEXuuF-GWlsNFLD4HHP6gXylZ4HzVdvVT7C7Go17BntojaH-bbAlNZS_UQ" \
    "wszC2sSlxig_K67ewQz5Cw" "\n" \
    "SN: 43\n" \
    "Signature: " \
    "DmpyYxZjiw5NZLy6bIUUp6rfv68wwrDOkvDFcbz0smQ6XYcS_ALhw2ZXgMavwUh-" \
    "R92ZQrEyYI6Wrz3LIF0-Cw" "\n" \
    "TID: 1\n" \
    "Timestamp: 1700086400\n" \
    "\n"

#define DOC_REBIND \
    "Rebind: 1\n" \
    "CA-Cert-Chain: " CERT_LEAF2 "," CERT_ROOT "\n" \
    "Includes-Subdomains: 1\n" \
    "Key: MCowBQYDK2VwAyEAoJql9HpnWYAv-VX43C0qFKXJnSO-l_hkEn_5ODRVpPA\n" \
    "Key-Type: ECC\n" \
    "Name: example.com\n" \
    "Rebinder-Name: example.net\n" \
    "Rebinder-Names: example.net\n" \
    "Rebinder-Signature: " \
    "yuchvT2qbetVoWGrAbO9qlnvLbupBxRQQUhEYh9urWApG07aLnNC3nIdcbygYjdv" \
    "ZE0Gv_Zhg2p_zopUh3hKDA" "\n" \
    "SK-Signature: " \
    "ORw2lzlzdczU4_0Z-NYKbQQsqY9_IK3IH6CEb5SsINRWTzNzaskRBy-0Di-0VJgr" \
    "VrySGbM51QOBdY-W4Y6PDQ" "\n" \
    "SN: 44\n" \
    "Services: all\n" \
    "Signature: " \
    "zaEzCKeaoWz38IP04Uz2FGho0zYq9H_CoRUlNNJylgnCQ8yXPOxVNTEFK0B6kbBS" \
    "MZ-Rmng0_415inj9ZqUZDw" "\n" \
    "TID: 1\n" \
    "Timestamp: 1700090000\n" \
    "\n"

#define DOC_ADD_ROOT_CA \
    "Add-Root-CA: 1\n" \
    "CA-Cert: " CERT_ROOT "\n" \
    "CA-Serial: 7\n" \
    "Operator-Signature: " \
    "e8KAoL9K_0iKtgwCj8IwKfA3g_8fzekIvXqGPhiguA8I_D-058S4CSQuvN7ob3V5" \
    "EjxG_lLHlpwTu9iHyE9xCg" "\n" \
    "SN: 3\n" \
    "Signature: " \
    "ck7h254GVoahU3I_UA-TWmL966Tvwh6t-AGrmyRmeHCO5d7EwI4F9h-bZw4swzGA" \
    "7T7apSI6-KRjAZvuv5tgBg" "\n" \
    "TID: 1\n" \
    "Timestamp: 1699990000\n" \
    "\n"

#define DOC_REMOVE_ROOT_CA \
    "Remove-Root-CA: 1\n" \
    "CA-Cert-Hash: lo2MkpYANm7w5cw3Sae4XaOhIJam4Nfj4MlZo5o7A7A\n" \
    "CA-Serial: 8\n" \
    "Operator-Signature: " \
    "tm2qZOAzHhW4QQqkIdb9ph1wd4sGNMDilpjvKjdVrMsAsMdArz9_kX5mKvi6pbHa" \
    "wFw1Yw_dr0aEUWRvAtqfBQ" "\n" \
    "SN: 45\n" \
    "Signature: " \
    "FywCcB2Ps5XDnNkFl_U0OuLcacOM84bDRWv6IEkbQeKo1qN_ivxFWBBawPxUeExg" \
    "8ILAA-2yr60_bLly7yuDBA" "\n" \
    "TID: 1\n" \
    "Timestamp: 1700100000\n" \
    "\n"

#define DOC_INCORPORATE \
    "Incorporate: 1\n" \
    "Incorporated-Hash: 9gNLITZyg6yMx1xRIRnejEBzI7p25IW0rGRKW3Lls3o\n" \
    "Incorporated-SN: 41\n" \
    "Incorporated-TID: 1\n" \
    "SN: 1009\n" \
    "Signature: " \
    "TAH_hLn5OYF7F9GKAkmVUGZ_F-bpYaiXaZw3Yp4vCbz7MJUWSNgGhoYzFN6UzBMN" \
    "4QvlzKsTQEuR8OBpRkxWCA" "\n" \
    "TID: 2\n" \
    "Timestamp: 1700000900\n" \
    "\n"

#define DOC_MAP_ROOT \
    "Map-Root: 1\n" \
    "Map-Hash: 93Qspusi-hw126gotbf1UqVwdMp9TlHWqUMpiEZoOkc\n" \
    "Map-Names: 1\n" \
    "SN: 46\n" \
    "Signature: " \
    "wNxQlifrqpOzN9bMw6j9X-ERjoloPAZSxgxg9tvqd468g5_dSOi8XXX3IM-ic96IoYXK" \
    "ukora2VrInMGM-JsBQ" "\n" \
    "TID: 1\n" \
    "Timestamp: 1700100000\n" \
    "\n"


#define HASH_ZERO  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define HASH_ONE   "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

typedef struct {
    sk_key_t  *key[3][2];       /* [ed25519, p256, rsa][main, other] */
} fixture_t;

static fixture_t  fx;


/* The Ed25519 key whose 32-byte seed is byte b repeated (the docs' keys). */
static sk_key_t *
seed_key(unsigned char b)
{
    unsigned char  seed[32];
    EVP_PKEY      *pkey;
    sk_key_t      *key;
    sk_err_t       err;

    memset(seed, b, sizeof(seed));
    pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    assert_non_null(pkey);
    tu_assert_ok(sk_key_from_pkey(&key, pkey, &err), &err);
    EVP_PKEY_free(pkey);
    return key;
}


static int
setup(void **state)
{
    sk_err_t  err;
    int       i;

    (void) state;
    fx.key[0][0] = seed_key(0x11);
    fx.key[0][1] = seed_key(0x22);
    for (i = 0; i < 2; i++) {
        if (sk_key_generate(&fx.key[1][i], SK_KEY_P256, 0, &err) != 0
            || sk_key_generate(&fx.key[2][i], SK_KEY_RSA, 2048, &err) != 0)
        {
            return -1;
        }
    }
    return 0;
}


static int
teardown(void **state)
{
    int  i, j;

    (void) state;
    for (i = 0; i < 3; i++) {
        for (j = 0; j < 2; j++) {
            sk_key_free(fx.key[i][j]);
        }
    }
    return 0;
}


static sk_entry_t *
parse_ok(const char *text)
{
    sk_entry_t  *e;
    sk_err_t     err;

    tu_assert_ok(sk_entry_parse(&e, text, strlen(text), &err), &err);
    return e;
}


static char *
format_ok(const sk_entry_t *e)
{
    char     *text;
    size_t    len;
    sk_err_t  err;

    tu_assert_ok(sk_entry_format(&text, &len, e, &err), &err);
    assert_int_equal(len, strlen(text));
    return text;
}


/* s with the first occurrence of from replaced by to; free() it. */
static char *
subst(const char *s, const char *from, const char *to)
{
    const char  *at = strstr(s, from);
    char        *out;
    size_t       pre;

    if (at == NULL) {
        fail_msg("\"%s\" not in the text", from);
    }
    pre = (size_t) (at - s);
    out = malloc(strlen(s) - strlen(from) + strlen(to) + 1);
    assert_non_null(out);
    memcpy(out, s, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
    return out;
}


static void
set_ok(sk_entry_t *e, const char *field, const char *value)
{
    sk_err_t  err;

    tu_assert_ok(sk_entry_set(e, field, value, &err), &err);
}


static void
verify_ok(const sk_entry_t *e, sk_sig_field_t which, const sk_key_t *key)
{
    sk_err_t  err;

    tu_assert_ok(sk_entry_verify(e, which, key, &err), &err);
}


/* The Bind of docs/protocol.md, rebuilt from its keys: same bytes. */
static void
test_docs_bind_rebuilt(void **state)
{
    sk_key_t    *sk = seed_key(0x11), *tl = seed_key(0x44);
    sk_entry_t  *e;
    char        *text;
    size_t       len;
    sk_err_t     err;

    (void) state;
    tu_assert_ok(sk_entry_new(&e, SK_ENTRY_BIND, &err), &err);
    set_ok(e, "CA-Cert-Chain", CERT_LEAF1 "," CERT_ROOT);
    set_ok(e, "Includes-Subdomains", "0");
    set_ok(e, "Name", "example.com");
    set_ok(e, "Rebinder-Names", "example.net,example.org");
    set_ok(e, "Services", "https;203.0.113.7:443,smtps");
    tu_assert_ok(sk_entry_sign(e, SK_SIG_SK, sk, &err), &err);
    assert_string_equal(sk_entry_get(e, "Key-Type"), "ECC");

    tu_assert_ok(sk_entry_signed_bytes(&text, &len, e, SK_SIG_SK, &err),
        &err);
    assert_string_equal(text, DOC_BIND_SK_BYTES);
    assert_int_equal(len, strlen(DOC_BIND_SK_BYTES));
    free(text);

    tu_assert_ok(sk_entry_stamp(e, 1, 41, 1700000000, tl, &err), &err);
    text = format_ok(e);
    assert_string_equal(text, DOC_BIND);
    free(text);
    sk_entry_free(e);
    sk_key_free(sk);
    sk_key_free(tl);
}


/* Every example of the docs parses, formats back to itself, and carries
 * good signatures by the docs' keys. */
static void
test_docs_examples(void **state)
{
    static const struct {
        const char       *text;
        sk_entry_type_t   type;
        unsigned char     sk, rebinder, op, tl;     /* key seeds, 0: none */
    } ex[] = {
        { DOC_BIND, SK_ENTRY_BIND, 0x11, 0, 0, 0x44 },
        { DOC_CHANGE_SERVICES, SK_ENTRY_CHANGE_SERVICES, 0x11, 0, 0, 0x44 },
        { DOC_UNBIND, SK_ENTRY_UNBIND, 0x11, 0, 0, 0x44 },
        { DOC_REBIND, SK_ENTRY_REBIND, 0x22, 0x33, 0, 0x44 },
        { DOC_ADD_ROOT_CA, SK_ENTRY_ADD_ROOT_CA, 0, 0, 0x55, 0x44 },
        { DOC_REMOVE_ROOT_CA, SK_ENTRY_REMOVE_ROOT_CA, 0, 0, 0x55, 0x44 },
        { DOC_INCORPORATE, SK_ENTRY_INCORPORATE, 0, 0, 0, 0x77 },
        { DOC_MAP_ROOT, SK_ENTRY_MAP_ROOT, 0, 0, 0, 0x44 },
    };
    const sk_sig_field_t  sigs[4] = {
        SK_SIG_SK, SK_SIG_REBINDER, SK_SIG_OPERATOR, SK_SIG_TIMELINE
    };
    sk_entry_t           *e, *d;
    sk_key_t             *key;
    unsigned char         seeds[4];
    char                 *text;
    size_t                i, j;

    (void) state;
    for (i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
        e = parse_ok(ex[i].text);
        assert_int_equal(sk_entry_type(e), ex[i].type);
        text = format_ok(e);
        assert_string_equal(text, ex[i].text);
        free(text);
        d = sk_entry_dup(e);
        assert_non_null(d);
        text = format_ok(d);
        assert_string_equal(text, ex[i].text);
        free(text);
        sk_entry_free(d);

        seeds[0] = ex[i].sk;
        seeds[1] = ex[i].rebinder;
        seeds[2] = ex[i].op;
        seeds[3] = ex[i].tl;
        for (j = 0; j < 4; j++) {
            if (seeds[j] != 0) {
                key = seed_key(seeds[j]);
                verify_ok(e, sigs[j], key);
                sk_key_free(key);
            }
        }
        sk_entry_free(e);
    }
}


/* The Incorporate example references the Bind example by hash. */
static void
test_hash_incorporated(void **state)
{
    sk_entry_t     *bind = parse_ok(DOC_BIND), *inc = parse_ok(DOC_INCORPORATE);
    unsigned char   h[SK_SHA256_BYTES];
    char            b64[64];
    sk_err_t        err;

    (void) state;
    tu_assert_ok(sk_entry_hash(h, bind, &err), &err);
    sk_b64_encode(b64, h, sizeof(h));
    assert_string_equal(sk_entry_get(inc, "Incorporated-Hash"), b64);
    assert_string_equal(sk_entry_get(inc, "Incorporated-SN"),
        sk_entry_get(bind, "SN"));
    sk_entry_free(bind);
    sk_entry_free(inc);
}


/* The Map-Root example's Map-Hash is the map of example.com's history
 * in the examples (SN 41 to 44), and the type has no name. */
static void
test_map_root_example(void **state)
{
    static const char *const  hist[] = {
        DOC_BIND, DOC_CHANGE_SERVICES, DOC_UNBIND, DOC_REBIND
    };
    sk_entry_t        *m = parse_ok(DOC_MAP_ROOT), *e;
    sk_map_value_t     v;
    sk_merkle_hash_t   leaf, value, root;
    unsigned char      key[1][SK_MAP_KEY_BYTES];
    char               b64[64];
    uint64_t           sn;
    size_t             i;
    sk_err_t           err;

    (void) state;
    sk_map_value_init(&v);
    for (i = 0; i < 4; i++) {
        e = parse_ok(hist[i]);
        tu_assert_ok(sk_merkle_leaf_hash(leaf, hist[i], strlen(hist[i]),
            &err), &err);
        tu_assert_ok(sk_entry_sn(e, &sn, &err), &err);
        sk_map_value_add(&v, sn, leaf);
        sk_entry_free(e);
    }
    assert_int_equal(v.count, 4);
    assert_int_equal(v.newest_sn, 44);
    tu_assert_ok(sk_map_key(key[0], "example.com", &err), &err);
    sk_map_value_hash(value, &v);
    tu_assert_ok(sk_map_root_sorted(root,
        (const unsigned char (*)[SK_MAP_KEY_BYTES]) key,
        (const sk_merkle_hash_t *) &value, 1, &err), &err);
    sk_b64_encode(b64, root, sizeof(root));
    assert_string_equal(sk_entry_get(m, "Map-Hash"), b64);
    assert_null(sk_entry_name(m));
    assert_string_equal(sk_entry_type_name(SK_ENTRY_MAP_ROOT), "Map-Root");
    sk_entry_free(m);
}


/* A small entry's signed bytes, literally. */
static void
test_signed_bytes_literal(void **state)
{
    sk_entry_t  *e = parse_ok(DOC_UNBIND);
    char        *text;
    size_t       len;
    sk_err_t     err;

    (void) state;
    tu_assert_ok(sk_entry_signed_bytes(&text, &len, e, SK_SIG_SK, &err),
        &err);
    assert_string_equal(text,
        "Unbind: 1\n"
        "Last-Secure-Timestamp: 1700080000\n"
        "Name: example.com\n"
        "SK-Signature: N/A\n"
        "SN: N/A\n"
        "Signature: N/A\n"
        "TID: N/A\n"
        "Timestamp: N/A\n"
        "\n");
    assert_int_equal(len, strlen(text));
    free(text);

    tu_assert_ok(sk_entry_signed_bytes(&text, &len, e, SK_SIG_TIMELINE,
        &err), &err);
    assert_non_null(strstr(text, "\nSN: 43\nSignature: N/A\nTID: 1\n"));
    assert_null(strstr(text, "SK-Signature: N/A"));
    free(text);

    tu_assert_err(sk_entry_signed_bytes(&text, &len, e, SK_SIG_OPERATOR,
        &err), &err, SK_ERR_USAGE, "Unbind entries have no "
        "Operator-Signature");
    sk_entry_free(e);
}


/* Values every non-stamp field can take, and a second one to tamper with. */
static const struct {
    const char *field, *value, *other;
} values[] = {
    { "CA-Cert", CERT_ROOT, CERT_LEAF1 },
    { "CA-Cert-Chain", CERT_LEAF1 "," CERT_ROOT, CERT_ROOT },
    { "CA-Cert-Hash", HASH_ZERO, HASH_ONE },
    { "CA-Serial", "7", "8" },
    { "Includes-Subdomains", "0", "1" },
    { "Incorporated-Hash", HASH_ZERO, HASH_ONE },
    { "Incorporated-SN", "5", "6" },
    { "Incorporated-TID", "2", "3" },
    { "Last-Secure-Timestamp", "1700000000", "1700000001" },
    { "Map-Hash", HASH_ZERO, HASH_ONE },
    { "Map-Names", "0", "1" },
    { "Name", "example.com", "example.org" },
    { "Rebinder-Name", "example.net", "example.org" },
    { "Rebinder-Names", "example.net", "none" },
    { "Services", "https", "smtps;192.0.2.1:465" },
    { "SN", NULL, "99" },
    { "TID", NULL, "9" },
    { "Timestamp", NULL, "1800000000" },
    { "SK-Signature", NULL, "AAAA" },
    { "Rebinder-Signature", NULL, "AAAA" },
    { "Operator-Signature", NULL, "AAAA" },
    { "Signature", NULL, "AAAA" },
};

#define NVALUES  (sizeof(values) / sizeof(values[0]))


/* A complete entry of type: every field set, every signature by key. */
static sk_entry_t *
make_entry(sk_entry_type_t type, const sk_key_t *key)
{
    sk_entry_t  *e;
    sk_err_t     err;
    size_t       i;

    tu_assert_ok(sk_entry_new(&e, type, &err), &err);
    for (i = 0; i < NVALUES; i++) {
        if (values[i].value == NULL) {
            continue;
        }
        if (sk_entry_get(e, values[i].field)) {
            set_ok(e, values[i].field, values[i].value);
        } else if (sk_entry_set(e, values[i].field, values[i].value, NULL)
                   != 0)
        {
            continue;   /* not a field of type (an absent evidence field
                           reads NULL too, and is set) */
        }
    }
    if (sk_entry_get(e, "SK-Signature") != NULL) {
        tu_assert_ok(sk_entry_sign(e, SK_SIG_SK, key, &err), &err);
    }
    if (sk_entry_get(e, "Rebinder-Signature") != NULL) {
        tu_assert_ok(sk_entry_sign(e, SK_SIG_REBINDER, key, &err), &err);
    }
    if (sk_entry_get(e, "Operator-Signature") != NULL) {
        tu_assert_ok(sk_entry_sign(e, SK_SIG_OPERATOR, key, &err), &err);
    }
    tu_assert_ok(sk_entry_stamp(e, 3, 17, 1700000000, key, &err), &err);
    return e;
}


/* Built, formatted, parsed, formatted again: the same bytes, in order. */
static void
test_round_trip_every_type(void **state)
{
    sk_entry_t  *e, *p;
    char        *text, *again, *line, *next, prev[64];
    int          t;

    (void) state;
    for (t = 0; t < SK_ENTRY_NTYPES; t++) {
        e = make_entry((sk_entry_type_t) t, fx.key[0][0]);
        text = format_ok(e);
        p = parse_ok(text);
        assert_int_equal(sk_entry_type(p), t);
        again = format_ok(p);
        assert_string_equal(again, text);

        /* "<Type>: 1", then fields in strictly increasing byte order. */
        line = strchr(text, '\n') + 1;
        assert_int_equal(strncmp(text, sk_entry_type_name(t),
            strlen(sk_entry_type_name(t))), 0);
        prev[0] = '\0';
        for (; *line != '\n'; line = next + 1) {
            next = strchr(line, '\n');
            *strstr(line, ": ") = '\0';
            assert_true(strcmp(prev, line) < 0);
            snprintf(prev, sizeof(prev), "%s", line);
        }
        free(text);
        free(again);
        sk_entry_free(p);
        sk_entry_free(e);
    }
}


/* Does signature `sig` cover `field`?  Written from the rules, not from
 * the code's table. */
static int
expect_covered(sk_sig_field_t sig, const char *field)
{
    static const char *const stamp[] = { "SN", "TID", "Timestamp",
                                         "Signature" };
    size_t  i;

    if (sig == SK_SIG_TIMELINE) {
        return strcmp(field, "Signature") != 0;
    }
    for (i = 0; i < 4; i++) {
        if (strcmp(field, stamp[i]) == 0) {
            return 0;
        }
    }
    switch (sig) {
    case SK_SIG_SK:
        return strcmp(field, "SK-Signature") != 0
            && strcmp(field, "Rebinder-Signature") != 0;
    case SK_SIG_REBINDER:
        return strcmp(field, "Rebinder-Signature") != 0;
    default:
        return strcmp(field, "Operator-Signature") != 0;
    }
}


static const char *
other_value(const char *field, const sk_key_t *other_key)
{
    static char  keyb64[1024];
    size_t       i, n;
    const unsigned char *spki;

    if (strcmp(field, "Key") == 0) {
        spki = sk_key_get0_spki(other_key, &n);
        assert_true(sk_b64_encoded_len(n) < sizeof(keyb64));
        sk_b64_encode(keyb64, spki, n);
        return keyb64;
    }
    for (i = 0; i < NVALUES; i++) {
        if (strcmp(values[i].field, field) == 0) {
            return values[i].other;
        }
    }
    return NULL;
}


/* For each key type, entry type and signature field: the signature
 * verifies with its key and not with another; changing a field it
 * covers breaks it, changing one it does not cover leaves it good. */
static void
test_signature_coverage(void **state)
{
    static const sk_sig_field_t  sigs[] = {
        SK_SIG_TIMELINE, SK_SIG_SK, SK_SIG_REBINDER, SK_SIG_OPERATOR
    };
    static const char *const     sig_names[] = {
        "Signature", "SK-Signature", "Rebinder-Signature",
        "Operator-Signature"
    };
    sk_entry_t   *e, *t;
    const char   *alt;
    char         *text, *line, *next;
    size_t        a, s, checked = 0;
    int           type, rc;
    sk_err_t      err;

    (void) state;
    for (a = 0; a < 3; a++) {
        for (type = 0; type < SK_ENTRY_NTYPES; type++) {
            e = make_entry((sk_entry_type_t) type, fx.key[a][0]);
            text = format_ok(e);
            for (s = 0; s < 4; s++) {
                if (sk_entry_get(e, sig_names[s]) == NULL) {
                    tu_assert_err(sk_entry_verify(e, sigs[s], fx.key[a][0],
                        &err), &err, SK_ERR_USAGE, sig_names[s]);
                    continue;
                }
                verify_ok(e, sigs[s], fx.key[a][0]);
                tu_assert_err(sk_entry_verify(e, sigs[s], fx.key[a][1],
                    &err), &err, SK_ERR_SIGNATURE, sig_names[s]);

                for (line = strchr(text, '\n') + 1; *line != '\n';
                     line = next + 1)
                {
                    char  field[64];

                    next = strchr(line, '\n');
                    snprintf(field, sizeof(field), "%.*s",
                        (int) (strstr(line, ": ") - line), line);
                    /* Key-Type follows Key: it cannot change alone. */
                    if (strcmp(field, sig_names[s]) == 0
                        || strcmp(field, "Key-Type") == 0)
                    {
                        continue;
                    }
                    alt = other_value(field, fx.key[a][1]);
                    assert_non_null(alt);
                    t = sk_entry_dup(e);
                    assert_non_null(t);
                    set_ok(t, field, alt);
                    rc = sk_entry_verify(t, sigs[s], fx.key[a][0], &err);
                    if (rc != (expect_covered(sigs[s], field) ? -1 : 0)) {
                        fail_msg("%s of %s, %s changed: verify gave %d",
                            sig_names[s], sk_entry_type_name(type), field,
                            rc);
                    }
                    if (rc != 0) {
                        assert_int_equal(err.code, SK_ERR_SIGNATURE);
                    }
                    checked++;
                    sk_entry_free(t);
                }
            }
            free(text);
            sk_entry_free(e);
        }
    }
    assert_true(checked > 300);
}


static void
test_sign_rules(void **state)
{
    sk_entry_t  *e;
    sk_key_t    *ed = fx.key[0][0], *rsa = fx.key[2][0];
    sk_err_t     err;

    (void) state;
    /* Rebinder-Signature covers SK-Signature: the registrant signs first,
     * and the timeline stamps only what the registrant signed. */
    tu_assert_ok(sk_entry_new(&e, SK_ENTRY_REBIND, &err), &err);
    set_ok(e, "CA-Cert-Chain", CERT_ROOT);
    set_ok(e, "Includes-Subdomains", "0");
    set_ok(e, "Name", "example.com");
    set_ok(e, "Rebinder-Name", "example.net");
    set_ok(e, "Rebinder-Names", "none");
    set_ok(e, "Services", "all");
    tu_assert_err(sk_entry_sign(e, SK_SIG_REBINDER, ed, &err), &err,
        SK_ERR_USAGE, "field \"SK-Signature\": not signed yet");
    tu_assert_err(sk_entry_stamp(e, 1, 1, 1, ed, &err), &err,
        SK_ERR_USAGE, "field \"Rebinder-Signature\": not signed yet");
    tu_assert_err(sk_entry_sign(e, SK_SIG_OPERATOR, ed, &err), &err,
        SK_ERR_USAGE, "Rebind entries have no Operator-Signature");

    /* Key-Type set by hand must agree with the key that fills Key. */
    set_ok(e, "Key-Type", "RSA");
    tu_assert_err(sk_entry_sign(e, SK_SIG_SK, ed, &err), &err,
        SK_ERR_FORMAT, "field \"Key\": Key-Type \"RSA\" does not match");
    tu_assert_ok(sk_entry_sign(e, SK_SIG_SK, rsa, &err), &err);
    assert_string_equal(sk_entry_get(e, "Key-Type"), "RSA");
    /* Once Key is set, only its own key may sign SK-Signature. */
    tu_assert_err(sk_entry_sign(e, SK_SIG_SK, fx.key[2][1], &err), &err,
        SK_ERR_WRONG_SK, "field \"Key\": not the signing key");
    tu_assert_err(sk_entry_stamp(e, 1, 1, -1, ed, &err), &err,
        SK_ERR_USAGE, "field \"Timestamp\"");
    sk_entry_free(e);

    /* Checking a signature that is not there. */
    e = parse_ok("Incorporate: 1\nIncorporated-Hash: " HASH_ZERO "\n"
        "Incorporated-SN: 1\nIncorporated-TID: 2\nSN: N/A\n"
        "Signature: N/A\nTID: N/A\nTimestamp: N/A\n\n");
    tu_assert_err(sk_entry_verify(e, SK_SIG_TIMELINE, ed, &err), &err,
        SK_ERR_SIGNATURE, "field \"Signature\": not signed (N/A)");
    sk_entry_free(e);
}


static void
test_accessors(void **state)
{
    sk_entry_t      *e = parse_ok(DOC_BIND), *n;
    STACK_OF(X509)  *chain;
    sk_entry_type_t  type;
    sk_key_t        *key, *want = seed_key(0x11);
    const void      *spki;
    uint64_t         u;
    int64_t          t;
    char            *text;
    size_t           len;
    sk_err_t         err;

    (void) state;
    tu_assert_ok(sk_entry_sn(e, &u, &err), &err);
    assert_int_equal(u, 41);
    tu_assert_ok(sk_entry_tid(e, &u, &err), &err);
    assert_int_equal(u, 1);
    tu_assert_ok(sk_entry_timestamp(e, &t, &err), &err);
    assert_int_equal(t, 1700000000);
    assert_string_equal(sk_entry_name(e), "example.com");
    assert_null(sk_entry_get(e, "CA-Cert"));
    tu_assert_ok(sk_entry_key(&key, e, &err), &err);
    spki = sk_key_get0_spki(want, &len);
    assert_memory_equal(sk_key_get0_spki(key, &len), spki, len);
    sk_key_free(key);
    sk_key_free(want);

    /* The chain's certificates, decoded once by the parse, the end-entity
     * first, shared by a copy, replaced with the field. */
    assert_non_null(sk_entry_get0_ee(e));
    tu_assert_ok(sk_chain_decode(&chain, sk_entry_get(e, "CA-Cert-Chain"),
        strlen(sk_entry_get(e, "CA-Cert-Chain")), &err), &err);
    assert_int_equal(sk_X509_num(sk_entry_get0_chain(e)),
        sk_X509_num(chain));
    assert_int_equal(X509_cmp(sk_X509_value(sk_entry_get0_chain(e), 1),
        sk_X509_value(chain, 1)), 0);
    /* A CA certificate is decoded once for every chain that carries it;
     * the end-entity certificate, once for each entry. */
    n = parse_ok(DOC_BIND);
    assert_ptr_equal(sk_X509_value(sk_entry_get0_chain(n), 1),
        sk_X509_value(chain, 1));
    assert_ptr_not_equal(sk_entry_get0_ee(n), sk_entry_get0_ee(e));
    sk_entry_free(n);
    assert_int_equal(X509_cmp(sk_entry_get0_ee(e), sk_X509_value(chain, 0)),
        0);
    n = sk_entry_dup(e);
    assert_non_null(n);
    assert_ptr_equal(sk_entry_get0_ee(n), sk_entry_get0_ee(e));
    set_ok(n, "CA-Cert-Chain", CERT_ROOT);
    assert_int_equal(X509_cmp(sk_entry_get0_ee(n), sk_X509_value(chain, 1)),
        0);
    tu_assert_err(sk_entry_set(n, "CA-Cert-Chain", "MIIB," CERT_ROOT, &err),
        &err, SK_ERR_FORMAT, "field \"CA-Cert-Chain\": certificate 1: not "
        "a DER certificate");
    assert_int_equal(X509_cmp(sk_entry_get0_ee(n), sk_X509_value(chain, 1)),
        0);
    sk_entry_free(n);
    sk_X509_pop_free(chain, X509_free);

    tu_assert_err(sk_entry_set(e, "CA-Cert", CERT_ROOT, &err), &err,
        SK_ERR_USAGE, "field \"CA-Cert\": not a field of Bind entries");
    tu_assert_err(sk_entry_set(e, "Name", "N/A", &err), &err,
        SK_ERR_FORMAT, "field \"Name\": \"N/A\" is allowed only");
    tu_assert_err(sk_entry_set(e, "Name", "a.example\nSN: 1", &err), &err,
        SK_ERR_FORMAT, "field \"Name\": character 10 (0x0a) is a control");
    tu_assert_err(sk_entry_set(e, "Name", "example.net", &err), &err,
        SK_ERR_FORMAT, "field \"Name\": Rebinder-Names lists the entry's "
        "own Name");
    assert_string_equal(sk_entry_name(e), "example.com");
    set_ok(e, "SN", "N/A");
    assert_string_equal(sk_entry_get(e, "SN"), SK_NA);
    tu_assert_err(sk_entry_sn(e, &u, &err), &err, SK_ERR_NOT_FOUND,
        "field \"SN\": not stamped");
    sk_entry_free(e);

    e = parse_ok(DOC_ADD_ROOT_CA);
    assert_null(sk_entry_name(e));
    assert_null(sk_entry_get0_ee(e));
    tu_assert_err(sk_entry_key(&key, e, &err), &err, SK_ERR_USAGE,
        "Add-Root-CA entries have no Key");
    sk_entry_free(e);

    tu_assert_ok(sk_entry_new(&n, SK_ENTRY_CHANGE_SERVICES, &err), &err);
    assert_null(sk_entry_name(n));
    tu_assert_err(sk_entry_format(&text, &len, n, &err), &err,
        SK_ERR_USAGE, "field \"Name\": not set");
    tu_assert_err(sk_entry_timestamp(n, &t, &err), &err, SK_ERR_NOT_FOUND,
        "field \"Timestamp\"");
    sk_entry_free(n);
    tu_assert_err(sk_entry_new(&n, SK_ENTRY_NTYPES, &err), &err,
        SK_ERR_USAGE, "entry type");
    sk_entry_free(NULL);

    tu_assert_ok(sk_entry_type_parse(&type, "bind", &err), &err);
    assert_int_equal(type, SK_ENTRY_BIND);
    tu_assert_ok(sk_entry_type_parse(&type, "Change-Services", &err), &err);
    assert_int_equal(type, SK_ENTRY_CHANGE_SERVICES);
    tu_assert_ok(sk_entry_type_parse(&type, "remove-root-ca", &err), &err);
    assert_int_equal(type, SK_ENTRY_REMOVE_ROOT_CA);
    tu_assert_err(sk_entry_type_parse(&type, "binder", &err), &err,
        SK_ERR_FORMAT, "unknown entry type \"binder\"");
    assert_string_equal(sk_entry_type_name(SK_ENTRY_INCORPORATE),
        "Incorporate");
}


typedef struct {
    const char *base, *from, *to, *want;
} reject_t;

static const reject_t rejects[] = {
    /* structure */
    { DOC_UNBIND, "Last-Secure-Timestamp: 1700080000\nName: example.com\n",
      "Name: example.com\nLast-Secure-Timestamp: 1700080000\n",
      "line 2: field \"Name\": out of order (\"Last-Secure-Timestamp\" "
      "comes first)" },
    { DOC_UNBIND, "Name: example.com\n",
      "Name: example.com\nName: example.com\n",
      "line 4: field \"Name\": duplicate" },
    { DOC_UNBIND, "SN: 43\n", "Foo: 1\nSN: 43\n",
      "line 5: field \"Foo\": not a field of Unbind entries" },
    { DOC_UNBIND, "Name: example.com\n", "",
      "line 3: field \"Name\": missing (found \"SK-Signature\")" },
    { DOC_UNBIND, "Timestamp: 1700086400\n", "",
      "line 8: field \"Timestamp\": missing (the entry ends)" },
    { DOC_UNBIND, "Timestamp: 1700086400\n", "Timestamp: 1700086400\nZ: 1\n",
      "line 9: field \"Z\": not a field of Unbind entries" },
    { DOC_UNBIND, "Timestamp: 1700086400\n", "Timestamp: 1700086400\nSN: 4\n",
      "line 9: field \"SN\": duplicate" },
    { DOC_UNBIND, "Unbind: 1\n", "Unbind: 2\n",
      "line 1: entry header: Unbind version \"2\" (only 1 is known)" },
    { DOC_UNBIND, "Unbind: 1\n", "Unbound: 1\n",
      "line 1: entry header: unknown entry type \"Unbound\"" },
    { DOC_UNBIND, "Unbind: 1\n", "Unbind 1\n",
      "line 1: entry header: not \"<Type>: 1\"" },
    { DOC_UNBIND, "Name: example.com", "Name:example.com",
      "line 3: not \"Field: value\" (expected field \"Name\")" },
    { DOC_UNBIND, "Timestamp: 1700086400\n\n", "Timestamp: 1700086400\n",
      "line 9: input ends (expected the blank line ending the entry)" },
    { DOC_UNBIND, "Timestamp: 1700086400\n\n", "Timestamp: 17000",
      "line 8: no \\n at the end (entry truncated; expected field "
      "\"Timestamp\")" },
    { DOC_UNBIND, "Timestamp: 1700086400\n\n", "Timestamp: 1700086400\n\nX",
      "line 10: bytes after the blank line ending the entry" },
    /* bytes */
    { DOC_UNBIND, "Name: example.com\n", "Name: example.com\r\n",
      "line 3: field \"Name\": character 12 is a CR" },
    { DOC_UNBIND, "Unbind: 1\n", "Unbind: 1\r\n",
      "line 1: entry header: character 10 is a CR" },
    { DOC_UNBIND, "Name: example.com", "Name: exampl\xc3\xa9.com",
      "line 3: field \"Name\": character 7 (0xc3) is not 7-bit ASCII" },
    { DOC_UNBIND, "Name: example.com", "Name: exa\x01mple.com",
      "line 3: field \"Name\": character 4 (0x01) is a control character" },
    { DOC_UNBIND, "Name: example.com", "N\tame: example.com",
      "line 3: field name (expected field \"Name\"): character 2 (0x09)" },
    { DOC_UNBIND, "Name: example.com", "Name: example.com: x",
      "line 3: field \"Name\": value contains \": \"" },
    /* values */
    { DOC_UNBIND, "Name: example.com", "Name: N/A",
      "line 3: field \"Name\": \"N/A\" is allowed only in stamp and "
      "signature fields" },
    { DOC_UNBIND, "Name: example.com", "Name: ",
      "line 3: field \"Name\": name: empty" },
    { DOC_UNBIND, "Last-Secure-Timestamp: 1700080000",
      "Last-Secure-Timestamp: 17000x0000",
      "line 2: field \"Last-Secure-Timestamp\": character 6 is not a "
      "decimal digit" },
    { DOC_UNBIND, "Last-Secure-Timestamp: 1700080000",
      "Last-Secure-Timestamp: -1",
      "line 2: field \"Last-Secure-Timestamp\": character 1 is not a "
      "decimal digit" },
    { DOC_UNBIND, "SN: 43", "SN: 043", "line 5: field \"SN\": leading zero" },
    { DOC_UNBIND, "SN: 43", "SN: 18446744073709551616",
      "line 5: field \"SN\": larger than 18446744073709551615" },
    { DOC_UNBIND, "Timestamp: 1700086400", "Timestamp: 9223372036854775808",
      "line 8: field \"Timestamp\": larger than 9223372036854775807" },
    { DOC_UNBIND, "SK-Signature: t5hj", "SK-Signature: t5+j",
      "line 4: field \"SK-Signature\": base64: character 3" },
    { DOC_UNBIND, "\nSignature: ", "\nSignature: =",
      "line 6: field \"Signature\": base64: character 1 is '=' padding" },
    { DOC_BIND, "Key-Type: ECC", "Key-Type: RSA",
      "line 5: field \"Key-Type\": Key-Type \"RSA\" does not match the ECC "
      "key in Key" },
    { DOC_BIND, "Key-Type: ECC", "Key-Type: DSA",
      "line 5: field \"Key-Type\": not ECC or RSA" },
    { DOC_BIND, "Key: MCow", "Key: AAAAMCow",
      "line 4: field \"Key\": not a DER SubjectPublicKeyInfo" },
    { DOC_BIND, "Key: MCowBQYDK2VwAyEA0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjM"
      "sl3hzc", "Key: N/A",
      "line 4: field \"Key\": \"N/A\" is allowed only" },
    { DOC_BIND, "example.net,example.org", "example.net,example.com",
      "line 7: field \"Rebinder-Names\": Rebinder-Names lists the entry's "
      "own Name \"example.com\"" },
    { DOC_BIND, "example.net,example.org", "example.net,example.net",
      "line 7: field \"Rebinder-Names\": \"example.net\" is listed twice" },
    { DOC_BIND, "example.net,example.org", "example.net,Example.org",
      "line 7: field \"Rebinder-Names\": name 2: name: label 1" },
    { DOC_BIND, "example.net,example.org", "example.net,",
      "line 7: field \"Rebinder-Names\": name 2 is empty" },
    { DOC_BIND, "Includes-Subdomains: 0", "Includes-Subdomains: 2",
      "line 3: field \"Includes-Subdomains\": not 0 or 1" },
    { DOC_BIND, "," CERT_ROOT, ",," CERT_ROOT,
      "line 2: field \"CA-Cert-Chain\": certificate 2 is empty" },
    { DOC_BIND, "," CERT_ROOT, ",MIIB",
      "line 2: field \"CA-Cert-Chain\": certificate 2: not a DER "
      "certificate" },
    /* certificates are decoded once every other field passed: a bad
     * field after a bad certificate is the one named */
    { DOC_BIND, "," CERT_ROOT "\nIncludes-Subdomains: 0",
      ",MIIB\nIncludes-Subdomains: 2",
      "line 3: field \"Includes-Subdomains\": not 0 or 1" },
    { DOC_BIND, "Name: example.com", "Name: Example.com",
      "line 6: field \"Name\": name: label 1" },
    /* evidence: exactly one of CA-Cert-Chain and DNSSEC-Chain */
    { DOC_BIND, "\nIncludes-Subdomains", "\nDNSSEC-Chain: AAAA\n"
      "Includes-Subdomains", "Bind: want exactly one of \"CA-Cert-Chain\" "
      "and \"DNSSEC-Chain\", found 2" },
    { DOC_BIND, "CA-Cert-Chain: " CERT_LEAF1 "," CERT_ROOT "\n", "",
      "Bind: want exactly one of \"CA-Cert-Chain\" and \"DNSSEC-Chain\", "
      "found 0" },
    { DOC_BIND, "CA-Cert-Chain: " CERT_LEAF1 "," CERT_ROOT "\n"
      "Includes-Subdomains: 0\n", "Includes-Subdomains: 0\n"
      "DNSSEC-Chain: AAAA\n", "line 3: field \"DNSSEC-Chain\": out of order "
      "(it comes right after \"CA-Cert-Chain\")" },
    { DOC_BIND, "CA-Cert-Chain: " CERT_LEAF1 "," CERT_ROOT, "DNSSEC-Chain: "
      "AA+A", "line 2: field \"DNSSEC-Chain\": base64: character 3" },
    { DOC_BIND, "Services: https;", "Services: https:0;",
      "line 10: field \"Services\": services" },
    { DOC_REMOVE_ROOT_CA, "CA-Cert-Hash: lo2M",
      "CA-Cert-Hash: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,lo2M",
      "line 2: field \"CA-Cert-Hash\": base64: character 43" },
    { DOC_REMOVE_ROOT_CA, "CA-Cert-Hash: lo2MkpYANm7w5cw3Sae4XaOhIJam4Nfj4"
      "MlZo5o7A7A", "CA-Cert-Hash: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
      "line 2: field \"CA-Cert-Hash\": 31 bytes, not the 32 of a SHA-256" },
    { DOC_REMOVE_ROOT_CA, "CA-Serial: 8", "CA-Serial: 65536",
      "line 3: field \"CA-Serial\": larger than 65535" },
    { DOC_ADD_ROOT_CA, "CA-Cert: MIIB", "CA-Cert: AAAAMIIB",
      "line 2: field \"CA-Cert\": not a DER certificate" },
    { DOC_INCORPORATE, "Incorporated-TID: 1", "Incorporated-TID: 1 ",
      "line 4: field \"Incorporated-TID\": character 2 is not a decimal "
      "digit" },
};


static void
test_rejections(void **state)
{
    sk_entry_t  *e = NULL;
    char        *text;
    size_t       i;
    sk_err_t     err;

    (void) state;
    for (i = 0; i < sizeof(rejects) / sizeof(rejects[0]); i++) {
        text = subst(rejects[i].base, rejects[i].from, rejects[i].to);
        sk_err_clear(&err);
        if (sk_entry_parse(&e, text, strlen(text), &err) != -1
            || err.code != SK_ERR_FORMAT
            || strstr(err.msg, rejects[i].want) == NULL)
        {
            fail_msg("case %zu: want \"%s\", got %s \"%s\"", i,
                rejects[i].want, sk_err_str(err.code), err.msg);
        }
        assert_null(e);
        free(text);
    }
}


/* A Bind with DNSSEC-Chain for evidence: parsed, CA-Cert-Chain absent
 * (no line, not "N/A"), the same text back; a chain past
 * SK_DNSSEC_CHAIN_MAX refused. */
static void
test_dnssec_evidence(void **state)
{
    sk_entry_t  *e;
    sk_err_t     err;
    char        *text, *big, *out;
    size_t       len, n = (SK_DNSSEC_CHAIN_MAX + 3) / 3 * 4;

    (void) state;
    text = subst(DOC_BIND, "CA-Cert-Chain: " CERT_LEAF1 "," CERT_ROOT,
        "DNSSEC-Chain: AAAA");
    tu_assert_ok(sk_entry_parse(&e, text, strlen(text), &err), &err);
    assert_null(sk_entry_get(e, "CA-Cert-Chain"));
    assert_string_equal(sk_entry_get(e, "DNSSEC-Chain"), "AAAA");
    assert_null(sk_entry_get0_ee(e));
    tu_assert_ok(sk_entry_format(&out, &len, e, &err), &err);
    assert_string_equal(out, text);
    free(out);
    sk_entry_free(e);
    free(text);
    /* base64url of SK_DNSSEC_CHAIN_MAX + 1 or 2 bytes */
    big = malloc(n + sizeof("DNSSEC-Chain: "));
    assert_non_null(big);
    strcpy(big, "DNSSEC-Chain: ");
    memset(big + strlen(big), 'A', n);
    big[n + sizeof("DNSSEC-Chain: ") - 1] = '\0';
    text = subst(DOC_BIND, "CA-Cert-Chain: " CERT_LEAF1 "," CERT_ROOT, big);
    assert_int_equal(sk_entry_parse(&e, text, strlen(text), &err), -1);
    assert_non_null(strstr(err.msg, "line 2: field \"DNSSEC-Chain\": chain "
        "too big"));
    free(text);
    free(big);
}


/* The edges the rejections stop just short of are accepted. */
static void
test_accepted_edges(void **state)
{
    sk_entry_t  *e;
    char        *text, *t2;

    (void) state;
    text = subst(DOC_UNBIND, "SN: 43", "SN: 18446744073709551615");
    t2 = subst(text, "Timestamp: 1700086400", "Timestamp: 9223372036854775807");
    e = parse_ok(t2);
    sk_entry_free(e);
    free(text);
    free(t2);
    text = subst(DOC_UNBIND, "Last-Secure-Timestamp: 1700080000",
        "Last-Secure-Timestamp: 0");
    e = parse_ok(text);
    sk_entry_free(e);
    free(text);
    text = subst(DOC_BIND, "example.net,example.org", "none");
    e = parse_ok(text);
    sk_entry_free(e);
    free(text);
}


static void
test_parse_next_stream(void **state)
{
    static const char  stream[] = DOC_BIND DOC_UNBIND DOC_INCORPORATE;
    static const size_t  lens[] = {
        sizeof(DOC_BIND) - 1, sizeof(DOC_UNBIND) - 1,
        sizeof(DOC_INCORPORATE) - 1
    };
    sk_entry_t  *e;
    size_t       off = 0, used, i;
    sk_err_t     err;

    (void) state;
    for (i = 0; i < 3; i++) {
        tu_assert_ok(sk_entry_parse_next(&e, &used, stream + off,
            sizeof(stream) - 1 - off, &err), &err);
        assert_int_equal(used, lens[i]);
        off += used;
        sk_entry_free(e);
    }
    assert_int_equal(off, sizeof(stream) - 1);
    tu_assert_err(sk_entry_parse_next(&e, &used, stream + off, 0, &err),
        &err, SK_ERR_FORMAT, "line 1: input ends (expected an entry header)");
    /* A whole entry cannot be parsed alone out of the stream. */
    tu_assert_err(sk_entry_parse(&e, stream, sizeof(stream) - 1, &err),
        &err, SK_ERR_FORMAT, "line 15: bytes after the blank line");
}


static void
test_too_long(void **state)
{
    char        *big;
    size_t       n = SK_ENTRY_MAX + 16, pre;
    sk_entry_t  *e;
    sk_err_t     err;

    (void) state;
    big = malloc(n);
    assert_non_null(big);
    pre = strlen("Add-Root-CA: 1\nCA-Cert: ");
    memcpy(big, "Add-Root-CA: 1\nCA-Cert: ", pre);
    memset(big + pre, 'A', n - pre);
    tu_assert_err(sk_entry_parse(&e, big, n, &err), &err, SK_ERR_FORMAT,
        "line 2: entry longer than 1048576 bytes (expected field "
        "\"CA-Cert\")");
    free(big);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_docs_bind_rebuilt),
        cmocka_unit_test(test_docs_examples),
        cmocka_unit_test(test_hash_incorporated),
        cmocka_unit_test(test_map_root_example),
        cmocka_unit_test(test_signed_bytes_literal),
        cmocka_unit_test(test_round_trip_every_type),
        cmocka_unit_test(test_signature_coverage),
        cmocka_unit_test(test_sign_rules),
        cmocka_unit_test(test_accessors),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_accepted_edges),
        cmocka_unit_test(test_dnssec_evidence),
        cmocka_unit_test(test_parse_next_stream),
        cmocka_unit_test(test_too_long),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
