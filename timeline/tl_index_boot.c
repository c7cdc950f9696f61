/*
 * tl_index_boot.c -- whether the system went down while the index was
 * open.  The index commits a batch without LMDB's own syncs and syncs it
 * out of the timeline's lock (tl_index_seal, tl_index_sync), so between
 * the two a system crash (not a process crash: the page cache keeps
 * what was written) may leave the last commit half on disk, which LMDB
 * cannot always tell.  So while the index is open, index/boot holds the
 * boot's id (/proc/sys/kernel/random/boot_id); a clean close, after its
 * last sync, removes it.  A start that finds it from another boot
 * rebuilds the index from the log instead of reading it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sk/file.h>

#include "tl.h"

#define TL_BOOT_ID    "/proc/sys/kernel/random/boot_id"
#define TL_BOOT_FILE  "boot"
#define TL_BOOT_MAX   64


/* This boot's id, or "unknown" where the kernel gives none: then any
 * marker left behind counts as another boot's.  (A /proc file has no
 * size to stat, so it is read as it comes.) */
static void
tl_index_boot_id(char id[TL_BOOT_MAX])
{
    ssize_t  n = -1;
    int      fd = open(TL_BOOT_ID, O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        do {
            n = read(fd, id, TL_BOOT_MAX - 1);
        } while (n < 0 && errno == EINTR);
        close(fd);
    }
    if (n <= 0 || id[n - 1] != '\n') {
        snprintf(id, TL_BOOT_MAX, "unknown\n");
        return;
    }
    id[n] = '\0';
}


void
tl_index_boot_begin(const char *dir, int *crashed, int *marked)
{
    char      path[4200], id[TL_BOOT_MAX], *old;
    size_t    len;
    sk_err_t  why;

    *crashed = 0;
    *marked = 0;
    snprintf(path, sizeof(path), "%s/%s", dir, TL_BOOT_FILE);
    tl_index_boot_id(id);
    if (sk_file_read(&old, &len, path, TL_BOOT_MAX - 1, &why) == 0) {
        *crashed = strcmp(old, id) != 0 || strcmp(id, "unknown\n") == 0;
        free(old);
    } else if (why.code != SK_ERR_SYSTEM || why.sys_errno != ENOENT) {
        *crashed = 1;           /* unreadable: assume the worst */
    }
    /* Durable before the first commit that could be torn; without it
     * (a full disk) the index commits with LMDB's own syncs. */
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        sk_err_sys(&why, "%s: mkdir", dir);
    } else if (sk_file_write_atomic(path, id, strlen(id), 0600, &why) == 0) {
        *marked = 1;
        return;
    }
    tl_log("%s: %s: the index syncs every commit", path, why.msg);
}


void
tl_index_boot_end(const char *dir)
{
    char  path[4200];

    snprintf(path, sizeof(path), "%s/%s", dir, TL_BOOT_FILE);
    if (unlink(path) != 0 && errno != ENOENT) {
        tl_log("%s: unlink: %s (the next start after a reboot rebuilds "
            "the index)", path, strerror(errno));
    }
}
