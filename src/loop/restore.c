/* SPDX-License-Identifier: Apache-2.0 */
/*
 * restore.c - partitions' launches read back from the state topic: on
 * assign, after an aborted transaction (memory back to what committed),
 * and again after a failed restore's backoff. Each restore begins a new
 * generation of the partition (generation.h) and makes the poller forget
 * what it saw (work.h: epoch); the partition stays paused until its
 * records are back. Restores hold the loop for a bounded time (kafka.h:
 * the restore budget); those that do not fit wait for the loop's next
 * pass.
 *
 * The partitions of one pass are read together (kafka.h: fetched at once,
 * read by two threads): their records are decoded on the reading threads
 * (decode_record: the record, its sealed request opened, what the table
 * keeps of it taken without validating it again: held.h, its secrets
 * registered for redaction there, a batch at a time) into one list per
 * partition, and the loop's thread puts them in the launch table once the
 * read is over (room made at once, for every partition whose end was
 * reached), so the table is never touched off the loop's thread.
 *
 * What the table keeps of each launch, and what later steps read: the
 * record (state, seq, job ids, flags, the Slurm states seen: the poller,
 * events and every record written), the request's labels, secrets, pools
 * and tenant (held.h: events, redaction, the archive, and what records
 * with a job id carry sealed), and, only for a launch without a job id,
 * its request's bytes (an interrupted submit is prepared from them, and
 * its records carry them sealed). Nothing else of the request is parsed
 * or kept. Loop thread only, but decode_record.
 */
#include "clock/clock.h"
#include "log/log.h"
#include "testpoint/testpoint.h"
#include "clock/timestamp.h"
#include "base/util.h"
#include "loop/loop_int.h"

#include <malloc.h> /* malloc_trim: glibc */
#include <stdlib.h>

#define RESTORE_RETRY_MS     1000
#define RESTORE_RETRY_MAX_MS 30000
#define REGISTER_BATCH       256 /* helds registered at once (owner.h) */

/* One record decoded, waiting for the loop's thread (both stolen by the
 * table). */
typedef struct decoded {
    forge_launch_record_t *rec;
    forge_held_t *held;
    struct decoded *next;
} decoded_t;

/* One partition of a restore: written by the one thread reading it. */
typedef struct restoring {
    int32_t partition;
    decoded_t *head, **tail; /* in the topic's order: later wins */
    size_t records;
    size_t unopened;     /* records whose sealed request did not open */
    forge_error_t first; /* why, for the first of them */
    /* the last records' helds, their secrets not registered yet: a batch
     * at a time (the registry's lock taken once, not once a secret, by
     * threads reading together); the rest once the read is over */
    forge_held_t *unregistered[REGISTER_BATCH];
    size_t nunregistered;
} restoring_t;

typedef struct restore_batch {
    const forge_sealer_t *sealer;
    restoring_t *parts;
    size_t n;
} restore_batch_t;

/* What the table keeps of rec's request (held.h). A sealed one opened:
 * the worker sealed it after it validated it (it authenticates), so it is
 * read without validating it again. One in clear (a record from before
 * sealing) is parsed and validated as it always was; one that does not
 * parse is kept for its record, and events go without labels. */
static forge_held_t *held_of(const forge_launch_record_t *rec)
{
    forge_request_t *req = NULL;
    forge_error_t err = {0};
    forge_held_t *held;

    if (!rec->request)
        return NULL;
    if (rec->request_was_sealed)
        return forge_held_of_trusted(rec->request, rec->request_len);
    if (forge_request_parse(rec->request, rec->request_len, &req, &err))
        return NULL;
    held = forge_held_of_request(req);
    forge_request_destroy(req);
    return held;
}

/* r's unregistered helds registered (owner.h). */
static void register_batch(restoring_t *r)
{
    forge_owner_register_many(r->unregistered, r->nunregistered);
    r->nunregistered = 0;
}

/* On a reading thread (kafka.h): touches only its partition's list. */
static void decode_record(void *ctx, int32_t partition, const char *key,
                          size_t key_len, const char *value, size_t len)
{
    restore_batch_t *b = ctx;
    restoring_t *r = NULL;
    forge_launch_record_t *rec = NULL;
    forge_held_t *held;
    forge_error_t err = {0};
    decoded_t *d;

    (void)key;
    (void)key_len;
    for (size_t i = 0; i < b->n && !r; i++)
        if (b->parts[i].partition == partition)
            r = &b->parts[i];
    if (!r || !value) /* a tombstone: nothing to carry on */
        return;
    if (forge_launch_record_decode(value, len, b->sealer, &rec, &err)) {
        forge_log_warn("state record skipped: %s", err.message);
        return;
    }
    if (rec->request_error && !r->unopened++)
        r->first = *rec->request_error;
    held = held_of(rec);
    if (rec->job_id) /* no submit needs its bytes again: held.h keeps all */
        forge_launch_compact(rec);
    r->unregistered[r->nunregistered++] = held; /* here, not on the loop's */
    if (r->nunregistered == REGISTER_BATCH)
        register_batch(r);
    d = forge_xmalloc(sizeof(*d));
    *d = (decoded_t){rec, held, NULL};
    *r->tail = d;
    r->tail = &d->next;
    r->records++;
}

/* A retry's next try waits out what is left of its backoff (the record's
 * wall clock time, onto the monotonic clock: clock/clock.h), whoever owns
 * it now. */
static void restore_backoff(forge_entry_t *e)
{
    long long left = e->rec->retry_not_before_ms - forge_timestamp_now_ms();

    if (forge_launch_is_intent(e->rec) && e->rec->retry_not_before_ms &&
        left > 0)
        e->next_try_ms = forge_clock_ms() + left;
}

/* r's records into the table, in order (later wins), or freed. */
static void take_records(forge_loop_t *w, restoring_t *r, bool keep)
{
    decoded_t *d, *next;
    forge_entry_t *e;

    if (keep)
        forge_owner_reserve(w->owner, r->records);
    for (d = r->head; d; d = next) {
        next = d->next;
        if (keep) {
            e = forge_owner_put_registered(w->owner, d->rec, d->held,
                                           r->partition);
            e->submit_unknown = e->rec->job_id == 0;
            restore_backoff(e);
            if (e->rec->sweep_due) /* the last owner's sweep, not done */
                e->sweep_at_ms = forge_clock_ms() +
                                 (long long)w->cfg->late_job_sweep_s * 1000;
        } else {
            forge_owner_unregister(d->held);
            forge_launch_record_free(d->rec);
            forge_held_free(d->held);
        }
        free(d);
    }
    r->head = NULL;
    r->tail = &r->head;
}

/* The partition stays paused, nothing taken from it, and its restore is
 * tried again after a backoff (1 s, doubling, at most 30 s): a broker that
 * was away for a moment costs a moment, not the partition. */
static void restore_failed(forge_loop_t *w, int32_t p)
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

/* Restores in a pass hold the loop at most forge_kafka_restore_pass_ms (a
 * quarter of max.poll.interval.ms: the group must be polled in time), and
 * a partition's restore at most forge_kafka_restore_timeout_ms: one joins
 * the pass only if it can end within it. Its restore is its share of the
 * pass's read (restore_read: one read for all, at most that long), or a
 * test point's stall before it. */
static bool restore_fits(const forge_loop_t *w, long long pass_start)
{
    int one, pass;

    w->kafka_ops->restore_budget(w->kafka, &one, &pass);
    return forge_clock_ms() - pass_start + one <= pass;
}

/* A pass's partitions: begun (restore_begin), then read together
 * (restore_read). */
typedef struct restore_pass {
    long long start;
    int32_t *parts;
    size_t n, size;
} restore_pass_t;

static void unrestore(forge_loop_t *w, int32_t p);

/* p joins the pass: forgotten and paused as before a restore, then read
 * with the others, unless a test point fails (or stalls) it first. */
static void restore_begin(forge_loop_t *w, restore_pass_t *pass, int32_t p)
{
    int one, budget;

    w->kafka_ops->restore_budget(w->kafka, &one, &budget);
    forge_log_info("partition %d: restoring", (int)p);
    unrestore(w, p);
    if (FORGE_TESTPOINT_RESTORE_FAIL() || FORGE_TESTPOINT_RESTORE_STALLS(one)) {
        restore_failed(w, p);
        return;
    }
    if (pass->n == pass->size) {
        pass->size = pass->size ? 2 * pass->size : 8;
        pass->parts =
            forge_xrealloc(pass->parts, pass->size * sizeof(*pass->parts));
    }
    pass->parts[pass->n++] = p;
}

static void restored(forge_loop_t *w, restoring_t *r)
{
    take_records(w, r, true);
    forge_owner_set_ready(w->owner, r->partition);
    w->kafka_ops->resume(w->kafka, r->partition);
    forge_log_info("partition %d restored (%zu records)", (int)r->partition,
                   r->records);
    if (r->unopened)
        forge_log_error("partition %d: %zu records carry a request this worker "
                        "cannot open (first: %s); those launches go on "
                        "without it, and an interrupted submit among them "
                        "fails (request_unavailable)",
                        (int)r->partition, r->unopened, r->first.message);
}

/* The pass's partitions, paused and forgotten already, wait for the
 * loop's next pass (not a failure: no backoff). */
static void restore_defer(forge_loop_t *w, restore_pass_t *pass)
{
    for (size_t i = 0; i < pass->n; i++) {
        forge_owner_restore_later(w->owner, pass->parts[i], forge_clock_ms());
        forge_log_info("partition %d: restore waits for the loop's next pass",
                       (int)pass->parts[i]);
    }
    free(pass->parts);
}

/* The records of the partitions whose end was reached: the table's room
 * made once for all of them (not partition by partition, each a rehash). */
static size_t records_reached(const restoring_t *r, const bool *reached,
                              size_t n)
{
    size_t records = 0;

    for (size_t i = 0; i < n; i++)
        records += reached[i] ? r[i].records : 0;
    return records;
}

/* The pass's partitions read together, at most one restore's time (when
 * the pass still has that much room: else they wait for the next); each
 * whose end was reached is restored, the others failed (backoff). */
static void restore_read(forge_loop_t *w, restore_pass_t *pass)
{
    restoring_t *r = forge_xcalloc(pass->n + 1, sizeof(*r));
    bool *reached = forge_xcalloc(pass->n + 1, sizeof(*reached));
    restore_batch_t batch = {w->sealer, r, pass->n};
    long long began = forge_clock_ms(), read;
    int one, budget;

    w->kafka_ops->restore_budget(w->kafka, &one, &budget);
    if (pass->n && began - pass->start + one > budget) {
        restore_defer(w, pass); /* stalls before ate the pass's room */
        free(r);
        free(reached);
        return;
    }
    for (size_t i = 0; i < pass->n; i++) {
        r[i].partition = pass->parts[i];
        r[i].tail = &r[i].head;
    }
    if (pass->n)
        w->kafka_ops->restore(w->kafka, pass->parts, pass->n, decode_record,
                              &batch, one, reached);
    read = forge_clock_ms();
    for (size_t i = 0; i < pass->n; i++)
        register_batch(&r[i]); /* every record's, as take_records expects */
    forge_owner_reserve(w->owner, records_reached(r, reached, pass->n));
    for (size_t i = 0; i < pass->n; i++) {
        if (reached[i]) {
            restored(w, &r[i]);
            continue;
        }
        take_records(w, &r[i], false);
        restore_failed(w, r[i].partition);
    }
    free(r);
    free(reached);
    free(pass->parts);
    if (!pass->n)
        return;
    /* what the reading threads freed (fetched batches, opened requests,
     * their buffers) lies between what the table keeps: given back */
    malloc_trim(0);
    forge_log_debug("restore of %zu partition(s): read and decoded in %lld ms, "
                    "into the table in %lld ms",
                    pass->n, read - began, forge_clock_ms() - read);
}

/* Restores that failed, once their backoff has passed, and those that
 * waited for a pass; as many as fit this one. */
void forge_loop_retry_restores(forge_loop_t *w)
{
    restore_pass_t pass = {forge_clock_ms(), NULL, 0, 0};
    int32_t p;

    while (restore_fits(w, pass.start) &&
           (p = forge_owner_restore_due(w->owner, forge_clock_ms())) >= 0)
        restore_begin(w, &pass, p);
    restore_read(w, &pass);
}

/* The partition as it was before it was restored: paused (nothing taken
 * from it until its records are back), its launches forgotten. */
static void unrestore(forge_loop_t *w, int32_t p)
{
    w->kafka_ops->pause(w->kafka, p);
    w->poll_epoch++; /* the poller forgets what it saw: records rewind */
    forge_owner_drop(w->owner, p);
    forge_owner_assign(w->owner, p);
}

/* Restores parts together, as many as fit this pass (restore_fits); the
 * rest wait, paused, for the next pass of the loop
 * (forge_loop_retry_restores). */
void forge_loop_restore_each(forge_loop_t *w, const int32_t *parts, size_t n)
{
    restore_pass_t pass = {forge_clock_ms(), NULL, 0, 0};

    for (size_t i = 0; i < n; i++) {
        if (restore_fits(w, pass.start)) {
            restore_begin(w, &pass, parts[i]);
            continue;
        }
        unrestore(w, parts[i]);
        forge_owner_restore_later(w->owner, parts[i], forge_clock_ms());
        forge_log_info("partition %d: restore waits for the loop's next pass",
                       (int)parts[i]);
    }
    restore_read(w, &pass);
}
