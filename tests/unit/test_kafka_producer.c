/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_kafka_producer.c - the transactional producer's configuration
 * (forge_kafka_producer_conf): what exactly-once needs is set whatever
 * the operator gave, and retry.backoff.ms is 20 ms (a commit right after
 * another waits that long, not librdkafka's 100 ms, for the coordinator;
 * producer.c) unless the operator set it. No broker is needed: the
 * configuration is read back, never used.
 */
#include "kafka/kafka_int.h"

#include <criterion/criterion.h>
#include <string.h>

static forge_config_t config(forge_kafka_prop_t *props, size_t n)
{
    forge_config_t cfg;

    memset(&cfg, 0, sizeof(cfg));
    cfg.kafka_brokers = "127.0.0.1:1";
    cfg.worker_id = "test-worker";
    cfg.kafka_props = props;
    cfg.kafka_prop_count = n;
    return cfg;
}

/* conf's value of name, into buf. */
static const char *value_of(rd_kafka_conf_t *conf, const char *name, char *buf,
                            size_t size)
{
    cr_assert_eq(rd_kafka_conf_get(conf, name, buf, &size), RD_KAFKA_CONF_OK,
                 "%s is unknown", name);
    return buf;
}

Test(kafka_producer, a_commit_retries_the_coordinator_after_20_ms_by_default)
{
    forge_config_t cfg = config(NULL, 0);
    forge_error_t err = {0};
    rd_kafka_conf_t *conf = forge_kafka_producer_conf(&cfg, &err);
    char v[128];

    cr_assert_not_null(conf, "%s", err.message);
    cr_expect_str_eq(value_of(conf, "retry.backoff.ms", v, sizeof(v)), "20");
    cr_expect_str_eq(value_of(conf, "transactional.id", v, sizeof(v)),
                     "forge-worker-test-worker");
    cr_expect_str_eq(value_of(conf, "acks", v, sizeof(v)), "-1"); /* all */
    rd_kafka_conf_destroy(conf);
}

Test(kafka_producer, the_operators_retry_backoff_wins_and_exactly_once_stays)
{
    forge_kafka_prop_t props[] = {{"retry.backoff.ms", "250"}, {"acks", "1"}};
    forge_config_t cfg = config(props, 2);
    forge_error_t err = {0};
    rd_kafka_conf_t *conf = forge_kafka_producer_conf(&cfg, &err);
    char v[128];

    cr_assert_not_null(conf, "%s", err.message);
    cr_expect_str_eq(value_of(conf, "retry.backoff.ms", v, sizeof(v)), "250");
    cr_expect_str_eq(value_of(conf, "acks", v, sizeof(v)), "-1");
    rd_kafka_conf_destroy(conf);
}

Test(kafka_producer, a_value_librdkafka_refuses_is_an_error_with_its_name)
{
    forge_kafka_prop_t props[] = {{"retry.backoff.ms", "not-a-number"}};
    forge_config_t cfg = config(props, 1);
    forge_error_t err = {0};

    cr_assert_null(forge_kafka_producer_conf(&cfg, &err));
    cr_expect_eq(err.code, FORGE_ECONFIG);
    cr_expect(strstr(err.message, "retry.backoff.ms") != NULL, "%s",
              err.message);
}

/* Why a commit failed, as /readyz and forge_kafka_commit_failures_total
 * name it: two of three brokers down answers NOT_ENOUGH_REPLICAS when the
 * controllers survive, a timeout or a transport failure when they went
 * too; anything unknown is "other", never dropped. */
Test(kafka_producer, a_failed_commit_has_a_reason)
{
    cr_assert_str_eq(
        forge_kafka_commit_reason(RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS),
        "not_enough_replicas");
    cr_assert_str_eq(forge_kafka_commit_reason(
                         RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND),
                     "not_enough_replicas");
    cr_assert_str_eq(
        forge_kafka_commit_reason(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT),
        "timed_out");
    cr_assert_str_eq(forge_kafka_commit_reason(RD_KAFKA_RESP_ERR__TRANSPORT),
                     "broker_unreachable");
    cr_assert_str_eq(
        forge_kafka_commit_reason(RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE),
        "coordinator_unavailable");
    cr_assert_str_eq(
        forge_kafka_commit_reason(RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION),
        "group_moved");
    cr_assert_str_eq(
        forge_kafka_commit_reason(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED),
        "denied");
    cr_assert_str_eq(forge_kafka_commit_reason(RD_KAFKA_RESP_ERR__STATE),
                     "other");
}
