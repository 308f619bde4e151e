/*
 * poll.c - a poll tick's answer onto the launches' records: a
 * changed job's details mapped to the platform's state (slurm/verdict.h)
 * and published when it moved, a missing one waited for then LOST, and
 * the Slurm states the record's state was derived from kept in the record
 * (launch.h: slurm_states), the poller's memory after a restore. Loop
 * thread only (loop.c builds and posts the tick).
 */
#include "launch/events.h"
#include "core/log.h"
#include "slurm/verdict.h"
#include "core/util.h"
#include "worker/worker_int.h"

#include <stdlib.h>
#include <string.h>

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
 * memory after a restore (runner.h: known_states). They are written with
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
    if (m.moves)
        forge_worker_publish_event(w, e, &c, true);
    json_decref(slurm);
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
        /* Missing is never "finished": wait out the grace, then LOST. */
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
    long long now = forge_event_now_ms();
    size_t changed = 0;

    w->poll_in_flight = false;
    for (size_t i = 0; tick->status == FORGE_SLURM_OK && i < tick->item_count;
         i++) {
        changed += tick->items[i].outcome == FORGE_POLL_CHANGED;
        on_poll_item(w, &tick->items[i], now);
    }
    if (tick->status != FORGE_SLURM_OK)
        forge_log_warn("poll tick: %s (%s): nothing changes", tick->message,
                       forge_slurm_status_name(tick->status));
    else /* the bench reads it (bench/bench_restart.py) */
        forge_log_debug("poll tick answered: %zu live jobs, %zu changed, "
                        "in %lld ms",
                        tick->item_count, changed, now - w->poll_posted_ms);
}
