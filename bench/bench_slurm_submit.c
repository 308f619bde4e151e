/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_slurm_submit.c - the worker's Slurm client alone submitting a set
 * of bodies, and its baseline, from CONNECTIONS threads with the worker's
 * configuration from the environment (the stack's env file: https through
 * its TLS front, verified with its CA):
 *
 *   client  each submit the worker's held submit (slurm/submit_held.h: the
 *           POST, every component held, then the release), a client per
 *           thread (one kept connection each, as a Slurm lane has), no
 *           request budget
 *   raw     the same two requests with bare libcurl (same library, same
 *           TLS settings, a kept connection per thread): the POST of the
 *           body, then POST job/{id} {"hold": false}; nothing else
 *
 * bench/bench_submit.py runs both beside its own raw POST + release of the
 * same bodies over as many keep-alive connections (Python's).
 *
 *   build/bench/bench_slurm_submit client|raw CONNECTIONS BODIES_FILE
 *
 * BODIES_FILE: one submit body (JSON) a line. Prints one JSON object:
 * {"submits", "seconds", "rate", "latency" (median s per submit),
 * "job_ids": [...]}; exits 1 (saying why on stderr) at the first submit
 * that fails. A benchmark helper, not a test: it never fails on speed.
 */
#include "base/buf.h"
#include "clock/clock.h"
#include "config/config.h"
#include "slurm/submit_held.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

typedef struct bench {
    forge_slurm_options_t opts;
    const forge_config_t *cfg;
    char *token;
    json_t **bodies;
    const char **comments;
    size_t count;
    atomic_size_t next;
    uint32_t *job_ids;
    double *seconds; /* each submit's */
    atomic_int failed;
} bench_t;

/* The body's comment tag: what an unknown POST is looked up by. */
static const char *comment_of(const json_t *body)
{
    const json_t *job = json_object_get(body, "job");

    if (!job)
        job = json_array_get(json_object_get(body, "jobs"), 0);
    return json_string_value(json_object_get(job, "comment"));
}

static void *lane(void *arg)
{
    bench_t *b = arg;
    forge_slurm_client_t *c = NULL;
    forge_error_t err = {0};
    size_t i;

    if (forge_slurm_client_new(&b->opts, &c, &err)) {
        fprintf(stderr, "bench_slurm_submit: %s\n", err.message);
        atomic_store(&b->failed, 1);
        return NULL;
    }
    while (!atomic_load(&b->failed) &&
           (i = atomic_fetch_add(&b->next, 1)) < b->count) {
        forge_slurm_held_job_t job = {.payload = b->bodies[i],
                                      .comment = b->comments[i],
                                      .pool_count = 1};
        forge_slurm_released_t out = {0};
        forge_slurm_result_t res = {0};
        long long t0 = forge_clock_ms();
        forge_slurm_status_t st = forge_slurm_submit_held(c, &job, &out, &res);

        b->seconds[i] = (double)(forge_clock_ms() - t0) / 1000.0;
        b->job_ids[i] = out.job_id;
        free(out.component_ids);
        if (st != FORGE_SLURM_OK) {
            fprintf(stderr, "bench_slurm_submit: submit %zu: %s: %s\n", i,
                    forge_slurm_status_name(st), res.message);
            atomic_store(&b->failed, 1);
        }
    }
    forge_slurm_client_destroy(c);
    return NULL;
}

static size_t collect(char *p, size_t size, size_t n, void *userdata)
{
    forge_buf_append(userdata, p, size * n);
    return size * n;
}

/* One bare POST on h (its connection kept); the answer's JSON (new), NULL
 * on any failure. */
static json_t *raw_post(CURL *h, const bench_t *b, const char *rest,
                        const char *body, struct curl_slist *hdr)
{
    forge_buf_t url = FORGE_BUF_INIT, resp = FORGE_BUF_INIT;
    json_t *json = NULL;
    long status = 0;

    forge_buf_printf(&url, "%s/slurm/%s/%s", b->cfg->slurm_rest_url,
                     forge_api_version_name(b->cfg->slurm_api_version), rest);
    curl_easy_setopt(h, CURLOPT_URL, forge_buf_str(&url));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, b->opts.tls_verify ? 1L : 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, b->opts.tls_verify ? 2L : 0L);
    if (b->opts.ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, b->opts.ca_file);
    if (curl_easy_perform(h) == CURLE_OK &&
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
        status < 300)
        json = json_loads(forge_buf_str(&resp), 0, NULL);
    if (!json)
        fprintf(stderr, "bench_slurm_submit: POST %s: HTTP %ld: %.300s\n", rest,
                status, forge_buf_str(&resp));
    forge_buf_clear(&url);
    forge_buf_clear(&resp);
    return json;
}

static void *raw_lane(void *arg)
{
    bench_t *b = arg;
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = NULL;
    forge_buf_t line = FORGE_BUF_INIT;
    size_t i;

    forge_buf_printf(&line, "X-SLURM-USER-NAME: %s", b->cfg->slurm_user);
    hdr = curl_slist_append(hdr, forge_buf_str(&line));
    forge_buf_truncate(&line, 0);
    forge_buf_printf(&line, "X-SLURM-USER-TOKEN: %s", b->token);
    hdr = curl_slist_append(hdr, forge_buf_str(&line));
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Accept: application/json");
    forge_buf_clear(&line);
    while (!atomic_load(&b->failed) &&
           (i = atomic_fetch_add(&b->next, 1)) < b->count) {
        long long t0 = forge_clock_ms();
        char *text = json_dumps(b->bodies[i], JSON_COMPACT);
        json_t *answer = raw_post(h, b, "job/submit", text, hdr);
        json_int_t id = json_integer_value(json_object_get(answer, "job_id"));
        char path[64];

        free(text);
        json_decref(answer);
        snprintf(path, sizeof(path), "job/%lld", (long long)id);
        answer = id ? raw_post(h, b, path, "{\"hold\": false}", hdr) : NULL;
        if (!answer)
            atomic_store(&b->failed, 1);
        json_decref(answer);
        b->job_ids[i] = (uint32_t)id;
        b->seconds[i] = (double)(forge_clock_ms() - t0) / 1000.0;
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return NULL;
}

/* The JWT file's token ("SLURM_JWT=" dropped), new; NULL when unreadable. */
static char *read_token(const char *path)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    char buf[4096] = "", *s = buf;

    if (!f)
        return NULL;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!strncmp(s, "SLURM_JWT=", 10))
        s += 10;
    return strdup(s);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t read_bodies(const char *path, bench_t *b)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0, n = 0, room = 0;

    if (!f)
        return 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *body = json_loads(line, 0, NULL);

        if (!body)
            continue;
        if (n == room) {
            room = room ? room * 2 : 256;
            b->bodies = realloc(b->bodies, room * sizeof(*b->bodies));
            b->comments = realloc(b->comments, room * sizeof(*b->comments));
            if (!b->bodies || !b->comments)
                abort();
        }
        b->bodies[n] = body;
        b->comments[n++] = comment_of(body);
    }
    free(line);
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    bench_t b = {0};
    forge_config_t *cfg = NULL;
    forge_error_t err = {0};
    pthread_t *threads;
    void *(*run)(void *);
    int lanes;
    long long t0;
    double elapsed;

    if (argc != 4 || (lanes = atoi(argv[2])) < 1 ||
        (strcmp(argv[1], "client") && strcmp(argv[1], "raw"))) {
        fprintf(stderr, "usage: %s client|raw CONNECTIONS BODIES_FILE\n",
                argv[0]);
        return 2;
    }
    run = strcmp(argv[1], "raw") ? lane : raw_lane;
    if (forge_config_load(environ, &cfg, &err) ||
        forge_config_require(cfg, FORGE_NEED_SLURM, &err)) {
        fprintf(stderr, "bench_slurm_submit: %s\n", err.message);
        return 2;
    }
    if (!(b.count = read_bodies(argv[3], &b))) {
        fprintf(stderr, "bench_slurm_submit: no bodies in %s\n", argv[3]);
        return 2;
    }
    b.cfg = cfg;
    if (run == raw_lane && !(b.token = read_token(cfg->slurm_jwt_file))) {
        fprintf(stderr, "bench_slurm_submit: raw needs FORGE_SLURM_JWT_FILE\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    forge_slurm_options_from_config(cfg, &b.opts);
    b.opts.max_rps = 0; /* the client's own pace */
    b.job_ids = calloc(b.count, sizeof(*b.job_ids));
    b.seconds = calloc(b.count, sizeof(*b.seconds));
    threads = calloc((size_t)lanes, sizeof(*threads));
    if (!b.job_ids || !b.seconds || !threads)
        abort();
    t0 = forge_clock_ms();
    for (int i = 0; i < lanes; i++)
        pthread_create(&threads[i], NULL, run, &b);
    for (int i = 0; i < lanes; i++)
        pthread_join(threads[i], NULL);
    elapsed = (double)(forge_clock_ms() - t0) / 1000.0;
    printf("{\"submits\": %zu, \"seconds\": %.3f, \"rate\": %.1f, "
           "\"latency\": ",
           b.count, elapsed, (double)b.count / elapsed);
    qsort(b.seconds, b.count, sizeof(*b.seconds), by_value);
    printf("%.4f, \"job_ids\": [", b.seconds[b.count / 2]);
    for (size_t i = 0; i < b.count; i++)
        printf("%s%u", i ? ", " : "", b.job_ids[i]);
    printf("]}\n");
    for (size_t i = 0; i < b.count; i++)
        json_decref(b.bodies[i]);
    free(b.bodies);
    free(b.comments);
    free(b.job_ids);
    free(b.seconds);
    free(threads);
    free(b.token);
    forge_config_destroy(cfg);
    curl_global_cleanup();
    return atomic_load(&b.failed) ? 1 : 0;
}
