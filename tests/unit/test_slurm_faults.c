/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_faults.c - the slurmrestd client against a misbehaving
 * slurmrestd (support_http.h: fault injection the real one cannot do): 500
 * storms, slow answers, connections closed, reset or answered with garbage,
 * garbage, truncated and oversized bodies, answers echoing the token,
 * batched state polls, per-job cancel outcomes. What is checked is what the
 * server saw: bounded retries, a submit never sent twice, the URLs, the
 * bodies. Refused, rotated and minted tokens are in test_slurm_auth.c. The
 * ASan build checks for leaks.
 */
#include "base/buf.h"
#include "log/log.h"
#include "slurm/client.h"
#include "support_http.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Opaque, not JWT-shaped: only the client's own redaction can hide it. */
#define TOKEN "forge-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define META                                                                   \
    "\"meta\": {\"plugin\": {\"type\": \"openapi/slurmctld\", \"name\": "      \
    "\"Slurm OpenAPI slurmctld\", \"data_parser\": \"data_parser/v0.0.43\"}, " \
    "\"slurm\": {\"release\": \"26.05.5\"}}"
/* slurmctld stopped, as seen on 26.05.5 */
#define ERR_500                                                                \
    "{" META ", \"errors\": [{\"description\": \"Unable to query JobId=42\", " \
    "\"error_number\": -1, \"error\": \"Unspecified error\", \"source\": "     \
    "\"_handle_job_get\"}], \"warnings\": []}"
#define UNSET "{\"set\": false, \"infinite\": false, \"number\": 0}"
#define JOB_42                                                                 \
    "{" META ", \"jobs\": [{\"job_id\": 42, \"job_state\": [\"RUNNING\"], "    \
    "\"het_job_id\": " UNSET ", \"het_job_offset\": " UNSET ", "               \
    "\"exit_code\": {\"status\": [\"PENDING\"], \"return_code\": " UNSET       \
    "}, \"state_reason\": \"None\", \"nodes\": \"h200-1\", \"name\": "         \
    "\"forge-x-1\"}], \"errors\": [], \"warnings\": []}"
#define SUBMITTED                                                              \
    "{" META ", \"job_id\": 7, \"step_id\": \"batch\", \"errors\": [], "       \
    "\"warnings\": []}"
#define JOBS  "/slurm/v0.0.43/job/"
#define STATE "/slurm/v0.0.43/jobs/state"

static support_http_t *srv;
static char dir[64], token_file[96], log_path[96];
static int log_fd = -1;

static void write_private(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/forge-faults-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(token_file, sizeof(token_file), "%s/token", dir);
    snprintf(log_path, sizeof(log_path), "%s/log", dir);
    write_private(token_file, TOKEN "\n");
    log_fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    forge_log_configure(FORGE_LOG_DEBUG, FORGE_LOG_JSON, log_fd, "w-faults");
    srv = support_http_start();
}

static void teardown(void)
{
    support_http_stop(srv);
    forge_log_reset();
    close(log_fd);
    unlink(token_file);
    unlink(log_path);
    rmdir(dir);
}

TestSuite(slurm_faults, .init = setup, .fini = teardown, .timeout = 30);

/* Small timeouts and backoffs keep the suite fast; tests change fields. */
static forge_slurm_options_t options(void)
{
    return support_http_options(srv, token_file, NULL);
}

static forge_slurm_client_t *make(const forge_slurm_options_t *o)
{
    return support_http_client(o);
}

static forge_slurm_client_t *client(void)
{
    forge_slurm_options_t o = options();
    return make(&o);
}

static json_t *submit_body(void)
{
    return json_pack("{s:s, s:{s:s, s:s}}", "script", "#!/bin/bash\ntrue\n",
                     "job", "name", "forge-x-1", "comment", "forge:x:1");
}

static forge_slurm_status_t details(forge_slurm_client_t *c,
                                    forge_slurm_result_t *res)
{
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_status_t st = forge_slurm_job_details(c, 42, &jobs, res);

    cr_assert(st != FORGE_SLURM_OK || jobs.count == 1);
    forge_slurm_job_list_clear(&jobs);
    return st;
}

static forge_slurm_status_t submit(forge_slurm_client_t *c,
                                   forge_slurm_result_t *res)
{
    forge_slurm_submit_t sub;
    json_t *body = submit_body();
    forge_slurm_status_t st = forge_slurm_submit(c, body, &sub, res);

    json_decref(body);
    return st;
}

/* The count of requests whose target starts with prefix. */
static size_t seen(const char *prefix)
{
    size_t n = 0;

    for (size_t i = 0; i < support_http_count(srv); i++) {
        support_http_request_t r = support_http_request(srv, i);
        n += !strncmp(r.target, prefix, strlen(prefix));
        support_http_request_clear(&r);
    }
    return n;
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- 5xx ----------------------------------------------------------------- */

ParameterizedTestParameters(slurm_faults, a_500_storm_stops_at_max_attempts)
{
    static int attempts[] = {1, 2, 4, 6};
    return cr_make_param_array(int, attempts, 4);
}

ParameterizedTest(int *max, slurm_faults, a_500_storm_stops_at_max_attempts)
{
    forge_slurm_options_t o = options();
    forge_slurm_client_t *c;
    forge_slurm_result_t res = {0};

    o.max_attempts = *max;
    c = make(&o);
    support_http_default(srv, 500, ERR_500);
    cr_assert_eq(details(c, &res), FORGE_SLURM_SERVER);
    cr_assert_eq(res.attempts, *max);
    cr_assert_eq(support_http_count(srv), (size_t)*max);
    cr_assert_eq(res.http_status, 500);
    cr_assert_eq(res.slurm_error, -1);
    cr_assert(strstr(res.message, "Unspecified error"), "%s", res.message);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_read_recovers_after_two_503s)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    support_http_push(srv, JOBS, 503, ERR_500, 0);
    support_http_push(srv, JOBS, 503, "<html>busy</html>", 0);
    support_http_push(srv, JOBS, 200, JOB_42, 0);
    cr_assert_eq(details(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(res.attempts, 3);
    cr_assert_eq(support_http_count(srv), 3);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_submit_is_sent_once_whatever_the_500)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};
    support_http_request_t r;

    support_http_default(srv, 500, ERR_500);
    cr_assert_eq(submit(c, &res), FORGE_SLURM_SERVER);
    cr_assert_eq(support_http_count(srv), 1);
    r = support_http_request(srv, 0);
    cr_assert_str_eq(r.method, "POST");
    cr_assert_str_eq(r.target, JOBS "submit");
    cr_assert(strstr(r.body, "\"comment\":\"forge:x:1\""), "%s", r.body);
    support_http_request_clear(&r);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_submit_refused_with_500_on_older_slurm_is_rejected)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    /* 24.11 answers Slurm's refusals (2000-2999) with HTTP 500 */
    support_http_push(srv, JOBS "submit", 500,
                      "{\"errors\": [{\"error_number\": 2000, \"error\": "
                      "\"Invalid partition name specified\"}]}",
                      0);
    cr_assert_eq(submit(c, &res), FORGE_SLURM_REJECTED);
    cr_assert_eq(res.slurm_error, 2000);
    cr_assert_eq(support_http_count(srv), 1);
    forge_slurm_client_destroy(c);
}

/* ---- slow answers -------------------------------------------------------- */

Test(slurm_faults, a_slow_read_times_out_within_bounds)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};
    double t0 = now_s();

    for (int i = 0; i < 4; i++) /* each later than the 500 ms timeout */
        support_http_push(srv, JOBS, 200, JOB_42, 1000);
    cr_assert_eq(details(c, &res), FORGE_SLURM_TIMED_OUT, "%s",
                 forge_slurm_status_name(res.status));
    cr_assert_eq(res.attempts, 4);
    cr_assert_eq(support_http_count(srv), 4);
    cr_assert_eq(res.http_status, 0);
    cr_assert_lt(now_s() - t0, 4 * 0.5 + 1.5, "not bounded by the timeouts");
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_slow_submit_is_outcome_unknown_and_sent_once)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    support_http_push(srv, JOBS "submit", 200, SUBMITTED, 1000);
    cr_assert_eq(submit(c, &res), FORGE_SLURM_TIMED_OUT);
    cr_assert_eq(res.attempts, 1);
    cr_assert_eq(support_http_count(srv), 1);
    forge_slurm_client_destroy(c);
}

/* ---- connections closed, reset, garbled ---------------------------------- */

ParameterizedTestParameters(slurm_faults, no_answer_retries_reads_never_submits)
{
    static support_http_fault_t faults[] = {SUPPORT_HTTP_EOF,
                                            SUPPORT_HTTP_RESET};
    return cr_make_param_array(support_http_fault_t, faults, 2);
}

/* Sent, then the connection ends without an answer: TIMED_OUT (client.h:
 * the outcome is unknown). The submit goes after a successful read, on a
 * connection libcurl could reuse - and would silently re-send on. */
ParameterizedTest(support_http_fault_t *fault, slurm_faults,
                  no_answer_retries_reads_never_submits)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st;

    support_http_push_fault(srv, JOBS, *fault, NULL);
    support_http_push(srv, JOBS, 200, JOB_42, 0);
    cr_assert_eq(details(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(res.attempts, 2);
    support_http_push_fault(srv, JOBS "submit", *fault, NULL);
    support_http_push(srv, JOBS "submit", 200, SUBMITTED, 0); /* unused */
    st = submit(c, &res);
    cr_assert_eq(seen(JOBS "submit"), 1, "a submit was sent twice");
    cr_assert_eq(st, FORGE_SLURM_TIMED_OUT, "%s (%s)",
                 forge_slurm_status_name(res.status), res.message);
    cr_assert_eq(res.attempts, 1);
    /* on a kept connection: libcurl wanted to send it again, refused */
    cr_assert(strstr(res.message, "not sent again"), "%s", res.message);
    forge_slurm_client_destroy(c);
}

static forge_slurm_status_t submit_tagged(forge_slurm_client_t *c,
                                          const char *comment,
                                          forge_slurm_result_t *res)
{
    forge_slurm_submit_t sub;
    json_t *body =
        json_pack("{s:s, s:{s:s, s:s}}", "script", "#!/bin/bash\ntrue\n", "job",
                  "name", "forge-x-1", "comment", comment);
    forge_slurm_status_t st = forge_slurm_submit(c, body, &sub, res);

    json_decref(body);
    return st;
}

/* The requests whose body holds text. */
static size_t bodies_with(const char *text)
{
    size_t n = 0;

    for (size_t i = 0; i < support_http_count(srv); i++) {
        support_http_request_t r = support_http_request(srv, i);
        n += strstr(r.body, text) != NULL;
        support_http_request_clear(&r);
    }
    return n;
}

/* Submits keep their connection (keep-alive), so the race of a kept
 * connection closing under a request must never send a POST twice:
 * slurmrestd answers a first submit and keeps the connection, then reads
 * the next one on that same connection whole and closes it unanswered.
 * libcurl would send that POST again on a new connection (it did, with
 * the body given as CURLOPT_POSTFIELDS); exactly one copy must arrive, and
 * the call says TIMED_OUT: maybe carried out, its tag looked up next. */
Test(slurm_faults, a_submit_on_a_kept_connection_closed_unanswered_is_sent_once)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};
    support_http_request_t first, second;
    forge_slurm_status_t st;

    support_http_push(srv, JOBS "submit", 200, SUBMITTED, 0);
    support_http_push_fault(srv, JOBS "submit", SUPPORT_HTTP_EOF, NULL);
    support_http_push(srv, JOBS "submit", 200, SUBMITTED, 0); /* a copy's */
    cr_assert_eq(submit_tagged(c, "forge:first:1", &res), FORGE_SLURM_OK, "%s",
                 res.message);
    st = submit_tagged(c, "forge:second:1", &res);
    cr_assert_eq(bodies_with("forge:second:1"), 1,
                 "the second submit reached the server %zu times",
                 bodies_with("forge:second:1"));
    cr_assert_eq(st, FORGE_SLURM_TIMED_OUT, "%s (%s)",
                 forge_slurm_status_name(res.status), res.message);
    cr_assert_eq(res.attempts, 1);
    cr_assert_eq(support_http_count(srv), 2);
    first = support_http_request(srv, 0);
    second = support_http_request(srv, 1);
    /* what makes the test bite: the second went on the kept connection */
    cr_assert_neq(first.peer_port, 0);
    cr_assert_eq(first.peer_port, second.peer_port,
                 "the second submit went on a new connection");
    cr_assert(strstr(second.body, "forge:second:1"));
    cr_assert(strstr(res.message, "not sent again"), "%s", res.message);
    support_http_request_clear(&first);
    support_http_request_clear(&second);
    forge_slurm_client_destroy(c);
}

/* Keep-alive for every call: submits and reads one after the other all
 * go on one connection while every answer is a success. */
Test(slurm_faults, submits_and_reads_share_one_kept_connection)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};
    unsigned port = 0;

    support_http_default(srv, 200, SUBMITTED);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(submit(c, &res), FORGE_SLURM_OK, "%s", res.message);
    support_http_push(srv, JOBS, 200, JOB_42, 0);
    cr_assert_eq(details(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(submit(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(support_http_count(srv), 5);
    for (size_t i = 0; i < 5; i++) {
        support_http_request_t r = support_http_request(srv, i);
        if (!i)
            port = r.peer_port;
        cr_assert_eq(r.peer_port, port, "request %zu on another connection", i);
        support_http_request_clear(&r);
    }
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_garbled_answer_to_a_submit_is_outcome_unknown)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    support_http_push_fault(srv, JOBS "submit", SUPPORT_HTTP_RAW,
                            "SLURM/9 banana\r\n\r\n");
    cr_assert_eq(submit(c, &res), FORGE_SLURM_TIMED_OUT, "%s (%s)",
                 forge_slurm_status_name(res.status), res.message);
    cr_assert_eq(support_http_count(srv), 1);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, nothing_sent_is_transport_and_retried_even_for_a_submit)
{
    forge_slurm_options_t o = options();
    forge_slurm_client_t *c;
    forge_slurm_result_t res = {0};
    char url[64];
    unsigned port;
    int fd = support_http_refusing_port(&port);

    snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
    o.base_url = url;
    c = make(&o);
    cr_assert_eq(submit(c, &res), FORGE_SLURM_TRANSPORT, "%s", res.message);
    cr_assert_eq(res.attempts, 4);
    cr_assert(forge_slurm_status_retriable(res.status));
    forge_slurm_client_destroy(c);
    close(fd);
}

/* ---- bodies -------------------------------------------------------------- */

Test(slurm_faults, garbage_truncated_and_oversized_bodies)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};
    char *big = forge_xmalloc(8192);

    support_http_default(srv, 200, "\x01\xff not json {{{");
    cr_assert_eq(details(c, &res), FORGE_SLURM_PROTOCOL);
    cr_assert(strstr(res.message, "not JSON"), "%s", res.message);
    cr_assert_eq(res.attempts, 4);
    support_http_default(srv, 200, "{\"jobs\": [{\"job_id\": 42, \"job_st");
    cr_assert_eq(details(c, &res), FORGE_SLURM_PROTOCOL);
    support_http_default(srv, 200, "{\"jobs\": \"not a list\"}");
    cr_assert_eq(details(c, &res), FORGE_SLURM_PROTOCOL);
    memset(big, ' ', 8191);
    big[0] = '{';
    big[8190] = '}';
    big[8191] = '\0';
    support_http_default(srv, 200, big); /* max_body_bytes is 4096 here */
    cr_assert_eq(details(c, &res), FORGE_SLURM_PROTOCOL);
    cr_assert(strstr(res.message, "larger"), "%s", res.message);
    free(big);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_body_cut_short_is_retried_for_a_read)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    support_http_push_fault(srv, JOBS, SUPPORT_HTTP_RAW,
                            "HTTP/1.1 200 OK\r\nContent-Type: "
                            "application/json\r\nContent-Length: 400\r\n\r\n"
                            "{\"jobs\": [{\"job_id\": 42,");
    support_http_push(srv, JOBS, 200, JOB_42, 0);
    cr_assert_eq(details(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(res.attempts, 2);
    forge_slurm_client_destroy(c);
}

/* ---- the token never logged ---------------------------------------------- */

static char *log_text(void)
{
    off_t n = lseek(log_fd, 0, SEEK_END);
    char *s = forge_xcalloc((size_t)n + 1, 1);

    cr_assert_eq(pread(log_fd, s, (size_t)n, 0), n);
    return s;
}

/* Answers that echo the token they were sent (a proxy might). */
static void push_echo(int status, const char *token)
{
    char body[512];

    snprintf(body, sizeof(body),
             "{\"errors\": [{\"error_number\": -1, \"error\": \"Unspecified "
             "error\", \"description\": \"X-SLURM-USER-TOKEN: %s\"}]}",
             token);
    support_http_push(srv, NULL, status, body, 0);
}

Test(slurm_faults, the_token_never_reaches_the_log_nor_a_message)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};
    char *log;

    push_echo(401, TOKEN); /* re-read: the same token again */
    for (int i = 0; i < 4; i++)
        push_echo(500, TOKEN);
    cr_assert_eq(details(c, &res), FORGE_SLURM_SERVER);
    cr_assert_null(strstr(res.message, "forge-token-"), "%s", res.message);
    cr_assert(strstr(res.message, FORGE_REDACTED), "%s", res.message);
    push_echo(422, TOKEN);
    cr_assert_eq(submit(c, &res), FORGE_SLURM_REJECTED);
    cr_assert_null(strstr(res.message, "forge-token-"), "%s", res.message);
    forge_log_warn("submit failed: %s", res.message); /* as the worker does */
    log = log_text();
    cr_assert(strstr(log, "slurmrestd GET"), "nothing was logged: %s", log);
    cr_assert_null(strstr(log, "forge-token-"), "%s", log);
    free(log);
    forge_slurm_client_destroy(c);
}

/* ---- batched states ------------------------------------------------------ */

#define TWO_STATES                                                             \
    "{" META ", \"jobs\": [{\"job_id\": \"1000\", \"state\": [\"RUNNING\"]}, " \
    "{\"job_id\": \"1001+1\", \"state\": [\"PENDING\"]}], \"errors\": [], "    \
    "\"warnings\": []}"

/* Request k asked for ids[*next ...] as repeated job_id= parameters. */
static void assert_chunk(size_t k, const uint32_t *ids, size_t *next, size_t n)
{
    support_http_request_t r = support_http_request(srv, k);
    const char *p = r.target + strlen(STATE);
    size_t got = 0;

    cr_assert(!strncmp(r.target, STATE "?job_id=", strlen(STATE) + 8), "%s",
              r.target);
    for (; *p == '?' || *p == '&'; got++) {
        char *end;
        cr_assert(!strncmp(p + 1, "job_id=", 7), "%s", r.target);
        cr_assert_eq(strtoul(p + 8, &end, 10), ids[(*next)++]);
        p = end;
    }
    cr_assert_eq(*p, '\0', "%s", r.target);
    cr_assert_eq(got, n, "request %zu asked for %zu ids", k, got);
    support_http_request_clear(&r);
}

Test(slurm_faults, states_go_in_calls_of_at_most_256_repeated_job_ids)
{
    static const size_t counts[] = {0, 1, 256, 257, 600};
    forge_slurm_client_t *c = client();
    uint32_t ids[600];

    for (size_t i = 0; i < 600; i++)
        ids[i] = (uint32_t)(1000 + i);
    support_http_default(srv, 200, TWO_STATES);
    for (size_t t = 0, before = 0; t < 5; t++) {
        forge_slurm_job_list_t jobs = {NULL, 0};
        forge_slurm_result_t res = {0};
        size_t n = counts[t], calls = (n + 255) / 256, next = 0;

        cr_assert_eq(forge_slurm_job_states(c, ids, n, &jobs, &res),
                     FORGE_SLURM_OK, "%s", res.message);
        cr_assert_eq(support_http_count(srv) - before, calls, "n=%zu", n);
        for (size_t k = 0; k < calls; k++)
            assert_chunk(before + k, ids, &next,
                         k + 1 < calls ? 256 : n - 256 * k);
        cr_assert_eq(jobs.count, 2 * calls); /* every answer kept */
        before += calls;
        forge_slurm_job_list_clear(&jobs);
    }
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_failed_state_chunk_fails_the_whole_poll)
{
    forge_slurm_client_t *c = client();
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    uint32_t ids[300];

    for (size_t i = 0; i < 300; i++)
        ids[i] = (uint32_t)(1000 + i);
    support_http_push(srv, STATE, 200, TWO_STATES, 0);
    support_http_default(srv, 500, ERR_500);
    cr_assert_eq(forge_slurm_job_states(c, ids, 300, &jobs, &res),
                 FORGE_SLURM_SERVER);
    cr_assert_eq(jobs.count, 0, "a partial answer would read as jobs gone");
    cr_assert_null(jobs.jobs);
    cr_assert_eq(support_http_count(srv), 1 + 4);
    forge_slurm_client_destroy(c);
}

/* ---- cancel outcomes ----------------------------------------------------- */

/* One status[] entry of DELETE job/{id} (v0.0.42+, KILL_JOBS_RESP_JOB). */
static void entry(forge_buf_t *b, size_t i, uint32_t job_id, int code,
                  const char *msg)
{
    forge_buf_printf(b,
                     "%s{\"error\": {\"string\": \"%s\", \"code\": %d, "
                     "\"message\": \"%s\"}, \"step_id\": \"%u\", \"job_id\": "
                     "{\"set\": true, \"infinite\": false, \"number\": %u}, "
                     "\"federation\": {\"sibling\": \"\"}}",
                     i ? ", " : "", msg, code, msg, job_id, job_id);
}

static const char *const NO_ALTER = "Job can not be altered now, try again "
                                    "later";
static const char *const DONE = "Job/step already completing or completed";
static const char *const INVALID = "Invalid job id specified";

/* Cancels job 42 answered with status[] entries {job id, code}... */
static forge_slurm_status_t cancel_answered(forge_slurm_client_t *c,
                                            forge_slurm_result_t *res, size_t n,
                                            const uint32_t *ids,
                                            const int *codes)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_puts(&b, "{\"status\": [");
    for (size_t i = 0; i < n; i++)
        entry(&b, i, ids[i], codes[i],
              codes[i] == 2021   ? DONE
              : codes[i] == 2017 ? INVALID
                                 : NO_ALTER);
    forge_buf_puts(&b, "], " META ", \"errors\": [], \"warnings\": []}");
    support_http_push(srv, JOBS, 200, forge_buf_str(&b), 0);
    forge_buf_clear(&b);
    return forge_slurm_cancel(c, 42, NULL, res);
}

Test(slurm_faults, cancel_surfaces_each_jobs_outcome)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};
    const uint32_t ids[] = {42, 43};
    support_http_request_t r;

    cr_assert_eq(cancel_answered(c, &res, 0, ids, NULL), FORGE_SLURM_OK);
    r = support_http_request(srv, 0);
    cr_assert_str_eq(r.method, "DELETE");
    cr_assert_str_eq(r.target, JOBS "42");
    support_http_request_clear(&r);
    cr_assert_eq(cancel_answered(c, &res, 1, ids, (int[]){2021}),
                 FORGE_SLURM_OK);
    cr_assert_eq(res.slurm_error, 2021, "the reason is kept");
    cr_assert_eq(cancel_answered(c, &res, 1, ids, (int[]){2017}),
                 FORGE_SLURM_NOT_FOUND);
    cr_assert_eq(res.slurm_error, 2017);
    cr_assert_eq(cancel_answered(c, &res, 1, ids, (int[]){2020}),
                 FORGE_SLURM_REJECTED);
    cr_assert_eq(res.slurm_error, 2020);
    cr_assert(strstr(res.message, "try again later"), "%s", res.message);
    /* a het job: the leader done, another component not cancelled */
    cr_assert_eq(cancel_answered(c, &res, 2, ids, (int[]){2021, 2020}),
                 FORGE_SLURM_REJECTED, "%s", res.message);
    cr_assert_eq(res.slurm_error, 2020);
    cr_assert(strstr(res.message, "job 43"), "%s", res.message);
    cr_assert_eq(cancel_answered(c, &res, 2, ids, (int[]){2017, 2020}),
                 FORGE_SLURM_REJECTED, "%s", res.message);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, cancel_of_an_aged_out_job_before_v0_0_42)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    support_http_push(srv, JOBS, 404,
                      "{\"errors\": [{\"error_number\": 2017, \"error\": "
                      "\"Invalid job id specified\"}]}",
                      0);
    cr_assert_eq(forge_slurm_cancel(c, 42, NULL, &res), FORGE_SLURM_NOT_FOUND);
    cr_assert_eq(support_http_count(srv), 1);
    forge_slurm_client_destroy(c);
}

/* ---- a controller takeover ------------------------------------------------
 */

/* slurmrestd answering that no controller can serve (a backup in standby:
 * ESLURM_IN_STANDBY_MODE, 2027, inside Slurm's refusals' range; slurmctld
 * unreachable: 1800), in a 4xx or a 500: a submit is not refused (the loop
 * tries it again), a read is retried until a controller answers. */
Test(slurm_faults, a_controller_away_is_retried_never_a_refusal)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    support_http_push(srv, JOBS "submit", 500,
                      "{\"errors\": [{\"error_number\": 2027, \"error\": "
                      "\"Slurm backup controller in standby mode\"}]}",
                      0);
    cr_assert_eq(submit(c, &res), FORGE_SLURM_SERVER, "%s", res.message);
    cr_assert_eq(res.slurm_error, 2027);
    support_http_push(srv, JOBS "submit", 400,
                      "{\"errors\": [{\"error_number\": 1800, \"error\": "
                      "\"Unable to contact slurm controller\"}]}",
                      0);
    cr_assert_eq(submit(c, &res), FORGE_SLURM_SERVER, "%s", res.message);
    cr_assert_eq(support_http_count(srv), 2, "each sent once");
    support_http_push(srv, JOBS, 400,
                      "{\"errors\": [{\"error_number\": 1800, \"error\": "
                      "\"Unable to contact slurm controller\"}]}",
                      0);
    support_http_push(srv, JOBS, 200, JOB_42, 0);
    cr_assert_eq(details(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(res.attempts, 2);
    forge_slurm_client_destroy(c);
}
