/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_launches.c - `forge-worker launches [--state S] [--launch ID]
 * [--json]`: its arguments and output, each launch's state record as the
 * state topic holds it (docs/CONTRACT.md section 4). The recovery
 * commands' frame (configuration, exit codes, the JSON error) is
 * command.c's; the reading of the state topic src/admin/'s.
 */
#include "command.h"
#include "log/log.h"
#include "admin/launches.h"
#include "admin/launch_table.h"

#include <stdio.h>
#include <string.h>

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
                return command_admin_usage("launches",
                                           "--state takes a state name "
                                           "(ACCEPTED, ..., LOST)",
                                           LAUNCHES_USAGE);
        } else if (!strcmp(arg, "--launch") && i + 1 < argc) {
            a->filter.launch_id = argv[++i];
        } else {
            char why[160];
            snprintf(why, sizeof(why), "unexpected argument \"%.100s\"", arg);
            return command_admin_usage("launches", why, LAUNCHES_USAGE);
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
            command_print_json_line(forge_launches_json(&t->entries[i]));
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
        (rc = command_admin_config(FORGE_NEED_KAFKA | FORGE_NEED_STATE_KEY,
                                   &cfg)))
        return rc;
    if (!(rc = command_admin_sealer(cfg, &sealer))) {
        if (forge_launch_table_load(cfg, sealer, NULL, 0,
                                    CLI_RECOVERY_TIMEOUT_MS, &table, &err)) {
            rc = command_admin_fail(&err);
        } else {
            launches_print(&table, &a);
            forge_launch_table_clear(&table);
        }
    }
    forge_sealer_destroy(sealer);
    forge_config_destroy(cfg);
    return rc;
}
