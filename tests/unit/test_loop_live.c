/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_loop_live.c - live logs through the consume loop (loop/live.c,
 * issue 29), driven through its seams with the fakes of support_loop.h:
 * a running launch's read posted on the live lane with its record's
 * cursors; what the read found published as one log_chunk event with the
 * record's new cursors in the same transaction; nothing new, nothing
 * written; the per-minute budget (a sliding minute); a read whose launch was
 * rebuilt meanwhile dropped; the final read before the archive, which waits for
 * it; and a new owner reading on from the committed cursors.
 */
#include "base/util.h"
#include "record/launch.h"
#include "loop/live_work.h"
#include "loop/loop.h"

#include "support_loop.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

LOOP_FIXTURE(live, "forge-live", "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
             "FORGE_POLL_INTERVAL_MS=3600000", "FORGE_LOG_LIVE=on",
             "FORGE_LOG_LIVE_INTERVAL_MS=200",
             "FORGE_LOG_LIVE_CHUNK_BYTES=4096",
             "FORGE_LOG_LIVE_BUDGET_BYTES=8192");

/* ---- what the test stores, answers and reads ------------------------------
 */

/* A record another worker committed: id (attempt 1) in state as job_id,
 * its cursor of main.out at offset (none when 0). */
static void stored(const char *id, forge_state_t state, uint32_t job_id,
                   uint64_t offset)
{
    forge_launch_record_t *r = forge_launch_record_new(id, 1, NULL, 0);

    r->state = state;
    r->seq = 4;
    r->job_id = job_id;
    if (offset) {
        forge_live_cursor_t *c = forge_xcalloc(1, sizeof(*c));
        c->name = forge_xstrdup("main.out");
        c->offset = offset;
        c->ino = 77;
        forge_launch_set_logs(r, 3, false, c, 1);
    }
    store_record(0, r);
}

static void start(void)
{
    assign(0);
    step();
}

/* The next read the loop posts, after the interval (the test holds it). */
static forge_work_t *next_read(void)
{
    forge_work_t *w;

    usleep(210 * 1000);
    step();
    w = fake_pools_next(pools, FORGE_LANE_LIVE);
    cr_assert_not_null(w, "a read is posted");
    cr_assert_eq(w->kind, FORGE_WORK_LIVE);
    return w;
}

static forge_live_item_t *item_for(forge_work_t *w, const char *id)
{
    for (size_t i = 0; i < w->live.item_count; i++)
        if (!strcmp(w->live.items[i].launch_id, id))
            return &w->live.items[i];
    cr_assert_fail("no item for %s", id);
    return NULL;
}

/* The read found text in main.out at offset: one segment, and the
 * cursor moved past it, as live_work.c fills an item. */
static void found(forge_live_item_t *it, uint64_t offset, const char *text)
{
    forge_live_read_t *r = &it->read;

    r->segments = forge_xcalloc(1, sizeof(*r->segments));
    r->segments[0] =
        (forge_live_segment_t){forge_xstrdup("main.out"), offset, strlen(text),
                               forge_xstrdup(text),       0,      false};
    r->segment_count = 1;
    r->bytes = strlen(text);
    r->cursors = forge_xcalloc(1, sizeof(*r->cursors));
    r->cursors[0] =
        (forge_live_cursor_t){forge_xstrdup("main.out"), offset + strlen(text),
                              77, 0, offset + strlen(text)};
    r->cursor_count = 1;
}

/* Handed back as the thread hands a read back: each item's event made. */
static void answered(forge_work_t *w)
{
    for (size_t i = 0; i < w->live.item_count; i++)
        forge_live_item_event(cfg, &w->live.items[i]);
    fake_pools_finish(pools, FORGE_LANE_LIVE, w);
    step();
}

static json_t *last_chunk(const char *id)
{
    json_t *o = last_of(cfg->topic_logs, id);

    cr_assert_str_eq(json_string_value(json_object_get(o, "type")),
                     "forge.launch.log_chunk");
    return o;
}

/* ---- the tests ----------------------------------------------------------- */

Test(live, a_running_launch_is_read_and_its_chunk_committed_with_its_cursor)
{
    forge_work_t *w;
    forge_live_item_t *it;
    json_t *ev, *seg;
    forge_launch_record_t *rec;

    stored("L1", FORGE_STATE_RUNNING, 100, 0);
    stored("Q1", FORGE_STATE_PENDING, 101, 0);
    start();
    w = next_read();
    cr_assert_eq(w->live.item_count, 1, "only the running launch");
    it = item_for(w, "L1");
    cr_assert_eq(it->cursor_count, 0);
    cr_assert_eq(it->allowance, 4096, "a chunk at most, budget full");
    cr_assert_not(it->final);
    found(it, 0, "step 1 loss 2.3\n");
    answered(w);

    ev = last_chunk("L1");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "id")),
                     "L1/1/log/1");
    seg = json_array_get(
        json_object_get(json_object_get(ev, "data"), "segments"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(seg, "text")),
                     "step 1 loss 2.3\n");
    json_decref(ev);
    rec = record_opened(last_of(cfg->topic_state, "L1"));
    cr_assert_eq(rec->log_chunks, 1);
    cr_assert_eq(rec->log_cursor_count, 1);
    cr_assert_eq(rec->log_cursors[0].offset, 16);
    forge_launch_record_free(rec);
}

Test(live, a_read_that_found_nothing_writes_nothing)
{
    forge_work_t *w;
    size_t records;

    stored("L1", FORGE_STATE_RUNNING, 100, 40);
    start();
    records = fake_kafka_count(kafka, cfg->topic_state, "L1");
    w = next_read();
    cr_assert_eq(item_for(w, "L1")->cursors[0].offset, 40,
                 "the committed cursor");
    answered(w);
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_logs, "L1"), 0);
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_state, "L1"), records);
}

Test(live, the_budget_bounds_what_a_launch_may_carry)
{
    forge_work_t *w;
    char big[4097];

    memset(big, 'x', 4095);
    big[4095] = '\n';
    big[4096] = '\0';
    stored("L1", FORGE_STATE_RUNNING, 100, 0);
    start();
    w = next_read();
    found(item_for(w, "L1"), 0, big);
    answered(w);
    w = next_read();
    cr_assert_eq(item_for(w, "L1")->allowance, 4096);
    found(item_for(w, "L1"), 4096, big);
    answered(w);
    /* 8192 a minute: spent, nothing read until a minute has passed */
    usleep(210 * 1000);
    step();
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_LIVE));
}

Test(live, a_read_for_a_launch_rebuilt_since_is_dropped)
{
    forge_work_t *w;
    int32_t p = 0;

    stored("L1", FORGE_STATE_RUNNING, 100, 0);
    start();
    w = next_read();
    found(item_for(w, "L1"), 0, "late\n");
    fake_kafka_revoke(kafka, &p, 1, false);
    assign(0); /* restored: a new generation */
    step();
    answered(w);
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_logs, "L1"), 0);
}

Test(live, an_ended_launch_gets_its_final_read_before_its_archive)
{
    forge_work_t *w, *archive;
    json_t *ev;

    stored("L1", FORGE_STATE_SUCCEEDED, 100, 16);
    start();
    tick_step();
    cr_assert_null(fake_pools_next(pools, FORGE_LANE_FILES),
                   "the archive waits for the final chunk");
    w = next_read();
    cr_assert(item_for(w, "L1")->final);
    cr_assert_eq(item_for(w, "L1")->allowance, 4096);
    found(item_for(w, "L1"), 16, "Traceback: done");
    answered(w);
    ev = last_chunk("L1");
    cr_assert(
        json_is_true(json_object_get(json_object_get(ev, "data"), "final")));
    cr_assert_str_eq(json_string_value(json_object_get(ev, "id")),
                     "L1/1/log/4");
    json_decref(ev);
    step(); /* the record committed: the archive posted */
    archive = next_work(FORGE_LANE_FILES, FORGE_WORK_ARCHIVE, "L1");
    forge_work_free(archive);
}

Test(live, a_final_read_of_a_launch_that_never_printed_sends_nothing)
{
    forge_work_t *w, *archive;

    stored("L1", FORGE_STATE_FAILED, 100, 0);
    start();
    w = next_read();
    cr_assert(item_for(w, "L1")->final);
    answered(w);
    cr_assert_eq(fake_kafka_count(kafka, cfg->topic_logs, "L1"), 0);
    step();
    archive = next_work(FORGE_LANE_FILES, FORGE_WORK_ARCHIVE, "L1");
    forge_work_free(archive);
}
