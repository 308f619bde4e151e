/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compose.h - `forge-worker run` put together (compose.c): the consume loop
 * (src/loop/: consume → validate → render → submit → poll → map → publish,
 * exactly once) wired to Kafka and the Slurm and file lanes.
 */
#ifndef FORGE_COMPOSE_H
#define FORGE_COMPOSE_H

#include "config/config.h"
#include "record/seal.h"
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

#endif
