/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_render_credentials.c - the rendered script's credentials reader, run
 * for real: bash executes the whole rendered script (both runtime profiles)
 * with a stand-in srun that records its argv and environment, against
 *   - the file forge_render_credentials() writes for hostile values
 *     (newlines, quotes, $(...), backslashes, '=', empty, a trailing
 *     newline): every value must arrive byte for byte where the profile
 *     puts it (apptainer: APPTAINERENV_<NAME>, enroot-pyxis: FORGE_E_<NAME>
 *     listed in FORGE_ENV_NAMES), never in srun's argv nor under its own
 *     name in srun's environment, and the file must be gone before srun
 *     starts;
 *   - crafted files: a malformed name ($(...), a[$(touch X)], '=', blank,
 *     empty, ...) stops the script before srun, and nothing it holds runs;
 *     a missing file (a requeued job), a truncated one, or one with more or
 *     fewer pairs than the worker wrote stops it too, with a `forge:` line.
 * The enroot-pyxis task wrapper (forge_unpack) taken from srun's argv is run
 * for real too, with dash and with bash as /bin/sh, as Pyxis would start it
 * in the container: from srun's environment (plus an image variable), every
 * value must reach the program byte for byte and nothing else of the
 * wrapper's may; hostile names in FORGE_ENV_NAMES, names the shell owns and
 * a FORGE_E_ variable that did not arrive stop it before the program, and
 * no value is ever evaluated.
 *
 * FORGE_KEEP_CREDENTIALS_TEST=1 keeps the temporary folders
 * (/tmp/forge-cred-*).
 */
#include "base/buf.h"
#include "prepare/prepare.h"
#include "render/render.h"
#include "base/util.h"

#include <criterion/criterion.h>
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

#define LAUNCH_ID "cred-1"
#define TOKEN     "tok-'$(touch @R@/p-token)'\\\"`x`"

static const char catalog_json[] =
    "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
    "\"gpus_per_node\": 8}, \"a100\": {\"slurm_constraint\": \"a100\", "
    "\"gpus_per_node\": 8}}}";

/* The stand-in srun: records argv and environment (NUL-separated), and
 * whether the credentials file was still there. */
static const char fake_srun[] =
    "#!/bin/bash\n"
    "printf '%s\\0' \"$@\" >\"$REC/argv\"\n"
    "env -0 >\"$REC/env\"\n"
    "if [ -e \"$FORGE_STAGING/credentials\" ]; then touch \"$REC/leaked\"; "
    "fi\n";

/* The stand-in apptainer: only the image check's `sif list` (render.h),
 * as the real one answers it: an image that is missing, or whose first
 * line is "zeros" (not a SIF), is refused with the real one's first line;
 * one whose first line is "end N" lists a descriptor ending at byte N;
 * any other lists none. */
static const char fake_apptainer[] =
    "#!/bin/bash\n"
    "[ \"$1 $2\" = 'sif list' ] || exit 255\n"
    "usage() { printf '\\nUsage:\\n  apptainer sif list <sif_path>\\n'; "
    "exit 255; }\n"
    "if [ ! -e \"$3\" ]; then\n"
    "    echo \"Error for command \\\"list\\\": open $3: no such file or "
    "directory\"; usage\n"
    "fi\n"
    "first=$(head -n 1 -- \"$3\")\n"
    "[ \"$first\" != zeros ] || { echo 'Error for command \"list\": invalid "
    "SIF magic'; usage; }\n"
    "echo 'ID   |GROUP   |LINK    |SIF POSITION (start-end)  |TYPE'\n"
    "case $first in\n"
    "'end '*) echo \"3    |1       |NONE    |36864-${first#end }     |FS\" ;;\n"
    "esac\n";

typedef struct fx {
    char root[64];
    char storage[96];
    char staging[160];
    char rec[96];
    char bin[96];
    forge_runtime_profile_t profile;
    forge_config_t *cfg;
    forge_series_catalog_t *cat;
} fx_t;

static fx_t fx;

/* ---- helpers ----------------------------------------------------------- */

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

static void spitn(const char *path, const char *data, size_t n, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

    cr_assert_geq(fd, 0, "create %s", path);
    cr_assert_eq(write(fd, data, n), (ssize_t)n, "write %s", path);
    close(fd);
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
    cr_assert(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s", p);
    free(p);
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Replaces every "@R@" by the fixture's root (new). */
static char *at_root(const char *tmpl)
{
    forge_buf_t b = FORGE_BUF_INIT;

    for (const char *p = tmpl, *q; *p; p = q + 3) {
        q = strstr(p, "@R@");
        if (!q) {
            forge_buf_puts(&b, p);
            break;
        }
        forge_buf_append(&b, p, (size_t)(q - p));
        forge_buf_puts(&b, fx.root);
    }
    return forge_buf_take(&b);
}

/* ---- the fixture ------------------------------------------------------- */

static void fx_init(forge_runtime_profile_t profile)
{
    char tmpl[] = "/tmp/forge-cred-XXXXXX";
    forge_error_t err = {0};

    cr_assert_not_null(mkdtemp(tmpl));
    snprintf(fx.root, sizeof(fx.root), "%s", tmpl);
    snprintf(fx.storage, sizeof(fx.storage), "%s/storage", fx.root);
    snprintf(fx.staging, sizeof(fx.staging), "%s/staging/%s/1", fx.storage,
             LAUNCH_ID);
    snprintf(fx.rec, sizeof(fx.rec), "%s/rec", fx.root);
    snprintf(fx.bin, sizeof(fx.bin), "%s/bin", fx.root);
    mkdir_p(fx.staging);
    mkdir_p(fx.rec);
    mkdir_p(fx.bin);
    char *images = xasprintf("%s/runtimes/images", fx.storage);
    mkdir_p(images);
    char *sif = xasprintf("%s/x.sif", images),
         *sqsh = xasprintf("%s/x.sqsh", images);
    spitn(sif, "", 0, 0644);
    spitn(sqsh, "", 0, 0644);
    char *srun = xasprintf("%s/srun", fx.bin);
    spitn(srun, fake_srun, strlen(fake_srun), 0755);
    char *apptainer = xasprintf("%s/apptainer", fx.bin);
    spitn(apptainer, fake_apptainer, strlen(fake_apptainer), 0755);
    free(apptainer);
    char *host = xasprintf("%s/hostname", fx.bin);
    spitn(host, "#!/bin/sh\necho node1\n", 21, 0755);

    fx.profile = profile;
    char *env_storage = xasprintf("FORGE_STORAGE_ROOT=%s", fx.storage);
    char *env_cluster = xasprintf("FORGE_SLURM_STORAGE_ROOT=%s", fx.storage);
    char *env_profile = xasprintf("FORGE_SLURM_RUNTIME_PROFILE=%s",
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
    free(images);
    free(sif);
    free(sqsh);
    free(srun);
    free(host);
}

static void fx_fini(void)
{
    if (fx.root[0] && !getenv("FORGE_KEEP_CREDENTIALS_TEST")) {
        char *cmd = xasprintf("rm -rf -- '%s'", fx.root);
        cr_assert_eq(system(cmd), 0);
        free(cmd);
    }
    forge_config_destroy(fx.cfg);
    forge_series_catalog_destroy(fx.cat);
    memset(&fx, 0, sizeof(fx));
}

/* ---- the request and its run ------------------------------------------ */

typedef struct pair {
    const char *name;
    const char *value; /* "@R@" is the fixture's root */
} pair_t;

/* Values a shell would love to read: none of them may run or change. */
static const pair_t env_pairs[] = {
    {"PLAIN", "plain"},
    {"NEWLINES", "line one\nline two\n\n"},
    {"QUOTES", "it's \"quoted\" '' \"\" '\\'' end"},
    {"CMDSUB", "$(touch @R@/p-env) `touch @R@/p-env2` ${HOME} $((1+1))"},
    {"BACKSLASHES", "\\ \\\\ \\n \\' \\\" \\$ trailing\\"},
    {"EQUALS", "a=b=c"},
    {"EMPTY", ""},
};
static const pair_t secret_pairs[] = {
    {"API_KEY", "sk-'$(touch @R@/p-secret)'\n\\\"; touch @R@/p-semi #"},
    {"MASTER_PORT", "12345"}, /* the request's value beats the default */
    {"lower_name", " spaced  value "},
};
#define NPAIRS(a) (sizeof(a) / sizeof(a[0]))

static json_t *request(void)
{
    const char *fmt = fx.profile == FORGE_PROFILE_APPTAINER ? "sif" : "sqsh";
    char *path = xasprintf("images/x.%s", fmt);
    char *token = at_root(TOKEN);
    json_t *env = json_object(), *secret = json_object();
    json_t *req = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:[s, s], s:[{s:s, s:s, s:i}], s:{s:s, "
        "s:s}}",
        "kind", "launch", "launch_id", LAUNCH_ID, "image", "path", path,
        "format", fmt, "command", "/bin/true", "arg", "pools", "name", "main",
        "series", "h200", "nodes", 1, "ingest", "endpoint",
        "https://ingest.example/v1", "token", token);

    cr_assert_not_null(req);
    for (size_t i = 0; i < NPAIRS(env_pairs); i++) {
        char *v = at_root(env_pairs[i].value);
        json_object_set_new(env, env_pairs[i].name, json_string(v));
        free(v);
    }
    for (size_t i = 0; i < NPAIRS(secret_pairs); i++) {
        char *v = at_root(secret_pairs[i].value);
        json_object_set_new(secret, secret_pairs[i].name, json_string(v));
        free(v);
    }
    json_object_set_new(req, "env", env);
    json_object_set_new(req, "secret_env", secret);
    free(path);
    free(token);
    return req;
}

static forge_prepared_t *prepare(const json_t *req)
{
    char *text = json_dumps(req, JSON_COMPACT);
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_prepare(text, strlen(text), fx.cfg, fx.cat, &p, &err),
                 FORGE_OK, "%s: %s", forge_rc_name(err.code), err.message);
    free(text);
    return p;
}

static char *credentials_path(void)
{
    return xasprintf("%s/%s", fx.staging, FORGE_CREDENTIALS_FILE);
}

/* SLURM_RESTART_COUNT=... for the next run_script (NULL: a first run). */
static const char *restart_var;

/* Runs the script as slurmd would start it; returns its exit status (-1:
 * killed) and what it wrote to stderr (new). */
static int run_script(const char *script, char **errout)
{
    char *job = xasprintf("%s/job.sh", fx.root);
    char *log = xasprintf("%s/job.err", fx.root);
    char *path_var = xasprintf("PATH=%s:/usr/bin:/bin", fx.bin);
    char *rec_var = xasprintf("REC=%s", fx.rec);
    char *envp[] = {path_var, rec_var, "SLURM_JOB_ID=4242", (char *)restart_var,
                    NULL};
    int status;

    spitn(job, script, strlen(script), 0644);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int err = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || err < 0 || dup2(in, 0) < 0 || dup2(err, 1) < 0 ||
            dup2(err, 2) < 0 || chdir(fx.root) != 0)
            _exit(126);
        execle("/bin/bash", "bash", job, (char *)NULL, envp);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    *errout = slurp(log, NULL);
    free(job);
    free(log);
    free(path_var);
    free(rec_var);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Nothing a value or a name holds ran: no p-* file anywhere we look. */
static void assert_nothing_ran(void)
{
    static const char *const canaries[] = {
        "p-token", "p-env", "p-env2", "p-secret", "p-semi", "p-name", "X"};

    for (size_t i = 0; i < sizeof(canaries) / sizeof(canaries[0]); i++) {
        char *a = xasprintf("%s/%s", fx.root, canaries[i]);
        char *b = xasprintf("%s/%s", fx.staging, canaries[i]);
        cr_assert(!exists(a) && !exists(b), "%s ran", canaries[i]);
        free(a);
        free(b);
    }
}

/* The NUL-separated strings of a file. */
typedef struct strs {
    char *buf;
    size_t len;
} strs_t;

static strs_t read_strs(const char *name)
{
    char *path = xasprintf("%s/%s", fx.rec, name);
    strs_t s;

    s.buf = slurp(path, &s.len);
    free(path);
    return s;
}

/* Whether the file holds the string want exactly, as one element. */
static bool strs_has(const strs_t *s, const char *want)
{
    size_t n = strlen(want);

    for (size_t i = 0; i < s->len;) {
        const char *e = s->buf + i;
        size_t el = strnlen(e, s->len - i);
        if (el == n && !memcmp(e, want, n))
            return true;
        i += el + 1;
    }
    return false;
}

/* Whether any element starts with prefix. */
static bool strs_has_prefix(const strs_t *s, const char *prefix)
{
    for (size_t i = 0; i < s->len;) {
        const char *e = s->buf + i;
        size_t el = strnlen(e, s->len - i);
        if (forge_str_starts_with(e, prefix))
            return true;
        i += el + 1;
    }
    return false;
}

/* Whether any element but `skip` (NULL: none) holds needle (non-empty). */
static bool strs_contains(const strs_t *s, const char *needle, const char *skip)
{
    size_t n = strlen(needle);

    for (size_t i = 0; n && i < s->len;) {
        const char *e = s->buf + i;
        size_t el = strnlen(e, s->len - i);
        if ((!skip || strcmp(e, skip) != 0) && memmem(e, el, needle, n))
            return true;
        i += el + 1;
    }
    return false;
}

/* The wrapper of srun's recorded argv: after srun's options, "/bin/sh"
 * "-c" W "forge-env" POOL ROLES, then the program (W, new). */
static char *recorded_wrapper(const strs_t *argv)
{
    const char *e[6];
    size_t at = 0;

    while (at < argv->len && strcmp(argv->buf + at, "/bin/sh") != 0)
        at += strlen(argv->buf + at) + 1;
    for (size_t i = 0; i < 6; i++) {
        cr_assert_lt(at, argv->len, "no /bin/sh -c ... in srun's argv");
        e[i] = argv->buf + at;
        at += strlen(e[i]) + 1;
    }
    cr_assert_str_eq(e[1], "-c");
    cr_assert_str_eq(e[3], "forge-env");
    cr_assert_str_eq(e[4], "main");
    cr_assert_str_eq(e[5], "", "the pool has no roles");
    cr_assert_lt(at, argv->len);
    cr_assert_str_eq(argv->buf + at, "/bin/true", "then the program");
    return forge_xstrdup(e[2]);
}

/* ---- values arrive byte for byte --------------------------------------- */

/* wrapper: the enroot-pyxis task wrapper in argv (constant text, checked
 * on its own), or NULL. */
static void expect_pair(const strs_t *argv, const char *wrapper,
                        const strs_t *env, const char *name, const char *value)
{
    char *word = xasprintf("%s=%s", name, value);
    char *app = xasprintf("APPTAINERENV_%s", word);
    char *pyx = xasprintf("FORGE_E_%s", word);

    if (fx.profile == FORGE_PROFILE_APPTAINER)
        cr_assert(strs_has(env, app),
                  "%s did not reach srun's environment "
                  "as APPTAINERENV_%s",
                  name, name);
    else
        cr_assert(strs_has(env, pyx),
                  "%s did not reach srun's environment as FORGE_E_%s, byte "
                  "for byte",
                  name, name);
    /* Never in srun's argv (the step's SubmitLine), in any form, nor in
     * srun's environment under its own name. */
    cr_assert_not(strs_contains(argv, value, wrapper),
                  "%s's value is in srun's argv", name);
    cr_assert_not(strs_has(env, word), "%s is in srun's environment", name);
    free(word);
    free(app);
    free(pyx);
}

/* The names FORGE_ENV_NAMES must list: env then secret_env, request order
 * (new). */
static char *env_names(const forge_launch_t *l)
{
    forge_buf_t b = FORGE_BUF_INIT;

    for (size_t i = 0; i < l->env_count + l->secret_env_count; i++) {
        const forge_kv_t *kv =
            i < l->env_count ? &l->env[i] : &l->secret_env[i - l->env_count];
        forge_buf_printf(&b, "%s%s", i ? " " : "", kv->key);
    }
    return forge_buf_take(&b);
}

/* Writes the request's credentials file and runs its script, which must
 * succeed and remove the file before srun. */
static void run_ok(const forge_prepared_t *p)
{
    forge_buf_t b = FORGE_BUF_INIT;
    char *cred = credentials_path(), *err;

    cr_assert(forge_render_credentials(&p->request->launch, &b));
    spitn(cred, b.data, b.len, 0600);
    int rc = run_script(p->script, &err);
    cr_assert_eq(rc, 0, "the script failed (%d): %s", rc, err);
    cr_assert_not(exists(cred), "the script left its credentials file");
    char *leaked = xasprintf("%s/leaked", fx.rec);
    cr_assert_not(exists(leaked), "srun started before the file was removed");
    assert_nothing_ran();
    free(leaked);
    free(err);
    free(cred);
    forge_buf_clear(&b);
}

static void values_arrive(forge_runtime_profile_t profile)
{
    fx_init(profile);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);

    run_ok(p);
    strs_t argv = read_strs("argv"), env = read_strs("env");
    char *token = at_root(TOKEN);
    char *wrapper =
        profile == FORGE_PROFILE_ENROOT_PYXIS ? recorded_wrapper(&argv) : NULL;
    for (size_t i = 0; i < NPAIRS(env_pairs); i++) {
        char *v = at_root(env_pairs[i].value);
        expect_pair(&argv, wrapper, &env, env_pairs[i].name, v);
        free(v);
    }
    for (size_t i = 0; i < NPAIRS(secret_pairs); i++) {
        char *v = at_root(secret_pairs[i].value);
        expect_pair(&argv, wrapper, &env, secret_pairs[i].name, v);
        free(v);
    }
    /* The token: in the environment (pyxis passes the job's environment
     * into the container; apptainer gets it as APPTAINERENV_), never in
     * argv; host programs see it only with pyxis. */
    char *plain = xasprintf("FORGE_INGEST_TOKEN=%s", token);
    char *app = xasprintf("APPTAINERENV_FORGE_INGEST_TOKEN=%s", token);
    bool apptainer = profile == FORGE_PROFILE_APPTAINER;
    cr_assert(strs_has(&env, apptainer ? app : plain), "the token");
    cr_assert_not(strs_has_prefix(&env, apptainer ? "FORGE_INGEST_TOKEN="
                                                  : "APPTAINERENV_"));
    cr_assert_not(strs_contains(&argv, token, wrapper),
                  "the token is in srun's argv");
    /* enroot-pyxis: the names, once each, in the credentials' order;
     * apptainer has no use for them. */
    char *names = env_names(&p->request->launch);
    char *names_var = xasprintf("FORGE_ENV_NAMES=%s", names);
    if (apptainer) {
        cr_assert_not(strs_has_prefix(&env, "FORGE_ENV_NAMES="));
        cr_assert_not(strs_has_prefix(&env, "FORGE_E_"));
    } else {
        cr_assert(strs_has(&env, names_var), "FORGE_ENV_NAMES is not %s",
                  names);
    }
    /* Scratch variables do not leak into the tasks. */
    static const char *const scratch[] = {
        "forge_k=",   "forge_v=", "forge_n=",    "forge_cred=",
        "forge_env=", "forge_e=", "forge_task=", "forge_unpack="};
    for (size_t i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++)
        cr_assert_not(strs_has_prefix(&env, scratch[i]), "%s", scratch[i]);

    free(wrapper);
    free(names);
    free(names_var);
    free(plain);
    free(app);
    free(token);
    free(argv.buf);
    free(env.buf);
    forge_prepared_destroy(p);
    json_decref(req);
}

Test(credentials, values_arrive_exactly_apptainer, .fini = fx_fini)
{
    values_arrive(FORGE_PROFILE_APPTAINER);
}

Test(credentials, values_arrive_exactly_pyxis, .fini = fx_fini)
{
    values_arrive(FORGE_PROFILE_ENROOT_PYXIS);
}

/* The request's value wins over the job's default (MASTER_PORT), as it
 * always did. */
Test(credentials, request_env_beats_the_defaults_apptainer, .fini = fx_fini)
{
    fx_init(FORGE_PROFILE_APPTAINER);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);

    run_ok(p);
    strs_t env = read_strs("env");
    cr_assert(strs_has(&env, "APPTAINERENV_MASTER_PORT=12345"));
    free(env.buf);
    forge_prepared_destroy(p);
    json_decref(req);
}

/* ---- the enroot-pyxis task wrapper, run for real ---------------------- */

/* The shells a container's /bin/sh may be: dash (Debian, Ubuntu) and bash
 * started as sh (its POSIX mode; RHEL-like images). */
typedef struct shell {
    const char *path;
    const char *argv0;
} shell_t;

static const shell_t shells[] = {{"/bin/dash", "sh"}, {"/bin/bash", "sh"}};
#define NSHELLS (sizeof(shells) / sizeof(shells[0]))

/* Runs `SHELL -c WRAPPER forge-env main '' /usr/bin/env -0` in fx.root
 * with envp; the program's output goes to rec/task.env, the wrapper's
 * stderr to rec/task.err (*errout, new). Returns the exit status. */
static int run_wrapper(const shell_t *sh, const char *wrapper, char **envp,
                       char **errout)
{
    char *out = xasprintf("%s/task.env", fx.rec);
    char *log = xasprintf("%s/task.err", fx.rec);
    char *argv[] = {(char *)sh->argv0, "-c",   (char *)wrapper,
                    "forge-env",       "main", "",
                    "/usr/bin/env",    "-0",   NULL};
    int status;

    unlink(out);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 ||
            dup2(e, 2) < 0 || chdir(fx.root) != 0)
            _exit(126);
        execve(sh->path, argv, envp);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    *errout = slurp(log, NULL);
    free(out);
    free(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The environment as an envp array pointing into s (new array). */
static char **envp_of(const strs_t *s, const char *const *extra, size_t n)
{
    size_t count = n, k = 0;

    for (size_t at = 0; at < s->len; at += strlen(s->buf + at) + 1)
        count++;
    char **envp = forge_xcalloc(count + 1, sizeof(*envp));
    for (size_t i = 0; i < n; i++) /* first: they win in getenv() */
        envp[k++] = (char *)extra[i];
    for (size_t at = 0; at < s->len; at += strlen(s->buf + at) + 1) {
        bool shadowed = false;
        for (size_t i = 0; i < n; i++) {
            size_t nl = strcspn(extra[i], "=") + 1;
            shadowed |= !strncmp(s->buf + at, extra[i], nl);
        }
        if (!shadowed)
            envp[k++] = s->buf + at;
    }
    return envp;
}

/* The variables the wrapper itself uses or must remove. */
static void assert_wrapper_left_nothing(const strs_t *env)
{
    static const char *const gone[] = {
        "FORGE_E_", "FORGE_ENV_NAMES=", "FORGE_R=",
        "FORGE_N=", "FORGE_S=",         "FORGE_V="};

    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        cr_assert_not(strs_has_prefix(env, gone[i]), "%s reached the program",
                      gone[i]);
}

/* The rendered wrapper, from srun's argv, with srun's environment and an
 * image that sets MASTER_PORT and NCCL_DEBUG (Pyxis applies the image's
 * environment over the job's): every value as requested, the request's
 * MASTER_PORT over the image's, the image's own variable kept. */
static void wrapper_unpacks(const shell_t *sh)
{
    fx_init(FORGE_PROFILE_ENROOT_PYXIS);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);

    run_ok(p);
    strs_t argv = read_strs("argv"), srun_env = read_strs("env");
    char *wrapper = recorded_wrapper(&argv), *err;
    static const char *const image[] = {"MASTER_PORT=1", "NCCL_DEBUG=INFO"};
    char **envp = envp_of(&srun_env, image, 2);

    int rc = run_wrapper(sh, wrapper, envp, &err);
    cr_assert_eq(rc, 0, "%s: the wrapper failed (%d): %s", sh->path, rc, err);
    cr_assert_str_eq(err, "", "%s: the wrapper said something", sh->path);
    assert_nothing_ran();
    strs_t env = read_strs("task.env");
    for (size_t i = 0; i < NPAIRS(env_pairs) + NPAIRS(secret_pairs); i++) {
        const pair_t *pr = i < NPAIRS(env_pairs)
                               ? &env_pairs[i]
                               : &secret_pairs[i - NPAIRS(env_pairs)];
        char *v = at_root(pr->value);
        char *word = xasprintf("%s=%s", pr->name, v);
        cr_assert(strs_has(&env, word),
                  "%s: %s did not reach the program byte for byte", sh->path,
                  pr->name);
        free(word);
        free(v);
    }
    char *token = at_root(TOKEN);
    char *plain = xasprintf("FORGE_INGEST_TOKEN=%s", token);
    cr_assert(strs_has(&env, plain), "the token");
    cr_assert(strs_has(&env, "MASTER_PORT=12345"), "the request's value wins");
    cr_assert(strs_has(&env, "NCCL_DEBUG=INFO"), "the image's own variable");
    cr_assert(strs_has(&env, "FORGE_POOL=main"));
    cr_assert(strs_has(&env, "FORGE_ROLES="));
    assert_wrapper_left_nothing(&env);

    free(plain);
    free(token);
    free(env.buf);
    free(envp);
    free(err);
    free(wrapper);
    free(argv.buf);
    free(srun_env.buf);
    forge_prepared_destroy(p);
    json_decref(req);
}

Test(credentials, pyxis_wrapper_unpacks_exactly_dash, .fini = fx_fini)
{
    wrapper_unpacks(&shells[0]);
}

Test(credentials, pyxis_wrapper_unpacks_exactly_bash_as_sh, .fini = fx_fini)
{
    wrapper_unpacks(&shells[1]);
}

/* The rendered wrapper (new): from a script rendered in fx's
 * configuration, which holds it once, single-quoted and free of quotes. */
static char *rendered_wrapper(void)
{
    json_t *req = request();
    forge_prepared_t *p = prepare(req);
    const char *at = strstr(p->script, "\nforge_unpack='");

    cr_assert_not_null(at);
    at += strlen("\nforge_unpack='");
    const char *end = strchr(at, '\'');
    cr_assert_not_null(end);
    cr_assert_eq(end[1], '\n', "the wrapper holds no single quote");
    char *w = forge_xstrndup(at, (size_t)(end - at));
    forge_prepared_destroy(p);
    json_decref(req);
    return w;
}

/* Runs the rendered wrapper in every shell with the FORGE_ENV_NAMES and
 * FORGE_E_ variables given (NULL-terminated "NAME=value" list, "@R@" the
 * root); expects it to stop before the program with a `forge:` line holding
 * why, nothing run. */
static void wrapper_stops(const char *const *vars, const char *why)
{
    char *wrapper = rendered_wrapper();
    char *envp[32];
    size_t n = 0;

    envp[n++] = forge_xstrdup("PATH=/usr/bin:/bin");
    for (size_t i = 0; vars[i]; i++) {
        cr_assert_lt(n, 31);
        envp[n++] = at_root(vars[i]);
    }
    envp[n] = NULL;
    for (size_t s = 0; s < NSHELLS; s++) {
        char *err;
        int rc = run_wrapper(&shells[s], wrapper, envp, &err);
        char *out = xasprintf("%s/task.env", fx.rec);
        char *got = slurp(out, NULL);
        cr_assert_neq(rc, 0, "%s: %s: the wrapper went on", shells[s].path,
                      why);
        cr_assert_str_eq(got, "", "%s: %s: the program ran", shells[s].path,
                         why);
        cr_assert(strstr(err, "forge: ") && strstr(err, why),
                  "%s: %s: the wrapper says: %s", shells[s].path, why, err);
        assert_nothing_ran();
        free(out);
        free(got);
        free(err);
    }
    for (size_t i = 0; i < n; i++)
        free(envp[i]);
    free(wrapper);
}

/* FORGE_ENV_NAMES holding a name that is no name: never evaluated. */
static const char *const bad_list_names[] = {
    "$(touch X)",
    "$(touch @R@/X)",
    "`touch @R@/X`",
    "A;touch @R@/X",
    "a[$(touch @R@/X)]",
    "${X:=$(touch @R@/X)}",
    "A=B",
    "A-B",
    "1A",
    "*",
    "?",
    "A\nB",
    "A\tB",
    "\xc3\xa9t\xc3\xa9",
    "A'B",
    "A\"B",
    "\\",
    "FORGE_R",
    "FORGE_ENV_NAMES",
    "FORGE_E_A",
    "FORGE_POOL",
};

Test(credentials, pyxis_wrapper_stops_at_bad_names, .fini = fx_fini,
     .timeout = 60)
{
    fx_init(FORGE_PROFILE_ENROOT_PYXIS);
    for (size_t i = 0; i < NPAIRS(bad_list_names); i++) {
        /* The bad name after a good one, so nothing is exported before. */
        char *list = xasprintf("FORGE_ENV_NAMES=GOOD %s", bad_list_names[i]);
        char *var =
            xasprintf("FORGE_E_%s=$(touch @R@/p-name)", bad_list_names[i]);
        const char *vars[] = {list, "FORGE_E_GOOD=$(touch @R@/p-env)", var,
                              NULL};
        wrapper_stops(vars, "malformed name");
        free(list);
        free(var);
    }
    /* Blanks where a name should be. */
    static const char *const blank_lists[] = {"FORGE_ENV_NAMES= GOOD",
                                              "FORGE_ENV_NAMES=GOOD  OTHER",
                                              "FORGE_ENV_NAMES= "};
    for (size_t i = 0; i < NPAIRS(blank_lists); i++) {
        const char *vars[] = {blank_lists[i], "FORGE_E_GOOD=g",
                              "FORGE_E_OTHER=o", NULL};
        wrapper_stops(vars, "malformed name");
    }
}

Test(credentials, pyxis_wrapper_stops_at_names_the_shell_owns, .fini = fx_fini,
     .timeout = 60)
{
    static const char *const owned[] = {
        "RANDOM", "SECONDS", "LINENO", "OPTIND",    "PPID",
        "UID",    "SHLVL",   "GROUPS", "BASH_ARGV", "_"};

    fx_init(FORGE_PROFILE_ENROOT_PYXIS);
    for (size_t i = 0; i < NPAIRS(owned); i++) {
        char *list = xasprintf("FORGE_ENV_NAMES=GOOD %s", owned[i]);
        char *var = xasprintf("FORGE_E_%s=5", owned[i]);
        const char *vars[] = {list, "FORGE_E_GOOD=g", var, NULL};
        wrapper_stops(vars, "belongs to the shell");
        free(list);
        free(var);
    }
}

/* A FORGE_E_ variable that did not reach the container (a site that
 * filters the job's environment, say): the task stops instead of running
 * without it. */
Test(credentials, pyxis_wrapper_stops_when_a_value_is_missing, .fini = fx_fini)
{
    static const char *const vars[] = {"FORGE_ENV_NAMES=GOOD ABSENT",
                                       "FORGE_E_GOOD=g", NULL};

    fx_init(FORGE_PROFILE_ENROOT_PYXIS);
    wrapper_stops(vars, "FORGE_E_ABSENT did not reach the container");
}

/* Hostile values, and names that mean something to a shell, a loader or
 * the runtimes (exported only inside the container, after the shell
 * started): byte for byte, never evaluated, with dash and bash as sh. */
Test(credentials, pyxis_wrapper_passes_hostile_values, .fini = fx_fini,
     .timeout = 60)
{
    static const pair_t pairs[] = {
        {"V1", "$(touch @R@/p-env)"},
        {"V2", "`touch @R@/p-env2`"},
        {"V3", "\n$(touch @R@/p-secret)\n\n"},
        {"V4", "'"},
        {"V5", "\""},
        {"V6", "\\"},
        {"V7", "${IFS}$((1+1))${X:=$(touch @R@/p-semi)}"},
        {"V8", "!"},
        {"V9", "("},
        {"V10", "-n"},
        {"V11", "="},
        {"V12", "*"},
        {"V13", "~"},
        {"V14", " a  b\tc "},
        {"V15", ""},
        {"V16", "x\" ]; touch @R@/p-name; [ \"x"},
        {"_x", "underscore"},
        {"lower_case", "l"},
        {"DUP", "once"},
        {"IFS", ":"},
        {"PATH", "/nonexistent:$(touch @R@/X)"},
        {"ENV", "@R@/evil.sh"},
        {"BASH_ENV", "@R@/evil.sh"},
        {"LD_PRELOAD", "/nonexistent/forge-test.so"},
        {"SRUN_CPUS_PER_TASK", "99"},
        {"ENROOT_ROOTFS", "/nonexistent"},
        {"POSIXLY_CORRECT", "1"},
        {"PS4", "$(touch @R@/X)"},
        {"PWD", "/nonexistent"},
        {"LC_ALL", "C"},
    };

    fx_init(FORGE_PROFILE_ENROOT_PYXIS);
    char *evil = xasprintf("%s/evil.sh", fx.root);
    char *evil_text = xasprintf("touch '%s/X'\n", fx.root);
    spitn(evil, evil_text, strlen(evil_text), 0755);
    char *wrapper = rendered_wrapper();
    forge_buf_t names = FORGE_BUF_INIT;
    char *envp[NPAIRS(pairs) + 4], *want[NPAIRS(pairs)];
    size_t n = 0;

    for (size_t i = 0; i < NPAIRS(pairs); i++) {
        char *v = at_root(pairs[i].value);
        forge_buf_printf(&names, "%s ", pairs[i].name);
        envp[n++] = xasprintf("FORGE_E_%s=%s", pairs[i].name, v);
        want[i] = xasprintf("%s=%s", pairs[i].name, v);
        free(v);
    }
    forge_buf_puts(&names, "DUP"); /* listed twice: exported once */
    envp[n++] = xasprintf("FORGE_ENV_NAMES=%s", forge_buf_str(&names));
    envp[n++] = forge_xstrdup("HOME=/");
    envp[n] = NULL;
    for (size_t s = 0; s < NSHELLS; s++) {
        char *err;
        int rc = run_wrapper(&shells[s], wrapper, envp, &err);
        cr_assert_eq(rc, 0, "%s: the wrapper failed (%d): %s", shells[s].path,
                     rc, err);
        assert_nothing_ran();
        strs_t env = read_strs("task.env");
        for (size_t i = 0; i < NPAIRS(pairs); i++)
            cr_assert(strs_has(&env, want[i]),
                      "%s: %s did not reach the program byte for byte",
                      shells[s].path, pairs[i].name);
        size_t dups = 0;
        for (size_t at = 0; at < env.len; at += strlen(env.buf + at) + 1)
            dups += forge_str_starts_with(env.buf + at, "DUP=");
        cr_assert_eq(dups, 1);
        assert_wrapper_left_nothing(&env);
        free(env.buf);
        free(err);
    }
    for (size_t i = 0; i < n; i++)
        free(envp[i]);
    for (size_t i = 0; i < NPAIRS(pairs); i++)
        free(want[i]);
    forge_buf_clear(&names);
    free(wrapper);
    free(evil);
    free(evil_text);
}

/* No pairs at all (a request without env, secret_env or token): the
 * wrapper has nothing to unpack and runs the program. */
Test(credentials, pyxis_wrapper_without_names_runs_the_program, .fini = fx_fini)
{
    fx_init(FORGE_PROFILE_ENROOT_PYXIS);
    char *wrapper = rendered_wrapper(), *err;
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};

    for (size_t s = 0; s < NSHELLS; s++) {
        cr_assert_eq(run_wrapper(&shells[s], wrapper, envp, &err), 0, "%s",
                     err);
        strs_t env = read_strs("task.env");
        cr_assert(strs_has(&env, "FORGE_POOL=main"));
        assert_wrapper_left_nothing(&env);
        free(env.buf);
        free(err);
    }
    free(wrapper);
}

/* The request's MASTER_PORT beats the script's default in the container
 * too: srun gets the default under its own name, the task the request's. */
Test(credentials, request_env_beats_the_defaults_pyxis, .fini = fx_fini)
{
    fx_init(FORGE_PROFILE_ENROOT_PYXIS);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);

    run_ok(p);
    strs_t argv = read_strs("argv"), srun_env = read_strs("env");
    cr_assert(strs_has(&srun_env, "MASTER_PORT=24242"), "the default");
    cr_assert(strs_has(&srun_env, "FORGE_E_MASTER_PORT=12345"));
    char *wrapper = recorded_wrapper(&argv), *err;
    char **envp = envp_of(&srun_env, NULL, 0);
    cr_assert_eq(run_wrapper(&shells[0], wrapper, envp, &err), 0, "%s", err);
    strs_t env = read_strs("task.env");
    cr_assert(strs_has(&env, "MASTER_PORT=12345"));
    free(env.buf);
    free(envp);
    free(err);
    free(wrapper);
    free(argv.buf);
    free(srun_env.buf);
    forge_prepared_destroy(p);
    json_decref(req);
}

/* ---- crafted files stop the job ---------------------------------------- */

/* A crafted file of `n` bytes; expects the script to stop before srun with
 * a `forge:` line holding `why`, nothing run, the file gone unless it never
 * existed. */
static void crafted(forge_runtime_profile_t profile, const char *data, size_t n,
                    bool write_file, const char *why)
{
    fx_init(profile);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);
    char *cred = credentials_path(), *err, *argv = NULL;

    if (write_file) {
        char *bytes = forge_xmalloc(n + 1);
        memcpy(bytes, data, n);
        for (char *q; (q = memmem(bytes, n, "@R@", 3));) {
            /* only used for absolute canaries: splice the root in */
            size_t at = (size_t)(q - bytes), rl = strlen(fx.root);
            char *grown = forge_xmalloc(n - 3 + rl + 1);
            memcpy(grown, bytes, at);
            memcpy(grown + at, fx.root, rl);
            memcpy(grown + at + rl, q + 3, n - at - 3);
            free(bytes);
            bytes = grown;
            n = n - 3 + rl;
        }
        spitn(cred, bytes, n, 0600);
        free(bytes);
    }
    int rc = run_script(p->script, &err);
    argv = xasprintf("%s/argv", fx.rec);
    cr_assert_neq(rc, 0, "%s (%s): the script went on", why,
                  forge_runtime_profile_name(profile));
    cr_assert_not(exists(argv), "%s: srun ran", why);
    cr_assert(strstr(err, "forge: ") && strstr(err, why),
              "%s: the job says: %s", why, err);
    cr_assert_not(exists(cred), "%s: the file was left behind", why);
    assert_nothing_ran();
    free(argv);
    free(err);
    free(cred);
    forge_prepared_destroy(p);
    json_decref(req);
}

/* The request has 11 pairs (the token, 7 env, 3 secret_env): HEAD, one
 * more pair, TAIL. */
#define GOOD_HEAD "FORGE_INGEST_TOKEN\0t\0PLAIN\0p\0"
#define GOOD_TAIL "B\0b\0C\0c\0D\0d\0E\0e\0F\0f\0G\0g\0H\0h\0I\0i\0"

typedef struct bad_name {
    const char *name;
    size_t len;
} bad_name_t;

#define BAD(s)                                                                 \
    {                                                                          \
        s, sizeof(s) - 1                                                       \
    }
static const bad_name_t bad_names[] = {
    BAD("$(touch X)"),
    BAD("$(touch @R@/X)"),
    BAD("a[$(touch X)]"),
    BAD("a[$(touch @R@/X)]"),
    BAD("A[0]"),
    BAD("`touch X`"),
    BAD("A=B"),
    BAD("A B"),
    BAD("A\nB"),
    BAD("1A"),
    BAD(""),
    BAD("-n"),
    BAD("A;touch X"),
    BAD("\xc3\xa9t\xc3\xa9"),
};

static void bad_names_stop(forge_runtime_profile_t profile)
{
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        forge_buf_t b = FORGE_BUF_INIT;
        forge_buf_append(&b, GOOD_HEAD, sizeof(GOOD_HEAD) - 1);
        forge_buf_append(&b, bad_names[i].name, bad_names[i].len);
        forge_buf_append(&b, "\0$(touch p-name)\0", 17);
        forge_buf_append(&b, GOOD_TAIL, sizeof(GOOD_TAIL) - 1);
        crafted(profile, b.data, b.len, true, "malformed name");
        forge_buf_clear(&b);
        fx_fini();
    }
}

Test(credentials, bad_names_stop_the_job_apptainer, .fini = fx_fini,
     .timeout = 60)
{
    bad_names_stop(FORGE_PROFILE_APPTAINER);
}

Test(credentials, bad_names_stop_the_job_pyxis, .fini = fx_fini, .timeout = 60)
{
    bad_names_stop(FORGE_PROFILE_ENROOT_PYXIS);
}

typedef struct broken {
    const char *what;
    const char *data;
    size_t len;
} broken_t;

#define BROKEN(what, s)                                                        \
    {                                                                          \
        what, s, sizeof(s) - 1                                                 \
    }
static const broken_t broken_files[] = {
    BROKEN("empty", ""),
    BROKEN("one pair short", GOOD_HEAD GOOD_TAIL),
    BROKEN("one pair more", GOOD_HEAD "A\0a\0Z\0z\0" GOOD_TAIL),
    BROKEN("a name without value", GOOD_HEAD "A\0a\0" GOOD_TAIL "Z\0"),
    BROKEN("a name without its NUL", GOOD_HEAD "A\0a\0" GOOD_TAIL "Z"),
    BROKEN("a value without its NUL",
           GOOD_HEAD "A\0a\0B\0b\0C\0c\0D\0d\0E\0e\0F\0f\0G\0g\0H\0h\0I\0i"),
};

static void broken_files_stop(forge_runtime_profile_t profile)
{
    for (size_t i = 0; i < sizeof(broken_files) / sizeof(broken_files[0]);
         i++) {
        crafted(profile, broken_files[i].data, broken_files[i].len, true,
                "did not hold the 11 pairs the worker wrote");
        fx_fini();
    }
}

Test(credentials, broken_files_stop_the_job_apptainer, .fini = fx_fini,
     .timeout = 60)
{
    broken_files_stop(FORGE_PROFILE_APPTAINER);
}

Test(credentials, broken_files_stop_the_job_pyxis, .fini = fx_fini,
     .timeout = 60)
{
    broken_files_stop(FORGE_PROFILE_ENROOT_PYXIS);
}

/* A requeued job's run (SLURM_RESTART_COUNT=2) reads credentials.2, which
 * the worker staged (restage.c), marks its output, and removes it; the
 * first run's file is not needed. */
static void restart_reads_its_own(forge_runtime_profile_t profile)
{
    forge_buf_t b = FORGE_BUF_INIT;
    json_t *req;
    forge_prepared_t *p;
    char *cred, *err;

    fx_init(profile);
    req = request();
    p = prepare(req);
    cred = xasprintf("%s/%s.2", fx.staging, FORGE_CREDENTIALS_FILE);
    cr_assert(forge_render_credentials(&p->request->launch, &b));
    spitn(cred, b.data, b.len, 0600);
    restart_var = "SLURM_RESTART_COUNT=2";
    int rc = run_script(p->script, &err);
    restart_var = NULL;
    cr_assert_eq(rc, 0, "the restart failed (%d): %s", rc, err);
    cr_assert(strstr(err, "== forge: restart 2 =="), "%s", err);
    cr_assert_not(exists(cred), "the run left its credentials file");
    assert_nothing_ran();
    free(err);
    free(cred);
    forge_buf_clear(&b);
    forge_prepared_destroy(p);
    json_decref(req);
}

Test(credentials, a_restart_reads_its_own_file_apptainer, .fini = fx_fini)
{
    restart_reads_its_own(FORGE_PROFILE_APPTAINER);
}

Test(credentials, a_restart_reads_its_own_file_pyxis, .fini = fx_fini)
{
    restart_reads_its_own(FORGE_PROFILE_ENROOT_PYXIS);
}

/* A restart whose credentials never come waits its bounded time
 * (FORGE_REQUEUE_CREDENTIALS_WAIT_S), then stops with one line; the first
 * run's file, there or not, is never read again. */
Test(credentials, a_restart_without_its_file_waits_then_stops, .fini = fx_fini,
     .timeout = 30)
{
    json_t *req;
    forge_prepared_t *p;
    char *err, *first;
    forge_buf_t b = FORGE_BUF_INIT;

    fx_init(FORGE_PROFILE_APPTAINER);
    fx.cfg->requeue_credentials_wait_s = 2;
    req = request();
    p = prepare(req);
    first = credentials_path();
    cr_assert(forge_render_credentials(&p->request->launch, &b));
    spitn(first, b.data, b.len, 0600);
    restart_var = "SLURM_RESTART_COUNT=1";
    int rc = run_script(p->script, &err);
    restart_var = NULL;
    cr_assert_eq(rc, 1, "%s", err);
    cr_assert(strstr(err, "credentials.1 is missing (run 1 of the job, waited "
                          "2 s)"),
              "%s", err);
    cr_assert(exists(first), "the first run's file was read");
    char *argv = xasprintf("%s/argv", fx.rec);
    cr_assert_not(exists(argv), "srun ran");
    free(argv);
    free(err);
    free(first);
    forge_buf_clear(&b);
    forge_prepared_destroy(p);
    json_decref(req);
}

/* A requeued job: its first run removed the file. */
Test(credentials, missing_file_stops_the_job_apptainer, .fini = fx_fini)
{
    crafted(FORGE_PROFILE_APPTAINER, NULL, 0, false, "is missing");
}

Test(credentials, missing_file_stops_the_job_pyxis, .fini = fx_fini)
{
    crafted(FORGE_PROFILE_ENROOT_PYXIS, NULL, 0, false, "is missing");
}

/* A name twice in the file (the worker never writes that): enroot-pyxis
 * lists it once in FORGE_ENV_NAMES and the later value wins, as it does in
 * apptainer's APPTAINERENV_. */
static void repeated_name(forge_runtime_profile_t profile)
{
    static const char file[] = "FORGE_INGEST_TOKEN\0t\0"
                               "A\0first\0A\0second\0" GOOD_TAIL;
    fx_init(profile);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);
    char *cred = credentials_path(), *err;

    spitn(cred, file, sizeof(file) - 1, 0600);
    cr_assert_eq(run_script(p->script, &err), 0, "%s", err);
    strs_t env = read_strs("env");
    bool apptainer = profile == FORGE_PROFILE_APPTAINER;
    cr_assert(strs_has(&env, apptainer ? "APPTAINERENV_A=second"
                                       : "FORGE_E_A=second"));
    if (!apptainer)
        cr_assert(strs_has(&env, "FORGE_ENV_NAMES=A B C D E F G H I"));
    free(env.buf);
    free(err);
    free(cred);
    forge_prepared_destroy(p);
    json_decref(req);
}

Test(credentials, repeated_name_later_value_wins_apptainer, .fini = fx_fini)
{
    repeated_name(FORGE_PROFILE_APPTAINER);
}

Test(credentials, repeated_name_later_value_wins_pyxis, .fini = fx_fini)
{
    repeated_name(FORGE_PROFILE_ENROOT_PYXIS);
}

/* The request above really has 11 pairs (the crafted files rely on it). */
Test(credentials, the_request_has_eleven_pairs, .fini = fx_fini)
{
    fx_init(FORGE_PROFILE_APPTAINER);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);
    forge_buf_t b = FORGE_BUF_INIT;
    size_t nuls = 0;

    cr_assert(forge_render_credentials(&p->request->launch, &b));
    for (size_t i = 0; i < b.len; i++)
        nuls += b.data[i] == '\0';
    cr_assert_eq(nuls, 22);
    cr_assert(strstr(p->script, "-ne 11 ]"));
    forge_buf_clear(&b);
    forge_prepared_destroy(p);
    json_decref(req);
}

/* ---- the image check (apptainer: render.h) ----------------------------- */

/* The image x.sif holding `content` (NULL: removed after the render), the
 * script run: the check's exit, its note and the job's stderr. */
static int image_run(const char *content, char **note, char **err)
{
    fx_init(FORGE_PROFILE_APPTAINER);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);
    char *image = xasprintf("%s/runtimes/images/x.sif", fx.storage);
    char *path = xasprintf("%s/%s", fx.staging, FORGE_RENDER_IMAGE_NOTE);

    if (content)
        spitn(image, content, strlen(content), 0644);
    else
        cr_assert_eq(unlink(image), 0);
    spitn(path, "a note left by an earlier try\n", 30, 0644);
    int rc = run_script(p->script, err);
    *note = exists(path) ? slurp(path, NULL) : NULL;
    free(image);
    free(path);
    forge_prepared_destroy(p);
    json_decref(req);
    return rc;
}

static void refused(const char *content, const char *why)
{
    char *note, *err;
    int rc = image_run(content, &note, &err);
    char *argv = xasprintf("%s/argv", fx.rec);

    cr_assert_eq(rc, FORGE_RENDER_IMAGE_EXIT, "exit %d: %s", rc, err);
    cr_assert_not_null(note, "no note");
    cr_assert(strstr(note, why) && !strstr(note, "earlier try"), "%s", note);
    cr_assert_eq(strchr(note, '\n') - note, (long)strlen(note) - 1,
                 "one line: %s", note);
    cr_assert(strstr(err, "forge: image refused: ") && strstr(err, why), "%s",
              err);
    cr_assert_not(exists(argv), "srun ran");
    assert_nothing_ran();
    free(argv);
    free(note);
    free(err);
}

Test(image_check, a_file_that_is_not_a_sif_stops_the_job, .fini = fx_fini)
{
    refused("zeros\n", "invalid SIF magic");
}

Test(image_check, a_file_cut_short_stops_the_job, .fini = fx_fini)
{
    refused("end 999999\n", "cut short: the file has 11 bytes, its SIF "
                            "descriptors reach byte 999999");
}

Test(image_check, an_image_gone_since_the_submit_stops_the_job, .fini = fx_fini)
{
    refused(NULL, "x.sif: no such file or directory");
}

/* A whole image passes, and an earlier try's note goes: the script goes
 * on (to its credentials, none here). */
Test(image_check, a_whole_image_passes, .fini = fx_fini)
{
    char *note, *err;
    int rc = image_run("end 9\nxxx\n", &note, &err); /* 10 bytes */

    cr_assert_neq(rc, FORGE_RENDER_IMAGE_EXIT, "%s", err);
    cr_assert_null(note, "the earlier note was left: %s", note);
    cr_assert(strstr(err, "is missing"), "it went on: %s", err);
    cr_assert_not(strstr(err, "refused"), "%s", err);
    free(err);
}

/* enroot-pyxis checks its image itself (Pyxis): no check in the script. */
Test(image_check, only_apptainer_scripts_check, .fini = fx_fini)
{
    fx_init(FORGE_PROFILE_ENROOT_PYXIS);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);

    cr_assert_null(strstr(p->script, "sif list"));
    cr_assert_null(strstr(p->script, FORGE_RENDER_IMAGE_NOTE));
    forge_prepared_destroy(p);
    json_decref(req);
}
