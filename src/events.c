/*
 * events.c - building status_changed CloudEvents (events.h).
 */
#include "events.h"
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void forge_event_time(long long at_ms, char *out, size_t size)
{
    time_t secs = (time_t)(at_ms / 1000);
    struct tm tm;
    char stamp[24];

    gmtime_r(&secs, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, size, "%.19s.%03dZ", stamp,
             (int)(at_ms % 1000 + 1000) % 1000);
}

long long forge_event_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

json_t *forge_event_status(const forge_status_event_t *e)
{
    char at[32], *id = forge_event_status_id(e->launch_id, e->attempt, e->seq);
    forge_buf_t source = FORGE_BUF_INIT;
    json_t *labels = json_object(), *data, *event;

    forge_event_time(e->at_ms, at, sizeof(at));
    forge_buf_printf(&source, "forge-worker/%s", e->worker_id);
    for (size_t i = 0; i < e->label_count; i++)
        json_object_set_new(labels, e->labels[i].key,
                            json_string(e->labels[i].value));
    data = json_pack("{s:s, s:i, s:I, s:s, s:o, s:o, s:s, s:s, s:o, s:o}",
                     "launch_id", e->launch_id, "attempt", e->attempt, "seq",
                     (json_int_t)e->seq, "state", forge_state_name(e->state),
                     "previous_state",
                     string_or_null(forge_state_name(e->previous)), "reason",
                     string_or_null(e->reason), "at", at, "worker_id",
                     e->worker_id, "labels", labels, "slurm",
                     e->slurm ? json_deep_copy(e->slurm) : no_job());
    if (e->error_code)
        json_object_set_new(
            data, "error",
            json_pack("{s:s, s:s, s:s}", "code", e->error_code, "field",
                      e->error_field ? e->error_field : "$", "message",
                      e->error_message ? e->error_message : ""));
    event = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "specversion",
                      "1.0", "id", id, "source", forge_buf_str(&source), "type",
                      "forge.launch.status_changed", "subject", e->launch_id,
                      "time", at, "datacontenttype", "application/json", "data",
                      data);
    forge_buf_free(&source);
    free(id);
    return event;
}
