/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - forge-worker's command line: picks a command from the table and
 * runs it, and `--help` (the table). Each command lives in its own
 * cmd_<name>.c (command.c: what they share); everything they do is in src/.
 *
 * Exit codes (docs/CONTRACT.md section 4): 0 ok, 2 invalid request,
 * 64 usage, 70 internal failure, 78 bad configuration; submit --wait
 * stopped by a signal 128 + it (130 SIGINT: the job left running); the
 * recovery commands (cmd_launches.c, cmd_replay.c, cmd_reconcile.c,
 * cmd_logs.c) 2 usage, 69 Kafka (or slurmrestd) unavailable, 75 the group
 * has members, 1 logs found nothing; logs --follow stopped by a signal
 * 128 + it.
 */
#include "command.h"

#include <stdio.h>
#include <string.h>

typedef int (*command_fn)(int argc, char **argv);

typedef struct command {
    const char *name;
    command_fn fn;
    const char *summary; /* NULL: an alias, not listed */
} command_t;

static int cmd_help(int argc, char **argv);

static const command_t commands[] = {
    {"run", cmd_run, "the worker (default command)"},
    {"validate", cmd_validate,
     "FILE|-  validate one request (exit 2: invalid)"},
    {"render", cmd_render,
     "[--format script|payload] FILE|-  what would be submitted"},
    {"submit", cmd_submit,
     "[--wait] FILE|-  validate, render, submit through slurmrestd "
     "(held, then released); SIGINT while waiting leaves the job running, "
     "exit 130"},
    {"ping", cmd_ping, "slurmrestd and Kafka health as one JSON object"},
    {"launches", cmd_launches,
     "[--state S] [--launch ID] [--json]  each launch's state record"},
    {"replay", cmd_replay,
     "--to-earliest|--to-datetime T|--to-offsets FILE [--execute] [--json]"
     "  move the worker group's offsets (dry run by default)"},
    {"reconcile", cmd_reconcile,
     "[--execute] [--json]  the state topic against Slurm and the topics"},
    {"logs", cmd_logs,
     "LAUNCH_ID [--attempt N] [--follow]  a launch's output from the logs "
     "topic (--follow: until its logs are archived)"},
    {"--version", cmd_version, "version, librdkafka, slurmrestd API versions"},
    {"version", cmd_version, NULL},
    {"--help", cmd_help, "this text"},
    {"help", cmd_help, NULL},
};

static int cmd_help(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("usage: forge-worker [command]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (commands[i].summary)
            printf("  %-10s %s\n", commands[i].name, commands[i].summary);
    printf("\nConfiguration comes from FORGE_* environment variables "
           "(docs/CONTRACT.md).\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "run";

    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(name, commands[i].name))
            return commands[i].fn(argc > 1 ? argc - 1 : 1,
                                  argc > 1 ? argv + 1 : argv);
    fprintf(stderr, "forge-worker: unknown command \"%s\" (try --help)\n",
            name);
    return CLI_EXIT_USAGE;
}
