/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_render.c - golden files for each runtime profile x single/het
 * (tests/data/render/<case>/{request.json, profile, expected.sh,
 * expected.payload.json}), plus the properties every rendering must have:
 * bash -n passes, paths are cluster-side, every het component carries
 * environment and working directory, the ingest token and the env and
 * secret_env values are nowhere in the script or the submit body (they are
 * in the credentials file, whose bytes are checked too), enroot-pyxis
 * tasks start through one constant /bin/sh wrapper that dash accepts, and a
 * checkpoint signal is in every component of the body, only there.
 * (test_render_credentials and test_render_hostile run the scripts and
 * check srun's argv.)
 *
 * FORGE_UPDATE_GOLDEN=1 rewrites the expected files (review the diff!).
 */
#include "prepare/prepare.h"
#include "render/render.h"
#include "text/shell.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define GOLDEN_DIR   FORGE_SOURCE_DIR "/tests/data/render"
#define HOST_ROOT    "/tmp/forge-golden/storage"
#define CLUSTER_ROOT "/cluster/forge"

static const char catalog_json[] =
    "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
    "\"gpus_per_node\": 8}, \"a100\": {\"slurm_constraint\": \"a100\", "
    "\"gpus_per_node\": 8}}}";

static void make_images(void)
{
    const char *files[] = {HOST_ROOT "/runtimes/images/pytorch-24.01.sif",
                           HOST_ROOT "/runtimes/images/pytorch-24.01.sqsh"};

    cr_assert_eq(system("mkdir -p " HOST_ROOT "/runtimes/images"), 0);
    for (size_t i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "a");
        cr_assert_not_null(f);
        fclose(f);
    }
}

static char *slurp(const char *path)
{
    char *buf = NULL;
    size_t len;

    cr_assert_eq(forge_read_file(path, 1 << 24, &buf, &len), 0, "read %s",
                 path);
    return buf;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f, "write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Renders a case with the configuration and catalogue built for its
 * profile (both new, handed to the caller). */
static forge_prepared_t *load_case(const char *name, forge_config_t **cfgp,
                                   forge_series_catalog_t **catp)
{
    char path[512], env_profile[64];
    char *request, *profile;
    forge_config_t *cfg = NULL;
    forge_series_catalog_t *cat = NULL;
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    make_images();
    snprintf(path, sizeof(path), "%s/%s/profile", GOLDEN_DIR, name);
    profile = slurp(path);
    profile[strcspn(profile, "\n")] = '\0';
    snprintf(env_profile, sizeof(env_profile), "FORGE_SLURM_RUNTIME_PROFILE=%s",
             profile);
    char *envp[] = {"FORGE_STORAGE_ROOT=" HOST_ROOT,
                    "FORGE_SLURM_STORAGE_ROOT=" CLUSTER_ROOT,
                    "FORGE_SLURM_PARTITION=batch", env_profile, NULL};
    cr_assert_eq(forge_config_load(envp, &cfg, &err), 0, "%s", err.message);
    cr_assert_eq(
        forge_series_parse(catalog_json, strlen(catalog_json), &cat, &err), 0);
    snprintf(path, sizeof(path), "%s/%s/request.json", GOLDEN_DIR, name);
    request = slurp(path);
    cr_assert_eq(forge_prepare(request, strlen(request), cfg, cat, &p, &err), 0,
                 "%s: %s %s", name, forge_rc_name(err.code), err.message);
    free(request);
    free(profile);
    *cfgp = cfg;
    *catp = cat;
    return p;
}

static forge_prepared_t *render_case(const char *name)
{
    forge_config_t *cfg;
    forge_series_catalog_t *cat;
    forge_prepared_t *p = load_case(name, &cfg, &cat);

    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
    return p;
}

static void assert_bash_syntax(const char *script)
{
    char path[] = "/tmp/forge-render-XXXXXX";
    int fd = mkstemp(path), status;
    FILE *f = fdopen(fd, "w");
    pid_t pid;

    fputs(script, f);
    fclose(f);
    pid = fork();
    if (pid == 0) {
        execl("/bin/bash", "bash", "-n", path, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    unlink(path);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "bash -n refused the script:\n%s", script);
}

static void check_golden(const char *name, const char *file, const char *actual)
{
    char path[512];
    char *expected;

    snprintf(path, sizeof(path), "%s/%s/%s", GOLDEN_DIR, name, file);
    if (getenv("FORGE_UPDATE_GOLDEN")) {
        spit(path, actual);
        return;
    }
    expected = slurp(path);
    cr_assert_str_eq(actual, expected,
                     "%s/%s differs from the golden file (FORGE_UPDATE_GOLDEN"
                     "=1 rewrites it)",
                     name, file);
    free(expected);
}

static void golden(const char *name)
{
    forge_prepared_t *p = render_case(name);
    char *payload = json_dumps(p->payload, JSON_INDENT(2) | JSON_SORT_KEYS);
    size_t len = strlen(payload);

    payload = forge_xrealloc(payload, len + 2);
    memcpy(payload + len, "\n", 2);
    assert_bash_syntax(p->script);
    check_golden(name, "expected.sh", p->script);
    check_golden(name, "expected.payload.json", payload);
    free(payload);
    forge_prepared_destroy(p);
}

/* A word quoted from pieces is the word of the pieces joined, quotes and
 * all, and bash reads it back as that one word. */
Test(render, shell_word_from_pieces_is_the_joined_word)
{
    const char *parts[] = {"--x=", "it's", "", "'", " $(no) ", "a'b'"};
    forge_buf_t joined = FORGE_BUF_INIT, whole = FORGE_BUF_INIT,
                cat = FORGE_BUF_INIT, cmd = FORGE_BUF_INIT;
    char out[256] = "";
    FILE *f;

    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        forge_buf_puts(&joined, parts[i]);
    forge_shell_arg(&whole, forge_buf_str(&joined));
    forge_shell_arg_cat(&cat, sizeof(parts) / sizeof(parts[0]), parts);
    cr_assert_str_eq(forge_buf_str(&cat), forge_buf_str(&whole));
    forge_buf_puts(&cmd, "printf %s");
    forge_buf_puts(&cmd, forge_buf_str(&cat));
    f = popen(forge_buf_str(&cmd), "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(out, sizeof(out), f));
    cr_assert_eq(pclose(f), 0);
    cr_assert_str_eq(out, forge_buf_str(&joined));
    forge_buf_clear(&joined);
    forge_buf_clear(&whole);
    forge_buf_clear(&cat);
    forge_buf_clear(&cmd);
}

Test(render, golden_apptainer_single)
{
    golden("apptainer-single");
}
Test(render, golden_apptainer_het)
{
    golden("apptainer-het");
}
Test(render, golden_pyxis_single)
{
    golden("pyxis-single");
}
Test(render, golden_pyxis_het)
{
    golden("pyxis-het");
}
Test(render, golden_pyxis_64_nodes_by_8_gpus)
{
    golden("pyxis-64x8");
}
Test(render, golden_apptainer_8_pools)
{
    golden("apptainer-8pools");
}

/* ---- properties ------------------------------------------------------ */

static const char *const all_cases[] = {
    "apptainer-single", "apptainer-het", "pyxis-single",
    "pyxis-het",        "pyxis-64x8",    "apptainer-8pools",
};

Test(render, every_path_is_cluster_side_and_the_token_is_nowhere)
{
    for (size_t i = 0; i < sizeof(all_cases) / sizeof(all_cases[0]); i++) {
        forge_prepared_t *p = render_case(all_cases[i]);
        char *payload = json_dumps(p->payload, 0);
        cr_assert_null(strstr(p->script, HOST_ROOT), "%s", all_cases[i]);
        cr_assert_null(strstr(payload, HOST_ROOT), "%s", all_cases[i]);
        cr_assert_null(strstr(p->script, "tok-9f8e7d6c5b4a"));
        cr_assert_null(strstr(payload, "tok-9f8e7d6c5b4a"));
        free(payload);
        forge_prepared_destroy(p);
    }
}

#define MAX_SECRETS 16

/* Every secret of l (the token, each env and secret_env value), as
 * pointers to the launch's own slots. */
static size_t secret_slots(forge_launch_t *l, char **slots[MAX_SECRETS])
{
    size_t n = 0;

    cr_assert_leq(1 + l->env_count + l->secret_env_count, MAX_SECRETS);
    if (l->ingest_token)
        slots[n++] = &l->ingest_token;
    for (size_t i = 0; i < l->env_count; i++)
        slots[n++] = &l->env[i].value;
    for (size_t i = 0; i < l->secret_env_count; i++)
        slots[n++] = &l->secret_env[i].value;
    return n;
}

/*
 * Rendered again with every secret replaced by a marker found nowhere else,
 * the script and the submit body are the same as before and hold no marker:
 * no env value, secret_env value or token is in either, in any form.
 */
Test(render, env_values_and_the_token_are_nowhere_in_script_or_body)
{
    size_t with_secrets = 0;

    for (size_t i = 0; i < sizeof(all_cases) / sizeof(all_cases[0]); i++) {
        forge_config_t *cfg;
        forge_series_catalog_t *cat;
        forge_prepared_t *p = load_case(all_cases[i], &cfg, &cat);
        forge_launch_t *l = &p->request->launch;
        forge_error_t err = {0};
        json_t *payload = NULL;
        char **slots[MAX_SECRETS], *saved[MAX_SECRETS], marker[64];
        size_t n = secret_slots(l, slots);

        for (size_t k = 0; k < n; k++) {
            saved[k] = *slots[k];
            snprintf(marker, sizeof(marker), "SECRET-MARKER-%zu-5d1c", k);
            *slots[k] = forge_xstrdup(marker);
        }
        char *script = forge_render_script(l, cfg);
        cr_assert_eq(forge_render_payload(l, cfg, cat, script, &payload, &err),
                     0);
        char *body = json_dumps(payload, 0);
        cr_assert_str_eq(script, p->script, "%s: a secret shapes the script",
                         all_cases[i]);
        cr_assert(json_equal(payload, p->payload),
                  "%s: a secret shapes the submit body", all_cases[i]);
        cr_assert_null(strstr(script, "SECRET-MARKER-"), "%s", all_cases[i]);
        cr_assert_null(strstr(body, "SECRET-MARKER-"), "%s", all_cases[i]);
        for (size_t k = 0; k < n; k++) {
            free(*slots[k]);
            *slots[k] = saved[k];
        }
        with_secrets += n > 0;
        free(body);
        free(script);
        json_decref(payload);
        forge_prepared_destroy(p);
        forge_series_catalog_destroy(cat);
        forge_config_destroy(cfg);
    }
    cr_assert_eq(with_secrets, 4, "both profiles, single and het, have some");
}

/* The text of forge_unpack='...' in a script (new): single-quoted, so it
 * must hold no single quote. */
static char *unpack_wrapper(const char *script)
{
    const char *at = strstr(script, "\nforge_unpack='");

    cr_assert_not_null(at, "no forge_unpack");
    at += strlen("\nforge_unpack='");
    const char *end = strchr(at, '\'');
    cr_assert_not_null(end);
    cr_assert_eq(end[1], '\n', "the wrapper holds a single quote");
    cr_assert_null(strstr(end, "\nforge_unpack="), "defined once");
    return forge_xstrndup(at, (size_t)(end - at));
}

/* `SHELL -n -c TEXT`: the shell accepts the syntax. */
static void assert_sh_syntax(const char *shell, const char *argv0,
                             const char *text)
{
    int status;
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        execl(shell, argv0, "-n", "-c", text, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s -n refused the wrapper:\n%s", shell, text);
}

/* enroot-pyxis: every pool's task is `/bin/sh -c "$forge_unpack" forge-env
 * POOL ROLES ARGV...`; the wrapper is the same text whatever the request
 * (no request data in it) and POSIX sh; nothing of the request's env is in
 * the task line (no /usr/bin/env NAME=value, no array expansion). */
Test(render, pyxis_tasks_start_through_one_constant_wrapper)
{
    static const char *const pyxis[] = {"pyxis-single", "pyxis-het",
                                        "pyxis-64x8"};
    char *first = NULL;

    for (size_t i = 0; i < 3; i++) {
        forge_prepared_t *p = render_case(pyxis[i]);
        size_t tasks = 0;
        for (const char *at = p->script;
             (at = strstr(at, " \\\n    /bin/sh -c \"$forge_unpack\" "
                              "forge-env '"));
             at++)
            tasks++;
        cr_assert_eq(tasks, p->request->launch.pool_count, "%s", pyxis[i]);
        cr_assert_null(strstr(p->script, "/usr/bin/env"), "%s", pyxis[i]);
        cr_assert_null(strstr(p->script, "forge_env"), "%s", pyxis[i]);
        char *w = unpack_wrapper(p->script);
        if (!first) {
            first = w;
            assert_sh_syntax("/bin/dash", "sh", w);
            assert_sh_syntax("/bin/bash", "sh", w);
        } else {
            cr_assert_str_eq(w, first, "%s: another wrapper", pyxis[i]);
            free(w);
        }
        forge_prepared_destroy(p);
    }
    cr_assert_null(strstr(first, "llama"), "request data in the wrapper");
    free(first);
}

Test(render, every_component_has_what_slurmctld_demands)
{
    for (size_t i = 0; i < sizeof(all_cases) / sizeof(all_cases[0]); i++) {
        forge_prepared_t *p = render_case(all_cases[i]);
        const forge_launch_t *l = &p->request->launch;
        json_t *jobs = json_object_get(p->payload, "jobs");
        size_t n = jobs ? json_array_size(jobs) : 1;

        cr_assert_eq(n, l->pool_count, "%s: one component per pool",
                     all_cases[i]);
        cr_assert(l->pool_count == 1
                      ? json_object_get(p->payload, "job") && !jobs
                      : jobs != NULL);
        for (size_t c = 0; c < n; c++) {
            json_t *job = jobs ? json_array_get(jobs, c)
                               : json_object_get(p->payload, "job");
            cr_assert_gt(json_array_size(json_object_get(job, "environment")),
                         0);
            cr_assert(
                forge_str_starts_with(json_string_value(json_object_get(
                                          job, "current_working_directory")),
                                      CLUSTER_ROOT "/staging/"));
            cr_assert_str_eq(
                json_string_value(json_object_get(job, "constraints")),
                l->pools[c].series, "pinned by the series' constraint");
            cr_assert_eq(json_object_get(job, "script") != NULL, c == 0);
            cr_assert(json_is_true(json_object_get(job, "hold")),
                      "%s: every component submitted held", all_cases[i]);
        }
        forge_prepared_destroy(p);
    }
}

Test(render, job_name_and_comment_tag_the_launch)
{
    forge_prepared_t *p = render_case("apptainer-het");
    json_t *job = json_array_get(json_object_get(p->payload, "jobs"), 1);

    cr_assert_str_eq(json_string_value(json_object_get(job, "name")),
                     "forge-rlhf-7-2");
    cr_assert_str_eq(json_string_value(json_object_get(job, "comment")),
                     "forge:rlhf-7:2");
    cr_assert_str_eq(json_string_value(json_object_get(job, "partition")),
                     "gpu-large", "the request overrides the default");
    forge_prepared_destroy(p);
}

/* ---- the checkpoint signal --------------------------------------------- */

/* The components of a body: "jobs", or the one "job" (borrowed). */
static size_t components(json_t *payload, json_t *out[FORGE_POOLS_MAX])
{
    json_t *jobs = json_object_get(payload, "jobs");

    if (!jobs) {
        out[0] = json_object_get(payload, "job");
        return 1;
    }
    for (size_t c = 0; c < json_array_size(jobs); c++)
        out[c] = json_array_get(jobs, c);
    return json_array_size(jobs);
}

/*
 * Slurm's --signal=SIG@SECONDS, in each runtime profile, one pool and
 * several: every component carries kill_warning_signal (by name) and
 * kill_warning_delay, none kill_warning_flags (BATCH_JOB would signal the
 * batch shell alone, which has exec'd srun, and not the command); nothing
 * else of the body changes, and the script not at all (it carries no
 * #SBATCH line: the body holds the job's options). Without the field, no
 * kill_warning_ member at all.
 */
Test(render, checkpoint_signal_in_every_component_and_only_there)
{
    static const struct {
        const char *name;
        int seconds;
    } asked[] = {{"USR1", 300}, {"USR2", 60}, {"TERM", 0}, {"HUP", 65535}};

    for (size_t i = 0; i < sizeof(all_cases) / sizeof(all_cases[0]); i++) {
        forge_config_t *cfg;
        forge_series_catalog_t *cat;
        forge_prepared_t *p = load_case(all_cases[i], &cfg, &cat);
        forge_launch_t *l = &p->request->launch;
        forge_error_t err = {0};
        json_t *without = NULL, *with = NULL, *c0[FORGE_POOLS_MAX],
               *c1[FORGE_POOLS_MAX];
        const char *name = asked[i % 4].name;
        int seconds = asked[i % 4].seconds;

        l->checkpoint_signal = NULL;
        l->checkpoint_seconds = 0;
        char *plain = forge_render_script(l, cfg);
        cr_assert_eq(forge_render_payload(l, cfg, cat, plain, &without, &err),
                     0);
        l->checkpoint_signal = name;
        l->checkpoint_seconds = seconds;
        char *script = forge_render_script(l, cfg);
        cr_assert_eq(forge_render_payload(l, cfg, cat, script, &with, &err), 0);
        cr_assert_str_eq(script, plain, "%s: the signal shapes the script",
                         all_cases[i]);
        size_t n = components(with, c1);
        cr_assert_eq(components(without, c0), n);
        cr_assert_eq(n, l->pool_count, "%s", all_cases[i]);
        for (size_t c = 0; c < n; c++) {
            json_t *job = c1[c];
            cr_assert_str_eq(
                json_string_value(json_object_get(job, "kill_warning_signal")),
                name, "%s component %zu", all_cases[i], c);
            cr_assert(
                json_is_integer(json_object_get(job, "kill_warning_delay")));
            cr_assert_eq(
                json_integer_value(json_object_get(job, "kill_warning_delay")),
                seconds, "%s component %zu", all_cases[i], c);
            cr_assert_null(json_object_get(job, "kill_warning_flags"),
                           "every step is signalled, not the batch shell");
            json_object_del(job, "kill_warning_signal");
            json_object_del(job, "kill_warning_delay");
            cr_assert_null(json_object_get(c0[c], "kill_warning_flags"));
            cr_assert_null(json_object_get(c0[c], "kill_warning_signal"));
            cr_assert_null(json_object_get(c0[c], "kill_warning_delay"));
        }
        cr_assert(json_equal(with, without),
                  "%s: the signal changed more of the body", all_cases[i]);
        free(plain);
        free(script);
        json_decref(with);
        json_decref(without);
        forge_prepared_destroy(p);
        forge_series_catalog_destroy(cat);
        forge_config_destroy(cfg);
    }
}

/* ---- the credentials file ---------------------------------------------- */

static void check_credentials(const char *name, const char *want, size_t n)
{
    forge_prepared_t *p = render_case(name);
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_puts(&b, "before|");
    cr_assert(forge_render_credentials(&p->request->launch, &b), "%s", name);
    cr_assert_eq(b.len, 7 + n, "%s: %zu bytes, not %zu", name, b.len - 7, n);
    cr_assert(!memcmp(b.data, "before|", 7), "%s: appends", name);
    cr_assert(!memcmp(b.data + 7, want, n), "%s: other pairs", name);
    forge_buf_clear(&b);
    forge_prepared_destroy(p);
}

Test(render, credentials_hold_token_env_and_secret_env_in_order)
{
    static const char single[] = "FORGE_INGEST_TOKEN\0tok-9f8e7d6c5b4a\0"
                                 "NCCL_DEBUG\0WARN\0"
                                 "WANDB_PROJECT\0llm ft\0"
                                 "WANDB_API_KEY\0wandb-key-5e6f7a8b\0";
    static const char het[] = "RLHF_MODE\0ppo\0"
                              "HF_TOKEN\0hf-3c4d5e6f7a8b\0"
                              "REWARD_API_KEY\0rw-'quoted' $(not run)\0";

    /* sizeof - 1: the literal's own terminator is not part of the file. */
    check_credentials("apptainer-single", single, sizeof(single) - 1);
    check_credentials("pyxis-single", single, sizeof(single) - 1);
    check_credentials("apptainer-het", het, sizeof(het) - 1);
    check_credentials("pyxis-het", het, sizeof(het) - 1);
}

Test(render, no_credentials_no_file_and_no_reader)
{
    static const char *const bare[] = {"pyxis-64x8", "apptainer-8pools"};

    for (size_t i = 0; i < 2; i++) {
        forge_prepared_t *p = render_case(bare[i]);
        forge_buf_t b = FORGE_BUF_INIT;

        forge_buf_puts(&b, "x");
        cr_assert_not(forge_render_credentials(&p->request->launch, &b));
        cr_assert_str_eq(forge_buf_str(&b), "x", "untouched");
        cr_assert_null(strstr(p->script, FORGE_CREDENTIALS_FILE), "%s",
                       bare[i]);
        cr_assert_null(strstr(p->script, "forge_env"), "%s", bare[i]);
        forge_buf_clear(&b);
        forge_prepared_destroy(p);
    }
}
