/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_loop_image.c - a job whose batch script refused its image (render.h:
 * exit FORGE_RENDER_IMAGE_EXIT, apptainer's word in the staging folder)
 * through the consume loop (loop/image_note.c), driven through its seams
 * with the fakes of support_loop.h: the end waits for the note, read on
 * the file lane, then goes out FAILED with reason image_invalid and the
 * note in its error; no note (the command's own exit 66), or a note that
 * cannot be read, and it goes out as Slurm said it; the same end seen
 * again meanwhile waits with the first read; another exit never waits.
 */
#include "base/util.h"
#include "render/render.h"
#include "loop/loop.h"

#include "support_loop.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

LOOP_FIXTURE(image_note, "forge-image-note",
             "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
             "FORGE_POLL_INTERVAL_MS=3600000");

/* A launch of id with retry ("": none) accepted and submitted as job
 * `job`. */
static void submitted_with(const char *id, const char *retry, uint32_t job)
{
    fake_kafka_send(kafka, 0, id, loop_launch_request(id, 1, retry));
    step();
    submit_answered(next_work(FORGE_LANE_SLURM, FORGE_WORK_SUBMIT, id), job, 1,
                    FORGE_SLURM_OK);
    step();
    expect_states(id, "ACCEPTED SUBMITTED");
}

static void submitted(const char *id, uint32_t job)
{
    submitted_with(id, "", job);
}

/* The next poll tick's answer: job_id FAILED with exit_code. */
static void job_failed(uint32_t job_id, int exit_code)
{
    forge_work_t *t = poll_tick();
    const char *const states[] = {"FAILED", NULL};
    forge_slurm_job_t *j = item_changed(item_of(t, job_id), states);

    j->nodes = forge_xstrdup("h200-1");
    j->exit_code = exit_code;
    fake_pools_finish(pools, FORGE_LANE_POLLER, t);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);

    return json_string_value(b ? json_object_get(v, b) : v);
}

/* The note read (held by the test) answered: note (NULL: none found). */
static void note_read(forge_work_t *w, const char *note)
{
    w->image.found = note != NULL;
    if (note)
        forge_buf_puts(&w->image.note, note);
    fake_pools_finish(pools, FORGE_LANE_FILES, w);
}

/* The end waits for the note; then FAILED, image_invalid, apptainer's
 * word (lines joined, a control character shown as '?') in the error at
 * $.image.path; the exit code stays Slurm's. */
Test(image_note, a_refused_image_fails_with_the_note)
{
    forge_work_t *w;
    json_t *data;

    assign(0);
    submitted("I1", 81);
    tick_step();
    job_failed(81, FORGE_RENDER_IMAGE_EXIT);
    step();
    expect_states("I1", "ACCEPTED SUBMITTED");
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_IMAGE_NOTE, "I1");
    cr_assert_eq(w->image.job_id, 81);
    note_read(w, "invalid SIF magic\nsecond\x01line\n");
    step();
    expect_states("I1", "ACCEPTED SUBMITTED FAILED");
    data = last_event_data("I1");
    cr_assert_str_eq(str_at(data, "reason", NULL), "image_invalid");
    cr_assert_str_eq(str_at(data, "error", "code"), "image_invalid");
    cr_assert_str_eq(str_at(data, "error", "field"), "$.image.path");
    cr_assert_str_eq(str_at(data, "error", "message"),
                     "the image did not open where the job ran: invalid SIF "
                     "magic; second?line");
    cr_assert_eq(json_integer_value(json_object_get(
                     json_object_get(data, "slurm"), "exit_code")),
                 FORGE_RENDER_IMAGE_EXIT);
    json_decref(data);
}

/* The command's own exit 66 leaves no note: FAILED as Slurm said it. */
Test(image_note, no_note_is_the_command_own_exit)
{
    json_t *data;

    assign(0);
    submitted("I2", 82);
    tick_step();
    job_failed(82, FORGE_RENDER_IMAGE_EXIT);
    step();
    note_read(next_work(FORGE_LANE_FILES, FORGE_WORK_IMAGE_NOTE, "I2"), NULL);
    step();
    expect_states("I2", "ACCEPTED SUBMITTED FAILED");
    data = last_event_data("I2");
    cr_assert_str_eq(str_at(data, "reason", NULL), "failed");
    cr_assert_null(json_object_get(data, "error"));
    json_decref(data);
}

/* A note that cannot be read (a link planted there): logged, and the end
 * goes out as Slurm said it; never left waiting. */
Test(image_note, an_unreadable_note_still_ends_the_launch)
{
    forge_work_t *w;
    json_t *data;

    assign(0);
    submitted("I3", 83);
    tick_step();
    job_failed(83, FORGE_RENDER_IMAGE_EXIT);
    step();
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_IMAGE_NOTE, "I3");
    w->code = FORGE_EUNSAFE_PATH;
    snprintf(w->message, sizeof(w->message), "image.error is a link");
    note_read(w, NULL);
    step();
    expect_states("I3", "ACCEPTED SUBMITTED FAILED");
    data = last_event_data("I3");
    cr_assert_str_eq(str_at(data, "reason", NULL), "failed");
    json_decref(data);
}

/* The same end seen again while its note is out waits with it: one read,
 * one FAILED. */
Test(image_note, the_end_seen_again_waits_with_the_first_read)
{
    forge_work_t *w;

    assign(0);
    submitted("I4", 84);
    tick_step();
    job_failed(84, FORGE_RENDER_IMAGE_EXIT);
    step();
    w = next_work(FORGE_LANE_FILES, FORGE_WORK_IMAGE_NOTE, "I4");
    tick_step();
    job_failed(84, FORGE_RENDER_IMAGE_EXIT);
    step();
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_FILES),
                   "a second read of the note");
    expect_states("I4", "ACCEPTED SUBMITTED");
    note_read(w, "invalid SIF magic\n");
    step();
    expect_states("I4", "ACCEPTED SUBMITTED FAILED");
}

/* Any other exit goes out at once: no read. */
Test(image_note, another_exit_never_waits)
{
    json_t *data;

    assign(0);
    submitted("I5", 85);
    tick_step();
    job_failed(85, 3);
    step();
    expect_states("I5", "ACCEPTED SUBMITTED FAILED");
    data = last_event_data("I5");
    cr_assert_str_eq(str_at(data, "reason", NULL), "failed");
    json_decref(data);
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_FILES),
                   "the end of exit 3 read a note");
}

/* A broken image is never retried, even by a policy that retries the
 * job's own failures: FAILED image_invalid at try 1. */
Test(image_note, a_refused_image_is_not_retried)
{
    json_t *data;

    assign(0);
    submitted_with("I6",
                   "{\"max_tries\": 3, \"on\": [\"failed\"], "
                   "\"backoff_s\": 0}",
                   86);
    tick_step();
    job_failed(86, FORGE_RENDER_IMAGE_EXIT);
    step();
    note_read(next_work(FORGE_LANE_FILES, FORGE_WORK_IMAGE_NOTE, "I6"),
              "invalid SIF magic\n");
    step();
    expect_states("I6", "ACCEPTED SUBMITTED FAILED");
    data = last_event_data("I6");
    cr_assert_str_eq(str_at(data, "reason", NULL), "image_invalid");
    json_decref(data);
}
