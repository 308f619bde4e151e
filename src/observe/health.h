/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/health.h - what /healthz and /readyz answer, and systemd's
 * READY/WATCHDOG/STOPPING (notify.h), from facts the worker publishes:
 *
 *   live   the consume loop made a pass within FORGE_HEALTH_STALL_S (its
 *          heartbeat); before its first pass (waiting for the broker at
 *          start) and while it drains, live too. A broker or slurmrestd
 *          outage is no liveness failure: the loop keeps passing.
 *   ready  live, not stopping, the group has assigned this worker and
 *          every partition it owns is restored (owning none: a standby,
 *          ready, and the body says so), the transactional producer is
 *          usable (not a replacement waiting for the broker), and a
 *          slurmrestd call was answered within FORGE_READY_SLURM_S (the
 *          probe, probe.h, pings when nothing else asked).
 *
 * The publishers reach these through hooks/hooks.h's table (observe.c
 * fills it), never by name: nothing below observe/ includes this file.
 *
 * Threads: the publishers (the loop: beat, readiness, partitions,
 * producer, stopping; any slurmrestd caller: slurm_answered) store into
 * atomics; the listener's thread reads them (forge_health_live/_ready).
 * Nothing here calls into the loop.
 */
#ifndef FORGE_OBSERVE_HEALTH_H
#define FORGE_OBSERVE_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

/* Sets the bounds (seconds) and forgets every fact: at start. */
void forge_health_init(int stall_s, int slurm_s);

/* The loop made a pass: the heartbeat, and WATCHDOG=1 to systemd when it
 * asks for one (at most every quarter of its interval). */
void forge_health_beat(void);

/* The loop's readiness, as its log says it (0 not ready, 1 ready, 2
 * standby); READY=1 goes to systemd the first time it is not 0. */
void forge_health_loop_ready(int readiness);

/* Owned partitions, and how many of them are restoring (record/owner.c,
 * at every change, through hooks/hooks.h's partitions hook:
 * forge_observe_partitions). */
void forge_health_partitions(size_t owned, size_t restoring);

/* The transactional producer can (true) or cannot (a replacement waits
 * for the broker) carry a transaction. */
void forge_health_producer(bool usable);

/* slurmrestd answered a call (an HTTP answer that is no server error
 * and no auth refusal). */
void forge_health_slurm_answered(void);

/* Milliseconds since slurmrestd last answered, -1 never. */
long long forge_health_slurm_age_ms(void);

/* Milliseconds since the loop's last pass, 0 before the first. */
long long forge_health_heartbeat_age_ms(void);

/* What forge_health_producer said last (true at first). */
bool forge_health_producer_usable(void);

/* The broker refuses the worker what (hooks/hooks.h's kafka_denied);
 * NULL: it allows everything again. Not ready meanwhile. */
void forge_health_kafka_denied(const char *what);

/* Whether the broker refuses the worker now; its words into what (size
 * bytes, may be 0). */
bool forge_health_kafka_denial(char *what, size_t size);

/* Transactions fail to commit (hooks/hooks.h's commit_failing): reason
 * and Kafka's words; NULL once one committed. Not ready meanwhile: the
 * worker publishes nothing and acts on nothing new until one commits. */
void forge_health_commit_failing(const char *reason, const char *message);

/* Milliseconds since transactions began failing (0: the last one
 * committed); their reason and words into reason and message (sizes may
 * be 0). */
long long forge_health_commit_failing_ms(char *reason, size_t rsize,
                                         char *message, size_t msize);

/* The worker drains (SIGTERM): not ready, STOPPING=1 to systemd. */
void forge_health_stopping(void);

typedef struct forge_health_verdict {
    bool ok;         /* 200, else 503 */
    char body[4096]; /* one JSON object saying why (its parts bounded) */
} forge_health_verdict_t;

void forge_health_live(forge_health_verdict_t *v);
void forge_health_ready(forge_health_verdict_t *v);

/* The bounds, for the metrics (seconds). */
int forge_health_stall_s(void);
int forge_health_slurm_s(void);

#endif
