/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jobcomp.c - jobcomp/kafka records (slurm/jobcomp.h) read, and what
 * each means for a launch: duplicated, reordered, foreign (untagged,
 * another deployment, launch, attempt, try or job), a start after its end,
 * a requeued job's runs, het components in every order. The records are
 * written as Slurm 26.05's jobcomp_common_job_record_to_data writes them
 * (jobcomp_common.c): every field of an end record, a start record's
 * state null and no @end / elapsed / exit codes, times "%FT%T" in UTC,
 * exit codes "code:signal", het_job_id / het_job_offset (and the old
 * pack_job_* beside them on an end) only for a het job, comment only with
 * send_comment.
 */
#include "base/buf.h"
#include "slurm/jobcomp.h"
#include "slurm/usage.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define STAGING "/srv/forge/staging"
#define WD      STAGING "/l-1/1"

/* ---- records as the plugin writes them ---------------------------------- */

typedef struct rec {
    unsigned job_id;
    int het_offset;    /* -1: not het */
    unsigned leader;   /* het_job_id */
    const char *state; /* NULL: a start record */
    const char *exit;  /* "0:0" */
    const char *start; /* "2026-12-06T10:00:00", NULL: left out */
    const char *end;
    const char *comment; /* NULL: left out */
    const char *work_dir;
} rec_t;

static char *text(const rec_t *r)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_printf(&b,
                     "{\"jobid\":%u,\"sluid\":\"s0AB12CD34EF56G\","
                     "\"container\":null,\"username\":\"forge\","
                     "\"user_id\":1000,\"groupname\":\"forge\","
                     "\"group_id\":1000",
                     r->job_id);
    if (r->start)
        forge_buf_printf(&b, ",\"@start\":\"%s\"", r->start);
    if (r->state && r->end)
        forge_buf_printf(&b, ",\"@end\":\"%s\"", r->end);
    if (r->state)
        forge_buf_printf(&b, ",\"elapsed\":3600");
    forge_buf_printf(&b, ",\"partition\":\"gpu\",\"alloc_node\":\"login1\","
                         "\"nodes\":\"h200-1\",\"total_cpus\":16,"
                         "\"total_nodes\":1");
    if (r->state)
        forge_buf_printf(&b,
                         ",\"derived_ec\":\"%s\",\"exit_code\":\"%s\","
                         "\"state\":\"%s\",\"failed_node\":null,"
                         "\"cpu_hours\":16.0",
                         r->exit ? r->exit : "0:0", r->exit ? r->exit : "0:0",
                         r->state);
    else
        forge_buf_printf(&b, ",\"state\":null");
    if (r->het_offset >= 0) {
        if (r->state)
            forge_buf_printf(&b, ",\"pack_job_id\":%u,\"pack_job_offset\":%d",
                             r->leader, r->het_offset);
        forge_buf_printf(&b, ",\"het_job_id\":%u,\"het_job_offset\":%d",
                         r->leader, r->het_offset);
    }
    forge_buf_printf(
        &b,
        ",\"priority\":1,\"@submit\":\"2026-12-06T09:59:58\","
        "\"@eligible\":\"2026-12-06T09:59:58\",\"@queue_wait\":2,"
        "\"work_dir\":\"%s\",\"std_err\":\"%s/main.err\","
        "\"std_out\":\"%s/main.out\",\"cluster\":\"forge\","
        "\"qos\":\"normal\",\"ntasks\":1,\"cpus_per_task\":16,"
        "\"features\":\"h200\",\"time_limit\":7200,\"job_name\":\"train\","
        "\"wc_key\":\"proj-a\",\"tres_req_raw\":\"1=16,2=65536,4=1,1001=4\","
        "\"tres_req\":\"cpu=16,mem=64G,node=1,gres/gpu=4\","
        "\"tres_alloc_raw\":\"1=16,2=65536,4=1,5=16,1001=4\","
        "\"tres_alloc\":\"cpu=16,mem=64G,node=1,billing=16,gres/gpu=4\","
        "\"account\":\"forge\"",
        r->work_dir ? r->work_dir : WD, r->work_dir ? r->work_dir : WD,
        r->work_dir ? r->work_dir : WD);
    if (r->comment)
        forge_buf_printf(&b, ",\"comment\":\"%s\"", r->comment);
    forge_buf_printf(&b, ",\"parent_accounts\":\"/root/forge\"}");
    return forge_buf_take(&b);
}

static forge_jobcomp_record_t parse(const rec_t *r)
{
    char *t = text(r);
    forge_jobcomp_record_t out;
    forge_error_t err = {0};

    cr_assert_eq(forge_jobcomp_parse(t, strlen(t), &out, &err), FORGE_OK,
                 "%s: %s", err.field, err.message);
    free(t);
    return out;
}

/* ---- reading ------------------------------------------------------------ */

Test(jobcomp, end_record_read)
{
    rec_t r = {5800,
               1,
               5799,
               "COMPLETED",
               "3:0",
               "2026-12-06T10:00:00",
               "2026-12-06T11:00:00",
               "forge:l-1:2:3",
               NULL};
    forge_jobcomp_record_t c = parse(&r);
    forge_slurm_usage_part_t u;
    forge_error_t err = {0};

    cr_assert_eq(c.kind, FORGE_JOBCOMP_END);
    cr_assert_eq(c.job_id, 5800);
    cr_assert_eq(c.het_job_id, 5799);
    cr_assert_eq(c.het_offset, 1);
    cr_assert_str_eq(c.state, "COMPLETED");
    cr_assert_eq(c.set.base, FORGE_SLURM_COMPLETED);
    cr_assert_eq(c.exit_code, 3);
    cr_assert_eq(c.signal, 0);
    cr_assert_eq(c.derived_exit_code, 3);
    cr_assert_eq(c.start_s, 1796551200); /* 2026-12-06T10:00:00Z */
    cr_assert_eq(c.end_s, 1796554800);
    cr_assert_eq(c.elapsed_s, 3600);
    cr_assert_eq(c.total_cpus, 16);
    cr_assert_str_eq(c.job_name, "train");
    cr_assert_str_eq(c.wc_key, "proj-a");
    cr_assert_str_eq(c.nodes, "h200-1");
    cr_assert_str_eq(c.work_dir, WD);
    cr_assert(c.tagged);
    cr_assert_str_eq(c.launch_id, "l-1");
    cr_assert_eq(c.attempt, 2);
    cr_assert_eq(c.try_num, 3);
    cr_assert_eq(forge_jobcomp_usage_part(&c, &u, &err), FORGE_OK);
    /* tres_alloc "cpu=16,mem=64G,node=1,billing=16,gres/gpu=4", 3600 s */
    cr_assert_eq(u.gpus, 4);
    cr_assert_eq(u.mem_mb, 65536);
    cr_assert(u.gpu_hours > 3.999999 && u.gpu_hours < 4.000001);
    cr_assert(u.cpu_hours > 15.999999 && u.cpu_hours < 16.000001);
    cr_assert_eq(u.max_rss_bytes, -1);
    forge_jobcomp_record_clear(&c);
}

Test(jobcomp, start_record_read)
{
    rec_t r = {5801,          -1,  0, NULL, NULL, "2026-12-06T10:00:00", NULL,
               "forge:l-1:1", NULL};
    forge_jobcomp_record_t c = parse(&r);

    cr_assert_eq(c.kind, FORGE_JOBCOMP_START);
    cr_assert_null(c.state);
    cr_assert_eq(c.het_job_id, 0);
    cr_assert_eq(c.end_s, -1);
    cr_assert_eq(c.exit_code, -1);
    cr_assert_eq(c.try_num, 1);
    forge_jobcomp_record_clear(&c);
}

Test(jobcomp, untagged_and_foreign_comments)
{
    static const char *const comments[] = {NULL,          "nightly build",
                                           "forge:",      "forge:l-1",
                                           "forge:l-1:0", "forge:l-1:1:1"};

    for (size_t i = 0; i < sizeof(comments) / sizeof(comments[0]); i++) {
        rec_t r = {5802,
                   -1,
                   0,
                   "COMPLETED",
                   "0:0",
                   "2026-12-06T10:00:00",
                   "2026-12-06T10:00:09",
                   comments[i],
                   NULL};
        forge_jobcomp_record_t c = parse(&r);
        cr_assert_not(c.tagged, "%s", comments[i] ? comments[i] : "(none)");
        cr_assert_null(c.launch_id);
        forge_jobcomp_record_clear(&c);
    }
}

Test(jobcomp, refused_records)
{
    static const struct {
        const char *text;
        const char *field;
    } rows[] = {
        {"", NULL},
        {"[1]", NULL},
        {"{\"jobid\":1,\"jobid\":2}", NULL},
        {"{\"state\":\"COMPLETED\"}", "jobid"},
        {"{\"jobid\":\"12\"}", "jobid"},
        {"{\"jobid\":0}", "jobid"},
        {"{\"jobid\":12,\"@start\":\"2026-12-06 10:00:00\"}", "@start"},
        {"{\"jobid\":12,\"@end\":\"2026-13-06T10:00:00\"}", "@end"},
        {"{\"jobid\":12,\"@end\":\"2026-12-06T10:00:00Z\"}", "@end"},
        {"{\"jobid\":12,\"exit_code\":\"1\"}", "exit_code"},
        {"{\"jobid\":12,\"derived_ec\":\"-1:0\"}", "derived_ec"},
        {"{\"jobid\":12,\"elapsed\":\"60\"}", "elapsed"},
        {"{\"jobid\":12,\"state\":7}", "state"},
        {"{\"jobid\":12,\"het_job_id\":12}", "het_job_id"},
        {"{\"jobid\":12,\"het_job_id\":12,\"het_job_offset\":99}",
         "het_job_id"},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        forge_jobcomp_record_t c;
        forge_error_t err = {0};

        cr_assert_eq(
            forge_jobcomp_parse(rows[i].text, strlen(rows[i].text), &c, &err),
            FORGE_EINVALID_JSON, "%s", rows[i].text);
        if (rows[i].field)
            cr_assert_str_eq(err.field, rows[i].field, "%s", rows[i].text);
        cr_assert_null(c.state);
        cr_assert_eq(c.job_id, 0);
    }
}

/* ---- deciding ----------------------------------------------------------- */

static forge_jobcomp_launch_t launch(forge_state_t state, uint32_t job_id,
                                     size_t components)
{
    forge_jobcomp_launch_t l = {"l-1", 1, 1,       state, job_id, components,
                                0,     0, STAGING, false, 0};

    return l;
}

/* What the loop would do with a decision: the record moves. */
static forge_jobcomp_decision_t feed(forge_jobcomp_launch_t *l,
                                     forge_jobcomp_seen_t *seen, const rec_t *r)
{
    forge_jobcomp_record_t c = parse(r);
    forge_jobcomp_decision_t d = forge_jobcomp_decide(l, seen, &c);

    if (d.action == FORGE_JOBCOMP_RUNNING || d.action == FORGE_JOBCOMP_TERMINAL)
        l->state = d.state;
    forge_jobcomp_record_clear(&c);
    return d;
}

#define T0 "2026-12-06T10:00:00"
#define T1 "2026-12-06T11:00:00"
#define T2 "2026-12-06T11:05:00"
#define T3 "2026-12-06T12:05:00"

static rec_t start_of(unsigned id, const char *at)
{
    rec_t r = {id, -1, 0, NULL, NULL, at, NULL, "forge:l-1:1", NULL};

    return r;
}

static rec_t end_of(unsigned id, const char *state, const char *exit,
                    const char *from, const char *to)
{
    rec_t r = {id, -1, 0, state, exit, from, to, "forge:l-1:1", NULL};

    return r;
}

static void assert_ignored(forge_jobcomp_decision_t d, const char *why)
{
    cr_assert_eq(d.action, FORGE_JOBCOMP_IGNORE, "%s: got action %d (%s)", why,
                 d.action, d.why);
    cr_assert_str_eq(d.why, why);
}

Test(jobcomp_decide, start_then_end_then_duplicates)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_SUBMITTED, 6000, 1);
    forge_jobcomp_seen_t seen = {0};
    rec_t s = start_of(6000, T0), e = end_of(6000, "COMPLETED", "0:0", T0, T1);
    forge_jobcomp_decision_t d;

    d = feed(&l, &seen, &s);
    cr_assert_eq(d.action, FORGE_JOBCOMP_RUNNING);
    cr_assert_eq(l.state, FORGE_STATE_RUNNING);
    assert_ignored(feed(&l, &seen, &s), "running_already");
    d = feed(&l, &seen, &e);
    cr_assert_eq(d.action, FORGE_JOBCOMP_TERMINAL);
    cr_assert_eq(d.state, FORGE_STATE_SUCCEEDED);
    cr_assert_null(d.reason);
    cr_assert_eq(d.exit_code, 0);
    assert_ignored(feed(&l, &seen, &e), "settled");
    assert_ignored(feed(&l, &seen, &s), "settled");
}

Test(jobcomp_decide, duplicate_end_before_the_record_moved)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_RUNNING, 6000, 1);
    forge_jobcomp_seen_t seen = {0};
    rec_t e = end_of(6000, "FAILED", "2:0", T0, T1);
    forge_jobcomp_record_t c = parse(&e);

    /* the transaction carrying the first has not committed yet */
    cr_assert_eq(forge_jobcomp_decide(&l, &seen, &c).action,
                 FORGE_JOBCOMP_TERMINAL);
    assert_ignored(forge_jobcomp_decide(&l, &seen, &c), "duplicate");
    forge_jobcomp_record_clear(&c);
}

Test(jobcomp_decide, end_before_start)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_PENDING, 6000, 1);
    forge_jobcomp_seen_t seen = {0};
    rec_t s = start_of(6000, T0), e = end_of(6000, "TIMEOUT", "0:15", T0, T1);
    forge_jobcomp_record_t c = parse(&s);
    forge_jobcomp_decision_t d = feed(&l, &seen, &e);

    cr_assert_eq(d.action, FORGE_JOBCOMP_TERMINAL);
    cr_assert_eq(d.state, FORGE_STATE_TIMED_OUT);
    cr_assert_str_eq(d.reason, "timeout");
    cr_assert_eq(d.signal, 15);
    /* the start arrives while the terminal event is still in flight */
    l.state = FORGE_STATE_PENDING;
    assert_ignored(forge_jobcomp_decide(&l, &seen, &c), "start_after_end");
    /* and once it committed */
    l.state = FORGE_STATE_TIMED_OUT;
    assert_ignored(forge_jobcomp_decide(&l, &seen, &c), "settled");
    forge_jobcomp_record_clear(&c);
}

/* The poll's table (job_state.c) decides the end, exit codes included. */
Test(jobcomp_decide, end_states_as_the_poll_maps_them)
{
    static const struct {
        const char *state;
        const char *exit;
        int cancel_requested;
        forge_jobcomp_action_t action;
        forge_state_t to;
        const char *reason;
    } rows[] = {
        {"COMPLETED", "0:0", 0, FORGE_JOBCOMP_TERMINAL, FORGE_STATE_SUCCEEDED,
         NULL},
        {"COMPLETED", "3:0", 0, FORGE_JOBCOMP_TERMINAL, FORGE_STATE_FAILED,
         "failed"},
        {"FAILED", "1:0", 0, FORGE_JOBCOMP_TERMINAL, FORGE_STATE_FAILED,
         "failed"},
        {"OUT_OF_MEMORY", "0:9", 0, FORGE_JOBCOMP_TERMINAL, FORGE_STATE_FAILED,
         "out_of_memory"},
        {"DEADLINE", "0:0", 0, FORGE_JOBCOMP_TERMINAL, FORGE_STATE_FAILED,
         "deadline"},
        {"TIMEOUT", "0:15", 0, FORGE_JOBCOMP_TERMINAL, FORGE_STATE_TIMED_OUT,
         "timeout"},
        {"CANCELLED", "0:9", 0, FORGE_JOBCOMP_TERMINAL, FORGE_STATE_CANCELLED,
         "by_scheduler"},
        {"CANCELLED", "0:9", 1, FORGE_JOBCOMP_TERMINAL, FORGE_STATE_CANCELLED,
         "requested"},
        /* a requeue may follow: slurmctld decides */
        {"NODE_FAIL", "1:0", 0, FORGE_JOBCOMP_CONFIRM, FORGE_STATE_NONE, NULL},
        {"PREEMPTED", "0:15", 0, FORGE_JOBCOMP_CONFIRM, FORGE_STATE_NONE, NULL},
        {"BOOT_FAIL", "0:0", 0, FORGE_JOBCOMP_CONFIRM, FORGE_STATE_NONE, NULL},
        {"PENDING", "0:0", 0, FORGE_JOBCOMP_CONFIRM, FORGE_STATE_NONE, NULL},
        {"RESIZING", "0:0", 0, FORGE_JOBCOMP_CONFIRM, FORGE_STATE_NONE, NULL},
        {"WHATEVER", "0:0", 0, FORGE_JOBCOMP_CONFIRM, FORGE_STATE_NONE, NULL},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        forge_jobcomp_launch_t l = launch(FORGE_STATE_RUNNING, 6000, 1);
        forge_jobcomp_seen_t seen = {0};
        rec_t e = end_of(6000, rows[i].state, rows[i].exit, T0, T1);
        forge_jobcomp_decision_t d;

        l.cancel_requested = rows[i].cancel_requested;
        d = feed(&l, &seen, &e);
        cr_assert_eq(d.action, rows[i].action, "%s %s: %s", rows[i].state,
                     rows[i].exit, d.why);
        cr_assert_eq(d.state, rows[i].to, "%s", rows[i].state);
        if (rows[i].reason)
            cr_assert_str_eq(d.reason, rows[i].reason, "%s", rows[i].state);
        else
            cr_assert_null(d.reason, "%s", rows[i].state);
    }
}

Test(jobcomp_decide, requeue_exit_makes_a_failure_confirm)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_RUNNING, 6000, 1);
    forge_jobcomp_seen_t seen = {0};
    rec_t e = end_of(6000, "FAILED", "3:0", T0, T1);
    rec_t ok = end_of(6000, "COMPLETED", "0:0", T2, T3);

    l.exit_may_requeue = true;
    cr_assert_eq(feed(&l, &seen, &e).action, FORGE_JOBCOMP_CONFIRM);
    cr_assert_eq(feed(&l, &seen, &ok).action, FORGE_JOBCOMP_TERMINAL);
}

/* A SIGKILL end of a requeued job may be the orphan race's (CONTRACT §3):
 * slurmctld is asked (its details tell the run's start); the same end of
 * a job never requeued, or another signal, ends the launch at once. */
Test(jobcomp_decide, a_kill_after_a_requeue_confirms)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_RUNNING, 6000, 1);
    forge_jobcomp_seen_t seen = {0};
    rec_t killed = end_of(6000, "FAILED", "0:9", T0, T1);
    forge_jobcomp_decision_t d;

    l.restarts = 1;
    d = feed(&l, &seen, &killed);
    cr_assert_eq(d.action, FORGE_JOBCOMP_CONFIRM);
    cr_assert_str_eq(d.why, "killed_after_requeue");
    memset(&seen, 0, sizeof(seen));
    l.restarts = 0;
    cr_assert_eq(feed(&l, &seen, &killed).action, FORGE_JOBCOMP_TERMINAL);
}

Test(jobcomp_decide, foreign_records)
{
    static const struct {
        const char *comment;
        const char *work_dir;
        unsigned job_id;
        const char *why;
    } rows[] = {
        {NULL, WD, 6000, "untagged"},
        {"someone's note", WD, 6000, "untagged"},
        {"forge:l-1:1", "/srv/forge-staging/staging/l-1/1", 6000,
         "other_deployment"},
        {"forge:l-1:1", "/srv/forge/staging2/l-1/1", 6000, "other_deployment"},
        {"forge:l-1:1", "/home/u", 6000, "other_deployment"},
        {"forge:l-2:1", WD, 6000, "other_launch"},
        {"forge:l-11:1", WD, 6000, "other_launch"},
        {"forge:l-1:2", WD, 6000, "other_attempt"},
        {"forge:l-1:1:2", WD, 6000, "other_try"},
        /* the same tag on a job the adoption of an interrupted submit
         * cancelled */
        {"forge:l-1:1", WD, 6001, "other_job"},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        forge_jobcomp_launch_t l = launch(FORGE_STATE_RUNNING, 6000, 1);
        forge_jobcomp_seen_t seen = {0};
        rec_t e = {rows[i].job_id,  -1, 0,  "CANCELLED",
                   "0:9",           T0, T1, rows[i].comment,
                   rows[i].work_dir};

        assert_ignored(feed(&l, &seen, &e), rows[i].why);
        cr_assert_eq(seen.ended, 0);
    }
}

Test(jobcomp_decide, not_owned_no_job_other_try)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_ACCEPTED, 0, 1);
    forge_jobcomp_seen_t seen = {0};
    rec_t e = end_of(6000, "COMPLETED", "0:0", T0, T1);
    forge_jobcomp_record_t c = parse(&e);

    assert_ignored(forge_jobcomp_decide(NULL, &seen, &c), "not_owned");
    assert_ignored(forge_jobcomp_decide(&l, &seen, &c), "no_job");
    /* the launch moved on to its second try: try 1's late end */
    l = launch(FORGE_STATE_SUBMITTED, 6100, 1);
    l.try_num = 2;
    assert_ignored(forge_jobcomp_decide(&l, &seen, &c), "other_try");
    /* no staging root to check against: the tag and the job decide */
    l = launch(FORGE_STATE_RUNNING, 6000, 1);
    l.staging = NULL;
    cr_assert_eq(forge_jobcomp_decide(&l, &seen, &c).action,
                 FORGE_JOBCOMP_TERMINAL);
    forge_jobcomp_record_clear(&c);
}

/* A job Slurm requeued (node failure): run 1's end is not the launch's;
 * its late copies are older than run 2 and change nothing. */
Test(jobcomp_decide, requeued_job_runs)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_SUBMITTED, 6000, 1);
    forge_jobcomp_seen_t seen = {0};
    rec_t s1 = start_of(6000, T0),
          e1 = end_of(6000, "NODE_FAIL", "1:0", T0, "2026-12-06T10:20:00");
    rec_t s2 = start_of(6000, T2),
          e2 = end_of(6000, "COMPLETED", "0:0", T2, T3);

    cr_assert_eq(feed(&l, &seen, &s1).action, FORGE_JOBCOMP_RUNNING);
    cr_assert_eq(feed(&l, &seen, &e1).action, FORGE_JOBCOMP_CONFIRM);
    assert_ignored(feed(&l, &seen, &e1), "duplicate"); /* before the poll */
    /* the confirming details say PENDING requeued, published at 10:20:03 */
    l.state = FORGE_STATE_PENDING;
    l.requeued_at_ms = 1796552403000LL;
    assert_ignored(feed(&l, &seen, &e1), "before_requeue");
    {
        forge_jobcomp_seen_t fresh = {0}; /* a worker restarted since */
        assert_ignored(feed(&l, &fresh, &s1), "before_requeue");
        assert_ignored(feed(&l, &fresh, &e1), "before_requeue");
    }
    cr_assert_eq(feed(&l, &seen, &s2).action, FORGE_JOBCOMP_RUNNING);
    assert_ignored(feed(&l, &seen, &e1), "older_run");
    assert_ignored(feed(&l, &seen, &s1), "older_run");
    cr_assert_eq(feed(&l, &seen, &e2).state, FORGE_STATE_SUCCEEDED);
}

/* Run 2's records before run 1's end: run 1's end is older. */
Test(jobcomp_decide, requeued_job_runs_reordered)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_RUNNING, 6000, 1);
    forge_jobcomp_seen_t seen = {0};
    rec_t e1 = end_of(6000, "PREEMPTED", "0:15", T0, "2026-12-06T10:20:00");
    rec_t s2 = start_of(6000, T2), e2 = end_of(6000, "FAILED", "7:0", T2, T3);

    cr_assert_eq(feed(&l, &seen, &s2).action, FORGE_JOBCOMP_IGNORE);
    assert_ignored(feed(&l, &seen, &e1), "older_run");
    cr_assert_eq(feed(&l, &seen, &e2).state, FORGE_STATE_FAILED);
}

/* ---- het jobs ----------------------------------------------------------- */

static rec_t het_end(int offset, const char *state, const char *exit)
{
    rec_t r = {7000 + (unsigned)offset, offset, 7000, state, exit, T0, T1,
               "forge:l-1:1",           NULL};

    return r;
}

static rec_t het_start(int offset)
{
    rec_t r = {7000 + (unsigned)offset, offset, 7000, NULL, NULL, T0, NULL,
               "forge:l-1:1",           NULL};

    return r;
}

/* Every order of three components' ends, each delivered twice: only the
 * last distinct one decides, with the aggregate. */
Test(jobcomp_decide, het_ends_in_every_order)
{
    static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    static const struct {
        const char *states[3];
        const char *exits[3];
        forge_state_t to;
        const char *reason;
    } cases[] = {
        {{"COMPLETED", "COMPLETED", "COMPLETED"},
         {"0:0", "0:0", "0:0"},
         FORGE_STATE_SUCCEEDED,
         NULL},
        {{"COMPLETED", "FAILED", "COMPLETED"},
         {"0:0", "1:0", "0:0"},
         FORGE_STATE_FAILED,
         "failed"},
        {{"TIMEOUT", "COMPLETED", "CANCELLED"},
         {"0:15", "0:0", "0:9"},
         FORGE_STATE_TIMED_OUT,
         "timeout"},
        {{"CANCELLED", "CANCELLED", "COMPLETED"},
         {"0:9", "0:9", "0:0"},
         FORGE_STATE_CANCELLED,
         "by_scheduler"},
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        for (size_t o = 0; o < 6; o++) {
            forge_jobcomp_launch_t l = launch(FORGE_STATE_RUNNING, 7000, 3);
            forge_jobcomp_seen_t seen = {0};

            for (int step = 0; step < 3; step++) {
                int c = orders[o][step];
                rec_t e = het_end(c, cases[k].states[c], cases[k].exits[c]);
                forge_jobcomp_decision_t d = feed(&l, &seen, &e);

                if (step < 2) {
                    assert_ignored(d, "components_left");
                    assert_ignored(feed(&l, &seen, &e), "duplicate");
                    continue;
                }
                cr_assert_eq(d.action, FORGE_JOBCOMP_TERMINAL,
                             "case %zu order %zu: %s", k, o, d.why);
                cr_assert_eq(d.state, cases[k].to, "case %zu order %zu", k, o);
                if (cases[k].reason)
                    cr_assert_str_eq(d.reason, cases[k].reason);
                assert_ignored(feed(&l, &seen, &e), "settled");
            }
        }
}

Test(jobcomp_decide, het_component_that_may_requeue_confirms)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_RUNNING, 7000, 2);
    forge_jobcomp_seen_t seen = {0};
    rec_t a = het_end(1, "NODE_FAIL", "1:0"),
          b = het_end(0, "COMPLETED", "0:0");

    assert_ignored(feed(&l, &seen, &a), "components_left");
    cr_assert_eq(feed(&l, &seen, &b).action, FORGE_JOBCOMP_CONFIRM);
}

Test(jobcomp_decide, het_starts_and_unknown_component)
{
    forge_jobcomp_launch_t l = launch(FORGE_STATE_PENDING, 7000, 2);
    forge_jobcomp_seen_t seen = {0};
    rec_t s1 = het_start(1), s0 = het_start(0), s2 = het_start(2);

    cr_assert_eq(feed(&l, &seen, &s1).action, FORGE_JOBCOMP_RUNNING);
    assert_ignored(feed(&l, &seen, &s0), "running_already");
    assert_ignored(feed(&l, &seen, &s2), "unknown_component");
}

Test(jobcomp, below)
{
    cr_assert(forge_jobcomp_below("/s/staging/l/1", "/s/staging"));
    cr_assert(forge_jobcomp_below("/s/staging/l/1", "/s/staging/"));
    cr_assert(forge_jobcomp_below("/s/staging", "/s/staging"));
    cr_assert_not(forge_jobcomp_below("/s/staging2/l/1", "/s/staging"));
    cr_assert_not(forge_jobcomp_below("/s/stag", "/s/staging"));
    cr_assert_not(forge_jobcomp_below(NULL, "/s/staging"));
}
