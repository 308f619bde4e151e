/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/budget.h - the request budget of one cluster
 * (FORGE_SLURM_MAX_RPS): at most that many slurmrestd requests per second
 * from this process, every client of the cluster together (the submit
 * lanes, the poller, a CLI command), so a burst of launches or a tick over
 * many jobs never hammers slurmctld. Each HTTP request (a retry too) takes
 * one token before it is sent (http.c); a request that finds none waits
 * for its turn, and the budget says so in the log (at most one line per
 * FORGE_SLURM_BUDGET_LOG_MS, with how many waited and for how long).
 *
 * The bucket is a GCRA (a token bucket told as "the time the next token is
 * due"): tokens come every 1/rps s, at most a tenth of a second's worth
 * (and at least one) pile up while nothing is asked, and every waiter has
 * its own slot, so waiters go in the order they asked and never all at
 * once.
 *
 * Which budget: one per slurmrestd URL in the process (a cluster is what
 * its URL names), found or made by forge_slurm_budget_acquire and shared
 * by reference count; every client (client.h) holds one for its life.
 *
 * Threads: any; one mutex per budget guards its clock and counters, one
 * for the process's list of budgets. Waiting happens outside the lock.
 */
#ifndef FORGE_SLURM_BUDGET_H
#define FORGE_SLURM_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>

#define FORGE_SLURM_BUDGET_LOG_MS 10000

typedef struct forge_slurm_budget forge_slurm_budget_t;

/* The budget of the cluster at base_url with rps requests per second
 * (shared with every holder of the same url and rate), or NULL when rps is
 * 0 (no budget). Release it with forge_slurm_budget_release. */
forge_slurm_budget_t *forge_slurm_budget_acquire(const char *base_url, int rps);

/* Lets go of one holder's share; the last one frees it. NULL-safe. */
void forge_slurm_budget_release(forge_slurm_budget_t *b);

/* One request's token: at once while the bucket holds one, else after
 * waiting for its turn (in short slices: true once *stop is set, and then
 * the request must not be sent). NULL b: no budget, false at once. */
bool forge_slurm_budget_wait(forge_slurm_budget_t *b, const atomic_bool *stop);

/* The core of the bucket, for tests: the slot of a request asked at
 * now_ns (any monotonic origin), as how long it must wait (0: now). */
long long forge_slurm_budget_reserve(forge_slurm_budget_t *b, long long now_ns);

#endif
