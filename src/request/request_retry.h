/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request_retry.h - a LaunchRequest's `retry` object (issue 26): its
 * override of the fleet's retry policy (retry/retry.h), key by key, as
 * request.c's field table reads it. docs/CONTRACT.md section 2 and
 * schemas/launch-request.v1.json say the rules.
 */
#ifndef FORGE_REQUEST_RETRY_H
#define FORGE_REQUEST_RETRY_H

#include "request/field.h"

/* The `retry` object v into the forge_launch_t target's retry (a field
 * table's custom handler, field.h): every key optional, each one set
 * recorded in retry.set. Errors name the JSON path ("$.retry.on[1] ..."),
 * code schema. */
forge_rc_t forge_request_retry_object(const forge_jv_t *v, void *target,
                                      forge_field_path_t *p,
                                      forge_error_t *err);

#endif
