/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runner.h - the work that must never run on the consume loop: slurmrestd
 * calls (submit, cancel, clean an interrupted submit, a poll tick) and the
 * file work around them (staging). A runner is one thread with its own
 * slurmrestd client, an inbox and an outbox.
 *
 * Ownership: a forge_work_t belongs to the loop until forge_runner_post(),
 * to the runner until it lands in the outbox, then to the loop again
 * (forge_runner_take); the one exception is its `withdraw` flag, which
 * forge_runner_withdraw sets under the runner's lock while the item is
 * out. The configuration and the series catalogue are shared read-only.
 * The worker runs two runners, one for submits and cancels, one for polls,
 * so a slow submit never delays a poll tick.
 *
 * Whether work may still act: a runner given the partitions' generations
 * (forge_runner_set_generations; generation.h has the whole story) checks
 * them itself right before every step of a SUBMIT, CLEAN_SUBMIT,
 * CLEAN_CANCEL or CANCEL that changes something outside the worker (the
 * staging folder written or removed, a submit's POST, a cancel). Work
 * made in a generation of its partition that has passed is refused
 * there: `refused` FORGE_WORK_STALE, nothing (more) of it done, a log
 * line saying it was dropped. A submit whose launch was cancelled after it
 * was posted (forge_runner_withdraw) is refused the same way before its
 * POST (FORGE_WORK_WITHDRAWN); a CLEAN_SUBMIT still cancels what its tag
 * finds first, as a CLEAN_CANCEL would.
 */
#ifndef FORGE_RUNNER_H
#define FORGE_RUNNER_H

#include "core/config.h"
#include "launch/generation.h"
#include "archive/log_archive.h"
#include "request/series.h"
#include "request/tenants.h"
#include "slurm/client.h"

#include <stdint.h>

typedef enum forge_work_kind {
    FORGE_WORK_SUBMIT,       /* render, stage, submit; adopt on unknown */
    FORGE_WORK_CLEAN_SUBMIT, /* interrupted submit: cancel tagged jobs,
                                remove staging, then submit */
    FORGE_WORK_CLEAN_CANCEL, /* an intent cancelled before its submit was
                                known: cancel tagged jobs, remove staging,
                                submit nothing */
    FORGE_WORK_CANCEL,
    FORGE_WORK_POLL,
    FORGE_WORK_ARCHIVE, /* a finished launch's logs into logs.tar.gz */
    FORGE_WORK_CLEANUP, /* delete the staging folder (and its logs) */
} forge_work_kind_t;

#define FORGE_RUNNER_MAX_THREADS 8

/* One launch in a poll tick, and what the tick found. */
typedef struct forge_poll_item {
    char *launch_id;
    uint32_t job_id;         /* the leader */
    uint32_t *component_ids; /* known components (may be just the leader) */
    size_t component_count;
    /* The record's slurm_states (launch.h): the job's Slurm states its
     * state was derived from, or NULL. The poller takes it for what it saw
     * of a job it has no memory of (after a restore), so a job whose
     * states still say the same costs no details call. */
    char *known_states;
    int outcome;                 /* FORGE_POLL_* */
    forge_slurm_job_list_t jobs; /* FORGE_POLL_CHANGED: the details */
    char *states; /* FORGE_POLL_CHANGED: the states seen (for the record) */
} forge_poll_item_t;

/* Whether the runner carried a work item out (runner.h's top comment). */
typedef enum forge_work_refusal {
    FORGE_WORK_DONE = 0, /* carried out: `status` says how it went */
    FORGE_WORK_STALE,    /* its partition's generation passed: dropped,
                            nothing of it reached Slurm after that */
    FORGE_WORK_WITHDRAWN /* a submit whose launch was cancelled before its
                            POST: nothing submitted (a CLEAN_SUBMIT's clean
                            ran; `status` says how it went) */
} forge_work_refusal_t;

enum {
    FORGE_POLL_UNANSWERED = 0, /* error: change nothing */
    FORGE_POLL_UNCHANGED,
    FORGE_POLL_CHANGED,
    FORGE_POLL_ABSENT, /* neither slurmctld nor accounting knows it */
};

typedef struct forge_work {
    forge_work_kind_t kind;
    char *launch_id;
    int attempt;
    /* the launch's partition, and the generation it was made in */
    int32_t partition;
    uint64_t generation;
    /* set by forge_runner_withdraw, under the runner's lock */
    bool withdraw;
    char *request; /* SUBMIT / CLEAN_SUBMIT: the request bytes */
    size_t request_len;
    uint32_t job_id;          /* CANCEL: the job; SUBMIT result: the new job */
    forge_poll_item_t *items; /* POLL */
    size_t item_count;
    /* POLL: the loop's memory generation. The poller's memory of what it
     * saw (its change signatures) belongs to the records of one
     * generation: a new one (records rewound by an aborted transaction,
     * partitions restored) makes it forget, so every job is looked at
     * afresh and a state the rewind took back is published again. */
    unsigned long epoch;
    /* results */
    forge_work_refusal_t refused;
    forge_slurm_status_t status;
    /* Our own refusal behind a failed status, or FORGE_OK: a SUBMIT
     * REJECTED before Slurm saw it (the request's check; the staging
     * folder unsafe), an ARCHIVE or CLEANUP refused (FORGE_EUNSAFE_PATH):
     * final, not retried. */
    forge_rc_t code;
    char message[512];
    uint32_t *component_ids; /* SUBMIT result */
    size_t component_count;
    forge_archive_t archive; /* ARCHIVE result */
    struct forge_work *next;
} forge_work_t;

void forge_work_free(forge_work_t *w); /* NULL-safe */

typedef struct forge_runner forge_runner_t;

/* A runner with its own slurmrestd client and one thread. tenants (NULL:
 * none) says whom each launch is submitted for and whose its files are. */
forge_rc_t forge_runner_start(const forge_config_t *cfg,
                              const forge_series_catalog_t *catalog,
                              const forge_tenants_t *tenants, const char *name,
                              forge_runner_t **out,
                              forge_error_t *err) FORGE_WARN_UNUSED;

/* A runner for file work only (ARCHIVE, CLEANUP): `threads` threads, no
 * slurmrestd client. */
forge_rc_t forge_runner_start_files(const forge_config_t *cfg,
                                    const forge_tenants_t *tenants,
                                    const char *name, size_t threads,
                                    forge_runner_t **out,
                                    forge_error_t *err) FORGE_WARN_UNUSED;

/* From now on r checks work against g (borrowed; it must outlive r) before
 * every step that changes something outside the worker. Called before the
 * first post; a runner never given one checks nothing (one-shot tools). */
void forge_runner_set_generations(forge_runner_t *r,
                                  const forge_generations_t *g);

/* Hands w to the runner (stolen). */
void forge_runner_post(forge_runner_t *r, forge_work_t *w);

/* The launch (launch_id, attempt) was cancelled: a SUBMIT or CLEAN_SUBMIT
 * of it still in r's inbox, or running and not yet at its POST, submits
 * nothing (FORGE_WORK_WITHDRAWN). One already past its POST comes back
 * with its job, as before. */
void forge_runner_withdraw(forge_runner_t *r, const char *launch_id,
                           int attempt);

/* Finished work, oldest first (new list, caller owns), or NULL. Never
 * blocks. */
forge_work_t *forge_runner_take(forge_runner_t *r);

/* Waits up to timeout_ms until every posted item is finished (in the
 * outbox, ready for forge_runner_take). True when all are. */
bool forge_runner_settle(forge_runner_t *r, long timeout_ms);

/* Work posted and not yet taken back. */
size_t forge_runner_in_flight(forge_runner_t *r);

/* Stops r without waiting (forge_runner_stop's first half, for work whose
 * results are no longer wanted, e.g. a poll tick once the worker stops):
 * no new work starts, the work in hand stops at its next slurmrestd call,
 * the call under way is interrupted. forge_runner_stop still joins. */
void forge_runner_interrupt(forge_runner_t *r);

/* Stops and joins: the work in hand stops at its next slurmrestd call (a
 * poll tick between two calls) and the call under way is interrupted
 * (forge_slurm_client_interrupt: within about a second), its result
 * dropped with the inbox and the outbox; file work in hand finishes.
 * NULL-safe. */
void forge_runner_stop(forge_runner_t *r);

#endif
