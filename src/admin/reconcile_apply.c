/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_apply.c - `forge-worker reconcile` from end to end
 * (reconcile.h): the sources read, the plan made, and with --execute the
 * repair carried out the way a worker would carry it out.
 *
 * Why through the workers' own group and a transaction
 * (docs/RECOVERY.md): the state topic is written by the worker that owns a
 * partition, in transactions that also carry the group's offsets, so the
 * broker refuses a worker the group has moved on from (KIP-447: the
 * offsets are sent with the group's generation). --execute acts only when
 * the group has no members (describe the group; else 75 group_active),
 * then joins it itself with the workers' consumer configuration: it is
 * the only member and is assigned every partition (fewer: someone joined
 * meanwhile, 75). It reads the sources only then, so nothing a worker
 * does can slip in between, writes the records and missing events in
 * transactions (200 launches each) with the group's committed offsets
 * sent unchanged (a zombie
 * worker of an older generation is fenced; a reconcile that lost the
 * group has its transaction refused), commits, cancels what the plan
 * cancels (after the commit: Slurm is not transactional), and leaves the
 * group. Workers started afterwards restore those records and carry on.
 * Its transactional.id is `forge-worker-reconcile-<group>` (one per
 * worker group, so deployments sharing a Kafka cluster do not fence each
 * other's): a reconcile that died mid-transaction is fenced, and what it
 * left aborted, by the next one for the same group.
 */
#include "admin/reconcile.h"
#include "clock/timestamp.h"
#include "clock/clock.h"
#include "log/log.h"
#include "base/util.h"
#include "kafka/kafka.h"
#include "record/events.h"
#include "record/held.h"
#include "admin/group.h"
#include "admin/topic_scan.h"
#include "request/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECONCILE_WORKER_ID "reconcile"
#define OFFSETS_TIMEOUT_MS  10000
#define BATCH_RECORDS       200

typedef struct joined {
    forge_config_t cfg; /* the workers', as reconcile's own member */
    char *member_id;    /* "reconcile-<group>": cfg.worker_id */
    forge_kafka_t *kafka;
    size_t assigned;
} joined_t;

static void on_assigned(void *ctx, const int32_t *parts, size_t n)
{
    joined_t *j = ctx;

    (void)parts;
    j->assigned += n; /* paused by kafka.c: nothing is consumed */
}

static void on_revoked(void *ctx, const int32_t *parts, size_t n, bool lost)
{
    joined_t *j = ctx;

    (void)parts;
    (void)lost;
    j->assigned -= n < j->assigned ? n : j->assigned;
}

static int on_flush(void *ctx, const int32_t *parts, size_t n)
{
    (void)ctx;
    (void)parts;
    (void)n;
    return 0; /* nothing pending between transactions */
}

/* A recovery reader's failure (topic_scan.h, group.h, launch_table.h) as
 * the command's refusal, its message in err. */
static forge_recon_refusal_t refusal_of(const forge_admin_error_t *e,
                                        forge_error_t *err)
{
    static const forge_recon_refusal_t of[FORGE_RECOVERY__COUNT] = {
        [FORGE_RECOVERY_TOPIC_MISSING] = FORGE_RECON_TOPIC_MISSING,
        [FORGE_RECOVERY_GROUP_ACTIVE] = FORGE_RECON_GROUP_ACTIVE,
        [FORGE_RECOVERY_CONFIG] = FORGE_RECON_CONFIG,
    };
    forge_recon_refusal_t r =
        e->code > 0 && e->code < FORGE_RECOVERY__COUNT && of[e->code]
            ? of[e->code]
            : FORGE_RECON_KAFKA_DOWN;

    forge_error_set(err, r == FORGE_RECON_CONFIG ? FORGE_ECONFIG : FORGE_EIO,
                    NULL, "%s", e->message);
    return r;
}

/* The group empty, joined, every partition ours. */
static forge_recon_refusal_t join(const forge_recon_run_t *run, joined_t *j,
                                  forge_error_t *err)
{
    static volatile sig_atomic_t never = 0;
    forge_kafka_handlers_t h = {j, on_assigned, on_revoked, on_flush};
    forge_kafka_message_t msg;
    long long until, settled = 0;
    forge_admin_error_t e = {0};
    forge_group_view_t view;

    const char *topics[] = {run->cfg->topic_requests, run->cfg->topic_state};
    int32_t parts;

    /* the topics first: a group over a missing topic is never assigned a
     * partition, and waiting for one would say group_active */
    for (size_t i = 0; i < sizeof(topics) / sizeof(*topics); i++)
        if (forge_topic_partitions(run->cfg, topics[i], run->kafka_wait_ms,
                                   &parts, &e))
            return refusal_of(&e, err);
    if (forge_group_describe(run->cfg, run->cfg->kafka_group_id,
                             run->kafka_wait_ms, &view, &e))
        return refusal_of(&e, err);
    if (view.members > 0) {
        forge_error_set(err, FORGE_EINVAL, "FORGE_KAFKA_GROUP_ID",
                        "group %s has %zu live member(s): stop the workers "
                        "(or wait for their session to expire) and run it "
                        "again",
                        run->cfg->kafka_group_id, view.members);
        return FORGE_RECON_GROUP_ACTIVE;
    }
    until = forge_clock_ms() + run->timeout_ms;
    j->cfg = *run->cfg;
    j->member_id = forge_xmalloc(strlen(run->cfg->kafka_group_id) + 16);
    sprintf(j->member_id, "%s-%s", RECONCILE_WORKER_ID,
            run->cfg->kafka_group_id);
    j->cfg.worker_id = j->member_id; /* transactional.id: one per group */
    if (forge_kafka_new(&j->cfg, &h, FORGE_KAFKA_RECONCILE, &never, &j->kafka,
                        err))
        return FORGE_RECON_KAFKA_DOWN;
    /* assigned, then a second with nothing new: the join has settled */
    while (forge_clock_ms() < until &&
           (!j->assigned || forge_clock_ms() < settled)) {
        size_t before = j->assigned;
        forge_kafka_poll(j->kafka, 100, &msg);
        if (j->assigned != before)
            settled = forge_clock_ms() + 1000;
    }
    if (!j->assigned) {
        forge_error_set(err, FORGE_EIO, "FORGE_KAFKA_GROUP_ID",
                        "joining group %s: no partition assigned in %d ms",
                        run->cfg->kafka_group_id, run->timeout_ms);
        return FORGE_RECON_GROUP_ACTIVE;
    }
    return FORGE_RECON_OK;
}

/* ---- the transaction ---------------------------------------------------- */

static int produce_json(forge_kafka_t *k, const char *topic, int32_t partition,
                        const char *key, json_t *o, forge_error_t *err)
{
    char *text = json_dumps(o, JSON_COMPACT);
    forge_kafka_record_t r =
        forge_kafka_event_record(topic, partition, key, text, strlen(text));
    int rc = forge_kafka_produce_record(k, &r, err);

    free(text);
    json_decref(o);
    return rc;
}

/* What is kept of the item's request (held.h), for its events' labels
 * and its record: parsed (one read from the requests topic), or read as
 * the worker stored it (a sealed one authenticates: whole, or the kept
 * form of a launch with a job id). NULL: none, or it does not parse. */
static forge_held_t *kept_of(const forge_launch_record_t *r)
{
    forge_request_t *req = NULL;
    forge_error_t perr = {0};
    forge_held_t *kept = NULL;

    if (!r->request)
        return NULL;
    if (r->request_was_sealed)
        return forge_held_of_trusted(r->request, r->request_len);
    if (!forge_request_parse(r->request, r->request_len, &req, &perr))
        kept = forge_held_of_request(req);
    forge_request_destroy(req);
    return kept;
}

/* The item's events, as the worker's publish.c makes them (labels from
 * its request), then its record, sealed. */
static int produce_item(const forge_recon_run_t *run, forge_kafka_t *k,
                        forge_recon_item_t *it, forge_error_t *err)
{
    forge_held_t *kept = kept_of(it->rec);
    json_t *rec = NULL;
    int rc = 0;

    for (size_t e = 0; !rc && e < it->event_count; e++) {
        const forge_recon_event_t *ev = &it->events[e];
        forge_status_event_t s = {
            .launch_id = it->launch_id,
            .attempt = it->attempt,
            .seq = ev->seq,
            .state = ev->state,
            .previous = ev->previous,
            .reason = ev->reason,
            .worker_id = RECONCILE_WORKER_ID,
            .labels = kept ? kept->labels : NULL,
            .label_count = kept ? kept->label_count : 0,
            .slurm = ev->slurm,
            .at_ms = it->rec->updated_at_ms,
            .try_num = forge_launch_try(it->rec),
        };
        rc = produce_json(k, run->cfg->topic_status, -1, it->launch_id,
                          forge_event_status(&s), err);
    }
    if (!rc && (rc = forge_launch_record_encode_kept(it->rec, kept, run->sealer,
                                                     &rec, err)))
        forge_kafka_fail_txn(k); /* never in clear, never without it */
    forge_held_free(kept);
    if (!rc)
        rc = produce_json(k, run->cfg->topic_state, it->partition,
                          it->launch_id, rec, err);
    return rc;
}

static void item_failed(forge_recon_item_t *it, const char *what)
{
    if (!it->error)
        it->error = forge_xstrdup(what);
}

/* One transaction: the items [from, to) that write, and the group's
 * committed offsets as they are. 0 when it committed. */
static int write_batch(const forge_recon_run_t *run, joined_t *j,
                       forge_recon_plan_t *plan, size_t from, size_t to)
{
    forge_error_t err = {0};
    int rc = 0;

    for (size_t i = from; !rc && i < to; i++)
        if (plan->items[i].rec && plan->items[i].partition >= 0)
            rc = produce_item(run, j->kafka, &plan->items[i], &err);
    if (!rc && forge_kafka_keep_offsets(j->kafka, OFFSETS_TIMEOUT_MS)) {
        forge_error_set(&err, FORGE_EIO, "FORGE_KAFKA_GROUP_ID",
                        "the group's committed offsets could not be read");
        forge_kafka_fail_txn(j->kafka);
        rc = -1;
    }
    if (forge_kafka_commit(j->kafka) != FORGE_KAFKA_COMMITTED && !rc) {
        forge_error_set(&err, FORGE_EIO, "FORGE_KAFKA_BROKERS",
                        "the transaction did not commit (another member in "
                        "the group, or the broker away)");
        rc = -1;
    }
    for (size_t i = from; i < to; i++) {
        forge_recon_item_t *it = &plan->items[i];
        if (!it->rec)
            continue;
        if (it->partition < 0)
            item_failed(it, "no partition to write its record to");
        else if (rc)
            item_failed(it, err.message);
        else
            it->done = true;
    }
    return rc;
}

/* The plan's records and events, BATCH_RECORDS launches a transaction (a
 * record may carry a 1.4 MiB request: one transaction for thousands would
 * outlive transaction.timeout.ms). A launch's events and record always go
 * together; a batch that does not commit stops the rest (left undone). */
static void write_records(const forge_recon_run_t *run, joined_t *j,
                          forge_recon_plan_t *plan)
{
    size_t from = 0, written = 0, batches = 0;
    int rc = 0;

    while (!rc && from < plan->count) {
        size_t to = from, n = 0;
        for (; to < plan->count && n < BATCH_RECORDS; to++)
            n += plan->items[to].rec != NULL;
        if (n) {
            rc = write_batch(run, j, plan, from, to);
            written += rc ? 0 : n;
            batches++;
        }
        from = to;
    }
    for (; from < plan->count; from++)
        if (plan->items[from].rec)
            item_failed(&plan->items[from], "an earlier batch did not commit");
    forge_log_info("reconcile: %zu record(s) written in %zu transaction(s)%s",
                   written, batches, rc ? "; a batch did not commit" : "");
}

/* What the plan cancels, once its records are safe. */
static void cancel_jobs(forge_slurm_client_t *c, forge_recon_plan_t *plan)
{
    for (size_t i = 0; i < plan->count; i++) {
        forge_recon_item_t *it = &plan->items[i];
        bool ok = !it->error;

        for (size_t n = 0; ok && n < it->cancel_count; n++) {
            forge_slurm_result_t res = {0};
            forge_slurm_status_t st =
                forge_slurm_cancel(c, it->cancel_jobs[n], NULL, &res);
            if (st != FORGE_SLURM_OK && st != FORGE_SLURM_NOT_FOUND) {
                item_failed(it, res.message);
                ok = false;
            }
        }
        if (it->cancel_count && ok)
            it->done = !it->rec || it->done;
    }
}

/* ---- the command -------------------------------------------------------- */

static forge_recon_refusal_t read_sources(const forge_recon_run_t *run,
                                          forge_recon_sources_t *s,
                                          forge_error_t *err)
{
    forge_admin_error_t e = {0};

    s->launches = forge_recon_map_new();
    s->jobs = forge_recon_map_new();
    if (forge_recon_read_topics(run->cfg, run->sealer, s, run->kafka_wait_ms,
                                &e))
        return refusal_of(&e, err);
    if (forge_recon_read_slurm(run->slurm, run->staging, s, err))
        return FORGE_RECON_SLURM_DOWN;
    forge_recon_read_accounting(run->slurm, s);
    return FORGE_RECON_OK;
}

forge_recon_refusal_t forge_recon_run(const forge_recon_run_t *run,
                                      forge_recon_plan_t *plan,
                                      forge_error_t *err)
{
    joined_t j = {0};
    forge_recon_sources_t s = {0};
    forge_recon_refusal_t r = FORGE_RECON_OK;

    memset(plan, 0, sizeof(*plan));
    if (run->execute)
        r = join(run, &j, err);
    if (!r)
        r = read_sources(run, &s, err);
    if (!r && run->execute && j.assigned != s.partitions) {
        forge_error_set(err, FORGE_EINVAL, "FORGE_KAFKA_GROUP_ID",
                        "reconcile holds %zu of %zu partitions: another "
                        "member joined group %s",
                        j.assigned, s.partitions, run->cfg->kafka_group_id);
        r = FORGE_RECON_GROUP_ACTIVE;
    }
    if (!r) {
        forge_recon_plan_make(&s, forge_timestamp_now_ms(), plan);
        plan->foreign_jobs = s.foreign_jobs;
        if (run->execute) {
            write_records(run, &j, plan);
            cancel_jobs(run->slurm, plan);
        }
    }
    forge_kafka_destroy(j.kafka); /* leaves the group */
    free(j.member_id);
    forge_recon_sources_clear(&s);
    return r;
}
