/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - forge-worker's log lines: JSON lines (default) or text, four
 * levels, and redaction of secrets.
 *
 * The log is process-wide, like syslog: one configuration, one output fd,
 * one mutex so lines from the consume loop and the worker threads never
 * interleave (each line is one write(2)).
 *
 * Redaction happens on the raw text, before any escaping or truncation, so
 * no encoding of a secret can slip through. What is redacted:
 *   - every secret registered with forge_secret_add() (secrets.h: JWTs read
 *     from a file, the ingest tokens and secret_env values of the launches
 *     the worker holds), overlapping matches merged;
 *   - anything shaped like a JWT (eyJ... . ... . ...), registered or not;
 *   - the whole value of a field whose key names a secret (token, secret,
 *     password, authorization, jwt, credential).
 */
#ifndef FORGE_LOG_H
#define FORGE_LOG_H

#include "config/config.h"
#include "base/error.h"
#include "secrets/redact.h" /* FORGE_REDACTED */

#include <stdbool.h>
#include <stddef.h>

/* A key/value pair added to a line; both borrowed for the call. */
typedef struct forge_log_field {
    const char *key;
    const char *value;
} forge_log_field_t;

/*
 * Sets level, format, output fd (2 by default) and the worker id written on
 * every line (copied; NULL for none). Safe to call again.
 */
void forge_log_configure(forge_log_level_t level, forge_log_format_t format,
                         int fd, const char *worker_id);

bool forge_log_enabled(forge_log_level_t level);

/* Writes one line: a printf-style message plus fields. */
void forge_log_fields(forge_log_level_t level, const forge_log_field_t *fields,
                      size_t nfields, const char *fmt, ...) FORGE_PRINTF(4, 5);

#define forge_log_debug(...)                                                   \
    forge_log_fields(FORGE_LOG_DEBUG, NULL, 0, __VA_ARGS__)
#define forge_log_info(...)                                                    \
    forge_log_fields(FORGE_LOG_INFO, NULL, 0, __VA_ARGS__)
#define forge_log_warn(...)                                                    \
    forge_log_fields(FORGE_LOG_WARN, NULL, 0, __VA_ARGS__)
#define forge_log_error(...)                                                   \
    forge_log_fields(FORGE_LOG_ERROR, NULL, 0, __VA_ARGS__)

/*
 * Redacts text the same way log lines are redacted: returns a new string
 * (caller frees). For anything else that leaves the process with
 * free-form text in it (error messages printed by commands).
 */
char *forge_log_redact(const char *text);

/* Back to defaults: info, JSON, fd 2, no worker id, no secrets. Tests. */
void forge_log_reset(void);

#endif
