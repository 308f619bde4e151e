/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_prepare.c - libFuzzer target over forge_prepare(): any bytes, in both
 * runtime profiles (each input is tried with an apptainer and an
 * enroot-pyxis configuration; the image format decides which one renders).
 *
 * Besides what AddressSanitizer and UBSan report, it abort()s when
 *  - a rendered script does not pass `bash -n`;
 *  - running the script with stand-ins (srun that prints its argv and
 *    environment, hostname, apptainer answering the image check) and the
 *    credentials file the worker writes
 *    (forge_render_credentials) does not hand srun exactly the argv and
 *    environment the request asks for: every request value one word, byte
 *    for byte; env and secret_env values in srun's environment only, as
 *    FORGE_E_<NAME> listed in FORGE_ENV_NAMES (enroot-pyxis) or as
 *    APPTAINERENV_<NAME> (apptainer), never in srun's argv (the step's
 *    SubmitLine) nor under their own names; the token in the environment
 *    only; or the credentials file is still there when srun starts, or
 *    after the script;
 *  - enroot-pyxis: the task wrapper srun got (/bin/sh -c "$forge_unpack"),
 *    run with this machine's /bin/sh and srun's environment, does not hand
 *    the program every env and secret_env value byte for byte, its pool
 *    and roles, and nothing of its own (FORGE_E_*, FORGE_ENV_NAMES); it may
 *    only stop, with its `forge:` line, for a name the shell owns (skipped
 *    when the request sets an LD_* name, which would steer the loader of the
 *    stand-in program);
 *  - a lone ":" reaches srun's argv outside the component separators (srun
 *    splits heterogeneous components on it anywhere); set
 *    FORGE_FUZZ_ALLOW_LONE_COLON=1 to skip this one check;
 *  - the ingest token or an env or secret_env value reaches the script or
 *    the submit body: the request is rendered again with another token and
 *    other values and nothing may change;
 *  - a refusal's error (what `forge-worker validate` prints) is not one JSON
 *    object with "error", "field" and "message" strings.
 *
 * Built by tests/fuzz/CMakeLists.txt (FORGE_FUZZ=ON, clang); run by
 * scripts/fuzz. Temporary files go under $TMPDIR (default /tmp).
 */
#include "fs/paths.h"
#include "prepare/prepare.h"
#include "render/render.h"
#include "request/request_paths.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <ftw.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char catalog_json[] =
    "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
    "\"gpus_per_node\": 8}, \"a100\": {\"slurm_constraint\": \"a100&ib\", "
    "\"gpus_per_node\": 4}, \"l40s\": {\"slurm_constraint\": null, "
    "\"gpus_per_node\": 4}}}";

static char root[256];
static char cluster_root[300]; /* FORGE_SLURM_STORAGE_ROOT: the script runs
                                  here, so it can read its credentials */
static char bin_path[300];
static forge_config_t *configs[2];
static forge_series_catalog_t *catalog;
static bool allow_lone_colon;

/* ---- setup ------------------------------------------------------------ */

static void die(const char *what)
{
    perror(what);
    abort();
}

static void put_file(const char *rel, const char *text, mode_t mode)
{
    char path[512];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        die(path);
    close(fd);
}

static void put_dir(const char *rel)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    if (mkdir(path, 0755) != 0)
        die(path);
}

static int remove_one(const char *path, const struct stat *st, int flag,
                      struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    if (root[0])
        nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    for (size_t i = 0; i < 2; i++)
        forge_config_destroy(configs[i]);
    forge_series_catalog_destroy(catalog);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    const char *profiles[] = {"apptainer", "enroot-pyxis"};
    forge_error_t err = {0};
    char storage[300], cluster[340], link_target[300], path[512];

    (void)argc;
    (void)argv;
    snprintf(root, sizeof(root), "%s/forge-fuzz-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root))
        die(root);
    atexit(cleanup);
    put_dir("storage");
    put_dir("storage/runtimes");
    put_dir("storage/runtimes/images");
    put_file("storage/runtimes/images/x.sif", "", 0644);
    put_file("storage/runtimes/images/x.sqsh", "", 0644);
    put_dir("storage/data");
    /* An image link that leads outside the runtime root (image_missing). */
    snprintf(link_target, sizeof(link_target), "%s/outside.sif", root);
    put_file("outside.sif", "", 0644);
    snprintf(path, sizeof(path), "%s/storage/runtimes/images/out.sif", root);
    if (symlink(link_target, path) != 0)
        die(path);
    /* Stand-ins for running a script: srun prints its argv (stdout) and
     * its environment (fd 3), and fails if the credentials file is still
     * there. */
    put_dir("bin");
    put_file("bin/srun",
             "#!/bin/sh\n"
             "[ -e \"$FORGE_STAGING/credentials\" ] && exit 42\n"
             "printf '%s\\0' \"$@\"\nenv -0 >&3\n",
             0755);
    /* and apptainer answers the image check's `sif list` (render.h) for
     * the cluster's x.sif with no descriptor: the image passes */
    put_file("bin/apptainer",
             "#!/bin/sh\n"
             "[ \"$1 $2\" = 'sif list' ] && [ -f \"$3\" ] || exit 255\n"
             "echo 'ID |GROUP |LINK |SIF POSITION (start-end) |TYPE'\n",
             0755);
    put_file("bin/hostname", "#!/bin/sh\necho fuzzhost\n", 0755);
    snprintf(bin_path, sizeof(bin_path), "PATH=%s/bin:/usr/bin:/bin", root);
    put_dir("cluster");
    put_dir("cluster/runtimes");
    put_dir("cluster/runtimes/images");
    put_file("cluster/runtimes/images/x.sif", "", 0644);
    snprintf(cluster_root, sizeof(cluster_root), "%s/cluster", root);

    snprintf(storage, sizeof(storage), "FORGE_STORAGE_ROOT=%s/storage", root);
    snprintf(cluster, sizeof(cluster), "FORGE_SLURM_STORAGE_ROOT=%s",
             cluster_root);
    for (size_t i = 0; i < 2; i++) {
        char profile[64];
        snprintf(profile, sizeof(profile), "FORGE_SLURM_RUNTIME_PROFILE=%s",
                 profiles[i]);
        char *envp[] = {storage,
                        cluster,
                        profile,
                        "FORGE_MOUNT_ALLOW=/datasets:/models",
                        "FORGE_SLURM_PARTITION=batch",
                        NULL};
        if (forge_config_load(envp, &configs[i], &err) != FORGE_OK) {
            fprintf(stderr, "fuzz_prepare: config: %s\n", err.message);
            abort();
        }
    }
    if (forge_series_parse(catalog_json, strlen(catalog_json), &catalog,
                           &err) != FORGE_OK) {
        fprintf(stderr, "fuzz_prepare: catalogue: %s\n", err.message);
        abort();
    }
    allow_lone_colon = getenv("FORGE_FUZZ_ALLOW_LONE_COLON") != NULL;
    return 0;
}

/* ---- running bash ----------------------------------------------------- */

static int memfd_with(const char *name, const char *text)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    size_t n = text ? strlen(text) : 0, done = 0;

    if (fd < 0)
        die("memfd_create");
    while (done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w <= 0)
            die("write memfd");
        done += (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) != 0)
        die("lseek");
    return fd;
}

/* The whole content of a memfd (new, NUL-terminated; *len without it). */
static char *memfd_read(int fd, size_t *len)
{
    off_t end = lseek(fd, 0, SEEK_END);
    char *buf;

    if (end < 0 || lseek(fd, 0, SEEK_SET) != 0)
        die("lseek");
    buf = forge_xmalloc((size_t)end + 1);
    if (pread(fd, buf, (size_t)end, 0) != end)
        die("pread");
    buf[end] = '\0';
    *len = (size_t)end;
    return buf;
}

/* Runs /bin/bash argv with the script on stdin; returns the wait status;
 * *out and *errout are what it printed (new), *fd3 (new, *fd3_len bytes)
 * what it wrote to file descriptor 3 (srun's environment). */
static int run_bash(char *const argv[], const char *script, char **out,
                    size_t *out_len, char **errout, char **fd3, size_t *fd3_len)
{
    char *envp[] = {bin_path, "SLURM_JOB_ID=123", "SLURM_PROCID=0", NULL};
    int in = memfd_with("forge-script", script);
    int ofd = memfd_with("forge-out", NULL);
    int efd = memfd_with("forge-err", NULL);
    int xfd = memfd_with("forge-fd3", NULL);
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0;
    size_t elen;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in, 0);
    posix_spawn_file_actions_adddup2(&fa, ofd, 1);
    posix_spawn_file_actions_adddup2(&fa, efd, 2);
    posix_spawn_file_actions_adddup2(&fa, xfd, 3);
    if (posix_spawn(&pid, "/bin/bash", &fa, NULL, argv, envp) != 0)
        die("posix_spawn /bin/bash");
    posix_spawn_file_actions_destroy(&fa);
    while (waitpid(pid, &status, 0) < 0)
        ;
    *out = memfd_read(ofd, out_len);
    *errout = memfd_read(efd, &elen);
    *fd3 = memfd_read(xfd, fd3_len);
    close(in);
    close(ofd);
    close(efd);
    close(xfd);
    return status;
}

static void dump_script(const char *script)
{
    size_t n = strlen(script);

    fprintf(stderr, "---- script (%zu bytes) ----\n%.*s%s\n----\n", n,
            (int)(n > 8192 ? 8192 : n), script, n > 8192 ? "\n..." : "");
}

/* ---- the oracles -------------------------------------------------------- */

static void check_bash_syntax(const char *script)
{
    char *argv[] = {"bash", "-n", NULL};
    char *out, *err, *fd3;
    size_t len, fd3_len;
    int status = run_bash(argv, script, &out, &len, &err, &fd3, &fd3_len);

    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        dump_script(script);
        fprintf(stderr, "fuzz_prepare: bash -n refused the script: %s\n", err);
        abort();
    }
    free(out);
    free(err);
    free(fd3);
}

typedef struct words {
    char **v;
    size_t n, cap;
} words_t;

static void push(words_t *w, char *owned)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 64;
        w->v = forge_xrealloc(w->v, w->cap * sizeof(*w->v));
    }
    w->v[w->n++] = owned;
}

static void pushf(words_t *w, const char *fmt, ...) FORGE_PRINTF(2, 3);
static void pushf(words_t *w, const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    push(w, s);
}

static void words_free(words_t *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->v[i]);
    free(w->v);
}

static char *roles_of(const forge_launch_t *l, const char *pool)
{
    char *out = forge_xstrdup(""), *next;

    for (size_t i = 0; i < l->role_count; i++) {
        if (strcmp(l->roles[i].value, pool) != 0)
            continue;
        if (asprintf(&next, "%s%s%s", out, out[0] ? " " : "", l->roles[i].key) <
            0)
            abort();
        free(out);
        out = next;
    }
    return out;
}

/* "SRC:TARGET[:ro]" of a mount, the source cluster-side (new). */
static char *mount_spec(const forge_config_t *cfg, const forge_mount_t *m)
{
    char *host = forge_request_mount_source(cfg, m);
    char *src = forge_path_to_cluster(cfg, host), *spec;

    if (asprintf(&spec, "%s:%s%s", src, m->target, m->read_only ? ":ro" : "") <
        0)
        abort();
    free(host);
    free(src);
    return spec;
}

/* srun's argv as the request asks for it; NULL marks the task wrapper
 * (apptainer's or enroot-pyxis', a constant of render.c). */
static void expected_argv(const forge_launch_t *l, const forge_config_t *cfg,
                          words_t *w)
{
    /* the file the check opened: the path normalized (render.c) */
    char *given = forge_request_image_path(cfg, l);
    char *host_image = forge_path_normalize(given);
    char *image = forge_path_to_cluster(cfg, host_image);

    for (size_t i = 0; i < l->pool_count; i++) {
        const forge_pool_t *pool = &l->pools[i];
        char *roles = roles_of(l, pool->name);

        if (i)
            pushf(w, ":");
        if (l->pool_count > 1)
            pushf(w, "--het-group=%zu", i);
        pushf(w, "--nodes=%d", pool->nodes);
        pushf(w, "--ntasks-per-node=%d", pool->tasks_per_node);
        if (pool->cpus_per_task)
            pushf(w, "--cpus-per-task=%d", pool->cpus_per_task);
        pushf(w, "--kill-on-bad-exit=1");
        if (i) { /* a later het component's own logs, appended to (a
                  * requeued job's runs all kept) */
            pushf(w, "--open-mode=append");
            pushf(w, "--output=%s/staging/%s/%d/%s.out", cluster_root,
                  l->launch_id, l->attempt, pool->name);
            pushf(w, "--error=%s/staging/%s/%d/%s.err", cluster_root,
                  l->launch_id, l->attempt, pool->name);
        }
        if (cfg->runtime_profile == FORGE_PROFILE_APPTAINER) {
            pushf(w, "/bin/bash");
            pushf(w, "-c");
            push(w, NULL);
            pushf(w, "forge-task");
            pushf(w, "%s", pool->name);
            pushf(w, "%s", roles);
            pushf(w, "apptainer");
            pushf(w, "exec");
            pushf(w, "--cleanenv");
            if (pool->gpus_per_node > 0)
                pushf(w, "--nv");
            for (size_t m = 0; m < l->mount_count; m++) {
                pushf(w, "--bind");
                push(w, mount_spec(cfg, &l->mounts[m]));
            }
            if (l->workdir) {
                pushf(w, "--pwd");
                pushf(w, "%s", l->workdir);
            }
            pushf(w, "%s", image);
        } else {
            pushf(w, "--container-image=%s", image);
            if (l->mount_count) {
                char *all = forge_xstrdup(""), *next;
                for (size_t m = 0; m < l->mount_count; m++) {
                    char *spec = mount_spec(cfg, &l->mounts[m]);
                    if (asprintf(&next, "%s%s%s", all, m ? "," : "", spec) < 0)
                        abort();
                    free(all);
                    free(spec);
                    all = next;
                }
                pushf(w, "--container-mounts=%s", all);
                free(all);
            }
            if (l->workdir)
                pushf(w, "--container-workdir=%s", l->workdir);
            pushf(w, "--no-container-mount-home");
            pushf(w, "/bin/sh");
            pushf(w, "-c");
            push(w, NULL);
            pushf(w, "forge-env");
            pushf(w, "%s", pool->name);
            pushf(w, "%s", roles);
        }
        for (size_t a = 0; a < l->command_count; a++) {
            if (!allow_lone_colon && !strcmp(l->command[a], ":")) {
                fprintf(stderr,
                        "fuzz_prepare: command[%zu] is a lone \":\": srun "
                        "splits heterogeneous components on it anywhere "
                        "in its argv, so the rest of the command would run "
                        "as a component of its own (accepted by "
                        "forge_prepare; FORGE_FUZZ_ALLOW_LONE_COLON=1 "
                        "skips this check)\n",
                        a);
                abort();
            }
            pushf(w, "%s", l->command[a]);
        }
        free(roles);
    }
    free(host_image);
    free(given);
    free(image);
}

static const char *shown(const char *s)
{
    static char buf[512];
    size_t o = 0;

    for (; s && *s && o < 400; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, 8, "\\x%02x", c);
    }
    buf[o] = '\0';
    return s ? buf : "(none)";
}

/* The staging folder of l, cluster-side (new). */
static char *staging_of(const forge_launch_t *l)
{
    char *dir;

    if (asprintf(&dir, "%s/staging/%s/%d", cluster_root, l->launch_id,
                 l->attempt) < 0)
        abort();
    return dir;
}

/* Writes the credentials file as the worker's staging step does; returns
 * its path (new), or NULL when the launch has none. */
static char *write_credentials(const forge_launch_t *l)
{
    forge_buf_t b = FORGE_BUF_INIT;
    char *dir, *path, *slash;
    int fd;

    if (!forge_render_credentials(l, &b))
        return NULL;
    dir = staging_of(l);
    for (slash = dir + strlen(cluster_root); slash;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            die(dir);
        *slash = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        die(dir);
    if (asprintf(&path, "%s/credentials", dir) < 0)
        abort();
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, b.data, b.len) != (ssize_t)b.len)
        die(path);
    close(fd);
    forge_buf_clear(&b);
    free(dir);
    return path;
}

/* Removes what write_credentials() made; aborts if the script left the
 * file. */
static void clean_credentials(const forge_launch_t *l, char *path,
                              const char *script)
{
    char *dir;

    if (!path)
        return;
    if (unlink(path) == 0) {
        dump_script(script);
        fprintf(stderr, "fuzz_prepare: the script left its credentials "
                        "file\n");
        abort();
    }
    dir = staging_of(l);
    rmdir(dir);
    *strrchr(dir, '/') = '\0';
    rmdir(dir);
    free(dir);
    free(path);
}

/* Whether the NUL-separated list holds want exactly. */
static bool list_has(const char *list, size_t len, const char *want)
{
    for (size_t at = 0; at < len; at += strlen(list + at) + 1)
        if (!strcmp(list + at, want))
            return true;
    return false;
}

static void expect_in_env(const char *env, size_t len, const char *script,
                          const char *prefix, const char *name,
                          const char *value)
{
    char *want;

    if (asprintf(&want, "%s%s=%s", prefix, name, value) < 0)
        abort();
    if (!list_has(env, len, want)) {
        dump_script(script);
        fprintf(stderr, "fuzz_prepare: srun's environment lacks %s%s=%s\n",
                prefix, name, shown(value));
        abort();
    }
    free(want);
}

/* The value of name in a NUL-separated environment, or NULL. */
static const char *env_value(const char *env, size_t len, const char *name)
{
    size_t n = strlen(name);

    for (size_t at = 0; at < len; at += strlen(env + at) + 1)
        if (!strncmp(env + at, name, n) && env[at + n] == '=')
            return env + at + n + 1;
    return NULL;
}

/* Names the job itself has in srun's environment. */
static bool host_var(const char *name)
{
    static const char *const host[] = {
        "PATH",        "PWD",         "OLDPWD",     "SHLVL",  "_",
        "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NNODES", "HOME"};

    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        if (!strcmp(name, host[i]))
            return true;
    return false;
}

static void env_fail(const char *script, const char *what, const char *name,
                     const char *value)
{
    dump_script(script);
    fprintf(stderr, "fuzz_prepare: srun's environment: %s %s", what, name);
    fprintf(stderr, " (value %s)\n", shown(value));
    abort();
}

/* One env or secret_env pair in srun's environment: under the profile's
 * prefix, byte for byte, and not under its own name (srun, Pyxis, enroot or
 * ld.so would read it there). */
static void check_env_pair(const char *env, size_t len, const char *script,
                           const char *prefix, const forge_kv_t *kv)
{
    char *pname;

    if (asprintf(&pname, "%s%s", prefix, kv->key) < 0)
        abort();
    const char *got = env_value(env, len, pname);
    if (!got || strcmp(got, kv->value) != 0)
        env_fail(script, "lacks the value of", pname, kv->value);
    if (!host_var(kv->key) && env_value(env, len, kv->key))
        env_fail(script, "has, under its own name,", kv->key, kv->value);
    free(pname);
}

/* srun's environment: every pair of the credentials file under a prefix
 * (apptainer: APPTAINERENV_<NAME>; enroot-pyxis: FORGE_E_<NAME>, the names
 * in FORGE_ENV_NAMES in the file's order), the token as FORGE_INGEST_TOKEN
 * (enroot-pyxis) or APPTAINERENV_FORGE_INGEST_TOKEN. */
static void check_srun_env(const forge_launch_t *l, const forge_config_t *cfg,
                           const char *env, size_t len, const char *script)
{
    bool apptainer = cfg->runtime_profile == FORGE_PROFILE_APPTAINER;
    const char *prefix = apptainer ? "APPTAINERENV_" : "FORGE_E_";
    forge_buf_t names = FORGE_BUF_INIT;

    if (l->ingest_token)
        expect_in_env(env, len, script, apptainer ? "APPTAINERENV_" : "",
                      "FORGE_INGEST_TOKEN", l->ingest_token);
    for (size_t i = 0; i < l->env_count + l->secret_env_count; i++) {
        const forge_kv_t *kv =
            i < l->env_count ? &l->env[i] : &l->secret_env[i - l->env_count];
        check_env_pair(env, len, script, prefix, kv);
        forge_buf_printf(&names, "%s%s", i ? " " : "", kv->key);
    }
    const char *listed = env_value(env, len, "FORGE_ENV_NAMES");
    bool file = l->ingest_token || l->env_count || l->secret_env_count;
    if (!apptainer && file
            ? !listed || strcmp(listed, forge_buf_str(&names)) != 0
            : listed != NULL)
        env_fail(script, "FORGE_ENV_NAMES is wrong:", listed ? listed : "-",
                 forge_buf_str(&names));
    forge_buf_clear(&names);
}

/* The i-th pair of the credentials file after the token: env, then
 * secret_env. */
static const forge_kv_t *pair_at(const forge_launch_t *l, size_t i)
{
    return i < l->env_count ? &l->env[i] : &l->secret_env[i - l->env_count];
}

static void task_fail(const char *script, const char *what, const char *a,
                      const char *b)
{
    dump_script(script);
    fprintf(stderr, "fuzz_prepare: the pyxis task %s %s", what, shown(a));
    fprintf(stderr, " (%s)\n", shown(b));
    abort();
}

/* Whether the wrapper's stderr starts with its refusal of a name the shell
 * owns, for one of the request's names. */
static bool refused_shell_name(const forge_launch_t *l, const char *err)
{
    for (size_t i = 0; i < l->env_count + l->secret_env_count; i++) {
        char *line;
        bool yes;
        if (asprintf(&line, "forge: %s belongs to the shell",
                     pair_at(l, i)->key) < 0)
            abort();
        yes = !strncmp(err, line, strlen(line));
        free(line);
        if (yes)
            return true;
    }
    return false;
}

/* Runs the enroot-pyxis task wrapper as Pyxis would start it in the
 * container (srun's environment; this machine's /bin/sh) with /usr/bin/env
 * -0 as the program, and compares what that program got. */
static void check_pyxis_wrapper(const forge_launch_t *l, const char *wrapper,
                                const char *srun_env, size_t srun_env_len,
                                const char *script)
{
    size_t pairs = l->env_count + l->secret_env_count, n = 0, got_len, err_len;
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0;

    for (size_t i = 0; i < pairs; i++)
        if (forge_str_starts_with(pair_at(l, i)->key, "LD_"))
            return; /* it would steer /usr/bin/env's loader */
    char *roles = roles_of(l, l->pools[0].name);
    char *argv[] = {"sh",
                    "-c",
                    (char *)wrapper,
                    "forge-env",
                    l->pools[0].name,
                    roles,
                    "/usr/bin/env",
                    "-0",
                    NULL};
    for (size_t at = 0; at < srun_env_len; at += strlen(srun_env + at) + 1)
        n++;
    char **envp = forge_xcalloc(n + 1, sizeof(*envp));
    n = 0;
    for (size_t at = 0; at < srun_env_len; at += strlen(srun_env + at) + 1)
        envp[n++] = (char *)srun_env + at;
    int ofd = memfd_with("forge-task-out", NULL);
    int efd = memfd_with("forge-task-err", NULL);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, ofd, 1);
    posix_spawn_file_actions_adddup2(&fa, efd, 2);
    if (posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, envp) != 0)
        die("posix_spawn /bin/sh");
    posix_spawn_file_actions_destroy(&fa);
    while (waitpid(pid, &status, 0) < 0)
        ;
    char *got = memfd_read(ofd, &got_len);
    char *err = memfd_read(efd, &err_len);
    close(ofd);
    close(efd);
    free(envp);

    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        /* Allowed: refusing a name the shell owns, and only that. */
        if (!refused_shell_name(l, err))
            task_fail(script, "wrapper failed:", err, "not a refusal");
    } else {
        for (size_t i = 0; i < pairs; i++) {
            const forge_kv_t *kv = pair_at(l, i);
            const char *v = env_value(got, got_len, kv->key);
            if (!v || strcmp(v, kv->value) != 0)
                task_fail(script, kv->key, v, kv->value);
        }
        const char *pool = env_value(got, got_len, "FORGE_POOL");
        const char *got_roles = env_value(got, got_len, "FORGE_ROLES");
        if (!pool || strcmp(pool, l->pools[0].name) != 0)
            task_fail(script, "FORGE_POOL", pool, l->pools[0].name);
        if (!got_roles || strcmp(got_roles, roles) != 0)
            task_fail(script, "FORGE_ROLES", got_roles, roles);
        for (size_t at = 0; at < got_len; at += strlen(got + at) + 1)
            if (forge_str_starts_with(got + at, "FORGE_E_") ||
                forge_str_starts_with(got + at, "FORGE_ENV_NAMES="))
                task_fail(script, "got", got + at, "the wrapper's own");
    }
    free(got);
    free(err);
    free(roles);
}

/* Runs the script with stand-ins and its credentials file and compares
 * srun's argv and environment. */
static void check_srun_argv(const forge_prepared_t *p,
                            const forge_config_t *cfg)
{
    char *argv[] = {"bash", NULL};
    char *out, *err, *env;
    size_t len, env_len;
    char *credentials = write_credentials(&p->request->launch);
    int status = run_bash(argv, p->script, &out, &len, &err, &env, &env_len);
    words_t want = {0};
    const char *wrapper = NULL;
    size_t i = 0, at = 0;

    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        dump_script(p->script);
        fprintf(stderr, "fuzz_prepare: the script failed (status %d%s): %s\n",
                status,
                WIFEXITED(status) && WEXITSTATUS(status) == 42
                    ? ": srun started with the credentials file there"
                    : "",
                err);
        abort();
    }
    clean_credentials(&p->request->launch, credentials, p->script);
    check_srun_env(&p->request->launch, cfg, env, env_len, p->script);
    expected_argv(&p->request->launch, cfg, &want);
    for (; at < len && i < want.n; i++) {
        const char *got = out + at;
        at += strlen(got) + 1;
        if (!want.v[i]) {
            if (wrapper && strcmp(wrapper, got) != 0) {
                fprintf(stderr, "fuzz_prepare: task wrappers differ\n");
                abort();
            }
            wrapper = got;
            continue;
        }
        if (strcmp(got, want.v[i]) != 0) {
            dump_script(p->script);
            fprintf(stderr, "fuzz_prepare: srun argv[%zu] is %s", i,
                    shown(got));
            fprintf(stderr, ", the request asks for %s\n", shown(want.v[i]));
            abort();
        }
    }
    if (i != want.n || at != len) {
        dump_script(p->script);
        fprintf(stderr,
                "fuzz_prepare: srun got a different number of arguments "
                "(expected %zu)\n",
                want.n);
        abort();
    }
    if (cfg->runtime_profile == FORGE_PROFILE_ENROOT_PYXIS)
        check_pyxis_wrapper(&p->request->launch, wrapper, env, env_len,
                            p->script);
    words_free(&want);
    free(out);
    free(err);
    free(env);
}

/* Another value for s (new): one byte more, so it differs. */
static char *other_value(const char *s)
{
    size_t n = strlen(s);
    char *other = forge_xmalloc(n + 2);

    memcpy(other, s, n);
    other[n] = n && s[n - 1] == 'x' ? 'y' : 'x';
    other[n + 1] = '\0';
    return other;
}

/* Rendering again with another token and other env and secret_env values
 * changes nothing: none of them is in the script or the submit body. */
static void check_secrets(forge_prepared_t *p, const forge_config_t *cfg)
{
    forge_launch_t *l = &p->request->launch;
    size_t n = 1 + l->env_count + l->secret_env_count, k = 0;
    char ***slots = forge_xcalloc(n, sizeof(*slots));
    char **saved = forge_xcalloc(n, sizeof(*saved));
    char *script;
    json_t *payload = NULL;
    forge_error_t err = {0};

    if (l->ingest_token)
        slots[k++] = &l->ingest_token;
    for (size_t i = 0; i < l->env_count; i++)
        slots[k++] = &l->env[i].value;
    for (size_t i = 0; i < l->secret_env_count; i++)
        slots[k++] = &l->secret_env[i].value;
    for (size_t i = 0; i < k; i++) {
        saved[i] = *slots[i];
        *slots[i] = other_value(saved[i]);
    }
    script = forge_render_script(l, cfg);
    if (forge_render_payload(l, cfg, catalog, script, &payload, &err) !=
        FORGE_OK) {
        fprintf(stderr, "fuzz_prepare: second render failed: %s\n",
                err.message);
        abort();
    }
    for (size_t i = 0; i < k; i++) {
        free(*slots[i]);
        *slots[i] = saved[i];
    }
    /* (A value may also be written elsewhere in the request, as a command
     * argument say: only a difference counts.) */
    if (strcmp(script, p->script) != 0) {
        dump_script(p->script);
        fprintf(stderr, "fuzz_prepare: the ingest token or an env or "
                        "secret_env value shapes the script\n");
        abort();
    }
    if (!json_equal(payload, p->payload)) {
        fprintf(stderr, "fuzz_prepare: the ingest token or an env or "
                        "secret_env value shapes the submit body\n");
        abort();
    }
    free(script);
    json_decref(payload);
    free(slots);
    free(saved);
}

static void check_error_json(const forge_error_t *err)
{
    char *text = forge_error_json(err);
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);

    if (!json_is_object(o) || !json_is_string(json_object_get(o, "error")) ||
        !json_is_string(json_object_get(o, "field")) ||
        !json_is_string(json_object_get(o, "message")) ||
        !strcmp(forge_rc_name(err->code), "unknown")) {
        fprintf(stderr, "fuzz_prepare: bad error JSON for code %d: %s\n",
                (int)err->code, text);
        abort();
    }
    json_decref(o);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < 2; i++) {
        forge_prepared_t *p = NULL;
        forge_error_t err = {0};
        forge_rc_t rc = forge_prepare((const char *)data, size, configs[i],
                                      catalog, &p, &err);

        if (rc != FORGE_OK) {
            if (p)
                abort();
            check_error_json(&err);
            continue;
        }
        if (p->script) {
            check_bash_syntax(p->script);
            check_srun_argv(p, configs[i]);
            check_secrets(p, configs[i]);
        }
        forge_prepared_destroy(p);
    }
    return 0;
}
