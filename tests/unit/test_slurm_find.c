/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_find.c - the lookup of the jobs a submit of unknown outcome
 * may have made (forge_slurm_find_submitted): the ids above the POST's
 * floor from one jobs/state, their details, and the whole GET /jobs
 * listing whenever a doubt is left; and the floor each submit carries.
 * Against the scripted fake slurmrestd (support_http.h): what is checked
 * is which calls reached it and what was found, with slurmctld's job list
 * shaped at will (the real one cannot be given 100,000 jobs here;
 * tests/e2e covers an interrupted submit end to end).
 */
#include "base/buf.h"
#include "log/log.h"
#include "slurm/client.h"
#include "support_http.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN  "forge-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBB"
#define STATE  "/slurm/v0.0.43/jobs/state"
#define LIST   "/slurm/v0.0.43/jobs"
#define JOB    "/slurm/v0.0.43/job/"
#define SUBMIT "/slurm/v0.0.43/job/submit"
#define TAG    "forge:l-1:1"

static support_http_fixture_t http;

static void setup(void)
{
    support_http_fixture_init(&http, "forge-find", TOKEN);
}

static void teardown(void)
{
    support_http_fixture_fini(&http);
}

TestSuite(slurm_find, .init = setup, .fini = teardown, .timeout = 30);

static forge_slurm_client_t *client(void)
{
    forge_slurm_options_t o =
        support_http_options(http.srv, http.token_file, NULL);

    o.max_body_bytes = 1 << 20;
    return support_http_client(&o);
}

/* jobs/state of every job: ids as jobs/state spells them ("7", "9+1"). */
static void push_states(const char *const *ids, size_t n)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_puts(&b, "{\"jobs\": [");
    for (size_t i = 0; i < n; i++)
        forge_buf_printf(&b, "%s{\"job_id\": \"%s\", \"state\": [\"PENDING\"]}",
                         i ? ", " : "", ids[i]);
    forge_buf_puts(&b, "], \"errors\": [], \"warnings\": []}");
    support_http_push(http.srv, STATE, 200, forge_buf_str(&b), 0);
    forge_buf_clear(&b);
}

static char *job_json(unsigned id, const char *comment)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_printf(&b,
                     "{\"job_id\": %u, \"job_state\": [\"PENDING\"], "
                     "\"comment\": \"%s\", \"name\": \"j%u\"}",
                     id, comment, id);
    return forge_buf_take(&b);
}

/* GET job/<id>'s answer. */
static void push_details(unsigned id, const char *comment)
{
    char prefix[64], *job = job_json(id, comment);
    forge_buf_t b = FORGE_BUF_INIT;

    snprintf(prefix, sizeof(prefix), JOB "%u", id);
    forge_buf_printf(&b, "{\"jobs\": [%s], \"errors\": [], \"warnings\": []}",
                     job);
    support_http_push(http.srv, prefix, 200, forge_buf_str(&b), 0);
    forge_buf_clear(&b);
    free(job);
}

/* The whole listing's answer: one job with the tag among others. */
static void push_listing(unsigned tagged)
{
    char *a = job_json(3, "forge:other:1"), *b = job_json(tagged, TAG);
    forge_buf_t body = FORGE_BUF_INIT;

    forge_buf_printf(
        &body, "{\"jobs\": [%s, %s], \"errors\": [], \"warnings\": []}", a, b);
    support_http_push(http.srv, LIST, 200, forge_buf_str(&body), 0);
    forge_buf_clear(&body);
    free(a);
    free(b);
}

/* The targets the fake saw, space-joined (new). */
static char *targets(void)
{
    forge_buf_t b = FORGE_BUF_INIT;

    for (size_t i = 0; i < support_http_count(http.srv); i++) {
        support_http_request_t r = support_http_request(http.srv, i);
        forge_buf_printf(&b, "%s%s", i ? " " : "", r.target);
        support_http_request_clear(&r);
    }
    return forge_buf_take(&b);
}

static forge_slurm_status_t find(forge_slurm_client_t *c, uint32_t floor,
                                 forge_slurm_job_list_t *jobs)
{
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st =
        forge_slurm_find_submitted(c, TAG, floor, jobs, &res);

    cr_assert_eq(st, FORGE_SLURM_OK, "%s", res.message);
    return st;
}

/* Above the floor (7): 8, 9 (a het job: 9+0, 9+1), 12; below it: 3, 5.
 * Only the three above are asked about, one call each, and the tagged one
 * found: no whole listing. */
Test(slurm_find, only_the_jobs_above_the_floor_are_asked_about)
{
    static const char *const ids[] = {"3", "5", "7", "8", "9+0", "9+1", "12"};
    forge_slurm_client_t *c = client();
    forge_slurm_job_list_t jobs = {NULL, 0};
    char *seen;

    push_states(ids, 7);
    push_details(8, "forge:other:1");
    push_details(9, "forge:l-1:2"); /* another attempt: not it */
    push_details(12, TAG);
    find(c, 7, &jobs);
    cr_assert_eq(jobs.count, 1);
    cr_assert_eq(jobs.jobs[0].job_id, 12);
    seen = targets();
    cr_assert_str_eq(seen, STATE " " JOB "8 " JOB "9 " JOB "12");
    free(seen);
    forge_slurm_job_list_clear(&jobs);
    forge_slurm_client_destroy(c);
}

Test(slurm_find, nothing_above_the_floor_is_one_call_and_nothing_found)
{
    static const char *const ids[] = {"3", "7"};
    forge_slurm_client_t *c = client();
    forge_slurm_job_list_t jobs = {NULL, 0};
    char *seen;

    push_states(ids, 2);
    find(c, 7, &jobs);
    cr_assert_eq(jobs.count, 0);
    seen = targets();
    cr_assert_str_eq(seen, STATE);
    free(seen);
    forge_slurm_client_destroy(c);
}

/* A job gone between jobs/state and its details (404) is not it. */
Test(slurm_find, a_job_gone_meanwhile_is_skipped)
{
    static const char *const ids[] = {"7", "8", "9"};
    forge_slurm_client_t *c = client();
    forge_slurm_job_list_t jobs = {NULL, 0};

    push_states(ids, 3);
    support_http_push(http.srv, JOB "8", 404,
                      "{\"jobs\": [], \"errors\": [{\"error_number\": 2017, "
                      "\"error\": \"Invalid job id specified\"}]}",
                      0);
    push_details(9, TAG);
    find(c, 7, &jobs);
    cr_assert_eq(jobs.count, 1);
    cr_assert_eq(jobs.jobs[0].job_id, 9);
    forge_slurm_job_list_clear(&jobs);
    forge_slurm_client_destroy(c);
}

/* Each doubt: the whole listing, which finds the tagged job. */
static void assert_whole_listing(uint32_t floor, bool states_asked)
{
    forge_slurm_client_t *c = client();
    forge_slurm_job_list_t jobs = {NULL, 0};
    char *seen;

    push_listing(40);
    find(c, floor, &jobs);
    cr_assert_eq(jobs.count, 1);
    cr_assert_eq(jobs.jobs[0].job_id, 40);
    seen = targets();
    cr_assert_str_eq(seen, states_asked ? STATE " " LIST : LIST);
    free(seen);
    forge_slurm_job_list_clear(&jobs);
    forge_slurm_client_destroy(c);
}

Test(slurm_find, no_floor_is_the_whole_listing)
{
    assert_whole_listing(0, false);
}

/* The floor's job aged out, or slurmctld lost it (its ids may have
 * started again): no bound can be trusted. */
Test(slurm_find, the_floors_job_gone_is_the_whole_listing)
{
    static const char *const ids[] = {"3", "40"};

    push_states(ids, 2);
    assert_whole_listing(7, true);
}

Test(slurm_find, too_many_jobs_above_the_floor_is_the_whole_listing)
{
    const char *ids[FORGE_SLURM_FIND_CANDIDATES + 2];
    char text[FORGE_SLURM_FIND_CANDIDATES + 2][16];

    for (size_t i = 0; i < FORGE_SLURM_FIND_CANDIDATES + 2; i++) {
        snprintf(text[i], sizeof(text[i]), "%zu", 7 + i);
        ids[i] = text[i];
    }
    push_states(ids, FORGE_SLURM_FIND_CANDIDATES + 2);
    assert_whole_listing(7, true);
}

/* Next to MaxJobId's largest value the ids may wrap to small ones. */
Test(slurm_find, a_floor_next_to_the_id_limit_is_the_whole_listing)
{
    assert_whole_listing(0x03ff0000u - 10, false);
}

/* A failed jobs/state or details call fails the lookup: nothing is
 * concluded from half an answer. */
Test(slurm_find, a_failed_call_fails_the_lookup)
{
    static const char *const ids[] = {"7", "8"};
    forge_slurm_client_t *c = client();
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};

    push_states(ids, 2);
    support_http_default(http.srv, 500, "{\"errors\": []}");
    cr_assert_eq(forge_slurm_find_submitted(c, TAG, 7, &jobs, &res),
                 FORGE_SLURM_SERVER);
    cr_assert_eq(jobs.count, 0);
    forge_slurm_client_destroy(c);
}

static forge_slurm_status_t submit(forge_slurm_client_t *c,
                                   forge_slurm_submit_t *sub)
{
    forge_slurm_result_t res = {0};
    json_t *body = json_pack("{s:s, s:{s:s}}", "script", "#!/bin/bash\n", "job",
                             "comment", TAG);
    forge_slurm_status_t st = forge_slurm_submit(c, body, sub, &res);

    json_decref(body);
    return st;
}

/* A submit's floor is the job id this client was last given: none
 * before the first answer, whatever the next POST's outcome. */
Test(slurm_find, a_submit_carries_the_last_job_id_its_client_was_given)
{
    forge_slurm_client_t *c = client();
    forge_slurm_submit_t sub;

    support_http_push(http.srv, SUBMIT, 200, "{\"job_id\": 41, \"errors\": []}",
                      0);
    support_http_push(http.srv, SUBMIT, 200, "{\"job_id\": 42, \"errors\": []}",
                      0);
    support_http_push_fault(http.srv, SUBMIT, SUPPORT_HTTP_EOF, NULL);
    cr_assert_eq(submit(c, &sub), FORGE_SLURM_OK);
    cr_assert_eq(sub.floor_job_id, 0);
    cr_assert_eq(submit(c, &sub), FORGE_SLURM_OK);
    cr_assert_eq(sub.floor_job_id, 41);
    cr_assert_eq(submit(c, &sub), FORGE_SLURM_TIMED_OUT);
    cr_assert_eq(sub.floor_job_id, 42);
    forge_slurm_client_destroy(c);
}
