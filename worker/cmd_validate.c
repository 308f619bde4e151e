/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_validate.c - `forge-worker validate FILE|-`: one request through the
 * same forge_prepare() path the worker uses (command.c's frame), a summary
 * line on stdout when it is valid, the contract's JSON error and exit 2
 * when not.
 */
#include "command.h"

#include <jansson.h>
#include <stdio.h>

static int emit_summary(const forge_prepared_t *p, const void *ctx)
{
    const forge_request_t *r = p->request;
    int launch = r->kind == FORGE_REQUEST_LAUNCH;
    json_t *o =
        json_pack("{s:b, s:s, s:s, s:i}", "valid", 1, "kind",
                  launch ? "launch" : "cancel", "launch_id",
                  launch ? r->launch.launch_id : r->cancel.launch_id, "attempt",
                  launch ? r->launch.attempt : r->cancel.attempt);

    (void)ctx;
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(o);
    return 0;
}

int cmd_validate(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: forge-worker validate FILE|-\n");
        return CLI_EXIT_USAGE;
    }
    return command_with_prepared(argv[1], emit_summary, NULL);
}
