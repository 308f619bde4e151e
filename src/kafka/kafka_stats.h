/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/kafka_stats.h - consumer lag from librdkafka's statistics: the
 * consumer's configuration gets a stats callback (and
 * statistics.interval.ms=5000 unless the operator set one through
 * FORGE_KAFKA_PROP_STATISTICS_INTERVAL_MS); each statistics JSON is parsed
 * (jansson) into the lag of every requests-topic partition the consumer
 * fetches, handed to hooks/hooks.h's lag hook (observe/ makes it a gauge).
 *
 * Threads: the callback runs where librdkafka serves the consumer's queue,
 * the loop's thread (forge_kafka_poll).
 */
#ifndef FORGE_KAFKA_STATS_H
#define FORGE_KAFKA_STATS_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

#define FORGE_KAFKA_STATS_INTERVAL "5000"

/* Adds the stats callback to conf for topic (copied once; the worker
 * consumes one topic). Does nothing unless the hooks are installed
 * (hooks.h: nobody would read the lag). */
void forge_kafka_stats_conf(rd_kafka_conf_t *conf, const char *topic);

/* The lag of topic's partitions in one statistics JSON: for each
 * partition the consumer fetches (fetch_state other than "none"), its
 * last stable offset (ls_offset; read_committed) minus the consumer's
 * position (app_offset; before anything was taken, committed_offset, or
 * without one lo_offset, where earliest starts), never below 0. Up to max
 * entries into partitions/lags; how many, or -1 when json is not statistics. */
long forge_kafka_stats_lag(const char *json, size_t len, const char *topic,
                           int32_t *partitions, long long *lags, size_t max);

#endif
