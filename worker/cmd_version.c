/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_version.c - `forge-worker --version` (and its alias `version`): its
 * version, the librdkafka it runs with, the slurmrestd API versions it
 * speaks (config/version.h).
 */
#include "command.h"
#include "config/version.h"

#include <stdio.h>

int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    forge_version_print(stdout);
    return 0;
}
