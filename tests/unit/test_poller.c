/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_poller.c - the poller thread (poller.h) against a scripted
 * slurmrestd (support_http.h: fault injection, late and missing answers,
 * which the real one cannot give on demand; the e2e tests in
 * tests/e2e/worker/test_tick.py do the same against the real one through
 * a proxy):
 *
 *   - stopping: a poller stopped in the middle of a poll tick stops between
 *     two calls, a call left unanswered is interrupted, and so is the
 *     client's connect, wait and backoff (forge_slurm_client_interrupt);
 *   - memory: a job whose states map to the state its record holds costs
 *     no details call, seen before or not (after a restore); one whose
 *     states moved on since its record does;
 *   - scale: 1,000 jobs cost ceil(1000/256) jobs/state calls and nothing
 *     else when they have not moved.
 *
 * What is counted is what the server saw; the time bounds are generous
 * (the failures they catch take 30 s and more).
 */
#include "base/buf.h"
#include "clock/timestamp.h"
#include "loop/poller.h"
#include "loop/work.h"
#include "base/util.h"

#include "support_http.h"
#include "support_storage.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE   "/slurm/v0.0.43/jobs/state"
#define DETAILS "/slurm/v0.0.43/job/"
#define JOBS    40
#define FIRST   1001
#define UNSET   "{\"set\": false, \"infinite\": false, \"number\": 0}"

static char tmp[64], jwt_path[128];
static support_http_t *srv;
static forge_config_t *cfg;

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fx_init(void)
{
    char storage[128], jwt[160], url[128];
    char *envp[] = {storage,
                    jwt,
                    url,
                    "FORGE_SLURM_REST_USER=forge",
                    "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
                    NULL};
    forge_error_t err = {0};
    FILE *f;

    snprintf(tmp, sizeof(tmp), "/tmp/forge-poll-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
    snprintf(jwt_path, sizeof(jwt_path), "%s/jwt", tmp);
    cr_assert_not_null(f = fopen(jwt_path, "w"));
    fputs("a.b.c", f);
    fclose(f);
    chmod(jwt_path, 0600);
    srv = support_http_start();
    snprintf(storage, sizeof(storage), "FORGE_STORAGE_ROOT=%s", tmp);
    snprintf(jwt, sizeof(jwt), "FORGE_SLURM_JWT_FILE=%s", jwt_path);
    snprintf(url, sizeof(url), "FORGE_SLURM_REST_URL=%s",
             support_http_url(srv));
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_OK, "%s",
                 err.message);
}

static void fx_fini(void)
{
    support_http_stop(srv);
    forge_config_destroy(cfg);
    support_rm_tree(tmp);
}

TestSuite(poller, .init = fx_init, .fini = fx_fini, .timeout = 120);

static forge_pool_t *poller(void)
{
    forge_pool_t *r = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_poller_start(cfg, &r, &err), FORGE_OK, "%s",
                 err.message);
    return r;
}

/* A tick over jobs FIRST .. FIRST + n - 1 whose records say `state`. */
static forge_work_t *tick(size_t n, forge_state_t state)
{
    forge_work_t *w = forge_work_new(FORGE_WORK_POLL, NULL, 0, 0, 0);

    w->poll.epoch = 1;
    w->poll.items = forge_xcalloc(n, sizeof(*w->poll.items));
    w->poll.item_count = n;
    for (size_t i = 0; i < n; i++) {
        forge_poll_item_t *it = &w->poll.items[i];
        it->job_id = FIRST + (uint32_t)i;
        it->component_count = 1;
        it->state = state;
    }
    return w;
}

/* jobs/state's answer: n jobs from FIRST, all in `state`. */
static char *states_answer(size_t n, const char *state)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_puts(&b, "{\"jobs\": [");
    for (size_t i = 0; i < n; i++)
        forge_buf_printf(&b, "%s{\"job_id\": \"%u\", \"state\": [\"%s\"]}",
                         i ? ", " : "", FIRST + (unsigned)i, state);
    forge_buf_puts(&b, "], \"errors\": [], \"warnings\": []}");
    return forge_buf_take(&b);
}

static char *details_with_reason(uint32_t id, const char *state,
                                 const char *reason)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_printf(&b,
                     "{\"jobs\": [{\"job_id\": %u, \"job_state\": [\"%s\"], "
                     "\"het_job_id\": " UNSET ", \"het_job_offset\": " UNSET
                     ", \"state_reason\": \"%s\"}], \"errors\": [], "
                     "\"warnings\": []}",
                     id, state, reason);
    return forge_buf_take(&b);
}

static char *details_answer(uint32_t id, const char *state)
{
    return details_with_reason(id, state, "Priority");
}

static size_t requests_to(const char *prefix)
{
    size_t n = 0, all = support_http_count(srv);

    for (size_t i = 0; i < all; i++) {
        support_http_request_t r = support_http_request(srv, i);
        n += !strncmp(r.target, prefix, strlen(prefix));
        support_http_request_clear(&r);
    }
    return n;
}

static void wait_requests(size_t n)
{
    for (int i = 0; i < 1000 && support_http_count(srv) < n; i++)
        usleep(10000);
    cr_assert_geq(support_http_count(srv), n, "the server saw %zu requests",
                  support_http_count(srv));
}

/* The tick r ran to its end (settled, taken). */
static forge_work_t *ran(forge_pool_t *r, forge_work_t *w)
{
    forge_work_t *done;

    forge_pool_post(r, w);
    cr_assert(forge_pool_settle(r, 60000), "the tick did not finish");
    done = forge_pool_take(r);
    cr_assert_not_null(done);
    return done;
}

/* ---- stopping -------------------------------------------------------------
 */

Test(poller, a_stop_in_the_middle_of_a_tick_comes_between_two_calls)
{
    char *states = states_answer(JOBS, "PENDING");
    forge_pool_t *r = poller();
    size_t at_stop;

    /* Every job moved (its record says SUBMITTED, Slurm PENDING): one
     * details call each, 100 ms apiece: a 4 s tick, stopped after its
     * fifth call. */
    support_http_push(srv, STATE, 200, states, 0);
    for (uint32_t i = 0; i < JOBS; i++) {
        char *d = details_answer(FIRST + i, "PENDING");
        support_http_push(srv, DETAILS, 200, d, 100);
        free(d);
    }
    forge_pool_post(r, tick(JOBS, FORGE_STATE_SUBMITTED));
    wait_requests(5);
    at_stop = support_http_count(srv);
    forge_pool_stop(r);
    cr_assert_leq(support_http_count(srv), at_stop + 1,
                  "%zu calls after the stop (tick of %d jobs)",
                  support_http_count(srv) - at_stop, JOBS);
    free(states);
}

Test(poller, a_stop_interrupts_a_call_never_answered)
{
    forge_pool_t *r = poller();
    double t0;

    /* The configuration's timeouts (30 s a request, 4 attempts): without
     * the interrupt the stop would wait for all of them. */
    support_http_push_fault(srv, STATE, SUPPORT_HTTP_HANG, NULL);
    forge_pool_post(r, tick(3, FORGE_STATE_SUBMITTED));
    wait_requests(1);
    t0 = now_s();
    forge_pool_stop(r);
    cr_assert_lt(now_s() - t0, 10.0, "the stop took %.1f s", now_s() - t0);
    cr_assert_eq(support_http_count(srv), 1);
}

typedef struct call {
    forge_slurm_client_t *client;
    forge_slurm_status_t status;
    forge_slurm_result_t res;
} call_t;

static void *read_states(void *arg)
{
    call_t *c = arg;
    forge_slurm_job_list_t jobs = {NULL, 0};
    uint32_t id = FIRST;

    c->status = forge_slurm_job_states(c->client, &id, 1, &jobs, &c->res);
    forge_slurm_job_list_clear(&jobs);
    return NULL;
}

/* c's call on its own thread, interrupted once `ready` says so; the
 * seconds from the interrupt to the call's end. */
static double interrupt_when(call_t *c, bool (*ready)(void))
{
    pthread_t t;
    double t0;

    cr_assert_eq(pthread_create(&t, NULL, read_states, c), 0);
    for (int i = 0; i < 1000 && !ready(); i++)
        usleep(10000);
    cr_assert(ready(), "the call never got where it is interrupted");
    t0 = now_s();
    forge_slurm_client_interrupt(c->client);
    pthread_join(t, NULL);
    return now_s() - t0;
}

/* The first request answered, the call asleep before its retry (the
 * answer comes in milliseconds, the sleep lasts seconds). */
static bool in_backoff(void)
{
    static double answered;

    if (!answered && support_http_count(srv) >= 1)
        answered = now_s();
    return answered && now_s() - answered > 0.3;
}

static bool a_while(void)
{
    static double since;

    if (!since)
        since = now_s();
    return now_s() - since > 0.5;
}

Test(poller, an_interrupt_cuts_a_backoff_short)
{
    forge_slurm_options_t o = support_http_options(srv, jwt_path, NULL);
    call_t c = {0};
    double took;

    o.request_timeout_ms = 5000;
    o.backoff_base_ms = o.backoff_max_ms = 20000; /* 10..20 s a retry */
    support_http_default(srv, 503, "{}");
    c.client = support_http_client(&o);
    took = interrupt_when(&c, in_backoff);
    cr_assert_lt(took, 5.0, "the interrupted call took %.1f s more", took);
    cr_assert_eq(c.status, FORGE_SLURM_SERVER);
    cr_assert_eq(support_http_count(srv), 1, "no retry once interrupted");
    forge_slurm_client_destroy(c.client);
}

Test(poller, an_interrupt_cuts_a_connect_never_accepted)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int listener = socket(AF_INET, SOCK_STREAM, 0), queued[3];
    forge_slurm_options_t o = support_http_options(srv, jwt_path, NULL);
    call_t c = {0};
    char url[64];
    double took;

    /* A listener whose backlog is full: the kernel drops further SYNs, so
     * a connect waits (as behind a firewall that drops, or a host gone). */
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(listener, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(getsockname(listener, (struct sockaddr *)&a, &len), 0);
    cr_assert_eq(listen(listener, 0), 0);
    for (int i = 0; i < 3; i++) {
        queued[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        (void)!connect(queued[i], (struct sockaddr *)&a, sizeof(a));
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(a.sin_port));
    o.base_url = url;
    o.connect_timeout_ms = 30000;
    o.request_timeout_ms = 60000;
    c.client = support_http_client(&o);
    took = interrupt_when(&c, a_while);
    cr_assert_lt(took, 5.0, "the interrupted connect took %.1f s more", took);
    cr_assert_eq(c.status, FORGE_SLURM_TRANSPORT, "nothing was sent");
    cr_assert(strstr(c.res.message, "interrupted"), "%s", c.res.message);
    forge_slurm_client_destroy(c.client);
    for (int i = 0; i < 3; i++)
        close(queued[i]);
    close(listener);
}

Test(poller, an_interrupted_client_sends_nothing)
{
    forge_slurm_options_t o = support_http_options(srv, jwt_path, NULL);
    call_t c = {0};

    c.client = support_http_client(&o);
    forge_slurm_client_interrupt(c.client);
    read_states(&c);
    cr_assert_eq(c.status, FORGE_SLURM_TRANSPORT);
    cr_assert(strstr(c.res.message, "interrupted"), "%s", c.res.message);
    cr_assert_eq(support_http_count(srv), 0);
    forge_slurm_client_destroy(c.client);
}

/* ---- memory ---------------------------------------------------------------
 */

/* A first tick over n jobs whose records say SUBMITTED while Slurm says
 * PENDING: every job moved, one details call each. */
static void first_sight(size_t n)
{
    char *states = states_answer(n, "PENDING");
    forge_pool_t *r = poller();
    forge_work_t *done;

    support_http_push(srv, STATE, 200, states, 0);
    for (uint32_t i = 0; i < n; i++) {
        char *d = details_answer(FIRST + i, "PENDING");
        support_http_push(srv, DETAILS, 200, d, 0);
        free(d);
    }
    done = ran(r, tick(n, FORGE_STATE_SUBMITTED));
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(requests_to(DETAILS), n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(done->poll.items[i].outcome, FORGE_POLL_CHANGED);
        cr_assert_str_eq(done->poll.items[0].states, "1001:PENDING,;");
    }
    forge_work_free(done);
    forge_pool_stop(r);
    free(states);
}

Test(poller, a_job_whose_record_says_what_its_states_say_costs_no_details_call)
{
    char *states = states_answer(JOBS, "PENDING");
    forge_pool_t *r; /* a new worker: no memory of its own */
    forge_work_t *done;
    size_t before;

    first_sight(1);
    r = poller();
    before = requests_to(DETAILS);
    /* every record holds the state its job's states map to */
    support_http_push(srv, STATE, 200, states, 0);
    done = ran(r, tick(JOBS, FORGE_STATE_PENDING));
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(requests_to(DETAILS), before,
                 "%zu details calls for jobs whose records hold their state",
                 requests_to(DETAILS) - before);
    for (size_t i = 0; i < JOBS; i++)
        cr_assert_eq(done->poll.items[i].outcome, FORGE_POLL_UNCHANGED);
    forge_work_free(done);
    forge_pool_stop(r);
    free(states);
}

Test(poller, a_job_whose_states_moved_on_since_its_record_is_looked_at)
{
    char *states = states_answer(1, "COMPLETED");
    char *d = details_answer(FIRST, "COMPLETED");
    forge_pool_t *r;
    forge_work_t *done;
    size_t before;

    first_sight(1);
    r = poller();
    before = requests_to(DETAILS);
    /* A record an aborted transaction rewound: it says PENDING, the job
     * has completed since. */
    support_http_push(srv, STATE, 200, states, 0);
    support_http_push(srv, DETAILS, 200, d, 0);
    done = ran(r, tick(1, FORGE_STATE_PENDING));
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(requests_to(DETAILS), before + 1);
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_CHANGED);
    cr_assert_str_eq(done->poll.items[0].states, "1001:COMPLETED,;");
    cr_assert_str_eq(done->poll.items[0].jobs.jobs[0].state[0], "COMPLETED");
    forge_work_free(done);
    forge_pool_stop(r);
    free(states);
    free(d);
}

/* A job that goes from RUNNING to RUNNING,COMPLETING between two ticks
 * has changed states but the same state: no details; its end does. */
Test(poller, a_change_of_flags_alone_costs_no_details_call)
{
    char *running = states_answer(1, "RUNNING");
    char *completing = states_answer(1, "COMPLETING\", \"RUNNING");
    char *completed = states_answer(1, "COMPLETED");
    char *d = details_answer(FIRST, "COMPLETED");
    forge_pool_t *r = poller();
    forge_work_t *done;

    support_http_push(srv, STATE, 200, running, 0);
    support_http_push(srv, STATE, 200, completing, 0);
    support_http_push(srv, STATE, 200, completed, 0);
    support_http_push(srv, DETAILS, 200, d, 0);
    for (int round = 0; round < 2; round++) {
        done = ran(r, tick(1, FORGE_STATE_RUNNING));
        cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_UNCHANGED);
        forge_work_free(done);
    }
    cr_assert_eq(requests_to(DETAILS), 0);
    done = ran(r, tick(1, FORGE_STATE_RUNNING));
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_CHANGED);
    cr_assert_eq(requests_to(DETAILS), 1);
    forge_work_free(done);
    forge_pool_stop(r);
    free(running);
    free(completing);
    free(completed);
    free(d);
}

/* ---- scale ----------------------------------------------------------------
 */

/* jobs/state's answer for jobs first .. first + n - 1, all PENDING. */
static char *states_from(uint32_t first, size_t n)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_puts(&b, "{\"jobs\": [");
    for (size_t i = 0; i < n; i++)
        forge_buf_printf(&b, "%s{\"job_id\": \"%u\", \"state\": [\"PENDING\"]}",
                         i ? ", " : "", first + (unsigned)i);
    forge_buf_puts(&b, "], \"errors\": [], \"warnings\": []}");
    return forge_buf_take(&b);
}

Test(poller, a_thousand_unmoved_jobs_cost_one_states_call_per_256)
{
    forge_pool_t *r = poller();
    forge_work_t *done;
    size_t n = 1000, calls = (n + 255) / 256;

    for (int round = 0; round < 2; round++) {
        for (size_t c = 0; c < calls; c++) {
            size_t k = c + 1 < calls ? 256 : n - 256 * c;
            char *a = states_from(FIRST + (uint32_t)(256 * c), k);
            support_http_push(srv, STATE, 200, a, 0);
            free(a);
        }
        done = ran(r, tick(n, FORGE_STATE_PENDING));
        cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(done->poll.items[i].outcome, FORGE_POLL_UNCHANGED,
                         "job %zu", i);
        forge_work_free(done);
    }
    cr_assert_eq(support_http_count(srv), 2 * calls, "%zu calls",
                 support_http_count(srv));
    forge_pool_stop(r);
}

/* ---- a targeted poll ------------------------------------------------------
 */

/* One job asked for now (push completion's CONFIRM): its details at once,
 * whatever the cache says, and what it saw merged into the cache: the
 * next tick finds both that job and the tick's other job as they were
 * seen, and asks no details of either. */
Test(poller, a_targeted_poll_merges_into_the_change_cache)
{
    char *running = states_answer(2, "RUNNING");
    char *d = details_answer(FIRST, "COMPLETED");
    char *after;
    forge_buf_t b = FORGE_BUF_INIT;
    forge_pool_t *r = poller();
    forge_work_t *done, *one;
    size_t states_before;

    support_http_push(srv, STATE, 200, running, 0);
    done = ran(r, tick(2, FORGE_STATE_RUNNING));
    cr_assert_eq(done->poll.items[1].outcome, FORGE_POLL_UNCHANGED);
    forge_work_free(done);

    states_before = requests_to(STATE);
    support_http_push(srv, DETAILS, 200, d, 0);
    one = tick(1, FORGE_STATE_RUNNING);
    one->poll.targeted = true;
    done = ran(r, one);
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_CHANGED);
    cr_assert_str_eq(done->poll.items[0].jobs.jobs[0].state[0], "COMPLETED");
    cr_assert_eq(requests_to(DETAILS), 1, "details at once");
    cr_assert_eq(requests_to(STATE), states_before, "no jobs/state call");
    forge_work_free(done);

    /* the records say PENDING (as after a rewind would): only a job the
     * cache forgot would be looked at again */
    forge_buf_printf(&b,
                     "{\"jobs\": [{\"job_id\": \"%u\", \"state\": "
                     "[\"COMPLETED\"]}, {\"job_id\": \"%u\", \"state\": "
                     "[\"RUNNING\"]}], \"errors\": [], \"warnings\": []}",
                     FIRST, FIRST + 1);
    after = forge_buf_take(&b);
    support_http_push(srv, STATE, 200, after, 0);
    done = ran(r, tick(2, FORGE_STATE_PENDING));
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_UNCHANGED);
    cr_assert_eq(done->poll.items[1].outcome, FORGE_POLL_UNCHANGED,
                 "the tick's other job is still remembered");
    cr_assert_eq(requests_to(DETAILS), 1, "no details of either");
    forge_work_free(done);
    forge_pool_stop(r);
    free(running);
    free(d);
    free(after);
}

/* ---- a job slurmctld no longer knows: accounting -------------------------
 */

#define ACCT "/slurmdb/v0.0.43/job/"
#define NONE "{\"jobs\": [], \"errors\": [], \"warnings\": []}"

/* slurmdbd's record of job FIRST tagged `comment`: ended COMPLETED after an
 * hour on 4 GPUs, its batch step's max RSS 1 GiB. */
static char *accounting_answer(const char *comment)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_printf(
        &b,
        "{\"jobs\": [{\"job_id\": %u, \"name\": \"forge-p1-1\", "
        "\"comment\": {\"job\": \"%s\"}, \"state\": {\"current\": "
        "[\"COMPLETED\"], \"reason\": \"None\"}, \"exit_code\": {\"status\": "
        "[\"SUCCESS\"], \"return_code\": 0}, \"time\": {\"submission\": "
        "1796000000, \"start\": 1796000010, \"end\": 1796003610, "
        "\"elapsed\": 3600}, \"tres\": {\"allocated\": [{\"type\": \"cpu\", "
        "\"count\": 8}, {\"type\": \"node\", \"count\": 1}, {\"type\": "
        "\"gres\", \"name\": \"gpu\", \"count\": 4}]}, \"steps\": [{\"tres\": "
        "{\"requested\": {\"max\": [{\"type\": \"mem\", \"count\": "
        "1073741824}]}}}]}], \"errors\": [], \"warnings\": []}",
        FIRST, comment);
    return forge_buf_take(&b);
}

/* A tick of job FIRST, missing from jobs/state, with the launch's tag
 * (NULL: a first absence). */
static forge_work_t *absent_tick(const char *tag)
{
    forge_work_t *w = tick(1, FORGE_STATE_RUNNING);

    w->poll.items[0].tag = tag ? forge_xstrdup(tag) : NULL;
    w->poll.items[0].missing = tag != NULL;
    support_http_push(srv, STATE, 200, NONE, 0);
    return w;
}

Test(poller, an_absent_job_accounting_knows_comes_back_with_its_records)
{
    char *acct = accounting_answer("forge:p1:1");
    forge_pool_t *r = poller();
    forge_work_t *done;
    forge_poll_item_t *it;

    support_http_push(srv, ACCT, 200, acct, 0);
    done = ran(r, absent_tick(NULL));
    it = &done->poll.items[0];
    cr_assert_eq(it->outcome, FORGE_POLL_ACCOUNTED);
    cr_assert_eq(it->jobs.count, 1);
    cr_assert_str_eq(it->jobs.jobs[0].comment, "forge:p1:1");
    cr_assert_not_null(it->jobs.jobs[0].use);
    cr_assert_eq(it->jobs.jobs[0].use->max_rss_bytes, 1073741824LL);
    cr_assert_eq(it->jobs.jobs[0].use->elapsed_s, 3600);
    cr_assert_eq(requests_to(ACCT), 1);
    forge_work_free(done);
    forge_pool_stop(r);
    free(acct);
}

/* slurmdbd down (slurmrestd answers 500) or no /slurmdb/ at all (404):
 * ABSENT, never UNANSWERED, so the loop's grace runs; and the job's
 * accounting is not asked again before FORGE_ACCOUNTING_EVERY_MS. */
Test(poller, an_accounting_that_fails_is_absent_and_asked_again_only_later)
{
    forge_pool_t *r = poller();
    forge_work_t *done;
    size_t asked;

    support_http_default(srv, 500,
                         "{\"errors\": [{\"error_number\": 7000, \"error\": "
                         "\"Unable to connect to database\"}]}");
    done = ran(r, absent_tick(NULL));
    cr_assert_eq(done->status, FORGE_SLURM_OK, "%s", done->message);
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_ABSENT);
    asked = requests_to(ACCT);
    cr_assert_geq(asked, 1);
    forge_work_free(done);
    done = ran(r, absent_tick("forge:p1:1")); /* at once: the answer stands */
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_ABSENT);
    cr_assert_eq(requests_to(ACCT), asked, "asked again within the bound");
    forge_work_free(done);
    forge_pool_stop(r);
    r = poller(); /* down: a tick of 3 missing jobs asks once */
    support_http_push(srv, STATE, 200, NONE, 0);
    asked = requests_to(ACCT);
    done = ran(r, tick(3, FORGE_STATE_RUNNING));
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(done->poll.items[i].outcome, FORGE_POLL_ABSENT);
    cr_assert_eq(requests_to(ACCT) - asked, 4, "one lookup: its 4 attempts");
    forge_work_free(done);
    forge_pool_stop(r);
    r = poller(); /* no /slurmdb/: a plain 404 */
    support_http_default(srv, 404, "Not Found");
    done = ran(r, absent_tick(NULL));
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_ABSENT);
    forge_work_free(done);
    forge_pool_stop(r);
}

/* A missing job's tag goes with the lookup: another launch's record under
 * the same (reused) job id is not this one's. */
Test(poller, another_launchs_record_under_the_job_id_is_absent)
{
    char *acct = accounting_answer("forge:other:1");
    forge_pool_t *r = poller();
    forge_work_t *done;

    support_http_push(srv, ACCT, 200, acct, 0);
    done = ran(r, absent_tick("forge:p1:1"));
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_ABSENT);
    cr_assert_eq(done->poll.items[0].jobs.count, 0);
    cr_assert_eq(requests_to(ACCT), 1);
    forge_work_free(done);
    forge_pool_stop(r);
    free(acct);
}

/* ---- a submit hold that came back ---------------------------------------
 */

/* A running job seen held by its user again (a controller took over from a
 * state saved before the release) is released again; a release that
 * failed leaves the job unremembered, so the next tick asks again. */
Test(poller, a_job_held_again_is_released_again)
{
    char *states = states_answer(1, "PENDING");
    char *held = details_with_reason(FIRST, "PENDING", "JobHeldUser");
    forge_pool_t *r = poller();
    forge_work_t *done;
    support_http_request_t req;

    support_http_push(srv, STATE, 200, states, 0);
    support_http_push(srv, DETAILS, 200, held, 0);
    support_http_push(srv, DETAILS, 400, "{\"errors\": [], \"warnings\": []}",
                      0); /* refused: not retried */
    done = ran(r, tick(1, FORGE_STATE_RUNNING));
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_CHANGED);
    forge_work_free(done);
    /* the failed release: the next tick looks at the job again */
    support_http_push(srv, STATE, 200, states, 0);
    support_http_push(srv, DETAILS, 200, held, 0);
    support_http_push(srv, DETAILS, 200, "{\"errors\": [], \"warnings\": []}",
                      0);
    done = ran(r, tick(1, FORGE_STATE_RUNNING));
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_CHANGED);
    forge_work_free(done);
    req = support_http_request(srv, support_http_count(srv) - 1);
    cr_assert_str_eq(req.method, "POST");
    cr_assert_str_eq(req.target, DETAILS "1001");
    cr_assert_str_eq(req.body, "{\"hold\":false}");
    support_http_request_clear(&req);
    /* released: the same states again cost nothing */
    support_http_push(srv, STATE, 200, states, 0);
    done = ran(r, tick(1, FORGE_STATE_RUNNING));
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_UNCHANGED);
    forge_work_free(done);
    forge_pool_stop(r);
    free(states);
    free(held);
}

/* A tick of two PENDING launches: FIRST took its state a moment ago, the
 * other ten minutes ago (its release long saved). */
static forge_work_t *pending_tick(void)
{
    forge_work_t *w = tick(2, FORGE_STATE_PENDING);

    w->poll.items[0].state_since_ms = forge_timestamp_now_ms();
    w->poll.items[1].state_since_ms = forge_timestamp_now_ms() - 600000;
    return w;
}

/* A tick of pending_tick() whose jobs/state answer (states) comes after
 * delay_ms, the recent launch's job held (held): it is looked at and
 * released, the long-pending one costs nothing. */
static void held_one_released(forge_pool_t *r, const char *states,
                              const char *held, int delay_ms)
{
    forge_work_t *done;
    support_http_request_t req;
    size_t before = requests_to(DETAILS);

    support_http_push(srv, STATE, 200, states, delay_ms);
    support_http_push(srv, DETAILS, 200, held, 0);
    support_http_push(srv, DETAILS, 200, "{\"errors\": [], \"warnings\": []}",
                      0);
    done = ran(r, pending_tick());
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_CHANGED);
    cr_assert_eq(done->poll.items[1].outcome, FORGE_POLL_UNCHANGED);
    forge_work_free(done);
    req = support_http_request(srv, support_http_count(srv) - 1);
    cr_assert_str_eq(req.method, "POST");
    cr_assert_str_eq(req.target, DETAILS "1001");
    cr_assert_str_eq(req.body, "{\"hold\":false}");
    support_http_request_clear(&req);
    cr_assert_eq(requests_to(DETAILS), before + 2);
}

/* A launch already PENDING whose job a controller restored held (its
 * states in jobs/state the same: PENDING) is looked at once a tick found
 * no controller (a failed or a held call), and released; the long-pending
 * one costs nothing, nor does any one while every tick answers. */
Test(poller, a_pending_job_held_again_after_a_lost_controller_is_released)
{
    char *states = states_answer(2, "PENDING");
    char *held = details_with_reason(FIRST, "PENDING", "JobHeldUser");
    forge_pool_t *r = poller();
    forge_work_t *done;

    support_http_push(srv, STATE, 200, states, 0);
    done = ran(r, pending_tick());
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_UNCHANGED);
    forge_work_free(done);
    /* no controller answers (any failure of the call counts) */
    support_http_push(srv, STATE, 400, "{\"errors\": [], \"warnings\": []}", 0);
    done = ran(r, pending_tick());
    cr_assert_neq(done->status, FORGE_SLURM_OK);
    forge_work_free(done);
    cr_assert_eq(requests_to(DETAILS), 0);
    held_one_released(r, states, held, 0); /* the first tick that answers */
    /* looked at once: the next tick costs nothing */
    support_http_push(srv, STATE, 200, states, 0);
    done = ran(r, pending_tick());
    cr_assert_eq(done->poll.items[0].outcome, FORGE_POLL_UNCHANGED);
    forge_work_free(done);
    cr_assert_eq(requests_to(DETAILS), 2);
    /* an answer slurmrestd held (no controller had control) counts too */
    held_one_released(r, states, held, 5200);
    forge_pool_stop(r);
    free(states);
    free(held);
}
