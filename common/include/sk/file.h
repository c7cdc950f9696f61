/*
 * sk/file.h -- careful file I/O shared by libsk, sk and the daemons.
 */
#ifndef SK_FILE_H
#define SK_FILE_H

#include <stddef.h>
#include <sys/types.h>
#include "err.h"

/* Whole file into a malloc()ed, NUL-terminated buffer; refuses files over
 * max bytes and anything but a regular file (SK_ERR_FORMAT naming the
 * file; a FIFO is refused, never waited on).  Follows symbolic links: for
 * the paths an operator gives. */
int sk_file_read(char **buf, size_t *len, const char *path, size_t max,
    sk_err_t *err) SK_WUR;

/* The same for a file in a directory that another, less privileged user
 * can write (nginx's workers write the staple cache that the master
 * reads at a reload, Tor writes its HiddenServiceDir): a symbolic link is
 * refused too, and the descriptor that is read is the one checked to be
 * a regular file (SK_ERR_PERM naming the file and what it is). */
int sk_file_read_nofollow(char **buf, size_t *len, const char *path,
    size_t max, sk_err_t *err) SK_WUR;

/* The same for a private key: opened without following a symlink, then
 * refused (SK_ERR_PERM naming the file and its mode) unless the very
 * descriptor that is read is a regular file with no group/other bits.
 * A missing file is SK_ERR_SYSTEM with sys_errno ENOENT, as above. */
int sk_file_read_private(char **buf, size_t *len, const char *path,
    size_t max, sk_err_t *err) SK_WUR;

/* write(2) all of buf to fd, again after EINTR; -1 with errno set. */
int sk_file_write_all(int fd, const void *buf, size_t len) SK_WUR;

/* pread(2) exactly len bytes at off, again after EINTR and short reads:
 * 0; -1 with errno set, or with errno 0 if the file ends first. */
int sk_file_pread_all(int fd, void *buf, size_t len, off_t off) SK_WUR;

/* Append a record to fd (opened O_APPEND) whose whole records end at
 * *end, fdatasync()ed if sync; then *end is past it.  A failed append is
 * cut back to *end (ftruncate), so the file holds whole records only; if
 * even the cut fails, *cut is set and the next call cuts first.  0, or -1
 * with errno (of the write, sync or cut) set.  The daemons' logs
 * (sk-timeline's entries.log, sk-mirror's copies) append this way. */
int sk_file_append(int fd, off_t *end, int *cut, const void *buf,
    size_t len, int sync) SK_WUR;

/* Atomic replace: temp file in the same directory, write, fsync, chmod
 * mode, rename over path, fsync the directory.  Readers see the old or the
 * new content, never a part. */
int sk_file_write_atomic(const char *path, const void *buf, size_t len,
    mode_t mode, sk_err_t *err) SK_WUR;

/* The same for content written as it comes: sk_file_tmp_open makes the
 * temp file (mode), write to f->fd, then sk_file_tmp_commit (fsync,
 * rename over path, fsync the directory) or sk_file_tmp_discard (close,
 * unlink).  Commit discards on failure; discard accepts a committed or
 * discarded f. */
typedef struct {
    int    fd;          /* -1 once committed or discarded */
    char  *tmp;         /* the temp file's name */
    char  *path;        /* where it goes */
} sk_file_tmp_t;

int sk_file_tmp_open(sk_file_tmp_t *f, const char *path, mode_t mode,
    sk_err_t *err) SK_WUR;
int sk_file_tmp_commit(sk_file_tmp_t *f, sk_err_t *err) SK_WUR;
void sk_file_tmp_discard(sk_file_tmp_t *f);

/* Create a new file (O_CREAT|O_EXCL|O_NOFOLLOW) with mode, write, fsync.
 * SK_ERR_EXISTS if it exists; a half-written file is removed. */
int sk_file_write_new(const char *path, const void *buf, size_t len,
    mode_t mode, sk_err_t *err) SK_WUR;

/* 0 if path (opened, not followed) is a regular file with no group/other
 * permission bits; SK_ERR_PERM naming the mode otherwise. */
int sk_file_check_private(const char *path, sk_err_t *err) SK_WUR;

#endif
