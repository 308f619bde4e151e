/*
 * staging.h - a launch's staging folder on the shared storage
 * ($FORGE_STORAGE_ROOT/staging/<launch_id>/<attempt>/): created before the
 * submit with the batch script (a record of what was submitted) and the
 * 0600 `credentials` file holding the ingest token; removed after the logs
 * are archived or before an interrupted submit is retried.
 *
 * When the worker runs as root (the local stack, some sites), the folder
 * and its files are given to the owner of FORGE_STORAGE_ROOT, the user the
 * jobs run as, so the job can read its credentials and write its logs.
 */
#ifndef FORGE_STAGING_H
#define FORGE_STAGING_H

#include "config.h"
#include "request.h"

#include <sys/types.h>

#define FORGE_STAGING_SCRIPT "job.sh"

/* Creates (or refreshes) the staging folder of launch. *path: host-side
 * folder (new) on success. */
forge_rc_t forge_staging_prepare(const forge_config_t *cfg,
                                 const forge_launch_t *launch,
                                 const char *script, char **path,
                                 forge_error_t *err) FORGE_WARN_UNUSED;

/* mkdir -p of the part of path below root (root must exist); each folder
 * it creates is given to uid:gid unless uid is (uid_t)-1. */
forge_rc_t forge_storage_mkdirs(const char *root, const char *path, uid_t uid,
                                gid_t gid,
                                forge_error_t *err) FORGE_WARN_UNUSED;

/* Removes the staging folder of (launch_id, attempt) and everything in it.
 * FORGE_OK when it did not exist. */
forge_rc_t forge_staging_remove(const forge_config_t *cfg,
                                const char *launch_id, int attempt,
                                forge_error_t *err) FORGE_WARN_UNUSED;

#endif
