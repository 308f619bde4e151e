/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jobcomp_reader.c - the jobcomp topic's reader (kafka/
 * jobcomp_reader.h) against librdkafka's mock cluster (a broker in the
 * process, no services): a record written before the reader started is
 * not read (every partition from its end), records written after are
 * handed over, from every partition, in the order of each, and the first
 * one joining the empty queue calls notify; a topic that does not exist
 * is no error; a stop while nothing comes returns.
 */
#include "clock/clock.h"
#include "kafka/jobcomp_reader.h"

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOPIC "slurm.jobcomp"

static rd_kafka_t *producer;
static forge_config_t cfg;
static atomic_int notified;

static void on_notify(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&notified, 1);
}

static void fx_init(void)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_mock_cluster_t *mc;
    char errstr[256];

    cr_assert_eq(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", errstr,
                                   sizeof(errstr)),
                 RD_KAFKA_CONF_OK, "%s", errstr);
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    cr_assert_not_null(producer, "%s", errstr);
    mc = rd_kafka_handle_mock_cluster(producer);
    cr_assert_eq(rd_kafka_mock_topic_create(mc, TOPIC, 2, 1),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    memset(&cfg, 0, sizeof(cfg));
    cfg.kafka_brokers = (char *)rd_kafka_mock_cluster_bootstraps(mc);
    cfg.worker_id = "test-worker";
    cfg.topic_jobcomp = TOPIC;
    atomic_store(&notified, 0);
}

static void fx_fini(void)
{
    rd_kafka_destroy(producer);
}

TestSuite(jobcomp_reader, .init = fx_init, .fini = fx_fini, .timeout = 60);

static void produce(int32_t p, const char *value)
{
    cr_assert_eq(rd_kafka_producev(
                     producer, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(p),
                     RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_eq(rd_kafka_flush(producer, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
}

static void nap(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&t, NULL);
}

/* The next record within timeout_ms (new, NUL-terminated), or NULL. */
static char *next_within(forge_jobcomp_reader_t *r, int timeout_ms)
{
    long long until = forge_clock_ms() + timeout_ms;
    char *bytes, *text;
    size_t len;

    while (!forge_jobcomp_reader_next(r, &bytes, &len)) {
        if (forge_clock_ms() >= until)
            return NULL;
        nap(10);
    }
    text = calloc(1, len + 1);
    memcpy(text, bytes, len);
    free(bytes);
    return text;
}

/* Records until the reader reads: a probe per partition produced until
 * one of them comes back (the reader's start takes a metadata round and
 * an offset lookup); the probes that came are dropped. */
static void until_reading(forge_jobcomp_reader_t *r)
{
    char *got = NULL;

    for (int i = 0; i < 100 && !got; i++) {
        produce(0, "{\"probe\":0}");
        produce(1, "{\"probe\":1}");
        got = next_within(r, 200);
    }
    cr_assert_not_null(got, "the reader never read");
    free(got);
    nap(300);
    while ((got = next_within(r, 0)))
        free(got);
}

Test(jobcomp_reader, reads_from_the_end_every_partition_in_order)
{
    forge_jobcomp_reader_t *r = NULL;
    forge_error_t err = {0};
    char *a, *b, *c;

    produce(0, "{\"before\":true}");
    cr_assert_eq(forge_jobcomp_reader_start(&cfg, on_notify, NULL, &r, &err),
                 FORGE_OK, "%s", err.message);
    until_reading(r);
    cr_assert_gt(atomic_load(&notified), 0, "a record woke the loop");
    produce(1, "{\"n\":1}");
    produce(1, "{\"n\":2}");
    produce(0, "{\"n\":3}");
    a = next_within(r, 5000);
    b = next_within(r, 5000);
    c = next_within(r, 5000);
    cr_assert(a && b && c, "three records handed over");
    cr_assert_null(strstr(a, "before"), "nothing from before the start");
    /* partition 1's in their order; partition 0's wherever it came */
    if (!strcmp(a, "{\"n\":3}"))
        cr_assert(!strcmp(b, "{\"n\":1}") && !strcmp(c, "{\"n\":2}"));
    else if (!strcmp(b, "{\"n\":3}"))
        cr_assert(!strcmp(a, "{\"n\":1}") && !strcmp(c, "{\"n\":2}"));
    else
        cr_assert(!strcmp(a, "{\"n\":1}") && !strcmp(b, "{\"n\":2}") &&
                  !strcmp(c, "{\"n\":3}"));
    free(a);
    free(b);
    free(c);
    forge_jobcomp_reader_stop(r);
}

Test(jobcomp_reader, a_missing_topic_is_no_error)
{
    forge_jobcomp_reader_t *r = NULL;
    forge_error_t err = {0};
    char *got;

    cfg.topic_jobcomp = "no.such.topic";
    cr_assert_eq(forge_jobcomp_reader_start(&cfg, on_notify, NULL, &r, &err),
                 FORGE_OK, "%s", err.message);
    got = next_within(r, 500);
    cr_assert_null(got);
    forge_jobcomp_reader_stop(r);
}
