/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_loop_usage.c - what a job used, and its end found in accounting,
 * through the consume loop (loop/tick.c, issue 28), driven through its
 * seams with the fakes of support_loop.h as test_loop.c drives it: a
 * terminal move carries the job's usage in its event and its GPU-hours in
 * the record (LOST carries none); a job slurmctld forgot whose accounting
 * record is the launch's ends as accounting says, in the grace too; one
 * whose record is another launch's (a reused job id), or that accounting
 * still shows live, is missing: the grace, then LOST; a missing job's
 * tick item carries the launch's tag.
 */
#include "clock/timestamp.h"
#include "base/util.h"
#include "record/launch.h"
#include "loop/loop.h"

#include "support_loop.h"
#include "support_storage.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LOOP_FIXTURE(usage, "forge-usage", "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
             "FORGE_POLL_INTERVAL_MS=3600000", "FORGE_LOST_GRACE_S=600");

/* ---- what the test sends and reads ---------------------------------------
 */

/* A record another worker committed: id (attempt 1) RUNNING as job_id,
 * missing since missing_since_ms (0: not missing). */
static void stored(const char *id, uint32_t job_id, long long missing_since_ms)
{
    forge_launch_record_t *r = forge_launch_record_new(id, 1, NULL, 0);

    r->state = FORGE_STATE_RUNNING;
    r->seq = 4;
    r->job_id = job_id;
    r->missing_since_ms = missing_since_ms;
    store_record(0, r);
}

static void start(void)
{
    assign(0);
    step();
}

static void answered(forge_work_t *t)
{
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
    step();
}

/* The job as an answer tells it: slurm_state, comment and name (NULL:
 * none), 4 GPUs and 8 CPUs for elapsed_s, max RSS rss (-1: unknown). */
static void job_into(forge_poll_item_t *it, int outcome,
                     const char *slurm_state, const char *comment,
                     const char *name, long long elapsed_s, long long rss)
{
    const char *const states[] = {slurm_state, NULL};
    forge_slurm_job_t *j = item_job(it, states);
    forge_error_t err = {0};

    j->comment = comment ? forge_xstrdup(comment) : NULL;
    j->name = name ? forge_xstrdup(name) : NULL;
    j->use = forge_slurm_job_use_new();
    cr_assert_eq(forge_slurm_tres_parse_text("cpu=8,mem=64G,node=1,gres/gpu=4",
                                             &j->use->tres_alloc, &err),
                 FORGE_OK);
    j->use->elapsed_s = elapsed_s;
    j->use->max_rss_bytes = rss;
    it->outcome = outcome;
}

static json_t *last_event(const char *id)
{
    return last_of(cfg->topic_status, id);
}

static json_t *last_record(const char *id)
{
    return last_of(cfg->topic_state, id);
}

/* The usage of id's last event (borrowed from ev, which the caller frees). */
static const json_t *usage_of(json_t *ev)
{
    return json_object_get(json_object_get(ev, "data"), "usage");
}

/* ---- usage on terminal moves --------------------------------------------
 */

Test(usage, a_job_that_ends_in_slurmctld_carries_its_usage)
{
    forge_work_t *t;
    json_t *ev, *rec;

    stored("U1", 81, 0);
    start();
    t = poll_tick();
    job_into(item_of(t, 81), FORGE_POLL_CHANGED, "COMPLETED", "forge:U1:1",
             "forge-U1-1", 5400, -1);
    answered(t);
    expect_states("U1", "SUCCEEDED");
    ev = last_event("U1");
    cr_assert_not_null(usage_of(ev), "a terminal event carries usage");
    cr_assert(fabs(json_real_value(json_object_get(usage_of(ev), "gpu_hours")) -
                   6.0) < 1e-9);
    cr_assert_eq(json_integer_value(json_object_get(usage_of(ev), "gpus")), 4);
    cr_assert(json_is_null(json_object_get(usage_of(ev), "max_rss_bytes")),
              "slurmctld reports no RSS");
    json_decref(ev);
    rec = last_record("U1");
    cr_assert_eq(json_integer_value(json_object_get(rec, "gpu_seconds")),
                 4 * 5400);
    cr_assert_eq(json_integer_value(json_object_get(rec, "elapsed_s")), 5400);
    json_decref(rec);
}

Test(usage, a_live_move_and_lost_carry_none)
{
    long long now = forge_timestamp_now_ms();
    forge_work_t *t;
    json_t *ev, *rec;

    stored("U2", 82, 0);
    stored("U3", 83, now - 601000);
    start();
    t = poll_tick();
    job_into(item_of(t, 82), FORGE_POLL_CHANGED, "PENDING", "forge:U2:1",
             "forge-U2-1", -1, -1);
    item_of(t, 83)->outcome = FORGE_POLL_ABSENT;
    answered(t);
    expect_states("U2", "PENDING");
    expect_states("U3", "LOST");
    ev = last_event("U2");
    cr_assert_null(usage_of(ev));
    json_decref(ev);
    ev = last_event("U3");
    cr_assert_null(usage_of(ev), "LOST: nothing is known");
    json_decref(ev);
    rec = last_record("U3");
    cr_assert_null(json_object_get(rec, "gpu_seconds"));
    json_decref(rec);
}

/* ---- accounting before LOST ---------------------------------------------
 */

/* Slurmctld forgot the job; accounting, answering again during the grace,
 * has its end: the real state, with usage and max RSS; never LOST. */
Test(usage, an_end_found_in_accounting_during_the_grace_is_the_end)
{
    long long now = forge_timestamp_now_ms();
    forge_work_t *t;
    json_t *ev;

    stored("A1", 91, 0);
    start();
    t = poll_tick(); /* accounting unreachable: absent, the grace starts */
    item_of(t, 91)->outcome = FORGE_POLL_ABSENT;
    answered(t);
    expect_states("A1", "");
    cr_assert_geq(record_int("A1", "missing_since_ms"), now);
    tick_step();
    t = poll_tick();
    cr_assert_str_eq(item_of(t, 91)->tag, "forge:A1:1",
                     "a missing job's accounting is asked by its tag");
    job_into(item_of(t, 91), FORGE_POLL_ACCOUNTED, "FAILED", "forge:A1:1",
             "forge-A1-1", 1800, 5LL << 30);
    item_of(t, 91)->jobs.jobs[0].exit_code = 3;
    answered(t);
    expect_states("A1", "FAILED");
    cr_expect_eq(record_int("A1", "missing_since_ms"), 0);
    ev = last_event("A1");
    cr_assert_eq(
        json_integer_value(json_object_get(usage_of(ev), "max_rss_bytes")),
        5LL << 30);
    cr_assert_eq(json_integer_value(json_object_get(
                     json_object_get(json_object_get(ev, "data"), "slurm"),
                     "exit_code")),
                 3);
    json_decref(ev);
    cr_assert_eq(record_int("A1", "gpu_seconds"), 4 * 1800);
}

/* Accounting keeps no comment (no AccountingStoreFlags=job_comment): the
 * job's name says whose it is. */
Test(usage, a_record_without_comment_is_known_by_its_name)
{
    forge_work_t *t;

    stored("A2", 92, 0);
    stored("A3", 93, 0);
    start();
    t = poll_tick();
    job_into(item_of(t, 92), FORGE_POLL_ACCOUNTED, "COMPLETED", NULL,
             "forge-A2-1", 60, -1);
    job_into(item_of(t, 93), FORGE_POLL_ACCOUNTED, "COMPLETED", NULL,
             "forge-zz-1", 60, -1);
    answered(t);
    expect_states("A2", "SUCCEEDED");
    expect_states("A3", "");
    cr_assert_neq(record_int("A3", "missing_since_ms"), 0);
}

/* A job id used again (slurmctld's state lost): accounting's record under
 * it is another launch's. Missing, then LOST once the grace is over. */
Test(usage, another_launchs_record_is_missing_then_lost)
{
    long long now = forge_timestamp_now_ms();
    forge_work_t *t;

    stored("F1", 95, 0);
    stored("F2", 96, now - 601000);
    start();
    t = poll_tick();
    job_into(item_of(t, 95), FORGE_POLL_ACCOUNTED, "COMPLETED", "forge:zz:1",
             "forge-zz-1", 60, -1);
    job_into(item_of(t, 96), FORGE_POLL_ACCOUNTED, "COMPLETED", "forge:F1:1",
             "forge-F1-1", 60, -1);
    answered(t);
    expect_states("F1", "");
    cr_assert_geq(record_int("F1", "missing_since_ms"), now);
    expect_states("F2", "LOST");
}

/* Accounting still shows the job live (slurmctld lost it while it ran:
 * slurmdbd keeps it RUNNING until a runaway-job fix): not an end. */
Test(usage, a_record_accounting_shows_live_is_no_end)
{
    long long now = forge_timestamp_now_ms();
    forge_work_t *t;

    stored("R1", 97, now - 601000);
    start();
    t = poll_tick();
    job_into(item_of(t, 97), FORGE_POLL_ACCOUNTED, "RUNNING", "forge:R1:1",
             "forge-R1-1", -1, -1);
    answered(t);
    expect_states("R1", "LOST");
}
