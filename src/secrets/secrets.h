/* SPDX-License-Identifier: Apache-2.0 */
/*
 * secrets.h - the process's registry of secrets that no text it writes may
 * show: JWTs read from a file (slurm/auth.c), the ingest token and
 * secret_env values of every launch the worker holds (record/owner.c).
 * Log lines (log.h) and archive tails (archive.h) ask it where registered
 * secrets stand in their text, as redaction runs (redact.h).
 *
 * A worker holding 100,000 launches registers as many secrets, so nothing
 * here walks the list: add and remove look a secret up by its whole text,
 * and a search looks up, at each position of the text, the secrets whose
 * first bytes hash as the bytes there (one index per window length some
 * secret has, up to 32 bytes). An archive tail is a window cut out of a
 * longer log, so a secret may stand cut at either edge: two more indexes,
 * by a secret's first and last FORGE_SECRET_PART_MIN + 1 bytes, find the
 * secrets that the window's first bytes end or its last bytes begin.
 *
 * Secrets are counted: two holders of one value (two launches with the same
 * token) each add and remove it, and it stays registered until the last one
 * lets go. The copy kept is wiped when it goes.
 *
 * Threads: one mutex guards the registry; each call takes it once, so a
 * search sees a secret either wholly registered or not at all.
 */
#ifndef FORGE_SECRETS_H
#define FORGE_SECRETS_H

#include "base/error.h"
#include "secrets/redact.h"

#include <stdbool.h>
#include <stddef.h>

/* Shorter secrets are refused: redacting them would garble every text. */
#define FORGE_SECRET_MIN_LEN 4

/* A cut through a secret at a window's edge no longer than this is left
 * alone: a few characters of a token say nothing, and such short matches
 * are mostly chance. */
#define FORGE_SECRET_PART_MIN 4

/* Registers a secret (copied). FORGE_EINVAL for NULL or one shorter than
 * FORGE_SECRET_MIN_LEN. Counted: a value added twice stays registered
 * until it is removed twice. */
forge_rc_t forge_secret_add(const char *secret);

/* Registers n secrets as forge_secret_add each (those it refuses are
 * skipped), under one hold of the registry's lock: for a thread that
 * registers many while others do too (a restore's reading threads). */
void forge_secrets_add_many(const char *const *secrets, size_t n);

/* Lets go of a secret added earlier (no-op if unknown); the copy is wiped
 * and freed when nobody holds it any more. */
void forge_secret_remove(const char *secret);

/* How many distinct secrets are registered. */
size_t forge_secret_count(void);

/* Adds to runs every whole occurrence of a registered secret in
 * text[0..n), overlapping ones too. */
void forge_secrets_find(forge_redact_runs_t *runs, const char *text, size_t n);

/* Adds to runs, for text[0..n) cut out of a longer text: the end of a
 * registered secret that opens it (only when cut_head: the window starts
 * inside a line) and the start of one that closes it, each longer than
 * FORGE_SECRET_PART_MIN and shorter than the whole secret (a whole one is
 * forge_secrets_find's). */
void forge_secrets_find_cut(forge_redact_runs_t *runs, const char *text,
                            size_t n, bool cut_head);

/* Forgets every secret (wiped). Tests, and the log's reset. */
void forge_secrets_reset(void);

#endif
