/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_loop.h - fakes for the consume loop's two seams (loop/loop.h),
 * for the loop tests (tests/unit/test_loop*.c): the one place the loop
 * runs without a broker and without slurmrestd. A fake here because a
 * unit test cannot make the real ones abort a transaction, lose a
 * partition or answer a poll tick on cue; the e2e tests (tests/e2e/worker)
 * run the same loop on the real ones.
 *
 * fake_kafka_t: a broker in memory with what the loop relies on. The
 * requests topic by partition (what the test appends), positions and
 * committed offsets; one transaction at a time whose records and offsets
 * show only once it commits; a commit that aborts (told to, or after
 * fail_txn) drops them and rewinds every position to its committed offset;
 * a partition's state records read back from what committed. Rebalances
 * are the test's: fake_kafka_assign / fake_kafka_revoke call the loop's
 * handlers as kafka.c does.
 *
 * fake_pools_t: the three lanes hold what the loop posts; the test takes
 * an item (fake_pools_next), writes its result as the real thread would,
 * and hands it back (fake_pools_finish) for the loop's next take.
 */
#ifndef FORGE_SUPPORT_LOOP_H
#define FORGE_SUPPORT_LOOP_H

#include "config/config.h"
#include "loop/loop.h"
#include "record/launch.h"
#include "record/seal.h"
#include "request/series.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_PARTITIONS 4
#define FAKE_MAX        256

typedef struct fake_record {
    char *topic;
    int32_t partition;
    char *key;
    char *value; /* NUL-terminated */
    size_t len;
} fake_record_t;

typedef struct fake_kafka {
    forge_kafka_handlers_t h;
    const char *state_topic;
    /* the requests topic */
    fake_record_t requests[FAKE_PARTITIONS][FAKE_MAX];
    int64_t request_count[FAKE_PARTITIONS];
    int64_t position[FAKE_PARTITIONS];
    int64_t committed[FAKE_PARTITIONS];
    bool assigned[FAKE_PARTITIONS];
    bool paused[FAKE_PARTITIONS];
    /* the transaction open, and what committed */
    fake_record_t txn[FAKE_MAX];
    size_t txn_count;
    int64_t txn_offsets[FAKE_PARTITIONS]; /* -1: none */
    bool txn_failed;
    fake_record_t out[FAKE_MAX * 4];
    size_t out_count;
    /* what the next commits say, in turn, instead of committing
     * (FORGE_KAFKA_ABORTED, _WAITING, _FATAL; 0 ends the list) */
    forge_kafka_outcome_t outcomes[8];
    size_t outcome_count;
    int commits, aborts, restores, restore_failures_left;
    /* a revoke due inside the next poll that finds no message (kafka.c
     * calls the handlers from inside poll, mid-batch) */
    int32_t revoke_parts[FAKE_PARTITIONS];
    size_t revoke_count;
    bool revoke_lost;
} fake_kafka_t;

typedef struct fake_pools {
    forge_work_t *posted[FORGE_LANE__COUNT][FAKE_MAX];
    size_t posted_count[FORGE_LANE__COUNT];
    forge_work_t *done[FORGE_LANE__COUNT][FAKE_MAX];
    size_t done_count[FORGE_LANE__COUNT];
    char withdrawn[16][80]; /* "<launch_id>/<attempt>" */
    size_t withdrawn_count;
    int interrupts[FORGE_LANE__COUNT];
    /* optional: called at each post, before the item is held */
    void (*on_post)(void *ctx, forge_loop_lane_t lane, const forge_work_t *w);
    void *on_post_ctx;
} fake_pools_t;

extern const forge_loop_kafka_ops_t fake_kafka_ops;
extern const forge_loop_pool_ops_t fake_pool_ops;

/* A new fake (calloc'd) whose loop handlers are h; state_topic borrowed. */
fake_kafka_t *fake_kafka_new(const forge_kafka_handlers_t *h,
                             const char *state_topic);
void fake_kafka_free(fake_kafka_t *f);
/* A request at the end of partition p (copied). */
void fake_kafka_send(fake_kafka_t *f, int32_t p, const char *key,
                     const char *value);
/* The group assigns / takes back partitions (the loop's handlers called:
 * a revoke that is not lost flushes first, as kafka.c does). */
void fake_kafka_assign(fake_kafka_t *f, const int32_t *parts, size_t n);
void fake_kafka_revoke(fake_kafka_t *f, const int32_t *parts, size_t n,
                       bool lost);
/* A record straight into the committed log (a record another worker
 * wrote before). */
void fake_kafka_put(fake_kafka_t *f, const char *topic, int32_t p,
                    const char *key, const char *value);
/* The committed records of topic whose key is key, as JSON (new), from
 * index *from on: the next one, *from moved past it; NULL when none. */
json_t *fake_kafka_next_of(const fake_kafka_t *f, const char *topic,
                           const char *key, size_t *from);
/* The committed status events of launch key, their data.state joined by
 * spaces ("ACCEPTED SUBMITTED ..."; new). */
char *fake_kafka_states(const fake_kafka_t *f, const char *status_topic,
                        const char *key);
/* How many committed records topic has for key. */
size_t fake_kafka_count(const fake_kafka_t *f, const char *topic,
                        const char *key);

fake_pools_t *fake_pools_new(void);
/* Frees every item still held. */
void fake_pools_free(fake_pools_t *p);
/* The oldest item posted on lane (the caller holds it now), or NULL. */
forge_work_t *fake_pools_next(fake_pools_t *p, forge_loop_lane_t lane);

/* The state record o (freed), opened under the sealer (new). */
forge_launch_record_t *record_opened(json_t *o);

/* The work posted on lane for launch id (NULL: the oldest), which must be
 * of kind; the test holds it now. */
forge_work_t *fake_pools_take(fake_pools_t *p, forge_loop_lane_t lane,
                              forge_work_kind_t kind, const char *id);
/* w finished (stolen): the loop's next take on lane hands it back. */
void fake_pools_finish(fake_pools_t *p, forge_loop_lane_t lane,
                       forge_work_t *w);

/* The last committed record of topic keyed id (new; the test fails when
 * there is none). */
json_t *fake_kafka_last_of(fake_kafka_t *k, const char *topic, const char *id);

/* The committed status events of id on topic, their states in order,
 * expected to be want ("ACCEPTED SUBMITTED ..."). */
void fake_kafka_expect_states(fake_kafka_t *k, const char *topic,
                              const char *id, const char *want);

/* A loop on these fakes, as the loop tests set it up: a new folder
 * /tmp/<prefix>-XXXXXX with a storage root holding runtimes/images/a.sif,
 * the configuration of env (NULL-terminated "NAME=value"s) plus that
 * root, a catalog with series h200 (8 GPUs per node), a state key, every
 * step committing at once. fini frees all of it and the folder. */
typedef struct loop_fixture {
    char tmp[64];
    forge_config_t *cfg;
    forge_series_catalog_t *cat;
    forge_sealer_t *sealer;
    forge_loop_t *loop;
    fake_kafka_t *kafka;
    fake_pools_t *pools;
} loop_fixture_t;

/* The one fixture of a test (Criterion runs each test in a process of
 * its own), and its parts by the names the tests use: set by
 * loop_fixture_init, the helpers below act on them. */
extern loop_fixture_t fx;
extern forge_config_t *cfg;
extern forge_sealer_t *sealer;
extern forge_loop_t *loop;
extern fake_kafka_t *kafka;
extern fake_pools_t *pools;

void loop_fixture_init(const char *prefix, const char *const *env);
void loop_fixture_fini(void);

/* A suite whose every test runs on a new fixture: its folder's prefix,
 * then the configuration ("NAME=value"s; the storage root is added). */
#define LOOP_FIXTURE(suite, prefix, ...)                                       \
    static void suite##_init(void)                                             \
    {                                                                          \
        static const char *const env[] = {__VA_ARGS__, NULL};                  \
        loop_fixture_init(prefix, env);                                        \
    }                                                                          \
    TestSuite(suite, .init = suite##_init, .fini = loop_fixture_fini)

/* ---- what the loop tests send, answer and read back ----------------------
 * Short names, as the tests call them: only the loop tests include this.
 */

/* A launch request of id (static: the next call overwrites it): one
 * h200 node running images/a.sif, its retry object retry ("": none). */
const char *loop_launch_request(const char *id, int attempt, const char *retry);

/* A step of the loop; a step with the poll tick due (the tests' interval
 * is an hour: a tick runs in the first step, then only in these). */
void step(void);
void tick_step(void);

/* The group assigns partition p. */
void assign(int32_t p);

/* r (freed) committed before, by another worker: its state record, sealed,
 * keyed by its launch_id on partition p. */
void store_record(int32_t p, forge_launch_record_t *r);

/* The state record o (freed), opened under the sealer (new). */
forge_launch_record_t *record_opened(json_t *o);

/* The work posted on lane for launch id (NULL: the oldest), of kind; the
 * test holds it now. */
forge_work_t *next_work(forge_loop_lane_t lane, forge_work_kind_t kind,
                        const char *id);

/* The Slurm thread's answer to the submit w (held by the test): status,
 * and job_id (0: none) with n components, job_id, job_id + 1, ...; then
 * handed back for the loop's next take. */
void submit_answered(forge_work_t *w, uint32_t job_id, size_t n,
                     forge_slurm_status_t status);

/* The poll tick the loop posts next (the test holds it), answered OK. */
forge_work_t *poll_tick(void);

/* The tick's item of job_id (an item names its job, not its launch). */
forge_poll_item_t *item_of(forge_work_t *tick, uint32_t job_id);

/* The item's one job as Slurm reports it: its id, in states
 * (NULL-terminated names); the rest for the test to fill in. */
forge_slurm_job_t *item_job(forge_poll_item_t *it, const char *const *states);

/* The same, and the item changed to the first of states. */
forge_slurm_job_t *item_changed(forge_poll_item_t *it,
                                const char *const *states);

/* The committed status events of id, their states in order. */
void expect_states(const char *id, const char *want);

/* The last committed record of topic keyed id (new). */
json_t *last_of(const char *topic, const char *id);

/* The data of id's last committed status event (new). */
json_t *last_event_data(const char *id);
/* A whole number in id's last committed state record. */
long long record_int(const char *id, const char *field);

#endif
