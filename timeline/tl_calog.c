/*
 * tl_calog.c -- CA certificates stored once.
 *
 * Every Bind of a CA's customer repeats that CA's certificates in its
 * CA-Cert-Chain, about a kilobyte each.  The log keeps each CA
 * certificate (chain element 2 on) once, as a line of its base64url text in
 * data_dir/certs.log, and in the entry "@" followed by the base64url
 * SHA-256 of that text (44 characters; '@' is not base64url, so no
 * submitted chain looks like one).  Readers get the canonical entry back;
 * the Merkle tree, the chunks and every answer are over canonical text.
 *
 * A new certificate's line is written and synced before the entry that
 * refers to it is written, so an entry on disk whose certificate is
 * missing from certs.log is damage, not a crash: the timeline refuses to
 * start.  A torn last line of certs.log (a crash mid-write, before any
 * entry could refer to it) is cut, but only once the log has been read
 * back whole without it.  A write that fails (a full disk) is cut back at
 * once and nothing refers to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <sk/b64.h>

#include "tl.h"

#define TL_CALOG_FIELD  "CA-Cert-Chain: "
#define TL_CALOG_REF    44      /* '@' and 43 base64url characters */
#define TL_CALOG_MIN    200     /* shorter elements are kept in place */


static tl_calog_ent_t *
tl_calog_slot(tl_calog_ent_t *slots, size_t nslots,
    const unsigned char hash[SK_SHA256_BYTES])
{
    size_t  i;

    memcpy(&i, hash, sizeof(i));
    i &= nslots - 1;
    while (slots[i].text != NULL
           && memcmp(slots[i].hash, hash, SK_SHA256_BYTES) != 0)
    {
        i = (i + 1) & (nslots - 1);
    }
    return &slots[i];
}


/* With calog_lock held for writing: remember a certificate's text. */
static int
tl_calog_add(tl_timeline_t *tl, const unsigned char hash[SK_SHA256_BYTES],
    const char *text, size_t len, sk_err_t *err)
{
    tl_calog_ent_t  *slots, *s;
    size_t           n, i;

    if ((tl->ncalog + 1) * 2 > tl->calog_slots) {
        n = tl->calog_slots != 0 ? tl->calog_slots * 2 : 64;
        slots = calloc(n, sizeof(*slots));
        if (slots == NULL) {
            return sk_err_set(err, SK_ERR_NOMEM, "certs.log");
        }
        for (i = 0; i < tl->calog_slots; i++) {
            if (tl->calog[i].text != NULL) {
                *tl_calog_slot(slots, n, tl->calog[i].hash) = tl->calog[i];
            }
        }
        free(tl->calog);
        tl->calog = slots;
        tl->calog_slots = n;
    }
    s = tl_calog_slot(tl->calog, tl->calog_slots, hash);
    if (s->text != NULL) {
        return 0;               /* a line twice: the same certificate */
    }
    s->text = malloc(len);
    if (s->text == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "certs.log");
    }
    memcpy(s->text, text, len);
    s->len = len;
    memcpy(s->hash, hash, SK_SHA256_BYTES);
    tl->ncalog++;
    return 0;
}


static const tl_calog_ent_t *
tl_calog_find(const tl_timeline_t *tl, const unsigned char hash[SK_SHA256_BYTES])
{
    const tl_calog_ent_t  *s;

    if (tl->calog_slots == 0) {
        return NULL;
    }
    s = tl_calog_slot(tl->calog, tl->calog_slots, hash);
    return s->text != NULL ? s : NULL;
}


int
tl_calog_open(tl_timeline_t *tl, sk_err_t *err)
{
    unsigned char  hash[SK_SHA256_BYTES], *der;
    const char    *nl;
    char          *buf = NULL;
    size_t         len = 0, pos = 0, line = 1, n, dlen;
    int            rc = -1;

    if (tl_file_open(&tl->calog_file, tl, TL_CALOG_FILE, err) != 0
        || (tl->calog_file.fd >= 0
            && tl_file_read(&tl->calog_file, 0, &buf, &len, err) != 0))
    {
        return -1;
    }
    for (; pos < len; pos = (size_t) (nl - buf) + 1, line++) {
        nl = memchr(buf + pos, '\n', len - pos);
        if (nl == NULL) {
            /* Cut once the log was read: no entry may refer to it. */
            tl_file_torn(&tl->calog_file, (off_t) pos, "truncating a torn "
                "last line of %zu bytes (line %zu)", len - pos, line);
            break;
        }
        n = (size_t) (nl - buf) - pos;
        if (n == 0 || sk_b64_decode(&der, &dlen, buf + pos, n, err) != 0) {
            sk_err_set(err, SK_ERR_FORMAT, "%s: line %zu: not a base64url "
                "certificate", tl->calog_file.path, line);
            if (tl->mode != TL_REPAIR) {
                goto done;
            }
            /* --repair writes the file anew without it. */
            tl_log("%s", err->msg);
            tl->calog_bad++;
            continue;
        }
        free(der);
        sk_merkle_digest(hash, buf + pos, n);
        if (tl_calog_add(tl, hash, buf + pos, n, err) != 0) {
            sk_err_prefix(err, "%s: line %zu", tl->calog_file.path, line);
            goto done;
        }
    }
    rc = 0;
done:
    free(buf);
    return rc;
}


void
tl_calog_close(tl_timeline_t *tl)
{
    size_t  i;

    tl_file_close(&tl->calog_file);
    for (i = 0; i < tl->calog_slots; i++) {
        free(tl->calog[i].text);
    }
    free(tl->calog);
}


/* The value of the CA-Cert-Chain line of the entry at text, if any. */
static const char *
tl_calog_chain(const char *text, size_t len, size_t *vlen)
{
    const char  *p = text, *end = text + len, *nl;
    size_t       flen = sizeof(TL_CALOG_FIELD) - 1;

    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL || nl == p) {
            return NULL;            /* the end of the entry */
        }
        if ((size_t) (nl - p) > flen && memcmp(p, TL_CALOG_FIELD, flen) == 0)
        {
            *vlen = (size_t) (nl - p) - flen;
            return p + flen;
        }
        p = nl + 1;
    }
    return NULL;
}


/* Append text[0..len) to b, growing it. */
static int
tl_calog_put(char **b, size_t *blen, size_t *bcap, const char *text,
    size_t len)
{
    char    *p;
    size_t   cap;

    if (*blen + len + 1 > *bcap) {
        cap = (*blen + len + 1) * 2;
        p = realloc(*b, cap);
        if (p == NULL) {
            return -1;
        }
        *b = p;
        *bcap = cap;
    }
    memcpy(*b + *blen, text, len);
    *blen += len;
    (*b)[*blen] = '\0';
    return 0;
}


/* With tl->lock held: the stored form of one canonical entry. */
int
tl_calog_pack(tl_timeline_t *tl, char **out, size_t *outlen,
    const char *text, size_t len, sk_err_t *err)
{
    unsigned char  hash[SK_SHA256_BYTES];
    const char    *v, *el, *comma, *end;
    char           ref[TL_CALOG_REF + 1], *line;
    size_t         vlen, elen, cap = 0;
    int            known;

    *out = NULL;
    *outlen = 0;
    v = tl_calog_chain(text, len, &vlen);
    comma = v != NULL ? memchr(v, ',', vlen) : NULL;
    if (comma == NULL) {
        return tl_calog_put(out, outlen, &cap, text, len) == 0 ? 0
            : sk_err_set(err, SK_ERR_NOMEM, "log");
    }
    end = v + vlen;
    if (tl_calog_put(out, outlen, &cap, text, (size_t) (comma - text)) != 0)
    {
        goto nomem;
    }
    for (el = comma + 1; el <= end; el = comma + 1) {
        comma = memchr(el, ',', (size_t) (end - el));
        if (comma == NULL) {
            comma = end;
        }
        elen = (size_t) (comma - el);
        if (tl_calog_put(out, outlen, &cap, ",", 1) != 0) {
            goto nomem;
        }
        if (elen < TL_CALOG_MIN) {
            if (tl_calog_put(out, outlen, &cap, el, elen) != 0) {
                goto nomem;
            }
            continue;
        }
        sk_merkle_digest(hash, el, elen);
        pthread_rwlock_rdlock(&tl->calog_lock);
        known = tl_calog_find(tl, hash) != NULL;
        pthread_rwlock_unlock(&tl->calog_lock);
        if (!known) {
            /* On disk before any entry that refers to it; a failed
             * write is cut back, so the next append just tries again. */
            line = malloc(elen + 1);
            if (line == NULL) {
                goto nomem;
            }
            memcpy(line, el, elen);
            line[elen] = '\n';
            if (tl_file_append(&tl->calog_file, line, elen + 1, 1, err)
                != 0)
            {
                free(line);
                free(*out);
                *out = NULL;
                return -1;
            }
            free(line);
            pthread_rwlock_wrlock(&tl->calog_lock);
            known = tl_calog_add(tl, hash, el, elen, err) == 0;
            pthread_rwlock_unlock(&tl->calog_lock);
            if (!known) {
                free(*out);
                *out = NULL;
                return -1;
            }
        }
        ref[0] = '@';
        sk_b64_encode(ref + 1, hash, SK_SHA256_BYTES);
        if (tl_calog_put(out, outlen, &cap, ref, TL_CALOG_REF) != 0) {
            goto nomem;
        }
    }
    if (tl_calog_put(out, outlen, &cap, end, (size_t) (text + len - end))
        != 0)
    {
        goto nomem;
    }
    return 0;
nomem:
    free(*out);
    *out = NULL;
    return sk_err_set(err, SK_ERR_NOMEM, "log");
}


/* One entry's stored chain value, expanded onto b. */
static int
tl_calog_expand(tl_timeline_t *tl, char **b, size_t *blen, size_t *bcap,
    const char *v, size_t vlen, sk_err_t *err)
{
    const tl_calog_ent_t  *c;
    unsigned char          hash[SK_SHA256_BYTES];
    const char            *el, *comma, *end = v + vlen;
    unsigned char         *der;
    size_t                 elen, n;
    int                    rc;

    for (el = v; el <= end; el = comma + 1) {
        comma = memchr(el, ',', (size_t) (end - el));
        if (comma == NULL) {
            comma = end;
        }
        elen = (size_t) (comma - el);
        if (el != v && tl_calog_put(b, blen, bcap, ",", 1) != 0) {
            return sk_err_set(err, SK_ERR_NOMEM, "log");
        }
        if (elen == 0 || el[0] != '@') {
            if (tl_calog_put(b, blen, bcap, el, elen) != 0) {
                return sk_err_set(err, SK_ERR_NOMEM, "log");
            }
            continue;
        }
        der = NULL;
        n = 0;
        if (elen != TL_CALOG_REF
            || sk_b64_decode(&der, &n, el + 1, elen - 1, err) != 0
            || n != SK_SHA256_BYTES)
        {
            free(der);
            return sk_err_set(err, SK_ERR_FORMAT, "a malformed certificate "
                "reference \"%.*s\"", (int) (elen > 60 ? 60 : elen), el);
        }
        memcpy(hash, der, SK_SHA256_BYTES);
        free(der);
        pthread_rwlock_rdlock(&tl->calog_lock);
        c = tl_calog_find(tl, hash);
        rc = c != NULL ? tl_calog_put(b, blen, bcap, c->text, c->len) : 1;
        pthread_rwlock_unlock(&tl->calog_lock);
        if (rc != 0) {
            return rc < 0 ? sk_err_set(err, SK_ERR_NOMEM, "log")
                : sk_err_set(err, SK_ERR_FORMAT, "certificate %.*s is not "
                    "in %s", (int) elen, el, TL_CALOG_FILE);
        }
    }
    return 0;
}


int
tl_calog_unpack(tl_timeline_t *tl, char **out, size_t *outlen,
    const char *stored, size_t len, sk_err_t *err)
{
    const char  *p = stored, *end = stored + len, *v, *next;
    size_t       vlen, cap = 0;

    *out = NULL;
    *outlen = 0;
    /* Entry by entry: each ends with a blank line. */
    while (p < end) {
        next = p;
        while (next + 1 < end && !(next[0] == '\n' && next[1] == '\n')) {
            next++;
        }
        next = next + 1 < end ? next + 2 : end;
        v = tl_calog_chain(p, (size_t) (next - p), &vlen);
        if (v == NULL || memchr(v, '@', vlen) == NULL) {
            if (tl_calog_put(out, outlen, &cap, p, (size_t) (next - p)) != 0)
            {
                goto nomem;
            }
        } else if (tl_calog_put(out, outlen, &cap, p, (size_t) (v - p)) != 0)
        {
            goto nomem;
        } else if (tl_calog_expand(tl, out, outlen, &cap, v, vlen, err) != 0)
        {
            free(*out);
            *out = NULL;
            return -1;
        } else if (tl_calog_put(out, outlen, &cap, v + vlen,
                       (size_t) (next - v - vlen)) != 0)
        {
            goto nomem;
        }
        p = next;
    }
    if (*out == NULL && tl_calog_put(out, outlen, &cap, "", 0) != 0) {
        goto nomem;
    }
    return 0;
nomem:
    free(*out);
    *out = NULL;
    return sk_err_set(err, SK_ERR_NOMEM, "log");
}
