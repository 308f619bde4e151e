/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_admin_logs_read.c - the reading of `forge-worker logs`
 * (admin/logs.h, forge_logs_read) against librdkafka's mock cluster (a
 * broker in the process, no services), its records written by a producer
 * configured as the worker's (murmur2_random, key = launch_id): the
 * partition found for a key is the one the producer chose; without an
 * attempt the highest is printed, with one that one; other launches'
 * records and other keys are not read; nothing of a launch is found
 * nothing; a follow ends at the attempt's logs_archived written while it
 * waits, and at its stop flag.
 */
#include "admin/logs.h"
#include "admin/topic_scan.h"
#include "clock/clock.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOPIC      "forge.launch.logs"
#define PARTITIONS 4
#define LID        "train-7"

static rd_kafka_t *producer;
static forge_config_t cfg;
static int32_t delivered; /* the last delivery's partition */
static FILE *out, *diag;
static char *out_buf, *diag_buf;
static size_t out_len, diag_len;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
    (void)rk;
    (void)opaque;
    delivered = m->err ? -1 : m->partition;
}

static void fx_init(void)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_mock_cluster_t *mc;
    char errstr[256];

    cr_assert_eq(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", errstr,
                                   sizeof(errstr)),
                 RD_KAFKA_CONF_OK, "%s", errstr);
    cr_assert_eq(rd_kafka_conf_set(conf, "partitioner", "murmur2_random",
                                   errstr, sizeof(errstr)),
                 RD_KAFKA_CONF_OK, "%s", errstr);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    cr_assert_not_null(producer, "%s", errstr);
    mc = rd_kafka_handle_mock_cluster(producer);
    cr_assert_eq(rd_kafka_mock_topic_create(mc, TOPIC, PARTITIONS, 1),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    memset(&cfg, 0, sizeof(cfg));
    cfg.kafka_brokers = (char *)rd_kafka_mock_cluster_bootstraps(mc);
    cfg.worker_id = "test-worker";
    cfg.topic_logs = TOPIC;
    out = open_memstream(&out_buf, &out_len);
    diag = open_memstream(&diag_buf, &diag_len);
}

static void fx_fini(void)
{
    rd_kafka_destroy(producer);
    fclose(out);
    fclose(diag);
    free(out_buf);
    free(diag_buf);
}

TestSuite(logs_read, .init = fx_init, .fini = fx_fini, .timeout = 60);

/* value keyed key, placed by the producer's partitioner; its partition. */
static int32_t produce(const char *key, const char *value)
{
    delivered = -2;
    cr_assert_eq(rd_kafka_producev(
                     producer, RD_KAFKA_V_TOPIC(TOPIC),
                     RD_KAFKA_V_KEY((void *)key, strlen(key)),
                     RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_eq(rd_kafka_flush(producer, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_geq(delivered, 0, "delivered");
    return delivered;
}

/* A chunk of launch_id's attempt with one segment of main.out. */
static void chunk(const char *launch_id, int attempt, long n, long long offset,
                  const char *text)
{
    json_t *e = json_pack(
        "{s:s, s:s, s:{s:s, s:i, s:i, s:I, s:b, s:[{s:s, s:I, s:I, s:s}]}}",
        "specversion", "1.0", "type", FORGE_LOGS_TYPE_CHUNK, "data",
        "launch_id", launch_id, "attempt", attempt, "try", 1, "n",
        (json_int_t)n, "final", false, "segments", "file", "main.out", "offset",
        (json_int_t)offset, "length", (json_int_t)strlen(text), "text", text);
    char *v = json_dumps(e, JSON_COMPACT);

    produce(launch_id, v);
    free(v);
    json_decref(e);
}

static void archived(const char *launch_id, int attempt)
{
    char v[512];

    snprintf(v, sizeof(v),
             "{\"type\":\"" FORGE_LOGS_TYPE_ARCHIVED "\",\"data\":{"
             "\"launch_id\":\"%s\",\"attempt\":%d,\"archive\":{\"path\":"
             "\"/srv/artifacts/%s/%d/logs.tar.gz\"},\"tail\":null}}",
             launch_id, attempt, launch_id, attempt);
    produce(launch_id, v);
}

static const char *printed(void)
{
    fflush(out);
    return out_buf ? out_buf : "";
}

static const char *said(void)
{
    fflush(diag);
    return diag_buf ? diag_buf : "";
}

static forge_logs_result_t read_logs(const char *launch_id, int attempt,
                                     bool follow,
                                     const volatile sig_atomic_t *stop)
{
    forge_logs_spec_t spec = {launch_id, attempt, follow, stop, out, diag};
    forge_logs_result_t res;
    forge_admin_error_t err = {0};

    cr_assert_eq(forge_logs_read(&cfg, &spec, 10000, &res, &err),
                 FORGE_RECOVERY_OK, "%s", err.message);
    return res;
}

Test(logs_read, a_keys_partition_is_the_producers)
{
    char key[32];

    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof(key), "launch-%d", i);
        cr_assert_eq(forge_topic_key_partition(key, strlen(key), PARTITIONS),
                     produce(key, "{}"), "%s", key);
    }
}

/* Attempt 1 archived, attempt 2 running, another launch's and a status
 * event between them. */
static void two_attempts(void)
{
    chunk(LID, 1, 1, 0, "one a\n");
    chunk("other-launch", 1, 1, 0, "not ours\n");
    chunk(LID, 1, 2, 6, "one b\n");
    archived(LID, 1);
    produce(LID, "{\"type\":\"forge.launch.status_changed\",\"data\":{}}");
    chunk(LID, 2, 1, 0, "two a\n");
    chunk(LID, 2, 2, 6, "two b\n");
}

Test(logs_read, without_an_attempt_the_highest_to_the_end)
{
    forge_logs_result_t res;

    two_attempts();
    res = read_logs(LID, 0, false, NULL);
    cr_assert_str_eq(printed(), "two a\ntwo b\n");
    cr_assert_str_eq(said(), "");
    cr_assert_eq(res.attempt, 2);
    cr_assert(res.found && !res.complete && !res.stopped);
    cr_assert_eq(res.partition,
                 forge_topic_key_partition(LID, strlen(LID), PARTITIONS));
}

Test(logs_read, an_attempt_given)
{
    forge_logs_result_t res;

    two_attempts();
    res = read_logs(LID, 1, false, NULL);
    cr_assert_str_eq(printed(), "one a\none b\n");
    cr_assert_str_eq(said(), "forge-worker: archive /srv/artifacts/" LID
                             "/1/logs.tar.gz\n");
    cr_assert(res.found && res.complete);
    res = read_logs(LID, 3, false, NULL);
    cr_assert_not(res.found, "attempt 3: nothing");
}

Test(logs_read, nothing_of_the_launch)
{
    forge_logs_result_t res;

    res = read_logs("nobody", 0, false, NULL);
    cr_assert_not(res.found, "an empty topic");
    two_attempts();
    res = read_logs("nobody", 0, false, NULL);
    cr_assert_not(res.found);
    cr_assert_eq(res.attempt, 0);
    res = read_logs("nobody", 1, false, NULL);
    cr_assert_not(res.found);
    cr_assert_str_eq(printed(), "");
}

static void nap(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&t, NULL);
}

static void *write_the_rest(void *arg)
{
    (void)arg;
    nap(700);
    chunk(LID, 2, 3, 12, "two c\n");
    nap(300);
    chunk(LID, 2, 4, 18, "two d\n");
    archived(LID, 2);
    chunk(LID, 2, 5, 24, "after the end\n");
    return NULL;
}

Test(logs_read, a_follow_ends_at_the_attempts_archive)
{
    forge_logs_result_t res;
    pthread_t t;

    two_attempts();
    pthread_create(&t, NULL, write_the_rest, NULL);
    res = read_logs(LID, 0, true, NULL);
    pthread_join(t, NULL);
    cr_assert_str_eq(printed(), "two a\ntwo b\ntwo c\ntwo d\n");
    cr_assert_str_eq(said(), "forge-worker: archive /srv/artifacts/" LID
                             "/2/logs.tar.gz\n");
    cr_assert(res.complete && !res.stopped);
    cr_assert_eq(res.attempt, 2);
}

static void *first_chunk_later(void *arg)
{
    (void)arg;
    nap(500);
    chunk("late-launch", 1, 1, 0, "hello\n");
    archived("late-launch", 1);
    return NULL;
}

Test(logs_read, a_follow_waits_for_a_launch_not_there_yet)
{
    forge_logs_result_t res;
    pthread_t t;

    two_attempts();
    pthread_create(&t, NULL, first_chunk_later, NULL);
    res = read_logs("late-launch", 0, true, NULL);
    pthread_join(t, NULL);
    cr_assert_str_eq(printed(), "hello\n");
    cr_assert(res.found && res.complete);
    cr_assert_eq(res.attempt, 1);
}

static volatile sig_atomic_t stop;

static void *stop_soon(void *arg)
{
    (void)arg;
    nap(500);
    stop = 1;
    return NULL;
}

Test(logs_read, a_follow_stops_at_its_flag)
{
    long long began = forge_clock_ms();
    forge_logs_result_t res;
    pthread_t t;

    two_attempts();
    stop = 0;
    pthread_create(&t, NULL, stop_soon, NULL);
    res = read_logs(LID, 0, true, &stop);
    pthread_join(t, NULL);
    cr_assert_str_eq(printed(), "two a\ntwo b\n");
    cr_assert(res.stopped && !res.complete);
    cr_assert_lt(forge_clock_ms() - began, 5000);
}
