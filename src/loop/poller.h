/* SPDX-License-Identifier: Apache-2.0 */
/*
 * poller.h - the poller thread: a poll tick's slurmrestd side (work.h kind
 * POLL), on one thread with its own slurmrestd client (a pool, pool.h), so
 * a slow submit never delays a tick. What it found goes back in the tick's
 * items; tick.c applies it to the records on the loop's thread.
 */
#ifndef FORGE_POLLER_H
#define FORGE_POLLER_H

#include "config/config.h"
#include "loop/pool.h"

/* The poller thread (cfg borrowed, must outlive it). forge_pool_interrupt
 * or forge_pool_stop: a tick in hand stops between two slurmrestd calls
 * (the whole tick then says so and changes nothing), the call under way is
 * interrupted. */
forge_rc_t forge_poller_start(const forge_config_t *cfg, forge_pool_t **out,
                              forge_error_t *err) FORGE_WARN_UNUSED;

#endif
