/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_smoke_slurm.c - the stack's Slurm is real: a trivial job submitted
 * through slurmrestd with a JWT runs to COMPLETED, and what it wrote on the
 * cluster side of the shared storage (FORGE_SLURM_STORAGE_ROOT) is found on
 * the worker side (FORGE_STORAGE_ROOT).
 *
 * Needs the env file of `tests/e2e/stack up` (scripts/test sources it).
 * Talks HTTP with libcurl directly: the project's slurmrestd client is
 * tested on its own elsewhere; this only proves the stack works.
 */
#include "base/buf.h"
#include "config/config.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static forge_config_t *cfg;
static char token[4096];

static void setup(void)
{
    forge_error_t err = {0};
    FILE *f;
    size_t n;

    cr_assert_eq(forge_config_load(environ, &cfg, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(
        forge_config_require(cfg, FORGE_NEED_SLURM | FORGE_NEED_STORAGE, &err),
        FORGE_OK, "source the env file of tests/e2e/stack up: %s", err.message);
    cr_assert_not_null(cfg->slurm_jwt_file, "stack env must give a JWT file");
    f = fopen(cfg->slurm_jwt_file, "r");
    cr_assert_not_null(f, "cannot read %s", cfg->slurm_jwt_file);
    n = fread(token, 1, sizeof(token) - 1, f);
    fclose(f);
    while (n > 0 && (token[n - 1] == '\n' || token[n - 1] == '\r'))
        n--;
    token[n] = '\0';
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void teardown(void)
{
    forge_config_destroy(cfg);
    curl_global_cleanup();
}

static size_t collect(char *p, size_t size, size_t n, void *userdata)
{
    forge_buf_append(userdata, p, size * n);
    return size * n;
}

/* One call to slurmrestd; returns the parsed body (new) and the status. */
static json_t *call(const char *method, const char *path, const char *body,
                    long *status)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = NULL;
    forge_buf_t url = FORGE_BUF_INIT, resp = FORGE_BUF_INIT,
                auth = FORGE_BUF_INIT;
    json_t *json;
    CURLcode rc;

    forge_buf_printf(&url, "%s/slurm/%s/%s", cfg->slurm_rest_url,
                     forge_api_version_name(cfg->slurm_api_version), path);
    forge_buf_printf(&auth, "X-SLURM-USER-TOKEN: %s", token);
    hdr = curl_slist_append(hdr, forge_buf_str(&auth));
    forge_buf_clear(&auth);
    forge_buf_printf(&auth, "X-SLURM-USER-NAME: %s", cfg->slurm_user);
    hdr = curl_slist_append(hdr, forge_buf_str(&auth));
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, forge_buf_str(&url));
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    /* TLS as the worker's client sets it (the stack's front and its CA) */
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER,
                     cfg->slurm_tls_verify ? 1L : 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST,
                     cfg->slurm_tls_verify ? 2L : 0L);
    if (cfg->slurm_tls_ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, cfg->slurm_tls_ca_file);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    rc = curl_easy_perform(h);
    cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, forge_buf_str(&url),
                 curl_easy_strerror(rc));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    json = json_loads(forge_buf_str(&resp), 0, NULL);
    cr_assert_not_null(json, "%s %s: not JSON (HTTP %ld): %.300s", method, path,
                       *status, forge_buf_str(&resp));
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    forge_buf_clear(&url);
    forge_buf_clear(&resp);
    forge_buf_clear(&auth);
    return json;
}

static bool state_has(json_t *states, const char *name)
{
    size_t i;
    json_t *s;

    json_array_foreach(states, i,
                       s) if (!strcmp(json_string_value(s), name)) return true;
    return false;
}

TestSuite(smoke_slurm, .init = setup, .fini = teardown, .timeout = 300);

Test(smoke_slurm, trivial_job_completes_and_its_output_is_on_shared_storage)
{
    char marker[64], body[2048], host_out[1024], line[256] = "";
    long status = 0, job_id;
    json_t *resp, *states = NULL;
    FILE *f;

    snprintf(marker, sizeof(marker), "smoke-%d-%ld", (int)getpid(),
             (long)time(NULL));
    snprintf(body, sizeof(body),
             "{\"job\": {\"name\": \"forge-smoke\", \"partition\": \"%s\","
             " \"script\": \"#!/bin/bash\\necho %s\\n\","
             " \"current_working_directory\": \"%s\","
             " \"standard_output\": \"%s/%s.out\","
             " \"environment\": [\"PATH=/usr/bin:/bin\"], \"time_limit\": 2}}",
             cfg->slurm_partition ? cfg->slurm_partition : "", marker,
             cfg->slurm_storage_root, cfg->slurm_storage_root, marker);
    resp = call("POST", "job/submit", body, &status);
    cr_assert_eq(status, 200, "submit: HTTP %ld: %s", status,
                 json_dumps(resp, 0));
    job_id = (long)json_integer_value(json_object_get(resp, "job_id"));
    cr_assert_gt(job_id, 0);
    json_decref(resp);

    for (int i = 0; i < 240; i++) {
        char path[64];
        snprintf(path, sizeof(path), "job/%ld", job_id);
        resp = call("GET", path, NULL, &status);
        cr_assert_eq(status, 200, "job/%ld: HTTP %ld", job_id, status);
        states = json_object_get(
            json_array_get(json_object_get(resp, "jobs"), 0), "job_state");
        if (state_has(states, "COMPLETED")) {
            json_decref(resp);
            break;
        }
        cr_assert_not(state_has(states, "FAILED") ||
                          state_has(states, "CANCELLED") ||
                          state_has(states, "NODE_FAIL"),
                      "job %ld ended badly: %s", job_id, json_dumps(states, 0));
        json_decref(resp);
        states = NULL;
        usleep(500 * 1000);
    }
    cr_assert_not_null(states, "job %ld did not complete in 120 s", job_id);

    snprintf(host_out, sizeof(host_out), "%s/%s.out", cfg->storage_root,
             marker);
    f = fopen(host_out, "r");
    cr_assert_not_null(f, "the job's output is not at %s on the worker side",
                       host_out);
    cr_assert_not_null(fgets(line, sizeof(line), f));
    fclose(f);
    unlink(host_out);
    cr_assert_eq(strncmp(line, marker, strlen(marker)), 0, "output: %s", line);
}
