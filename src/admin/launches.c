/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launches.c - one launch's record shown (launches.h): the JSON object and
 * the table row. What a record's request holds is never shown. The
 * caller's thread.
 */
#include "admin/launches.h"
#include "clock/timestamp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool forge_launches_match(const forge_launches_filter_t *f,
                          const forge_launch_table_entry_t *e)
{
    return (f->state == FORGE_STATE_NONE || e->rec->state == f->state) &&
           (!f->launch_id || !strcmp(f->launch_id, e->rec->launch_id));
}

static const char *state_name(forge_state_t s)
{
    const char *n = forge_state_name(s);

    return n ? n : "NONE";
}

/* "held", "unopened" or "none": never the request itself. */
static const char *request_form(const forge_launch_record_t *r)
{
    if (r->request)
        return "held";
    return r->request_sealed ? "unopened" : "none";
}

static json_t *time_or_null(long long at_ms)
{
    char at[40];

    if (at_ms <= 0)
        return json_null();
    forge_timestamp_format(at_ms, at, sizeof(at));
    return json_string(at);
}

static json_t *job_ids(const forge_launch_record_t *r)
{
    json_t *ids = json_array();

    if (r->job_id)
        json_array_append_new(ids, json_integer(r->job_id));
    for (size_t i = 0; i < r->component_count; i++)
        if (r->component_ids[i] != r->job_id)
            json_array_append_new(ids, json_integer(r->component_ids[i]));
    return ids;
}

/* artifacts/<id>/<attempt>/logs.tar.gz once archived (the logs event's
 * relative_path, under FORGE_STORAGE_ROOT), else NULL. */
static json_t *archive_of(const forge_launch_record_t *r)
{
    char path[256];

    if (!r->archived)
        return json_null();
    snprintf(path, sizeof(path), "artifacts/%s/%d/logs.tar.gz", r->launch_id,
             r->attempt);
    return json_string(path);
}

/* A launch's tries (issue 26): which try the record is at, the policy's
 * max_tries (1: never retried), the last retry's cause, the nodes the
 * next try may not use, when it is submitted at the earliest. */
static void put_tries(json_t *o, const forge_launch_record_t *r)
{
    json_object_set_new(o, "try", json_integer(forge_launch_try(r)));
    json_object_set_new(
        o, "max_tries",
        json_integer(r->retry.max_tries > 1 ? r->retry.max_tries : 1));
    json_object_set_new(o, "retry_cause",
                        r->retry_cause ? json_string(r->retry_cause)
                                       : json_null());
    json_object_set_new(o, "excluded_nodes", forge_launch_excluded_json(r));
    json_object_set_new(o, "retry_not_before",
                        time_or_null(r->retry_not_before_ms));
}

/* What the job used (issue 28), from its terminal move: gpu_hours and
 * elapsed_s, null when unknown. */
static void put_usage(json_t *o, const forge_launch_record_t *r)
{
    double h = forge_launch_gpu_hours(r);

    json_object_set_new(o, "gpu_hours",
                        h >= 0 ? json_real(round(h * 1e6) / 1e6) : json_null());
    json_object_set_new(o, "elapsed_s",
                        r->has_usage && r->elapsed_s >= 0
                            ? json_integer(r->elapsed_s)
                            : json_null());
}

json_t *forge_launches_json(const forge_launch_table_entry_t *e)
{
    const forge_launch_record_t *r = e->rec;
    json_t *o;

    o = json_pack(
        "{s:s, s:i, s:s, s:I, s:o, s:o, s:i, s:I, s:b, s:b, s:b, s:o, s:s, "
        "s:o, s:o, s:o, s:o, s:o}",
        "launch_id", r->launch_id, "attempt", r->attempt, "state",
        state_name(r->state), "seq", (json_int_t)r->seq, "job_id",
        r->job_id ? json_integer(r->job_id) : json_null(), "job_ids",
        job_ids(r), "partition", (int)e->partition, "offset",
        (json_int_t)e->offset, "cancel_requested", r->cancel_requested,
        "archived", r->archived, "cleaned", r->cleaned, "archive",
        archive_of(r), "request", request_form(r), "request_error",
        r->request_error ? json_string(r->request_error->message) : json_null(),
        "accepted_at", time_or_null(r->accepted_at_ms), "updated_at",
        time_or_null(r->updated_at_ms), "missing_since",
        time_or_null(r->missing_since_ms), "slurm_states",
        r->slurm_states ? json_string(r->slurm_states) : json_null());
    put_tries(o, r);
    put_usage(o, r);
    return o;
}

#define ROW "%-28s %7s %-10s %5s %-20s %8s %4s %-8s %-9s %s\n"

void forge_launches_print_header(FILE *out)
{
    fprintf(out, ROW, "LAUNCH_ID", "ATTEMPT", "STATE", "SEQ", "JOB_IDS",
            "GPU_H", "PART", "ARCHIVE", "REQUEST", "UPDATED");
}

/* GPU-hours with two decimals, "-" when unknown. */
static void gpu_hours_text(const forge_launch_record_t *r, char *out,
                           size_t cap)
{
    double h = forge_launch_gpu_hours(r);

    if (h < 0)
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "%.2f", h);
}

void forge_launches_print_row(FILE *out, const forge_launch_table_entry_t *e)
{
    const forge_launch_record_t *r = e->rec;
    json_t *ids = job_ids(r);
    char attempt[16], seq[24], part[16], jobs[64] = "-", updated[40] = "-",
                                         gpu[32];
    size_t i, used = 0;
    json_t *id;

    json_array_foreach(ids, i, id)
    {
        int n = snprintf(jobs + used, sizeof(jobs) - used, "%s%lld",
                         i ? "," : "", (long long)json_integer_value(id));
        if (n < 0 || (size_t)n >= sizeof(jobs) - used)
            break;
        used += (size_t)n;
    }
    json_decref(ids);
    snprintf(attempt, sizeof(attempt), "%d", r->attempt);
    snprintf(seq, sizeof(seq), "%ld", r->seq);
    snprintf(part, sizeof(part), "%d", (int)e->partition);
    gpu_hours_text(r, gpu, sizeof(gpu));
    if (r->updated_at_ms > 0)
        forge_timestamp_format(r->updated_at_ms, updated, sizeof(updated));
    fprintf(out, ROW, r->launch_id, attempt, state_name(r->state), seq, jobs,
            gpu, part,
            r->archived ? "archived" : (r->cleaned ? "cleaned" : "-"),
            request_form(r), updated);
}
