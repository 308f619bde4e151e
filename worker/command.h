/* SPDX-License-Identifier: Apache-2.0 */
/*
 * command.h - what the command functions of forge-worker share (one file
 * per command, cmd_<name>.c; main.c's table picks one): exit codes,
 * configuration loading with exit 78, reading a FILE|- argument and
 * preparing the request in it, a slurmrestd client, and the recovery
 * commands' frame.
 */
#ifndef FORGE_COMMAND_H
#define FORGE_COMMAND_H

#include "config/config.h"
#include "prepare/prepare.h"
#include "slurm/client.h"
#include "record/seal.h"
#include "admin/admin.h"
#include "request/series.h"
#include "request/tenants.h"

#include <jansson.h>
#include <stddef.h>

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_NO = 1,      /* the answer is no: logs found nothing */
    CLI_EXIT_INVALID = 2, /* invalid request */
    CLI_EXIT_USAGE = 64,
    CLI_EXIT_UNAVAILABLE = 69, /* recovery: Kafka or slurmrestd away */
    CLI_EXIT_SOFTWARE = 70,
    CLI_EXIT_TEMPFAIL = 75, /* recovery: the worker group has members */
    CLI_EXIT_CONFIG = 78,
};

/* Loads configuration from the environment, applies its logging part and
 * checks the FORGE_NEED_* bits. Returns 0 or CLI_EXIT_CONFIG (printed). */
int command_load_config(unsigned needs, forge_config_t **out);

/* Loads FORGE_GPU_SERIES_FILE. Returns 0 or CLI_EXIT_CONFIG (printed). */
int command_load_series(const forge_config_t *cfg,
                        forge_series_catalog_t **out);

/* Loads FORGE_TENANTS_FILE; *out NULL when it is not set (no tenants).
 * Returns 0 or CLI_EXIT_CONFIG (printed). */
int command_load_tenants(const forge_config_t *cfg, forge_tenants_t **out);
/* Loads the state keys (FORGE_STATE_KEY_FILE, _PREVIOUS). Returns 0 or
 * CLI_EXIT_CONFIG (printed). */
int command_load_sealer(const forge_config_t *cfg, forge_sealer_t **out);

/* Reads a whole FILE, or standard input for "-", capped at max bytes + 1
 * (so a caller can tell "too large"). Returns 0 or CLI_EXIT_USAGE. */
int command_read_input(const char *arg, size_t max, char **out, size_t *len);

/* Reads FILE|- (arg) and prepares the request in it as the worker does
 * (prepare.h), its tenant found (tenant may be NULL when not wanted).
 * Returns 0, CLI_EXIT_USAGE (unreadable) or CLI_EXIT_INVALID, the
 * contract's JSON error printed on stderr. */
int command_prepare_input(const char *arg, const forge_config_t *cfg,
                          const forge_series_catalog_t *cat,
                          const forge_tenants_t *tenants,
                          forge_prepared_t **out,
                          const forge_tenant_t **tenant);

/* validate's and render's frame: configuration (storage, series),
 * tenants, the prepared input; emit(prepared, ctx) gives the exit code. */
int command_with_prepared(const char *arg,
                          int (*emit)(const forge_prepared_t *, const void *),
                          const void *ctx);

/* A slurmrestd client from the configuration. Returns 0 or CLI_EXIT_CONFIG
 * (printed: the token or key file). */
int command_slurm_client(const forge_config_t *cfg, forge_slurm_client_t **out);

/* j as one compact line on stdout (j's reference taken). */
void command_print_json_line(json_t *j);

/* How long any one wait of launches and replay for the brokers may last
 * (no progress that long: kafka_unavailable, exit 69). */
#define CLI_RECOVERY_TIMEOUT_MS 15000

/* The recovery commands' frame (CONTRACT section 4: launches, replay,
 * reconcile, logs). command_admin_fail prints {"error", "message"} on stderr
 * and returns the outcome's exit code (usage 2, kafka_unavailable,
 * slurm_unavailable and topic_missing 69, group_active 75, offsets_file 2,
 * config 78, not_found 1). command_admin_config loads the configuration as
 * command_load_config does, but a failure is that JSON error, and log lines
 * below warnings are left out (stdout is the answer). command_admin_sealer
 * loads the state keys, a failure exit 78 the same way. */
int command_admin_fail(const forge_admin_error_t *err);
/* A usage error of a recovery command: "<command>: <why> (usage:
 * <synopsis>)" as the JSON error, exit 2. */
int command_admin_usage(const char *command, const char *why,
                        const char *synopsis);
int command_admin_config(unsigned needs, forge_config_t **out);
int command_admin_sealer(const forge_config_t *cfg, forge_sealer_t **out);

/* handler for each signal of sigs (0-terminated), without SA_RESTART: a
 * sleep or a wait the signal interrupts ends at once. */
void command_catch_signals(void (*handler)(int), const int *sigs);

int cmd_run(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_ping(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_launches(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_reconcile(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_version(int argc, char **argv);

#endif
