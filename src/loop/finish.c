/* SPDX-License-Identifier: Apache-2.0 */
/*
 * finish.c - what follows a terminal state, in this order, each
 * step idempotent so that the next owner redoes whatever a crash cut off:
 *
 *   1. archive   the staging folder into artifacts/<id>/<attempt>/logs.tar.gz
 *                (archive.h), on the archiver's threads; at most
 *                FORGE_ARCHIVE_SLOTS at once, the rest wait in their records
 *   2. announce  forge.launch.logs_archived (id <id>/<attempt>/logs) and the
 *                record saying `archived`, in one transaction; the request
 *                (and its secrets' registration) goes: no longer needed
 *   3. clean     only once that committed: delete the staging folder (the
 *                credentials file and the scheduler logs with it), then
 *                record `cleaned` (without the request, logs or not)
 *
 * A launch that never reached Slurm (REJECTED, cancelled before its submit)
 * has no logs: no archive, no event, its staging folder (if any) deleted.
 * A staging folder refused at archive time (a link planted on the way,
 * safe_fs.h) is never read: its archive is empty and the event says why
 * (unsafe_staging); a cleanup refused the same way is logged, not retried.
 * A crash between 1 and 2 redoes the archive (same path, same bytes); a
 * crash between 2 and 3 finds `archived` and only cleans: one event, and
 * never a log deleted before it was archived. A terminal state pushed by a
 * jobcomp end record archives only once Slurm shows the job no longer
 * COMPLETING, as a poll's terminal state does (jobcomp.c). Loop thread
 * only.
 */
#include "hooks/hooks.h"
#include "clock/clock.h"
#include "record/events.h"
#include "log/log.h"
#include "loop/loop_int.h"

#include <stdlib.h>
#include <string.h>

#define FINISH_RETRY_MS 10000

void forge_loop_tend_finished(forge_loop_t *w, forge_entry_t *e, long long now)
{
    forge_launch_record_t *r = e->rec;
    forge_work_kind_t kind = FORGE_WORK_CLEANUP;

    if (r->cleaned || e->busy || now < e->retry_at_ms)
        return;
    /* a pushed end: Slurm may still be completing (jobcomp.c) */
    if (e->archive_gated)
        return;
    /* live logs: the final chunk first (live.c) */
    if (forge_loop_live_holds_archive(w, e))
        return;
    if (forge_loop_job_ran(r) && !r->archived) {
        if (w->archives_out >= FORGE_ARCHIVE_SLOTS)
            return; /* back-pressure: the next tick asks again */
        kind = FORGE_WORK_ARCHIVE;
        w->archives_out++;
    }
    e->busy = true;
    forge_loop_defer(w, forge_loop_new_work(kind, e));
}

static void publish_logs(forge_loop_t *w, forge_entry_t *e,
                         const forge_archive_t *a)
{
    const forge_held_t *l = e->held;
    forge_logs_event_t ev = {e->rec->launch_id,      e->rec->attempt,
                             w->cfg->worker_id,      l ? l->labels : NULL,
                             l ? l->label_count : 0, a};

    forge_loop_produce_json(w, w->cfg->topic_logs, -1, e->rec->launch_id,
                            forge_event_logs(&ev));
}

static void on_archived(forge_loop_t *w, forge_entry_t *e, forge_work_t *work)
{
    const forge_archive_t *a = &work->files.archive;
    forge_log_field_t f[] = {{"launch_id", e->rec->launch_id},
                             {"archive", a->path}};

    publish_logs(w, e, a);
    forge_hooks()->archived(a->bytes);
    e->rec->archived = true;
    forge_owner_drop_request(e); /* no longer needed: the logs are safe */
    forge_loop_write_record(w, e);
    if (a->unsafe)
        forge_log_fields(FORGE_LOG_ERROR, f, 2,
                         "staging folder refused, nothing of it archived: %s",
                         a->unsafe);
    forge_log_fields(FORGE_LOG_INFO, f, 2,
                     "logs archived (%llu bytes, %zu files, %zu missing)",
                     (unsigned long long)a->bytes, a->file_count,
                     a->missing_count);
    e->busy = true; /* cleaned once this transaction commits */
    forge_loop_defer(w, forge_loop_new_work(FORGE_WORK_CLEANUP, e));
}

/* A cleanup refused (FORGE_EUNSAFE_PATH: a link or foreign folder where
 * the staging folder should be): not retried, nothing removed through it.
 * (An archive never is: a refused staging folder gives an empty archive
 * whose event says why, archive.h.) */
static void on_refused(forge_loop_t *w, forge_entry_t *e, forge_work_t *work)
{
    forge_log_field_t f[] = {{"launch_id", e->rec->launch_id},
                             {"error", forge_rc_name(work->code)}};

    forge_log_fields(FORGE_LOG_ERROR, f, 2, "cleanup refused, not retried: %s",
                     work->message);
    e->rec->cleaned = true;
    forge_loop_write_record(w, e);
}

void forge_loop_on_finished_work(forge_loop_t *w, forge_work_t *work)
{
    forge_entry_t *e = forge_loop_entry_of(w, work);

    if (work->kind == FORGE_WORK_ARCHIVE)
        w->archives_out--;
    if (!e) /* the partition moved: its next owner finishes the launch */
        return;
    if (work->kind == FORGE_WORK_IMAGE_NOTE) { /* not a finish: an end */
        forge_loop_on_image_note(w, e, work);
        return;
    }
    e->busy = false;
    if (work->kind == FORGE_WORK_RESTAGE) {
        forge_loop_on_restaged(w, e, work);
    } else if (work->code == FORGE_EUNSAFE_PATH) {
        on_refused(w, e, work);
    } else if (work->code != FORGE_OK) { /* archive_failed, io, ... */
        e->retry_at_ms = forge_clock_ms() + FINISH_RETRY_MS;
        forge_log_warn("%s of %s failed (%s): %s; retrying later",
                       work->kind == FORGE_WORK_ARCHIVE ? "archive" : "cleanup",
                       work->launch_id, forge_rc_name(work->code),
                       work->message);
    } else if (work->kind == FORGE_WORK_ARCHIVE) {
        on_archived(w, e, work);
    } else {
        e->rec->cleaned = true;
        forge_owner_drop_request(e); /* no logs to archive, or archived */
        forge_loop_write_record(w, e);
    }
}
