/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.h - a few threads beside the consume loop, an inbox and an outbox:
 * the loop posts items, the threads run them through a handler table given
 * at start, the loop takes them back finished. The pool knows nothing of
 * what an item is (Slurm, archives and work kinds are its handlers'
 * business: submit.h, poller.h, archive_work.h).
 *
 * Threads and ownership: an item belongs to the poster until
 * forge_pool_post, to the pool (its inbox, then one of its threads) until
 * it lands in the outbox, then to whoever takes it (forge_pool_take). The
 * handlers' context belongs to the pool from forge_pool_start on (also
 * when the start fails), and is destroyed once its threads are joined.
 * forge_pool_each_pending lets the poster look at items the pool holds,
 * under the pool's lock, without taking them back.
 *
 * Order: items start in the order posted (per key, with keys:
 * forge_pool_start_lanes) and come back in the order they finish.
 */
#ifndef FORGE_POOL_H
#define FORGE_POOL_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>

#define FORGE_POOL_MAX_THREADS 64

typedef struct forge_pool_handlers {
    /* One item, on one of the pool's threads (ctx: the pool's context,
     * shared by its threads). */
    void (*run)(void *ctx, void *item);
    /* An item the pool drops (at forge_pool_stop: never run, or never
     * taken back). */
    void (*drop)(void *item);
    /* Optional. forge_pool_interrupt was called (any thread): cut the work
     * in hand short. */
    void (*interrupt)(void *ctx);
    /* Optional. ctx, once the pool's threads are joined. */
    void (*destroy)(void *ctx);
} forge_pool_handlers_t;

/* An item's key (forge_pool_start_lanes): items of one key run one at a
 * time in the order posted. The same item must always give the same
 * answer, from any
 * thread. */
typedef size_t (*forge_pool_lane_fn)(void *ctx, const void *item);

typedef struct forge_pool forge_pool_t;

/* `threads` threads (1 .. FORGE_POOL_MAX_THREADS) running h (copied) with
 * ctx (owned by the pool from here on, destroyed by h->destroy also when
 * the start fails). name: for error messages. */
forge_rc_t forge_pool_start(const char *name, size_t threads,
                            const forge_pool_handlers_t *h, void *ctx,
                            forge_pool_t **out,
                            forge_error_t *err) FORGE_WARN_UNUSED;

/* The same with keys: `lanes` threads, each taking the oldest item whose
 * key has no item running nor an older one waiting. Items of one key
 * never overtake each other nor run at once; other keys run side by side
 * on whichever threads are free (a burst is spread evenly, whatever its
 * keys hash to).
 * (forge_pool_start: any free thread takes the oldest item.) */
forge_rc_t forge_pool_start_lanes(const char *name, size_t lanes,
                                  const forge_pool_handlers_t *h,
                                  forge_pool_lane_fn lane, void *ctx,
                                  forge_pool_t **out,
                                  forge_error_t *err) FORGE_WARN_UNUSED;

/* Hands item to the pool (stolen); items (of one lane) start in the order
 * posted. */
void forge_pool_post(forge_pool_t *p, void *item);

/* On a pool's thread: its index, 0 .. threads - 1 (a handler keeps
 * per-thread things by it: submit.c's slurmrestd clients); SIZE_MAX on
 * any other thread. */
size_t forge_pool_seat(void);

/* notify(arg) is called each time an item lands in the outbox, on the
 * pool thread that ran it, under the pool's lock (so it must be quick and
 * must not call into the pool): the taker's wake-up, so that it need not
 * poll the outbox on a timer (run.c wakes the consume loop's Kafka poll
 * with it). NULL unsets it; once this returns, the old one is not called
 * any more. */
void forge_pool_set_notify(forge_pool_t *p, void (*notify)(void *arg),
                           void *arg);

/* The oldest finished item (the caller owns it), or NULL. Never blocks. */
void *forge_pool_take(forge_pool_t *p);

/* Waits up to timeout_ms (monotonic) until every posted item is finished
 * (in the outbox, ready for forge_pool_take), or the pool is interrupted.
 * True when all are. */
bool forge_pool_settle(forge_pool_t *p, long timeout_ms);

/* Items posted and not yet taken back. */
size_t forge_pool_in_flight(forge_pool_t *p);

/* visit(ctx, item) for each item in the inbox or running, under the
 * pool's lock (visit must not call into the pool). */
void forge_pool_each_pending(forge_pool_t *p, void (*visit)(void *, void *),
                             void *ctx);

/* Stops p without waiting (forge_pool_stop's first half, for work whose
 * results are no longer wanted): no item starts from now on, settle waits
 * no more, and the handlers' interrupt is called. forge_pool_stop still
 * joins. */
void forge_pool_interrupt(forge_pool_t *p);

/* Interrupts, joins (the items in hand end as their handler lets them),
 * drops what is left in the inbox and the outbox, destroys the context.
 * NULL-safe. */
void forge_pool_stop(forge_pool_t *p);

#endif
