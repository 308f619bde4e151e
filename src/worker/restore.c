/* SPDX-License-Identifier: Apache-2.0 */
/*
 * restore.c - a partition's launches read back from the state topic: on
 * assign, after an aborted transaction (memory back to what committed),
 * and again after a failed restore's backoff. Each restore begins a new
 * generation of the partition (generation.h) and makes the poller forget
 * what it saw (work.h: epoch); the partition stays paused until its
 * records are back. Restores in a row hold the loop for a bounded time
 * (kafka.h: the restore budget); those that do not fit wait for the
 * loop's next pass. Loop thread only.
 */
#include "core/clock.h"
#include "core/log.h"
#include "core/testpoint.h"
#include "worker/worker_int.h"

#define RESTORE_RETRY_MS     1000
#define RESTORE_RETRY_MAX_MS 30000

typedef struct restoring {
    worker_t *w;
    int32_t partition;
    size_t records;
    size_t unopened;     /* records whose sealed request did not open */
    forge_error_t first; /* why, for the first of them */
} restoring_t;

static void on_state_record(void *ctx, const char *key, size_t key_len,
                            const char *value, size_t len)
{
    restoring_t *r = ctx;
    forge_launch_record_t *rec = NULL;
    forge_request_t *req = NULL;
    forge_entry_t *e;
    forge_error_t err = {0};

    (void)key;
    (void)key_len;
    if (!value) /* a tombstone: nothing to carry on */
        return;
    if (forge_launch_record_decode(value, len, r->w->sealer, &rec, &err)) {
        forge_log_warn("state record skipped: %s", err.message);
        return;
    }
    if (rec->request_error && !r->unopened++)
        r->first = *rec->request_error;
    if (rec->request &&
        forge_request_parse(rec->request, rec->request_len, &req, &err))
        req = NULL; /* kept for its record; events go without labels */
    e = forge_owner_put(r->w->owner, rec, req, r->partition); /* later wins */
    e->submit_unknown = e->rec->job_id == 0;
    r->records++;
}

static void restore(worker_t *w, int32_t p);

/* The partition stays paused, nothing taken from it, and its restore is
 * tried again after a backoff (1 s, doubling, at most 30 s): a broker that
 * was away for a moment costs a moment, not the partition. */
static void restore_failed(worker_t *w, int32_t p)
{
    int n = forge_owner_restore_failures(w->owner, p);
    long long delay = RESTORE_RETRY_MS << (n < 5 ? n : 5);

    if (delay > RESTORE_RETRY_MAX_MS)
        delay = RESTORE_RETRY_MAX_MS;
    n = forge_owner_restore_failed(w->owner, p, forge_clock_ms() + delay);
    forge_log_error("partition %d: the state topic's end was not reached "
                    "(attempt %d); the partition stays paused, restored "
                    "again in %lld ms",
                    (int)p, n, delay);
}

/* Restores in a row hold the loop at most forge_kafka_restore_pass_ms (a
 * quarter of max.poll.interval.ms: the group must be polled in time), each
 * at most forge_kafka_restore_timeout_ms: one starts only if it can end
 * within the pass. */
static bool restore_fits(const worker_t *w, long long pass_start)
{
    int one, pass;

    w->kafka_ops->restore_budget(w->kafka, &one, &pass);
    return forge_clock_ms() - pass_start + one <= pass;
}

/* Restores that failed, once their backoff has passed, and those that
 * waited for a pass; as many as fit this one. */
void forge_worker_retry_restores(worker_t *w)
{
    long long start = forge_clock_ms();
    int32_t p;

    while (restore_fits(w, start) &&
           (p = forge_owner_restore_due(w->owner, forge_clock_ms())) >= 0)
        restore(w, p);
}

/* The partition as it was before it was restored: paused (nothing taken
 * from it until its records are back), its launches forgotten. */
static void unrestore(worker_t *w, int32_t p)
{
    w->kafka_ops->pause(w->kafka, p);
    w->poll_epoch++; /* the poller forgets what it saw: records rewind */
    forge_owner_drop(w->owner, p);
    forge_owner_assign(w->owner, p);
}

/* Restores parts in turn, as many as fit this pass (restore_fits); the
 * rest wait, paused, for the next pass of the loop
 * (forge_worker_retry_restores). */
void forge_worker_restore_each(worker_t *w, const int32_t *parts, size_t n)
{
    long long start = forge_clock_ms();

    for (size_t i = 0; i < n; i++) {
        if (restore_fits(w, start)) {
            restore(w, parts[i]);
            continue;
        }
        unrestore(w, parts[i]);
        forge_owner_restore_later(w->owner, parts[i], forge_clock_ms());
        forge_log_info("partition %d: restore waits for the loop's next pass",
                       (int)parts[i]);
    }
}

static void restore(worker_t *w, int32_t p)
{
    restoring_t r = {w, p, 0, 0, {0}};
    int one, pass;

    w->kafka_ops->restore_budget(w->kafka, &one, &pass);
    forge_log_info("partition %d: restoring", (int)p);
    unrestore(w, p);
    if (FORGE_TESTPOINT_RESTORE_FAIL() || FORGE_TESTPOINT_RESTORE_STALLS(one) ||
        w->kafka_ops->restore(w->kafka, p, on_state_record, &r, one) != 0) {
        restore_failed(w, p);
        return;
    }
    forge_owner_set_ready(w->owner, p);
    w->kafka_ops->resume(w->kafka, p);
    forge_log_info("partition %d restored (%zu records)", (int)p, r.records);
    if (r.unopened)
        forge_log_error("partition %d: %zu records carry a request this worker "
                        "cannot open (first: %s); those launches go on "
                        "without it, and an interrupted submit among them "
                        "fails (request_unavailable)",
                        (int)p, r.unopened, r.first.message);
}
