/* SPDX-License-Identifier: Apache-2.0 */
/*
 * live.h - a running launch's output as it grows (issue 29, docs/CONTRACT.md
 * section 2 "Live logs"): what its staging folder's files hold past the
 * offsets already published, read into bounded, redacted segments that a
 * log_chunk event carries (record/events.h). The archive (archive.h) keeps
 * the whole; this is the live view of it.
 *
 * Which files: every regular, single-link file under the staging folder
 * but the worker's own (the batch script, the credentials files), as the
 * archive lists them: each pool's <pool>.out and <pool>.err and anything
 * the job writes under $FORGE_STAGING. Links, FIFOs, devices and hard links
 * are never opened (a job must not make the worker read what it could not),
 * and the folder itself is opened beneath the storage root with no link on
 * the way (safe_fs.h): a refused folder reads as empty.
 *
 * Where a file stands is its cursor: the offset published up to, the
 * file's inode and a hash of the bytes just before the offset, durable in
 * the launch's record (record/launch.h), so a new owner continues where
 * the last committed chunk ended. A file smaller than its offset
 * (truncated), with another inode (replaced) or other bytes before the
 * offset (rewritten in place) is read again from 0, and its segment says
 * `restarted`.
 *
 * Bounds, so a job printing gigabytes cannot flood Kafka nor the worker's
 * memory: one read carries at most `max_bytes` of the files together, and
 * at most `allowance` (the launch's per-minute budget left: loop/live.c);
 * a file more than `skip_over` bytes behind is skipped ahead to its last
 * `allowance` bytes (at a line start when there is one), and its segment
 * says how many bytes were `skipped`. Nothing larger than max_bytes + a
 * few bytes is ever held in memory.
 *
 * Lines: a segment ends after the last line end (\n or \r) it holds; a
 * line still being written is left for the next read, unless the file has
 * not grown since the previous read (then it goes as it is), the read is
 * the last one (final), or the line alone is larger than what one read
 * may carry (then it is cut, never inside a registered secret's first
 * bytes nor inside a UTF-8 character).
 *
 * Secrets: every registered secret (secrets/secrets.h) and the launch's own
 * (any length) are replaced by [REDACTED]; a segment that starts inside a
 * line also redacts the end of a secret that opens it (the previous read
 * was cut there). Text is valid UTF-8 without NULs (U+FFFD for anything
 * else), so it may be longer than the bytes it covers.
 *
 * Slow on purpose (it reads files on the shared storage): the worker runs
 * it on its file threads, never on the consume loop. Thread-safe: no
 * shared state.
 */
#ifndef FORGE_LIVE_H
#define FORGE_LIVE_H

#include "config/config.h"
#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Files followed per launch at most (beyond them, new files are not). */
#define FORGE_LIVE_FILES_MAX 64

/* Where one file of a launch stands. */
typedef struct forge_live_cursor {
    char *name;      /* relative to the staging folder */
    uint64_t offset; /* published up to here */
    uint64_t ino;    /* the file's inode when it was read (0: unknown) */
    /* a hash of the (up to) 32 bytes before offset (0: unknown): a file
     * rewritten in place past its old offset between two reads (a job's
     * `> metrics.csv` each epoch) is told by it, not only a shorter one */
    uint32_t mark;
    /* memory only (not durable): the file's size at the last read, so a
     * line still being written goes out once the file stops growing */
    uint64_t seen_size;
} forge_live_cursor_t;

/* One file's new bytes, as a chunk carries them. */
typedef struct forge_live_segment {
    char *file;
    uint64_t offset;  /* the first byte's offset in the file */
    uint64_t length;  /* the file's bytes covered: [offset, offset+length) */
    char *text;       /* those bytes: UTF-8, secrets redacted */
    uint64_t skipped; /* bytes left out just before offset (budget); 0 */
    bool restarted;   /* the file was truncated or replaced: offset counts
                         from the new file's start */
} forge_live_segment_t;

typedef struct forge_live_spec {
    const char *launch_id;
    int attempt;
    const char *const *secrets; /* the launch's own (borrowed); NULL/0 */
    size_t secret_count;
    uint64_t
        max_bytes; /* one read's bytes at most (FORGE_LOG_LIVE_CHUNK_BYTES) */
    uint64_t allowance; /* the budget left (<= max_bytes is what counts) */
    uint64_t skip_over; /* a file further behind than this is skipped ahead */
    bool final;         /* the launch ended: partial lines go too */
} forge_live_spec_t;

/* What one read found: the segments (possibly none) and every file's
 * cursor after it (the cursors given, advanced, plus new files). */
typedef struct forge_live_read {
    forge_live_segment_t *segments;
    size_t segment_count;
    forge_live_cursor_t *cursors;
    size_t cursor_count;
    uint64_t bytes; /* the files' bytes the segments cover, skipped not */
    char *unsafe;   /* the staging folder was refused: why; else NULL */
} forge_live_read_t;

/* Reads spec's launch's staging folder past cursors[0..count) (borrowed)
 * into *out (caller clears it with forge_live_read_clear, also after an
 * error). A missing staging folder is no error (nothing yet). A storage
 * root that cannot be opened is (FORGE_EIO, retried at the next read). */
forge_rc_t forge_live_read(const forge_config_t *cfg,
                           const forge_live_spec_t *spec,
                           const forge_live_cursor_t *cursors, size_t count,
                           forge_live_read_t *out,
                           forge_error_t *err) FORGE_WARN_UNUSED;

void forge_live_read_clear(forge_live_read_t *r);

/* Cursors: copies (new array of count) and frees. */
forge_live_cursor_t *forge_live_cursors_copy(const forge_live_cursor_t *c,
                                             size_t count);
void forge_live_cursors_free(forge_live_cursor_t *c, size_t count);

#endif
