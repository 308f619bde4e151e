/*
 * test_render_credentials.c - the rendered script's credentials reader, run
 * for real: bash executes the whole rendered script (both runtime profiles)
 * with a stand-in srun that records its argv and environment, against
 *   - the file forge_render_credentials() writes for hostile values
 *     (newlines, quotes, $(...), backslashes, '=', empty, a trailing
 *     newline): every value must arrive byte for byte where the profile
 *     puts it, and the file must be gone before srun starts;
 *   - crafted files: a malformed name ($(...), a[$(touch X)], '=', blank,
 *     empty, ...) stops the script before srun, and nothing it holds runs;
 *     a missing file (a requeued job), a truncated one, or one with more or
 *     fewer pairs than the worker wrote stops it too, with a `forge:` line.
 *
 * FORGE_KEEP_CREDENTIALS_TEST=1 keeps the temporary folders
 * (/tmp/forge-cred-*).
 */
#include "buf.h"
#include "prepare.h"
#include "render.h"
#include "util.h"

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

/* Runs the script as slurmd would start it; returns its exit status (-1:
 * killed) and what it wrote to stderr (new). */
static int run_script(const char *script, char **errout)
{
    char *job = xasprintf("%s/job.sh", fx.root);
    char *log = xasprintf("%s/job.err", fx.root);
    char *path_var = xasprintf("PATH=%s:/usr/bin:/bin", fx.bin);
    char *rec_var = xasprintf("REC=%s", fx.rec);
    char *envp[] = {path_var, rec_var, "SLURM_JOB_ID=4242", NULL};
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

/* ---- values arrive byte for byte --------------------------------------- */

static void expect_pair(const strs_t *argv, const strs_t *env, const char *name,
                        const char *value)
{
    char *word = xasprintf("%s=%s", name, value);
    char *app = xasprintf("APPTAINERENV_%s", word);

    if (fx.profile == FORGE_PROFILE_APPTAINER) {
        cr_assert(strs_has(env, app),
                  "%s did not reach srun's environment "
                  "as APPTAINERENV_%s",
                  name, name);
        cr_assert_not(strs_has(argv, word), "%s is in srun's argv", name);
    } else {
        cr_assert(strs_has(argv, word),
                  "%s=... is not one argument of "
                  "/usr/bin/env, byte for byte",
                  name);
        cr_assert_not(strs_has(env, word), "%s is in srun's environment", name);
    }
    free(word);
    free(app);
}

static void values_arrive(forge_runtime_profile_t profile)
{
    fx_init(profile);
    json_t *req = request();
    forge_prepared_t *p = prepare(req);
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

    strs_t argv = read_strs("argv"), env = read_strs("env");
    char *token = at_root(TOKEN);
    for (size_t i = 0; i < NPAIRS(env_pairs); i++) {
        char *v = at_root(env_pairs[i].value);
        expect_pair(&argv, &env, env_pairs[i].name, v);
        free(v);
    }
    for (size_t i = 0; i < NPAIRS(secret_pairs); i++) {
        char *v = at_root(secret_pairs[i].value);
        expect_pair(&argv, &env, secret_pairs[i].name, v);
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
    cr_assert_not(strs_has_prefix(&argv, "FORGE_INGEST_TOKEN="));
    /* Scratch variables do not leak into the tasks. */
    static const char *const scratch[] = {
        "forge_k=", "forge_v=", "forge_n=", "forge_cred=", "forge_env="};
    for (size_t i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++)
        cr_assert_not(strs_has_prefix(&env, scratch[i]), "%s", scratch[i]);

    free(plain);
    free(app);
    free(token);
    free(argv.buf);
    free(env.buf);
    free(leaked);
    free(err);
    free(cred);
    forge_buf_free(&b);
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
    forge_buf_t b = FORGE_BUF_INIT;
    char *cred = credentials_path(), *err;

    cr_assert(forge_render_credentials(&p->request->launch, &b));
    spitn(cred, b.data, b.len, 0600);
    cr_assert_eq(run_script(p->script, &err), 0, "%s", err);
    strs_t env = read_strs("env");
    cr_assert(strs_has(&env, "APPTAINERENV_MASTER_PORT=12345"));
    free(env.buf);
    free(err);
    free(cred);
    forge_buf_free(&b);
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
        forge_buf_free(&b);
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

/* A requeued job: its first run removed the file. */
Test(credentials, missing_file_stops_the_job_apptainer, .fini = fx_fini)
{
    crafted(FORGE_PROFILE_APPTAINER, NULL, 0, false, "is missing");
}

Test(credentials, missing_file_stops_the_job_pyxis, .fini = fx_fini)
{
    crafted(FORGE_PROFILE_ENROOT_PYXIS, NULL, 0, false, "is missing");
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
    forge_buf_free(&b);
    forge_prepared_destroy(p);
    json_decref(req);
}
