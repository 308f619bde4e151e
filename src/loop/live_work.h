/* SPDX-License-Identifier: Apache-2.0 */
/*
 * live_work.h - the live logs' thread (issue 29): a LIVE item (work.h)
 * reads each of its launches' new output (archive/live.h) on a lane of its
 * own, so a slow shared filesystem delays neither a poll tick, a commit,
 * an archive nor a rebalance's flush. loop/live.c decides what to read
 * and publishes what was read, on the loop's thread.
 */
#ifndef FORGE_LIVE_WORK_H
#define FORGE_LIVE_WORK_H

#include "config/config.h"
#include "loop/pool.h"
#include "loop/work.h"

/* One thread (cfg borrowed, must outlive it). */
forge_rc_t forge_live_work_start(const forge_config_t *cfg, forge_pool_t **out,
                                 forge_error_t *err) FORGE_WARN_UNUSED;

/* The thread's second step for one item read: its chunk's event (it->event,
 * compact JSON) when one is due (new bytes; or the final read of a launch
 * that sent chunks before), and the bytes its segments skipped. Tests that
 * play the thread call it too. */
void forge_live_item_event(const forge_config_t *cfg, forge_live_item_t *it);

#endif
