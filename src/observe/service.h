/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/service.h - what an operator sees of a running worker, started and
 * stopped around `forge-worker run` (worker/cmd_run.c): the facts behind the
 * probes and systemd's notifications (health.h), the metrics registry
 * (observe.h) with hooks/hooks.h's table filled, and, with FORGE_HTTP_LISTEN,
 * the HTTP listener (listener.h) and the readiness probe's slurmrestd pinger
 * (probe.h), each on a thread of its own. None of it calls into the loop: the
 * loop publishes, these read.
 */
#ifndef FORGE_OBSERVE_SERVICE_H
#define FORGE_OBSERVE_SERVICE_H

#include "config/config.h"
#include "base/error.h"

typedef struct forge_ops forge_observe_service_t;

/* Before the worker's other threads (cfg borrowed, outlives it). Errors:
 * FORGE_ECONFIG (exit 78: FORGE_HTTP_LISTEN cannot be resolved or bound
 * for good), FORGE_EIO (the port is in use: worth a restart). */
forge_rc_t forge_observe_service_start(const forge_config_t *cfg,
                                       forge_observe_service_t **out,
                                       forge_error_t *err) FORGE_WARN_UNUSED;

/* After the worker's other threads have stopped. NULL-safe. */
void forge_observe_service_stop(forge_observe_service_t *ops);

#endif
