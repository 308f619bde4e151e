/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/budget.c - a cluster's request budget (budget.h): the process's
 * list of budgets (one per slurmrestd URL and rate, shared by reference
 * count), the bucket (GCRA: `due` is when the next token is due), the
 * interruptible wait, and the rate-limited log line that says the budget
 * held requests back.
 *
 * Threads: `registry_lock` guards the list and the reference counts; each
 * budget's `lock` its bucket and counters. A waiter reserves its slot
 * under the lock, then sleeps without it.
 */
#include "slurm/budget.h"
#include "clock/clock.h"
#include "log/log.h"
#include "base/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_S       1000000000LL
#define NS_PER_MS      1000000LL
#define WAIT_SLICE_NS  (50 * NS_PER_MS) /* how soon a waiter sees a stop */
#define BURST_FRACTION 10 /* tokens that pile up: rps / this, at least 1 */

struct forge_slurm_budget {
    char *url;
    int rps;
    int holders; /* registry_lock */
    struct forge_slurm_budget *next;
    pthread_mutex_t lock;
    long long interval_ns; /* between two tokens */
    long long burst_ns;    /* how far ahead of `due` a request may go */
    long long due_ns;      /* when the next token is due; 0: never asked */
    /* what the log has not said yet (lock) */
    long long logged_ns; /* the last line; 0: none */
    unsigned long waited;
    long long longest_ns;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static forge_slurm_budget_t *registry;

static forge_slurm_budget_t *budget_new(const char *url, int rps)
{
    forge_slurm_budget_t *b = forge_xcalloc(1, sizeof(*b));
    long long burst = rps / BURST_FRACTION;

    b->url = forge_xstrdup(url);
    b->rps = rps;
    b->interval_ns = NS_PER_S / rps;
    if (b->interval_ns < 1)
        b->interval_ns = 1;
    b->burst_ns = (burst > 1 ? burst - 1 : 0) * b->interval_ns;
    pthread_mutex_init(&b->lock, NULL);
    return b;
}

forge_slurm_budget_t *forge_slurm_budget_acquire(const char *base_url, int rps)
{
    forge_slurm_budget_t *b;

    if (rps <= 0)
        return NULL;
    pthread_mutex_lock(&registry_lock);
    for (b = registry; b; b = b->next)
        if (b->rps == rps && !strcmp(b->url, base_url))
            break;
    if (!b) {
        b = budget_new(base_url, rps);
        b->next = registry;
        registry = b;
    }
    b->holders++;
    pthread_mutex_unlock(&registry_lock);
    return b;
}

void forge_slurm_budget_release(forge_slurm_budget_t *b)
{
    bool last;

    if (!b)
        return;
    pthread_mutex_lock(&registry_lock);
    last = --b->holders == 0;
    for (forge_slurm_budget_t **link = &registry; last && *link;
         link = &(*link)->next)
        if (*link == b) {
            *link = b->next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
    if (!last)
        return;
    pthread_mutex_destroy(&b->lock);
    free(b->url);
    free(b);
}

/* Called with b->lock held. */
static long long reserve_locked(forge_slurm_budget_t *b, long long now)
{
    long long due = b->due_ns && b->due_ns > now ? b->due_ns : now;
    long long start = due - b->burst_ns;

    b->due_ns = due + b->interval_ns;
    return start > now ? start - now : 0;
}

long long forge_slurm_budget_reserve(forge_slurm_budget_t *b, long long now_ns)
{
    long long wait;

    pthread_mutex_lock(&b->lock);
    wait = reserve_locked(b, now_ns);
    pthread_mutex_unlock(&b->lock);
    return wait;
}

/* A request waited `wait` ns: counted, and said once per
 * FORGE_SLURM_BUDGET_LOG_MS (called with b->lock held; the line is
 * written after it is let go: *line set). */
static bool note_wait(forge_slurm_budget_t *b, long long now, long long wait,
                      unsigned long *waited, long long *longest)
{
    b->waited++;
    if (wait > b->longest_ns)
        b->longest_ns = wait;
    if (b->logged_ns &&
        now - b->logged_ns < FORGE_SLURM_BUDGET_LOG_MS * NS_PER_MS)
        return false;
    *waited = b->waited;
    *longest = b->longest_ns;
    b->logged_ns = now;
    b->waited = 0;
    b->longest_ns = 0;
    return true;
}

bool forge_slurm_budget_wait(forge_slurm_budget_t *b, const atomic_bool *stop)
{
    long long now, wait, until, longest = 0;
    unsigned long waited = 0;
    bool say = false;

    if (!b)
        return false;
    now = forge_clock_ns();
    pthread_mutex_lock(&b->lock);
    wait = reserve_locked(b, now);
    if (wait > 0)
        say = note_wait(b, now, wait, &waited, &longest);
    pthread_mutex_unlock(&b->lock);
    if (say)
        forge_log_info("slurmrestd request budget reached "
                       "(FORGE_SLURM_MAX_RPS=%d): %lu request%s held back "
                       "since the last such line, the longest %lld ms",
                       b->rps, waited, waited == 1 ? "" : "s",
                       longest / NS_PER_MS);
    until = now + wait;
    while ((now = forge_clock_ns()) < until) {
        if (stop && atomic_load(stop))
            return true;
        forge_clock_sleep_ns(until - now < WAIT_SLICE_NS ? until - now
                                                         : WAIT_SLICE_NS);
    }
    return stop && atomic_load(stop);
}
