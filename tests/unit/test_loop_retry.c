/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_loop_retry.c - a launch's tries through the consume loop (loop/
 * tries.c, issue 26), driven through its seams with the fakes of
 * support_loop.h as test_loop.c drives it: a node failure with a try left
 * publishes PENDING (retrying, try 2) in place of FAILED and makes the
 * record the next try's intent, which the tick cleans and submits under
 * the try's tag with the failed node excluded; with no try left the
 * launch FAILED (node_fail) at try 2; a non-zero exit is never retried; a
 * restored intent waits out its backoff; a cancel in the backoff ends it
 * (and archives the earlier try's logs); a later try Slurm refuses ends
 * FAILED, never REJECTED.
 */
#include "clock/clock.h"
#include "clock/timestamp.h"
#include "base/util.h"
#include "record/launch.h"
#include "loop/loop.h"
#include "slurm/usage.h"

#include "support_loop.h"
#include "support_storage.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the fleet retries nothing: the requests' own policies do */
LOOP_FIXTURE(tries, "forge-tries", "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
             "FORGE_POLL_INTERVAL_MS=3600000");

/* ---- what the test sends and reads ---------------------------------------
 */

/* A launch of id whose retry object is retry ("" for none). */
static const char *launch_req(const char *id, const char *retry)
{
    return loop_launch_request(id, 1, retry);
}

#define TWO_TRIES                                                              \
    "{\"max_tries\": 2, \"on\": [\"node_fail\"], \"backoff_s\": 0, "           \
    "\"exclude_failed_nodes\": true}"

/* id's last committed state record, decoded (new). */
static forge_launch_record_t *last_record(const char *id)
{
    return record_opened(last_of(cfg->topic_state, id));
}

/* The Slurm thread's answer to w (held by the test): job_id, status. */
static void answer(forge_work_t *w, uint32_t job_id, forge_slurm_status_t st)
{
    submit_answered(w, job_id, 1, st);
}

/* The next poll tick's answer: job_id ended in slurm_state, on nodes,
 * with exit code exit_code, after half an hour on 4 GPUs (2 GPU-hours). */
static void job_ended(uint32_t job_id, const char *slurm_state,
                      const char *nodes, int exit_code)
{
    forge_work_t *t = poll_tick();
    const char *const states[] = {slurm_state, NULL};
    forge_slurm_job_t *j = item_changed(item_of(t, job_id), states);
    forge_error_t err = {0};

    j->nodes = forge_xstrdup(nodes);
    j->exit_code = exit_code;
    j->use = forge_slurm_job_use_new();
    cr_assert_eq(forge_slurm_tres_parse_text("cpu=8,node=1,gres/gpu=4",
                                             &j->use->tres_alloc, &err),
                 FORGE_OK);
    j->use->elapsed_s = 1800;
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
}

/* A number of the usage object of data (an event's), at key. */
static double usage_number(const json_t *data, const char *key)
{
    return json_number_value(
        json_object_get(json_object_get(data, "usage"), key));
}

/* A launch of id with retry, accepted and submitted as job `job`. */
static void submitted(const char *id, const char *retry, uint32_t job)
{
    fake_kafka_send(kafka, 0, id, launch_req(id, retry));
    step();
    answer(next_work(FORGE_LANE_SLURM, FORGE_WORK_SUBMIT, id), job,
           FORGE_SLURM_OK);
    step();
    expect_states(id, "ACCEPTED SUBMITTED");
}

/* ---- the retry ------------------------------------------------------------
 */

/* A node failure with a try left: PENDING (retrying, try 2, node_fail), the
 * record the next try's intent with the node excluded; the tick's clean
 * and submit under the try's tag; the second node failure, no try left,
 * ends the launch FAILED (node_fail) at try 2. */
Test(tries, a_node_failure_with_a_try_left_is_retried_then_fails)
{
    forge_launch_record_t *r;
    forge_work_t *w;
    json_t *data, *retry, *tries;

    assign(0);
    submitted("R1", TWO_TRIES, 71);
    r = last_record("R1");
    cr_assert_str_eq(r->request, launch_req("R1", TWO_TRIES),
                     "a retry may need the whole request");
    cr_assert_eq(r->retry.max_tries, 2);
    forge_launch_record_free(r);
    tick_step();
    job_ended(71, "NODE_FAIL", "h200-1", -1);
    step();
    expect_states("R1", "ACCEPTED SUBMITTED PENDING");
    data = last_event_data("R1");
    cr_assert_str_eq(json_string_value(json_object_get(data, "reason")),
                     "retrying");
    cr_assert_eq(json_integer_value(json_object_get(data, "try")), 2);
    retry = json_object_get(data, "retry");
    cr_assert_eq(json_integer_value(json_object_get(retry, "try")), 2);
    cr_assert_eq(json_integer_value(json_object_get(retry, "max_tries")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(retry, "cause")),
                     "node_fail");
    cr_assert_str_eq(json_string_value(json_array_get(
                         json_object_get(retry, "excluded_nodes"), 0)),
                     "h200-1");
    cr_assert_eq(json_integer_value(
                     json_object_get(json_object_get(data, "slurm"), "job_id")),
                 71, "the failed try's job");
    cr_assert_float_eq(usage_number(data, "gpu_hours"), 2.0, 1e-9,
                       "the failed try's usage");
    json_decref(data);
    r = last_record("R1");
    cr_assert_eq(r->state, FORGE_STATE_PENDING);
    cr_assert_eq(r->job_id, 0);
    cr_assert_eq(r->try_num, 2);
    cr_assert_str_eq(r->retry_cause, "node_fail");
    cr_assert_str_eq(r->excluded_nodes, "h200-1");
    cr_assert_str_eq(r->request, launch_req("R1", TWO_TRIES));
    forge_launch_record_free(r);

    tick_step(); /* the intent: cleaned and submitted by its try's tag */
    w = next_work(FORGE_LANE_SLURM, FORGE_WORK_CLEAN_SUBMIT, "R1");
    cr_assert_eq(w->try_num, 2);
    cr_assert_str_eq(w->submit.excluded_nodes, "h200-1");
    cr_assert_not_null(w->submit.request);
    answer(w, 72, FORGE_SLURM_OK);
    step();
    expect_states("R1", "ACCEPTED SUBMITTED PENDING SUBMITTED");
    data = last_event_data("R1");
    cr_assert_eq(json_integer_value(json_object_get(data, "try")), 2);
    json_decref(data);
    r = last_record("R1");
    cr_assert_eq(r->job_id, 72);
    cr_assert_eq(r->retry_not_before_ms, 0);
    cr_assert_neq(strcmp(r->request, launch_req("R1", TWO_TRIES)), 0,
                  "the last try: only what is kept");
    forge_launch_record_free(r);

    tick_step();
    job_ended(72, "NODE_FAIL", "a100-1", -1);
    step();
    expect_states("R1", "ACCEPTED SUBMITTED PENDING SUBMITTED FAILED");
    data = last_event_data("R1");
    cr_assert_str_eq(json_string_value(json_object_get(data, "reason")),
                     "node_fail");
    cr_assert_eq(json_integer_value(json_object_get(data, "try")), 2);
    cr_assert_null(json_object_get(data, "retry"));
    cr_assert_float_eq(usage_number(data, "gpu_hours"), 2.0, 1e-9,
                       "this try's own");
    tries = json_object_get(json_object_get(data, "usage"), "all_tries");
    cr_assert_eq(json_integer_value(json_object_get(tries, "tries")), 2);
    cr_assert_float_eq(json_number_value(json_object_get(tries, "gpu_hours")),
                       4.0, 1e-9, "both tries");
    cr_assert_eq(json_integer_value(json_object_get(tries, "elapsed_s")), 3600);
    json_decref(data);
    r = last_record("R1");
    cr_assert_eq(r->gpu_seconds, 4 * 3600, "the record: both tries");
    forge_launch_record_free(r);
}

/* A non-zero exit is the job's own end: never retried unless the policy
 * names `failed`, whatever else it names. */
Test(tries, a_non_zero_exit_is_never_retried_unless_named)
{
    assign(0);
    submitted("X1", TWO_TRIES, 81);
    submitted("X2",
              "{\"max_tries\": 2, \"on\": [\"failed\"], "
              "\"backoff_s\": 0}",
              82);
    tick_step();
    job_ended(81, "FAILED", "h200-1", 3);
    step();
    expect_states("X1", "ACCEPTED SUBMITTED FAILED");
    tick_step();
    job_ended(82, "FAILED", "h200-1", 3);
    step();
    expect_states("X2", "ACCEPTED SUBMITTED PENDING");
    tick_step();
    forge_work_free(next_work(FORGE_LANE_SLURM, FORGE_WORK_CLEAN_SUBMIT, "X2"));
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM),
                   "X1 ended: nothing more of it");
}

/* Without a policy (the fleet's default: one try) a node failure ends the
 * launch, as before tries. */
Test(tries, one_try_is_the_default)
{
    json_t *data;

    assign(0);
    submitted("D1", "", 91);
    tick_step();
    job_ended(91, "NODE_FAIL", "h200-1", -1);
    step();
    expect_states("D1", "ACCEPTED SUBMITTED FAILED");
    data = last_event_data("D1");
    cr_assert_eq(json_integer_value(json_object_get(data, "try")), 1);
    json_decref(data);
}

/* A retry's intent another worker committed: its backoff is honoured from
 * the record's wall clock time (not yet: nothing; passed: submitted under
 * its try's tag). */
static void stored_intent(const char *id, long long not_before_ms)
{
    const char *req = launch_req(id, TWO_TRIES);
    forge_launch_record_t *r = forge_launch_record_new(id, 1, req, strlen(req));

    r->retry = (forge_retry_policy_t){2, FORGE_RETRY_NODE_FAIL, 0, true};
    r->state = FORGE_STATE_RUNNING;
    r->seq = 3;
    r->job_id = 61;
    cr_assert_eq(forge_launch_retry(r, "node_fail", "h200-1", not_before_ms,
                                    forge_timestamp_now_ms()),
                 FORGE_OK);
    store_record(0, r);
}

Test(tries, a_restored_intent_waits_out_its_backoff)
{
    long long now = forge_timestamp_now_ms();
    forge_work_t *w;

    stored_intent("B1", now + 3600 * 1000);
    stored_intent("B2", now - 1000);
    assign(0);
    step(); /* restored, and the first tick */
    w = next_work(FORGE_LANE_SLURM, FORGE_WORK_CLEAN_SUBMIT, "B2");
    cr_assert_eq(w->try_num, 2);
    cr_assert_str_eq(w->submit.excluded_nodes, "h200-1");
    forge_work_free(w);
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM),
                   "B1 waits an hour");
}

/* A cancel in the backoff of a restored intent: the next try's tag cleaned
 * (its last owner may have submitted it), then CANCELLED, and the earlier
 * try's logs archived: the folder holds them. */
Test(tries, a_cancel_in_the_backoff_ends_it_and_archives)
{
    forge_work_t *w;

    stored_intent("C1", forge_timestamp_now_ms() + 3600 * 1000);
    assign(0);
    step();
    fake_kafka_send(kafka, 0, "C1",
                    "{\"kind\": \"cancel\", \"launch_id\": \"C1\"}");
    step();
    w = next_work(FORGE_LANE_SLURM, FORGE_WORK_CLEAN_CANCEL, "C1");
    cr_assert_eq(w->try_num, 2, "the next try's tag");
    w->status = FORGE_SLURM_OK;
    fake_pools_finish(pools, FORGE_LANE_SLURM, w);
    step();
    expect_states("C1", "CANCELLED");
    tick_step();
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_ARCHIVE, "C1");
    forge_work_free(w);
}

/* A later try refused (by Slurm, or before it: the staging folder): the
 * launch ran, so it FAILED, never REJECTED. */
Test(tries, a_later_try_refused_fails)
{
    forge_work_t *w;
    json_t *data;

    stored_intent("F1", 0);
    assign(0);
    step();
    w = next_work(FORGE_LANE_SLURM, FORGE_WORK_CLEAN_SUBMIT, "F1");
    answer(w, 0, FORGE_SLURM_REJECTED);
    step();
    expect_states("F1", "FAILED");
    data = last_event_data("F1");
    cr_assert_str_eq(json_string_value(json_object_get(data, "reason")),
                     "slurm_refused");
    cr_assert_str_eq(json_string_value(json_object_get(data, "previous_state")),
                     "PENDING");
    json_decref(data);
}

/* The retry's transaction aborted: the record is back at the ended try's
 * job, the next poll sees its end again and decides the same, once. */
Test(tries, an_aborted_retry_is_decided_again_once)
{
    forge_launch_record_t *r;

    assign(0);
    submitted("A1", TWO_TRIES, 51);
    tick_step();
    job_ended(51, "NODE_FAIL", "h200-1", -1);
    kafka->outcomes[kafka->outcome_count++] = FORGE_KAFKA_ABORTED;
    step();
    expect_states("A1", "ACCEPTED SUBMITTED");
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM));
    tick_step();
    job_ended(51, "NODE_FAIL", "h200-1", -1);
    step();
    expect_states("A1", "ACCEPTED SUBMITTED PENDING");
    r = last_record("A1");
    cr_assert_eq(r->try_num, 2);
    cr_assert_eq(r->seq, 3);
    forge_launch_record_free(r);
}
