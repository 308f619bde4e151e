/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_events.c - status_changed, logs_archived and log_chunk CloudEvents:
 * deterministic ids and bytes, the contract's fields, and every event the
 * builders make is valid under its schema in schemas/ (checked with a real
 * JSON Schema validator, tests/schema/validate.py); the log_chunk examples
 * in schemas/examples/valid are what the builder makes of their inputs.
 */
#include "record/events.h"
#include "slurm/usage.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const forge_kv_t labels[] = {{"team", "nlp"}, {"cost-center", "cc1"}};

static json_t *sample_slurm(void)
{
    return json_pack("{s:i, s:[{s:i, s:i, s:[s], s:s, s:s}], s:i, s:n, s:n, "
                     "s:i}",
                     "job_id", 77, "components", "job_id", 77, "het_offset", 0,
                     "state", "FAILED", "nodes", "h200-1", "constraint", "h200",
                     "exit_code", 3, "signal", "state_reason", "restart_count",
                     0);
}

static forge_status_event_t base_event(void)
{
    forge_status_event_t e = {0};

    e.launch_id = "llama-ft-0042";
    e.attempt = 2;
    e.seq = 1;
    e.state = FORGE_STATE_ACCEPTED;
    e.previous = FORGE_STATE_NONE;
    e.worker_id = "worker-1";
    e.labels = labels;
    e.label_count = 2;
    e.at_ms = 1796233479123LL;
    return e;
}

Test(events, status_event_has_the_contract_fields)
{
    forge_status_event_t e = base_event();
    json_t *ev = forge_event_status(&e), *data = json_object_get(ev, "data");

    cr_assert_str_eq(json_string_value(json_object_get(ev, "id")),
                     "llama-ft-0042/2/1");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "specversion")),
                     "1.0");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "source")),
                     "forge-worker/worker-1");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "type")),
                     "forge.launch.status_changed");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "subject")),
                     "llama-ft-0042");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "time")),
                     "2026-12-02T17:44:39.123Z");
    cr_assert(json_is_null(json_object_get(data, "previous_state")));
    cr_assert_str_eq(json_string_value(json_object_get(data, "state")),
                     "ACCEPTED");
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(data, "labels"), "team")),
                     "nlp");
    cr_assert(json_is_null(
        json_object_get(json_object_get(data, "slurm"), "job_id")));
    json_decref(ev);
}

Test(events, same_inputs_same_bytes)
{
    forge_status_event_t e = base_event();
    json_t *a = forge_event_status(&e), *b = forge_event_status(&e);
    char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);

    cr_assert_str_eq(x, y);
    free(x);
    free(y);
    json_decref(a);
    json_decref(b);
}

static void write_event(const char *path, const forge_status_event_t *e)
{
    json_t *ev = forge_event_status(e);

    cr_assert_eq(json_dump_file(ev, path, JSON_INDENT(1)), 0);
    json_decref(ev);
}

Test(events, every_kind_of_event_is_valid_under_the_schema)
{
    char dir[] = "/tmp/forge-events-XXXXXX", cmd[2048], p[4][64];
    forge_status_event_t e = base_event();
    json_t *slurm = sample_slurm();

    cr_assert_not_null(mkdtemp(dir));
    for (int i = 0; i < 4; i++)
        snprintf(p[i], sizeof(p[i]), "%s/e%d.json", dir, i);
    write_event(p[0], &e); /* ACCEPTED, no job */
    e.seq = 2;
    e.previous = FORGE_STATE_ACCEPTED;
    e.state = FORGE_STATE_SUBMITTED;
    e.slurm = slurm;
    write_event(p[1], &e);
    e.seq = 3;
    e.previous = FORGE_STATE_SUBMITTED;
    e.state = FORGE_STATE_FAILED;
    e.reason = "failed";
    write_event(p[2], &e);
    e = base_event();
    e.state = FORGE_STATE_REJECTED;
    e.reason = "env_refused";
    e.error_code = "env_refused";
    e.error_field = "$.env.SLURM_X";
    e.error_message = "$.env.SLURM_X: names starting SLURM_ are reserved";
    e.label_count = 0;
    write_event(p[3], &e);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 %s/tests/schema/validate.py "
             "status-changed.v1.json %s %s %s %s",
             FORGE_SOURCE_DIR, p[0], p[1], p[2], p[3]);
    cr_assert_eq(system(cmd), 0,
                 "an event the worker makes breaks the "
                 "schema (see above)");
    for (int i = 0; i < 4; i++)
        unlink(p[i]);
    rmdir(dir);
    json_decref(slurm);
}

/* A retry's PENDING (issue 26): `try` and the `retry` object, valid under
 * the schema; an event that says no try has none. */
Test(events, a_retrying_event_says_which_try_and_why)
{
    char dir[] = "/tmp/forge-events-XXXXXX", cmd[1024], path[64];
    forge_status_event_t e = base_event();
    json_t *slurm = sample_slurm(), *ev, *data, *retry;

    retry = json_pack("{s:i, s:i, s:s, s:s, s:[s]}", "try", 2, "max_tries", 3,
                      "cause", "node_fail", "not_before",
                      "2026-12-02T17:45:09.123Z", "excluded_nodes", "h200-1");
    ev = forge_event_status(&e);
    data = json_object_get(ev, "data");
    cr_assert_null(json_object_get(data, "try"));
    cr_assert_null(json_object_get(data, "retry"));
    json_decref(ev);
    e.seq = 4;
    e.previous = FORGE_STATE_RUNNING;
    e.state = FORGE_STATE_PENDING;
    e.reason = "retrying";
    e.slurm = slurm;
    e.try_num = 2;
    e.retry = retry;
    ev = forge_event_status(&e);
    data = json_object_get(ev, "data");
    cr_assert_eq(json_integer_value(json_object_get(data, "try")), 2);
    cr_assert(json_equal(json_object_get(data, "retry"), retry));
    json_decref(ev);
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/retrying.json", dir);
    write_event(path, &e);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 %s/tests/schema/validate.py "
             "status-changed.v1.json %s",
             FORGE_SOURCE_DIR, path);
    cr_assert_eq(system(cmd), 0, "the retrying event breaks the schema");
    unlink(path);
    rmdir(dir);
    json_decref(retry);
    json_decref(slurm);
}

/* A terminal event carries the job's usage as slurm/usage.h makes it
 * (issue 28): numbers Slurm did not report are null, and the event stays
 * valid under the schema; a usage with every number known too. */
Test(events, a_terminal_event_carries_the_usage)
{
    char dir[] = "/tmp/forge-events-XXXXXX", cmd[1024], p[2][64];
    forge_status_event_t e = base_event();
    json_t *slurm = sample_slurm(), *usage[2], *ev;
    forge_slurm_tres_list_t tres = {NULL, 0};
    forge_slurm_usage_t u[2] = {{0}, {0}};
    forge_slurm_usage_part_t part;
    forge_error_t err = {0};

    cr_assert_eq(
        forge_slurm_tres_parse_text(
            "cpu=16,mem=64G,node=1,billing=16,gres/gpu=4", &tres, &err),
        FORGE_OK, "%s", err.message);
    part = forge_slurm_usage_part(77, 0, &tres, 5400, -1); /* details */
    forge_slurm_usage_add(&u[0], &part);
    part = forge_slurm_usage_part(77, 0, &tres, 5400, 3LL << 30); /* acct */
    forge_slurm_usage_add(&u[1], &part);
    e.seq = 5;
    e.previous = FORGE_STATE_RUNNING;
    e.state = FORGE_STATE_SUCCEEDED;
    e.slurm = slurm;
    cr_assert_not_null(mkdtemp(dir));
    for (int i = 0; i < 2; i++) {
        usage[i] = forge_slurm_usage_json(&u[i]);
        e.usage = usage[i];
        ev = forge_event_status(&e);
        cr_assert(json_equal(
            json_object_get(json_object_get(ev, "data"), "usage"), usage[i]));
        cr_assert(fabs(json_real_value(json_object_get(usage[i], "gpu_hours")) -
                       6.0) < 1e-9);
        json_decref(ev);
        snprintf(p[i], sizeof(p[i]), "%s/usage%d.json", dir, i);
        write_event(p[i], &e);
    }
    cr_assert(json_is_null(json_object_get(usage[0], "max_rss_bytes")));
    cr_assert_eq(json_integer_value(json_object_get(usage[1], "max_rss_bytes")),
                 3LL << 30);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 %s/tests/schema/validate.py "
             "status-changed.v1.json %s %s",
             FORGE_SOURCE_DIR, p[0], p[1]);
    cr_assert_eq(system(cmd), 0, "the terminal event breaks the schema");
    e.usage = NULL; /* any other event says none */
    ev = forge_event_status(&e);
    cr_assert_null(json_object_get(json_object_get(ev, "data"), "usage"));
    json_decref(ev);
    for (int i = 0; i < 2; i++) {
        unlink(p[i]);
        json_decref(usage[i]);
        forge_slurm_usage_clear(&u[i]);
    }
    rmdir(dir);
    forge_slurm_tres_list_clear(&tres);
    json_decref(slurm);
}

/* logs_archived names the refused entries of the staging folder, and the
 * event stays valid under schemas/logs-archived.v1.json; so does a
 * REJECTED for an unsafe staging folder under status-changed. */
Test(events, logs_event_lists_refused_entries)
{
    char dir[] = "/tmp/forge-events-XXXXXX", cmd[2048], p[2][64];
    char *missing[] = {"main.err"}, *refused[] = {"extra/pipe", "passwd"};
    forge_archive_file_t files[] = {{"main.out", 12}};
    forge_archive_t a = {0};
    forge_status_event_t s = base_event();
    forge_logs_event_t e = {"llama-ft-0042", 2, "worker-1", labels, 2, &a};
    json_t *ev, *list;

    a.path = "/srv/forge/artifacts/llama-ft-0042/2/logs.tar.gz";
    a.relative_path = "artifacts/llama-ft-0042/2/logs.tar.gz";
    memset(a.sha256, 'a', 64);
    a.files = files;
    a.file_count = 1;
    a.missing = missing;
    a.missing_count = 1;
    a.refused = refused;
    a.refused_count = 2;
    a.at_ms = 1796233479123LL;
    ev = forge_event_logs(&e);
    list = json_object_get(json_object_get(ev, "data"), "refused");
    cr_assert_eq(json_array_size(list), 2);
    cr_assert_str_eq(json_string_value(json_array_get(list, 1)), "passwd");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(p[0], sizeof(p[0]), "%s/logs.json", dir);
    cr_assert_eq(json_dump_file(ev, p[0], 0), 0);
    json_decref(ev);
    s.state = FORGE_STATE_REJECTED;
    s.reason = "unsafe_storage";
    s.error_code = "unsafe_storage";
    s.error_field = "$";
    s.error_message = "staging/llama-ft-0042/2 is a symbolic link";
    snprintf(p[1], sizeof(p[1]), "%s/status.json", dir);
    write_event(p[1], &s);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 %s/tests/schema/validate.py "
             "logs-archived.v1.json %s && /usr/bin/python3 "
             "%s/tests/schema/validate.py status-changed.v1.json %s",
             FORGE_SOURCE_DIR, p[0], FORGE_SOURCE_DIR, p[1]);
    cr_assert_eq(system(cmd), 0, "an event breaks its schema (see above)");
    unlink(p[0]);
    unlink(p[1]);
    rmdir(dir);
}

/* The inputs of the log_chunk examples (schemas/examples/valid/log-chunk*):
 * two files' new lines, one with a secret redacted; a skip, and a file the
 * job rewrote (restarted); a final chunk with nothing left to say. */
static const forge_kv_t chunk_labels[] = {{"team", "nlp"}};
static forge_live_segment_t two_files[] = {
    {"main.out", 18230, 78,
     "epoch 3 step 1200 loss 2.41\nupload to "
     "https://hub.example/x?token=[REDACTED]\n",
     0, false},
    {"metrics/loss.csv", 512, 20, "1200,2.41\n1210,2.39\n", 0, false},
};
static forge_live_segment_t skip_and_restart[] = {
    {"main.err", 1048626, 41, "warning: gradient overflow, scaling down\n",
     1048576, false},
    {"metrics/loss.csv", 0, 17, "step,loss\n0,2.35\n", 0, true},
};

static const struct chunk_example {
    const char *file; /* under schemas/examples/valid */
    long n;
    int try_num;
    bool final;
    forge_live_segment_t *segments;
    size_t segment_count;
    long long at_ms;
} chunk_examples[] = {
    {"log-chunk.json", 7, 1, false, two_files, 2, 1714565404250LL},
    {"log-chunk-skipped.json", 12, 2, false, skip_and_restart, 2,
     1714565409250LL},
    {"log-chunk-final.json", 13, 2, true, NULL, 0, 1714565411000LL},
};

static json_t *chunk_of(const struct chunk_example *x)
{
    forge_log_chunk_event_t e = {0};

    e.launch_id = "lch-0003";
    e.attempt = 1;
    e.try_num = x->try_num;
    e.n = x->n;
    e.final = x->final;
    e.worker_id = "worker-0";
    e.labels = chunk_labels;
    e.label_count = 1;
    e.segments = x->segments;
    e.segment_count = x->segment_count;
    e.at_ms = x->at_ms;
    return forge_event_log_chunk(&e);
}

/* Each example is, byte for byte once written compactly (so in the same
 * key order), what the builder makes of its inputs; the builder makes the
 * same bytes twice. */
Test(events, log_chunk_examples_are_what_the_builder_makes)
{
    for (size_t i = 0; i < sizeof(chunk_examples) / sizeof(*chunk_examples);
         i++) {
        const struct chunk_example *x = &chunk_examples[i];
        char path[512], *built, *again, *want;
        json_t *ev = chunk_of(x), *ev2 = chunk_of(x), *example;
        json_error_t jerr;

        snprintf(path, sizeof(path), "%s/schemas/examples/valid/%s",
                 FORGE_SOURCE_DIR, x->file);
        example = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        cr_assert_not_null(example, "%s: %s", path, jerr.text);
        cr_assert_not_null(ev);
        built = json_dumps(ev, JSON_COMPACT);
        again = json_dumps(ev2, JSON_COMPACT);
        want = json_dumps(example, JSON_COMPACT);
        cr_assert_str_eq(built, want, "%s: the builder makes\n%s", x->file,
                         built);
        cr_assert_str_eq(built, again);
        free(built);
        free(again);
        free(want);
        json_decref(example);
        json_decref(ev);
        json_decref(ev2);
    }
}

/* The contract's fields: the id names the chunk, `skipped` and `restarted`
 * only when they say something, `final` always; every chunk the builder
 * makes is valid under schemas/log-chunk.v1.json. */
Test(events, log_chunk_has_the_contract_fields)
{
    char dir[] = "/tmp/forge-events-XXXXXX", cmd[1024], p[3][64];
    json_t *ev, *data, *segs;

    ev = chunk_of(&chunk_examples[1]);
    data = json_object_get(ev, "data");
    segs = json_object_get(data, "segments");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "id")),
                     "lch-0003/1/log/12");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "type")),
                     "forge.launch.log_chunk");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "source")),
                     "forge-worker/worker-0");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "subject")),
                     "lch-0003");
    cr_assert(json_is_false(json_object_get(data, "final")));
    cr_assert_eq(json_integer_value(json_object_get(data, "try")), 2);
    cr_assert_eq(
        json_integer_value(json_object_get(json_array_get(segs, 0), "skipped")),
        1048576);
    cr_assert_null(json_object_get(json_array_get(segs, 0), "restarted"));
    cr_assert_null(json_object_get(json_array_get(segs, 1), "skipped"));
    cr_assert(
        json_is_true(json_object_get(json_array_get(segs, 1), "restarted")));
    json_decref(ev);
    ev = chunk_of(&chunk_examples[2]);
    data = json_object_get(ev, "data");
    cr_assert(json_is_true(json_object_get(data, "final")));
    cr_assert_eq(json_array_size(json_object_get(data, "segments")), 0);
    json_decref(ev);

    cr_assert_not_null(mkdtemp(dir));
    for (int i = 0; i < 3; i++) {
        snprintf(p[i], sizeof(p[i]), "%s/chunk%d.json", dir, i);
        ev = chunk_of(&chunk_examples[i]);
        cr_assert_eq(json_dump_file(ev, p[i], JSON_INDENT(1)), 0);
        json_decref(ev);
    }
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 %s/tests/schema/validate.py "
             "log-chunk.v1.json %s %s %s",
             FORGE_SOURCE_DIR, p[0], p[1], p[2]);
    cr_assert_eq(system(cmd), 0, "a chunk the worker makes breaks the schema");
    for (int i = 0; i < 3; i++)
        unlink(p[i]);
    rmdir(dir);
}

/* A segment whose text is not UTF-8 (the reader never makes one) makes no
 * event rather than a broken one. */
Test(events, log_chunk_with_text_not_utf8_is_null)
{
    forge_live_segment_t bad[] = {{"main.out", 0, 2, "\xff\n", 0, false}};
    struct chunk_example x = {"-", 1, 1, false, bad, 1, 1714565404250LL};

    cr_assert_null(chunk_of(&x));
}
