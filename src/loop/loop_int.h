/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loop_int.h - what the loop's files share (loop.c: the loop,
 * requests, partitions; publish.c: events and records into the
 * transaction; tick.c: a poll tick's items, and its answer onto the
 * records; finish.c: archive and cleanup after a terminal state;
 * restore.c: partitions read back from the state topic; tries.c and
 * image_note.c: what a job's end becomes). All of
 * it runs on the consume loop's thread (see loop.c).
 */
#ifndef FORGE_LOOP_INT_H
#define FORGE_LOOP_INT_H

#include "kafka/kafka.h"
#include "record/owner.h"
#include "record/state.h"
#include "loop/loop.h"
#include "loop/work.h"

#include <jansson.h>
#include <stdbool.h>

/* Archive items out at once (deferred or on the archiver's threads:
 * FORGE_ARCHIVE_THREADS, archive_work.h); more finished launches wait in
 * their records until a slot frees: back-pressure without dropping
 * anything. */
#define FORGE_ARCHIVE_SLOTS 4

#include "loop/ended.h"

struct forge_loop {
    const forge_config_t *cfg;
    const forge_series_catalog_t *catalog;
    const forge_tenants_t *tenants; /* NULL: no tenants */
    const forge_sealer_t *sealer;   /* the state records' requests */
    /* the seams (loop.h): Kafka, and the pools by lane */
    const forge_loop_kafka_ops_t *kafka_ops;
    void *kafka;
    const forge_loop_pool_ops_t *pool_ops;
    void *pools;
    forge_owner_t *owner;
    size_t archives_out;    /* ARCHIVE items deferred or posted */
    forge_work_t *deferred; /* posted once the transaction commits */
    /* the commit cadence (loop.c): commit_now, a request taken since the
     * last commit or the producer waiting; outcomes_since_ms, when the
     * oldest outcome not yet committed was written (0: none) */
    bool commit_now;
    long long outcomes_since_ms;
    int outcome_commit_ms;
    forge_ended_t *ended; /* ends the ticks saw, kept across rewinds */
    bool poll_in_flight;
    /* poll_posted_ms, next_poll_ms: the monotonic clock (clock/clock.h) */
    long long poll_posted_ms; /* when the tick in flight was posted */
    unsigned long poll_epoch; /* + 1 at every restore (work.h: epoch) */
    long long next_poll_ms;
    bool joined;   /* the group has assigned this worker at least once */
    int readiness; /* what the log said last: 0 not ready, 1 ready, 2 standby */
    bool drained;  /* shutting down: the drain already waited */
    bool fatal;
    /* push completion (jobcomp.c): the records' source (NULL ops: off),
     * this deployment's staging root as jobs see it (new; NULL: no
     * storage root configured), and the pushed ends whose archive waits
     * for Slurm's COMPLETING to clear */
    const forge_loop_jobcomp_ops_t *jobcomp_ops;
    void *jobcomp_src;
    char *jobcomp_staging;
    struct forge_push_gate *gates;
    /* live logs (live.c): a read out on the live lane, when the next may
     * go (monotonic ms), when a failed read was last logged */
    bool live_in_flight;
    long long live_next_ms;
    long long live_warned_ms;
};

typedef struct forge_change {
    forge_state_t to;
    const char *reason;
    const json_t *slurm;
    const forge_error_t *error;
    /* a try's end (a terminal move, or a retried try's PENDING): what its
     * job used (slurm/usage.h forge_slurm_usage_json), NULL unknown */
    const json_t *usage;
} change_t;

/* Work posted once the current transaction commits (stolen). */
void forge_loop_defer(forge_loop_t *w, forge_work_t *work);

/* A new work item of `kind` for e's launch, its payload from e's record
 * (the request bytes copied, or the job id; an IMAGE_NOTE's is its
 * caller's to fill). */
forge_work_t *forge_loop_new_work(forge_work_kind_t kind,
                                  const forge_entry_t *e);

/* The entry a work item is for, if this worker still has that attempt in
 * the generation of its partition the work was made in (generation.h):
 * an entry rebuilt since (a revoke and re-assign, an aborted transaction's
 * rewind) never takes a result of work posted before. */
forge_entry_t *forge_loop_entry_of(forge_loop_t *w, const forge_work_t *work);

/* A work item leaving without a result (dropped): its slot freed, its
 * entry no longer busy. */
void forge_loop_discard(forge_loop_t *w, forge_work_t *work);

/* o (stolen) as compact JSON into topic (partition -1: the partitioner's),
 * keyed by key, in the current transaction; a failure is logged (and the
 * transaction then aborts: kafka.h). */
int forge_loop_produce_json(forge_loop_t *w, const char *topic,
                            int32_t partition, const char *key, json_t *o);

/* The same with the event's bytes already made (borrowed: the producer
 * copies them). */
int forge_loop_produce_text(forge_loop_t *w, const char *topic,
                            int32_t partition, const char *key,
                            const char *text, size_t len);

/* e's record into the state topic (same partition as its requests). */
int forge_loop_write_record(forge_loop_t *w, const forge_entry_t *e);

/* One status event for a legal move of e, with e's record (store) or
 * without (an unstored REJECTED). 0 also when the move is not legal
 * (nothing is said). */
int forge_loop_publish_event(forge_loop_t *w, forge_entry_t *e,
                             const change_t *c, bool store);

/* A retry's PENDING (tries.c): e's record already moved from `from`
 * (launch.h: forge_launch_retry); its event, carrying retry (events.h),
 * and its record. */
int forge_loop_publish_retry(forge_loop_t *w, forge_entry_t *e,
                             forge_state_t from, const change_t *c,
                             const json_t *retry);

/* tries.c: a terminal move c of e that a poll saw, retried instead when
 * e's policy names its cause and a try is left (retry/retry.h): PENDING
 * (retrying) published and e's record the next try's intent, submitted
 * once its backoff has passed. True when it was; false: publish c. */
bool forge_loop_retry_instead(forge_loop_t *w, forge_entry_t *e,
                              const change_t *c);

/* A move c of e's job that a poll, a push or accounting saw: published,
 * unless its end first waits for the image check's note
 * (forge_loop_image_note_first) or a retry goes instead
 * (forge_loop_retry_instead). tick.c. */
void forge_loop_job_moved(forge_loop_t *w, forge_entry_t *e, const change_t *c);

/* image_note.c: c, e's end, waits for its image check's note when its
 * exit says the check refused the image (render.h), or while such a note
 * is out for e; true then. The note's result: the end published as it
 * says. */
bool forge_loop_image_note_first(forge_loop_t *w, forge_entry_t *e,
                                 const change_t *c);
void forge_loop_on_image_note(forge_loop_t *w, forge_entry_t *e,
                              forge_work_t *work);

/* REJECTED for an attempt that conflicts with a live one: an event, but no
 * record (the live attempt's record stays the launch's). */
void forge_loop_publish_unstored(forge_loop_t *w, const char *launch_id,
                                 int attempt, int32_t partition,
                                 const forge_error_t *error);

/* Restores partitions in turn (restore.c), as many as fit one pass of the
 * loop; the rest wait, paused, for forge_loop_retry_restores. */
void forge_loop_restore_each(forge_loop_t *w, const int32_t *parts, size_t n);

/* Restores that failed, once their backoff has passed, and those that
 * waited for a pass; as many as fit this one. */
void forge_loop_retry_restores(forge_loop_t *w);

/* One message of the requests topic acted on (requests.c): a launch, a
 * cancel, or its refusal; its offset marked done, a commit asked for. */
void forge_loop_on_request(forge_loop_t *w, const forge_kafka_message_t *m);

/* The live job of r into a poll tick (tick.c), with what r knows of it. */
void forge_loop_tick_add(forge_work_t *tick, const forge_launch_record_t *r);

/* A poll tick's answer (tick.c): each launch's outcome onto its
 * record, or nothing when the tick failed (a targeted poll's answer is
 * jobcomp.c's: forge_loop_on_targeted). */
void forge_loop_on_polled(forge_loop_t *w, forge_work_t *tick);

/* After a terminal state (finish.c): from the poll tick's scan, and
 * the archiver's results. */
void forge_loop_tend_finished(forge_loop_t *w, forge_entry_t *e, long long now);
void forge_loop_on_finished_work(forge_loop_t *w, forge_work_t *work);

/* live.c (live logs, issue 29): a read of the running launches' new
 * output posted when one is due; a read's result published as chunks. */
void forge_loop_live_due(forge_loop_t *w);
void forge_loop_on_live(forge_loop_t *w, forge_work_t *work);

/* A job of r's ran: its staging folder may hold output (a retried
 * launch's earlier tries did, even when its last never reached Slurm). */
static inline bool forge_loop_job_ran(const forge_launch_record_t *r)
{
    return r->job_id || forge_launch_try(r) > 1;
}

/* Whether e's output is followed live (its request's logs.live, else
 * FORGE_LOG_LIVE). */
static inline bool forge_loop_wants_live(const forge_loop_t *w,
                                         const forge_entry_t *e)
{
    return forge_live_logs_wanted(w->cfg, e->held ? e->held->live_logs : -1);
}

/* Whether e's archive waits for its final live chunk (live.c sends it;
 * finish.c waits). */
static inline bool forge_loop_live_holds_archive(const forge_loop_t *w,
                                                 const forge_entry_t *e)
{
    return !e->rec->log_final && !e->rec->archived &&
           forge_loop_job_ran(e->rec) && forge_loop_wants_live(w, e);
}

/* jobcomp.c (push completion, issue 28): the records waiting in the
 * source, each acted on; the archive gates due asked about again. */
void forge_loop_on_jobcomp(forge_loop_t *w);
/* A targeted poll's answer (poller.c: one job's details now), from the
 * poller's lane; tick.c's normal path moves a live launch with it. */
void forge_loop_on_targeted(forge_loop_t *w, forge_work_t *one);
/* The gates' list freed (forge_loop_destroy). */
void forge_loop_jobcomp_clear(forge_loop_t *w);

/* tick.c: what a poll found of e's job (it: a tick's item, or a
 * targeted poll's one) onto e, a live launch: a move published, a job
 * missing waited for, then LOST (now: the wall clock). */
void forge_loop_poll_item(forge_loop_t *w, forge_entry_t *e,
                          forge_poll_item_t *it, long long now);

/* restage.c: a requeued job's next run's credentials. A poll's details
 * (jobs) onto e's `restarts` (written: the caller writes e's record
 * anyway; true when the count rose); a restage posted when one is due
 * (also from each tick); its result. */
bool forge_loop_saw_restarts(forge_loop_t *w, forge_entry_t *e,
                             const forge_slurm_job_list_t *jobs, bool written);
void forge_loop_restage_due(forge_loop_t *w, forge_entry_t *e, long long now);
void forge_loop_on_restaged(forge_loop_t *w, forge_entry_t *e,
                            forge_work_t *work);

#endif
