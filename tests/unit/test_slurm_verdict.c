/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_verdict.c - job lists to verdicts: an empty answer is no
 * verdict, het components aggregate, the batch script's exit code is
 * component 0's, and a pending job that ran before reads as requeued even
 * when Slurm no longer shows the REQUEUED flag (26.05), and a requeued run
 * killed at its start (the orphan race) is a node failure.
 */
#include "slurm/verdict.h"

#include <criterion/criterion.h>
#include <string.h>

static forge_slurm_job_t job(uint32_t id, char **states, size_t n, int exit,
                             int restarts)
{
    forge_slurm_job_t j;

    memset(&j, 0, sizeof(j));
    j.job_id = id;
    j.state = states;
    j.state_count = n;
    j.exit_code = exit;
    j.restart_count = restarts;
    return j;
}

Test(slurm_verdict, empty_answer_is_no_verdict)
{
    forge_slurm_job_list_t none = {NULL, 0};
    int exit_code;

    cr_assert_eq(forge_slurm_verdict(&none, 0, &exit_code).state,
                 FORGE_STATE_NONE);
    cr_assert_eq(exit_code, -1);
}

Test(slurm_verdict, pending_after_a_run_is_requeued)
{
    char *pending[] = {"PENDING", NULL};
    forge_slurm_job_t j = job(5, pending, 1, 0, 1);
    forge_slurm_job_list_t l = {&j, 1};
    int exit_code;
    forge_slurm_verdict_t v = forge_slurm_verdict(&l, 0, &exit_code);

    cr_assert_eq(v.state, FORGE_STATE_PENDING);
    cr_assert_str_eq(v.reason, "requeued");
    j.restart_count = 0;
    v = forge_slurm_verdict(&l, 0, &exit_code);
    cr_assert_null(v.reason, "first wait: Slurm's own reason applies");
}

Test(slurm_verdict, het_components_aggregate_and_exit_is_component_0s)
{
    char *failed[] = {"FAILED", NULL}, *done[] = {"COMPLETED", NULL};
    forge_slurm_job_t j[2] = {job(7, failed, 1, 3, 0), job(8, done, 1, 0, 0)};
    forge_slurm_job_list_t l = {j, 2};
    int exit_code;
    forge_slurm_verdict_t v = forge_slurm_verdict(&l, 0, &exit_code);

    cr_assert_eq(v.state, FORGE_STATE_FAILED);
    cr_assert_eq(exit_code, 3);
}

/* The move both the worker's poll and `submit --wait` make of an answer. */
Test(slurm_verdict, a_move_is_a_legal_change_of_state)
{
    char *running[] = {"RUNNING", NULL};
    forge_slurm_job_t j = job(5, running, 1, 0, 0);
    forge_slurm_job_list_t l = {&j, 1};
    forge_slurm_move_t m;

    m = forge_slurm_move(&l, FORGE_STATE_SUBMITTED, 0);
    cr_assert_eq(m.to, FORGE_STATE_RUNNING);
    cr_assert(m.moves);
    m = forge_slurm_move(&l, FORGE_STATE_RUNNING, 0); /* no change */
    cr_assert_eq(m.to, FORGE_STATE_RUNNING);
    cr_assert_not(m.moves);
    m = forge_slurm_move(&l, FORGE_STATE_SUCCEEDED, 0); /* not legal */
    cr_assert_not(m.moves);
}

Test(slurm_verdict, an_empty_answer_never_moves)
{
    forge_slurm_job_list_t none = {NULL, 0};
    forge_slurm_move_t m = forge_slurm_move(&none, FORGE_STATE_SUBMITTED, 0);

    cr_assert_eq(m.to, FORGE_STATE_NONE);
    cr_assert_not(m.moves);
}

Test(slurm_verdict, pending_gives_slurms_reason_when_it_has_none)
{
    char *pending[] = {"PENDING", NULL};
    forge_slurm_job_t j = job(5, pending, 1, 0, 0);
    forge_slurm_job_list_t l = {&j, 1};
    forge_slurm_move_t m;

    j.state_reason = "Resources";
    m = forge_slurm_move(&l, FORGE_STATE_SUBMITTED, 0);
    cr_assert_eq(m.to, FORGE_STATE_PENDING);
    cr_assert(m.moves);
    cr_assert_str_eq(m.reason, "Resources");
    j.restart_count = 1; /* the verdict's own reason wins */
    m = forge_slurm_move(&l, FORGE_STATE_SUBMITTED, 0);
    cr_assert_str_eq(m.reason, "requeued");
}

Test(slurm_verdict, missing_is_lost_once_the_grace_is_out)
{
    cr_assert_not(forge_slurm_lost(0, 600));
    cr_assert_not(forge_slurm_lost(599999, 600));
    cr_assert(forge_slurm_lost(600000, 600));
    cr_assert(forge_slurm_lost(0, 0));
    cr_assert_str_eq(FORGE_SLURM_LOST_REASON, "not_found");
}

/* The orphan race (CONTRACT §3): a requeued job's run killed (SIGKILL)
 * within seconds of its start ended by its node's failure (node_fail); a
 * first run, a later kill, another signal, or no run times stay the
 * command's own (failed). */
Test(slurm_verdict, a_requeued_run_killed_at_its_start_is_a_node_failure)
{
    char *failed[] = {"FAILED", NULL};
    forge_slurm_job_use_t use = {.start_s = 1000, .end_s = 1002};
    forge_slurm_job_t j = job(9, failed, 1, 0, 1);
    forge_slurm_job_list_t l = {&j, 1};
    int exit_code;

    j.signal = 9;
    j.use = &use;
    cr_assert_str_eq(forge_slurm_verdict(&l, 0, &exit_code).reason,
                     "node_fail");
    j.restart_count = 0; /* a first run killed: its own */
    cr_assert_str_eq(forge_slurm_verdict(&l, 0, &exit_code).reason, "failed");
    j.restart_count = 1;
    use.end_s = 1000 + 60; /* a minute in: its own */
    cr_assert_str_eq(forge_slurm_verdict(&l, 0, &exit_code).reason, "failed");
    use.end_s = 1002;
    j.signal = 15;
    cr_assert_str_eq(forge_slurm_verdict(&l, 0, &exit_code).reason, "failed");
    j.signal = 9;
    j.use = NULL; /* jobs/state: no run times, no guess */
    cr_assert_str_eq(forge_slurm_verdict(&l, 0, &exit_code).reason, "failed");
}
