/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_smoke_kafka.c - the stack's broker is a real Kafka 4 and our
 * librdkafka can talk to it the way the worker will: a message produced
 * with acks=all comes back to a consumer that joined a group
 * (cooperative-sticky, read_committed). Group membership is exactly what
 * librdkafka < 2.11.1 cannot do against Kafka 4. And a consumer's poll
 * waiting for messages returns at once when another thread yields its
 * queue (forge_kafka_wake: how a pool's result wakes the consume loop).
 *
 * On the secured stack (issue 27) it talks to the PLAINTEXT listener
 * (FORGE_STACK_KAFKA_PLAINTEXT, the stack's admin listener, a super user):
 * it creates its topic, which no principal of deploy/kafka/acls.tsv may;
 * the worker's SASL_SSL settings are the e2e scenarios' (test_commands'
 * ping, test_kafka_security).
 */
#include "config/config.h"

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define SMOKE_TOPIC "forge.smoke"

static forge_config_t *cfg;

static void setup(void)
{
    forge_error_t err = {0};

    cr_assert_eq(forge_config_load(environ, &cfg, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(forge_config_require(cfg, FORGE_NEED_KAFKA, &err), FORGE_OK,
                 "source the env file of tests/e2e/stack up: %s", err.message);
}

static void teardown(void)
{
    forge_config_destroy(cfg);
}

static rd_kafka_conf_t *new_conf(void)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *plain = getenv("FORGE_STACK_KAFKA_PLAINTEXT");
    char errstr[512];

    cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers",
                                   plain && *plain ? plain : cfg->kafka_brokers,
                                   errstr, sizeof(errstr)),
                 RD_KAFKA_CONF_OK, "%s", errstr);
    return conf;
}

static void set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
    char errstr[512];

    cr_assert_eq(rd_kafka_conf_set(conf, k, v, errstr, sizeof(errstr)),
                 RD_KAFKA_CONF_OK, "%s=%s: %s", k, v, errstr);
}

static void create_topic(rd_kafka_t *rk)
{
    char errstr[512];
    rd_kafka_NewTopic_t *nt =
        rd_kafka_NewTopic_new(SMOKE_TOPIC, 1, 1, errstr, sizeof(errstr));
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_event_t *ev;
    const rd_kafka_topic_result_t **res;
    size_t n;

    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    ev = rd_kafka_queue_poll(q, 30000);
    cr_assert_not_null(ev, "CreateTopics: no answer in 30 s");
    res = rd_kafka_CreateTopics_result_topics(
        rd_kafka_event_CreateTopics_result(ev), &n);
    cr_assert_eq(n, 1);
    cr_assert(rd_kafka_topic_result_error(res[0]) ==
                      RD_KAFKA_RESP_ERR_NO_ERROR ||
                  rd_kafka_topic_result_error(res[0]) ==
                      RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS,
              "CreateTopics: %s", rd_kafka_topic_result_error_string(res[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
}

TestSuite(smoke_kafka, .init = setup, .fini = teardown, .timeout = 180);

Test(smoke_kafka, produced_message_reaches_a_group_consumer)
{
    char errstr[512], value[128], group[128];
    rd_kafka_conf_t *conf = new_conf();
    rd_kafka_t *producer, *consumer;
    rd_kafka_topic_partition_list_t *topics;
    bool seen = false;

    snprintf(value, sizeof(value), "smoke-%d-%ld", (int)getpid(),
             (long)time(NULL));
    snprintf(group, sizeof(group), "forge-smoke-%d-%ld", (int)getpid(),
             (long)time(NULL));

    set(conf, "acks", "all");
    set(conf, "enable.idempotence", "true");
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    cr_assert_not_null(producer, "%s", errstr);
    create_topic(producer);
    cr_assert_eq(rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(SMOKE_TOPIC),
                                   RD_KAFKA_V_KEY("smoke", 5),
                                   RD_KAFKA_V_VALUE(value, strlen(value)),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_END),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_eq(rd_kafka_flush(producer, 30000), RD_KAFKA_RESP_ERR_NO_ERROR,
                 "message not delivered in 30 s");
    rd_kafka_destroy(producer);

    conf = new_conf();
    set(conf, "group.id", group);
    set(conf, "auto.offset.reset", "earliest");
    set(conf, "enable.auto.commit", "false");
    set(conf, "isolation.level", "read_committed");
    set(conf, "partition.assignment.strategy", "cooperative-sticky");
    set(conf, "session.timeout.ms", "10000");
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    cr_assert_not_null(consumer, "%s", errstr);
    rd_kafka_poll_set_consumer(consumer);
    topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, SMOKE_TOPIC,
                                      RD_KAFKA_PARTITION_UA);
    cr_assert_eq(rd_kafka_subscribe(consumer, topics),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(topics);

    for (int i = 0; i < 120 && !seen; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 500);
        if (!m)
            continue;
        if (!m->err && m->len == strlen(value) &&
            !memcmp(m->payload, value, m->len))
            seen = true;
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    cr_assert(seen, "the consumer group never received %s", value);
}

/* The other thread: yields the consumer's queue after 300 ms. */
static void *yield_later(void *arg)
{
    usleep(300000);
    rd_kafka_queue_yield(arg);
    return NULL;
}

static double seconds_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(smoke_kafka, a_yield_of_the_consumer_queue_cuts_its_poll_short)
{
    char errstr[512], group[128];
    rd_kafka_conf_t *conf = new_conf();
    rd_kafka_t *consumer;
    rd_kafka_queue_t *q;
    rd_kafka_message_t *m = NULL;
    pthread_t t;
    double start, took;

    snprintf(group, sizeof(group), "forge-smoke-yield-%d-%ld", (int)getpid(),
             (long)time(NULL));
    set(conf, "group.id", group);
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    cr_assert_not_null(consumer, "%s", errstr);
    rd_kafka_poll_set_consumer(consumer);
    q = rd_kafka_queue_get_consumer(consumer);
    cr_assert_not_null(q);
    /* nothing subscribed: a poll waits its whole timeout... */
    start = seconds_now();
    m = rd_kafka_consumer_poll(consumer, 1000);
    cr_assert_null(m, "a message without a subscription");
    cr_assert_gt(seconds_now() - start, 0.8, "the poll did not wait");
    /* ...but for a yield from another thread */
    cr_assert_eq(pthread_create(&t, NULL, yield_later, q), 0);
    start = seconds_now();
    m = rd_kafka_consumer_poll(consumer, 10000);
    took = seconds_now() - start;
    pthread_join(t, NULL);
    if (m)
        rd_kafka_message_destroy(m);
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    cr_assert_lt(took, 5.0, "the poll waited %.1f s: the yield did not end it",
                 took);
}
