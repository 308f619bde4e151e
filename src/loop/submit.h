/* SPDX-License-Identifier: Apache-2.0 */
/*
 * submit.h - the Slurm threads: submits, cancels, the adoption of what
 * an interrupted submit made, and the clean of a cancelled one (work.h kinds
 * SUBMIT, CLEAN_SUBMIT, CLEAN_CANCEL, CANCEL), on FORGE_SLURM_MAX_CONNECTIONS
 * lanes (a pool with a lane per thread, pool.h), each lane with its own
 * slurmrestd client, so a slow submit never delays a poll tick (poller.h) nor
 * an archive (archive_work.h), and launches are submitted side by side. A
 * launch's work always takes the lane its launch_id hashes to: one launch's
 * steps run one at a time, in the order posted.
 *
 * Whether work may still act: the thread checks the partitions'
 * generations (generation.h has the whole story) itself right before
 * every step that changes something outside the worker (the staging
 * folder written or removed, a submit's POST, a cancel). Work made in a
 * generation of its partition that has passed is refused there: `refused`
 * FORGE_WORK_STALE, nothing (more) of it done, a log line saying it was
 * dropped. A submit whose launch was cancelled after it was posted
 * (forge_submit_withdraw) is refused the same way before its POST
 * (FORGE_WORK_WITHDRAWN); a CLEAN_SUBMIT then adopts nothing and
 * cancels what its tag finds, as a CLEAN_CANCEL would.
 */
#ifndef FORGE_SUBMIT_H
#define FORGE_SUBMIT_H

#include "config/config.h"
#include "record/generation.h"
#include "request/series.h"
#include "request/tenants.h"
#include "loop/pool.h"

/* The Slurm threads. All borrowed, and must outlive the pool: tenants
 * (NULL: none) says whom each launch is submitted for and whose its files
 * are; generations (NULL: nothing checked, for one-shot tools) is what
 * work is checked against. Stop it with forge_pool_stop: the work in hand
 * stops at its next slurmrestd call, the calls under way are interrupted
 * (forge_slurm_client_interrupt: within about a second). */
forge_rc_t forge_submit_start(const forge_config_t *cfg,
                              const forge_series_catalog_t *catalog,
                              const forge_tenants_t *tenants,
                              const forge_generations_t *generations,
                              forge_pool_t **out,
                              forge_error_t *err) FORGE_WARN_UNUSED;

/* The launch (launch_id, attempt) was cancelled: a SUBMIT or CLEAN_SUBMIT
 * of it still in the pool's inbox, or running and not yet at its POST,
 * submits nothing (FORGE_WORK_WITHDRAWN). One already past its POST comes
 * back with its job, as before. */
void forge_submit_withdraw(forge_pool_t *slurm, const char *launch_id,
                           int attempt);

/* FNV-1a of launch_id modulo lanes: with SIZE_MAX, the key every piece
 * of work of launch_id has in the Slurm pool (its work runs in the order
 * posted, one at a time). */
size_t forge_submit_lane(const char *launch_id, size_t lanes);

#endif
