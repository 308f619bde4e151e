/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ended.h - what Slurm said of jobs it saw end, kept across rewinds.
 *
 * A tick that sees a job end publishes its terminal state; if that
 * transaction does not commit (aborted, or the producer waits for a broker
 * that is away), the records rewind to what committed and the next tick
 * derives the state again, from Slurm. But slurmctld forgets an ended job
 * MinJobAge after it ended (300 s by default; a site without accounting
 * keeps nothing else), and a broker outage can be longer: the job is then
 * "not found", and the launch would end LOST although its end was seen.
 * So the loop keeps each end it saw here (job id → state, reason, Slurm
 * object, usage) for FORGE_ENDED_KEEP_MS, and a job missing from slurmctld
 * whose end is known here ends as seen (loop/tick.c). Memory: at most
 * FORGE_ENDED_MAX ends, the oldest dropped first.
 *
 * Loop thread only.
 */
#ifndef FORGE_ENDED_H
#define FORGE_ENDED_H

#include "record/state.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define FORGE_ENDED_KEEP_MS (3600LL * 1000) /* an hour */
#define FORGE_ENDED_MAX     20000

typedef struct forge_ended forge_ended_t;

/* One end as a tick saw it (borrowed from the table). */
typedef struct forge_ended_job {
    uint32_t job_id;
    forge_state_t state;
    char *reason;  /* or NULL */
    json_t *slurm; /* the event's slurm object, or NULL */
    json_t *usage; /* the event's usage object, or NULL */
} forge_ended_job_t;

forge_ended_t *forge_ended_new(void);
void forge_ended_free(forge_ended_t *t);

/* Job job_id was seen ending as state (terminal) at now_ms (the monotonic
 * clock); slurm and usage (either NULL) are referenced, reason copied. A
 * later end of one job id is the one found. */
void forge_ended_put(forge_ended_t *t, uint32_t job_id, forge_state_t state,
                     const char *reason, json_t *slurm, json_t *usage,
                     long long now_ms);

/* The end seen of job_id no longer ago than FORGE_ENDED_KEEP_MS, or NULL. */
const forge_ended_job_t *forge_ended_find(forge_ended_t *t, uint32_t job_id,
                                          long long now_ms);

size_t forge_ended_count(const forge_ended_t *t);

#endif
