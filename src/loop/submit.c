/* SPDX-License-Identifier: Apache-2.0 */
/*
 * submit.c - the Slurm threads (submit.h): a submit (stage, then
 * slurm/submit_held.h: POST held, adopt by the comment tag when the
 * outcome is unknown, release every component, cancel a job left held;
 * the request as the loop prepared it, or, for a restored intent or a
 * retried submit, prepared here; a retry's later try (tries.c) is always
 * prepared here, tagged with its try and into the staging folder of the
 * tries before it, which it never removes: render/try.h), the adoption of
 * what an interrupted submit made (a job slurmctld lists, or one
 * accounting saw start after slurmctld forgot it; when it made nothing
 * that may run, a clean and a fresh submit), the clean of a cancelled
 * one, the sweep for late jobs some time after either, a cancel; and,
 * before each step of
 * them that changes something outside the worker, whether the work may
 * still take it (may_act).
 *
 * Lanes: the pool has FORGE_SLURM_MAX_CONNECTIONS threads (pool.h), each
 * with its own slurmrestd client (its own keep-alive connection, by its
 * seat). A launch's work is keyed by its launch_id's hash, so everything
 * of one launch (submit, clean, cancel) runs in the order posted and never
 * at once, while other launches are submitted side by side on whichever
 * threads are free (a burst spreads over every connection). The cluster's
 * request budget (slurm/budget.h) is shared by the lanes and the poller.
 *
 * Threads and ownership: everything here runs on the pool's threads, each
 * the only user of its lane's client, but for
 * forge_slurm_client_interrupt, which a stop calls from the loop's thread.
 * The work item is its lane thread's while it runs (work.h); the loop's
 * thread only sets its `withdraw` flag (an atomic, through
 * forge_submit_withdraw under the pool's lock). Ownership of launches
 * (generation.h) is asked with atomics, never the loop's lock or tables:
 * the loop may have moved on (a revoke, a rewind) while the item waited in
 * the inbox or sat in a slow call. What is refused there is dropped, and
 * said so.
 */
#include "loop/submit.h"
#include "log/log.h"
#include "testpoint/testpoint.h"
#include "base/util.h"
#include "render/render.h"
#include "render/staging.h"
#include "render/try.h"
#include "prepare/prepare.h"
#include "loop/listing.h"
#include "loop/work.h"
#include "slurm/accounting.h"
#include "slurm/submit_held.h"

#include <stdlib.h>
#include <string.h>

typedef struct submitter {
    const forge_config_t *cfg;
    const forge_series_catalog_t *catalog;
    const forge_tenants_t *tenants;         /* NULL: none */
    const forge_generations_t *generations; /* NULL: nothing checked */
    size_t lane_count;
    forge_slurm_client_t **clients; /* one per lane */
    forge_listing_t *listing;       /* shared by the lanes (listing.h) */
} submitter_t;

/* FNV-1a of the launch id: the same on every thread and in every run. */
size_t forge_submit_lane(const char *launch_id, size_t lanes)
{
    uint32_t h = 2166136261u;

    for (const char *c = launch_id ? launch_id : ""; *c; c++)
        h = (h ^ (uint8_t)*c) * 16777619u;
    return lanes ? h % lanes : 0;
}

/* The client of the pool thread running w: only ever used by it. */
static forge_slurm_client_t *client_of(const submitter_t *s,
                                       const forge_work_t *w)
{
    (void)w;
    return s->clients[forge_pool_seat() % s->lane_count];
}

/* ---- ownership and intent --------------------------------------------- */

/* The work may_act is asked about, as the log names it. */
static const char *const work_names[] = {
    [FORGE_WORK_SUBMIT] = "submit",
    [FORGE_WORK_CLEAN_SUBMIT] = "adopt or resubmit",
    [FORGE_WORK_CLEAN_CANCEL] = "clean of a cancelled intent",
    [FORGE_WORK_CANCEL] = "cancel",
    [FORGE_WORK_SWEEP] = "sweep for late jobs",
};

/* Not once w's partition's generation has passed (FORGE_WORK_STALE: the
 * loop drops it). */
static bool still_held(submitter_t *s, forge_work_t *w)
{
    forge_log_field_t f[] = {{"launch_id", w->launch_id}};

    if (!s->generations ||
        forge_generation_current(s->generations, w->partition, w->generation))
        return true;
    w->refused = FORGE_WORK_STALE;
    forge_log_fields(FORGE_LOG_INFO, f, 1,
                     "%s of %s dropped before Slurm: partition %d is no "
                     "longer held in the generation it was made in "
                     "(it moved, or an aborted transaction rewound it)",
                     work_names[w->kind], w->launch_id, (int)w->partition);
    return false;
}

/* Right before a step that changes something outside the worker (the
 * staging folder, a POST, a cancel): may w still take it? Not once its
 * generation has passed, nor, for a submit (`submitting`), once its
 * launch was withdrawn (FORGE_WORK_WITHDRAWN). Each refusal is logged
 * once. */
static bool may_act(submitter_t *s, forge_work_t *w, bool submitting)
{
    forge_log_field_t f[] = {{"launch_id", w->launch_id}};

    if (w->refused != FORGE_WORK_DONE || !still_held(s, w))
        return false;
    if (!submitting || !atomic_load(&w->submit.withdraw))
        return true;
    w->refused = FORGE_WORK_WITHDRAWN;
    forge_log_fields(FORGE_LOG_INFO, f, 1,
                     "submit of %s withdrawn before its POST: the "
                     "launch was cancelled",
                     w->launch_id);
    return false;
}

typedef struct withdrawal {
    const char *launch_id;
    int attempt;
} withdrawal_t;

static void withdraw_one(void *ctx, void *item)
{
    const withdrawal_t *d = ctx;
    forge_work_t *w = item;

    if ((w->kind == FORGE_WORK_SUBMIT || w->kind == FORGE_WORK_CLEAN_SUBMIT) &&
        w->attempt == d->attempt && !strcmp(w->launch_id, d->launch_id))
        atomic_store(&w->submit.withdraw, true);
}

void forge_submit_withdraw(forge_pool_t *slurm, const char *launch_id,
                           int attempt)
{
    withdrawal_t d = {launch_id, attempt};

    forge_pool_each_pending(slurm, withdraw_one, &d);
}

/* ---- submit ------------------------------------------------------------ */

/* w's comment tag: its launch's attempt's, and its try's from the second
 * on (render/try.h): a try's clean never finds another try's jobs. New. */
static char *tag_of(const forge_work_t *w)
{
    return forge_try_tag(w->launch_id, w->attempt, w->try_num);
}

/* A later try's staging folder holds the earlier tries' logs, which the
 * archive keeps: it is written over, never removed before a submit. */
static bool keeps_staging(const forge_work_t *w)
{
    return w->try_num > 1;
}

/* The jobs carrying w's comment tag, in a listing of slurmctld's jobs
 * begun after w was made (listing.h). */
static forge_slurm_status_t find_tagged(submitter_t *s, const forge_work_t *w,
                                        forge_tagged_job_t **jobs, size_t *n,
                                        forge_slurm_result_t *res)
{
    char *comment = tag_of(w);
    forge_slurm_status_t st = forge_listing_find(
        s->listing, client_of(s, w), comment, w->made_ns, jobs, n, res);

    free(comment);
    return st;
}

/* Refused before Slurm saw it: final (work.h's `code`). */
static bool refuse(forge_work_t *w, const forge_error_t *err)
{
    w->status = FORGE_SLURM_REJECTED;
    w->code = err->code;
    forge_work_say(w, "%s", err->message);
    return false;
}

/* w's request parsed, checked and rendered, unless the loop did it when it
 * took the request (work.h: prepared): a restored intent, a retry. False
 * (w's result says why) when it cannot be. */
static bool prepared(submitter_t *s, forge_work_t *w)
{
    forge_error_t err = {0};
    forge_prepared_t *p = NULL;
    const forge_tenant_t *tenant = NULL;

    if (w->submit.prepared)
        return true;
    if (forge_prepare(w->submit.request, w->submit.request_len, s->cfg,
                      s->catalog, &p, &err) ||
        (!p->payload &&
         forge_error_set(&err, FORGE_ESCHEMA, "$", "not a launch")) ||
        forge_tenant_of(s->tenants, p->request, &tenant, &err)) {
        forge_prepared_destroy(p);
        return refuse(w, &err);
    }
    forge_work_take_prepared(w, p, &p->request->launch, tenant);
    forge_prepared_destroy(p);
    /* a later try: its tag, FORGE_TRY, the nodes it may not use */
    forge_try_apply(w->submit.prepared->payload, w->launch_id, w->attempt,
                    w->try_num, w->submit.excluded_nodes);
    return true;
}

/* Its staging folder written, in one pass (staging.h): false (w's result
 * says why) when it cannot be. */
static bool stage(submitter_t *s, forge_work_t *w)
{
    const forge_work_prepared_t *p = w->submit.prepared;
    forge_staging_files_t files = {p->script, NULL, 0};
    forge_error_t err = {0};
    forge_fs_owner_t owner;

    if (p->has_credentials) {
        files.credentials = p->credentials.data;
        files.credentials_len = p->credentials.len;
    }
    /* a tenant's owner is known without the storage; none: the root's */
    if (p->tenant && forge_staging_owner(s->cfg, p->tenant, &owner, &err))
        return refuse(w, &err);
    if (forge_staging_write(s->cfg, w->launch_id, w->attempt,
                            p->tenant ? &owner : NULL, &files, &err)) {
        /* Something planted on the storage: refused, not retried forever.
         * Anything else (I/O) is retried later. */
        bool unsafe = err.code == FORGE_EUNSAFE_PATH;
        w->status = unsafe ? FORGE_SLURM_REJECTED : FORGE_SLURM_TRANSPORT;
        w->code = unsafe ? err.code : FORGE_OK;
        forge_work_say(w, "%s", err.message);
        return false;
    }
    return true;
}

/* submit_held.h's `owned` for w: its partition still held in the
 * generation w was made in (refused once: not asked again). */
typedef struct owner_check {
    submitter_t *s;
    forge_work_t *w;
} owner_check_t;

static bool still_owned(void *ctx)
{
    owner_check_t *o = ctx;

    return o->w->refused != FORGE_WORK_STALE && still_held(o->s, o->w);
}

/* The POST, and what it made: the job and its components, released
 * (slurm/submit_held.h: the one way a job is made, `forge-worker submit`
 * takes it too); a job left held is cancelled and the submit retried. */
static void post(submitter_t *s, forge_work_t *w)
{
    const forge_work_prepared_t *p = w->submit.prepared;
    char *comment = tag_of(w);
    owner_check_t check = {s, w};
    forge_slurm_held_job_t job = {
        p->payload,  p->tenant ? p->tenant->slurm_user : NULL,
        comment,     p->pool_count,
        still_owned, &check};
    forge_slurm_released_t made;
    forge_slurm_result_t res = {0};

    w->status = forge_slurm_submit_held(client_of(s, w), &job, &made, &res);
    forge_work_say(w, "%s", res.message);
    w->submit.job_id = made.job_id;
    w->submit.component_ids = made.component_ids;
    w->submit.component_count = made.component_count;
    if (made.cancelled_job_id)
        forge_log_warn("job %u of %s left held (%s): cancelled, the launch is "
                       "submitted again later",
                       made.cancelled_job_id, w->launch_id, w->message);
    free(comment);
}

static void do_submit(submitter_t *s, forge_work_t *w)
{
    if (may_act(s, w, true) && prepared(s, w) && stage(s, w)) {
        /* a later try's submit (tries.c): its intent committed */
        FORGE_TESTPOINT_CRASH(w->try_num > 1 ? "retry.before"
                                             : "submit.before");
        /* refused now: its staging folder goes with the launch's cleanup */
        if (may_act(s, w, true))
            post(s, w);
    }
}

/* The live jobs cancelled in turn while w may act, up to the first failure
 * (w->status), but those of job `keep` (a het job's components too). */
static void cancel_tagged(submitter_t *s, forge_work_t *w,
                          const forge_tagged_job_t *jobs, size_t n,
                          uint32_t keep, forge_slurm_result_t *res)
{
    for (size_t i = 0;
         w->status == FORGE_SLURM_OK && i < n && may_act(s, w, false); i++) {
        const forge_tagged_job_t *j = &jobs[i];
        forge_slurm_status_t st;
        if (!j->live || (keep && j->leader == keep))
            continue;
        st = forge_slurm_cancel(client_of(s, w), j->job_id, NULL, res);
        if (st != FORGE_SLURM_OK && st != FORGE_SLURM_NOT_FOUND)
            w->status = st;
        forge_log_info("cancelled job %u left by an interrupted submit of "
                       "%s (%s)",
                       j->job_id, w->launch_id, work_names[w->kind]);
    }
}

/* Every live job w's tag finds cancelled, but job `keep` (0: none).
 * w->status OK when none is left. */
static void sweep_tagged(submitter_t *s, forge_work_t *w, uint32_t keep)
{
    forge_tagged_job_t *jobs = NULL;
    size_t n = 0;
    forge_slurm_result_t res = {0};

    w->status = find_tagged(s, w, &jobs, &n, &res);
    if (w->status == FORGE_SLURM_OK)
        cancel_tagged(s, w, jobs, n, keep, &res);
    free(jobs);
    if (w->status != FORGE_SLURM_OK)
        forge_work_say(w, "%s", res.message);
}

/* An intent without a job id (restored after a crash, or a submit whose
 * outcome was unknown) cancelled: whatever job its tag finds is cancelled
 * and its staging folder removed. w->status OK when nothing of it is
 * left. */
static void clean_intent(submitter_t *s, forge_work_t *w)
{
    forge_error_t err = {0};

    if (!may_act(s, w, false))
        return;
    sweep_tagged(s, w, 0);
    if (w->status != FORGE_SLURM_OK || keeps_staging(w))
        return;
    if (may_act(s, w, false) &&
        forge_staging_remove(s->cfg, w->launch_id, w->attempt, &err))
        forge_log_warn("%s", err.message);
}

/* How far a tagged job (a component) went: 2 released (pending, running,
 * or ended after it was given nodes: its command may have run), 1 still
 * on its submit hold, 0 never to run (ended before it started: cancelled
 * while held). */
static int reach(const forge_tagged_job_t *j)
{
    if (j->live)
        return j->held ? 1 : 2;
    return j->started ? 2 : 0;
}

/* The job an interrupted submit's tag finds that the launch keeps: the
 * one that went furthest (a het job by its furthest component), the
 * lowest id among equals (the first POST); 0 when none may still run.
 * *held: it has not been released. */
static uint32_t adoptable(const forge_tagged_job_t *jobs, size_t n, bool *held)
{
    uint32_t best = 0;
    int best_reach = 0;

    for (size_t i = 0; i < n; i++) {
        int r = reach(&jobs[i]);
        if (r > best_reach || (r && r == best_reach && jobs[i].leader < best)) {
            best = jobs[i].leader;
            best_reach = r;
        }
    }
    *held = best_reach == 1;
    return best;
}

/* Job id, which an interrupted submit of w made, taken as the launch's:
 * a held one staged again (the folder a later clean may have removed)
 * and released, a released one followed as it is (slurm/submit_held.h).
 * w's result is then a submit's. A held one that cannot be staged (its
 * sealed request did not open, the folder is unsafe) is cancelled: it
 * never ran. */
static void adopt(submitter_t *s, forge_work_t *w, uint32_t job_id, bool held)
{
    const forge_work_prepared_t *p;
    char *comment = tag_of(w);
    owner_check_t check = {s, w};
    forge_slurm_held_job_t job = {NULL, NULL, comment, 1, still_owned, &check};
    forge_slurm_released_t made;
    forge_slurm_result_t res = {0};

    if (held && !w->submit.request) { /* its sealed request did not open */
        w->status = FORGE_SLURM_REJECTED;
        forge_work_say(w, "no request to submit");
    }
    if (held && (w->status != FORGE_SLURM_OK || !prepared(s, w) ||
                 !stage(s, w) || !may_act(s, w, true))) {
        /* never released, so it never ran: nothing is left of it */
        (void)forge_slurm_cancel(client_of(s, w), job_id, NULL, &res);
        free(comment);
        return;
    }
    p = w->submit.prepared;
    job.user = p && p->tenant ? p->tenant->slurm_user : NULL;
    w->status =
        forge_slurm_adopt_job(client_of(s, w), &job, job_id, &made, &res);
    forge_work_say(w, "%s", res.message);
    w->submit.job_id = made.job_id;
    w->submit.component_ids = made.component_ids;
    w->submit.component_count = made.component_count;
    if (w->status == FORGE_SLURM_OK)
        forge_log_info("adopted job %u of %s left by an interrupted submit "
                       "(%s): %s",
                       job_id, w->launch_id, held ? "held" : "released",
                       held ? "released" : "followed as it is");
    free(comment);
}

/* No job of w's tag in slurmctld's listing: one that accounting saw
 * start is the launch's all the same, adopted as it is, ended or not.
 * slurmctld forgets an ended job MinJobAge after its end, and a SUBMITTED
 * can stay unrecorded longer than that (a transaction aborted after a
 * stall on a lost coordinator: the job ran and ended meanwhile). OK:
 * adopted (w's result a submit's); NOT_FOUND: none, a fresh submit may
 * go; other: w's failure, retried before anything is submitted. */
static forge_slurm_status_t adopt_accounted(submitter_t *s, forge_work_t *w)
{
    char *name = forge_render_job_name(w->launch_id, w->attempt);
    char *tag = tag_of(w);
    forge_slurm_accounted_job_t job;
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st = forge_slurm_accounting_started(
        client_of(s, w), name, tag, w->try_num <= 1, w->submit.since_s, &job,
        &res);

    if (st == FORGE_SLURM_OK) {
        w->submit.job_id = job.leader;
        w->submit.component_ids = job.component_ids;
        w->submit.component_count = job.component_count;
        forge_log_info("adopted job %u of %s left by an interrupted submit: "
                       "slurmctld no longer knows it, accounting saw it start",
                       job.leader, w->launch_id);
    } else if (st != FORGE_SLURM_NOT_FOUND) {
        w->status = st;
        forge_work_say(w, "%s", res.message);
    }
    free(name);
    free(tag);
    return st;
}

/* An interrupted submit (restored after a crash or an aborted
 * transaction, or one whose outcome was unknown): what its tag finds that
 * may run is adopted, every other live job of the tag cancelled (a late
 * POST's); with none, the staging folder is removed and the launch
 * submitted afresh. The command runs once, never two live jobs.
 * Withdrawn meanwhile: cleaned all the same, and nothing submitted or
 * adopted. */
static void do_clean_submit(submitter_t *s, forge_work_t *w)
{
    forge_tagged_job_t *jobs = NULL;
    size_t n = 0;
    forge_slurm_result_t res = {0};
    forge_error_t err = {0};
    bool held = false;
    uint32_t keep;

    if (!may_act(s, w, false))
        return;
    if ((w->status = find_tagged(s, w, &jobs, &n, &res)) != FORGE_SLURM_OK) {
        forge_work_say(w, "%s", res.message);
        return;
    }
    keep = atomic_load(&w->submit.withdraw) ? 0 : adoptable(jobs, n, &held);
    cancel_tagged(s, w, jobs, n, keep, &res);
    free(jobs);
    if (w->status != FORGE_SLURM_OK) {
        forge_work_say(w, "%s", res.message);
        return;
    }
    if (keep) {
        adopt(s, w, keep, held);
        return;
    }
    if (!atomic_load(&w->submit.withdraw) &&
        adopt_accounted(s, w) != FORGE_SLURM_NOT_FOUND)
        return;
    if (!keeps_staging(w) && may_act(s, w, false) &&
        forge_staging_remove(s->cfg, w->launch_id, w->attempt, &err))
        forge_log_warn("%s", err.message);
    if (!may_act(s, w, true))
        return;
    if (!w->submit.request) { /* its sealed request did not open */
        w->status = FORGE_SLURM_REJECTED;
        forge_work_say(w, "no request to submit");
        return;
    }
    do_submit(s, w);
}

/* Some time after an interrupted submit's clean: a POST slurmrestd
 * delivered late made a job nobody released (post()); it goes, the
 * launch's own job (w->cancel.job_id) stays. */
static void do_sweep(submitter_t *s, forge_work_t *w)
{
    if (may_act(s, w, false))
        sweep_tagged(s, w, w->cancel.job_id);
}

static void do_cancel(submitter_t *s, forge_work_t *w)
{
    forge_slurm_result_t res = {0};

    if (!may_act(s, w, false))
        return;
    w->status =
        forge_slurm_cancel(client_of(s, w), w->cancel.job_id, NULL, &res);
    forge_work_say(w, "%s", res.message);
}

/* ---- the pool's handlers ------------------------------------------------ */

static void (*const steps[FORGE_WORK__COUNT])(submitter_t *, forge_work_t *) = {
    [FORGE_WORK_SUBMIT] = do_submit,
    [FORGE_WORK_CLEAN_SUBMIT] = do_clean_submit,
    [FORGE_WORK_CLEAN_CANCEL] = clean_intent,
    [FORGE_WORK_CANCEL] = do_cancel,
    [FORGE_WORK_SWEEP] = do_sweep,
};

static void run(void *ctx, void *item)
{
    forge_work_t *w = item;

    if (steps[w->kind]) {
        steps[w->kind](ctx, w);
        return;
    }
    w->status = FORGE_SLURM_REJECTED; /* not the Slurm thread's: a bug */
    forge_work_say(w, "work of kind %d posted to the Slurm thread",
                   (int)w->kind);
}

/* The key of a piece of work: its launch's (pool.h). */
static size_t lane(void *ctx, const void *item)
{
    (void)ctx;
    return forge_submit_lane(((const forge_work_t *)item)->launch_id, SIZE_MAX);
}

static void interrupt(void *ctx)
{
    submitter_t *s = ctx;

    for (size_t i = 0; i < s->lane_count; i++)
        forge_slurm_client_interrupt(s->clients[i]); /* the calls under way */
}

static void destroy(void *ctx)
{
    submitter_t *s = ctx;

    for (size_t i = 0; i < s->lane_count; i++)
        forge_slurm_client_destroy(s->clients[i]);
    free(s->clients);
    forge_listing_destroy(s->listing);
    free(s);
}

static const forge_pool_handlers_t handlers = {run, forge_work_drop, interrupt,
                                               destroy};

forge_rc_t forge_submit_start(const forge_config_t *cfg,
                              const forge_series_catalog_t *catalog,
                              const forge_tenants_t *tenants,
                              const forge_generations_t *generations,
                              forge_pool_t **out, forge_error_t *err)
{
    submitter_t *s = forge_xcalloc(1, sizeof(*s));
    size_t lanes =
        cfg->slurm_max_connections > 0 ? (size_t)cfg->slurm_max_connections : 1;
    forge_slurm_options_t opts;
    forge_rc_t rc;

    *out = NULL;
    s->cfg = cfg;
    s->catalog = catalog;
    s->tenants = tenants;
    s->generations = generations;
    s->clients = forge_xcalloc(lanes, sizeof(*s->clients));
    s->listing = forge_listing_new();
    forge_slurm_options_from_config(cfg, &opts);
    for (; s->lane_count < lanes; s->lane_count++)
        if ((rc = forge_slurm_client_new(&opts, &s->clients[s->lane_count],
                                         err))) {
            destroy(s);
            return rc;
        }
    return forge_pool_start_lanes("slurm", lanes, &handlers, lane, s, out, err);
}
