/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch_table.h - every launch the state topic knows, as the workers would
 * restore it: the whole topic read (every partition, read_committed, to its
 * end: topic_scan.h) into a table of each launch's latest record, a later
 * record replacing an earlier one of the same key and a tombstone removing
 * it, as compaction will. The recovery commands' shared reader: `launches`
 * prints it, `replay` asks it which requests are known, `reconcile`
 * compares it with Slurm.
 *
 * Records are decoded with the worker's codec (launch.h) and their sealed
 * requests opened with the sealer given (may be NULL: then none opens, and
 * each record says so in request_error). The table holds opened requests
 * in memory: a caller must never print rec->request (it holds the ingest
 * token and env values). A value that does not decode is counted in
 * `undecodable`, its first error kept, and left out (the worker skips it
 * the same way).
 *
 * Threads: the caller's. Entries are sorted by launch_id.
 */
#ifndef FORGE_LAUNCH_TABLE_H
#define FORGE_LAUNCH_TABLE_H

#include "config/config.h"
#include "record/launch.h"
#include "record/seal.h"
#include "admin/admin.h"
#include "admin/topic_scan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct forge_launch_table_entry {
    forge_launch_record_t *rec; /* owned by the table; a caller about to
                                   clear it may move it out (NULL left) */
    int32_t partition;          /* of the state topic: the owner partition */
    int64_t offset;             /* of the record read */
    int64_t timestamp_ms;       /* the Kafka record's, -1: none */
} forge_launch_table_entry_t;

typedef struct forge_launch_table {
    forge_launch_table_entry_t *entries; /* sorted by rec->launch_id */
    size_t count;
    int32_t partitions;                        /* of the state topic */
    size_t records_read;                       /* values and tombstones seen */
    size_t undecodable;                        /* values left out */
    char first_error[FORGE_ERROR_MESSAGE_MAX]; /* why, for the first */
} forge_launch_table_t;

/*
 * Reads cfg->topic_state into *t (emptied first; forge_launch_table_clear
 * frees it): each partition to its end, or with until (count of them, a
 * snapshot from forge_topics_marks) to until[p].high. timeout_ms bounds
 * each wait for the brokers (no progress that long: kafka_unavailable).
 * Errors as topic_scan.h: kafka_unavailable, topic_missing, config.
 */
forge_admin_code_t forge_launch_table_load(const forge_config_t *cfg,
                                           const forge_sealer_t *sealer,
                                           const forge_scan_marks_t *until,
                                           int32_t count, int timeout_ms,
                                           forge_launch_table_t *t,
                                           forge_admin_error_t *err);

/* The entry of launch_id (binary search), or NULL. Borrowed. */
const forge_launch_table_entry_t *
forge_launch_table_find(const forge_launch_table_t *t, const char *launch_id);

/* Frees what t holds and leaves it empty. */
void forge_launch_table_clear(forge_launch_table_t *t);

#endif
