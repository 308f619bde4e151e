/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin.c - the operator commands' outcomes' names (admin.h, CONTRACT §4).
 */
#include "admin/admin.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const names[FORGE_RECOVERY__COUNT] = {
    [FORGE_RECOVERY_OK] = "ok",
    [FORGE_RECOVERY_USAGE] = "usage",
    [FORGE_RECOVERY_KAFKA_UNAVAILABLE] = "kafka_unavailable",
    [FORGE_RECOVERY_SLURM_UNAVAILABLE] = "slurm_unavailable",
    [FORGE_RECOVERY_GROUP_ACTIVE] = "group_active",
    [FORGE_RECOVERY_TOPIC_MISSING] = "topic_missing",
    [FORGE_RECOVERY_OFFSETS_FILE] = "offsets_file",
    [FORGE_RECOVERY_CONFIG] = "config",
    [FORGE_RECOVERY_NOT_FOUND] = "not_found",
};

const char *forge_admin_code_name(forge_admin_code_t code)
{
    return code < FORGE_RECOVERY__COUNT ? names[code] : "internal";
}

forge_admin_code_t forge_admin_fail(forge_admin_error_t *err,
                                    forge_admin_code_t code, const char *fmt,
                                    ...)
{
    va_list ap;

    if (!err)
        return code;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    return code;
}
