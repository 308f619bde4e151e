/* SPDX-License-Identifier: Apache-2.0 */
/*
 * generation.h - which generation of each requests partition this worker
 * holds now, readable from any thread: how work that outlived its
 * partition is kept away from Slurm.
 *
 * The ownership story (contract section 1: partition ownership is job
 * ownership). The consume loop's thread owns the partitions, the launch
 * table and the records (owner.h), and it alone writes this table:
 *   - a partition gets a new generation each time the loop builds its
 *     launches from the state topic: on assignment, and again when an
 *     aborted transaction rewinds memory to what committed
 *     (loop/restore.c);
 *   - it holds none (0) from the moment it starts leaving: after a
 *     rebalance's last Slurm results are in (on_flush), or when the group
 *     says it was lost (on_revoked).
 * Every entry of the launch table is stamped with its partition's
 * generation when it is made (owner.c), and every work item the loop
 * makes for an entry carries that partition and generation (work.h).
 * The Slurm threads (submit.h) ask forge_generation_current() themselves,
 * right before each step that changes something outside the worker (a
 * submit's POST, a cancel, writing or removing a staging folder): work of
 * a generation that has passed is refused (FORGE_WORK_STALE), nothing of
 * it reaches Slurm, and the loop drops it. Results are matched the same
 * way on the way back (publish.c forge_loop_entry_of): an entry
 * never takes the result of work another generation posted. The
 * generation that is current re-derives whatever is left to do from its
 * records (an intent without a job id is cleaned by its tag, then
 * submitted: submit.c).
 *
 * What no check can close: a call already on the wire when the partition
 * moves. Its job carries the launch's comment tag, and the next owner
 * cancels whatever the tag finds before it submits.
 *
 * Threads: one writer (the loop), any number of readers; C11 atomics, no
 * lock. Generations are unique for the table's life (one 64-bit counter
 * for all partitions), so a generation that has passed never comes back.
 */
#ifndef FORGE_GENERATION_H
#define FORGE_GENERATION_H

#include <stdbool.h>
#include <stdint.h>

/* Partitions 0 .. FORGE_PARTITIONS_MAX - 1 (owner.h's limit too). */
#define FORGE_PARTITIONS_MAX 4096

typedef struct forge_generations forge_generations_t;

forge_generations_t *forge_generations_new(void);
void forge_generations_destroy(forge_generations_t *g); /* NULL-safe */

/* The loop's thread only. p is held from now on, in a new generation
 * (returned; never 0). */
uint64_t forge_generation_begin(forge_generations_t *g, int32_t p);

/* The loop's thread only. p is no longer held: every work item made for it
 * so far is stale. */
void forge_generation_end(forge_generations_t *g, int32_t p);

/* p's generation now, 0 when p is not held (or out of range). */
uint64_t forge_generation_of(const forge_generations_t *g, int32_t p);

/* Any thread: is p still held in generation gen? */
bool forge_generation_current(const forge_generations_t *g, int32_t p,
                              uint64_t gen);

#endif
