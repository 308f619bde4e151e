/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/verdict.h - from what slurmrestd reported about a job (all its het
 * components) to the platform's state: the bridge between client.h's job
 * lists and state.h's pure mapping. Used by every place that follows a job.
 */
#ifndef FORGE_SLURM_VERDICT_H
#define FORGE_SLURM_VERDICT_H

#include "slurm/client.h"
#include "slurm/state.h"

#include <jansson.h>

/* The verdict over every job in list (the components of one launch).
 * An empty list is no verdict (FORGE_STATE_NONE): absence is never a
 * state. *exit_code: the batch script's (component 0), -1 unknown. */
forge_slurm_verdict_t forge_slurm_verdict(const forge_slurm_job_list_t *list,
                                          int cancel_requested, int *exit_code);

/* The `slurm` object of a status_changed event for list (new reference):
 * {job_id, components: [{job_id, het_offset, state[], nodes, constraint}],
 *  exit_code, signal, state_reason, restart_count}. */
json_t *forge_slurm_verdict_json(const forge_slurm_job_list_t *list);

#endif
