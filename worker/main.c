/*
 * main.c - forge-worker's command line: parses argv, picks a command from
 * the table, and calls into the library (src/). Nothing else lives here.
 *
 * Exit codes (docs/CONTRACT.md section 4): 0 ok, 2 invalid request,
 * 64 usage, 70 internal failure, 78 bad configuration.
 */
#include "config.h"
#include "log.h"
#include "version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

enum {
    EXIT_USAGE = 64,
    EXIT_SOFTWARE = 70,
    EXIT_CONFIG = 78,
};

typedef int (*command_fn)(int argc, char **argv);

typedef struct command {
    const char *name;
    command_fn fn;
    const char *summary;
} command_t;

/* Prints a configuration error naming the variable, as a log line and as
 * plain text for people reading a terminal. */
static int config_failure(const forge_error_t *err)
{
    forge_log_field_t fields[] = {{"variable", err->field}};

    forge_log_fields(FORGE_LOG_ERROR, fields, 1, "bad configuration: %s",
                     err->message);
    fprintf(stderr, "forge-worker: bad configuration: %s\n", err->message);
    return EXIT_CONFIG;
}

/* Loads configuration, applies the logging part, checks what `needs` asks. */
static int load_config(unsigned needs, forge_config_t **out)
{
    forge_error_t err = {0};
    forge_config_t *cfg = NULL;

    if (forge_config_load(environ, &cfg, &err) ||
        forge_config_require(cfg, needs, &err) ||
        forge_version_check_runtime(&err)) {
        forge_config_destroy(cfg);
        return config_failure(&err);
    }
    forge_log_configure(cfg->log_level, cfg->log_format, 2, cfg->worker_id);
    for (size_t i = 0; i < cfg->unknown_count; i++) {
        forge_log_field_t f[] = {{"variable", cfg->unknown_vars[i]}};
        forge_log_fields(FORGE_LOG_WARN, f, 1,
                         "unknown FORGE_ variable ignored (a typo?)");
    }
    *out = cfg;
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    forge_config_t *cfg = NULL;
    int rc;

    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: forge-worker run\n");
        return EXIT_USAGE;
    }
    rc = load_config(FORGE_NEED_SLURM | FORGE_NEED_STORAGE | FORGE_NEED_KAFKA,
                     &cfg);
    if (rc)
        return rc;
    forge_log_error("the worker loop is not part of this build yet");
    forge_config_destroy(cfg);
    return EXIT_SOFTWARE;
}

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    forge_version_print(stdout);
    return 0;
}

static int cmd_help(int argc, char **argv);

static const command_t commands[] = {
    {"run", cmd_run, "the worker (default command)"},
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
    return EXIT_USAGE;
}
