/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logs_read.c - the reading of `forge-worker logs` (logs.h): one launch's
 * records on the logs topic, fed to the printer (logs.c). librdkafka is
 * topic_scan.c's; what is here is which partition, from where, to where.
 *
 * The partition: the worker produces every event keyed by launch_id with
 * the partitioner's default placement (kafka/producer.c: murmur2_random),
 * so one partition holds all of a launch's (forge_topic_key_partition).
 * Its end: the high mark asked at the start (under read_committed, the
 * last stable offset), so the two readings of a run without --attempt
 * (the attempts, then the text) see the same records. The command's
 * thread.
 */
#include "admin/logs.h"
#include "base/util.h"
#include "admin/topic_scan.h"

#include <stdlib.h>
#include <string.h>

/* What the first reading learns: the launch's highest attempt and the
 * offset of its first record. */
typedef struct attempts {
    const char *launch_id;
    size_t id_len;
    int highest;
    int64_t first;
} attempts_t;

typedef struct feeding {
    forge_logs_printer_t *printer;
    const char *launch_id;
    size_t id_len;
} feeding_t;

/* The record is keyed launch_id (the worker keys every event so). */
static bool keyed(const forge_scan_record_t *r, const char *id, size_t len)
{
    return r->value && r->key && r->key_len == len && !memcmp(r->key, id, len);
}

static void on_attempt(void *ctx, const forge_scan_record_t *r)
{
    attempts_t *a = ctx;
    int attempt = 0;

    if (keyed(r, a->launch_id, a->id_len) &&
        forge_logs_event_of(r->value, r->value_len, a->launch_id, &attempt) &&
        attempt > a->highest) {
        a->highest = attempt;
        a->first = r->offset;
    }
}

static bool on_record(void *ctx, const forge_scan_record_t *r)
{
    feeding_t *f = ctx;

    return keyed(r, f->launch_id, f->id_len) &&
           forge_logs_printer_feed(f->printer, r->value, r->value_len);
}

static void on_scanned(void *ctx, const forge_scan_record_t *r)
{
    (void)on_record(ctx, r);
}

/* The partition of the launch's key and its end now. */
static forge_admin_code_t partition_of(const forge_config_t *cfg,
                                       const char *launch_id, int timeout_ms,
                                       int32_t *partition, int64_t *high,
                                       forge_admin_error_t *err)
{
    forge_scan_marks_t *marks = NULL;
    forge_admin_code_t rc;
    int32_t count = 0;

    if ((rc = forge_topic_marks(cfg, cfg->topic_logs, timeout_ms, &marks,
                                &count, err)))
        return rc;
    *partition = forge_topic_key_partition(launch_id, strlen(launch_id), count);
    *high = marks[*partition].high;
    free(marks);
    return FORGE_RECOVERY_OK;
}

forge_admin_code_t forge_logs_read(const forge_config_t *cfg,
                                   const forge_logs_spec_t *spec,
                                   int timeout_ms, forge_logs_result_t *res,
                                   forge_admin_error_t *err)
{
    size_t id_len = strlen(spec->launch_id);
    attempts_t a = {spec->launch_id, id_len, spec->attempt,
                    FORGE_SCAN_BEGINNING};
    feeding_t f = {NULL, spec->launch_id, id_len};
    forge_scan_range_t range;
    forge_admin_code_t rc;
    int64_t high = 0;

    memset(res, 0, sizeof(*res));
    if ((rc = partition_of(cfg, spec->launch_id, timeout_ms, &res->partition,
                           &high, err)))
        return rc;
    range = (forge_scan_range_t){res->partition, FORGE_SCAN_BEGINNING, high};
    /* no attempt given: the highest, read from its first record on; none
     * yet (following): the first to come, after what is there now */
    if (!spec->attempt) {
        if (high > 0 &&
            (rc = forge_topic_scan(cfg, cfg->topic_logs, &range, 1, timeout_ms,
                                   on_attempt, &a, err)))
            return rc;
        range.from = a.highest ? a.first : high;
        if (!a.highest && !spec->follow)
            return FORGE_RECOVERY_OK; /* nothing of the launch */
    }
    f.printer = forge_logs_printer_new(spec->launch_id, a.highest, spec->out,
                                       spec->diag);
    if (!spec->follow)
        rc = high > 0 ? forge_topic_scan(cfg, cfg->topic_logs, &range, 1,
                                         timeout_ms, on_scanned, &f, err)
                      : FORGE_RECOVERY_OK;
    else
        rc =
            forge_topic_follow(cfg, cfg->topic_logs, res->partition, range.from,
                               spec->stop, timeout_ms, on_record, &f, err);
    res->attempt = forge_logs_printer_attempt(f.printer);
    res->found = forge_logs_printer_found(f.printer);
    res->complete = forge_logs_printer_complete(f.printer);
    res->stopped = spec->follow && !rc && !res->complete;
    forge_logs_printer_destroy(f.printer);
    return rc;
}
