/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_try.c - what a try changes in what is rendered (src/render/try.h):
 * the first try keeps the tag jobs always had, a later one is tagged with
 * its try and reads back; a later try's body (single and het) carries its
 * tag, FORGE_TRY and the excluded nodes; Slurm's requeue is off only for
 * a request that asks for failed nodes to be excluded with node_fail among
 * its causes; the script marks a later try's first run in both logs.
 */
#include "base/util.h"
#include "prepare/prepare.h"
#include "render/render.h"
#include "render/try.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROOT "/tmp/forge-try-test"

static forge_config_t *cfg;
static forge_series_catalog_t *cat;

static void setup(void)
{
    static const char series[] =
        "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
        "\"gpus_per_node\": 8}}}";
    char *envp[] = {"FORGE_STORAGE_ROOT=" ROOT,
                    "FORGE_SLURM_RUNTIME_PROFILE=apptainer", NULL};
    forge_error_t err = {0};

    cr_assert_eq(system("mkdir -p " ROOT "/runtimes/images && touch " ROOT
                        "/runtimes/images/a.sif"),
                 0);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), 0, "%s", err.message);
    cr_assert_eq(forge_series_parse(series, strlen(series), &cat, &err), 0);
}

static void teardown(void)
{
    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
}

TestSuite(try, .init = setup, .fini = teardown);

#define POOL "{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 1}"
#define LAUNCH(pools, extra)                                                   \
    "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"attempt\": 3, "           \
    "\"image\": {\"path\": \"images/a.sif\", \"format\": \"sif\"}, "           \
    "\"command\": [\"run\"], \"pools\": " pools extra "}"

static forge_prepared_t *prepare_ok(const char *json)
{
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_prepare(json, strlen(json), cfg, cat, &p, &err), 0, "%s",
                 err.message);
    return p;
}

Test(try, the_first_try_keeps_its_tag_a_later_one_names_its_try)
{
    char *first = forge_try_tag("L1", 3, 1), *old = forge_try_tag("L1", 3, 0),
         *later = forge_try_tag("L1", 3, 2);

    cr_assert_str_eq(first, "forge:L1:3"); /* every job's tag before retries */
    cr_assert_str_eq(old, "forge:L1:3");
    cr_assert_str_eq(later, "forge:L1:3:2");
    free(first);
    free(old);
    free(later);
}

Test(try, a_tag_reads_back)
{
    forge_try_tag_parts_t t;

    cr_assert(forge_try_tag_parse("forge:a.b-c:12", &t));
    cr_assert_eq(t.id_len, 5);
    cr_assert_eq(strncmp(t.id, "a.b-c", 5), 0);
    cr_assert_eq(t.attempt, 12);
    cr_assert_eq(t.try_num, 1);
    cr_assert(forge_try_tag_parse("forge:x:1:10", &t));
    cr_assert_eq(t.attempt, 1);
    cr_assert_eq(t.try_num, 10);
    /* not tags */
    static const char *const bad[] = {"forge:",      "forge::1",
                                      "forge:x",     "forge:x:",
                                      "forge:x:0",   "forge:x:01",
                                      "forge:x:1:",  "forge:x:1:1",
                                      "forge:x:1:0", "forge:x:1:2:3",
                                      "forge:x:a",   "other:x:1",
                                      "forge:x:1 ",  "forge:x:99999999999",
                                      "forge:x:1:2x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_not(forge_try_tag_parse(bad[i], &t), "%s", bad[i]);
    cr_assert_not(forge_try_tag_parse(NULL, &t));
}

static const char *env_last(json_t *job)
{
    json_t *env = json_object_get(job, "environment");

    return json_string_value(json_array_get(env, json_array_size(env) - 1));
}

Test(try, a_later_try_body_carries_its_tag_try_and_exclusions)
{
    forge_prepared_t *p = prepare_ok(LAUNCH("[" POOL "]", ""));
    json_t *job = json_object_get(p->payload, "job");
    char *before = json_dumps(p->payload, JSON_SORT_KEYS);
    char *after;

    forge_try_apply(p->payload, "L1", 3, 1, NULL);
    after = json_dumps(p->payload, JSON_SORT_KEYS);
    cr_assert_str_eq(before, after, "the first try: unchanged");
    free(after);
    forge_try_apply(p->payload, "L1", 3, 2, "h200-1,gpu[3-4]");
    cr_assert_str_eq(json_string_value(json_object_get(job, "comment")),
                     "forge:L1:3:2");
    cr_assert_str_eq(env_last(job), "FORGE_TRY=2");
    cr_assert_str_eq(json_string_value(json_object_get(job, "excluded_nodes")),
                     "h200-1,gpu[3-4]");
    cr_assert_str_eq(json_string_value(json_object_get(job, "name")),
                     "forge-L1-3", "the name stays the attempt's");
    cr_assert_null(json_object_get(job, "requeue"));
    free(before);
    forge_prepared_destroy(p);
}

Test(try, every_het_component_is_the_tries)
{
    forge_prepared_t *p = prepare_ok(LAUNCH(
        "[" POOL ", {\"name\": \"q\", \"series\": \"h200\", \"nodes\": 1}]",
        ""));
    json_t *jobs = json_object_get(p->payload, "jobs"), *job;
    size_t i;

    forge_try_apply(p->payload, "L1", 3, 4, "");
    cr_assert_eq(json_array_size(jobs), 2);
    json_array_foreach(jobs, i, job)
    {
        cr_assert_str_eq(json_string_value(json_object_get(job, "comment")),
                         "forge:L1:3:4");
        cr_assert_str_eq(env_last(job), "FORGE_TRY=4");
        cr_assert_null(json_object_get(job, "excluded_nodes"), "none given");
    }
    forge_prepared_destroy(p);
}

/* requeue off: only a request asking for exclusion itself, with node_fail
 * among its causes (its own or the fleet's). */
Test(try, slurms_requeue_is_off_only_when_the_request_asks)
{
    static const struct {
        const char *retry;
        bool off;
    } cases[] = {
        {"", false},
        {", \"retry\": {\"max_tries\": 3}", false},
        {", \"retry\": {\"exclude_failed_nodes\": false}", false},
        {", \"retry\": {\"exclude_failed_nodes\": true}", true},
        {", \"retry\": {\"exclude_failed_nodes\": true, \"on\": "
         "[\"boot_fail\"]}",
         false},
        {", \"retry\": {\"max_tries\": 1, \"exclude_failed_nodes\": true, "
         "\"on\": [\"node_fail\"]}",
         true},
    };
    char json[1024];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        forge_prepared_t *p;
        json_t *requeue;
        snprintf(json, sizeof(json), LAUNCH("[" POOL "]", "%s"),
                 cases[i].retry);
        p = prepare_ok(json);
        cr_assert_eq(forge_try_requeue_off(&p->request->launch, cfg),
                     cases[i].off, "%s", json);
        requeue =
            json_object_get(json_object_get(p->payload, "job"), "requeue");
        if (cases[i].off)
            cr_assert(json_is_false(requeue), "%s", json);
        else
            cr_assert_null(requeue, "%s", json);
        forge_prepared_destroy(p);
    }
}

/* The script's marker, run by bash: "$1" the try (unset: none), "$2" the
 * restart; both logs into one. */
static char *marker_output(const char *try_env, int restart)
{
    forge_buf_t s = FORGE_BUF_INIT, cmd = FORGE_BUF_INIT, out = FORGE_BUF_INIT;
    char path[] = "/tmp/forge-try-XXXXXX", line[256];
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w"), *pipe;

    forge_buf_printf(&s, "forge_restart=%d\n", restart);
    forge_try_put_marker(&s);
    fputs(forge_buf_str(&s), f);
    fclose(f);
    forge_buf_printf(&cmd, "env -u FORGE_TRY %s%s bash %s 2>&1",
                     try_env ? "FORGE_TRY=" : "", try_env ? try_env : "", path);
    pipe = popen(forge_buf_str(&cmd), "r");
    while (fgets(line, sizeof(line), pipe))
        forge_buf_puts(&out, line);
    cr_assert_eq(pclose(pipe), 0);
    unlink(path);
    forge_buf_clear(&s);
    forge_buf_clear(&cmd);
    return forge_buf_take(&out);
}

Test(try, a_later_tries_first_run_marks_both_logs)
{
    char *out = marker_output("3", 0);

    cr_assert_str_eq(out, "== forge: try 3 ==\n== forge: try 3 ==\n");
    free(out);
    out = marker_output("3", 1); /* requeued within the try: a restart */
    cr_assert_str_eq(out, "");
    free(out);
    out = marker_output(NULL, 0);
    cr_assert_str_eq(out, "");
    free(out);
    out = marker_output("1", 0);
    cr_assert_str_eq(out, "");
    free(out);
    out = marker_output("2x", 0); /* not a number: the first */
    cr_assert_str_eq(out, "");
    free(out);
}
