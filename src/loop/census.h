/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loop/census.h - the loop's census at each poll tick, pushed to whoever
 * watches (hooks/hooks.h's census): the launches of the owned partitions,
 * live ones by state and finished ones waiting for their archive (the
 * archive queue), and how late the tick came. The loop counts its own
 * table here, so observability never walks it.
 *
 * Threads: the loop's (it owns the owner table).
 */
#ifndef FORGE_CENSUS_H
#define FORGE_CENSUS_H

#include "record/owner.h"

/* Counts o's launches and hands them to the census hook with late_ms;
 * nothing (not even the walk) when no hook is installed. */
void forge_census_push(forge_owner_t *o, long long late_ms);

#endif
