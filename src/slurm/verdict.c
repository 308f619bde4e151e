/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/verdict.c - job lists to platform states and to the `slurm` part
 * of events (verdict.h).
 */
#include "slurm/verdict.h"
#include "base/util.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* How soon after a requeued run's start a SIGKILL is taken for the
 * orphan cleanup of the run before it (killed_as_orphan). */
#define ORPHAN_KILL_WINDOW_S 15

/*
 * The orphan race (issue 39, CONTRACT §3): a node whose slurmd stopped
 * while its job ran is DOWN after SlurmdTimeout and the job requeued; when
 * that slurmd returns it reports the old run's step, slurmctld kills that
 * job's processes on the node as an orphan's, and when it has allocated
 * the requeued job (the same id) on that node in the same moment, the new
 * run dies by SIGKILL too. A run of a requeued job (restart_count > 0)
 * that a SIGKILL ended within ORPHAN_KILL_WINDOW_S of its start (details
 * only: the run's start and end) ended by the node's failure, not by its
 * command: its cause is node_fail, which the retry policy may retry.
 */
static bool killed_as_orphan(const forge_slurm_job_list_t *list)
{
    for (size_t i = 0; i < list->count; i++) {
        const forge_slurm_job_t *j = &list->jobs[i];
        const forge_slurm_job_use_t *u = j->use;
        if (j->restart_count > 0 && j->signal == SIGKILL && u &&
            u->start_s > 0 && u->end_s >= u->start_s &&
            u->end_s - u->start_s <= ORPHAN_KILL_WINDOW_S)
            return true;
    }
    return false;
}

forge_slurm_verdict_t forge_slurm_verdict(const forge_slurm_job_list_t *list,
                                          int cancel_requested, int *exit_code)
{
    forge_slurm_component_state_t *c;
    forge_slurm_verdict_t v = {FORGE_STATE_NONE, NULL};

    *exit_code = -1;
    if (!list || list->count == 0)
        return v;
    c = forge_xcalloc(list->count, sizeof(*c));
    for (size_t i = 0; i < list->count; i++) {
        const forge_slurm_job_t *j = &list->jobs[i];
        c[i].set = forge_slurm_state_parse((const char *const *)j->state,
                                           j->state_count);
        c[i].exit_code = j->exit_code;
        c[i].signal = j->signal;
    }
    v = forge_slurm_state_aggregate(c, list->count, cancel_requested);
    *exit_code = list->jobs[0].exit_code;
    if (v.state == FORGE_STATE_FAILED && v.reason &&
        !strcmp(v.reason, "failed") && killed_as_orphan(list))
        v.reason = "node_fail";
    /* Slurm 26.05 drops the REQUEUED flag once the job waits again (seen):
     * a pending job that has run before was requeued all the same. */
    for (size_t i = 0;
         v.state == FORGE_STATE_PENDING && !v.reason && i < list->count; i++)
        if (list->jobs[i].restart_count > 0)
            v.reason = "requeued";
    free(c);
    return v;
}

forge_slurm_move_t forge_slurm_move(const forge_slurm_job_list_t *list,
                                    forge_state_t from, int cancel_requested)
{
    int exit_code;
    forge_slurm_verdict_t v =
        forge_slurm_verdict(list, cancel_requested, &exit_code);
    forge_slurm_move_t m = {v.state, v.reason, false};

    m.moves = v.state != FORGE_STATE_NONE && v.state != from &&
              forge_state_transition_legal(from, v.state);
    if (v.state == FORGE_STATE_PENDING && !m.reason && list->count)
        m.reason = list->jobs[0].state_reason;
    return m;
}

bool forge_slurm_lost(long long missing_ms, int grace_s)
{
    return missing_ms >= (long long)grace_s * 1000;
}

static json_t *string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *forge_slurm_verdict_json(const forge_slurm_job_list_t *list)
{
    json_t *components = json_array();
    const forge_slurm_job_t *lead = list->count ? &list->jobs[0] : NULL;
    int restarts = 0;

    for (size_t i = 0; i < list->count; i++) {
        const forge_slurm_job_t *j = &list->jobs[i];
        json_t *states = json_array();
        for (size_t k = 0; k < j->state_count; k++)
            json_array_append_new(states, json_string(j->state[k]));
        json_array_append_new(components,
                              json_pack("{s:I, s:i, s:o, s:o, s:o}", "job_id",
                                        (json_int_t)j->job_id, "het_offset",
                                        j->het_offset, "state", states, "nodes",
                                        string_or_null(j->nodes), "constraint",
                                        string_or_null(j->constraints)));
        if (j->restart_count > restarts)
            restarts = j->restart_count;
    }
    return json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:i}", "job_id",
        lead ? json_integer(lead->het_job_id && lead->het_job_id != (uint32_t)-1
                                ? lead->het_job_id
                                : lead->job_id)
             : json_null(),
        "components", components, "exit_code",
        lead && lead->exit_code >= 0 ? json_integer(lead->exit_code)
                                     : json_null(),
        "signal",
        lead && lead->signal ? json_integer(lead->signal) : json_null(),
        "state_reason", string_or_null(lead ? lead->state_reason : NULL),
        "restart_count", restarts);
}
