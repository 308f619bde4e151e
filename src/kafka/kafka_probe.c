/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka_probe.c - broker reachability through one metadata request
 * (kafka_probe.h).
 */
#include "kafka/kafka_probe.h"
#include "kafka/kafka_conf.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <string.h>

static int topic_listed(const rd_kafka_metadata_t *md, const char *name)
{
    for (int i = 0; i < md->topic_cnt; i++)
        if (!strcmp(md->topics[i].topic, name) && !md->topics[i].err)
            return 1;
    return 0;
}

void forge_kafka_probe(const forge_config_t *cfg, int timeout_ms,
                       forge_kafka_probe_t *out)
{
    const char *topics[] = {cfg->topic_requests, cfg->topic_status,
                            cfg->topic_logs, cfg->topic_state, cfg->topic_dlq};
    const rd_kafka_metadata_t *md = NULL;
    forge_error_t cerr = {0};
    rd_kafka_conf_t *conf;
    char errstr[256];
    rd_kafka_t *rk;
    rd_kafka_resp_err_t err;

    memset(out, 0, sizeof(*out));
    /* the worker's own configuration: its security settings too */
    conf = forge_kafka_conf_base(cfg, &cerr);
    if (conf && forge_kafka_conf_set(conf, "log_level", "3", &cerr)) {
        rd_kafka_conf_destroy(conf);
        conf = NULL;
    }
    if (!conf) {
        snprintf(out->error, sizeof(out->error), "%.*s",
                 (int)sizeof(out->error) - 1, cerr.message);
        return;
    }
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) { /* librdkafka takes conf only when it succeeds */
        snprintf(out->error, sizeof(out->error), "%s", errstr);
        rd_kafka_conf_destroy(conf);
        return;
    }
    err = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
    if (err) {
        snprintf(out->error, sizeof(out->error), "metadata: %s",
                 rd_kafka_err2str(err));
    } else {
        out->brokers = md->broker_cnt;
        out->topics_ok = 1;
        for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++)
            out->topics_ok = out->topics_ok && topic_listed(md, topics[i]);
        out->ok = md->broker_cnt > 0;
        if (!out->topics_ok)
            snprintf(out->error, sizeof(out->error),
                     "one of the worker's topics is missing");
        rd_kafka_metadata_destroy(md);
    }
    rd_kafka_destroy(rk);
}
