/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tenants.c - the site's tenants file (tenants.h): parsing with every rule
 * of schemas/tenants.v1.json, and which tenant a launch runs as.
 */
#include "request/tenants.h"
#include "json/document.h"
#include "text/text.h"
#include "base/util.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TENANTS_MAX_BYTES (1024 * 1024)
#define ID_MAX            0x7fffffffLL

static bool ascii_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

/* ^[A-Za-z_][A-Za-z0-9_.-]{0,31}$, and never root: a job never runs as root. */
static bool user_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 32 || !strcmp(s, "root") ||
        !(ascii_alnum(s[0]) || s[0] == '_') || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!ascii_alnum(s[i]) && !strchr("_.-", s[i]))
            return false;
    return true;
}

/* uid and gid 1..2^31-1: 0 would hand a launch's files to root's group. */
static bool id_ok(json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 1 &&
           json_integer_value(v) <= ID_MAX;
}

static forge_rc_t parse_entry(const char *name, json_t *v, forge_tenant_t *t,
                              forge_error_t *err)
{
    json_t *user = json_object_get(v, "slurm_user");
    json_t *uid = json_object_get(v, "uid"), *gid = json_object_get(v, "gid");

    /* the request's own rule for `tenant` */
    if (!forge_text_is_name(name, "._-", 64))
        return forge_error_set(err, FORGE_ESCHEMA, "$.tenants",
                               "tenant \"%s\": a name must match "
                               "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
                               name);
    if (!json_is_object(v) || !json_is_string(user) ||
        !user_name_ok(json_string_value(user)))
        return forge_error_set(err, FORGE_ESCHEMA, "$.tenants",
                               "tenant %s: slurm_user must be a user name "
                               "(^[A-Za-z_][A-Za-z0-9_.-]{0,31}$), not root",
                               name);
    if (!id_ok(uid) || !id_ok(gid))
        return forge_error_set(err, FORGE_ESCHEMA, "$.tenants",
                               "tenant %s: uid and gid must be integers "
                               "1..2147483647 (the user's ids on the shared "
                               "storage; never 0)",
                               name);
    t->name = forge_xstrdup(name);
    t->slurm_user = forge_xstrdup(json_string_value(user));
    t->uid = (uid_t)json_integer_value(uid);
    t->gid = (gid_t)json_integer_value(gid);
    return FORGE_OK;
}

static const forge_tenant_t *find(const forge_tenants_t *t, const char *name)
{
    for (size_t i = 0; t && i < t->count; i++)
        if (!strcmp(t->items[i].name, name))
            return &t->items[i];
    return NULL;
}

static forge_rc_t parse_root(json_t *root, forge_tenants_t *t,
                             forge_error_t *err)
{
    json_t *items = json_object_get(root, "tenants"), *v;
    json_t *fallback = json_object_get(root, "default_tenant");
    const char *name;
    forge_rc_t rc;

    if (!json_is_object(items) || json_object_size(items) == 0)
        return forge_error_set(err, FORGE_ESCHEMA, "$.tenants",
                               "the site file needs a non-empty \"tenants\" "
                               "object");
    t->items = forge_xcalloc(json_object_size(items), sizeof(*t->items));
    json_object_foreach(items, name, v)
    {
        if ((rc = parse_entry(name, v, &t->items[t->count], err)))
            return rc;
        t->count++;
    }
    if (fallback && !json_is_null(fallback)) {
        if (!json_is_string(fallback) ||
            !(t->fallback = find(t, json_string_value(fallback))))
            return forge_error_set(err, FORGE_ESCHEMA, "$.default_tenant",
                                   "default_tenant must name one of the "
                                   "tenants");
    }
    return FORGE_OK;
}

forge_rc_t forge_tenants_parse(const char *buf, size_t len,
                               forge_tenants_t **out, forge_error_t *err)
{
    forge_tenants_t *t;
    json_t *root;
    forge_rc_t rc;

    *out = NULL;
    if ((rc = forge_document_parse(buf, len, 0, &root, err)))
        return rc;
    t = forge_xcalloc(1, sizeof(*t));
    rc = json_is_object(root)
             ? parse_root(root, t, err)
             : forge_error_set(err, FORGE_ESCHEMA, "$", "not a JSON object");
    json_decref(root);
    if (rc) {
        forge_tenants_destroy(t);
        return rc;
    }
    *out = t;
    return FORGE_OK;
}

static forge_rc_t parse_into(const char *buf, size_t len, void *out,
                             forge_error_t *err)
{
    return forge_tenants_parse(buf, len, out, err);
}

forge_rc_t forge_tenants_load(const char *path, forge_tenants_t **out,
                              forge_error_t *err)
{
    *out = NULL;
    return forge_document_load(path, TENANTS_MAX_BYTES, "FORGE_TENANTS_FILE",
                               "the tenants file", FORGE_ECONFIG, parse_into,
                               out, err);
}

static forge_rc_t tenant_named(const forge_tenants_t *tenants,
                               const char *named, const char *path,
                               const forge_tenant_t **out, forge_error_t *err)
{
    *out = NULL;
    if (!tenants && !named)
        return FORGE_OK;
    if (!tenants)
        return forge_error_set(err, FORGE_ETENANT_UNKNOWN, path,
                               "%s names tenant \"%s\", but this fleet has "
                               "no tenants (FORGE_TENANTS_FILE)",
                               path, named);
    *out = named ? find(tenants, named) : tenants->fallback;
    if (*out)
        return FORGE_OK;
    if (named)
        return forge_error_set(err, FORGE_ETENANT_UNKNOWN, path,
                               "%s names tenant \"%s\", which this fleet "
                               "does not know",
                               path, named);
    return forge_error_set(err, FORGE_ETENANT_UNKNOWN, path,
                           "%s is required: this fleet has no default_tenant",
                           path);
}

forge_rc_t forge_tenant_named(const forge_tenants_t *tenants, const char *named,
                              const forge_tenant_t **out, forge_error_t *err)
{
    return tenant_named(tenants, named, "$.tenant", out, err);
}

forge_rc_t forge_tenant_of(const forge_tenants_t *tenants,
                           const forge_request_t *req,
                           const forge_tenant_t **out, forge_error_t *err)
{
    *out = NULL;
    if (req->kind != FORGE_REQUEST_LAUNCH)
        return FORGE_OK;
    return tenant_named(tenants, req->launch.tenant,
                        req->cloudevent ? "$.data.tenant" : "$.tenant", out,
                        err);
}

void forge_tenants_destroy(forge_tenants_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->count; i++) {
        free(t->items[i].name);
        free(t->items[i].slurm_user);
    }
    free(t->items);
    free(t);
}
