/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_accounting.c - slurmdbd's view of a job (slurm/accounting.h)
 * and what it used (slurm/usage.h), from answers shaped like slurmrestd's
 * GET /slurmdb/v0.0.4x/job/{id} (the files of tests/data/slurmdb/). The
 * fixtures follow Slurm's data_parser
 * (src/plugins/data_parser/v0.0.43/parsers.c, slurm-26.05): PARSER_ARRAY(JOB)
 * for job_id, het.job_id / het.job_offset, state.current / state.reason,
 * exit_code / derived_exit_code (PROCESS_EXIT_CODE_VERBOSE: status,
 * return_code, signal.id / name), time.{submission, start, end, elapsed}
 * (TIMESTAMP: plain seconds), restart_cnt, comment.job, working_directory,
 * tres.allocated (TRES: type, name, id, count); PARSER_ARRAY(STEP) for
 * steps[].tres.requested.max (TRES_NCT: type, name, id, count, task, node; the
 * steps' tres_usage_in_max, mem in bytes). v0.0.41's JOB has the same fields
 * (slurm-25.05). The requeued het job's rows are what JOBCOND_FLAG_DUP
 * returns: a row per run, earlier runs first or not.
 */
#include "slurm/accounting.h"
#include "slurm/verdict.h"
#include "support_http.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA  FORGE_SOURCE_DIR "/tests/data/slurmdb/"
#define TOKEN "forge-token-CCCCCCCCCCCCCCCCCCCCCCCCCCCC"

static json_t *fixture(const char *name)
{
    char path[512];
    json_error_t e;
    json_t *j;

    snprintf(path, sizeof(path), DATA "%s", name);
    j = json_load_file(path, 0, &e);
    cr_assert_not_null(j, "%s: %s", path, e.text);
    return j;
}

static forge_slurm_accounting_t
parse(const char *name, uint32_t id, const char *tag, forge_slurm_status_t want)
{
    forge_slurm_accounting_t a;
    forge_slurm_result_t res = {0};
    json_t *j = fixture(name);

    cr_assert_eq(forge_slurm_accounting_parse(j, id, tag, &a, &res), want, "%s",
                 res.message);
    json_decref(j);
    return a;
}

static void assert_hours(double got, double want)
{
    cr_assert(fabs(got - want) < 1e-9, "%f != %f", got, want);
}

Test(slurm_accounting, het_requeued_keeps_each_components_last_run)
{
    forge_slurm_accounting_t a = parse("v0.0.43_het_requeued.json", 5700,
                                       "forge:l-acct:1", FORGE_SLURM_OK);
    int exit_code;
    forge_slurm_verdict_t v;

    cr_assert_eq(a.jobs.count, 2);
    cr_assert_eq(a.earlier_runs, 2);
    cr_assert_eq(a.jobs.jobs[0].job_id, 5700);
    cr_assert_eq(a.jobs.jobs[0].het_job_id, 5700);
    cr_assert_eq(a.jobs.jobs[0].het_offset, 0);
    cr_assert_eq(a.jobs.jobs[1].job_id, 5701);
    cr_assert_eq(a.jobs.jobs[1].het_job_id, 5700);
    cr_assert_eq(a.jobs.jobs[1].het_offset, 1);
    cr_assert_str_eq(a.jobs.jobs[0].state[0], "COMPLETED");
    cr_assert_str_eq(a.jobs.jobs[1].state[0], "COMPLETED");
    cr_assert_eq(a.parts[0].restart_count, 1);
    cr_assert_eq(a.jobs.jobs[0].use->start_s, 1796000800);
    cr_assert_eq(a.jobs.jobs[0].use->end_s, 1796004400);
    cr_assert_eq(a.jobs.jobs[0].use->elapsed_s, 3600);
    cr_assert_eq(a.parts[0].derived_exit_code, 0);
    cr_assert_str_eq(a.jobs.jobs[0].workdir, "/srv/forge/staging/l-acct/1");
    /* the run that ended NODE_FAIL would have kept the launch from ending */
    v = forge_slurm_accounting_verdict(&a, 0, &exit_code);
    cr_assert_eq(v.state, FORGE_STATE_SUCCEEDED);
    cr_assert_eq(exit_code, 0);
    forge_slurm_accounting_clear(&a);
}

Test(slurm_accounting, het_usage_per_component_and_total)
{
    forge_slurm_accounting_t a =
        parse("v0.0.43_het_requeued.json", 5700, NULL, FORGE_SLURM_OK);
    forge_slurm_usage_t u;

    forge_slurm_accounting_usage(&a, &u);
    cr_assert_eq(u.count, 2);
    /* component 0: gres/gpu=4 beside gres/gpu:h200=4 (not 8), 16 cpus */
    cr_assert_eq(u.parts[0].gpus, 4);
    cr_assert_eq(u.parts[0].cpus, 16);
    cr_assert_eq(u.parts[0].nodes, 1);
    cr_assert_eq(u.parts[0].mem_mb, 65536);
    assert_hours(u.parts[0].gpu_hours, 4.0);
    assert_hours(u.parts[0].cpu_hours, 16.0);
    cr_assert_eq(u.parts[0].max_rss_bytes, 2LL << 30); /* batch > extern */
    /* component 1: only typed GPUs tracked (gres/gpu:a100=8), 2 nodes */
    cr_assert_eq(u.parts[1].gpus, 8);
    cr_assert_eq(u.parts[1].nodes, 2);
    assert_hours(u.parts[1].gpu_hours, 8.0);
    cr_assert_eq(u.parts[1].max_rss_bytes, 3LL << 30);
    assert_hours(u.gpu_hours, 12.0);
    assert_hours(u.cpu_hours, 24.0);
    cr_assert_eq(u.gpus, 12);
    cr_assert_eq(u.nodes, 3);
    cr_assert_eq(u.elapsed_s, 3600);
    cr_assert_eq(u.max_rss_bytes, 3LL << 30);
    forge_slurm_usage_clear(&u);
    forge_slurm_accounting_clear(&a);
}

Test(slurm_accounting, component_id_asks_for_that_component_only)
{
    forge_slurm_accounting_t a =
        parse("v0.0.43_het_requeued.json", 5701, NULL, FORGE_SLURM_OK);

    /* id_job = 5701 OR het_job_id = 5701: the component itself */
    cr_assert_eq(a.jobs.count, 1);
    cr_assert_eq(a.jobs.jobs[0].het_offset, 1);
    forge_slurm_accounting_clear(&a);
}

Test(slurm_accounting, reused_id_other_tag_left_out)
{
    forge_slurm_accounting_t a = parse("v0.0.43_oom_reused_id.json", 5710,
                                       "forge:l-oom:2", FORGE_SLURM_OK);
    int exit_code;
    forge_slurm_verdict_t v;
    forge_slurm_usage_t u;

    cr_assert_eq(a.jobs.count, 1);
    cr_assert_eq(a.other_tags, 1);
    cr_assert_eq(a.earlier_runs, 0);
    v = forge_slurm_accounting_verdict(&a, 0, &exit_code);
    cr_assert_eq(v.state, FORGE_STATE_FAILED);
    cr_assert_str_eq(v.reason, "out_of_memory");
    cr_assert_eq(a.jobs.jobs[0].signal, 9);
    cr_assert_eq(a.parts[0].derived_signal, 9);
    forge_slurm_accounting_usage(&a, &u);
    cr_assert_eq(u.parts[0].max_rss_bytes, 8589934592LL);
    assert_hours(u.gpu_hours, 120.0 / 3600.0);
    forge_slurm_usage_clear(&u);
    forge_slurm_accounting_clear(&a);
}

Test(slurm_accounting, reused_id_without_tag_takes_the_newest)
{
    forge_slurm_accounting_t a =
        parse("v0.0.43_oom_reused_id.json", 5710, NULL, FORGE_SLURM_OK);

    cr_assert_eq(a.jobs.count, 1);
    cr_assert_eq(a.earlier_runs, 1);
    cr_assert_str_eq(a.jobs.jobs[0].comment, "forge:l-oom:2");
    forge_slurm_accounting_clear(&a);
}

Test(slurm_accounting, no_record_with_that_tag_is_not_found)
{
    forge_slurm_accounting_t a = parse("v0.0.43_oom_reused_id.json", 5710,
                                       "forge:l-oom:3", FORGE_SLURM_NOT_FOUND);

    cr_assert_eq(a.jobs.count, 0);
    cr_assert_eq(a.other_tags, 2);
    forge_slurm_accounting_clear(&a);
}

Test(slurm_accounting, cancelled_while_pending_used_nothing)
{
    forge_slurm_accounting_t a =
        parse("v0.0.43_cancelled_pending.json", 5720, NULL, FORGE_SLURM_OK);
    int exit_code;
    forge_slurm_verdict_t v = forge_slurm_accounting_verdict(&a, 1, &exit_code);
    forge_slurm_usage_t u;
    json_t *j;

    cr_assert_eq(v.state, FORGE_STATE_CANCELLED);
    cr_assert_str_eq(v.reason, "requested");
    cr_assert_eq(a.jobs.jobs[0].use->start_s, -1);
    cr_assert_eq(a.jobs.jobs[0].use->elapsed_s, 0);
    forge_slurm_accounting_usage(&a, &u);
    cr_assert_eq(u.parts[0].cpus, -1);
    cr_assert_eq(u.parts[0].gpus, 0);
    cr_assert_eq(u.max_rss_bytes, -1);
    assert_hours(u.gpu_hours, 0.0);
    j = forge_slurm_usage_json(&u);
    cr_assert(json_is_null(json_object_get(j, "cpus")));
    cr_assert(json_is_null(json_object_get(j, "max_rss_bytes")));
    cr_assert_eq(json_integer_value(json_object_get(j, "gpus")), 0);
    json_decref(j);
    forge_slurm_usage_clear(&u);
    forge_slurm_accounting_clear(&a);
}

Test(slurm_accounting, v0_0_41_timeout)
{
    forge_slurm_accounting_t a =
        parse("v0.0.41_timeout.json", 5730, "forge:l-to:1:2", FORGE_SLURM_OK);
    int exit_code;
    forge_slurm_verdict_t v = forge_slurm_accounting_verdict(&a, 0, &exit_code);
    forge_slurm_usage_t u;
    json_t *j;

    cr_assert_eq(v.state, FORGE_STATE_TIMED_OUT);
    cr_assert_str_eq(v.reason, "timeout");
    forge_slurm_accounting_usage(&a, &u);
    assert_hours(u.gpu_hours, 16.0 * 7200 / 3600);
    assert_hours(u.cpu_hours, 32.0 * 2);
    cr_assert_eq(u.nodes, 2);
    j = forge_slurm_usage_json(&u);
    assert_hours(json_real_value(json_object_get(j, "gpu_hours")), 32.0);
    cr_assert_eq(json_array_size(json_object_get(j, "components")), 1);
    cr_assert_eq(
        json_integer_value(json_object_get(
            json_array_get(json_object_get(j, "components"), 0), "mem_mb")),
        131072);
    json_decref(j);
    forge_slurm_usage_clear(&u);
    forge_slurm_accounting_clear(&a);
}

Test(slurm_accounting, answer_without_jobs_is_protocol)
{
    forge_slurm_accounting_t a;
    forge_slurm_result_t res = {0};
    json_t *j = json_pack("{s:[]}", "errors");

    cr_assert_eq(forge_slurm_accounting_parse(j, 1, NULL, &a, &res),
                 FORGE_SLURM_PROTOCOL);
    json_decref(j);
}

/* ---- TRES text (jobcomp's tres_alloc) ---------------------------------- */

Test(slurm_usage, tres_text_of_jobcomp)
{
    forge_slurm_tres_list_t l = {NULL, 0};
    forge_error_t err = {0};
    forge_slurm_usage_part_t p;

    /* assoc_mgr_make_tres_str_from_array, TRES_STR_CONVERT_UNITS */
    cr_assert_eq(forge_slurm_tres_parse_text(
                     "cpu=16,mem=64G,node=2,billing=16,gres/gpu=8,"
                     "gres/gpu:h200=8",
                     &l, &err),
                 FORGE_OK, "%s", err.message);
    cr_assert_eq(l.count, 6);
    cr_assert_str_eq(l.items[1].type, "mem");
    cr_assert_eq(l.items[1].count, 65536);
    cr_assert_str_eq(l.items[5].name, "gpu:h200");
    p = forge_slurm_usage_part(9, 0, &l, 1800, -1);
    cr_assert_eq(p.gpus, 8);
    assert_hours(p.gpu_hours, 4.0);
    assert_hours(p.cpu_hours, 8.0);
    cr_assert_eq(p.mem_mb, 65536);
    forge_slurm_tres_list_clear(&l);
}

Test(slurm_usage, tres_text_units_and_refusals)
{
    static const struct {
        const char *text;
        forge_rc_t rc;
        long long mem_mb;
    } rows[] = {
        {"mem=4000M", FORGE_OK, 4000},
        {"mem=1.50G", FORGE_OK, 1536},
        {"mem=512K", FORGE_OK, 1},
        {"mem=2T", FORGE_OK, 2 * 1024 * 1024},
        {"", FORGE_OK, -1},
        {"mem", FORGE_EINVALID_JSON, -1},
        {"=4", FORGE_EINVALID_JSON, -1},
        {"mem=4X", FORGE_EINVALID_JSON, -1},
        {"mem=-1", FORGE_EINVALID_JSON, -1},
        {"cpu=2,,node=1", FORGE_EINVALID_JSON, -1},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        forge_slurm_tres_list_t l = {NULL, 0};
        forge_error_t err = {0};
        forge_rc_t rc = forge_slurm_tres_parse_text(rows[i].text, &l, &err);
        forge_slurm_usage_part_t p = forge_slurm_usage_part(1, 0, &l, 10, -1);

        cr_assert_eq(rc, rows[i].rc, "'%s'", rows[i].text);
        if (rc == FORGE_OK)
            cr_assert_eq(p.mem_mb, rows[i].mem_mb, "'%s'", rows[i].text);
        forge_slurm_tres_list_clear(&l);
    }
}

Test(slurm_usage, empty_usage_json)
{
    forge_slurm_usage_t u = {0};
    json_t *j = forge_slurm_usage_json(&u);

    cr_assert(json_is_null(json_object_get(j, "elapsed_s")));
    cr_assert_eq(json_array_size(json_object_get(j, "components")), 0);
    json_decref(j);
}

/* ---- through the fake slurmrestd --------------------------------------- */

static support_http_fixture_t http;

static void setup(void)
{
    support_http_fixture_init(&http, "forge-acct", TOKEN);
}

static void teardown(void)
{
    support_http_fixture_fini(&http);
}

static forge_slurm_client_t *client(forge_api_version_t v)
{
    forge_slurm_options_t o =
        support_http_options(http.srv, http.token_file, NULL);

    o.version = v;
    o.max_body_bytes = 1u << 20;
    return support_http_client(&o);
}

static char *fixture_text(const char *name)
{
    json_t *j = fixture(name);
    char *s = json_dumps(j, JSON_COMPACT);

    json_decref(j);
    return s;
}

Test(slurm_accounting_http, get_asks_slurmdb_and_folds, .init = setup,
     .fini = teardown, .timeout = 30)
{
    forge_slurm_client_t *c = client(FORGE_API_V0_0_43);
    char *body = fixture_text("v0.0.43_het_requeued.json");
    forge_slurm_accounting_t a;
    forge_slurm_result_t res = {0};
    support_http_request_t r;

    support_http_push(http.srv, "/slurmdb/v0.0.43/job/5700", 200, body, 0);
    cr_assert_eq(
        forge_slurm_accounting_get(c, 5700, "forge:l-acct:1", &a, &res),
        FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(a.jobs.count, 2);
    r = support_http_request(http.srv, 0);
    cr_assert_str_eq(r.method, "GET");
    cr_assert_str_eq(r.target, "/slurmdb/v0.0.43/job/5700");
    support_http_request_clear(&r);
    forge_slurm_accounting_clear(&a);
    free(body);
    forge_slurm_client_destroy(c);
}

Test(slurm_accounting_http, job_accounting_list_is_folded_too, .init = setup,
     .fini = teardown, .timeout = 30)
{
    forge_slurm_client_t *c = client(FORGE_API_V0_0_41);
    char *body = fixture_text("v0.0.43_het_requeued.json");
    forge_slurm_job_list_t l = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_slurm_move_t m;
    forge_slurm_usage_t u;

    support_http_push(http.srv, "/slurmdb/v0.0.41/job/5700", 200, body, 0);
    cr_assert_eq(forge_slurm_job_accounting(c, 5700, &l, &res), FORGE_SLURM_OK,
                 "%s", res.message);
    /* what the poller and submit --wait map: the last run, both parts */
    cr_assert_eq(l.count, 2);
    m = forge_slurm_move(&l, FORGE_STATE_RUNNING, 0);
    cr_assert_eq(m.to, FORGE_STATE_SUCCEEDED);
    cr_assert(m.moves);
    /* each job carries its use: the event's usage, max RSS included */
    forge_slurm_usage_of_jobs(&l, &u);
    assert_hours(u.gpu_hours, 12.0);
    cr_assert_eq(u.max_rss_bytes, 3LL << 30);
    forge_slurm_usage_clear(&u);
    forge_slurm_job_list_clear(&l);
    free(body);
    forge_slurm_client_destroy(c);
}

Test(slurm_accounting_http, no_slurmdb_served_is_not_found, .init = setup,
     .fini = teardown, .timeout = 30)
{
    forge_slurm_client_t *c = client(FORGE_API_V0_0_43);
    forge_slurm_accounting_t a;
    forge_slurm_result_t res = {0};

    /* slurmrestd without openapi/slurmdbd: a plain-text 404 */
    support_http_push(http.srv, "/slurmdb/", 404, "Not Found", 0);
    cr_assert_eq(forge_slurm_accounting_get(c, 77, NULL, &a, &res),
                 FORGE_SLURM_NOT_FOUND);
    /* accounting without the job: 200 with no jobs */
    support_http_push(http.srv, "/slurmdb/", 200, "{\"jobs\":[],\"errors\":[]}",
                      0);
    cr_assert_eq(forge_slurm_accounting_get(c, 77, NULL, &a, &res),
                 FORGE_SLURM_NOT_FOUND);
    forge_slurm_client_destroy(c);
}

Test(slurm_accounting_http, server_error_is_no_verdict, .init = setup,
     .fini = teardown, .timeout = 30)
{
    forge_slurm_client_t *c = client(FORGE_API_V0_0_43);
    forge_slurm_accounting_t a;
    forge_slurm_result_t res = {0};

    support_http_default(http.srv, 500,
                         "{\"errors\":[{\"error_number\":-1,"
                         "\"error\":\"Unspecified error\"}]}");
    cr_assert_eq(forge_slurm_accounting_get(c, 77, NULL, &a, &res),
                 FORGE_SLURM_SERVER);
    cr_assert_eq(a.jobs.count, 0);
    forge_slurm_client_destroy(c);
}

/* ---- slurmctld's details: what a job used before it ages out ----------- */

/* slurmctld's answers (tests/data/slurmctld/): v0.0.43's JOB_INFO, with
 * tres_alloc_str, start_time and end_time ({set, number}; a job that never
 * started says 0). */
static char *details_text(const char *name)
{
    char path[512];
    json_error_t e;
    json_t *j;
    char *s;

    snprintf(path, sizeof(path), FORGE_SOURCE_DIR "/tests/data/slurmctld/%s",
             name);
    cr_assert_not_null(j = json_load_file(path, 0, &e), "%s: %s", path, e.text);
    s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

Test(slurm_accounting_http, details_carry_what_the_job_used, .init = setup,
     .fini = teardown, .timeout = 30)
{
    forge_slurm_client_t *c = client(FORGE_API_V0_0_43);
    forge_slurm_job_list_t l = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_slurm_usage_t u;
    char *body = details_text("v0.0.43_het_details.json");
    json_t *j;

    support_http_push(http.srv, "/slurm/v0.0.43/job/5800", 200, body, 0);
    cr_assert_eq(forge_slurm_job_details(c, 5800, &l, &res), FORGE_SLURM_OK,
                 "%s", res.message);
    cr_assert_eq(l.count, 2);
    cr_assert_not_null(l.jobs[0].use);
    cr_assert_eq(l.jobs[0].use->elapsed_s, 3600);
    cr_assert_eq(l.jobs[0].use->max_rss_bytes, -1, "slurmctld has no RSS");
    forge_slurm_usage_of_jobs(&l, &u);
    cr_assert_eq(u.count, 2);
    cr_assert_eq(u.parts[0].gpus, 4);
    cr_assert_eq(u.parts[0].mem_mb, 64000);
    assert_hours(u.parts[0].gpu_hours, 4.0);
    cr_assert_eq(u.parts[1].gpus, 8); /* typed only */
    cr_assert_eq(u.parts[1].elapsed_s, 1800);
    assert_hours(u.parts[1].gpu_hours, 4.0);
    assert_hours(u.gpu_hours, 8.0);
    assert_hours(u.cpu_hours, 16.0 + 4.0);
    cr_assert_eq(u.elapsed_s, 3600);
    cr_assert_eq(u.nodes, 3);
    j = forge_slurm_usage_json(&u);
    cr_assert(json_is_null(json_object_get(j, "max_rss_bytes")));
    assert_hours(json_real_value(json_object_get(j, "gpu_hours")), 8.0);
    json_decref(j);
    forge_slurm_usage_clear(&u);
    forge_slurm_job_list_clear(&l);
    free(body);
    forge_slurm_client_destroy(c);
}

Test(slurm_accounting_http, a_job_that_never_started_used_nothing,
     .init = setup, .fini = teardown, .timeout = 30)
{
    forge_slurm_client_t *c = client(FORGE_API_V0_0_43);
    forge_slurm_job_list_t l = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_slurm_usage_t u;
    char *body = details_text("v0.0.43_cancelled_pending_details.json");

    support_http_push(http.srv, "/slurm/v0.0.43/job/5810", 200, body, 0);
    cr_assert_eq(forge_slurm_job_details(c, 5810, &l, &res), FORGE_SLURM_OK,
                 "%s", res.message);
    forge_slurm_usage_of_jobs(&l, &u);
    cr_assert_eq(u.elapsed_s, -1);
    cr_assert_eq(u.cpus, -1);
    cr_assert_eq(u.gpus, 0);
    assert_hours(u.gpu_hours, 0.0);
    forge_slurm_usage_clear(&u);
    forge_slurm_job_list_clear(&l);
    free(body);
    forge_slurm_client_destroy(c);
}

/* slurmdbd keeps a job's comment only with AccountingStoreFlags=job_comment:
 * a record without one is kept under a tag (the loop checks its name), one
 * with another comment is not. */
Test(slurm_accounting, a_record_without_comment_is_kept_under_a_tag)
{
    forge_slurm_accounting_t a;
    forge_slurm_result_t res = {0};
    json_t *j =
        json_pack("{s:[{s:i, s:s, s:{s:[s]}}, {s:i, s:s, s:{s:[s]}, s:{s:s}}]}",
                  "jobs", "job_id", 9, "name", "forge-x-1", "state", "current",
                  "COMPLETED", "job_id", 9, "name", "forge-y-1", "state",
                  "current", "FAILED", "comment", "job", "forge:y:1");

    cr_assert_eq(forge_slurm_accounting_parse(j, 9, "forge:x:1", &a, &res),
                 FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(a.jobs.count, 1);
    cr_assert_eq(a.other_tags, 1);
    cr_assert_null(a.jobs.jobs[0].comment);
    cr_assert_str_eq(a.jobs.jobs[0].name, "forge-x-1");
    forge_slurm_accounting_clear(&a);
    json_decref(j);
}

/* ---- a started job of a tag: an interrupted submit's clean ------------- */

/* One jobs[] record shaped as slurmdb's (het.job_id 0 when not het; a
 * comment object only when tag; time.start 0 for a job that never ran). */
static json_t *record(int id, int het, int offset, const char *tag, int start)
{
    json_t *o =
        json_pack("{s:i, s:s, s:{s:i, s:{s:b, s:i}}, s:{s:[s]}, s:{s:i, s:i}}",
                  "job_id", id, "name", "forge-L1-1", "het", "job_id", het,
                  "job_offset", "set", het != 0, "number", offset, "state",
                  "current", start ? "COMPLETED" : "CANCELLED", "time", "start",
                  start, "eligible", start ? start : 1796000000);

    if (tag)
        json_object_set_new(o, "comment", json_pack("{s:s}", "job", tag));
    return o;
}

/* The answer to a clean's lookup, made of records (taken), queued. */
static void push_records(json_t *records)
{
    json_t *answer = json_pack("{s:o, s:[]}", "jobs", records, "errors");
    char *body = json_dumps(answer, JSON_COMPACT);

    support_http_push(http.srv, "/slurmdb/v0.0.43/jobs", 200, body, 0);
    free(body);
    json_decref(answer);
}

static forge_slurm_status_t started(const char *name, bool untagged_ok,
                                    forge_slurm_accounted_job_t *out)
{
    forge_slurm_client_t *c = client(FORGE_API_V0_0_43);
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st = forge_slurm_accounting_started(
        c, name, "forge:L1:1", untagged_ok, 1796000000, out, &res);

    forge_slurm_client_destroy(c);
    return st;
}

/* Asked by name from the launch's acceptance on; of the records, one that
 * never ran (cancelled on its hold) and one of another try's tag are not
 * the launch's; the lowest started leader is (the first POST's). */
Test(slurm_accounting_http, started_finds_the_tags_first_started_job,
     .init = setup, .fini = teardown, .timeout = 30)
{
    forge_slurm_accounted_job_t job;
    support_http_request_t r;

    push_records(json_pack("[o, o, o, o]", record(30, 0, 0, "forge:L1:1", 0),
                           record(31, 0, 0, "forge:L1:1:2", 1796000100),
                           record(34, 0, 0, "forge:L1:1", 1796000300),
                           record(32, 0, 0, "forge:L1:1", 1796000200)));
    cr_assert_eq(started("forge-L1-1", true, &job), FORGE_SLURM_OK);
    cr_assert_eq(job.leader, 32);
    cr_assert_eq(job.component_count, 1);
    cr_assert_eq(job.component_ids[0], 32);
    r = support_http_request(http.srv, 0);
    cr_assert_str_eq(r.target, "/slurmdb/v0.0.43/jobs?job_name=forge-L1-1"
                               "&start_time=1796000000");
    support_http_request_clear(&r);
    free(job.component_ids);
}

/* A het job: every component, each once though a requeue gave it two
 * records, in het_offset order. */
Test(slurm_accounting_http, started_het_job_has_every_component, .init = setup,
     .fini = teardown, .timeout = 30)
{
    forge_slurm_accounted_job_t job;

    push_records(json_pack("[o, o, o]", record(41, 40, 1, "forge:L1:1", 0),
                           record(40, 40, 0, "forge:L1:1", 1796000100),
                           record(40, 40, 0, "forge:L1:1", 1796000500)));
    cr_assert_eq(started("forge-L1-1", true, &job), FORGE_SLURM_OK);
    cr_assert_eq(job.leader, 40);
    cr_assert_eq(job.component_count, 2);
    cr_assert_eq(job.component_ids[0], 40);
    cr_assert_eq(job.component_ids[1], 41);
    free(job.component_ids);
}

/* Without job_comment stored, a record has no comment: the name names the
 * first try only. */
Test(slurm_accounting_http, an_untagged_record_counts_for_the_first_try_only,
     .init = setup, .fini = teardown, .timeout = 30)
{
    forge_slurm_accounted_job_t job;

    push_records(json_pack("[o]", record(50, 0, 0, NULL, 1796000100)));
    cr_assert_eq(started("forge-L1-1", false, &job), FORGE_SLURM_NOT_FOUND);
    push_records(json_pack("[o]", record(50, 0, 0, NULL, 1796000100)));
    cr_assert_eq(started("forge-L1-1", true, &job), FORGE_SLURM_OK);
    cr_assert_eq(job.leader, 50);
    free(job.component_ids);
}

/* None started, no accounting (404) or slurmdbd's "found nothing": none;
 * a failure is a failure, never "none" (a fresh submit could run the
 * command twice). */
Test(slurm_accounting_http, started_none_and_failures, .init = setup,
     .fini = teardown, .timeout = 30)
{
    forge_slurm_accounted_job_t job;

    push_records(json_pack("[o]", record(30, 0, 0, "forge:L1:1", 0)));
    cr_assert_eq(started("forge-L1-1", true, &job), FORGE_SLURM_NOT_FOUND);
    support_http_push(http.srv, "/slurmdb/", 404, "Not Found", 0);
    cr_assert_eq(started("forge-L1-1", true, &job), FORGE_SLURM_NOT_FOUND);
    support_http_push(http.srv, "/slurmdb/", 200,
                      "{\"jobs\":[],\"errors\":[],\"warnings\":[{"
                      "\"description\":\"slurmdb_jobs_get() found nothing\"}]}",
                      0);
    cr_assert_eq(started("forge-L1-1", true, &job), FORGE_SLURM_NOT_FOUND);
    support_http_default(http.srv, 500,
                         "{\"errors\":[{\"error_number\":-1,"
                         "\"error\":\"Unable to connect to database\"}]}");
    cr_assert_eq(started("forge-L1-1", true, &job), FORGE_SLURM_SERVER);
    cr_assert_eq(job.leader, 0);
}
