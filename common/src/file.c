/*
 * file.c -- reading and writing files so that a crash or a hostile path
 * never leaves a half-written key or chain behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sk/file.h>


/*
 * The body of sk_file_read and sk_file_read_private: fd is open on path and
 * st is its fstat(); checks size against max and reads it all.  Always
 * closes fd.
 */
static int
sk_file_read_fd(int fd, const struct stat *st, char **buf, size_t *len,
    const char *path, size_t max, sk_err_t *err)
{
    char     *p;
    size_t    got;
    ssize_t   n;

    if ((size_t) st->st_size > max) {
        sk_err_set(err, SK_ERR_FORMAT, "%s: larger than %zu bytes", path,
            max);
        goto fail;
    }

    p = malloc((size_t) st->st_size + 1);
    if (p == NULL) {
        sk_err_set(err, SK_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    for (got = 0; got < (size_t) st->st_size; got += (size_t) n) {
        n = read(fd, p + got, (size_t) st->st_size - got);
        if (n == -1 && errno == EINTR) {
            n = 0;
            continue;
        }
        if (n <= 0) {
            /* 0: the file shrank under us; treat it as unreadable. */
            if (n == 0) {
                errno = EIO;
            }
            sk_err_sys(err, "%s: read failed", path);
            free(p);
            goto fail;
        }
    }
    p[got] = '\0';
    close(fd);
    *buf = p;
    if (len != NULL) {
        *len = got;
    }
    return 0;

fail:
    close(fd);
    return -1;
}


/* What a path that is not a regular file is, for messages. */
static const char *
sk_file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m) || S_ISBLK(m) ? "a device"
           : "of another kind";
}


/*
 * Open path for reading and fstat() the descriptor into *st, refusing
 * anything but a regular file (code: the refusal's kind).  O_NONBLOCK: a
 * FIFO planted there fails the regular-file check instead of hanging the
 * open until some writer comes (it changes nothing for a regular file).
 * nofollow: a symbolic link is refused too (O_NOFOLLOW), so that whoever
 * can write the directory cannot point the reader at another file.
 * The checks are made on the descriptor that is then read, so the file
 * cannot be swapped between the check and the read.
 */
static int
sk_file_open_regular(int *fd, struct stat *st, const char *path,
    int nofollow, sk_err_code_t code, sk_err_t *err)
{
    *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC
                     | (nofollow ? O_NOFOLLOW : 0));
    if (*fd == -1) {
        if (nofollow && errno == ELOOP) {
            return sk_err_set(err, code,
                "%s: not a regular file (a symbolic link)", path);
        }
        return sk_err_sys(err, "%s: cannot open", path);
    }
    if (fstat(*fd, st) == -1) {
        sk_err_sys(err, "%s: cannot stat", path);
        close(*fd);
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        sk_err_set(err, code, "%s: not a regular file (%s)", path,
            sk_file_kind(st->st_mode));
        close(*fd);
        return -1;
    }
    return 0;
}


/* sk_file_read and sk_file_read_nofollow: open, check, read. */
static int
sk_file_read_checked(char **buf, size_t *len, const char *path, size_t max,
    int nofollow, sk_err_t *err)
{
    struct stat  st;
    int          fd;

    if (sk_file_open_regular(&fd, &st, path, nofollow,
            nofollow ? SK_ERR_PERM : SK_ERR_FORMAT, err) != 0)
    {
        return -1;
    }
    return sk_file_read_fd(fd, &st, buf, len, path, max, err);
}


int
sk_file_read(char **buf, size_t *len, const char *path, size_t max,
    sk_err_t *err)
{
    return sk_file_read_checked(buf, len, path, max, 0, err);
}


int
sk_file_read_nofollow(char **buf, size_t *len, const char *path, size_t max,
    sk_err_t *err)
{
    return sk_file_read_checked(buf, len, path, max, 1, err);
}


/*
 * As sk_file_read_nofollow, and the mode is checked on the same
 * descriptor, so the file cannot be swapped (for a readable copy) between
 * the check and the read, as it could be with sk_file_check_private +
 * sk_file_read.
 */
int
sk_file_read_private(char **buf, size_t *len, const char *path, size_t max,
    sk_err_t *err)
{
    struct stat  st;
    int          fd;

    if (sk_file_open_regular(&fd, &st, path, 1, SK_ERR_PERM, err) != 0) {
        return -1;
    }
    if ((st.st_mode & 077) != 0) {
        sk_err_set(err, SK_ERR_PERM,
            "%s: permissions %04o are too open (must be 0600 or stricter)",
            path, (unsigned) (st.st_mode & 07777));
        close(fd);
        return -1;
    }
    return sk_file_read_fd(fd, &st, buf, len, path, max, err);
}


int
sk_file_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t     n;

    while (len > 0) {
        n = write(fd, p, len);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += n;
        len -= (size_t) n;
    }
    return 0;
}


int
sk_file_pread_all(int fd, void *buf, size_t len, off_t off)
{
    char     *p = buf;
    ssize_t   n;

    while (len > 0) {
        n = pread(fd, p, len, off);
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = 0;
            }
            return -1;
        }
        p += n;
        off += n;
        len -= (size_t) n;
    }
    return 0;
}


int
sk_file_append(int fd, off_t *end, int *cut, const void *buf, size_t len,
    int sync)
{
    int  e;

    if (*cut) {
        if (ftruncate(fd, *end) != 0) {
            return -1;
        }
        *cut = 0;
    }
    if (sk_file_write_all(fd, buf, len) != 0 || (sync && fdatasync(fd) != 0))
    {
        /* The record was never used: cut it, keep the first errno. */
        e = errno;
        *cut = ftruncate(fd, *end) != 0;
        errno = e;
        return -1;
    }
    *end += (off_t) len;
    return 0;
}


static int
sk_fsync_parent(const char *path, sk_err_t *err)
{
    char *copy, *dir;
    int   fd, rc = 0;

    copy = strdup(path);
    if (copy == NULL) {
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    dir = dirname(copy);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd == -1 || fsync(fd) == -1) {
        rc = sk_err_sys(err, "%s: cannot sync directory", dir);
    }
    if (fd != -1) {
        close(fd);
    }
    free(copy);
    return rc;
}


int
sk_file_tmp_open(sk_file_tmp_t *f, const char *path, mode_t mode,
    sk_err_t *err)
{
    size_t  n = strlen(path) + sizeof(".tmp.XXXXXX");

    f->fd = -1;
    f->tmp = malloc(n);
    f->path = strdup(path);
    if (f->tmp == NULL || f->path == NULL) {
        sk_file_tmp_discard(f);
        return sk_err_set(err, SK_ERR_NOMEM, "out of memory");
    }
    snprintf(f->tmp, n, "%s.tmp.XXXXXX", path);
    f->fd = mkstemp(f->tmp);
    if (f->fd == -1) {
        sk_err_sys(err, "%s: cannot create temporary file", path);
        free(f->tmp);
        f->tmp = NULL;          /* nothing of ours to unlink */
        sk_file_tmp_discard(f);
        return -1;
    }
    if (fchmod(f->fd, mode) == -1) {
        sk_err_sys(err, "%s: cannot set its mode", f->tmp);
        sk_file_tmp_discard(f);
        return -1;
    }
    return 0;
}


int
sk_file_tmp_commit(sk_file_tmp_t *f, sk_err_t *err)
{
    int  fd = f->fd, rc;

    f->fd = -1;
    if (fsync(fd) == -1) {
        sk_err_sys(err, "%s: cannot write", f->tmp);
        close(fd);
        sk_file_tmp_discard(f);
        return -1;
    }
    if (close(fd) == -1) {
        sk_err_sys(err, "%s: cannot write", f->tmp);
        sk_file_tmp_discard(f);
        return -1;
    }
    if (rename(f->tmp, f->path) == -1) {
        sk_err_sys(err, "%s: cannot rename into place", f->path);
        sk_file_tmp_discard(f);
        return -1;
    }
    rc = sk_fsync_parent(f->path, err);
    free(f->tmp);
    free(f->path);
    f->tmp = NULL;
    f->path = NULL;
    return rc;
}


void
sk_file_tmp_discard(sk_file_tmp_t *f)
{
    if (f->fd != -1) {
        close(f->fd);
        f->fd = -1;
    }
    if (f->tmp != NULL) {
        unlink(f->tmp);
    }
    free(f->tmp);
    free(f->path);
    f->tmp = NULL;
    f->path = NULL;
}


int
sk_file_write_atomic(const char *path, const void *buf, size_t len,
    mode_t mode, sk_err_t *err)
{
    sk_file_tmp_t  f;

    if (sk_file_tmp_open(&f, path, mode, err) != 0) {
        return -1;
    }
    if (sk_file_write_all(f.fd, buf, len) == -1) {
        sk_err_sys(err, "%s: cannot write", f.tmp);
        sk_file_tmp_discard(&f);
        return -1;
    }
    return sk_file_tmp_commit(&f, err);
}


int
sk_file_write_new(const char *path, const void *buf, size_t len,
    mode_t mode, sk_err_t *err)
{
    int fd;

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
        mode);
    if (fd == -1) {
        if (errno == EEXIST) {
            return sk_err_set(err, SK_ERR_EXISTS,
                "%s: already exists, refusing to overwrite", path);
        }
        return sk_err_sys(err, "%s: cannot create", path);
    }
    /* The umask may have narrowed mode; set exactly what was asked. */
    if (fchmod(fd, mode) == -1 || sk_file_write_all(fd, buf, len) == -1
        || fsync(fd) == -1 || close(fd) == -1)
    {
        sk_err_sys(err, "%s: cannot write", path);
        close(fd);
        unlink(path);
        return -1;
    }
    return sk_fsync_parent(path, err);
}


int
sk_file_check_private(const char *path, sk_err_t *err)
{
    struct stat st;

    if (lstat(path, &st) == -1) {
        return sk_err_sys(err, "%s: cannot stat", path);
    }
    if (!S_ISREG(st.st_mode)) {
        return sk_err_set(err, SK_ERR_PERM, "%s: not a regular file", path);
    }
    if ((st.st_mode & 077) != 0) {
        return sk_err_set(err, SK_ERR_PERM,
            "%s: permissions %04o are too open (must be 0600 or stricter)",
            path, (unsigned) (st.st_mode & 07777));
    }
    return 0;
}
