/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_run.c - `forge-worker run`: configuration (exit 78 naming a bad
 * variable, the state keys' files included), the slurmrestd API version
 * check, signal handling, what an operator sees (src/observe/service.h: the
 * probes, the metrics, systemd's notifications; started before the check, so
 * its answer counts), then the consume loop (worker/compose.c puts it
 * together).
 */
#include "command.h"
#include "log/log.h"
#include "observe/service.h"
#include "slurm/client.h"
#include "testpoint/testpoint.h"
#include "compose.h"

#include <signal.h>
#include <stdio.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void install_signals(void)
{
    command_catch_signals(on_signal, (const int[]){SIGTERM, SIGINT, 0});
    signal(SIGPIPE, SIG_IGN);
}

/* A server that does not serve the configured version is a configuration
 * error (78); a server that cannot be reached now is not: the worker waits
 * for it like for any outage. */
static int check_api_version(const forge_config_t *cfg)
{
    forge_slurm_options_t opts;
    forge_slurm_client_t *c = NULL;
    forge_slurm_result_t res = {0};
    forge_error_t err = {0};
    int rc = 0;

    forge_slurm_options_from_config(cfg, &opts);
    opts.max_attempts = 2;
    if (forge_slurm_client_new(&opts, &c, &err)) {
        fprintf(stderr, "forge-worker: bad configuration: %s\n", err.message);
        return CLI_EXIT_CONFIG;
    }
    switch (forge_slurm_check_version(c, &res)) {
    case FORGE_SLURM_OK:
        forge_log_info("slurmrestd serves %s",
                       forge_api_version_name(cfg->slurm_api_version));
        break;
    case FORGE_SLURM_REJECTED:
    case FORGE_SLURM_AUTH:
        fprintf(stderr, "forge-worker: bad configuration: %s\n", res.message);
        rc = CLI_EXIT_CONFIG;
        break;
    default:
        forge_log_warn("slurmrestd is not answering yet (%s); going on",
                       res.message);
    }
    forge_slurm_client_destroy(c);
    return rc;
}

/* A listener address that cannot be had is a configuration error (78),
 * except a port in use (1: a restart may find it free). */
static int start_ops(const forge_config_t *cfg, forge_observe_service_t **ops)
{
    forge_error_t err = {0};

    if (!forge_observe_service_start(cfg, ops, &err))
        return 0;
    fprintf(stderr, "forge-worker: %s%s\n",
            err.code == FORGE_ECONFIG ? "bad configuration: " : "",
            err.message);
    return err.code == FORGE_ECONFIG ? CLI_EXIT_CONFIG : 1;
}

int cmd_run(int argc, char **argv)
{
    forge_config_t *cfg = NULL;
    forge_series_catalog_t *cat = NULL;
    forge_tenants_t *tenants = NULL;
    forge_sealer_t *sealer = NULL;
    forge_observe_service_t *ops = NULL;
    int rc;

    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: forge-worker run\n");
        return CLI_EXIT_USAGE;
    }
    rc = command_load_config(FORGE_NEED_SLURM | FORGE_NEED_STORAGE |
                                 FORGE_NEED_KAFKA | FORGE_NEED_SERIES |
                                 FORGE_NEED_STATE_KEY,
                             &cfg);
    if (!rc)
        rc = command_load_series(cfg, &cat);
    if (!rc)
        rc = command_load_tenants(cfg, &tenants);
    if (!rc)
        rc = command_load_sealer(cfg, &sealer);
    if (!rc)
        rc = start_ops(cfg, &ops);
    if (!rc)
        rc = check_api_version(cfg);
    if (!rc && FORGE_TESTPOINTS_BUILT)
        forge_log_warn("this build carries test failure points "
                       "(FORGE_TEST_HOOKS): not for production");
    if (!rc) {
        install_signals();
        rc = forge_worker_run(cfg, cat, tenants, sealer, &stop_requested);
    }
    forge_observe_service_stop(ops);
    forge_sealer_destroy(sealer);
    forge_tenants_destroy(tenants);
    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
    return rc;
}
