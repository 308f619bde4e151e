/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_recovery.c - the recovery commands' pure parts (src/admin/):
 * `replay`'s targets as an operator writes them (RFC 3339 times, Kafka's
 * reset-offsets CSV, each refusal naming its line), and `launches`' view
 * of a record, which shows that a request is held and never what it
 * holds. What needs a broker (the scans, the group) is in
 * tests/e2e/worker/test_recovery.py.
 */
#include "admin/launches.h"
#include "admin/replay.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(replay_target, datetimes)
{
    int64_t at = 0;

    cr_assert(forge_replay_parse_datetime("1970-01-01T00:00:01Z", &at));
    cr_assert_eq(at, 1000);
    cr_assert(forge_replay_parse_datetime("2026-12-04T10:00:00.25Z", &at));
    cr_assert_eq(at, 1796378400250LL);
    cr_assert(forge_replay_parse_datetime("2026-12-04T11:00:00+01:00", &at));
    cr_assert_eq(at, 1796378400000LL);
    cr_assert(forge_replay_parse_datetime("2026-12-04T09:30:00-00:30", &at));
    cr_assert_eq(at, 1796378400000LL);
    cr_assert_not(forge_replay_parse_datetime("2026-12-04", &at));
    cr_assert_not(forge_replay_parse_datetime("2026-12-04T10:00:00", &at));
    cr_assert_not(forge_replay_parse_datetime("2026-13-04T10:00:00Z", &at));
    cr_assert_not(forge_replay_parse_datetime("2026-12-04T10:00:00Zx", &at));
    cr_assert_not(forge_replay_parse_datetime("yesterday", &at));
    cr_assert_not(forge_replay_parse_datetime("", &at));
}

/* A file holding text; its path (new). */
static char *file_of(const char *text)
{
    char *path = strdup("/tmp/forge-test-offsets-XXXXXX");
    int fd = mkstemp(path);
    FILE *f;

    cr_assert_geq(fd, 0);
    f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static forge_admin_code_t read_offsets(const char *text,
                                       forge_replay_target_t *t,
                                       forge_admin_error_t *err)
{
    char *path = file_of(text);
    forge_admin_code_t rc = forge_replay_read_offsets(path, "reqs", t, err);

    unlink(path);
    free(path);
    return rc;
}

Test(replay_target, offsets_file)
{
    forge_replay_target_t t;
    forge_admin_error_t err = {0};

    cr_assert_eq(read_offsets("# kafka-consumer-groups --export\n"
                              "reqs,0,12\n\n 3 , 7 \nreqs,5,0\n",
                              &t, &err),
                 FORGE_RECOVERY_OK, "%s", err.message);
    cr_assert_eq(t.kind, FORGE_REPLAY_OFFSETS);
    cr_assert_eq(t.offset_count, 3);
    cr_assert_eq(t.offsets[0].partition, 0);
    cr_assert_eq(t.offsets[0].offset, 12);
    cr_assert_eq(t.offsets[1].partition, 3);
    cr_assert_eq(t.offsets[1].offset, 7);
    cr_assert_eq(t.offsets[2].partition, 5);
    cr_assert_eq(t.offsets[2].offset, 0);
    forge_replay_target_clear(&t);
}

Test(replay_target, offsets_file_refused)
{
    static const struct {
        const char *text, *says;
    } cases[] = {
        {"other,0,1\n", "line 1: topic other"},
        {"reqs,0,1\nreqs,0,2\n", "line 2: partition 0 named twice"},
        {"reqs,0\n", NULL}, /* two fields: partition "reqs" is no number */
        {"0,-1\n", "line 1"},
        {"0,1,2,3\n", "line 1"},
        {"# nothing\n", "names no partition"},
    };
    forge_replay_target_t t;
    forge_admin_error_t err;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(&err, 0, sizeof(err));
        cr_assert_eq(read_offsets(cases[i].text, &t, &err),
                     FORGE_RECOVERY_OFFSETS_FILE, "%s", cases[i].text);
        cr_assert_eq(t.offset_count, 0);
        if (cases[i].says)
            cr_assert(strstr(err.message, cases[i].says), "%s: %s",
                      cases[i].text, err.message);
    }
    cr_assert_eq(forge_replay_read_offsets("/nonexistent/x", "reqs", &t, &err),
                 FORGE_RECOVERY_OFFSETS_FILE);
    cr_assert(strstr(err.message, "cannot read /nonexistent/x"));
}

Test(launches, json_never_shows_the_request)
{
    static const char request[] =
        "{\"launch_id\":\"l1\",\"ingest\":{\"token\":\"tok-SECRET\"}}";
    forge_launch_record_t *r =
        forge_launch_record_new("l1", 2, request, sizeof(request) - 1);
    forge_launch_table_entry_t e = {r, 4, 17, -1};
    forge_launches_filter_t any = {FORGE_STATE_NONE, NULL};
    forge_launches_filter_t running = {FORGE_STATE_RUNNING, NULL};
    forge_launches_filter_t other = {FORGE_STATE_NONE, "l2"};
    char *text, *row = NULL;
    size_t row_len = 0;
    FILE *out;
    json_t *j;

    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 1000), FORGE_OK);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUBMITTED, 2000),
                 FORGE_OK);
    r->job_id = 4711;
    j = forge_launches_json(&e);
    text = json_dumps(j, JSON_COMPACT);
    cr_assert_null(strstr(text, "SECRET"), "%s", text);
    cr_assert_str_eq(json_string_value(json_object_get(j, "request")), "held");
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")),
                     "SUBMITTED");
    cr_assert_eq(json_integer_value(json_object_get(j, "seq")), 2);
    cr_assert_eq(json_integer_value(json_object_get(j, "partition")), 4);
    cr_assert_eq(
        json_integer_value(json_array_get(json_object_get(j, "job_ids"), 0)),
        4711);
    cr_assert(json_is_null(json_object_get(j, "archive")));
    cr_assert_eq(json_integer_value(json_object_get(j, "try")), 1);
    cr_assert_eq(json_integer_value(json_object_get(j, "max_tries")), 1);
    cr_assert(json_is_null(json_object_get(j, "retry_cause")));
    cr_assert_eq(json_array_size(json_object_get(j, "excluded_nodes")), 0);
    cr_assert(json_is_null(json_object_get(j, "gpu_hours")), "no usage yet");
    free(text);
    json_decref(j);
    /* a retry's next try (issue 26) */
    e.rec = forge_launch_record_copy(r);
    e.rec->retry = (forge_retry_policy_t){3, FORGE_RETRY_NODE_FAIL, 30, true};
    cr_assert_eq(forge_launch_retry(e.rec, "node_fail", "h200-1", 5000, 3000),
                 FORGE_OK);
    j = forge_launches_json(&e);
    cr_assert_eq(json_integer_value(json_object_get(j, "try")), 2);
    cr_assert_eq(json_integer_value(json_object_get(j, "max_tries")), 3);
    cr_assert_str_eq(json_string_value(json_object_get(j, "retry_cause")),
                     "node_fail");
    cr_assert_str_eq(json_string_value(json_array_get(
                         json_object_get(j, "excluded_nodes"), 0)),
                     "h200-1");
    cr_assert_str_eq(json_string_value(json_object_get(j, "retry_not_before")),
                     "1970-01-01T00:00:05.000Z");
    json_decref(j);
    forge_launch_record_free(e.rec);
    e.rec = r;

    out = open_memstream(&row, &row_len);
    forge_launches_print_row(out, &e);
    fclose(out);
    cr_assert_null(strstr(row, "SECRET"), "%s", row);
    cr_assert(strstr(row, "4711") && strstr(row, "SUBMITTED"), "%s", row);

    cr_assert(strstr(row, " - "), "no usage yet: GPU_H is -: %s", row);
    free(row);

    /* a terminal move's usage (issue 28): GPU_H and gpu_hours */
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUCCEEDED, 3000),
                 FORGE_OK);
    r->has_usage = true;
    r->gpu_seconds = 4 * 5400; /* 6 GPU-hours */
    r->elapsed_s = 5400;
    out = open_memstream(&row, &row_len);
    forge_launches_print_header(out);
    forge_launches_print_row(out, &e);
    fclose(out);
    cr_assert(strstr(row, "GPU_H"), "%s", row);
    cr_assert(strstr(row, " 6.00 "), "%s", row);
    j = forge_launches_json(&e);
    cr_assert(fabs(json_real_value(json_object_get(j, "gpu_hours")) - 6.0) <
              1e-9);
    cr_assert_eq(json_integer_value(json_object_get(j, "elapsed_s")), 5400);
    json_decref(j);

    cr_assert(forge_launches_match(&any, &e));
    cr_assert_not(forge_launches_match(&running, &e));
    cr_assert_not(forge_launches_match(&other, &e));
    free(row);
    forge_launch_record_free(r);
}
