/* SPDX-License-Identifier: Apache-2.0 */
/*
 * poller.c - a poll tick's slurmrestd side (poller.h): jobs/state calls of
 * 256 jobs each (slurm/ops.c), then a details call for each job whose
 * states changed since the poller last saw it and no longer map to the
 * state its record holds, and an accounting call for each job jobs/state
 * no longer knows. What it saw is its change cache (the signatures,
 * hashed by job id: base/idmap.h): the poller's own memory, forgotten when
 * the loop's records rewind (work.h: forge_work_poll_t.epoch). A job it
 * has no memory of (after a restore) costs no details call either while
 * its states still map to its record's state. A tick of N jobs costs
 * O(N): one sort, hash lookups, no allocation per unchanged job.
 *
 * A targeted poll (work.h: one job the loop wants to know about now, a
 * jobcomp record's confirmation) asks that job's details at once and
 * merges what it saw into the cache: the next tick then finds the job as
 * the targeted call left it, and the other jobs' memory stays whole.
 *
 * A job held by its user again (PENDING, JobHeldUser) is released again:
 * every polled job was released before its launch said SUBMITTED
 * (submit_held.h), and a controller that takes over from a state saved
 * between the held POST and the release (slurmctld saves its state a
 * moment after a change; a primary killed -9 loses that moment) brings
 * the submit hold back, which nobody else would lift. An operator keeps a
 * job from starting with an admin hold (JobHeldAdmin), never released
 * here. CONTRACT §1. jobs/state says PENDING of a held job as of any
 * other, so a launch already PENDING when its job was held again shows no
 * change. A controller takes over only after none answered for a while,
 * which a tick sees: its jobs/state call fails, or takes
 * FORGE_CONTROLLER_STALL_MS or more (slurmrestd holds a call while no
 * controller has control: 10 s with the stack's SlurmctldTimeout). Then
 * the tick that answers asks the details of each PENDING launch that took
 * that state within FORGE_HOLD_RESTORE_WINDOW_MS before the last tick
 * that answered (a release older than that was saved), and so do the
 * next ones until every such call and release succeeded. A controller
 * lost and back between two ticks is not seen (OPERATING: a backup
 * slurmctld).
 *
 * A job jobs/state no longer lists (slurmctld forgot it: MinJobAge after
 * its end, or its state was lost) is looked up in accounting
 * (slurm/accounting.h): its records are ACCOUNTED, and the loop ends the
 * launch as they say (tick.c); no record, no /slurmdb/ (404) or an
 * accounting that does not answer (slurmdbd down: an error) is ABSENT,
 * and the loop's grace (FORGE_LOST_GRACE_S) starts or goes on: an error
 * is never a verdict, and never holds LOST off for ever either. Each
 * absent job's accounting is asked at most once every
 * FORGE_ACCOUNTING_EVERY_MS, or every poll interval when that is longer:
 * a tick between two asks says ABSENT (what the last ask said), so many
 * jobs missing through a long grace cost slurmdbd one lookup each per
 * interval, not one per tick; and once accounting failed in a tick (no
 * answer, a server error: each costs the client's retries), the tick's
 * other absent jobs are not asked (ABSENT, asked at the next tick), so an
 * accounting that is down costs a tick one failed lookup, not one per
 * missing job. What the last ask said is logged once per job and change
 * ("accounting has no record" / "accounting unreachable").
 * That memory (job id, when, what it said) holds the jobs absent at the
 * last tick only: a sorted array, rebuilt at each tick.
 *
 * Threads and ownership: everything here runs on the pool's one thread,
 * which owns the slurmrestd client and the change cache; a stop (the
 * loop's thread, forge_pool_interrupt) sets `stopping`, an atomic the tick
 * reads between two calls, and interrupts the client's call under way
 * (forge_slurm_client_interrupt).
 */
#include "loop/poller.h"
#include "base/buf.h"
#include "clock/clock.h"
#include "base/idmap.h"
#include "log/log.h"
#include "clock/timestamp.h"
#include "base/util.h"
#include "slurm/accounting.h"
#include "slurm/verdict.h"
#include "loop/work.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORGE_ACCOUNTING_EVERY_MS 10000
/* slurmctld saves a change within 5 s (SAVE_MAX_WAIT in its state_save.c)
 * and the time its write takes: a release older than this was saved. */
#define FORGE_HOLD_RESTORE_WINDOW_MS 60000
/* A jobs/state round this slow was held: no controller had control. */
#define FORGE_CONTROLLER_STALL_MS 5000

/* What accounting said of an absent job, last. */
typedef enum acct_said {
    ACCT_NOT_ASKED = 0,
    ACCT_FOUND,
    ACCT_NO_RECORD,
    ACCT_UNREACHABLE,
} acct_said_t;

typedef struct acct_asked {
    uint32_t job_id;
    acct_said_t said;
    long long at_ms; /* the monotonic clock; 0: never asked */
} acct_asked_t;

typedef struct acct_memory {
    acct_asked_t *jobs; /* sorted by job id */
    size_t count, cap;
} acct_memory_t;

typedef struct poller {
    forge_slurm_client_t *client;
    long long acct_every_ms;
    bool acct_failed; /* accounting failed in this tick: ask no more */
    /* the absent jobs of the last tick (sorted), and this tick's */
    acct_memory_t asked, asking;
    atomic_bool stopping;
    /* The change cache: job id -> the signature of the states the last
     * tick saw (a 64-bit hash), for the jobs of that tick only. */
    forge_idmap_t seen;
    unsigned long sig_epoch; /* the loop's generation `seen` belongs to */
    /* A controller may have taken over (a jobs/state call failed or was
     * held): PENDING launches that took their state at or after this
     * wall-clock time get a details call at the next tick that answers
     * (0: none); and when the last jobs/state call that answered started
     * (wall clock). */
    long long recheck_from_ms;
    long long answered_at_ms;
    bool recheck_failed; /* a recheck's details or release failed */
    size_t rechecked;    /* details asked by this tick's recheck */
} poller_t;

/* What jobs/state said of one tick's jobs: the entries sorted by job id
 * (then het offset), and each id's first entry. */
typedef struct states_index {
    forge_slurm_job_list_t *list;
    forge_idmap_t first;        /* job id -> index of its first entry */
    forge_slurm_job_t *scratch; /* one item's entries (borrowed copies) */
    size_t scratch_cap;
} states_index_t;

/* ---- what jobs/state said of one job --------------------------------------
 */

static int by_id_then_offset(const void *a, const void *b)
{
    const forge_slurm_job_t *x = a, *y = b;

    if (x->job_id != y->job_id)
        return x->job_id < y->job_id ? -1 : 1;
    return x->het_offset - y->het_offset;
}

static void index_states(states_index_t *ix, forge_slurm_job_list_t *list)
{
    memset(ix, 0, sizeof(*ix));
    ix->list = list;
    if (list->count > 1)
        qsort(list->jobs, list->count, sizeof(*list->jobs), by_id_then_offset);
    forge_idmap_init(&ix->first, list->count);
    for (size_t i = list->count; i-- > 0;) /* the first of each id wins */
        forge_idmap_put(&ix->first, list->jobs[i].job_id, i);
}

static void index_clear(states_index_t *ix)
{
    forge_idmap_clear(&ix->first);
    free(ix->scratch);
}

/* Appends the entries of job id `id` to out (ix->scratch). */
static void entries_of(states_index_t *ix, uint32_t id, size_t *n)
{
    uint64_t at;

    if (!forge_idmap_get(&ix->first, id, &at))
        return;
    for (size_t i = (size_t)at;
         i < ix->list->count && ix->list->jobs[i].job_id == id; i++) {
        if (*n == ix->scratch_cap) {
            ix->scratch_cap = ix->scratch_cap ? 2 * ix->scratch_cap : 8;
            ix->scratch = forge_xrealloc(ix->scratch, ix->scratch_cap *
                                                          sizeof(*ix->scratch));
        }
        ix->scratch[(*n)++] = ix->list->jobs[i]; /* borrowed, never freed */
    }
}

/* The item's entries (its leader's, then each other known component's),
 * borrowed from the index: valid until the next call. */
static forge_slurm_job_list_t item_entries(states_index_t *ix,
                                           const forge_poll_item_t *it)
{
    size_t n = 0;

    entries_of(ix, it->job_id, &n);
    for (size_t c = 0; it->component_ids && c < it->component_count; c++)
        if (it->component_ids[c] != it->job_id)
            entries_of(ix, it->component_ids[c], &n);
    return (forge_slurm_job_list_t){ix->scratch, n};
}

/* FNV-1a, one byte at a time. */
static uint64_t fnv_byte(uint64_t h, unsigned char c)
{
    return (h ^ c) * 1099511628211ull;
}

/* The entries' ids and states, hashed (64 bits: a collision that hides a
 * change is one in 2^64 per tick and job). */
static uint64_t signature(const forge_slurm_job_list_t *e)
{
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < e->count; i++) {
        for (int b = 0; b < 32; b += 8)
            h = fnv_byte(h, (unsigned char)(e->jobs[i].job_id >> b));
        for (size_t s = 0; s < e->jobs[i].state_count; s++) {
            for (const char *c = e->jobs[i].state[s]; *c; c++)
                h = fnv_byte(h, (unsigned char)*c);
            h = fnv_byte(h, ',');
        }
        h = fnv_byte(h, ';');
    }
    return h;
}

/* The Slurm states of the entries ("<id>:<state>,...;" per job): what the
 * record keeps (launch.h: slurm_states). */
static char *states_text(const forge_slurm_job_list_t *e)
{
    forge_buf_t b = FORGE_BUF_INIT;

    for (size_t i = 0; i < e->count; i++) {
        forge_buf_printf(&b, "%u:", e->jobs[i].job_id);
        for (size_t s = 0; s < e->jobs[i].state_count; s++)
            forge_buf_printf(&b, "%s,", e->jobs[i].state[s]);
        forge_buf_putc(&b, ';');
    }
    return forge_buf_take(&b);
}

/* True when the states alone say the job has not moved: they map to the
 * live state its record holds, and name no component the record does not
 * know. Details would only tell what is published on a move (nodes,
 * reason, exit code), so none are asked. */
static bool still_where_it_was(const forge_slurm_job_list_t *e,
                               const forge_poll_item_t *it)
{
    int exit_code;
    forge_slurm_verdict_t v;

    if (e->count > (it->component_count ? it->component_count : 1))
        return false; /* components to learn: details */
    v = forge_slurm_verdict(e, 0, &exit_code);
    return v.state != FORGE_STATE_NONE && !forge_state_is_terminal(v.state) &&
           v.state == it->state;
}

/* ---- a tick ------------------------------------------------------------ */

/* ---- a job slurmctld no longer knows ---------------------------------- */

static int by_job_id(const void *a, const void *b)
{
    const acct_asked_t *x = a, *y = b;

    return x->job_id < y->job_id ? -1 : x->job_id > y->job_id;
}

/* What the last tick's asks said of job_id, or NULL. */
static const acct_asked_t *asked_before(const poller_t *p, uint32_t job_id)
{
    acct_asked_t key = {job_id, ACCT_NOT_ASKED, 0};

    return p->asked.count ? bsearch(&key, p->asked.jobs, p->asked.count,
                                    sizeof(key), by_job_id)
                          : NULL;
}

/* job_id's entry of this tick, what the last tick knew copied in. */
static acct_asked_t *remember(poller_t *p, uint32_t job_id)
{
    acct_memory_t *m = &p->asking;
    const acct_asked_t *last = asked_before(p, job_id);

    if (m->count == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->jobs = forge_xrealloc(m->jobs, m->cap * sizeof(*m->jobs));
    }
    m->jobs[m->count] =
        last ? *last : (acct_asked_t){job_id, ACCT_NOT_ASKED, 0};
    return &m->jobs[m->count++];
}

/* This tick's memory becomes the last tick's. */
static void remember_tick(poller_t *p)
{
    acct_memory_t done = p->asked;

    if (p->asking.count > 1)
        qsort(p->asking.jobs, p->asking.count, sizeof(acct_asked_t), by_job_id);
    p->asked = p->asking;
    done.count = 0;
    p->asking = done; /* its array reused */
}

/* Once per job and change of answer: what accounting said. */
static void say_absent(acct_asked_t *seen, acct_said_t said, uint32_t job_id,
                       const forge_slurm_result_t *res)
{
    if (seen->said == said)
        return;
    seen->said = said;
    if (said == ACCT_NO_RECORD)
        forge_log_info("job %u is gone from slurmctld and accounting has no "
                       "record of it (%s): missing (LOST after the grace "
                       "unless either knows it again)",
                       (unsigned)job_id, res->message);
    else if (said == ACCT_UNREACHABLE)
        forge_log_warn("job %u is gone from slurmctld and accounting is "
                       "unreachable: %s (%s): missing (LOST after the grace "
                       "unless either knows it again)",
                       (unsigned)job_id, res->message,
                       forge_slurm_status_name(res->status));
    else
        forge_log_debug("job %u is gone from slurmctld; accounting has its "
                        "record",
                        (unsigned)job_id);
}

/* One item whose ids were missing from jobs/state: accounting's records
 * (ACCOUNTED), or ABSENT (none, no answer, or asked a moment ago). */
static void poll_absent(poller_t *p, forge_poll_item_t *it)
{
    acct_asked_t *seen = remember(p, it->job_id);
    long long now = forge_clock_ms();
    forge_slurm_accounting_t a;
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st;

    it->outcome = FORGE_POLL_ABSENT;
    if (p->acct_failed || (seen->at_ms && now - seen->at_ms < p->acct_every_ms))
        return; /* the last ask's answer stands, or accounting is down */
    seen->at_ms = now;
    st = forge_slurm_accounting_get(p->client, it->job_id, it->tag, &a, &res);
    if (st == FORGE_SLURM_OK) {
        it->jobs = a.jobs; /* moved */
        a.jobs = (forge_slurm_job_list_t){NULL, 0};
        it->outcome = FORGE_POLL_ACCOUNTED;
    }
    p->acct_failed = st != FORGE_SLURM_OK && st != FORGE_SLURM_NOT_FOUND;
    say_absent(seen,
               st == FORGE_SLURM_OK          ? ACCT_FOUND
               : st == FORGE_SLURM_NOT_FOUND ? ACCT_NO_RECORD
                                             : ACCT_UNREACHABLE,
               it->job_id, &res);
    forge_slurm_accounting_clear(&a);
}

/* Whether component j waits on a user hold: a polled job's submit hold
 * was released before its launch said SUBMITTED (submit_held.h), so such
 * a hold came back (the top comment). */
static bool held_again(const forge_slurm_job_t *j)
{
    return j->state_count > 0 && !strcmp(j->state[0], "PENDING") &&
           j->state_reason && !strcmp(j->state_reason, "JobHeldUser");
}

/* Each component of the details held again released again (the top
 * comment). False when one could not be: the next tick looks again. */
static bool release_held_again(poller_t *p, const forge_slurm_job_list_t *l)
{
    bool all = true;

    for (size_t i = 0; i < l->count; i++) {
        forge_slurm_result_t res = {0};
        if (!held_again(&l->jobs[i]))
            continue;
        if (forge_slurm_release(p->client, NULL, l->jobs[i].job_id, &res) ==
            FORGE_SLURM_OK) {
            forge_log_warn("job %u was released and is held again (a "
                           "controller restored from a state saved before "
                           "its release): released again",
                           l->jobs[i].job_id);
        } else {
            forge_log_warn("job %u is held again; its release failed, asked "
                           "again at the next tick: %s",
                           l->jobs[i].job_id, res.message);
            all = false;
        }
    }
    return all;
}

/* One item present in jobs/state (its entries e): details only when its
 * states changed since the last tick and say it may have moved. What it
 * saw goes into `now` (the next tick's memory); a failed details call, or
 * a job held again that could not be released, leaves nothing there, so
 * the next tick looks again. */
static void poll_present(poller_t *p, forge_poll_item_t *it,
                         const forge_slurm_job_list_t *e, forge_idmap_t *now)
{
    forge_slurm_result_t res = {0};
    uint64_t sig = signature(e), before;
    bool changed =
        !forge_idmap_get(&p->seen, it->job_id, &before) || before != sig;
    bool recheck = p->recheck_from_ms && it->state == FORGE_STATE_PENDING &&
                   it->state_since_ms >= p->recheck_from_ms;

    p->rechecked += recheck;
    if (!recheck && (!changed || still_where_it_was(e, it))) {
        it->outcome = FORGE_POLL_UNCHANGED;
        forge_idmap_put(now, it->job_id, sig);
    } else if (forge_slurm_job_details(p->client, it->job_id, &it->jobs,
                                       &res) == FORGE_SLURM_OK) {
        it->outcome = FORGE_POLL_CHANGED;
        it->states = states_text(e);
        if (release_held_again(p, &it->jobs))
            forge_idmap_put(now, it->job_id, sig);
        else
            p->recheck_failed |= recheck;
    } else { /* asked again at the next tick */
        p->recheck_failed |= recheck;
    }
}

/* Each item against the states jobs/state gave, a stop seen between two
 * calls. False when stopped. */
static bool poll_items(poller_t *p, forge_work_t *w, states_index_t *ix,
                       forge_idmap_t *now)
{
    forge_work_poll_t *tick = &w->poll;

    for (size_t i = 0; i < tick->item_count; i++) {
        forge_poll_item_t *it = &tick->items[i];
        forge_slurm_job_list_t e;
        if (atomic_load(&p->stopping)) {
            w->status = FORGE_SLURM_TRANSPORT;
            forge_work_say(w,
                           "stopped after %zu of %zu jobs: the worker is "
                           "stopping",
                           i, tick->item_count);
            return false;
        }
        e = item_entries(ix, it);
        if (!e.count)
            poll_absent(p, it);
        else
            poll_present(p, it, &e, now);
    }
    return true;
}

/* A jobs/state call failed or was held: no controller answered, and one
 * may have taken over from its saved state (the top comment). */
static void controller_lost(poller_t *p)
{
    if (!p->recheck_from_ms)
        p->recheck_from_ms = p->answered_at_ms - FORGE_HOLD_RESTORE_WINDOW_MS;
}

/* A tick that answered, after the recheck's calls: it ends when they all
 * succeeded (a stopped tick leaves it for the next). */
static void recheck_done(poller_t *p, bool whole)
{
    if (!p->recheck_from_ms)
        return;
    if (p->rechecked)
        forge_log_info("slurmctld answers again: %zu PENDING job(s) "
                       "looked at for a submit hold a controller restored%s",
                       p->rechecked,
                       whole && !p->recheck_failed
                           ? ""
                           : " (some again at the next tick)");
    if (whole && !p->recheck_failed)
        p->recheck_from_ms = 0;
    p->recheck_failed = false;
    p->rechecked = 0;
}

/* ceil(N/256) jobs/state calls for every job, then a details or
 * accounting call for each job that changed or went missing (and, after
 * a controller was lost, for each PENDING one of the window). The cache
 * then holds what this tick saw of its jobs, and nothing else. */
static void do_poll(poller_t *p, forge_work_t *w)
{
    forge_work_poll_t *tick = &w->poll;
    uint32_t *ids = forge_xcalloc(tick->item_count + 1, sizeof(uint32_t));
    forge_slurm_job_list_t states = {NULL, 0};
    forge_slurm_result_t res = {0};
    long long started = forge_timestamp_now_ms(), held_from = forge_clock_ms();
    forge_idmap_t now;
    states_index_t ix;
    bool whole;

    p->acct_failed = false;
    if (tick->epoch != p->sig_epoch) { /* the records rewound: forget */
        forge_idmap_clear(&p->seen);
        p->sig_epoch = tick->epoch;
    }
    for (size_t i = 0; i < tick->item_count; i++)
        ids[i] = tick->items[i].job_id;
    w->status =
        forge_slurm_job_states(p->client, ids, tick->item_count, &states, &res);
    forge_work_say(w, "%s", res.message);
    if (w->status != FORGE_SLURM_OK ||
        forge_clock_ms() - held_from >= FORGE_CONTROLLER_STALL_MS)
        controller_lost(p);
    if (w->status == FORGE_SLURM_OK) {
        forge_idmap_init(&now, tick->item_count);
        index_states(&ix, &states);
        if (!(whole = poll_items(p, w, &ix, &now))) /* changes nothing */
            forge_idmap_clear(&now);
        forge_idmap_clear(&p->seen);
        p->seen = now;
        remember_tick(p);
        index_clear(&ix);
        recheck_done(p, whole);
        p->answered_at_ms = started;
    }
    forge_slurm_job_list_clear(&states);
    free(ids);
}

/* ---- a targeted poll: one job, merged into the cache -------------------- */

/* id -> sig into the change cache, grown when full (a tick sizes it for
 * its own jobs only). */
static void seen_merge(poller_t *p, uint32_t id, uint64_t sig)
{
    forge_idmap_t bigger;

    if (forge_idmap_put(&p->seen, id, sig))
        return;
    forge_idmap_init(&bigger, 2 * p->seen.count + 8);
    for (size_t s = 0; p->seen.keys && s <= p->seen.mask; s++)
        if (p->seen.keys[s])
            forge_idmap_put(&bigger, p->seen.keys[s], p->seen.values[s]);
    forge_idmap_clear(&p->seen);
    p->seen = bigger;
    forge_idmap_put(&p->seen, id, sig);
}

/* The one item's details now (accounting when slurmctld no longer knows
 * the job: poll_absent), whatever the cache says; the signature of what
 * the details said merged into the cache. */
static void do_targeted(poller_t *p, forge_work_t *w)
{
    forge_work_poll_t *one = &w->poll;
    forge_poll_item_t *it = one->items;
    forge_slurm_result_t res = {0};

    if (one->epoch != p->sig_epoch) { /* the records rewound: forget */
        forge_idmap_clear(&p->seen);
        p->sig_epoch = one->epoch;
    }
    if (one->item_count != 1 || atomic_load(&p->stopping)) {
        w->status = FORGE_SLURM_TRANSPORT;
        forge_work_say(w, "a targeted poll is one job, asked while running");
        return;
    }
    w->status = forge_slurm_job_details(p->client, it->job_id, &it->jobs, &res);
    forge_work_say(w, "%s", res.message);
    if (w->status == FORGE_SLURM_NOT_FOUND) {
        w->status = FORGE_SLURM_OK; /* absence is accounting's to say */
        poll_absent(p, it);
    } else if (w->status == FORGE_SLURM_OK && it->jobs.count) {
        it->outcome = FORGE_POLL_CHANGED;
        it->states = states_text(&it->jobs);
        seen_merge(p, it->job_id, signature(&it->jobs));
    }
}

/* ---- the pool's handlers ------------------------------------------------ */

static void run(void *ctx, void *item)
{
    forge_work_t *w = item;

    if (w->kind == FORGE_WORK_POLL && w->poll.targeted) {
        do_targeted(ctx, w);
        return;
    }
    if (w->kind == FORGE_WORK_POLL) {
        do_poll(ctx, w);
        return;
    }
    w->status = FORGE_SLURM_REJECTED; /* not the poller's: a bug */
    forge_work_say(w, "work of kind %d posted to the poller", (int)w->kind);
}

static void interrupt(void *ctx)
{
    poller_t *p = ctx;

    atomic_store(&p->stopping, true);
    forge_slurm_client_interrupt(p->client); /* the call under way */
}

static void destroy(void *ctx)
{
    poller_t *p = ctx;

    forge_idmap_clear(&p->seen);
    free(p->asked.jobs);
    free(p->asking.jobs);
    forge_slurm_client_destroy(p->client);
    free(p);
}

static const forge_pool_handlers_t handlers = {run, forge_work_drop, interrupt,
                                               destroy};

forge_rc_t forge_poller_start(const forge_config_t *cfg, forge_pool_t **out,
                              forge_error_t *err)
{
    poller_t *p = forge_xcalloc(1, sizeof(*p));
    forge_slurm_options_t opts;
    forge_rc_t rc;

    *out = NULL;
    atomic_init(&p->stopping, false);
    p->answered_at_ms = forge_timestamp_now_ms();
    p->acct_every_ms = cfg->poll_interval_ms > FORGE_ACCOUNTING_EVERY_MS
                           ? cfg->poll_interval_ms
                           : FORGE_ACCOUNTING_EVERY_MS;
    forge_slurm_options_from_config(cfg, &opts);
    if ((rc = forge_slurm_client_new(&opts, &p->client, err))) {
        free(p);
        return rc;
    }
    return forge_pool_start("poller", 1, &handlers, p, out, err);
}
