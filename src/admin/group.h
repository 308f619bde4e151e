/* SPDX-License-Identifier: Apache-2.0 */
/*
 * group.h - the worker group as Kafka's admin API sees it, for `replay`
 * and `reconcile`: its members (DescribeConsumerGroups), its committed
 * offsets on a topic (ListConsumerGroupOffsets, require_stable: a
 * transaction still open on the offsets is waited for, as the workers'
 * own read_committed fetch does), and new committed offsets
 * (AlterConsumerGroupOffsets: the group's own commit, which the group
 * coordinator accepts only while the group has no members; Kafka's
 * kafka-consumer-groups --reset-offsets uses the same request). Nothing here
 * joins the group. Besides, a topic's cleanup.policy (DescribeConfigs), which
 * replay checks on the state topic.
 *
 * Errors: kafka_unavailable (no answer within the timeout, or the
 * coordinator refused for another reason), group_active (the coordinator
 * refused the new offsets because the group has members).
 * Threads: the caller's.
 */
#ifndef FORGE_GROUP_H
#define FORGE_GROUP_H

#include "config/config.h"
#include "admin/admin.h"

#include <stddef.h>
#include <stdint.h>

#define FORGE_GROUP_NO_OFFSET (-1) /* nothing committed for the partition */

typedef struct forge_group_view {
    size_t members;
    char state[32]; /* "Empty", "Stable", "Dead" (never existed), ... */
} forge_group_view_t;

forge_admin_code_t forge_group_describe(const forge_config_t *cfg,
                                        const char *group, int timeout_ms,
                                        forge_group_view_t *out,
                                        forge_admin_error_t *err);

/* offsets[p] for p in 0..count-1: the group's committed offset on
 * topic's partition p, or FORGE_GROUP_NO_OFFSET. */
forge_admin_code_t forge_group_committed(const forge_config_t *cfg,
                                         const char *group, const char *topic,
                                         int32_t count, int timeout_ms,
                                         int64_t *offsets,
                                         forge_admin_error_t *err);

/* topic's cleanup.policy (e.g. "compact") into policy; "" when the
 * broker did not say. For replay: a state topic that also deletes loses
 * finished launches' records (CONTRACT section 1). */
forge_admin_code_t forge_topic_cleanup_policy(const forge_config_t *cfg,
                                              const char *topic, int timeout_ms,
                                              char *policy, size_t size,
                                              forge_admin_error_t *err);

/* Commits offsets[i] for partitions[i] (n of them) as the group's. */
forge_admin_code_t forge_group_alter(const forge_config_t *cfg,
                                     const char *group, const char *topic,
                                     const int32_t *partitions,
                                     const int64_t *offsets, size_t n,
                                     int timeout_ms, forge_admin_error_t *err);

#endif
