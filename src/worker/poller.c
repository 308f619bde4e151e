/* SPDX-License-Identifier: Apache-2.0 */
/*
 * poller.c - a poll tick's slurmrestd side (poller.h): one jobs/state call
 * for every job, then a details call for each job whose states changed
 * since the poller last saw it, and an accounting call for each job
 * jobs/state no longer knows. What it saw is its change cache (the
 * signatures): the poller's own memory, forgotten when the loop's records
 * rewind (work.h: forge_work_poll_t.epoch), and stood in for, after a
 * restore, by the states the record kept (known_states).
 *
 * Threads and ownership: everything here runs on the pool's one thread,
 * which owns the slurmrestd client and the change cache; a stop (the
 * loop's thread, forge_pool_interrupt) sets `stopping`, an atomic the tick
 * reads between two calls, and interrupts the client's call under way
 * (forge_slurm_client_interrupt).
 */
#include "worker/poller.h"
#include "core/buf.h"
#include "core/util.h"
#include "worker/work.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SIGNATURES_MAX 65536

typedef struct signature {
    uint32_t job_id;
    char *states; /* what the last tick saw, to spot changes */
} signature_t;

typedef struct poller {
    forge_slurm_client_t *client;
    atomic_bool stopping;
    signature_t *sigs; /* the change cache */
    size_t sig_count;
    unsigned long sig_epoch; /* the loop's generation sigs belong to */
} poller_t;

/* ---- the change cache ------------------------------------------------- */

/* The Slurm states of its jobs found in jobs ("<id>:<state>,...;" per
 * job; "" when none of them is there). */
static char *states_signature(const forge_slurm_job_list_t *jobs,
                              const forge_poll_item_t *it)
{
    forge_buf_t b = FORGE_BUF_INIT;

    for (size_t i = 0; i < jobs->count; i++) {
        const forge_slurm_job_t *j = &jobs->jobs[i];
        bool ours = j->job_id == it->job_id;
        for (size_t c = 0; !ours && c < it->component_count; c++)
            ours = j->job_id == it->component_ids[c];
        if (!ours)
            continue;
        forge_buf_printf(&b, "%u:", j->job_id);
        for (size_t s = 0; s < j->state_count; s++)
            forge_buf_printf(&b, "%s,", j->state[s]);
        forge_buf_putc(&b, ';');
    }
    return forge_buf_take(&b);
}

/* The poller's memory of job_id, or NULL. */
static signature_t *remembered(poller_t *p, uint32_t job_id)
{
    for (size_t i = 0; i < p->sig_count; i++)
        if (p->sigs[i].job_id == job_id)
            return &p->sigs[i];
    return NULL;
}

/* Swaps in the new signature (stolen); true when it differs from what was
 * seen last: the poller's memory, or, when it has none of the job (a
 * restore made it forget), the record's (known: the item's known_states,
 * NULL for none). */
static bool signature_changed(poller_t *p, uint32_t job_id, char *sig,
                              const char *known)
{
    signature_t *seen = remembered(p, job_id);
    bool changed;

    if (seen) {
        changed = strcmp(seen->states, sig) != 0;
        free(seen->states);
        seen->states = sig;
        return changed;
    }
    changed = !known || strcmp(known, sig) != 0;
    if (p->sig_count == SIGNATURES_MAX) { /* forget the oldest */
        free(p->sigs[0].states);
        memmove(p->sigs, p->sigs + 1, --p->sig_count * sizeof(*p->sigs));
    }
    p->sigs = forge_xrealloc(p->sigs, (p->sig_count + 1) * sizeof(*p->sigs));
    p->sigs[p->sig_count++] = (signature_t){job_id, sig};
    return changed;
}

/* Everything the poller remembers, gone: the next poll of every job is
 * compared with its record (forge_work_poll_t.epoch). */
static void forget_signatures(poller_t *p)
{
    for (size_t i = 0; i < p->sig_count; i++)
        free(p->sigs[i].states);
    p->sig_count = 0;
}

/* ---- a tick ------------------------------------------------------------ */

/* One item whose ids were missing from jobs/state: accounting decides. */
static void poll_absent(poller_t *p, forge_poll_item_t *it)
{
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st =
        forge_slurm_job_accounting(p->client, it->job_id, &it->jobs, &res);

    if (st == FORGE_SLURM_OK)
        it->outcome = FORGE_POLL_CHANGED;
    else if (st == FORGE_SLURM_NOT_FOUND)
        it->outcome = FORGE_POLL_ABSENT;
    /* else UNANSWERED: an error is never a verdict */
}

/* One item present in jobs/state (sig: its signature, stolen): details
 * only when its states changed. */
static void poll_present(poller_t *p, forge_poll_item_t *it, char *sig)
{
    forge_slurm_result_t res = {0};
    char *states = forge_xstrdup(sig);

    if (!signature_changed(p, it->job_id, sig, it->known_states)) {
        it->outcome = FORGE_POLL_UNCHANGED;
        free(states);
    } else if (forge_slurm_job_details(p->client, it->job_id, &it->jobs,
                                       &res) == FORGE_SLURM_OK) {
        it->outcome = FORGE_POLL_CHANGED;
        it->states = states;
    } else { /* asked again at the next tick */
        signature_changed(p, it->job_id, forge_xstrdup(""), NULL);
        free(states);
    }
}

/* Each item against the states jobs/state gave, a stop seen between two
 * calls. */
static void poll_items(poller_t *p, forge_work_t *w,
                       const forge_slurm_job_list_t *states)
{
    forge_work_poll_t *tick = &w->poll;

    for (size_t i = 0; i < tick->item_count; i++) {
        forge_poll_item_t *it = &tick->items[i];
        char *sig;
        if (atomic_load(&p->stopping)) {
            w->status = FORGE_SLURM_TRANSPORT;
            forge_work_say(w,
                           "stopped after %zu of %zu jobs: the worker is "
                           "stopping",
                           i, tick->item_count);
            return;
        }
        sig = states_signature(states, it);
        if (!*sig) {
            free(sig);
            poll_absent(p, it);
        } else {
            poll_present(p, it, sig);
        }
    }
}

/* One jobs/state call for every job, then a details or accounting call
 * for each job that changed or went missing. */
static void do_poll(poller_t *p, forge_work_t *w)
{
    forge_work_poll_t *tick = &w->poll;
    uint32_t *ids = forge_xcalloc(tick->item_count + 1, sizeof(uint32_t));
    forge_slurm_job_list_t states = {NULL, 0};
    forge_slurm_result_t res = {0};

    if (tick->epoch != p->sig_epoch) {
        forget_signatures(p);
        p->sig_epoch = tick->epoch;
    }
    for (size_t i = 0; i < tick->item_count; i++)
        ids[i] = tick->items[i].job_id;
    w->status =
        forge_slurm_job_states(p->client, ids, tick->item_count, &states, &res);
    forge_work_say(w, "%s", res.message);
    if (w->status == FORGE_SLURM_OK)
        poll_items(p, w, &states);
    forge_slurm_job_list_clear(&states);
    free(ids);
}

/* ---- the pool's handlers ------------------------------------------------ */

static void run(void *ctx, void *item)
{
    forge_work_t *w = item;

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

    forget_signatures(p);
    free(p->sigs);
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
    forge_slurm_options_from_config(cfg, &opts);
    if ((rc = forge_slurm_client_new(&opts, &p->client, err))) {
        free(p);
        return rc;
    }
    return forge_pool_start("poller", 1, &handlers, p, out, err);
}
