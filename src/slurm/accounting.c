/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/accounting.c - slurmdbd's view of a job through slurmrestd
 * (slurm/accounting.h): the GET, the answer's records filtered and folded
 * to each component's latest run, their times, exit codes and TRES; and
 * client.h's forge_slurm_job_accounting on top of it. The job objects
 * themselves are read by ops.c's forge_slurm_parse_job, as every other
 * answer's are.
 */
#include "slurm/accounting.h"
#include "base/buf.h"
#include "base/util.h"
#include "slurm/client_int.h"
#include "slurm/verdict.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void forge_slurm_accounting_clear(forge_slurm_accounting_t *a)
{
    if (!a)
        return;
    forge_slurm_job_list_clear(&a->jobs);
    free(a->parts);
    memset(a, 0, sizeof(*a));
}

/* A plain or {set, number} count; -1 when unset. Slurm's timestamps say 0
 * for "never" (time.start of a job cancelled while pending). */
static long long number_or(const json_t *v, long long unknown)
{
    long long n;

    return forge_slurm_number(v, &n) ? n : unknown;
}

static long long time_field(const json_t *time, const char *key)
{
    long long v = number_or(json_object_get(time, key), -1);

    return v > 0 ? v : -1;
}

/* steps[].tres.requested.max[] of type mem: the largest, -1 for none. */
static long long max_rss(const json_t *steps)
{
    long long best = -1;
    size_t i, k;
    const json_t *step, *t;

    json_array_foreach(steps, i, step)
    {
        const json_t *max = json_object_get(
            json_object_get(json_object_get(step, "tres"), "requested"), "max");
        json_array_foreach(max, k, t)
        {
            const char *type = json_string_value(json_object_get(t, "type"));
            long long v = number_or(json_object_get(t, "count"), -1);
            if (type && !strcmp(type, "mem") && v > best)
                best = v;
        }
    }
    return best;
}

static void parse_part(const json_t *o, forge_slurm_acct_part_t *p)
{
    const json_t *dec = json_object_get(o, "derived_exit_code");
    long long v;

    memset(p, 0, sizeof(*p));
    p->submit_s = time_field(json_object_get(o, "time"), "submission");
    p->restart_count = (int)number_or(json_object_get(o, "restart_cnt"), 0);
    p->derived_exit_code = -1;
    if (forge_slurm_number(dec, &v) ||
        forge_slurm_number(json_object_get(dec, "return_code"), &v))
        p->derived_exit_code = (int)v;
    if (forge_slurm_number(
            json_object_get(json_object_get(dec, "signal"), "id"), &v))
        p->derived_signal = (int)v;
}

/* What the record says the job used: TRES, times, the steps' max RSS. */
static forge_slurm_job_use_t *parse_use(const json_t *o)
{
    const json_t *time = json_object_get(o, "time");
    forge_slurm_job_use_t *u = forge_slurm_job_use_new();

    u->start_s = time_field(time, "start");
    u->end_s = time_field(time, "end");
    u->elapsed_s = number_or(json_object_get(time, "elapsed"), -1);
    if (u->elapsed_s <= 0 && u->start_s > 0 && u->end_s >= u->start_s)
        u->elapsed_s = u->end_s - u->start_s;
    forge_slurm_tres_list_from_json(
        &u->tres_alloc,
        json_object_get(json_object_get(o, "tres"), "allocated"));
    u->max_rss_bytes = max_rss(json_object_get(o, "steps"));
    return u;
}

/* Whether run b (job jb) is later than run a (job ja, the same id). */
static bool later(const forge_slurm_job_t *ja, const forge_slurm_acct_part_t *a,
                  const forge_slurm_job_t *jb, const forge_slurm_acct_part_t *b)
{
    if (b->restart_count != a->restart_count)
        return b->restart_count > a->restart_count;
    if (b->submit_s != a->submit_s)
        return b->submit_s > a->submit_s;
    return jb->use->start_s >= ja->use->start_s; /* equal: the later one */
}

static bool belongs(const forge_slurm_job_t *j, uint32_t job_id)
{
    return j->job_id == job_id ||
           (j->het_job_id && j->het_job_id != (uint32_t)-1 &&
            j->het_job_id == job_id);
}

/* Whether the record may be the tagged job's: its comment is the tag, or
 * it has none (accounting.h). */
static bool tag_fits(const forge_slurm_job_t *j, const char *tag)
{
    return !tag || !j->comment || !strcmp(j->comment, tag);
}

/* Adds a record, or replaces the earlier run of the same job id. */
static void fold(forge_slurm_accounting_t *a, forge_slurm_job_t *j,
                 forge_slurm_acct_part_t *p)
{
    for (size_t i = 0; i < a->jobs.count; i++) {
        if (a->jobs.jobs[i].job_id != j->job_id)
            continue;
        a->earlier_runs++;
        if (later(&a->jobs.jobs[i], &a->parts[i], j, p)) {
            forge_slurm_job_clear(&a->jobs.jobs[i]);
            a->jobs.jobs[i] = *j;
            a->parts[i] = *p;
        } else {
            forge_slurm_job_clear(j);
        }
        return;
    }
    a->parts = forge_xrealloc(a->parts, (a->jobs.count + 1) * sizeof(*p));
    a->parts[a->jobs.count] = *p;
    forge_slurm_list_add(&a->jobs, j); /* count grows: after parts */
}

/* het_offset order, the parts moved with their jobs (a handful: insertion
 * sort). */
static void sort_by_offset(forge_slurm_accounting_t *a)
{
    for (size_t i = 1; i < a->jobs.count; i++)
        for (size_t k = i; k > 0 && a->jobs.jobs[k - 1].het_offset >
                                        a->jobs.jobs[k].het_offset;
             k--) {
            forge_slurm_job_t tj = a->jobs.jobs[k];
            forge_slurm_acct_part_t tp = a->parts[k];
            a->jobs.jobs[k] = a->jobs.jobs[k - 1];
            a->parts[k] = a->parts[k - 1];
            a->jobs.jobs[k - 1] = tj;
            a->parts[k - 1] = tp;
        }
}

forge_slurm_status_t forge_slurm_accounting_parse(const json_t *answer,
                                                  uint32_t job_id,
                                                  const char *tag,
                                                  forge_slurm_accounting_t *out,
                                                  forge_slurm_result_t *res)
{
    const json_t *jobs = json_object_get(answer, "jobs");
    size_t i;
    const json_t *o;

    memset(out, 0, sizeof(*out));
    if (!json_is_array(jobs)) {
        snprintf(res->message, sizeof(res->message),
                 "the answer has no jobs[] array");
        return res->status = FORGE_SLURM_PROTOCOL;
    }
    json_array_foreach(jobs, i, o)
    {
        forge_slurm_job_t j;
        forge_slurm_acct_part_t p;

        forge_slurm_parse_job(o, &j);
        if (!belongs(&j, job_id)) {
            forge_slurm_job_clear(&j);
            continue;
        }
        if (!tag_fits(&j, tag)) {
            out->other_tags++;
            forge_slurm_job_clear(&j);
            continue;
        }
        j.use = parse_use(o);
        parse_part(o, &p);
        fold(out, &j, &p);
    }
    sort_by_offset(out);
    if (out->jobs.count == 0) {
        snprintf(res->message, sizeof(res->message),
                 "accounting has no record of job %u%s%s", (unsigned)job_id,
                 tag ? " tagged " : "", tag ? tag : "");
        return res->status = FORGE_SLURM_NOT_FOUND;
    }
    return res->status = FORGE_SLURM_OK;
}

forge_slurm_status_t forge_slurm_accounting_get(forge_slurm_client_t *c,
                                                uint32_t job_id,
                                                const char *tag,
                                                forge_slurm_accounting_t *out,
                                                forge_slurm_result_t *res)
{
    char rest[32];
    char *path;
    json_t *json = NULL;
    forge_slurm_status_t st;

    memset(out, 0, sizeof(*out));
    snprintf(rest, sizeof(rest), "job/%u", job_id);
    path = forge_slurm_path(c, "slurmdb", rest);
    st = forge_slurm_call(c, "GET", path, NULL, FORGE_SLURM_RETRY_READ, &json,
                          res);
    if (st == FORGE_SLURM_OK)
        st = forge_slurm_accounting_parse(json, job_id, tag, out, res);
    else if ((st == FORGE_SLURM_REJECTED && res->http_status == 404) ||
             st == FORGE_SLURM_NOT_FOUND)
        st = res->status = FORGE_SLURM_NOT_FOUND; /* no accounting here */
    json_decref(json);
    free(path);
    return st;
}

forge_slurm_status_t forge_slurm_job_accounting(forge_slurm_client_t *c,
                                                uint32_t job_id,
                                                forge_slurm_job_list_t *out,
                                                forge_slurm_result_t *res)
{
    forge_slurm_accounting_t a;
    forge_slurm_status_t st =
        forge_slurm_accounting_get(c, job_id, NULL, &a, res);

    *out = a.jobs; /* moved */
    free(a.parts);
    return st;
}

/* s percent-encoded into b, all but RFC 3986's unreserved bytes. */
static void put_query_value(forge_buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || strchr("-._~", *p)) {
            forge_buf_putc(b, (char)*p);
            continue;
        }
        forge_buf_putc(b, '%');
        forge_buf_putc(b, hex[*p >> 4]);
        forge_buf_putc(b, hex[*p & 15]);
    }
}

/* Whether a jobs[] record is the try's and started: its comment the tag
 * (or none, when untagged_ok), its time.start set. */
static bool started_of_tag(const json_t *o, const forge_slurm_job_t *j,
                           const char *tag, bool untagged_ok)
{
    if (j->comment ? strcmp(j->comment, tag) != 0 : !untagged_ok)
        return false;
    return time_field(json_object_get(o, "time"), "start") > 0;
}

static uint32_t leader_of(const forge_slurm_job_t *j)
{
    return j->het_job_id && j->het_job_id != (uint32_t)-1 ? j->het_job_id
                                                          : j->job_id;
}

/* The lowest leader among jobs[]' started records of the tag; then its
 * components (every record of that leader, tagged or not: a component's
 * comment is the leader's), each id once, in het_offset order. */
static void pick_started(const json_t *jobs, const char *tag, bool untagged_ok,
                         forge_slurm_accounted_job_t *out)
{
    forge_slurm_accounting_t parts = {0};
    forge_slurm_job_t j;
    forge_slurm_acct_part_t p = {0};
    size_t i;
    const json_t *o;

    json_array_foreach(jobs, i, o)
    {
        forge_slurm_parse_job(o, &j);
        if (started_of_tag(o, &j, tag, untagged_ok) &&
            (!out->leader || leader_of(&j) < out->leader))
            out->leader = leader_of(&j);
        forge_slurm_job_clear(&j);
    }
    if (!out->leader)
        return; /* none started: nothing to list */
    json_array_foreach(jobs, i, o)
    {
        forge_slurm_parse_job(o, &j);
        j.use = parse_use(o); /* fold() compares runs by their start */
        parse_part(o, &p);
        if (out->leader && leader_of(&j) == out->leader)
            fold(&parts, &j, &p); /* each id once */
        else
            forge_slurm_job_clear(&j);
    }
    sort_by_offset(&parts);
    out->component_count = parts.jobs.count;
    out->component_ids = forge_xcalloc(parts.jobs.count + 1, sizeof(uint32_t));
    for (i = 0; i < parts.jobs.count; i++)
        out->component_ids[i] = parts.jobs.jobs[i].job_id;
    forge_slurm_accounting_clear(&parts);
}

forge_slurm_status_t forge_slurm_accounting_started(
    forge_slurm_client_t *c, const char *name, const char *tag,
    bool untagged_ok, long long since_s, forge_slurm_accounted_job_t *out,
    forge_slurm_result_t *res)
{
    forge_buf_t rest = FORGE_BUF_INIT;
    char *path;
    json_t *json = NULL, *jobs;
    forge_slurm_status_t st;

    memset(out, 0, sizeof(*out));
    forge_buf_puts(&rest, "jobs?job_name=");
    put_query_value(&rest, name);
    forge_buf_puts(&rest, "&start_time=");
    forge_buf_put_long(&rest, since_s > 0 ? since_s : 1);
    path = forge_slurm_path(c, "slurmdb", forge_buf_str(&rest));
    forge_buf_clear(&rest);
    st = forge_slurm_call(c, "GET", path, NULL, FORGE_SLURM_RETRY_READ, &json,
                          res);
    free(path);
    if ((st == FORGE_SLURM_REJECTED && res->http_status == 404) ||
        st == FORGE_SLURM_NOT_FOUND) {
        json_decref(json);
        return res->status = FORGE_SLURM_NOT_FOUND; /* no accounting here */
    }
    jobs = json_object_get(json, "jobs");
    if (st == FORGE_SLURM_OK && !json_is_array(jobs)) {
        snprintf(res->message, sizeof(res->message),
                 "accounting's answer for %s has no jobs[] array", name);
        st = res->status = FORGE_SLURM_PROTOCOL;
    }
    if (st == FORGE_SLURM_OK) {
        pick_started(jobs, tag, untagged_ok, out);
        if (!out->leader) {
            snprintf(res->message, sizeof(res->message),
                     "accounting has no started job %s tagged %s", name, tag);
            st = res->status = FORGE_SLURM_NOT_FOUND;
        }
    }
    json_decref(json);
    return st;
}

forge_slurm_verdict_t
forge_slurm_accounting_verdict(const forge_slurm_accounting_t *a,
                               int cancel_requested, int *exit_code)
{
    return forge_slurm_verdict(&a->jobs, cancel_requested, exit_code);
}

void forge_slurm_accounting_usage(const forge_slurm_accounting_t *a,
                                  forge_slurm_usage_t *out)
{
    forge_slurm_usage_of_jobs(&a->jobs, out);
}
