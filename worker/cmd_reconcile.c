/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_reconcile.c - `forge-worker reconcile [--execute] [--json]`: the
 * state topic held up against the requests and status topics and Slurm,
 * per launch; --execute repairs through the workers' group and a
 * transaction (src/admin/reconcile_apply.c, docs/RECOVERY.md). Exit
 * codes and JSON errors: docs/CONTRACT.md section 4.
 */
#include "command.h"
#include "base/buf.h"
#include "config/config_security.h"
#include "log/log.h"
#include "config/version.h"
#include "admin/reconcile.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define RECONCILE_TIMEOUT_MS 60000
/* any wait for the brokers that makes no progress this long is
 * kafka_unavailable (CONTRACT section 4), as for launches and replay */
#define RECONCILE_KAFKA_WAIT_MS 15000
#define RECONCILE_MAX_BODY      ((size_t)1 << 30)

enum {
    EXIT_INCONSISTENT = 1,
    EXIT_USAGE = 2,
    EXIT_UNAVAILABLE = 69,
    EXIT_GROUP_ACTIVE = 75,
};

extern char **environ;

/* The one JSON object on stderr of every exit but 0 and 1. */
static int fail(int code, const char *error, const char *message)
{
    json_t *o = json_pack("{s:s, s:s}", "error", error, "message", message);
    char *text = json_dumps(o, JSON_COMPACT);

    fprintf(stderr, "%s\n", text);
    free(text);
    json_decref(o);
    return code;
}

typedef struct options {
    bool execute, json;
} options_t;

static int parse(int argc, char **argv, options_t *o)
{
    char message[256];

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--execute"))
            o->execute = true;
        else if (!strcmp(argv[i], "--json"))
            o->json = true;
        else {
            snprintf(message, sizeof(message),
                     "unknown argument \"%.100s\"; usage: forge-worker "
                     "reconcile [--execute] [--json]",
                     argv[i]);
            return fail(EXIT_USAGE, "usage", message);
        }
    }
    return 0;
}

/* Configuration, the state keys and a Slurm client; 78 with JSON. */
static int load(forge_config_t **cfg, forge_sealer_t **sealer,
                forge_slurm_client_t **slurm)
{
    forge_error_t err = {0};
    forge_slurm_options_t opts;

    if (forge_config_load(environ, cfg, &err) ||
        forge_config_require(
            *cfg, FORGE_NEED_KAFKA | FORGE_NEED_SLURM | FORGE_NEED_STATE_KEY,
            &err) ||
        /* the password files (FORGE_KAFKA_SASL_PASSWORD_FILE, ...), as
         * command.c's load_checked reads them for the other commands */
        forge_config_read_secrets(
            *cfg, FORGE_NEED_KAFKA | FORGE_NEED_SLURM | FORGE_NEED_STATE_KEY,
            &err) ||
        forge_version_check_runtime(&err) ||
        forge_sealer_from_config(*cfg, sealer, &err))
        return fail(CLI_EXIT_CONFIG, "config", err.message);
    forge_log_configure((*cfg)->log_level, (*cfg)->log_format, 2,
                        (*cfg)->worker_id);
    forge_slurm_options_from_config(*cfg, &opts);
    /* one GET /jobs lists every job of the cluster (slurmrestd has no
     * filter by comment): a cluster near MaxJobCount answers far more
     * than the worker's 64 MiB, and a longer call */
    opts.max_body_bytes = RECONCILE_MAX_BODY;
    opts.request_timeout_ms = RECONCILE_TIMEOUT_MS;
    if (forge_slurm_client_new(&opts, slurm, &err))
        return fail(CLI_EXIT_CONFIG, "config", err.message);
    return 0;
}

static const struct refusal {
    int exit_code;
    const char *error;
} refusals[] = {
    [FORGE_RECON_OK] = {0, NULL},
    [FORGE_RECON_GROUP_ACTIVE] = {EXIT_GROUP_ACTIVE, "group_active"},
    [FORGE_RECON_KAFKA_DOWN] = {EXIT_UNAVAILABLE, "kafka_unavailable"},
    [FORGE_RECON_SLURM_DOWN] = {EXIT_UNAVAILABLE, "slurm_unavailable"},
    [FORGE_RECON_TOPIC_MISSING] = {EXIT_UNAVAILABLE, "topic_missing"},
    [FORGE_RECON_CONFIG] = {CLI_EXIT_CONFIG, "config"},
};

static int report(const forge_recon_plan_t *plan, const options_t *o)
{
    json_t *r = forge_recon_report_json(plan, o->execute);
    int left = (int)json_integer_value(json_object_get(r, "undone"));

    if (o->json) {
        char *text = json_dumps(r, JSON_INDENT(2));
        printf("%s\n", text);
        free(text);
    } else {
        forge_recon_report_text(plan, o->execute, stdout);
    }
    json_decref(r);
    return left ? EXIT_INCONSISTENT : 0;
}

int cmd_reconcile(int argc, char **argv)
{
    options_t o = {0};
    forge_config_t *cfg = NULL;
    forge_sealer_t *sealer = NULL;
    forge_slurm_client_t *slurm = NULL;
    forge_recon_plan_t plan = {0};
    forge_buf_t staging = FORGE_BUF_INIT;
    forge_error_t err = {0};
    forge_recon_refusal_t r;
    int rc;

    if ((rc = parse(argc, argv, &o)) || (rc = load(&cfg, &sealer, &slurm)))
        goto out;
    forge_buf_printf(&staging, "%s/staging/",
                     cfg->slurm_storage_root ? cfg->slurm_storage_root
                                             : cfg->storage_root);
    forge_recon_run_t run = {cfg,
                             sealer,
                             slurm,
                             forge_buf_str(&staging),
                             o.execute,
                             RECONCILE_TIMEOUT_MS,
                             RECONCILE_KAFKA_WAIT_MS};
    r = forge_recon_run(&run, &plan, &err);
    rc = r ? fail(refusals[r].exit_code, refusals[r].error, err.message)
           : report(&plan, &o);
out:
    forge_recon_plan_clear(&plan);
    forge_buf_clear(&staging);
    forge_slurm_client_destroy(slurm);
    forge_sealer_destroy(sealer);
    forge_config_destroy(cfg);
    return rc;
}
