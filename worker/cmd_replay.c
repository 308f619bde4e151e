/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_replay.c - `forge-worker replay --to-earliest|--to-datetime T|
 * --to-offsets FILE [--execute] [--json]`: its arguments and output; the
 * worker group's committed offsets on the requests topic moved, a dry run
 * unless --execute (docs/CONTRACT.md section 4). The recovery commands'
 * frame is command.c's; the plan and its execution src/admin/replay.c's.
 */
#include "command.h"
#include "admin/replay.h"

#include <stdio.h>
#include <string.h>

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
            return command_admin_usage("replay", why, REPLAY_USAGE);
        }
    }
    if (a->targets != 1)
        return command_admin_usage("replay",
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
        return command_admin_usage("replay",
                                   "--to-datetime takes an RFC 3339 time "
                                   "(2026-12-04T10:00:00Z)",
                                   REPLAY_USAGE);
    if (a->kind == FORGE_REPLAY_OFFSETS &&
        forge_replay_read_offsets(a->offsets_file, cfg->topic_requests, t,
                                  &err))
        return command_admin_fail(&err);
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
        (rc = command_admin_config(FORGE_NEED_KAFKA, &cfg)))
        return rc;
    if (!(rc = replay_target(&a, cfg, &target))) {
        if (forge_replay_plan(cfg, &target, CLI_RECOVERY_TIMEOUT_MS, &plan,
                              &err) ||
            (a.execute &&
             forge_replay_execute(cfg, &plan, CLI_RECOVERY_TIMEOUT_MS, &err)))
            rc = command_admin_fail(&err);
        else if (a.json)
            command_print_json_line(forge_replay_plan_json(&plan));
        else
            forge_replay_plan_print(stdout, &plan);
    }
    forge_replay_plan_clear(&plan);
    forge_replay_target_clear(&target);
    forge_config_destroy(cfg);
    return rc;
}
