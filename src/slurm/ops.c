/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/ops.c - the operations of client.h on top of forge_slurm_call():
 * request paths and bodies, and reading the answers of API versions v0.0.41 to
 * v0.0.45 (their job and ping objects share the fields read here; numbers
 * may be plain or {set, infinite, number}, and both are read).
 */
#include "base/buf.h"
#include "clock/clock.h"
#include "log/log.h"
#include "slurm/client_int.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATES_CHUNK     256         /* job ids per jobs/state call */
#define MAX_JOB_ID_LIMIT 0x03ff0000u /* MaxJobId's default and largest */

/* ---- jobs ------------------------------------------------------------- */

static char *dup_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s && *s ? forge_xstrdup(s) : NULL;
}

static void take_states(forge_slurm_job_t *j, const json_t *states)
{
    size_t i;
    json_t *s;

    if (json_is_string(states)) { /* older spellings: one string */
        j->state = forge_xcalloc(2, sizeof(char *));
        j->state[j->state_count++] = forge_xstrdup(json_string_value(states));
        return;
    }
    j->state = forge_xcalloc(json_array_size(states) + 1, sizeof(char *));
    json_array_foreach(states, i, s) if (json_is_string(s))
        j->state[j->state_count++] = forge_xstrdup(json_string_value(s));
}

/* exit_code: plain, or {status[], return_code, signal{id, name}}. */
static void take_exit(forge_slurm_job_t *j, const json_t *ec)
{
    long long v;

    j->exit_code = -1;
    if (forge_slurm_number(ec, &v)) {
        j->exit_code = (int)v;
        return;
    }
    if (forge_slurm_number(json_object_get(ec, "return_code"), &v))
        j->exit_code = (int)v;
    if (forge_slurm_number(json_object_get(json_object_get(ec, "signal"), "id"),
                           &v))
        j->signal = (int)v;
}

/* One job object of job/{id}, jobs, or slurmdb job/{id} (client_int.h). */
void forge_slurm_parse_job(const json_t *o, forge_slurm_job_t *j)
{
    const json_t *state = json_object_get(o, "job_state");
    long long v;

    memset(j, 0, sizeof(*j));
    if (forge_slurm_number(json_object_get(o, "job_id"), &v))
        j->job_id = (uint32_t)v;
    if (forge_slurm_number(json_object_get(o, "het_job_id"), &v))
        j->het_job_id = (uint32_t)v;
    if (forge_slurm_number(json_object_get(o, "het_job_offset"), &v))
        j->het_offset = (int)v;
    /* slurmdb: het: {job_id, job_offset} (data_parser v0.0.41..45, JOB:
     * "het/job_id", "het/job_offset"; 0 and unset when not het) */
    if (forge_slurm_number(json_object_get(json_object_get(o, "het"), "job_id"),
                           &v))
        j->het_job_id = (uint32_t)v;
    if (forge_slurm_number(
            json_object_get(json_object_get(o, "het"), "job_offset"), &v))
        j->het_offset = (int)v;
    if (!state) /* slurmdb: state: {current: [...], reason} */
        state = json_object_get(json_object_get(o, "state"), "current");
    take_states(j, state);
    take_exit(j, json_object_get(o, "exit_code"));
    j->state_reason = dup_str(o, "state_reason");
    if (j->state_reason && !strcmp(j->state_reason, "None")) {
        free(j->state_reason);
        j->state_reason = NULL;
    }
    j->nodes = dup_str(o, "nodes");
    j->constraints = dup_str(o, "features");
    if (!j->constraints)
        j->constraints = dup_str(o, "constraints");
    j->comment = dup_str(o, "comment");
    if (!j->comment) /* slurmdb: comment: {job, administrator, system} */
        j->comment = dup_str(json_object_get(o, "comment"), "job");
    j->name = dup_str(o, "name");
    j->workdir = dup_str(o, "current_working_directory");
    if (!j->workdir)
        j->workdir = dup_str(o, "working_directory");
    if (forge_slurm_number(json_object_get(o, "restart_cnt"), &v))
        j->restart_count = (int)v;
}

/* Appends j (its strings stolen). Lists only ever grow here, from empty:
 * the array doubles whenever the count reaches a power of two, so a tick's
 * 100,000 states cost 17 reallocations, not 100,000. */
void forge_slurm_list_add(forge_slurm_job_list_t *l, const forge_slurm_job_t *j)
{
    if ((l->count & (l->count - 1)) == 0) /* 0, 1, 2, 4, ...: full */
        l->jobs = forge_xrealloc(l->jobs, (l->count ? 2 * l->count : 1) *
                                              sizeof(*l->jobs));
    l->jobs[l->count++] = *j;
}

static int by_offset(const void *a, const void *b)
{
    const forge_slurm_job_t *x = a, *y = b;

    return x->het_offset - y->het_offset;
}

void forge_slurm_job_clear(forge_slurm_job_t *j)
{
    if (!j)
        return;
    for (size_t k = 0; k < j->state_count; k++)
        free(j->state[k]);
    free(j->state);
    free(j->state_reason);
    free(j->nodes);
    free(j->constraints);
    free(j->comment);
    free(j->name);
    free(j->workdir);
    forge_slurm_job_use_free(j->use);
    memset(j, 0, sizeof(*j));
}

void forge_slurm_job_list_clear(forge_slurm_job_list_t *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        forge_slurm_job_clear(&l->jobs[i]);
    free(l->jobs);
    l->jobs = NULL;
    l->count = 0;
}

/* A {set, number} time of slurmctld's job (start_time, end_time): -1 when
 * unset or 0 (a job that never started says 0). */
static long long time_of(const json_t *o, const char *key)
{
    long long v;

    return forge_slurm_number(json_object_get(o, key), &v) && v > 0 ? v : -1;
}

/* slurmctld's details (v0.0.41..45 JOB_INFO): tres_alloc_str ("cpu=2,
 * mem=4000M,node=1,gres/gpu=4", empty before an allocation), start_time
 * and end_time (the actual end once the job ended); no RSS. */
static void take_use(const json_t *o, forge_slurm_job_t *j)
{
    const char *tres = json_string_value(json_object_get(o, "tres_alloc_str"));
    forge_slurm_job_use_t *u = forge_slurm_job_use_new();
    forge_error_t err = {0};

    if (tres && forge_slurm_tres_parse_text(tres, &u->tres_alloc, &err))
        forge_log_debug("job %u: tres_alloc_str read up to %s",
                        (unsigned)j->job_id, err.message);
    u->start_s = time_of(o, "start_time");
    u->end_s = time_of(o, "end_time");
    if (u->start_s > 0 && u->end_s >= u->start_s)
        u->elapsed_s = u->end_s - u->start_s;
    j->use = u;
}

/* Reads "jobs": [...] of an answer into out (with each job's use: a
 * details answer); PROTOCOL if it is missing. */
static forge_slurm_status_t take_jobs(const json_t *json, bool with_use,
                                      forge_slurm_job_list_t *out,
                                      forge_slurm_result_t *res)
{
    const json_t *jobs = json_object_get(json, "jobs");
    size_t i;
    json_t *o;

    if (!json_is_array(jobs)) {
        snprintf(res->message, sizeof(res->message),
                 "the answer has no jobs[] array");
        return res->status = FORGE_SLURM_PROTOCOL;
    }
    json_array_foreach(jobs, i, o)
    {
        forge_slurm_job_t j;
        forge_slurm_parse_job(o, &j);
        if (with_use)
            take_use(o, &j);
        forge_slurm_list_add(out, &j);
    }
    if (out->count > 1)
        qsort(out->jobs, out->count, sizeof(*out->jobs), by_offset);
    return FORGE_SLURM_OK;
}

/* GET <plugin>/<rest> → jobs[]. */
static forge_slurm_status_t get_jobs(forge_slurm_client_t *c,
                                     const char *plugin, const char *rest,
                                     bool with_use, forge_slurm_job_list_t *out,
                                     forge_slurm_result_t *res)
{
    char *path = forge_slurm_path(c, plugin, rest);
    json_t *json = NULL;
    forge_slurm_status_t st = forge_slurm_call(
        c, "GET", path, NULL, FORGE_SLURM_RETRY_READ, &json, res);

    out->jobs = NULL;
    out->count = 0;
    if (st == FORGE_SLURM_OK)
        st = take_jobs(json, with_use, out, res);
    json_decref(json);
    free(path);
    return st;
}

forge_slurm_status_t forge_slurm_job_details(forge_slurm_client_t *c,
                                             uint32_t job_id,
                                             forge_slurm_job_list_t *out,
                                             forge_slurm_result_t *res)
{
    char rest[32];

    snprintf(rest, sizeof(rest), "job/%u", job_id);
    return get_jobs(c, "slurm", rest, true, out, res);
}

/* Jobs of one full listing whose comment is comment (exact) or starts
 * with it (prefix). */
static forge_slurm_status_t find_comment(forge_slurm_client_t *c,
                                         const char *comment, bool prefix,
                                         forge_slurm_job_list_t *out,
                                         forge_slurm_result_t *res)
{
    forge_slurm_job_list_t all = {NULL, 0};
    forge_slurm_status_t st = get_jobs(c, "slurm", "jobs", false, &all, res);
    size_t n = strlen(comment);

    out->jobs = NULL;
    out->count = 0;
    for (size_t i = 0; st == FORGE_SLURM_OK && i < all.count; i++) {
        const char *have = all.jobs[i].comment;
        if (have &&
            (prefix ? !strncmp(have, comment, n) : !strcmp(have, comment))) {
            forge_slurm_list_add(out, &all.jobs[i]);
            memset(&all.jobs[i], 0, sizeof(all.jobs[i])); /* moved */
        }
    }
    forge_slurm_job_list_clear(&all);
    return st;
}

forge_slurm_status_t
forge_slurm_find_by_comment_prefix(forge_slurm_client_t *c, const char *prefix,
                                   forge_slurm_job_list_t *out,
                                   forge_slurm_result_t *res)
{
    return find_comment(c, prefix, true, out, res);
}

/* ---- the jobs an unknown submit may have made ---------------------------- */

static int by_id(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

static forge_slurm_status_t states_chunk(forge_slurm_client_t *c,
                                         const uint32_t *ids, size_t n,
                                         forge_slurm_job_list_t *out,
                                         forge_slurm_result_t *res);

/* The distinct (leader) ids above floor among every job slurmctld holds
 * (new, sorted); *floor_seen when the floor's own job is there. */
static forge_slurm_status_t ids_above(forge_slurm_client_t *c, uint32_t floor,
                                      uint32_t **ids, size_t *n,
                                      bool *floor_seen,
                                      forge_slurm_result_t *res)
{
    forge_slurm_job_list_t all = {NULL, 0};
    forge_slurm_status_t st = states_chunk(c, NULL, 0, &all, res);
    size_t kept = 0;

    *ids = NULL;
    *n = 0;
    *floor_seen = false;
    if (st != FORGE_SLURM_OK) {
        forge_slurm_job_list_clear(&all);
        return st;
    }
    *ids = forge_xcalloc(all.count + 1, sizeof(uint32_t));
    for (size_t i = 0; i < all.count; i++) {
        uint32_t id = all.jobs[i].job_id; /* "123+1": its leader's, 123 */
        *floor_seen = *floor_seen || id == floor;
        if (id > floor)
            (*ids)[kept++] = id;
    }
    qsort(*ids, kept, sizeof(uint32_t), by_id);
    for (size_t i = 0; i < kept; i++) /* het components: one leader */
        if (!*n || (*ids)[*n - 1] != (*ids)[i])
            (*ids)[(*n)++] = (*ids)[i];
    forge_slurm_job_list_clear(&all);
    return FORGE_SLURM_OK;
}

/* Those of ids whose comment is comment, from their details (a job gone
 * meanwhile is not one: it was there before the submit's, or ended). */
static forge_slurm_status_t match_details(forge_slurm_client_t *c,
                                          const uint32_t *ids, size_t n,
                                          const char *comment,
                                          forge_slurm_job_list_t *out,
                                          forge_slurm_result_t *res)
{
    forge_slurm_status_t st = FORGE_SLURM_OK;

    for (size_t i = 0; i < n && st == FORGE_SLURM_OK; i++) {
        forge_slurm_job_list_t jobs = {NULL, 0};
        st = forge_slurm_job_details(c, ids[i], &jobs, res);
        if (st == FORGE_SLURM_NOT_FOUND)
            st = FORGE_SLURM_OK;
        for (size_t k = 0; st == FORGE_SLURM_OK && k < jobs.count; k++) {
            if (jobs.jobs[k].comment &&
                !strcmp(jobs.jobs[k].comment, comment)) {
                forge_slurm_list_add(out, &jobs.jobs[k]);
                memset(&jobs.jobs[k], 0, sizeof(jobs.jobs[k])); /* moved */
            }
        }
        forge_slurm_job_list_clear(&jobs);
    }
    if (st != FORGE_SLURM_OK)
        forge_slurm_job_list_clear(out);
    return res->status = st;
}

forge_slurm_status_t forge_slurm_find_submitted(forge_slurm_client_t *c,
                                                const char *comment,
                                                uint32_t floor_job_id,
                                                forge_slurm_job_list_t *out,
                                                forge_slurm_result_t *res)
{
    uint32_t *ids = NULL;
    size_t n = 0;
    bool floor_seen = false;
    forge_slurm_status_t st;
    const char *doubt = NULL;

    out->jobs = NULL;
    out->count = 0;
    if (!floor_job_id ||
        floor_job_id >= MAX_JOB_ID_LIMIT - FORGE_SLURM_FIND_CANDIDATES - 1)
        return find_comment(c, comment, false, out, res);
    st = ids_above(c, floor_job_id, &ids, &n, &floor_seen, res);
    if (st == FORGE_SLURM_OK && !floor_seen)
        doubt = "the floor's job is no longer there";
    else if (st == FORGE_SLURM_OK && n > FORGE_SLURM_FIND_CANDIDATES)
        doubt = "too many jobs above the floor";
    if (st == FORGE_SLURM_OK && !doubt)
        st = match_details(c, ids, n, comment, out, res);
    free(ids);
    if (!doubt)
        return st;
    forge_log_debug("tag %s looked up in the whole job list: %s (job %u, "
                    "%zu above it)",
                    comment, doubt, floor_job_id, n);
    return find_comment(c, comment, false, out, res);
}

/* "123" or "123+1" (a het component: its own id, then its offset). */
static void parse_state_entry(const json_t *o, forge_slurm_job_t *j)
{
    const json_t *id = json_object_get(o, "job_id");
    const char *s = json_string_value(id);
    long long v;

    memset(j, 0, sizeof(*j));
    j->exit_code = -1;
    if (s) {
        char *end;
        j->job_id = (uint32_t)strtoul(s, &end, 10);
        if (*end == '+') {
            j->het_offset = (int)strtol(end + 1, NULL, 10);
            j->het_job_id = (uint32_t)-1; /* het, leader not told */
        }
    } else if (forge_slurm_number(id, &v)) {
        j->job_id = (uint32_t)v;
    }
    take_states(j, json_object_get(o, "state"));
}

static forge_slurm_status_t states_chunk(forge_slurm_client_t *c,
                                         const uint32_t *ids, size_t n,
                                         forge_slurm_job_list_t *out,
                                         forge_slurm_result_t *res)
{
    forge_buf_t rest = FORGE_BUF_INIT;
    json_t *json = NULL, *o;
    forge_slurm_status_t st;
    char *path;
    size_t i;

    /* Repeated job_id=: a comma list answers 500 on 26.05 (seen). */
    forge_buf_puts(&rest, "jobs/state");
    for (i = 0; i < n; i++)
        forge_buf_printf(&rest, "%cjob_id=%u", i ? '&' : '?', ids[i]);
    path = forge_slurm_path(c, "slurm", forge_buf_str(&rest));
    st = forge_slurm_call(c, "GET", path, NULL, FORGE_SLURM_RETRY_READ, &json,
                          res);
    if (st == FORGE_SLURM_OK && !json_is_array(json_object_get(json, "jobs"))) {
        snprintf(res->message, sizeof(res->message),
                 "jobs/state answered without jobs[]");
        st = res->status = FORGE_SLURM_PROTOCOL;
    }
    if (st == FORGE_SLURM_OK) {
        json_array_foreach(json_object_get(json, "jobs"), i, o)
        {
            forge_slurm_job_t j;
            parse_state_entry(o, &j);
            forge_slurm_list_add(out, &j);
        }
    }
    json_decref(json);
    free(path);
    forge_buf_clear(&rest);
    return st;
}

forge_slurm_status_t forge_slurm_job_states(forge_slurm_client_t *c,
                                            const uint32_t *ids, size_t n,
                                            forge_slurm_job_list_t *out,
                                            forge_slurm_result_t *res)
{
    forge_slurm_status_t st = FORGE_SLURM_OK;

    out->jobs = NULL;
    out->count = 0;
    res->status = FORGE_SLURM_OK;
    for (size_t at = 0; at < n && st == FORGE_SLURM_OK; at += STATES_CHUNK)
        st = states_chunk(c, ids + at,
                          n - at < STATES_CHUNK ? n - at : STATES_CHUNK, out,
                          res);
    if (st != FORGE_SLURM_OK) /* all or nothing: a partial answer misleads */
        forge_slurm_job_list_clear(out);
    return st;
}

/* ---- ping, version, submit, cancel ------------------------------------ */

forge_slurm_status_t forge_slurm_ping(forge_slurm_client_t *c,
                                      forge_slurm_ping_t *out,
                                      forge_slurm_result_t *res)
{
    char *path = forge_slurm_path(c, "slurm", "ping");
    json_t *json = NULL, *ping;
    forge_slurm_status_t st = forge_slurm_call(
        c, "GET", path, NULL, FORGE_SLURM_RETRY_READ, &json, res);
    const char *release, *pinged;
    long long v;

    memset(out, 0, sizeof(*out));
    out->latency_us = -1;
    if (st == FORGE_SLURM_OK) {
        /* v0.0.42+: responding; v0.0.41: pinged == "UP". */
        ping = json_array_get(json_object_get(json, "pings"), 0);
        pinged = json_string_value(json_object_get(ping, "pinged"));
        out->responding = json_is_true(json_object_get(ping, "responding")) ||
                          (pinged && !strcmp(pinged, "UP"));
        if (forge_slurm_number(json_object_get(ping, "latency"), &v))
            out->latency_us = (long)v;
        release = json_string_value(json_object_get(
            json_object_get(json_object_get(json, "meta"), "slurm"),
            "release"));
        snprintf(out->server, sizeof(out->server), "%s",
                 release ? release : "");
    }
    json_decref(json);
    free(path);
    return st;
}

forge_slurm_status_t forge_slurm_check_version(forge_slurm_client_t *c,
                                               forge_slurm_result_t *res)
{
    json_t *json = NULL, *v;
    const char *key;
    char want[32], served[128] = "";
    forge_slurm_status_t st = forge_slurm_call(
        c, "GET", "/openapi/v3", NULL, FORGE_SLURM_RETRY_READ, &json, res);
    bool found = false;

    snprintf(want, sizeof(want), "/slurm/%s/",
             forge_slurm_client_version_name(c));
    json_object_foreach(json_object_get(json, "paths"), key, v)
    {
        const char *ver = strstr(key, "/slurm/v");
        found = found || !strncmp(key, want, strlen(want));
        if (ver && strlen(ver) >= 15) {
            char one[16];
            snprintf(one, sizeof(one), "%.7s ", ver + 7);
            if (!strstr(served, one))
                forge_strlcat(served, one, sizeof(served));
        }
    }
    if (st == FORGE_SLURM_OK && !found) {
        snprintf(res->message, sizeof(res->message),
                 "slurmrestd does not serve %s; it serves: %s",
                 forge_slurm_client_version_name(c),
                 served[0] ? served : "(nothing recognisable)");
        st = res->status = FORGE_SLURM_REJECTED;
    }
    json_decref(json);
    return st;
}

/* warnings[] descriptions, "; "-joined. */
static void take_warnings(const json_t *json, char *out, size_t cap)
{
    size_t i;
    json_t *w;

    out[0] = '\0';
    json_array_foreach(json_object_get(json, "warnings"), i, w)
    {
        const char *d = json_string_value(json_object_get(w, "description"));
        if (!d)
            continue;
        if (out[0])
            forge_strlcat(out, "; ", cap);
        forge_strlcat(out, d, cap);
    }
}

/* Slurm's refusal of a change (ESLURM_*, 2000-2999: "Invalid partition
 * name specified") is HTTP 4xx from 26.05 but HTTP 500 before (24.11, seen
 * with v0.0.41 and v0.0.42): still "Slurm said no", never retried. */
static forge_slurm_status_t slurm_said_no(forge_slurm_status_t st,
                                          const forge_slurm_result_t *res)
{
    return st == FORGE_SLURM_SERVER && res->slurm_error >= 2000 &&
                   res->slurm_error < 3000 &&
                   !forge_slurm_controller_away(res->slurm_error)
               ? FORGE_SLURM_REJECTED
               : st;
}

forge_slurm_status_t forge_slurm_submit(forge_slurm_client_t *c,
                                        const json_t *body,
                                        forge_slurm_submit_t *out,
                                        forge_slurm_result_t *res)
{
    char *path = forge_slurm_path(c, "slurm", "job/submit");
    char *text = json_dumps(body, JSON_COMPACT);
    json_t *json = NULL;
    forge_slurm_status_t st;
    long long v;

    memset(out, 0, sizeof(*out));
    if (c->newest_job_ms &&
        forge_clock_ms() - c->newest_job_ms <= FORGE_SLURM_FLOOR_FRESH_S * 1000)
        out->floor_job_id = c->newest_job_id;
    st = forge_slurm_call(c, "POST", path, text, FORGE_SLURM_RETRY_NEVER, &json,
                          res);
    st = res->status = slurm_said_no(st, res);
    if (st == FORGE_SLURM_OK) {
        take_warnings(json, out->warnings, sizeof(out->warnings));
        if (forge_slurm_number(json_object_get(json, "job_id"), &v) && v > 0) {
            out->job_id = (uint32_t)v;
            c->newest_job_id = out->job_id;
            c->newest_job_ms = forge_clock_ms();
        } else {
            /* 200 without a job id: Slurm said no in errors[]. */
            if (!res->message[0])
                snprintf(res->message, sizeof(res->message),
                         "submit answered without a job id");
            st = res->status = FORGE_SLURM_REJECTED;
        }
    }
    json_decref(json);
    free(text);
    free(path);
    return st;
}

forge_slurm_status_t forge_slurm_submit_as(forge_slurm_client_t *c,
                                           const char *user, const json_t *body,
                                           forge_slurm_submit_t *out,
                                           forge_slurm_result_t *res)
{
    forge_slurm_status_t st;

    c->act_as = user;
    st = forge_slurm_submit(c, body, out, res);
    c->act_as = NULL;
    return st;
}

/* How bad one status[] outcome is: 0 signalled or already finished (2021),
 * 1 unknown job (2017), 2 anything else. */
static int cancel_rank(int code)
{
    return code == 0 || code == 2021 ? 0 : code == 2017 ? 1 : 2;
}

/*
 * status[] of DELETE job/{id} (v0.0.42+, HTTP 200): one entry per job record
 * Slurm did not signal - each component of a het job, each task of an
 * array has its own. The worst entry decides, and res names its job (an
 * "already finished" one too: the caller may want to know).
 */
static forge_slurm_status_t cancel_outcome(const json_t *status,
                                           forge_slurm_result_t *res)
{
    static const forge_slurm_status_t by_rank[] = {
        FORGE_SLURM_OK, FORGE_SLURM_NOT_FOUND, FORGE_SLURM_REJECTED};
    int worst = -1; /* no entry told yet */
    size_t i;
    json_t *e;

    json_array_foreach(status, i, e)
    {
        const json_t *err = json_object_get(e, "error");
        int code = (int)json_integer_value(json_object_get(err, "code"));
        const char *msg = json_string_value(json_object_get(err, "message"));
        long long job = 0;

        if (code == 0 || cancel_rank(code) <= worst)
            continue;
        worst = cancel_rank(code);
        (void)forge_slurm_number(json_object_get(e, "job_id"), &job);
        res->slurm_error = code;
        snprintf(res->message, sizeof(res->message),
                 "job %lld: slurm error %d: %s", job, code, msg ? msg : "");
    }
    return by_rank[worst < 0 ? 0 : worst];
}

forge_slurm_status_t forge_slurm_cancel(forge_slurm_client_t *c,
                                        uint32_t job_id, const char *signal,
                                        forge_slurm_result_t *res)
{
    char rest[64];
    char *path;
    json_t *json = NULL;
    forge_slurm_status_t st;

    snprintf(rest, sizeof(rest), "job/%u%s%s", job_id, signal ? "?signal=" : "",
             signal ? signal : "");
    path = forge_slurm_path(c, "slurm", rest);
    st = forge_slurm_call(c, "DELETE", path, NULL, FORGE_SLURM_RETRY_READ,
                          &json, res);
    if (st == FORGE_SLURM_OK)
        st = cancel_outcome(json_object_get(json, "status"), res);
    else if (st == FORGE_SLURM_NOT_FOUND && res->slurm_error == 2021)
        st = FORGE_SLURM_OK; /* before v0.0.42: an HTTP error */
    res->status = st;
    json_decref(json);
    free(path);
    return st;
}

/* ---- release ---------------------------------------------------------------
 */

forge_slurm_status_t forge_slurm_release(forge_slurm_client_t *c,
                                         const char *user, uint32_t job_id,
                                         forge_slurm_result_t *res)
{
    char rest[32];
    char *path;
    json_t *json = NULL;
    forge_slurm_status_t st;

    snprintf(rest, sizeof(rest), "job/%u", job_id);
    path = forge_slurm_path(c, "slurm", rest);
    c->act_as = user;
    st = forge_slurm_call(c, "POST", path, "{\"hold\":false}",
                          FORGE_SLURM_RETRY_READ, &json, res);
    c->act_as = NULL;
    st = slurm_said_no(st, res);
    if (st == FORGE_SLURM_REJECTED && res->slurm_error == 2017)
        st = FORGE_SLURM_NOT_FOUND; /* ESLURM_INVALID_JOB_ID */
    res->status = st;
    json_decref(json);
    free(path);
    return st;
}
