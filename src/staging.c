/*
 * staging.c - creating and removing staging folders (staging.h). Files are
 * written with O_NOFOLLOW to a temporary name and renamed, so a link
 * planted in the folder is never written through and a reader never sees a
 * half-written file.
 */
#define _XOPEN_SOURCE 700
#include "staging.h"
#include "paths.h"
#include "render.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

forge_rc_t forge_storage_mkdirs(const char *root, const char *path, uid_t uid,
                                gid_t gid, forge_error_t *err)
{
    char *copy = forge_xstrdup(path);
    forge_rc_t rc = FORGE_OK;

    for (char *p = copy + strlen(root) + 1; p && !rc; p = strchr(p + 1, '/')) {
        char saved = *p;
        *p = '\0';
        if (mkdir(copy, 0775) == 0) {
            if (uid != (uid_t)-1 && chown(copy, uid, gid) != 0)
                rc = forge_error_set(err, FORGE_EIO, "storage", "chown %s: %s",
                                     copy, strerror(errno));
        } else if (errno != EEXIST) {
            rc = forge_error_set(err, FORGE_EIO, "storage", "mkdir %s: %s",
                                 copy, strerror(errno));
        }
        *p = saved;
    }
    if (!rc && mkdir(copy, 0775) != 0 && errno != EEXIST)
        rc = forge_error_set(err, FORGE_EIO, "storage", "mkdir %s: %s", copy,
                             strerror(errno));
    if (!rc && uid != (uid_t)-1 && chown(copy, uid, gid) != 0)
        rc = forge_error_set(err, FORGE_EIO, "storage", "chown %s: %s", copy,
                             strerror(errno));
    free(copy);
    return rc;
}

static forge_rc_t write_file(const char *dir, const char *name,
                             const char *text, mode_t mode, uid_t uid,
                             gid_t gid, forge_error_t *err)
{
    char *path = forge_path_join(dir, name), *tmp = NULL;
    size_t len = strlen(text), n = strlen(path) + 8;
    forge_rc_t rc = FORGE_EIO;
    int fd;

    tmp = forge_xmalloc(n);
    snprintf(tmp, n, "%s.tmp", path);
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        goto out;
    /* fchmod: a default ACL on the storage may have widened the mode. */
    if (fchmod(fd, mode) != 0 || write(fd, text, len) != (ssize_t)len ||
        (uid != (uid_t)-1 && fchown(fd, uid, gid) != 0) || fsync(fd) != 0) {
        close(fd);
        goto out;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0)
        goto out;
    rc = FORGE_OK;
out:
    if (rc) {
        forge_error_set(err, rc, "staging", "writing %s: %s", path,
                        strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    free(path);
    return rc;
}

forge_rc_t forge_staging_prepare(const forge_config_t *cfg,
                                 const forge_launch_t *launch,
                                 const char *script, char **path,
                                 forge_error_t *err)
{
    char *dir = forge_path_staging(cfg, launch->launch_id, launch->attempt);
    uid_t uid = (uid_t)-1;
    gid_t gid = (gid_t)-1;
    struct stat root;
    forge_rc_t rc;

    *path = NULL;
    if (stat(cfg->storage_root, &root) != 0) {
        rc = forge_error_set(err, FORGE_EIO, "FORGE_STORAGE_ROOT",
                             "the storage root %s: %s", cfg->storage_root,
                             strerror(errno));
        goto out;
    }
    if (geteuid() == 0) {
        uid = root.st_uid;
        gid = root.st_gid;
    }
    if ((rc = forge_storage_mkdirs(cfg->storage_root, dir, uid, gid, err)))
        goto out;
    if ((rc = write_file(dir, FORGE_STAGING_SCRIPT, script, 0644, uid, gid,
                         err)))
        goto out;
    if (launch->ingest_token &&
        (rc = write_file(dir, FORGE_CREDENTIALS_FILE, launch->ingest_token,
                         0600, uid, gid, err)))
        goto out;
    *path = dir;
    dir = NULL;
out:
    free(dir);
    return rc;
}

static int remove_one(const char *path, const struct stat *st, int type,
                      struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT
               ? 0
               : -1;
}

forge_rc_t forge_staging_remove(const forge_config_t *cfg,
                                const char *launch_id, int attempt,
                                forge_error_t *err)
{
    char *dir = forge_path_staging(cfg, launch_id, attempt);
    forge_rc_t rc = FORGE_OK;

    if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        rc = forge_error_set(err, FORGE_EIO, "staging", "removing %s: %s", dir,
                             strerror(errno));
    free(dir);
    return rc;
}
