/* SPDX-License-Identifier: Apache-2.0 */
/*
 * listing.h - the forge-tagged jobs of one whole listing of slurmctld's
 * jobs (GET /jobs), shared by the Slurm lanes: what a clean or a sweep
 * looks a launch's tag up in (submit.c).
 *
 * A whole listing is slurmctld's most expensive answer (every job it
 * holds, ended ones included: 74 MiB and seconds of its time at 10,000
 * jobs). A worker restoring many interrupted submits used to ask for one
 * per launch, and again for each sweep. Now a lookup takes the newest
 * listing begun at or after its `not_before_ns` (the work's making): a
 * listing begun later holds every job that reached slurmctld before the
 * work was made, as one asked now would; a job landing later is the
 * sweep's (its POST was never released). Only one listing is asked for at
 * a time: a lane that finds none recent enough waits for the one in
 * flight, or asks for one itself once none is.
 */
#ifndef FORGE_LISTING_H
#define FORGE_LISTING_H

#include "slurm/client.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct forge_listing forge_listing_t;

/* One job of a tag, as a clean or a sweep needs it. */
typedef struct forge_tagged_job {
    uint32_t job_id;
    uint32_t leader; /* its het job's leader, or job_id */
    bool live;       /* may still start or run (an ended one needs no cancel) */
    bool held;       /* pending on a hold (JobHeld*): never released */
    bool started;    /* given nodes: it ran, or runs, its command */
} forge_tagged_job_t;

forge_listing_t *forge_listing_new(void);
void forge_listing_destroy(forge_listing_t *l);

/* The jobs tagged `comment` (exact) in a listing begun at or after
 * not_before_ns (clock/clock.h), asked for with c when there is none (c:
 * the calling lane's own client). *jobs (new, the caller's; NULL when
 * none) and *n; the listing's failure otherwise, res saying why. */
forge_slurm_status_t forge_listing_find(forge_listing_t *l,
                                        forge_slurm_client_t *c,
                                        const char *comment,
                                        long long not_before_ns,
                                        forge_tagged_job_t **jobs, size_t *n,
                                        forge_slurm_result_t *res);

#endif
