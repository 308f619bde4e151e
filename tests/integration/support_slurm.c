/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_slurm.c - see support_slurm.h.
 */
#include "support_slurm.h"

#include "prepare/prepare.h"
#include "request/series.h"
#include "slurm/verdict.h"
#include "render/render.h"
#include "render/try.h"
#include "render/staging.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define IMAGE            "images/e2e.sif"
#define DEFAULT_VERSIONS "v0.0.42,v0.0.43,v0.0.44,v0.0.45"
#define DEFAULT_UNSERVED "v0.0.41"

static forge_config_t *cfg;
static forge_series_catalog_t *catalog;

/* Jobs this process submitted: cancelled at teardown (best effort). */
static struct {
    uint32_t job_id;
    forge_api_version_t version;
} submitted[64];
static size_t submitted_count;

double sl_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the environment -------------------------------------------------- */

/* A value as bash's printf %q writes it: plain, 'quoted', "quoted" or
 * with backslash escapes. $'...' (control characters) is not needed by
 * any value the stack writes and is refused. */
static void unquote(const char *in, char *out, size_t cap, const char *path)
{
    size_t o = 0;
    char q = 0;

    cr_assert(strncmp(in, "$'", 2) != 0, "%s: $'...' values are not read: %s",
              path, in);
    for (const char *p = in; *p && o + 1 < cap; p++) {
        if (q == '\'') {
            if (*p == '\'')
                q = 0;
            else
                out[o++] = *p;
        } else if (*p == '\\' && p[1]) {
            out[o++] = *++p;
        } else if (q == '"' && *p == '"') {
            q = 0;
        } else if (!q && (*p == '\'' || *p == '"')) {
            q = *p;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

static void load_env_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[8192], value[8192];

    cr_assert_not_null(f, "FORGE_TEST_SLURM_ENV=%s: %s", path, strerror(errno));
    while (fgets(line, sizeof(line), f)) {
        char *p = line, *eq;
        line[strcspn(line, "\r\n")] = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            continue;
        if (!strncmp(p, "export ", 7))
            p += 7;
        if (!(eq = strchr(p, '=')))
            continue;
        *eq = '\0';
        unquote(eq + 1, value, sizeof(value), path);
        cr_assert_eq(setenv(p, value, 1), 0, "setenv %s", p);
    }
    fclose(f);
}

/* The jobs run in the stack's python image (a real SIF that tests/e2e/stack
 * up builds and installs under the runtime root). */
static void require_image(void)
{
    char path[4096];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", cfg->runtime_root, IMAGE);
    cr_assert_eq(stat(path, &st), 0,
                 "no image at %s (%s): tests/e2e/stack up installs it", path,
                 strerror(errno));
    cr_assert_gt(st.st_size, 0, "%s is empty: not an image", path);
}

void sl_setup(void)
{
    const char *env_file = getenv("FORGE_TEST_SLURM_ENV");
    forge_error_t err = {0};

    setvbuf(stderr, NULL, _IOLBF, 0);
    if (env_file && *env_file)
        load_env_file(env_file);
    cr_assert_eq(forge_config_load(environ, &cfg, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(
        forge_config_require(
            cfg, FORGE_NEED_SLURM | FORGE_NEED_STORAGE | FORGE_NEED_SERIES,
            &err),
        FORGE_OK, "source the env file of tests/e2e/stack up: %s", err.message);
    cr_assert_eq(cfg->runtime_profile, FORGE_PROFILE_APPTAINER,
                 "the stack runs the apptainer profile");
    cr_assert_eq(forge_series_load(cfg->gpu_series_file, &catalog, &err),
                 FORGE_OK, "%s", err.message);
    require_image();
}

void sl_teardown(void)
{
    for (size_t i = 0; i < submitted_count && cfg; i++) {
        forge_slurm_client_t *c = NULL;
        forge_slurm_options_t o;
        forge_slurm_result_t res = {0};
        forge_error_t err = {0};

        forge_slurm_options_from_config(cfg, &o);
        o.version = submitted[i].version;
        o.max_attempts = 1;
        if (forge_slurm_client_new(&o, &c, &err) == FORGE_OK)
            (void)forge_slurm_cancel(c, submitted[i].job_id, NULL, &res);
        forge_slurm_client_destroy(c);
    }
    submitted_count = 0;
    forge_series_catalog_destroy(catalog);
    catalog = NULL;
    forge_config_destroy(cfg);
    cfg = NULL;
}

const forge_config_t *sl_config(void)
{
    return cfg;
}

static size_t parse_versions(const char *var, const char *dflt, int *out,
                             size_t cap)
{
    const char *s = getenv(var);
    char buf[256], *save = NULL, *tok;
    size_t n = 0;

    snprintf(buf, sizeof(buf), "%s", s && *s ? s : dflt);
    for (tok = strtok_r(buf, ", \t", &save); tok && n < cap;
         tok = strtok_r(NULL, ", \t", &save)) {
        int v = -1;
        for (int i = 0; i < FORGE_API__COUNT; i++)
            if (!strcmp(tok, forge_api_version_name((forge_api_version_t)i)))
                v = i;
        out[n++] = v;
    }
    return n;
}

size_t sl_versions(int *out, size_t cap)
{
    return parse_versions("FORGE_TEST_API_VERSIONS", DEFAULT_VERSIONS, out,
                          cap);
}

size_t sl_unserved_versions(int *out, size_t cap)
{
    return parse_versions("FORGE_TEST_UNSERVED_VERSIONS", DEFAULT_UNSERVED, out,
                          cap);
}

int sl_version_selected(forge_api_version_t v)
{
    int vs[FORGE_API__COUNT * 2];
    size_t n = sl_versions(vs, FORGE_API__COUNT * 2);

    for (size_t i = 0; i < n; i++)
        if (vs[i] == (int)v)
            return 1;
    return 0;
}

bool sl_has_accounting(void)
{
    const char *v = getenv("FORGE_STACK_SLURMDB");

    return v && !strcmp(v, "1");
}

forge_api_version_t sl_version_check(int v)
{
    cr_assert(v >= 0 && v < FORGE_API__COUNT,
              "FORGE_TEST_API_VERSIONS / FORGE_TEST_UNSERVED_VERSIONS name a "
              "version this worker does not speak (%s)",
              getenv("FORGE_TEST_API_VERSIONS"));
    return (forge_api_version_t)v;
}

forge_slurm_client_t *sl_client(forge_api_version_t v)
{
    forge_slurm_options_t o;
    forge_slurm_client_t *c = NULL;
    forge_error_t err = {0};

    forge_slurm_options_from_config(cfg, &o);
    o.version = v;
    cr_assert_eq(forge_slurm_client_new(&o, &c, &err), FORGE_OK, "%s",
                 err.message);
    return c;
}

/* ---- launches --------------------------------------------------------- */

void sl_trace_init(sl_trace_t *t, forge_api_version_t v, const char *what)
{
    static int seq;

    memset(t, 0, sizeof(*t));
    t->version = v;
    t->exit_code = -1;
    snprintf(t->label, sizeof(t->label), "%s %s", forge_api_version_name(v),
             what);
    snprintf(t->launch_id, sizeof(t->launch_id), "it-%s-%s-%d-%ld-%d", what,
             forge_api_version_name(v), (int)getpid(), (long)time(NULL), seq++);
}

json_t *sl_request(const sl_trace_t *t, json_t *cmd, json_t *pools,
                   json_t *extra)
{
    json_t *r = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:o, s:i}", "kind",
                          "launch", "launch_id", t->launch_id, "image", "path",
                          IMAGE, "format", "sif", "command", cmd, "pools",
                          pools, "time_limit_minutes", 5);

    cr_assert_not_null(r, "%s: cannot build the request", t->label);
    if (extra) {
        json_object_update(r, extra);
        json_decref(extra);
    }
    return r;
}

static void record(sl_trace_t *t, forge_state_t s, const char *reason)
{
    sl_step_t *st;

    cr_assert_lt(t->n, SL_STEPS_MAX, "%s: too many state changes", t->label);
    st = &t->steps[t->n++];
    st->state = s;
    snprintf(st->reason, sizeof(st->reason), "%s", reason ? reason : "");
    st->at = t->t0 > 0 ? sl_now() - t->t0 : 0;
}

/* The job as the worker leaves it after its POST (submit.c): every
 * component submitted held (render.c) - seen held here, on every API
 * version - then released one by one. */
static void release_held(forge_slurm_client_t *c, const sl_trace_t *t)
{
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    forge_slurm_status_t st;

    st = forge_slurm_job_details(c, t->job_id, &jobs, &res);
    cr_assert_eq(st, FORGE_SLURM_OK, "%s: details of held job %u: %s", t->label,
                 t->job_id, res.message);
    cr_assert_gt(jobs.count, 0);
    for (size_t i = 0; i < jobs.count; i++) {
        const char *why = jobs.jobs[i].state_reason;
        cr_assert(why && !strncmp(why, "JobHeld", 7),
                  "%s: component %zu not held: %s", t->label, i,
                  why ? why : "None");
        st = forge_slurm_release(c, NULL, jobs.jobs[i].job_id, &res);
        cr_assert_eq(st, FORGE_SLURM_OK, "%s: release of %u: %s (%s)", t->label,
                     jobs.jobs[i].job_id, forge_slurm_status_name(st),
                     res.message);
    }
    forge_slurm_job_list_clear(&jobs);
}

/* req (stolen) prepared and staged as the worker does; the trace records
 * ACCEPTED. New (forge_prepared_destroy). */
static forge_prepared_t *prepare_staged(sl_trace_t *t, json_t *req)
{
    char *text = json_dumps(req, JSON_COMPACT);
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};
    forge_fs_owner_t owner;

    json_decref(req);
    cr_assert_eq(forge_prepare(text, strlen(text), cfg, catalog, &p, &err),
                 FORGE_OK, "%s: forge_prepare: %s (%s)", t->label, err.message,
                 err.field);
    cr_assert_not_null(p->script, "%s: not a launch", t->label);
    cr_assert_eq(forge_staging_default_owner(cfg, &owner, &err), FORGE_OK,
                 "%s: staging owner: %s", t->label, err.message);
    cr_assert_eq(forge_staging_prepare(cfg, &p->request->launch, owner,
                                       p->script, &t->staging, &err),
                 FORGE_OK, "%s: staging: %s", t->label, err.message);
    free(text);
    t->t0 = sl_now();
    record(t, FORGE_STATE_ACCEPTED, NULL);
    return p;
}

static void remember(const sl_trace_t *t)
{
    if (submitted_count < sizeof(submitted) / sizeof(submitted[0])) {
        submitted[submitted_count].job_id = t->job_id;
        submitted[submitted_count++].version = t->version;
    }
}

forge_slurm_status_t sl_submit(forge_slurm_client_t *c, sl_trace_t *t,
                               json_t *req, forge_slurm_result_t *res)
{
    forge_prepared_t *p = prepare_staged(t, req);
    forge_slurm_submit_t sub;
    forge_slurm_status_t st;

    st = forge_slurm_submit(c, p->payload, &sub, res);
    if (st == FORGE_SLURM_OK) {
        t->job_id = sub.job_id;
        release_held(c, t);
        remember(t);
        record(t, FORGE_STATE_SUBMITTED, sub.warnings[0] ? sub.warnings : NULL);
    } else if (st == FORGE_SLURM_REJECTED) {
        record(t, FORGE_STATE_REJECTED, "slurm_rejected");
    }
    forge_prepared_destroy(p);
    return st;
}

forge_slurm_status_t sl_submit_held(forge_slurm_client_t *c, sl_trace_t *t,
                                    json_t *req, forge_slurm_released_t *made,
                                    forge_slurm_result_t *res)
{
    forge_prepared_t *p = prepare_staged(t, req);
    const forge_launch_t *l = &p->request->launch;
    char *comment = forge_try_tag(l->launch_id, l->attempt, 1);
    forge_slurm_held_job_t job = {
        .payload = p->payload, .comment = comment, .pool_count = l->pool_count};
    forge_slurm_status_t st = forge_slurm_submit_held(c, &job, made, res);

    if (st == FORGE_SLURM_OK) {
        t->job_id = made->job_id;
        remember(t);
        record(t, FORGE_STATE_SUBMITTED, NULL);
    } else if (st == FORGE_SLURM_REJECTED) {
        record(t, FORGE_STATE_REJECTED, "slurm_rejected");
    }
    free(comment);
    forge_prepared_destroy(p);
    return st;
}

forge_state_t sl_state(const sl_trace_t *t)
{
    return t->n ? t->steps[t->n - 1].state : FORGE_STATE_NONE;
}

const char *sl_reason(const sl_trace_t *t)
{
    return t->n ? t->steps[t->n - 1].reason : "";
}

/* "RUNNING+COMPLETING/PENDING": each component's job_state set. */
static void slurm_sets(const forge_slurm_job_list_t *l, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (size_t i = 0; i < l->count; i++) {
        if (i)
            strncat(buf, "/", cap - strlen(buf) - 1);
        for (size_t k = 0; k < l->jobs[i].state_count; k++) {
            if (k)
                strncat(buf, "+", cap - strlen(buf) - 1);
            strncat(buf, l->jobs[i].state[k], cap - strlen(buf) - 1);
        }
    }
}

static void append_seen(char *seen, size_t cap, const char *what)
{
    const char *last = strrchr(seen, '>');

    last = last ? last + 2 : seen;
    if (!strcmp(last, what))
        return;
    if (seen[0])
        strncat(seen, " -> ", cap - strlen(seen) - 1);
    strncat(seen, what, cap - strlen(seen) - 1);
}

forge_state_t sl_follow(forge_slurm_client_t *c, sl_trace_t *t,
                        forge_state_t until, int cancel_requested,
                        int timeout_s)
{
    double deadline = sl_now() + timeout_s;
    forge_state_t cur = sl_state(t);
    char problem[600] = "";

    cr_assert_neq(t->job_id, 0, "%s: nothing submitted", t->label);
    while (cur != until && !forge_state_is_terminal(cur)) {
        forge_slurm_job_list_t l = {NULL, 0}, s = {NULL, 0};
        forge_slurm_result_t res = {0}, res2 = {0};
        forge_slurm_status_t st;
        char sets[256], buf[512];
        int ec;

        if (sl_now() > deadline) {
            cr_assert_fail(
                "%s: job %u not %s after %d s; seen %s; slurm: %s%s%s",
                t->label, t->job_id,
                forge_state_name(until) ? forge_state_name(until) : "terminal",
                timeout_s, sl_trace_str(t, buf, sizeof(buf)), t->slurm_seen,
                problem[0] ? "; last problem: " : "", problem);
        }
        t->polls++;
        st = forge_slurm_job_details(c, t->job_id, &l, &res);
        if (st == FORGE_SLURM_OK) {
            forge_slurm_verdict_t v =
                forge_slurm_verdict(&l, cancel_requested, &ec);
            slurm_sets(&l, sets, sizeof(sets));
            append_seen(t->slurm_seen, sizeof(t->slurm_seen), sets);
            if (v.state != FORGE_STATE_NONE) {
                const char *reason = v.reason;
                if (!reason && v.state == FORGE_STATE_PENDING)
                    reason = l.jobs[0].state_reason;
                if (v.state != cur) {
                    cr_assert(forge_state_transition_legal(cur, v.state),
                              "%s: %s -> %s is not a legal transition "
                              "(slurm: %s)",
                              t->label, forge_state_name(cur),
                              forge_state_name(v.state), t->slurm_seen);
                    record(t, v.state, reason);
                    cur = v.state;
                }
                t->exit_code = ec;
            }
            forge_slurm_job_list_clear(&t->last);
            t->last = l;
        } else {
            snprintf(problem, sizeof(problem), "job/%u: %s: %s", t->job_id,
                     forge_slurm_status_name(st), res.message);
            forge_slurm_job_list_clear(&l);
        }
        /* The batched poll's view of the same job. */
        if (forge_slurm_job_states(c, &t->job_id, 1, &s, &res2) ==
            FORGE_SLURM_OK) {
            forge_slurm_verdict_t v =
                forge_slurm_verdict(&s, cancel_requested, &ec);
            if (v.state != FORGE_STATE_NONE && v.state != t->polled_state) {
                append_seen(t->polled_seen, sizeof(t->polled_seen),
                            forge_state_name(v.state));
                t->polled_state = v.state;
            }
        } else {
            snprintf(problem, sizeof(problem), "jobs/state: %s: %s",
                     forge_slurm_status_name(res2.status), res2.message);
        }
        forge_slurm_job_list_clear(&s);
        if (cur != until && !forge_state_is_terminal(cur))
            usleep(200 * 1000);
    }
    return cur;
}

const char *sl_trace_str(const sl_trace_t *t, char *buf, size_t cap)
{
    size_t o = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < t->n && o < cap; i++) {
        const sl_step_t *s = &t->steps[i];
        int k = snprintf(buf + o, cap - o, "%s%s%s%s%s %.1fs", i ? " -> " : "",
                         forge_state_name(s->state), s->reason[0] ? "(" : "",
                         s->reason, s->reason[0] ? ")" : "", s->at);
        if (k < 0)
            break;
        o += (size_t)k;
    }
    return buf;
}

void sl_trace_print(const sl_trace_t *t, const char *note)
{
    char buf[1024];

    fprintf(stderr,
            "[slurm-it] %-24s job %-6u %s | exit %d | slurm: %s | "
            "jobs/state: %s | %d polls%s%s\n",
            t->label, t->job_id, sl_trace_str(t, buf, sizeof(buf)),
            t->exit_code, t->slurm_seen[0] ? t->slurm_seen : "-",
            t->polled_seen[0] ? t->polled_seen : "-", t->polls,
            note ? " | " : "", note ? note : "");
}

void sl_trace_free(sl_trace_t *t)
{
    forge_error_t err = {0};

    forge_slurm_job_list_clear(&t->last);
    if (t->staging && forge_staging_remove(cfg, t->launch_id, 1, &err))
        fprintf(stderr, "[slurm-it] %s: %s\n", t->label, err.message);
    if (t->staging) { /* and the launch's folder, empty now */
        char *slash = strrchr(t->staging, '/');
        if (slash) {
            *slash = '\0';
            (void)rmdir(t->staging);
        }
    }
    free(t->staging);
    t->staging = NULL;
}

char *sl_staging_read(const sl_trace_t *t, const char *name)
{
    char path[4096];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof(path), "%s/%s", t->staging, name);
    if (!(f = fopen(path, "r")))
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    cr_assert_not_null(buf);
    if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)
        buf[0] = '\0';
    fclose(f);
    return buf;
}

int sl_scontrol(char *out, size_t cap, const char *fmt, ...)
{
    const char *root = getenv("FORGE_STACK_SLURM_CHROOT");
    char args[512], cmd[1024];
    size_t o = 0;
    va_list ap;
    FILE *p;
    int rc;

    cr_assert(root && *root, "FORGE_STACK_SLURM_CHROOT is not set");
    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    /* env -i: nothing of this process (SLURM_*, FORGE_*) reaches scontrol. */
    snprintf(cmd, sizeof(cmd),
             "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot '%s' "
             "scontrol %s 2>&1",
             root, args);
    p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    out[0] = '\0';
    while (o + 1 < cap) {
        size_t k = fread(out + o, 1, cap - o - 1, p);
        if (k == 0)
            break;
        o += k;
    }
    out[o] = '\0';
    while (fgetc(p) != EOF)
        ;
    rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
