/* SPDX-License-Identifier: Apache-2.0 */
/*
 * safe_fs.h - file operations on the shared storage, where jobs write too.
 *
 * Jobs are untrusted: their code runs as the storage's owner (or a tenant's
 * user) and can plant links, FIFOs and hard links anywhere it may write,
 * while the worker reads, writes, chowns and deletes there as root. So every
 * operation here starts from a directory descriptor the worker opened
 * itself and resolves beneath it, refusing a symbolic link in ANY component
 * (not only the last): openat2() with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS
 * | RESOLVE_NO_MAGICLINKS where the kernel has it, else a walk of
 * openat(O_NOFOLLOW) one component at a time. Owners and modes are set on
 * descriptors (fchown, fchmod), never on paths; trees are removed by
 * descriptors, links unlinked and never followed.
 *
 * A relative path here is a plain one: no leading '/', no empty, "." or
 * ".." component (anything else is FORGE_EINVAL). `where` names the
 * directory descriptor in messages, storage-relative ("" for the root
 * itself, "staging/x/1"), so a refusal reads "staging/x/1 is a symbolic
 * link". Refusals are FORGE_EUNSAFE_PATH; ordinary I/O failures FORGE_EIO.
 *
 * Thread-safe: no shared state but the remembered answer of "has the kernel
 * openat2?" (atomic).
 */
#ifndef FORGE_SAFE_FS_H
#define FORGE_SAFE_FS_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Who a file or folder is given to; (uid_t)-1 / (gid_t)-1: left alone. */
typedef struct forge_fs_owner {
    uid_t uid;
    gid_t gid;
} forge_fs_owner_t;

#define FORGE_FS_KEEP ((forge_fs_owner_t){(uid_t)-1, (gid_t)-1})

/* Opens a directory the configuration names (absolute path): O_DIRECTORY |
 * O_NOFOLLOW, so the path's last component must be a real directory (the
 * folders above it are the site's). *fd new. */
forge_rc_t forge_fs_open_root(const char *path, int *fd,
                              forge_error_t *err) FORGE_WARN_UNUSED;

/* Opens rel beneath dirfd with flags (O_NOFOLLOW and O_CLOEXEC are added;
 * mode for O_CREAT). A link in any component, or a component that should be
 * a folder and is not, is FORGE_EUNSAFE_PATH. When a component does not
 * exist: FORGE_OK with *fd = -1 (the caller decides). st (may be NULL): the
 * opened file's fstat. */
forge_rc_t forge_fs_open(int dirfd, const char *where, const char *rel,
                         int flags, mode_t mode, int *fd, struct stat *st,
                         forge_error_t *err) FORGE_WARN_UNUSED;

/* A regular file beneath dirfd for reading, without waiting on a FIFO
 * (O_NONBLOCK). Anything but a regular file with one link (a FIFO, a
 * device, a folder; a hard link may be another launch's or root's file) is
 * FORGE_EUNSAFE_PATH. A missing one: FORGE_OK, *fd = -1. */
forge_rc_t forge_fs_open_file(int dirfd, const char *where, const char *rel,
                              int *fd, struct stat *st,
                              forge_error_t *err) FORGE_WARN_UNUSED;

/* What an existing folder must be for forge_fs_mkdirs to use it. */
typedef enum forge_fs_existing {
    /* The worker's own folder: whatever owns it now (an old deployment
     * made it the job user's), it is made the level's (owner, mode), with
     * a warning. */
    FORGE_FS_REPAIR,
    /* As REPAIR, and a link or anything but a folder in its place (planted
     * by a job) is unlinked - unlinking a link never touches its target -
     * and the folder made anew, with a warning. For the worker's own areas
     * where nothing of a job's belongs (artifacts). */
    FORGE_FS_REPLACE,
    /* A folder handed to a job: accepted only when owned by the level's
     * owner or by the worker (a retry), then given owner and mode. */
    FORGE_FS_OWNER_OR_US,
} forge_fs_existing_t;

typedef struct forge_fs_level {
    mode_t mode;
    /* FORGE_FS_KEEP: the worker's (its group too when taken over from
     * someone else); a gid alone: the worker's user with that group */
    forge_fs_owner_t owner;
    forge_fs_existing_t existing;
} forge_fs_level_t;

/*
 * mkdir -p of rel beneath dirfd: every component opened without
 * following (and, only when missing, made first: mkdirat, mode 0700; below
 * a folder just made nothing is looked for), checked to be a folder, and
 * given its level's owner and mode by descriptor where they differ
 * (fchmod also sets the ACL mask a default ACL would have widened: the
 * mode's group bits are that mask). Component i follows
 * levels[i], the last level serving the components beyond. Ownership is
 * only checked and changed when the worker runs as root. *fd: the last
 * folder (new).
 */
forge_rc_t forge_fs_mkdirs(int dirfd, const char *where, const char *rel,
                           const forge_fs_level_t *levels, size_t level_count,
                           int *fd, forge_error_t *err) FORGE_WARN_UNUSED;

/*
 * A new temporary file beside name in dirfd: ".<name>.tmp.<pid>.<tid>.<n>"
 * (unique per writer), O_EXCL, given mode and owner by descriptor. *tmp
 * new (the temporary's name), *fd new.
 */
forge_rc_t forge_fs_create_temp(int dirfd, const char *where, const char *name,
                                mode_t mode, forge_fs_owner_t owner, char **tmp,
                                int *fd, forge_error_t *err) FORGE_WARN_UNUSED;

/* Whether a file written is synced (fsync) before it is renamed into
 * place: only what a crash of this host must not lose. */
typedef enum forge_fs_sync {
    FORGE_FS_SYNCED,
    FORGE_FS_UNSYNCED,
} forge_fs_sync_t;

/* name in dirfd holds data, atomically: a temporary (forge_fs_create_temp)
 * written, synced as `sync` says and renamed over name. A link planted at
 * name is replaced, never written through. */
forge_rc_t forge_fs_put_file(int dirfd, const char *where, const char *name,
                             const void *data, size_t len, mode_t mode,
                             forge_fs_owner_t owner, forge_fs_sync_t sync,
                             forge_error_t *err) FORGE_WARN_UNUSED;

/* forge_fs_put_file, FORGE_FS_SYNCED. */
forge_rc_t forge_fs_write_file(int dirfd, const char *where, const char *name,
                               const void *data, size_t len, mode_t mode,
                               forge_fs_owner_t owner,
                               forge_error_t *err) FORGE_WARN_UNUSED;

/*
 * Removes the entry name of dirfd and, when it is a folder, everything in
 * it, by descriptors: links (and any other non-folder) are unlinked, never
 * followed; a folder on another filesystem than dirfd (a mount point) is
 * FORGE_EUNSAFE_PATH and left alone. Any depth, a bounded number of
 * descriptors. FORGE_OK when name does not exist.
 */
forge_rc_t forge_fs_remove(int dirfd, const char *where, const char *name,
                           forge_error_t *err) FORGE_WARN_UNUSED;

/* What forge_fs_resolve found. */
typedef struct forge_fs_resolved {
    int fd;         /* O_PATH: the deepest component that exists (a dup of
                       dirfd when none does, or -1 when dir_st was given:
                       dirfd itself); the caller closes it */
    struct stat st; /* its fstat */
    size_t depth;   /* how many components of rel exist */
    bool exists;    /* all of them */
} forge_fs_resolved_t;

/* Resolves rel beneath dirfd as far as it exists, refusing a link or a
 * non-folder on the way (FORGE_EUNSAFE_PATH). rel "" is dirfd itself.
 * dir_st (may be NULL): dirfd's fstat, when the caller has it: then
 * nothing existing beneath dirfd costs no more syscalls (out->fd -1). */
forge_rc_t forge_fs_resolve(int dirfd, const char *where, const char *rel,
                            const struct stat *dir_st, forge_fs_resolved_t *out,
                            forge_error_t *err) FORGE_WARN_UNUSED;

/* fsync of a folder (a rename or link in it made durable); errors ignored. */
void forge_fs_sync_dir(int dirfd);

/* "root" or "uid N" (into buf). */
const char *forge_fs_uid_name(uid_t uid, char *buf, size_t size);

/* Tests: true forces the component walk even where openat2 exists. */
void forge_fs_force_fallback(bool on);

/* Whether the last open used openat2 (tests: both paths are exercised). */
bool forge_fs_have_openat2(void);

#endif
