/* SPDX-License-Identifier: Apache-2.0 */
/*
 * archive_work.c - the file threads (archive_work.h): an ARCHIVE builds
 * the launch's logs.tar.gz from its staging folder, with a tail from which
 * the launch's own secrets and every secret the worker knows
 * (secrets/secrets.h) are redacted; a CLEANUP removes the staging folder.
 * Both on safe_fs: a staging folder refused at archive time gives an
 * empty archive that says why (archive/archive.h), a cleanup refused is
 * final (FORGE_EUNSAFE_PATH); any other failure is retried later by the
 * loop (finish.c). A RESTAGE writes a requeued job's next run's
 * credentials (restage.c); an IMAGE_NOTE reads what a job's image check
 * left (image_note.c).
 *
 * Threads and ownership: the pool's threads (FORGE_ARCHIVE_THREADS) share
 * a context that is read-only (configuration, tenants); each runs one
 * item at a time, which is its own while it runs (work.h).
 * forge_archive_logs and forge_staging_remove are thread-safe.
 */
#include "loop/archive_work.h"
#include "archive/archive.h"
#include "log/log.h"
#include "testpoint/testpoint.h"
#include "base/util.h"
#include "render/render.h"
#include "render/staging.h"
#include "loop/work.h"

#include <stdlib.h>
#include <string.h>

typedef struct files {
    const forge_config_t *cfg;
    const forge_tenants_t *tenants; /* NULL: none */
} files_t;

static void do_archive(files_t *fs, forge_work_t *w)
{
    const forge_held_t *kept = w->files.kept;
    const char *user;
    forge_archive_spec_t spec = {w->launch_id, w->attempt, NULL, 0, NULL, 0};
    forge_fs_owner_t owner;
    forge_error_t err = {0};

    if (kept) {
        spec.pools = kept->pools;
        spec.pool_count = kept->pool_count < FORGE_POOLS_MAX ? kept->pool_count
                                                             : FORGE_POOLS_MAX;
        /* its own, whatever their length; every registered one is kept
         * out of the tail too (archive.h) */
        spec.secrets = kept->secrets;
        spec.secret_count = kept->secret_count;
    }
    if (forge_work_files_owner(fs->cfg, fs->tenants, kept, &owner, &user,
                               &err) ||
        forge_archive_logs(fs->cfg, &spec, owner, &w->files.archive, &err)) {
        w->code = FORGE_EARCHIVE; /* retried later, whatever the cause */
        forge_work_say(w, "%s", err.message);
    } else {
        FORGE_TESTPOINT_CRASH("archive.after");
    }
}

static void do_cleanup(files_t *fs, forge_work_t *w)
{
    forge_error_t err = {0};

    FORGE_TESTPOINT_CRASH("cleanup.before");
    if (forge_staging_remove(fs->cfg, w->launch_id, w->attempt, &err)) {
        /* refused (FORGE_EUNSAFE_PATH): final; else retried later */
        w->code = err.code ? err.code : FORGE_EIO;
        forge_work_say(w, "%s", err.message);
    }
}

/* A requeued job's next run's credentials (restage.c), from what is kept
 * of its request; nothing to write (none, or a record from before they
 * were kept) is done: the run's wait then ends with its one line. */
static void do_restage(files_t *fs, forge_work_t *w)
{
    forge_buf_t b = FORGE_BUF_INIT;
    forge_fs_owner_t owner;
    const char *user;
    forge_error_t err = {0};

    FORGE_TESTPOINT_CRASH("restage.before");
    if (!forge_held_credentials(w->files.kept, &b)) {
        forge_log_warn("%s: requeued (restart %d), no credentials kept to "
                       "stage for it",
                       w->launch_id, w->files.restart);
        return;
    }
    if (forge_work_files_owner(fs->cfg, fs->tenants, w->files.kept, &owner,
                               &user, &err) ||
        forge_staging_put_credentials(fs->cfg, w->launch_id, w->attempt, &owner,
                                      w->files.restart, b.data, b.len, &err)) {
        w->code = err.code ? err.code : FORGE_EIO;
        forge_work_say(w, "%s", err.message);
    }
    memset(b.data, 0, b.cap); /* secrets: not left in freed memory */
    forge_buf_clear(&b);
}

/* The note of a job whose image check refused its image (render.h), if
 * the job left one (loop/image_note.c). */
static void do_image_note(files_t *fs, forge_work_t *w)
{
    forge_error_t err = {0};

    if (forge_staging_read_note(fs->cfg, w->launch_id, w->attempt,
                                FORGE_RENDER_IMAGE_NOTE,
                                FORGE_RENDER_IMAGE_NOTE_MAX, &w->image.note,
                                &w->image.found, &err)) {
        w->code = err.code ? err.code : FORGE_EIO;
        forge_work_say(w, "%s", err.message);
    }
}

static void run(void *ctx, void *item)
{
    forge_work_t *w = item;

    w->status = FORGE_SLURM_OK; /* no Slurm here: the result is `code` */
    if (w->kind == FORGE_WORK_ARCHIVE) {
        do_archive(ctx, w);
    } else if (w->kind == FORGE_WORK_CLEANUP) {
        do_cleanup(ctx, w);
    } else if (w->kind == FORGE_WORK_RESTAGE) {
        do_restage(ctx, w);
    } else if (w->kind == FORGE_WORK_IMAGE_NOTE) {
        do_image_note(ctx, w);
    } else { /* not the file threads': a bug */
        w->code = FORGE_EINVAL;
        forge_work_say(w, "work of kind %d posted to the file threads",
                       (int)w->kind);
    }
}

static const forge_pool_handlers_t handlers = {run, forge_work_drop, NULL,
                                               free};

forge_rc_t forge_files_start(const forge_config_t *cfg,
                             const forge_tenants_t *tenants, size_t threads,
                             forge_pool_t **out, forge_error_t *err)
{
    files_t *fs = forge_xcalloc(1, sizeof(*fs));

    fs->cfg = cfg;
    fs->tenants = tenants;
    return forge_pool_start("archiver", threads, &handlers, fs, out, err);
}
