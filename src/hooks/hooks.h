/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hooks/hooks.h - what happens in the worker, told to whoever watches it,
 * without the teller depending on the watcher: one table of function
 * pointers taking numbers, strings and enums only. The Slurm client
 * (a request answered, a JWT used), Kafka (a transaction ended, a
 * rebalance, the producer's state, the consumer's lag), the owner table
 * (partitions owned and restoring) and the consume loop (moves, the DLQ,
 * its heartbeat and readiness, its census at each poll tick) call
 * forge_hooks()->x(...); observability (src/observe/) fills the table in
 * forge_observe_start and turns the calls into metrics and health facts.
 * Every hook is a no-op until then (the commands other than `run`, and the
 * unit tests of other modules, never install it), so a caller never
 * checks.
 *
 * Threads: forge_hooks_install runs once, on the starting thread, before
 * any other thread exists (`run`: the observe service starts before
 * Kafka, the pools and the loop); forge_hooks_reset once every other
 * thread has stopped. In between the table does not change, so any
 * thread reads it without a lock. Which thread calls which hook is said
 * at each one ("loop": the consume loop's thread only; "any": any
 * thread); a hook must be safe for its callers' threads and must not
 * block (observe/: atomics and the metrics registry's own short lock).
 */
#ifndef FORGE_HOOKS_H
#define FORGE_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How the open Kafka transaction ended. */
typedef enum forge_hook_txn {
    FORGE_HOOK_TXN_NONE,      /* nothing was sent: forget what it held */
    FORGE_HOOK_TXN_COMMITTED, /* count what it held */
    FORGE_HOOK_TXN_ABORTED,   /* forget what it held, count an abort */
} forge_hook_txn_t;

typedef struct forge_hooks {
    /* ---- the consume loop's (loop thread) ---- */
    /* A launch moved (a status event went into the open transaction):
     * from and to are record/state.h's forge_state_t values; reason the
     * REJECTED's error code, else NULL. */
    void (*moved)(int from, int to, const char *reason);
    /* A message went to the DLQ in the open transaction. */
    void (*dlq)(void);
    /* At each poll tick: how late it came (ms), and the launches of the
     * owned partitions: live[s] of state s (forge_state_t values, states
     * of them), finished ones waiting for their archive. */
    void (*census)(long long late_ms, const unsigned *live, size_t states,
                   unsigned archive_queue);
    /* A poll tick's calls answered after ms. */
    void (*tick_done)(long long ms);
    /* A launch's logs archived (bytes of the archive). */
    void (*archived)(unsigned long long bytes);
    /* The loop made a pass (its heartbeat). */
    void (*beat)(void);
    /* The loop's readiness: 0 not ready, 1 ready, 2 standby. */
    void (*loop_ready)(int readiness);
    /* The worker drains (SIGTERM). */
    void (*stopping)(void);
    /* A jobcomp record acted on (push completion, loop/jobcomp.c) by
     * what it decided: "running", "terminal", "confirm", "ignore", or
     * "invalid" (it did not read). */
    void (*jobcomp_record)(const char *action);
    /* A live logs chunk published (loop/live.c): the file bytes it
     * carries, and those its segments skipped (the budget). */
    void (*log_chunk)(unsigned long long bytes, unsigned long long skipped);

    /* ---- record/owner.c (loop thread) ---- */
    /* Owned partitions, and how many restore, at every change. */
    void (*partitions)(size_t owned, size_t restoring);

    /* ---- kafka/ (loop thread) ---- */
    /* The open transaction ended. */
    void (*txn)(forge_hook_txn_t outcome);
    /* A rebalance: "assigned", "revoked", "lost". */
    void (*rebalance)(const char *kind);
    /* The transactional producer can (true) or cannot (a replacement
     * waits for the broker) carry a transaction. */
    void (*producer)(bool usable);
    /* The consumer lag of the requests topic's partitions this worker
     * fetches (librdkafka's statistics), replacing the last. */
    void (*lag)(const int32_t *partitions, const long long *lags, size_t n);
    /* The broker refuses the worker (kafka_access.c): what it lacks ("OP
     * on KIND NAME (what for)", or the refusal's words); NULL once it
     * allows everything again. */
    void (*kafka_denied)(const char *what);
    /* A transaction failed to commit (kafka/txn.c: an attempt of its
     * commit, or its end): why as a short word (txn.c's reasons: metrics
     * label it) and Kafka's words; reason NULL once one committed again. */
    void (*commit_failing)(const char *reason, const char *message);

    /* ---- slurm/ (any thread) ---- */
    /* One HTTP request to slurmrestd (url: the whole URL), its HTTP
     * status (0: no answer), whether slurmrestd answered as one that can
     * act (forge_slurm_status_answered), and how long it took. */
    void (*slurm_request)(const char *method, const char *url, long status,
                          bool answered, long long ms);
    /* A JWT about to be used, read from the token file or minted: its
     * exp claim (epoch seconds, 0: none), never the token. */
    void (*jwt)(long long exp_s, bool minted);
} forge_hooks_t;

/* The table: every hook callable (a no-op when not installed). */
const forge_hooks_t *forge_hooks(void);

/* Copies h into the table (a NULL hook stays a no-op). Once, before any
 * other thread runs. */
void forge_hooks_install(const forge_hooks_t *h);

/* Every hook a no-op again, once every other thread has stopped. */
void forge_hooks_reset(void);

/* True between install and reset: whether anyone watches (a caller may
 * skip gathering what only a hook would take: the loop's census, the
 * consumer's statistics). */
bool forge_hooks_installed(void);

#endif
