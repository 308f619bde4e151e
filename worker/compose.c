/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compose.c - `forge-worker run` put together: the three pools (submit.h,
 * poller.h, archive_work.h), the Kafka client (kafka.h) and, with push
 * completion on, the jobcomp reader (kafka/jobcomp_reader.h) started,
 * wired into the consume loop as its seams' real implementations
 * (loop.h), the loop run until a stop is asked, drained, and everything
 * stopped in the order the loop needs: the reader first (nothing wakes
 * the Kafka client going away), then Kafka, the pools, the loop. Loop
 * thread only (the pools' and the reader's own threads aside).
 */
#include "compose.h"
#include "log/log.h"
#include "kafka/jobcomp_reader.h"
#include "loop/archive_work.h"
#include "loop/live_work.h"
#include "loop/loop.h"
#include "loop/poller.h"
#include "loop/pool.h"
#include "loop/submit.h"

/* ---- Kafka: kafka.h, one call each ----------------------------------------
 */

static bool k_poll(void *k, int timeout_ms, forge_kafka_message_t *msg)
{
    return forge_kafka_poll(k, timeout_ms, msg);
}

static void k_pause(void *k, int32_t p)
{
    forge_kafka_pause(k, p);
}

static void k_resume(void *k, int32_t p)
{
    forge_kafka_resume(k, p);
}

static void k_pause_all(void *k)
{
    forge_kafka_pause_all(k);
}

static forge_rc_t k_produce(void *k, const forge_kafka_record_t *r,
                            forge_error_t *err)
{
    return forge_kafka_produce_record(k, r, err);
}

static void k_fail_txn(void *k)
{
    forge_kafka_fail_txn(k);
}

static void k_mark_done(void *k, int32_t p, int64_t offset)
{
    forge_kafka_mark_done(k, p, offset);
}

static forge_kafka_outcome_t k_commit(void *k)
{
    return forge_kafka_commit(k);
}

static void k_restore_budget(void *k, int *one_ms, int *pass_ms)
{
    *one_ms = forge_kafka_restore_timeout_ms(k);
    *pass_ms = forge_kafka_restore_pass_ms(k);
}

static size_t k_restore(void *k, const int32_t *parts, size_t n,
                        forge_kafka_restore_fn fn, void *ctx, int timeout_ms,
                        bool *reached)
{
    return forge_kafka_restore(k, parts, n, fn, ctx, timeout_ms, reached);
}

static const forge_loop_kafka_ops_t kafka_ops = {
    k_poll,     k_pause,     k_resume, k_pause_all,      k_produce,
    k_fail_txn, k_mark_done, k_commit, k_restore_budget, k_restore,
};

/* ---- the pools: pool.h, by lane -------------------------------------------
 */

typedef struct pools {
    forge_pool_t *lane[FORGE_LANE__COUNT];
} pools_t;

static void p_post(void *p, forge_loop_lane_t lane, forge_work_t *work)
{
    forge_pool_post(((pools_t *)p)->lane[lane], work);
}

static forge_work_t *p_take(void *p, forge_loop_lane_t lane)
{
    return forge_pool_take(((pools_t *)p)->lane[lane]);
}

static bool p_settle(void *p, forge_loop_lane_t lane, long timeout_ms)
{
    return forge_pool_settle(((pools_t *)p)->lane[lane], timeout_ms);
}

static size_t p_in_flight(void *p, forge_loop_lane_t lane)
{
    return forge_pool_in_flight(((pools_t *)p)->lane[lane]);
}

static void p_interrupt(void *p, forge_loop_lane_t lane)
{
    forge_pool_interrupt(((pools_t *)p)->lane[lane]);
}

static void p_withdraw(void *p, const char *launch_id, int attempt)
{
    forge_submit_withdraw(((pools_t *)p)->lane[FORGE_LANE_SLURM], launch_id,
                          attempt);
}

static const forge_loop_pool_ops_t pool_ops = {
    p_post, p_take, p_settle, p_in_flight, p_interrupt, p_withdraw,
};

/* ---- push completion: kafka/jobcomp_reader.h ------------------------------
 */

static bool j_next(void *r, char **bytes, size_t *len)
{
    return forge_jobcomp_reader_next(r, bytes, len);
}

static const forge_loop_jobcomp_ops_t jobcomp_ops = {j_next};

/* A pool's result wakes the loop's Kafka poll (pool.h, kafka.h); so does
 * a jobcomp record joining the reader's empty queue. */
static void wake_loop(void *kafka)
{
    forge_kafka_wake(kafka);
}

static void notify_each(pools_t *p, forge_kafka_t *kafka)
{
    for (int i = 0; i < FORGE_LANE__COUNT; i++)
        if (p->lane[i])
            forge_pool_set_notify(p->lane[i], kafka ? wake_loop : NULL, kafka);
}

static forge_rc_t start_pools(const forge_config_t *cfg,
                              const forge_series_catalog_t *catalog,
                              const forge_tenants_t *tenants,
                              const forge_loop_t *loop, pools_t *p,
                              forge_error_t *err)
{
    forge_rc_t rc;

    if ((rc = forge_submit_start(cfg, catalog, tenants,
                                 forge_loop_generations(loop),
                                 &p->lane[FORGE_LANE_SLURM], err)) ||
        (rc = forge_poller_start(cfg, &p->lane[FORGE_LANE_POLLER], err)))
        return rc;
    if ((rc = forge_files_start(cfg, tenants, FORGE_ARCHIVE_THREADS,
                                &p->lane[FORGE_LANE_FILES], err)))
        return rc;
    return forge_live_work_start(cfg, &p->lane[FORGE_LANE_LIVE], err);
}

int forge_worker_run(const forge_config_t *cfg,
                     const forge_series_catalog_t *catalog,
                     const forge_tenants_t *tenants,
                     const forge_sealer_t *sealer, volatile sig_atomic_t *stop)
{
    forge_loop_t *loop = forge_loop_new(cfg, catalog, tenants, sealer);
    forge_kafka_handlers_t h = forge_loop_handlers(loop);
    pools_t pools = {{NULL}};
    forge_kafka_t *kafka = NULL;
    forge_jobcomp_reader_t *jobcomp = NULL;
    forge_error_t err = {0};
    int rc = 78;

    forge_loop_set_pools(loop, &pool_ops, &pools);
    if (start_pools(cfg, catalog, tenants, loop, &pools, &err) ||
        forge_kafka_new(cfg, &h, FORGE_KAFKA_WORKER, stop, &kafka, &err)) {
        forge_log_error("cannot start: %s", err.message);
        /* 78 is "the configuration is wrong": not for a broker's answer */
        if (err.code == FORGE_EIO)
            rc = *stop ? 0 : 1;
        goto out;
    }
    forge_loop_set_kafka(loop, &kafka_ops, kafka);
    notify_each(&pools, kafka);
    if (cfg->topic_jobcomp &&
        forge_jobcomp_reader_start(cfg, wake_loop, kafka, &jobcomp, &err)) {
        forge_log_error("cannot start: %s", err.message);
        goto out;
    }
    if (jobcomp)
        forge_loop_set_jobcomp(loop, &jobcomp_ops, jobcomp);
    forge_log_info("forge-worker %s running: group %s, topic %s",
                   cfg->worker_id, cfg->kafka_group_id, cfg->topic_requests);
    while (!*stop && !forge_loop_fatal(loop))
        forge_loop_step(loop);
    if (!forge_loop_fatal(loop))
        forge_loop_drain(loop);
    rc = forge_loop_fatal(loop) ? 1 : 0;
out:
    forge_loop_set_jobcomp(loop, NULL, NULL);
    forge_jobcomp_reader_stop(jobcomp); /* joined: it wakes nothing more */
    notify_each(&pools, NULL);  /* no wake of a Kafka client going away */
    forge_kafka_destroy(kafka); /* leaves the group: revoke + flush */
    for (int i = 0; i < FORGE_LANE__COUNT; i++)
        forge_pool_stop(pools.lane[i]); /* an archive in progress finishes */
    forge_loop_destroy(loop);
    forge_log_info("stopped (exit %d)", rc);
    return rc;
}
