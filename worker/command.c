/* SPDX-License-Identifier: Apache-2.0 */
/*
 * command.c - helpers shared by forge-worker's commands (command.h): the
 * configuration and its files, the input request prepared, a slurmrestd
 * client, JSON lines, and the recovery commands' exit codes and errors.
 */
#include "command.h"
#include "config/config_security.h"
#include "log/log.h"
#include "base/util.h"
#include "config/version.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

extern char **environ;

static int config_failure(const forge_error_t *err)
{
    forge_log_field_t fields[] = {{"variable", err->field}};

    forge_log_fields(FORGE_LOG_ERROR, fields, 1, "bad configuration: %s",
                     err->message);
    fprintf(stderr, "forge-worker: bad configuration: %s\n", err->message);
    return CLI_EXIT_CONFIG;
}

/* The configuration from the environment, checked for what the command
 * needs, its secret files read (config_security.h); *cfg NULL and err set
 * otherwise. */
static forge_rc_t load_checked(unsigned needs, forge_config_t **cfg,
                               forge_error_t *err)
{
    forge_rc_t rc;

    *cfg = NULL;
    if ((rc = forge_config_load(environ, cfg, err)) ||
        (rc = forge_config_require(*cfg, needs, err)) ||
        (rc = forge_version_check_runtime(err)) ||
        (rc = forge_config_read_secrets(*cfg, needs, err))) {
        forge_config_destroy(*cfg);
        *cfg = NULL;
    }
    return rc;
}

/* The warnings at start: the security ones for what the command needs
 * (config_security.h), then unknown variables (not for the recovery
 * commands, which never named them). */
static void warn_at_start(const forge_config_t *cfg, unsigned needs,
                          bool unknown)
{
    forge_config_warning_t w[FORGE_CONFIG_WARNINGS_MAX];
    size_t n = forge_config_warnings(cfg, needs, w);

    for (size_t i = 0; i < n; i++) {
        forge_log_field_t f[] = {{"variable", w[i].variable}};
        forge_log_fields(FORGE_LOG_WARN, f, 1, "%s", w[i].message);
    }
    for (size_t i = 0; unknown && i < cfg->unknown_count; i++) {
        forge_log_field_t f[] = {{"variable", cfg->unknown_vars[i]}};
        forge_log_fields(FORGE_LOG_WARN, f, 1,
                         "unknown FORGE_ variable ignored (a typo?)");
    }
}

int command_load_config(unsigned needs, forge_config_t **out)
{
    forge_error_t err = {0};

    if (load_checked(needs, out, &err))
        return config_failure(&err);
    forge_log_configure((*out)->log_level, (*out)->log_format, 2,
                        (*out)->worker_id);
    warn_at_start(*out, needs, true);
    return 0;
}

int command_load_series(const forge_config_t *cfg, forge_series_catalog_t **out)
{
    forge_error_t err = {0};

    if (forge_series_load(cfg->gpu_series_file, out, &err))
        return config_failure(&err);
    return 0;
}

int command_load_tenants(const forge_config_t *cfg, forge_tenants_t **out)
{
    forge_error_t err = {0};

    *out = NULL;
    if (cfg->tenants_file && forge_tenants_load(cfg->tenants_file, out, &err))
        return config_failure(&err);
    return 0;
}

int command_load_sealer(const forge_config_t *cfg, forge_sealer_t **out)
{
    forge_error_t err = {0};

    if (forge_sealer_from_config(cfg, out, &err))
        return config_failure(&err);
    forge_log_info("state records sealed with key %s%s", forge_sealer_kid(*out),
                   cfg->state_key_file_previous
                       ? "; the previous key opens older ones"
                       : "");
    return 0;
}

int command_read_input(const char *arg, size_t max, char **out, size_t *len)
{
    FILE *f = strcmp(arg, "-") ? fopen(arg, "rb") : stdin;
    int rc;

    if (!f) {
        fprintf(stderr, "forge-worker: cannot read %s: %s\n", arg,
                strerror(errno));
        return CLI_EXIT_USAGE;
    }
    /* more than max is read as it is: the parser says what is wrong */
    rc = forge_read_stream(f, max, out, len);
    if (rc)
        fprintf(stderr, "forge-worker: cannot read %s: %s\n", arg,
                strerror(errno));
    if (f != stdin)
        fclose(f);
    return rc ? CLI_EXIT_USAGE : 0;
}

int command_prepare_input(const char *arg, const forge_config_t *cfg,
                          const forge_series_catalog_t *cat,
                          const forge_tenants_t *tenants,
                          forge_prepared_t **out, const forge_tenant_t **tenant)
{
    const forge_tenant_t *found = NULL;
    forge_error_t err = {0};
    char *buf = NULL, *json;
    size_t len = 0;
    int rc;

    *out = NULL;
    if ((rc = command_read_input(arg, FORGE_REQUEST_MAX_BYTES, &buf, &len)))
        return rc;
    if (forge_prepare(buf, len, cfg, cat, out, &err) ||
        forge_tenant_of(tenants, (*out)->request, &found, &err)) {
        json = forge_error_json(&err);
        fprintf(stderr, "%s\n", json);
        free(json);
        rc = CLI_EXIT_INVALID;
    }
    if (tenant)
        *tenant = found;
    free(buf);
    return rc;
}

int command_with_prepared(const char *arg,
                          int (*emit)(const forge_prepared_t *, const void *),
                          const void *ctx)
{
    forge_config_t *cfg = NULL;
    forge_series_catalog_t *cat = NULL;
    forge_tenants_t *tenants = NULL;
    forge_prepared_t *p = NULL;
    int rc;

    if ((rc =
             command_load_config(FORGE_NEED_STORAGE | FORGE_NEED_SERIES, &cfg)))
        return rc;
    if (!(rc = command_load_series(cfg, &cat)) &&
        !(rc = command_load_tenants(cfg, &tenants)) &&
        !(rc = command_prepare_input(arg, cfg, cat, tenants, &p, NULL)))
        rc = emit(p, ctx);
    forge_prepared_destroy(p);
    forge_tenants_destroy(tenants);
    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
    return rc;
}

int command_slurm_client(const forge_config_t *cfg, forge_slurm_client_t **out)
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

void command_print_json_line(json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT);

    printf("%s\n", text);
    fflush(stdout);
    free(text);
    json_decref(j);
}

/* ---- the recovery commands (launches, replay, reconcile) --------------- */

/* The contract's exit code of each outcome (CONTRACT section 4). */
static const int recovery_exit[FORGE_RECOVERY__COUNT] = {
    [FORGE_RECOVERY_OK] = CLI_EXIT_OK,
    [FORGE_RECOVERY_USAGE] = CLI_EXIT_INVALID,
    [FORGE_RECOVERY_KAFKA_UNAVAILABLE] = CLI_EXIT_UNAVAILABLE,
    [FORGE_RECOVERY_SLURM_UNAVAILABLE] = CLI_EXIT_UNAVAILABLE,
    [FORGE_RECOVERY_GROUP_ACTIVE] = CLI_EXIT_TEMPFAIL,
    [FORGE_RECOVERY_TOPIC_MISSING] = CLI_EXIT_UNAVAILABLE,
    [FORGE_RECOVERY_OFFSETS_FILE] = CLI_EXIT_INVALID,
    [FORGE_RECOVERY_CONFIG] = CLI_EXIT_CONFIG,
    [FORGE_RECOVERY_NOT_FOUND] = CLI_EXIT_NO,
};

int command_admin_fail(const forge_admin_error_t *err)
{
    json_t *j =
        json_pack("{s:s, s:s}", "error", forge_admin_code_name(err->code),
                  "message", err->message);
    char *text = json_dumps(j, JSON_COMPACT);

    fprintf(stderr, "%s\n", text);
    free(text);
    json_decref(j);
    return err->code < FORGE_RECOVERY__COUNT ? recovery_exit[err->code]
                                             : CLI_EXIT_SOFTWARE;
}

int command_admin_usage(const char *command, const char *why,
                        const char *synopsis)
{
    forge_admin_error_t err;

    forge_admin_fail(&err, FORGE_RECOVERY_USAGE, "%s: %s (usage: %s)", command,
                     why, synopsis);
    return command_admin_fail(&err);
}

static int recovery_config_failure(const forge_error_t *err)
{
    forge_admin_error_t rerr;

    forge_admin_fail(&rerr, FORGE_RECOVERY_CONFIG, "%s", err->message);
    return command_admin_fail(&rerr);
}

int command_admin_config(unsigned needs, forge_config_t **cfg)
{
    forge_error_t err = {0};

    if (load_checked(needs, cfg, &err))
        return recovery_config_failure(&err);
    forge_log_configure((*cfg)->log_level > FORGE_LOG_WARN ? (*cfg)->log_level
                                                           : FORGE_LOG_WARN,
                        (*cfg)->log_format, 2, (*cfg)->worker_id);
    warn_at_start(*cfg, needs, false);
    return 0;
}

int command_admin_sealer(const forge_config_t *cfg, forge_sealer_t **out)
{
    forge_error_t err = {0};

    if (forge_sealer_from_config(cfg, out, &err))
        return recovery_config_failure(&err);
    return 0;
}

void command_catch_signals(void (*handler)(int), const int *sigs)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    for (; *sigs; sigs++)
        sigaction(*sigs, &sa, NULL);
}
