/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jobcomp.c - push completion (issue 28): Slurm's jobcomp/kafka records,
 * as the reader hands them over (loop.h's jobcomp seam;
 * kafka/jobcomp_reader.h in a worker), acted on for the launches this
 * worker owns. Each record is read (slurm/jobcomp.h forge_jobcomp_parse),
 * its launch found by its tag's launch_id in the owner table (only in an
 * owned partition: another worker's launch, or none, is ignored without a
 * word), and decided (forge_jobcomp_decide) against what the record of the
 * launch says and what this worker remembers of the job's records:
 *
 *   RUNNING   published as a poll's move to RUNNING is: the same event and
 *             record, in the loop's transaction;
 *   TERMINAL  published as tick.c publishes a poll's end: the end kept
 *             (ended.h), the launch's retry policy asked first (tries.c),
 *             the event carrying what the job used (slurm/usage.h, the
 *             components' end records summed);
 *   CONFIRM   an end a requeue may follow, or a SIGKILL end of a requeued
 *             job (the orphan race's, which the details tell: verdict.c):
 *             slurmctld asked about this one
 *             job now (a targeted POLL on the poller's lane, work.h), and
 *             its answer moves the launch by tick.c's normal path; one
 *             targeted poll per job at a time, asked again (from
 *             GATE_RETRY_MS, doubling to GATE_MAX_MS) while the answer
 *             does not decide (no answer, or still COMPLETING), until the
 *             launch moves or the poll decides first;
 *   IGNORE    nothing (a debug line says which rule).
 *
 * The push never contradicts the poll: whichever comes first moves the
 * launch, and the other finds it moved (terminal: settled; RUNNING
 * already). A record that does not parse is dropped (a debug line, at
 * most every LOG_EVERY_MS): never a DLQ, never an error.
 *
 * The archive: the poll calls a job terminal only once Slurm's COMPLETING
 * flag has cleared (job_state.c: COMPLETING maps to RUNNING), and the
 * archive follows the terminal state, so the poll's archive never starts
 * while the epilog may still write into the staging folder. A jobcomp end
 * is written at the job's end, before its epilog has run: the terminal
 * event goes at once, but its archive waits (a gate) until a targeted
 * details call sees no component COMPLETING (or slurmctld no longer
 * knows the job), asked again with the same backoff; then the archive starts
 * at once instead of at the next tick. A gate lost to a rewind (the entry
 * rebuilt from the state topic) leaves the archive to the next tick.
 *
 * Memory: what this worker remembers of a job's records (push_t) hangs on
 * its entry (owner.h: push, freed with the entry by push_free), made at
 * the first record that names the launch, made anew for a new try or job,
 * freed once the launch is terminal and its gate open. Not durable: a
 * restart forgets it, and the poll covers what it would have decided.
 *
 * Threads: the loop's thread only.
 */
#include "clock/clock.h"
#include "hooks/hooks.h"
#include "log/log.h"
#include "fs/paths.h"
#include "clock/timestamp.h"
#include "base/util.h"
#include "slurm/jobcomp.h"
#include "slurm/verdict.h"
#include "loop/loop_int.h"

#include <stdlib.h>
#include <string.h>

#define PUSH_PER_PASS 512   /* records acted on in one pass, the rest next */
#define GATE_RETRY_MS 2000  /* a job still COMPLETING asked about again, */
#define GATE_MAX_MS   60000 /* doubling up to this */
#define LOG_EVERY_MS  10000

/* What this worker remembers of one try's job's records. */
typedef struct push {
    int try_num;
    uint32_t job_id;
    forge_jobcomp_seen_t seen;
    size_t n;                        /* components the arrays hold */
    forge_slurm_job_t *ends;         /* each one's end of the run (owned) */
    forge_slurm_usage_part_t *parts; /* what each one used */
    uint32_t parts_known;            /* bit per component */
    bool asked;                      /* a targeted poll of the job is out */
    bool confirming; /* a CONFIRM: asked until Slurm's answer decides */
} push_t;

/* A job slurmctld is asked about until its answer decides (a gate): a
 * CONFIRM, or a pushed end whose archive waits for COMPLETING to clear. */
typedef struct forge_push_gate {
    char *launch_id;
    int attempt;
    long long due_ms; /* the monotonic clock */
    int asks;         /* how many times so far: the backoff doubles */
    struct forge_push_gate *next;
} gate_t;

/* ---- the memory ---------------------------------------------------------- */

/* r as a job of slurm/client.h (new strings), its state state. */
static void job_of(const forge_jobcomp_record_t *r, const char *state,
                   forge_slurm_job_t *j)
{
    memset(j, 0, sizeof(*j));
    j->job_id = r->job_id;
    j->het_job_id = r->het_job_id;
    j->het_offset = r->het_offset;
    j->state = forge_xcalloc(2, sizeof(char *));
    j->state[0] = forge_xstrdup(state);
    j->state_count = 1;
    j->exit_code = r->exit_code;
    j->signal = r->signal;
    j->nodes = r->nodes ? forge_xstrdup(r->nodes) : NULL;
}

static void push_free(void *v)
{
    push_t *p = v;

    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        forge_slurm_job_clear(&p->ends[i]);
    free(p->ends);
    free(p->parts);
    free(p);
}

static push_t *push_get(forge_entry_t *e)
{
    return e->push_free == push_free ? e->push : NULL;
}

static void push_drop(forge_entry_t *e)
{
    push_free(push_get(e));
    e->push = NULL;
    e->push_free = NULL;
    e->archive_gated = false;
}

/* e's memory of its job's records, made anew for a new try, job or
 * component count. */
static push_t *push_of(forge_entry_t *e, size_t n)
{
    push_t *p = push_get(e);

    if (p && p->try_num == forge_launch_try(e->rec) &&
        p->job_id == e->rec->job_id && p->n == n)
        return p;
    push_drop(e);
    p = forge_xcalloc(1, sizeof(*p));
    p->try_num = forge_launch_try(e->rec);
    p->job_id = e->rec->job_id;
    p->n = n;
    p->ends = forge_xcalloc(n, sizeof(*p->ends));
    p->parts = forge_xcalloc(n, sizeof(*p->parts));
    e->push = p;
    e->push_free = push_free;
    return p;
}

/* ---- the launch as the decision sees it ---------------------------------- */

static size_t components_of(const forge_launch_record_t *r)
{
    size_t n = r->component_count ? r->component_count : 1;

    return n < FORGE_JOBCOMP_MAX_COMPONENTS ? n : FORGE_JOBCOMP_MAX_COMPONENTS;
}

static forge_jobcomp_launch_t launch_of(const forge_loop_t *w,
                                        const forge_entry_t *e)
{
    const forge_launch_record_t *r = e->rec;
    forge_jobcomp_launch_t l = {0};

    l.launch_id = r->launch_id;
    l.attempt = r->attempt;
    l.try_num = forge_launch_try(r);
    l.state = r->state;
    l.job_id = r->job_id;
    l.components = r->component_count ? r->component_count : 1;
    l.cancel_requested = r->cancel_requested;
    /* a requeue's PENDING is the record's last move */
    l.requeued_at_ms = r->state == FORGE_STATE_PENDING && r->restarts > 0
                           ? r->updated_at_ms
                           : 0;
    l.staging = w->jobcomp_staging;
    l.exit_may_requeue = false; /* the worker is not told RequeueExit */
    l.restarts = r->restarts;
    return l;
}

/* An end record that made it into seen (its component's end of the run
 * now): kept for the event's `slurm` object and the usage. */
static void keep_end(push_t *p, const forge_jobcomp_record_t *r,
                     uint32_t ended_before, long long run_before)
{
    uint32_t bit = 1u << r->het_offset;
    forge_error_t err = {0};
    size_t i = (size_t)r->het_offset;

    if (r->kind != FORGE_JOBCOMP_END || i >= p->n || !(p->seen.ended & bit) ||
        ((ended_before & bit) && run_before == p->seen.run_start_s))
        return;
    forge_slurm_job_clear(&p->ends[i]);
    job_of(r, r->state, &p->ends[i]);
    p->parts_known &= ~bit;
    if (forge_jobcomp_usage_part(r, &p->parts[i], &err) == FORGE_OK)
        p->parts_known |= bit;
    else
        forge_log_debug("jobcomp record of job %u: no usage (%s)",
                        (unsigned)r->job_id, err.message);
}

/* ---- acting on a decision ------------------------------------------------ */

/* One targeted poll of e's job (work.h), posted now: its answer comes
 * back on the poller's lane (forge_loop_on_targeted). */
static void ask(forge_loop_t *w, forge_entry_t *e, push_t *p)
{
    forge_work_t *one =
        forge_work_new(FORGE_WORK_POLL, e->rec->launch_id, e->rec->attempt,
                       e->partition, e->generation);

    one->try_num = forge_launch_try(e->rec);
    one->poll.targeted = true;
    one->poll.epoch = w->poll_epoch;
    forge_loop_tick_add(one, e->rec);
    p->asked = true;
    w->pool_ops->post(w->pools, FORGE_LANE_POLLER, one);
}

static void on_running(forge_loop_t *w, forge_entry_t *e,
                       const forge_jobcomp_record_t *r)
{
    forge_slurm_job_list_t one = {forge_xcalloc(1, sizeof(forge_slurm_job_t)),
                                  1};
    json_t *slurm;
    change_t c = {FORGE_STATE_RUNNING, NULL, NULL, NULL, NULL};

    job_of(r, "RUNNING", &one.jobs[0]);
    one.jobs[0].restart_count = e->rec->restarts;
    slurm = forge_slurm_verdict_json(&one);
    c.slurm = slurm;
    e->rec->missing_since_ms = 0;
    forge_loop_publish_event(w, e, &c, true);
    json_decref(slurm);
    forge_slurm_job_list_clear(&one);
}

/* What the job used, every component's end summed (new; NULL: a
 * component's TRES could not be read). */
static json_t *usage_of(const push_t *p)
{
    forge_slurm_usage_t u = {0};
    json_t *o;

    if (p->parts_known != (uint32_t)((1ull << p->n) - 1))
        return NULL;
    for (size_t i = 0; i < p->n; i++)
        forge_slurm_usage_add(&u, &p->parts[i]);
    o = forge_slurm_usage_json(&u);
    forge_slurm_usage_clear(&u);
    return o;
}

/* e's job asked about at the end of this pass, and again until the
 * answer decides (tend_gates). */
static void gate_add(forge_loop_t *w, const forge_entry_t *e)
{
    gate_t *g = forge_xcalloc(1, sizeof(*g));

    g->launch_id = forge_xstrdup(e->rec->launch_id);
    g->attempt = e->rec->attempt;
    g->due_ms = forge_clock_ms(); /* asked at the end of this pass */
    g->next = w->gates;
    w->gates = g;
}

static void on_terminal(forge_loop_t *w, forge_entry_t *e, push_t *p,
                        const forge_jobcomp_decision_t *d)
{
    forge_slurm_job_list_t ends = {p->ends, p->n};
    json_t *slurm, *usage = usage_of(p);
    change_t c = {d->state, d->reason, NULL, NULL, usage};

    for (size_t i = 0; i < p->n; i++)
        p->ends[i].restart_count = e->rec->restarts;
    slurm = forge_slurm_verdict_json(&ends);
    c.slurm = slurm;
    e->rec->missing_since_ms = 0;
    forge_ended_put(w->ended, e->rec->job_id, d->state, d->reason, slurm, usage,
                    forge_clock_ms());
    forge_loop_job_moved(w, e, &c); /* tick.c */
    if (forge_state_is_terminal(e->rec->state)) {
        e->archive_gated = true; /* the archive waits for COMPLETING */
        gate_add(w, e);
    }
    json_decref(slurm);
    json_decref(usage);
}

static const char *action_name(forge_jobcomp_action_t a)
{
    static const char *const names[] = {"ignore", "running", "terminal",
                                        "confirm"};

    return (size_t)a < sizeof(names) / sizeof(names[0]) ? names[a] : "ignore";
}

static void act(forge_loop_t *w, forge_entry_t *e, push_t *p,
                const forge_jobcomp_record_t *r,
                const forge_jobcomp_decision_t *d)
{
    forge_log_field_t f[] = {{"launch_id", e->rec->launch_id}, {"why", d->why}};

    forge_hooks()->jobcomp_record(action_name(d->action));
    if (d->action == FORGE_JOBCOMP_IGNORE) {
        forge_log_fields(FORGE_LOG_DEBUG, f, 2,
                         "jobcomp record of job %u ignored (%s)",
                         (unsigned)r->job_id, d->why);
    } else if (d->action == FORGE_JOBCOMP_RUNNING) {
        on_running(w, e, r);
    } else if (d->action == FORGE_JOBCOMP_TERMINAL) {
        on_terminal(w, e, p, d);
    } else if (!p->confirming) { /* CONFIRM: one at a time per job */
        forge_log_fields(FORGE_LOG_INFO, f, 2,
                         "job %u ended %s, which its details must confirm "
                         "(%s): slurmctld asked now",
                         (unsigned)r->job_id, r->state ? r->state : "", d->why);
        p->confirming = true;
        gate_add(w, e);
    }
}

/* ---- one record ---------------------------------------------------------- */

static void dropped(const forge_error_t *err)
{
    static long long last_ms;
    static unsigned since;
    long long now = forge_clock_ms();

    forge_hooks()->jobcomp_record("invalid");
    since++;
    if (last_ms && now - last_ms < LOG_EVERY_MS)
        return;
    forge_log_debug("jobcomp record dropped, it does not read (%s: %s); "
                    "%u dropped since the last line",
                    err->field, err->message, since);
    last_ms = now;
    since = 0;
}

/* The owned entry r's tag names, or NULL. */
static forge_entry_t *owned_entry(forge_loop_t *w,
                                  const forge_jobcomp_record_t *r)
{
    forge_entry_t *e;

    if (!r->tagged || !(e = forge_owner_find(w->owner, r->launch_id)))
        return NULL;
    return forge_owner_owns(w->owner, e->partition) ? e : NULL;
}

static void on_record(forge_loop_t *w, const char *bytes, size_t len)
{
    forge_jobcomp_record_t r = {0};
    forge_error_t err = {0};
    forge_jobcomp_launch_t l;
    forge_jobcomp_decision_t d;
    forge_entry_t *e;
    push_t *p;
    uint32_t ended;
    long long run;

    if (forge_jobcomp_parse(bytes, len, &r, &err) != FORGE_OK) {
        dropped(&err);
        return;
    }
    if (!(e = owned_entry(w, &r))) { /* not this worker's: not a word */
        forge_hooks()->jobcomp_record("ignore");
        forge_jobcomp_record_clear(&r);
        return;
    }
    l = launch_of(w, e);
    p = push_of(e, components_of(e->rec));
    ended = p->seen.ended;
    run = p->seen.run_start_s;
    d = forge_jobcomp_decide(&l, &p->seen, &r);
    keep_end(p, &r, ended, run);
    act(w, e, p, &r, &d);
    if (forge_state_is_terminal(e->rec->state) && !e->archive_gated &&
        !p->asked)
        push_drop(e); /* settled: nothing more to remember */
    forge_jobcomp_record_clear(&r);
}

/* ---- the gates ----------------------------------------------------------- */

/* Whether job list l has a component still COMPLETING. */
static bool completing(const forge_slurm_job_list_t *l)
{
    for (size_t i = 0; i < l->count; i++) {
        forge_slurm_state_set_t s = forge_slurm_state_parse(
            (const char *const *)l->jobs[i].state, l->jobs[i].state_count);
        if (s.flags & FORGE_SLURM_FLAG_COMPLETING)
            return true;
    }
    return false;
}

/* Whether a targeted answer leaves the job to be asked about again: no
 * answer, or a component still COMPLETING (job_state.c maps it to
 * RUNNING, so neither the end nor a requeue shows yet). */
static bool undecided(const forge_poll_item_t *it)
{
    return it->outcome == FORGE_POLL_UNANSWERED ||
           (it->outcome == FORGE_POLL_CHANGED && completing(&it->jobs));
}

/* A targeted answer for a pushed end's gate: open once Slurm shows no
 * component COMPLETING, or knows the job no more; the archive then
 * starts at once (finish.c). */
static void gate_answer(forge_loop_t *w, forge_entry_t *e, push_t *p,
                        const forge_poll_item_t *it)
{
    if (!p || !e->archive_gated || undecided(it))
        return;
    push_drop(e);
    forge_loop_tend_finished(w, e, forge_clock_ms());
}

/* A targeted answer for a CONFIRM: the launch moved by tick.c's path;
 * asked again while it does not decide. */
static void confirm_answer(forge_loop_t *w, forge_entry_t *e, push_t *p,
                           forge_poll_item_t *it)
{
    if (e->rec->job_id != it->job_id)
        return; /* a retry's next try since */
    forge_loop_poll_item(w, e, it, forge_timestamp_now_ms());
    if (!p)
        return;
    p->confirming = p->confirming && !forge_state_is_terminal(e->rec->state) &&
                    e->rec->job_id == it->job_id && undecided(it);
    if (forge_state_is_terminal(e->rec->state) && !e->archive_gated)
        push_drop(e); /* the poll's end: COMPLETING has cleared */
}

static gate_t *gate_free(gate_t *g)
{
    gate_t *next = g->next;

    free(g->launch_id);
    free(g);
    return next;
}

/* g's launch, if it still waits for an answer. */
static forge_entry_t *gated(forge_loop_t *w, const gate_t *g)
{
    forge_entry_t *e = forge_owner_find(w->owner, g->launch_id);
    push_t *p = e && e->rec->attempt == g->attempt ? push_get(e) : NULL;

    if (p && p->confirming && forge_state_is_terminal(e->rec->state))
        p->confirming = false; /* the poll decided first */
    if (p && !e->archive_gated && !p->confirming && !p->asked &&
        forge_state_is_terminal(e->rec->state))
        push_drop(e);
    return p && (e->archive_gated || p->confirming) &&
                   forge_owner_owns(w->owner, e->partition)
               ? e
               : NULL;
}

/* Each gate: dropped once decided (or its launch gone), asked about again
 * when due, the wait doubling from GATE_RETRY_MS to GATE_MAX_MS. */
static void tend_gates(forge_loop_t *w)
{
    long long now = forge_clock_ms();

    for (gate_t **link = &w->gates, *g; (g = *link);) {
        forge_entry_t *e = gated(w, g);
        push_t *p = e ? push_get(e) : NULL;
        long long wait = GATE_RETRY_MS;
        if (!e) {
            *link = gate_free(g);
            continue;
        }
        if (now >= g->due_ms && !p->asked) {
            ask(w, e, p);
            for (int i = 0; i < g->asks && wait < GATE_MAX_MS; i++)
                wait *= 2;
            g->due_ms = now + (wait < GATE_MAX_MS ? wait : GATE_MAX_MS);
            g->asks++;
        }
        link = &g->next;
    }
}

/* ---- the loop's calls ---------------------------------------------------- */

void forge_loop_on_jobcomp(forge_loop_t *w)
{
    char *bytes;
    size_t len;

    for (int n = 0; w->jobcomp_ops && n < PUSH_PER_PASS &&
                    w->jobcomp_ops->next(w->jobcomp_src, &bytes, &len);
         n++) {
        on_record(w, bytes, len);
        free(bytes);
    }
    if (w->gates)
        tend_gates(w);
}

void forge_loop_on_targeted(forge_loop_t *w, forge_work_t *one)
{
    forge_entry_t *e = forge_loop_entry_of(w, one);
    push_t *p = e ? push_get(e) : NULL;
    forge_poll_item_t *it = one->poll.items;

    if (p)
        p->asked = false;
    if (!e || one->status != FORGE_SLURM_OK || one->poll.item_count != 1) {
        if (one->status != FORGE_SLURM_OK)
            forge_log_warn("jobcomp: slurmctld asked about %s: %s (%s); the "
                           "poll follows it",
                           one->launch_id, one->message,
                           forge_slurm_status_name(one->status));
        return;
    }
    if (forge_state_is_terminal(e->rec->state))
        gate_answer(w, e, p, it);
    else
        confirm_answer(w, e, p, it);
}

void forge_loop_set_jobcomp(forge_loop_t *l,
                            const forge_loop_jobcomp_ops_t *ops, void *src)
{
    l->jobcomp_ops = ops;
    l->jobcomp_src = src;
    free(l->jobcomp_staging);
    l->jobcomp_staging =
        ops && l->cfg->slurm_storage_root
            ? forge_path_join(l->cfg->slurm_storage_root, "staging")
            : NULL;
}

void forge_loop_jobcomp_clear(forge_loop_t *w)
{
    while (w->gates)
        w->gates = gate_free(w->gates);
    free(w->jobcomp_staging);
    w->jobcomp_staging = NULL;
}
