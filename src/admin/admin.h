/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin.h - what the operator commands' library (src/admin/) shares:
 * the outcomes docs/CONTRACT.md section 4 names for `launches`, `replay`,
 * `reconcile` and `logs` (`usage`, `kafka_unavailable`, `group_active`,
 * `not_found`, ...) and
 * an error record carrying one of them with a message for people. The
 * command line maps each to its exit code (worker/command.c); nothing
 * here exits.
 */
#ifndef FORGE_ADMIN_H
#define FORGE_ADMIN_H

#include "base/error.h"

typedef enum forge_admin_code {
    FORGE_RECOVERY_OK = 0,
    FORGE_RECOVERY_USAGE,
    FORGE_RECOVERY_KAFKA_UNAVAILABLE,
    FORGE_RECOVERY_SLURM_UNAVAILABLE,
    FORGE_RECOVERY_GROUP_ACTIVE,
    FORGE_RECOVERY_TOPIC_MISSING,
    FORGE_RECOVERY_OFFSETS_FILE,
    FORGE_RECOVERY_CONFIG,
    FORGE_RECOVERY_NOT_FOUND, /* logs: nothing of the launch on the topic */
    FORGE_RECOVERY__COUNT
} forge_admin_code_t;

typedef struct forge_admin_error {
    forge_admin_code_t code;
    char message[FORGE_ERROR_MESSAGE_MAX];
} forge_admin_error_t;

/* The contract's name of a code ("kafka_unavailable", ...). */
const char *forge_admin_code_name(forge_admin_code_t code);

/* Sets err (NULL-safe) and returns code. */
forge_admin_code_t forge_admin_fail(forge_admin_error_t *err,
                                    forge_admin_code_t code, const char *fmt,
                                    ...) FORGE_PRINTF(3, 4);

#endif
