/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logs.h - `forge-worker logs`: a launch's output as the logs topic
 * carries it (issue 29; docs/CONTRACT.md sections 2 and 4), printed the
 * way an operator tails a file. Two parts:
 *
 * - the printer (logs.c), pure: fed the topic's events one at a time, it
 *   writes exactly what the command prints and says when the attempt is
 *   complete (its logs_archived fed). No Kafka, no clock: the unit tests
 *   drive it with event JSON.
 * - the reading (logs_read.c): the one partition of the logs topic the
 *   launch's key goes to, group-less and read_committed (topic_scan.h),
 *   fed to a printer: to the partition's end as it stands at the start,
 *   or, following, until the attempt's logs_archived event.
 *
 * Threads: the caller's.
 */
#ifndef FORGE_ADMIN_LOGS_H
#define FORGE_ADMIN_LOGS_H

#include "config/config.h"
#include "admin/admin.h"

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FORGE_LOGS_TYPE_CHUNK    "forge.launch.log_chunk"
#define FORGE_LOGS_TYPE_ARCHIVED "forge.launch.logs_archived"

/* ---- what an event on the logs topic is -------------------------------- */

typedef enum forge_logs_event {
    FORGE_LOGS_EVENT_NONE = 0, /* not one of the two (status, garbage) */
    FORGE_LOGS_EVENT_CHUNK,    /* forge.launch.log_chunk */
    FORGE_LOGS_EVENT_ARCHIVED, /* forge.launch.logs_archived */
} forge_logs_event_t;

/* The kind of the event in value[0..len) (a record's value: not
 * NUL-terminated) when it is a log_chunk or a logs_archived event of
 * launch_id (NULL: of any launch) with an attempt in 1..1000000 (then
 * *attempt); FORGE_LOGS_EVENT_NONE for anything else. */
forge_logs_event_t forge_logs_event_of(const char *value, size_t len,
                                       const char *launch_id, int *attempt);

/* ---- the printer -------------------------------------------------------- */

/*
 * What it prints (CONTRACT section 4, `logs`):
 * - each segment's text as it is (no newline added), in the order the
 *   chunks arrive: the partition's order, which is the order of n as the
 *   worker publishes them. A chunk that comes late (a lower n after a
 *   higher one) is not reordered: what it covers that was printed already
 *   (by file and offset) is dropped, and the rest printed where it comes.
 * - dedup by file and offset: per file, the bytes printed reach an offset
 *   (`next`); a segment ending at or before it is a duplicate (dropped
 *   whole, its markers too); one that starts before it and ends after is
 *   an overlap, printed from `next` on. That cut is exact when the text
 *   is as long as the bytes it covers (nothing redacted or replaced), and
 *   placed at the same byte count, moved to a character start, when it is
 *   not (a redaction inside an overlap: rare, as the worker re-sends a
 *   chunk from the same cursor).
 * - `restarted`: the file's count starts again (`next` 0) and
 *   `[forge-worker: FILE restarted]` is printed first; a restart is new
 *   only in a chunk of a higher n than the file's last restart (a re-sent
 *   chunk keeps its n), so a re-sent restart is a duplicate like any other.
 * - `skipped`: `[forge-worker: SKIPPED bytes of FILE skipped]` first, the
 *   bytes left out that were not printed already (none: no line).
 * - more than one file seen (a chunk's files counted before its first
 *   segment is printed): `==> FILE <==` before output of a file other than
 *   the last printed's, as tail -f does.
 * - those lines always start a line of their own (a newline first when the
 *   output stands inside a line).
 * - at the attempt's logs_archived: its `tail.text` when no chunk of the
 *   attempt came (a launch without live logs), and on diag one line naming
 *   the archive: `forge-worker: archive PATH` (`archive.path`). After it,
 *   nothing more is printed: the attempt is complete.
 * Everything else is ignored: other launches, other attempts, other event
 * types (status), what does not parse, a segment that breaks the event's
 * shape (the chunk's other segments are printed). out is flushed after
 * each event that printed.
 */
typedef struct forge_logs_printer_s forge_logs_printer_t;

/* A printer of launch_id's (copied) attempt; attempt 0: the attempt of
 * the first of the launch's events fed (a later, higher attempt does not
 * replace it). out and diag borrowed (stdout, stderr; a memstream in the
 * tests). Never NULL (out of memory aborts). */
forge_logs_printer_t *forge_logs_printer_new(const char *launch_id, int attempt,
                                             FILE *out, FILE *diag);
void forge_logs_printer_destroy(forge_logs_printer_t *p); /* NULL-safe */

/* One record's value (bytes, not NUL-terminated; NULL: a tombstone,
 * ignored) / one event already parsed (borrowed). Returns whether the
 * attempt is complete (its logs_archived fed, now or before). */
bool forge_logs_printer_feed(forge_logs_printer_t *p, const char *value,
                             size_t len);
bool forge_logs_printer_feed_json(forge_logs_printer_t *p, const json_t *event);

bool forge_logs_printer_complete(const forge_logs_printer_t *p);
/* Whether a chunk or the logs_archived of its attempt was fed. */
bool forge_logs_printer_found(const forge_logs_printer_t *p);
/* Its attempt: the one given, or the one taken; 0: none yet. */
int forge_logs_printer_attempt(const forge_logs_printer_t *p);

/* ---- the reading -------------------------------------------------------- */

typedef struct forge_logs_spec {
    const char *launch_id;
    int attempt; /* 0: the highest among its events at the start */
    bool follow; /* until its logs_archived, not the partition's end */
    /* following: set (a signal handler) to stop; NULL: never */
    const volatile sig_atomic_t *stop;
    FILE *out;  /* the text */
    FILE *diag; /* the archive's line */
} forge_logs_spec_t;

typedef struct forge_logs_result {
    int32_t partition; /* of the logs topic, the launch's key's */
    int attempt;       /* printed (0: none found) */
    bool found;        /* a chunk or logs_archived of it was read */
    bool complete;     /* its logs_archived was read */
    bool stopped;      /* following, *stop ended it */
} forge_logs_result_t;

/*
 * Prints spec's launch's output from cfg's logs topic (FORGE_KAFKA_TOPIC_
 * LOGS): the partition the worker's producer puts its key in, records
 * keyed launch_id only. Without an attempt, the partition is read first to
 * its end as it stands (its high mark, read_committed) for the highest
 * attempt, then again from that attempt's first record. Without follow it
 * stops at that end; following, it goes on until the attempt's
 * logs_archived (or *stop; an attempt that is not there yet: the first of
 * the launch's to come).
 * Outcomes: ok (*res says what was found: nothing found without follow is
 * still ok here, the command's `not_found`), kafka_unavailable (no answer
 * within timeout_ms; without follow also no progress that long),
 * topic_missing, config.
 */
forge_admin_code_t forge_logs_read(const forge_config_t *cfg,
                                   const forge_logs_spec_t *spec,
                                   int timeout_ms, forge_logs_result_t *res,
                                   forge_admin_error_t *err);

#endif
