/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runner.c - threads with an inbox and an outbox (runner.h): one thread
 * with a slurmrestd client, or several for file work (archives, cleanup),
 * which never touch the client. Threads: `lock` guards both queues, the
 * list of items running, the counters, `stopping` and each item's
 * `withdraw` flag; threads wait on `wake`, forge_runner_settle on
 * `finished`; everything else in a work item is touched by one thread at a
 * time (ownership moves with the item). The client is the runner thread's,
 * but for forge_slurm_client_interrupt, which a stop calls from the loop's
 * thread; a poll tick also looks at `stopping` between two calls.
 *
 * Ownership of launches (generation.h): before each step that changes
 * something outside the worker, the thread itself asks whether the work's
 * partition is still held in the generation the work was made in
 * (may_act), with atomics, never the loop's lock or tables: the loop may
 * have moved on (a revoke, a rewind) while the item waited in the inbox or
 * sat in a slow call. What is refused there is dropped, and said so.
 */
#include "worker/runner.h"
#include "core/buf.h"
#include "core/clock.h"
#include "launch/generation.h"
#include "core/log.h"
#include "archive/log_archive.h"
#include "request/prepare.h"
#include "render/render.h"
#include "slurm/verdict.h"
#include "render/staging.h"
#include "core/testpoint.h"
#include "core/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SIGNATURES_MAX 65536

typedef struct signature {
    uint32_t job_id;
    char *states; /* what the last tick saw, to spot changes */
} signature_t;

struct forge_runner {
    const forge_config_t *cfg;
    const forge_series_catalog_t *catalog;
    const forge_tenants_t *tenants; /* NULL: none */
    char *name;
    forge_slurm_client_t *client;
    pthread_t threads[FORGE_RUNNER_MAX_THREADS];
    size_t thread_count;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t finished; /* an item reached the outbox */
    forge_work_t *inbox, *outbox;
    forge_work_t *running; /* taken from the inbox, not yet in the outbox */
    const forge_generations_t *generations; /* NULL: nothing checked */
    size_t in_flight;
    size_t done; /* items in the outbox */
    bool stopping;
    signature_t *sigs;       /* poll runner only; its thread only */
    unsigned long sig_epoch; /* the loop's generation sigs belong to */
    size_t sig_count;
};

void forge_work_free(forge_work_t *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->item_count; i++) {
        free(w->items[i].launch_id);
        free(w->items[i].component_ids);
        free(w->items[i].known_states);
        free(w->items[i].states);
        forge_slurm_job_list_free(&w->items[i].jobs);
    }
    free(w->items);
    free(w->launch_id);
    free(w->request);
    free(w->component_ids);
    forge_archive_clear(&w->archive);
    free(w);
}

static void append(forge_work_t **list, forge_work_t *w)
{
    w->next = NULL;
    while (*list)
        list = &(*list)->next;
    *list = w;
}

/* ---- ownership and intent --------------------------------------------- */

/* The work may_act is asked about, as the log names it. */
static const char *const work_names[] = {
    [FORGE_WORK_SUBMIT] = "submit",
    [FORGE_WORK_CLEAN_SUBMIT] = "clean and resubmit",
    [FORGE_WORK_CLEAN_CANCEL] = "clean of a cancelled intent",
    [FORGE_WORK_CANCEL] = "cancel",
};

/* Right before a step that changes something outside the worker (the
 * staging folder, a POST, a cancel): may w still take it? Not once its
 * partition's generation has passed (FORGE_WORK_STALE: the loop drops
 * it), nor, for a submit (`submitting`), once its launch was withdrawn
 * (FORGE_WORK_WITHDRAWN). Each refusal is logged once. */
static bool may_act(forge_runner_t *r, forge_work_t *w, bool submitting)
{
    forge_log_field_t f[] = {{"launch_id", w->launch_id}};
    bool withdrawn;

    if (w->refused != FORGE_WORK_DONE)
        return false;
    if (r->generations && !forge_generation_current(
                              r->generations, w->partition, w->generation)) {
        w->refused = FORGE_WORK_STALE;
        forge_log_fields(FORGE_LOG_INFO, f, 1,
                         "%s of %s dropped before Slurm: partition %d is no "
                         "longer held in the generation it was made in "
                         "(it moved, or an aborted transaction rewound it)",
                         work_names[w->kind], w->launch_id, (int)w->partition);
        return false;
    }
    if (!submitting)
        return true;
    pthread_mutex_lock(&r->lock);
    withdrawn = w->withdraw;
    pthread_mutex_unlock(&r->lock);
    if (withdrawn) {
        w->refused = FORGE_WORK_WITHDRAWN;
        forge_log_fields(FORGE_LOG_INFO, f, 1,
                         "submit of %s withdrawn before its POST: the "
                         "launch was cancelled",
                         w->launch_id);
    }
    return !withdrawn;
}

/* ---- submit ------------------------------------------------------------ */

static void set_message(forge_work_t *w, const forge_slurm_result_t *res)
{
    snprintf(w->message, sizeof(w->message), "%s", res->message);
}

/* Jobs carrying this launch's comment tag that are still alive. */
static forge_slurm_status_t find_tagged(forge_runner_t *r,
                                        const forge_work_t *w,
                                        forge_slurm_job_list_t *jobs,
                                        forge_slurm_result_t *res)
{
    char *comment = forge_render_job_comment(w->launch_id, w->attempt);
    forge_slurm_status_t st =
        forge_slurm_find_by_comment(r->client, comment, jobs, res);

    free(comment);
    return st;
}

static void single_component(forge_work_t *w)
{
    w->component_ids = forge_xcalloc(1, sizeof(uint32_t));
    w->component_ids[0] = w->job_id;
    w->component_count = 1;
}

/* The leader and component ids of job_id (details; just the id when the
 * details cannot be had). */
static void learn_components(forge_runner_t *r, forge_work_t *w)
{
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};

    if (forge_slurm_job_details(r->client, w->job_id, &jobs, &res) ==
            FORGE_SLURM_OK &&
        jobs.count > 0) {
        w->component_ids = forge_xcalloc(jobs.count, sizeof(uint32_t));
        for (size_t i = 0; i < jobs.count; i++)
            w->component_ids[i] = jobs.jobs[i].job_id;
        w->component_count = jobs.count;
    } else {
        single_component(w);
    }
    forge_slurm_job_list_free(&jobs);
}

/* Outcome unknown: the tag says whether the job exists. */
static bool adopt_tagged(forge_runner_t *r, forge_work_t *w)
{
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    bool found = false;

    if (find_tagged(r, w, &jobs, &res) == FORGE_SLURM_OK && jobs.count > 0) {
        uint32_t leader = jobs.jobs[0].het_job_id ? jobs.jobs[0].het_job_id
                                                  : jobs.jobs[0].job_id;
        w->job_id = leader;
        found = true;
    }
    forge_slurm_job_list_free(&jobs);
    return found;
}

/*
 * Whose a launch's files are and whom its job runs as: its tenant's user
 * (owner only when the worker is root: nobody else may give files away),
 * or, without tenants, the storage root's owner and the fleet's own user
 * (*user NULL). req NULL (a record without its request): the latter.
 */
static forge_rc_t owner_of(forge_runner_t *r, const forge_request_t *req,
                           forge_fs_owner_t *owner, const char **user,
                           forge_error_t *err)
{
    const forge_tenant_t *t = NULL;
    forge_rc_t rc;

    *user = NULL;
    if (req && (rc = forge_tenant_of(r->tenants, req, &t, err)))
        return rc;
    if (t)
        *user = t->slurm_user;
    return forge_staging_owner(r->cfg, t, owner, err);
}

static void do_submit(forge_runner_t *r, forge_work_t *w)
{
    forge_prepared_t *p = NULL;
    forge_slurm_result_t res = {0};
    forge_slurm_submit_t sub;
    forge_error_t err = {0};
    char *staging = NULL;
    const char *user;
    forge_fs_owner_t owner;

    if (!may_act(r, w, true))
        return;
    if (forge_prepare(w->request, w->request_len, r->cfg, r->catalog, &p,
                      &err) ||
        !p->payload || owner_of(r, p->request, &owner, &user, &err)) {
        w->status = FORGE_SLURM_REJECTED;
        w->code = err.code;
        snprintf(w->message, sizeof(w->message), "%s", err.message);
        goto out;
    }
    if (forge_staging_prepare(r->cfg, &p->request->launch, owner, p->script,
                              &staging, &err)) {
        /* Something planted on the storage: refused, not retried forever.
         * Anything else (I/O) is retried later. */
        bool unsafe = err.code == FORGE_EUNSAFE_PATH;
        w->status = unsafe ? FORGE_SLURM_REJECTED : FORGE_SLURM_TRANSPORT;
        w->code = unsafe ? err.code : FORGE_OK;
        snprintf(w->message, sizeof(w->message), "%s", err.message);
        goto out;
    }
    FORGE_TESTPOINT_CRASH("submit.before");
    if (!may_act(r, w, true))
        goto out; /* its staging folder goes with the launch's cleanup */
    w->status = forge_slurm_submit_as(r->client, user, p->payload, &sub, &res);
    set_message(w, &res);
    if (w->status == FORGE_SLURM_OK) {
        FORGE_TESTPOINT_CRASH("submit.after");
        w->job_id = sub.job_id;
    } else if (w->status != FORGE_SLURM_REJECTED &&
               w->status != FORGE_SLURM_AUTH && adopt_tagged(r, w)) {
        w->status = FORGE_SLURM_OK; /* it did reach Slurm */
    }
    if (w->status == FORGE_SLURM_OK && p->request->launch.pool_count > 1)
        learn_components(r, w); /* a het job: its component ids */
    else if (w->status == FORGE_SLURM_OK)
        single_component(w);
out:
    free(staging);
    forge_prepared_destroy(p);
}

/* An intent without a job id (restored after a crash, or a submit whose
 * outcome was unknown): whatever job its tag finds is cancelled and its
 * staging folder removed. w->status OK when nothing of it is left. */
static void clean_intent(forge_runner_t *r, forge_work_t *w)
{
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_error_t err = {0};

    if (!may_act(r, w, false))
        return;
    w->status = find_tagged(r, w, &jobs, &res);
    for (size_t i = 0;
         w->status == FORGE_SLURM_OK && i < jobs.count && may_act(r, w, false);
         i++) {
        forge_slurm_status_t st =
            forge_slurm_cancel(r->client, jobs.jobs[i].job_id, NULL, &res);
        if (st != FORGE_SLURM_OK && st != FORGE_SLURM_NOT_FOUND)
            w->status = st;
        forge_log_info("cancelled job %u left by an interrupted submit of %s",
                       jobs.jobs[i].job_id, w->launch_id);
    }
    forge_slurm_job_list_free(&jobs);
    if (w->status != FORGE_SLURM_OK) {
        set_message(w, &res);
        return;
    }
    if (may_act(r, w, false) &&
        forge_staging_remove(r->cfg, w->launch_id, w->attempt, &err))
        forge_log_warn("%s", err.message);
}

/* Then submitted afresh: never two live jobs. Withdrawn meanwhile: cleaned
 * all the same, and nothing submitted (do_submit says so). */
static void do_clean_submit(forge_runner_t *r, forge_work_t *w)
{
    clean_intent(r, w);
    if (w->status != FORGE_SLURM_OK || !may_act(r, w, true))
        return;
    if (!w->request) { /* its sealed request did not open: no guessing */
        w->status = FORGE_SLURM_REJECTED;
        snprintf(w->message, sizeof(w->message), "no request to submit");
        return;
    }
    do_submit(r, w);
}

static void do_cancel(forge_runner_t *r, forge_work_t *w)
{
    forge_slurm_result_t res = {0};

    if (!may_act(r, w, false))
        return;
    w->status = forge_slurm_cancel(r->client, w->job_id, NULL, &res);
    set_message(w, &res);
}

/* ---- poll ---------------------------------------------------------------- */

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
static signature_t *remembered(forge_runner_t *r, uint32_t job_id)
{
    for (size_t i = 0; i < r->sig_count; i++)
        if (r->sigs[i].job_id == job_id)
            return &r->sigs[i];
    return NULL;
}

/* Swaps in the new signature (stolen); true when it differs from what was
 * seen last: the poller's memory, or, when it has none of the job (a
 * restore made it forget), the record's (known: the item's known_states,
 * NULL for none). */
static bool signature_changed(forge_runner_t *r, uint32_t job_id, char *sig,
                              const char *known)
{
    signature_t *seen = remembered(r, job_id);
    bool changed;

    if (seen) {
        changed = strcmp(seen->states, sig) != 0;
        free(seen->states);
        seen->states = sig;
        return changed;
    }
    changed = !known || strcmp(known, sig) != 0;
    if (r->sig_count == SIGNATURES_MAX) { /* forget the oldest */
        free(r->sigs[0].states);
        memmove(r->sigs, r->sigs + 1, --r->sig_count * sizeof(*r->sigs));
    }
    r->sigs = forge_xrealloc(r->sigs, (r->sig_count + 1) * sizeof(*r->sigs));
    r->sigs[r->sig_count++] = (signature_t){job_id, sig};
    return changed;
}

/* One item whose ids were missing from jobs/state: accounting decides. */
static void poll_absent(forge_runner_t *r, forge_poll_item_t *it)
{
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st =
        forge_slurm_job_accounting(r->client, it->job_id, &it->jobs, &res);

    if (st == FORGE_SLURM_OK)
        it->outcome = FORGE_POLL_CHANGED;
    else if (st == FORGE_SLURM_NOT_FOUND)
        it->outcome = FORGE_POLL_ABSENT;
    /* else UNANSWERED: an error is never a verdict */
}

/* One item present in jobs/state (sig: its signature, stolen): details
 * only when its states changed. */
static void poll_present(forge_runner_t *r, forge_poll_item_t *it, char *sig)
{
    forge_slurm_result_t res = {0};
    char *states = forge_xstrdup(sig);

    if (!signature_changed(r, it->job_id, sig, it->known_states)) {
        it->outcome = FORGE_POLL_UNCHANGED;
        free(states);
    } else if (forge_slurm_job_details(r->client, it->job_id, &it->jobs,
                                       &res) == FORGE_SLURM_OK) {
        it->outcome = FORGE_POLL_CHANGED;
        it->states = states;
    } else { /* asked again at the next tick */
        signature_changed(r, it->job_id, forge_xstrdup(""), NULL);
        free(states);
    }
}

/* Everything the poller remembers, gone: the next poll of every job is
 * compared with its record (forge_work_t.epoch). */
static void forget_signatures(forge_runner_t *r)
{
    for (size_t i = 0; i < r->sig_count; i++)
        free(r->sigs[i].states);
    r->sig_count = 0;
}

static bool stopping(forge_runner_t *r)
{
    bool stop;

    pthread_mutex_lock(&r->lock);
    stop = r->stopping;
    pthread_mutex_unlock(&r->lock);
    return stop;
}

/* One jobs/state call for every job, then a details or accounting call
 * for each job that changed or went missing; a stop is seen between two
 * calls (the whole tick then says so and changes nothing). */
static void do_poll(forge_runner_t *r, forge_work_t *w)
{
    uint32_t *ids = forge_xcalloc(w->item_count + 1, sizeof(uint32_t));
    forge_slurm_job_list_t states = {NULL, 0};
    forge_slurm_result_t res = {0};

    if (w->epoch != r->sig_epoch) {
        forget_signatures(r);
        r->sig_epoch = w->epoch;
    }

    for (size_t i = 0; i < w->item_count; i++)
        ids[i] = w->items[i].job_id;
    w->status =
        forge_slurm_job_states(r->client, ids, w->item_count, &states, &res);
    set_message(w, &res);
    for (size_t i = 0; w->status == FORGE_SLURM_OK && i < w->item_count; i++) {
        forge_poll_item_t *it = &w->items[i];
        char *sig;
        if (stopping(r)) {
            w->status = FORGE_SLURM_TRANSPORT;
            snprintf(w->message, sizeof(w->message),
                     "stopped after %zu of %zu jobs: the worker is stopping", i,
                     w->item_count);
            break;
        }
        sig = states_signature(&states, it);
        if (!*sig) {
            free(sig);
            poll_absent(r, it);
        } else {
            poll_present(r, it, sig);
        }
    }
    forge_slurm_job_list_free(&states);
    free(ids);
}

/* ---- after a terminal state: archive, clean ------------------------------ */

typedef struct secret_list {
    const char **items;
    size_t count;
} secret_list_t;

static void append_secret(void *ctx, const char *secret)
{
    secret_list_t *l = ctx;

    l->items[l->count++] = secret;
}

/* What the tail must not show: the launch's own secrets (whatever their
 * length), then every secret the worker knows now (known: log.h's copy).
 * New array of borrowed strings. */
static const char **tail_secrets(const forge_request_t *req, char **known,
                                 size_t nknown, size_t *n)
{
    size_t own = req && req->kind == FORGE_REQUEST_LAUNCH
                     ? 1 + req->launch.secret_env_count
                     : 0;
    secret_list_t list = {forge_xcalloc(own + nknown + 1, sizeof(char *)), 0};

    forge_request_each_secret(req, append_secret, &list);
    for (size_t i = 0; i < nknown; i++)
        append_secret(&list, known[i]);
    *n = list.count;
    return list.items;
}

static void do_archive(forge_runner_t *r, forge_work_t *w)
{
    forge_fs_owner_t owner;
    forge_request_t *req = NULL;
    forge_error_t err = {0};
    const char *pools[FORGE_POOLS_MAX], *user;
    forge_archive_spec_t spec = {w->launch_id, w->attempt, pools, 0, NULL, 0};
    size_t nknown = 0;
    char **known = forge_log_secrets_copy(&nknown);
    const char **secrets;

    if (w->request &&
        forge_request_parse(w->request, w->request_len, &req, &err) == 0 &&
        req->kind == FORGE_REQUEST_LAUNCH) {
        for (size_t i = 0; i < req->launch.pool_count && i < FORGE_POOLS_MAX;
             i++)
            pools[spec.pool_count++] = req->launch.pools[i].name;
    }
    forge_error_clear(&err); /* a request that does not parse: no pools */
    secrets = tail_secrets(req, known, nknown, &spec.secret_count);
    spec.secrets = secrets;
    w->status = FORGE_SLURM_OK;
    if (owner_of(r, req, &owner, &user, &err) ||
        forge_archive_logs(r->cfg, &spec, owner, &w->archive, &err)) {
        w->status = FORGE_SLURM_TRANSPORT; /* retried later */
        snprintf(w->message, sizeof(w->message), "%s", err.message);
    } else {
        FORGE_TESTPOINT_CRASH("archive.after");
    }
    free(secrets);
    forge_log_secrets_free(known);
    forge_request_destroy(req);
}

static void do_cleanup(forge_runner_t *r, forge_work_t *w)
{
    forge_error_t err = {0};

    FORGE_TESTPOINT_CRASH("cleanup.before");
    w->status = FORGE_SLURM_OK;
    if (forge_staging_remove(r->cfg, w->launch_id, w->attempt, &err)) {
        w->status = FORGE_SLURM_TRANSPORT; /* retried later ... */
        if (err.code == FORGE_EUNSAFE_PATH)
            w->code = err.code; /* ... unless it is refused */
        snprintf(w->message, sizeof(w->message), "%s", err.message);
    }
}

/* ---- the thread ------------------------------------------------------------
 */

static void run_one(forge_runner_t *r, forge_work_t *w)
{
    switch (w->kind) {
    case FORGE_WORK_SUBMIT:
        do_submit(r, w);
        break;
    case FORGE_WORK_CLEAN_SUBMIT:
        do_clean_submit(r, w);
        break;
    case FORGE_WORK_CLEAN_CANCEL:
        clean_intent(r, w);
        break;
    case FORGE_WORK_CANCEL:
        do_cancel(r, w);
        break;
    case FORGE_WORK_POLL:
        do_poll(r, w);
        break;
    case FORGE_WORK_ARCHIVE:
        do_archive(r, w);
        break;
    case FORGE_WORK_CLEANUP:
        do_cleanup(r, w);
        break;
    }
}

static void unlink_running(forge_runner_t *r, const forge_work_t *w)
{
    for (forge_work_t **link = &r->running; *link; link = &(*link)->next)
        if (*link == w) {
            *link = w->next;
            return;
        }
}

static void *thread_main(void *arg)
{
    forge_runner_t *r = arg;

    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->inbox && !r->stopping)
            pthread_cond_wait(&r->wake, &r->lock);
        if (r->stopping)
            break;
        forge_work_t *w = r->inbox;
        r->inbox = w->next;
        w->next = r->running;
        r->running = w;
        pthread_mutex_unlock(&r->lock);
        run_one(r, w);
        pthread_mutex_lock(&r->lock);
        unlink_running(r, w);
        append(&r->outbox, w);
        r->done++;
        pthread_cond_broadcast(&r->finished);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static forge_runner_t *runner_new(const forge_config_t *cfg,
                                  const forge_series_catalog_t *catalog,
                                  const forge_tenants_t *tenants,
                                  const char *name)
{
    forge_runner_t *r = forge_xcalloc(1, sizeof(*r));

    r->cfg = cfg;
    r->catalog = catalog;
    r->tenants = tenants;
    r->name = forge_xstrdup(name);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    forge_clock_cond_init(&r->finished);
    return r;
}

static forge_rc_t runner_run(forge_runner_t *r, size_t threads,
                             forge_runner_t **out, forge_error_t *err)
{
    for (size_t i = 0; i < threads && i < FORGE_RUNNER_MAX_THREADS; i++) {
        if (pthread_create(&r->threads[i], NULL, thread_main, r) != 0) {
            forge_error_set(err, FORGE_EIO, r->name, "pthread_create failed");
            forge_runner_stop(r);
            return FORGE_EIO;
        }
        r->thread_count++;
    }
    *out = r;
    return FORGE_OK;
}

forge_rc_t forge_runner_start(const forge_config_t *cfg,
                              const forge_series_catalog_t *catalog,
                              const forge_tenants_t *tenants, const char *name,
                              forge_runner_t **out, forge_error_t *err)
{
    forge_runner_t *r = runner_new(cfg, catalog, tenants, name);
    forge_slurm_options_t opts;
    forge_rc_t rc;

    *out = NULL;
    forge_slurm_options_from_config(cfg, &opts);
    if ((rc = forge_slurm_client_new(&opts, &r->client, err))) {
        forge_runner_stop(r);
        return rc;
    }
    return runner_run(r, 1, out, err);
}

forge_rc_t forge_runner_start_files(const forge_config_t *cfg,
                                    const forge_tenants_t *tenants,
                                    const char *name, size_t threads,
                                    forge_runner_t **out, forge_error_t *err)
{
    *out = NULL;
    return runner_run(runner_new(cfg, NULL, tenants, name), threads, out, err);
}

void forge_runner_set_generations(forge_runner_t *r,
                                  const forge_generations_t *g)
{
    r->generations = g;
}

void forge_runner_withdraw(forge_runner_t *r, const char *launch_id,
                           int attempt)
{
    pthread_mutex_lock(&r->lock);
    for (int running = 0; running < 2; running++)
        for (forge_work_t *w = running ? r->running : r->inbox; w; w = w->next)
            if ((w->kind == FORGE_WORK_SUBMIT ||
                 w->kind == FORGE_WORK_CLEAN_SUBMIT) &&
                w->attempt == attempt && !strcmp(w->launch_id, launch_id))
                w->withdraw = true;
    pthread_mutex_unlock(&r->lock);
}

void forge_runner_post(forge_runner_t *r, forge_work_t *w)
{
    pthread_mutex_lock(&r->lock);
    append(&r->inbox, w);
    r->in_flight++;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

forge_work_t *forge_runner_take(forge_runner_t *r)
{
    forge_work_t *list, *w;

    pthread_mutex_lock(&r->lock);
    list = r->outbox;
    r->outbox = NULL;
    for (w = list; w; w = w->next)
        r->in_flight--;
    r->done = 0;
    pthread_mutex_unlock(&r->lock);
    return list;
}

bool forge_runner_settle(forge_runner_t *r, long timeout_ms)
{
    struct timespec until = forge_clock_deadline(timeout_ms);
    bool settled;

    pthread_mutex_lock(&r->lock);
    while (r->done < r->in_flight && !r->stopping &&
           pthread_cond_timedwait(&r->finished, &r->lock, &until) == 0)
        ;
    settled = r->done >= r->in_flight;
    pthread_mutex_unlock(&r->lock);
    return settled;
}

size_t forge_runner_in_flight(forge_runner_t *r)
{
    size_t n;

    pthread_mutex_lock(&r->lock);
    n = r->in_flight;
    pthread_mutex_unlock(&r->lock);
    return n;
}

void forge_runner_interrupt(forge_runner_t *r)
{
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    forge_slurm_client_interrupt(r->client); /* the call under way */
}

void forge_runner_stop(forge_runner_t *r)
{
    forge_work_t *w;

    if (!r)
        return;
    forge_runner_interrupt(r);
    for (size_t i = 0; i < r->thread_count; i++)
        pthread_join(r->threads[i], NULL);
    while ((w = r->inbox)) {
        r->inbox = w->next;
        forge_work_free(w);
    }
    while ((w = r->outbox)) {
        r->outbox = w->next;
        forge_work_free(w);
    }
    forget_signatures(r);
    free(r->sigs);
    forge_slurm_client_destroy(r->client);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->wake);
    pthread_cond_destroy(&r->finished);
    free(r->name);
    free(r);
}
