/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka_guard.h - a librdkafka call that may never return, run where the
 * caller can stop waiting for it.
 *
 * rd_kafka_send_offsets_to_transaction() waits without bound for its
 * TxnOffsetCommit: the coordinator request behind it has a timeout that
 * librdkafka never checks, and when the group coordinator it has cached
 * went away (a broker restarted, a rolling restart) the request waits
 * for some other broker to change state, which may be never (librdkafka
 * issues 5456 and 5511, open in 2.14 and 2.15). Only kafka.c uses this.
 */
#ifndef FORGE_KAFKA_GUARD_H
#define FORGE_KAFKA_GUARD_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>

/* rd_kafka_send_offsets_to_transaction(producer, offsets, md, timeout_ms)
 * on a thread of its own, waited for at most timeout_ms + grace_ms. md is
 * taken (destroyed here); offsets are copied. Returns what the call
 * returned (NULL: sent). When it has not returned by then, *abandoned is
 * set and an error returned: the producer is no longer the caller's, who
 * must never touch it again; if the call ever returns, its thread
 * destroys the producer. hang (test point): the call's thread waits an
 * hour before calling, as the call would. */
rd_kafka_error_t *forge_kafka_guard_send_offsets(
    rd_kafka_t *producer, const rd_kafka_topic_partition_list_t *offsets,
    rd_kafka_consumer_group_metadata_t *md, int timeout_ms, int grace_ms,
    bool hang, bool *abandoned);

/* Producers given up on and not yet destroyed (their call still out). */
int forge_kafka_guard_abandoned(void);

#endif
