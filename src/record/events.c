/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events.c - building status_changed, logs_archived and log_chunk
 * CloudEvents (events.h).
 */
#include "record/events.h"
#include "base/buf.h"
#include "clock/timestamp.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

char *forge_event_status_id(const char *launch_id, int attempt, long seq)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_printf(&b, "%s/%d/%ld", launch_id, attempt, seq);
    return forge_buf_take(&b);
}

static json_t *string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *no_job(void)
{
    return json_pack("{s:n, s:[], s:n, s:n, s:n, s:i}", "job_id", "components",
                     "exit_code", "signal", "state_reason", "restart_count", 0);
}

static json_t *labels_json(const forge_kv_t *kv, size_t n)
{
    json_t *labels = json_object();

    for (size_t i = 0; i < n; i++)
        json_object_set_new(labels, kv[i].key, json_string(kv[i].value));
    return labels;
}

/* The envelope around data (stolen). */
static json_t *cloud_event(const char *id, const char *type,
                           const char *worker_id, const char *subject,
                           const char *at, json_t *data)
{
    forge_buf_t source = FORGE_BUF_INIT;
    json_t *event;

    forge_buf_printf(&source, "forge-worker/%s", worker_id);
    event = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "specversion",
                      "1.0", "id", id, "source", forge_buf_str(&source), "type",
                      type, "subject", subject, "time", at, "datacontenttype",
                      "application/json", "data", data);
    forge_buf_clear(&source);
    return event;
}

json_t *forge_event_status(const forge_status_event_t *e)
{
    char at[FORGE_TIMESTAMP_MAX],
        *id = forge_event_status_id(e->launch_id, e->attempt, e->seq);
    json_t *labels = labels_json(e->labels, e->label_count), *data, *event;

    forge_timestamp_format(e->at_ms, at, sizeof(at));
    data = json_pack("{s:s, s:i, s:I, s:s, s:o, s:o, s:s, s:s, s:o, s:o}",
                     "launch_id", e->launch_id, "attempt", e->attempt, "seq",
                     (json_int_t)e->seq, "state", forge_state_name(e->state),
                     "previous_state",
                     string_or_null(forge_state_name(e->previous)), "reason",
                     string_or_null(e->reason), "at", at, "worker_id",
                     e->worker_id, "labels", labels, "slurm",
                     e->slurm ? json_deep_copy(e->slurm) : no_job());
    if (e->try_num > 0)
        json_object_set_new(data, "try", json_integer(e->try_num));
    if (e->retry)
        json_object_set_new(data, "retry", json_deep_copy(e->retry));
    if (e->usage)
        json_object_set_new(data, "usage", json_deep_copy(e->usage));
    if (e->error_code)
        json_object_set_new(
            data, "error",
            json_pack("{s:s, s:s, s:s}", "code", e->error_code, "field",
                      e->error_field ? e->error_field : "$", "message",
                      e->error_message ? e->error_message : ""));
    event = cloud_event(id, "forge.launch.status_changed", e->worker_id,
                        e->launch_id, at, data);
    free(id);
    return event;
}

/* The entries of the staging folder that were refused (archive.h). */
static json_t *archive_refused(const forge_archive_t *a)
{
    json_t *refused = json_array();

    for (size_t i = 0; i < a->refused_count; i++)
        json_array_append_new(refused, json_string(a->refused[i]));
    return refused;
}

static json_t *archive_files(const forge_archive_t *a)
{
    json_t *files = json_array();

    for (size_t i = 0; i < a->file_count; i++)
        json_array_append_new(files, json_pack("{s:s, s:I}", "name",
                                               a->files[i].name, "bytes",
                                               (json_int_t)a->files[i].bytes));
    return files;
}

json_t *forge_event_logs(const forge_logs_event_t *e)
{
    const forge_archive_t *a = e->archive;
    json_t *missing = json_array(), *tail = json_null(), *data, *event;
    forge_buf_t id = FORGE_BUF_INIT;
    char at[FORGE_TIMESTAMP_MAX];

    forge_timestamp_format(a->at_ms, at, sizeof(at));
    forge_buf_printf(&id, "%s/%d/logs", e->launch_id, e->attempt);
    for (size_t i = 0; i < a->missing_count; i++)
        json_array_append_new(missing, json_string(a->missing[i]));
    if (a->tail_name)
        tail = json_pack("{s:s, s:s}", "name", a->tail_name, "text",
                         a->tail_text ? a->tail_text : "");
    data = json_pack(
        "{s:s, s:i, s:s, s:{s:s, s:s, s:I, s:s, s:s}, s:o, s:o, s:o, s:o}",
        "launch_id", e->launch_id, "attempt", e->attempt, "at", at, "archive",
        "path", a->path, "relative_path", a->relative_path, "bytes",
        (json_int_t)a->bytes, "sha256", a->sha256, "format", "tar+gzip",
        "files", archive_files(a), "missing", missing, "tail",
        tail ? tail : json_null(), "labels",
        labels_json(e->labels, e->label_count));
    json_object_set_new(data, "refused", archive_refused(a));
    if (a->unsafe)
        json_object_set_new(data, "unsafe_staging", json_string(a->unsafe));
    event = cloud_event(forge_buf_str(&id), "forge.launch.logs_archived",
                        e->worker_id, e->launch_id, at, data);
    forge_buf_clear(&id);
    return event;
}

/* One segment, keys in a fixed order; the optional two only when they say
 * something. NULL when a string is not UTF-8. */
static json_t *live_segment(const forge_live_segment_t *s)
{
    json_t *seg =
        json_pack("{s:s, s:I, s:I, s:s}", "file", s->file, "offset",
                  (json_int_t)s->offset, "length", (json_int_t)s->length,
                  "text", s->text ? s->text : "");

    if (seg && s->skipped > 0)
        json_object_set_new(seg, "skipped",
                            json_integer((json_int_t)s->skipped));
    if (seg && s->restarted)
        json_object_set_new(seg, "restarted", json_true());
    return seg;
}

json_t *forge_event_log_chunk(const forge_log_chunk_event_t *e)
{
    json_t *segments = json_array(), *seg, *data, *event = NULL;
    forge_buf_t id = FORGE_BUF_INIT;
    char at[FORGE_TIMESTAMP_MAX];

    for (size_t i = 0; i < e->segment_count; i++) {
        if (!(seg = live_segment(&e->segments[i]))) {
            json_decref(segments);
            return NULL;
        }
        json_array_append_new(segments, seg);
    }
    forge_timestamp_format(e->at_ms, at, sizeof(at));
    forge_buf_printf(&id, "%s/%d/log/%ld", e->launch_id, e->attempt, e->n);
    data =
        json_pack("{s:s, s:i, s:i, s:I, s:s, s:b, s:o, s:o}", "launch_id",
                  e->launch_id, "attempt", e->attempt, "try", e->try_num, "n",
                  (json_int_t)e->n, "at", at, "final", e->final, "labels",
                  labels_json(e->labels, e->label_count), "segments", segments);
    if (data)
        event = cloud_event(forge_buf_str(&id), "forge.launch.log_chunk",
                            e->worker_id, e->launch_id, at, data);
    forge_buf_clear(&id);
    return event;
}
