/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_render.c - `forge-worker render [--format script|payload] FILE|-`:
 * one request through the same forge_prepare() path the worker uses
 * (command.c's frame), and what would be submitted: the batch script, or
 * the whole slurmrestd submit body.
 */
#include "command.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int emit_render(const forge_prepared_t *p, const void *ctx)
{
    const char *format = ctx;

    if (!p->script) {
        fprintf(stderr, "forge-worker: a cancel request renders nothing\n");
        return CLI_EXIT_INVALID;
    }
    if (!strcmp(format, "script")) {
        fputs(p->script, stdout);
    } else {
        json_dumpf(p->payload, stdout, JSON_INDENT(2));
        putchar('\n');
    }
    return 0;
}

int cmd_render(int argc, char **argv)
{
    const char *format = "script";
    int i = 1;

    if (argc > 2 && !strncmp(argv[1], "--format", 8)) {
        if (argv[1][8] == '=') {
            format = argv[1] + 9;
        } else if (argc > 3) {
            format = argv[2];
            i++;
        }
        i++;
    }
    if (argc != i + 1 ||
        (strcmp(format, "script") != 0 && strcmp(format, "payload") != 0)) {
        fprintf(stderr, "usage: forge-worker render [--format script|payload] "
                        "FILE|-\n");
        return CLI_EXIT_USAGE;
    }
    return command_with_prepared(argv[i], emit_render, format);
}
