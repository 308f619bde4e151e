/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launches.h - `forge-worker launches`: the state table (launch_table.h)
 * filtered and shown, one launch per line: a table for people, or one JSON
 * object per line (JSON Lines) for tools. Never a request's content: a
 * record's request is shown only as "held", "unopened" (sealed with a key
 * this process does not hold, or not authentic) or "none".
 */
#ifndef FORGE_LAUNCHES_H
#define FORGE_LAUNCHES_H

#include "record/state.h"
#include "admin/launch_table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

typedef struct forge_launches_filter {
    forge_state_t state;   /* FORGE_STATE_NONE: any */
    const char *launch_id; /* NULL: any */
} forge_launches_filter_t;

bool forge_launches_match(const forge_launches_filter_t *f,
                          const forge_launch_table_entry_t *e);

/* One launch as JSON (new): launch_id, attempt, state, seq, job_id,
 * job_ids, partition, offset, cancel_requested, archived, cleaned,
 * archive, request, request_error, accepted_at, updated_at,
 * missing_since, slurm_states. */
json_t *forge_launches_json(const forge_launch_table_entry_t *e);

/* The table's header line and one row. */
void forge_launches_print_header(FILE *out);
void forge_launches_print_row(FILE *out, const forge_launch_table_entry_t *e);

#endif
