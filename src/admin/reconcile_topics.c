/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_topics.c - what the topics say of each launch, for reconcile
 * (reconcile.h), read through the recovery commands' shared readers: the
 * state topic with launch_table.h (each launch's latest record, decoded
 * with the worker's codec and the state keys, as `launches` shows it),
 * the requests, status and logs topics with topic_scan.h (every partition
 * from its beginning to its end, read_committed, group-less: nothing joins
 * the workers' group and nothing is committed), and the group's committed
 * offsets on the requests topic with group.h, so a request is known as
 * consumed (the worker acted on it) or still to come.
 *
 * What is reconcile's own here: what each record says of its launch
 * (on_request, on_status, on_logs: of the logs topic only the
 * logs_archived events, logs.h's forge_logs_event_of, not the live
 * chunks beside them) and the state table's records moved into the
 * launches. librdkafka is topic_scan.c's and group.c's.
 *
 * The state, status and logs topics are read to ends taken together
 * before any is read (forge_topics_marks): a worker writes a launch's
 * record and its events in one transaction, and a dry run beside running
 * workers that read the record before a commit and the event after it
 * would report a seq mismatch that is not there. Asked together, the ends
 * leave that to a commit landing within the milliseconds of the asks.
 * The command's thread.
 */
#include "admin/reconcile.h"
#include "log/log.h"
#include "base/util.h"
#include "admin/group.h"
#include "admin/launch_table.h"
#include "admin/logs.h"
#include "admin/topic_scan.h"
#include "request/request.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct reading {
    forge_recon_sources_t *s;
    int64_t *committed; /* requests: the group's per partition, -1 none */
    int32_t partitions; /* of committed */
} reading_t;

/* The record's key as a string; NULL when it has none (or an empty one:
 * the worker keys every event by launch_id). */
static char *key_of(const forge_scan_record_t *r)
{
    return r->key && r->key_len ? forge_xstrndup(r->key, r->key_len) : NULL;
}

/* ---- the requests topic ------------------------------------------------- */

static void take_launch(forge_recon_launch_t *l, const forge_scan_record_t *r,
                        int attempt, bool consumed)
{
    /* a consumed request wins over one still to come, then the attempt */
    if (l->request &&
        (l->request_consumed > consumed ||
         (l->request_consumed == consumed && l->request_attempt > attempt)))
        return;
    free(l->request);
    l->request = forge_xstrndup(r->value, r->value_len);
    l->request_len = r->value_len;
    l->request_attempt = attempt;
    l->request_partition = r->partition;
    l->request_consumed = consumed;
    l->cancel_requested = false;
}

/* A request the worker refused (REJECTED) still has a record, without
 * its request, in its partition: where a rebuilt one goes. */
static void refused(reading_t *rd, const forge_scan_record_t *r, bool consumed)
{
    int attempt = 1;
    char *id = forge_request_salvage_id(r->value, r->value_len, &attempt);
    forge_recon_launch_t *l;

    if (!id)
        return; /* the DLQ's: no launch */
    l = forge_recon_launch_of(rd->s, id);
    if (!l->request && (l->request_partition < 0 ||
                        (consumed && attempt >= l->request_attempt))) {
        l->request_attempt = attempt;
        l->request_partition = r->partition;
        l->request_consumed = consumed;
    }
    free(id);
}

/* Keyed or not: the request's launch_id decides, as for the worker. */
static void on_request(void *ctx, const forge_scan_record_t *r)
{
    reading_t *rd = ctx;
    forge_request_t *req = NULL;
    forge_error_t err = {0};
    bool consumed = r->partition < rd->partitions &&
                    r->offset < rd->committed[r->partition];
    forge_recon_launch_t *l;

    if (!r->value)
        return;
    if (forge_request_parse(r->value, r->value_len, &req, &err)) {
        refused(rd, r, consumed);
        return;
    }
    if (req->kind == FORGE_REQUEST_LAUNCH) {
        l = forge_recon_launch_of(rd->s, req->launch.launch_id);
        take_launch(l, r, req->launch.attempt, consumed);
    } else if (consumed) { /* one still to come is the worker's to act on */
        l = forge_recon_launch_of(rd->s, req->cancel.launch_id);
        if (l->request && l->request_consumed &&
            (!req->cancel.attempt || req->cancel.attempt == l->request_attempt))
            l->cancel_requested = true;
    }
    forge_request_destroy(req);
}

/* The requests topic with the group's committed offsets on it
 * (s->partitions: its partition count). */
static forge_admin_code_t read_requests(const forge_config_t *cfg,
                                        forge_recon_sources_t *s,
                                        int timeout_ms,
                                        forge_admin_error_t *err)
{
    reading_t rd = {s, NULL, 0};
    forge_admin_code_t rc;

    if ((rc = forge_topic_partitions(cfg, cfg->topic_requests, timeout_ms,
                                     &rd.partitions, err)))
        return rc;
    s->partitions = (size_t)rd.partitions;
    rd.committed = forge_xcalloc((size_t)rd.partitions, sizeof(int64_t));
    if (!(rc = forge_group_committed(cfg, cfg->kafka_group_id,
                                     cfg->topic_requests, rd.partitions,
                                     timeout_ms, rd.committed, err)))
        rc = forge_topic_scan_all(cfg, cfg->topic_requests, timeout_ms,
                                  on_request, &rd, err);
    free(rd.committed);
    return rc;
}

/* ---- the state topic ---------------------------------------------------- */

/* Each launch's latest record, moved from the state table into its
 * launch (the table is cleared next). */
static forge_admin_code_t read_state(const forge_config_t *cfg,
                                     const forge_sealer_t *sealer,
                                     const forge_scan_marks_t *until,
                                     int32_t count, forge_recon_sources_t *s,
                                     int timeout_ms, forge_admin_error_t *err)
{
    forge_launch_table_t t;
    forge_admin_code_t rc;

    if ((rc = forge_launch_table_load(cfg, sealer, until, count, timeout_ms, &t,
                                      err)))
        return rc;
    if (t.undecodable)
        forge_log_warn("reconcile: %zu state record(s) skipped, not "
                       "decodable; the first: %s",
                       t.undecodable, t.first_error);
    s->state_records = t.records_read;
    for (size_t i = 0; i < t.count; i++) {
        forge_launch_table_entry_t *e = &t.entries[i];
        forge_recon_launch_t *l = forge_recon_launch_of(s, e->rec->launch_id);
        l->rec = e->rec;
        l->rec_partition = e->partition;
        e->rec = NULL; /* the launch's now */
    }
    forge_launch_table_clear(&t);
    return FORGE_RECOVERY_OK;
}

/* ---- the status and logs topics ----------------------------------------- */

static json_t *event_data(const forge_scan_record_t *r, json_t **doc)
{
    json_error_t jerr;

    *doc = r->value ? json_loadb(r->value, r->value_len, 0, &jerr) : NULL;
    return json_object_get(*doc, "data");
}

/* One event d (data) of the launch's latest attempt: its seq, state, try
 * and job. A retry's PENDING names the job of the try that failed: the
 * next try has none yet. */
static void status_event(forge_recon_launch_t *l, const json_t *d, long seq,
                         const json_t *job)
{
    json_int_t try_num = json_integer_value(json_object_get(d, "try"));
    const char *reason = json_string_value(json_object_get(d, "reason"));

    if (seq != l->status_seq + 1)
        l->status_gap = true;
    l->status_seq = seq;
    l->status_state =
        forge_state_from_name(json_string_value(json_object_get(d, "state")));
    l->status_try = try_num > 1 && try_num <= INT_MAX ? (int)try_num : 1;
    if (reason && !strcmp(reason, "retrying"))
        l->status_job_id = 0;
    else if (json_integer_value(job) > 0)
        l->status_job_id = (uint32_t)json_integer_value(job);
}

static void on_status(void *ctx, const forge_scan_record_t *r)
{
    forge_recon_sources_t *s = ctx;
    json_t *doc, *d = event_data(r, &doc);
    int attempt = (int)json_integer_value(json_object_get(d, "attempt"));
    long seq = (long)json_integer_value(json_object_get(d, "seq"));
    json_t *job = json_object_get(json_object_get(d, "slurm"), "job_id");
    char *key = key_of(r);
    forge_recon_launch_t *l;

    if (d && attempt >= 1 && key) {
        l = forge_recon_launch_of(s, key);
        if (attempt > l->status_attempt) {
            l->status_attempt = attempt;
            l->status_seq = 0;
            l->status_job_id = 0;
        }
        if (attempt == l->status_attempt)
            status_event(l, d, seq, job);
    }
    free(key);
    json_decref(doc);
}

/* The logs topic carries a launch's live chunks (log_chunk) beside its
 * logs_archived; only those say an attempt was archived. A value without
 * the type's name cannot be one and is not parsed: the chunks, most of
 * the topic's bytes, mostly are not. */
static void on_logs(void *ctx, const forge_scan_record_t *r)
{
    static const char type[] = "\"" FORGE_LOGS_TYPE_ARCHIVED "\"";
    forge_recon_sources_t *s = ctx;
    int attempt = 0;
    char *key;
    forge_recon_launch_t *l;

    if (!r->value || !memmem(r->value, r->value_len, type, sizeof(type) - 1) ||
        forge_logs_event_of(r->value, r->value_len, NULL, &attempt) !=
            FORGE_LOGS_EVENT_ARCHIVED ||
        !(key = key_of(r)))
        return;
    l = forge_recon_launch_of(s, key);
    if (attempt > l->logs_attempt)
        l->logs_attempt = attempt;
    free(key);
}

/* ---- the four topics ---------------------------------------------------- */

forge_admin_code_t forge_recon_read_topics(const forge_config_t *cfg,
                                           const forge_sealer_t *sealer,
                                           forge_recon_sources_t *s,
                                           int timeout_ms,
                                           forge_admin_error_t *err)
{
    const char *written[] = {cfg->topic_state, cfg->topic_status,
                             cfg->topic_logs};
    forge_scan_marks_t *until[3];
    int32_t counts[3];
    forge_admin_code_t rc;

    if ((rc = read_requests(cfg, s, timeout_ms, err)) ||
        (rc = forge_topics_marks(cfg, written, 3, timeout_ms, until, counts,
                                 err)))
        return rc;
    if (!(rc = read_state(cfg, sealer, until[0], counts[0], s, timeout_ms,
                          err)) &&
        !(rc =
              forge_topic_scan_until(cfg, cfg->topic_status, until[1],
                                     counts[1], timeout_ms, on_status, s, err)))
        rc = forge_topic_scan_until(cfg, cfg->topic_logs, until[2], counts[2],
                                    timeout_ms, on_logs, s, err);
    for (size_t i = 0; i < 3; i++)
        free(until[i]);
    return rc;
}
