/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_request.c - `forge-worker validate` and `forge-worker render`: one
 * request through the same forge_prepare() path the worker uses, so an
 * operator sees exactly what would be submitted.
 */
#include "command.h"
#include "prepare/prepare.h"
#include "request/request.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads, prepares; prints the contract's error JSON on failure. */
static int prepare_input(const char *arg, const forge_config_t *cfg,
                         const forge_series_catalog_t *cat,
                         const forge_tenants_t *tenants, forge_prepared_t **out)
{
    const forge_tenant_t *tenant;
    forge_error_t err = {0};
    char *buf = NULL, *json;
    size_t len = 0;
    int rc;

    if ((rc = cli_read_input(arg, FORGE_REQUEST_MAX_BYTES, &buf, &len)))
        return rc;
    if (forge_prepare(buf, len, cfg, cat, out, &err) ||
        forge_tenant_of(tenants, (*out)->request, &tenant, &err)) {
        json = forge_error_json(&err);
        fprintf(stderr, "%s\n", json);
        free(json);
        rc = CLI_EXIT_INVALID;
    }
    free(buf);
    return rc;
}

/* Shared frame: config, catalogue, input; calls emit on success. */
static int with_prepared(const char *arg,
                         int (*emit)(const forge_prepared_t *, const void *),
                         const void *ctx)
{
    forge_config_t *cfg = NULL;
    forge_series_catalog_t *cat = NULL;
    forge_tenants_t *tenants = NULL;
    forge_prepared_t *p = NULL;
    int rc;

    if ((rc = cli_load_config(FORGE_NEED_STORAGE | FORGE_NEED_SERIES, &cfg)))
        return rc;
    if (!(rc = cli_load_series(cfg, &cat)) &&
        !(rc = cli_load_tenants(cfg, &tenants)) &&
        !(rc = prepare_input(arg, cfg, cat, tenants, &p)))
        rc = emit(p, ctx);
    forge_prepared_destroy(p);
    forge_tenants_destroy(tenants);
    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
    return rc;
}

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
    return with_prepared(argv[1], emit_summary, NULL);
}

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
    return with_prepared(argv[i], emit_render, format);
}
