/* SPDX-License-Identifier: Apache-2.0 */
/*
 * archive_int.h - what the archive (archive.c) and the live view of a
 * running launch's logs (live.c) share: which files of a staging folder
 * are the job's to read, and how a window of a log becomes text an event
 * may carry (its secrets redacted, valid UTF-8). Private to src/archive/.
 */
#ifndef FORGE_ARCHIVE_INT_H
#define FORGE_ARCHIVE_INT_H

#include "base/buf.h"
#include "config/config.h"
#include "base/error.h"
#include "secrets/redact.h"

#include <stdbool.h>
#include <stddef.h>

/* A staging folder's files, relative names. */
typedef struct forge_archive_listing {
    char **names; /* regular single-link files, the worker's own left out */
    size_t count;
    char **refused; /* links, special files, hard links: left alone */
    size_t refused_count;
} forge_archive_listing_t;

/* The files under the staging folder opened as root (-1: none; root
 * itself stays open), without following anything, each list sorted by
 * name. The caller frees both lists (forge_strings_free). */
void forge_archive_list(int root, forge_archive_listing_t *l);

/* A launch's staging folder beneath the storage root (*sroot, new), with
 * no link nor foreign folder on the way: *fd new, or -1 when it does not
 * exist or was refused; a refusal is no error: *unsafe (new) says why,
 * so the caller can tell its reader instead of the logs going silently
 * missing. A storage root that cannot be opened is an error. */
forge_rc_t forge_archive_open_staging(const forge_config_t *cfg,
                                      const char *launch_id, int attempt,
                                      int *sroot, int *fd, char **unsafe,
                                      forge_error_t *err) FORGE_WARN_UNUSED;

/* Where secret (NULL or empty: nowhere) shows in the window w[0..n): each
 * whole occurrence, its end opening the window when the window starts
 * inside a line (cut_head), its start closing the window. */
void forge_archive_find_secret(forge_redact_runs_t *s, const char *w, size_t n,
                               bool cut_head, const char *secret);

/* text[0..len) appended to b as valid UTF-8 without NULs (U+FFFD for each
 * byte that is not). */
void forge_archive_put_clean(forge_buf_t *b, const char *text, size_t len);

#endif
