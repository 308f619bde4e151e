/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tenants.c - the site's tenants file (src/request/tenants.c): every rule
 * of the document, and which tenant a launch runs as.
 */
#include "request/request.h"
#include "request/tenants.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char site[] =
    "{\"tenants\": {"
    "\"team-a\": {\"slurm_user\": \"forge\", \"uid\": 2001, \"gid\": 2001},"
    "\"team-b\": {\"slurm_user\": \"forge2\", \"uid\": 2003, \"gid\": 3000}},"
    "\"default_tenant\": \"team-a\"}";

static forge_tenants_t *parse_ok(const char *doc)
{
    forge_tenants_t *t = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_tenants_parse(doc, strlen(doc), &t, &err), FORGE_OK,
                 "%s", err.message);
    return t;
}

static forge_request_t *launch(const char *tenant_field)
{
    char doc[1024];
    forge_request_t *req = NULL;
    forge_error_t err = {0};

    snprintf(doc, sizeof(doc),
             "{\"kind\": \"launch\", \"launch_id\": \"t-1\", %s"
             "\"image\": {\"path\": \"i.sif\", \"format\": \"sif\"},"
             "\"command\": [\"true\"],"
             "\"pools\": [{\"name\": \"main\", \"series\": \"h200\", "
             "\"nodes\": 1, \"gpus_per_node\": 0}]}",
             tenant_field);
    cr_assert_eq(forge_request_parse(doc, strlen(doc), &req, &err), FORGE_OK,
                 "%s", err.message);
    return req;
}

Test(tenants, parses_users_and_ids)
{
    forge_tenants_t *t = parse_ok(site);

    cr_assert_eq(t->count, 2);
    cr_assert_str_eq(t->fallback->name, "team-a");
    for (size_t i = 0; i < t->count; i++) {
        if (strcmp(t->items[i].name, "team-b"))
            continue;
        cr_assert_str_eq(t->items[i].slurm_user, "forge2");
        cr_assert_eq(t->items[i].uid, 2003);
        cr_assert_eq(t->items[i].gid, 3000);
    }
    forge_tenants_destroy(t);
}

Test(tenants, refuses_bad_documents)
{
    static const char *const bad[] = {
        "[]",
        "{\"tenants\": {}}",
        "{\"tenants\": {\"a\": {\"slurm_user\": \"root\", \"uid\": 5, "
        "\"gid\": 5}}}",
        "{\"tenants\": {\"a\": {\"slurm_user\": \"u\", \"uid\": 0, "
        "\"gid\": 5}}}",
        "{\"tenants\": {\"a\": {\"slurm_user\": \"u\", \"uid\": 5, "
        "\"gid\": 0}}}",
        "{\"tenants\": {\"a\": {\"slurm_user\": \"u\", \"uid\": \"5\", "
        "\"gid\": 5}}}",
        "{\"tenants\": {\"a\": {\"slurm_user\": \"u;id\", \"uid\": 5, "
        "\"gid\": 5}}}",
        "{\"tenants\": {\"a\": {\"slurm_user\": \"9u\", \"uid\": 5, "
        "\"gid\": 5}}}",
        "{\"tenants\": {\"-a\": {\"slurm_user\": \"u\", \"uid\": 5, "
        "\"gid\": 5}}}",
        "{\"tenants\": {\"a\": {\"slurm_user\": \"u\", \"uid\": 5, "
        "\"gid\": 5}}, \"default_tenant\": \"b\"}",
        "{\"tenants\": {\"a\": {\"slurm_user\": \"u\", \"uid\": 5, "
        "\"gid\": 5}, \"a\": {\"slurm_user\": \"v\", \"uid\": 6, "
        "\"gid\": 6}}}",
        "{\"tenants\": {\"a\": {\"slurm_user\": \"u\", \"uid\": 2147483648, "
        "\"gid\": 5}}}",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        forge_tenants_t *t = (forge_tenants_t *)1;
        forge_error_t err = {0};
        cr_expect_neq(forge_tenants_parse(bad[i], strlen(bad[i]), &t, &err),
                      FORGE_OK, "accepted: %s", bad[i]);
        cr_expect_null(t);
        cr_expect(err.message[0], "no message for %s", bad[i]);
    }
}

Test(tenants, named_default_and_unknown)
{
    forge_tenants_t *t = parse_ok(site);
    forge_request_t *named = launch("\"tenant\": \"team-b\","),
                    *none = launch(""),
                    *unknown = launch("\"tenant\": \"team-z\",");
    const forge_tenant_t *out = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_tenant_of(t, named, &out, &err), FORGE_OK);
    cr_assert_str_eq(out->slurm_user, "forge2");
    cr_assert_eq(forge_tenant_of(t, none, &out, &err), FORGE_OK);
    cr_assert_str_eq(out->name, "team-a");
    cr_assert_eq(forge_tenant_of(t, unknown, &out, &err),
                 FORGE_ETENANT_UNKNOWN);
    cr_assert_null(out);
    cr_assert_str_eq(err.field, "$.tenant");
    cr_assert(strstr(err.message, "team-z"), "%s", err.message);
    forge_request_destroy(named);
    forge_request_destroy(none);
    forge_request_destroy(unknown);
    forge_tenants_destroy(t);
}

Test(tenants, no_default_means_required)
{
    forge_tenants_t *t = parse_ok("{\"tenants\": {\"a\": {\"slurm_user\": "
                                  "\"u\", \"uid\": 5, \"gid\": 5}}}");
    forge_request_t *none = launch("");
    const forge_tenant_t *out = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_tenant_of(t, none, &out, &err), FORGE_ETENANT_UNKNOWN);
    cr_assert(strstr(err.message, "required"), "%s", err.message);
    forge_request_destroy(none);
    forge_tenants_destroy(t);
}

Test(tenants, none_configured)
{
    forge_request_t *none = launch(""),
                    *named = launch("\"tenant\": \"team-a\",");
    const forge_tenant_t *out = (const forge_tenant_t *)1;
    forge_error_t err = {0};

    cr_assert_eq(forge_tenant_of(NULL, none, &out, &err), FORGE_OK);
    cr_assert_null(out, "no site file: the fleet's one user");
    cr_assert_eq(forge_tenant_of(NULL, named, &out, &err),
                 FORGE_ETENANT_UNKNOWN);
    cr_assert(strstr(err.message, "FORGE_TENANTS_FILE"), "%s", err.message);
    forge_request_destroy(none);
    forge_request_destroy(named);
}
