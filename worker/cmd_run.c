/*
 * cmd_run.c - `forge-worker run`: the worker. Today it checks the whole
 * configuration (exit 78 naming a bad variable); the consume loop lands
 * with the worker issue.
 */
#include "cli.h"
#include "log.h"

#include <stdio.h>

int cmd_run(int argc, char **argv)
{
    forge_config_t *cfg = NULL;
    int rc;

    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: forge-worker run\n");
        return CLI_EXIT_USAGE;
    }
    rc = cli_load_config(FORGE_NEED_SLURM | FORGE_NEED_STORAGE |
                             FORGE_NEED_KAFKA | FORGE_NEED_SERIES,
                         &cfg);
    if (rc)
        return rc;
    forge_log_error("the worker loop is not part of this build yet");
    forge_config_destroy(cfg);
    return CLI_EXIT_SOFTWARE;
}
