/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redact.h - replacing secrets in text by one marker, once: the log's
 * lines (log.h) and an archive's tail (archive.h) both find where
 * secrets stand as runs [start, end) of their text, then write the text
 * with each run replaced by FORGE_REDACTED, overlapping runs as one. What
 * counts as a secret is theirs; how a run is found and written is here.
 */
#ifndef FORGE_REDACT_H
#define FORGE_REDACT_H

#include "base/buf.h"

#include <stddef.h>

#define FORGE_REDACTED "[REDACTED]"

/* A run of text to replace: [start, end). */
typedef struct forge_redact_run {
    size_t start, end;
} forge_redact_run_t;

/* Runs, in any order, overlapping or not. Start as {NULL, 0}; free what
 * they hold with forge_redact_clear. */
typedef struct forge_redact_runs {
    forge_redact_run_t *at;
    size_t count;
} forge_redact_runs_t;

void forge_redact_add(forge_redact_runs_t *r, size_t start, size_t end);

/* Adds every occurrence (overlapping ones too) of secret[0..slen) in
 * text[0..n); nothing for an empty secret. */
void forge_redact_find(forge_redact_runs_t *r, const char *text, size_t n,
                       const char *secret, size_t slen);

/* How the text between runs is written (e.g. cleaned to valid UTF-8). */
typedef void (*forge_redact_put_t)(forge_buf_t *out, const char *text,
                                   size_t n);

/* Appends text[at..n) to out with each run replaced by FORGE_REDACTED
 * (runs sorted first; overlapping ones merged; a run that ends before at
 * is skipped, one that starts before it is cut there). The text between
 * runs goes through put, or as it is when put is NULL. */
void forge_redact_write(forge_buf_t *out, const char *text, size_t n, size_t at,
                        forge_redact_runs_t *r, forge_redact_put_t put);

void forge_redact_clear(forge_redact_runs_t *r); /* leaves r empty */

#endif
