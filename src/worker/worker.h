/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker.h - `forge-worker run`: the consume loop (docs/SOURCE_MAP.md: consume
 * → validate → render → submit → poll → map → publish), exactly once.
 */
#ifndef FORGE_WORKER_H
#define FORGE_WORKER_H

#include "core/config.h"
#include "launch/seal.h"
#include "request/series.h"
#include "request/tenants.h"

#include <signal.h>

/* Runs until *stop becomes non-zero (SIGTERM/SIGINT), then drains: stops
 * taking requests, stops a poll tick in progress between two calls (the
 * call under way interrupted), waits up to FORGE_WORKER_DRAIN_MS for
 * submits and cancels in flight, commits, leaves the group, and interrupts
 * whatever Slurm call is still out (submit.h). Returns the process exit
 * code: 0
 * after a clean drain, 1 on a fatal Kafka error, 78 when it could not
 * start (bad configuration it could not see before). The sealer (seal.h,
 * borrowed) seals the requests in the state records and opens them at
 * restore. */
int forge_worker_run(const forge_config_t *cfg,
                     const forge_series_catalog_t *catalog,
                     const forge_tenants_t *tenants,
                     const forge_sealer_t *sealer, volatile sig_atomic_t *stop);

/* How long a rebalance, or a shutdown, waits for Slurm calls in flight
 * before partitions leave (longer than one submit's worst case: see
 * loop.c on_flush). A shutdown waits once, and only for submits and
 * cancels: SIGTERM to exit stays within this bound plus about a second
 * (the interrupted call) and a commit, whatever slurmrestd does, and takes
 * a few seconds when no submit is out (deploy/forge-worker.service allows
 * 75 s). */
#define FORGE_WORKER_SETTLE_MS 45000
#define FORGE_WORKER_DRAIN_MS  FORGE_WORKER_SETTLE_MS
/* A cancel not yet confirmed by Slurm is sent again this often. */
#define FORGE_WORKER_CANCEL_RESEND_MS 30000

#endif
