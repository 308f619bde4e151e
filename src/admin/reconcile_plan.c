/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_plan.c - the verdict per launch, from what the sources say
 * (reconcile.h): pure, no I/O, so every case is a unit test. The records
 * it would write are built here with the worker's own record rules
 * (launch.h: forge_launch_advance, seq + 1 per event, legal moves only)
 * and its own reading of Slurm (verdict.h: forge_slurm_move), so a
 * repaired launch is one the worker would have left.
 *
 * A launch with a record: consistent, or its job found by tag (adopt), or
 * Slurm further than the record (events for the missing move), or its
 * record ended and a tagged job still live (cancel), or no job anywhere
 * (left to the worker, which says LOST after FORGE_LOST_GRACE_S), or its
 * record and the status topic disagreeing on seq (reported, nothing
 * written: an event would repeat or skip a seq).
 * A launch without one (the state topic lost, or the record never
 * written): rebuilt from its request (the bytes the worker would have
 * kept), the status topic (state, seq, the job it named), the logs topic
 * (archived) and the tagged jobs, when the group consumed its request or a
 * job carries its tag. A tagged job of no known request: cancelled.
 */
#include "admin/reconcile.h"
#include "base/util.h"
#include "slurm/verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct planning {
    const forge_recon_sources_t *s;
    long long now_ms;
    forge_recon_map_t *used; /* tags a launch took */
    forge_recon_plan_t *out;
} planning_t;

static const char *const kind_names[] = {
    [FORGE_RECON_CONSISTENT] = "consistent",
    [FORGE_RECON_REBUILD] = "rebuild",
    [FORGE_RECON_ORPHAN_REBUILD] = "orphan_rebuild",
    [FORGE_RECON_ORPHAN_CANCEL] = "orphan_cancel",
    [FORGE_RECON_ADOPT] = "adopt",
    [FORGE_RECON_TRANSITIONS] = "transitions",
    [FORGE_RECON_ENDED_JOB_LIVE] = "ended_job_live",
    [FORGE_RECON_DUPLICATE_JOB] = "duplicate_job",
    [FORGE_RECON_JOB_MISSING] = "job_missing",
    [FORGE_RECON_SEQ_MISMATCH] = "seq_mismatch",
};

const char *forge_recon_kind_name(forge_recon_kind_t k)
{
    return kind_names[k];
}

static forge_recon_item_t *new_item(planning_t *p, const char *launch_id,
                                    int attempt, forge_recon_kind_t kind)
{
    forge_recon_plan_t *o = p->out;
    forge_recon_item_t *it;

    o->items = forge_xrealloc(o->items, (o->count + 1) * sizeof(*o->items));
    it = &o->items[o->count++];
    memset(it, 0, sizeof(*it));
    it->launch_id = forge_xstrdup(launch_id);
    it->attempt = attempt;
    it->partition = -1;
    it->kind = kind;
    return it;
}

static void set_note(forge_recon_item_t *it, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_note(forge_recon_item_t *it, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    free(it->note);
    it->note = forge_xstrdup(text);
}

static void add_cancel(forge_recon_item_t *it, uint32_t job_id)
{
    it->cancel_jobs = forge_xrealloc(it->cancel_jobs,
                                     (it->cancel_count + 1) * sizeof(uint32_t));
    it->cancel_jobs[it->cancel_count++] = job_id;
}

/* The record moves to `to` (legal moves only) and says so in an event. */
static void add_event(planning_t *p, forge_recon_item_t *it, forge_state_t to,
                      const char *reason, const forge_slurm_job_list_t *job)
{
    forge_state_t from = it->rec->state;
    forge_recon_event_t *e;

    if (forge_launch_advance(it->rec, to, p->now_ms))
        return;
    it->events =
        forge_xrealloc(it->events, (it->event_count + 1) * sizeof(*it->events));
    e = &it->events[it->event_count++];
    e->seq = it->rec->seq;
    e->state = to;
    e->previous = from;
    e->reason = forge_xstrdup(reason);
    e->slurm = job && job->count ? forge_slurm_verdict_json(job) : NULL;
}

/* The record names job (a view: its components) and follows what Slurm
 * says of it. */
static void take_job(planning_t *p, forge_recon_item_t *it,
                     const forge_slurm_job_list_t *job)
{
    forge_launch_record_t *r = it->rec;
    forge_slurm_move_t mv;

    r->job_id = forge_recon_leader(&job->jobs[0]);
    free(r->component_ids);
    r->component_count = job->count;
    r->component_ids = forge_xcalloc(job->count, sizeof(uint32_t));
    for (size_t i = 0; i < job->count; i++)
        r->component_ids[i] = job->jobs[i].job_id;
    r->missing_since_ms = 0;
    free(r->slurm_states); /* the worker looks at the job afresh */
    r->slurm_states = NULL;
    mv = forge_slurm_move(job, r->state, r->cancel_requested);
    if (mv.moves)
        add_event(p, it, mv.to, mv.reason, job);
}

/* Of the tagged jobs, the one the launch owns: the one wanted (its record
 * or last event names it), else the first live, else the first. The other
 * live ones are duplicates: cancelled. */
static forge_slurm_job_list_t pick_job(forge_recon_item_t *it,
                                       const forge_slurm_job_list_t *jobs,
                                       uint32_t wanted)
{
    forge_slurm_job_list_t v = forge_recon_job_view(jobs, wanted);

    for (size_t i = 0; !v.count && jobs && i < jobs->count; i++) {
        forge_slurm_job_list_t one =
            forge_recon_job_view(jobs, forge_recon_leader(&jobs->jobs[i]));
        if (forge_recon_any_live(&one))
            v = one;
    }
    if (!v.count && jobs && jobs->count)
        v = forge_recon_job_view(jobs, forge_recon_leader(&jobs->jobs[0]));
    for (size_t i = 0; jobs && i < jobs->count; i++) {
        const forge_slurm_job_t *j = &jobs->jobs[i];
        uint32_t lead = forge_recon_leader(j);
        forge_slurm_job_list_t one = forge_recon_job_view(jobs, lead);
        if (one.jobs == &jobs->jobs[i] && v.count &&
            lead != forge_recon_leader(&v.jobs[0]) &&
            forge_recon_any_live(&one))
            add_cancel(it, lead);
    }
    return v;
}

static const forge_slurm_job_list_t *take_tag(planning_t *p, const char *id,
                                              int attempt, int try_num)
{
    char key[160];

    forge_recon_tag_key(key, sizeof(key), id, attempt, try_num);
    *forge_recon_map_slot(p->used, key) = (void *)1;
    return forge_recon_jobs_of(p->s, id, attempt, try_num);
}

/* ---- a launch with a record --------------------------------------------- */

static bool seq_disagrees(const forge_recon_launch_t *l)
{
    /* no events for its attempt (the status topic's retention): no check */
    return l->status_attempt > l->rec->attempt ||
           (l->status_attempt == l->rec->attempt &&
            l->status_seq != l->rec->seq);
}

static void plan_live_record(planning_t *p, forge_recon_item_t *it,
                             const forge_slurm_job_list_t *jobs)
{
    const forge_launch_record_t *r = it->launch->rec;
    forge_slurm_job_list_t v;

    it->rec = forge_launch_record_copy(r);
    v = pick_job(it, jobs, r->job_id);
    if (v.count) {
        bool adopted = forge_recon_leader(&v.jobs[0]) != r->job_id;
        take_job(p, it, &v);
        it->kind = adopted            ? FORGE_RECON_ADOPT
                   : it->event_count  ? FORGE_RECON_TRANSITIONS
                   : it->cancel_count ? FORGE_RECON_DUPLICATE_JOB
                                      : FORGE_RECON_CONSISTENT;
        if (adopted)
            set_note(it, "the record names job %u; its tag finds job %u",
                     (unsigned)r->job_id,
                     (unsigned)forge_recon_leader(&v.jobs[0]));
    } else if (r->job_id) {
        it->kind = FORGE_RECON_JOB_MISSING;
        set_note(it,
                 "job %u is neither in Slurm's list nor in accounting: the "
                 "worker says LOST after FORGE_LOST_GRACE_S",
                 (unsigned)r->job_id);
    } /* no job yet, none tagged: the worker submits (or is submitting) */
    if (it->kind == FORGE_RECON_CONSISTENT ||
        it->kind == FORGE_RECON_JOB_MISSING) {
        forge_launch_record_free(it->rec);
        it->rec = NULL;
    }
}

static void plan_recorded(planning_t *p, const forge_recon_launch_t *l)
{
    const forge_launch_record_t *r = l->rec;
    const forge_slurm_job_list_t *jobs =
        take_tag(p, l->launch_id, r->attempt, forge_launch_try(r));
    forge_recon_item_t *it =
        new_item(p, l->launch_id, r->attempt, FORGE_RECON_CONSISTENT);

    it->launch = l;
    it->partition = l->rec_partition;
    it->state = r->state;
    if (seq_disagrees(l)) {
        it->kind = FORGE_RECON_SEQ_MISMATCH;
        set_note(it,
                 "the record says seq %ld, the status topic's last event of "
                 "attempt %d seq %ld: nothing written",
                 r->seq, l->status_attempt, l->status_seq);
    } else if (forge_state_is_terminal(r->state)) {
        for (size_t i = 0; jobs && i < jobs->count; i++) {
            forge_slurm_job_list_t one =
                forge_recon_job_view(jobs, forge_recon_leader(&jobs->jobs[i]));
            if (one.jobs == &jobs->jobs[i] && forge_recon_any_live(&one))
                add_cancel(it, forge_recon_leader(&jobs->jobs[i]));
        }
        if (it->cancel_count)
            it->kind = FORGE_RECON_ENDED_JOB_LIVE;
    } else {
        plan_live_record(p, it, jobs);
    }
}

/* ---- a launch without one ----------------------------------------------- */

/* The attempt to rebuild: the status topic's, or the request's when the
 * group consumed it or a job carries its tag; 0: nothing to rebuild (a
 * request still to come is the worker's). */
static int rebuild_attempt(const planning_t *p, const forge_recon_launch_t *l)
{
    int a = l->status_attempt;

    if (l->request_partition >= 0 && l->request_attempt > a &&
        (l->request_consumed ||
         forge_recon_jobs_of(p->s, l->launch_id, l->request_attempt, 1)))
        a = l->request_attempt;
    return a;
}

static void rebuild(planning_t *p, forge_recon_item_t *it,
                    const forge_recon_launch_t *l,
                    const forge_slurm_job_list_t *jobs)
{
    bool with_request = l->request && l->request_attempt == it->attempt;
    forge_launch_record_t *r = forge_launch_record_new(
        l->launch_id, it->attempt, with_request ? l->request : NULL,
        with_request ? l->request_len : 0);
    forge_slurm_job_list_t v;

    it->rec = r;
    if (l->status_attempt == it->attempt) {
        r->state = l->status_state;
        r->seq = l->status_seq;
        r->try_num = l->status_try; /* its policy is the request's: lost */
    }
    it->state = r->state;
    r->cancel_requested = with_request && l->cancel_requested;
    r->accepted_at_ms = r->updated_at_ms = p->now_ms;
    if (r->state == FORGE_STATE_NONE)
        add_event(p, it, FORGE_STATE_ACCEPTED, NULL, NULL);
    v = pick_job(it, jobs, l->status_job_id);
    if (v.count && forge_state_is_terminal(r->state)) {
        if (forge_recon_any_live(&v))
            add_cancel(it, forge_recon_leader(&v.jobs[0]));
    } else if (v.count) {
        take_job(p, it, &v);
    } else if (l->status_job_id) {
        r->job_id = l->status_job_id; /* the worker finds it gone: LOST */
        r->component_ids = forge_xcalloc(1, sizeof(uint32_t));
        r->component_ids[0] = r->job_id;
        r->component_count = 1;
    }
    if (forge_state_is_terminal(r->state)) {
        r->archived = l->logs_attempt >= it->attempt;
        if (r->archived)
            forge_launch_drop_request(r);
    }
}

static void plan_unrecorded(planning_t *p, const forge_recon_launch_t *l)
{
    int attempt = rebuild_attempt(p, l);
    const forge_slurm_job_list_t *jobs;
    forge_recon_item_t *it;

    if (!attempt)
        return;
    jobs = take_tag(p, l->launch_id, attempt,
                    l->status_attempt == attempt ? l->status_try : 1);
    if (l->request_partition < 0) { /* nowhere to put a record */
        if (!forge_recon_any_live(jobs))
            return;
        it = new_item(p, l->launch_id, attempt, FORGE_RECON_ORPHAN_CANCEL);
        for (size_t i = 0; i < jobs->count; i++) {
            uint32_t lead = forge_recon_leader(&jobs->jobs[i]);
            forge_slurm_job_list_t one = forge_recon_job_view(jobs, lead);
            if (one.jobs == &jobs->jobs[i] && forge_recon_any_live(&one))
                add_cancel(it, lead);
        }
        set_note(it, "no request on the requests topic");
        return;
    }
    it =
        new_item(p, l->launch_id, attempt,
                 jobs && !p->out->state_topic_empty ? FORGE_RECON_ORPHAN_REBUILD
                                                    : FORGE_RECON_REBUILD);
    it->launch = l;
    it->partition = l->request_partition;
    rebuild(p, it, l, jobs);
}

/* ---- tagged jobs no launch took ----------------------------------------- */

static void plan_orphans(planning_t *p)
{
    const forge_recon_map_t *jobs = p->s->jobs;

    for (size_t i = 0; i < forge_recon_map_count(jobs); i++) {
        const forge_slurm_job_list_t *l = forge_recon_map_at(jobs, i);
        const char *key = forge_recon_map_key_at(jobs, i);
        char *id = forge_xstrdup(key), *colon = strchr(id, ':');
        forge_recon_item_t *it;

        /* "<id>:<attempt>:<try>": a launch_id holds no ':' */
        if (colon && !forge_recon_map_get(p->used, key) &&
            forge_recon_any_live(l)) {
            *colon = '\0';
            it = new_item(p, id, atoi(colon + 1), FORGE_RECON_ORPHAN_CANCEL);
            for (size_t j = 0; j < l->count; j++) {
                uint32_t lead = forge_recon_leader(&l->jobs[j]);
                forge_slurm_job_list_t one = forge_recon_job_view(l, lead);
                if (one.jobs == &l->jobs[j] && forge_recon_any_live(&one))
                    add_cancel(it, lead);
            }
            set_note(it, "no record and no request for this attempt");
        }
        free(id);
    }
}

static int by_launch(const void *a, const void *b)
{
    const forge_recon_item_t *x = a, *y = b;
    int c = strcmp(x->launch_id, y->launch_id);

    return c ? c : x->attempt - y->attempt;
}

void forge_recon_plan_make(const forge_recon_sources_t *s, long long now_ms,
                           forge_recon_plan_t *out)
{
    planning_t p = {s, now_ms, forge_recon_map_new(), out};
    size_t records = 0;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < forge_recon_map_count(s->launches); i++)
        records +=
            ((forge_recon_launch_t *)forge_recon_map_at(s->launches, i))->rec !=
            NULL;
    out->state_topic_empty = records == 0;
    for (size_t i = 0; i < forge_recon_map_count(s->launches); i++) {
        const forge_recon_launch_t *l = forge_recon_map_at(s->launches, i);
        if (l->rec)
            plan_recorded(&p, l);
        else
            plan_unrecorded(&p, l);
    }
    plan_orphans(&p);
    forge_recon_map_free(p.used);
    for (size_t i = 0; i < out->count; i++)
        out->items[i].launch = NULL; /* the sources may go now */
    if (out->count)
        qsort(out->items, out->count, sizeof(*out->items), by_launch);
}

void forge_recon_plan_clear(forge_recon_plan_t *p)
{
    for (size_t i = 0; i < p->count; i++) {
        forge_recon_item_t *it = &p->items[i];
        for (size_t e = 0; e < it->event_count; e++) {
            json_decref(it->events[e].slurm);
            free(it->events[e].reason);
        }
        free(it->events);
        free(it->launch_id);
        forge_launch_record_free(it->rec);
        free(it->cancel_jobs);
        free(it->note);
        free(it->error);
    }
    free(p->items);
    memset(p, 0, sizeof(*p));
}

bool forge_recon_item_consistent(const forge_recon_item_t *it)
{
    return it->kind == FORGE_RECON_CONSISTENT && !it->cancel_count;
}

bool forge_recon_item_settled(const forge_recon_item_t *it)
{
    return forge_recon_item_consistent(it) ||
           it->kind == FORGE_RECON_JOB_MISSING || it->done;
}
