/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events.h - the worker's out messages as CloudEvents 1.0 in structured
 * JSON mode (docs/CONTRACT.md section 2, schemas/status-changed.v1.json and
 * logs-archived.v1.json). Pure: the caller gives every value, including the
 * time, so the same inputs always give the same bytes (a replayed
 * transaction re-publishes identical events with identical ids).
 */
#ifndef FORGE_EVENTS_H
#define FORGE_EVENTS_H

#include "archive/archive.h"
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

/* "<launch_id>/<attempt>/<seq>" (new). */
char *forge_event_status_id(const char *launch_id, int attempt, long seq);

#endif
