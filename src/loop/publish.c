/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publish.c - the worker's writes into the current transaction:
 * status events (forge.launch.status, keyed by launch_id), launch records
 * (the state topic, same partition as the launch's requests), and the
 * deferred work that may only start once they commit. Loop thread only.
 */
#include "record/events.h"
#include "hooks/hooks.h"
#include "clock/timestamp.h"
#include "clock/clock.h"
#include "log/log.h"
#include "base/util.h"
#include "loop/loop_int.h"
#include "testpoint/testpoint.h"

#include <stdlib.h>
#include <string.h>

void forge_loop_defer(forge_loop_t *w, forge_work_t *work)
{
    work->next = w->deferred;
    w->deferred = work;
}

/* e's request bytes (a copy), or NULL when its record holds none. */
static char *request_of(const forge_entry_t *e, size_t *len)
{
    *len = e->rec->request ? e->rec->request_len : 0;
    return e->rec->request
               ? forge_xstrndup(e->rec->request, e->rec->request_len)
               : NULL;
}

forge_work_t *forge_loop_new_work(forge_work_kind_t kind,
                                  const forge_entry_t *e)
{
    /* the generation is checked before Slurm (submit.h) */
    forge_work_t *work = forge_work_new(
        kind, e->rec->launch_id, e->rec->attempt, e->partition, e->generation);

    work->try_num = forge_launch_try(e->rec);
    if (kind == FORGE_WORK_CANCEL || kind == FORGE_WORK_SWEEP) {
        work->cancel.job_id = e->rec->job_id;
    } else if (kind == FORGE_WORK_ARCHIVE || kind == FORGE_WORK_RESTAGE) {
        work->files.kept = forge_held_copy(e->held);
        work->files.restart = e->rec->restarts;
    } else if (kind == FORGE_WORK_IMAGE_NOTE) {
        /* its payload is the end it holds back (image_note.c fills it) */
    } else if (kind != FORGE_WORK_CLEANUP) {
        work->submit.request = request_of(e, &work->submit.request_len);
        work->submit.excluded_nodes = forge_xstrdup(e->rec->excluded_nodes);
        work->submit.since_s = e->rec->accepted_at_ms / 1000 - 3600;
    }
    return work;
}

forge_entry_t *forge_loop_entry_of(forge_loop_t *w, const forge_work_t *work)
{
    forge_entry_t *e = forge_owner_find(w->owner, work->launch_id);

    return e && e->rec->attempt == work->attempt &&
                   e->generation == work->generation
               ? e
               : NULL;
}

int forge_loop_produce_text(forge_loop_t *w, const char *topic,
                            int32_t partition, const char *key,
                            const char *text, size_t len)
{
    forge_error_t err = {0};
    forge_kafka_record_t r =
        forge_kafka_event_record(topic, partition, key, text, len);
    int rc = w->kafka_ops->produce(w->kafka, &r, &err);

    if (!w->outcomes_since_ms)
        w->outcomes_since_ms = forge_clock_ms();
    if (rc)
        forge_log_error("%s", err.message);
    return rc;
}

int forge_loop_produce_json(forge_loop_t *w, const char *topic,
                            int32_t partition, const char *key, json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT);
    int rc =
        forge_loop_produce_text(w, topic, partition, key, text, strlen(text));

    free(text);
    json_decref(o);
    return rc;
}

int forge_loop_write_record(forge_loop_t *w, const forge_entry_t *e)
{
    json_t *o = NULL;
    forge_error_t err = {0};

    if (forge_launch_record_encode_kept(e->rec, e->held, w->sealer, &o, &err)) {
        /* never in clear, and never a transaction without it */
        forge_log_error("the record of %s cannot be sealed: %s",
                        e->rec->launch_id, err.message);
        w->kafka_ops->fail_txn(w->kafka);
        w->commit_now = true; /* the abort, and the rewind, at once */
        return -1;
    }
    return forge_loop_produce_json(w, w->cfg->topic_state, e->partition,
                                   e->rec->launch_id, o);
}

/* The status event of e's move from `from` to c->to (e's record moved
 * already), with e's record (store) or without; retry: a retry's object
 * (events.h), or NULL. */
static int emit(forge_loop_t *w, forge_entry_t *e, forge_state_t from,
                const change_t *c, const json_t *retry, bool store)
{
    const forge_held_t *l = e->held;
    forge_status_event_t ev = {0};
    int rc;

    forge_hooks()->moved((int)from, (int)c->to, c->reason);
    ev.launch_id = e->rec->launch_id;
    ev.attempt = e->rec->attempt;
    ev.seq = e->rec->seq;
    ev.state = c->to;
    ev.previous = from;
    ev.reason = c->reason;
    ev.worker_id = w->cfg->worker_id;
    ev.labels = l ? l->labels : NULL;
    ev.label_count = l ? l->label_count : 0;
    ev.slurm = c->slurm;
    if (c->error) {
        ev.error_code = forge_rc_name(c->error->code);
        ev.error_field = c->error->field;
        ev.error_message = c->error->message;
    }
    ev.at_ms = e->rec->updated_at_ms;
    ev.try_num = forge_launch_try(e->rec);
    ev.retry = retry;
    ev.usage = c->usage;
    FORGE_TESTPOINT_EVENT_STATE(forge_state_name(c->to));
    rc = forge_loop_produce_json(w, w->cfg->topic_status, -1, e->rec->launch_id,
                                 forge_event_status(&ev));
    {
        forge_log_field_t f[] = {{"launch_id", e->rec->launch_id},
                                 {"state", forge_state_name(c->to)}};
        forge_log_fields(FORGE_LOG_INFO, f, 2, "launch %s",
                         forge_state_name(c->to));
    }
    return rc || !store ? rc : forge_loop_write_record(w, e);
}

int forge_loop_publish_event(forge_loop_t *w, forge_entry_t *e,
                             const change_t *c, bool store)
{
    forge_state_t from = e->rec->state;

    change_t with_tries = *c;
    json_t *usage;
    int rc;

    if (forge_launch_advance(e->rec, c->to, forge_timestamp_now_ms()))
        return 0; /* not a legal move: nothing to say */
    if (c->usage && forge_state_is_terminal(c->to))
        forge_launch_add_usage(e->rec, c->usage); /* launches: GPU_H */
    if (!c->usage || !forge_state_is_terminal(c->to) ||
        forge_launch_try(e->rec) < 2)
        return emit(w, e, from, c, NULL, store);
    /* after retries: what every try used, beside this try's own */
    usage = json_deep_copy(c->usage);
    json_object_set_new(usage, "all_tries",
                        forge_launch_tries_usage_json(e->rec));
    with_tries.usage = usage;
    rc = emit(w, e, from, &with_tries, NULL, store);
    json_decref(usage);
    return rc;
}

int forge_loop_publish_retry(forge_loop_t *w, forge_entry_t *e,
                             forge_state_t from, const change_t *c,
                             const json_t *retry)
{
    return emit(w, e, from, c, retry, true);
}

void forge_loop_publish_unstored(forge_loop_t *w, const char *launch_id,
                                 int attempt, int32_t partition,
                                 const forge_error_t *error)
{
    forge_entry_t tmp = {0};
    change_t c = {FORGE_STATE_REJECTED, forge_rc_name(error->code), NULL, error,
                  NULL};

    tmp.rec = forge_launch_record_new(launch_id, attempt, NULL, 0);
    tmp.partition = partition;
    forge_loop_publish_event(w, &tmp, &c, false);
    forge_launch_record_free(tmp.rec);
}

void forge_loop_discard(forge_loop_t *w, forge_work_t *work)
{
    forge_entry_t *e = forge_loop_entry_of(w, work);

    if (work->kind == FORGE_WORK_ARCHIVE)
        w->archives_out--;
    if (e && work->kind == FORGE_WORK_IMAGE_NOTE)
        e->image_note_out = false; /* dropped: the worker stops */
    else if (e)
        e->busy = false;
    forge_work_free(work);
}
