/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/observe.c - the worker's metric families and the hooks of observe.h.
 *
 * Threads and ownership: `registry` is made by forge_observe_start (the
 * observe service, before any other thread), which fills hooks/hooks.h's
 * table with `hooks`, and freed by forge_observe_stop once every other
 * thread has stopped; in between any thread updates it (its own
 * lock, metrics.c). `pending` is what the open transaction carries: the
 * loop's thread alone touches it (moved, dlq, txn). The JWT's expiry is
 * one atomic, stored by whichever slurmrestd caller saw the token and read
 * at render.
 */
#include "observe/observe.h"
#include "log/log.h"
#include "config/version.h"
#include "observe/health.h"
#include "observe/metrics.h"
#include "record/state.h"
#include "slurm/endpoints.h"

#include <librdkafka/rdkafka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    M_BUILD,
    M_MOVES,
    M_LIVE,
    M_REJECTED,
    M_DLQ,
    M_OWNED,
    M_RESTORING,
    M_LAG,
    M_REBALANCES,
    M_TXNS,
    M_SLURM_REQUESTS,
    M_SLURM_SECONDS,
    M_SLURM_AGE,
    M_TICK_SECONDS,
    M_TICK_LATE,
    M_ARCHIVE_QUEUE,
    M_ARCHIVE_BYTES,
    M_ARCHIVES,
    M_JWT,
    M_HEARTBEAT_AGE,
    M_READY,
    M_LIVE_OK,
    M_PRODUCER,
    M_KAFKA_DENIED,
    M_COMMIT_FAILING,
    M_SLURM_ENDPOINT,
    M_COMMIT_FAILURES,
    M_JOBCOMP,
    M_LOG_CHUNKS,
    M_LOG_BYTES,
    M_LOG_SKIPPED,
    M__COUNT
};

static const double slurm_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                       0.5,   1,    2.5,   5,    10,  30};
static const double tick_buckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                      2.5,  5,    10,  30,   60};
static const double late_buckets[] = {0.01, 0.05, 0.1, 0.25, 0.5,
                                      1,    2.5,  5,   10,   30};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const forge_metric_def_t defs[M__COUNT] = {
    [M_BUILD] = {"forge_build_info",
                 "This worker's build: version, the librdkafka it runs "
                 "with, the slurmrestd API version it speaks (always 1)",
                 FORGE_METRIC_GAUGE,
                 {"version", "librdkafka", "slurm_api"},
                 NULL,
                 0},
    [M_MOVES] = {"forge_launch_transitions_total",
                 "Launch state transitions committed (status events), by "
                 "from and to state (from NONE: a new launch)",
                 FORGE_METRIC_COUNTER,
                 {"from", "to"},
                 NULL,
                 0},
    [M_LIVE] = {"forge_launches_live",
                "Launches of the owned partitions not yet terminal, by state "
                "(at the last poll tick)",
                FORGE_METRIC_GAUGE,
                {"state"},
                NULL,
                0},
    [M_REJECTED] = {"forge_launches_rejected_total",
                    "Launches committed as REJECTED, by reason (the error "
                    "code)",
                    FORGE_METRIC_COUNTER,
                    {"reason"},
                    NULL,
                    0},
    [M_DLQ] = {"forge_dlq_records_total",
               "Requests with no usable launch_id committed to the DLQ topic",
               FORGE_METRIC_COUNTER,
               {NULL},
               NULL,
               0},
    [M_OWNED] = {"forge_partitions_owned",
                 "Partitions of the requests topic this worker owns",
                 FORGE_METRIC_GAUGE,
                 {NULL},
                 NULL,
                 0},
    [M_RESTORING] = {"forge_partitions_restoring",
                     "Owned partitions being restored from the state topic "
                     "(paused until then)",
                     FORGE_METRIC_GAUGE,
                     {NULL},
                     NULL,
                     0},
    [M_LAG] = {"forge_kafka_consumer_lag",
               "Requests not yet taken by this worker, per owned partition "
               "(the partition's last stable offset minus the consumer's "
               "position; librdkafka statistics, every 5 s)",
               FORGE_METRIC_GAUGE,
               {"partition"},
               NULL,
               0},
    [M_REBALANCES] = {"forge_kafka_rebalances_total",
                      "Consumer group rebalances seen, by kind (assigned, "
                      "revoked, lost)",
                      FORGE_METRIC_COUNTER,
                      {"kind"},
                      NULL,
                      0},
    [M_TXNS] = {"forge_kafka_transactions_total",
                "Kafka transactions ended, by outcome (committed, aborted)",
                FORGE_METRIC_COUNTER,
                {"outcome"},
                NULL,
                0},
    [M_SLURM_REQUESTS] = {"forge_slurm_requests_total",
                          "HTTP requests to slurmrestd, by operation and "
                          "HTTP code (none: no answer)",
                          FORGE_METRIC_COUNTER,
                          {"operation", "code"},
                          NULL,
                          0},
    [M_SLURM_SECONDS] = {"forge_slurm_request_duration_seconds",
                         "How long slurmrestd requests took, by operation",
                         FORGE_METRIC_HISTOGRAM,
                         {"operation"},
                         slurm_buckets,
                         N(slurm_buckets)},
    [M_SLURM_AGE] = {"forge_slurm_last_answer_age_seconds",
                     "Seconds since slurmrestd last answered a call (-1: "
                     "never)",
                     FORGE_METRIC_GAUGE,
                     {NULL},
                     NULL,
                     0},
    [M_TICK_SECONDS] = {"forge_poll_tick_duration_seconds",
                        "How long a poll tick's slurmrestd calls took",
                        FORGE_METRIC_HISTOGRAM,
                        {NULL},
                        tick_buckets,
                        N(tick_buckets)},
    [M_TICK_LATE] = {"forge_poll_tick_lateness_seconds",
                     "How late the loop came to a poll tick "
                     "(FORGE_POLL_INTERVAL_MS after the last)",
                     FORGE_METRIC_HISTOGRAM,
                     {NULL},
                     late_buckets,
                     N(late_buckets)},
    [M_ARCHIVE_QUEUE] = {"forge_archive_queue_depth",
                         "Finished launches of the owned partitions whose "
                         "logs are not archived yet (at the last poll tick)",
                         FORGE_METRIC_GAUGE,
                         {NULL},
                         NULL,
                         0},
    [M_ARCHIVE_BYTES] = {"forge_archive_bytes_total",
                         "Bytes of log archives written",
                         FORGE_METRIC_COUNTER,
                         {NULL},
                         NULL,
                         0},
    [M_ARCHIVES] = {"forge_archives_total",
                    "Log archives written",
                    FORGE_METRIC_COUNTER,
                    {NULL},
                    NULL,
                    0},
    [M_JWT] = {"forge_slurm_jwt_expiry_seconds",
               "Seconds until the slurmrestd token in use expires, by source "
               "(file: FORGE_SLURM_JWT_FILE, renewed by the site; minted: "
               "from FORGE_SLURM_JWT_KEY_FILE, renewed by the worker; absent: "
               "a token without exp)",
               FORGE_METRIC_GAUGE,
               {"source"},
               NULL,
               0},
    [M_HEARTBEAT_AGE] = {"forge_loop_heartbeat_age_seconds",
                         "Seconds since the consume loop's last pass (0 "
                         "before the first)",
                         FORGE_METRIC_GAUGE,
                         {NULL},
                         NULL,
                         0},
    [M_READY] = {"forge_ready",
                 "1 when /readyz answers 200",
                 FORGE_METRIC_GAUGE,
                 {NULL},
                 NULL,
                 0},
    [M_LIVE_OK] = {"forge_live",
                   "1 when /healthz answers 200",
                   FORGE_METRIC_GAUGE,
                   {NULL},
                   NULL,
                   0},
    [M_PRODUCER] = {"forge_kafka_producer_usable",
                    "1 when the transactional producer can commit, 0 while a "
                    "replacement waits for the broker",
                    FORGE_METRIC_GAUGE,
                    {NULL},
                    NULL,
                    0},
    [M_KAFKA_DENIED] = {"forge_kafka_denied",
                        "1 while the broker refuses the worker an operation "
                        "it needs (an ACL, its credentials, a certificate: "
                        "/readyz and the log name it)",
                        FORGE_METRIC_GAUGE,
                        {NULL},
                        NULL,
                        0},
    [M_COMMIT_FAILING] = {"forge_kafka_commit_failing_seconds",
                          "Seconds since Kafka transactions began failing to "
                          "commit (0: the last one committed); /readyz says "
                          "why",
                          FORGE_METRIC_GAUGE,
                          {NULL},
                          NULL,
                          0},
    [M_SLURM_ENDPOINT] = {"forge_slurm_endpoint_state",
                          "Each slurmrestd endpoint of FORGE_SLURM_REST_URL: 1 "
                          "for its state now, 0 for the others (in_use: "
                          "requests go there; standby; refused: it did not "
                          "answer, left alone for its cooldown)",
                          FORGE_METRIC_GAUGE,
                          {"url", "state"},
                          NULL,
                          0},
    [M_COMMIT_FAILURES] = {"forge_kafka_commit_failures_total",
                           "Failed attempts to commit a Kafka transaction, by "
                           "reason (not_enough_replicas, timed_out, "
                           "broker_unreachable, coordinator_unavailable, "
                           "leader_unavailable, group_moved, denied, other)",
                           FORGE_METRIC_COUNTER,
                           {"reason"},
                           NULL,
                           0},
    [M_JOBCOMP] = {"forge_jobcomp_records_total",
                   "Slurm jobcomp records read (push completion), by what "
                   "each decided: running, terminal, confirm (slurmctld "
                   "asked), ignore (another worker's, a duplicate, late), "
                   "invalid (it did not read)",
                   FORGE_METRIC_COUNTER,
                   {"action"},
                   NULL,
                   0},
    [M_LOG_CHUNKS] = {"forge_log_chunks_total",
                      "Live logs chunks published (log_chunk events)",
                      FORGE_METRIC_COUNTER,
                      {NULL},
                      NULL,
                      0},
    [M_LOG_BYTES] = {"forge_log_chunk_bytes_total",
                     "Bytes of launches' files the live logs chunks carried",
                     FORGE_METRIC_COUNTER,
                     {NULL},
                     NULL,
                     0},
    [M_LOG_SKIPPED] = {"forge_log_skipped_bytes_total",
                       "Bytes of launches' files the live logs skipped to "
                       "keep each launch within FORGE_LOG_LIVE_BUDGET_BYTES",
                       FORGE_METRIC_COUNTER,
                       {NULL},
                       NULL,
                       0},
};

static forge_metrics_t *_Atomic registry;
static atomic_llong jwt_exp;   /* epoch seconds, 0: unknown */
static atomic_bool jwt_minted; /* where the token came from */

#define REASONS_MAX 32

/* What the open transaction carries (loop thread only). */
static struct {
    unsigned moves[FORGE_STATE__COUNT][FORGE_STATE__COUNT];
    struct {
        char reason[48];
        unsigned n;
    } rejected[REASONS_MAX];
    size_t reasons;
    unsigned dlq;
} pending;

/* What hooks/hooks.h's callers reach: this file's functions and health.h's
 * facts. */
static const forge_hooks_t hooks = {
    .moved = forge_observe_moved,
    .dlq = forge_observe_dlq,
    .census = forge_observe_census,
    .tick_done = forge_observe_tick_done,
    .archived = forge_observe_archived,
    .beat = forge_health_beat,
    .loop_ready = forge_health_loop_ready,
    .stopping = forge_health_stopping,
    .partitions = forge_observe_partitions,
    .txn = forge_observe_txn,
    .rebalance = forge_observe_rebalance,
    .jobcomp_record = forge_observe_jobcomp,
    .log_chunk = forge_observe_log_chunk,
    .producer = forge_health_producer,
    .lag = forge_observe_lag,
    .kafka_denied = forge_health_kafka_denied,
    .commit_failing = forge_observe_commit_failing,
    .slurm_request = forge_observe_slurm,
    .jwt = forge_observe_jwt,
};

void forge_observe_start(const forge_config_t *cfg)
{
    forge_metrics_t *m = forge_metrics_new(defs, M__COUNT);
    const char *build[] = {forge_version(), rd_kafka_version_str(),
                           forge_api_version_name(cfg->slurm_api_version)};

    forge_metrics_set(m, M_BUILD, build, 1);
    forge_metrics_set(m, M_PRODUCER, NULL, 1);
    memset(&pending, 0, sizeof(pending));
    atomic_store(&jwt_exp, 0);
    atomic_store(&registry, m);
    forge_hooks_install(&hooks);
}

void forge_observe_stop(void)
{
    forge_hooks_reset();
    forge_metrics_free(atomic_exchange(&registry, NULL));
}

bool forge_observe_started(void)
{
    return atomic_load(&registry) != NULL;
}

/* One endpoint's forge_slurm_endpoint_state series: 1 for its state. */
static void endpoint_state(const char *url, forge_slurm_endpoint_state_t state,
                           int failures, void *ctx)
{
    forge_metrics_t *m = ctx;

    (void)failures;
    for (int s = FORGE_ENDPOINT_IN_USE; s <= FORGE_ENDPOINT_REFUSED; s++) {
        const char *labels[] = {url, forge_slurm_endpoint_state_name(s)};
        forge_metrics_set(m, M_SLURM_ENDPOINT, labels, s == (int)state);
    }
}

static void refresh(forge_metrics_t *m)
{
    forge_health_verdict_t v;
    long long age = forge_health_slurm_age_ms();
    long long exp = atomic_load(&jwt_exp);

    forge_health_live(&v);
    forge_metrics_set(m, M_LIVE_OK, NULL, v.ok);
    forge_metrics_set(m, M_HEARTBEAT_AGE, NULL,
                      forge_health_heartbeat_age_ms() / 1000.0);
    forge_health_ready(&v);
    forge_metrics_set(m, M_READY, NULL, v.ok);
    forge_metrics_set(m, M_PRODUCER, NULL, forge_health_producer_usable());
    forge_metrics_set(m, M_KAFKA_DENIED, NULL,
                      forge_health_kafka_denial(NULL, 0));
    forge_metrics_set(m, M_COMMIT_FAILING, NULL,
                      forge_health_commit_failing_ms(NULL, 0, NULL, 0) /
                          1000.0);
    forge_metrics_set(m, M_SLURM_AGE, NULL, age < 0 ? -1 : age / 1000.0);
    forge_slurm_endpoints_each(endpoint_state, m);
    if (exp) {
        const char *source[] = {atomic_load(&jwt_minted) ? "minted" : "file"};
        forge_metrics_set(m, M_JWT, source, (double)(exp - time(NULL)));
    }
}

char *forge_observe_render(void)
{
    forge_metrics_t *m = atomic_load(&registry);

    if (!m)
        return NULL;
    refresh(m);
    return forge_metrics_render(m);
}

/* ---- the open transaction (loop thread) --------------------------------- */

void forge_observe_moved(int from, int to, const char *reason)
{
    size_t i;

    if (!atomic_load(&registry) || from < 0 || from >= FORGE_STATE__COUNT ||
        to < 0 || to >= FORGE_STATE__COUNT)
        return;
    pending.moves[from][to]++;
    if (to != FORGE_STATE_REJECTED)
        return;
    reason = reason && *reason ? reason : "unknown";
    for (i = 0; i < pending.reasons; i++)
        if (!strcmp(pending.rejected[i].reason, reason))
            break;
    if (i == REASONS_MAX) { /* the last slot takes the rest */
        i = REASONS_MAX - 1;
        reason = "other";
    } else if (i == pending.reasons) {
        pending.reasons++;
    }
    snprintf(pending.rejected[i].reason, sizeof(pending.rejected[i].reason),
             "%s", reason);
    pending.rejected[i].n++;
}

void forge_observe_dlq(void)
{
    if (atomic_load(&registry))
        pending.dlq++;
}

static void count_pending(forge_metrics_t *m)
{
    for (int f = 0; f < FORGE_STATE__COUNT; f++)
        for (int t = 0; t < FORGE_STATE__COUNT; t++) {
            const char *from = forge_state_name((forge_state_t)f);
            const char *labels[] = {from ? from : "NONE",
                                    forge_state_name((forge_state_t)t)};
            if (pending.moves[f][t] && labels[1])
                forge_metrics_add(m, M_MOVES, labels, pending.moves[f][t]);
        }
    for (size_t i = 0; i < pending.reasons; i++) {
        const char *labels[] = {pending.rejected[i].reason};
        forge_metrics_add(m, M_REJECTED, labels, pending.rejected[i].n);
    }
    forge_metrics_add(m, M_DLQ, NULL, pending.dlq);
}

void forge_observe_txn(forge_hook_txn_t outcome)
{
    forge_metrics_t *m = atomic_load(&registry);
    const char *committed[] = {"committed"}, *aborted[] = {"aborted"};

    if (!m)
        return;
    if (outcome == FORGE_HOOK_TXN_COMMITTED) {
        count_pending(m);
        forge_metrics_add(m, M_TXNS, committed, 1);
    } else if (outcome == FORGE_HOOK_TXN_ABORTED) {
        forge_metrics_add(m, M_TXNS, aborted, 1);
    }
    memset(&pending, 0, sizeof(pending));
}

void forge_observe_commit_failing(const char *reason, const char *message)
{
    forge_metrics_t *m = atomic_load(&registry);
    const char *labels[] = {reason};

    forge_health_commit_failing(reason, message);
    if (m && reason)
        forge_metrics_add(m, M_COMMIT_FAILURES, labels, 1);
}

/* ---- the loop's other facts --------------------------------------------- */

void forge_observe_rebalance(const char *kind)
{
    const char *labels[] = {kind};

    forge_metrics_add(atomic_load(&registry), M_REBALANCES, labels, 1);
}

void forge_observe_jobcomp(const char *action)
{
    const char *labels[] = {action};

    forge_metrics_add(atomic_load(&registry), M_JOBCOMP, labels, 1);
}

void forge_observe_log_chunk(unsigned long long bytes,
                             unsigned long long skipped)
{
    forge_metrics_t *m = atomic_load(&registry);

    forge_metrics_add(m, M_LOG_CHUNKS, NULL, 1);
    forge_metrics_add(m, M_LOG_BYTES, NULL, (double)bytes);
    forge_metrics_add(m, M_LOG_SKIPPED, NULL, (double)skipped);
}

void forge_observe_partitions(size_t owned, size_t restoring)
{
    forge_metrics_t *m = atomic_load(&registry);

    forge_health_partitions(owned, restoring);
    forge_metrics_set(m, M_OWNED, NULL, (double)owned);
    forge_metrics_set(m, M_RESTORING, NULL, (double)restoring);
}

void forge_observe_census(long long late_ms, const unsigned *live,
                          size_t states, unsigned archive_queue)
{
    forge_metrics_t *m = atomic_load(&registry);

    if (!m)
        return;
    forge_metrics_observe(m, M_TICK_LATE, NULL,
                          late_ms > 0 ? late_ms / 1000.0 : 0);
    for (int s = 1; s < FORGE_STATE__COUNT; s++) {
        const char *labels[] = {forge_state_name((forge_state_t)s)};
        if (!forge_state_is_terminal((forge_state_t)s))
            forge_metrics_set(m, M_LIVE, labels,
                              (size_t)s < states ? live[s] : 0);
    }
    forge_metrics_set(m, M_ARCHIVE_QUEUE, NULL, archive_queue);
}

void forge_observe_tick_done(long long ms)
{
    forge_metrics_observe(atomic_load(&registry), M_TICK_SECONDS, NULL,
                          ms / 1000.0);
}

void forge_observe_archived(unsigned long long bytes)
{
    forge_metrics_t *m = atomic_load(&registry);

    forge_metrics_add(m, M_ARCHIVE_BYTES, NULL, (double)bytes);
    forge_metrics_add(m, M_ARCHIVES, NULL, 1);
}

void forge_observe_lag(const int32_t *partitions, const long long *lags,
                       size_t n)
{
    forge_metrics_t *m = atomic_load(&registry);
    char p[16];

    if (!m)
        return;
    forge_metrics_reset(m, M_LAG);
    for (size_t i = 0; i < n; i++) {
        const char *labels[] = {p};
        snprintf(p, sizeof(p), "%d", (int)partitions[i]);
        forge_metrics_set(m, M_LAG, labels, (double)lags[i]);
    }
}

/* ---- slurmrestd ---------------------------------------------------------- */

/* The operations by method and what follows "/slurm/<version>/" (or
 * "/slurmdb/<version>/": accounting); a trailing '/' matches a job id. */
static const struct {
    const char *method, *rest, *name;
} operations[] = {
    {"POST", "job/submit", "submit"}, {"GET", "jobs/state", "jobs_state"},
    {"GET", "jobs", "jobs"},          {"GET", "job/", "job"},
    {"DELETE", "job/", "cancel"},     {"GET", "ping", "ping"},
};

const char *forge_observe_slurm_operation(const char *method, const char *url)
{
    const char *p;

    if (strstr(url, "/openapi/"))
        return "openapi";
    if ((p = strstr(url, "/slurmdb/v")))
        return "accounting";
    if (!(p = strstr(url, "/slurm/v")) || !(p = strchr(p + 8, '/')))
        return "other";
    p++;
    for (size_t i = 0; i < N(operations); i++) {
        size_t n = strlen(operations[i].rest);
        if (strcmp(method, operations[i].method) ||
            strncmp(p, operations[i].rest, n))
            continue;
        if (operations[i].rest[n - 1] == '/' || !p[n] || p[n] == '?')
            return operations[i].name;
    }
    return "other";
}

void forge_observe_slurm(const char *method, const char *url, long status,
                         bool answered, long long ms)
{
    forge_metrics_t *m = atomic_load(&registry);
    char code[24];
    const char *op = forge_observe_slurm_operation(method, url);
    const char *labels[] = {op, code};

    /* a ping's answer counts only if slurmctld responds: probe.c says */
    if (answered && strcmp(op, "ping") != 0)
        forge_health_slurm_answered();
    if (!m)
        return;
    if (status > 0)
        snprintf(code, sizeof(code), "%ld", status);
    else
        snprintf(code, sizeof(code), "none");
    forge_metrics_add(m, M_SLURM_REQUESTS, labels, 1);
    forge_metrics_observe(m, M_SLURM_SECONDS, labels, ms / 1000.0);
}

void forge_observe_jwt(long long exp_s, bool minted)
{
    if (!exp_s)
        return; /* no JWT (a test's opaque token) */
    atomic_store(&jwt_minted, minted);
    atomic_store(&jwt_exp, exp_s);
}
