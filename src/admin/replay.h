/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.h - `forge-worker replay`: moving the worker group's committed
 * offsets on the requests topic, and first saying what that would do.
 *
 * A plan holds, per partition of the requests topic: where the group reads
 * next (its committed offset; with none, the first offset, since the
 * workers start at the earliest), the target (earliest, the first offset
 * at or after a time, or the offset an offsets file names, clamped to the
 * partition's offsets), and the requests between the two: how many, and
 * how many of them change nothing when the workers read them (the state
 * topic knows them: a launch whose record has that attempt or a later
 * one; a cancel of a launch that is unknown, finished, already being
 * cancelled or of another attempt; the loop's own rules, loop/loop.c).
 * A message naming no launch goes to the DLQ again when re-read: counted
 * apart. Moving back re-reads the range; moving forward skips it (what is
 * not known there is never acted on: the plan says so).
 *
 * The plan also carries the state topic's cleanup.policy: one that deletes
 * (not "compact" alone) may have lost finished launches' records, and
 * their requests would run again; the plan's output warns.
 *
 * Executing commits the targets as the group's offsets (group.h), only
 * while the group has no members: group_active otherwise, before anything
 * is written (and the coordinator refuses too, should a member join in
 * between).
 *
 * Threads: the caller's.
 */
#ifndef FORGE_REPLAY_H
#define FORGE_REPLAY_H

#include "config/config.h"
#include "admin/group.h"
#include "admin/admin.h"
#include "admin/launch_table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum forge_replay_kind {
    FORGE_REPLAY_EARLIEST,
    FORGE_REPLAY_DATETIME,
    FORGE_REPLAY_OFFSETS,
} forge_replay_kind_t;

typedef struct forge_replay_offset {
    int32_t partition;
    int64_t offset;
} forge_replay_offset_t;

typedef struct forge_replay_target {
    forge_replay_kind_t kind;
    int64_t at_ms;                  /* FORGE_REPLAY_DATETIME */
    forge_replay_offset_t *offsets; /* FORGE_REPLAY_OFFSETS, owned */
    size_t offset_count;
} forge_replay_target_t;

/* RFC 3339 ("2026-12-04T10:00:00Z", fractions and "+01:00" allowed) into
 * milliseconds since the epoch. False when it is not one. */
bool forge_replay_parse_datetime(const char *text, int64_t *at_ms);

/*
 * An offsets file (Kafka's reset-offsets CSV: a line "topic,partition,
 * offset" per partition, or "partition,offset"; blank lines and lines
 * starting with # skipped) into target (kind FORGE_REPLAY_OFFSETS). A
 * line naming another topic than `topic`, a partition twice, or anything
 * unreadable: offsets_file, naming the line.
 */
forge_admin_code_t forge_replay_read_offsets(const char *path,
                                             const char *topic,
                                             forge_replay_target_t *target,
                                             forge_admin_error_t *err);

void forge_replay_target_clear(forge_replay_target_t *target);

typedef struct forge_replay_part {
    int32_t partition;
    int64_t committed; /* FORGE_GROUP_NO_OFFSET: none */
    int64_t from;      /* where the group reads next */
    int64_t to;        /* after the move */
    int64_t low, high; /* the partition's offsets */
    bool moves;        /* to != committed (an unlisted partition: false) */
    size_t requests;   /* between from and to */
    size_t known;      /* of them: change nothing when read */
    size_t dlq;        /* of them: no launch id, to the DLQ when read */
} forge_replay_part_t;

typedef struct forge_replay_plan {
    char *group; /* owned */
    char *topic; /* owned */
    forge_group_view_t view;
    char state_policy[64]; /* the state topic's cleanup.policy, "": unknown */
    forge_replay_part_t *parts; /* one per partition, in order */
    size_t count;
    bool executed;
} forge_replay_plan_t;

/*
 * The plan for target: the group described, its offsets read, the
 * requests between counted against the state topic (its table is loaded
 * here, no request opened). Errors: kafka_unavailable, topic_missing,
 * offsets_file (a partition the topic does not have).
 */
forge_admin_code_t forge_replay_plan(const forge_config_t *cfg,
                                     const forge_replay_target_t *target,
                                     int timeout_ms, forge_replay_plan_t *plan,
                                     forge_admin_error_t *err);

/* Commits the plan's moves (group.h), after checking again that the group
 * has no members (group_active). Sets plan->executed. */
forge_admin_code_t forge_replay_execute(const forge_config_t *cfg,
                                        forge_replay_plan_t *plan,
                                        int timeout_ms,
                                        forge_admin_error_t *err);

json_t *forge_replay_plan_json(const forge_replay_plan_t *plan); /* new */
void forge_replay_plan_print(FILE *out, const forge_replay_plan_t *plan);

void forge_replay_plan_clear(forge_replay_plan_t *plan);

#endif
