/* SPDX-License-Identifier: Apache-2.0 */
/*
 * safe_fs.c - no-link file operations beneath a directory descriptor
 * (safe_fs.h). Owns the two ways of resolving beneath a descriptor (openat2
 * when the kernel has it, else a component walk with O_NOFOLLOW, the
 * answer remembered), the naming of what was wrong ("staging/x/1 is a
 * symbolic link") and the descriptor-only mkdir -p, atomic write and tree
 * removal the staging and archive code build on. Nothing here takes a path
 * from the root of the file system except forge_fs_open_root.
 */
#include "fs/safe_fs.h"
#include "log/log.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHOWN_MAX     512
#define REMOVE_DEPTH  32   /* descriptors held at once by a removal: 2 each */
#define REMOVE_PASSES 4096 /* re-reads of one folder while entries remain */
#define REMOVE_TRIES  3    /* an entry that changes under us, tried again */

static atomic_int openat2_state; /* 0 unknown, 1 works, -1 ENOSYS */
static atomic_bool fallback_forced;

void forge_fs_force_fallback(bool on)
{
    atomic_store(&fallback_forced, on);
}

bool forge_fs_have_openat2(void)
{
    return atomic_load(&openat2_state) > 0 && !atomic_load(&fallback_forced);
}

const char *forge_fs_uid_name(uid_t uid, char *buf, size_t size)
{
    if (uid == 0)
        snprintf(buf, size, "root");
    else
        snprintf(buf, size, "uid %lu", (unsigned long)uid);
    return buf;
}

/* ---- names -------------------------------------------------------------- */

/* where + "/" + the first n bytes of rel, for messages. */
static const char *shown(char *buf, const char *where, const char *rel,
                         size_t n)
{
    snprintf(buf, SHOWN_MAX, "%s%s%.*s", where, *where && n ? "/" : "", (int)n,
             rel);
    if (!*buf)
        snprintf(buf, SHOWN_MAX, "the storage root");
    return buf;
}

/* One component: not empty, ".", "..", nor holding a '/'. */
static bool component_ok(const char *c, size_t n)
{
    return n > 0 && !(n == 1 && c[0] == '.') &&
           !(n == 2 && c[0] == '.' && c[1] == '.') && !memchr(c, '/', n);
}

/* A plain relative path (safe_fs.h); "" only when allow_empty. */
static bool rel_ok(const char *rel, bool allow_empty)
{
    if (!rel || rel[0] == '/')
        return false;
    if (!*rel)
        return allow_empty;
    for (const char *p = rel;;) {
        size_t n = strcspn(p, "/");
        if (!component_ok(p, n))
            return false;
        if (!p[n])
            return true;
        p += n + 1;
    }
}

static forge_rc_t bad_rel(const char *where, const char *rel,
                          forge_error_t *err)
{
    return forge_error_set(err, FORGE_EINVAL, "storage",
                           "%s/%s: not a plain relative path (no '/' at the "
                           "start, no empty, '.' or '..' component)",
                           where, rel ? rel : "(null)");
}

/* ---- the two ways beneath a descriptor ---------------------------------- */

static int open_beneath2(int dirfd, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)(unsigned)flags,
        .mode = flags & (O_CREAT | O_TMPFILE) ? mode : 0,
        .resolve =
            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };

    return (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
}

/* Every component but the last opened O_PATH | O_DIRECTORY | O_NOFOLLOW:
 * a link there fails (ENOTDIR), as a link at the last one does (ELOOP, or
 * caught by raw_open's fstat for O_PATH). rel is plain (rel_ok). */
static int open_walk(int dirfd, const char *rel, int flags, mode_t mode)
{
    char *copy = forge_xstrdup(rel), *name = copy, *slash;
    int cur = dirfd, fd = -1, saved;

    while (cur >= 0 && (slash = strchr(name, '/'))) {
        int next;
        *slash = '\0';
        next = openat(cur, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        saved = errno;
        if (cur != dirfd)
            close(cur);
        errno = saved;
        cur = next;
        name = slash + 1;
    }
    if (cur >= 0)
        fd = openat(cur, name, flags, mode);
    saved = errno;
    if (cur >= 0 && cur != dirfd)
        close(cur);
    free(copy);
    errno = saved;
    return fd;
}

/* -1 and errno as open(2); a link reached anyhow is ELOOP. */
static int raw_open(int dirfd, const char *rel, int flags, mode_t mode,
                    struct stat *st)
{
    int fd = -1;
    bool walked = true;

    flags |= O_NOFOLLOW | O_CLOEXEC;
    if (!atomic_load(&fallback_forced) && atomic_load(&openat2_state) >= 0) {
        fd = open_beneath2(dirfd, rel, flags, mode);
        walked = fd < 0 && (errno == ENOSYS || errno == EPERM);
        if (fd < 0 && errno == ENOSYS)
            atomic_store(&openat2_state, -1); /* not on this kernel */
        else if (fd >= 0)
            atomic_store(&openat2_state, 1);
        /* EPERM: a seccomp filter may refuse openat2 itself; the walk
         * says whether the open is really refused. */
    }
    if (walked)
        fd = open_walk(dirfd, rel, flags, mode);
    if (fd >= 0 && fstat(fd, st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if (fd >= 0 && S_ISLNK(st->st_mode)) { /* O_PATH | O_NOFOLLOW */
        close(fd);
        errno = ELOOP;
        return -1;
    }
    return fd;
}

/* After ELOOP / ENOTDIR / EXDEV: which component was wrong, by a walk that
 * looks at each without following it. */
static forge_rc_t name_the_culprit(int dirfd, const char *where,
                                   const char *rel, bool want_dir, int errnum,
                                   forge_error_t *err)
{
    char buf[SHOWN_MAX], *copy = forge_xstrdup(rel), *name = copy, *slash;
    const char *what = NULL;
    int cur = dirfd;

    for (bool last = false; !what && cur >= 0 && !last;) {
        struct stat st;
        slash = strchr(name, '/');
        last = !slash;
        if (slash)
            *slash = '\0';
        if (fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            break;
        if (S_ISLNK(st.st_mode))
            what = "is a symbolic link";
        else if ((!last || want_dir) && !S_ISDIR(st.st_mode))
            what = "is not a directory";
        if (what) {
            shown(buf, where, rel, (size_t)(name - copy) + strlen(name));
        } else if (!last) {
            int next = openat(cur, name,
                              O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cur != dirfd)
                close(cur);
            cur = next;
            name = slash + 1;
        }
    }
    if (cur >= 0 && cur != dirfd)
        close(cur);
    free(copy);
    if (what)
        return forge_error_set(err, FORGE_EUNSAFE_PATH, "storage", "%s %s", buf,
                               what);
    return forge_error_set(err, FORGE_EUNSAFE_PATH, "storage",
                           "%s: %s (a link or a foreign file on the way)",
                           shown(buf, where, rel, strlen(rel)),
                           strerror(errnum));
}

/* ---- opening ------------------------------------------------------------ */

forge_rc_t forge_fs_open_root(const char *path, int *fd, forge_error_t *err)
{
    struct stat st;

    *fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0 && (errno == ENOTDIR || errno == ELOOP) &&
        lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return forge_error_set(err, FORGE_EUNSAFE_PATH, "storage",
                               "%s is a symbolic link: configure the folder "
                               "it leads to",
                               path);
    if (*fd < 0)
        return forge_error_set(err, FORGE_EIO, "storage", "%s: %s", path,
                               strerror(errno));
    return FORGE_OK;
}

forge_rc_t forge_fs_open(int dirfd, const char *where, const char *rel,
                         int flags, mode_t mode, int *fd, struct stat *st,
                         forge_error_t *err)
{
    struct stat own;
    char buf[SHOWN_MAX];

    *fd = -1;
    if (!rel_ok(rel, false))
        return bad_rel(where, rel, err);
    *fd = raw_open(dirfd, rel, flags, mode, st ? st : &own);
    if (*fd >= 0 || errno == ENOENT)
        return FORGE_OK;
    if (errno == ELOOP || errno == ENOTDIR || errno == EXDEV)
        return name_the_culprit(dirfd, where, rel, flags & O_DIRECTORY, errno,
                                err);
    return forge_error_set(err, FORGE_EIO, "storage", "%s: %s",
                           shown(buf, where, rel, strlen(rel)),
                           strerror(errno));
}

forge_rc_t forge_fs_open_file(int dirfd, const char *where, const char *rel,
                              int *fd, struct stat *st, forge_error_t *err)
{
    struct stat own;
    char buf[SHOWN_MAX];
    const char *what = NULL;
    forge_rc_t rc;

    st = st ? st : &own;
    rc =
        forge_fs_open(dirfd, where, rel, O_RDONLY | O_NONBLOCK, 0, fd, st, err);
    if (rc || *fd < 0)
        return rc;
    if (!S_ISREG(st->st_mode))
        what = "is not a regular file";
    else if (st->st_nlink > 1)
        what = "has more than one hard link";
    if (!what)
        return FORGE_OK;
    close(*fd);
    *fd = -1;
    return forge_error_set(err, FORGE_EUNSAFE_PATH, "storage", "%s %s",
                           shown(buf, where, rel, strlen(rel)), what);
}

forge_rc_t forge_fs_resolve(int dirfd, const char *where, const char *rel,
                            const struct stat *dir_st, forge_fs_resolved_t *out,
                            forge_error_t *err)
{
    char *copy;
    size_t n = 0;
    forge_rc_t rc = FORGE_OK;

    memset(out, 0, sizeof(*out));
    out->fd = -1;
    if (!rel_ok(rel, true))
        return bad_rel(where, rel, err);
    for (const char *p = rel; *rel && p; p = strchr(p + 1, '/'))
        n++; /* rel_ok: no empty component */
    copy = forge_xstrdup(rel);
    /* Longest prefix first: a missing component ends the path there. */
    for (size_t k = n; k > 0 && !rc && out->fd < 0; k--) {
        if (k < n)
            *strrchr(copy, '/') = '\0';
        rc = forge_fs_open(dirfd, where, copy, O_PATH, 0, &out->fd, &out->st,
                           err);
        out->depth = k;
    }
    free(copy);
    if (!rc && out->fd < 0 && dir_st) {
        out->depth = 0;
        out->st = *dir_st;
    } else if (!rc && out->fd < 0) {
        out->depth = 0;
        out->fd = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (out->fd < 0 || fstat(out->fd, &out->st) != 0)
            rc = forge_error_set(err, FORGE_EIO, "storage", "%s: %s",
                                 *where ? where : "the storage root",
                                 strerror(errno));
    }
    out->exists = !rc && out->depth == n;
    if (rc && out->fd >= 0) {
        close(out->fd);
        out->fd = -1;
    }
    return rc;
}

/* ---- mkdir -p ----------------------------------------------------------- */

/* An opened folder given its level's owner and mode (st: as it was). */
static forge_rc_t settle_dir(int fd, const struct stat *st, const char *name,
                             const forge_fs_level_t *lv, bool created,
                             forge_error_t *err)
{
    uid_t me = geteuid();
    uid_t want = lv->owner.uid != (uid_t)-1 ? lv->owner.uid : me;
    gid_t want_gid = lv->owner.gid;
    bool owner_ok =
        st->st_uid == want && (want_gid == (gid_t)-1 || st->st_gid == want_gid);
    char was[32], should[32];

    if (me == 0 && !created && !owner_ok) {
        forge_fs_uid_name(st->st_uid, was, sizeof(was));
        forge_fs_uid_name(want, should, sizeof(should));
        if (lv->existing == FORGE_FS_OWNER_OR_US && st->st_uid != want &&
            st->st_uid != me)
            return forge_error_set(err, FORGE_EUNSAFE_PATH, "storage",
                                   "%s is owned by %s, not %s", name, was,
                                   should);
        if (lv->existing == FORGE_FS_REPAIR)
            forge_log_warn("%s was owned by %s (mode %04o): given to %s, "
                           "mode %04o",
                           name, was, (unsigned)(st->st_mode & 07777), should,
                           (unsigned)lv->mode);
    }
    /* A folder taken over becomes wholly the worker's: its group too. */
    if (want_gid == (gid_t)-1 && lv->owner.uid == (uid_t)-1 &&
        st->st_uid != want)
        want_gid = getegid();
    if (me == 0 && !owner_ok && fchown(fd, want, want_gid) != 0)
        return forge_error_set(err, FORGE_EIO, "storage", "chown %s: %s", name,
                               strerror(errno));
    /* The explicit mode also sets the ACL mask of a default ACL: the
     * group bits shown are that mask, so a folder already showing the
     * level's mode has it. */
    if ((me == 0 || st->st_uid == me) && (st->st_mode & 07777) != lv->mode &&
        fchmod(fd, lv->mode) != 0)
        return forge_error_set(err, FORGE_EIO, "storage", "chmod %s: %s", name,
                               strerror(errno));
    return FORGE_OK;
}

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* One component of a mkdir -p: opened, made first if missing (at once
 * when its parent was just made: *created says whether this one was),
 * settled. */
static forge_rc_t mkdir_one(int parent, const char *where, const char *rel,
                            size_t upto, const forge_fs_level_t *lv, int *fd,
                            bool *created, forge_error_t *err)
{
    const char *name = rel + upto;
    char comp[NAME_MAX + 1], buf[SHOWN_MAX];
    size_t n = strcspn(name, "/");
    bool parent_new = *created;
    struct stat st;
    forge_rc_t rc;

    if (n > NAME_MAX)
        return forge_error_set(err, FORGE_EINVAL, "storage",
                               "%s: name too long",
                               shown(buf, where, rel, upto + n));
    memcpy(comp, name, n);
    comp[n] = '\0';
    shown(buf, where, rel, upto + n);
    *created = false;
    *fd = parent_new ? -1 : openat(parent, comp, DIR_FLAGS);
    if (parent_new || (*fd < 0 && errno == ENOENT)) {
        *created = mkdirat(parent, comp, 0700) == 0;
        if (!*created && errno != EEXIST)
            return forge_error_set(err, FORGE_EIO, "storage", "mkdir %s: %s",
                                   buf, strerror(errno));
        *fd = openat(parent, comp, DIR_FLAGS);
    }
    if (*fd < 0 && (errno == ENOTDIR || errno == ELOOP) &&
        lv->existing == FORGE_FS_REPLACE && unlinkat(parent, comp, 0) == 0) {
        forge_log_warn("%s was not a folder (a link or file planted there): "
                       "removed, never followed",
                       buf);
        *created = mkdirat(parent, comp, 0700) == 0;
        *fd = openat(parent, comp, DIR_FLAGS);
    }
    if (*fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
        bool link = fstatat(parent, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISLNK(st.st_mode);
        return forge_error_set(err, FORGE_EUNSAFE_PATH, "storage", "%s %s", buf,
                               link ? "is a symbolic link"
                                    : "is not a directory");
    }
    if (*fd < 0)
        return forge_error_set(err, FORGE_EIO, "storage", "open %s: %s", buf,
                               strerror(errno));
    if (fstat(*fd, &st) != 0)
        rc = forge_error_set(err, FORGE_EIO, "storage", "stat %s: %s", buf,
                             strerror(errno));
    else
        rc = settle_dir(*fd, &st, buf, lv, *created, err);
    if (rc) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

forge_rc_t forge_fs_mkdirs(int dirfd, const char *where, const char *rel,
                           const forge_fs_level_t *levels, size_t level_count,
                           int *fd, forge_error_t *err)
{
    int cur = dirfd;
    size_t upto = 0, i = 0;
    bool created = false; /* the last component was made here */
    forge_rc_t rc = FORGE_OK;

    *fd = -1;
    if (!rel_ok(rel, false) || level_count == 0)
        return bad_rel(where, rel, err);
    for (;; i++) {
        const forge_fs_level_t *lv =
            &levels[i < level_count ? i : level_count - 1];
        int next = -1;
        rc = mkdir_one(cur, where, rel, upto, lv, &next, &created, err);
        if (cur != dirfd)
            close(cur);
        cur = next;
        if (rc)
            break;
        upto += strcspn(rel + upto, "/");
        if (!rel[upto])
            break;
        upto++;
    }
    if (!rc)
        *fd = cur;
    return rc;
}

/* ---- files -------------------------------------------------------------- */

forge_rc_t forge_fs_create_temp(int dirfd, const char *where, const char *name,
                                mode_t mode, forge_fs_owner_t owner, char **tmp,
                                int *fd, forge_error_t *err)
{
    static atomic_uint seq;
    char buf[SHOWN_MAX];
    size_t n = strlen(name) + 64;

    *tmp = NULL;
    *fd = -1;
    if (!component_ok(name, strlen(name)))
        return bad_rel(where, name, err);
    *tmp = forge_xmalloc(n);
    for (int i = 0; i < 16 && *fd < 0; i++) {
        snprintf(*tmp, n, ".%s.tmp.%ld.%ld.%u", name, (long)getpid(),
                 (long)syscall(SYS_gettid), atomic_fetch_add(&seq, 1));
        *fd =
            openat(dirfd, *tmp,
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (*fd < 0 && errno != EEXIST)
            break;
    }
    shown(buf, where, *tmp, strlen(*tmp));
    if (*fd < 0) {
        forge_error_set(err, FORGE_EIO, "storage", "create %s: %s", buf,
                        strerror(errno));
    } else if (fchmod(*fd, mode) != 0 ||
               ((owner.uid != (uid_t)-1 || owner.gid != (gid_t)-1) &&
                fchown(*fd, owner.uid, owner.gid) != 0)) {
        forge_error_set(err, FORGE_EIO, "storage", "chmod/chown %s: %s", buf,
                        strerror(errno));
        close(*fd);
        *fd = -1;
        unlinkat(dirfd, *tmp, 0);
    }
    if (*fd >= 0)
        return FORGE_OK;
    free(*tmp);
    *tmp = NULL;
    return FORGE_EIO;
}

forge_rc_t forge_fs_write_file(int dirfd, const char *where, const char *name,
                               const void *data, size_t len, mode_t mode,
                               forge_fs_owner_t owner, forge_error_t *err)
{
    return forge_fs_put_file(dirfd, where, name, data, len, mode, owner,
                             FORGE_FS_SYNCED, err);
}

forge_rc_t forge_fs_put_file(int dirfd, const char *where, const char *name,
                             const void *data, size_t len, mode_t mode,
                             forge_fs_owner_t owner, forge_fs_sync_t sync,
                             forge_error_t *err)
{
    char buf[SHOWN_MAX], *tmp;
    int fd;
    forge_rc_t rc;

    if ((rc = forge_fs_create_temp(dirfd, where, name, mode, owner, &tmp, &fd,
                                   err)))
        return rc;
    shown(buf, where, name, strlen(name));
    if (!forge_write_all(fd, data, len) ||
        (sync == FORGE_FS_SYNCED && fsync(fd) != 0)) {
        rc = forge_error_set(err, FORGE_EIO, "storage", "write %s: %s", buf,
                             strerror(errno));
        close(fd);
    } else if (close(fd) != 0) {
        rc = forge_error_set(err, FORGE_EIO, "storage", "write %s: %s", buf,
                             strerror(errno));
    } else if (renameat(dirfd, tmp, dirfd, name) != 0) {
        /* rename never follows a link at name; a folder there stays. */
        bool folder = errno == EISDIR || errno == ENOTEMPTY ||
                      errno == EEXIST || errno == ENOTDIR;
        rc = forge_error_set(err, folder ? FORGE_EUNSAFE_PATH : FORGE_EIO,
                             "storage", "%s %s", buf,
                             folder ? "is a directory" : strerror(errno));
    }
    if (rc)
        unlinkat(dirfd, tmp, 0);
    free(tmp);
    return rc;
}

void forge_fs_sync_dir(int dirfd)
{
    (void)fsync(dirfd);
}

/* ---- removing a tree ---------------------------------------------------- */

typedef struct rm_ctx {
    dev_t dev;    /* the filesystem removal stays on */
    int top;      /* the folder removed: deep folders are moved up into it */
    unsigned seq; /* names of the folders moved up */
    forge_error_t *err;
} rm_ctx_t;

static forge_rc_t rm_entry(rm_ctx_t *c, int parent, const char *pname,
                           const char *name, int depth);

/* Everything in the folder fd (named fname), pass after pass until a pass
 * finds it empty: removing while reading may skip entries, and folders
 * moved up land here. */
static forge_rc_t rm_contents(rm_ctx_t *c, int fd, const char *fname, int depth)
{
    for (int pass = 0; pass < REMOVE_PASSES; pass++) {
        /* A new open file description each pass: a fresh read position. */
        int lfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
        struct dirent *de;
        bool any = false;
        forge_rc_t rc = FORGE_OK;

        if (!d) {
            if (lfd >= 0)
                close(lfd);
            return forge_error_set(c->err, FORGE_EIO, "storage", "list %s: %s",
                                   fname, strerror(errno));
        }
        while (!rc && (de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            any = true;
            rc = rm_entry(c, fd, fname, de->d_name, depth);
        }
        closedir(d);
        if (rc || !any)
            return rc;
    }
    return FORGE_OK; /* still not empty: the rmdir says so */
}

/* A folder too deep to hold a descriptor for: moved up into the top
 * folder, where a later pass removes it (rename never follows a link). */
static forge_rc_t rm_move_up(rm_ctx_t *c, int parent, const char *shown_name,
                             const char *name)
{
    char up[64];

    for (int i = 0; i < 64; i++) {
        snprintf(up, sizeof(up), ".forge-rm.%u", c->seq++);
        if (renameat(parent, name, c->top, up) == 0 || errno == ENOENT)
            return FORGE_OK;
        if (errno != EEXIST && errno != ENOTEMPTY)
            break;
    }
    return forge_error_set(c->err, FORGE_EIO, "storage", "move %s: %s",
                           shown_name, strerror(errno));
}

/* One folder entry, as it is now: unlinked, or emptied and removed. */
static forge_rc_t rm_folder(rm_ctx_t *c, int parent, const char *path,
                            const char *name, int depth, bool *again)
{
    struct stat st;
    int fd;
    forge_rc_t rc;

    if (depth >= REMOVE_DEPTH)
        return rm_move_up(c, parent, path, name);
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        *again = errno == ELOOP || errno == ENOTDIR; /* swapped meanwhile */
        return *again || errno == ENOENT
                   ? FORGE_OK
                   : forge_error_set(c->err, FORGE_EIO, "storage",
                                     "open %s: %s", path, strerror(errno));
    }
    if (fstat(fd, &st) != 0 || st.st_dev != c->dev) {
        close(fd);
        return forge_error_set(c->err, FORGE_EUNSAFE_PATH, "storage",
                               "%s is on another filesystem (a mount point): "
                               "not removed",
                               path);
    }
    if (depth == 0)
        c->top = fd;
    rc = rm_contents(c, fd, path, depth + 1);
    close(fd);
    if (depth == 0)
        c->top = -1;
    if (rc)
        return rc;
    if (unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
        return FORGE_OK;
    *again = errno == ENOTEMPTY || errno == EEXIST || errno == ENOTDIR;
    return *again ? FORGE_OK
                  : forge_error_set(c->err, FORGE_EIO, "storage",
                                    "remove %s: %s", path, strerror(errno));
}

static forge_rc_t rm_entry(rm_ctx_t *c, int parent, const char *pname,
                           const char *name, int depth)
{
    char *path = *pname ? forge_xmalloc(strlen(pname) + strlen(name) + 2)
                        : forge_xstrdup(name);
    forge_rc_t rc = FORGE_OK;
    bool again = true;

    if (*pname)
        sprintf(path, "%s/%s", pname, name);
    for (int t = 0; t < REMOVE_TRIES && again && !rc; t++) {
        struct stat st;
        again = false;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT)
                rc = forge_error_set(c->err, FORGE_EIO, "storage",
                                     "stat %s: %s", path, strerror(errno));
        } else if (S_ISDIR(st.st_mode) && st.st_dev != c->dev) {
            rc = forge_error_set(c->err, FORGE_EUNSAFE_PATH, "storage",
                                 "%s is on another filesystem (a mount "
                                 "point): not removed",
                                 path);
        } else if (S_ISDIR(st.st_mode)) {
            rc = rm_folder(c, parent, path, name, depth, &again);
        } else if (unlinkat(parent, name, 0) != 0 && errno != ENOENT) {
            /* a link, a FIFO, a file: the entry goes, its target stays */
            again = errno == EISDIR; /* became a folder meanwhile */
            if (!again)
                rc = forge_error_set(c->err, FORGE_EIO, "storage",
                                     "remove %s: %s", path, strerror(errno));
        }
    }
    if (!rc && again)
        rc = forge_error_set(c->err, FORGE_EIO, "storage",
                             "remove %s: it kept changing", path);
    free(path);
    return rc;
}

forge_rc_t forge_fs_remove(int dirfd, const char *where, const char *name,
                           forge_error_t *err)
{
    rm_ctx_t c = {0, -1, 0, err};
    struct stat st;

    if (!component_ok(name, strlen(name)))
        return bad_rel(where, name, err);
    if (fstat(dirfd, &st) != 0)
        return forge_error_set(err, FORGE_EIO, "storage", "stat %s: %s",
                               *where ? where : "the storage root",
                               strerror(errno));
    c.dev = st.st_dev;
    return rm_entry(&c, dirfd, where, name, 0);
}
