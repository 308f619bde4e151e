/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hooks/hooks.c - the hook table of hooks.h, no-ops until installed.
 * Threads: written by install and reset only, while no other thread runs
 * (hooks.h); read by any thread without a lock.
 */
#include "hooks/hooks.h"

static void moved(int from, int to, const char *reason)
{
    (void)from;
    (void)to;
    (void)reason;
}

static void nothing(void)
{
}

static void census(long long late_ms, const unsigned *live, size_t states,
                   unsigned archive_queue)
{
    (void)late_ms;
    (void)live;
    (void)states;
    (void)archive_queue;
}

static void ms_taken(long long ms)
{
    (void)ms;
}

static void archived(unsigned long long bytes)
{
    (void)bytes;
}

static void loop_ready(int readiness)
{
    (void)readiness;
}

static void partitions(size_t owned, size_t restoring)
{
    (void)owned;
    (void)restoring;
}

static void txn(forge_hook_txn_t outcome)
{
    (void)outcome;
}

static void kind(const char *what)
{
    (void)what;
}

static void usable(bool yes)
{
    (void)yes;
}

static void lag(const int32_t *parts, const long long *lags, size_t n)
{
    (void)parts;
    (void)lags;
    (void)n;
}

static void slurm_request(const char *method, const char *url, long status,
                          bool answered, long long ms)
{
    (void)method;
    (void)url;
    (void)status;
    (void)answered;
    (void)ms;
}

static void denied(const char *what)
{
    (void)what;
}

static void commit_failing(const char *reason, const char *message)
{
    (void)reason;
    (void)message;
}

static void log_chunk(unsigned long long bytes, unsigned long long skipped)
{
    (void)bytes;
    (void)skipped;
}

static void jwt(long long exp_s, bool minted)
{
    (void)exp_s;
    (void)minted;
}

/* Every hook a no-op: the table before install and after reset (a
 * macro: C wants a constant expression for the table's own start). */
#define NO_HOOKS                                                               \
    {                                                                          \
        .moved = moved, .dlq = nothing, .census = census,                      \
        .tick_done = ms_taken, .archived = archived, .beat = nothing,          \
        .loop_ready = loop_ready, .stopping = nothing, .jobcomp_record = kind, \
        .log_chunk = log_chunk, .partitions = partitions, .txn = txn,          \
        .rebalance = kind, .producer = usable, .lag = lag,                     \
        .kafka_denied = denied, .commit_failing = commit_failing,              \
        .slurm_request = slurm_request, .jwt = jwt,                            \
    }

static const forge_hooks_t none = NO_HOOKS;

static forge_hooks_t table = NO_HOOKS;
static bool installed;

const forge_hooks_t *forge_hooks(void)
{
    return &table;
}

/* Each hook of h, or the no-op when h leaves it NULL. */
#define TAKE(f) table.f = h->f ? h->f : none.f

void forge_hooks_install(const forge_hooks_t *h)
{
    TAKE(moved);
    TAKE(dlq);
    TAKE(census);
    TAKE(tick_done);
    TAKE(archived);
    TAKE(beat);
    TAKE(loop_ready);
    TAKE(stopping);
    TAKE(jobcomp_record);
    TAKE(log_chunk);
    TAKE(partitions);
    TAKE(txn);
    TAKE(rebalance);
    TAKE(producer);
    TAKE(lag);
    TAKE(kafka_denied);
    TAKE(commit_failing);
    TAKE(slurm_request);
    TAKE(jwt);
    installed = true;
}

void forge_hooks_reset(void)
{
    table = none;
    installed = false;
}

bool forge_hooks_installed(void)
{
    return installed;
}
