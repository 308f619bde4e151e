/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_slurm.c - `forge-worker ping` (slurmrestd and Kafka health, one JSON
 * object) and `forge-worker submit [--wait] FILE|-` (validate, render,
 * stage, submit through slurmrestd, and with --wait print each platform
 * state change as a JSON line until a terminal state): the operator's way
 * to try a request without Kafka.
 */
#include "command.h"
#include "core/clock.h"
#include "kafka/kafka_probe.h"
#include "core/log.h"
#include "prepare/prepare.h"
#include "render/render.h"
#include "slurm/client.h"
#include "slurm/verdict.h"
#include "render/staging.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int new_client(const forge_config_t *cfg, forge_slurm_client_t **out)
{
    forge_slurm_options_t opts;
    forge_error_t err = {0};

    forge_slurm_options_from_config(cfg, &opts);
    if (forge_slurm_client_new(&opts, out, &err)) {
        fprintf(stderr, "forge-worker: %s\n", err.message);
        return CLI_EXIT_CONFIG;
    }
    return 0;
}

/* {"ok", "url", "api_version", "server", "responding", "error"} */
static json_t *ping_slurm(const forge_config_t *cfg, int *ok)
{
    forge_slurm_client_t *c = NULL;
    forge_slurm_result_t res = {0};
    forge_slurm_ping_t ping = {0};
    const char *error = NULL;

    *ok = 0;
    if (new_client(cfg, &c))
        error = "the client could not start (token or key file)";
    else if (forge_slurm_check_version(c, &res) != FORGE_SLURM_OK)
        error = res.message;
    else if (forge_slurm_ping(c, &ping, &res) != FORGE_SLURM_OK)
        error = res.message;
    else if (!ping.responding)
        error = "slurmctld does not respond to slurmrestd's ping";
    else
        *ok = 1;
    json_t *o =
        json_pack("{s:b, s:s, s:s, s:s, s:b, s:s?}", "ok", *ok, "url",
                  cfg->slurm_rest_url, "api_version",
                  forge_api_version_name(cfg->slurm_api_version), "server",
                  ping.server, "responding", ping.responding, "error", error);
    forge_slurm_client_destroy(c);
    return o;
}

int cmd_ping(int argc, char **argv)
{
    forge_config_t *cfg = NULL;
    forge_kafka_probe_t kafka;
    int rc, slurm_ok;
    json_t *out, *slurm;

    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: forge-worker ping\n");
        return CLI_EXIT_USAGE;
    }
    if ((rc = cli_load_config(FORGE_NEED_SLURM | FORGE_NEED_KAFKA, &cfg)))
        return rc;
    slurm = ping_slurm(cfg, &slurm_ok);
    forge_kafka_probe(cfg, 5000, &kafka);
    out = json_pack("{s:b, s:o, s:{s:b, s:s, s:i, s:b, s:s?}}", "ok",
                    slurm_ok && kafka.ok, "slurmrestd", slurm, "kafka", "ok",
                    kafka.ok, "brokers", cfg->kafka_brokers, "brokers_seen",
                    kafka.brokers, "topics_ok", kafka.topics_ok, "error",
                    kafka.error[0] ? kafka.error : NULL);
    json_dumpf(out, stdout, JSON_COMPACT);
    putchar('\n');
    rc = slurm_ok && kafka.ok ? 0 : 1;
    json_decref(out);
    forge_config_destroy(cfg);
    return rc;
}

/* ---- submit ----------------------------------------------------------- */

static void print_state(const char *launch_id, int attempt, forge_state_t st,
                        forge_state_t prev, const char *reason, json_t *slurm)
{
    json_t *o = json_pack(
        "{s:s, s:i, s:s, s:s?, s:s?, s:o?}", "launch_id", launch_id, "attempt",
        attempt, "state", forge_state_name(st), "previous_state",
        forge_state_name(prev), "reason", reason, "slurm", slurm);

    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
}

/* Follows job_id until a terminal state; returns it. Missing from Slurm
 * is never "finished": accounting, then FORGE_LOST_GRACE_S, then LOST. */
static forge_state_t follow(forge_slurm_client_t *c, const forge_config_t *cfg,
                            const forge_launch_t *l, uint32_t job_id)
{
    forge_state_t state = FORGE_STATE_SUBMITTED;
    long long missing_since = 0; /* monotonic ms (core/clock.h) */

    while (!forge_state_is_terminal(state)) {
        forge_slurm_job_list_t jobs = {NULL, 0};
        forge_slurm_result_t res = {0};
        forge_slurm_status_t st =
            forge_slurm_job_details(c, job_id, &jobs, &res);

        if (st == FORGE_SLURM_NOT_FOUND)
            st = forge_slurm_job_accounting(c, job_id, &jobs, &res);
        if (st == FORGE_SLURM_NOT_FOUND) {
            long long now = forge_clock_ms();
            missing_since = missing_since ? missing_since : now;
            if (forge_slurm_lost(now - missing_since, cfg->lost_grace_s)) {
                print_state(l->launch_id, l->attempt, FORGE_STATE_LOST, state,
                            FORGE_SLURM_LOST_REASON, NULL);
                return FORGE_STATE_LOST;
            }
        } else if (st == FORGE_SLURM_OK) {
            forge_slurm_move_t m = forge_slurm_move(&jobs, state, 0);
            missing_since = 0;
            if (m.moves) {
                print_state(l->launch_id, l->attempt, m.to, state, m.reason,
                            forge_slurm_verdict_json(&jobs));
                state = m.to;
            }
        } else {
            forge_log_warn("slurmrestd: %s (%s); trying again", res.message,
                           forge_slurm_status_name(st));
        }
        forge_slurm_job_list_clear(&jobs);
        if (!forge_state_is_terminal(state))
            sleep(1);
    }
    return state;
}

static int submit_prepared(const forge_config_t *cfg, const forge_prepared_t *p,
                           const forge_tenant_t *tenant, int wait)
{
    const forge_launch_t *l = &p->request->launch;
    forge_slurm_client_t *c = NULL;
    forge_slurm_result_t res = {0};
    forge_slurm_submit_t sub;
    forge_error_t err = {0};
    char *staging = NULL;
    forge_fs_owner_t owner;
    int rc;

    if ((rc = new_client(cfg, &c)))
        return rc;
    if (forge_slurm_check_version(c, &res) != FORGE_SLURM_OK) {
        fprintf(stderr, "forge-worker: %s\n", res.message);
        rc = CLI_EXIT_CONFIG;
        goto out;
    }
    if (forge_staging_owner(cfg, tenant, &owner, &err) ||
        forge_staging_prepare(cfg, l, owner, p->script, &staging, &err)) {
        fprintf(stderr, "forge-worker: %s\n", err.message);
        rc = CLI_EXIT_SOFTWARE;
        goto out;
    }
    print_state(l->launch_id, l->attempt, FORGE_STATE_ACCEPTED,
                FORGE_STATE_NONE, NULL, NULL);
    if (forge_slurm_submit_as(c, tenant ? tenant->slurm_user : NULL, p->payload,
                              &sub, &res) != FORGE_SLURM_OK) {
        fprintf(stderr, "forge-worker: submit failed (%s): %s\n",
                forge_slurm_status_name(res.status), res.message);
        rc = 1;
        goto out;
    }
    print_state(l->launch_id, l->attempt, FORGE_STATE_SUBMITTED,
                FORGE_STATE_ACCEPTED, sub.warnings[0] ? sub.warnings : NULL,
                json_pack("{s:I}", "job_id", (json_int_t)sub.job_id));
    if (wait)
        rc = follow(c, cfg, l, sub.job_id) == FORGE_STATE_SUCCEEDED ? 0 : 1;
out:
    free(staging);
    forge_slurm_client_destroy(c);
    return rc;
}

int cmd_submit(int argc, char **argv)
{
    int wait = argc > 1 && !strcmp(argv[1], "--wait");
    forge_config_t *cfg = NULL;
    forge_series_catalog_t *cat = NULL;
    forge_tenants_t *tenants = NULL;
    const forge_tenant_t *tenant = NULL;
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};
    char *buf = NULL, *json;
    size_t len = 0;
    int rc;

    if (argc != 2 + wait) {
        fprintf(stderr, "usage: forge-worker submit [--wait] FILE|-\n");
        return CLI_EXIT_USAGE;
    }
    if ((rc = cli_load_config(FORGE_NEED_SLURM | FORGE_NEED_STORAGE |
                                  FORGE_NEED_SERIES,
                              &cfg)) ||
        (rc = cli_load_series(cfg, &cat)) ||
        (rc = cli_load_tenants(cfg, &tenants)) ||
        (rc = cli_read_input(argv[1 + wait], FORGE_REQUEST_MAX_BYTES, &buf,
                             &len)))
        goto out;
    if (forge_prepare(buf, len, cfg, cat, &p, &err) || !p->script ||
        forge_tenant_of(tenants, p->request, &tenant, &err)) {
        if (!err.code)
            forge_error_set(&err, FORGE_ESCHEMA, "$.kind",
                            "submit takes a launch request");
        json = forge_error_json(&err);
        fprintf(stderr, "%s\n", json);
        free(json);
        rc = CLI_EXIT_INVALID;
        goto out;
    }
    rc = submit_prepared(cfg, p, tenant, wait);
out:
    forge_prepared_destroy(p);
    free(buf);
    forge_tenants_destroy(tenants);
    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
    return rc;
}
