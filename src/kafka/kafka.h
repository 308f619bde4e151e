/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka.h - librdkafka stays behind this wall. One consumer (the requests
 * topic, a consumer group with cooperative-sticky assignment, manual
 * offsets, read_committed), one transactional producer (KIP-447: input
 * offsets committed inside the transaction that carries the events and the
 * state records), and a group-less reader of the state topic for restores.
 *
 * Threads: every function here is called from the consume loop's thread
 * only (the rebalance callbacks run inside forge_kafka_poll on that thread);
 * a restore reads on a thread of its own too, joined before it returns.
 */
#ifndef FORGE_KAFKA_H
#define FORGE_KAFKA_H

#include "config/config.h"
#include "base/error.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct forge_kafka forge_kafka_t;

/* Called from forge_kafka_poll() during a rebalance, on the loop's thread.
 * assigned: the partitions are assigned and paused; the callee restores
 * them and calls forge_kafka_resume(). revoked: pending work of the loop
 * was committed (or, when lost, aborted) before; the callee drops them. */
typedef struct forge_kafka_handlers {
    void *ctx;
    void (*assigned)(void *ctx, const int32_t *partitions, size_t n);
    void (*revoked)(void *ctx, const int32_t *partitions, size_t n, bool lost);
    /* Commit what is pending before these partitions go (0 on success). */
    int (*flush)(void *ctx, const int32_t *partitions, size_t n);
} forge_kafka_handlers_t;

/* One request message, borrowed until the next forge_kafka_poll(). */
typedef struct forge_kafka_message {
    int32_t partition;
    int64_t offset;
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
} forge_kafka_message_t;

/* Who a forge_kafka_t serves: `run`'s worker, whose ACLs are checked at
 * start (kafka_access.c: a missing one is FORGE_ECONFIG), or reconcile's
 * repairs, which run as the operator with other ACLs. */
typedef enum forge_kafka_role {
    FORGE_KAFKA_WORKER,
    FORGE_KAFKA_RECONCILE,
} forge_kafka_role_t;

/* The consumer and the transactional producer. A broker away at start is
 * waited for until *stop (kafka.c, init_transactions); FORGE_ECONFIG: the
 * configuration is wrong (for the worker: an ACL it lacks, its
 * credentials or the broker's certificate refused); FORGE_EIO: the broker
 * refused (or *stop). */
forge_rc_t forge_kafka_new(const forge_config_t *cfg,
                           const forge_kafka_handlers_t *handlers,
                           forge_kafka_role_t role, volatile sig_atomic_t *stop,
                           forge_kafka_t **out,
                           forge_error_t *err) FORGE_WARN_UNUSED;

/* Closes the consumer (leaving the group: the revoke handler runs), aborts
 * an open transaction, destroys everything. NULL-safe. */
void forge_kafka_destroy(forge_kafka_t *k);

/* Serves callbacks; returns true with *msg when a request arrived within
 * timeout_ms. Consumer errors are logged, never fatal. */
bool forge_kafka_poll(forge_kafka_t *k, int timeout_ms,
                      forge_kafka_message_t *msg);

/* Any thread: the forge_kafka_poll waiting now (or the next one) returns
 * at once, false. A pool that has finished work calls it (run.c), so the
 * loop takes results as they come instead of when its poll times out. */
void forge_kafka_wake(forge_kafka_t *k);

void forge_kafka_pause(forge_kafka_t *k, int32_t partition);
void forge_kafka_resume(forge_kafka_t *k, int32_t partition);
void forge_kafka_pause_all(forge_kafka_t *k);

/* ---- the transaction ---------------------------------------------------- */

typedef enum forge_kafka_outcome {
    FORGE_KAFKA_COMMITTED = 0,
    FORGE_KAFKA_ABORTED, /* rewound to the committed offsets: the caller
                            must drop in-memory changes and restore */
    FORGE_KAFKA_WAITING, /* nothing committed: the producer waits for the
                            broker (the caller drops the work deferred to
                            this commit; ABORTED follows once it is back) */
    FORGE_KAFKA_FATAL,   /* fenced or broken: exit and let a supervisor
                            restart the worker */
} forge_kafka_outcome_t;

/* A header of a record: value bytes of length len, borrowed. */
typedef struct forge_kafka_header {
    const char *name;
    const char *value;
    size_t len;
} forge_kafka_header_t;

/* One record to produce; everything borrowed until the call returns. */
typedef struct forge_kafka_record {
    const char *topic;
    int32_t partition; /* -1: the producer's partitioner (murmur2_random) */
    const char *key;   /* NULL: no key */
    size_t key_len;
    const void *value;
    size_t value_len;
    const forge_kafka_header_t *headers;
    size_t header_count;
} forge_kafka_record_t;

/* Adds a record to the current transaction (begun on first use). */
forge_rc_t forge_kafka_produce_record(forge_kafka_t *k,
                                      const forge_kafka_record_t *r,
                                      forge_error_t *err) FORGE_WARN_UNUSED;

/* An event or state record to produce: keyed by launch_id, value `len`
 * bytes, header content-type application/cloudevents+json (static).
 * partition -1: the partitioner's. Everything borrowed. */
forge_kafka_record_t forge_kafka_event_record(const char *topic,
                                              int32_t partition,
                                              const char *key,
                                              const void *value, size_t len);

/* A message of the current transaction could not even be made (a state
 * record that could not be sealed): the transaction must not commit
 * without it, so the next forge_kafka_commit aborts it, as after a failed
 * produce. */
void forge_kafka_fail_txn(forge_kafka_t *k);

/* The request at (partition, offset) is handled: its offset + 1 goes into
 * the transaction. */
void forge_kafka_mark_done(forge_kafka_t *k, int32_t partition, int64_t offset);

/* The partitions of the requests topic assigned to this consumer now. */
size_t forge_kafka_assigned_count(forge_kafka_t *k);

/* Every assigned partition's committed offset goes into the transaction
 * as it is (`forge-worker reconcile`: what it writes moves no offset, yet
 * the commit carries the group's generation, so the broker refuses it if
 * the group moved on meanwhile). A partition never committed is left out.
 * -1 when the committed offsets could not be read within timeout_ms. */
int forge_kafka_keep_offsets(forge_kafka_t *k, int timeout_ms);

/* True when produce or mark_done added something not yet committed. */
bool forge_kafka_pending(const forge_kafka_t *k);

/* Sends the offsets and commits; on an abortable error aborts and rewinds
 * the consumer to its committed offsets. */
forge_kafka_outcome_t forge_kafka_commit(forge_kafka_t *k);

/* ---- restore ----------------------------------------------------------- */

/* How long restores may hold the loop, from the consumer's
 * max.poll.interval.ms M (kafka.c): one forge_kafka_restore (of every
 * partition it reads) at most min(M/8, 60 s), restores in a pass of the
 * loop at most M/4 (then the loop polls the group). */
int forge_kafka_restore_timeout_ms(const forge_kafka_t *k);
int forge_kafka_restore_pass_ms(const forge_kafka_t *k);

/* Called for every record of a restore (value NULL for a tombstone). */
typedef void (*forge_kafka_restore_fn)(void *ctx, int32_t partition,
                                       const char *key, size_t key_len,
                                       const char *value, size_t len);

/* Reads partitions parts[0..n) of the state topic, all at once, each from
 * its beginning to its end (last stable offset), for at most timeout_ms in
 * all. One partition's records come in order on one thread; different
 * partitions' may come at the same time on different threads (the
 * caller's and the call's own, joined before it returns), so fn must be
 * safe for that. reached[i] (n of them): parts[i]'s end was reached.
 * Returns how many were. */
size_t forge_kafka_restore(forge_kafka_t *k, const int32_t *parts, size_t n,
                           forge_kafka_restore_fn fn, void *ctx, int timeout_ms,
                           bool *reached);

#endif
