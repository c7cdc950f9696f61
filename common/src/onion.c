/*
 * onion.c -- Tor v3 onion services: addresses, and HiddenServiceDir files
 * in Tor's own formats (rend-spec-v3, Tor's crypto_format.c).
 *
 * Tor keeps an onion key as the 64-byte "expanded" Ed25519 secret key
 * (clamped SHA-512 of the seed), not the seed, and OpenSSL has no API that
 * takes an expanded key.  To read the public key of a HiddenServiceDir we
 * therefore compute A = aB ourselves: the secret scalar multiplications go
 * through OpenSSL's X25519 (constant time; Curve25519 is birationally
 * Ed25519, and X25519 clamps exactly as Ed25519 does), which gives the
 * Montgomery u of aB, hence the Edwards y.  The sign of x, lost in u, is
 * recovered from u((a +- 8)B) with BIGNUM arithmetic on public values only.
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <sk/file.h>
#include <sk/onion.h>

#define SK_ONION_VERSION     0x03
#define SK_ONION_B32_LEN     56             /* base32 of 35 bytes */
#define SK_ONION_RAW_LEN     35             /* pubkey | checksum | version */
#define SK_ONION_HDR_LEN     32
#define SK_ONION_SECRET_LEN  (SK_ONION_HDR_LEN + 64)
#define SK_ONION_PUBLIC_LEN  (SK_ONION_HDR_LEN + 32)
#define SK_ONION_TORRC_MAX   (64 * 1024)

static const char sk_onion_b32[] = "abcdefghijklmnopqrstuvwxyz234567";
static const char sk_onion_secret_hdr[] = "== ed25519v1-secret: type0 ==";
static const char sk_onion_public_hdr[] = "== ed25519v1-public: type0 ==";
static const char *const sk_onion_files[] = {
    "hs_ed25519_secret_key", "hs_ed25519_public_key", "hostname"
};

#define SK_ONION_NFILES (sizeof(sk_onion_files) / sizeof(sk_onion_files[0]))


static int
sk_onion_checksum(unsigned char out[2], const unsigned char pubkey[32])
{
    static const char  prefix[] = ".onion checksum";
    unsigned char      buf[sizeof(prefix) - 1 + 32 + 1];
    unsigned char      md[32];
    unsigned int       mdlen = sizeof(md);
    EVP_MD            *sha3;
    int                ok;

    memcpy(buf, prefix, sizeof(prefix) - 1);
    memcpy(buf + sizeof(prefix) - 1, pubkey, 32);
    buf[sizeof(buf) - 1] = SK_ONION_VERSION;

    sha3 = EVP_MD_fetch(NULL, "SHA3-256", NULL);
    ok = sha3 != NULL && EVP_Digest(buf, sizeof(buf), md, &mdlen, sha3, NULL);
    EVP_MD_free(sha3);
    if (!ok) {
        return -1;
    }
    memcpy(out, md, 2);
    return 0;
}


void
sk_onion_address(char out[SK_ONION_ADDR_LEN + 1],
    const unsigned char pubkey[32])
{
    unsigned char  raw[SK_ONION_RAW_LEN];
    unsigned       acc = 0, bits = 0;
    size_t         i, n = 0;

    memcpy(raw, pubkey, 32);
    if (sk_onion_checksum(raw + 32, pubkey) != 0) {
        out[0] = '\0';          /* documented: OpenSSL failed (no memory) */
        return;
    }
    raw[34] = SK_ONION_VERSION;

    /* 35 bytes are exactly 56 groups of 5 bits: no padding. */
    for (i = 0; i < sizeof(raw); i++) {
        acc = (acc << 8) | raw[i];
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            out[n++] = sk_onion_b32[(acc >> bits) & 31];
        }
    }
    memcpy(out + n, ".onion", sizeof(".onion"));
}


int
sk_onion_address_from_key(char out[SK_ONION_ADDR_LEN + 1],
    const sk_key_t *key, sk_err_t *err)
{
    unsigned char pub[32];

    if (sk_key_ed25519_public(pub, key, err) != 0) {
        return sk_err_prefix(err, "onion address");
    }
    sk_onion_address(out, pub);
    if (out[0] == '\0') {
        return sk_err_crypto(err, "onion address: cannot compute SHA3-256");
    }
    return 0;
}


int
sk_onion_address_check(const char *s, size_t len, sk_err_t *err)
{
    unsigned char  raw[SK_ONION_RAW_LEN], sum[2];
    const char    *c;
    unsigned       acc = 0, bits = 0;
    size_t         i, n = 0;

    if (len != SK_ONION_ADDR_LEN) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "onion address: length %zu, want %d (56 base32 characters "
            "and \".onion\")", len, SK_ONION_ADDR_LEN);
    }
    if (memcmp(s + SK_ONION_B32_LEN, ".onion", 6) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "onion address: does not end in \".onion\"");
    }
    for (i = 0; i < SK_ONION_B32_LEN; i++) {
        c = s[i] == '\0' ? NULL : strchr(sk_onion_b32, s[i]);
        if (c == NULL) {
            return sk_err_set(err, SK_ERR_FORMAT,
                "onion address: character %zu (0x%02x) is not lowercase "
                "base32 (a-z, 2-7)", i + 1, (unsigned char) s[i]);
        }
        acc = (acc << 5) | (unsigned) (c - sk_onion_b32);
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            raw[n++] = (unsigned char) (acc >> bits);
        }
    }
    if (raw[34] != SK_ONION_VERSION) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "onion address: version %u, want 3", raw[34]);
    }
    if (sk_onion_checksum(sum, raw) != 0) {
        return sk_err_crypto(err, "onion address: cannot compute SHA3-256");
    }
    if (memcmp(sum, raw + 32, 2) != 0) {
        return sk_err_set(err, SK_ERR_FORMAT,
            "onion address: checksum does not match (mistyped?)");
    }
    return 0;
}


static int
sk_onion_path(char out[PATH_MAX], const char *dir, const char *name,
    sk_err_t *err)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);

    if (n < 0 || n >= PATH_MAX) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: path too long", dir);
    }
    return 0;
}


/* Tor's key file: a 32-byte NUL-padded text header, then the key. */
static void
sk_onion_header(unsigned char out[SK_ONION_HDR_LEN], const char *hdr)
{
    memset(out, 0, SK_ONION_HDR_LEN);
    memcpy(out, hdr, strlen(hdr));
}


static int
sk_onion_expand(unsigned char out[64], const unsigned char seed[32],
    sk_err_t *err)
{
    if (EVP_Digest(seed, 32, out, NULL, EVP_sha512(), NULL) != 1) {
        return sk_err_crypto(err, "cannot compute SHA-512");
    }
    out[0] &= 248;
    out[31] &= 63;
    out[31] |= 64;
    return 0;
}


/* An existing dir must be a real directory; it is made 0700 (Tor refuses
 * anything looser). */
static int
sk_onion_mkdir(const char *dir, sk_err_t *err)
{
    struct stat st;

    if (mkdir(dir, 0700) == -1) {
        if (errno != EEXIST) {
            return sk_err_sys(err, "%s: cannot create directory", dir);
        }
        if (lstat(dir, &st) == -1) {
            return sk_err_sys(err, "%s: cannot stat", dir);
        }
        if (!S_ISDIR(st.st_mode)) {
            return sk_err_set(err, SK_ERR_EXISTS,
                "%s: exists and is not a directory", dir);
        }
    }
    if (chmod(dir, 0700) == -1) {
        return sk_err_sys(err, "%s: cannot chmod 0700", dir);
    }
    return 0;
}


static int
sk_onion_chown(const char *path, uid_t uid, gid_t gid, sk_err_t *err)
{
    if ((uid != (uid_t) -1 || gid != (gid_t) -1)
        && lchown(path, uid, gid) == -1)
    {
        return sk_err_sys(err, "%s: cannot change owner", path);
    }
    return 0;
}


int
sk_onion_write_dir(const char *dir, const sk_key_t *key, uid_t uid,
    gid_t gid, sk_err_t *err)
{
    unsigned char  secret[SK_ONION_SECRET_LEN], public[SK_ONION_PUBLIC_LEN];
    unsigned char  seed[32];
    char           paths[SK_ONION_NFILES][PATH_MAX];
    char           addr[SK_ONION_ADDR_LEN + 2];
    const void    *bufs[SK_ONION_NFILES];
    size_t         lens[SK_ONION_NFILES], i, made = 0;
    struct stat    st;
    int            rc = -1;

    if (sk_key_ed25519_seed(seed, key, err) != 0
        || sk_key_ed25519_public(public + SK_ONION_HDR_LEN, key, err) != 0)
    {
        return sk_err_prefix(err, "onion key");
    }
    sk_onion_header(secret, sk_onion_secret_hdr);
    sk_onion_header(public, sk_onion_public_hdr);
    if (sk_onion_expand(secret + SK_ONION_HDR_LEN, seed, err) != 0) {
        goto done;
    }
    sk_onion_address(addr, public + SK_ONION_HDR_LEN);
    if (addr[0] == '\0') {
        sk_err_crypto(err, "onion address: cannot compute SHA3-256");
        goto done;
    }
    addr[SK_ONION_ADDR_LEN] = '\n';

    bufs[0] = secret;
    lens[0] = sizeof(secret);
    bufs[1] = public;
    lens[1] = sizeof(public);
    bufs[2] = addr;
    lens[2] = SK_ONION_ADDR_LEN + 1;

    if (sk_onion_mkdir(dir, err) != 0) {
        goto done;
    }
    /* Refuse before writing anything, so a refusal leaves no new file. */
    for (i = 0; i < SK_ONION_NFILES; i++) {
        if (sk_onion_path(paths[i], dir, sk_onion_files[i], err) != 0) {
            goto done;
        }
        if (lstat(paths[i], &st) == 0) {
            sk_err_set(err, SK_ERR_EXISTS,
                "%s: already exists, refusing to overwrite", paths[i]);
            goto done;
        }
    }
    for (i = 0; i < SK_ONION_NFILES; i++) {
        if (sk_file_write_new(paths[i], bufs[i], lens[i], 0600, err) != 0) {
            goto done;
        }
        made = i + 1;
        if (sk_onion_chown(paths[i], uid, gid, err) != 0) {
            goto done;
        }
    }
    rc = sk_onion_chown(dir, uid, gid, err);

done:
    if (rc != 0) {
        /* Leave no partial key set behind: a retry must not hit EXISTS.
         * (A file that failed half-written removed itself.) */
        for (i = 0; i < made; i++) {
            unlink(paths[i]);
        }
    }
    OPENSSL_cleanse(seed, sizeof(seed));
    OPENSSL_cleanse(secret, sizeof(secret));
    return rc;
}


/* A torrc value, quoted (Tor's C-style escapes) when it needs to be. */
static int
sk_onion_torrc_value(char *out, size_t size, const char *v, const char *what,
    sk_err_t *err)
{
    const char *p;
    size_t      n = 0;
    int         quote;

    if (v[0] == '\0' || strlen(v) >= PATH_MAX || 2 * strlen(v) + 3 > size) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: empty or too long", what);
    }
    for (p = v; *p != '\0'; p++) {
        if ((unsigned char) *p < 0x20 || *p == 0x7f) {
            return sk_err_set(err, SK_ERR_USAGE,
                "%s \"%s\": contains a control character", what, v);
        }
    }
    quote = strpbrk(v, " #\"\\") != NULL;
    if (quote) {
        out[n++] = '"';
    }
    for (p = v; *p != '\0'; p++) {
        if (quote && (*p == '"' || *p == '\\')) {
            out[n++] = '\\';
        }
        out[n++] = *p;
    }
    if (quote) {
        out[n++] = '"';
    }
    out[n] = '\0';
    return 0;
}


/* The target is used verbatim ("host:port", "port", "unix:/path"), so it
 * must hold nothing Tor would split or unquote. */
int
sk_onion_port_check(const sk_onion_port_t *port, sk_err_t *err)
{
    const char *p, *t = port->target;

    if (port->virtport == 0 || port->virtport > 65535) {
        return sk_err_set(err, SK_ERR_USAGE,
            "HiddenServicePort %u: not a port (1-65535)", port->virtport);
    }
    if (t == NULL) {
        return 0;
    }
    for (p = t; *p != '\0'; p++) {
        if ((unsigned char) *p <= 0x20 || *p >= 0x7f || *p == '"'
            || *p == '#' || *p == '\\')
        {
            return sk_err_set(err, SK_ERR_USAGE,
                "HiddenServicePort target \"%s\": character %zu is a space, "
                "control character, '\"', '#' or '\\'", t,
                (size_t) (p - t) + 1);
        }
    }
    if (p == t || strlen(t) >= PATH_MAX) {
        return sk_err_set(err, SK_ERR_USAGE,
            "HiddenServicePort target: empty or too long");
    }
    return 0;
}


int
sk_onion_write_torrc(const char *path, const char *dir,
    const sk_onion_port_t *ports, size_t nports, sk_err_t *err)
{
    char        buf[SK_ONION_TORRC_MAX], val[2 * PATH_MAX + 3], def[16];
    const char *target;
    size_t      i, n;
    int         w;

    if (nports == 0) {
        return sk_err_set(err, SK_ERR_USAGE, "%s: no HiddenServicePort",
            path);
    }
    if (sk_onion_torrc_value(val, sizeof(val), dir, "HiddenServiceDir", err)
        != 0)
    {
        return -1;
    }
    n = (size_t) snprintf(buf, sizeof(buf), "HiddenServiceDir %s\n", val);

    for (i = 0; i < nports; i++) {
        if (sk_onion_port_check(&ports[i], err) != 0) {
            return -1;
        }
        target = ports[i].target;
        if (target == NULL) {
            snprintf(def, sizeof(def), "127.0.0.1:%u", ports[i].virtport);
            target = def;
        }
        w = snprintf(buf + n, sizeof(buf) - n, "HiddenServicePort %u %s\n",
            ports[i].virtport, target);
        if (w < 0 || (size_t) w >= sizeof(buf) - n) {
            return sk_err_set(err, SK_ERR_USAGE, "%s: too many ports", path);
        }
        n += (size_t) w;
    }
    return sk_file_write_atomic(path, buf, n, 0644, err);
}


/* The HiddenServiceDir is Tor's (its user writes it; nginx's master and
 * the milter read it): no file there is followed or waited on. */
int
sk_onion_read_hostname(char out[SK_ONION_ADDR_LEN + 1], const char *dir,
    sk_err_t *err)
{
    char    path[PATH_MAX], *buf;
    size_t  len;
    int     rc;

    if (sk_onion_path(path, dir, "hostname", err) != 0
        || sk_file_read_nofollow(&buf, &len, path, 256, err) != 0)
    {
        return -1;
    }
    if (len != SK_ONION_ADDR_LEN + 1 || buf[SK_ONION_ADDR_LEN] != '\n') {
        rc = sk_err_set(err, SK_ERR_FORMAT,
            "%s: want one address and a newline (%d bytes), got %zu bytes",
            path, SK_ONION_ADDR_LEN + 1, len);
    } else if (sk_onion_address_check(buf, SK_ONION_ADDR_LEN, err) != 0) {
        rc = sk_err_prefix(err, "%s", path);
    } else {
        memcpy(out, buf, SK_ONION_ADDR_LEN);
        out[SK_ONION_ADDR_LEN] = '\0';
        rc = 0;
    }
    free(buf);
    return rc;
}


/*
 * Edwards25519 (-x^2 + y^2 = 1 + d x^2 y^2 over p = 2^255 - 19) on public
 * values only, with BIGNUM: just enough to turn a Montgomery u into an
 * Edwards point and add two points.
 */
typedef struct {
    BN_CTX *ctx;
    BIGNUM *p;
    BIGNUM *d;
} sk_ed_t;


/* r = a / b mod p */
static int
sk_ed_div(BIGNUM *r, const BIGNUM *a, const BIGNUM *b, sk_ed_t *ed)
{
    BIGNUM *inv;
    int     ok;

    BN_CTX_start(ed->ctx);
    inv = BN_CTX_get(ed->ctx);
    ok = inv != NULL && BN_mod_inverse(inv, b, ed->p, ed->ctx) != NULL
         && BN_mod_mul(r, a, inv, ed->p, ed->ctx);
    BN_CTX_end(ed->ctx);
    return ok;
}


/* y = (u - 1) / (u + 1), the birational map from Curve25519. */
static int
sk_ed_y_from_u(BIGNUM *y, const BIGNUM *u, sk_ed_t *ed)
{
    BIGNUM *num, *den;
    int     ok;

    BN_CTX_start(ed->ctx);
    num = BN_CTX_get(ed->ctx);
    den = BN_CTX_get(ed->ctx);
    ok = den != NULL
         && BN_mod_sub(num, u, BN_value_one(), ed->p, ed->ctx)
         && BN_mod_add(den, u, BN_value_one(), ed->p, ed->ctx)
         && sk_ed_div(y, num, den, ed);
    BN_CTX_end(ed->ctx);
    return ok;
}


/* The even x of the point with this y: x^2 = (y^2 - 1) / (d y^2 + 1). */
static int
sk_ed_x_from_y(BIGNUM *x, const BIGNUM *y, sk_ed_t *ed)
{
    BIGNUM *y2, *num, *den;
    int     ok;

    BN_CTX_start(ed->ctx);
    y2 = BN_CTX_get(ed->ctx);
    num = BN_CTX_get(ed->ctx);
    den = BN_CTX_get(ed->ctx);
    ok = den != NULL
         && BN_mod_sqr(y2, y, ed->p, ed->ctx)
         && BN_mod_sub(num, y2, BN_value_one(), ed->p, ed->ctx)
         && BN_mod_mul(den, ed->d, y2, ed->p, ed->ctx)
         && BN_mod_add(den, den, BN_value_one(), ed->p, ed->ctx)
         && sk_ed_div(num, num, den, ed)
         && BN_mod_sqrt(x, num, ed->p, ed->ctx) != NULL
         && (!BN_is_odd(x) || BN_sub(x, ed->p, x));
    BN_CTX_end(ed->ctx);
    return ok;
}


/* (x3, y3) = (x1, y1) + (x2, y2); the formula is complete (d is not a
 * square), so it doubles too.  Outputs may alias inputs. */
static int
sk_ed_add(BIGNUM *x3, BIGNUM *y3, const BIGNUM *x1, const BIGNUM *y1,
    const BIGNUM *x2, const BIGNUM *y2, sk_ed_t *ed)
{
    BIGNUM *t, *xy, *yx, *yy, *xx, *den;
    int     ok;

    BN_CTX_start(ed->ctx);
    t = BN_CTX_get(ed->ctx);
    xy = BN_CTX_get(ed->ctx);
    yx = BN_CTX_get(ed->ctx);
    yy = BN_CTX_get(ed->ctx);
    xx = BN_CTX_get(ed->ctx);
    den = BN_CTX_get(ed->ctx);
    ok = den != NULL
         && BN_mod_mul(xy, x1, y2, ed->p, ed->ctx)
         && BN_mod_mul(yx, y1, x2, ed->p, ed->ctx)
         && BN_mod_mul(yy, y1, y2, ed->p, ed->ctx)
         && BN_mod_mul(xx, x1, x2, ed->p, ed->ctx)
         /* t = d x1 x2 y1 y2 */
         && BN_mod_mul(t, xx, yy, ed->p, ed->ctx)
         && BN_mod_mul(t, ed->d, t, ed->p, ed->ctx)
         /* x3 = (x1 y2 + y1 x2) / (1 + t), y3 = (y1 y2 + x1 x2) / (1 - t) */
         && BN_mod_add(xy, xy, yx, ed->p, ed->ctx)
         && BN_mod_add(den, BN_value_one(), t, ed->p, ed->ctx)
         && sk_ed_div(x3, xy, den, ed)
         && BN_mod_add(yy, yy, xx, ed->p, ed->ctx)
         && BN_mod_sub(den, BN_value_one(), t, ed->p, ed->ctx)
         && sk_ed_div(y3, yy, den, ed);
    BN_CTX_end(ed->ctx);
    return ok;
}


/* u of scalar * base point, by OpenSSL's X25519 (which clamps). */
static int
sk_ed_x25519_u(BIGNUM *u, const unsigned char scalar[32])
{
    EVP_PKEY      *pkey;
    unsigned char  raw[32];
    size_t         len = sizeof(raw);
    int            ok;

    pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, scalar, 32);
    ok = pkey != NULL
         && EVP_PKEY_get_raw_public_key(pkey, raw, &len) == 1 && len == 32
         && BN_lebin2bn(raw, 32, u) != NULL;
    EVP_PKEY_free(pkey);
    return ok;
}


/* On failure the caller still calls sk_ed_free. */
static int
sk_ed_init(sk_ed_t *ed)
{
    BIGNUM *t;
    int     ok;

    ed->ctx = BN_CTX_new();
    ed->p = BN_new();
    ed->d = BN_new();
    if (ed->ctx == NULL || ed->p == NULL || ed->d == NULL) {
        return 0;
    }
    BN_CTX_start(ed->ctx);
    t = BN_CTX_get(ed->ctx);
    /* p = 2^255 - 19; d = -121665 / 121666 */
    ok = t != NULL
         && BN_set_bit(ed->p, 255) && BN_sub_word(ed->p, 19)
         && BN_set_word(ed->d, 121665)
         && BN_sub(ed->d, ed->p, ed->d)
         && BN_set_word(t, 121666)
         && sk_ed_div(ed->d, ed->d, t, ed);
    BN_CTX_end(ed->ctx);
    return ok;
}


static void
sk_ed_free(sk_ed_t *ed)
{
    BN_free(ed->d);
    BN_free(ed->p);
    BN_CTX_free(ed->ctx);
}


/*
 * A = aB in Ed25519's encoding (y, little-endian, sign of x in the top
 * bit).  X25519 gives u(aB), so y, so x up to its sign.  a' = a with bit 3
 * flipped is a + 8 or a - 8 and still clamped, so X25519 gives u(aB +- 8B)
 * too; only the right sign of x makes A +- 8B have that u.
 */
static int
sk_ed_public(unsigned char pub[32], const unsigned char a[32], sk_ed_t *ed)
{
    unsigned char  a2[32];
    BIGNUM        *u, *x, *y, *qx, *qy, *y2, *sx, *sy;
    int            i, ok, found = 0;

    memcpy(a2, a, 32);
    a2[0] ^= 8;

    BN_CTX_start(ed->ctx);
    u = BN_CTX_get(ed->ctx);
    x = BN_CTX_get(ed->ctx);
    y = BN_CTX_get(ed->ctx);
    qx = BN_CTX_get(ed->ctx);
    qy = BN_CTX_get(ed->ctx);
    y2 = BN_CTX_get(ed->ctx);
    sx = BN_CTX_get(ed->ctx);
    sy = BN_CTX_get(ed->ctx);
    ok = sy != NULL
         /* Q = 8B (-8B if a' = a - 8); B has y = 4/5 and an even x */
         && BN_set_word(qx, 4) && BN_set_word(qy, 5)
         && sk_ed_div(qy, qx, qy, ed) && sk_ed_x_from_y(qx, qy, ed);
    for (i = 0; ok && i < 3; i++) {
        ok = sk_ed_add(qx, qy, qx, qy, qx, qy, ed);
    }
    ok = ok && ((a[0] & 8) == 0 || BN_sub(qx, ed->p, qx))
         && sk_ed_x25519_u(u, a) && sk_ed_y_from_u(y, u, ed)
         && sk_ed_x_from_y(x, y, ed)
         && sk_ed_x25519_u(u, a2) && sk_ed_y_from_u(y2, u, ed);
    for (i = 0; ok && !found && i < 2; i++) {
        ok = (i == 0 || BN_sub(x, ed->p, x))
             && sk_ed_add(sx, sy, x, y, qx, qy, ed);
        found = ok && BN_cmp(sy, y2) == 0;
    }
    ok = ok && found && BN_bn2lebinpad(y, pub, 32) == 32;
    if (ok && BN_is_odd(x)) {
        pub[31] |= 0x80;
    }
    BN_CTX_end(ed->ctx);
    OPENSSL_cleanse(a2, sizeof(a2));
    return ok;
}


/*
 * Read one of Tor's key files, of exactly len bytes with header hdr.  The
 * secret key is private (0600 or stricter, like every other key, checked
 * on the descriptor read); the public key may be 0644, as Tor writes it.
 */
static int
sk_onion_read_keyfile(unsigned char *out, size_t len, const char *dir,
    const char *name, const char *hdr, int is_secret, sk_err_t *err)
{
    unsigned char  want[SK_ONION_HDR_LEN];
    char           path[PATH_MAX], *buf;
    size_t         got;
    int            rc = 0;

    if (sk_onion_path(path, dir, name, err) != 0) {
        return -1;
    }
    rc = is_secret ? sk_file_read_private(&buf, &got, path, 4096, err)
                   : sk_file_read_nofollow(&buf, &got, path, 4096, err);
    if (rc != 0) {
        return -1;
    }
    sk_onion_header(want, hdr);
    if (got != len) {
        rc = sk_err_set(err, SK_ERR_FORMAT, "%s: %zu bytes, want %zu", path,
            got, len);
    } else if (memcmp(buf, want, SK_ONION_HDR_LEN) != 0) {
        rc = sk_err_set(err, SK_ERR_FORMAT,
            "%s: header is not \"%s\" padded to 32 bytes", path, hdr);
    } else {
        memcpy(out, buf, len);
    }
    OPENSSL_cleanse(buf, got);
    free(buf);
    return rc;
}


int
sk_onion_read_public(unsigned char pubkey[32], const char *dir,
    sk_err_t *err)
{
    unsigned char  secret[SK_ONION_SECRET_LEN], public[SK_ONION_PUBLIC_LEN];
    unsigned char  derived[32];
    char           path[PATH_MAX];
    sk_ed_t        ed;
    sk_err_t       e2;
    int            rc = -1;

    if (sk_onion_read_keyfile(secret, sizeof(secret), dir,
            "hs_ed25519_secret_key", sk_onion_secret_hdr, 1, err) != 0)
    {
        return -1;
    }
    if ((secret[SK_ONION_HDR_LEN] & 7) != 0
        || (secret[SK_ONION_HDR_LEN + 31] & 0xc0) != 0x40)
    {
        sk_err_set(err, SK_ERR_FORMAT,
            "%s/hs_ed25519_secret_key: secret scalar is not clamped", dir);
        goto done;
    }
    if (!sk_ed_init(&ed) || !sk_ed_public(derived, secret + SK_ONION_HDR_LEN,
                                 &ed))
    {
        sk_err_crypto(err, "%s/hs_ed25519_secret_key: cannot derive the "
            "public key", dir);
        sk_ed_free(&ed);
        goto done;
    }
    sk_ed_free(&ed);

    /* Tor rewrites a missing public key file; one that is there must be
     * the same key, or what Tor serves is not what sk printed. */
    if (sk_onion_read_keyfile(public, sizeof(public), dir,
            "hs_ed25519_public_key", sk_onion_public_hdr, 0, &e2) != 0)
    {
        if (e2.code != SK_ERR_SYSTEM || e2.sys_errno != ENOENT) {
            if (err != NULL) {
                *err = e2;
            }
            goto done;
        }
    } else if (memcmp(public + SK_ONION_HDR_LEN, derived, 32) != 0) {
        sk_onion_path(path, dir, "hs_ed25519_public_key", NULL);
        sk_err_set(err, SK_ERR_KEY_MISMATCH,
            "%s: not the public half of hs_ed25519_secret_key", path);
        goto done;
    }
    memcpy(pubkey, derived, 32);
    rc = 0;

done:
    OPENSSL_cleanse(secret, sizeof(secret));
    return rc;
}


int
sk_onion_owner(uid_t *uid, gid_t *gid, const char *user, sk_err_t *err)
{
    struct passwd  *pw;

    *uid = (uid_t) -1;
    *gid = (gid_t) -1;
    if (user == NULL && geteuid() != 0) {
        return 0;
    }
    pw = getpwnam(user != NULL ? user : "debian-tor");
    if (pw == NULL) {
        return user == NULL ? 0 : sk_err_set(err, SK_ERR_NOT_FOUND,
            "no such user \"%.64s\"", user);
    }
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
    return 0;
}


int
sk_onion_ensure(char out[SK_ONION_ADDR_LEN + 1], int *created,
    const char *dir, const char *keyfile, uid_t uid, gid_t gid,
    sk_err_t *err)
{
    unsigned char   pub[32];
    sk_key_t       *key = NULL;
    sk_err_t        e;
    int             rc;

    *created = 0;
    if (sk_onion_read_public(pub, dir, &e) == 0) {
        sk_onion_address(out, pub);
        return 0;
    }
    if (e.code != SK_ERR_SYSTEM || e.sys_errno != ENOENT) {
        if (err != NULL) {
            *err = e;
        }
        return -1;
    }
    rc = keyfile != NULL ? sk_key_load_private(&key, keyfile, err)
        : sk_key_generate(&key, SK_KEY_ED25519, 0, err);
    if (rc == 0) {
        rc = sk_onion_write_dir(dir, key, uid, gid, err) != 0
            || sk_onion_address_from_key(out, key, err) != 0 ? -1 : 0;
    }
    sk_key_free(key);
    *created = rc == 0;
    return rc;
}
