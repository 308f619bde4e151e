/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request_logs.h - a LaunchRequest's `logs` object (issue 29, live logs):
 * {"live": true|false}, whether the launch's output is tailed onto the
 * logs topic while it runs, as request.c's field table reads it. Absent,
 * the fleet's FORGE_LOG_LIVE decides; its `off` always wins (config/config.h:
 * forge_live_logs_wanted). docs/CONTRACT.md section 2 and
 * schemas/launch-request.v1.json say the rules.
 */
#ifndef FORGE_REQUEST_LOGS_H
#define FORGE_REQUEST_LOGS_H

#include "request/field.h"

/* The `logs` object v into the forge_launch_t target's live_logs (a field
 * table's custom handler, field.h): `live` optional, a boolean; any other
 * member refused (the schema's additionalProperties false), unlike the
 * request's other objects. Errors name the JSON path ("$.logs.live must
 * be true or false", "$.logs.tail is not ..."), code schema. */
forge_rc_t forge_request_logs_object(const forge_jv_t *v, void *target,
                                     forge_field_path_t *p, forge_error_t *err);

#endif
