/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prepare.h - one launch's path from bytes to a submit body, in one place:
 * parse (request.h) → check against configuration (request_check.h) →
 * render the script and the submit body (render.h).
 *
 * The worker's consume loop, `forge-worker validate`, `render` and `submit`
 * all go through forge_prepare(), so what an operator sees is exactly what
 * the worker would submit.
 */
#ifndef FORGE_PREPARE_H
#define FORGE_PREPARE_H

#include "config/config.h"
#include "request/request.h"
#include "request/series.h"

#include <jansson.h>

/* The largest batch script forge_prepare() renders (too_large past it). */
#define FORGE_SCRIPT_MAX_BYTES (1536 * 1024)

typedef struct forge_prepared {
    forge_request_t *request; /* new */
    char *script;             /* new; NULL for a cancel */
    json_t *payload;          /* new reference; NULL for a cancel */
} forge_prepared_t;

/* Parses, checks and (for a launch) renders. On success *out is new
 * (forge_prepared_destroy). On failure err has the contract's code and the
 * JSON path. */
forge_rc_t forge_prepare(const char *buf, size_t len, const forge_config_t *cfg,
                         const forge_series_catalog_t *catalog,
                         forge_prepared_t **out,
                         forge_error_t *err) FORGE_WARN_UNUSED;

void forge_prepared_destroy(forge_prepared_t *p); /* NULL-safe */

/* The error as the contract's one-line JSON object:
 * {"error": code, "field": path, "message": text} (new, free()). */
char *forge_error_json(const forge_error_t *err);

#endif
