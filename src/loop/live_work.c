/* SPDX-License-Identifier: Apache-2.0 */
/*
 * live_work.c - the live logs' thread (live_work.h): each launch of a LIVE
 * item read past its cursors (archive/live.h), its own secrets and every
 * registered one redacted, within the bounds the item says; and, when the
 * read found something (or ends a followed launch), its chunk's event made
 * here as compact JSON (record/events.h), so the loop only hands it to the
 * producer: 100 chunks of 64 KiB are ~50 ms of JSON, which would delay a
 * poll tick on the loop's thread.
 *
 * Threads and ownership: one thread; its context (the configuration) is
 * read-only; the item is its own while it runs (work.h), and everything in
 * it was copied by the loop, so nothing here touches the launch table.
 */
#include "loop/live_work.h"
#include "clock/timestamp.h"
#include "base/util.h"
#include "record/events.h"
#include "loop/work.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The chunk's event, when one is due: new bytes, or the end of a launch
 * that sent chunks before (its final chunk says so even when empty). */
void forge_live_item_event(const forge_config_t *cfg, forge_live_item_t *it)
{
    const forge_held_t *h = it->kept;
    forge_log_chunk_event_t ev = {0};
    json_t *o;

    for (size_t i = 0; i < it->read.segment_count; i++)
        it->skipped += it->read.segments[i].skipped;
    if (!it->read.segment_count && !(it->final && it->n > 1))
        return;
    ev.launch_id = it->launch_id;
    ev.attempt = it->attempt;
    ev.try_num = it->try_num;
    ev.n = it->n;
    ev.final = it->final;
    ev.worker_id = cfg->worker_id;
    ev.labels = h ? h->labels : NULL;
    ev.label_count = h ? h->label_count : 0;
    ev.segments = it->read.segments;
    ev.segment_count = it->read.segment_count;
    ev.at_ms = forge_timestamp_now_ms();
    if (!(o = forge_event_log_chunk(&ev))) { /* a bug: never from a read */
        it->code = FORGE_EINVAL;
        snprintf(it->message, sizeof(it->message),
                 "a chunk of %s did not make an event", it->launch_id);
        return;
    }
    it->event = json_dumps(o, JSON_COMPACT);
    it->event_len = it->event ? strlen(it->event) : 0;
    json_decref(o);
}

static void read_item(const forge_config_t *cfg, forge_live_item_t *it)
{
    const forge_held_t *h = it->kept;
    forge_live_spec_t spec = {it->launch_id,
                              it->attempt,
                              h ? h->secrets : NULL,
                              h ? h->secret_count : 0,
                              (uint64_t)cfg->log_live_chunk_bytes,
                              it->allowance,
                              (uint64_t)cfg->log_live_budget_bytes,
                              it->final};
    forge_error_t err = {0};

    if (forge_live_read(cfg, &spec, it->cursors, it->cursor_count, &it->read,
                        &err)) {
        it->code = err.code ? err.code : FORGE_EIO;
        snprintf(it->message, sizeof(it->message), "%s", err.message);
        return;
    }
    forge_live_item_event(cfg, it);
}

static void run(void *ctx, void *item)
{
    forge_work_t *w = item;

    w->status = FORGE_SLURM_OK;       /* no Slurm here */
    if (w->kind != FORGE_WORK_LIVE) { /* not this thread's: a bug */
        w->code = FORGE_EINVAL;
        forge_work_say(w, "work of kind %d posted to the live logs' thread",
                       (int)w->kind);
        return;
    }
    for (size_t i = 0; i < w->live.item_count; i++)
        read_item(ctx, &w->live.items[i]);
}

/* The context is the caller's configuration: nothing to destroy. */
static const forge_pool_handlers_t handlers = {run, forge_work_drop, NULL,
                                               NULL};

forge_rc_t forge_live_work_start(const forge_config_t *cfg, forge_pool_t **out,
                                 forge_error_t *err)
{
    return forge_pool_start("live-logs", 1, &handlers, (void *)cfg, out, err);
}
