/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_slow.c - SLOW (minutes, not seconds): what takes Slurm's own
 * clocks, against the real slurmrestd with API v0.0.43 only. The three
 * jobs are separate tests so that `--jobs=2` runs them side by side; the
 * binary takes about as long as the slowest one (timed_out, 60-100 s).
 *
 *   timed_out  time_limit_minutes 1 and `sleep 600` → RUNNING → TIMED_OUT
 *              (slurmctld checks limits every ~30 s: 60-100 s)
 *   requeue    a RUNNING job requeued with `scontrol requeue` (in the
 *              stack's chroot, as root) → PENDING → RUNNING again, restart
 *              count 1. Slurm holds a requeued job 2 minutes (reason
 *              BeginTime, EligibleTime = requeue + 120 s, seen); the test
 *              moves its start time to now once it is PENDING (`scontrol
 *              update jobid=N starttime=now`) instead of waiting
 *   aged_out   a finished job leaves slurmctld (MinJobAge=30 plus the purge
 *              interval: 30-60 s): job/{id} then says NOT_FOUND and
 *              jobs/state leaves it out - nothing reports it finished from
 *              its absence; accounting (the stack's slurmdbd) still has
 *              its true end (a stack without it: NOT_FOUND there too)
 *
 * The unserved-version check (v0.0.41 on 26.05) is quick and lives in
 * test_slurm_lifecycle.c (`version`).
 */
#include "support_slurm.h"

#include "slurm/verdict.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLOW_VERSION FORGE_API_V0_0_43

TestSuite(slurm_slow, .init = sl_setup, .fini = sl_teardown, .timeout = 360);

/* v0.0.43, or skip when FORGE_TEST_API_VERSIONS leaves it out (another
 * cluster, e.g. trixie, which does not serve it). */
static forge_slurm_client_t *slow_client(void)
{
    if (!sl_version_selected(SLOW_VERSION))
        cr_skip_test("%s is not among FORGE_TEST_API_VERSIONS",
                     forge_api_version_name(SLOW_VERSION));
    return sl_client(SLOW_VERSION);
}

static json_t *pool(const char *series)
{
    return json_pack("[{s:s, s:s, s:i, s:i}]", "name", "main", "series", series,
                     "nodes", 1, "gpus_per_node", 0);
}

static void submit_ok(forge_slurm_client_t *c, sl_trace_t *t, json_t *req)
{
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st = sl_submit(c, t, req, &res);

    cr_assert_eq(st, FORGE_SLURM_OK, "%s: submit: %s (HTTP %ld): %s", t->label,
                 forge_slurm_status_name(st), res.http_status, res.message);
}

/* The value of KEY= in `scontrol show job` output ("" if absent). */
static void show_field(const char *show, const char *key, char *out, size_t cap)
{
    char want[64];
    const char *p;

    snprintf(want, sizeof(want), " %s=", key);
    out[0] = '\0';
    if (!(p = strstr(show, want)))
        return;
    p += strlen(want);
    snprintf(out, cap, "%.*s", (int)strcspn(p, " \n"), p);
}

Test(slurm_slow, timed_out)
{
    forge_slurm_client_t *c = slow_client();
    sl_trace_t t;
    forge_state_t end;
    char note[128];
    double running_at;

    sl_trace_init(&t, SLOW_VERSION, "timed_out");
    submit_ok(c, &t,
              sl_request(&t, json_pack("[s,s]", "sleep", "600"), pool("h200"),
                         json_pack("{s:i}", "time_limit_minutes", 1)));
    end = sl_follow(c, &t, FORGE_STATE_RUNNING, 0, 120);
    cr_assert_eq(end, FORGE_STATE_RUNNING);
    running_at = t.steps[t.n - 1].at;
    end = sl_follow(c, &t, FORGE_STATE_NONE, 0, 240);
    snprintf(note, sizeof(note), "TIMED_OUT %.0fs after RUNNING",
             t.steps[t.n - 1].at - running_at);
    sl_trace_print(&t, note);
    cr_assert_eq(end, FORGE_STATE_TIMED_OUT, "%s: ended %s", t.label,
                 forge_state_name(end));
    cr_assert_str_eq(sl_reason(&t), "timeout");
    cr_assert_eq(t.polled_state, FORGE_STATE_TIMED_OUT);
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}

Test(slurm_slow, requeue)
{
    forge_slurm_client_t *c = slow_client();
    forge_slurm_result_t res = {0};
    sl_trace_t t;
    forge_state_t end;
    char out[8192], note[512], reason[64], eligible[64], now_s[64];
    size_t pending_step;
    int rc;

    sl_trace_init(&t, SLOW_VERSION, "requeue");
    submit_ok(
        c, &t,
        sl_request(&t, json_pack("[s,s]", "sleep", "300"), pool("a100"), NULL));
    end = sl_follow(c, &t, FORGE_STATE_RUNNING, 0, 120);
    cr_assert_eq(end, FORGE_STATE_RUNNING);

    rc = sl_scontrol(out, sizeof(out), "requeue %u", t.job_id);
    cr_assert_eq(rc, 0, "scontrol requeue %u: %s", t.job_id, out);
    end = sl_follow(c, &t, FORGE_STATE_PENDING, 0, 60);
    cr_assert_eq(end, FORGE_STATE_PENDING, "%s: %s after the requeue", t.label,
                 forge_state_name(end));
    pending_step = t.n - 1;
    cr_assert_eq(t.steps[pending_step - 1].state, FORGE_STATE_RUNNING);
    /* 26.05 shows no REQUEUED flag on the pending job (seen: RUNNING,
     * PENDING+COMPLETING, PENDING with reason BeginTime): the requeue
     * shows in restart_cnt only. */
    cr_assert_eq(t.last.jobs[0].restart_count, 1,
                 "%s: pending again with restart count %d", t.label,
                 t.last.jobs[0].restart_count);

    /* What keeps it pending, and until when. */
    sleep(1);
    rc = sl_scontrol(out, sizeof(out), "show job %u", t.job_id);
    cr_assert_eq(rc, 0, "scontrol show job: %s", out);
    show_field(out, "Reason", reason, sizeof(reason));
    show_field(out, "EligibleTime", eligible, sizeof(eligible));
    {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(now_s, sizeof(now_s), "%Y-%m-%dT%H:%M:%S", &tm);
    }
    rc = sl_scontrol(out, sizeof(out), "update jobid=%u starttime=now",
                     t.job_id);
    cr_assert_eq(rc, 0, "scontrol update starttime=now: %s", out);

    end = sl_follow(c, &t, FORGE_STATE_RUNNING, 0, 120);
    cr_assert_eq(end, FORGE_STATE_RUNNING, "%s: %s after starttime=now",
                 t.label, forge_state_name(end));
    cr_assert_eq(t.last.count, 1);
    cr_assert_eq(t.last.jobs[0].restart_count, 1, "%s: restart count %d",
                 t.label, t.last.jobs[0].restart_count);
    snprintf(note, sizeof(note),
             "PENDING reason \"%s\"; scontrol: Reason=%s EligibleTime=%s "
             "(now %s), then starttime=now; restart_count %d",
             t.steps[pending_step].reason, reason, eligible, now_s,
             t.last.jobs[0].restart_count);

    cr_assert_eq(forge_slurm_cancel(c, t.job_id, NULL, &res), FORGE_SLURM_OK,
                 "%s: cancel: %s", t.label, res.message);
    end = sl_follow(c, &t, FORGE_STATE_NONE, 1, 120);
    sl_trace_print(&t, note);
    cr_assert_eq(end, FORGE_STATE_CANCELLED);
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}

Test(slurm_slow, aged_out)
{
    forge_slurm_client_t *c = slow_client();
    forge_slurm_job_list_t l = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st = FORGE_SLURM_OK;
    sl_trace_t t;
    forge_state_t end;
    double done, gone = 0;
    char note[600];
    int ec;

    sl_trace_init(&t, SLOW_VERSION, "aged_out");
    submit_ok(c, &t,
              sl_request(&t, json_pack("[s]", "true"), pool("h200"), NULL));
    end = sl_follow(c, &t, FORGE_STATE_NONE, 0, 120);
    cr_assert_eq(end, FORGE_STATE_SUCCEEDED);
    done = sl_now();

    /* Until slurmctld forgets it: job/{id} OK ... then NOT_FOUND. */
    while (sl_now() - done < 240) {
        st = forge_slurm_job_details(c, t.job_id, &l, &res);
        forge_slurm_job_list_clear(&l);
        if (st == FORGE_SLURM_NOT_FOUND) {
            gone = sl_now();
            break;
        }
        cr_assert_eq(st, FORGE_SLURM_OK, "%s: job/%u: %s: %s", t.label,
                     t.job_id, forge_slurm_status_name(st), res.message);
        sleep(2);
    }
    cr_assert_gt(gone, 0, "%s: job %u still known 240 s after it ended",
                 t.label, t.job_id);
    cr_assert_eq(res.http_status, 404);
    cr_assert_eq(res.slurm_error, 2017, "%s: %s", t.label, res.message);
    snprintf(note, sizeof(note),
             "job/{id} NOT_FOUND %.0fs after SUCCEEDED (HTTP %ld, %s)",
             gone - done, res.http_status, res.message);

    /* Accounting still knows it (the stack's slurmdbd): its true end,
     * what it used; a stack without accounting: nothing either. */
    st = forge_slurm_job_accounting(c, t.job_id, &l, &res);
    if (sl_has_accounting()) {
        cr_assert_eq(st, FORGE_SLURM_OK, "%s: accounting: %s: %s", t.label,
                     forge_slurm_status_name(st), res.message);
        cr_assert_eq(l.count, 1);
        cr_assert_eq(forge_slurm_verdict(&l, 0, &ec).state,
                     FORGE_STATE_SUCCEEDED);
        cr_assert_not_null(l.jobs[0].use, "%s: accounting's use", t.label);
        snprintf(note + strlen(note), sizeof(note) - strlen(note),
                 "; accounting: COMPLETED, exit %d", ec);
    } else {
        cr_assert_eq(st, FORGE_SLURM_NOT_FOUND, "%s: accounting: %s: %s",
                     t.label, forge_slurm_status_name(st), res.message);
        cr_assert_eq(l.count, 0);
        snprintf(note + strlen(note), sizeof(note) - strlen(note),
                 "; accounting NOT_FOUND (HTTP %ld)", res.http_status);
    }
    forge_slurm_job_list_clear(&l);

    /* The batched poll leaves it out; an empty answer is no verdict. */
    st = forge_slurm_job_states(c, &t.job_id, 1, &l, &res);
    cr_assert_eq(st, FORGE_SLURM_OK, "%s: jobs/state: %s", t.label,
                 res.message);
    cr_assert_eq(l.count, 0, "%s: jobs/state still lists it", t.label);
    cr_assert_eq(forge_slurm_verdict(&l, 0, &ec).state, FORGE_STATE_NONE);
    forge_slurm_job_list_clear(&l);
    strncat(note, "; jobs/state: absent, no verdict",
            sizeof(note) - strlen(note) - 1);
    sl_trace_print(&t, note);
    sl_trace_free(&t);
    forge_slurm_client_destroy(c);
}
