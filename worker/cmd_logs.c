/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_logs.c - `forge-worker logs LAUNCH_ID [--attempt N] [--follow]`: its
 * arguments and exit codes; a launch's output printed from the logs topic
 * as an operator tails a file (docs/CONTRACT.md section 4). The recovery
 * commands' frame (configuration, the JSON error) is command.c's; the
 * reading and printing src/admin/logs.h's.
 *
 * Exit codes: 0 printed (without --follow: whatever the topic held of the
 * attempt; with it: up to the attempt's logs_archived), 1 not_found
 * (without --follow, nothing of the launch, or of that attempt), 2 usage,
 * 69, 78 as the other recovery commands; SIGINT or SIGTERM while
 * following: 128 + the signal (130, 143), as `submit --wait`. Threads:
 * one; the signal handler only sets a flag the follow reads.
 */
#include "command.h"
#include "text/text.h"
#include "admin/logs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOGS_USAGE  "logs LAUNCH_ID [--attempt N] [--follow]"
#define ATTEMPT_MAX 1000000

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

typedef struct logs_args {
    const char *launch_id;
    int attempt; /* 0: the highest */
    bool follow;
} logs_args_t;

static bool parse_attempt(const char *s, int *out)
{
    char *end = NULL;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > ATTEMPT_MAX)
        return false;
    *out = (int)v;
    return true;
}

static int logs_parse(int argc, char **argv, logs_args_t *a)
{
    char why[160];

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--follow")) {
            a->follow = true;
        } else if (!strcmp(arg, "--attempt") && i + 1 < argc) {
            if (!parse_attempt(argv[++i], &a->attempt))
                return command_admin_usage("logs",
                                           "--attempt takes a number, 1 to "
                                           "1000000",
                                           LOGS_USAGE);
        } else if (arg[0] != '-' && !a->launch_id) {
            a->launch_id = arg;
        } else {
            snprintf(why, sizeof(why), "unexpected argument \"%.100s\"", arg);
            return command_admin_usage("logs", why, LOGS_USAGE);
        }
    }
    if (!a->launch_id)
        return command_admin_usage("logs", "which launch?", LOGS_USAGE);
    if (!forge_text_is_name(a->launch_id, "._-", 64))
        return command_admin_usage("logs",
                                   "LAUNCH_ID is a launch id "
                                   "([A-Za-z0-9][A-Za-z0-9._-]{0,63})",
                                   LOGS_USAGE);
    return 0;
}

/* Nothing of the launch (or of its attempt) on the topic. */
static int not_found(const forge_config_t *cfg, const logs_args_t *a,
                     const forge_logs_result_t *res)
{
    forge_admin_error_t err;
    char attempt[32] = "";

    if (a->attempt)
        snprintf(attempt, sizeof(attempt), " attempt %d", a->attempt);
    forge_admin_fail(&err, FORGE_RECOVERY_NOT_FOUND,
                     "no logs of launch %s%s on %s (partition %d)",
                     a->launch_id, attempt, cfg->topic_logs,
                     (int)res->partition);
    return command_admin_fail(&err);
}

int cmd_logs(int argc, char **argv)
{
    logs_args_t a = {NULL, 0, false};
    forge_logs_result_t res;
    forge_admin_error_t err;
    forge_config_t *cfg = NULL;
    forge_logs_spec_t spec;
    int rc;

    if ((rc = logs_parse(argc, argv, &a)) ||
        (rc = command_admin_config(FORGE_NEED_KAFKA, &cfg)))
        return rc;
    if (a.follow)
        command_catch_signals(on_signal, (const int[]){SIGINT, SIGTERM, 0});
    spec = (forge_logs_spec_t){a.launch_id,  a.attempt, a.follow,
                               &stop_signal, stdout,    stderr};
    if (forge_logs_read(cfg, &spec, CLI_RECOVERY_TIMEOUT_MS, &res, &err))
        rc = command_admin_fail(&err);
    else if (res.stopped && stop_signal)
        rc = 128 + stop_signal;
    else if (!res.found && !a.follow)
        rc = not_found(cfg, &a, &res);
    fflush(stdout);
    forge_config_destroy(cfg);
    return rc;
}
