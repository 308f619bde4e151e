/* SPDX-License-Identifier: Apache-2.0 */
/*
 * error.c - names of forge-worker's error codes and the first-error-wins
 * recorder behind forge_error_set().
 */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const rc_names[FORGE_RC__COUNT] = {
    [FORGE_OK] = "ok",
    [FORGE_ENOMEM] = "out_of_memory",
    [FORGE_EINVAL] = "invalid_argument",
    [FORGE_ECONFIG] = "config",
    [FORGE_EIO] = "io",
    [FORGE_EINVALID_JSON] = "invalid_json",
    [FORGE_ESCHEMA] = "schema",
    [FORGE_ETOO_LARGE] = "too_large",
    [FORGE_EIMAGE_FORMAT] = "image_format",
    [FORGE_EIMAGE_MISSING] = "image_missing",
    [FORGE_EOCI_IMAGE_REFUSED] = "oci_image_refused",
    [FORGE_ESERIES_UNKNOWN] = "series_unknown",
    [FORGE_ESERIES_UNCONSTRAINED] = "series_unconstrained",
    [FORGE_EMOUNT_REFUSED] = "mount_refused",
    [FORGE_EENV_REFUSED] = "env_refused",
    [FORGE_ETENANT_UNKNOWN] = "tenant_unknown",
    [FORGE_EUNSAFE_PATH] = "unsafe_storage",
    [FORGE_EARCHIVE] = "archive_failed",
    [FORGE_EIMAGE_INVALID] = "image_invalid",
};

const char *forge_rc_name(forge_rc_t rc)
{
    if ((int)rc < 0 || rc >= FORGE_RC__COUNT || !rc_names[rc])
        return "unknown";
    return rc_names[rc];
}

forge_rc_t forge_error_set(forge_error_t *err, forge_rc_t code,
                           const char *field, const char *fmt, ...)
{
    va_list ap;

    if (!err || err->code != FORGE_OK)
        return code;
    err->code = code;
    snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    return code;
}

void forge_error_clear(forge_error_t *err)
{
    if (err)
        memset(err, 0, sizeof(*err));
}
