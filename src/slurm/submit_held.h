/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/submit_held.h - the one way a launch's job is made in Slurm, for
 * the worker's Slurm lanes (loop/submit.c) and `forge-worker submit`
 * alike: POST the body, every component held (render.c); when the POST's
 * outcome is unknown, look its comment tag up (the job it may have made
 * is adopted); then release each component by its own id (slurmrestd
 * releases the record it is given, never a het job's others). A job that
 * cannot be released is cancelled: a held job nobody releases never
 * starts, so a POST that reaches slurmctld after its submitter gave up on
 * it (killed while slurmrestd held the request through an outage) starts
 * nothing, and a job is only ever reported made once it may run.
 *
 * Threads: the caller's; the client is the caller's alone while it runs
 * (client.h). Nothing is retried here: the status says whether the caller
 * may try again (the worker does, later; the command reports).
 */
#ifndef FORGE_SLURM_SUBMIT_HELD_H
#define FORGE_SLURM_SUBMIT_HELD_H

#include "slurm/client.h"

#include <stddef.h>
#include <stdint.h>

/* What is submitted (every pointer borrowed). */
typedef struct forge_slurm_held_job {
    const json_t *payload; /* the submit body, its components held */
    const char *user;      /* whom it runs as (forge_slurm_submit_as);
                              NULL: the client's user */
    const char *comment;   /* its tag, forge:<launch_id>:<attempt>
                              (render.h): an unknown POST is looked up by it */
    size_t pool_count;     /* its components: 1, or a het job's count */
    /* Asked right before the job is released, or cancelled because it
     * could not be: false when the caller no longer owns the launch. The
     * job is then left as it is, held, for the launch's owner now to adopt
     * by its tag or sweep (loop/submit.c): a fenced-out worker never
     * starts a job beside its heir's, nor cancels one its heir adopted.
     * NULL: always owned (a one-shot command). */
    bool (*owned)(void *ctx);
    void *owned_ctx;
} forge_slurm_held_job_t;

/* What it made. */
typedef struct forge_slurm_released {
    uint32_t job_id;         /* the leader, released; 0: none */
    uint32_t *component_ids; /* new (free()): every component, released */
    size_t component_count;
    bool adopted;              /* the POST's outcome was unknown: its tag
                                  found the job */
    uint32_t cancelled_job_id; /* made but not released, so cancelled
                                  (0: none) */
} forge_slurm_released_t;

/*
 * Submits job held and releases it (above). Returns
 *   OK        released: out has the job and its components; res the POST's
 *   REJECTED  Slurm said no to the POST (client.h, the 2000-2999 refusals
 *             of every version): final, nothing made
 *   AUTH      the token was refused: nothing made
 *   SERVER    made but not released (the release or, for a het job, its
 *             components' details failed): cancelled as far as it could be
 *             (out->cancelled_job_id), res saying why; retriable; or no
 *             longer owned (job->owned): left held, not cancelled
 *   other     the POST's own failure, no job found by its tag: retriable
 *             (a clean before the retry cancels what the tag finds later)
 * out is always set (zero but for OK and the cancelled id).
 */
forge_slurm_status_t forge_slurm_submit_held(forge_slurm_client_t *c,
                                             const forge_slurm_held_job_t *job,
                                             forge_slurm_released_t *out,
                                             forge_slurm_result_t *res);

/*
 * Adopts job_id, a job an interrupted submit of `job` made (its tag found
 * it: loop/submit.c), instead of cancelling it and submitting again: what
 * ran, or runs, its command stays the launch's one job. Every component
 * still on its submit hold is released (one never released is what a
 * crash between the POST and the release leaves); a running or ended one
 * is only taken as it is. Returns OK with out set as for a submit
 * (out->adopted), NOT_FOUND when Slurm no longer knows the job, or the
 * failure of its details or a release (a job left held is then cancelled,
 * as a submit's is: SERVER, out->cancelled_job_id), res saying why.
 */
forge_slurm_status_t forge_slurm_adopt_job(forge_slurm_client_t *c,
                                           const forge_slurm_held_job_t *job,
                                           uint32_t job_id,
                                           forge_slurm_released_t *out,
                                           forge_slurm_result_t *res);

#endif
