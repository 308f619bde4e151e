/* SPDX-License-Identifier: Apache-2.0 */
/*
 * restage.c - a job Slurm requeued (preempted with PreemptMode=REQUEUE, a
 * node that failed with JobRequeue=1, `scontrol requeue`) runs again under
 * the same job id with SLURM_RESTART_COUNT + 1, and its first run removed
 * the credentials file (render.h). Its next run waits for its own,
 * credentials.<restart>, which this stages from what the table keeps of
 * the request (held.h: the ingest token, env and secret_env by name):
 *
 *   1. seen     a poll's details show a restart count above the record's
 *               `restarts` (tick.c): the record says so, with the PENDING
 *               (requeued) move when there is one, in the transaction
 *   2. staged   once that committed, a RESTAGE on the file threads
 *               (archive_work.c) writes credentials.<restarts>; its
 *               result records `restarts_staged`
 *
 * Each step is idempotent and keyed by the restart count in the record: an
 * owner that dies between 1 and 2 leaves `restarts` above
 * `restarts_staged` in the state topic, and the next owner's first tick
 * stages it (rewriting an existing file gives the same file). Only the
 * latest run's file is staged: a job requeued twice before a poll saw it
 * runs as restart N only. Loop thread only.
 */
#include "clock/clock.h"
#include "log/log.h"
#include "loop/loop_int.h"

/* How long a failed restage waits before the next tick tries again. */
#define RESTAGE_RETRY_MS 2000

bool forge_loop_saw_restarts(forge_loop_t *w, forge_entry_t *e,
                             const forge_slurm_job_list_t *jobs, bool written)
{
    int restarts = 0;

    for (size_t i = 0; i < jobs->count; i++)
        if (jobs->jobs[i].restart_count > restarts)
            restarts = jobs->jobs[i].restart_count;
    if (restarts <= e->rec->restarts)
        return false;
    e->rec->restarts = restarts;
    if (!written) /* else the move's record carries it */
        forge_loop_write_record(w, e);
    forge_loop_restage_due(w, e, forge_clock_ms());
    return true;
}

void forge_loop_restage_due(forge_loop_t *w, forge_entry_t *e, long long now)
{
    forge_work_t *work;

    if (e->rec->restarts <= e->rec->restarts_staged || e->busy ||
        now < e->retry_at_ms || forge_state_is_terminal(e->rec->state))
        return;
    work = forge_loop_new_work(FORGE_WORK_RESTAGE, e);
    e->busy = true;
    forge_loop_defer(w, work); /* once the record saying `restarts` commits */
}

void forge_loop_on_restaged(forge_loop_t *w, forge_entry_t *e,
                            forge_work_t *work)
{
    forge_log_field_t f[] = {{"launch_id", e->rec->launch_id},
                             {"error", forge_rc_name(work->code)}};

    if (work->try_num != forge_launch_try(e->rec))
        return; /* the job of a try that ended: a retry followed (tries.c) */
    if (work->code != FORGE_OK) {
        e->retry_at_ms = forge_clock_ms() + RESTAGE_RETRY_MS;
        forge_log_fields(FORGE_LOG_WARN, f, 2,
                         "credentials for restart %d not staged: %s; "
                         "retrying",
                         work->files.restart, work->message);
        return;
    }
    if (work->files.restart <= e->rec->restarts_staged)
        return;
    e->rec->restarts_staged = work->files.restart;
    forge_loop_write_record(w, e);
    forge_log_fields(FORGE_LOG_INFO, f, 1,
                     "requeued job %u: credentials for restart %d staged",
                     (unsigned)e->rec->job_id, work->files.restart);
}
