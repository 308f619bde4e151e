/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/verdict.h - from what slurmrestd reported about a job (all its het
 * components) to the platform's state: the bridge between client.h's job
 * lists and state.h's pure mapping. Used by every place that follows a job.
 */
#ifndef FORGE_SLURM_VERDICT_H
#define FORGE_SLURM_VERDICT_H

#include "slurm/client.h"
#include "slurm/job_state.h"

#include <jansson.h>
#include <stdbool.h>

/* The verdict over every job in list (the components of one launch).
 * An empty list is no verdict (FORGE_STATE_NONE): absence is never a
 * state. *exit_code: the batch script's (component 0), -1 unknown. */
forge_slurm_verdict_t forge_slurm_verdict(const forge_slurm_job_list_t *list,
                                          int cancel_requested, int *exit_code);

/* What a poll's job list says for a launch whose record is in state from:
 * the verdict's state (to; FORGE_STATE_NONE: none), whether it is a legal
 * move from `from` (moves), and the reason its event gives: the
 * verdict's, or for PENDING without one the first job's state_reason
 * (borrowed from list). The worker's poll and `submit --wait` both decide
 * with it. */
typedef struct forge_slurm_move {
    forge_state_t to;
    const char *reason;
    bool moves;
} forge_slurm_move_t;

forge_slurm_move_t forge_slurm_move(const forge_slurm_job_list_t *list,
                                    forge_state_t from, int cancel_requested);

/* Missing from Slurm (no details, no accounting) is never "finished": a
 * job missing for missing_ms is LOST, with this reason, once that reaches
 * grace_s (FORGE_LOST_GRACE_S). */
#define FORGE_SLURM_LOST_REASON "not_found"
bool forge_slurm_lost(long long missing_ms, int grace_s);

/* The `slurm` object of a status_changed event for list (new reference):
 * {job_id, components: [{job_id, het_offset, state[], nodes, constraint}],
 *  exit_code, signal, state_reason, restart_count}. */
json_t *forge_slurm_verdict_json(const forge_slurm_job_list_t *list);

#endif
