/* SPDX-License-Identifier: Apache-2.0 */
/*
 * retry.h - the retry policy for infrastructure failures (issue 26): how
 * many tries a launch's attempt gets, on which causes a try that ended is
 * tried again, after what backoff, and whether the nodes a failed try ran
 * on are excluded from the next. The fleet's default (FORGE_RETRY_*,
 * config.h) and a request's override (request.h: `retry`) merge into the
 * one policy a launch keeps in its record for all its tries (launch.h).
 *
 * A cause is the reason of a terminal status event (slurm/job_state.c):
 * node_fail, boot_fail, launch_failed and preempted are the
 * infrastructure's; failed (a non-zero exit), out_of_memory and timeout
 * are the job's own and are retried only when a policy names them.
 *
 * Pure: no I/O, no state; what the loop decides (loop/tries.c) is this
 * file's answer to (policy, reason, try).
 */
#ifndef FORGE_RETRY_H
#define FORGE_RETRY_H

#include "base/buf.h"

#include <stdbool.h>

/* The causes, one bit each, in the order their names are listed. */
enum {
    FORGE_RETRY_NODE_FAIL = 1u << 0,
    FORGE_RETRY_BOOT_FAIL = 1u << 1,
    FORGE_RETRY_LAUNCH_FAILED = 1u << 2,
    FORGE_RETRY_PREEMPTED = 1u << 3,
    FORGE_RETRY_FAILED = 1u << 4, /* a non-zero exit or a signal */
    FORGE_RETRY_OUT_OF_MEMORY = 1u << 5,
    FORGE_RETRY_TIMEOUT = 1u << 6,
};

#define FORGE_RETRY_CAUSE_COUNT 7

/* The causes that are a node's failure: only the nodes of a try that ended
 * with one of them are excluded from the next (a preemption, an exit, an
 * OOM, a time limit say nothing against the node). */
#define FORGE_RETRY_NODE_CAUSES                                                \
    (FORGE_RETRY_NODE_FAIL | FORGE_RETRY_BOOT_FAIL | FORGE_RETRY_LAUNCH_FAILED)
#define FORGE_RETRY_MAX_TRIES   10  /* a policy's max_tries: 1..10 */
#define FORGE_RETRY_BACKOFF_MAX 600 /* seconds: the first delay, and any */

typedef struct forge_retry_policy {
    int max_tries;   /* 1..FORGE_RETRY_MAX_TRIES; 1 (or 0): never retried */
    unsigned causes; /* FORGE_RETRY_* bits */
    int backoff_s;   /* before the second try; doubling, capped */
    bool exclude_failed_nodes;
} forge_retry_policy_t;

/* Which keys a request's `retry` object set (forge_retry_override_t). */
enum {
    FORGE_RETRY_SET_MAX_TRIES = 1u << 0,
    FORGE_RETRY_SET_CAUSES = 1u << 1,
    FORGE_RETRY_SET_BACKOFF = 1u << 2,
    FORGE_RETRY_SET_EXCLUDE = 1u << 3,
};

/* A request's override: each key it set (FORGE_RETRY_SET_*) wins over the
 * fleet's default, the others are the fleet's. */
typedef struct forge_retry_override {
    unsigned set;
    forge_retry_policy_t value;
} forge_retry_override_t;

/* The cause named name ("node_fail"), or 0. */
unsigned forge_retry_cause_named(const char *name, size_t len);

/* The name of one cause bit, or NULL. */
const char *forge_retry_cause_name(unsigned bit);

/* The cause a terminal event's reason is ("node_fail" -> NODE_FAIL,
 * "timeout" -> TIMEOUT, "failed" -> FAILED), or 0: not a cause (a
 * cancel, LOST, deadline, a refusal). NULL-safe. */
unsigned forge_retry_cause_of_reason(const char *reason);

/* A comma-separated list of cause names ("node_fail,boot_fail") into
 * *causes; blanks around names are allowed, an empty list is none. False
 * on a name that is not a cause (*bad: where it begins). */
bool forge_retry_causes_parse(const char *list, unsigned *causes,
                              const char **bad);

/* causes as the list forge_retry_causes_parse reads, in the names' order
 * ("" for none), appended to out. */
void forge_retry_causes_format(unsigned causes, forge_buf_t *out);

/* The policy of a launch: fleet's, each key the override set taken from
 * it. override NULL: the fleet's. */
forge_retry_policy_t
forge_retry_policy_merge(const forge_retry_policy_t *fleet,
                         const forge_retry_override_t *override);

/* Whether a launch under p may ever be retried after try try_num (1-based):
 * a try is left and some cause is named. */
bool forge_retry_may_retry(const forge_retry_policy_t *p, int try_num);

/* What a try that ended with a terminal event's reason leads to. */
typedef struct forge_retry_decision {
    bool retry;         /* try again: next_try after delay_ms */
    bool exhausted;     /* a cause of p, but no try left */
    unsigned cause;     /* the reason's cause bit, 0: none */
    int next_try;       /* try_num + 1 when retried */
    long long delay_ms; /* backoff before next_try */
} forge_retry_decision_t;

/* The decision for try try_num (1-based) of a launch under p that ended
 * with reason (a terminal event's): retried when the reason is a cause p
 * names and a try is left. */
forge_retry_decision_t forge_retry_decide(const forge_retry_policy_t *p,
                                          const char *reason, int try_num);

/* The delay before try next_try (>= 2): backoff_s, doubled for each try
 * after the second, at most FORGE_RETRY_BACKOFF_MAX seconds. */
long long forge_retry_backoff_ms(const forge_retry_policy_t *p, int next_try);

#endif
