/* SPDX-License-Identifier: Apache-2.0 */
/*
 * archive.h - a finished launch's logs, from its staging folder on the
 * shared storage into $FORGE_STORAGE_ROOT/artifacts/<launch_id>/<attempt>/
 * logs.tar.gz (docs/CONTRACT.md section 6), with what the logs_archived
 * event says about it (section 2): size, SHA-256, the files in archive
 * order, the expected logs that were missing, and the tail of the main log.
 *
 * What goes in: every regular file under the staging folder except the
 * worker's own (the batch script, the credentials file), by name order;
 * links, special files and files with more than one hard link are never
 * followed nor archived (a job must not make the worker read what the job
 * could not) and are listed as refused. Expected files (each pool's
 * <pool>.out and <pool>.err) that are absent or unreadable are listed as
 * missing. The archive is written to a temporary name, synced and linked
 * into place; with the same files it is the same bytes (no timestamps of
 * its own), so redoing it after a crash gives the same archive.
 *
 * Where (safe_fs.h, nothing followed): the staging folder is opened beneath
 * the storage root with no link in any component (a link at `staging`,
 * `staging/<id>` or the folder itself: FORGE_EUNSAFE_PATH, nothing read).
 * artifacts/ and artifacts/<id>/ are the worker's (0711),
 * artifacts/<id>/<attempt>/ the worker's with the job's group (0750), the
 * archive too (0640): the job's user may read it, another tenant may not.
 *
 * Slow on purpose: it reads and compresses whole logs. The worker runs it on
 * its file threads (loop/archive_work.h), never on the consume loop.
 * Thread-safe: no shared state.
 */
#ifndef FORGE_ARCHIVE_H
#define FORGE_ARCHIVE_H

#include "config/config.h"
#include "base/error.h"
#include "fs/safe_fs.h"
#include "text/sha256.h"

#include <stddef.h>
#include <stdint.h>

#define FORGE_ARCHIVE_NAME     "logs.tar.gz"
#define FORGE_ARCHIVE_TAIL_MAX 4096

typedef struct forge_archive_file {
    char *name; /* relative to the staging folder */
    uint64_t bytes;
} forge_archive_file_t;

typedef struct forge_archive {
    char *path;          /* host side, absolute */
    char *relative_path; /* artifacts/<launch_id>/<attempt>/logs.tar.gz */
    uint64_t bytes;
    char sha256[FORGE_SHA256_HEX];
    forge_archive_file_t *files;
    size_t file_count;
    char **missing;
    size_t missing_count;
    char **refused; /* links, special files, hard links: not archived */
    size_t refused_count;
    char *unsafe;    /* the staging folder itself was refused (a link or a
                        folder not the worker's on its path): why; else NULL */
    char *tail_name; /* NULL: no main log */
    char *tail_text; /* valid UTF-8, secrets redacted */
    long long at_ms; /* when it was renamed into place */
} forge_archive_t;

/* What to archive: the launch, its pools' names (the first is the main
 * log's), and the launch's own secrets, which must not reach the tail
 * whatever their length (its ingest token and secret_env values; NULL/0
 * for none). Every secret the worker knows (secrets.h's registry) is kept
 * out of the tail too, without being listed here. All borrowed. */
typedef struct forge_archive_spec {
    const char *launch_id;
    int attempt;
    const char *const *pools;
    size_t pool_count;
    const char *const *secrets;
    size_t secret_count;
} forge_archive_spec_t;

/* Archives the staging folder of spec into place, readable by owner's
 * group; fills *out (caller frees with forge_archive_clear, also after an
 * error). A missing staging folder is not an error: the archive is then
 * empty and every expected file missing. A link or foreign file on the
 * way to either folder is FORGE_EUNSAFE_PATH, err->field naming which:
 * "staging" (the logs cannot be read safely) or "artifacts". */
forge_rc_t forge_archive_logs(const forge_config_t *cfg,
                              const forge_archive_spec_t *spec,
                              forge_fs_owner_t owner, forge_archive_t *out,
                              forge_error_t *err) FORGE_WARN_UNUSED;

void forge_archive_clear(forge_archive_t *a);

/* The last <= FORGE_ARCHIVE_TAIL_MAX bytes of text as an event may carry
 * them: cut at a line start when the cut has one, at a UTF-8 character
 * boundary, invalid bytes replaced by U+FFFD, every occurrence of each of
 * the count secrets and of every registered one (secrets.h) replaced by
 * [REDACTED] (overlapping ones merged), and so is a secret cut by the
 * window: its end opening a cut line, or its start closing the text.
 * Empty or NULL secrets are skipped. New string. */
char *forge_archive_tail_text(const char *text, size_t len, bool from_start,
                              const char *const *secrets, size_t count);

#endif
