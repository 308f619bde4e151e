/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/observe.h - the worker's metrics (docs/OPERATING.md lists them, with
 * docs/CONTRACT.md §5): one process-wide registry (metrics.h) and what the
 * worker's modules tell it where something happens. They never call here:
 * they call hooks/hooks.h's table, which forge_observe_start fills with
 * these functions (and health.h's), so nothing below observe/ depends on
 * it. Every function is a no-op until forge_observe_start (the commands
 * other than `run`, and the unit tests of other modules, never start it).
 *
 * Threads: functions marked "loop" run on the consume loop's thread only (what
 * the open transaction carries is counted when it commits, so an aborted
 * transaction counts nothing); the others on any thread. The listener's
 * thread renders (forge_observe_render). The registry has its own lock.
 */
#ifndef FORGE_OBSERVE_OBSERVE_H
#define FORGE_OBSERVE_OBSERVE_H

#include "config/config.h"
#include "hooks/hooks.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The registry, with build info from cfg (borrowed for the call), and
 * hooks/hooks.h's table filled (before any other thread runs). */
void forge_observe_start(const forge_config_t *cfg);
/* Every other thread has stopped: the hooks are no-ops again. */
void forge_observe_stop(void);
bool forge_observe_started(void);

/* Every metric in the text format 0.0.4 (new), the gauges computed at
 * scrape time (ages, readiness, seconds to the JWT's expiry) refreshed
 * first; NULL when not started. */
char *forge_observe_render(void);

/* loop: a launch moved (a status event went into the open transaction;
 * from and to: record/state.h's forge_state_t values); counted by from/to,
 * and REJECTED by reason, once it commits. */
void forge_observe_moved(int from, int to, const char *reason);

/* loop: a message went to the DLQ in the open transaction. */
void forge_observe_dlq(void);

/* loop: the open transaction ended (hooks.h says how). */
void forge_observe_txn(forge_hook_txn_t outcome);

/* A transaction failed to commit (why, Kafka's words), or one committed
 * (NULL): counted by reason, and health.h's fact. */
void forge_observe_commit_failing(const char *reason, const char *message);

/* loop: a jobcomp record acted on, by what it decided (hooks/hooks.h). */
void forge_observe_jobcomp(const char *action);
/* A live logs chunk published: its file bytes, and those skipped. */
void forge_observe_log_chunk(unsigned long long bytes,
                             unsigned long long skipped);

/* loop: a rebalance ("assigned", "revoked", "lost"). */
void forge_observe_rebalance(const char *kind);

/* loop: owned partitions and how many restore (gauges; health.h too). */
void forge_observe_partitions(size_t owned, size_t restoring);

/* loop, at each poll tick: how late it came (ms), and the launches of the
 * owned partitions the loop counted (loop/census.c): live[s] of each state
 * s (forge_state_t values, `states` of them), finished ones waiting for
 * their archive (the archive queue). */
void forge_observe_census(long long late_ms, const unsigned *live,
                          size_t states, unsigned archive_queue);

/* loop: a poll tick's calls answered after ms. */
void forge_observe_tick_done(long long ms);

/* loop: a launch's logs archived (bytes of the archive). */
void forge_observe_archived(unsigned long long bytes);

/* Any thread: one HTTP request to slurmrestd (url: the whole URL, its
 * operation read from the path), its HTTP status (0: no answer), whether
 * it was answered by a slurmrestd that can act (slurm/client.h's
 * forge_slurm_status_answered: OK, NOT_FOUND, REJECTED; no answer, a
 * server error or an auth refusal are not), and how long it took. An
 * answer holds readiness up (health.h); a ping's is left to the probe
 * (probe.h), which knows whether slurmctld responded. */
void forge_observe_slurm(const char *method, const char *url, long status,
                         bool answered, long long ms);

/* The operation a slurmrestd URL is ("submit", "jobs_state", "job",
 * "cancel", "jobs", "accounting", "ping", "openapi", "other"). */
const char *forge_observe_slurm_operation(const char *method, const char *url);

/* Any thread: the exp claim (epoch seconds; 0: none) of a JWT the client
 * is about to use, read from the token file or minted: the seconds until
 * it expires, labelled by where it came from. */
void forge_observe_jwt(long long exp_s, bool minted);

/* loop (librdkafka's statistics callback): the consumer lag of the
 * requests topic's partitions this worker consumes, replacing the last. */
void forge_observe_lag(const int32_t *partitions, const long long *lags,
                       size_t n);

#endif
