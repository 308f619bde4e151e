/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_loop_jobcomp.c - push completion through the consume loop
 * (loop/jobcomp.c, issue 28), driven through its seams with the fakes of
 * support_loop.h and a jobcomp source the test fills: a start record makes
 * RUNNING at once and an end record the terminal state, with no poll; a
 * duplicate end, an end before its start, a het job's first component's
 * end, foreign records (untagged, another deployment's, another attempt,
 * try or job, bytes that do not read) and a launch this worker does not
 * own change nothing; an end a requeue may follow posts one targeted poll
 * and publishes nothing itself, its answer moves the launch; a pushed
 * end's archive waits for Slurm to show no COMPLETING; a retry policy
 * still applies to a pushed end.
 */
#include "base/buf.h"
#include "base/util.h"
#include "loop/loop.h"

#include "support_loop.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the records' source: a queue the test fills -------------------------
 */

typedef struct source {
    char *records[64];
    size_t head, tail;
} source_t;

static source_t src;

static bool source_next(void *ctx, char **bytes, size_t *len)
{
    source_t *s = ctx;

    if (s->head == s->tail)
        return false;
    *bytes = s->records[s->head++];
    *len = strlen(*bytes);
    return true;
}

static const forge_loop_jobcomp_ops_t source_ops = {source_next};

static void push(char *record) /* stolen */
{
    cr_assert_lt(src.tail, sizeof(src.records) / sizeof(src.records[0]));
    src.records[src.tail++] = record;
}

static void fx_init(void)
{
    static const char *const env[] = {"FORGE_SLURM_RUNTIME_PROFILE=apptainer",
                                      "FORGE_POLL_INTERVAL_MS=3600000", NULL};
    loop_fixture_init("forge-jobcomp", env);
    memset(&src, 0, sizeof(src));
    forge_loop_set_jobcomp(loop, &source_ops, &src);
}

static void fx_fini(void)
{
    while (src.head < src.tail)
        free(src.records[src.head++]);
    loop_fixture_fini();
}

TestSuite(loop_jobcomp, .init = fx_init, .fini = fx_fini);

/* ---- records as Slurm's jobcomp/kafka writes them ------------------------
 */

typedef struct rec {
    const char *id;       /* the tag's launch_id; NULL: no comment */
    int attempt;          /* 0: 1 */
    int try_num;          /* 0: a tag without a try */
    unsigned job_id;      /* the component's own id */
    unsigned leader;      /* het_job_id; 0: not het */
    int het_offset;       /* with leader */
    const char *state;    /* NULL: a start record */
    const char *exit;     /* NULL: "0:0" */
    const char *start;    /* NULL: "2026-12-06T10:00:00" */
    const char *work_dir; /* NULL: the launch's staging folder */
} rec_t;

static char *record(const rec_t *r)
{
    forge_buf_t b = FORGE_BUF_INIT;
    char wd[512];

    snprintf(wd, sizeof(wd), "%s/staging/%s/%d", cfg->slurm_storage_root,
             r->id ? r->id : "none", r->attempt ? r->attempt : 1);
    forge_buf_printf(&b, "{\"jobid\":%u,\"@start\":\"%s\"", r->job_id,
                     r->start ? r->start : "2026-12-06T10:00:00");
    if (r->state)
        forge_buf_printf(&b,
                         ",\"@end\":\"2026-12-06T11:00:00\",\"elapsed\":3600,"
                         "\"derived_ec\":\"%s\",\"exit_code\":\"%s\","
                         "\"state\":\"%s\"",
                         r->exit ? r->exit : "0:0", r->exit ? r->exit : "0:0",
                         r->state);
    else
        forge_buf_puts(&b, ",\"state\":null");
    if (r->leader)
        forge_buf_printf(&b, ",\"het_job_id\":%u,\"het_job_offset\":%d",
                         r->leader, r->het_offset);
    forge_buf_printf(&b,
                     ",\"nodes\":\"h200-1\",\"total_cpus\":16,"
                     "\"total_nodes\":1,\"partition\":\"gpu\","
                     "\"work_dir\":\"%s\",\"job_name\":\"train\","
                     "\"tres_alloc\":\"cpu=16,mem=64G,node=1,gres/gpu=4\"",
                     r->work_dir ? r->work_dir : wd);
    if (r->id && r->try_num)
        forge_buf_printf(&b, ",\"comment\":\"forge:%s:%d:%d\"", r->id,
                         r->attempt ? r->attempt : 1, r->try_num);
    else if (r->id)
        forge_buf_printf(&b, ",\"comment\":\"forge:%s:%d\"", r->id,
                         r->attempt ? r->attempt : 1);
    forge_buf_putc(&b, '}');
    return forge_buf_take(&b);
}

static void started(const char *id, unsigned job)
{
    rec_t r = {.id = id, .job_id = job};
    push(record(&r));
}

static void ended(const char *id, unsigned job, const char *state,
                  const char *exit)
{
    rec_t r = {.id = id, .job_id = job, .state = state, .exit = exit};
    push(record(&r));
}

/* ---- the loop ------------------------------------------------------------ */

static const char *launch_req(const char *id, const char *retry)
{
    return loop_launch_request(id, 1, retry);
}

/* A launch of id on partition p, submitted as job `job` with `n`
 * components (job, job + 1, ...). */
static void submitted_on(int32_t p, const char *id, const char *retry,
                         uint32_t job, size_t n)
{
    forge_work_t *w;

    fake_kafka_send(kafka, p, id, launch_req(id, retry));
    step();
    w = next_work(FORGE_LANE_SLURM, FORGE_WORK_SUBMIT, id);
    submit_answered(w, job, n, FORGE_SLURM_OK);
    step();
    expect_states(id, "ACCEPTED SUBMITTED");
}

static void submitted(const char *id, uint32_t job)
{
    submitted_on(0, id, "", job, 1);
}

/* The targeted poll posted for id: one item, job `job`. */
static forge_work_t *targeted(const char *id, uint32_t job)
{
    forge_work_t *w = next_work(FORGE_LANE_POLLER, FORGE_WORK_POLL, id);

    cr_assert(w->poll.targeted, "a targeted poll");
    cr_assert_eq(w->poll.item_count, 1);
    cr_assert_eq(w->poll.items[0].job_id, job);
    return w;
}

/* w's answer: its job in Slurm's states (NULL-terminated names). */
static void answer(forge_work_t *w, const char *const *states, int exit)
{
    forge_slurm_job_t *j = item_changed(&w->poll.items[0], states);

    j->exit_code = exit;
    j->nodes = forge_xstrdup("h200-1");
    w->status = FORGE_SLURM_OK;
    fake_pools_finish(pools, FORGE_LANE_POLLER, w);
}

static void expect_nothing_posted(void)
{
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_POLLER),
                   "nothing asked of slurmctld");
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_SLURM));
}

/* ---- start and end ------------------------------------------------------- */

Test(loop_jobcomp, a_start_makes_running_at_once_without_a_poll)
{
    assign(0);
    submitted("S1", 101);
    started("S1", 101);
    step();
    expect_states("S1", "ACCEPTED SUBMITTED RUNNING");
    expect_nothing_posted();
}

Test(loop_jobcomp, an_end_makes_succeeded_at_once)
{
    assign(0);
    submitted("E1", 111);
    started("E1", 111);
    ended("E1", 111, "COMPLETED", "0:0");
    step();
    expect_states("E1", "ACCEPTED SUBMITTED RUNNING SUCCEEDED");
}

Test(loop_jobcomp, a_non_zero_exit_fails)
{
    assign(0);
    submitted("E2", 112);
    ended("E2", 112, "FAILED", "3:0");
    step();
    expect_states("E2", "ACCEPTED SUBMITTED FAILED");
}

Test(loop_jobcomp, a_duplicate_end_changes_nothing)
{
    assign(0);
    submitted("D1", 121);
    started("D1", 121);
    ended("D1", 121, "COMPLETED", "0:0");
    step();
    ended("D1", 121, "COMPLETED", "0:0");
    started("D1", 121);
    ended("D1", 121, "COMPLETED", "0:0");
    step();
    tick_step();
    expect_states("D1", "ACCEPTED SUBMITTED RUNNING SUCCEEDED");
}

Test(loop_jobcomp, an_end_before_its_start_ends_once)
{
    assign(0);
    submitted("O1", 131);
    ended("O1", 131, "COMPLETED", "0:0");
    step();
    started("O1", 131);
    step();
    expect_states("O1", "ACCEPTED SUBMITTED SUCCEEDED");
}

/* ---- what is not this launch's ------------------------------------------- */

Test(loop_jobcomp, foreign_records_change_nothing)
{
    rec_t untagged = {.job_id = 141, .state = "COMPLETED"};
    rec_t other_deployment = {.id = "F1",
                              .job_id = 141,
                              .state = "COMPLETED",
                              .work_dir = "/elsewhere/staging/F1/1"};
    rec_t other_attempt = {
        .id = "F1", .attempt = 2, .job_id = 141, .state = "COMPLETED"};
    rec_t other_try = {
        .id = "F1", .try_num = 2, .job_id = 141, .state = "COMPLETED"};
    rec_t other_job = {.id = "F1", .job_id = 142, .state = "COMPLETED"};
    rec_t other_launch = {.id = "F9", .job_id = 141, .state = "COMPLETED"};

    assign(0);
    submitted("F1", 141);
    push(record(&untagged));
    push(record(&other_deployment));
    push(record(&other_attempt));
    push(record(&other_try));
    push(record(&other_job));
    push(record(&other_launch));
    push(forge_xstrdup("{\"jobid\": \"not a number\"}"));
    push(forge_xstrdup("not json at all"));
    step();
    expect_states("F1", "ACCEPTED SUBMITTED");
    expect_nothing_posted();
    started("F1", 141); /* the launch's own still counts */
    step();
    expect_states("F1", "ACCEPTED SUBMITTED RUNNING");
}

Test(loop_jobcomp, a_launch_not_owned_is_ignored)
{
    int32_t one = 1;

    assign(0);
    assign(1);
    submitted_on(1, "N1", "", 151, 1);
    fake_kafka_revoke(kafka, &one, 1, false);
    step();
    ended("N1", 151, "COMPLETED", "0:0");
    step();
    expect_states("N1", "ACCEPTED SUBMITTED");
    expect_nothing_posted();
}

/* ---- a het job ------------------------------------------------------------
 */

Test(loop_jobcomp, a_het_job_ends_at_its_last_component)
{
    rec_t second = {.id = "H1",
                    .job_id = 162,
                    .leader = 161,
                    .het_offset = 1,
                    .state = "COMPLETED"};
    rec_t first = {.id = "H1",
                   .job_id = 161,
                   .leader = 161,
                   .het_offset = 0,
                   .state = "COMPLETED"};

    assign(0);
    submitted_on(0, "H1", "", 161, 2);
    push(record(&second)); /* a component's end before the other's */
    step();
    expect_states("H1", "ACCEPTED SUBMITTED");
    push(record(&first));
    step();
    expect_states("H1", "ACCEPTED SUBMITTED SUCCEEDED");
}

/* ---- confirm ------------------------------------------------------------- */

/* NODE_FAIL (a requeue may follow): one targeted poll, nothing published
 * by the record; another such end meanwhile asks nothing more; Slurm's
 * answer (requeued) moves the launch by the tick's path. */
Test(loop_jobcomp, an_end_a_requeue_may_follow_asks_slurmctld_once)
{
    static const char *const requeued[] = {"PENDING", "REQUEUED", NULL};
    rec_t later = {.id = "C1",
                   .job_id = 171,
                   .state = "PREEMPTED",
                   .start = "2026-12-06T10:30:00"};
    forge_work_t *w;

    assign(0);
    submitted("C1", 171);
    started("C1", 171);
    step();
    ended("C1", 171, "NODE_FAIL", "0:0");
    step();
    expect_states("C1", "ACCEPTED SUBMITTED RUNNING");
    w = targeted("C1", 171);
    push(record(&later));
    step();
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_POLLER),
                   "one targeted poll per job at a time");
    answer(w, requeued, -1);
    step();
    expect_states("C1", "ACCEPTED SUBMITTED RUNNING PENDING");
}

/* The targeted answer still COMPLETING decides nothing: asked again. */
Test(loop_jobcomp, a_confirm_still_completing_is_asked_again)
{
    static const char *const completing[] = {"NODE_FAIL", "COMPLETING", NULL};
    static const char *const failed[] = {"NODE_FAIL", NULL};
    forge_work_t *w;

    assign(0);
    submitted("C2", 181);
    started("C2", 181);
    ended("C2", 181, "NODE_FAIL", "0:0");
    step();
    answer(targeted("C2", 181), completing, -1);
    step();
    expect_states("C2", "ACCEPTED SUBMITTED RUNNING");
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_POLLER), "not at once");
    for (int i = 0; i < 40; i++) { /* GATE_RETRY_MS later */
        struct timespec t = {0, 100 * 1000 * 1000};
        nanosleep(&t, NULL);
        step();
        if (pools->posted_count[FORGE_LANE_POLLER])
            break;
    }
    w = targeted("C2", 181);
    answer(w, failed, -1);
    step();
    expect_states("C2", "ACCEPTED SUBMITTED RUNNING FAILED");
}

/* ---- the archive ----------------------------------------------------------
 */

/* A pushed end's archive waits until Slurm shows no COMPLETING. */
Test(loop_jobcomp, a_pushed_end_archives_once_completing_cleared)
{
    static const char *const completing[] = {"COMPLETED", "COMPLETING", NULL};
    static const char *const done[] = {"COMPLETED", NULL};
    forge_work_t *w;

    assign(0);
    submitted("A1", 191);
    ended("A1", 191, "COMPLETED", "0:0");
    step();
    expect_states("A1", "ACCEPTED SUBMITTED SUCCEEDED");
    w = targeted("A1", 191);
    tick_step();
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_FILES),
                   "no archive while Slurm may be completing");
    answer(w, completing, 0);
    step();
    tick_step();
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_FILES));
    for (int i = 0; i < 40 && !pools->posted_count[FORGE_LANE_POLLER]; i++) {
        struct timespec t = {0, 100 * 1000 * 1000};
        nanosleep(&t, NULL);
        step();
    }
    answer(targeted("A1", 191), done, 0);
    step();
    forge_work_free(
        fake_pools_take(pools, FORGE_LANE_FILES, FORGE_WORK_ARCHIVE, "A1"));
}

/* ---- retry -----------------------------------------------------------------
 */

/* A pushed end whose cause the launch's policy retries: PENDING
 * (retrying), as from a poll. */
Test(loop_jobcomp, a_pushed_end_is_retried_by_its_policy)
{
    assign(0);
    submitted_on(0, "R1",
                 "{\"max_tries\": 2, \"on\": [\"failed\"], "
                 "\"backoff_s\": 0}",
                 201, 1);
    ended("R1", 201, "FAILED", "3:0");
    step();
    expect_states("R1", "ACCEPTED SUBMITTED PENDING");
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_POLLER),
                   "a retry is no end: no archive gate");
}
