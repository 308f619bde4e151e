/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_reconcile_topics.c - what reconcile reads of the logs topic
 * (admin/reconcile_topics.c) against librdkafka's mock cluster: only a
 * launch's logs_archived events say an attempt was archived; the live
 * log_chunk events beside them (issue 29), status-like events and bytes
 * that do not parse say nothing.
 */
#include "admin/logs.h"
#include "admin/reconcile.h"

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <string.h>

static rd_kafka_t *producer;
static forge_config_t cfg;

static void fx_init(void)
{
    static const char *const topics[] = {"reqs", "state", "status", "logs"};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_mock_cluster_t *mc;
    char errstr[256];

    cr_assert_eq(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", errstr,
                                   sizeof(errstr)),
                 RD_KAFKA_CONF_OK, "%s", errstr);
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    cr_assert_not_null(producer, "%s", errstr);
    mc = rd_kafka_handle_mock_cluster(producer);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(rd_kafka_mock_topic_create(mc, topics[i], 2, 1),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    memset(&cfg, 0, sizeof(cfg));
    cfg.kafka_brokers = (char *)rd_kafka_mock_cluster_bootstraps(mc);
    cfg.worker_id = "test-worker";
    cfg.kafka_group_id = "workers";
    cfg.topic_requests = "reqs";
    cfg.topic_state = "state";
    cfg.topic_status = "status";
    cfg.topic_logs = "logs";
}

static void fx_fini(void)
{
    rd_kafka_destroy(producer);
}

TestSuite(reconcile_topics, .init = fx_init, .fini = fx_fini, .timeout = 60);

static void produce_logs(const char *key, const char *value)
{
    cr_assert_eq(rd_kafka_producev(
                     producer, RD_KAFKA_V_TOPIC("logs"),
                     RD_KAFKA_V_KEY((void *)key, strlen(key)),
                     RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
}

static void event(const char *key, const char *type, int attempt)
{
    char v[512];

    snprintf(v, sizeof(v),
             "{\"type\":\"%s\",\"data\":{\"launch_id\":\"%s\",\"attempt\":%d,"
             "\"n\":1,\"segments\":[{\"file\":\"main.out\",\"offset\":0,"
             "\"length\":3,\"text\":\"" FORGE_LOGS_TYPE_ARCHIVED "\"}]}}",
             type, key, attempt);
    produce_logs(key, v);
}

Test(reconcile_topics, only_logs_archived_says_an_attempt_was_archived)
{
    forge_recon_sources_t s = {0};
    forge_admin_error_t err = {0};

    event("a", FORGE_LOGS_TYPE_ARCHIVED, 1);
    event("a", FORGE_LOGS_TYPE_CHUNK, 2); /* attempt 2 running */
    event("b", FORGE_LOGS_TYPE_CHUNK, 1); /* live, not archived yet */
    event("b", "forge.launch.status_changed", 3);
    produce_logs("b", "not json \"" FORGE_LOGS_TYPE_ARCHIVED "\"");
    cr_assert_eq(rd_kafka_flush(producer, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_eq(forge_recon_read_topics(&cfg, NULL, &s, 10000, &err),
                 FORGE_RECOVERY_OK, "%s", err.message);
    cr_assert_eq(forge_recon_launch_of(&s, "a")->logs_attempt, 1);
    cr_assert_eq(forge_recon_launch_of(&s, "b")->logs_attempt, 0);
    forge_recon_sources_clear(&s);
}
