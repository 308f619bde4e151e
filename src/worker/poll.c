/* SPDX-License-Identifier: Apache-2.0 */
/*
 * poll.c - a poll tick on the loop's side: each live job added to it from
 * its record (loop.c builds and posts the tick; the poller thread,
 * poller.c, asks Slurm), then its answer onto the launches' records: a
 * changed job's details mapped to the platform's state (slurm/verdict.h)
 * and published when it moved, a missing one waited for then LOST, and
 * the Slurm states the record's state was derived from kept in the record
 * (launch.h: slurm_states), the poller's memory after a restore. Loop
 * thread only.
 */
#include "core/clock.h"
#include "launch/events.h"
#include "core/log.h"
#include "slurm/verdict.h"
#include "core/util.h"
#include "ops/observe.h"
#include "worker/worker_int.h"

#include <stdlib.h>
#include <string.h>

void forge_worker_poll_add(forge_work_t *tick, const forge_launch_record_t *r)
{
    forge_work_poll_t *p = &tick->poll;
    forge_poll_item_t *it;

    p->items = forge_xrealloc(p->items, (p->item_count + 1) * sizeof(*it));
    it = &p->items[p->item_count++];
    memset(it, 0, sizeof(*it));
    it->launch_id = forge_xstrdup(r->launch_id);
    it->job_id = r->job_id;
    it->component_count = r->component_count;
    it->component_ids = forge_xcalloc(r->component_count + 1, sizeof(uint32_t));
    memcpy(it->component_ids, r->component_ids,
           r->component_count * sizeof(uint32_t));
    it->known_states = r->slurm_states ? forge_xstrdup(r->slurm_states) : NULL;
}

static void learn_components(forge_entry_t *e, const forge_slurm_job_list_t *l)
{
    if (l->count <= e->rec->component_count)
        return;
    free(e->rec->component_ids);
    e->rec->component_ids = forge_xcalloc(l->count, sizeof(uint32_t));
    for (size_t i = 0; i < l->count; i++)
        e->rec->component_ids[i] = l->jobs[i].job_id;
    e->rec->component_count = l->count;
}

/*
 * The Slurm states a poll saw (stolen from it) go into e's record when the
 * record's state is what they map to (to: the verdict): the poller's
 * memory after a restore (work.h: known_states). They are written with
 * the record's next write: the state change itself, or, for a record that
 * held none yet (written before the field existed), now, once; a change of
 * flags alone (COMPLETING, CONFIGURING...) waits for the next write rather
 * than re-seal a record for it, and costs at most one details call after a
 * restore. True when the record must be written for them.
 */
static bool remember_states(forge_entry_t *e, forge_poll_item_t *it,
                            forge_state_t to, bool moves)
{
    bool first = !e->rec->slurm_states;

    if (!it->states || to == FORGE_STATE_NONE ||
        (!moves && to != e->rec->state))
        return false;
    free(e->rec->slurm_states);
    e->rec->slurm_states = it->states;
    it->states = NULL;
    return first && !moves;
}

static void on_poll_changed(worker_t *w, forge_entry_t *e,
                            forge_poll_item_t *it)
{
    forge_slurm_move_t m =
        forge_slurm_move(&it->jobs, e->rec->state, e->rec->cancel_requested);
    json_t *slurm = forge_slurm_verdict_json(&it->jobs);
    change_t c = {m.to, m.reason, slurm, NULL};

    learn_components(e, &it->jobs);
    e->rec->missing_since_ms = 0;
    if (remember_states(e, it, m.to, m.moves))
        forge_worker_write_record(w, e);
    if (m.moves && forge_state_is_terminal(m.to))
        forge_ended_put(w->ended, it->job_id, m.to, c.reason, slurm,
                        forge_clock_ms());
    if (m.moves)
        forge_worker_publish_event(w, e, &c, true);
    json_decref(slurm);
}

/* A job slurmctld no longer knows whose end a tick saw before the records
 * rewound (ended.h): it ends as seen. True when it did. */
static bool ended_as_seen(worker_t *w, forge_entry_t *e, uint32_t job_id)
{
    const forge_ended_job_t *end =
        forge_ended_find(w->ended, job_id, forge_clock_ms());
    change_t c;

    if (!end || !forge_state_transition_legal(e->rec->state, end->state))
        return false;
    c = (change_t){end->state, end->reason, end->slurm, NULL};
    forge_log_info("job %u is gone from slurmctld; its end was seen before "
                   "the records rewound: %s",
                   (unsigned)job_id, forge_state_name(end->state));
    e->rec->missing_since_ms = 0;
    forge_worker_publish_event(w, e, &c, true);
    return true;
}

static void on_poll_item(worker_t *w, forge_poll_item_t *it, long long now)
{
    forge_entry_t *e = forge_owner_find(w->owner, it->launch_id);

    if (!e || e->rec->job_id != it->job_id ||
        forge_state_is_terminal(e->rec->state))
        return;
    if (it->outcome == FORGE_POLL_CHANGED) {
        on_poll_changed(w, e, it);
    } else if (it->outcome == FORGE_POLL_ABSENT) {
        /* Missing is never "finished" (unless its end was seen): wait out
         * the grace, then LOST. */
        if (ended_as_seen(w, e, it->job_id))
            return;
        if (!e->rec->missing_since_ms) {
            e->rec->missing_since_ms = now;
            forge_worker_write_record(w, e);
        } else if (forge_slurm_lost(now - e->rec->missing_since_ms,
                                    w->cfg->lost_grace_s)) {
            change_t c = {FORGE_STATE_LOST, FORGE_SLURM_LOST_REASON, NULL,
                          NULL};
            forge_worker_publish_event(w, e, &c, true);
        }
    } else if (it->outcome == FORGE_POLL_UNCHANGED &&
               e->rec->missing_since_ms) {
        e->rec->missing_since_ms = 0;
        forge_worker_write_record(w, e);
    }
}

void forge_worker_on_polled(worker_t *w, forge_work_t *tick)
{
    /* wall time: missing_since_ms is kept in the record (core/clock.h) */
    long long now = forge_event_now_ms();
    size_t changed = 0;

    w->poll_in_flight = false;
    forge_observe_tick_done(forge_clock_ms() - w->poll_posted_ms);
    for (size_t i = 0;
         tick->status == FORGE_SLURM_OK && i < tick->poll.item_count; i++) {
        changed += tick->poll.items[i].outcome == FORGE_POLL_CHANGED;
        on_poll_item(w, &tick->poll.items[i], now);
    }
    if (tick->status != FORGE_SLURM_OK)
        forge_log_warn("poll tick: %s (%s): nothing changes", tick->message,
                       forge_slurm_status_name(tick->status));
    else /* the bench reads it (bench/bench_restart.py) */
        forge_log_debug("poll tick answered: %zu live jobs, %zu changed, "
                        "in %lld ms",
                        tick->poll.item_count, changed,
                        forge_clock_ms() - w->poll_posted_ms);
}
