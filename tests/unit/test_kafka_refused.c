/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_kafka_refused.c - a configuration librdkafka refuses when the
 * client is made (rd_kafka_new, not rd_kafka_conf_set: settings that
 * contradict each other), in forge_kafka_new and in the probe: refused
 * with librdkafka's reason, and the configuration object freed
 * (rd_kafka_new takes it only when it succeeds). No broker is needed: the
 * refusal comes before any connection. The leak half of the check is the
 * ASan build's: LeakSanitizer reports a conf left behind, and scripts/test
 * fails on any such report.
 */
#include "kafka/kafka.h"
#include "kafka/kafka_probe.h"

#include <criterion/criterion.h>
#include <string.h>

static forge_config_t config(forge_kafka_prop_t *props, size_t n)
{
    forge_config_t cfg;

    memset(&cfg, 0, sizeof(cfg));
    cfg.kafka_brokers = "127.0.0.1:1";
    cfg.kafka_group_id = "forge-test";
    cfg.topic_requests = "forge.launch.requests";
    cfg.topic_status = "forge.launch.status";
    cfg.topic_logs = "forge.launch.logs";
    cfg.topic_state = "forge.launch.state";
    cfg.topic_dlq = "forge.launch.dlq";
    cfg.worker_id = "test-worker";
    cfg.kafka_props = props;
    cfg.kafka_prop_count = n;
    return cfg;
}

static void no_handler(void *ctx, const int32_t *parts, size_t n, bool lost)
{
    (void)ctx;
    (void)parts;
    (void)n;
    (void)lost;
}

Test(kafka_refused, producer_refused_by_librdkafka)
{
    /* set by the operator: a transactional producer cannot be made */
    forge_kafka_prop_t props[] = {{"enable.idempotence", "false"}};
    forge_config_t cfg = config(props, 1);
    forge_kafka_handlers_t h = {NULL, NULL, no_handler, NULL};
    forge_kafka_t *k = (forge_kafka_t *)&cfg; /* set to NULL on failure */
    forge_error_t err = {0};
    volatile sig_atomic_t stop = 0;

    cr_assert_eq(forge_kafka_new(&cfg, &h, FORGE_KAFKA_WORKER, &stop, &k, &err),
                 FORGE_ECONFIG);
    cr_assert_null(k);
    cr_assert(strstr(err.message, "producer:") &&
                  strstr(err.message, "idempotence"),
              "%s", err.message);
}

Test(kafka_refused, probe_refused_by_librdkafka)
{
    /* an idempotent producer needs acks=all */
    forge_kafka_prop_t props[] = {{"enable.idempotence", "true"},
                                  {"acks", "1"}};
    forge_config_t cfg = config(props, 2);
    forge_kafka_probe_t out;

    forge_kafka_probe(&cfg, 1000, &out);
    cr_assert_not(out.ok);
    cr_assert(strstr(out.error, "acks"), "%s", out.error);
}
