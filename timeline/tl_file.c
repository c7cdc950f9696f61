/*
 * tl_file.c -- the timeline's append-only files (entries.log, certs.log,
 * incorporated.log): they hold whole records only.
 *
 * An append that fails (ENOSPC, EIO) is cut back to the end of the last
 * whole record before the error goes to the caller, so a full disk leaves
 * nothing partial behind and the next append simply goes on once there is
 * space; if even the cut fails, the next append retries it first.  At
 * start the owner reads the file and says where its whole records end
 * (tl_file_torn); what follows is cut only by tl_file_trim, once every
 * start check has passed, so a start that refuses changes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tl.h"


int
tl_file_open(tl_file_t *f, const tl_timeline_t *tl, const char *name,
    sk_err_t *err)
{
    struct stat  st;
    int          flags = O_CLOEXEC | O_NOFOLLOW;

    memset(f, 0, sizeof(*f));
    f->fd = -1;
    f->name = name;
    snprintf(f->path, sizeof(f->path), "%s/%s", tl->conf.data_dir, name);
    /* --check reads what is there and creates nothing. */
    flags |= tl->mode == TL_CHECK ? O_RDONLY
                                  : O_RDWR | O_CREAT | O_APPEND;
    f->fd = open(f->path, flags, 0644);
    if (f->fd < 0) {
        if (tl->mode == TL_CHECK && errno == ENOENT) {
            return 0;
        }
        return sk_err_sys(err, "%s: open", f->path);
    }
    if (fstat(f->fd, &st) != 0) {
        return sk_err_sys(err, "%s: fstat", f->path);
    }
    f->size = f->end = st.st_size;
    return 0;
}


void
tl_file_close(tl_file_t *f)
{
    if (f->fd >= 0) {
        close(f->fd);
    }
    f->fd = -1;
}


int
tl_file_read(tl_file_t *f, off_t from, char **buf, size_t *len,
    sk_err_t *err)
{
    if (from > f->size) {
        return sk_err_set(err, SK_ERR_FORMAT, "%s: %jd bytes, shorter than "
            "offset %jd", f->path, (intmax_t) f->size, (intmax_t) from);
    }
    *len = (size_t) (f->size - from);
    *buf = malloc(*len + 1);
    if (*buf == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "%s: reading", f->path);
    }
    if (sk_file_pread_all(f->fd, *buf, *len, from) != 0) {
        free(*buf);
        *buf = NULL;
        return errno != 0 ? sk_err_sys(err, "%s: read", f->path)
                          : sk_err_set(err, SK_ERR_FORMAT, "%s: shrank while "
                                "read", f->path);
    }
    (*buf)[*len] = '\0';
    return 0;
}


void
tl_file_torn(tl_file_t *f, off_t end, const char *fmt, ...)
{
    va_list  ap;

    f->end = end;
    va_start(ap, fmt);
    vsnprintf(f->note, sizeof(f->note), fmt, ap);
    va_end(ap);
}


int
tl_file_trim(tl_file_t *f, sk_err_t *err)
{
    if (f->fd < 0 || f->size == f->end) {
        return 0;
    }
    tl_log("%s: %s", f->path, f->note);
    if (ftruncate(f->fd, f->end) != 0 || fsync(f->fd) != 0) {
        return sk_err_sys(err, "%s: truncate", f->path);
    }
    f->size = f->end;
    return 0;
}


int
tl_file_append(tl_file_t *f, const void *buf, size_t len, int sync,
    sk_err_t *err)
{
    int  was_cut = f->cut;

    if (sk_file_append(f->fd, &f->end, &f->cut, buf, len, sync) == 0) {
        return 0;
    }
    if (was_cut && f->cut) {
        return sk_err_sys(err, "%s: cannot cut a failed write back to %jd "
            "bytes", f->path, (intmax_t) f->end);
    }
    /* Say why; what was written is cut (sk_file_append). */
    sk_err_sys(err, "%s: %s", f->path, sync ? "write and sync" : "write");
    if (f->cut) {
        tl_log("%s: cannot cut a failed write (%s); retrying before the "
            "next one", f->path, strerror(errno));
    }
    return -1;
}


/* The stored entry at p: its length up to and with its blank line, or 0
 * if no whole entry is left. */
size_t
tl_file_entry_len(const char *p, size_t len)
{
    size_t  i;

    for (i = 1; i < len; i++) {
        if (p[i] == '\n' && p[i - 1] == '\n') {
            return i + 1;
        }
    }
    return 0;
}
