/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loop.h - the consume loop (loop.c) and its two seams: everything it asks
 * of Kafka goes through forge_loop_kafka_ops_t, everything it asks of the
 * threads beside it through forge_loop_pool_ops_t. forge_worker_run
 * (run.c) wires in the real ones (kafka.h; the Slurm, poller and file
 * pools); tests/unit/test_loop.c drives the loop with fakes
 * (tests/unit/support_loop.c): a Kafka that keeps its topics in memory and
 * pools whose work the test carries out by hand.
 *
 * Threads: every function here, and every op, runs on the loop's thread.
 */
#ifndef FORGE_LOOP_H
#define FORGE_LOOP_H

#include "config/config.h"
#include "kafka/kafka.h"
#include "record/generation.h"
#include "record/seal.h"
#include "request/series.h"
#include "request/tenants.h"
#include "loop/work.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Kafka as the loop sees it (kafka.h says what each call does; `k` is the
 * implementation's own): the requests it is handed, its partitions paused
 * and resumed, one transaction at a time (records produced, requests
 * marked done, then commit, which may abort and rewind), and a partition's
 * state records read back. The group's rebalances come the other way: the
 * implementation calls forge_loop_handlers' callbacks from inside poll.
 */
typedef struct forge_loop_kafka_ops {
    bool (*poll)(void *k, int timeout_ms, forge_kafka_message_t *msg);
    void (*pause)(void *k, int32_t partition);
    void (*resume)(void *k, int32_t partition);
    void (*pause_all)(void *k);
    forge_rc_t (*produce)(void *k, const forge_kafka_record_t *r,
                          forge_error_t *err);
    void (*fail_txn)(void *k);
    void (*mark_done)(void *k, int32_t partition, int64_t offset);
    forge_kafka_outcome_t (*commit)(void *k);
    /* How long one restore may take, and restores in a row. */
    void (*restore_budget)(void *k, int *one_ms, int *pass_ms);
    /* kafka.h forge_kafka_restore: fn may run on other threads. */
    size_t (*restore)(void *k, const int32_t *parts, size_t n,
                      forge_kafka_restore_fn fn, void *ctx, int timeout_ms,
                      bool *reached);
} forge_loop_kafka_ops_t;

/* The threads beside the loop, one lane each (pool.h: items go out with
 * post, come back finished with take, oldest first). */
typedef enum forge_loop_lane {
    FORGE_LANE_SLURM,  /* SUBMIT, CLEAN_*, CANCEL: submit.h */
    FORGE_LANE_POLLER, /* POLL: poller.h */
    FORGE_LANE_FILES,  /* ARCHIVE, CLEANUP: archive_work.h */
    FORGE_LANE_LIVE,   /* LIVE: live_work.h */
    FORGE_LANE__COUNT
} forge_loop_lane_t;

/* The pools as the loop sees them (`pools` is the implementation's own).
 * post steals the item; take hands a finished one back, or NULL; settle
 * waits up to timeout_ms for every item out to finish (true when all
 * did); withdraw is forge_submit_withdraw on the Slurm lane. */
typedef struct forge_loop_pool_ops {
    void (*post)(void *pools, forge_loop_lane_t lane, forge_work_t *work);
    forge_work_t *(*take)(void *pools, forge_loop_lane_t lane);
    bool (*settle)(void *pools, forge_loop_lane_t lane, long timeout_ms);
    size_t (*in_flight)(void *pools, forge_loop_lane_t lane);
    void (*interrupt)(void *pools, forge_loop_lane_t lane);
    void (*withdraw)(void *pools, const char *launch_id, int attempt);
} forge_loop_pool_ops_t;

/* Slurm's jobcomp/kafka records (push completion, loop/jobcomp.c), as the
 * loop sees their source (kafka/jobcomp_reader.h in a worker; a queue the
 * test fills in the unit tests; `src` is the implementation's own). next
 * hands over the oldest record not yet taken: its payload (new: the
 * caller frees it) and length; false when none waits. */
typedef struct forge_loop_jobcomp_ops {
    bool (*next)(void *src, char **bytes, size_t *len);
} forge_loop_jobcomp_ops_t;

typedef struct forge_loop forge_loop_t;

/* A loop with an empty launch table (everything borrowed, must outlive
 * it; tenants NULL: none). Its pools and Kafka are set next, in that
 * order: the Slurm pool checks the loop's generations, and Kafka calls the
 * loop's handlers. */
forge_loop_t *forge_loop_new(const forge_config_t *cfg,
                             const forge_series_catalog_t *catalog,
                             const forge_tenants_t *tenants,
                             const forge_sealer_t *sealer);
const forge_generations_t *forge_loop_generations(const forge_loop_t *l);
void forge_loop_set_pools(forge_loop_t *l, const forge_loop_pool_ops_t *ops,
                          void *pools);
/* The rebalance callbacks Kafka is to call (ctx: l). */
forge_kafka_handlers_t forge_loop_handlers(forge_loop_t *l);
void forge_loop_set_kafka(forge_loop_t *l, const forge_loop_kafka_ops_t *ops,
                          void *k);

/* Push completion on: each pass takes the records waiting in src (NULL
 * ops: off, as before any call). */
void forge_loop_set_jobcomp(forge_loop_t *l,
                            const forge_loop_jobcomp_ops_t *ops, void *src);

/* One pass: a batch of requests, the pools' results, the poll tick when
 * due, the commit, restores waiting for a pass. */
void forge_loop_step(forge_loop_t *l);
/* How long outcomes alone wait to commit (loop.c's commit policy; 0: at
 * once, as the unit tests drive it). */
void forge_loop_set_outcome_commit_ms(forge_loop_t *l, int ms);
/* The next step runs the poll tick whatever the interval (the unit tests
 * drive the tick with it, not with the clock). */
void forge_loop_tick_now(forge_loop_t *l);
/* Shutting down: no new requests, the poll tick interrupted, submits and
 * cancels in flight waited for (FORGE_WORKER_DRAIN_MS), a last commit. */
void forge_loop_drain(forge_loop_t *l);
/* A commit said FORGE_KAFKA_FATAL: the loop must end. */
bool forge_loop_fatal(const forge_loop_t *l);
/* Drops work not yet posted, the launch table, the loop. Kafka must be
 * gone first (its revoke needs the loop) and the pools stopped (the Slurm
 * pool reads the generations). NULL-safe. */
void forge_loop_destroy(forge_loop_t *l);

/* How long a rebalance, or a shutdown, waits for Slurm calls in flight
 * before partitions leave (longer than one submit's worst case: see
 * loop.c on_flush). A shutdown waits once, and only for submits and
 * cancels: SIGTERM to exit stays within this bound plus about a second
 * (the interrupted call) and a commit, whatever slurmrestd does, and takes
 * a few seconds when no submit is out (deploy/forge-worker.service allows
 * 75 s). */
#define FORGE_WORKER_SETTLE_MS 45000
#define FORGE_WORKER_DRAIN_MS  FORGE_WORKER_SETTLE_MS
/* A cancel not yet confirmed by Slurm is sent again this often. */
#define FORGE_WORKER_CANCEL_RESEND_MS 30000

#endif
