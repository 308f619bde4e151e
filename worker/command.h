/* SPDX-License-Identifier: Apache-2.0 */
/*
 * command.h - what the command functions of forge-worker share: exit codes,
 * configuration loading with exit 78, and reading a FILE|- argument.
 */
#ifndef FORGE_COMMAND_H
#define FORGE_COMMAND_H

#include "core/config.h"
#include "record/seal.h"
#include "admin/admin.h"
#include "request/series.h"
#include "request/tenants.h"

#include <stddef.h>

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_INVALID = 2, /* invalid request */
    CLI_EXIT_USAGE = 64,
    CLI_EXIT_UNAVAILABLE = 69, /* recovery: Kafka or slurmrestd away */
    CLI_EXIT_SOFTWARE = 70,
    CLI_EXIT_TEMPFAIL = 75, /* recovery: the worker group has members */
    CLI_EXIT_CONFIG = 78,
};

/* Loads configuration from the environment, applies its logging part and
 * checks the FORGE_NEED_* bits. Returns 0 or CLI_EXIT_CONFIG (printed). */
int cli_load_config(unsigned needs, forge_config_t **out);

/* Loads FORGE_GPU_SERIES_FILE. Returns 0 or CLI_EXIT_CONFIG (printed). */
int cli_load_series(const forge_config_t *cfg, forge_series_catalog_t **out);

/* Loads FORGE_TENANTS_FILE; *out NULL when it is not set (no tenants).
 * Returns 0 or CLI_EXIT_CONFIG (printed). */
int cli_load_tenants(const forge_config_t *cfg, forge_tenants_t **out);
/* Loads the state keys (FORGE_STATE_KEY_FILE, _PREVIOUS). Returns 0 or
 * CLI_EXIT_CONFIG (printed). */
int cli_load_sealer(const forge_config_t *cfg, forge_sealer_t **out);

/* Reads a whole FILE, or standard input for "-", capped at max bytes + 1
 * (so a caller can tell "too large"). Returns 0 or CLI_EXIT_USAGE. */
int cli_read_input(const char *arg, size_t max, char **out, size_t *len);

/* The recovery commands' frame (CONTRACT section 4: launches, replay,
 * reconcile). cli_recovery_fail prints {"error", "message"} on stderr and
 * returns the outcome's exit code (usage 2, kafka_unavailable,
 * slurm_unavailable and topic_missing 69, group_active 75, offsets_file 2,
 * config 78). cli_recovery_config loads the configuration as
 * cli_load_config does, but a failure is that JSON error, and log lines
 * below warnings are left out (stdout is the answer). cli_recovery_sealer
 * loads the state keys, a failure exit 78 the same way. */
int cli_recovery_fail(const forge_admin_error_t *err);
int cli_recovery_config(unsigned needs, forge_config_t **out);
int cli_recovery_sealer(const forge_config_t *cfg, forge_sealer_t **out);

int cmd_run(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_ping(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_launches(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_reconcile(int argc, char **argv);

#endif
