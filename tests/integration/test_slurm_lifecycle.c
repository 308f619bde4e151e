/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_lifecycle.c - launches through the real slurmrestd, for every
 * API version the cluster serves (FORGE_TEST_API_VERSIONS, see
 * support_slurm.h): rendered and staged as the worker does it, submitted
 * and followed with the project's client, job/{id} and jobs/state polled
 * and mapped by forge_slurm_verdict.
 *
 *   single   one pool on h200 → SUCCEEDED, exit 0, ran on an h200 node
 *   het      pools on h200 and a100 (gpus_per_node 1) → both components
 *            ran (an h200 node, an a100 node: their constraints), SUCCEEDED
 *
 * The cluster may have several nodes of a series (the stack's sid cluster
 * has three, which the e2e scenarios share while these run): a component
 * ran on "one node of its series" (<series>-<n>, the stack's names), and
 * its output names that node.
 *   failing  `exit 7` → FAILED, exit code 7
 *   cancel   a RUNNING `sleep 300` cancelled → CANCELLED (requested);
 *            cancelled again → OK (already finished, 2021); an unknown id
 *            → NOT_FOUND (v0.0.41: OK, it says nothing per job)
 *   rejected partition "nope" → REJECTED with Slurm's message
 *   states   jobs/state for live and unknown ids: unknown ones absent
 *   version  check_version: selected versions OK, unserved ones REJECTED
 *            naming the served ones
 *
 * Each scenario prints one "[slurm-it]" line (states with seconds since the
 * submit, Slurm's job_state sets, the jobs/state view). Quick: seconds per
 * scenario. The slow ones (time limit, requeue, aged out) are in
 * test_slurm_slow.c.
 */
#include "support_slurm.h"

#include "slurm/verdict.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

/* Job ids no job has: below Slurm's default MaxJobId (67043328). */
#define UNKNOWN_A 67000001u
#define UNKNOWN_B 67000002u

TestSuite(slurm_lifecycle, .init = sl_setup, .fini = sl_teardown,
          .timeout = 240);

#define VERSION_PARAMS(name)                                                   \
    ParameterizedTestParameters(slurm_lifecycle, name)                         \
    {                                                                          \
        static int versions[2 * FORGE_API__COUNT];                             \
        size_t n = sl_versions(versions, 2 * FORGE_API__COUNT);                \
        return cr_make_param_array(int, versions, n);                          \
    }

/* Prints pool and node from inside the (fake) container. */
static json_t *cmd_report(void)
{
    return json_pack("[s,s,s]", "/bin/sh", "-c",
                     "echo \"ran pool=$FORGE_POOL "
                     "node=$SLURM_TOPOLOGY_ADDR\"");
}

static json_t *one_pool(const char *series, int gpus)
{
    return json_pack("[{s:s, s:s, s:i, s:i}]", "name", "main", "series", series,
                     "nodes", 1, "gpus_per_node", gpus);
}

static void submit_ok(forge_slurm_client_t *c, sl_trace_t *t, json_t *req)
{
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st = sl_submit(c, t, req, &res);

    cr_assert_eq(st, FORGE_SLURM_OK, "%s: submit: %s (HTTP %ld): %s", t->label,
                 forge_slurm_status_name(st), res.http_status, res.message);
    cr_assert_gt(t->job_id, 0);
}

/* Component i ran on one node of the series `constraint` names and ended
 * in `state`; returns that node's name (the trace's). */
static const char *expect_component(const sl_trace_t *t, size_t i,
                                    const char *constraint, const char *state)
{
    const forge_slurm_job_t *j;
    size_t len = strlen(constraint);

    cr_assert_lt(i, t->last.count, "%s: no component %zu", t->label, i);
    j = &t->last.jobs[i];
    cr_assert_eq(j->het_offset, (int)i, "%s: component %zu has offset %d",
                 t->label, i, j->het_offset);
    cr_assert(j->nodes && !strncmp(j->nodes, constraint, len) &&
                  j->nodes[len] == '-' && !strpbrk(j->nodes, ",["),
              "%s: component %zu ran on %s, not on one %s node", t->label, i,
              j->nodes ? j->nodes : "(none)", constraint);
    cr_assert(j->constraints && !strcmp(j->constraints, constraint),
              "%s: component %zu has constraint %s, not %s", t->label, i,
              j->constraints ? j->constraints : "(none)", constraint);
    cr_assert(j->state_count >= 1 && !strcmp(j->state[0], state),
              "%s: component %zu is %s, not %s", t->label, i,
              j->state_count ? j->state[0] : "(nothing)", state);
    return j->nodes;
}

/* `file` of the staging folder holds "ran pool=<pool> node=<node>". */
static void expect_output(const sl_trace_t *t, const char *file,
                          const char *pool, const char *node)
{
    char *out = sl_staging_read(t, file);
    char line[256];

    snprintf(line, sizeof line, "ran pool=%s node=%s", pool, node);
    cr_assert_not_null(out, "%s: no %s in %s", t->label, file, t->staging);
    cr_assert(strstr(out, line), "%s: %s lacks \"%s\": %s", t->label, file,
              line, out);
    free(out);
}

VERSION_PARAMS(single)
ParameterizedTest(int *ver, slurm_lifecycle, single)
{
    forge_api_version_t v = sl_version_check(*ver);
    forge_slurm_client_t *c = sl_client(v);
    sl_trace_t t;
    forge_state_t end;
    const char *node;

    sl_trace_init(&t, v, "single");
    submit_ok(c, &t, sl_request(&t, cmd_report(), one_pool("h200", 1), NULL));
    end = sl_follow(c, &t, FORGE_STATE_NONE, 0, 180);
    sl_trace_print(&t, NULL);
    cr_assert_eq(end, FORGE_STATE_SUCCEEDED, "%s: ended %s", t.label,
                 forge_state_name(end));
    cr_assert_eq(t.exit_code, 0);
    cr_assert_eq(t.last.count, 1);
    node = expect_component(&t, 0, "h200", "COMPLETED");
    cr_assert_eq(t.last.jobs[0].het_job_id, 0, "not a het job");
    cr_assert_eq(t.polled_state, FORGE_STATE_SUCCEEDED,
                 "%s: jobs/state says %s", t.label,
                 forge_state_name(t.polled_state));
    expect_output(&t, "main.out", "main", node);
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}

VERSION_PARAMS(het)
ParameterizedTest(int *ver, slurm_lifecycle, het)
{
    forge_api_version_t v = sl_version_check(*ver);
    forge_slurm_client_t *c = sl_client(v);
    forge_slurm_job_list_t states = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st;
    sl_trace_t t;
    forge_state_t end;
    const char *trainer, *rollout;
    int ec;

    sl_trace_init(&t, v, "het");
    submit_ok(
        c, &t,
        sl_request(&t, cmd_report(),
                   json_pack("[{s:s, s:s, s:i, s:i},"
                             " {s:s, s:s, s:i, s:i}]",
                             "name", "trainer", "series", "h200", "nodes", 1,
                             "gpus_per_node", 1, "name", "rollout", "series",
                             "a100", "nodes", 1, "gpus_per_node", 1),
                   NULL));
    end = sl_follow(c, &t, FORGE_STATE_NONE, 0, 180);
    sl_trace_print(&t, NULL);
    cr_assert_eq(end, FORGE_STATE_SUCCEEDED, "%s: ended %s", t.label,
                 forge_state_name(end));
    cr_assert_eq(t.exit_code, 0);
    cr_assert_eq(t.last.count, 2, "%s: %zu components", t.label, t.last.count);
    trainer = expect_component(&t, 0, "h200", "COMPLETED");
    rollout = expect_component(&t, 1, "a100", "COMPLETED");
    cr_assert_eq(t.last.jobs[0].het_job_id, t.job_id);
    cr_assert_eq(t.last.jobs[1].het_job_id, t.job_id);
    cr_assert_eq(t.last.jobs[0].job_id, t.job_id);
    /* Both steps ran: component 0's output is the batch script's; every
     * later het group writes its own <pool>.out (srun --output). */
    expect_output(&t, "trainer.out", "trainer", trainer);
    expect_output(&t, "rollout.out", "rollout", rollout);

    /* jobs/state for the leader: every component, "<own id>+<offset>". */
    st = forge_slurm_job_states(c, &t.job_id, 1, &states, &res);
    cr_assert_eq(st, FORGE_SLURM_OK, "%s: jobs/state: %s", t.label,
                 res.message);
    cr_assert_eq(states.count, 2, "%s: jobs/state gave %zu rows", t.label,
                 states.count);
    for (size_t i = 0; i < states.count; i++) {
        const forge_slurm_job_t *j = &states.jobs[i];
        const forge_slurm_job_t *d = &t.last.jobs[j->het_offset ? 1 : 0];
        cr_assert_eq(j->job_id, d->job_id, "%s: row %zu is job %u", t.label, i,
                     j->job_id);
        cr_assert_neq(j->het_job_id, 0, "%s: row %zu not seen as het", t.label,
                      i);
    }
    cr_assert_eq(forge_slurm_verdict(&states, 0, &ec).state,
                 FORGE_STATE_SUCCEEDED);
    forge_slurm_job_list_clear(&states);
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}

/* The one submit path (slurm/submit_held.h), as the worker's lanes and
 * `forge-worker submit` take it, against the real Slurm: a het job comes
 * back with every component's id, none of them held any more, and runs to
 * its end. */
VERSION_PARAMS(submit_held)
ParameterizedTest(int *ver, slurm_lifecycle, submit_held)
{
    forge_api_version_t v = sl_version_check(*ver);
    forge_slurm_client_t *c = sl_client(v);
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_released_t made;
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st;
    sl_trace_t t;
    forge_state_t end;

    sl_trace_init(&t, v, "submit_held");
    st = sl_submit_held(
        c, &t,
        sl_request(&t, cmd_report(),
                   json_pack("[{s:s, s:s, s:i, s:i},"
                             " {s:s, s:s, s:i, s:i}]",
                             "name", "trainer", "series", "h200", "nodes", 1,
                             "gpus_per_node", 1, "name", "rollout", "series",
                             "a100", "nodes", 1, "gpus_per_node", 1),
                   NULL),
        &made, &res);
    cr_assert_eq(st, FORGE_SLURM_OK, "%s: %s (%s)", t.label, res.message,
                 forge_slurm_status_name(st));
    cr_assert_eq(made.component_count, 2, "%s: %zu components", t.label,
                 made.component_count);
    cr_assert_eq(made.component_ids[0], made.job_id, "the leader first");
    cr_assert_eq(made.cancelled_job_id, 0);
    st = forge_slurm_job_details(c, made.job_id, &jobs, &res);
    cr_assert_eq(st, FORGE_SLURM_OK, "%s: details: %s", t.label, res.message);
    for (size_t i = 0; i < jobs.count; i++) {
        const char *why = jobs.jobs[i].state_reason;
        cr_assert_eq(jobs.jobs[i].job_id, made.component_ids[i]);
        cr_assert(!why || strncmp(why, "JobHeld", 7),
                  "%s: component %zu still held: %s", t.label, i, why);
    }
    forge_slurm_job_list_clear(&jobs);
    end = sl_follow(c, &t, FORGE_STATE_NONE, 0, 180);
    sl_trace_print(&t, NULL);
    cr_assert_eq(end, FORGE_STATE_SUCCEEDED, "%s: ended %s", t.label,
                 forge_state_name(end));
    free(made.component_ids);
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}

VERSION_PARAMS(failing)
ParameterizedTest(int *ver, slurm_lifecycle, failing)
{
    forge_api_version_t v = sl_version_check(*ver);
    forge_slurm_client_t *c = sl_client(v);
    sl_trace_t t;
    forge_state_t end;

    sl_trace_init(&t, v, "failing");
    submit_ok(c, &t,
              sl_request(&t, json_pack("[s,s,s]", "/bin/sh", "-c", "exit 7"),
                         one_pool("a100", 0), NULL));
    end = sl_follow(c, &t, FORGE_STATE_NONE, 0, 180);
    sl_trace_print(&t, NULL);
    cr_assert_eq(end, FORGE_STATE_FAILED, "%s: ended %s", t.label,
                 forge_state_name(end));
    cr_assert_eq(t.exit_code, 7, "%s: exit code %d", t.label, t.exit_code);
    cr_assert_str_eq(sl_reason(&t), "failed");
    cr_assert_eq(t.polled_state, FORGE_STATE_FAILED);
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}

VERSION_PARAMS(cancel)
ParameterizedTest(int *ver, slurm_lifecycle, cancel)
{
    forge_api_version_t v = sl_version_check(*ver);
    forge_slurm_client_t *c = sl_client(v);
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st;
    sl_trace_t t;
    forge_state_t end;
    double t_cancel;
    char note[800];

    sl_trace_init(&t, v, "cancel");
    submit_ok(c, &t,
              sl_request(&t, json_pack("[s,s]", "sleep", "300"),
                         one_pool("h200", 1), NULL));
    end = sl_follow(c, &t, FORGE_STATE_RUNNING, 0, 180);
    cr_assert_eq(end, FORGE_STATE_RUNNING, "%s: %s before the cancel", t.label,
                 forge_state_name(end));
    t_cancel = sl_now();
    st = forge_slurm_cancel(c, t.job_id, NULL, &res);
    cr_assert_eq(st, FORGE_SLURM_OK, "%s: cancel: %s (HTTP %ld): %s", t.label,
                 forge_slurm_status_name(st), res.http_status, res.message);
    end = sl_follow(c, &t, FORGE_STATE_NONE, 1, 120);
    cr_assert_eq(end, FORGE_STATE_CANCELLED, "%s: ended %s", t.label,
                 forge_state_name(end));
    cr_assert_str_eq(sl_reason(&t), "requested");
    cr_assert_eq(t.polled_state, FORGE_STATE_CANCELLED);

    /* Again: the job is over; still OK. v0.0.42+ say why (2021 in
     * status[]); v0.0.41 answers 200 with nothing to say. */
    st = forge_slurm_cancel(c, t.job_id, NULL, &res);
    cr_assert_eq(st, FORGE_SLURM_OK, "%s: second cancel: %s (HTTP %ld): %s",
                 t.label, forge_slurm_status_name(st), res.http_status,
                 res.message);
    if (v >= FORGE_API_V0_0_42)
        cr_assert_eq(res.slurm_error, 2021, "%s: second cancel: %d %s", t.label,
                     res.slurm_error, res.message);
    snprintf(note, sizeof(note),
             "CANCELLED %.1fs after the DELETE; second cancel: HTTP %ld, "
             "error %d \"%s\"",
             t.steps[t.n - 1].at - (t_cancel - t.t0), res.http_status,
             res.slurm_error, res.message);

    /* A job Slurm never had: NOT_FOUND (2017) from v0.0.42; v0.0.41
     * answers 200 without any per-job outcome, so it cannot be told from
     * a cancelled one (seen on 24.11). */
    st = forge_slurm_cancel(c, UNKNOWN_A, NULL, &res);
    if (v >= FORGE_API_V0_0_42)
        cr_assert_eq(st, FORGE_SLURM_NOT_FOUND,
                     "%s: cancel of unknown job %u: %s (HTTP %ld): %s", t.label,
                     UNKNOWN_A, forge_slurm_status_name(st), res.http_status,
                     res.message);
    else
        cr_assert_eq(st, FORGE_SLURM_OK, "%s: cancel of unknown job: %s: %s",
                     t.label, forge_slurm_status_name(st), res.message);
    snprintf(note + strlen(note), sizeof(note) - strlen(note),
             "; unknown job: %s, HTTP %ld, error %d",
             forge_slurm_status_name(st), res.http_status, res.slurm_error);
    sl_trace_print(&t, note);
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}

VERSION_PARAMS(rejected)
ParameterizedTest(int *ver, slurm_lifecycle, rejected)
{
    forge_api_version_t v = sl_version_check(*ver);
    forge_slurm_client_t *c = sl_client(v);
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st;
    sl_trace_t t;
    char note[700];

    sl_trace_init(&t, v, "rejected");
    st = sl_submit(c, &t,
                   sl_request(&t, json_pack("[s]", "true"), one_pool("h200", 0),
                              json_pack("{s:s}", "partition", "nope")),
                   &res);
    snprintf(note, sizeof(note), "%s, HTTP %ld, error %d: %s",
             forge_slurm_status_name(st), res.http_status, res.slurm_error,
             res.message);
    sl_trace_print(&t, note);
    cr_assert_eq(st, FORGE_SLURM_REJECTED, "%s: %s", t.label, note);
    cr_assert_eq(t.job_id, 0);
    cr_assert_eq(sl_state(&t), FORGE_STATE_REJECTED);
    cr_assert(strstr(res.message, "Invalid partition name specified"),
              "%s: Slurm's message is not in res.message: %s", t.label,
              res.message);
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}

VERSION_PARAMS(states)
ParameterizedTest(int *ver, slurm_lifecycle, states)
{
    forge_api_version_t v = sl_version_check(*ver);
    forge_slurm_client_t *c = sl_client(v);
    forge_slurm_job_list_t l = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st;
    sl_trace_t t;
    forge_state_t end;
    uint32_t ids[3];
    int ec;

    sl_trace_init(&t, v, "states");
    submit_ok(c, &t,
              sl_request(&t, json_pack("[s,s]", "sleep", "120"),
                         one_pool("a100", 0), NULL));
    end = sl_follow(c, &t, FORGE_STATE_RUNNING, 0, 180);
    cr_assert_eq(end, FORGE_STATE_RUNNING);

    ids[0] = UNKNOWN_A;
    ids[1] = t.job_id;
    ids[2] = UNKNOWN_B;
    st = forge_slurm_job_states(c, ids, 3, &l, &res);
    cr_assert_eq(st, FORGE_SLURM_OK, "%s: jobs/state: %s (HTTP %ld): %s",
                 t.label, forge_slurm_status_name(st), res.http_status,
                 res.message);
    cr_assert_eq(l.count, 1, "%s: %zu rows for 1 live + 2 unknown ids", t.label,
                 l.count);
    cr_assert_eq(l.jobs[0].job_id, t.job_id);
    cr_assert_eq(forge_slurm_verdict(&l, 0, &ec).state, FORGE_STATE_RUNNING);
    forge_slurm_job_list_clear(&l);

    /* Only unknown ids: an empty answer, and no verdict from it. */
    st = forge_slurm_job_states(c, ids + 2, 1, &l, &res);
    cr_assert_eq(st, FORGE_SLURM_OK, "%s: jobs/state: %s", t.label,
                 res.message);
    cr_assert_eq(l.count, 0);
    cr_assert_eq(forge_slurm_verdict(&l, 0, &ec).state, FORGE_STATE_NONE);
    forge_slurm_job_list_clear(&l);

    cr_assert_eq(forge_slurm_cancel(c, t.job_id, NULL, &res), FORGE_SLURM_OK,
                 "%s: cancel: %s", t.label, res.message);
    end = sl_follow(c, &t, FORGE_STATE_NONE, 1, 120);
    cr_assert_eq(end, FORGE_STATE_CANCELLED);
    sl_trace_print(&t, "jobs/state [unknown, live, unknown] -> [live]");
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}

Test(slurm_lifecycle, version)
{
    int want[2 * FORGE_API__COUNT], refuse[2 * FORGE_API__COUNT];
    size_t nw = sl_versions(want, 2 * FORGE_API__COUNT);
    size_t nr = sl_unserved_versions(refuse, 2 * FORGE_API__COUNT);

    for (size_t i = 0; i < nw; i++) {
        forge_api_version_t v = sl_version_check(want[i]);
        forge_slurm_client_t *c = sl_client(v);
        forge_slurm_result_t res = {0};
        forge_slurm_status_t st = forge_slurm_check_version(c, &res);
        cr_assert_eq(st, FORGE_SLURM_OK, "%s: %s", forge_api_version_name(v),
                     res.message);
        forge_slurm_client_destroy(c);
    }
    for (size_t i = 0; i < nr; i++) {
        forge_api_version_t v = sl_version_check(refuse[i]);
        forge_slurm_client_t *c = sl_client(v);
        forge_slurm_result_t res = {0};
        forge_slurm_status_t st = forge_slurm_check_version(c, &res);
        fprintf(stderr, "[slurm-it] %-24s check_version: %s: %s\n",
                forge_api_version_name(v), forge_slurm_status_name(st),
                res.message);
        cr_assert_eq(st, FORGE_SLURM_REJECTED, "%s: %s: %s",
                     forge_api_version_name(v), forge_slurm_status_name(st),
                     res.message);
        for (size_t k = 0; k < nw; k++)
            cr_assert(strstr(res.message, forge_api_version_name(
                                              (forge_api_version_t)want[k])),
                      "the refusal does not name the served %s: %s",
                      forge_api_version_name((forge_api_version_t)want[k]),
                      res.message);
        forge_slurm_client_destroy(c);
    }
}
