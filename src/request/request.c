/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.c - parsing and document-level validation of LaunchRequest and
 * CancelRequest (request.h).
 *
 * Each JSON object is described by a table of fields (key, type, where it
 * lands, bounds, the error code of a violation; field.h, whose
 * forge_field_parse_table walks a table). Arrays and maps with rules of
 * their own have small handlers here; checkpoint_signal's are in
 * checkpoint.c, retry's in request_retry.c, logs' in request_logs.c.
 * The rules are the ones of schemas/launch-request.v1.json and
 * schemas/cancel-request.v1.json; tests/schema checks both sides agree on
 * every example.
 */
#include "request/request.h"
#include "request/checkpoint.h"
#include "request/field.h"
#include "request/request_logs.h"
#include "request/request_retry.h"
#include "config/config.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- character patterns --------------------------------------------- */

static const forge_field_pattern_t pat_id64 = {
    "",
    "._-",
    FORGE_FIELD_ALNUM,
    FORGE_FIELD_ALNUM,
    64,
    "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"};
static const forge_field_pattern_t pat_name64 = {
    "",
    "._@-",
    FORGE_FIELD_ALNUM,
    FORGE_FIELD_ALNUM,
    64,
    "^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"};
static const forge_field_pattern_t pat_pool = {
    "",
    "._-",
    FORGE_FIELD_ALNUM,
    FORGE_FIELD_ALNUM,
    32,
    "^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$"};
static const forge_field_pattern_t pat_framework = {"",
                                                    "_-",
                                                    FORGE_FIELD_LOWER |
                                                        FORGE_FIELD_DIGIT,
                                                    FORGE_FIELD_LOWER,
                                                    32,
                                                    "^[a-z][a-z0-9_-]{0,31}$"};
static const forge_field_pattern_t pat_env = {"_",
                                              "_",
                                              FORGE_FIELD_ALNUM,
                                              FORGE_FIELD_LOWER |
                                                  FORGE_FIELD_UPPER,
                                              128,
                                              "^[A-Za-z_][A-Za-z0-9_]{0,127}$"};
static const forge_field_pattern_t pat_label = {
    "",
    "._/-",
    FORGE_FIELD_ALNUM,
    FORGE_FIELD_ALNUM,
    63,
    "^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$"};

#define COUNT(a)  (sizeof(a) / sizeof((a)[0]))
#define AT(field) offsetof(forge_launch_t, field)

/* ---- launch: nested objects ------------------------------------------- */

static forge_rc_t image_path(const forge_jv_t *v, void *target,
                             forge_field_path_t *p, forge_error_t *err)
{
    static const forge_field_t f = {"path",
                                    FORGE_FIELD_STR,
                                    AT(image_path),
                                    true,
                                    NULL,
                                    FORGE_FIELD_NO_CONTROL |
                                        FORGE_FIELD_NO_DOTDOT,
                                    1,
                                    4096,
                                    0,
                                    0,
                                    NULL};
    const char *s = forge_jv_str(v);

    if (s && strpbrk(s, ":@"))
        return forge_field_fail(
            err, FORGE_EOCI_IMAGE_REFUSED, p,
            "looks like a registry reference (':' or '@'); images "
            "must be sqsh/sif files under the runtime root");
    return forge_field_take_string(
        v, &f, &((forge_launch_t *)target)->image_path, p, err);
}

static forge_rc_t image_format(const forge_jv_t *v, void *target,
                               forge_field_path_t *p, forge_error_t *err)
{
    static const char *const names[] = {"sqsh", "sif"};
    const char *s = forge_jv_str(v);

    for (size_t i = 0; s && i < COUNT(names); i++) {
        if (!strcmp(s, names[i])) {
            ((forge_launch_t *)target)->image_format = (forge_image_format_t)i;
            return FORGE_OK;
        }
    }
    return forge_field_fail(err, FORGE_ESCHEMA, p,
                            "must be \"sqsh\" or \"sif\"");
}

static const forge_field_t image_fields[] = {
    {"path", FORGE_FIELD_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, image_path},
    {"format", FORGE_FIELD_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, image_format},
};

static forge_rc_t image_object(const forge_jv_t *v, void *target,
                               forge_field_path_t *p, forge_error_t *err)
{
    return forge_field_parse_table(v, image_fields, COUNT(image_fields), target,
                                   p, err);
}

static const forge_field_t framework_fields[] = {
    {"kind", FORGE_FIELD_STR, AT(framework_kind), true, &pat_framework, 0, 1,
     32, 0, 0, NULL},
    {"runtime_id", FORGE_FIELD_STR, AT(framework_runtime_id), false, &pat_id64,
     0, 1, 64, 0, 0, NULL},
};

static forge_rc_t framework_object(const forge_jv_t *v, void *target,
                                   forge_field_path_t *p, forge_error_t *err)
{
    return forge_field_parse_table(v, framework_fields, COUNT(framework_fields),
                                   target, p, err);
}

static const forge_field_t ingest_fields[] = {
    {"endpoint", FORGE_FIELD_STR, AT(ingest_endpoint), true, NULL,
     FORGE_FIELD_NO_CONTROL | FORGE_FIELD_HTTP_URL, 1, 2048, 0, 0, NULL},
    {"token", FORGE_FIELD_STR, AT(ingest_token), true, NULL,
     FORGE_FIELD_NO_CONTROL, 1, 8192, 0, 0, NULL},
};

static forge_rc_t ingest_object(const forge_jv_t *v, void *target,
                                forge_field_path_t *p, forge_error_t *err)
{
    return forge_field_parse_table(v, ingest_fields, COUNT(ingest_fields),
                                   target, p, err);
}

/* ---- launch: arrays and maps ------------------------------------------ */

static forge_rc_t check_array(const forge_jv_t *v, size_t min, size_t max,
                              forge_field_path_t *p, forge_rc_t code,
                              forge_error_t *err)
{
    if (!forge_jv_is_array(v))
        return forge_field_fail(err, code, p, "must be an array");
    if (forge_jv_size(v) < min || forge_jv_size(v) > max)
        return forge_field_fail(err, code, p, "must have %zu..%zu elements",
                                min, max);
    return FORGE_OK;
}

static forge_rc_t command_array(const forge_jv_t *v, void *target,
                                forge_field_path_t *p, forge_error_t *err)
{
    static const forge_field_t arg = {"", FORGE_FIELD_STR,     0, true, NULL, 0,
                                      0,  FORGE_ARG_MAX_CHARS, 0, 0,    NULL};
    forge_launch_t *l = target;
    forge_rc_t rc;
    size_t n;

    if ((rc = check_array(v, 1, 4096, p, FORGE_ESCHEMA, err)))
        return rc;
    n = forge_jv_size(v);
    l->command = forge_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        size_t old = forge_field_path_index(p, i);
        rc = forge_field_take_string(forge_jv_at(v, i), &arg, &l->command[i], p,
                                     err);
        if (!rc && !strcmp(l->command[i], ":"))
            rc = forge_field_fail(
                err, FORGE_ESCHEMA, p,
                "must not be a lone ':' (srun splits its command "
                "line there)");
        if (!rc && i == 0 &&
            (l->command[0][0] == '\0' || l->command[0][0] == '-' ||
             strchr(l->command[0], '=')))
            rc = forge_field_fail(
                err, FORGE_ESCHEMA, p,
                "(the program) must be non-empty, must not start "
                "with '-' and must not contain '='");
        forge_field_path_pop(p, old);
        if (rc)
            return rc;
        l->command_count = i + 1;
    }
    return FORGE_OK;
}

/* A JSON object of string values into a forge_kv_t array; names checked
 * against name_pattern (a bad name is `code`), values against value_field. */
static forge_rc_t string_map(const forge_jv_t *v, forge_kv_t **out,
                             size_t *count, size_t max,
                             const forge_field_pattern_t *name_pattern,
                             const forge_field_t *value_field, forge_rc_t code,
                             forge_field_path_t *p, forge_error_t *err)
{
    forge_rc_t rc = FORGE_OK;

    if (!forge_jv_is_object(v))
        return forge_field_fail(err, FORGE_ESCHEMA, p, "must be an object");
    if (forge_jv_size(v) > max)
        return forge_field_fail(err, FORGE_ESCHEMA, p, "has too many entries");
    *out = forge_xcalloc(forge_jv_size(v) + 1, sizeof(**out));
    for (size_t i = 0; i < forge_jv_size(v); i++) {
        const forge_jv_t *value = forge_jv_at(v, i);
        const char *key = value->key;
        size_t old = forge_field_path_key(p, key);
        forge_kv_t *kv = &(*out)[*count];
        if (!forge_field_pattern_match(name_pattern, key))
            rc = forge_field_fail(err, code, p, "the name must match %s",
                                  name_pattern->regex);
        else
            rc =
                forge_field_take_string(value, value_field, &kv->value, p, err);
        if (!rc) {
            kv->key = forge_xstrdup(key);
            (*count)++;
        }
        forge_field_path_pop(p, old);
        if (rc)
            return rc;
    }
    return FORGE_OK;
}

/*
 * Names a request may not set: Slurm's and the worker's own, and those the
 * container runtimes take for themselves (apptainer drops HOME and its own
 * APPTAINER_/SINGULARITY_ names, and reads APPEND_PATH/PREPEND_PATH as edits
 * of PATH): a value must reach the job as written or be refused.
 */
static const char *const reserved_env_prefixes[] = {
    "SLURM_", "FORGE_", "APPTAINER", "SINGULARITY", NULL};
static const char *const reserved_env_names[] = {"HOME", "APPEND_PATH",
                                                 "PREPEND_PATH", NULL};

static bool env_name_reserved(const char *name)
{
    for (size_t i = 0; reserved_env_prefixes[i]; i++)
        if (forge_str_starts_with(name, reserved_env_prefixes[i]))
            return true;
    for (size_t i = 0; reserved_env_names[i]; i++)
        if (!strcmp(name, reserved_env_names[i]))
            return true;
    return false;
}

/* env and secret_env alike: names by pat_env and not reserved, values any
 * string without NUL up to FORGE_ARG_MAX_CHARS. */
static forge_rc_t env_like_map(const forge_jv_t *v, forge_kv_t **out,
                               size_t *count, forge_field_path_t *p,
                               forge_error_t *err)
{
    static const forge_field_t value = {
        "", FORGE_FIELD_STR,     0, true, NULL, 0,
        0,  FORGE_ARG_MAX_CHARS, 0, 0,    NULL};
    forge_rc_t rc = string_map(v, out, count, 1024, &pat_env, &value,
                               FORGE_EENV_REFUSED, p, err);

    for (size_t i = 0; !rc && i < *count; i++) {
        const char *name = (*out)[i].key;
        if (env_name_reserved(name)) {
            size_t old = forge_field_path_key(p, name);
            rc = forge_field_fail(
                err, FORGE_EENV_REFUSED, p,
                "is reserved: names starting SLURM_, FORGE_, "
                "APPTAINER*, SINGULARITY*, and HOME, APPEND_PATH, "
                "PREPEND_PATH belong to Slurm, the worker or the "
                "container runtime");
            forge_field_path_pop(p, old);
        }
    }
    return rc;
}

static forge_rc_t env_map(const forge_jv_t *v, void *target,
                          forge_field_path_t *p, forge_error_t *err)
{
    forge_launch_t *l = target;

    return env_like_map(v, &l->env, &l->env_count, p, err);
}

/* Secret values: like env's, and never rendered, logged or published (an
 * error names the field, never the value). */
static forge_rc_t secret_env_map(const forge_jv_t *v, void *target,
                                 forge_field_path_t *p, forge_error_t *err)
{
    forge_launch_t *l = target;

    return env_like_map(v, &l->secret_env, &l->secret_env_count, p, err);
}

static forge_rc_t roles_map(const forge_jv_t *v, void *target,
                            forge_field_path_t *p, forge_error_t *err)
{
    static const forge_field_t value = {
        "", FORGE_FIELD_STR, 0, true, &pat_pool, 0, 1, 32, 0, 0, NULL};
    forge_launch_t *l = target;

    return string_map(v, &l->roles, &l->role_count, 64, &pat_pool, &value,
                      FORGE_ESCHEMA, p, err);
}

static forge_rc_t labels_map(const forge_jv_t *v, void *target,
                             forge_field_path_t *p, forge_error_t *err)
{
    static const forge_field_t value = {
        "", FORGE_FIELD_STR, 0, true, NULL, 0, 0, 256, 0, 0, NULL};
    forge_launch_t *l = target;

    return string_map(v, &l->labels, &l->label_count, 64, &pat_label, &value,
                      FORGE_ESCHEMA, p, err);
}

#define MOUNT_STR                                                              \
    (FORGE_FIELD_NO_CONTROL | FORGE_FIELD_NO_DOTDOT | FORGE_FIELD_MOUNT_CHARS)
#define MT(field) offsetof(forge_mount_t, field)
static const forge_field_t mount_fields[] = {
    {"source", FORGE_FIELD_STR, MT(source), true, NULL, MOUNT_STR, 1, 4096, 0,
     FORGE_EMOUNT_REFUSED, NULL},
    {"target", FORGE_FIELD_STR, MT(target), true, NULL,
     MOUNT_STR | FORGE_FIELD_ABSOLUTE, 1, 4096, 0, FORGE_EMOUNT_REFUSED, NULL},
    {"read_only", FORGE_FIELD_BOOL, MT(read_only), false, NULL, 0, 0, 0, 0, 0,
     NULL},
};

#define PL(field) offsetof(forge_pool_t, field)
static const forge_field_t pool_fields[] = {
    {"name", FORGE_FIELD_STR, PL(name), true, &pat_pool, 0, 1, 32, 0, 0, NULL},
    {"series", FORGE_FIELD_STR, PL(series), true, &pat_id64, 0, 1, 64, 0, 0,
     NULL},
    {"nodes", FORGE_FIELD_INT, PL(nodes), true, NULL, 0, 1, 4096, 0, 0, NULL},
    {"gpus_per_node", FORGE_FIELD_INT, PL(gpus_per_node), false, NULL, 0, 0, 64,
     0, 0, NULL},
    {"tasks_per_node", FORGE_FIELD_INT, PL(tasks_per_node), false, NULL, 0, 1,
     1024, 1, 0, NULL},
    {"cpus_per_task", FORGE_FIELD_INT, PL(cpus_per_task), false, NULL, 0, 1,
     1024, 0, 0, NULL},
    {"mem_per_node_mb", FORGE_FIELD_LONG, PL(mem_per_node_mb), false, NULL, 0,
     1, 16777216, 0, 0, NULL},
};

/* Parses an array of objects of `size` bytes each with `fields`. */
static forge_rc_t object_array(const forge_jv_t *v, size_t min, size_t max,
                               const forge_field_t *fields, size_t nfields,
                               size_t size, void **out, size_t *count,
                               forge_field_path_t *p, forge_error_t *err)
{
    forge_rc_t rc = check_array(v, min, max, p, FORGE_ESCHEMA, err);

    if (rc)
        return rc;
    *out = forge_xcalloc(forge_jv_size(v) + 1, size);
    for (size_t i = 0; i < forge_jv_size(v); i++) {
        size_t old = forge_field_path_index(p, i);
        rc = forge_field_parse_table(forge_jv_at(v, i), fields, nfields,
                                     (char *)*out + i * size, p, err);
        forge_field_path_pop(p, old);
        *count = i + 1; /* the partial element is freed too */
        if (rc)
            return rc;
    }
    return FORGE_OK;
}

static forge_rc_t mounts_array(const forge_jv_t *v, void *target,
                               forge_field_path_t *p, forge_error_t *err)
{
    forge_launch_t *l = target;

    return object_array(v, 0, 64, mount_fields, COUNT(mount_fields),
                        sizeof(forge_mount_t), (void **)&l->mounts,
                        &l->mount_count, p, err);
}

static forge_rc_t pools_array(const forge_jv_t *v, void *target,
                              forge_field_path_t *p, forge_error_t *err)
{
    forge_launch_t *l = target;
    forge_rc_t rc = object_array(v, 1, FORGE_POOLS_MAX, pool_fields,
                                 COUNT(pool_fields), sizeof(forge_pool_t),
                                 (void **)&l->pools, &l->pool_count, p, err);

    for (size_t i = 0; !rc && i < l->pool_count; i++) {
        for (size_t j = 0; j < i; j++) {
            if (!strcmp(l->pools[i].name, l->pools[j].name)) {
                size_t old = forge_field_path_index(p, i);
                forge_field_path_key(p, "name");
                rc = forge_field_fail(err, FORGE_ESCHEMA, p,
                                      "pool names must be unique%s", "");
                forge_field_path_pop(p, old);
                break;
            }
        }
    }
    return rc;
}

/* ---- the two requests ------------------------------------------------- */

static const forge_field_t launch_fields[] = {
    {"launch_id", FORGE_FIELD_STR, AT(launch_id), true, &pat_id64, 0, 1, 64, 0,
     0, NULL},
    {"attempt", FORGE_FIELD_INT, AT(attempt), false, NULL, 0, 1, 1000000, 1, 0,
     NULL},
    {"project", FORGE_FIELD_STR, AT(project), false, &pat_name64, 0, 1, 64, 0,
     0, NULL},
    {"owner", FORGE_FIELD_STR, AT(owner), false, &pat_name64, 0, 1, 64, 0, 0,
     NULL},
    {"name", FORGE_FIELD_STR, AT(name), false, &pat_name64, 0, 1, 64, 0, 0,
     NULL},
    {"framework", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0,
     framework_object},
    {"image", FORGE_FIELD_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, image_object},
    {"command", FORGE_FIELD_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0,
     command_array},
    {"workdir", FORGE_FIELD_STR, AT(workdir), false, NULL,
     FORGE_FIELD_NO_CONTROL | FORGE_FIELD_ABSOLUTE, 1, 4096, 0, 0, NULL},
    {"env", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, env_map},
    {"secret_env", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0,
     secret_env_map},
    {"tenant", FORGE_FIELD_STR, AT(tenant), false, &pat_id64, 0, 1, 64, 0, 0,
     NULL},
    {"mounts", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, mounts_array},
    {"pools", FORGE_FIELD_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, pools_array},
    {"roles", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, roles_map},
    {"time_limit_minutes", FORGE_FIELD_INT, AT(time_limit_minutes), false, NULL,
     0, 1, 525600, 0, 0, NULL},
    {"partition", FORGE_FIELD_STR, AT(partition), false, &pat_name64, 0, 1, 64,
     0, 0, NULL},
    {"account", FORGE_FIELD_STR, AT(account), false, &pat_name64, 0, 1, 64, 0,
     0, NULL},
    {"qos", FORGE_FIELD_STR, AT(qos), false, &pat_name64, 0, 1, 64, 0, 0, NULL},
    {"ingest", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0,
     ingest_object},
    {"retry", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0,
     forge_request_retry_object},
    {"logs", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0,
     forge_request_logs_object},
    {"labels", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, labels_map},
    {"checkpoint_signal", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0,
     forge_checkpoint_object},
};

#define CA(field) offsetof(forge_cancel_t, field)
static const forge_field_t cancel_fields[] = {
    {"launch_id", FORGE_FIELD_STR, CA(launch_id), true, &pat_id64, 0, 1, 64, 0,
     0, NULL},
    {"attempt", FORGE_FIELD_INT, CA(attempt), false, NULL, 0, 1, 1000000, 0, 0,
     NULL},
    {"reason", FORGE_FIELD_STR, CA(reason), false, NULL, FORGE_FIELD_NO_CONTROL,
     0, 256, 0, 0, NULL},
};

/* A name set in both env and secret_env: which value would win is not
 * the request's to leave open. */
static forge_rc_t env_names_unique(const forge_launch_t *l,
                                   forge_field_path_t *p, forge_error_t *err)
{
    for (size_t i = 0; i < l->secret_env_count; i++) {
        for (size_t j = 0; j < l->env_count; j++) {
            if (strcmp(l->secret_env[i].key, l->env[j].key) != 0)
                continue;
            size_t old = forge_field_path_key(p, "secret_env");
            forge_field_path_key(p, l->secret_env[i].key);
            forge_rc_t rc =
                forge_field_fail(err, FORGE_EENV_REFUSED, p,
                                 "is also in env: a name goes in env or in "
                                 "secret_env, not both");
            forge_field_path_pop(p, old);
            return rc;
        }
    }
    return FORGE_OK;
}

/* Checks that run across fields once every field parsed. */
static forge_rc_t launch_cross_checks(const forge_launch_t *l,
                                      forge_field_path_t *p, forge_error_t *err)
{
    for (size_t i = 0; i < l->role_count; i++) {
        if (!forge_launch_role_pool(l, l->roles[i].key)) {
            size_t old = forge_field_path_key(p, "roles");
            forge_field_path_key(p, l->roles[i].key);
            forge_rc_t rc =
                forge_field_fail(err, FORGE_ESCHEMA, p,
                                 "names a pool the request does not have");
            forge_field_path_pop(p, old);
            return rc;
        }
    }
    return env_names_unique(l, p, err);
}

static forge_rc_t parse_body(forge_request_t *req, const forge_jv_t *body,
                             forge_field_path_t *p, forge_error_t *err)
{
    forge_rc_t rc;

    if (req->kind == FORGE_REQUEST_CANCEL)
        return forge_field_parse_table(
            body, cancel_fields, COUNT(cancel_fields), &req->cancel, p, err);
    req->launch.live_logs = FORGE_LIVE_LOGS_UNSET; /* unless logs.live */
    rc = forge_field_parse_table(body, launch_fields, COUNT(launch_fields),
                                 &req->launch, p, err);
    return rc ? rc : launch_cross_checks(&req->launch, p, err);
}

/* ---- envelopes -------------------------------------------------------- */

static const struct {
    const char *type; /* CloudEvent type */
    const char *kind; /* bare "kind" */
    forge_request_kind_t request_kind;
} request_kinds[] = {
    {"forge.launch.requested", "launch", FORGE_REQUEST_LAUNCH},
    {"forge.launch.cancel_requested", "cancel", FORGE_REQUEST_CANCEL},
};

/* Finds the request's kind and body (borrowed from root). */
static forge_rc_t unwrap(forge_request_t *req, const forge_jv_t *root,
                         const forge_jv_t **body, forge_field_path_t *p,
                         forge_error_t *err)
{
    const forge_jv_t *spec = forge_jv_get(root, "specversion");
    const char *kind = forge_jv_str(forge_jv_get(root, "kind"));
    const char *type = forge_jv_str(forge_jv_get(root, "type"));
    size_t i;

    req->cloudevent = spec != NULL;
    for (i = 0; i < COUNT(request_kinds); i++)
        if (spec ? type && !strcmp(type, request_kinds[i].type)
                 : kind && !strcmp(kind, request_kinds[i].kind))
            break;
    if (!spec && i == COUNT(request_kinds)) {
        forge_field_path_key(p, "kind");
        return forge_field_fail(err, FORGE_ESCHEMA, p,
                                "must be \"launch\" or \"cancel\" (or send a "
                                "CloudEvent)");
    }
    if (spec && !forge_jv_is_string(spec)) {
        forge_field_path_key(p, "specversion");
        return forge_field_fail(err, FORGE_ESCHEMA, p, "must be \"1.0\"");
    }
    if (spec && strcmp(forge_jv_str(spec), "1.0") != 0) {
        forge_field_path_key(p, "specversion");
        return forge_field_fail(err, FORGE_ESCHEMA, p, "must be \"1.0\"");
    }
    if (spec && i == COUNT(request_kinds)) {
        forge_field_path_key(p, "type");
        return forge_field_fail(err, FORGE_ESCHEMA, p,
                                "must be forge.launch.requested or "
                                "forge.launch.cancel_requested");
    }
    req->kind = request_kinds[i].request_kind;
    *body = root;
    for (size_t k = 0; spec && k < 2; k++) {
        static const char *const required[] = {"id", "source"};
        const char *v = forge_jv_str(forge_jv_get(root, required[k]));
        if (!v || !*v) {
            forge_field_path_key(p, required[k]);
            return forge_field_fail(
                err, FORGE_ESCHEMA, p,
                "is required in a CloudEvent (non-empty string)");
        }
    }
    if (spec) {
        req->event_id = forge_xstrdup(forge_jv_str(forge_jv_get(root, "id")));
        *body = forge_jv_get(root, "data");
        forge_field_path_key(p, "data");
        kind = forge_jv_str(forge_jv_get(*body, "kind"));
        if (kind && strcmp(kind, request_kinds[i].kind) != 0) {
            forge_field_path_key(p, "kind");
            return forge_field_fail(err, FORGE_ESCHEMA, p,
                                    "disagrees with the CloudEvent type");
        }
    }
    return FORGE_OK;
}

static forge_jdoc_t *load_json(const char *buf, size_t len, forge_error_t *err)
{
    forge_jdoc_t *doc;

    if (len > FORGE_REQUEST_MAX_BYTES) {
        forge_error_set(err, FORGE_ETOO_LARGE, "$",
                        "the request is %zu bytes; the limit is %d", len,
                        FORGE_REQUEST_MAX_BYTES);
        return NULL;
    }
    if (forge_jdoc_parse(buf, len, &doc, err))
        return NULL;
    if (!forge_jv_is_object(forge_jdoc_root(doc))) {
        forge_error_set(err, FORGE_ESCHEMA, "$",
                        "a request must be a JSON object");
        forge_jdoc_free(doc);
        return NULL;
    }
    return doc;
}

forge_rc_t forge_request_parse_keep(const char *buf, size_t len,
                                    forge_request_t **out, forge_jdoc_t **doc,
                                    forge_error_t *err)
{
    forge_request_t *req = NULL;
    forge_field_path_t path = {"$", 1};
    forge_jdoc_t *parsed;
    const forge_jv_t *body = NULL;
    forge_rc_t rc = FORGE_ESCHEMA;

    *out = NULL;
    *doc = NULL;
    if (!(parsed = load_json(buf, len, err)))
        return err && err->code ? err->code : FORGE_EINVALID_JSON;
    req = forge_xcalloc(1, sizeof(*req));
    if ((rc = unwrap(req, forge_jdoc_root(parsed), &body, &path, err)))
        goto out;
    if ((rc = parse_body(req, body, &path, err)))
        goto out;
    *out = req;
    req = NULL;
    *doc = parsed;
    parsed = NULL;
out:
    forge_request_destroy(req);
    forge_jdoc_free(parsed);
    return rc;
}

forge_rc_t forge_request_parse(const char *buf, size_t len,
                               forge_request_t **out, forge_error_t *err)
{
    forge_jdoc_t *doc = NULL;
    forge_rc_t rc = forge_request_parse_keep(buf, len, out, &doc, err);

    forge_jdoc_free(doc);
    return rc;
}

char *forge_request_salvage_id(const char *buf, size_t len, int *attempt)
{
    forge_jdoc_t *doc = load_json(buf, len, NULL);
    const forge_jv_t *root, *body, *a;
    const char *id;
    char *found = NULL;

    *attempt = 1;
    if (!doc)
        return NULL;
    root = forge_jdoc_root(doc);
    body =
        forge_jv_get(root, "specversion") ? forge_jv_get(root, "data") : root;
    id = forge_jv_str(forge_jv_get(body, "launch_id"));
    a = forge_jv_get(body, "attempt");
    if (!id || !forge_field_pattern_match(&pat_id64, id))
        goto out;
    if (a) { /* named, it must be one: "2" or 2.5 names no attempt */
        if (!forge_jv_is_integer(a) || forge_jv_int(a) < 1 ||
            forge_jv_int(a) > 1000000)
            goto out;
        *attempt = (int)forge_jv_int(a);
    }
    found = forge_xstrdup(id);
out:
    forge_jdoc_free(doc);
    return found;
}

/* ---- accessors and cleanup -------------------------------------------- */

const forge_pool_t *forge_launch_role_pool(const forge_launch_t *launch,
                                           const char *role)
{
    for (size_t i = 0; i < launch->role_count; i++) {
        if (strcmp(launch->roles[i].key, role) != 0)
            continue;
        for (size_t j = 0; j < launch->pool_count; j++)
            if (!strcmp(launch->pools[j].name, launch->roles[i].value))
                return &launch->pools[j];
    }
    return NULL;
}

const char *forge_image_format_name(forge_image_format_t f)
{
    return f == FORGE_IMAGE_SIF ? "sif" : "sqsh";
}

static void free_kvs(forge_kv_t *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

static void launch_clear(forge_launch_t *l)
{
    char **owned[] = {&l->launch_id,
                      &l->project,
                      &l->owner,
                      &l->name,
                      &l->framework_kind,
                      &l->framework_runtime_id,
                      &l->image_path,
                      &l->workdir,
                      &l->partition,
                      &l->account,
                      &l->qos,
                      &l->ingest_endpoint,
                      &l->ingest_token,
                      &l->tenant};

    for (size_t i = 0; i < COUNT(owned); i++)
        free(*owned[i]);
    for (size_t i = 0; l->command && l->command[i]; i++)
        free(l->command[i]);
    free(l->command);
    free_kvs(l->env, l->env_count);
    free_kvs(l->secret_env, l->secret_env_count);
    free_kvs(l->roles, l->role_count);
    free_kvs(l->labels, l->label_count);
    for (size_t i = 0; i < l->mount_count; i++) {
        free(l->mounts[i].source);
        free(l->mounts[i].target);
    }
    free(l->mounts);
    for (size_t i = 0; i < l->pool_count; i++) {
        free(l->pools[i].name);
        free(l->pools[i].series);
    }
    free(l->pools);
}

void forge_request_each_secret(const forge_request_t *req,
                               void (*fn)(void *ctx, const char *secret),
                               void *ctx)
{
    const forge_launch_t *l;

    if (!req || req->kind != FORGE_REQUEST_LAUNCH)
        return;
    l = &req->launch;
    if (l->ingest_token)
        fn(ctx, l->ingest_token);
    for (size_t i = 0; l->secret_env && i < l->secret_env_count; i++)
        if (l->secret_env[i].value)
            fn(ctx, l->secret_env[i].value);
}

void forge_request_destroy(forge_request_t *req)
{
    if (!req)
        return;
    launch_clear(&req->launch);
    free(req->cancel.launch_id);
    free(req->cancel.reason);
    free(req->event_id);
    free(req);
}
