/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_submit.c - the Slurm thread (submit.h). What it makes of an unsafe
 * shared storage (issue 10), without Slurm: a submit whose staging folder
 * is a planted link is REJECTED with FORGE_EUNSAFE_PATH before any
 * slurmrestd call (the client points at a port nobody listens on).
 *
 * And who may still act (issue 11, generation.h): work made in a partition
 * generation that has passed - before it was posted, or while it waited
 * behind a slow submit - and a submit withdrawn because its launch was
 * cancelled make no call that changes anything in Slurm. What the server
 * saw is read from a scripted fake slurmrestd (support_http.h), the one
 * way to hold a submit's answer back while the next item waits.
 *
 * An interrupted submit adopts the job its tag finds that may run (held:
 * released; running or ended: followed) and cancels the others; with
 * none, it submits afresh.
 *
 * A submit the loop prepared is taken as it is: not parsed, checked nor
 * rendered again.
 *
 * And the lanes (FORGE_SLURM_MAX_CONNECTIONS): one launch's work never
 * overtakes itself nor runs beside itself, launches of other lanes are
 * submitted side by side, and a withdrawal reaches a submit queued in any
 * lane.
 *
 * And the one submit path both the lanes and `forge-worker submit` take
 * (slurm/submit_held.h), called alone: held POST, every component
 * released by its own id, a job that cannot be released cancelled,
 * Slurm's refusal final.
 */
#include "clock/clock.h"
#include "base/util.h"
#include "record/generation.h"
#include "prepare/prepare.h"
#include "loop/submit.h"
#include "loop/work.h"
#include "slurm/submit_held.h"

#include "support_http.h"
#include "support_storage.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAUNCH  "L1"
#define REQUEST SUPPORT_L1_REQUEST

static char tmp[64];
static forge_config_t *cfg;
static forge_series_catalog_t *cat;

/* A shell command with $R (the storage root) and $O (a host folder). */
#define sh(...) support_sh_in(tmp, __VA_ARGS__)

/* The storage and configuration, slurmrestd at url, that many lanes. */
static void load(const char *url, int lanes)
{
    static const char series[] =
        "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
        "\"gpus_per_node\": 8}}}";
    char storage[128], jwt[128], rest[128], conns[64];
    char *envp[] = {storage,
                    jwt,
                    rest,
                    conns,
                    "FORGE_SLURM_REST_USER=forge",
                    "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
                    NULL};
    forge_error_t err = {0};

    snprintf(tmp, sizeof(tmp), "/tmp/forge-submit-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
    sh("mkdir -p $R/runtimes/images $O; touch $R/runtimes/images/a.sif; "
       "printf 'root secret' > $O/shadow; chmod 600 $O/shadow; "
       "printf 'a.b.c' > $R/../jwt; chmod 600 $R/../jwt");
    snprintf(storage, sizeof(storage), "FORGE_STORAGE_ROOT=%s/storage", tmp);
    snprintf(jwt, sizeof(jwt), "FORGE_SLURM_JWT_FILE=%s/jwt", tmp);
    snprintf(rest, sizeof(rest), "FORGE_SLURM_REST_URL=%s", url);
    snprintf(conns, sizeof(conns), "FORGE_SLURM_MAX_CONNECTIONS=%d", lanes);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(forge_series_parse(series, strlen(series), &cat, &err), 0);
}

static void fx_init(void)
{
    load("http://127.0.0.1:9", 1);
}

static void fx_fini(void)
{
    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
    support_rm_tree(tmp);
}

TestSuite(submit, .init = fx_init, .fini = fx_fini);

static forge_work_t *work(forge_work_kind_t kind)
{
    forge_work_t *w = forge_work_new(kind, LAUNCH, 1, 0, 0);

    w->submit.request = forge_xstrdup(REQUEST);
    w->submit.request_len = strlen(REQUEST);
    return w;
}

/* w run by pool to the end (pool stopped, the result returned). */
static forge_work_t *run(forge_pool_t *pool, forge_work_t *w)
{
    forge_work_t *done;

    forge_pool_post(pool, w);
    cr_assert(forge_pool_settle(pool, 10000), "the work did not finish");
    done = forge_pool_take(pool);
    cr_assert_not_null(done);
    cr_assert_null(forge_pool_take(pool));
    forge_pool_stop(pool);
    return done;
}

Test(submit, submit_into_a_planted_link_is_rejected_not_retried)
{
    forge_pool_t *r = NULL;
    forge_error_t err = {0};
    forge_work_t *w;

    sh("mkdir -p $R/staging; ln -s $O $R/staging/" LAUNCH);
    cr_assert_eq(forge_submit_start(cfg, cat, NULL, NULL, &r, &err), FORGE_OK,
                 "%s", err.message);
    w = run(r, work(FORGE_WORK_SUBMIT));
    cr_assert_eq(w->status, FORGE_SLURM_REJECTED);
    cr_assert_eq(w->code, FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(w->message, "staging/" LAUNCH " is a symbolic link");
    sh("test $(ls -A $O) = shadow"); /* nothing written there */
    forge_work_free(w);
}

/* ---- who may still act (generation.h) ------------------------------------ */

#define META                                                                   \
    "\"meta\": {\"plugin\": {\"type\": \"openapi/slurmctld\", \"name\": "      \
    "\"Slurm OpenAPI slurmctld\", \"data_parser\": \"data_parser/v0.0.43\"}, " \
    "\"slurm\": {\"release\": \"26.05.5\"}}"
#define SUBMITTED                                                              \
    "{" META ", \"job_id\": 7, \"step_id\": \"batch\", \"errors\": [], "       \
    "\"warnings\": []}"
#define NO_JOBS "{" META ", \"jobs\": [], \"errors\": [], \"warnings\": []}"
#define SUBMIT  "/slurm/v0.0.43/job/submit"
#define HOLD_MS 3000 /* the first submit's answer: the next item waits */

static support_http_t *srv;
static forge_generations_t *gens;
static forge_pool_t *slurm;

/* The fake slurmrestd and a Slurm pool of `lanes` lanes on it. */
static void start_lanes(int lanes)
{
    forge_error_t err = {0};

    srv = support_http_start();
    support_http_default(srv, 200, NO_JOBS); /* a release's answer too */
    load(support_http_url(srv), lanes);
    gens = forge_generations_new();
    cr_assert_eq(forge_submit_start(cfg, cat, NULL, gens, &slurm, &err),
                 FORGE_OK, "%s", err.message);
}

/* One lane: every item waits behind the one before (as the tests below
 * need: "while the next item waits"). */
static void own_init(void)
{
    start_lanes(1);
}

static void own_fini(void)
{
    forge_pool_stop(slurm);
    support_http_stop(srv);
    forge_generations_destroy(gens);
    fx_fini();
}

TestSuite(ownership, .init = own_init, .fini = own_fini, .timeout = 60);

/* A work item of launch id (its own request) made for partition p in
 * generation gen. */
static forge_work_t *work_in(forge_work_kind_t kind, const char *id, int32_t p,
                             uint64_t gen)
{
    forge_work_t *w = forge_work_new(kind, id, 1, p, gen);
    char *req = forge_xstrdup(REQUEST);
    char *at = strstr(req, "\"" LAUNCH "\"");

    memcpy(at + 1, id, strlen(LAUNCH)); /* ids of LAUNCH's length */
    if (kind == FORGE_WORK_CANCEL) {
        w->cancel.job_id = 42;
        free(req);
    } else {
        w->submit.request = req;
        w->submit.request_len = strlen(req);
    }
    return w;
}

/* Every posted item back (n of them), in the order they ran, linked. */
static forge_work_t *settle(size_t n)
{
    forge_work_t *done = NULL, **tail = &done, *w;
    size_t count = 0;

    cr_assert(forge_pool_settle(slurm, 20000), "the work did not finish");
    while ((w = forge_pool_take(slurm))) {
        *tail = w;
        tail = &w->next;
        count++;
    }
    cr_assert_eq(count, n);
    return done;
}

static void free_list(forge_work_t *list)
{
    while (list) {
        forge_work_t *next = list->next;
        forge_work_free(list);
        list = next;
    }
}

/* Requests whose method is method and whose body holds text ("" any). */
static size_t seen(const char *method, const char *text)
{
    size_t n = 0;

    for (size_t i = 0; i < support_http_count(srv); i++) {
        support_http_request_t r = support_http_request(srv, i);
        n += !strcmp(r.method, method) && strstr(r.body, text) != NULL;
        support_http_request_clear(&r);
    }
    return n;
}

/* Until the server has received n requests. */
static void wait_requests(size_t n)
{
    for (int i = 0; i < 1000 && support_http_count(srv) < n; i++)
        usleep(10000);
    cr_assert_geq(support_http_count(srv), n);
}

Test(ownership, work_of_a_passed_generation_makes_no_call)
{
    uint64_t old = forge_generation_begin(gens, 0);
    forge_work_t *done, *w;

    /* the control: work of the generation held now does reach Slurm */
    support_http_push(srv, SUBMIT, 200, SUBMITTED, 0);
    forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, "L0", 0, old));
    done = settle(1);
    cr_assert_eq(done->refused, FORGE_WORK_DONE);
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->submit.job_id, 7);
    cr_assert_eq(seen("POST", "forge:L0:1"), 1);
    free_list(done);

    /* partition 0 rewound (an aborted transaction), then gone */
    forge_generation_begin(gens, 0);
    forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, "L1", 0, old));
    forge_pool_post(slurm, work_in(FORGE_WORK_CLEAN_SUBMIT, "L2", 0, old));
    forge_generation_end(gens, 0);
    forge_pool_post(slurm, work_in(FORGE_WORK_CLEAN_CANCEL, "L3", 0, old));
    forge_pool_post(slurm, work_in(FORGE_WORK_CANCEL, "L4", 0, old));
    done = settle(4);
    cr_assert_eq(support_http_count(srv), 2,
                 "only the control's submit and its release");
    sh("test ! -e $R/staging/L1 && test ! -e $R/staging/L2");
    for (w = done; w; w = w->next)
        cr_assert_eq(w->refused, FORGE_WORK_STALE, "%s", w->launch_id);
    free_list(done);
}

/* A submit held in Slurm's answer while the next waits in the inbox; then
 * `change` happens to the waiting one. */
static forge_work_t *behind_a_slow_submit(forge_work_kind_t kind,
                                          void (*change)(uint64_t gen))
{
    uint64_t held = forge_generation_begin(gens, 0);
    uint64_t moving = forge_generation_begin(gens, 1);

    support_http_push(srv, SUBMIT, 200, SUBMITTED, HOLD_MS);
    support_http_push(srv, SUBMIT, 200, SUBMITTED, 0);
    support_http_default(srv, 200, NO_JOBS);
    forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, "L1", 0, held));
    forge_pool_post(slurm, work_in(kind, "L2", 1, moving));
    wait_requests(1); /* L1's POST is out, its answer held: L2 waits */
    change(moving);
    return settle(2);
}

static void partition_1_moves(uint64_t gen)
{
    (void)gen;
    forge_generation_end(gens, 1);
}

static void l2_cancelled(uint64_t gen)
{
    (void)gen;
    forge_submit_withdraw(slurm, "L2", 1);
}

Test(ownership, queued_submit_of_a_partition_that_moved_never_posts)
{
    forge_work_t *done =
        behind_a_slow_submit(FORGE_WORK_SUBMIT, partition_1_moves);

    cr_assert_eq(seen("POST", "forge:L1:1"), 1);
    cr_assert_eq(seen("POST", "forge:L2:1"), 0, "the stale submit posted");
    sh("test ! -e $R/staging/L2"); /* nor wrote its staging folder */
    cr_assert_str_eq(done->launch_id, "L1");
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_str_eq(done->next->launch_id, "L2");
    cr_assert_eq(done->next->refused, FORGE_WORK_STALE);
    free_list(done);
}

Test(ownership, queued_clean_of_a_partition_that_moved_cancels_nothing)
{
    forge_work_t *done =
        behind_a_slow_submit(FORGE_WORK_CLEAN_SUBMIT, partition_1_moves);

    cr_assert_eq(support_http_count(srv), 2, "only L1's submit and release");
    cr_assert_eq(done->next->refused, FORGE_WORK_STALE);
    free_list(done);
}

/* The partition moves while a submit's POST waits for its answer: the job
 * it made is neither released (it would start beside the heir's) nor
 * cancelled (the heir may have adopted it): left held, the heir's to adopt
 * or sweep. */
Test(ownership, a_job_made_after_its_partition_moved_is_left_held)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    forge_work_t *done;

    support_http_push(srv, SUBMIT, 200, SUBMITTED, HOLD_MS);
    forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, "L1", 0, gen));
    wait_requests(1); /* the POST is out, its answer held */
    forge_generation_end(gens, 0);
    done = settle(1);
    cr_assert_eq(support_http_count(srv), 1, "no release, no cancel");
    cr_assert_eq(done->refused, FORGE_WORK_STALE);
    cr_assert_eq(done->submit.job_id, 0);
    free_list(done);
}

Test(ownership, submit_withdrawn_while_queued_never_posts)
{
    forge_work_t *done = behind_a_slow_submit(FORGE_WORK_SUBMIT, l2_cancelled);

    cr_assert_eq(seen("POST", "forge:L1:1"), 1);
    cr_assert_eq(seen("POST", "forge:L2:1"), 0, "the withdrawn submit posted");
    cr_assert_eq(done->refused, FORGE_WORK_DONE, "L1 was not cancelled");
    cr_assert_eq(done->next->refused, FORGE_WORK_WITHDRAWN);
    cr_assert_eq(done->next->status, FORGE_SLURM_OK, "%s", done->next->message);
    cr_assert_eq(done->next->submit.job_id, 0);
    free_list(done);
}

Test(ownership, withdrawn_clean_submit_cleans_and_submits_nothing)
{
    forge_work_t *done =
        behind_a_slow_submit(FORGE_WORK_CLEAN_SUBMIT, l2_cancelled);

    cr_assert_eq(seen("GET", ""), 1, "the tag was looked up");
    cr_assert_eq(seen("POST", "forge:L2:1"), 0, "the withdrawn submit posted");
    cr_assert_eq(done->next->refused, FORGE_WORK_WITHDRAWN);
    cr_assert_eq(done->next->status, FORGE_SLURM_OK, "%s", done->next->message);
    free_list(done);
}

/* ---- one prepare (work.h: prepared) ---------------------------------------
 */

/* What the loop does when it takes the request: parse, check, render. */
static void prepare_now(forge_work_t *w)
{
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_prepare(w->submit.request, w->submit.request_len, cfg,
                               cat, &p, &err),
                 FORGE_OK, "%s", err.message);
    forge_work_take_prepared(w, p, &p->request->launch, NULL);
    cr_assert_null(p->script, "the script is taken, not copied");
    cr_assert_null(p->payload);
    forge_prepared_destroy(p);
}

/* Every job is submitted held and released right after its POST, as the
 * submitter: a POST that slurmctld carries out after its worker gave up on
 * it (killed while slurmrestd held it through an outage) starts nothing. */
Test(ownership, a_submit_is_posted_held_then_released)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    forge_work_t *done;
    support_http_request_t post, release;

    support_http_push(srv, SUBMIT, 200, SUBMITTED, 0);
    forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, "L1", 0, gen));
    done = settle(1);
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->submit.job_id, 7);
    cr_assert_eq(support_http_count(srv), 2, "the submit, then its release");
    post = support_http_request(srv, 0);
    release = support_http_request(srv, 1);
    cr_assert_not_null(strstr(post.body, "\"hold\":true"), "%s", post.body);
    cr_assert_str_eq(release.method, "POST");
    cr_assert_str_eq(release.target, "/slurm/v0.0.43/job/7");
    cr_assert_str_eq(release.body, "{\"hold\":false}");
    support_http_request_clear(&post);
    support_http_request_clear(&release);
    free_list(done);
}

/* A job that cannot be released is cancelled and the submit fails, to be
 * retried (the clean before the retry cancels what its tag still finds):
 * never recorded, never taken as Slurm's refusal of the launch. */
Test(ownership, a_job_that_cannot_be_released_is_cancelled_and_retried)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    forge_work_t *done;

    support_http_push(srv, SUBMIT, 200, SUBMITTED, 0);
    support_http_push(srv, "/slurm/v0.0.43/job/7", 422,
                      "{\"errors\": [{\"error_number\": 2020, "
                      "\"error\": \"Job/step already completing\"}]}",
                      0);
    forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, "L1", 0, gen));
    done = settle(1);
    cr_assert_eq(done->status, FORGE_SLURM_SERVER, "%s", done->message);
    cr_assert(forge_slurm_status_retriable(done->status));
    cr_assert_eq(done->submit.job_id, 0, "a held job is never recorded");
    cr_assert_not_null(strstr(done->message, "2020"), "%s", done->message);
    cr_assert_eq(seen("DELETE", ""), 1, "the held job cancelled");
    free_list(done);
}

/* The sweep some time after an interrupted submit's clean: every live job
 * the tag finds is cancelled but the launch's own (a het job's components
 * by their leader); an ended one is left alone. */
Test(ownership, a_sweep_cancels_late_jobs_and_keeps_the_launchs_own)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    forge_work_t *w = forge_work_new(FORGE_WORK_SWEEP, "L1", 1, 0, gen);
    forge_work_t *done;

    w->cancel.job_id = 7;
    support_http_push(
        srv, "/slurm/v0.0.43/jobs", 200,
        "{" META ", \"errors\": [], \"warnings\": [], \"jobs\": ["
        "{\"job_id\": 7, \"het_job_id\": {\"set\": true, \"number\": 7}, "
        "\"comment\": \"forge:L1:1\", \"job_state\": [\"RUNNING\"]},"
        "{\"job_id\": 8, \"het_job_id\": {\"set\": true, \"number\": 7}, "
        "\"comment\": \"forge:L1:1\", \"job_state\": [\"RUNNING\"]},"
        "{\"job_id\": 5, \"comment\": \"forge:L1:1\", "
        "\"job_state\": [\"CANCELLED\"]},"
        "{\"job_id\": 9, \"comment\": \"forge:L1:1\", "
        "\"job_state\": [\"PENDING\"], \"state_reason\": \"JobHeldUser\"},"
        "{\"job_id\": 10, \"comment\": \"forge:L2:1\", "
        "\"job_state\": [\"PENDING\"]}]}",
        0);
    forge_pool_post(slurm, w);
    done = settle(1);
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(seen("DELETE", ""), 1, "only the late job 9");
    for (size_t i = 0; i < support_http_count(srv); i++) {
        support_http_request_t r = support_http_request(srv, i);
        if (!strcmp(r.method, "DELETE"))
            cr_assert_str_eq(r.target, "/slurm/v0.0.43/job/9");
        support_http_request_clear(&r);
    }
    free_list(done);
}

/* An interrupted submit's tag listed (jobs: the listing's "jobs" items),
 * job 7's details (details: its items) and the clean run: the result. */
static forge_work_t *clean_submit_with(const char *jobs, const char *details)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    char body[2048];

    snprintf(body, sizeof(body),
             "{" META ", \"errors\": [], \"warnings\": [], \"jobs\": [%s]}",
             jobs);
    support_http_push(srv, "/slurm/v0.0.43/jobs", 200, body, 0);
    if (details) {
        snprintf(body, sizeof(body),
                 "{" META ", \"errors\": [], \"warnings\": [], \"jobs\": [%s]}",
                 details);
        support_http_push(srv, "/slurm/v0.0.43/job/7", 200, body, 0);
    }
    support_http_push(srv, SUBMIT, 200, SUBMITTED, 0);
    forge_pool_post(slurm, work_in(FORGE_WORK_CLEAN_SUBMIT, "L1", 0, gen));
    return settle(1);
}

/* The requests of method to target. */
static size_t seen_at(const char *method, const char *target)
{
    size_t n = 0;

    for (size_t i = 0; i < support_http_count(srv); i++) {
        support_http_request_t r = support_http_request(srv, i);
        n += !strcmp(r.method, method) && !strcmp(r.target, target);
        support_http_request_clear(&r);
    }
    return n;
}

#define HELD_7                                                                 \
    "{\"job_id\": 7, \"comment\": \"forge:L1:1\", \"job_state\": "             \
    "[\"PENDING\"], \"state_reason\": \"JobHeldAdmin\"}"
#define LATE_9                                                                 \
    "{\"job_id\": 9, \"comment\": \"forge:L1:1\", \"job_state\": "             \
    "[\"PENDING\"], \"state_reason\": \"JobHeldAdmin\"}"

/* A crash between the POST and the release: the held job is the launch's,
 * staged again and released; a later POST's held job is cancelled; no
 * second job is submitted. */
Test(ownership, an_interrupted_submits_held_job_is_adopted_and_released)
{
    forge_work_t *done = clean_submit_with(HELD_7 ", " LATE_9, HELD_7);

    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->submit.job_id, 7);
    cr_assert_eq(done->submit.component_count, 1);
    cr_assert_eq(seen_at("DELETE", "/slurm/v0.0.43/job/9"), 1, "the late one");
    cr_assert_eq(seen_at("POST", "/slurm/v0.0.43/job/7"), 1, "released");
    cr_assert_eq(seen_at("POST", SUBMIT), 0, "nothing submitted again");
    cr_assert_eq(seen("DELETE", ""), 1);
    free_list(done);
}

/* An aborted transaction lost SUBMITTED of a job that runs: it is
 * followed as it is (not released, not cancelled, not staged again). */
Test(ownership, an_interrupted_submits_running_job_is_followed)
{
    forge_work_t *done = clean_submit_with(
        "{\"job_id\": 7, \"comment\": \"forge:L1:1\", \"job_state\": "
        "[\"RUNNING\"], \"nodes\": \"n1\"}, " LATE_9,
        "{\"job_id\": 7, \"job_state\": [\"RUNNING\"], \"nodes\": \"n1\"}");

    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->submit.job_id, 7);
    cr_assert_eq(seen_at("DELETE", "/slurm/v0.0.43/job/9"), 1);
    cr_assert_eq(seen_at("POST", "/slurm/v0.0.43/job/7"), 0, "not held");
    cr_assert_eq(seen_at("POST", SUBMIT), 0);
    free_list(done);
}

/* A job that ended after it ran is the launch's: its end is what the poll
 * then publishes, and the command is not run again. */
Test(ownership, an_interrupted_submits_ended_job_is_adopted)
{
    forge_work_t *done = clean_submit_with(
        "{\"job_id\": 7, \"comment\": \"forge:L1:1\", \"job_state\": "
        "[\"COMPLETED\"], \"nodes\": \"n1\"}",
        "{\"job_id\": 7, \"job_state\": [\"COMPLETED\"], \"nodes\": \"n1\"}");

    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->submit.job_id, 7);
    cr_assert_eq(support_http_count(srv), 2, "the listing, the details");
    free_list(done);
}

/* Only jobs that never ran (cancelled while held): submitted afresh. */
Test(ownership, an_interrupted_submit_that_left_nothing_to_run_is_resubmitted)
{
    forge_work_t *done = clean_submit_with(
        "{\"job_id\": 5, \"comment\": \"forge:L1:1\", \"job_state\": "
        "[\"CANCELLED\"], \"state_reason\": \"JobHeldAdmin\"}",
        NULL);

    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->submit.job_id, 7, "the new job");
    cr_assert_eq(seen_at("POST", SUBMIT), 1);
    cr_assert_eq(seen("DELETE", ""), 0);
    free_list(done);
}

/* An aborted transaction lost SUBMITTED of a job that ran and ended more
 * than MinJobAge ago: slurmctld lists nothing, accounting saw it start.
 * It is the launch's; nothing is submitted again. Accounting that does
 * not answer submits nothing either: the clean is retried. */
Test(ownership, a_job_slurmctld_forgot_is_adopted_from_accounting)
{
    forge_work_t *done;

    support_http_push(srv, "/slurmdb/v0.0.43/jobs", 200,
                      "{\"jobs\": [{\"job_id\": 12, \"name\": \"forge-L1-1\", "
                      "\"comment\": {\"job\": \"forge:L1:1\"}, \"state\": "
                      "{\"current\": [\"COMPLETED\"]}, \"time\": {\"start\": "
                      "1796000100}}], \"errors\": []}",
                      0);
    done = clean_submit_with("", NULL);
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->submit.job_id, 12);
    cr_assert_eq(seen_at("POST", SUBMIT), 0, "nothing submitted again");
    free_list(done);

    support_http_push(srv, "/slurmdb/", 500, "{\"errors\": []}", 0);
    support_http_push(srv, "/slurmdb/", 500, "{\"errors\": []}", 0);
    support_http_push(srv, "/slurmdb/", 500, "{\"errors\": []}", 0);
    support_http_push(srv, "/slurmdb/", 500, "{\"errors\": []}", 0);
    done = clean_submit_with("", NULL);
    cr_assert_eq(done->status, FORGE_SLURM_SERVER, "%s", done->message);
    cr_assert_eq(seen_at("POST", SUBMIT), 0, "nothing submitted");
    free_list(done);
}

Test(ownership, a_submit_the_loop_prepared_is_not_prepared_again)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    forge_work_t *ready = work_in(FORGE_WORK_SUBMIT, "L1", 0, gen), *done;

    prepare_now(ready);
    /* the image goes after the loop checked it: its check stands */
    sh("rm $R/runtimes/images/a.sif");
    support_http_push(srv, SUBMIT, 200, SUBMITTED, 0);
    forge_pool_post(slurm, ready);
    forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, "L2", 0, gen));
    done = settle(2);
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(seen("POST", "forge:L1:1"), 1);
    sh("test -f $R/staging/L1/1/job.sh");
    /* the control: one prepared here (a restored intent, a retry) is
     * checked now */
    cr_assert_eq(done->next->status, FORGE_SLURM_REJECTED);
    cr_assert_eq(done->next->code, FORGE_EIMAGE_MISSING, "%s",
                 done->next->message);
    cr_assert_eq(seen("POST", "forge:L2:1"), 0);
    free_list(done);
}

/* ---- lanes (FORGE_SLURM_MAX_CONNECTIONS) ----------------------------------
 */

#define LANES 4

static void lanes_init(void)
{
    start_lanes(LANES);
}

TestSuite(lanes, .init = lanes_init, .fini = own_fini, .timeout = 60);

/* A launch id of LAUNCH's length in lane `lane`, other than `not`. */
static const char *id_in_lane(size_t lane, const char * not )
{
    static char ids[LANES * 2][3];
    static size_t next;
    char *id = ids[next++ % (LANES * 2)];

    for (char a = 'A'; a <= 'Z'; a++)
        for (char b = '0'; b <= '9'; b++) {
            snprintf(id, 3, "%c%c", a, b);
            if (forge_submit_lane(id, LANES) == lane &&
                (!not || strcmp(id, not )))
                return id;
        }
    cr_assert_fail("no id in lane %zu", lane);
    return NULL;
}

Test(lanes, a_launchs_work_never_overtakes_itself)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    const char *id = id_in_lane(0, NULL);
    forge_work_t *done;

    support_http_push(srv, SUBMIT, 200, SUBMITTED, 1500);
    forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, id, 0, gen));
    forge_pool_post(slurm, work_in(FORGE_WORK_CANCEL, id, 0, gen));
    wait_requests(1);
    usleep(500000); /* three lanes are idle: the cancel still waits */
    cr_assert_eq(support_http_count(srv), 1, "the cancel overtook its submit");
    done = settle(2);
    cr_assert_eq(done->kind, FORGE_WORK_SUBMIT);
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->next->kind, FORGE_WORK_CANCEL);
    cr_assert_eq(seen("POST", "forge:"), 1);
    cr_assert_eq(seen("DELETE", ""), 1);
    free_list(done);
}

/* GETs of target (exact, its query aside). */
static size_t gets_of(const char *target)
{
    size_t n = 0;

    for (size_t i = 0; i < support_http_count(srv); i++) {
        support_http_request_t r = support_http_request(srv, i);
        n += !strcmp(r.method, "GET") &&
             !strncmp(r.target, target, strlen(target)) &&
             (!r.target[strlen(target)] || r.target[strlen(target)] == '?');
        support_http_request_clear(&r);
    }
    return n;
}

/* The cleans of many launches at once (a worker restoring its interrupted
 * submits) look their tags up in one listing of slurmctld's jobs, not one
 * each: the lanes wait for the one in flight. Work made after a listing
 * was asked for is never answered from it. */
Test(lanes, cleans_at_once_share_one_listing_of_slurmctlds_jobs)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    forge_work_t *done, *made[12];
    char id[3];

    support_http_push(srv, "/slurm/v0.0.43/jobs", 200,
                      "{" META ", \"errors\": [], \"warnings\": [], "
                      "\"jobs\": [{\"job_id\": 9, \"comment\": "
                      "\"forge:A3:1\", \"job_state\": [\"PENDING\"]}, "
                      "{\"job_id\": 8, \"comment\": \"forge:A5:1\", "
                      "\"job_state\": [\"COMPLETED\"]}, "
                      "{\"job_id\": 7, \"comment\": \"other\", "
                      "\"job_state\": [\"RUNNING\"]}]}",
                      300);        /* the other lanes' cleans come meanwhile */
    for (int i = 0; i < 12; i++) { /* all made before the listing */
        snprintf(id, sizeof(id), "A%d", i % 10);
        id[0] = (char)('A' + i / 10);
        made[i] = work_in(FORGE_WORK_CLEAN_CANCEL, id, 0, gen);
    }
    for (int i = 0; i < 12; i++)
        forge_pool_post(slurm, made[i]);
    done = settle(12);
    cr_assert_eq(gets_of("/slurm/v0.0.43/jobs"), 1, "%zu listings",
                 gets_of("/slurm/v0.0.43/jobs"));
    cr_assert_eq(seen("DELETE", ""), 1, "A3's pending job alone");
    for (forge_work_t *w = done; w; w = w->next)
        cr_assert_eq(w->status, FORGE_SLURM_OK, "%s: %s", w->launch_id,
                     w->message);
    free_list(done);

    forge_pool_post(slurm, work_in(FORGE_WORK_CLEAN_CANCEL, "A3", 0, gen));
    free_list(settle(1));
    cr_assert_eq(gets_of("/slurm/v0.0.43/jobs"), 2,
                 "a listing older than "
                 "the work was used");
}

Test(lanes, launches_of_other_lanes_are_submitted_side_by_side)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    long long start;
    forge_work_t *done;

    for (size_t i = 0; i < LANES; i++)
        support_http_push(srv, SUBMIT, 200, SUBMITTED, 1000);
    start = forge_clock_ms();
    for (size_t i = 0; i < LANES; i++)
        forge_pool_post(
            slurm, work_in(FORGE_WORK_SUBMIT, id_in_lane(i, NULL), 0, gen));
    done = settle(LANES);
    /* one after the other: 4 s at least */
    cr_assert_lt(forge_clock_ms() - start, 2500, "took %lld ms",
                 forge_clock_ms() - start);
    cr_assert_eq(seen("POST", "forge:"), LANES);
    for (forge_work_t *w = done; w; w = w->next)
        cr_assert_eq(w->status, FORGE_SLURM_OK, "%s: %s", w->launch_id,
                     w->message);
    free_list(done);
}

Test(lanes, a_withdrawal_reaches_a_submit_queued_behind_busy_lanes)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    static const char *held[LANES] = {"H0", "H1", "H2", "H3"};
    const char *queued = "Q0";
    char tag[32];
    forge_work_t *done;

    /* every thread busy with a slow answer: the next submit waits */
    for (size_t i = 0; i < LANES; i++) {
        support_http_push(srv, SUBMIT, 200, SUBMITTED, 1500);
        forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, held[i], 0, gen));
    }
    wait_requests(LANES);
    forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, queued, 0, gen));
    forge_submit_withdraw(slurm, queued, 1);
    done = settle(LANES + 1);
    snprintf(tag, sizeof(tag), "forge:%s:1", queued);
    cr_assert_eq(seen("POST", tag), 0, "the withdrawn submit posted");
    cr_assert_eq(seen("POST", "forge:"), LANES);
    for (forge_work_t *w = done; w; w = w->next)
        cr_assert_eq(w->refused,
                     strcmp(w->launch_id, queued) ? FORGE_WORK_DONE
                                                  : FORGE_WORK_WITHDRAWN,
                     "%s", w->launch_id);
    free_list(done);
}

Test(lanes, a_burst_of_one_lane_spreads_over_every_connection)
{
    uint64_t gen = forge_generation_begin(gens, 0);
    long long start;
    forge_work_t *done;
    char ids[LANES][3];

    /* ids that FNV-1a modulo the connections would all send to lane 0:
     * still submitted side by side */
    for (size_t i = 0, n = 0; n < LANES; i++) {
        snprintf(ids[n], 3, "%c%c", (char)('A' + i / 10), (char)('0' + i % 10));
        if (forge_submit_lane(ids[n], LANES) == 0)
            n++;
    }
    for (size_t i = 0; i < LANES; i++)
        support_http_push(srv, SUBMIT, 200, SUBMITTED, 1000);
    start = forge_clock_ms();
    for (size_t i = 0; i < LANES; i++)
        forge_pool_post(slurm, work_in(FORGE_WORK_SUBMIT, ids[i], 0, gen));
    done = settle(LANES);
    cr_assert_lt(forge_clock_ms() - start, 2500, "took %lld ms",
                 forge_clock_ms() - start);
    cr_assert_eq(seen("POST", "forge:"), LANES);
    free_list(done);
}

/* ---- the one submit path (slurm/submit_held.h) ------------------------------
 * The worker's lanes and `forge-worker submit` make a job the same way:
 * held POST, each component released by its own id, a job that cannot be
 * released cancelled; Slurm's refusal of the POST is final and makes no
 * other call. */

static char jwt_path[64];
static forge_slurm_client_t *held_client;

static void held_init(void)
{
    forge_slurm_options_t o;
    int fd;

    snprintf(jwt_path, sizeof(jwt_path), "/tmp/forge-held-jwt-XXXXXX");
    fd = mkstemp(jwt_path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "a.b.c", 5), 5);
    close(fd);
    srv = support_http_start();
    support_http_default(srv, 200, NO_JOBS); /* a release's answer too */
    o = support_http_options(srv, jwt_path, NULL);
    held_client = support_http_client(&o);
}

static void held_fini(void)
{
    forge_slurm_client_destroy(held_client);
    support_http_stop(srv);
    unlink(jwt_path);
}

TestSuite(held, .init = held_init, .fini = held_fini, .timeout = 30);

static const forge_slurm_held_job_t one_pool = {.comment = "forge:L1:1",
                                                .pool_count = 1};

/* The payload of a job: its own body does not matter to the fake. */
static forge_slurm_status_t submit_held(size_t pools,
                                        forge_slurm_released_t *out,
                                        forge_slurm_result_t *res)
{
    forge_slurm_held_job_t job = one_pool;
    json_t *body = json_pack("{s:{s:b}}", "job", "hold", 1);
    forge_slurm_status_t st;

    job.payload = body;
    job.pool_count = pools;
    st = forge_slurm_submit_held(held_client, &job, out, res);
    json_decref(body);
    return st;
}

static void expect_request(size_t i, const char *method, const char *target,
                           const char *body)
{
    support_http_request_t r = support_http_request(srv, i);

    cr_assert_str_eq(r.method, method, "request %zu", i);
    cr_assert_str_eq(r.target, target, "request %zu", i);
    if (body)
        cr_assert_str_eq(r.body, body, "request %zu", i);
    support_http_request_clear(&r);
}

Test(held, one_component_is_posted_then_released_by_its_id)
{
    forge_slurm_released_t out;
    forge_slurm_result_t res = {0};

    support_http_push(srv, SUBMIT, 200, SUBMITTED, 0);
    cr_assert_eq(submit_held(1, &out, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(out.job_id, 7);
    cr_assert_eq(out.component_count, 1);
    cr_assert_eq(out.component_ids[0], 7);
    cr_assert_eq(out.cancelled_job_id, 0);
    cr_assert_not(out.adopted);
    cr_assert_eq(support_http_count(srv), 2);
    expect_request(0, "POST", SUBMIT, NULL);
    expect_request(1, "POST", "/slurm/v0.0.43/job/7", "{\"hold\":false}");
    free(out.component_ids);
}

Test(held, each_het_component_is_released_by_its_own_id)
{
    forge_slurm_released_t out;
    forge_slurm_result_t res = {0};

    support_http_push(srv, SUBMIT, 200, SUBMITTED, 0);
    support_http_push(srv, "/slurm/v0.0.43/job/7", 200,
                      "{" META ", \"jobs\": ["
                      "{\"job_id\": 8, \"het_job_id\": 7, \"het_job_offset\": "
                      "1, \"job_state\": [\"PENDING\"]},"
                      "{\"job_id\": 7, \"het_job_id\": 7, \"het_job_offset\": "
                      "0, \"job_state\": [\"PENDING\"]}]}",
                      0);
    cr_assert_eq(submit_held(2, &out, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(out.component_count, 2);
    cr_assert_eq(out.component_ids[0], 7, "in het offset order");
    cr_assert_eq(out.component_ids[1], 8);
    cr_assert_eq(support_http_count(srv), 4, "POST, details, two releases");
    expect_request(1, "GET", "/slurm/v0.0.43/job/7", NULL);
    expect_request(2, "POST", "/slurm/v0.0.43/job/7", "{\"hold\":false}");
    expect_request(3, "POST", "/slurm/v0.0.43/job/8", "{\"hold\":false}");
    free(out.component_ids);
}

Test(held, a_job_that_cannot_be_released_is_cancelled_retriable)
{
    forge_slurm_released_t out;
    forge_slurm_result_t res = {0};

    support_http_push(srv, SUBMIT, 200, SUBMITTED, 0);
    support_http_push(srv, "/slurm/v0.0.43/job/7", 422,
                      "{\"errors\": [{\"error_number\": 2020, "
                      "\"error\": \"Job/step already completing\"}]}",
                      0);
    cr_assert_eq(submit_held(1, &out, &res), FORGE_SLURM_SERVER);
    cr_assert(forge_slurm_status_retriable(res.status));
    cr_assert_eq(out.job_id, 0, "never reported made");
    cr_assert_null(out.component_ids);
    cr_assert_eq(out.cancelled_job_id, 7);
    cr_assert_not_null(strstr(res.message, "release of job 7"), "%s",
                       res.message);
    cr_assert_eq(seen("DELETE", ""), 1, "the held job cancelled");
    expect_request(2, "DELETE", "/slurm/v0.0.43/job/7", NULL);
}

/* Slurm's refusal (ESLURM_*, HTTP 500 before 26.05): final, nothing looked
 * up, released nor cancelled. */
Test(held, slurms_refusal_of_the_post_is_final_and_alone)
{
    forge_slurm_released_t out;
    forge_slurm_result_t res = {0};

    support_http_push(srv, SUBMIT, 500,
                      "{\"errors\": [{\"error_number\": 2015, "
                      "\"error\": \"Invalid partition name specified\"}]}",
                      0);
    cr_assert_eq(submit_held(1, &out, &res), FORGE_SLURM_REJECTED);
    cr_assert_eq(out.job_id, 0);
    cr_assert_eq(out.cancelled_job_id, 0);
    cr_assert_eq(support_http_count(srv), 1, "the POST alone");
}
