/* SPDX-License-Identifier: Apache-2.0 */
/*
 * staging.c - creating and removing staging folders (staging.h) on
 * safe_fs.h: the storage root is opened once per call, everything else is
 * reached beneath it without following links, owners and modes are set on
 * descriptors, files are written to a temporary and renamed (a link
 * planted at job.sh or credentials is replaced, never written through; a
 * reader never sees a half-written file). A note a job left there is
 * read the same way (forge_staging_read_note).
 */
#include "render/staging.h"
#include "base/buf.h"
#include "fs/paths.h"
#include "render/credentials.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *forge_staging_rel(const char *launch_id, int attempt)
{
    forge_buf_t out = FORGE_BUF_INIT;

    forge_buf_printf(&out, "staging/%s/%d", launch_id, attempt);
    return forge_buf_take(&out);
}

char *forge_staging_path(const forge_config_t *cfg, const char *launch_id,
                         int attempt)
{
    char *rel = forge_staging_rel(launch_id, attempt);
    char *path = forge_path_join(cfg->storage_root, rel);

    free(rel);
    return path;
}

/* The storage root's owner when the worker runs as root (root: its open
 * descriptor), else FORGE_FS_KEEP. */
static forge_rc_t root_owner(const forge_config_t *cfg, int root,
                             forge_fs_owner_t *owner, forge_error_t *err)
{
    struct stat st;

    *owner = FORGE_FS_KEEP;
    if (geteuid() != 0)
        return FORGE_OK;
    if (fstat(root, &st) != 0)
        return forge_error_set(err, FORGE_EIO, "FORGE_STORAGE_ROOT", "%s: %s",
                               cfg->storage_root, strerror(errno));
    *owner = (forge_fs_owner_t){st.st_uid, st.st_gid};
    return FORGE_OK;
}

forge_rc_t forge_staging_default_owner(const forge_config_t *cfg,
                                       forge_fs_owner_t *owner,
                                       forge_error_t *err)
{
    int fd;
    forge_rc_t rc;

    *owner = FORGE_FS_KEEP;
    if (geteuid() != 0)
        return FORGE_OK;
    if ((rc = forge_fs_open_root(cfg->storage_root, &fd, err)))
        return rc;
    rc = root_owner(cfg, fd, owner, err);
    close(fd);
    return rc;
}

forge_rc_t forge_staging_owner(const forge_config_t *cfg,
                               const forge_tenant_t *tenant,
                               forge_fs_owner_t *owner, forge_error_t *err)
{
    if (!tenant)
        return forge_staging_default_owner(cfg, owner, err);
    *owner = geteuid() == 0 ? (forge_fs_owner_t){tenant->uid, tenant->gid}
                            : FORGE_FS_KEEP;
    return FORGE_OK;
}

/* The credentials file, or none (and none left from an earlier try). */
static forge_rc_t write_credentials(int dfd, const char *rel,
                                    const forge_staging_files_t *files,
                                    forge_fs_owner_t owner, forge_error_t *err)
{
    if (files->credentials)
        return forge_fs_put_file(dfd, rel, FORGE_CREDENTIALS_FILE,
                                 files->credentials, files->credentials_len,
                                 0600, owner, FORGE_FS_SYNCED, err);
    if (unlinkat(dfd, FORGE_CREDENTIALS_FILE, 0) != 0 && errno != ENOENT)
        return forge_error_set(err, FORGE_EIO, "staging", "remove %s/%s: %s",
                               rel, FORGE_CREDENTIALS_FILE, strerror(errno));
    return FORGE_OK;
}

/* The staging folder of (launch_id, attempt), made where missing, opened
 * (*dfd) beneath the storage root; *job: whose its files are (owner, or
 * the root's owner for NULL). */
static forge_rc_t open_folder(const forge_config_t *cfg, const char *rel,
                              const forge_fs_owner_t *owner, int *dfd,
                              forge_fs_owner_t *job, forge_error_t *err)
{
    forge_fs_level_t levels[] = {
        {0711, FORGE_FS_KEEP, FORGE_FS_REPAIR},      /* staging */
        {0711, FORGE_FS_KEEP, FORGE_FS_REPAIR},      /* <launch_id> */
        {0700, FORGE_FS_KEEP, FORGE_FS_OWNER_OR_US}, /* <attempt> */
    };
    int root = -1;
    forge_rc_t rc;

    *dfd = -1;
    if ((rc = forge_fs_open_root(cfg->storage_root, &root, err)))
        return rc;
    if (owner)
        *job = *owner;
    else
        rc = root_owner(cfg, root, job, err);
    levels[2].owner = *job;
    if (!rc)
        rc = forge_fs_mkdirs(root, "", rel, levels, 3, dfd, err);
    close(root);
    return rc;
}

forge_rc_t forge_staging_write(const forge_config_t *cfg, const char *launch_id,
                               int attempt, const forge_fs_owner_t *owner,
                               const forge_staging_files_t *files,
                               forge_error_t *err)
{
    char *rel = forge_staging_rel(launch_id, attempt);
    int dfd = -1;
    forge_fs_owner_t job;
    forge_rc_t rc;

    if (!(rc = open_folder(cfg, rel, owner, &dfd, &job, err)) &&
        !(rc = forge_fs_put_file(dfd, rel, FORGE_STAGING_SCRIPT, files->script,
                                 strlen(files->script), 0600, job,
                                 FORGE_FS_UNSYNCED, err)))
        rc = write_credentials(dfd, rel, files, job, err);
    if (dfd >= 0)
        close(dfd);
    free(rel);
    return rc;
}

forge_rc_t forge_staging_put_credentials(const forge_config_t *cfg,
                                         const char *launch_id, int attempt,
                                         const forge_fs_owner_t *owner,
                                         int restart, const void *bytes,
                                         size_t len, forge_error_t *err)
{
    char *rel = forge_staging_rel(launch_id, attempt);
    char *name = forge_render_credentials_name(restart);
    int dfd = -1;
    forge_fs_owner_t job;
    forge_rc_t rc;

    if (!(rc = open_folder(cfg, rel, owner, &dfd, &job, err)))
        rc = forge_fs_put_file(dfd, rel, name, bytes, len, 0600, job,
                               FORGE_FS_SYNCED, err);
    if (dfd >= 0)
        close(dfd);
    free(name);
    free(rel);
    return rc;
}

forge_rc_t forge_staging_prepare(const forge_config_t *cfg,
                                 const forge_launch_t *launch,
                                 forge_fs_owner_t owner, const char *script,
                                 char **path, forge_error_t *err)
{
    forge_buf_t b = FORGE_BUF_INIT;
    forge_staging_files_t files = {script, NULL, 0};
    forge_rc_t rc;

    *path = NULL;
    if (forge_render_credentials(launch, &b)) {
        files.credentials = b.data;
        files.credentials_len = b.len;
    }
    rc = forge_staging_write(cfg, launch->launch_id, launch->attempt, &owner,
                             &files, err);
    if (b.data)
        memset(b.data, 0, b.cap); /* secrets: not left in freed memory */
    forge_buf_clear(&b);
    if (!rc)
        *path = forge_staging_path(cfg, launch->launch_id, launch->attempt);
    return rc;
}

/* The folder <attempt> in staging/<launch_id> (ifd), gone. */
static forge_rc_t remove_attempt(int ifd, const char *id_rel,
                                 const char *attempt, forge_error_t *err)
{
    struct stat st;

    if (fstatat(ifd, attempt, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? FORGE_OK
                               : forge_error_set(err, FORGE_EIO, "staging",
                                                 "stat %s/%s: %s", id_rel,
                                                 attempt, strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        /* Unlinking a link never touches what it leads to. */
        if (unlinkat(ifd, attempt, 0) != 0 && errno != ENOENT)
            return forge_error_set(err, FORGE_EIO, "staging",
                                   "remove %s/%s: %s", id_rel, attempt,
                                   strerror(errno));
        return forge_error_set(err, FORGE_EUNSAFE_PATH, "staging",
                               "%s/%s was a symbolic link: unlinked, not "
                               "followed",
                               id_rel, attempt);
    }
    return forge_fs_remove(ifd, id_rel, attempt, err);
}

forge_rc_t forge_staging_remove(const forge_config_t *cfg,
                                const char *launch_id, int attempt,
                                forge_error_t *err)
{
    const int dir = O_RDONLY | O_DIRECTORY;
    char id_rel[128], name[16];
    int root = -1, sfd = -1, ifd = -1;
    forge_rc_t rc;

    snprintf(id_rel, sizeof(id_rel), "staging/%s", launch_id);
    snprintf(name, sizeof(name), "%d", attempt);
    if ((rc = forge_fs_open_root(cfg->storage_root, &root, err)) ||
        (rc = forge_fs_open(root, "", "staging", dir, 0, &sfd, NULL, err)) ||
        sfd < 0 ||
        (rc = forge_fs_open(sfd, "staging", launch_id, dir, 0, &ifd, NULL,
                            err)) ||
        ifd < 0)
        goto out;
    rc = remove_attempt(ifd, id_rel, name, err);
    /* staging/<launch_id> too once empty (another attempt may be in it). */
    if (!rc && unlinkat(sfd, launch_id, AT_REMOVEDIR) != 0 &&
        errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
        rc = forge_error_set(err, FORGE_EIO, "staging", "remove %s: %s", id_rel,
                             strerror(errno));
out:
    if (ifd >= 0)
        close(ifd);
    if (sfd >= 0)
        close(sfd);
    if (root >= 0)
        close(root);
    return rc;
}

forge_rc_t forge_staging_read_note(const forge_config_t *cfg,
                                   const char *launch_id, int attempt,
                                   const char *name, size_t max,
                                   forge_buf_t *out, bool *found,
                                   forge_error_t *err)
{
    char *folder = forge_staging_rel(launch_id, attempt);
    char rel[512], chunk[1024];
    int root = -1, fd = -1;
    ssize_t n = 0;
    forge_rc_t rc;

    *found = false;
    snprintf(rel, sizeof(rel), "%s/%s", folder, name);
    if ((rc = forge_fs_open_root(cfg->storage_root, &root, err)) ||
        (rc = forge_fs_open_file(root, "", rel, &fd, NULL, err)) || fd < 0)
        goto out;
    *found = true;
    while (out->len < max && (n = read(fd, chunk, sizeof(chunk))) > 0)
        forge_buf_append(out, chunk,
                         (size_t)n < max - out->len ? (size_t)n
                                                    : max - out->len);
    if (n < 0)
        rc = forge_error_set(err, FORGE_EIO, "staging", "read %s: %s", rel,
                             strerror(errno));
out:
    if (fd >= 0)
        close(fd);
    if (root >= 0)
        close(root);
    free(folder);
    return rc;
}
