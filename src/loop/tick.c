/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tick.c - a poll tick on the loop's side: each live job added to it from
 * its record (loop.c builds and posts the tick; the poller thread,
 * poller.c, asks Slurm), then its answer onto the launches' records: a
 * changed job's details mapped to the platform's state (slurm/verdict.h)
 * and published when it moved (a terminal move with what the job used:
 * slurm/usage.h), a missing one waited for then LOST, and the Slurm
 * states the record's state was derived from kept in the record
 * (launch.h: slurm_states). An item is numbers only (work.h; a missing
 * job's tag aside): the answer finds each launch by its job id, and a
 * steady tick (nothing changed, nothing missing) touches no record. A
 * targeted poll's answer (one job, asked by push completion: jobcomp.c)
 * takes the same path for its launch.
 *
 * LOST: a job slurmctld no longer knows is looked up in accounting
 * (poller.c). Accounting's records that are the launch's (its tag, or its
 * job name where accounting keeps no comment) and say the job ended end
 * the launch as they say, usage included. Anything else (no record, no
 * accounting, accounting unreachable, another launch's record under a
 * reused job id, a record accounting still shows live) is missing: the
 * grace starts or goes on, and once FORGE_LOST_GRACE_S has passed with
 * neither slurmctld nor accounting knowing the job's end, LOST.
 * Loop thread only.
 */
#include "hooks/hooks.h"
#include "clock/timestamp.h"
#include "clock/clock.h"
#include "base/idmap.h"
#include "record/events.h"
#include "log/log.h"
#include "slurm/verdict.h"
#include "base/util.h"
#include "render/render.h"
#include "render/try.h"
#include "slurm/usage.h"
#include "loop/loop_int.h"

#include <stdlib.h>
#include <string.h>

/* Whether r's job has components beyond its leader. */
static bool has_components(const forge_launch_record_t *r)
{
    return r->component_count > 1 ||
           (r->component_count == 1 && r->component_ids[0] != r->job_id);
}

void forge_loop_tick_add(forge_work_t *tick, const forge_launch_record_t *r)
{
    forge_work_poll_t *p = &tick->poll;
    forge_poll_item_t *it;

    if (p->item_count == p->item_cap) {
        p->item_cap = p->item_cap ? 2 * p->item_cap : 64;
        p->items = forge_xrealloc(p->items, p->item_cap * sizeof(*it));
    }
    it = &p->items[p->item_count++];
    memset(it, 0, sizeof(*it));
    it->job_id = r->job_id;
    it->state = r->state;
    it->state_since_ms = r->updated_at_ms;
    it->missing = r->missing_since_ms != 0;
    it->component_count = r->component_count ? (uint32_t)r->component_count : 1;
    if (has_components(r)) { /* a het job: rare, copied */
        it->component_ids = forge_xcalloc(r->component_count, sizeof(uint32_t));
        memcpy(it->component_ids, r->component_ids,
               r->component_count * sizeof(uint32_t));
    }
    if (it->missing) /* rare too: accounting asked for this tag's records */
        it->tag = forge_try_tag(r->launch_id, r->attempt, forge_launch_try(r));
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
 * record's state is what they map to (to: the verdict), for workers that
 * read them (CONTRACT section 1: slurm_states; this one's poller judges by
 * the record's state instead). They are written with the record's next
 * write: the state change itself, or, for a record that held none yet,
 * now, once; a change of flags alone waits for the next write. True when
 * the record must be written for them.
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

/* The usage object of jobs (new), for a terminal move. */
static json_t *usage_json(const forge_slurm_job_list_t *jobs)
{
    forge_slurm_usage_t u;
    json_t *o;

    forge_slurm_usage_of_jobs(jobs, &u);
    o = forge_slurm_usage_json(&u);
    forge_slurm_usage_clear(&u);
    return o;
}

void forge_loop_job_moved(forge_loop_t *w, forge_entry_t *e, const change_t *c)
{
    if (forge_loop_image_note_first(w, e, c) || /* image_note.c */
        forge_loop_retry_instead(w, e, c))      /* tries.c */
        return;
    forge_loop_publish_event(w, e, c, true);
}

/* Whether a raised restart count the poll found would be a requeue no
 * poll saw: the record neither PENDING already nor moving there now
 * (Slurm requeued the job and ran it again, or ended it, between two
 * looks, or the one who looked died before it said so). */
static bool requeue_unsaid(const forge_entry_t *e, forge_slurm_move_t m)
{
    return e->rec->state != FORGE_STATE_PENDING &&
           !forge_state_is_terminal(e->rec->state) &&
           !(m.moves && m.to == FORGE_STATE_PENDING);
}

/* The requeue's PENDING (requeued) published as it happened, before the
 * move the poll saw after it; m that move, from PENDING. */
static forge_slurm_move_t say_requeue(forge_loop_t *w, forge_entry_t *e,
                                      const forge_slurm_job_list_t *jobs,
                                      json_t *slurm)
{
    change_t c = {FORGE_STATE_PENDING, "requeued", slurm, NULL, NULL};

    forge_log_info("job %u was requeued (restart %d) before a poll saw it "
                   "pending: PENDING (requeued) said first",
                   (unsigned)e->rec->job_id, e->rec->restarts);
    forge_loop_publish_event(w, e, &c, true);
    return forge_slurm_move(jobs, e->rec->state, e->rec->cancel_requested);
}

static void on_poll_changed(forge_loop_t *w, forge_entry_t *e,
                            forge_poll_item_t *it)
{
    forge_slurm_move_t m =
        forge_slurm_move(&it->jobs, e->rec->state, e->rec->cancel_requested);
    json_t *slurm = forge_slurm_verdict_json(&it->jobs), *usage;
    bool unsaid = requeue_unsaid(e, m), ends;
    change_t c;

    learn_components(e, &it->jobs);
    e->rec->missing_since_ms = 0;
    /* a requeue: its count goes with the move's record (restage.c), or
     * with its own PENDING when no poll saw that */
    if (forge_loop_saw_restarts(w, e, &it->jobs, m.moves || unsaid) && unsaid)
        m = say_requeue(w, e, &it->jobs, slurm);
    ends = m.moves && forge_state_is_terminal(m.to);
    usage = ends && m.to != FORGE_STATE_LOST ? usage_json(&it->jobs) : NULL;
    c = (change_t){m.to, m.reason, slurm, NULL, usage};
    if (remember_states(e, it, m.to, m.moves))
        forge_loop_write_record(w, e);
    if (ends)
        forge_ended_put(w->ended, it->job_id, m.to, c.reason, slurm, usage,
                        forge_clock_ms());
    if (m.moves)
        forge_loop_job_moved(w, e, &c);
    json_decref(slurm);
    json_decref(usage);
}

/* A job slurmctld no longer knows whose end a tick saw before the records
 * rewound (ended.h): it ends as seen. True when it did. */
static bool ended_as_seen(forge_loop_t *w, forge_entry_t *e, uint32_t job_id)
{
    const forge_ended_job_t *end =
        forge_ended_find(w->ended, job_id, forge_clock_ms());
    change_t c;

    if (!end || !forge_state_transition_legal(e->rec->state, end->state))
        return false;
    c = (change_t){end->state, end->reason, end->slurm, NULL, end->usage};
    forge_log_info("job %u is gone from slurmctld; its end was seen before "
                   "the records rewound: %s",
                   (unsigned)job_id, forge_state_name(end->state));
    e->rec->missing_since_ms = 0;
    forge_loop_job_moved(w, e, &c);
    return true;
}

/* A job neither slurmctld nor accounting knows the end of: missing is
 * never "finished" (unless its end was seen): the grace, then LOST. */
static void on_absent(forge_loop_t *w, forge_entry_t *e, uint32_t job_id,
                      long long now)
{
    if (ended_as_seen(w, e, job_id))
        return;
    if (!e->rec->missing_since_ms) {
        e->rec->missing_since_ms = now;
        forge_loop_write_record(w, e);
    } else if (forge_slurm_lost(now - e->rec->missing_since_ms,
                                w->cfg->lost_grace_s)) {
        change_t c = {FORGE_STATE_LOST, FORGE_SLURM_LOST_REASON, NULL, NULL,
                      NULL};
        forge_loop_publish_event(w, e, &c, true);
    }
}

/* Whether each of accounting's records is e's job: its comment is the
 * launch's tag (render/try.h), or, where accounting keeps no comment
 * (slurmdbd without AccountingStoreFlags=job_comment), its name is the
 * launch's job name (render.h). Job ids repeat once slurmctld's state is
 * lost: another launch's record is not this one's end. */
static bool accounted_is_ours(const forge_entry_t *e,
                              const forge_slurm_job_list_t *l)
{
    const forge_launch_record_t *r = e->rec;
    char *tag = forge_try_tag(r->launch_id, r->attempt, forge_launch_try(r));
    char *name = forge_render_job_name(r->launch_id, r->attempt);
    bool ours = l->count > 0;

    for (size_t i = 0; ours && i < l->count; i++) {
        const forge_slurm_job_t *j = &l->jobs[i];
        ours = j->comment ? !strcmp(j->comment, tag)
                          : j->name && !strcmp(j->name, name);
    }
    free(tag);
    free(name);
    return ours;
}

/* Accounting's records of a job slurmctld forgot: the launch ends as they
 * say when they are its own and say it ended; else it is missing. Said
 * once, when the job first goes missing. */
static void on_accounted(forge_loop_t *w, forge_entry_t *e,
                         forge_poll_item_t *it, long long now)
{
    const forge_slurm_job_t *first = &it->jobs.jobs[0];
    forge_slurm_move_t m =
        forge_slurm_move(&it->jobs, e->rec->state, e->rec->cancel_requested);
    const char *why = NULL;

    if (!accounted_is_ours(e, &it->jobs))
        why = "is another launch's (a job id used again)";
    else if (!forge_state_is_terminal(m.to))
        why = "does not say it ended";
    if (!why) {
        forge_log_info("job %u is gone from slurmctld; accounting says it "
                       "ended: %s",
                       (unsigned)it->job_id, forge_state_name(m.to));
        on_poll_changed(w, e, it);
        return;
    }
    if (!e->rec->missing_since_ms)
        forge_log_warn("job %u of %s is gone from slurmctld; accounting's "
                       "record (comment %s, state %s) %s: missing",
                       (unsigned)it->job_id, e->rec->launch_id,
                       first->comment ? first->comment : "none",
                       first->state_count ? first->state[0] : "none", why);
    on_absent(w, e, it->job_id, now);
}

void forge_loop_poll_item(forge_loop_t *w, forge_entry_t *e,
                          forge_poll_item_t *it, long long now)
{
    if (it->outcome == FORGE_POLL_CHANGED) {
        on_poll_changed(w, e, it);
    } else if (it->outcome == FORGE_POLL_ACCOUNTED) {
        on_accounted(w, e, it, now);
    } else if (it->outcome == FORGE_POLL_ABSENT) {
        on_absent(w, e, it->job_id, now);
    } else if (it->outcome == FORGE_POLL_UNCHANGED &&
               e->rec->missing_since_ms) {
        e->rec->missing_since_ms = 0;
        forge_loop_write_record(w, e);
    }
}

/* Whether the loop has anything to do with the item: a change, a job
 * missing, or one that was missing and is back. */
static bool needs_loop(const forge_poll_item_t *it)
{
    return it->outcome == FORGE_POLL_CHANGED ||
           it->outcome == FORGE_POLL_ACCOUNTED ||
           it->outcome == FORGE_POLL_ABSENT ||
           (it->outcome == FORGE_POLL_UNCHANGED && it->missing);
}

typedef struct answered {
    forge_loop_t *w;
    forge_work_t *tick;
    forge_idmap_t by_job; /* job id -> index of its item */
    long long now;
} answered_t;

/* Each owned live launch whose job the tick answered for, with its item
 * (found by the job id: the item holds no launch id). */
static void answer_entry(void *ctx, forge_entry_t *e)
{
    answered_t *a = ctx;
    uint64_t i;

    if (!e->rec->job_id || forge_state_is_terminal(e->rec->state) ||
        !forge_owner_owns(a->w->owner, e->partition) ||
        !forge_idmap_get(&a->by_job, e->rec->job_id, &i))
        return;
    forge_loop_poll_item(a->w, e, &a->tick->poll.items[i], a->now);
}

/* The tick's answer onto the records. A steady tick (nothing changed,
 * nothing missing) costs one pass over its items; otherwise the launches
 * are walked once, each finding its item by job id. */
static size_t apply_answer(forge_loop_t *w, forge_work_t *tick, long long now)
{
    answered_t a = {w, tick, {0}, now};
    size_t count = 0;

    for (size_t i = 0; i < tick->poll.item_count; i++)
        count += needs_loop(&tick->poll.items[i]);
    if (!count)
        return 0;
    forge_idmap_init(&a.by_job, count);
    for (size_t i = 0; i < tick->poll.item_count; i++)
        if (needs_loop(&tick->poll.items[i]))
            forge_idmap_put(&a.by_job, tick->poll.items[i].job_id, i);
    forge_owner_each(w->owner, answer_entry, &a);
    forge_idmap_clear(&a.by_job);
    return count;
}

void forge_loop_on_polled(forge_loop_t *w, forge_work_t *tick)
{
    /* wall time: missing_since_ms is kept in the record (clock/clock.h) */
    long long now = forge_timestamp_now_ms();
    size_t changed = 0;

    w->poll_in_flight = false;
    forge_hooks()->tick_done(forge_clock_ms() - w->poll_posted_ms);
    if (tick->status == FORGE_SLURM_OK) {
        for (size_t i = 0; i < tick->poll.item_count; i++)
            changed += tick->poll.items[i].outcome == FORGE_POLL_CHANGED;
        apply_answer(w, tick, now);
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
