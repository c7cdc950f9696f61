/*
 * strtab.c -- open-addressing string tables (sk/strtab.h).
 */
#include <stdlib.h>
#include <string.h>

#include <sk/strtab.h>


uint64_t
sk_strhash(const char *s)
{
    uint64_t  h = 14695981039346656037ull;

    while (*s != '\0') {
        h = (h ^ (unsigned char) *s++) * 1099511628211ull;
    }
    return h;
}


void
sk_strtab_init(sk_strtab_t *t, size_t slot_size)
{
    memset(t, 0, sizeof(*t));
    t->slot_size = slot_size;
}


void *
sk_strtab_at(const sk_strtab_t *t, size_t i)
{
    return (char *) t->slots + i * t->slot_size;
}


static char *
sk_strtab_key(const void *slot)
{
    char  *k;

    memcpy(&k, slot, sizeof(k));
    return k;
}


/* Where key is, or the empty slot it would take. */
static void *
sk_strtab_probe(void *slots, size_t nslots, size_t size, const char *key)
{
    size_t   i = (size_t) sk_strhash(key) & (nslots - 1);
    char    *k;

    while ((k = sk_strtab_key((char *) slots + i * size)) != NULL
           && strcmp(k, key) != 0)
    {
        i = (i + 1) & (nslots - 1);
    }
    return (char *) slots + i * size;
}


void *
sk_strtab_find(const sk_strtab_t *t, const char *key)
{
    void  *s;

    if (t->nslots == 0) {
        return NULL;
    }
    s = sk_strtab_probe(t->slots, t->nslots, t->slot_size, key);
    return sk_strtab_key(s) != NULL ? s : NULL;
}


static int
sk_strtab_grow(sk_strtab_t *t)
{
    size_t   n = t->nslots ? t->nslots * 2 : 256, i;
    char    *slots, *k;
    void    *from;

    slots = calloc(n, t->slot_size);
    if (slots == NULL) {
        return -1;
    }
    for (i = 0; i < t->nslots; i++) {
        from = sk_strtab_at(t, i);
        if ((k = sk_strtab_key(from)) != NULL) {
            memcpy(sk_strtab_probe(slots, n, t->slot_size, k), from,
                t->slot_size);
        }
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}


void *
sk_strtab_add(sk_strtab_t *t, const char *key, int *made, const char *what,
    sk_err_t *err)
{
    void  *s;
    char  *k;

    *made = 0;
    if ((t->n + 1) * 2 > t->nslots && sk_strtab_grow(t) != 0) {
        sk_err_set(err, SK_ERR_NOMEM, "%s", what);
        return NULL;
    }
    s = sk_strtab_probe(t->slots, t->nslots, t->slot_size, key);
    if (sk_strtab_key(s) == NULL) {
        k = strdup(key);
        if (k == NULL) {
            sk_err_set(err, SK_ERR_NOMEM, "%s", what);
            return NULL;
        }
        memcpy(s, &k, sizeof(k));
        t->n++;
        *made = 1;
    }
    return s;
}


void
sk_strtab_free(sk_strtab_t *t)
{
    size_t  i;

    for (i = 0; i < t->nslots; i++) {
        free(sk_strtab_key(sk_strtab_at(t, i)));
    }
    free(t->slots);
    t->slots = NULL;
    t->n = t->nslots = 0;
}
