/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_submit.c - `forge-worker submit [--wait] FILE|-`: the operator's way
 * to try a request without Kafka. One launch request prepared as the
 * worker prepares it (prepare.h), staged, and made in Slurm through the
 * very path the worker's Slurm lanes take (slurm/submit_held.h: held
 * POST, every component released by its own id, a job left held
 * cancelled, Slurm's refusals mapped alike); each platform state as one
 * JSON line on stdout, {launch_id, attempt, state, previous_state,
 * reason, slurm}, `reason` ours (null or a short code/sentence, never
 * slurmrestd's warnings). With --wait, each state change until a
 * terminal state (exit 0 SUCCEEDED, 1 any other).
 *
 * SIGINT, SIGTERM or SIGHUP: a submit under way finishes first (never a
 * job left held behind); then the command stops waiting and leaves the
 * job running (an interrupted terminal is not a cancel: scancel is), prints
 * one last line saying so ("left_running": true, the job id) and exits
 * 128 + the signal (130 for SIGINT). Threads: one; the signal handler only
 * sets a flag and interrupts the client of the wait (an atomic store).
 */
#include "command.h"
#include "clock/clock.h"
#include "log/log.h"
#include "render/render.h"
#include "render/try.h"
#include "render/staging.h"
#include "slurm/submit_held.h"
#include "slurm/verdict.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SUBMIT_USAGE                                                           \
    "usage: forge-worker submit [--wait] FILE|-\n"                             \
    "  validates, renders, stages and submits one launch request as the\n"     \
    "  worker does (held, then released); prints each state as a JSON line.\n" \
    "  --wait: until a terminal state (exit 0 SUCCEEDED, 1 otherwise).\n"      \
    "  SIGINT/SIGTERM: stops waiting, leaves the job running, prints a last\n" \
    "  line (\"left_running\": true, the job id), exits 128+signal (130).\n"

static volatile sig_atomic_t stop_signal;
/* the client of the wait, interrupted by a signal (NULL: not waiting) */
static forge_slurm_client_t *volatile waiting_client;

static void on_signal(int sig)
{
    forge_slurm_client_t *c = waiting_client;

    stop_signal = sig;
    if (c)
        forge_slurm_client_interrupt(c); /* an atomic store */
}

/* One status line; slurm's reference taken. */
static void print_state(const forge_launch_t *l, forge_state_t st,
                        forge_state_t prev, const char *reason, json_t *slurm)
{
    command_print_json_line(json_pack(
        "{s:s, s:i, s:s, s:s?, s:s?, s:o?}", "launch_id", l->launch_id,
        "attempt", l->attempt, "state", forge_state_name(st), "previous_state",
        forge_state_name(prev), "reason", reason, "slurm", slurm));
}

/* The last line after a signal: the job left running. */
static int left_running(const forge_launch_t *l, forge_state_t st,
                        uint32_t job_id)
{
    int sig = stop_signal;
    char reason[96];

    snprintf(reason, sizeof(reason),
             "stopped waiting on %s; the job is left running",
             sig == SIGINT    ? "SIGINT"
             : sig == SIGTERM ? "SIGTERM"
                              : "SIGHUP");
    command_print_json_line(json_pack(
        "{s:s, s:i, s:s, s:s, s:b, s:{s:I}}", "launch_id", l->launch_id,
        "attempt", l->attempt, "state", forge_state_name(st), "reason", reason,
        "left_running", 1, "slurm", "job_id", (json_int_t)job_id));
    return 128 + sig;
}

/* One look at job_id: *state moved (and printed) when Slurm says so.
 * Missing from Slurm is never "finished": accounting, then
 * FORGE_LOST_GRACE_S, then LOST. */
static void look(forge_slurm_client_t *c, const forge_config_t *cfg,
                 const forge_launch_t *l, uint32_t job_id,
                 long long *missing_since, forge_state_t *state)
{
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st = forge_slurm_job_details(c, job_id, &jobs, &res);

    if (st == FORGE_SLURM_NOT_FOUND)
        st = forge_slurm_job_accounting(c, job_id, &jobs, &res);
    if (st == FORGE_SLURM_NOT_FOUND) {
        long long now = forge_clock_ms();
        *missing_since = *missing_since ? *missing_since : now;
        if (forge_slurm_lost(now - *missing_since, cfg->lost_grace_s)) {
            print_state(l, FORGE_STATE_LOST, *state, FORGE_SLURM_LOST_REASON,
                        NULL);
            *state = FORGE_STATE_LOST;
        }
    } else if (st == FORGE_SLURM_OK) {
        forge_slurm_move_t m = forge_slurm_move(&jobs, *state, 0);
        *missing_since = 0;
        if (m.moves) {
            print_state(l, m.to, *state, m.reason,
                        forge_slurm_verdict_json(&jobs));
            *state = m.to;
        }
    } else if (!stop_signal) {
        forge_log_warn("slurmrestd: %s (%s); trying again", res.message,
                       forge_slurm_status_name(st));
    }
    forge_slurm_job_list_clear(&jobs);
}

/* Follows job_id until a terminal state (exit 0 SUCCEEDED, 1 other) or a
 * signal (the job left running: 128 + the signal). */
static int follow(forge_slurm_client_t *c, const forge_config_t *cfg,
                  const forge_launch_t *l, uint32_t job_id)
{
    forge_state_t state = FORGE_STATE_SUBMITTED;
    long long missing_since = 0; /* monotonic ms (clock/clock.h) */
    struct timespec second = {1, 0};

    waiting_client = c;
    while (!stop_signal && !forge_state_is_terminal(state)) {
        look(c, cfg, l, job_id, &missing_since, &state);
        if (!stop_signal && !forge_state_is_terminal(state))
            nanosleep(&second, NULL); /* a signal ends it */
    }
    waiting_client = NULL;
    if (!forge_state_is_terminal(state))
        return left_running(l, state, job_id);
    return state == FORGE_STATE_SUCCEEDED ? 0 : 1;
}

/* The submit's failure: Slurm's refusal is the launch's REJECTED line
 * (its text in `error`, as the worker's event has it); anything else is
 * said on stderr (a held job made meanwhile was cancelled). Exit 1. */
static int submit_failed(const forge_launch_t *l, forge_slurm_status_t st,
                         const forge_slurm_result_t *res,
                         const forge_slurm_released_t *made)
{
    if (st == FORGE_SLURM_REJECTED) {
        command_print_json_line(json_pack(
            "{s:s, s:i, s:s, s:s, s:s, s:{s:s, s:s}}", "launch_id",
            l->launch_id, "attempt", l->attempt, "state",
            forge_state_name(FORGE_STATE_REJECTED), "previous_state",
            forge_state_name(FORGE_STATE_ACCEPTED), "reason", "slurm_refused",
            "error", "code", "slurm_refused", "message", res->message));
        return 1;
    }
    if (made->cancelled_job_id)
        fprintf(stderr,
                "forge-worker: submit failed (%s): %s; job %u was left held "
                "and is cancelled\n",
                forge_slurm_status_name(st), res->message,
                made->cancelled_job_id);
    else
        fprintf(stderr, "forge-worker: submit failed (%s): %s\n",
                forge_slurm_status_name(st), res->message);
    return 1;
}

/* Staged, then made in Slurm (submit_held.h); with wait, followed. */
static int submit_prepared(forge_slurm_client_t *c, const forge_config_t *cfg,
                           const forge_prepared_t *p,
                           const forge_tenant_t *tenant, int wait)
{
    const forge_launch_t *l = &p->request->launch;
    char *comment = forge_try_tag(l->launch_id, l->attempt, 1);
    forge_slurm_held_job_t job = {.payload = p->payload,
                                  .user = tenant ? tenant->slurm_user : NULL,
                                  .comment = comment,
                                  .pool_count = l->pool_count};
    forge_slurm_released_t made = {0};
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st;
    forge_error_t err = {0};
    char *staging = NULL;
    forge_fs_owner_t owner;
    int rc = 0;

    if (forge_staging_owner(cfg, tenant, &owner, &err) ||
        forge_staging_prepare(cfg, l, owner, p->script, &staging, &err)) {
        fprintf(stderr, "forge-worker: %s\n", err.message);
        rc = CLI_EXIT_SOFTWARE;
        goto out;
    }
    print_state(l, FORGE_STATE_ACCEPTED, FORGE_STATE_NONE, NULL, NULL);
    /* from here a signal waits for the submit's end, and then ends the
     * wait's sleep at once */
    command_catch_signals(on_signal, (const int[]){SIGINT, SIGTERM, SIGHUP, 0});
    st = forge_slurm_submit_held(c, &job, &made, &res);
    if (st != FORGE_SLURM_OK) {
        rc = submit_failed(l, st, &res, &made);
        goto out;
    }
    print_state(l, FORGE_STATE_SUBMITTED, FORGE_STATE_ACCEPTED, NULL,
                json_pack("{s:I}", "job_id", (json_int_t)made.job_id));
    if (stop_signal)
        rc = left_running(l, FORGE_STATE_SUBMITTED, made.job_id);
    else if (wait)
        rc = follow(c, cfg, l, made.job_id);
out:
    free(made.component_ids);
    free(staging);
    free(comment);
    return rc;
}

/* A cancel request: the contract's JSON error, exit 2. */
static int not_a_launch(void)
{
    forge_error_t err = {0};
    char *json;

    forge_error_set(&err, FORGE_ESCHEMA, "$.kind",
                    "submit takes a launch request");
    json = forge_error_json(&err);
    fprintf(stderr, "%s\n", json);
    free(json);
    return CLI_EXIT_INVALID;
}

/* The configuration, its files and the launch request of arg prepared;
 * then the client, with its API version checked, and the submit. */
static int submit_file(const char *arg, int wait)
{
    forge_config_t *cfg = NULL;
    forge_series_catalog_t *cat = NULL;
    forge_tenants_t *tenants = NULL;
    const forge_tenant_t *tenant = NULL;
    forge_prepared_t *p = NULL;
    forge_slurm_client_t *c = NULL;
    forge_slurm_result_t res = {0};
    int rc;

    if ((rc = command_load_config(FORGE_NEED_SLURM | FORGE_NEED_STORAGE |
                                      FORGE_NEED_SERIES,
                                  &cfg)) ||
        (rc = command_load_series(cfg, &cat)) ||
        (rc = command_load_tenants(cfg, &tenants)) ||
        (rc = command_prepare_input(arg, cfg, cat, tenants, &p, &tenant)))
        goto out;
    if (!p->script) {
        rc = not_a_launch();
    } else if (!(rc = command_slurm_client(cfg, &c))) {
        if (forge_slurm_check_version(c, &res) != FORGE_SLURM_OK) {
            fprintf(stderr, "forge-worker: %s\n", res.message);
            rc = CLI_EXIT_CONFIG;
        } else {
            rc = submit_prepared(c, cfg, p, tenant, wait);
        }
    }
out:
    forge_slurm_client_destroy(c);
    forge_prepared_destroy(p);
    forge_tenants_destroy(tenants);
    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
    return rc;
}

int cmd_submit(int argc, char **argv)
{
    int wait = argc > 1 && !strcmp(argv[1], "--wait");

    if (argc == 2 && !strcmp(argv[1], "--help")) {
        fputs(SUBMIT_USAGE, stdout);
        return 0;
    }
    if (argc != 2 + wait) {
        fprintf(stderr, SUBMIT_USAGE);
        return CLI_EXIT_USAGE;
    }
    return submit_file(argv[1 + wait], wait);
}
