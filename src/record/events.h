/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events.h - the worker's out messages as CloudEvents 1.0 in structured
 * JSON mode (docs/CONTRACT.md section 2, schemas/status-changed.v1.json,
 * logs-archived.v1.json and log-chunk.v1.json). Pure: the caller gives every
 * value, including the time, so the same inputs always give the same bytes
 * (a replayed transaction re-publishes identical events with identical ids).
 */
#ifndef FORGE_EVENTS_H
#define FORGE_EVENTS_H

#include "archive/archive.h"
#include "archive/live.h"
#include "record/state.h"
#include "request/request.h"

#include <jansson.h>

#define FORGE_EVENT_CONTENT_TYPE "application/cloudevents+json"

typedef struct forge_status_event {
    const char *launch_id;
    int attempt;
    long seq; /* 1 for the first event of (launch_id, attempt) */
    forge_state_t state;
    forge_state_t previous; /* FORGE_STATE_NONE for the first */
    const char *reason;     /* NULL: none */
    const char *worker_id;
    const forge_kv_t *labels; /* the request's labels, copied in */
    size_t label_count;
    const json_t *slurm;     /* borrowed `slurm` object; NULL: no job yet */
    const char *error_code;  /* REJECTED: the contract's code, else NULL */
    const char *error_field; /* REJECTED: the JSON path */
    const char *error_message;
    long long at_ms; /* when the state was observed, ms since the epoch */
    int try_num;     /* which try of the attempt (issue 26); 0: not said */
    /* a retry's PENDING (reason retrying): the `retry` object, borrowed
     * ({try, max_tries, cause, not_before, excluded_nodes}); NULL: none */
    const json_t *retry;
    /* a terminal move's `usage` object, borrowed (slurm/usage.h:
     * forge_slurm_usage_json; issue 28); NULL: not said */
    const json_t *usage;
} forge_status_event_t;

/* The whole CloudEvent (new reference). */
json_t *forge_event_status(const forge_status_event_t *e);

typedef struct forge_logs_event {
    const char *launch_id;
    int attempt;
    const char *worker_id;
    const forge_kv_t *labels;
    size_t label_count;
    const forge_archive_t *archive; /* data.at is archive->at_ms */
} forge_logs_event_t;

/* forge.launch.logs_archived, id "<launch_id>/<attempt>/logs" (new
 * reference). */
json_t *forge_event_logs(const forge_logs_event_t *e);

/* A running launch's output (issue 29, CONTRACT section 2 "Live logs"):
 * the segments one read of its staging folder found (archive/live.h). */
typedef struct forge_log_chunk_event {
    const char *launch_id;
    int attempt;
    int try_num; /* the try of the attempt (>= 1) */
    long n;      /* this attempt's chunk number: 1, 2, 3, ... contiguous */
    bool final;  /* the attempt's last chunk (after its terminal state,
                    before its logs_archived event) */
    const char *worker_id;
    const forge_kv_t *labels; /* the request's labels, copied in */
    size_t label_count;
    const forge_live_segment_t *segments; /* borrowed; at most 64 */
    size_t segment_count;
    long long at_ms; /* when the files were read, ms since the epoch */
} forge_log_chunk_event_t;

/* forge.launch.log_chunk, id "<launch_id>/<attempt>/log/<n>" (new
 * reference). A segment carries `skipped` only when it is > 0 and
 * `restarted` only when true. NULL only when a segment's text or file is
 * not UTF-8 (live.h makes them so). */
json_t *forge_event_log_chunk(const forge_log_chunk_event_t *e);

/* "<launch_id>/<attempt>/<seq>" (new). */
char *forge_event_status_id(const char *launch_id, int attempt, long seq);

#endif
