/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_launch.c - launch records: the state machine through them (seq +1
 * per legal move, nothing for an illegal one), the digest, and the state
 * topic encoding round trip, including refusal of what is not a record.
 * The request goes in sealed: no secret of it in the encoded record, old
 * records with a clear request still read (and sealed when written
 * again), and a sealed request that does not open loses nothing else.
 */
#include "record/launch.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/forge-test-launch-XXXXXX";

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(launch, .init = setup, .fini = teardown);

/* A sealer whose current key is 32 bytes of `current` and, when previous
 * is not 0, whose previous key is 32 bytes of `previous`. */
static forge_sealer_t *sealer_of(char current, char previous)
{
    char paths[2][256], key[FORGE_SEAL_KEY_BYTES];
    char fills[2] = {current, previous};
    forge_sealer_t *s = NULL;
    forge_error_t err = {0};

    for (int i = 0; i < 2; i++) {
        int fd;
        snprintf(paths[i], sizeof(paths[i]), "%s/key-%c", dir, fills[i]);
        memset(key, fills[i], sizeof(key));
        fd = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, key, sizeof(key)), (ssize_t)sizeof(key));
        close(fd);
    }
    cr_assert_eq(
        forge_sealer_load(paths[0], previous ? paths[1] : NULL, &s, &err),
        FORGE_OK, "%s", err.message);
    return s;
}

/* r as the state topic's value (new). */
static char *encode_ok(const forge_launch_record_t *r, const forge_sealer_t *s)
{
    json_t *o = NULL;
    forge_error_t err = {0};
    char *text;

    cr_assert_eq(forge_launch_record_encode(r, s, &o, &err), FORGE_OK, "%s",
                 err.message);
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

static forge_launch_record_t *decode_ok(const char *text,
                                        const forge_sealer_t *s)
{
    forge_launch_record_t *r = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_launch_record_decode(text, strlen(text), s, &r, &err),
                 FORGE_OK, "%s", err.message);
    return r;
}

/* What a record with a job id carries sealed of req: the request reduced
 * to what is kept (held.h). New. */
static char *kept_of(const char *req)
{
    forge_held_t *h = forge_held_of_trusted(req, strlen(req));
    size_t len;
    char *text;

    cr_assert_not_null(h);
    text = forge_held_to_json(h, &len);
    forge_held_free(h);
    return text;
}

static void assert_kept(const forge_launch_record_t *back, const char *req)
{
    char *kept = kept_of(req);

    cr_assert_eq(back->request_len, strlen(kept));
    cr_assert_str_eq(back->request, kept);
    free(kept);
}

Test(launch, digest_is_the_sha256_of_the_request)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 1, "abc", 3);

    cr_assert_str_eq(
        r->digest,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    forge_launch_record_free(r);
}

Test(launch, advance_counts_legal_moves_only)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 1, "{}", 2);

    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 10), 0);
    cr_assert_eq(r->accepted_at_ms, 10);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUBMITTED, 11), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_RUNNING, 12), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_PENDING, 13), 0,
                 "requeue");
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_RUNNING, 14), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_RUNNING, 15), FORGE_EINVAL,
                 "no move to itself");
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUCCEEDED, 16), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_FAILED, 17), FORGE_EINVAL,
                 "nothing leaves a terminal state");
    cr_assert_eq(r->seq, 6);
    cr_assert_eq(r->state, FORGE_STATE_SUCCEEDED);
    cr_assert_eq(r->updated_at_ms, 16);
    forge_launch_record_free(r);
}

Test(launch, encode_decode_round_trip)
{
    const char req[] = "{\"kind\": \"launch\", \"launch_id\": \"L1\", "
                       "\"env\": {\"A\": \"\\u00e9 \\\"q\\\"\"}}";
    forge_launch_record_t *r = forge_launch_record_new("L1", 3, req,
                                                       strlen(req)),
                          *back;
    forge_sealer_t *s = sealer_of('k', 0);
    char *text;

    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 100), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUBMITTED, 200), 0);
    r->job_id = 4242;
    r->component_ids = calloc(2, sizeof(uint32_t));
    r->component_ids[0] = 4242;
    r->component_ids[1] = 4243;
    r->component_count = 2;
    r->cancel_requested = true;
    r->missing_since_ms = 300;
    text = encode_ok(r, s);
    back = decode_ok(text, s);
    cr_assert_str_eq(back->launch_id, "L1");
    cr_assert_eq(back->attempt, 3);
    cr_assert_eq(back->state, FORGE_STATE_SUBMITTED);
    cr_assert_eq(back->seq, 2);
    cr_assert_str_eq(back->digest, r->digest);
    assert_kept(back, req); /* a job id: only what is kept of it */
    cr_assert_eq(back->job_id, 4242);
    cr_assert_eq(back->component_count, 2);
    cr_assert_eq(back->component_ids[1], 4243);
    cr_assert(back->cancel_requested);
    cr_assert_not(back->archived);
    cr_assert_eq(back->accepted_at_ms, 100);
    cr_assert_eq(back->updated_at_ms, 200);
    cr_assert_eq(back->missing_since_ms, 300);
    cr_assert_null(back->request_error);
    cr_assert_null(back->request_sealed);
    free(text);
    forge_launch_record_free(back);
    forge_launch_record_free(r);
    forge_sealer_destroy(s);
}

/* The Slurm states the record's state came from (issue 11): kept across
 * an encode and decode, absent from a record that has none (and from one
 * written before the field existed, which decodes as none). */
Test(launch, slurm_states_round_trip_and_stay_optional)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 1, NULL, 0), *back;
    char *text;

    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 100), 0);
    r->job_id = 4242;
    text = encode_ok(r, NULL);
    cr_assert_null(strstr(text, "slurm_states"), "%s", text);
    back = decode_ok(text, NULL);
    cr_assert_null(back->slurm_states);
    forge_launch_record_free(back);
    free(text);

    r->slurm_states = strdup("4242:RUNNING,COMPLETING,;");
    text = encode_ok(r, NULL);
    back = decode_ok(text, NULL);
    cr_assert_str_eq(back->slurm_states, "4242:RUNNING,COMPLETING,;");
    forge_launch_record_free(back);
    free(text);
    forge_launch_record_free(r);
}

/* A later attempt refused while this one ran (issue 15): kept across an
 * encode and decode, absent when none was; it and every earlier attempt
 * are decided, a higher one is not. */
Test(launch, refused_attempt_round_trips_and_decides_that_attempt)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 2, NULL, 0), *back;
    char *text;

    text = encode_ok(r, NULL);
    cr_assert_null(strstr(text, "refused_attempt"), "%s", text);
    back = decode_ok(text, NULL);
    cr_assert_eq(back->refused_attempt, 0);
    cr_assert(forge_launch_decided(back, 2));
    cr_assert_not(forge_launch_decided(back, 3));
    forge_launch_record_free(back);
    free(text);

    r->refused_attempt = 3;
    text = encode_ok(r, NULL);
    back = decode_ok(text, NULL);
    cr_assert_eq(back->refused_attempt, 3);
    cr_assert(forge_launch_decided(back, 1));
    cr_assert(forge_launch_decided(back, 3));
    cr_assert_not(forge_launch_decided(back, 4));
    forge_launch_record_free(back);
    free(text);
    forge_launch_record_free(r);
}

/* Slurm's requeues seen and the runs staged for (restage.c): kept across
 * an encode and decode, so an owner that died between the two leaves the
 * staging to the next; absent while 0. */
Test(launch, restarts_round_trip_and_are_absent_until_a_requeue)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 1, NULL, 0), *back;
    char *text;

    text = encode_ok(r, NULL);
    cr_assert_null(strstr(text, "restarts"), "%s", text);
    forge_launch_record_free(decode_ok(text, NULL));
    free(text);

    r->restarts = 2;
    r->restarts_staged = 1;
    text = encode_ok(r, NULL);
    back = decode_ok(text, NULL);
    cr_assert_eq(back->restarts, 2);
    cr_assert_eq(back->restarts_staged, 1);
    forge_launch_record_free(back);
    free(text);
    forge_launch_record_free(r);
}

/* What the job used (issue 28): GPU-seconds and elapsed seconds from the
 * terminal event's usage, kept across an encode and decode; absent, and
 * read back as unknown, in a record without (older ones too). */
Test(launch, usage_round_trips_and_is_absent_while_unknown)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 1, NULL, 0), *back;
    json_t *usage = json_pack("{s:I, s:f, s:f, s:I, s:[]}", "elapsed_s",
                              (json_int_t)5400, "gpu_hours", 6.0, "cpu_hours",
                              12.0, "gpus", (json_int_t)4, "components");
    char *text;

    text = encode_ok(r, NULL);
    cr_assert_null(strstr(text, "gpu_seconds"), "%s", text);
    back = decode_ok(text, NULL);
    cr_assert_not(back->has_usage);
    cr_assert(forge_launch_gpu_hours(back) < 0);
    forge_launch_record_free(back);
    free(text);

    forge_launch_add_usage(r, usage);
    cr_assert(r->has_usage);
    cr_assert_eq(r->gpu_seconds, 4 * 5400);
    text = encode_ok(r, NULL);
    back = decode_ok(text, NULL);
    cr_assert(back->has_usage);
    cr_assert_eq(back->gpu_seconds, 4 * 5400);
    cr_assert_eq(back->elapsed_s, 5400);
    cr_assert(fabs(forge_launch_gpu_hours(back) - 6.0) < 1e-9);
    forge_launch_record_free(back);
    free(text);
    /* a later try's end: the tries summed; its elapsed unknown, so is
     * the sum's (gpu_seconds alone) */
    json_object_set_new(usage, "elapsed_s", json_null());
    json_object_set_new(usage, "gpu_hours", json_real(1.5));
    forge_launch_add_usage(r, usage);
    text = encode_ok(r, NULL);
    cr_assert_null(strstr(text, "elapsed_s"), "%s", text);
    back = decode_ok(text, NULL);
    cr_assert(back->has_usage);
    cr_assert_eq(back->elapsed_s, -1);
    cr_assert(fabs(forge_launch_gpu_hours(back) - 7.5) < 1e-9);
    forge_launch_record_free(back);
    free(text);
    json_decref(usage);
    forge_launch_record_free(r);
}

/* The live logs' cursors (issue 29) are kept across an encode and
 * decode, so a new owner continues where the last chunk ended; absent
 * until the first chunk; malformed files entries are dropped. */
Test(launch, live_logs_round_trip_and_are_absent_until_the_first_chunk)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 1, NULL, 0), *back;
    forge_live_cursor_t *c = forge_xcalloc(2, sizeof(*c));
    char *text;

    text = encode_ok(r, NULL);
    cr_assert_null(strstr(text, "\"logs\""), "%s", text);
    free(text);
    c[0] = (forge_live_cursor_t){strdup("main.out"), 4096, 1234, 0xabcdef1, 9};
    c[1] = (forge_live_cursor_t){strdup("metrics/loss.csv"), 0, 0, 0, 0};
    forge_launch_set_logs(r, 7, true, c, 2);
    text = encode_ok(r, NULL);
    back = decode_ok(text, NULL);
    cr_assert_eq(back->log_chunks, 7);
    cr_assert(back->log_final);
    cr_assert_eq(back->log_cursor_count, 2);
    cr_assert_str_eq(back->log_cursors[0].name, "main.out");
    cr_assert_eq(back->log_cursors[0].offset, 4096);
    cr_assert_eq(back->log_cursors[0].ino, 1234);
    cr_assert_eq(back->log_cursors[0].mark, 0xabcdef1);
    cr_assert_eq(back->log_cursors[0].seen_size, 0, "memory only");
    cr_assert_str_eq(back->log_cursors[1].name, "metrics/loss.csv");
    forge_launch_record_free(back);
    free(text);
    text = encode_ok(r, NULL);
    {
        char *at = strstr(text, "\"offset\":4096");
        cr_assert_not_null(at);
        memcpy(at, "\"offset\":null", 13); /* same length */
    }
    back = decode_ok(text, NULL);
    cr_assert_eq(back->log_cursor_count, 1, "the malformed entry dropped");
    forge_launch_record_free(back);
    free(text);
    forge_launch_record_free(r);
}

/* A sweep for late jobs still due (the clean of an interrupted submit ran)
 * is kept across an encode and decode, so the launch's next owner does
 * it; absent when not due. */
Test(launch, sweep_due_round_trips_and_is_absent_when_not_due)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 1, NULL, 0), *back;
    char *text;

    text = encode_ok(r, NULL);
    cr_assert_null(strstr(text, "sweep_due"), "%s", text);
    back = decode_ok(text, NULL);
    cr_assert_not(back->sweep_due);
    forge_launch_record_free(back);
    free(text);

    r->sweep_due = true;
    text = encode_ok(r, NULL);
    back = decode_ok(text, NULL);
    cr_assert(back->sweep_due);
    forge_launch_record_free(back);
    free(text);
    forge_launch_record_free(r);
}

Test(launch, decode_refuses_what_is_not_a_record)
{
    const char *bad[] = {
        "garbage",
        "{}",
        "{\"v\": 2, \"launch_id\": \"L\"}",
        "[1]",
    };
    forge_launch_record_t *r = (forge_launch_record_t *)0x1;
    forge_error_t err = {0};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        forge_error_clear(&err);
        cr_assert_neq(
            forge_launch_record_decode(bad[i], strlen(bad[i]), NULL, &r, &err),
            0, "%s", bad[i]);
        cr_assert_null(r);
    }
}

/* ---- the request, sealed ------------------------------------------------ */

#define TOKEN      "ingest-tok-6f1d2c3b4a59687766554433221100ff"
#define ENV_VALUE  "env-value-b7e1c0ffee"
#define SECRET_ENV "secret-env-value-9a8b7c6d"

static const char request[] =
    "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"attempt\": 2, "
    "\"env\": {\"PLAIN\": \"" ENV_VALUE "\"}, "
    "\"secret_env\": {\"API_KEY\": \"" SECRET_ENV "\"}, "
    "\"ingest\": {\"endpoint\": \"https://ingest.example\", "
    "\"token\": \"" TOKEN "\"}}";

static forge_launch_record_t *running_record(void)
{
    forge_launch_record_t *r =
        forge_launch_record_new("L1", 2, request, strlen(request));

    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 100), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUBMITTED, 200), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_RUNNING, 300), 0);
    r->job_id = 77;
    return r;
}

Test(launch, the_encoded_record_holds_no_secret_in_clear)
{
    forge_sealer_t *s = sealer_of('k', 0);
    forge_launch_record_t *r = running_record(), *back;
    char *text = encode_ok(r, s);
    json_t *o = json_loads(text, 0, NULL);
    json_t *sealed = json_object_get(o, "request_sealed");

    cr_assert_null(strstr(text, TOKEN), "%s", text);
    cr_assert_null(strstr(text, ENV_VALUE), "%s", text);
    cr_assert_null(strstr(text, SECRET_ENV), "%s", text);
    cr_assert_null(strstr(text, "ingest.example"), "nothing of it: %s", text);
    cr_assert(json_is_null(json_object_get(o, "request")));
    cr_assert(json_is_object(sealed));
    cr_assert_str_eq(json_string_value(json_object_get(sealed, "kid")),
                     forge_sealer_kid(s));
    back = decode_ok(text, s);
    assert_kept(back, request);
    cr_assert_eq(back->state, FORGE_STATE_RUNNING);
    json_decref(o);
    free(text);
    forge_launch_record_free(back);
    forge_launch_record_free(r);
    forge_sealer_destroy(s);
}

/* The whole request while a submit may need it; once the job id is
 * recorded, only what is kept (held.h), from the bytes or from the
 * table's held form once the bytes are gone (forge_launch_compact). */
Test(launch, a_record_carries_its_whole_request_until_its_job_id)
{
    forge_sealer_t *s = sealer_of('k', 0);
    forge_launch_record_t *r =
        forge_launch_record_new("L1", 2, request, strlen(request));
    forge_held_t *held = forge_held_of_trusted(request, strlen(request));
    forge_launch_record_t *back;
    forge_error_t err = {0};
    json_t *o = NULL;
    char *whole, *kept, *text;

    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 100), 0);
    whole = encode_ok(r, s);
    back = decode_ok(whole, s);
    cr_assert_str_eq(back->request, request, "no job id: the whole request");
    forge_launch_record_free(back);
    r->job_id = 9;
    kept = encode_ok(r, s);
    cr_assert_lt(strlen(kept), strlen(whole), "%s", kept);
    back = decode_ok(kept, s);
    assert_kept(back, request);
    forge_launch_record_free(back);
    forge_launch_compact(r);
    cr_assert_null(r->request);
    cr_assert_eq(r->request_len, 0);
    cr_assert_eq(forge_launch_record_encode_kept(r, held, s, &o, &err),
                 FORGE_OK, "%s", err.message);
    text = json_dumps(o, JSON_COMPACT);
    back = decode_ok(text, s);
    assert_kept(back, request);
    forge_launch_record_free(back);
    free(text);
    json_decref(o);
    text = encode_ok(r, s); /* neither bytes nor held: nothing to seal */
    cr_assert_null(strstr(text, "request_sealed"), "%s", text);
    free(text);
    free(whole);
    free(kept);
    forge_held_free(held);
    forge_launch_record_free(r);
    forge_sealer_destroy(s);
}

Test(launch, a_request_is_never_encoded_without_a_sealer)
{
    forge_launch_record_t *r = running_record();
    json_t *o = (json_t *)0x1;
    forge_error_t err = {0};
    char *text;

    cr_assert_eq(forge_launch_record_encode(r, NULL, &o, &err), FORGE_EINVAL);
    cr_assert_null(o);
    forge_launch_drop_request(r); /* archived: nothing left to seal */
    cr_assert_null(r->request);
    text = encode_ok(r, NULL);
    cr_assert_null(strstr(text, "request_sealed"), "%s", text);
    cr_assert_not_null(strstr(text, "\"request\":null"), "%s", text);
    free(text);
    forge_launch_record_free(r);
}

/* What a worker from before sealing wrote: the request in clear. */
static char *old_record(const char *launch_id, const char *req)
{
    json_t *o = json_pack(
        "{s:i, s:s, s:i, s:s, s:I, s:s, s:s, s:I, s:[I], s:b, s:b, s:I, s:I, "
        "s:I, s:b}",
        "v", 1, "launch_id", launch_id, "attempt", 2, "state", "ACCEPTED",
        "seq", (json_int_t)1, "digest",
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        "request", req, "job_id", (json_int_t)0, "components", (json_int_t)5,
        "cancel_requested", 0, "archived", 0, "accepted_at_ms", (json_int_t)100,
        "updated_at_ms", (json_int_t)100, "missing_since_ms", (json_int_t)0,
        "cleaned", 0);
    char *text = json_dumps(o, JSON_COMPACT);

    json_decref(o);
    return text;
}

Test(launch, old_clear_records_are_read_and_sealed_when_written_again)
{
    forge_sealer_t *s = sealer_of('k', 0);
    char *old = old_record("L1", request), *again;
    forge_launch_record_t *r = decode_ok(old, s), *back;

    cr_assert_str_eq(r->request, request);
    cr_assert_null(r->request_error);
    cr_assert_eq(r->state, FORGE_STATE_ACCEPTED);
    cr_assert_eq(r->component_count, 1);
    again = encode_ok(r, s);
    cr_assert_null(strstr(again, TOKEN), "%s", again);
    cr_assert_not_null(strstr(again, "request_sealed"), "%s", again);
    back = decode_ok(again, s);
    cr_assert_str_eq(back->request, request);
    free(old);
    free(again);
    forge_launch_record_free(r);
    forge_launch_record_free(back);
    forge_sealer_destroy(s);
}

/* The rest of the record survives, the sealed request is kept as it was,
 * and written back as it was. */
static void assert_unopened(const char *text, const forge_sealer_t *s,
                            forge_rc_t code)
{
    forge_launch_record_t *r = decode_ok(text, s);
    json_t *in = json_loads(text, 0, NULL), *out = NULL;
    forge_error_t err = {0};

    cr_assert_null(r->request);
    cr_assert_eq(r->request_len, 0);
    cr_assert_not_null(r->request_error);
    cr_assert_eq(r->request_error->code, code, "%s", r->request_error->message);
    cr_assert_null(strstr(r->request_error->message, TOKEN));
    cr_assert_eq(r->state, FORGE_STATE_RUNNING);
    cr_assert_eq(r->job_id, 77);
    cr_assert_eq(r->seq, 3);
    cr_assert_eq(forge_launch_record_encode(r, s, &out, &err), FORGE_OK);
    cr_assert(json_equal(json_object_get(out, "request_sealed"),
                         json_object_get(in, "request_sealed")),
              "the sealed request is written back untouched");
    json_decref(in);
    json_decref(out);
    forge_launch_record_free(r);
}

Test(launch, a_request_sealed_with_an_unknown_key_is_kept_unopened)
{
    forge_sealer_t *old_key = sealer_of('o', 0), *new_key = sealer_of('n', 0);
    forge_sealer_t *rotating = sealer_of('n', 'o');
    forge_launch_record_t *r = running_record(), *back;
    char *text = encode_ok(r, old_key);

    assert_unopened(text, new_key, FORGE_ECONFIG);
    assert_unopened(text, NULL, FORGE_ECONFIG);
    back = decode_ok(text, rotating); /* the previous key opens it */
    assert_kept(back, request);
    cr_assert_null(back->request_error);
    free(text);
    forge_launch_record_free(back);
    forge_launch_record_free(r);
    forge_sealer_destroy(old_key);
    forge_sealer_destroy(new_key);
    forge_sealer_destroy(rotating);
}

Test(launch, a_sealed_request_moved_to_another_launch_does_not_open)
{
    forge_sealer_t *s = sealer_of('k', 0);
    forge_launch_record_t *a = running_record(), *b = running_record();
    char *ta, *tb;
    json_t *oa, *ob;

    free(b->launch_id);
    b->launch_id = strdup("L2");
    ta = encode_ok(a, s);
    tb = encode_ok(b, s);
    oa = json_loads(ta, 0, NULL);
    ob = json_loads(tb, 0, NULL);
    json_object_set(ob, "request_sealed",
                    json_object_get(oa, "request_sealed"));
    free(tb);
    tb = json_dumps(ob, JSON_COMPACT);
    assert_unopened(tb, s, FORGE_ESCHEMA);
    free(ta);
    free(tb);
    json_decref(oa);
    json_decref(ob);
    forge_launch_record_free(a);
    forge_launch_record_free(b);
    forge_sealer_destroy(s);
}

Test(launch, a_tampered_sealed_request_does_not_open)
{
    forge_sealer_t *s = sealer_of('k', 0);
    forge_launch_record_t *r = running_record();
    char *text = encode_ok(r, s);
    char *ct = strstr(text, "\"ct\":\"") + 6;

    *ct = *ct == 'A' ? 'Q' : 'A'; /* the first digit: always a whole bit */
    assert_unopened(text, s, FORGE_ESCHEMA);
    free(text);
    forge_launch_record_free(r);
    forge_sealer_destroy(s);
}

Test(launch, a_malformed_sealed_request_leaves_the_record_whole)
{
    forge_sealer_t *s = sealer_of('k', 0);
    forge_launch_record_t *r = running_record(), *back;
    char *text = encode_ok(r, s);
    json_t *o = json_loads(text, 0, NULL);

    json_object_set_new(o, "request_sealed", json_string("garbage"));
    free(text);
    text = json_dumps(o, JSON_COMPACT);
    back = decode_ok(text, s);
    cr_assert_null(back->request);
    cr_assert_not_null(back->request_error);
    cr_assert_null(back->request_sealed, "nothing worth writing back");
    cr_assert_eq(back->job_id, 77);
    json_decref(o);
    free(text);
    forge_launch_record_free(back);
    forge_launch_record_free(r);
    forge_sealer_destroy(s);
}

Test(launch, drop_request_forgets_it_sealed_or_not)
{
    forge_sealer_t *a = sealer_of('a', 0), *b = sealer_of('b', 0);
    forge_launch_record_t *r = running_record();
    char *text = encode_ok(r, a), *again;
    forge_launch_record_t *back = decode_ok(text, b);

    cr_assert_not_null(back->request_sealed);
    forge_launch_drop_request(back);
    cr_assert_null(back->request_sealed);
    cr_assert_null(back->request_error);
    again = encode_ok(back, b);
    cr_assert_null(strstr(again, "request_sealed"), "%s", again);
    free(text);
    free(again);
    forge_launch_record_free(back);
    forge_launch_record_free(r);
    forge_sealer_destroy(a);
    forge_sealer_destroy(b);
}

Test(launch, seal_aad_names_launch_and_attempt)
{
    char *aad = forge_launch_seal_aad("L1.x", 12);

    cr_assert_str_eq(aad, "forge-state/v1/L1.x/12");
    free(aad);
}

/* ---- the fast path and the general one agree ------------------------------
 * forge_launch_record_decode reads records shaped as this worker writes
 * them without a general JSON parse (launch.c); whatever it reads, or
 * leaves to the general path, must come out as the general path alone
 * makes it. */

static void assert_same_record(const forge_launch_record_t *a,
                               const forge_launch_record_t *b)
{
    cr_assert_str_eq(a->launch_id, b->launch_id);
    cr_assert_eq(a->attempt, b->attempt);
    cr_assert_eq(a->state, b->state);
    cr_assert_eq(a->seq, b->seq);
    cr_assert_str_eq(a->digest, b->digest);
    cr_assert_eq(a->request_len, b->request_len);
    cr_assert_eq(!a->request, !b->request);
    if (a->request)
        cr_assert_eq(memcmp(a->request, b->request, a->request_len), 0);
    cr_assert_eq(a->request_was_sealed, b->request_was_sealed);
    cr_assert(json_equal(a->request_sealed, b->request_sealed) ||
              (!a->request_sealed && !b->request_sealed));
    cr_assert_eq(!a->request_error, !b->request_error);
    if (a->request_error)
        cr_assert_str_eq(a->request_error->message, b->request_error->message);
    cr_assert_eq(a->job_id, b->job_id);
    cr_assert_eq(a->component_count, b->component_count);
    for (size_t i = 0; i < a->component_count; i++)
        cr_assert_eq(a->component_ids[i], b->component_ids[i]);
    cr_assert_eq(a->cancel_requested, b->cancel_requested);
    cr_assert_eq(a->archived, b->archived);
    cr_assert_eq(a->cleaned, b->cleaned);
    cr_assert_eq(a->accepted_at_ms, b->accepted_at_ms);
    cr_assert_eq(a->updated_at_ms, b->updated_at_ms);
    cr_assert_eq(a->missing_since_ms, b->missing_since_ms);
    cr_assert_eq(a->refused_attempt, b->refused_attempt);
    cr_assert_eq(a->sweep_due, b->sweep_due);
    cr_assert_eq(a->restarts, b->restarts);
    cr_assert_eq(a->restarts_staged, b->restarts_staged);
    cr_assert_eq(a->has_usage, b->has_usage);
    cr_assert_eq(a->gpu_seconds, b->gpu_seconds);
    cr_assert_eq(a->elapsed_s, b->elapsed_s);
    cr_assert_eq(!a->slurm_states, !b->slurm_states);
    if (a->slurm_states)
        cr_assert_str_eq(a->slurm_states, b->slurm_states);
}

/* text decodes the same both ways (or fails both ways). */
static void assert_paths_agree(const char *text, const forge_sealer_t *s)
{
    forge_launch_record_t *fast = NULL, *general = NULL;
    forge_error_t e1 = {0}, e2 = {0};
    forge_rc_t r1 = forge_launch_record_decode(text, strlen(text), s, &fast,
                                               &e1),
               r2 = forge_launch_record_decode_general(text, strlen(text), s,
                                                       &general, &e2);

    cr_assert_eq(r1, r2, "%s: %s / %s", text, e1.message, e2.message);
    if (!r1)
        assert_same_record(fast, general);
    forge_launch_record_free(fast);
    forge_launch_record_free(general);
}

/* text with its first `from` replaced by `to` (new). */
static char *edited(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);

    cr_assert_not_null(at, "%s not in %s", from, text);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

Test(launch, the_fast_and_the_general_decode_agree)
{
    forge_sealer_t *s = sealer_of('k', 0), *other = sealer_of('o', 0);
    forge_launch_record_t *r = running_record();
    char *text, *pretty;
    json_t *o = NULL;
    forge_error_t err = {0};
    const char *edits[][2] = {
        {"\"seq\":3", "\"seq\":3, \"extra\": 1"},      /* unknown key */
        {"\"seq\":3", "\"seq\":3, \"seq\": 4"},        /* repeated */
        {"\"seq\":3", "\"seq\":3.0"},                  /* not an integer */
        {"\"seq\":3", "\"seq\":03"},                   /* not JSON */
        {"\"seq\":3", "\"seq\":-3"},                   /* negative */
        {"\"seq\":3", "\"seq\":1e2"},                  /* exponent */
        {"\"seq\":3", "\"seq\":12345678901234567890"}, /* too big */
        {"\"v\":1", "\"v\":2"},                        /* another version */
        {"\"job_id\":77", "\"job_id\":\"77\""},        /* a string */
        {"\"state\":\"RUNNING\"", "\"state\":\"RUN\\u004eING\""}, /* escape */
        {"\"state\":\"RUNNING\"", "\"state\":\"NOT-A-STATE\""},
        {"\"archived\":false", "\"archived\":0"},
        {"\"cleaned\":false", "\"cleaned\":true"},
        {"\"cleaned\":false", "\"cleaned\":1"},
        {"\"components\":[", "\"components\":[1, 2, "},
        {"\"components\":[", "\"components\":[\"x\", "},
        {"\"kid\":", "\"kid\": \"0000000000000000\", \"x\":"},
        {"{", "  {\n"},
        {"\"launch_id\":\"L1\"", "\"launch_id\":\"L\xc3\xa9\""},
        {"\"request\":null,", ""}, /* required */
        {"\"refused_attempt\":4", "\"refused_attempt\":-4"},
        {"\"refused_attempt\":4", "\"refused_attempt\":4294967296"},
        {"\"sweep_due\":true", "\"sweep_due\":false"},
        {"\"sweep_due\":true", "\"sweep_due\":1"},
        {"\"restarts\":2", "\"restarts\":-2"},
        {"\"restarts\":2", "\"restarts\":4294967296"},
        {"\"restarts_staged\":1", "\"restarts_staged\":\"1\""},
        {"\"gpu_seconds\":21600", "\"gpu_seconds\":-1"},
        {"\"gpu_seconds\":21600", "\"gpu_seconds\":2.5"},
        {"\"elapsed_s\":5400", "\"elapsed_s\":null"},
        {",\"elapsed_s\":5400", ""},
    };

    r->component_ids = calloc(2, sizeof(uint32_t));
    r->component_ids[0] = 77;
    r->component_count = 1;
    r->slurm_states = strdup("77:RUNNING;");
    r->refused_attempt = 4;
    r->sweep_due = true;
    r->restarts = 2;
    r->restarts_staged = 1;
    r->has_usage = true;
    r->gpu_seconds = 21600;
    r->elapsed_s = 5400;
    text = encode_ok(r, s);
    assert_paths_agree(text, s);     /* opened */
    assert_paths_agree(text, other); /* not opened: an unknown key */
    assert_paths_agree(text, NULL);
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        char *t = edited(text, edits[i][0], edits[i][1]);
        assert_paths_agree(t, s);
        free(t);
    }
    cr_assert_eq(forge_launch_record_encode(r, s, &o, &err), FORGE_OK);
    pretty = json_dumps(o, JSON_INDENT(2)); /* whitespace everywhere */
    assert_paths_agree(pretty, s);
    free(pretty);
    json_decref(o);
    free(text);
    forge_launch_drop_request(r); /* no request: "request_sealed" absent */
    text = encode_ok(r, s);
    assert_paths_agree(text, s);
    free(text);
    forge_launch_record_free(r);
    forge_sealer_destroy(s);
    forge_sealer_destroy(other);
}

/* A copy is the record's module's (reconcile's plan keeps one): every
 * field, the ones the codec writes and the ones it does not, equal to the
 * original's, nothing it owns shared (the original freed first). The
 * fields added last (refused_attempt, sweep_due) were lost by a copy made
 * field by field outside the module. */
Test(launch, a_copy_carries_every_field_and_shares_nothing)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 3, NULL, 0);
    forge_launch_record_t *c;
    char *want, *got;

    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 100), 0);
    r->job_id = 77;
    r->component_count = 2;
    r->component_ids = calloc(3, sizeof(uint32_t));
    r->component_ids[0] = 77;
    r->component_ids[1] = 78;
    r->slurm_states = strdup("77:RUNNING,;78:RUNNING,;");
    r->refused_attempt = 4;
    r->sweep_due = true;
    r->cancel_requested = true;
    r->missing_since_ms = 5;
    r->request_error = calloc(1, sizeof(*r->request_error));
    r->request_error->code = FORGE_EINVAL;
    forge_launch_set_logs(r, 3, false,
                          forge_xcalloc(1, sizeof(forge_live_cursor_t)), 1);
    r->log_cursors[0].name = strdup("main.out");
    r->log_cursors[0].offset = 99;
    want = encode_ok(r, NULL); /* no request: no sealer needed */
    r->request = strdup("{\"a\":1}");
    r->request_len = 7;

    c = forge_launch_record_copy(r);
    forge_launch_record_free(r);
    cr_assert_eq(c->request_len, 7);
    cr_assert_str_eq(c->request, "{\"a\":1}");
    free(c->request);
    c->request = NULL;
    c->request_len = 0;
    got = encode_ok(c, NULL);
    cr_assert_str_eq(got, want);
    cr_assert_eq(c->refused_attempt, 4);
    cr_assert(c->sweep_due);
    cr_assert_eq(c->missing_since_ms, 5);
    cr_assert_eq(c->request_error->code, FORGE_EINVAL);
    cr_assert_eq(c->component_ids[1], 78);
    cr_assert_str_eq(c->log_cursors[0].name, "main.out");
    free(want);
    free(got);
    forge_launch_record_free(c);
}
