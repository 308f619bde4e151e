/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/probe.h - keeps readiness's slurmrestd fact fresh when the worker
 * has nothing to ask it (no live job, no submit): a thread of its own that
 * pings slurmrestd (GET .../ping, its own client) whenever no call was
 * answered for a third of FORGE_READY_SLURM_S. A ping answered with
 * slurmctld responding counts as an answer for health.h; its request is
 * counted in the metrics like every call (slurm/http.c), and its token's
 * expiry reaches observe.h.
 */
#ifndef FORGE_OBSERVE_PROBE_H
#define FORGE_OBSERVE_PROBE_H

#include "config/config.h"
#include "base/error.h"

typedef struct forge_probe forge_probe_t;

/* cfg borrowed (outlives the probe). FORGE_ECONFIG when the slurmrestd
 * client cannot be made. */
forge_rc_t forge_probe_start(const forge_config_t *cfg, forge_probe_t **out,
                             forge_error_t *err) FORGE_WARN_UNUSED;

/* Stops the thread (a ping under way is interrupted), frees. NULL-safe. */
void forge_probe_stop(forge_probe_t *p);

#endif
