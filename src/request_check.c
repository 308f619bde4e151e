/*
 * request_check.c - configuration-dependent rules of a LaunchRequest
 * (request_check.h). One function per rule, run in document order so the
 * first error reported is the first one a reader meets.
 */
#include "request_check.h"
#include "paths.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static forge_rc_t refuse(forge_error_t *err, forge_rc_t code,
                         const forge_request_t *req, const char *rel,
                         const char *fmt, ...) FORGE_PRINTF(5, 6);

/* Records "<path> <what>" with the path made absolute for the envelope. */
static forge_rc_t refuse(forge_error_t *err, forge_rc_t code,
                         const forge_request_t *req, const char *rel,
                         const char *fmt, ...)
{
    char path[FORGE_ERROR_FIELD_MAX];
    char what[FORGE_ERROR_MESSAGE_MAX];
    va_list ap;

    snprintf(path, sizeof(path), "%s%s", req->cloudevent ? "$.data" : "$", rel);
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return forge_error_set(err, code, path, "%s %s", path, what);
}

static const forge_image_format_t profile_format[] = {
    [FORGE_PROFILE_ENROOT_PYXIS] = FORGE_IMAGE_SQSH,
    [FORGE_PROFILE_APPTAINER] = FORGE_IMAGE_SIF,
};

static forge_rc_t check_image(const forge_request_t *req,
                              const forge_config_t *cfg, forge_error_t *err)
{
    const forge_launch_t *l = &req->launch;
    forge_image_format_t want = profile_format[cfg->runtime_profile];
    char resolved[PATH_MAX], root[PATH_MAX];
    char *path;
    struct stat st;
    forge_rc_t rc = FORGE_OK;

    if (l->image_format != want)
        return refuse(err, FORGE_EIMAGE_FORMAT, req, ".image.format",
                      "must be \"%s\" for this fleet's runtime profile",
                      forge_image_format_name(want));
    path = forge_path_image(cfg, l);
    if (!realpath(cfg->runtime_root, root) || !realpath(path, resolved) ||
        stat(resolved, &st) != 0 || !S_ISREG(st.st_mode))
        rc = refuse(err, FORGE_EIMAGE_MISSING, req, ".image.path",
                    "names no image file under the runtime root (%s)",
                    cfg->runtime_root);
    else if (!forge_path_is_under(resolved, root))
        rc = refuse(err, FORGE_EIMAGE_MISSING, req, ".image.path",
                    "leads outside the runtime root (%s)", cfg->runtime_root);
    free(path);
    return rc;
}

static bool mount_allowed(const forge_config_t *cfg, const char *source)
{
    if (forge_path_is_under(source, cfg->storage_root))
        return true;
    for (size_t i = 0; i < cfg->mount_allow_count; i++)
        if (forge_path_is_under(source, cfg->mount_allow[i]))
            return true;
    return false;
}

static forge_rc_t check_mounts(const forge_request_t *req,
                               const forge_config_t *cfg, forge_error_t *err)
{
    const forge_launch_t *l = &req->launch;

    for (size_t i = 0; i < l->mount_count; i++) {
        char *source = forge_path_mount_source(cfg, &l->mounts[i]);
        bool ok = mount_allowed(cfg, source);
        free(source);
        if (!ok) {
            char rel[64];
            snprintf(rel, sizeof(rel), ".mounts[%zu].source", i);
            return refuse(err, FORGE_EMOUNT_REFUSED, req, rel,
                          "is outside the storage root and "
                          "FORGE_MOUNT_ALLOW");
        }
    }
    return FORGE_OK;
}

static forge_rc_t check_series(const forge_request_t *req,
                               const forge_series_catalog_t *catalog,
                               forge_error_t *err)
{
    const forge_launch_t *l = &req->launch;

    for (size_t i = 0; i < l->pool_count; i++) {
        const forge_pool_t *pool = &l->pools[i];
        const forge_series_t *s = forge_series_find(catalog, pool->series);
        char rel[64];

        snprintf(rel, sizeof(rel), ".pools[%zu].series", i);
        if (!s)
            return refuse(err, FORGE_ESERIES_UNKNOWN, req, rel,
                          "names a GPU series this fleet does not know "
                          "(\"%s\")",
                          pool->series);
        if (!s->constraint)
            return refuse(err, FORGE_ESERIES_UNCONSTRAINED, req, rel,
                          "names series \"%s\", which has no Slurm "
                          "constraint: refused rather than run on "
                          "arbitrary nodes",
                          pool->series);
        if (s->gpus_per_node && pool->gpus_per_node > s->gpus_per_node) {
            snprintf(rel, sizeof(rel), ".pools[%zu].gpus_per_node", i);
            return refuse(err, FORGE_ESCHEMA, req, rel,
                          "asks more GPUs than a node of series %s has",
                          pool->series);
        }
    }
    return FORGE_OK;
}

forge_rc_t forge_request_check(const forge_request_t *req,
                               const forge_config_t *cfg,
                               const forge_series_catalog_t *catalog,
                               forge_error_t *err)
{
    forge_rc_t rc;

    if (req->kind != FORGE_REQUEST_LAUNCH)
        return FORGE_OK;
    if ((rc = check_image(req, cfg, err)))
        return rc;
    if ((rc = check_mounts(req, cfg, err)))
        return rc;
    return check_series(req, catalog, err);
}
