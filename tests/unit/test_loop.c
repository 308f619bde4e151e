/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_loop.c - the consume loop (loop/loop.h) driven through its two
 * seams with fakes (support_loop.h: Kafka in memory, pools whose work the
 * test carries out): a partition restored before its requests are taken,
 * an aborted transaction rewinding the records and what is re-derived
 * from them (a submit's result, a terminal state published again), a
 * revoked or lost partition's work dropped, duplicates, conflicting
 * attempts and the three cancel paths, the LOST grace, and what follows a
 * terminal state. What reaches "Kafka" is read back from the records that
 * committed, as a consumer of the topics would.
 */
#include "clock/timestamp.h"
#include "clock/clock.h"
#include "base/util.h"
#include "record/events.h"
#include "record/launch.h"
#include "loop/loop.h"
#include "compose.h"

#include "support_loop.h"
#include "support_storage.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

LOOP_FIXTURE(loop, "forge-loop", "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
             "FORGE_POLL_INTERVAL_MS=3600000", "FORGE_LOST_GRACE_S=600");

/* ---- what the test sends and reads ----------------------------------------
 */

static const char *launch_req(const char *id, int attempt)
{
    return loop_launch_request(id, attempt, "");
}

static void send_launch(int32_t p, const char *id, int attempt)
{
    fake_kafka_send(kafka, p, id, launch_req(id, attempt));
}

static void send_cancel(int32_t p, const char *id)
{
    char buf[128];

    snprintf(buf, sizeof(buf),
             "{\"kind\": \"cancel\", \"launch_id\": \"%s\", \"attempt\": 1}",
             id);
    fake_kafka_send(kafka, p, id, buf);
}

/* A record another worker committed before: launch id (attempt 1) in
 * `state`, with job_id (0: none) and missing_since_ms. */
static void stored(int32_t p, const char *id, forge_state_t state,
                   uint32_t job_id, long long missing_since_ms)
{
    const char *req = launch_req(id, 1);
    forge_launch_record_t *r = forge_launch_record_new(id, 1, req, strlen(req));

    r->state = state;
    r->seq = 3;
    r->job_id = job_id;
    r->missing_since_ms = missing_since_ms;
    store_record(p, r);
}

/* The reason of id's last committed status event. */
static void expect_reason(const char *id, const char *want)
{
    json_t *last = last_of(cfg->topic_status, id);

    cr_expect_str_eq(json_string_value(json_object_get(
                         json_object_get(last, "data"), "reason")),
                     want, "%s: reason", id);
    json_decref(last);
}

/* id's last committed state record (new). */
static json_t *last_record(const char *id)
{
    return last_of(cfg->topic_state, id);
}

static bool record_bool(const char *id, const char *field)
{
    json_t *r = last_record(id);
    bool v = json_is_true(json_object_get(r, field));

    json_decref(r);
    return v;
}

/* The Slurm thread's answer to a submit of id: job_id (0: status). */
static void submit_done(const char *id, forge_work_kind_t kind, uint32_t job_id,
                        forge_slurm_status_t status)
{
    submit_answered(next_work(FORGE_LANE_SLURM, kind, id), job_id, 1, status);
}

/* The job Slurm now reports in slurm_state (exit code 0). */
static void changed(forge_poll_item_t *it, const char *slurm_state)
{
    const char *const states[] = {slurm_state, NULL};

    item_changed(it, states);
}

/* ---- restore, then requests -----------------------------------------------
 */

/* A submit goes out only once the transaction with its ACCEPTED committed. */
static void accepted_first(void *ctx, forge_loop_lane_t lane,
                           const forge_work_t *w)
{
    (void)ctx;
    if (lane != FORGE_LANE_SLURM || w->kind != FORGE_WORK_SUBMIT)
        return;
    cr_assert_geq(fake_kafka_count(kafka, cfg->topic_state, w->launch_id), 1,
                  "%s: submit posted before its intent committed",
                  w->launch_id);
}

Test(loop, restores_a_partition_before_taking_its_requests)
{
    stored(0, "R1", FORGE_STATE_RUNNING, 42, 0);
    send_launch(0, "R1", 1); /* sent again: its record says it is known */
    send_launch(0, "L1", 1);
    pools->on_post = accepted_first;
    assign(0);
    cr_assert_eq(kafka->restores, 1);
    cr_assert_not(kafka->paused[0], "restored, yet still paused");
    step();
    expect_states("R1", "");
    expect_states("L1", "ACCEPTED");
    cr_assert_eq(kafka->committed[0], 2, "both requests are handled");
    /* the restored job is polled; L1's submit is the one Slurm work */
    {
        forge_work_t *t = poll_tick();
        cr_assert_eq(item_of(t, 42)->state, FORGE_STATE_RUNNING);
        forge_work_free(t);
    }
    submit_done("L1", FORGE_WORK_SUBMIT, 7, FORGE_SLURM_OK);
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM));
    step();
    expect_states("L1", "ACCEPTED SUBMITTED");
    cr_expect_eq(record_int("L1", "job_id"), 7);
}

Test(loop, a_failed_restore_keeps_the_partition_paused_then_retries)
{
    send_launch(0, "L1", 1);
    kafka->restore_failures_left = 1;
    assign(0);
    step();
    cr_assert(kafka->paused[0]);
    expect_states("L1", "");
    forge_clock_sleep_ms(1100); /* the first backoff: 1 s */
    step();
    cr_assert_eq(kafka->restores, 2);
    cr_assert_not(kafka->paused[0]);
    step();
    expect_states("L1", "ACCEPTED");
}

/* What id's records opened to, in order, as decoded (new records). */
static forge_launch_record_t *record_at(const char *id, size_t nth)
{
    json_t *o = NULL;
    size_t from = 0;

    for (size_t i = 0; i <= nth; i++) {
        json_decref(o);
        o = fake_kafka_next_of(kafka, cfg->topic_state, id, &from);
        cr_assert_not_null(o, "no record %zu of %s", nth, id);
    }
    return record_opened(o);
}

/* The intent carries the whole request (an interrupted submit is
 * prepared from it); once the job id is recorded, only what is kept of it
 * (labels, secrets, pools, tenant: held.h), from the table's held form. */
Test(loop, a_submitted_record_carries_only_what_is_kept_of_its_request)
{
    forge_launch_record_t *r;

    assign(0);
    send_launch(0, "L1", 1);
    step();
    submit_done("L1", FORGE_WORK_SUBMIT, 7, FORGE_SLURM_OK);
    step();
    expect_states("L1", "ACCEPTED SUBMITTED");
    r = record_at("L1", 0);
    cr_assert_str_eq(r->request, launch_req("L1", 1));
    forge_launch_record_free(r);
    r = record_at("L1", 1);
    cr_assert_eq(r->job_id, 7);
    cr_assert_not_null(r->request);
    cr_assert_null(strstr(r->request, "images/a.sif"), "%s", r->request);
    cr_assert_not_null(strstr(r->request, "\"pools\":[{\"name\":\"main\"}]"),
                       "%s", r->request);
    forge_launch_record_free(r);
}

/* ---- an aborted transaction -----------------------------------------------
 */

Test(loop, an_abort_rewinds_and_rederives_the_lost_work)
{
    assign(0);
    send_launch(0, "L1", 1);
    step();
    submit_done("L1", FORGE_WORK_SUBMIT, 7, FORGE_SLURM_OK);
    send_launch(0, "L2", 1);
    kafka->outcomes[kafka->outcome_count++] = FORGE_KAFKA_ABORTED;
    step(); /* SUBMITTED of L1, ACCEPTED of L2: aborted */
    cr_assert_eq(kafka->aborts, 1);
    cr_assert_eq(kafka->restores, 2, "an abort restores what committed");
    expect_states("L1", "ACCEPTED");
    expect_states("L2", "");
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM),
                   "work of an aborted transaction is never posted");
    tick_step(); /* L2 again from the rewound offset; L1 cleaned first */
    expect_states("L2", "ACCEPTED");
    submit_done("L1", FORGE_WORK_CLEAN_SUBMIT, 7, FORGE_SLURM_OK);
    submit_done("L2", FORGE_WORK_SUBMIT, 8, FORGE_SLURM_OK);
    step();
    expect_states("L1", "ACCEPTED SUBMITTED");
    expect_states("L2", "ACCEPTED SUBMITTED");
}

/* The clean of an interrupted submit ran: a POST of it slurmrestd still
 * held may land later (held). The sweep for such late jobs is due in the
 * record written with SUBMITTED, posted FORGE_LATE_JOB_SWEEP_S later
 * keeping the launch's job, asked again when it fails, and once done the
 * record says so. */
Test(loop, a_clean_submit_makes_a_sweep_due_until_it_is_done)
{
    forge_work_t *w;

    cfg->late_job_sweep_s = 1;
    stored(0, "I1", FORGE_STATE_ACCEPTED, 0, 0);
    stored(0, "I2", FORGE_STATE_ACCEPTED, 0, 0);
    assign(0);
    step(); /* restored; the first tick cleans and resubmits the intents */
    submit_done("I1", FORGE_WORK_CLEAN_SUBMIT, 7, FORGE_SLURM_OK);
    submit_done("I2", FORGE_WORK_CLEAN_SUBMIT, 8, FORGE_SLURM_OK);
    step();
    expect_states("I1", "SUBMITTED");
    cr_assert(record_bool("I1", "sweep_due"));
    cr_assert(record_bool("I2", "sweep_due"));
    tick_step();
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM), "not yet due");
    usleep(1100 * 1000);
    tick_step();
    w = next_work(FORGE_LANE_SLURM, FORGE_WORK_SWEEP, "I1");
    cr_assert_eq(w->cancel.job_id, 7, "the launch's own job is kept");
    w->status = FORGE_SLURM_OK;
    fake_pools_finish(pools, FORGE_LANE_SLURM, w);
    w = next_work(FORGE_LANE_SLURM, FORGE_WORK_SWEEP, "I2");
    w->status = FORGE_SLURM_TRANSPORT;
    fake_pools_finish(pools, FORGE_LANE_SLURM, w);
    step();
    cr_assert_not(record_bool("I1", "sweep_due"), "done: the flag goes");
    cr_assert(record_bool("I2", "sweep_due"), "a failed sweep stays due");
    tick_step();
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM),
                   "a failed sweep waits before it is asked again");
}

Test(loop, an_abort_republishes_a_terminal_state_slurm_forgot)
{
    forge_work_t *t;
    unsigned long epoch;

    stored(0, "R1", FORGE_STATE_RUNNING, 42, 0);
    assign(0);
    step();
    t = poll_tick();
    epoch = t->poll.epoch;
    changed(item_of(t, 42), "COMPLETED");
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
    kafka->outcomes[kafka->outcome_count++] = FORGE_KAFKA_ABORTED;
    step();
    expect_states("R1", "");
    tick_step();
    t = poll_tick();
    cr_assert_gt(t->poll.epoch, epoch, "the poller must forget what it saw");
    item_of(t, 42)->outcome = FORGE_POLL_ABSENT; /* slurmctld forgot it */
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
    step();
    expect_states("R1", "SUCCEEDED");
    cr_expect_eq(record_int("R1", "missing_since_ms"), 0);
}

Test(loop, a_fatal_commit_ends_the_loop)
{
    assign(0);
    send_launch(0, "L1", 1);
    kafka->outcomes[kafka->outcome_count++] = FORGE_KAFKA_FATAL;
    step();
    cr_assert(forge_loop_fatal(loop));
}

/* The producer waits for the broker (nothing committed), then aborts once
 * it is back: the request is taken again, and submitted once. */
/* Outcomes alone gather for the cadence (fewer transactions under a burst
 * of results); a request taken commits at once, with whatever waited. */
Test(loop, outcomes_alone_wait_their_cadence_a_request_commits_at_once)
{
    assign(0);
    forge_loop_set_outcome_commit_ms(loop, 300);
    send_launch(0, "L1", 1);
    step();
    expect_states("L1", "ACCEPTED");
    submit_done("L1", FORGE_WORK_SUBMIT, 7, FORGE_SLURM_OK);
    step();
    expect_states("L1", "ACCEPTED"); /* SUBMITTED written, not committed */
    forge_clock_sleep_ms(350);
    step();
    expect_states("L1", "ACCEPTED SUBMITTED");

    send_launch(0, "L2", 1);
    step();
    submit_done("L2", FORGE_WORK_SUBMIT, 8, FORGE_SLURM_OK);
    step();
    expect_states("L2", "ACCEPTED");
    send_launch(0, "L3", 1);
    step(); /* L3's request takes L2's SUBMITTED along */
    expect_states("L2", "ACCEPTED SUBMITTED");
    expect_states("L3", "ACCEPTED");
}

Test(loop, a_waiting_producer_then_an_abort_takes_the_request_again)
{
    assign(0);
    send_launch(0, "L1", 1);
    kafka->outcomes[kafka->outcome_count++] = FORGE_KAFKA_WAITING;
    kafka->outcomes[kafka->outcome_count++] = FORGE_KAFKA_ABORTED;
    step();
    cr_assert_not(forge_loop_fatal(loop));
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM));
    step(); /* the abort: rewound */
    expect_states("L1", "");
    step();
    expect_states("L1", "ACCEPTED");
    forge_work_free(next_work(FORGE_LANE_SLURM, FORGE_WORK_SUBMIT, "L1"));
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM), "one submit");
}

/* ---- partitions leaving ----------------------------------------------------
 */

Test(loop, a_revoke_commits_the_results_in_and_drops_deferred_work)
{
    int32_t both[] = {0, 1};

    fake_kafka_assign(kafka, both, 2);
    send_launch(0, "L1", 1);
    step();
    submit_done("L1", FORGE_WORK_SUBMIT, 7, FORGE_SLURM_OK);
    /* mid-batch: L2's submit is deferred when partitions 0 and 1 leave */
    send_launch(1, "L2", 1);
    kafka->revoke_parts[0] = 0;
    kafka->revoke_parts[1] = 1;
    kafka->revoke_count = 2;
    tick_step();
    expect_states("L1", "ACCEPTED SUBMITTED"); /* in the last transaction */
    expect_states("L2", "ACCEPTED");
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM),
                   "a leaving partition's deferred submit was posted");
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_POLLER),
                   "the jobs of partitions gone are polled");
}

Test(loop, a_lost_partition_drops_results_that_come_back_late)
{
    int32_t p = 0;

    assign(0);
    send_launch(0, "L1", 1);
    step();
    fake_kafka_revoke(kafka, &p, 1, true);
    assign(0); /* back, restored: a new generation of the partition */
    /* the submit posted by the generation before comes back */
    submit_done("L1", FORGE_WORK_SUBMIT, 7, FORGE_SLURM_OK);
    tick_step();
    expect_states("L1", "ACCEPTED");
    /* what is left to do is derived from the record: the tag cleaned
     * first (a submit may have reached Slurm), then submitted */
    submit_done("L1", FORGE_WORK_CLEAN_SUBMIT, 8, FORGE_SLURM_OK);
    step();
    expect_states("L1", "ACCEPTED SUBMITTED");
    cr_expect_eq(record_int("L1", "job_id"), 8);
}

Test(loop, a_cancel_of_a_restored_intent_cleans_its_tag_first)
{
    stored(0, "I1", FORGE_STATE_ACCEPTED, 0, 0);
    assign(0);
    send_cancel(0, "I1");
    step();
    cr_assert(record_bool("I1", "cancel_requested"));
    expect_states("I1", "");
    submit_done("I1", FORGE_WORK_CLEAN_CANCEL, 0, FORGE_SLURM_OK);
    step();
    expect_states("I1", "CANCELLED");
}

/* ---- duplicates, conflicts, what cannot be a launch ------------------------
 */

Test(loop, duplicates_conflicts_and_invalid_requests)
{
    json_t *ev;
    size_t from = 0;

    assign(0);
    send_launch(0, "L1", 1);
    send_launch(0, "L1", 1); /* the same again */
    send_launch(0, "L1", 2); /* while attempt 1 is live */
    fake_kafka_send(kafka, 0, "L3",
                    "{\"kind\": \"launch\", "
                    "\"launch_id\": \"L3\"}");
    fake_kafka_send(kafka, 0, "junk", "not json");
    step();
    expect_states("L1", "ACCEPTED REJECTED");
    ev = fake_kafka_next_of(kafka, cfg->topic_status, "L1", &from);
    json_decref(ev);
    ev = fake_kafka_next_of(kafka, cfg->topic_status, "L1", &from);
    cr_assert_eq(json_integer_value(
                     json_object_get(json_object_get(ev, "data"), "attempt")),
                 2);
    json_decref(ev);
    ev = last_of(cfg->topic_state, "L1");
    cr_assert_eq(json_integer_value(json_object_get(ev, "attempt")), 1,
                 "the conflicting attempt has no record of its own");
    cr_assert_eq(json_integer_value(json_object_get(ev, "refused_attempt")), 2,
                 "the running attempt's record remembers the refusal");
    json_decref(ev);
    expect_states("L3", "REJECTED");
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_state, "L3"), 1);
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_dlq, "junk"), 1);
    forge_work_free(next_work(FORGE_LANE_SLURM, FORGE_WORK_SUBMIT, "L1"));
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM), "one submit");
}

/* The state topic holds L1's attempt 1, ended SUCCEEDED, archived and
 * cleaned, with attempt 2 refused while it ran. */
static void put_l1_ended_with_attempt_2_refused(void)
{
    const char *req = launch_req("L1", 1);
    forge_launch_record_t *r =
        forge_launch_record_new("L1", 1, req, strlen(req));

    r->state = FORGE_STATE_SUCCEEDED;
    r->seq = 5;
    r->job_id = 7;
    r->archived = r->cleaned = true;
    r->refused_attempt = 2;
    store_record(0, r);
}

/* An attempt refused while an earlier one ran stays REJECTED: read again
 * once that one has ended (a replay, a resend), it changes nothing (no
 * second seq 1 for it); a higher one runs. */
Test(loop, an_attempt_refused_while_another_ran_stays_decided)
{
    put_l1_ended_with_attempt_2_refused();

    assign(0);
    step();
    send_launch(0, "L1", 2); /* decided: REJECTED while attempt 1 ran */
    step();
    expect_states("L1", "");
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM));
    send_launch(0, "L1", 3);
    step();
    expect_states("L1", "ACCEPTED");
    forge_work_free(next_work(FORGE_LANE_SLURM, FORGE_WORK_SUBMIT, "L1"));
}

/* Invalid messages naming an ended launch (issue 25): an attempt of the
 * wrong type names no attempt (once it fell back to 1, decided, and the
 * message vanished: no event, no DLQ record, no line): to the DLQ; an
 * invalid one for the attempt that ended (decided SUCCEEDED, not refused)
 * too; one for the attempt refused while it ran changes nothing (a replay
 * of that refusal); one for a higher attempt is REJECTED. */
Test(loop, invalid_messages_for_a_decided_launch_leave_a_trace)
{
    const char *dlq[] = {
        "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"attempt\": \"2\"}",
        "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"attempt\": 2.5}",
        "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"attempt\": true}",
        "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"attempt\": 1, "
        "\"env\": 5}",
        "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"env\": 5}"};

    put_l1_ended_with_attempt_2_refused();

    assign(0);
    step();
    for (size_t i = 0; i < sizeof(dlq) / sizeof(dlq[0]); i++)
        fake_kafka_send(kafka, 0, "L1", dlq[i]);
    fake_kafka_send(kafka, 0, "L1",
                    "{\"kind\": \"launch\", \"launch_id\": \"L1\", "
                    "\"attempt\": 2, \"env\": 5}"); /* refused already */
    step();
    expect_states("L1", "");
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_dlq, "L1"),
                 sizeof(dlq) / sizeof(dlq[0]));
    fake_kafka_send(kafka, 0, "L1",
                    "{\"kind\": \"launch\", \"launch_id\": \"L1\", "
                    "\"attempt\": 3, \"env\": 5}");
    step();
    expect_states("L1", "REJECTED");
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_dlq, "L1"),
                 sizeof(dlq) / sizeof(dlq[0]));
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM));
}

/* ---- cancels ----------------------------------------------------------------
 */

Test(loop, a_cancel_in_the_batch_of_its_launch_takes_the_submit_back)
{
    assign(0);
    send_launch(0, "L1", 1);
    send_cancel(0, "L1");
    send_cancel(0, "L9"); /* unknown: nothing */
    step();
    expect_states("L1", "ACCEPTED CANCELLED");
    expect_states("L9", "");
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM));
}

Test(loop, a_cancel_of_a_posted_submit_withdraws_it)
{
    assign(0);
    send_launch(0, "L1", 1);
    step();
    send_cancel(0, "L1");
    step();
    cr_assert_eq(pools->withdrawn_count, 1);
    cr_assert_str_eq(pools->withdrawn[0], "L1/1");
    cr_assert(record_bool("L1", "cancel_requested"));
    {
        forge_work_t *w = next_work(FORGE_LANE_SLURM, FORGE_WORK_SUBMIT, "L1");
        w->refused = FORGE_WORK_WITHDRAWN;
        w->status = FORGE_SLURM_OK;
        fake_pools_finish(pools, FORGE_LANE_SLURM, w);
    }
    step();
    expect_states("L1", "ACCEPTED CANCELLED");
}

Test(loop, a_cancel_of_a_job_cancels_it_in_slurm)
{
    forge_work_t *w, *t;

    assign(0);
    send_launch(0, "L1", 1);
    step();
    submit_done("L1", FORGE_WORK_SUBMIT, 33, FORGE_SLURM_OK);
    step();
    send_cancel(0, "L1");
    send_cancel(0, "L1"); /* asked twice: one cancel */
    step();
    w = next_work(FORGE_LANE_SLURM, FORGE_WORK_CANCEL, "L1");
    cr_assert_eq(w->cancel.job_id, 33);
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM));
    w->status = FORGE_SLURM_OK;
    fake_pools_finish(pools, FORGE_LANE_SLURM, w);
    tick_step();
    t = poll_tick();
    changed(item_of(t, 33), "CANCELLED");
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
    step();
    expect_states("L1", "ACCEPTED SUBMITTED CANCELLED");
}

/* ---- a submit's other answers
 * ------------------------------------------------ */

Test(loop, a_submit_refused_is_rejected_and_a_failed_one_waits)
{
    forge_work_t *w;

    assign(0);
    send_launch(0, "L1", 1);
    send_launch(0, "L2", 1);
    send_launch(0, "L3", 1);
    step();
    w = next_work(FORGE_LANE_SLURM, FORGE_WORK_SUBMIT, "L1");
    w->status = FORGE_SLURM_REJECTED;
    w->code = FORGE_EUNSAFE_PATH;
    fake_pools_finish(pools, FORGE_LANE_SLURM, w);
    submit_done("L2", FORGE_WORK_SUBMIT, 0, FORGE_SLURM_REJECTED);
    submit_done("L3", FORGE_WORK_SUBMIT, 0, FORGE_SLURM_TRANSPORT);
    step();
    expect_states("L1", "ACCEPTED REJECTED");
    expect_reason("L1", forge_rc_name(FORGE_EUNSAFE_PATH)); /* our code */
    expect_states("L2", "ACCEPTED REJECTED");
    expect_reason("L2", "slurm_refused");
    expect_states("L3", "ACCEPTED");
    tick_step(); /* L3 waits out its backoff (2 s): nothing posted yet */
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM));
}

/* ---- the LOST grace ---------------------------------------------------------
 */

Test(loop, a_missing_job_is_lost_only_after_the_grace)
{
    long long now = forge_timestamp_now_ms();
    forge_work_t *t;

    stored(0, "G1", FORGE_STATE_RUNNING, 51, 0);
    stored(0, "G2", FORGE_STATE_RUNNING, 52, now - 601000);
    stored(0, "G3", FORGE_STATE_RUNNING, 53, now - 590000);
    stored(0, "G4", FORGE_STATE_RUNNING, 54, now - 30000);
    assign(0);
    step();
    t = poll_tick();
    item_of(t, 51)->outcome = FORGE_POLL_ABSENT;
    item_of(t, 52)->outcome = FORGE_POLL_ABSENT;
    item_of(t, 53)->outcome = FORGE_POLL_ABSENT;
    item_of(t, 54)->outcome = FORGE_POLL_UNCHANGED; /* back in Slurm */
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
    step();
    expect_states("G1", "");
    cr_expect_geq(record_int("G1", "missing_since_ms"), now,
                  "missing from now on");
    expect_states("G2", "LOST");
    expect_states("G3", "");
    expect_states("G4", "");
    cr_expect_eq(record_int("G4", "missing_since_ms"), 0);
    tick_step(); /* missing again, within the grace */
    t = poll_tick();
    item_of(t, 51)->outcome = FORGE_POLL_ABSENT;
    item_of(t, 53)->outcome = FORGE_POLL_ABSENT;
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
    step();
    expect_states("G1", "");
    expect_states("G3", "");
}

/* ---- a job Slurm requeued -------------------------------------------------
 */

/* A poll sees the running job pending again with a restart count: the
 * platform sees PENDING (requeued), the record says `restarts`, and once
 * that committed the file threads stage that run's credentials; their
 * result records `restarts_staged`. */
Test(loop, a_requeued_job_gets_its_next_runs_credentials_staged)
{
    forge_work_t *t, *w;

    stored(0, "Q1", FORGE_STATE_RUNNING, 71, 0);
    assign(0);
    step();
    t = poll_tick();
    changed(item_of(t, 71), "PENDING");
    item_of(t, 71)->jobs.jobs[0].restart_count = 1;
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
    step();
    expect_states("Q1", "PENDING");
    expect_reason("Q1", "requeued");
    cr_expect_eq(record_int("Q1", "restarts"), 1);
    cr_expect_eq(record_int("Q1", "restarts_staged"), 0);
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_RESTAGE, "Q1");
    cr_expect_eq(w->files.restart, 1);
    cr_expect_not_null(w->files.kept, "staged from what is kept");
    fake_pools_finish(pools, FORGE_LANE_FILES, w);
    step();
    cr_expect_eq(record_int("Q1", "restarts_staged"), 1);
    tick_step(); /* staged: nothing more */
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_FILES));
}

/* Slurm requeued the running job and ran it again (or ended it) before a
 * poll saw it pending: the PENDING (requeued) goes out first, as it
 * happened, then what the poll saw; once, whatever the next polls see. */
Test(loop, a_requeue_no_poll_saw_is_said_before_what_followed_it)
{
    forge_work_t *t, *w;

    stored(0, "Q3", FORGE_STATE_RUNNING, 73, 0);
    stored(0, "Q4", FORGE_STATE_RUNNING, 74, 0);
    assign(0);
    step();
    t = poll_tick();
    changed(item_of(t, 73), "RUNNING");
    item_of(t, 73)->jobs.jobs[0].restart_count = 1;
    changed(item_of(t, 74), "COMPLETED");
    item_of(t, 74)->jobs.jobs[0].restart_count = 1;
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
    step();
    expect_states("Q3", "PENDING RUNNING");
    expect_states("Q4", "PENDING SUCCEEDED");
    cr_expect_eq(record_int("Q3", "restarts"), 1);
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_RESTAGE, "Q3");
    cr_expect_eq(w->files.restart, 1, "its run's credentials staged");
    fake_pools_finish(pools, FORGE_LANE_FILES, w);
    step();
    tick_step(); /* the same again: said once */
    t = poll_tick();
    changed(item_of(t, 73), "RUNNING");
    item_of(t, 73)->jobs.jobs[0].restart_count = 1;
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
    step();
    expect_states("Q3", "PENDING RUNNING");
}

/* An owner that died between the requeue and its staging: the next owner's
 * first tick stages the run its restored record says is not staged yet,
 * and a failed staging is tried again. */
Test(loop, a_requeue_not_staged_is_staged_by_the_next_owner)
{
    const char *req = launch_req("Q2", 1);
    forge_launch_record_t *r =
        forge_launch_record_new("Q2", 1, req, strlen(req));
    forge_work_t *w;

    r->state = FORGE_STATE_PENDING;
    r->seq = 4;
    r->job_id = 72;
    r->restarts = 2;
    r->restarts_staged = 1;
    store_record(0, r);
    assign(0);
    step();
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_RESTAGE, "Q2");
    cr_expect_eq(w->files.restart, 2);
    w->code = FORGE_EIO;
    forge_work_say(w, "storage away");
    fake_pools_finish(pools, FORGE_LANE_FILES, w);
    step();
    cr_expect_eq(record_int("Q2", "restarts_staged"), 1, "not staged");
}

/* ---- after a terminal state -----------------------------------------------
 */

Test(loop, a_finished_launch_is_archived_announced_then_cleaned)
{
    forge_work_t *w;

    stored(0, "F1", FORGE_STATE_SUCCEEDED, 61, 0);
    stored(0, "F2", FORGE_STATE_REJECTED, 0, 0);
    assign(0);
    step();
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_ARCHIVE, "F1");
    cr_assert_not_null(w->files.kept, "the archive gets what is kept");
    cr_assert_eq(w->files.kept->pool_count, 1);
    cr_assert_str_eq(w->files.kept->pools[0], "main");
    w->files.archive.path =
        forge_xstrdup("/storage/artifacts/F1/1/logs.tar.gz");
    w->files.archive.relative_path =
        forge_xstrdup("artifacts/F1/1/logs.tar.gz");
    fake_pools_finish(pools, FORGE_LANE_FILES, w);
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_CLEANUP, "F2");
    w->code = FORGE_EUNSAFE_PATH; /* refused: final */
    fake_pools_finish(pools, FORGE_LANE_FILES, w);
    step();
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_logs, "F1"), 1);
    cr_assert(record_bool("F1", "archived"));
    cr_assert(record_bool("F2", "cleaned"));
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_CLEANUP, "F1");
    fake_pools_finish(pools, FORGE_LANE_FILES, w);
    step();
    cr_assert(record_bool("F1", "cleaned"));
    tick_step(); /* nothing more to do for either */
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_FILES));
}

Test(loop, a_failed_archive_is_retried_later)
{
    forge_work_t *w;

    stored(0, "F1", FORGE_STATE_FAILED, 61, 0);
    assign(0);
    step();
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_ARCHIVE, "F1");
    w->code = FORGE_EARCHIVE;
    fake_pools_finish(pools, FORGE_LANE_FILES, w);
    step();
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_logs, "F1"), 0);
    tick_step(); /* the retry waits 10 s */
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_FILES));
}

/* ---- shutting down ------------------------------------------------------- */

Test(loop, a_drain_stops_the_tick_and_takes_no_more_requests)
{
    assign(0);
    step();
    forge_loop_drain(loop);
    cr_assert_eq(pools->interrupts[FORGE_LANE_POLLER], 1);
    cr_assert(kafka->paused[0]);
    send_launch(0, "L1", 1);
    step();
    expect_states("L1", "");
}

/* ---- forge_worker_run: the real seams wired in ----------------------------
 */

Test(loop, run_stops_with_78_when_kafka_refuses_its_configuration)
{
    /* set past the configuration's checks: librdkafka refuses it */
    forge_kafka_prop_t props[] = {{"enable.idempotence", "false"}};
    char storage[128], jwt[128];
    char *envp[] = {storage,
                    jwt,
                    "FORGE_SLURM_REST_URL=http://127.0.0.1:9",
                    "FORGE_SLURM_REST_USER=forge",
                    "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
                    "FORGE_KAFKA_BROKERS=127.0.0.1:1",
                    NULL};
    forge_config_t *full = NULL, bad;
    forge_error_t err = {0};
    volatile sig_atomic_t stop = 0;

    support_sh_in(fx.tmp, "printf 'a.b.c' > $R/../jwt; chmod 600 $R/../jwt");
    snprintf(storage, sizeof(storage), "FORGE_STORAGE_ROOT=%s/storage", fx.tmp);
    snprintf(jwt, sizeof(jwt), "FORGE_SLURM_JWT_FILE=%s/jwt", fx.tmp);
    cr_assert_eq(forge_config_load(envp, &full, &err), FORGE_OK, "%s",
                 err.message);
    bad = *full;
    bad.kafka_props = props;
    bad.kafka_prop_count = 1;
    cr_assert_eq(forge_worker_run(&bad, fx.cat, NULL, sealer, &stop), 78);
    forge_config_destroy(full);
}
