/*
 * test_slurm_faults.c - the slurmrestd client against a misbehaving server
 * (support_http.h: fault injection the real slurmrestd cannot do): 500 storms,
 * slow answers, connections closed without an answer, garbage and oversized
 * bodies, 401 with a rotated token file, minted tokens renewed, batched
 * states, per-job cancel outcomes. No crash, bounded retries, the token
 * never in a log line; the ASan build checks for leaks.
 */
#include "support_http.h"
#include "log.h"
#include "slurm/client.h"
#include "util.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TOKEN_A                                                                \
    "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJmb3JnZSJ9.tokenAAAAAAAAAAAAAAAA"
#define TOKEN_B                                                                \
    "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJmb3JnZSJ9.tokenBBBBBBBBBBBBBBBB"
#define ERR_500                                                                \
    "{\"errors\": [{\"error\": \"Unable to contact slurm controller\", "       \
    "\"error_number\": 1007}]}"
#define JOB_42                                                                 \
    "{\"jobs\": [{\"job_id\": 42, \"job_state\": [\"RUNNING\"], "              \
    "\"het_job_id\": {\"set\": false, \"infinite\": false, \"number\": 0}, "   \
    "\"exit_code\": {\"status\": [\"PENDING\"], \"return_code\": {\"set\": "   \
    "false, \"infinite\": false, \"number\": 0}}}], \"errors\": []}"

static support_http_t *srv;
static char dir[64], token_file[96], key_file[96], log_path[96];
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
    snprintf(key_file, sizeof(key_file), "%s/key", dir);
    snprintf(log_path, sizeof(log_path), "%s/log", dir);
    write_private(token_file, TOKEN_A "\n");
    write_private(key_file, "0123456789abcdef0123456789abcdef");
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
    unlink(key_file);
    unlink(log_path);
    rmdir(dir);
}

TestSuite(slurm_faults, .init = setup, .fini = teardown, .timeout = 30);

static forge_slurm_client_t *client(const char *jwt_file, const char *key,
                                    int lifetime_s)
{
    forge_slurm_options_t o = {
        .base_url = support_http_url(srv),
        .version = FORGE_API_V0_0_43,
        .user = "forge",
        .jwt_file = jwt_file,
        .jwt_key_file = key,
        .tls_verify = true,
        .connect_timeout_ms = 1000,
        .request_timeout_ms = 1000,
        .max_attempts = 4,
        .backoff_base_ms = 10,
        .backoff_max_ms = 40,
        .token_lifetime_s = lifetime_s,
        .max_body_bytes = 4096,
    };
    forge_slurm_client_t *c = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_slurm_client_new(&o, &c, &err), FORGE_OK, "%s",
                 err.message);
    return c;
}

static char *log_text(void)
{
    off_t n = lseek(log_fd, 0, SEEK_END);
    char *s = forge_xcalloc((size_t)n + 1, 1);

    cr_assert_eq(pread(log_fd, s, (size_t)n, 0), n);
    return s;
}

static json_t *submit_body(void)
{
    return json_pack("{s:s, s:{s:s}}", "script", "#!/bin/bash\ntrue\n", "job",
                     "name", "x");
}

/* ---- 5xx, slow, closed, garbage ------------------------------------------ */

Test(slurm_faults, a_500_storm_is_retried_a_bounded_number_of_times)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};

    support_http_default(srv, 500, ERR_500);
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res),
                 FORGE_SLURM_SERVER);
    cr_assert_eq(res.attempts, 4);
    cr_assert_eq(support_http_count(srv), 4);
    cr_assert(strstr(res.message, "Unable to contact slurm controller"), "%s",
              res.message);
    cr_assert_eq(res.http_status, 500);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_read_recovers_after_two_503s)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};

    support_http_push(srv, NULL, 503, ERR_500, 0);
    support_http_push(srv, NULL, 503, "<html>busy</html>", 0);
    support_http_push(srv, NULL, 200, JOB_42, 0);
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res), FORGE_SLURM_OK,
                 "%s", res.message);
    cr_assert_eq(res.attempts, 3);
    cr_assert_eq(jobs.count, 1);
    cr_assert_eq(jobs.jobs[0].job_id, 42);
    forge_slurm_job_list_free(&jobs);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_submit_answered_500_is_never_repeated)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_result_t res = {0};
    forge_slurm_submit_t sub;
    json_t *body = submit_body();

    support_http_default(srv, 500, ERR_500);
    cr_assert_neq(forge_slurm_submit(c, body, &sub, &res), FORGE_SLURM_OK);
    cr_assert_eq(support_http_count(srv), 1, "a submit was sent %zu times",
                 support_http_count(srv));
    json_decref(body);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_slow_read_times_out_and_is_retried_within_bounds)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    struct timespec t0, t1;

    for (int i = 0; i < 4; i++)
        support_http_push(srv, NULL, 200, JOB_42, 1500); /* > request timeout */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res),
                 FORGE_SLURM_TIMED_OUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_eq(res.attempts, 4);
    /* 4 x 1 s timeouts plus small backoffs: bounded, well under 10 s */
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 10);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_slow_submit_is_outcome_unknown_and_not_repeated)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_result_t res = {0};
    forge_slurm_submit_t sub;
    json_t *body = submit_body();

    support_http_push(srv, NULL, 200, "{\"job_id\": 7, \"errors\": []}", 1500);
    cr_assert_eq(forge_slurm_submit(c, body, &sub, &res),
                 FORGE_SLURM_TIMED_OUT);
    cr_assert_eq(support_http_count(srv), 1);
    json_decref(body);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, a_connection_closed_without_answer)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_slurm_submit_t sub;
    json_t *body = submit_body();

    /* a read: retried, then answered */
    support_http_push_fault(srv, NULL, SUPPORT_HTTP_EOF, NULL);
    support_http_push(srv, NULL, 200, JOB_42, 0);
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res), FORGE_SLURM_OK,
                 "%s", res.message);
    cr_assert_eq(res.attempts, 2);
    forge_slurm_job_list_free(&jobs);
    /* a submit: sent, no answer: outcome unknown, never repeated */
    support_http_push_fault(srv, NULL, SUPPORT_HTTP_EOF, NULL);
    cr_assert_eq(forge_slurm_submit(c, body, &sub, &res), FORGE_SLURM_TIMED_OUT,
                 "%s (%s)", forge_slurm_status_name(res.status), res.message);
    cr_assert_eq(support_http_count(srv), 3);
    json_decref(body);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, garbage_truncated_and_oversized_bodies)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    char *big = forge_xmalloc(8192);

    support_http_default(srv, 200, "\x01\xff not json {{{");
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res),
                 FORGE_SLURM_PROTOCOL);
    cr_assert_eq(res.attempts, 4);
    support_http_default(srv, 200, "{\"jobs\": [{\"job_id\": 42, \"job_st");
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res),
                 FORGE_SLURM_PROTOCOL);
    memset(big, ' ', 8191);
    big[0] = '{';
    big[8190] = '}';
    big[8191] = '\0';
    support_http_default(srv, 200, big); /* max_body_bytes is 4096 here */
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res),
                 FORGE_SLURM_PROTOCOL);
    cr_assert(strstr(res.message, "larger"), "%s", res.message);
    support_http_default(srv, 200, "{\"jobs\": \"not a list\"}");
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res),
                 FORGE_SLURM_PROTOCOL);
    free(big);
    forge_slurm_client_destroy(c);
}

/* ---- auth -----------------------------------------------------------------
 */

/* Rewrites the token file in place, same size and times, so only a refusal
 * can make the client read it again. */
static void rotate_unseen(const char *text)
{
    struct stat st;
    struct timespec times[2];

    cr_assert_eq(stat(token_file, &st), 0);
    write_private(token_file, text);
    times[0] = st.st_atim;
    times[1] = st.st_mtim;
    cr_assert_eq(utimensat(AT_FDCWD, token_file, times, 0), 0);
}

Test(slurm_faults, a_401_rereads_the_rotated_token_file_once)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    support_http_request_t first, second;
    char *log;

    rotate_unseen(TOKEN_B "\n");
    support_http_accept_token(srv, TOKEN_B);
    support_http_default(srv, 200, JOB_42);
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res), FORGE_SLURM_OK,
                 "%s", res.message);
    cr_assert_eq(support_http_count(srv), 2);
    first = support_http_request(srv, 0);
    second = support_http_request(srv, 1);
    cr_assert_str_eq(first.token, TOKEN_A);
    cr_assert_str_eq(second.token, TOKEN_B);
    cr_assert_str_eq(second.user, "forge");
    support_http_request_clear(&first);
    support_http_request_clear(&second);
    forge_slurm_job_list_free(&jobs);

    /* refused again with a file that did not change: AUTH, no loop */
    support_http_accept_token(srv, "some-other-token");
    cr_assert_eq(forge_slurm_job_details(c, 42, &jobs, &res), FORGE_SLURM_AUTH);
    cr_assert_eq(res.attempts, 2);
    log = log_text();
    cr_assert_null(strstr(log, "tokenAAAA"), "a token reached the log");
    cr_assert_null(strstr(log, "tokenBBBB"), "a token reached the log");
    free(log);
    forge_slurm_client_destroy(c);
}

static long claim(const char *token, const char *name)
{
    const char *p = strchr(token, '.'), *q = p ? strchr(p + 1, '.') : NULL;
    char b64[512], *json;
    unsigned char raw[512];
    size_t n;
    long value = -1;
    json_t *o;

    cr_assert(p && q && (size_t)(q - p - 1) < sizeof(b64) - 4);
    n = (size_t)(q - p - 1);
    memcpy(b64, p + 1, n);
    for (size_t i = 0; i < n; i++) /* base64url -> base64 */
        b64[i] = b64[i] == '-' ? '+' : b64[i] == '_' ? '/' : b64[i];
    while (n % 4)
        b64[n++] = '=';
    b64[n] = '\0';
    n = (size_t)EVP_DecodeBlock(raw, (unsigned char *)b64, (int)n);
    json = forge_xstrndup((char *)raw, n);
    o = json_loads(json, JSON_DISABLE_EOF_CHECK, NULL);
    cr_assert_not_null(o, "not a JWT payload: %s", json);
    if (!strcmp(name, "sun"))
        value = !strcmp(json_string_value(json_object_get(o, "sun")), "forge");
    else
        value = (long)json_integer_value(json_object_get(o, name));
    json_decref(o);
    free(json);
    return value;
}

Test(slurm_faults, a_minted_token_is_renewed_before_it_expires)
{
    forge_slurm_client_t *c = client(NULL, key_file, 2);
    forge_slurm_ping_t ping;
    forge_slurm_result_t res = {0};
    support_http_request_t first, second;
    long exp1, exp2;

    support_http_default(srv, 200, "{\"pings\": [], \"errors\": []}");
    (void)forge_slurm_ping(c, &ping, &res);
    sleep(3); /* the first token has expired by now */
    (void)forge_slurm_ping(c, &ping, &res);
    first = support_http_request(srv, 0);
    second = support_http_request(srv, support_http_count(srv) - 1);
    exp1 = claim(first.token, "exp");
    exp2 = claim(second.token, "exp");
    cr_assert_eq(claim(first.token, "sun"), 1);
    cr_assert_eq(exp1 - claim(first.token, "iat"), 2);
    cr_assert_gt(exp2, exp1, "the second call carried the expired token");
    cr_assert_gt(exp2, (long)time(NULL) - 1);
    support_http_request_clear(&first);
    support_http_request_clear(&second);
    forge_slurm_client_destroy(c);
}

Test(slurm_faults, an_expired_minted_token_refused_is_reminted_once)
{
    forge_slurm_client_t *c = client(NULL, key_file, 2);
    forge_slurm_ping_t ping;
    forge_slurm_result_t res = {0};

    support_http_push(srv, NULL, 401,
                      "{\"errors\": [{\"error\": \"expired\"}]}", 0);
    support_http_default(srv, 200, "{\"pings\": [], \"errors\": []}");
    cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_OK, "%s",
                 res.message);
    cr_assert_eq(res.attempts, 2);
    forge_slurm_client_destroy(c);
}

/* ---- batched states, cancel outcomes --------------------------------------
 */

Test(slurm_faults, states_of_600_jobs_go_in_three_calls_of_repeated_job_ids)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    uint32_t ids[600];
    size_t per_call[3] = {256, 256, 88};

    for (size_t i = 0; i < 600; i++)
        ids[i] = (uint32_t)(1000 + i);
    support_http_default(srv, 200, "{\"jobs\": [], \"errors\": []}");
    cr_assert_eq(forge_slurm_job_states(c, ids, 600, &jobs, &res),
                 FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(support_http_count(srv), 3);
    for (size_t k = 0, next = 0; k < 3; k++) {
        support_http_request_t r = support_http_request(srv, k);
        size_t n = 0;
        cr_assert(strstr(r.target, "/slurm/v0.0.43/jobs/state?job_id="), "%s",
                  r.target);
        for (const char *p = r.target; (p = strstr(p, "job_id=")); p += 7) {
            cr_assert_eq(strtoul(p + 7, NULL, 10), ids[next++]);
            n++;
        }
        cr_assert_eq(n, per_call[k]);
        support_http_request_clear(&r);
    }
    forge_slurm_job_list_free(&jobs);
    forge_slurm_client_destroy(c);
}

static forge_slurm_status_t cancel_answered(forge_slurm_client_t *c, int code,
                                            const char *message,
                                            forge_slurm_result_t *res)
{
    char body[256];

    snprintf(body, sizeof(body),
             "{\"status\": [{\"error\": {\"code\": %d, \"message\": \"%s\"}, "
             "\"job_id\": 42, \"step_id\": \"batch\"}], \"errors\": []}",
             code, message);
    support_http_push(srv, NULL, 200, body, 0);
    return forge_slurm_cancel(c, 42, NULL, res);
}

Test(slurm_faults, cancel_surfaces_each_jobs_outcome)
{
    forge_slurm_client_t *c = client(token_file, NULL, 0);
    forge_slurm_result_t res = {0};

    cr_assert_eq(cancel_answered(c, 0, "", &res), FORGE_SLURM_OK);
    cr_assert_eq(cancel_answered(c, 2021,
                                 "Job/step already completing or "
                                 "completed",
                                 &res),
                 FORGE_SLURM_OK);
    cr_assert_eq(cancel_answered(c, 2017, "Invalid job id specified", &res),
                 FORGE_SLURM_NOT_FOUND);
    cr_assert_eq(res.slurm_error, 2017);
    cr_assert_eq(cancel_answered(c, 2020, "Access/permission denied", &res),
                 FORGE_SLURM_REJECTED);
    cr_assert_eq(res.slurm_error, 2020);
    cr_assert(strstr(res.message, "permission denied"), "%s", res.message);
    forge_slurm_client_destroy(c);
}
