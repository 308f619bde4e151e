/* SPDX-License-Identifier: Apache-2.0 */
/*
 * staging.h - a launch's staging folder on the shared storage
 * ($FORGE_STORAGE_ROOT/staging/<launch_id>/<attempt>/): created before the
 * submit with the batch script (a record of what was submitted) and the
 * 0600 `credentials` file (render.h's forge_render_credentials: the ingest
 * token and the request's environment); removed after the logs are
 * archived or before an interrupted submit is retried.
 *
 * Jobs write on this storage too, so everything goes through safe_fs.h:
 * beneath a descriptor of the storage root, no link followed in any
 * component. Layout (W: the worker's user, J: the job's, passed in):
 *   staging/                      W, 0711 (jobs traverse, never list/create)
 *   staging/<launch_id>/          W, 0711
 *   staging/<launch_id>/<attempt>/ J, 0700 (an existing one only if J's or
 *                                 W's: a retry)
 *   .../job.sh, .../credentials   J, 0600
 *   .../credentials.<restart>     J, 0600 (a requeued job's later runs)
 * `staging` and `staging/<launch_id>` found owned by someone else (older
 * deployments gave them to the storage's owner) are repaired with a
 * warning. A link or foreign folder anywhere is FORGE_EUNSAFE_PATH: the
 * launch is refused, nothing is written through it. When the worker does
 * not run as root nothing is chowned.
 */
#ifndef FORGE_STAGING_H
#define FORGE_STAGING_H

#include "base/buf.h"
#include "config/config.h"
#include "request/request.h"
#include "fs/safe_fs.h"
#include "request/tenants.h"

#include <stdbool.h>

#define FORGE_STAGING_SCRIPT "job.sh"

/* Whom a launch's staging folder is given to until tenants name a user:
 * the storage root's owner when the worker runs as root (the jobs run as
 * that user), else FORGE_FS_KEEP. */
forge_rc_t forge_staging_default_owner(const forge_config_t *cfg,
                                       forge_fs_owner_t *owner,
                                       forge_error_t *err) FORGE_WARN_UNUSED;

/* Whose a launch's staging folder is: its tenant's uid:gid (tenants.h),
 * or without tenants (tenant NULL) forge_staging_default_owner's. Only a
 * worker running as root gives files away: FORGE_FS_KEEP otherwise. */
forge_rc_t forge_staging_owner(const forge_config_t *cfg,
                               const forge_tenant_t *tenant,
                               forge_fs_owner_t *owner,
                               forge_error_t *err) FORGE_WARN_UNUSED;

/* What goes into a staging folder: the batch script, and the credentials
 * file's bytes (render.h's forge_render_credentials), or none: then none
 * is left there from an earlier try either. */
typedef struct forge_staging_files {
    const char *script;
    const void *credentials; /* NULL: none */
    size_t credentials_len;
} forge_staging_files_t;

/*
 * Creates (or refreshes) the staging folder of (launch_id, attempt) in one
 * pass over the storage: the root opened once, each missing folder made
 * once (an existing one only opened and checked), job.sh and credentials
 * written (atomically, as below). owner NULL: forge_staging_default_owner's,
 * read from the root already open. Only the credentials file is synced
 * before it is renamed into place: a job whose worker's host crashed must
 * still find it (or fail closed without it); job.sh is a record of what
 * was submitted (Slurm keeps the script it runs), not synced.
 */
forge_rc_t forge_staging_write(const forge_config_t *cfg, const char *launch_id,
                               int attempt, const forge_fs_owner_t *owner,
                               const forge_staging_files_t *files,
                               forge_error_t *err) FORGE_WARN_UNUSED;

/* The credentials file of the job's run after its restart-th requeue
 * (render.h: forge_render_credentials_name; bytes: what
 * forge_render_credentials gives), written into the staging folder as the
 * first run's is (0600, owner's, synced, renamed into place): the job's
 * next run waits for it. Rewriting it gives the same file. */
forge_rc_t forge_staging_put_credentials(const forge_config_t *cfg,
                                         const char *launch_id, int attempt,
                                         const forge_fs_owner_t *owner,
                                         int restart, const void *bytes,
                                         size_t len,
                                         forge_error_t *err) FORGE_WARN_UNUSED;

/* The same for launch (its credentials rendered here) and owner. *path:
 * host-side folder (new) on success. */
forge_rc_t forge_staging_prepare(const forge_config_t *cfg,
                                 const forge_launch_t *launch,
                                 forge_fs_owner_t owner, const char *script,
                                 char **path,
                                 forge_error_t *err) FORGE_WARN_UNUSED;

/*
 * Removes the staging folder of (launch_id, attempt) and everything in it,
 * by descriptors (forge_fs_remove: links unlinked, never followed), then
 * staging/<launch_id> if that is left empty. FORGE_OK when it did not
 * exist. A link at `staging` or `staging/<launch_id>` is FORGE_EUNSAFE_PATH
 * and nothing is touched; a link at the folder's own place is unlinked
 * (that never touches its target) and reported as FORGE_EUNSAFE_PATH too.
 */
forge_rc_t forge_staging_remove(const forge_config_t *cfg,
                                const char *launch_id, int attempt,
                                forge_error_t *err) FORGE_WARN_UNUSED;

/* The first max bytes of the file `name` a job left in the staging folder
 * of (launch_id, attempt) (render.h: FORGE_RENDER_IMAGE_NOTE), appended to
 * out; *found false when there is none. Reached as everything here is: a
 * link on the way, or a file that is not a regular one with one link (a
 * hard link to a file the job cannot read itself), is
 * FORGE_EUNSAFE_PATH, and nothing of it is read. */
forge_rc_t forge_staging_read_note(const forge_config_t *cfg,
                                   const char *launch_id, int attempt,
                                   const char *name, size_t max,
                                   forge_buf_t *out, bool *found,
                                   forge_error_t *err) FORGE_WARN_UNUSED;

/* "staging/<launch_id>/<attempt>": the staging folder below the storage
 * root (what the worker opens beneath the root's descriptor; new). */
char *forge_staging_rel(const char *launch_id, int attempt);

/* $FORGE_STORAGE_ROOT/staging/<launch_id>/<attempt>, host side (new). */
char *forge_staging_path(const forge_config_t *cfg, const char *launch_id,
                         int attempt);

#endif
