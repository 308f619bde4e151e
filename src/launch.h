/*
 * launch.h - a launch's durable record: what the worker must know to carry
 * on after a crash or a rebalance (docs/CONTRACT.md section 1: the state
 * topic, keyed by launch_id, co-partitioned with the requests). One record
 * per launch, for its latest attempt; the state machine's rules (legal
 * transitions, seq +1 per event) are enforced here.
 *
 * The request itself is kept (as received) until the launch is archived, so
 * a new owner can resubmit an interrupted submit without the requests topic,
 * and knows the pools whose logs to archive.
 *
 * After a terminal state: archived (the logs event is out, in the same
 * transaction as the record saying so), then cleaned (staging deleted).
 */
#ifndef FORGE_LAUNCH_H
#define FORGE_LAUNCH_H

#include "error.h"
#include "platform_state.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FORGE_DIGEST_HEX 65 /* sha256 as hex + NUL */

typedef struct forge_launch_record {
    char *launch_id;
    int attempt;
    forge_state_t state;
    long seq; /* events published so far for (launch_id, attempt) */
    char digest[FORGE_DIGEST_HEX]; /* of the request bytes */
    char *request;                 /* the request as received, or NULL */
    size_t request_len;
    uint32_t job_id;         /* 0: intent recorded, no job id yet */
    uint32_t *component_ids; /* het components, in het_offset order */
    size_t component_count;
    bool cancel_requested;
    bool archived; /* the logs_archived event is published */
    bool cleaned;  /* staging and scheduler logs deleted (or never made) */
    long long accepted_at_ms;
    long long updated_at_ms;
    long long missing_since_ms; /* 0: Slurm knows the job */
} forge_launch_record_t;

/* A new record in state NONE for (launch_id, attempt) and its request
 * bytes (copied; digest computed). */
forge_launch_record_t *forge_launch_record_new(const char *launch_id,
                                               int attempt, const char *request,
                                               size_t request_len);

void forge_launch_record_free(forge_launch_record_t *r); /* NULL-safe */

/* sha256 of bytes as lower-case hex. */
void forge_digest_hex(const void *bytes, size_t len,
                      char out[FORGE_DIGEST_HEX]);

/*
 * Moves the record to `to` if the contract allows it (seq + 1, updated_at
 * = now_ms). FORGE_EINVAL (and nothing changes) for an illegal move.
 */
forge_rc_t forge_launch_advance(forge_launch_record_t *r, forge_state_t to,
                                long long now_ms) FORGE_WARN_UNUSED;

/* The record as the state topic's value (new reference). */
json_t *forge_launch_record_encode(const forge_launch_record_t *r);

/* A state topic value back into a record (*out new). */
forge_rc_t forge_launch_record_decode(const char *buf, size_t len,
                                      forge_launch_record_t **out,
                                      forge_error_t *err) FORGE_WARN_UNUSED;

#endif
