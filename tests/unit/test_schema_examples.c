/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_schema_examples.c - the C validator agrees with the JSON Schemas on
 * every example in schemas/examples/manifest.json: a valid example prepares,
 * an invalid one is refused with the manifest's error code and JSON path.
 * (tests/schema/check_examples.py holds the same examples to the schemas
 * with a real JSON Schema validator; together they keep both sides from
 * drifting.) Examples of out events are produced by the worker, not parsed
 * by it: they are the Python side's alone.
 */
#include "base/buf.h"
#include "prepare/prepare.h"
#include "request/tenants.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXAMPLES FORGE_SOURCE_DIR "/schemas/examples"
#define ROOT     "/tmp/forge-examples/storage"

static forge_series_catalog_t *load_catalog(void)
{
    forge_series_catalog_t *cat = NULL;
    forge_error_t err = {0};

    cr_assert_eq(
        forge_series_load(EXAMPLES "/valid/gpu-series.json", &cat, &err), 0,
        "%s", err.message);
    return cat;
}

static forge_config_t *config_for(const char *profile)
{
    char var[64];
    char *envp[] = {"FORGE_STORAGE_ROOT=" ROOT, var, NULL};
    forge_config_t *cfg = NULL;
    forge_error_t err = {0};

    snprintf(var, sizeof(var), "FORGE_SLURM_RUNTIME_PROFILE=%s", profile);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), 0, "%s", err.message);
    return cfg;
}

/* The profile whose image format the request names (so a valid request is
 * checked against the profile it was written for). */
static const char *profile_of(const char *doc)
{
    return strstr(doc, "\"sqsh\"") ? "enroot-pyxis" : "apptainer";
}

/* Checks one request example; appends a line to fails on disagreement. */
static void check_request(json_t *entry, forge_series_catalog_t *cat,
                          forge_buf_t *fails)
{
    const char *file = json_string_value(json_object_get(entry, "file"));
    bool valid = json_is_true(json_object_get(entry, "valid"));
    const char *code = json_string_value(json_object_get(entry, "error"));
    const char *field = json_string_value(json_object_get(entry, "field"));
    char path[512], *doc = NULL;
    size_t len;
    forge_config_t *cfg;
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};
    forge_rc_t rc;

    snprintf(path, sizeof(path), "%s/%s", EXAMPLES, file);
    cr_assert_eq(forge_read_file(path, 2 << 20, &doc, &len), 0, "%s", path);
    cfg = config_for(profile_of(doc));
    rc = forge_prepare(doc, len, cfg, cat, &p, &err);
    if (valid && rc)
        forge_buf_printf(fails, "%s: valid, but C says %s at %s: %s\n", file,
                         forge_rc_name(err.code), err.field, err.message);
    else if (!valid && !rc)
        forge_buf_printf(fails, "%s: invalid, but C accepts it\n", file);
    else if (!valid && code &&
             (strcmp(code, forge_rc_name(err.code)) ||
              (field && strcmp(field, err.field))))
        forge_buf_printf(fails, "%s: expected %s at %s, C says %s at %s\n",
                         file, code, field ? field : "?",
                         forge_rc_name(err.code), err.field);
    forge_prepared_destroy(p);
    forge_config_destroy(cfg);
    free(doc);
}

static void check_catalog(json_t *entry, forge_buf_t *fails)
{
    const char *file = json_string_value(json_object_get(entry, "file"));
    bool valid = json_is_true(json_object_get(entry, "valid"));
    forge_series_catalog_t *cat = NULL;
    forge_error_t err = {0};
    char path[512];
    forge_rc_t rc;

    snprintf(path, sizeof(path), "%s/%s", EXAMPLES, file);
    rc = forge_series_load(path, &cat, &err);
    if (valid != (rc == 0))
        forge_buf_printf(fails, "%s: manifest says %s, C says %s (%s)\n", file,
                         valid ? "valid" : "invalid", rc ? "invalid" : "valid",
                         err.message);
    forge_series_catalog_destroy(cat);
}

/* A tenants file: C's verdict must be the manifest's. */
static void check_tenants(json_t *entry, forge_buf_t *fails)
{
    const char *file = json_string_value(json_object_get(entry, "file"));
    bool valid = json_is_true(json_object_get(entry, "valid"));
    forge_tenants_t *t = NULL;
    forge_error_t err = {0};
    char path[512];
    int rc;

    snprintf(path, sizeof(path), "%s/%s", EXAMPLES, file);
    rc = forge_tenants_load(path, &t, &err);
    if (valid != (rc == 0))
        forge_buf_printf(fails, "%s: manifest says %s, C says %s (%s)\n", file,
                         valid ? "valid" : "invalid", rc ? "invalid" : "valid",
                         err.message);
    forge_tenants_destroy(t);
}

Test(schema_examples, c_validator_agrees_with_the_manifest)
{
    json_error_t jerr;
    json_t *manifest = json_load_file(EXAMPLES "/manifest.json", 0, &jerr);
    forge_series_catalog_t *cat = load_catalog();
    forge_buf_t fails = FORGE_BUF_INIT;
    size_t i, checked = 0;
    json_t *entry;

    cr_assert_not_null(manifest, "%s", jerr.text);
    cr_assert_eq(system("mkdir -p " ROOT "/runtimes/images && touch " ROOT
                        "/runtimes/images/pytorch-24.01.sif " ROOT
                        "/runtimes/images/pytorch-24.01.sqsh"),
                 0);
    json_array_foreach(manifest, i, entry)
    {
        const char *schema =
            json_string_value(json_object_get(entry, "schema"));
        if (!strcmp(schema, "launch-request.v1.json") ||
            !strcmp(schema, "cancel-request.v1.json")) {
            check_request(entry, cat, &fails);
            checked++;
        } else if (!strcmp(schema, "gpu-series.v1.json")) {
            check_catalog(entry, &fails);
            checked++;
        } else if (!strcmp(schema, "tenants.v1.json")) {
            check_tenants(entry, &fails);
            checked++;
        }
    }
    cr_assert_gt(checked, 100, "the manifest lost its examples?");
    cr_assert_eq(fails.len, 0, "C and the schemas disagree:\n%s",
                 forge_buf_str(&fails));
    forge_buf_clear(&fails);
    forge_series_catalog_destroy(cat);
    json_decref(manifest);
}
