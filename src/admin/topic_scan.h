/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topic_scan.h - reading a topic as a recovery command needs it: every
 * partition (or chosen offset ranges of them) from a start to its end as
 * it stands when the scan begins, read_committed (what aborted
 * transactions wrote is never seen), without a consumer group (partitions
 * assigned, never subscribed: nothing is committed, no group is joined).
 *
 * One scan = one short-lived librdkafka consumer, configured like the
 * worker's (FORGE_KAFKA_BROKERS, FORGE_KAFKA_PROP_*). The topic is looked
 * up first: a broker that does not answer within the timeout is
 * FORGE_RECOVERY_KAFKA_UNAVAILABLE, a topic it does not have
 * FORGE_RECOVERY_TOPIC_MISSING. A partition is done at its end (the last
 * stable offset under read_committed) or at its range's `to`; a scan that
 * makes no progress for the timeout fails (kafka_unavailable).
 *
 * A follow (forge_topic_follow) reads one partition the same way but with
 * no end: until its callback has what it waits for, or a stop flag.
 *
 * Threads: the caller's; callbacks run on it, inside forge_topic_scan and
 * forge_topic_follow.
 */
#ifndef FORGE_TOPIC_SCAN_H
#define FORGE_TOPIC_SCAN_H

#include "config/config.h"
#include "admin/admin.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One record, borrowed for the callback's duration. value NULL (and
 * value_len 0) for a tombstone. */
typedef struct forge_scan_record {
    int32_t partition;
    int64_t offset;
    int64_t timestamp_ms; /* the record's timestamp, -1 when it has none */
    const char *key;      /* NULL: no key */
    size_t key_len;
    const char *value;
    size_t value_len;
} forge_scan_record_t;

typedef void (*forge_scan_fn)(void *ctx, const forge_scan_record_t *r);

/* What to read of one partition: [from, to). from FORGE_SCAN_BEGINNING:
 * its first offset; to FORGE_SCAN_END: its end. */
#define FORGE_SCAN_BEGINNING (-2)
#define FORGE_SCAN_END       (-1)
typedef struct forge_scan_range {
    int32_t partition;
    int64_t from;
    int64_t to;
} forge_scan_range_t;

/* A partition's offsets: low (first kept) and high watermark (under
 * read_committed, as every scan consumer reads: the last stable offset). */
typedef struct forge_scan_marks {
    int64_t low;
    int64_t high;
} forge_scan_marks_t;

/* How many partitions topic has (*count). Errors: kafka_unavailable,
 * topic_missing. */
forge_admin_code_t forge_topic_partitions(const forge_config_t *cfg,
                                          const char *topic, int timeout_ms,
                                          int32_t *count,
                                          forge_admin_error_t *err);

/* The watermarks of every partition of topic (*marks new, *count of
 * them, partition i at index i). */
forge_admin_code_t forge_topic_marks(const forge_config_t *cfg,
                                     const char *topic, int timeout_ms,
                                     forge_scan_marks_t **marks, int32_t *count,
                                     forge_admin_error_t *err);

/* The marks of n topics asked together: one consumer asks partition p
 * of every topic before partition p + 1. A transaction that wrote to
 * several of them and commits while they are asked can fall inside some
 * marks and outside others: a window of the asks' round trips
 * (milliseconds), where reading one topic to its end and then the next
 * leaves a whole scan's (seconds). marks[i] new (counts[i] of them) for
 * topics[i]. */
forge_admin_code_t
forge_topics_marks(const forge_config_t *cfg, const char *const *topics,
                   size_t n, int timeout_ms, forge_scan_marks_t **marks,
                   int32_t *counts, forge_admin_error_t *err);

/* For each partition of topic, the first offset whose timestamp is at or
 * after at_ms (the high watermark when there is none): *offsets new, one
 * per partition, *count of them. */
forge_admin_code_t forge_topic_offsets_at(const forge_config_t *cfg,
                                          const char *topic, int64_t at_ms,
                                          int timeout_ms, int64_t **offsets,
                                          int32_t *count,
                                          forge_admin_error_t *err);

/* Reads the ranges (n of them, distinct partitions; empty ones skipped),
 * calling fn for each record in offset order within a partition. */
forge_admin_code_t forge_topic_scan(const forge_config_t *cfg,
                                    const char *topic,
                                    const forge_scan_range_t *ranges, size_t n,
                                    int timeout_ms, forge_scan_fn fn, void *ctx,
                                    forge_admin_error_t *err);

/* Every partition of topic from its beginning to its end. */
forge_admin_code_t forge_topic_scan_all(const forge_config_t *cfg,
                                        const char *topic, int timeout_ms,
                                        forge_scan_fn fn, void *ctx,
                                        forge_admin_error_t *err);

/* Partitions 0 .. count - 1 of topic from their beginning to marks[p].high
 * (a snapshot from forge_topics_marks; NULL: every partition to its end,
 * forge_topic_scan_all). */
forge_admin_code_t forge_topic_scan_until(const forge_config_t *cfg,
                                          const char *topic,
                                          const forge_scan_marks_t *marks,
                                          int32_t count, int timeout_ms,
                                          forge_scan_fn fn, void *ctx,
                                          forge_admin_error_t *err);

/* The partition of count (>= 1) a record keyed key[0..len) (len >= 1)
 * goes to from the worker's producer: its partitioner is murmur2_random
 * (kafka/producer.c; Java's default, the same for every keyed record),
 * asked of librdkafka itself. */
int32_t forge_topic_key_partition(const char *key, size_t len, int32_t count);

/* A follow's callback: true ends the follow (what it waited for came). */
typedef bool (*forge_follow_fn)(void *ctx, const forge_scan_record_t *r);

/* Reads one partition of topic from `from` (an offset, or
 * FORGE_SCAN_BEGINNING) with no end, as tail -f does: each record to fn,
 * until fn returns true or *stop (NULL: never) is set, seen within 100 ms.
 * The partition's end is no stop and a quiet partition no failure; the
 * client's transient errors are logged (once per kind in a row) and
 * waited out. Errors: config, kafka_unavailable (no metadata within
 * timeout_ms; the broker refusing the read), topic_missing (also a
 * partition the topic does not have). */
forge_admin_code_t forge_topic_follow(const forge_config_t *cfg,
                                      const char *topic, int32_t partition,
                                      int64_t from,
                                      const volatile sig_atomic_t *stop,
                                      int timeout_ms, forge_follow_fn fn,
                                      void *ctx, forge_admin_error_t *err);

#endif
