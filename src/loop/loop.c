/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loop.c - the consume loop. Threads and ownership:
 *   - this file runs on one thread, the loop's: it alone touches Kafka
 *     (through loop.h's Kafka ops: kafka.h in a worker, a fake in the unit
 *     tests), the launch table (owner.h) and the records in it;
 *   - slurmrestd calls and file work run on three pools of threads, one
 *     lane each of loop.h's pool ops (pool.h; the work: work.h): the Slurm
 *     lane for submits and cancels (submit.h), the poller's for poll ticks
 *     (poller.h), the files' (FORGE_ARCHIVE_THREADS threads) for archives
 *     and cleanups (archive_work.h), the live logs' (one thread) for
 *     reading running launches' output (live_work.h). Work goes out with post
 * and comes back through take; nothing slow ever runs here, so heartbeats and
 *     max.poll.interval.ms are safe, and a 1 GiB log never delays a poll
 *     tick. run.c starts them and wires them in.
 *
 * requests.c decides what each request message does (launch, cancel,
 * REJECTED, DLQ);
 * publish.c writes events and records into the transaction;
 * tick.c applies a poll tick's answer to the records;
 * jobcomp.c acts on Slurm's jobcomp records (push completion);
 * live.c reads running launches' output and publishes it (live logs);
 * finish.c archives and cleans after a terminal state;
 * restore.c reads a partition's records back from the state topic.
 *
 * Commit policy: after each short batch (at most BATCH_MESSAGES messages or
 * BATCH_MS), one transaction carries the events, the state records and the
 * offsets of the requests handled. Outcomes alone (a submit's result, a poll
 * tick's transitions: no request taken, no work waiting on the commit)
 * gather up to OUTCOME_COMMIT_MS first, so a burst of results from the
 * Slurm threads makes a few transactions, not one per loop step: the
 * broker, on the machine slurmctld may share, does less. Slurm sits
 * outside the transaction: a submit is posted only after the transaction
 * recording its intent (ACCEPTED) committed, and a submit whose outcome is
 * unknown is settled by the job's tag (submit.c). On an aborted transaction the
 * loop drops its in-memory state and restores every owned partition from the
 * state topic.
 *
 * Ownership of work already posted (generation.h has the whole story): a
 * restore begins a new generation of the partition, a revoke ends it, and
 * the Slurm thread refuses, right before it would touch Slurm or a
 * staging folder, work whose generation has passed; its results, and
 * those of work that ran before the change, find no entry here and are
 * dropped. A cancel of a launch whose submit is already posted withdraws
 * it on the Slurm thread (forge_submit_withdraw), so it never POSTs.
 */
#include "loop/loop.h"
#include "loop/loop_int.h"
#include "hooks/hooks.h"
#include "loop/census.h"
#include "clock/clock.h"
#include "log/log.h"
#include "record/owner.h"
#include "testpoint/testpoint.h"
#include "base/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH_MESSAGES    200
#define BATCH_MS          50
#define OUTCOME_COMMIT_MS 100
#define RETRY_BASE_MS     2000
#define RETRY_MAX_MS      60000

/* ---- results from the threads ------------------------------------------- */

static long long retry_delay_ms(int failures)
{
    long long d = RETRY_BASE_MS;

    while (--failures > 0 && d < RETRY_MAX_MS)
        d *= 2;
    return d < RETRY_MAX_MS ? d : RETRY_MAX_MS;
}

/* A restored intent whose sealed request did not open: whatever job an
 * interrupted submit left is cancelled by now (submit.c), and nothing is
 * guessed: the launch fails, saying why. */
static void fail_unreadable(forge_loop_t *w, forge_entry_t *e)
{
    change_t c = {FORGE_STATE_FAILED, "request_unavailable", NULL,
                  e->rec->request_error, NULL};
    forge_log_field_t f[] = {{"launch_id", e->rec->launch_id}};

    forge_log_fields(FORGE_LOG_ERROR, f, 1,
                     "the request of an interrupted submit cannot be read "
                     "back (%s): the launch fails",
                     e->rec->request_error->message);
    forge_loop_publish_event(w, e, &c, true);
}

/* A submit refused: REJECTED, or FAILED for a later try (the launch ran:
 * REJECTED only ever comes before a job, state.h). */
static forge_state_t refused_state(const forge_entry_t *e)
{
    return forge_launch_try(e->rec) > 1 ? FORGE_STATE_FAILED
                                        : FORGE_STATE_REJECTED;
}

static void on_submitted(forge_loop_t *w, forge_work_t *work)
{
    forge_entry_t *e = forge_loop_entry_of(w, work);
    json_t *slurm;

    if (!e) /* the partition moved: its new owner cleans and resubmits */
        return;
    e->busy = false;
    if (work->status == FORGE_SLURM_OK) {
        change_t c = {FORGE_STATE_SUBMITTED, NULL, NULL, NULL, NULL};
        e->rec->job_id = work->submit.job_id;
        e->rec->retry_not_before_ms = 0; /* the try is submitted */
        /* no submit needs its bytes again, unless a retry may */
        forge_launch_compact(e->rec);
        free(e->rec->component_ids);
        e->rec->component_ids = work->submit.component_ids;
        e->rec->component_count = work->submit.component_count;
        work->submit.component_ids = NULL;
        slurm = json_pack("{s:I, s:[], s:n, s:n, s:n, s:i}", "job_id",
                          (json_int_t)e->rec->job_id, "components", "exit_code",
                          "signal", "state_reason", "restart_count", 0);
        c.slurm = slurm;
        forge_loop_publish_event(w, e, &c, true);
        json_decref(slurm);
        if (e->rec->cancel_requested) {
            e->cancel_sent_ms = forge_clock_ms();
            forge_loop_defer(w, forge_loop_new_work(FORGE_WORK_CANCEL, e));
        }
    } else if (work->status == FORGE_SLURM_REJECTED && work->code) {
        /* refused before Slurm saw it (the staging folder unsafe, the
         * request's check): the reason is our own code */
        forge_error_t err = {0};
        change_t c = {refused_state(e), forge_rc_name(work->code), NULL, &err,
                      NULL};
        forge_error_set(&err, work->code, "$", "%s", work->message);
        forge_log_warn("launch %s refused (%s): %s", e->rec->launch_id,
                       forge_rc_name(work->code), work->message);
        forge_loop_publish_event(w, e, &c, true);
    } else if (work->status == FORGE_SLURM_REJECTED && !work->submit.request &&
               e->rec->request_error) {
        fail_unreadable(w, e);
    } else if (work->status == FORGE_SLURM_REJECTED) {
        forge_error_t err = {0};
        change_t c = {refused_state(e), "slurm_refused", NULL, &err, NULL};
        forge_error_set(&err, FORGE_ESCHEMA, "$", "Slurm refused the job: %s",
                        work->message);
        forge_loop_publish_event(w, e, &c, true);
    } else {
        e->submit_failures++;
        e->retry_at_ms = forge_clock_ms() + retry_delay_ms(e->submit_failures);
        forge_log_warn("submit of %s failed (%s): %s; retrying later",
                       e->rec->launch_id, forge_slurm_status_name(work->status),
                       work->message);
    }
}

/* An intent cancelled before its submit was known, now cleaned (the jobs
 * its tag found cancelled), or a submit withdrawn before its POST:
 * CANCELLED; else tried again later. */
static void on_withdrawn(forge_loop_t *w, forge_work_t *work)
{
    forge_entry_t *e = forge_loop_entry_of(w, work);
    change_t c = {FORGE_STATE_CANCELLED, "requested", NULL, NULL, NULL};

    if (!e)
        return;
    e->busy = false;
    if (work->status == FORGE_SLURM_OK) {
        forge_loop_publish_event(w, e, &c, true);
        return;
    }
    e->retry_at_ms = forge_clock_ms() + retry_delay_ms(++e->submit_failures);
    forge_log_warn("cleaning the cancelled intent of %s failed (%s): %s; "
                   "retrying later",
                   e->rec->launch_id, forge_slurm_status_name(work->status),
                   work->message);
}

/* Refused by the Slurm thread: made in a generation of its partition that has
 * passed (generation.h). Nothing of it reached Slurm after that; the
 * generation now current re-derives from its records what is left to do. */
static void on_stale(forge_loop_t *w, forge_work_t *work)
{
    forge_entry_t *e = forge_loop_entry_of(w, work);

    if (e) /* the same entry, leaving with its partition */
        e->busy = false;
}

static void on_cancelled(forge_loop_t *w, forge_work_t *work)
{
    forge_entry_t *e = forge_loop_entry_of(w, work);

    if (e)
        e->busy = false;
    if (work->status != FORGE_SLURM_OK && work->status != FORGE_SLURM_NOT_FOUND)
        forge_log_warn("cancel of job %u failed (%s): %s", work->cancel.job_id,
                       forge_slurm_status_name(work->status), work->message);
}

#define SWEEP_RETRY_MS 30000

/* The clean of an interrupted submit ran: a POST of it that slurmrestd
 * still held may land later, held (submit.c), and is swept
 * FORGE_LATE_JOB_SWEEP_S from now. */
static void sweep_later(forge_loop_t *w, const forge_work_t *work)
{
    forge_entry_t *e = forge_loop_entry_of(w, work);

    if (e && work->refused != FORGE_WORK_STALE &&
        work->status == FORGE_SLURM_OK &&
        (work->kind == FORGE_WORK_CLEAN_SUBMIT ||
         work->kind == FORGE_WORK_CLEAN_CANCEL)) {
        /* recorded with the transition the result makes next */
        e->rec->sweep_due = true;
        e->sweep_at_ms =
            forge_clock_ms() + (long long)w->cfg->late_job_sweep_s * 1000;
    }
}

static void on_swept(forge_loop_t *w, forge_work_t *work)
{
    forge_entry_t *e = forge_loop_entry_of(w, work);

    if (!e)
        return;
    e->busy = false;
    if (work->status == FORGE_SLURM_OK) {
        e->sweep_at_ms = 0;
        e->rec->sweep_due = false;
        forge_loop_write_record(w, e);
        return;
    }
    e->sweep_at_ms = forge_clock_ms() + SWEEP_RETRY_MS;
    forge_log_warn("sweep for late jobs of %s failed (%s): %s; retrying later",
                   work->launch_id, forge_slurm_status_name(work->status),
                   work->message);
}

static void on_slurm_result(forge_loop_t *w, forge_work_t *work)
{
    sweep_later(w, work);
    if (work->refused == FORGE_WORK_STALE)
        on_stale(w, work);
    else if (work->kind == FORGE_WORK_SWEEP)
        on_swept(w, work);
    else if (work->kind == FORGE_WORK_CANCEL)
        on_cancelled(w, work);
    else if (work->kind == FORGE_WORK_CLEAN_CANCEL ||
             work->refused == FORGE_WORK_WITHDRAWN)
        on_withdrawn(w, work);
    else
        on_submitted(w, work);
}

/* Every finished item of a lane, oldest first, to on_result; then freed. */
static void take_each(forge_loop_t *w, forge_loop_lane_t lane,
                      void (*on_result)(forge_loop_t *, forge_work_t *))
{
    forge_work_t *work;

    while ((work = w->pool_ops->take(w->pools, lane))) {
        on_result(w, work);
        forge_work_free(work);
    }
}

/* The poller's lane: a tick's answer (tick.c), or one job's that push
 * completion asked for (jobcomp.c). */
static void on_poller_result(forge_loop_t *w, forge_work_t *work)
{
    if (work->poll.targeted)
        forge_loop_on_targeted(w, work);
    else
        forge_loop_on_polled(w, work);
}

static void on_results(forge_loop_t *w)
{
    take_each(w, FORGE_LANE_SLURM, on_slurm_result);
    take_each(w, FORGE_LANE_POLLER, on_poller_result);
    take_each(w, FORGE_LANE_FILES, forge_loop_on_finished_work);
    take_each(w, FORGE_LANE_LIVE, forge_loop_on_live);
}

/* ---- the poll tick and the retry scan --------------------------------------
 */

typedef struct tick {
    forge_loop_t *w;
    forge_work_t *poll;
    long long now;
} tick_t;

static void tend_entry(void *ctx, forge_entry_t *e)
{
    tick_t *t = ctx;
    forge_launch_record_t *r = e->rec;

    if (!forge_owner_owns(t->w->owner, e->partition))
        return;
    if (e->sweep_at_ms && t->now >= e->sweep_at_ms && !e->busy) {
        e->busy = true;
        forge_loop_defer(t->w, forge_loop_new_work(FORGE_WORK_SWEEP, e));
        return;
    }
    if (forge_state_is_terminal(r->state)) {
        forge_loop_tend_finished(t->w, e, t->now);
        return;
    }
    if (r->job_id && r->cancel_requested && !e->busy &&
        (!e->cancel_sent_ms ||
         t->now - e->cancel_sent_ms >= FORGE_WORKER_CANCEL_RESEND_MS)) {
        e->cancel_sent_ms = t->now; /* not confirmed yet: ask again */
        forge_loop_defer(t->w, forge_loop_new_work(FORGE_WORK_CANCEL, e));
    }
    if (r->job_id) { /* a live job: into this tick's batch */
        forge_loop_tick_add(t->poll, r);
        forge_loop_restage_due(t->w, e, t->now); /* a requeue not staged */
    } else if (forge_launch_is_intent(r) && !e->busy &&
               t->now >= e->retry_at_ms && t->now >= e->next_try_ms &&
               (r->request || r->request_error)) {
        /* an intent without a job: restored after a crash, a submit to
         * retry, or a retry's next try (tries.c) once its backoff passed.
         * Clean whatever the tag finds first: never two jobs. A cancelled
         * one too (its submit may have reached Slurm), and then nothing is
         * submitted. */
        e->busy = true;
        forge_loop_defer(t->w,
                         forge_loop_new_work(r->cancel_requested
                                                 ? FORGE_WORK_CLEAN_CANCEL
                                                 : FORGE_WORK_CLEAN_SUBMIT,
                                             e));
    }
}

static void tick(forge_loop_t *w)
{
    tick_t t = {w, forge_work_new(FORGE_WORK_POLL, NULL, 0, -1, 0),
                forge_clock_ms()};

    t.poll->poll.epoch = w->poll_epoch;
    forge_owner_each(w->owner, tend_entry, &t);
    forge_census_push(w->owner, w->next_poll_ms ? t.now - w->next_poll_ms : 0);
    /* how late the loop came to this tick: the e2e tests read it */
    forge_log_debug("poll tick: %zu live jobs, %lld ms late",
                    t.poll->poll.item_count,
                    w->next_poll_ms ? t.now - w->next_poll_ms : 0);
    if (t.poll->poll.item_count && !w->poll_in_flight) {
        w->poll_in_flight = true;
        w->poll_posted_ms = t.now;
        w->pool_ops->post(w->pools, FORGE_LANE_POLLER, t.poll);
    } else {
        forge_work_free(t.poll);
    }
    w->next_poll_ms = t.now + w->cfg->poll_interval_ms;
}

/* ---- partitions: assign, revoke, commit -----------------------------------
 */

static void on_assigned(void *ctx, const int32_t *parts, size_t n)
{
    forge_loop_t *w = ctx;

    w->joined = true;
    forge_loop_restore_each(w, parts, n);
}

/* Deferred work of a transaction that did not commit, or of partitions
 * that left: dropped; the retry scan re-derives it from the records. */
static void drop_deferred(forge_loop_t *w)
{
    while (w->deferred) {
        forge_work_t *work = w->deferred;
        w->deferred = work->next;
        forge_loop_discard(w, work);
    }
}

static void post_deferred(forge_loop_t *w)
{
    forge_work_t *list = NULL;

    while (w->deferred) { /* reverse: post in the order they were made */
        forge_work_t *work = w->deferred;
        w->deferred = work->next;
        work->next = list;
        list = work;
    }
    while (list) {
        forge_work_t *work = list;
        forge_entry_t *e = forge_loop_entry_of(w, work);
        list = work->next;
        if (e && (work->kind == FORGE_WORK_SUBMIT ||
                  work->kind == FORGE_WORK_CLEAN_SUBMIT))
            e->submit_unknown = true; /* from now on, it may reach Slurm */
        w->pool_ops->post(w->pools,
                          work->kind == FORGE_WORK_ARCHIVE ||
                                  work->kind == FORGE_WORK_CLEANUP ||
                                  work->kind == FORGE_WORK_RESTAGE ||
                                  work->kind == FORGE_WORK_IMAGE_NOTE
                              ? FORGE_LANE_FILES
                              : FORGE_LANE_SLURM,
                          work);
    }
}

static forge_kafka_outcome_t commit(forge_loop_t *w)
{
    forge_kafka_outcome_t out = w->kafka_ops->commit(w->kafka);
    size_t n;
    int32_t *parts;

    /* waiting for the producer: every step tries again (kafka.h) */
    w->commit_now = out == FORGE_KAFKA_WAITING;
    w->outcomes_since_ms = 0;

    if (out == FORGE_KAFKA_COMMITTED) {
        post_deferred(w);
    } else if (out == FORGE_KAFKA_WAITING) {
        drop_deferred(w); /* the records rewind once the producer is back */
    } else if (out == FORGE_KAFKA_ABORTED) {
        drop_deferred(w);
        parts = forge_owner_partitions(w->owner, &n);
        forge_loop_restore_each(w, parts, n); /* back to what committed */
        free(parts);
    } else {
        w->fatal = true;
    }
    return out;
}

static bool among(int32_t p, const int32_t *parts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (parts[i] == p)
            return true;
    return false;
}

/* Deferred work of leaving partitions: their next owner's. */
static void drop_deferred_of(forge_loop_t *w, const int32_t *parts, size_t n)
{
    forge_work_t **link = &w->deferred;

    while (*link) {
        forge_work_t *work = *link;
        forge_entry_t *e = forge_loop_entry_of(w, work);
        if (e && !among(e->partition, parts, n)) {
            link = &work->next;
            continue;
        }
        *link = work->next;
        forge_loop_discard(w, work);
    }
}

/* Partitions are leaving. Submits, cancels and archives in flight finish
 * first (up to FORGE_WORKER_SETTLE_MS, more than one submit's worst case), so
 * their job ids go into this last transaction and the next owner takes each
 * launch over as it stands, instead of finding a bare intent and cancelling
 * a job that was fine. Whatever is still out after the bound is settled by
 * the next owner through the comment tag. */
static int on_flush(void *ctx, const int32_t *parts, size_t n)
{
    forge_loop_t *w = ctx;
    long long until =
        forge_clock_ms() + (w->drained ? 0 : FORGE_WORKER_SETTLE_MS);

    if (!w->pool_ops->settle(w->pools, FORGE_LANE_SLURM,
                             until - forge_clock_ms()))
        forge_log_warn("partitions leave with Slurm calls in flight: their "
                       "next owner settles them by the jobs' tags");
    /* Archives too, in the time left: their events go out with this
     * commit. One not done in time is redone by the next owner, and the
     * archive in place first stays (archive.c never replaces one). */
    if (!w->pool_ops->settle(w->pools, FORGE_LANE_FILES,
                             until - forge_clock_ms()))
        forge_log_warn("partitions leave with archives in progress: their "
                       "next owner archives again");
    on_results(w);
    for (size_t i = 0; i < n; i++) /* what is still out: stale from here */
        forge_owner_release(w->owner, parts[i]);
    drop_deferred_of(w, parts, n);
    return commit(w) == FORGE_KAFKA_COMMITTED ? 0 : -1;
}

static void on_revoked(void *ctx, const int32_t *parts, size_t n, bool lost)
{
    forge_loop_t *w = ctx;

    for (size_t i = 0; i < n; i++) {
        forge_owner_drop(w->owner, parts[i]);
        forge_log_info("partition %d %s", (int)parts[i],
                       lost ? "lost: dropped without commit"
                            : "revoked: committed and dropped");
    }
}

/* ---- the loop
 * ---------------------------------------------------------------- */

/* Milliseconds until the outcomes written so far have waited long enough
 * (the top comment's cadence): 0 now, INT_MAX while none waits. */
static int outcomes_due_in(const forge_loop_t *w)
{
    long long left;

    if (!w->outcomes_since_ms)
        return INT_MAX;
    left = w->outcomes_since_ms + w->outcome_commit_ms - forge_clock_ms();
    return left > 0 ? (int)left : 0;
}

/* Whether the step commits: a request taken, work waiting on the commit,
 * the producer waiting (each step tries again), or outcomes due. */
static bool commit_due(const forge_loop_t *w)
{
    return w->commit_now || w->deferred || outcomes_due_in(w) == 0;
}

static void consume_batch(forge_loop_t *w, int timeout_ms)
{
    long long until = forge_clock_ms() + BATCH_MS;
    forge_kafka_message_t m;

    for (int n = 0; n < BATCH_MESSAGES; n++) {
        if (!w->kafka_ops->poll(w->kafka, n ? 0 : timeout_ms, &m))
            break;
        if (forge_owner_owns(w->owner, m.partition))
            forge_loop_on_request(w, &m);
        if (forge_clock_ms() >= until)
            break;
    }
}

/* Ready: the group has assigned this worker, and every partition it owns
 * is restored; owning none, it is a standby (more workers than
 * partitions). Said in the log at each change. */
static void report_ready(forge_loop_t *w)
{
    size_t owned = forge_owner_partition_count(w->owner);
    int now = !w->joined || !forge_owner_ready(w->owner) ? 0 : owned ? 1 : 2;

    if (now == 1 && w->readiness != 1)
        forge_log_info("ready: every owned partition is restored (%zu)", owned);
    else if (now == 2 && w->readiness != 2)
        forge_log_info("ready: standby, this worker owns no partition");
    w->readiness = now;
    forge_hooks()->loop_ready(now);
}

void forge_loop_drain(forge_loop_t *w)
{
    long long until = forge_clock_ms() + FORGE_WORKER_DRAIN_MS;

    forge_log_info("stopping: no new requests; finishing submits in flight");
    forge_hooks()->stopping();
    /* A poll tick in progress stops between two calls, the call under way
     * interrupted: whoever owns its jobs next polls them. */
    w->pool_ops->interrupt(w->pools, FORGE_LANE_POLLER);
    w->kafka_ops->pause_all(w->kafka);
    while (!w->fatal && w->pool_ops->in_flight(w->pools, FORGE_LANE_SLURM) &&
           forge_clock_ms() < until) {
        forge_kafka_message_t m;
        (void)w->kafka_ops->poll(w->kafka, 100, &m); /* heartbeats */
        on_results(w);
        commit(w);
    }
    on_results(w);
    if (!w->fatal)
        commit(w);
    w->drained = true;
}

forge_loop_t *forge_loop_new(const forge_config_t *cfg,
                             const forge_series_catalog_t *catalog,
                             const forge_tenants_t *tenants,
                             const forge_sealer_t *sealer)
{
    forge_loop_t *w = forge_xcalloc(1, sizeof(*w));

    w->cfg = cfg;
    w->catalog = catalog;
    w->tenants = tenants;
    w->sealer = sealer;
    w->owner = forge_owner_new();
    w->ended = forge_ended_new();
    w->outcome_commit_ms = OUTCOME_COMMIT_MS;
    return w;
}

const forge_generations_t *forge_loop_generations(const forge_loop_t *l)
{
    return forge_owner_generations(l->owner);
}

void forge_loop_set_pools(forge_loop_t *l, const forge_loop_pool_ops_t *ops,
                          void *pools)
{
    l->pool_ops = ops;
    l->pools = pools;
}

forge_kafka_handlers_t forge_loop_handlers(forge_loop_t *l)
{
    return (forge_kafka_handlers_t){l, on_assigned, on_revoked, on_flush};
}

void forge_loop_set_kafka(forge_loop_t *l, const forge_loop_kafka_ops_t *ops,
                          void *k)
{
    l->kafka_ops = ops;
    l->kafka = k;
}

void forge_loop_step(forge_loop_t *w)
{
    forge_hooks()->beat();
    FORGE_TESTPOINT_LOOP_STALL();
    consume_batch(w, outcomes_due_in(w) < 100 ? outcomes_due_in(w) : 100);
    on_results(w);
    forge_loop_on_jobcomp(w); /* push completion (jobcomp.c) */
    forge_loop_live_due(w);   /* live logs (live.c) */
    if (forge_clock_ms() >= w->next_poll_ms)
        tick(w);
    if (commit_due(w))
        commit(w);
    forge_loop_retry_restores(w);
    report_ready(w);
}

void forge_loop_set_outcome_commit_ms(forge_loop_t *l, int ms)
{
    l->outcome_commit_ms = ms;
}

void forge_loop_tick_now(forge_loop_t *l)
{
    l->next_poll_ms = forge_clock_ms();
}

bool forge_loop_fatal(const forge_loop_t *l)
{
    return l->fatal;
}

void forge_loop_destroy(forge_loop_t *l)
{
    if (!l)
        return;
    drop_deferred(l);
    forge_loop_jobcomp_clear(l);
    forge_owner_destroy(l->owner);
    forge_ended_free(l->ended);
    free(l);
}
