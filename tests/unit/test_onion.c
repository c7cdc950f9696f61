/*
 * test_onion.c -- Tor v3 onion addresses and HiddenServiceDir files.
 *
 * Vectors: RFC 8032 test 1 (seed 9d61..., public d75a...), whose address
 * "25njq...5sid.onion" is the one Tor's own test suite (test_hs_common.c,
 * test_build_address) expects, also recomputed here by a second method;
 * and a key pair that tor 0.4.9 generated itself, with the hostname it
 * wrote, to check the derivation of a public key from an expanded key.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <openssl/evp.h>

#include "testutil.h"

static const char rfc_seed_hex[] =
    "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
static const char rfc_pub_hex[] =
    "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
/* Clamped SHA-512 of rfc_seed (computed with Python's hashlib). */
static const char rfc_expanded_hex[] =
    "307c83864f2833cb427a2ef1c00a013cfdff2768d980c0a3a520f006904de94f"
    "9b4f0afe280b746a778684e75442502057b7473a03f08f96f5a38e9287e01f8f";
static const char rfc_addr[] =
    "25njqamcweflpvkl73j4szahhihoc4xt3ktcgjnpaingr5yhkenl5sid.onion";

/* Written by tor 0.4.9.11 into an empty HiddenServiceDir. */
static const char tor_expanded_hex[] =
    "c00d5bbb1d69efe7ae76a34572d5ab456c829374dcb44b603d55e2e667a10b58"
    "b319be728e71ae737146820f83b98448e4ae32d51fb60792e86287db5ed71786";
static const char tor_pub_hex[] =
    "7f1b02b5a0f153c1a404bc544f8df50573150ad5b0d8426ec861a9d923629b5f";
static const char tor_addr[] =
    "p4nqfnna6fj4djaexrke7dpvavzrkcwvwdmee3wimgu5si3ctnpuhgyd.onion";

static const char secret_hdr[32] = "== ed25519v1-secret: type0 ==";
static const char public_hdr[32] = "== ed25519v1-public: type0 ==";


static void
hex2bin(unsigned char *out, const char *hex, size_t len)
{
    size_t i;
    int    ok;

    assert_int_equal(strlen(hex), 2 * len);
    for (i = 0; i < len; i++) {
        ok = sscanf(hex + 2 * i, "%2hhx", &out[i]);
        assert_int_equal(ok, 1);
    }
}


/* The second method: base32 one bit at a time, SHA3 via EVP_Q_digest. */
static void
slow_address(char out[SK_ONION_ADDR_LEN + 1], const unsigned char pub[32],
    unsigned char version)
{
    static const char  alpha[] = "abcdefghijklmnopqrstuvwxyz234567";
    unsigned char      in[15 + 32 + 1], md[32], raw[35];
    size_t             i, j, bit, mdlen;
    unsigned           v;

    memcpy(in, ".onion checksum", 15);
    memcpy(in + 15, pub, 32);
    in[47] = version;
    assert_int_equal(EVP_Q_digest(NULL, "SHA3-256", NULL, in, sizeof(in),
        md, &mdlen), 1);
    memcpy(raw, pub, 32);
    memcpy(raw + 32, md, 2);
    raw[34] = version;
    for (i = 0; i < 56; i++) {
        v = 0;
        for (j = 0; j < 5; j++) {
            bit = 5 * i + j;
            v = (v << 1) | ((raw[bit / 8] >> (7 - bit % 8)) & 1);
        }
        out[i] = alpha[v];
    }
    strcpy(out + 56, ".onion");
}


static sk_key_t *
key_from_seed(const char *seed_hex)
{
    unsigned char  seed[32];
    EVP_PKEY      *pkey;
    sk_key_t      *key;
    sk_err_t       err;

    hex2bin(seed, seed_hex, 32);
    pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    assert_non_null(pkey);
    tu_assert_ok(sk_key_from_pkey(&key, pkey, &err), &err);
    EVP_PKEY_free(pkey);
    return key;
}


static void
write_bytes(const char *path, const void *buf, size_t len, mode_t mode)
{
    FILE *f = fopen(path, "wb");

    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}


static void
assert_file(const char *dir, const char *name, const void *want, size_t len,
    mode_t mode)
{
    char        *path = tu_path(dir, name), *got;
    size_t       gotlen;
    struct stat  st;
    sk_err_t     err;

    tu_assert_ok(sk_file_read(&got, &gotlen, path, 1 << 16, &err), &err);
    assert_int_equal(gotlen, len);
    assert_memory_equal(got, want, len);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, mode);
    free(got);
    free(path);
}


/* A HiddenServiceDir as tor would leave it, from raw key bytes. */
static char *
tor_dir(const char *expanded_hex, const char *pub_hex)
{
    unsigned char  secret[96], public[64];
    char          *dir = tu_tmpdir(), *p;

    memcpy(secret, secret_hdr, 32);
    hex2bin(secret + 32, expanded_hex, 64);
    memcpy(public, public_hdr, 32);
    hex2bin(public + 32, pub_hex, 32);
    p = tu_path(dir, "hs_ed25519_secret_key");
    write_bytes(p, secret, sizeof(secret), 0600);
    free(p);
    p = tu_path(dir, "hs_ed25519_public_key");
    write_bytes(p, public, sizeof(public), 0600);
    free(p);
    return dir;
}


static void
test_address_vector(void **state)
{
    unsigned char  pub[32];
    char           addr[SK_ONION_ADDR_LEN + 1], slow[SK_ONION_ADDR_LEN + 1];
    sk_key_t      *key;
    sk_err_t       err;

    (void) state;
    hex2bin(pub, rfc_pub_hex, 32);
    sk_onion_address(addr, pub);
    assert_string_equal(addr, rfc_addr);
    slow_address(slow, pub, 3);
    assert_string_equal(slow, rfc_addr);

    hex2bin(pub, tor_pub_hex, 32);
    sk_onion_address(addr, pub);
    assert_string_equal(addr, tor_addr);

    key = key_from_seed(rfc_seed_hex);
    tu_assert_ok(sk_onion_address_from_key(addr, key, &err), &err);
    assert_string_equal(addr, rfc_addr);
    sk_key_free(key);
}


static void
test_address_from_non_ed25519(void **state)
{
    char      addr[SK_ONION_ADDR_LEN + 1];
    sk_key_t *key;
    sk_err_t  err;

    (void) state;
    tu_assert_ok(sk_key_generate(&key, SK_KEY_P256, 0, &err), &err);
    tu_assert_err(sk_onion_address_from_key(addr, key, &err), &err,
        SK_ERR_USAGE, "onion address: not an Ed25519 key");
    sk_key_free(key);
}


static void
test_check(void **state)
{
    unsigned char  pub[32];
    char           a[SK_ONION_ADDR_LEN + 1];
    sk_err_t       err;

    (void) state;
    tu_assert_ok(sk_onion_address_check(rfc_addr, strlen(rfc_addr), &err),
        &err);
    tu_assert_ok(sk_onion_address_check(tor_addr, strlen(tor_addr), &err),
        &err);

    tu_assert_err(sk_onion_address_check(rfc_addr, 61, &err), &err,
        SK_ERR_FORMAT, "length 61, want 62");
    tu_assert_err(sk_onion_address_check("x.onion", 7, &err), &err,
        SK_ERR_FORMAT, "length 7");

    strcpy(a, rfc_addr);
    memcpy(a + 56, ".onien", 6);
    tu_assert_err(sk_onion_address_check(a, 62, &err), &err,
        SK_ERR_FORMAT, "does not end in \".onion\"");

    strcpy(a, rfc_addr);
    a[3] = 'Q';
    tu_assert_err(sk_onion_address_check(a, 62, &err), &err,
        SK_ERR_FORMAT, "character 4 (0x51) is not lowercase base32");
    a[3] = '1';
    tu_assert_err(sk_onion_address_check(a, 62, &err), &err,
        SK_ERR_FORMAT, "character 4 (0x31)");
    a[3] = '\0';
    tu_assert_err(sk_onion_address_check(a, 62, &err), &err,
        SK_ERR_FORMAT, "character 4 (0x00)");

    /* One key character changed: the checksum catches it. */
    strcpy(a, rfc_addr);
    a[0] = '3';
    tu_assert_err(sk_onion_address_check(a, 62, &err), &err,
        SK_ERR_FORMAT, "checksum does not match");
    /* The last character holds only version bits: "d" is 3, "e" is 4. */
    strcpy(a, rfc_addr);
    a[55] = 'e';
    tu_assert_err(sk_onion_address_check(a, 62, &err), &err,
        SK_ERR_FORMAT, "version 4, want 3");

    /* A version-4 address with its own valid checksum is still refused. */
    hex2bin(pub, rfc_pub_hex, 32);
    slow_address(a, pub, 4);
    tu_assert_err(sk_onion_address_check(a, 62, &err), &err,
        SK_ERR_FORMAT, "version 4, want 3");
}


static void
test_write_dir(void **state)
{
    unsigned char  secret[96], public[64], pub[32];
    char          *tmp = tu_tmpdir(), *dir = tu_path(tmp, "hs");
    char           host[SK_ONION_ADDR_LEN + 2];
    char           addr[SK_ONION_ADDR_LEN + 1];
    struct stat    st;
    sk_key_t      *key = key_from_seed(rfc_seed_hex);
    sk_err_t       err;

    (void) state;
    tu_assert_ok(sk_onion_write_dir(dir, key, (uid_t) -1, (gid_t) -1, &err),
        &err);
    assert_int_equal(lstat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);

    memcpy(secret, secret_hdr, 32);
    hex2bin(secret + 32, rfc_expanded_hex, 64);
    memcpy(public, public_hdr, 32);
    hex2bin(public + 32, rfc_pub_hex, 32);
    snprintf(host, sizeof(host), "%s\n", rfc_addr);
    assert_file(dir, "hs_ed25519_secret_key", secret, 96, 0600);
    assert_file(dir, "hs_ed25519_public_key", public, 64, 0600);
    assert_file(dir, "hostname", host, 63, 0600);

    tu_assert_ok(sk_onion_read_hostname(addr, dir, &err), &err);
    assert_string_equal(addr, rfc_addr);
    tu_assert_ok(sk_onion_read_public(pub, dir, &err), &err);
    assert_memory_equal(pub, public + 32, 32);

    /* Never overwritten, and the refusal names the file. */
    tu_assert_err(sk_onion_write_dir(dir, key, (uid_t) -1, (gid_t) -1, &err),
        &err, SK_ERR_EXISTS, "hs/hs_ed25519_secret_key: already exists");
    assert_file(dir, "hs_ed25519_secret_key", secret, 96, 0600);

    sk_key_free(key);
    free(dir);
    tu_rmtree(tmp);
}


static void
test_write_dir_existing(void **state)
{
    char        *dir = tu_tmpdir(), *p;
    struct stat  st;
    sk_key_t    *key = key_from_seed(rfc_seed_hex);
    sk_err_t     err;

    (void) state;
    /* An existing, too open, empty dir is used and made 0700. */
    assert_int_equal(chmod(dir, 0755), 0);
    tu_assert_ok(sk_onion_write_dir(dir, key, (uid_t) -1, (gid_t) -1, &err),
        &err);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);

    /* Only a hostname there: refused, and no key file left behind. */
    p = tu_path(dir, "hs_ed25519_secret_key");
    assert_int_equal(unlink(p), 0);
    free(p);
    p = tu_path(dir, "hs_ed25519_public_key");
    assert_int_equal(unlink(p), 0);
    tu_assert_err(sk_onion_write_dir(dir, key, (uid_t) -1, (gid_t) -1, &err),
        &err, SK_ERR_EXISTS, "/hostname: already exists, refusing");
    assert_int_equal(lstat(p, &st), -1);
    free(p);

    /* A file where the dir should be. */
    p = tu_path(dir, "hostname");
    tu_assert_err(sk_onion_write_dir(p, key, (uid_t) -1, (gid_t) -1, &err),
        &err, SK_ERR_EXISTS, "hostname: exists and is not a directory");
    free(p);

    sk_key_free(key);
    tu_rmtree(dir);
}


static void
test_write_dir_bad_key(void **state)
{
    char                *tmp = tu_tmpdir(), *dir = tu_path(tmp, "hs");
    const unsigned char *spki;
    sk_key_t            *key, *pub;
    sk_err_t             err;
    size_t               len;

    (void) state;
    tu_assert_ok(sk_key_generate(&key, SK_KEY_P256, 0, &err), &err);
    tu_assert_err(sk_onion_write_dir(dir, key, (uid_t) -1, (gid_t) -1, &err),
        &err, SK_ERR_USAGE, "onion key: not an Ed25519 private key");
    sk_key_free(key);

    /* The public half alone cannot make a HiddenServiceDir. */
    key = key_from_seed(rfc_seed_hex);
    spki = sk_key_get0_spki(key, &len);
    tu_assert_ok(sk_key_from_spki(&pub, spki, len, &err), &err);
    tu_assert_err(sk_onion_write_dir(dir, pub, (uid_t) -1, (gid_t) -1, &err),
        &err, SK_ERR_USAGE, "onion key: not an Ed25519 private key");
    assert_int_equal(access(dir, F_OK), -1);
    sk_key_free(pub);
    sk_key_free(key);
    free(dir);
    tu_rmtree(tmp);
}


static void
test_write_dir_chown(void **state)
{
    char        *tmp, *dir, *p;
    struct stat  st;
    sk_key_t    *key;
    sk_err_t     err;

    (void) state;
    if (geteuid() != 0) {
        skip();
    }
    tmp = tu_tmpdir();
    dir = tu_path(tmp, "hs");
    key = key_from_seed(rfc_seed_hex);
    tu_assert_ok(sk_onion_write_dir(dir, key, 65534, 65533, &err), &err);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_gid, 65533);
    p = tu_path(dir, "hs_ed25519_secret_key");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_gid, 65533);
    free(p);
    sk_key_free(key);
    free(dir);
    tu_rmtree(tmp);
}


/* Both signs of x occur: derive the public key of many fresh keys. */
static void
test_read_public_many(void **state)
{
    unsigned char  want[32], got[32];
    char          *tmp = tu_tmpdir(), name[16], *dir, *p;
    sk_key_t      *key;
    sk_err_t       err;
    int            i, odd = 0;

    (void) state;
    for (i = 0; i < 48; i++) {
        snprintf(name, sizeof(name), "hs%d", i);
        dir = tu_path(tmp, name);
        tu_assert_ok(sk_key_generate(&key, SK_KEY_ED25519, 0, &err), &err);
        tu_assert_ok(sk_key_ed25519_public(want, key, &err), &err);
        tu_assert_ok(sk_onion_write_dir(dir, key, (uid_t) -1, (gid_t) -1,
            &err), &err);
        /* Without the public file, from the secret key alone. */
        p = tu_path(dir, "hs_ed25519_public_key");
        assert_int_equal(unlink(p), 0);
        free(p);
        tu_assert_ok(sk_onion_read_public(got, dir, &err), &err);
        assert_memory_equal(got, want, 32);
        odd += (want[31] & 0x80) != 0;
        sk_key_free(key);
        free(dir);
    }
    assert_true(odd > 0 && odd < 48);
    tu_rmtree(tmp);
}


static void
test_read_public_tor(void **state)
{
    unsigned char  want[32], got[32];
    char           addr[SK_ONION_ADDR_LEN + 1];
    char          *dir = tor_dir(tor_expanded_hex, tor_pub_hex);
    sk_err_t       err;

    (void) state;
    hex2bin(want, tor_pub_hex, 32);
    tu_assert_ok(sk_onion_read_public(got, dir, &err), &err);
    assert_memory_equal(got, want, 32);
    sk_onion_address(addr, got);
    assert_string_equal(addr, tor_addr);
    tu_rmtree(dir);
}


static void
test_read_public_bad(void **state)
{
    unsigned char  pub[32], buf[96];
    char          *dir, *p;
    sk_err_t       err;

    (void) state;
    /* A mismatched pair: tor's secret key, RFC 8032's public key. */
    dir = tor_dir(tor_expanded_hex, rfc_pub_hex);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err,
        SK_ERR_KEY_MISMATCH,
        "hs_ed25519_public_key: not the public half of hs_ed25519_secret_key");

    /* The public file with a wrong header. */
    p = tu_path(dir, "hs_ed25519_public_key");
    memcpy(buf, secret_hdr, 32);
    hex2bin(buf + 32, tor_pub_hex, 32);
    write_bytes(p, buf, 64, 0600);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err,
        SK_ERR_FORMAT, "hs_ed25519_public_key: header is not");
    free(p);

    /* The secret file: short, wrong header, unclamped, missing. */
    p = tu_path(dir, "hs_ed25519_secret_key");
    memcpy(buf, secret_hdr, 32);
    hex2bin(buf + 32, tor_expanded_hex, 64);
    write_bytes(p, buf, 95, 0600);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err,
        SK_ERR_FORMAT, "hs_ed25519_secret_key: 95 bytes, want 96");
    buf[3] = 'E';
    write_bytes(p, buf, 96, 0600);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err,
        SK_ERR_FORMAT, "hs_ed25519_secret_key: header is not \"== ed25519v1-"
        "secret: type0 ==\"");
    buf[3] = 'e';
    buf[32] |= 1;
    write_bytes(p, buf, 96, 0600);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err,
        SK_ERR_FORMAT, "secret scalar is not clamped");
    buf[32] &= 0xf8;
    buf[63] |= 0x80;
    write_bytes(p, buf, 96, 0600);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err,
        SK_ERR_FORMAT, "secret scalar is not clamped");
    assert_int_equal(unlink(p), 0);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err,
        SK_ERR_SYSTEM, "hs_ed25519_secret_key: cannot open");
    free(p);
    tu_rmtree(dir);
}


/* The secret key is private like every other key; the public key and
 * hostname may be 0644, as tor writes them. */
static void
test_read_public_perm(void **state)
{
    unsigned char  pub[32];
    char          *dir = tor_dir(tor_expanded_hex, tor_pub_hex), *p, *q;
    sk_err_t       err;

    (void) state;
    p = tu_path(dir, "hs_ed25519_public_key");
    assert_int_equal(chmod(p, 0644), 0);
    free(p);
    tu_assert_ok(sk_onion_read_public(pub, dir, &err), &err);

    p = tu_path(dir, "hs_ed25519_secret_key");
    assert_int_equal(chmod(p, 0644), 0);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err, SK_ERR_PERM,
        "hs_ed25519_secret_key: permissions 0644 are too open");
    assert_int_equal(chmod(p, 0640), 0);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err, SK_ERR_PERM,
        "hs_ed25519_secret_key: permissions 0640 are too open");

    /* A symlink to a private copy is not followed. */
    q = tu_path(dir, "copy");
    assert_int_equal(chmod(p, 0600), 0);
    assert_int_equal(rename(p, q), 0);
    assert_int_equal(symlink(q, p), 0);
    tu_assert_err(sk_onion_read_public(pub, dir, &err), &err, SK_ERR_PERM,
        "hs_ed25519_secret_key: not a regular file");
    free(q);
    free(p);
    tu_rmtree(dir);
}


static void
test_read_hostname_bad(void **state)
{
    char   addr[SK_ONION_ADDR_LEN + 1], buf[80];
    char  *dir = tu_tmpdir(), *p = tu_path(dir, "hostname");
    sk_err_t err;

    (void) state;
    tu_assert_err(sk_onion_read_hostname(addr, dir, &err), &err,
        SK_ERR_SYSTEM, "hostname: cannot open");
    write_bytes(p, rfc_addr, 62, 0600);
    tu_assert_err(sk_onion_read_hostname(addr, dir, &err), &err,
        SK_ERR_FORMAT, "want one address and a newline (63 bytes), got 62");
    snprintf(buf, sizeof(buf), "%s\n", rfc_addr);
    buf[10] = 'a' == buf[10] ? 'b' : 'a';
    write_bytes(p, buf, 63, 0600);
    tu_assert_err(sk_onion_read_hostname(addr, dir, &err), &err,
        SK_ERR_FORMAT, "hostname: onion address: checksum does not match");
    free(p);
    tu_rmtree(dir);
}


static void
test_torrc(void **state)
{
    static const sk_onion_port_t ports[] = {
        { 443, "127.0.0.1:8443" }, { 80, NULL }, { 25, "unix:/run/m.sock" }
    };
    static const char want[] =
        "HiddenServiceDir /var/lib/tor/sk\n"
        "HiddenServicePort 443 127.0.0.1:8443\n"
        "HiddenServicePort 80 127.0.0.1:80\n"
        "HiddenServicePort 25 unix:/run/m.sock\n";
    static const char want_quoted[] =
        "HiddenServiceDir \"/srv/my \\\"tor\\\" #1\"\n"
        "HiddenServicePort 80 127.0.0.1:80\n";
    sk_onion_port_t  bad;
    char            *dir = tu_tmpdir(), *p = tu_path(dir, "hs.torrc");
    sk_err_t         err;

    (void) state;
    tu_assert_ok(sk_onion_write_torrc(p, "/var/lib/tor/sk", ports, 3, &err),
        &err);
    assert_file(dir, "hs.torrc", want, strlen(want), 0644);
    /* Atomic replace: a second write succeeds. */
    tu_assert_ok(sk_onion_write_torrc(p, "/srv/my \"tor\" #1", ports + 1, 1,
        &err), &err);
    assert_file(dir, "hs.torrc", want_quoted, strlen(want_quoted), 0644);

    tu_assert_err(sk_onion_write_torrc(p, "/x", ports, 0, &err), &err,
        SK_ERR_USAGE, "no HiddenServicePort");
    bad.virtport = 0;
    bad.target = NULL;
    tu_assert_err(sk_onion_write_torrc(p, "/x", &bad, 1, &err), &err,
        SK_ERR_USAGE, "HiddenServicePort 0: not a port");
    bad.virtport = 65536;
    tu_assert_err(sk_onion_write_torrc(p, "/x", &bad, 1, &err), &err,
        SK_ERR_USAGE, "HiddenServicePort 65536: not a port");
    bad.virtport = 80;
    bad.target = "127.0.0.1:80 #";
    tu_assert_err(sk_onion_write_torrc(p, "/x", &bad, 1, &err), &err,
        SK_ERR_USAGE, "target \"127.0.0.1:80 #\": character 13 is a space");
    bad.target = "";
    tu_assert_err(sk_onion_write_torrc(p, "/x", &bad, 1, &err), &err,
        SK_ERR_USAGE, "target: empty");
    tu_assert_err(sk_onion_write_torrc(p, "/x\ny", ports, 1, &err), &err,
        SK_ERR_USAGE, "HiddenServiceDir \"/x\ny\": contains a control");
    /* The failures left the last good file. */
    assert_file(dir, "hs.torrc", want_quoted, strlen(want_quoted), 0644);
    free(p);
    tu_rmtree(dir);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_address_vector),
        cmocka_unit_test(test_address_from_non_ed25519),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_write_dir),
        cmocka_unit_test(test_write_dir_existing),
        cmocka_unit_test(test_write_dir_bad_key),
        cmocka_unit_test(test_write_dir_chown),
        cmocka_unit_test(test_read_public_many),
        cmocka_unit_test(test_read_public_tor),
        cmocka_unit_test(test_read_public_bad),
        cmocka_unit_test(test_read_public_perm),
        cmocka_unit_test(test_read_hostname_bad),
        cmocka_unit_test(test_torrc),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
