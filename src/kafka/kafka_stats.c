/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/kafka_stats.c - librdkafka statistics → consumer lag (kafka_stats.h).
 * Threads: forge_kafka_stats_conf runs once, before the consumer exists;
 * on_stats on the loop's thread (it serves the consumer's queue). `topic`
 * is written once by the first and only read afterwards.
 */
#include "kafka/kafka_stats.h"
#include "hooks/hooks.h"
#include "record/generation.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static char topic[256];

long forge_kafka_stats_lag(const char *json, size_t len, const char *name,
                           int32_t *partitions, long long *lags, size_t max)
{
    json_t *root = json_loadb(json, len, 0, NULL);
    json_t *parts = json_object_get(
        json_object_get(json_object_get(root, "topics"), name), "partitions");
    const char *key;
    json_t *p;
    long n = 0;

    if (!json_is_object(json_object_get(root, "topics"))) {
        json_decref(root);
        return -1;
    }
    json_object_foreach(parts, key, p)
    {
        const char *fetch =
            json_string_value(json_object_get(p, "fetch_state"));
        json_int_t id = json_integer_value(json_object_get(p, "partition"));
        json_int_t end = json_integer_value(json_object_get(p, "ls_offset"));
        json_int_t at = json_integer_value(json_object_get(p, "app_offset"));
        if (at < 0) /* nothing taken yet: from the committed offset */
            at = json_integer_value(json_object_get(p, "committed_offset"));
        if (at < 0) /* none either: from the start (auto.offset.reset) */
            at = json_integer_value(json_object_get(p, "lo_offset"));
        if (id < 0 || (size_t)n >= max || !fetch || !strcmp(fetch, "none") ||
            end < 0 || at < 0)
            continue; /* the internal UA partition, or not fetched here */
        partitions[n] = (int32_t)id;
        lags[n++] = end > at ? (long long)(end - at) : 0;
    }
    json_decref(root);
    return n;
}

/* librdkafka's stats callback: 0 lets it free json. */
static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
    int32_t partitions[FORGE_PARTITIONS_MAX];
    long long lags[FORGE_PARTITIONS_MAX];
    long n = forge_kafka_stats_lag(json, len, topic, partitions, lags,
                                   FORGE_PARTITIONS_MAX);

    (void)rk;
    (void)opaque;
    if (n >= 0)
        forge_hooks()->lag(partitions, lags, (size_t)n);
    return 0;
}

void forge_kafka_stats_conf(rd_kafka_conf_t *conf, const char *name)
{
    char value[32];
    size_t size = sizeof(value);

    if (!forge_hooks_installed())
        return;
    snprintf(topic, sizeof(topic), "%s", name);
    rd_kafka_conf_set_stats_cb(conf, on_stats);
    if (rd_kafka_conf_get(conf, "statistics.interval.ms", value, &size) ==
            RD_KAFKA_CONF_OK &&
        !strcmp(value, "0"))
        rd_kafka_conf_set(conf, "statistics.interval.ms",
                          FORGE_KAFKA_STATS_INTERVAL, NULL, 0);
}
