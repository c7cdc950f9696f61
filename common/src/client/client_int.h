/*
 * client_int.h -- what the client_*.c files share; not public API.
 */
#ifndef SK_CLIENT_INT_H
#define SK_CLIENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sk/client.h>

/* A growing text buffer (a failed allocation sticks in failed). */
typedef struct {
    char    *p;
    size_t   len, cap;
    int      failed;
} sk_cl_buf_t;

void sk_cl_buf_add(sk_cl_buf_t *b, const void *data, size_t len);

/* One line "<prefix><value>\n" at *p (before end): the value into val
 * (NUL-terminated, shorter than valmax, no NUL inside) and *p past the
 * line; -1 if *p does not start with such a line. */
int sk_cl_line(const char **p, const char *end, const char *prefix,
    char *val, size_t valmax);

/* "N" (b NULL) or "N M": decimal, no leading zeros, nothing else. */
int sk_cl_nums(const char *s, uint64_t *a, uint64_t *b);

/* A mirror state file's text (client_cache.c), buf[0..len) (cut into
 * lines): the state the client remembers of url; -1 naming the line
 * ("line 3: ...") if it is not one.  Strict: numbers decimal without a
 * sign, timestamps within int64_t, one URL, Dropped, Reneged-Hash line
 * at most, one Timeline line per TID. */
int sk_cl_mstate_parse(sk_client_mstate_t *st, const char *url, char *buf,
    size_t len, sk_err_t *err) SK_WUR;

/* Bytes of one proof line: 44 standard base64 characters and "\n". */
#define SK_CL_HASH_LINE  45

/* The client rule for one checkpoint of v (client_map.c): its last entry
 * and, for a Map-Root, the map proof against v's entries; sets cp->map. */
int sk_cl_map_check(sk_client_cp_t *cp, const sk_client_view_t *v,
    const sk_client_timeline_t *tl, sk_err_t *err) SK_WUR;

/*
 * What a lookup learnt of whether timelines stopped (fail_open =
 * evidence, client_fresh.c).  A timeline is shown stopped when a current
 * answer (made within T2) signed by a mirror listed with a key gives its
 * checkpoint older than T4, or lists it Defunct; it is not when anything
 * at hand (an answer, the cached view, a mirror's earlier answers) holds
 * a checkpoint of it younger than T4.  Nothing heard shows nothing.
 */
typedef struct {
    uint64_t  stop[SK_CLIENT_MAX_TIMELINES];
    size_t    nstop;
    uint64_t  alive[SK_CLIENT_MAX_TIMELINES];
    size_t    nalive;
} sk_cl_stops_t;

/* The checkpoints of a view (cache, answer): alive if younger than T4. */
void sk_cl_stops_view(sk_cl_stops_t *s, const sk_client_view_t *v,
    const sk_client_trust_t *t, int64_t now);
/* The freshest checkpoints a mirror gave before. */
void sk_cl_stops_mstate(sk_cl_stops_t *s, const sk_client_mstate_t *st,
    const sk_client_trust_t *t, int64_t now);
/* A verified answer v of mirror m (info from sk_client_answer_verify). */
void sk_cl_stops_answer(sk_cl_stops_t *s, const sk_client_view_t *v,
    const sk_client_answer_info_t *info, const sk_client_mirror_t *m,
    const sk_client_trust_t *t, int64_t now);
/* The trusted timelines shown stopped and not seen alive. */
size_t sk_cl_stops_count(const sk_cl_stops_t *s,
    const sk_client_trust_t *t);

#endif
