/* SPDX-License-Identifier: Apache-2.0 */
/*
 * owner.h - what this worker owns: the partitions of the requests topic
 * assigned to it (and whether each is restored yet), and the launches keyed
 * to them (contract section 1: partition ownership is job ownership).
 *
 * The secrets of every request the table holds (the ingest token, each
 * secret_env value) are registered for redaction (secrets.h) while it holds
 * it: from forge_owner_put (or, for a restore, from forge_owner_register
 * on its reading thread) until the entry leaves (revoked, replaced,
 * destroyed) or its request is dropped (forge_owner_drop_request). So
 * log lines, and the tails of archives, never show a live launch's secret,
 * whichever launch's text it turns up in.
 *
 * Partitions have generations (generation.h: the ownership story): one
 * begins when a partition is assigned (forge_owner_assign, also at each
 * restore), it ends when the partition leaves (forge_owner_release,
 * forge_owner_drop), and every entry is stamped with the generation it
 * was made in. The generations table is the one thing here other threads
 * read (forge_owner_generations: the runners' check before Slurm).
 *
 * Threads: the consume loop's thread only, but for the generations table.
 */
#ifndef FORGE_OWNER_H
#define FORGE_OWNER_H

#include "record/generation.h"
#include "record/held.h"
#include "record/launch.h"
#include "request/request.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct forge_entry {
    forge_launch_record_t *rec; /* owned */
    /* owned: what the table keeps of the parsed request (held.h: labels,
     * secrets); NULL: none, or the request is unknown or dropped */
    forge_held_t *held;
    int32_t partition;
    /* failed submits in a row: retry_at_ms's backoff (below; here, where
     * the partition leaves room) */
    int submit_failures;
    uint64_t generation; /* the partition's when the entry was made */
    bool busy;           /* a submit/cancel for it is in flight */
    /* Memory only: its job's end waits for the image check's note
     * (loop/image_note.c), read on the file threads. */
    bool image_note_out;
    /* A submit of this attempt may have reached Slurm without its job id
     * being known here: the intent was restored (a crash, an aborted
     * transaction, another owner before), or a submit was posted. A cancel
     * then cleans the tag before it says CANCELLED. */
    bool submit_unknown;
    /* Memory only: a terminal state a jobcomp end record pushed, whose
     * archive waits until Slurm shows the job no longer COMPLETING
     * (loop/jobcomp.c sets it; it goes with the push memory below). */
    bool archive_gated;
    /* times on the monotonic clock (clock/clock.h) */
    long long retry_at_ms; /* a failed submit waits until then */
    /* a retry's next try (loop/tries.c) is not submitted before then: its
     * backoff, from the record's retry_not_before */
    long long next_try_ms;
    long long cancel_sent_ms; /* when a cancel was last posted; 0: never */
    /* when to look for late jobs of an interrupted submit (its clean ran:
     * a POST slurmrestd still held may land after it); 0: no need */
    long long sweep_at_ms;
    /* Memory only, not the record's: what the loop keeps of the job's
     * jobcomp records (loop/jobcomp.c; NULL: none). Owned by the entry:
     * push_free(push) when the entry goes or is replaced by a newer
     * attempt; the loop frees it itself (and NULLs both) before that. */
    void *push;
    void (*push_free)(void *push);
    /* Memory only: the live logs' per-minute budget (loop/live.c): the
     * bytes its chunks carried in each of the last 7 ten-second slots
     * (a ring), and the slot last written (monotonic ms / 10,000). */
    uint32_t live_spent[7];
    long long live_slot;
    struct forge_entry *next; /* bucket chain */
    /* the open list (forge_owner_each): linked until the launch settles */
    struct forge_entry *open_prev, *open_next;
} forge_entry_t;

typedef struct forge_owner forge_owner_t;

forge_owner_t *forge_owner_new(void);
void forge_owner_destroy(forge_owner_t *o); /* NULL-safe */

forge_entry_t *forge_owner_find(forge_owner_t *o, const char *launch_id);

/* Adds or replaces the entry of rec->launch_id (rec and req stolen: req is
 * kept as held.h's compact form, and destroyed). */
forge_entry_t *forge_owner_put(forge_owner_t *o, forge_launch_record_t *rec,
                               forge_request_t *req, int32_t partition);

/* The same with the compact form already made (held stolen). */
forge_entry_t *forge_owner_put_held(forge_owner_t *o,
                                    forge_launch_record_t *rec,
                                    forge_held_t *held, int32_t partition);

/* held's secrets registered for redaction as forge_owner_put_held does
 * it, for a caller that makes held off the loop's thread (restore.c's
 * reading threads, so the loop's does not register 200,000 secrets after
 * a restore's read): it then puts held with forge_owner_put_registered,
 * which takes the registration over, or undoes it with
 * forge_owner_unregister for a held it never puts. Any thread (the log's
 * registry has its lock). */
void forge_owner_register(const forge_held_t *held);
/* As forge_owner_register for each of n (NULL ones skipped), the
 * registry's lock taken once for all (the reading threads of a restore
 * register together). */
void forge_owner_register_many(forge_held_t *const *helds, size_t n);
void forge_owner_unregister(const forge_held_t *held);
forge_entry_t *forge_owner_put_registered(forge_owner_t *o,
                                          forge_launch_record_t *rec,
                                          forge_held_t *held,
                                          int32_t partition);

/* Room for `more` entries beyond those held, made at once (a restore
 * knows how many records it puts: no doubling on the way). */
void forge_owner_reserve(forge_owner_t *o, size_t more);

/* e's request is no longer needed (its logs are archived, or it has none):
 * dropped from its record and its held form, its secrets unregistered. */
void forge_owner_drop_request(forge_entry_t *e);

/* Partition bookkeeping: assigned-but-restoring vs ready. assign begins a
 * new generation of the partition; drop ends it and removes its entries. */
void forge_owner_assign(forge_owner_t *o, int32_t partition);
void forge_owner_set_ready(forge_owner_t *o, int32_t partition);
void forge_owner_drop(forge_owner_t *o, int32_t partition);

/* The partition is leaving: its generation ends now (work made for it is
 * stale from here on), its entries stay until forge_owner_drop. */
void forge_owner_release(forge_owner_t *o, int32_t partition);

/* Read by the runners' threads (generation.h); lives as long as o. */
const forge_generations_t *forge_owner_generations(const forge_owner_t *o);
bool forge_owner_owns(const forge_owner_t *o, int32_t partition);
/* Every assigned partition is restored (the worker's readiness). */
bool forge_owner_ready(const forge_owner_t *o);

/* Times here are on the monotonic clock (clock/clock.h).
 *
 * A restore of p that did not reach the state topic's end: p stays
 * restoring (paused, nothing taken from it) and is due again at retry_at.
 * Returns how many restores of p failed in a row (cleared once ready). */
int forge_owner_restore_failed(forge_owner_t *o, int32_t p, long long retry_at);
int forge_owner_restore_failures(const forge_owner_t *o, int32_t p);

/* p's restore waits for the next pass, due at `at` (the pass's time ran
 * out before p's turn; not a failure: no backoff). */
void forge_owner_restore_later(forge_owner_t *o, int32_t p, long long at);

/* The restoring partition whose next restore has been due longest at now,
 * or -1. */
int32_t forge_owner_restore_due(const forge_owner_t *o, long long now);

/* How many partitions are owned (restoring or ready). */
size_t forge_owner_partition_count(const forge_owner_t *o);

/* Partitions assigned now (new array, *n entries). */
int32_t *forge_owner_partitions(const forge_owner_t *o, size_t *n);

/* Calls fn for every open entry: every launch but the settled ones (a
 * terminal state, its staging cleaned), of which the worker has nothing
 * left to do or to count. A settled launch stays in the table, for good:
 * a request read again finds it (contract section 1), but the poll tick
 * and the census walk only the open ones, so their cost follows the
 * launches in progress, not every launch the partitions ever carried. An
 * entry that settles leaves the list at the next walk; one replaced (a
 * newer attempt) joins it again. fn must not add or remove entries. */
void forge_owner_each(forge_owner_t *o, void (*fn)(void *ctx, forge_entry_t *),
                      void *ctx);

/* How many entries the open list holds (at most forge_owner_count). */
size_t forge_owner_open_count(const forge_owner_t *o);

/* How many launches the table holds. */
size_t forge_owner_count(const forge_owner_t *o);

#endif
