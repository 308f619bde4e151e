/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_recovery.c - `forge-worker launches` and `forge-worker replay`: their
 * arguments and output (docs/CONTRACT.md section 4); the frame the recovery
 * commands share (configuration, exit codes, the JSON error) is cli.c's,
 * what they do src/admin/'s.
 */
#include "command.h"
#include "core/log.h"
#include "admin/launches.h"
#include "admin/replay.h"
#include "admin/launch_table.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long any one wait for the brokers may last (no progress that long:
 * kafka_unavailable, exit 69). */
#define RECOVERY_TIMEOUT_MS 15000

static int usage(const char *command, const char *why, const char *synopsis)
{
    forge_admin_error_t err;

    forge_admin_fail(&err, FORGE_RECOVERY_USAGE, "%s: %s (usage: %s)", command,
                     why, synopsis);
    return cli_recovery_fail(&err);
}

static void print_json_line(json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT);

    printf("%s\n", text);
    free(text);
    json_decref(j);
}

/* ---- launches ------------------------------------------------------------ */

#define LAUNCHES_USAGE "launches [--state S] [--launch ID] [--json]"

typedef struct launches_args {
    forge_launches_filter_t filter;
    bool json;
} launches_args_t;

static int launches_parse(int argc, char **argv, launches_args_t *a)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--json")) {
            a->json = true;
        } else if (!strcmp(arg, "--state") && i + 1 < argc) {
            a->filter.state = forge_state_from_name(argv[++i]);
            if (a->filter.state == FORGE_STATE_NONE)
                return usage("launches",
                             "--state takes a state name "
                             "(ACCEPTED, ..., LOST)",
                             LAUNCHES_USAGE);
        } else if (!strcmp(arg, "--launch") && i + 1 < argc) {
            a->filter.launch_id = argv[++i];
        } else {
            char why[160];
            snprintf(why, sizeof(why), "unexpected argument \"%.100s\"", arg);
            return usage("launches", why, LAUNCHES_USAGE);
        }
    }
    return 0;
}

static void launches_print(const forge_launch_table_t *t,
                           const launches_args_t *a)
{
    if (!a->json)
        forge_launches_print_header(stdout);
    for (size_t i = 0; i < t->count; i++) {
        if (!forge_launches_match(&a->filter, &t->entries[i]))
            continue;
        if (a->json)
            print_json_line(forge_launches_json(&t->entries[i]));
        else
            forge_launches_print_row(stdout, &t->entries[i]);
    }
    if (t->undecodable)
        forge_log_warn("%zu state record(s) could not be read, the first "
                       "at %s",
                       t->undecodable, t->first_error);
}

int cmd_launches(int argc, char **argv)
{
    launches_args_t a = {{FORGE_STATE_NONE, NULL}, false};
    forge_launch_table_t table;
    forge_admin_error_t err;
    forge_config_t *cfg = NULL;
    forge_sealer_t *sealer = NULL;
    int rc;

    if ((rc = launches_parse(argc, argv, &a)) ||
        (rc = cli_recovery_config(FORGE_NEED_KAFKA | FORGE_NEED_STATE_KEY,
                                  &cfg)))
        return rc;
    if (!(rc = cli_recovery_sealer(cfg, &sealer))) {
        if (forge_launch_table_load(cfg, sealer, NULL, 0, RECOVERY_TIMEOUT_MS,
                                    &table, &err)) {
            rc = cli_recovery_fail(&err);
        } else {
            launches_print(&table, &a);
            forge_launch_table_clear(&table);
        }
    }
    forge_sealer_destroy(sealer);
    forge_config_destroy(cfg);
    return rc;
}

/* ---- replay -------------------------------------------------------------- */

#define REPLAY_USAGE                                                           \
    "replay --to-earliest|--to-datetime T|--to-offsets FILE [--execute] "      \
    "[--json]"

typedef struct replay_args {
    int targets; /* how many --to-* were given */
    forge_replay_kind_t kind;
    const char *datetime;
    const char *offsets_file;
    bool execute;
    bool json;
} replay_args_t;

static int replay_parse(int argc, char **argv, replay_args_t *a)
{
    char why[160];

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--execute")) {
            a->execute = true;
        } else if (!strcmp(arg, "--json")) {
            a->json = true;
        } else if (!strcmp(arg, "--to-earliest")) {
            a->targets++;
            a->kind = FORGE_REPLAY_EARLIEST;
        } else if (!strcmp(arg, "--to-datetime") && i + 1 < argc) {
            a->targets++;
            a->kind = FORGE_REPLAY_DATETIME;
            a->datetime = argv[++i];
        } else if (!strcmp(arg, "--to-offsets") && i + 1 < argc) {
            a->targets++;
            a->kind = FORGE_REPLAY_OFFSETS;
            a->offsets_file = argv[++i];
        } else {
            snprintf(why, sizeof(why), "unexpected argument \"%.100s\"", arg);
            return usage("replay", why, REPLAY_USAGE);
        }
    }
    if (a->targets != 1)
        return usage("replay",
                     "give exactly one of --to-earliest, "
                     "--to-datetime, --to-offsets",
                     REPLAY_USAGE);
    return 0;
}

/* The target the arguments name (an offsets file read, a time parsed). */
static int replay_target(const replay_args_t *a, const forge_config_t *cfg,
                         forge_replay_target_t *t)
{
    forge_admin_error_t err;

    memset(t, 0, sizeof(*t));
    t->kind = a->kind;
    if (a->kind == FORGE_REPLAY_DATETIME &&
        !forge_replay_parse_datetime(a->datetime, &t->at_ms))
        return usage("replay",
                     "--to-datetime takes an RFC 3339 time "
                     "(2026-12-04T10:00:00Z)",
                     REPLAY_USAGE);
    if (a->kind == FORGE_REPLAY_OFFSETS &&
        forge_replay_read_offsets(a->offsets_file, cfg->topic_requests, t,
                                  &err))
        return cli_recovery_fail(&err);
    return 0;
}

int cmd_replay(int argc, char **argv)
{
    replay_args_t a = {0};
    forge_replay_target_t target = {0};
    forge_replay_plan_t plan = {0};
    forge_admin_error_t err;
    forge_config_t *cfg = NULL;
    int rc;

    if ((rc = replay_parse(argc, argv, &a)) ||
        (rc = cli_recovery_config(FORGE_NEED_KAFKA, &cfg)))
        return rc;
    if (!(rc = replay_target(&a, cfg, &target))) {
        if (forge_replay_plan(cfg, &target, RECOVERY_TIMEOUT_MS, &plan, &err) ||
            (a.execute &&
             forge_replay_execute(cfg, &plan, RECOVERY_TIMEOUT_MS, &err)))
            rc = cli_recovery_fail(&err);
        else if (a.json)
            print_json_line(forge_replay_plan_json(&plan));
        else
            forge_replay_plan_print(stdout, &plan);
    }
    forge_replay_plan_clear(&plan);
    forge_replay_target_clear(&target);
    forge_config_destroy(cfg);
    return rc;
}
