/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/idmap.h - Slurm job ids (uint32, never 0) to a 64-bit value, in one
 * open-addressed array sized once: a poll tick's lookups of 100,000 jobs
 * each cost O(1) and no allocation. The poller keeps its change
 * signatures in one (poller.c) and finds the states jobs/state gave each
 * job through another; the loop finds each launch's poll item (tick.c).
 * Not thread-safe: one owner at a time.
 */
#ifndef FORGE_IDMAP_H
#define FORGE_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct forge_idmap {
    uint32_t *keys; /* 0: empty */
    uint64_t *values;
    size_t mask; /* slots - 1 (a power of two, at least twice `expected`) */
    size_t count;
} forge_idmap_t;

/* An empty map for up to `expected` ids (it never grows). */
void forge_idmap_init(forge_idmap_t *m, size_t expected);

/* Frees the contents; m is empty and usable only after forge_idmap_init. */
void forge_idmap_clear(forge_idmap_t *m);

/* id -> value (replaces). False, nothing stored, for id 0 or a full map
 * (more than `expected` ids: the caller sized it). */
bool forge_idmap_put(forge_idmap_t *m, uint32_t id, uint64_t value);

/* id's value into *value; false when id is not there. */
bool forge_idmap_get(const forge_idmap_t *m, uint32_t id, uint64_t *value);

#endif
