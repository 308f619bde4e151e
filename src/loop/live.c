/* SPDX-License-Identifier: Apache-2.0 */
/*
 * live.c - live logs (issue 29, docs/CONTRACT.md section 2): the output
 * of each running launch that wants it, read every
 * FORGE_LOG_LIVE_INTERVAL_MS on the live lane (live_work.h) and published
 * as forge.launch.log_chunk events on the logs topic, keyed by launch.
 *
 * What is read: every owned launch whose request wants live logs (its
 * logs.live and the fleet's FORGE_LOG_LIVE: record/held.h), while its job
 * is RUNNING; and once it ended (any terminal state after a job ran), one
 * last read, final, before its archive: finish.c holds the archive until
 * the final chunk is in the record, so a platform reading the logs topic
 * sees the chunks, then logs_archived.
 *
 * Bounds: one read out at a time for the whole worker (one item carries
 * every launch due), at most one chunk per launch per read, a chunk's
 * file bytes at most FORGE_LOG_LIVE_CHUNK_BYTES, and a per-launch budget
 * of FORGE_LOG_LIVE_BUDGET_BYTES a minute (a sliding minute: no 60 s
 * carries more, the final chunk apart); a file further behind than a minute's
 * budget is skipped ahead, the chunk saying how much (archive/live.h).
 * The final read may carry one chunk beyond the budget.
 *
 * Durability: a chunk's event and the launch's record with the files'
 * new cursors and the chunk count go into the same transaction
 * (publish.c), so the next owner, after a crash, reads on from the last
 * committed chunk: nothing missed, and a chunk sent again only if its
 * transaction did not commit (read_committed consumers never saw it).
 * A read that found nothing new changes only the memory (the cursors'
 * last seen sizes), never the record.
 *
 * Loop thread only; the reading is live_work.c's.
 */
#include "clock/clock.h"
#include "hooks/hooks.h"
#include "log/log.h"
#include "base/util.h"
#include "loop/loop_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WARN_EVERY_MS 60000

/* ---- the read ------------------------------------------------------------
 */

/* The budget is a sliding minute: what e's chunks carried in the last
 * LIVE_SLOTS slots of LIVE_SLOT_MS (at least the last 60 s, at most 70)
 * is spent, so no 60 s ever carries more than the budget. */
#define LIVE_SLOTS   7
#define LIVE_SLOT_MS 10000

/* e's ring moved on to now's slot (the slots passed since emptied). */
static void advance(forge_entry_t *e, long long now)
{
    long long slot = now / LIVE_SLOT_MS;

    for (long long s = e->live_slot + 1;
         s <= slot && s <= e->live_slot + LIVE_SLOTS; s++)
        e->live_spent[s % LIVE_SLOTS] = 0;
    if (slot > e->live_slot)
        e->live_slot = slot;
}

/* What e may still carry this minute, in bytes. */
static long long budget_left(const forge_loop_t *w, forge_entry_t *e,
                             long long now)
{
    long long spent = 0;

    advance(e, now);
    for (int i = 0; i < LIVE_SLOTS; i++)
        spent += e->live_spent[i];
    return w->cfg->log_live_budget_bytes - spent;
}

static void spend(forge_entry_t *e, uint64_t bytes, long long now)
{
    uint32_t *slot;

    advance(e, now);
    slot = &e->live_spent[e->live_slot % LIVE_SLOTS];
    *slot = bytes > UINT32_MAX - *slot ? UINT32_MAX : *slot + (uint32_t)bytes;
}

typedef struct round {
    forge_loop_t *w;
    forge_work_t *work;
    size_t cap;
    long long now;
} round_t;

static forge_live_item_t *add_item(round_t *r, const forge_entry_t *e)
{
    forge_work_live_t *l = &r->work->live;
    forge_live_item_t *it;

    if (l->item_count == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        l->items = forge_xrealloc(l->items, r->cap * sizeof(*l->items));
    }
    it = &l->items[l->item_count++];
    memset(it, 0, sizeof(*it));
    it->launch_id = forge_xstrdup(e->rec->launch_id);
    it->attempt = e->rec->attempt;
    it->try_num = forge_launch_try(e->rec);
    it->n = e->rec->log_chunks + 1;
    it->kept = forge_held_copy(e->held);
    it->partition = e->partition;
    it->generation = e->generation;
    it->cursors =
        forge_live_cursors_copy(e->rec->log_cursors, e->rec->log_cursor_count);
    it->cursor_count = e->rec->log_cursor_count;
    return it;
}

static void consider(void *ctx, forge_entry_t *e)
{
    round_t *r = ctx;
    const forge_launch_record_t *rec = e->rec;
    bool final = forge_state_is_terminal(rec->state);
    long long chunk = r->w->cfg->log_live_chunk_bytes, left;
    forge_live_item_t *it;

    if (!forge_owner_owns(r->w->owner, e->partition) ||
        !forge_loop_wants_live(r->w, e))
        return;
    if (final ? !forge_loop_live_holds_archive(r->w, e)
              : rec->state != FORGE_STATE_RUNNING || !rec->job_id)
        return;
    left = budget_left(r->w, e, r->now);
    if (!final && left <= 0)
        return; /* the minute's budget is spent */
    it = add_item(r, e);
    it->final = final;
    it->allowance = (uint64_t)(final || left > chunk ? chunk : left);
}

void forge_loop_live_due(forge_loop_t *w)
{
    round_t r = {w, NULL, 0, forge_clock_ms()};

    if (w->live_in_flight || r.now < w->live_next_ms ||
        w->cfg->log_live == FORGE_LOG_LIVE_OFF)
        return;
    w->live_next_ms = r.now + w->cfg->log_live_interval_ms;
    r.work = forge_work_new(FORGE_WORK_LIVE, NULL, 0, -1, 0);
    forge_owner_each(w->owner, consider, &r);
    if (r.work->live.item_count == 0) {
        forge_work_free(r.work);
        return;
    }
    w->live_in_flight = true;
    w->pool_ops->post(w->pools, FORGE_LANE_LIVE, r.work);
}

/* ---- its result ----------------------------------------------------------
 */

static forge_entry_t *entry_of(forge_loop_t *w, const forge_live_item_t *it)
{
    forge_entry_t *e = forge_owner_find(w->owner, it->launch_id);

    return e && e->rec->attempt == it->attempt &&
                   e->generation == it->generation &&
                   e->partition == it->partition &&
                   forge_owner_owns(w->owner, e->partition)
               ? e
               : NULL;
}

static void warn_failed(forge_loop_t *w, const forge_live_item_t *it)
{
    long long now = forge_clock_ms();
    forge_log_field_t f[] = {{"launch_id", it->launch_id},
                             {"error", forge_rc_name(it->code)}};

    if (w->live_warned_ms && now - w->live_warned_ms < WARN_EVERY_MS)
        return;
    w->live_warned_ms = now;
    forge_log_fields(FORGE_LOG_WARN, f, 2,
                     "live logs not read (tried again at the next read; "
                     "further failures are not logged for a minute): %s",
                     it->message);
}

/* The chunk's event, made by the live thread (live_work.c), into the
 * transaction. */
static void publish_chunk(forge_loop_t *w, forge_entry_t *e,
                          forge_live_item_t *it)
{
    forge_loop_produce_text(w, w->cfg->topic_logs, -1, e->rec->launch_id,
                            it->event, it->event_len);
    forge_hooks()->log_chunk(it->read.bytes, it->skipped);
}

static void on_item(forge_loop_t *w, forge_live_item_t *it)
{
    forge_entry_t *e = entry_of(w, it);
    forge_launch_record_t *rec;
    bool say = it->event != NULL;

    if (!e)
        return; /* gone, or rebuilt since: the next read is its own */
    rec = e->rec;
    if (it->code || it->n != rec->log_chunks + 1) {
        if (it->code)
            warn_failed(w, it);
        return; /* nothing moves: the next read starts from the same */
    }
    spend(e, it->read.bytes, forge_clock_ms());
    if (say)
        publish_chunk(w, e, it);
    forge_launch_set_logs(rec, say ? it->n : rec->log_chunks,
                          it->final || rec->log_final, it->read.cursors,
                          it->read.cursor_count);
    it->read.cursors = NULL;
    it->read.cursor_count = 0;
    if (say)
        forge_loop_write_record(w, e);
    if (it->final) /* its archive may go now (finish.c) */
        forge_loop_tend_finished(w, e, forge_clock_ms());
}

void forge_loop_on_live(forge_loop_t *w, forge_work_t *work)
{
    w->live_in_flight = false;
    for (size_t i = 0; i < work->live.item_count; i++)
        on_item(w, &work->live.items[i]);
}
