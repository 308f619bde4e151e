/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_render_hostile.c - shell safety of the rendered batch script, end to
 * end: hostile request values (quotes, command substitution, separators,
 * globs, control characters, odd Unicode, the longest values) in every field
 * that reaches the script, rendered in both runtime profiles, single-pool
 * and heterogeneous, then
 *   (a) `bash -n` accepts the script;
 *   (b) the script is RUN with stand-ins first on PATH
 *       (tests/data/hostile/: srun and apptainer that read their argv the
 *       way the real srun, Pyxis/enroot and apptainer do) and a recorder as
 *       the request's command[0]: the recorder must run once per task with
 *       its argv and environment byte for byte as requested, every mount
 *       must arrive as requested, env and secret_env values and the
 *       ingest token only through the credentials file (which the script
 *       removes before srun starts), the token only in the environment,
 *       env values in srun's environment only under a prefix
 *       (APPTAINERENV_<NAME>, or FORGE_E_<NAME> that the enroot-pyxis task
 *       wrapper unpacks; never in srun's argv, which Slurm keeps as the
 *       step's SubmitLine), and nothing else may run (no canary file
 *       appears);
 *   (c) what cannot be passed safely is refused with the contract's code
 *       and the JSON path of the value.
 * Scenarios named "*_or_refused" accept either outcome: a refusal with the
 * given code, or exact delivery.
 *
 * FORGE_KEEP_HOSTILE=1 keeps the temporary folders (/tmp/forge-hostile-*).
 */
#include "prepare/prepare.h"
#include "render/render.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOSTILE_DATA FORGE_SOURCE_DIR "/tests/data/hostile"
#define LAUNCH_ID    "hostile-1"
#define ATTEMPT      3
#define JOB_TIMEOUT  "60"

static const char catalog_json[] =
    "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
    "\"gpus_per_node\": 8}, \"a100\": {\"slurm_constraint\": \"a100\", "
    "\"gpus_per_node\": 8}}}";

/* ---- small helpers ---------------------------------------------------- */

typedef struct strv {
    char **v;
    size_t *len; /* byte lengths (values may be compared as bytes) */
    size_t n, cap;
} strv_t;

static void sv_pushn(strv_t *s, const char *x, size_t n)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = forge_xrealloc(s->v, s->cap * sizeof(*s->v));
        s->len = forge_xrealloc(s->len, s->cap * sizeof(*s->len));
    }
    s->v[s->n] = forge_xstrndup(x, n);
    s->len[s->n++] = n;
}

static void sv_push(strv_t *s, const char *x)
{
    sv_pushn(s, x, strlen(x));
}

static void sv_pushf(strv_t *s, const char *fmt, ...) FORGE_PRINTF(2, 3);
static void sv_pushf(strv_t *s, const char *fmt, ...)
{
    va_list ap;
    char *x;

    va_start(ap, fmt);
    cr_assert_geq(vasprintf(&x, fmt, ap), 0);
    va_end(ap);
    sv_push(s, x);
    free(x);
}

static void sv_free(strv_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    free(s->len);
    memset(s, 0, sizeof(*s));
}

/* Splits a buffer of NUL-terminated strings. */
static void sv_split0(strv_t *s, const char *buf, size_t len)
{
    for (size_t i = 0; i < len;) {
        const char *end = memchr(buf + i, '\0', len - i);
        size_t n = end ? (size_t)(end - (buf + i)) : len - i;
        sv_pushn(s, buf + i, n);
        i += n + 1;
    }
}

static char *xasprintf(const char *fmt, ...) FORGE_PRINTF(1, 2);
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *x;

    va_start(ap, fmt);
    cr_assert_geq(vasprintf(&x, fmt, ap), 0);
    va_end(ap);
    return x;
}

/* A printable rendering of bytes for messages (static, truncated). */
static const char *show(const char *s, size_t n)
{
    static char bufs[4][700];
    static int which;
    char *out = bufs[which++ % 4];
    size_t o = 0;

    if (!s)
        return "(none)";
    for (size_t i = 0; i < n && o < 600; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, 8, "\\x%02x", c);
    }
    if (o >= 600)
        o += (size_t)snprintf(out + o, 32, "...(%zu bytes)", n);
    out[o] = '\0';
    return out;
}

static const char *shows(const char *s)
{
    return show(s, s ? strlen(s) : 0);
}

static char *slurp(const char *path, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;

    cr_assert_eq(forge_read_file(path, 64 << 20, &buf, &n), 0, "read %s", path);
    if (len)
        *len = n;
    return buf;
}

static void spitn(const char *path, const char *text, size_t n, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

    cr_assert_geq(fd, 0, "create %s", path);
    cr_assert_eq(write(fd, text, n), (ssize_t)n, "write %s", path);
    close(fd);
}

static void spit(const char *path, const char *text, mode_t mode)
{
    spitn(path, text, strlen(text), mode);
}

static void mkdir_p(const char *path)
{
    char *p = forge_xstrdup(path);

    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    cr_assert(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s", shows(p));
    free(p);
}

static void copy_exec(const char *from, const char *to)
{
    char *text = slurp(from, NULL);

    spit(to, text, 0755);
    free(text);
}

/* Runs argv (NULL-terminated) and returns its wait status. */
static int run(char *const argv[], char *const envp[], const char *cwd,
               const char *log)
{
    int status;
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int out = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644)
                      : open("/dev/null", O_WRONLY);
        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(out, 2) < 0 || (cwd && chdir(cwd) != 0))
            _exit(126);
        if (envp)
            execve(argv[0], argv, envp);
        else
            execv(argv[0], argv);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* Replaces every "@C@" by the canary folder (new). */
static char *with_canary(const char *tmpl, const char *canary)
{
    size_t cn = strlen(canary), n = 0;
    char *out;

    for (const char *p = tmpl; (p = strstr(p, "@C@")); p += 3)
        n++;
    out = forge_xmalloc(strlen(tmpl) + n * cn + 1);
    out[0] = '\0';
    for (const char *p = tmpl, *q; *p; p = q + 3) {
        q = strstr(p, "@C@");
        if (!q) {
            strcat(out, p);
            break;
        }
        strncat(out, p, (size_t)(q - p));
        strcat(out, canary);
    }
    return out;
}

static json_t *jstr(const char *s)
{
    json_t *j = json_string(s);

    cr_assert_not_null(j, "not valid UTF-8: %s", shows(s));
    return j;
}

/* ---- the temporary job world ------------------------------------------ */

/* The recorder's file name: it is command[0], so hostile too. */
static const char recorder_name[] =
    "rec '$(touch p-rec1)' `touch p-rec2` \"; touch p-rec3; \" "
    "|& * ? ~ ! %s %n \\ \xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xae";

typedef struct fx {
    char root[64];    /* everything lives under it */
    char storage[96]; /* host and cluster storage root alike */
    char canary[96];  /* an injected command would write here */
    char rec[96];     /* what the stand-ins and the recorder saw */
    char bin[96];     /* srun, apptainer, the recorder */
    char work[96];    /* the batch script's cwd */
    char recorder[512];
    forge_runtime_profile_t profile;
    forge_config_t *cfg;
    forge_series_catalog_t *cat;
} fx_t;

static fx_t fx;

/* out has room for 96 bytes. */
static void fx_path(char *out, const char *rel)
{
    snprintf(out, 96, "%s/%s", fx.root, rel);
}

static void fx_init(forge_runtime_profile_t profile)
{
    char tmpl[] = "/tmp/forge-hostile-XXXXXX", path[PATH_MAX * 2];
    char *env_storage, *env_profile;
    forge_error_t err = {0};

    cr_assert_not_null(mkdtemp(tmpl));
    cr_assert_not_null(realpath(tmpl, path));
    cr_assert_lt(strlen(path), sizeof(fx.root) - 1, "%s: too long", path);
    memcpy(fx.root, path, strlen(path) + 1);
    fx_path(fx.storage, "storage");
    fx_path(fx.canary, "canary");
    fx_path(fx.rec, "rec");
    fx_path(fx.bin, "bin");
    fx_path(fx.work, "work");
    snprintf(fx.recorder, sizeof(fx.recorder), "%s/%s", fx.bin, recorder_name);
    const char *dirs[] = {fx.canary, fx.rec, fx.bin, fx.work};
    for (size_t i = 0; i < 4; i++)
        mkdir_p(dirs[i]);
    snprintf(path, sizeof(path), "%s/home", fx.root);
    mkdir_p(path);
    snprintf(path, sizeof(path), "%s/runtimes/images", fx.storage);
    mkdir_p(path);
    snprintf(path, sizeof(path), "%s/runtimes/images/x.sif", fx.storage);
    spit(path, "", 0644);
    snprintf(path, sizeof(path), "%s/runtimes/images/x.sqsh", fx.storage);
    spit(path, "", 0644);
    snprintf(path, sizeof(path), "%s/srun", fx.bin);
    copy_exec(HOSTILE_DATA "/srun", path);
    snprintf(path, sizeof(path), "%s/apptainer", fx.bin);
    copy_exec(HOSTILE_DATA "/apptainer", path);
    copy_exec(HOSTILE_DATA "/recorder", fx.recorder);

    fx.profile = profile;
    env_storage = xasprintf("FORGE_STORAGE_ROOT=%s", fx.storage);
    char *env_cluster = xasprintf("FORGE_SLURM_STORAGE_ROOT=%s", fx.storage);
    env_profile = xasprintf("FORGE_SLURM_RUNTIME_PROFILE=%s",
                            forge_runtime_profile_name(profile));
    char *envp[] = {env_storage, env_cluster, env_profile, NULL};
    cr_assert_eq(forge_config_load(envp, &fx.cfg, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(
        forge_series_parse(catalog_json, strlen(catalog_json), &fx.cat, &err),
        FORGE_OK, "%s", err.message);
    free(env_storage);
    free(env_cluster);
    free(env_profile);
}

static void fx_fini(void)
{
    if (fx.root[0] && !getenv("FORGE_KEEP_HOSTILE")) {
        char *argv[] = {"/bin/rm", "-rf", "--", fx.root, NULL};
        run(argv, NULL, NULL, NULL);
    }
    forge_config_destroy(fx.cfg);
    forge_series_catalog_destroy(fx.cat);
    memset(&fx, 0, sizeof(fx));
}

static const char *image_format(void)
{
    return fx.profile == FORGE_PROFILE_APPTAINER ? "sif" : "sqsh";
}

/* ---- requests --------------------------------------------------------- */

/* A valid request with the recorder as its program; het: two pools. */
static json_t *base_request(bool het)
{
    json_t *req = json_object(), *image = json_object(), *pools;
    char *path = xasprintf("images/x.%s", image_format());

    json_object_set_new(req, "kind", json_string("launch"));
    json_object_set_new(req, "launch_id", json_string(LAUNCH_ID));
    json_object_set_new(req, "attempt", json_integer(ATTEMPT));
    json_object_set_new(image, "path", json_string(path));
    json_object_set_new(image, "format", json_string(image_format()));
    json_object_set_new(req, "image", image);
    json_object_set_new(req, "command", json_pack("[s]", fx.recorder));
    if (het) {
        pools =
            json_pack("[{s:s, s:s, s:i, s:i, s:i, s:i}, "
                      "{s:s, s:s, s:i, s:i, s:i}]",
                      "name", "trainer", "series", "h200", "nodes", 1,
                      "gpus_per_node", 8, "tasks_per_node", 2, "cpus_per_task",
                      4, "name", "rollout", "series", "a100", "nodes", 2,
                      "gpus_per_node", 0, "tasks_per_node", 1);
        json_object_set_new(req, "roles",
                            json_pack("{s:s, s:s, s:s}", "actor", "trainer",
                                      "generator", "rollout", "critic",
                                      "trainer"));
    } else {
        pools = json_pack("[{s:s, s:s, s:i, s:i, s:i}]", "name", "p0", "series",
                          "h200", "nodes", 1, "gpus_per_node", 8,
                          "tasks_per_node", 2);
        json_object_set_new(req, "roles", json_pack("{s:s}", "main", "p0"));
    }
    cr_assert_not_null(pools);
    json_object_set_new(req, "pools", pools);
    free(path);
    return req;
}

static void add_mount(json_t *req, const char *source, const char *target,
                      bool ro)
{
    json_t *mounts = json_object_get(req, "mounts"), *m = json_object();
    char *dir;

    if (!mounts) {
        mounts = json_array();
        json_object_set_new(req, "mounts", mounts);
    }
    json_object_set_new(m, "source", jstr(source));
    json_object_set_new(m, "target", jstr(target));
    if (ro)
        json_object_set_new(m, "read_only", json_true());
    json_array_append_new(mounts, m);
    /* The source must exist where the stand-ins look. */
    dir = source[0] == '/' ? forge_xstrdup(source)
                           : xasprintf("%s/%s", fx.storage, source);
    mkdir_p(dir);
    free(dir);
}

static void add_to_map(json_t *req, const char *map, const char *name,
                       const char *value)
{
    json_t *env = json_object_get(req, map);

    if (!env) {
        env = json_object();
        json_object_set_new(req, map, env);
    }
    json_object_set_new(env, name, jstr(value));
}

static void add_env(json_t *req, const char *name, const char *value)
{
    add_to_map(req, "env", name, value);
}

static void add_secret_env(json_t *req, const char *name, const char *value)
{
    add_to_map(req, "secret_env", name, value);
}

static void add_args(json_t *req, const char *const *args, size_t n)
{
    json_t *cmd = json_object_get(req, "command");

    for (size_t i = 0; i < n; i++)
        json_array_append_new(cmd, jstr(args[i]));
}

/* ---- what the job must see -------------------------------------------- */

static const char *jget(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static char *cluster_source(const char *source)
{
    return source[0] == '/' ? forge_xstrdup(source)
                            : xasprintf("%s/%s", fx.storage, source);
}

static char *roles_of(const json_t *req, const char *pool)
{
    const char *role;
    json_t *v;
    char *out = forge_xstrdup("");

    json_object_foreach(json_object_get(req, "roles"), role, v)
    {
        if (strcmp(json_string_value(v), pool) != 0)
            continue;
        char *next = xasprintf("%s%s%s", out, out[0] ? " " : "", role);
        free(out);
        out = next;
    }
    return out;
}

static int jint(const json_t *o, const char *key, int dflt)
{
    json_t *v = json_object_get(o, key);

    return v ? (int)json_integer_value(v) : dflt;
}

/* srun's whole argv; the task wrappers' text (apptainer's forge_task,
 * enroot-pyxis' forge_unpack) is "(the task wrapper)" at wrapper_at[]. */
static void expected_srun_argv(const json_t *req, strv_t *out,
                               size_t *wrapper_at, size_t *nwrappers)
{
    json_t *pools = json_object_get(req, "pools");
    json_t *mounts = json_object_get(req, "mounts");
    json_t *command = json_object_get(req, "command");
    const char *workdir = jget(req, "workdir");
    char *image = xasprintf("%s/runtimes/%s", fx.storage,
                            jget(json_object_get(req, "image"), "path"));
    size_t np = json_array_size(pools);

    *nwrappers = 0;
    for (size_t i = 0; i < np; i++) {
        json_t *pool = json_array_get(pools, i);
        char *roles = roles_of(req, jget(pool, "name"));

        if (i)
            sv_push(out, ":");
        if (np > 1)
            sv_pushf(out, "--het-group=%zu", i);
        sv_pushf(out, "--nodes=%d", jint(pool, "nodes", 1));
        sv_pushf(out, "--ntasks-per-node=%d", jint(pool, "tasks_per_node", 1));
        if (jint(pool, "cpus_per_task", 0))
            sv_pushf(out, "--cpus-per-task=%d", jint(pool, "cpus_per_task", 0));
        sv_push(out, "--kill-on-bad-exit=1");
        if (i) { /* a het component's own logs, in the staging folder,
                  * appended to (a requeued job's runs) */
            sv_push(out, "--open-mode=append");
            sv_pushf(out, "--output=%s/staging/%s/%d/%s.out", fx.storage,
                     jget(req, "launch_id"), jint(req, "attempt", 1),
                     jget(pool, "name"));
            sv_pushf(out, "--error=%s/staging/%s/%d/%s.err", fx.storage,
                     jget(req, "launch_id"), jint(req, "attempt", 1),
                     jget(pool, "name"));
        }
        if (fx.profile == FORGE_PROFILE_APPTAINER) {
            sv_push(out, "/bin/bash");
            sv_push(out, "-c");
            wrapper_at[(*nwrappers)++] = out->n;
            sv_push(out, "(the task wrapper)");
            sv_push(out, "forge-task");
            sv_push(out, jget(pool, "name"));
            sv_push(out, roles);
            sv_push(out, "apptainer");
            sv_push(out, "exec");
            sv_push(out, "--cleanenv");
            if (jint(pool, "gpus_per_node", 0))
                sv_push(out, "--nv");
            for (size_t m = 0; m < json_array_size(mounts); m++) {
                json_t *mo = json_array_get(mounts, m);
                char *src = cluster_source(jget(mo, "source"));
                sv_push(out, "--bind");
                sv_pushf(out, "%s:%s%s", src, jget(mo, "target"),
                         json_is_true(json_object_get(mo, "read_only")) ? ":ro"
                                                                        : "");
                free(src);
            }
            if (workdir) {
                sv_push(out, "--pwd");
                sv_push(out, workdir);
            }
            sv_push(out, image);
        } else {
            sv_pushf(out, "--container-image=%s", image);
            if (json_array_size(mounts)) {
                char *spec = forge_xstrdup("");
                for (size_t m = 0; m < json_array_size(mounts); m++) {
                    json_t *mo = json_array_get(mounts, m);
                    char *src = cluster_source(jget(mo, "source"));
                    char *next = xasprintf(
                        "%s%s%s:%s%s", spec, m ? "," : "", src,
                        jget(mo, "target"),
                        json_is_true(json_object_get(mo, "read_only")) ? ":ro"
                                                                       : "");
                    free(spec);
                    free(src);
                    spec = next;
                }
                sv_pushf(out, "--container-mounts=%s", spec);
                free(spec);
            }
            if (workdir)
                sv_pushf(out, "--container-workdir=%s", workdir);
            sv_push(out, "--no-container-mount-home");
            sv_push(out, "/bin/sh");
            sv_push(out, "-c");
            wrapper_at[(*nwrappers)++] = out->n;
            sv_push(out, "(the task wrapper)");
            sv_push(out, "forge-env");
            sv_push(out, jget(pool, "name"));
            sv_push(out, roles);
        }
        for (size_t a = 0; a < json_array_size(command); a++)
            sv_push(out, json_string_value(json_array_get(command, a)));
        free(roles);
    }
    free(image);
}

/* pyxis fstab_escape(). */
static char *fstab_escape(const char *s)
{
    char *out = forge_xmalloc(strlen(s) * 4 + 1), *o = out;

    for (; *s; s++) {
        switch (*s) {
        case ' ':
            o += sprintf(o, "\\040");
            break;
        case '\t':
            o += sprintf(o, "\\011");
            break;
        case '\n':
            o += sprintf(o, "\\012");
            break;
        case '\\':
            o += sprintf(o, "\\134");
            break;
        default:
            *o++ = *s;
        }
    }
    *o = '\0';
    return out;
}

/* Where the task's cwd must be: the workdir mapped back through the mount
 * it lies under (nothing is really mounted), else the script's cwd. */
static char *expected_cwd(const json_t *req)
{
    const char *workdir = jget(req, "workdir");
    json_t *mounts = json_object_get(req, "mounts");
    const json_t *best = NULL;
    size_t best_len = 0;

    if (!workdir)
        return forge_xstrdup(fx.work);
    for (size_t m = 0; m < json_array_size(mounts); m++) {
        const json_t *mo = json_array_get(mounts, m);
        const char *t = jget(mo, "target");
        size_t n = strlen(t);
        if (!strncmp(workdir, t, n) &&
            (workdir[n] == '\0' || workdir[n] == '/') && n > best_len)
            best = mo, best_len = n;
    }
    cr_assert_not_null(best, "test bug: the workdir must lie under a mount");
    char *src = cluster_source(jget(best, "source"));
    char *cwd = xasprintf("%s%s", src, workdir + best_len);
    free(src);
    return cwd;
}

/* ---- checks ------------------------------------------------------------ */

static void assert_bash_syntax(const char *script_path)
{
    char *argv[] = {"/bin/bash", "-n", (char *)script_path, NULL};
    char log[PATH_MAX];
    int status;

    fx_path(log, "bash-n.log");
    status = run(argv, NULL, NULL, log);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *why = slurp(log, NULL);
        cr_assert_fail("bash -n refused the script (%s): %s", script_path,
                       shows(why));
    }
}

/* No canary file anywhere: nothing but the recorder ran. */
static void walk_for_canaries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d))) {
        char *p;
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        p = xasprintf("%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0) {
            if (S_ISDIR(st.st_mode) && strcmp(p, fx.canary) != 0)
                walk_for_canaries(p);
            else
                cr_expect(strncmp(e->d_name, "p-", 2) != 0,
                          "an injected command ran: it created %s", shows(p));
        }
        free(p);
    }
    closedir(d);
}

static void assert_no_canary(void)
{
    DIR *d = opendir(fx.canary);
    struct dirent *e;

    cr_assert_not_null(d);
    while ((e = readdir(d)))
        cr_expect(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."),
                  "an injected command ran: it created %s/%s", fx.canary,
                  shows(e->d_name));
    closedir(d);
    walk_for_canaries(fx.root);
}

static bool contains(const char *hay, size_t n, const char *needle)
{
    return needle && needle[0] && memmem(hay, n, needle, strlen(needle));
}

/* A secret, plain and as JSON would escape it, appears nowhere. */
static void assert_secret_absent(const char *what, const char *text, size_t n,
                                 const char *label, const char *secret)
{
    json_t *j = json_string(secret);
    char *escaped = json_dumps(j, JSON_ENCODE_ANY);
    size_t en = strlen(escaped);

    cr_assert(!contains(text, n, secret), "%s is in %s", label, what);
    escaped[en - 1] = '\0'; /* the quotes */
    cr_assert(!contains(text, n, escaped + 1), "%s (JSON-escaped) is in %s",
              label, what);
    free(escaped);
    json_decref(j);
}

static void assert_token_absent(const char *what, const char *text, size_t n,
                                const char *token)
{
    assert_secret_absent(what, text, n, "the ingest token", token);
}

/* No env or secret_env value shapes the script or the submit body:
 * rendered again with every value changed, both are the same. (The corpus
 * also puts each string in the command, so looking for the values themselves
 * would find those; hostile_corpus() looks for values found nowhere else.) */
static void assert_env_values_unused(const json_t *req,
                                     const forge_prepared_t *p)
{
    static const char *const maps[] = {"env", "secret_env"};
    json_t *other = json_deep_copy(req);
    forge_prepared_t *q = NULL;
    forge_error_t err = {0};
    const char *k;
    json_t *v;

    for (size_t m = 0; m < 2; m++) {
        json_object_foreach(json_object_get(other, maps[m]), k, v)
        {
            char *changed = xasprintf("other value of %s", k);
            json_string_set(v, changed);
            free(changed);
        }
    }
    char *text = json_dumps(other, JSON_COMPACT);
    cr_assert_eq(forge_prepare(text, strlen(text), fx.cfg, fx.cat, &q, &err),
                 FORGE_OK, "%s", err.message);
    cr_assert(!strcmp(q->script, p->script),
              "an env or secret_env value shapes the script");
    cr_assert(json_equal(q->payload, p->payload),
              "an env or secret_env value shapes the submit body");
    forge_prepared_destroy(q);
    free(text);
    json_decref(other);
}

/* The credentials file as the worker's staging step writes it (mode 0600);
 * its path (new), or NULL when the launch has none. */
static char *write_credentials(const forge_launch_t *l)
{
    forge_buf_t b = FORGE_BUF_INIT;
    char *dir, *path = NULL;

    if (!forge_render_credentials(l, &b))
        return NULL;
    dir = xasprintf("%s/staging/%s/%d", fx.storage, LAUNCH_ID, ATTEMPT);
    mkdir_p(dir);
    path = xasprintf("%s/%s", dir, FORGE_CREDENTIALS_FILE);
    spitn(path, b.data, b.len, 0600);
    forge_buf_clear(&b);
    free(dir);
    return path;
}

static const char *env_get(const strv_t *env, const char *name)
{
    size_t n = strlen(name);
    const char *found = NULL;

    for (size_t i = 0; i < env->n; i++) {
        if (!strncmp(env->v[i], name, n) && env->v[i][n] == '=') {
            cr_assert_null(found, "%s is in the environment twice", name);
            found = env->v[i] + n + 1;
        }
    }
    return found;
}

static const char *nz(const char *s)
{
    return s ? s : "(none)";
}

static bool allowed_var(const json_t *req, const char *var)
{
    static const char *const fixed[] = {
        "PATH",
        "HOME",
        "LANG",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
        "FAKE_REC_DIR",
        "FORGE_LAUNCH_ID",
        "FORGE_ATTEMPT",
        "FORGE_POOLS",
        "FORGE_STAGING",
        "FORGE_POOL",
        "FORGE_ROLES",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "NNODES",
        "FORGE_INGEST_ENDPOINT",
        "FORGE_INGEST_TOKEN",
    };
    size_t n = strcspn(var, "=");
    char *name = forge_xstrndup(var, n);
    bool ok = forge_str_starts_with(name, "SLURM_") ||
              (fx.profile == FORGE_PROFILE_APPTAINER &&
               forge_str_starts_with(name, "APPTAINER_")) ||
              json_object_get(json_object_get(req, "env"), name) ||
              json_object_get(json_object_get(req, "secret_env"), name);

    for (size_t i = 0; !ok && i < sizeof(fixed) / sizeof(fixed[0]); i++)
        ok = !strcmp(name, fixed[i]);
    free(name);
    return ok;
}

/* One recorder run: argv, environment and cwd as requested. Returns the
 * index of its pool. */
static size_t check_task(const json_t *req, const char *dir, const char *token,
                         bool *rank_seen, size_t world)
{
    json_t *command = json_object_get(req, "command");
    json_t *pools = json_object_get(req, "pools");
    strv_t argv = {0}, env = {0};
    char *path, *buf, *cwd, *want_cwd;
    size_t len, pool_index = 0;
    const char *pool, *k;
    json_t *v;

    path = xasprintf("%s/argv", dir);
    buf = slurp(path, &len);
    sv_split0(&argv, buf, len);
    free(buf);
    free(path);
    cr_assert_eq(argv.n, json_array_size(command) + 1,
                 "the program got %zu arguments, not %zu (argv[1] %s)",
                 argv.n ? argv.n - 1 : 0, json_array_size(command),
                 argv.n > 1 ? show(argv.v[1], argv.len[1]) : "-");
    cr_assert_str_eq(argv.v[0], "/bin/bash", "the recorder's interpreter");
    for (size_t i = 0; i < json_array_size(command); i++) {
        const char *want = json_string_value(json_array_get(command, i));
        cr_assert(argv.len[i + 1] == strlen(want) &&
                      !memcmp(argv.v[i + 1], want, argv.len[i + 1]),
                  "command[%zu]: the program got %s, the request says %s", i,
                  show(argv.v[i + 1], argv.len[i + 1]), shows(want));
    }

    path = xasprintf("%s/environ", dir);
    buf = slurp(path, &len);
    sv_split0(&env, buf, len);
    free(buf);
    free(path);
    for (size_t m = 0; m < 2; m++) {
        const char *map = m ? "secret_env" : "env";
        json_object_foreach(json_object_get(req, map), k, v)
        {
            const char *got = env_get(&env, k);
            cr_assert_not_null(got, "%s %s did not reach the program", map, k);
            cr_assert_str_eq(got, json_string_value(v),
                             "%s %s: the program got %s, the request says %s",
                             map, k, shows(got), shows(json_string_value(v)));
        }
    }
    for (size_t i = 0; i < env.n; i++)
        cr_assert(allowed_var(req, env.v[i]),
                  "the program's environment has %s, which nobody asked for",
                  show(env.v[i], env.len[i]));
    pool = env_get(&env, "FORGE_POOL");
    cr_assert_not_null(pool, "FORGE_POOL missing");
    for (pool_index = 0; pool_index < json_array_size(pools); pool_index++)
        if (!strcmp(pool, jget(json_array_get(pools, pool_index), "name")))
            break;
    cr_assert_lt(pool_index, json_array_size(pools), "FORGE_POOL=%s",
                 shows(pool));
    char *roles = roles_of(req, pool);
    cr_assert_str_eq(nz(env_get(&env, "FORGE_ROLES")), roles);
    free(roles);
    cr_assert_str_eq(nz(env_get(&env, "FORGE_LAUNCH_ID")), LAUNCH_ID);
    char *staging =
        xasprintf("%s/staging/%s/%d", fx.storage, LAUNCH_ID, ATTEMPT);
    cr_assert_str_eq(nz(env_get(&env, "FORGE_STAGING")), staging);
    free(staging);
    const char *procid = env_get(&env, "SLURM_PROCID");
    cr_assert_not_null(procid, "SLURM_PROCID did not reach the program");
    size_t rank = strtoul(procid, NULL, 10);
    cr_assert_lt(rank, world);
    cr_assert(!rank_seen[rank], "rank %zu ran twice", rank);
    rank_seen[rank] = true;
    json_t *ingest = json_object_get(req, "ingest");
    if (ingest) {
        const char *got = env_get(&env, "FORGE_INGEST_TOKEN");
        cr_assert(got && !strcmp(got, token),
                  "FORGE_INGEST_TOKEN: the program got %s", shows(got));
        got = env_get(&env, "FORGE_INGEST_ENDPOINT");
        cr_assert(got && !strcmp(got, jget(ingest, "endpoint")),
                  "FORGE_INGEST_ENDPOINT: the program got %s", shows(got));
    } else {
        cr_assert_null(env_get(&env, "FORGE_INGEST_TOKEN"));
    }

    path = xasprintf("%s/cwd", dir);
    cwd = slurp(path, &len);
    free(path);
    if (len && cwd[len - 1] == '\n')
        cwd[len - 1] = '\0';
    want_cwd = expected_cwd(req);
    cr_assert_str_eq(cwd, want_cwd, "cwd: the program ran in %s, not %s",
                     shows(cwd), shows(want_cwd));
    free(cwd);
    free(want_cwd);
    sv_free(&argv);
    sv_free(&env);
    return pool_index;
}

/* apptainer: each run's parsed binds are the request's mounts. */
static void check_binds(const json_t *req, const char *file)
{
    json_t *mounts = json_object_get(req, "mounts");
    strv_t got = {0};
    size_t len;
    char *buf = slurp(file, &len);

    sv_split0(&got, buf, len);
    free(buf);
    cr_assert_eq(got.n, 3 * json_array_size(mounts),
                 "apptainer parsed %zu binds from %zu mounts (first: %s -> "
                 "%s)",
                 got.n / 3, json_array_size(mounts),
                 got.n ? show(got.v[0], got.len[0]) : "-",
                 got.n > 1 ? show(got.v[1], got.len[1]) : "-");
    for (size_t m = 0; m < json_array_size(mounts); m++) {
        json_t *mo = json_array_get(mounts, m);
        char *src = cluster_source(jget(mo, "source"));
        const char *opt =
            json_is_true(json_object_get(mo, "read_only")) ? "ro" : "";
        cr_assert_str_eq(got.v[3 * m], src,
                         "mounts[%zu]: apptainer binds source %s, not %s", m,
                         shows(got.v[3 * m]), shows(src));
        cr_assert_str_eq(got.v[3 * m + 1], jget(mo, "target"),
                         "mounts[%zu]: apptainer binds at %s, not %s", m,
                         shows(got.v[3 * m + 1]), shows(jget(mo, "target")));
        cr_assert_str_eq(got.v[3 * m + 2], opt,
                         "mounts[%zu]: apptainer bind options %s, not %s", m,
                         shows(got.v[3 * m + 2]), opt);
        free(src);
    }
    sv_free(&got);
}

/* pyxis: the lines enroot's mounts() printed are the request's mounts. */
static void check_enroot_mounts(const json_t *req, const char *file)
{
    json_t *mounts = json_object_get(req, "mounts");
    char *want = forge_xstrdup(""), *got;

    for (size_t m = 0; m < json_array_size(mounts); m++) {
        json_t *mo = json_array_get(mounts, m);
        char *src = cluster_source(jget(mo, "source"));
        char *es = fstab_escape(src), *et = fstab_escape(jget(mo, "target"));
        char *next = xasprintf(
            "%s%s %s x-create=auto,rbind%s\n", want, es, et,
            json_is_true(json_object_get(mo, "read_only")) ? ",ro" : "");
        free(want);
        free(src);
        free(es);
        free(et);
        want = next;
    }
    got = slurp(file, NULL);
    cr_assert_str_eq(got, want,
                     "enroot mounts (pyxis' start configuration) differ:\n"
                     "got  %s\nwant %s",
                     shows(got), shows(want));
    free(got);
    free(want);
}

static size_t count_prefixed(const char *dir, const char *prefix, strv_t *names)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0;

    cr_assert_not_null(d);
    while ((e = readdir(d)))
        if (forge_str_starts_with(e->d_name, prefix)) {
            n++;
            if (names)
                sv_pushf(names, "%s/%s", dir, e->d_name);
        }
    closedir(d);
    return n;
}

static char *const *job_env(const json_t *req, strv_t *env)
{
    json_t *pools = json_object_get(req, "pools");
    int nodes = 0;

    for (size_t i = 0; i < json_array_size(pools); i++)
        nodes += jint(json_array_get(pools, i), "nodes", 1);
    /* As slurmd starts a batch script: the submit body's environment (no
     * locale) plus Slurm's variables. */
    sv_pushf(env, "PATH=%s:/usr/local/bin:/usr/bin:/bin", fx.bin);
    sv_pushf(env, "HOME=%s/home", fx.root);
    sv_pushf(env, "FAKE_REC_DIR=%s", fx.rec);
    sv_push(env, "SLURM_JOB_ID=123");
    sv_push(env, "SLURM_JOBID=123");
    sv_pushf(env, "SLURM_JOB_NAME=forge-%s-%d", LAUNCH_ID, ATTEMPT);
    sv_pushf(env, "SLURM_JOB_NUM_NODES=%d", nodes);
    sv_pushf(env, "SLURM_NNODES=%d", nodes);
    sv_pushf(env, "SLURM_JOB_NODELIST=node[1-%d]", nodes);
    sv_pushf(env, "SLURM_NODELIST=node[1-%d]", nodes);
    sv_pushf(env, "SLURM_SUBMIT_DIR=%s", fx.work);
    sv_push(env, "SLURM_CLUSTER_NAME=hostile");
    sv_push(env, "SLURM_PROCID=0");
    sv_push(env, "SLURM_LOCALID=0");
    sv_push(env, "SLURM_NODEID=0");
    sv_push(env, "SLURM_CPUS_ON_NODE=8");
    if (json_array_size(pools) > 1) {
        sv_pushf(env, "SLURM_HET_SIZE=%zu", json_array_size(pools));
        for (size_t i = 0; i < json_array_size(pools); i++)
            sv_pushf(env, "SLURM_JOB_ID_HET_GROUP_%zu=%zu", i, 123 + i);
    }
    sv_pushn(env, "", 0);
    free(env->v[env->n - 1]);
    env->v[env->n - 1] = NULL;
    return env->v;
}

/* Names the job itself has in srun's environment (a request's value for
 * one of them reaches the tasks over it, never as it). */
static bool host_var(const char *name)
{
    static const char *const host[] = {
        "PATH",       "HOME",   "PWD",         "OLDPWD",
        "SHLVL",      "_",      "MASTER_ADDR", "MASTER_PORT",
        "WORLD_SIZE", "NNODES", "FAKE_REC_DIR"};

    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        if (!strcmp(name, host[i]))
            return true;
    return false;
}

/* srun's environment: every env and secret_env pair under the profile's
 * prefix, byte for byte (enroot-pyxis: FORGE_E_<NAME>, the names once each
 * in FORGE_ENV_NAMES, credentials order; apptainer: APPTAINERENV_<NAME>),
 * none under its own name, where srun, Pyxis, enroot or ld.so would read
 * it; the token as FORGE_INGEST_TOKEN (pyxis) or APPTAINERENV_ (apptainer). */
static void check_srun_env(const json_t *req, const char *token)
{
    static const char *const maps[] = {"env", "secret_env"};
    bool pyxis = fx.profile == FORGE_PROFILE_ENROOT_PYXIS;
    const char *prefix = pyxis ? "FORGE_E_" : "APPTAINERENV_";
    char path[PATH_MAX];
    strv_t env = {0};
    size_t len;
    const char *k;
    json_t *v;
    char *names = forge_xstrdup("");

    snprintf(path, sizeof(path), "%s/srun.environ", fx.rec);
    char *buf = slurp(path, &len);
    sv_split0(&env, buf, len);
    free(buf);
    for (size_t m = 0; m < 2; m++) {
        json_object_foreach(json_object_get(req, maps[m]), k, v)
        {
            char *pname = xasprintf("%s%s", prefix, k);
            const char *got = env_get(&env, pname);
            cr_assert(got && !strcmp(got, json_string_value(v)),
                      "%s %s: srun's environment has %s=%s", maps[m], k, pname,
                      shows(got));
            if (!host_var(k))
                cr_assert_null(env_get(&env, k),
                               "%s %s is in srun's environment under its "
                               "own name",
                               maps[m], k);
            char *next = xasprintf("%s%s%s", names, names[0] ? " " : "", k);
            free(names);
            names = next;
            free(pname);
        }
    }
    /* (No pairs at all: no credentials file, nothing to list.) */
    const char *listed = env_get(&env, "FORGE_ENV_NAMES");
    if (pyxis && (names[0] || token))
        cr_assert(listed && !strcmp(listed, names),
                  "FORGE_ENV_NAMES is %s, not %s", shows(listed), shows(names));
    else
        cr_assert_null(listed);
    for (size_t i = 0; !pyxis && i < env.n; i++)
        cr_assert_not(forge_str_starts_with(env.v[i], "FORGE_E_"));
    const char *tok = env_get(&env, pyxis ? "FORGE_INGEST_TOKEN"
                                          : "APPTAINERENV_FORGE_INGEST_TOKEN");
    if (token)
        cr_assert(tok && !strcmp(tok, token),
                  "the token in srun's environment: %s", shows(tok));
    else
        cr_assert_null(tok);
    free(names);
    sv_free(&env);
}

/*
 * Renders req, checks the script and payload, runs the script, and checks
 * everything the stand-ins and the recorder saw. If `refusal` is set, a
 * refusal with that code and a field starting with `field` is accepted
 * instead (returns false then).
 */
static bool render_and_run(json_t *req, const char *refusal, const char *field)
{
    char *text = json_dumps(req, JSON_COMPACT);
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};
    forge_rc_t rc;
    char script_path[PATH_MAX], path[PATH_MAX * 2], log[PATH_MAX];
    const char *token = jget(json_object_get(req, "ingest"), "token");

    cr_assert_not_null(text);
    rc = forge_prepare(text, strlen(text), fx.cfg, fx.cat, &p, &err);
    free(text);
    if (rc && refusal && !strcmp(forge_rc_name(rc), refusal) &&
        forge_str_starts_with(err.field, field))
        return false;
    cr_assert_eq(rc, FORGE_OK, "%s refused it: %s at %s: %s",
                 forge_runtime_profile_name(fx.profile), forge_rc_name(rc),
                 shows(err.field), shows(err.message));

    /* (a) the script parses; neither the token nor an env or secret_env
     * value is in the script or the submit body: they go through the
     * credentials file. */
    fx_path(script_path, "job.sh");
    spit(script_path, p->script, 0644);
    assert_bash_syntax(script_path);
    char *payload = json_dumps(p->payload, JSON_COMPACT);
    if (token) {
        assert_token_absent("the script", p->script, strlen(p->script), token);
        assert_token_absent("the submit body", payload, strlen(payload), token);
    }
    assert_env_values_unused(req, p);
    free(payload);
    char *credentials = write_credentials(&p->request->launch);

    /* (b) run it. */
    strv_t env = {0};
    char *argv[] = {"/usr/bin/timeout", "-k",        "5", JOB_TIMEOUT,
                    "/bin/bash",        script_path, NULL};
    fx_path(log, "job.log");
    int status = run(argv, job_env(req, &env), fx.work, log);
    sv_free(&env);

    /* Most telling first: did anything else run, what did srun get, how
     * did the runtime read the mounts; then did the job work at all. */
    assert_no_canary();

    /* srun: one step, its argv exactly the request's. */
    strv_t want = {0}, got = {0};
    size_t wrappers[FORGE_POOLS_MAX], nwrappers, len;
    expected_srun_argv(req, &want, wrappers, &nwrappers);
    snprintf(path, sizeof(path), "%s/srun.argv", fx.rec);
    if (access(path, F_OK) != 0) {
        char *joblog = slurp(log, NULL);
        cr_assert_fail("srun never ran (status %d): %s", status, shows(joblog));
    }
    char *buf = slurp(path, &len);
    sv_split0(&got, buf, len);
    if (token)
        assert_token_absent("srun's argv", buf, len, token);
    free(buf);
    for (size_t i = 0; i < want.n && i < got.n; i++) {
        bool wrapper = false;
        for (size_t w = 0; w < nwrappers; w++)
            wrapper |= wrappers[w] == i;
        if (wrapper) {
            cr_assert_str_eq(got.v[i], got.v[wrappers[0]],
                             "the task wrapper differs between components");
            cr_assert(!strstr(got.v[i], fx.root),
                      "request data in the task wrapper");
            continue;
        }
        cr_assert(got.len[i] == want.len[i] &&
                      !memcmp(got.v[i], want.v[i], got.len[i]),
                  "srun argv[%zu]: %s, expected %s", i,
                  show(got.v[i], got.len[i]), show(want.v[i], want.len[i]));
    }
    cr_assert_eq(got.n, want.n, "srun got %zu arguments, expected %zu", got.n,
                 want.n);
    sv_free(&want);
    sv_free(&got);
    check_srun_env(req, token);

    /* Mounts as the runtime understood them. */
    strv_t files = {0};
    if (fx.profile == FORGE_PROFILE_APPTAINER) {
        count_prefixed(fx.rec, "binds.", &files);
        for (size_t i = 0; i < files.n; i++)
            check_binds(req, files.v[i]);
    } else if (json_array_size(json_object_get(req, "mounts"))) {
        count_prefixed(fx.rec, "enroot.mounts.", &files);
        for (size_t i = 0; i < files.n; i++)
            check_enroot_mounts(req, files.v[i]);
        cr_assert_eq(files.n, json_array_size(json_object_get(req, "pools")));
    }
    sv_free(&files);

    char *out = slurp(log, NULL);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the job failed (status %d): %s", status, shows(out));
    free(out);
    cr_assert(!credentials || access(credentials, F_OK) != 0,
              "the job left its credentials file");
    free(credentials);

    /* The recorder: once per task, everything as requested. */
    json_t *pools = json_object_get(req, "pools");
    size_t world = 0, per_pool[FORGE_POOLS_MAX] = {0};
    for (size_t i = 0; i < json_array_size(pools); i++)
        world += (size_t)(jint(json_array_get(pools, i), "nodes", 1) *
                          jint(json_array_get(pools, i), "tasks_per_node", 1));
    strv_t tasks = {0};
    bool *rank_seen = forge_xcalloc(world, sizeof(bool));
    cr_assert_eq(count_prefixed(fx.rec, "task.", &tasks), world,
                 "the program ran %zu times, not once per task (%zu)", tasks.n,
                 world);
    for (size_t t = 0; t < tasks.n; t++)
        per_pool[check_task(req, tasks.v[t], token, rank_seen, world)]++;
    for (size_t i = 0; i < json_array_size(pools); i++) {
        json_t *pool = json_array_get(pools, i);
        cr_assert_eq(
            per_pool[i],
            (size_t)(jint(pool, "nodes", 1) * jint(pool, "tasks_per_node", 1)),
            "pool %s ran %zu tasks", jget(pool, "name"), per_pool[i]);
    }
    free(rank_seen);
    sv_free(&tasks);

    if (fx.profile == FORGE_PROFILE_APPTAINER)
        cr_assert_eq(count_prefixed(fx.rec, "binds.", NULL), world,
                     "apptainer ran %zu times for %zu tasks",
                     count_prefixed(fx.rec, "binds.", NULL), world);
    forge_prepared_destroy(p);
    return true;
}

/* ---- the hostile corpus ----------------------------------------------- */

/* "@C@" is the canary folder: a string that manages to run its command
 * leaves a file there (or a p-* file in some cwd). */
static const char *const corpus[] = {
    "$(touch @C@/p-cmdsub)",
    "`touch @C@/p-backtick`",
    "'; touch @C@/p-sq; '",
    "\"; touch @C@/p-dq; \"",
    "'\\''; touch @C@/p-sqesc; '\\''",
    "'\"'\"'; touch @C@/p-mixed #",
    "\\'; touch @C@/p-bsq; \\'",
    "\\\"; touch @C@/p-bdq; \\\"",
    "\n touch @C@/p-nl\n",
    "\r\ntouch @C@/p-crlf\r\n",
    "\ttab\tseparated\t",
    ";touch${IFS}@C@/p-ifs",
    "${IFS}",
    "$IFS$9",
    "$'\\x27'; touch @C@/p-ansic; $'\\x27'",
    "$'\\n'",
    "$\"localized\"",
    "&& touch @C@/p-and",
    "|| touch @C@/p-or",
    "| tee @C@/p-pipe",
    "> @C@/p-redir",
    ">> @C@/p-append",
    "< /etc/passwd",
    "2>&1",
    "&",
    "; touch @C@/p-semi",
    "<(touch @C@/p-procsub)",
    ">(touch @C@/p-procsub2)",
    "$((1+1))",
    "$[1+1]",
    "{a,b}",
    "{1..3}",
    "*",
    "/*",
    "?",
    "[a-z]*",
    "~",
    "~root",
    "~/x",
    "!",
    "!!",
    "!$",
    "!-1",
    "^foo^bar",
    "#not a comment",
    " # leading space and hash",
    "  leading spaces",
    "trailing spaces  ",
    "",
    " ",
    "ends with a backslash\\",
    "\\",
    "\\\\",
    "\\n\\t\\0\\x41\\u0041\\e[31m\\",
    "%s%s%s%n%x%p%1$s%%",
    "%",
    "$",
    "$$",
    "$0",
    "$@",
    "$*",
    "$#",
    "$?",
    "$-",
    "$1",
    "${!SLURM_@}",
    "$FORGE_INGEST_TOKEN",
    "${FORGE_INGEST_TOKEN}",
    "$(cat \"$FORGE_STAGING/credentials\")",
    "\"$forge_task\"",
    "$forge_task",
    "-",
    "--",
    "-c",
    "--help",
    "--het-group=1",
    "--container-image=/evil.sqsh",
    "--container-mounts=/:/host",
    "--bind",
    "/:/host",
    "FOO=bar",
    "=",
    "::",
    ": ",
    " :",
    "a:b",
    "a,b",
    "\x1b[2J\x1b]0;title\x07",
    "\x01\x02\x03\x7f",
    "\xe2\x80\xae"
    "RTL override\xe2\x80\xac",
    "zero\xe2\x80\x8bwidth\xe2\x80\x8djoiner\xef\xbb\xbf",
    "emoji \xf0\x9f\x98\x80\xf0\x9f\x94\xa5\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0"
    "\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7",
    "\xc2\x85NEL\xe2\x80\xa8LS\xe2\x80\xa9PS\xc2\xa0NBSP",
    "\xef\xbc\x87"
    "fullwidth\xef\xbc\x82quotes",
    "e\xcc\x81 combining",
    "\xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\xa9 "
    "\xd7\xa2\xd7\x91\xd7\xa8\xd7\x99\xd7\xaa",
    "\xe4\xb8\xad\xe6\x96\x87",
    "'",
    "''",
    "\"",
    "\"\"",
    "`",
    "\\'",
    "'\\''",
};
#define CORPUS_N (sizeof(corpus) / sizeof(corpus[0]))

/* n repetitions of unit (new). */
static char *repeat(const char *unit, size_t n)
{
    size_t u = strlen(unit);
    char *out = forge_xmalloc(u * n + 1);

    for (size_t i = 0; i < n; i++)
        memcpy(out + i * u, unit, u);
    out[u * n] = '\0';
    return out;
}

/* Every hostile string in every place that reaches the script. */
static json_t *corpus_request(bool het)
{
    json_t *req = base_request(het), *labels = json_object();
    strv_t c = {0};
    char name[32];

    for (size_t i = 0; i < CORPUS_N; i++) {
        char *s = with_canary(corpus[i], fx.canary);
        sv_push(&c, s);
        free(s);
    }
    /* command: every string, then the longest argument a request may hold:
     * 16383 code points (~ 38 KiB of é😀'). */
    add_args(req, (const char *const *)c.v, c.n);
    char *long_arg = repeat("\xc3\xa9\xf0\x9f\x98\x80'", 5461);
    add_args(req, (const char *const *)&long_arg, 1);
    /* env: every string as a value, and 16000 code points of 😀'$( */
    for (size_t i = 0; i < c.n; i++) {
        snprintf(name, sizeof(name), "HOSTILE_%03zu", i);
        add_env(req, name, c.v[i]);
    }
    char *long_env = repeat("\xf0\x9f\x98\x80'$(", 4000);
    add_env(req, "HOSTILE_LONG", long_env);
    char *lower = with_canary("$(touch @C@/p-lower)", fx.canary);
    add_env(req, "lower_case_name", lower);
    free(lower);
    /* secret_env: every string as a value again, and a long one. */
    for (size_t i = 0; i < c.n; i++) {
        snprintf(name, sizeof(name), "SECRET_%03zu", i);
        add_secret_env(req, name, c.v[i]);
    }
    char *long_secret = repeat("\xc3\xa9\\\n\"$(", 2700);
    add_secret_env(req, "SECRET_LONG", long_secret);
    free(long_secret);
    add_env(req, "ONLY_IN_ENV", "ENV-ONLY-4f2a");
    add_secret_env(req, "ONLY_IN_SECRET_ENV", "SECRET-ONLY-9b1c");
    /* workdir: under a mount, so the stand-ins can enter it. */
    char *wd = with_canary("/ws/$(touch @C@/p-wd) `touch @C@/p-wd2` "
                           "'\"; touch @C@/p-wd3; \"' ~ * ! %s \\ & | ; "
                           "\xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xae"
                           "/sub dir",
                           fx.canary);
    json_object_set_new(req, "workdir", jstr(wd));
    add_mount(req, "wsdata", "/ws", false);
    char *wd_dir = xasprintf("%s/wsdata%s", fx.storage, wd + 3);
    mkdir_p(wd_dir);
    /* mounts: a mount path may hold only [A-Za-z0-9._/+@=-] (anything else
     * has a meaning to Pyxis, enroot or Apptainer: see the refusal cases
     * below); what is left must still arrive as written. */
    add_mount(req, "d1/it.s_a+dir=x@y-z", "/mnt/it.s+t=1@x-y", true);
    char *abs_src = xasprintf("%s/d2=-x", fx.storage);
    add_mount(req, abs_src, "/mnt/b_x_y", false);
    add_mount(req, "-rf", "/mnt/--bind", true);
    /* image: a file with a hostile name (no ':' or '@': those are refused
     * as registry references; no '/' in the commands, so they would leave
     * their p-* file in some cwd). */
    char *image =
        forge_xstrdup("images/x '$(touch p-img)' `touch${IFS}p-img2` ; | & # "
                      "\xc3\xa9\xf0\x9f\x98\x80.");
    char *image_file =
        xasprintf("%s/runtimes/%s%s", fx.storage, image, image_format());
    *strrchr(image_file, '/') = '\0';
    mkdir_p(image_file);
    free(image_file);
    image_file =
        xasprintf("%s/runtimes/%s%s", fx.storage, image, image_format());
    spit(image_file, "", 0644);
    char *image_path = xasprintf("%s%s", image, image_format());
    json_object_set_new(json_object_get(req, "image"), "path",
                        jstr(image_path));
    free(image_path);
    free(image_file);
    free(image);
    /* labels: events only, never the job. */
    for (size_t i = 0; i < c.n && json_object_size(labels) < 63; i++) {
        snprintf(name, sizeof(name), "l%02zu", i);
        json_object_set_new(labels, name, jstr(c.v[i]));
    }
    json_object_set_new(labels, "only-in-events",
                        json_string("LABEL-ONLY-5e1d $(touch p-label)"));
    json_object_set_new(req, "labels", labels);
    json_object_set_new(req, "project", json_string("proj-1.x@y"));
    json_object_set_new(req, "name", json_string("run.v2@team-a"));
    json_object_set_new(req, "owner", json_string("o-wner"));
    char *endpoint = with_canary("https://ingest.example/$(touch${IFS}@C@/"
                                 "p-ep)/`touch${IFS}@C@/p-ep2`/'\"/%s/"
                                 "?a=1&b=$HOME;x|y\\",
                                 fx.canary);
    char *token = with_canary(
        "tok-7c1e'$(touch @C@/p-tok)`touch @C@/p-tok2`\"\\;|&*~!%s%n "
        "\xc3\xa9\xf0\x9f\x98\x80 end\\",
        fx.canary);
    json_object_set_new(
        req, "ingest",
        json_pack("{s:s, s:s}", "endpoint", endpoint, "token", token));
    free(endpoint);
    free(token);
    free(abs_src);
    free(wd_dir);
    free(wd);
    free(long_env);
    free(long_arg);
    sv_free(&c);
    return req;
}

static void hostile_corpus(forge_runtime_profile_t profile, bool het)
{
    fx_init(profile);
    json_t *req = corpus_request(het);
    char *text = json_dumps(req, JSON_COMPACT);

    cr_assert_lt(strlen(text), FORGE_REQUEST_MAX_BYTES);
    free(text);
    cr_assert(render_and_run(req, NULL, NULL));
    /* Labels stay out of the job; env values out of the script. */
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};
    text = json_dumps(req, JSON_COMPACT);
    cr_assert_eq(forge_prepare(text, strlen(text), fx.cfg, fx.cat, &p, &err),
                 FORGE_OK);
    char *payload = json_dumps(p->payload, JSON_COMPACT);
    cr_assert_null(strstr(p->script, "LABEL-ONLY-5e1d"));
    cr_assert_null(strstr(payload, "LABEL-ONLY-5e1d"));
    /* Env values reach the job through the credentials file alone. */
    static const char *const only_in_env[] = {"ENV-ONLY-4f2a",
                                              "SECRET-ONLY-9b1c"};
    char *argv_path = xasprintf("%s/srun.argv", fx.rec);
    size_t argv_len;
    char *argv = slurp(argv_path, &argv_len);
    for (size_t i = 0; i < 2; i++) {
        cr_assert_null(strstr(p->script, only_in_env[i]));
        cr_assert_null(strstr(payload, only_in_env[i]));
        cr_assert(!contains(argv, argv_len, only_in_env[i]),
                  "%s is in srun's argv (the step's SubmitLine)",
                  only_in_env[i]);
    }
    free(argv);
    free(argv_path);
    free(payload);
    free(text);
    forge_prepared_destroy(p);
    json_decref(req);
}

Test(hostile, corpus_apptainer_single, .fini = fx_fini, .timeout = 120)
{
    hostile_corpus(FORGE_PROFILE_APPTAINER, false);
}
Test(hostile, corpus_apptainer_het, .fini = fx_fini, .timeout = 120)
{
    hostile_corpus(FORGE_PROFILE_APPTAINER, true);
}
Test(hostile, corpus_pyxis_single, .fini = fx_fini, .timeout = 120)
{
    hostile_corpus(FORGE_PROFILE_ENROOT_PYXIS, false);
}
Test(hostile, corpus_pyxis_het, .fini = fx_fini, .timeout = 120)
{
    hostile_corpus(FORGE_PROFILE_ENROOT_PYXIS, true);
}

/* ---- values some runtime reads as syntax: delivered exactly, or refused */

/* A lone ":" among the arguments: srun splits het components on it
 * anywhere in its argv (srun_job.c, opt.c), so the rest of the command
 * would become a component of its own. */
static json_t *colon_request(bool het)
{
    json_t *req = base_request(het);
    char *touch = with_canary("touch @C@/p-colon", fx.canary);
    const char *args[] = {"before", ":", "--het-group=0", "/bin/sh", "-c",
                          touch,    ":", "after"};

    add_args(req, args, sizeof(args) / sizeof(args[0]));
    free(touch);
    return req;
}

static void lone_colon(forge_runtime_profile_t profile, bool het)
{
    fx_init(profile);
    json_t *req = colon_request(het);
    render_and_run(req, "schema", "$.command[2]");
    json_decref(req);
}

Test(hostile, lone_colon_arg_apptainer_single_or_refused, .fini = fx_fini,
     .timeout = 60)
{
    lone_colon(FORGE_PROFILE_APPTAINER, false);
}
Test(hostile, lone_colon_arg_apptainer_het_or_refused, .fini = fx_fini,
     .timeout = 60)
{
    lone_colon(FORGE_PROFILE_APPTAINER, true);
}
Test(hostile, lone_colon_arg_pyxis_single_or_refused, .fini = fx_fini,
     .timeout = 60)
{
    lone_colon(FORGE_PROFILE_ENROOT_PYXIS, false);
}
Test(hostile, lone_colon_arg_pyxis_het_or_refused, .fini = fx_fini,
     .timeout = 60)
{
    lone_colon(FORGE_PROFILE_ENROOT_PYXIS, true);
}

/* Mount paths with '$', '`' or '"': Pyxis writes each mount into enroot's
 * start configuration as `echo "SRC DST FLAGS"`, a bash file enroot
 * sources (pyxis_slurmstepd.c, fstab_escape() only escapes blanks and
 * '\'). */
static void mount_shell_specials(forge_runtime_profile_t profile)
{
    fx_init(profile);
    json_t *req = base_request(false);
    /* ${IFS}: fstab_escape() would turn a blank into \040. */
    char *s1 = with_canary("q/$(touch${IFS}@C@/p-m1)", fx.canary);
    char *t1 = with_canary("/m/$(touch${IFS}@C@/p-m2)", fx.canary);
    char *s2 = with_canary("q/`touch${IFS}@C@/p-m3`", fx.canary);
    char *t2 = with_canary("/m/\";touch${IFS}@C@/p-m4;\"", fx.canary);

    add_mount(req, s1, t1, false);
    add_mount(req, s2, t2, true);
    add_mount(req, "q/${HOME}", "/m/$HOME/${PATH}", false);
    render_and_run(req, "mount_refused", "$.mounts[");
    free(s1);
    free(t1);
    free(s2);
    free(t2);
    json_decref(req);
}

Test(hostile, mount_shell_specials_apptainer_or_refused, .fini = fx_fini,
     .timeout = 60)
{
    mount_shell_specials(FORGE_PROFILE_APPTAINER);
}
Test(hostile, mount_shell_specials_pyxis_or_refused, .fini = fx_fini,
     .timeout = 60)
{
    mount_shell_specials(FORGE_PROFILE_ENROOT_PYXIS);
}

/* Blanks, quotes, globs and odd Unicode in mount paths: refused too. */
static void mount_blanks_and_quotes(forge_runtime_profile_t profile)
{
    static const char *const pairs[][2] = {
        {"d1/it's a dir; rm -rf ~ & echo | * ? [x] {a b}", "/mnt/x"},
        {"d1", "/mnt/it's; touch p-mnt & | * ? ! ~ # %n"},
        {"d1/\xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xae", "/mnt/y"},
        {"d1", "/mnt/zero\xe2\x80\x8bwidth"},
    };

    fx_init(profile);
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        json_t *req = base_request(false);
        add_mount(req, pairs[i][0], pairs[i][1], false);
        cr_assert_not(render_and_run(req, "mount_refused", "$.mounts["),
                      "accepted: %s -> %s", pairs[i][0], pairs[i][1]);
        json_decref(req);
    }
}

Test(hostile, mount_blanks_quotes_apptainer_refused, .fini = fx_fini,
     .timeout = 60)
{
    mount_blanks_and_quotes(FORGE_PROFILE_APPTAINER);
}
Test(hostile, mount_blanks_quotes_pyxis_refused, .fini = fx_fini, .timeout = 60)
{
    mount_blanks_and_quotes(FORGE_PROFILE_ENROOT_PYXIS);
}

/* Mount paths apptainer's bind parser (ParseBindPath) reads as syntax:
 * '^' separates like ',', a '\' before ':' escapes it (so "DST\:ro" is a
 * read-write mount at "DST\:ro"), and each part is TrimSpace()d. */
typedef enum bind_case { BIND_CARET, BIND_BACKSLASH, BIND_BLANKS } bind_case_t;

static void bind_specials(forge_runtime_profile_t profile, bind_case_t which)
{
    fx_init(profile);
    json_t *req = base_request(false);

    switch (which) {
    case BIND_CARET:
        add_mount(req, "b/caret^dir", "/b/caret^x", false);
        break;
    case BIND_BACKSLASH:
        add_mount(req, "b/src-ends-in-backslash\\", "/b/src", false);
        add_mount(req, "b/ro", "/b/ro-target-ends-in-backslash\\", true);
        break;
    case BIND_BLANKS:
        add_mount(req, "b/sp", "/b/trailing-space ", false);
        add_mount(req, "b/nbsp", "/b/trailing-nbsp\xc2\xa0", false);
        break;
    }
    render_and_run(req, "mount_refused", "$.mounts[");
    json_decref(req);
}

Test(hostile, bind_caret_apptainer_or_refused, .fini = fx_fini, .timeout = 60)
{
    bind_specials(FORGE_PROFILE_APPTAINER, BIND_CARET);
}
Test(hostile, bind_caret_pyxis_or_refused, .fini = fx_fini, .timeout = 60)
{
    bind_specials(FORGE_PROFILE_ENROOT_PYXIS, BIND_CARET);
}
Test(hostile, bind_backslash_apptainer_or_refused, .fini = fx_fini,
     .timeout = 60)
{
    bind_specials(FORGE_PROFILE_APPTAINER, BIND_BACKSLASH);
}
Test(hostile, bind_backslash_pyxis_or_refused, .fini = fx_fini, .timeout = 60)
{
    bind_specials(FORGE_PROFILE_ENROOT_PYXIS, BIND_BACKSLASH);
}
Test(hostile, bind_blanks_apptainer_or_refused, .fini = fx_fini, .timeout = 60)
{
    bind_specials(FORGE_PROFILE_APPTAINER, BIND_BLANKS);
}
Test(hostile, bind_blanks_pyxis_or_refused, .fini = fx_fini, .timeout = 60)
{
    bind_specials(FORGE_PROFILE_ENROOT_PYXIS, BIND_BLANKS);
}

/* Env names apptainer does not pass as NAME=value from APPTAINERENV_NAME
 * (internal/pkg/util/env/create.go): HOME is dropped, APPEND_PATH and
 * PREPEND_PATH change PATH instead. */
static void apptainer_env_names(forge_runtime_profile_t profile)
{
    fx_init(profile);
    json_t *req = base_request(false);
    char *home = with_canary("/home/x'$(touch @C@/p-home)", fx.canary);

    add_env(req, "HOME", home);
    add_env(req, "APPEND_PATH", "/opt/append");
    add_env(req, "PREPEND_PATH", "/opt/prepend");
    add_env(req, "APPTAINER_SHELL", "/bin/sh");
    render_and_run(req, "env_refused", "$.env.");
    free(home);
    json_decref(req);
}

Test(hostile, env_names_apptainer_or_refused, .fini = fx_fini, .timeout = 60)
{
    apptainer_env_names(FORGE_PROFILE_APPTAINER);
}
Test(hostile, env_names_pyxis_or_refused, .fini = fx_fini, .timeout = 60)
{
    apptainer_env_names(FORGE_PROFILE_ENROOT_PYXIS);
}

/* Names srun, Pyxis, enroot or the dynamic loader read from srun's
 * environment: a request may set them for its program, and they must reach
 * it exactly, but never srun (the stand-in stops if one reaches it). */
static void runtime_names(forge_runtime_profile_t profile)
{
    fx_init(profile);
    json_t *req = base_request(true);
    char *preload = with_canary("@C@/p-preload.so", fx.canary);

    add_env(req, "LD_PRELOAD", preload);
    add_env(req, "LD_LIBRARY_PATH", "/nonexistent/lib");
    add_env(req, "SRUN_CPUS_PER_TASK", "99");
    add_env(req, "PYXIS_CONTAINER_IMAGE", "/nonexistent.sqsh");
    add_secret_env(req, "ENROOT_ROOTFS", "/nonexistent/rootfs");
    add_secret_env(req, "SRUN_EXPORT_ENV", "NONE");
    cr_assert(render_and_run(req, NULL, NULL));
    free(preload);
    json_decref(req);
}

Test(hostile, runtime_names_stay_inert_apptainer, .fini = fx_fini,
     .timeout = 60)
{
    runtime_names(FORGE_PROFILE_APPTAINER);
}
Test(hostile, runtime_names_stay_inert_pyxis, .fini = fx_fini, .timeout = 60)
{
    runtime_names(FORGE_PROFILE_ENROOT_PYXIS);
}

/* ---- (c) refused, with the code and the JSON path --------------------- */

typedef struct refusal {
    char name[40];
    char patch[240]; /* JSON object merged into the request (its data) */
    char code[24];
    char field[64];
    bool cloudevent;
} refusal_t;

static refusal_t refusals[] = {
    {"env SLURM_", "{\"env\": {\"OK_1\": \"x\", \"SLURM_JOB_ID\": \"1\"}}",
     "env_refused", "$.env.SLURM_JOB_ID", false},
    {"env FORGE_", "{\"env\": {\"FORGE_INGEST_TOKEN\": \"x\"}}", "env_refused",
     "$.env.FORGE_INGEST_TOKEN", false},
    {"env name $()", "{\"env\": {\"A$(touch x)\": \"1\"}}", "env_refused",
     "$.env.A$(touch x)", false},
    {"env name blank", "{\"env\": {\"A B\": \"1\"}}", "env_refused",
     "$.env.A B", false},
    {"env name =", "{\"env\": {\"A=B\": \"1\"}}", "env_refused", "$.env.A=B",
     false},
    {"env name digit", "{\"env\": {\"1A\": \"1\"}}", "env_refused", "$.env.1A",
     false},
    {"env name empty", "{\"env\": {\"\": \"1\"}}", "env_refused", "$.env.",
     false},
    {"env name newline", "{\"env\": {\"A\\nB\": \"1\"}}", "env_refused",
     "$.env.A\nB", false},
    {"env value NUL", "{\"env\": {\"A\": \"x\\u0000y\"}}", "schema", "$.env.A",
     false},
    {"mount source :",
     "{\"mounts\": [{\"source\": \"data:/etc\", \"target\": \"/d\"}]}",
     "mount_refused", "$.mounts[0].source", false},
    {"mount source ,",
     "{\"mounts\": [{\"source\": \"a,b\", \"target\": \"/d\"}]}",
     "mount_refused", "$.mounts[0].source", false},
    {"mount target :",
     "{\"mounts\": [{\"source\": \"data\", \"target\": \"/d:/etc\"}]}",
     "mount_refused", "$.mounts[0].target", false},
    {"mount target ,",
     "{\"mounts\": [{\"source\": \"data\", \"target\": \"/d,/etc\"}]}",
     "mount_refused", "$.mounts[0].target", false},
    {"mount target :ro",
     "{\"mounts\": [{\"source\": \"data\", \"target\": \"/d:ro\"}]}",
     "mount_refused", "$.mounts[0].target", false},
    {"mount target newline",
     "{\"mounts\": [{\"source\": \"data\", \"target\": \"/d\\n/e\"}]}",
     "mount_refused", "$.mounts[0].target", false},
    {"mount target relative",
     "{\"mounts\": [{\"source\": \"data\", \"target\": \"d\"}]}",
     "mount_refused", "$.mounts[0].target", false},
    {"mount source ..",
     "{\"mounts\": [{\"source\": \"../etc\", \"target\": \"/d\"}]}",
     "mount_refused", "$.mounts[0].source", false},
    {"mount source outside",
     "{\"mounts\": [{\"source\": \"/etc\", \"target\": \"/d\"}]}",
     "mount_refused", "$.mounts[0].source", false},
    {"second mount",
     "{\"mounts\": [{\"source\": \"data\", \"target\": \"/d\"}, "
     "{\"source\": \"data\", \"target\": \"/e:/f\"}]}",
     "mount_refused", "$.mounts[1].target", false},
    {"command NUL arg", "{\"command\": [\"/bin/true\", \"a\\u0000b\"]}",
     "schema", "$.command[1]", false},
    {"command NUL program", "{\"command\": [\"/bin/true\\u0000x\"]}", "schema",
     "$.command[0]", false},
    {"command -rf", "{\"command\": [\"-rf\", \"/\"]}", "schema", "$.command[0]",
     false},
    {"command --help", "{\"command\": [\"--help\"]}", "schema", "$.command[0]",
     false},
    {"command A=B", "{\"command\": [\"A=B\", \"/bin/true\"]}", "schema",
     "$.command[0]", false},
    {"command path=", "{\"command\": [\"/usr/bin/x=y\"]}", "schema",
     "$.command[0]", false},
    {"command empty program", "{\"command\": [\"\"]}", "schema", "$.command[0]",
     false},
    {"command empty", "{\"command\": []}", "schema", "$.command", false},
    {"command string", "{\"command\": \"bash -c 'touch x'\"}", "schema",
     "$.command", false},
    {"image docker://",
     "{\"image\": {\"path\": \"docker://ubuntu\", \"format\": \"sif\"}}",
     "oci_image_refused", "$.image.path", false},
    {"image :tag",
     "{\"image\": {\"path\": \"images/x.sif:latest\", \"format\": "
     "\"sqsh\"}}",
     "oci_image_refused", "$.image.path", false},
    {"image registry",
     "{\"image\": {\"path\": \"registry.example/ns/name:tag\", \"format\": "
     "\"sif\"}}",
     "oci_image_refused", "$.image.path", false},
    {"image @digest",
     "{\"image\": {\"path\": \"images/x@sha256\", \"format\": \"sif\"}}",
     "oci_image_refused", "$.image.path", false},
    {"image ':' only",
     "{\"image\": {\"path\": \"/a:b\", \"format\": \"sqsh\"}}",
     "oci_image_refused", "$.image.path", false},
    {"workdir relative", "{\"workdir\": \"w\"}", "schema", "$.workdir", false},
    {"workdir newline", "{\"workdir\": \"/w\\nx\"}", "schema", "$.workdir",
     false},
    {"project $()", "{\"project\": \"$(touch x)\"}", "schema", "$.project",
     false},
    {"name blank", "{\"name\": \"a b\"}", "schema", "$.name", false},
    {"owner quote", "{\"owner\": \"o'x\"}", "schema", "$.owner", false},
    {"label key", "{\"labels\": {\"$(x)\": \"v\"}}", "schema", "$.labels.$(x)",
     false},
    {"label value NUL", "{\"labels\": {\"k\": \"a\\u0000\"}}", "schema",
     "$.labels.k", false},
    {"ingest endpoint blank",
     "{\"ingest\": {\"endpoint\": \"http://x/ $(y)\", \"token\": \"t\"}}",
     "schema", "$.ingest.endpoint", false},
    {"ingest endpoint file:",
     "{\"ingest\": {\"endpoint\": \"file:///etc/passwd\", \"token\": "
     "\"t\"}}",
     "schema", "$.ingest.endpoint", false},
    {"ingest token newline",
     "{\"ingest\": {\"endpoint\": \"http://x/\", \"token\": \"a\\nb\"}}",
     "schema", "$.ingest.token", false},
    {"ingest token NUL",
     "{\"ingest\": {\"endpoint\": \"http://x/\", \"token\": \"a\\u0000\"}}",
     "schema", "$.ingest.token", false},
    {"pool name",
     "{\"pools\": [{\"name\": \"a;b\", \"series\": \"h200\", \"nodes\": 1}]}",
     "schema", "$.pools[0].name", false},
    {"launch_id", "{\"launch_id\": \"../x\"}", "schema", "$.launch_id", false},
    {"role value", "{\"roles\": {\"r\": \"p0;x\"}}", "schema", "$.roles.r",
     false},
    {"secret_env SLURM_", "{\"secret_env\": {\"SLURM_JOB_ID\": \"1\"}}",
     "env_refused", "$.secret_env.SLURM_JOB_ID", false},
    {"secret_env FORGE_", "{\"secret_env\": {\"FORGE_INGEST_TOKEN\": \"x\"}}",
     "env_refused", "$.secret_env.FORGE_INGEST_TOKEN", false},
    {"secret_env HOME", "{\"secret_env\": {\"HOME\": \"/x\"}}", "env_refused",
     "$.secret_env.HOME", false},
    {"secret_env name $()", "{\"secret_env\": {\"A$(touch x)\": \"1\"}}",
     "env_refused", "$.secret_env.A$(touch x)", false},
    {"secret_env name []", "{\"secret_env\": {\"a[$(touch x)]\": \"1\"}}",
     "env_refused", "$.secret_env.a[$(touch x)]", false},
    {"secret_env value NUL", "{\"secret_env\": {\"A\": \"x\\u0000y\"}}",
     "schema", "$.secret_env.A", false},
    {"secret_env in env too",
     "{\"env\": {\"A\": \"1\"}, \"secret_env\": {\"A\": \"2\"}}", "env_refused",
     "$.secret_env.A", false},
    {"tenant", "{\"tenant\": \"a;b\"}", "schema", "$.tenant", false},
    {"CE secret_env", "{\"secret_env\": {\"SLURM_X\": \"1\"}}", "env_refused",
     "$.data.secret_env.SLURM_X", true},
    {"CE env", "{\"env\": {\"SLURM_X\": \"1\"}}", "env_refused",
     "$.data.env.SLURM_X", true},
    {"CE mount", "{\"mounts\": [{\"source\": \"a:b\", \"target\": \"/d\"}]}",
     "mount_refused", "$.data.mounts[0].source", true},
    {"CE mount outside",
     "{\"mounts\": [{\"source\": \"/etc\", \"target\": \"/d\"}]}",
     "mount_refused", "$.data.mounts[0].source", true},
    {"CE image", "{\"image\": {\"path\": \"oras://x\", \"format\": \"sif\"}}",
     "oci_image_refused", "$.data.image.path", true},
    {"CE command", "{\"command\": [\"-x\"]}", "schema", "$.data.command[0]",
     true},
};

ParameterizedTestParameters(hostile, refused)
{
    return cr_make_param_array(refusal_t, refusals,
                               sizeof(refusals) / sizeof(refusals[0]));
}

ParameterizedTest(refusal_t *c, hostile, refused, .fini = fx_fini)
{
    forge_runtime_profile_t profiles[] = {FORGE_PROFILE_APPTAINER,
                                          FORGE_PROFILE_ENROOT_PYXIS};

    for (size_t i = 0; i < 2; i++) {
        json_error_t jerr;
        json_t *patch = json_loads(
            c->patch, JSON_ALLOW_NUL | JSON_DISABLE_EOF_CHECK, &jerr);
        forge_prepared_t *p = (forge_prepared_t *)0x1;
        forge_error_t err = {0};

        fx_init(profiles[i]);
        cr_assert_not_null(patch, "%s: bad patch: %s", c->name, jerr.text);
        json_t *req = base_request(false);
        json_object_set_new(req, "mounts", json_array());
        mkdir_p(fx.storage); /* "data" below it */
        char *data = xasprintf("%s/data", fx.storage);
        mkdir_p(data);
        free(data);
        json_object_update(req, patch);
        if (c->cloudevent) {
            json_object_del(req, "kind");
            req = json_pack("{s:s, s:s, s:s, s:s, s:o}", "specversion", "1.0",
                            "id", "evt-1", "source", "test", "type",
                            "forge.launch.requested", "data", req);
        }
        char *text = json_dumps(req, JSON_COMPACT);
        forge_rc_t rc =
            forge_prepare(text, strlen(text), fx.cfg, fx.cat, &p, &err);
        cr_assert_str_eq(forge_rc_name(rc), c->code, "%s (%s): %s at %s: %s",
                         c->name, forge_runtime_profile_name(fx.profile),
                         forge_rc_name(rc), shows(err.field),
                         shows(err.message));
        cr_assert_str_eq(err.field, c->field, "%s (%s): field %s", c->name,
                         forge_runtime_profile_name(fx.profile),
                         shows(err.field));
        cr_assert_null(p);
        free(text);
        json_decref(req);
        json_decref(patch);
        fx_fini();
    }
}
